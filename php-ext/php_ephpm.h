/* ephpm: the PHP face of the ephpm key-value store. */
#ifndef PHP_EPHPM_H
#define PHP_EPHPM_H

#include "php.h"
#include "ephpm_kv.h"
#include "ephpm_session.h" /* the key rules and EPHPM_TOKEN_LEN, generated from sessionkeys */

extern zend_module_entry ephpm_module_entry;
#define phpext_ephpm_ptr &ephpm_module_entry

#define PHP_EPHPM_VERSION "0.1.0"

/* What ephpm.session_lock_timeout_action says to do without the lock. */
typedef enum {
    EPHPM_LOCK_ACTION_PROCEED = 0,  /* read and write without the lock */
    EPHPM_LOCK_ACTION_FAIL = 1,     /* session_start() fails */
    EPHPM_LOCK_ACTION_READONLY = 2  /* read, but refuse the write */
} ephpm_lock_action;

/* What ephpm.session_lock_mode says about when a request holds the lock. */
typedef enum {
    EPHPM_LOCK_MODE_EXCLUSIVE = 0,  /* from session_start() to the write */
    EPHPM_LOCK_MODE_OPTIMISTIC = 1  /* only while the write merges its changes */
} ephpm_lock_mode;

/* The session handler's state, in one struct as ps_files is mod_files's:
 * its ini settings (ephpm.session_*) and what the current request holds.
 * The handler reads it through ES() (php-ext/ephpm_session_internal.h). */
typedef struct {
    /* ini settings */
    bool locking;
    zend_long lock_ttl;            /* seconds */
    double lock_wait;              /* seconds */
    zend_long lock_timeout_action; /* ephpm_lock_action */
    zend_long lock_mode;           /* ephpm_lock_mode */

    /* The session lock of the current request. lock_key is set from the
     * moment a lock may have been granted (even if the outcome is unknown)
     * until it is released; lock_held only once the grant is confirmed. */
    zend_string *lock_key;
    char lock_token[EPHPM_TOKEN_LEN + 1];
    bool lock_held;
    /* The grant's fence where the library mints one for the session lock
     * (set_nx_wait_get_fenced), else 0: the write, and a destroy, are then
     * accepted while nobody else was granted the lock since, even after
     * the lock expired (set_fenced_release, del_fenced_release). */
    int64_t lock_fence;
    bool readonly;  /* the lock was not had and the action is readonly */
    bool timed_out; /* the request hit max_execution_time waiting for the lock */

    /* An optimistic request (read without the lock): the session it read
     * and the data read, against which its write finds its changes. NULL
     * when the request holds the lock from the read on (exclusive mode, or
     * the fallback to it). */
    zend_string *base_sid;
    zend_string *base;
} ephpm_session_state;

ZEND_BEGIN_MODULE_GLOBALS(ephpm)
    char *library; /* ini ephpm.library: path of the provider library, or "" */

    /* The store's ini settings (ephpm.kv_*, ephpm.session_memory_limit)
     * have no globals: C forwards them as text to the library, which parses
     * them (ephpm_each_store_setting). */

    /* The session handler's settings and the current request's session. */
    ephpm_session_state session;

    /* ephpm_kv_fetch's buffer for this request (NULL until the first get,
     * and after it became a result): see ephpm_kv_fetch. */
    zend_string *get_buf;
ZEND_END_MODULE_GLOBALS(ephpm)

ZEND_EXTERN_MODULE_GLOBALS(ephpm)
#define EPHPM_G(v) ZEND_MODULE_GLOBALS_ACCESSOR(ephpm, v)

#if defined(ZTS) && defined(COMPILE_DL_EPHPM)
ZEND_TSRMLS_CACHE_EXTERN()
#endif

/* Ephpm\KvException, thrown for every runtime failure of the store. */
extern zend_class_entry *ephpm_kv_exception_ce;

/* Reads key into a new zend_string. Returns EPHPM_KV_OK with *value set,
 * EPHPM_KV_MISS, or a failure status. Crosses into Go once for a value
 * that fits the request's get buffer (8167 bytes), twice for a larger one. */
int ephpm_kv_fetch(const ephpm_kv_ops *ops, const char *key, size_t key_len, zend_string **value);

/* ephpm_kv_fetch in two halves, for a member that reads as get does along
 * with something else (set_nx_wait_get): the request's get buffer and its
 * size, and then, from the status and length that member answered for the
 * read into it, *value as ephpm_kv_fetch gives it (TOO_SMALL is read again
 * with get, into a string of the reported size). */
char *ephpm_kv_fetch_buffer(size_t *cap);
int ephpm_kv_fetch_finish(const ephpm_kv_ops *ops, const char *key, size_t key_len, int rc, size_t len,
                          zend_string **value);

/* Frees ephpm_kv_fetch's buffer at the end of a request. */
void ephpm_kv_fetch_request_end(void);

/* One call of a member that answers into buf (cap bytes) and sets *len to
 * the answer's size, answering EPHPM_KV_TOO_SMALL when it does not fit. */
typedef int (*ephpm_answer_fn)(void *ctx, char *buf, size_t cap, size_t *len);

/* Calls call into buf, the caller's buffer of buf_cap bytes, and, while it
 * answers TOO_SMALL, again into an emalloc'd buffer of the size it asked
 * for and half again (the answer may grow between calls), five calls at
 * most. A TOO_SMALL that asks for no more than was given, or that keeps
 * asking, is a garbled answer: then it throws Ephpm\KvException ("the
 * store's <what> did not fit ..."), frees what it allocated and returns
 * false. Else it returns true with the member's status in *rc, the
 * buffer holding the answer in *out (buf, or one the caller efrees), that
 * buffer's size in *cap and the answer's in *len. */
bool ephpm_call_growing(ephpm_answer_fn call, void *ctx, const char *what, char *buf, size_t buf_cap,
                        char **out, size_t *cap, size_t *len, int *rc);

/* A short English cause for a failure status, for messages. */
const char *ephpm_status_cause(int rc);

/* The cause of a failure status with the provider's own message for it
 * (last_error), e.g. "the store is unavailable; the outcome is unknown
 * (dial tcp 127.0.0.1:6379: connect: connection refused)", in buf. An
 * E_UNAVAILABLE the provider refused before doing anything reads "the
 * store is unavailable; nothing was written or granted (...)" instead. */
const char *ephpm_failure_text(int rc, char *buf, size_t buf_len);

/* ephpm_failure_text, and in *unknown whether the failure leaves the
 * outcome unknown (an E_UNAVAILABLE the provider did not say it refused). */
const char *ephpm_failure_outcome(int rc, char *buf, size_t buf_len, bool *unknown);

/* Writes a fresh lock token (EPHPM_TOKEN_LEN hex digits of
 * EPHPM_SESSION_TOKEN_BYTES CSPRNG bytes, NUL-terminated) into out. Returns
 * false if PHP's CSPRNG failed, after throwing if throw, silently if not. */
bool ephpm_new_token(char out[EPHPM_TOKEN_LEN + 1], bool throw);

/* Throws Ephpm\KvException for a failure status of the running function. */
ZEND_COLD void ephpm_throw_status(int rc);

/* The tail of a function returning bool: returns true for OK, false for
 * the status no (MISS or EXISTS, the member's "no"; OK where there is
 * none), and throws for every other status. */
#define EPHPM_RETURN_ANSWER(rc, no)     \
    do {                                \
        int status_ = (rc);             \
        if (EXPECTED(status_ == EPHPM_KV_OK)) { \
            RETURN_TRUE;                \
        }                               \
        if (status_ == (no)) {          \
            RETURN_FALSE;               \
        }                               \
        ephpm_throw_status(status_);    \
        RETURN_THROWS();                \
    } while (0)

/* Argument checks of the ephpm_kv_* functions: each throws ValueError
 * naming argument arg_num and returns false. A key is 1..
 * EPHPM_KV_MAX_KEY_LEN bytes, a value at most EPHPM_KV_MAX_VALUE_LEN; a
 * TTL is whole seconds, min..EPHPM_KV_MAX_TTL_SECONDS, put in *ttl_ms
 * (0 when refused). */
bool ephpm_check_key(const zend_string *key, uint32_t arg_num);
bool ephpm_check_value(const zend_string *value, uint32_t arg_num);
bool ephpm_ttl_ms(zend_long ttl, zend_long min, uint32_t arg_num, int64_t *ttl_ms);

/* The provider's table if it has member (within its size, and not NULL,
 * as EPHPM_KV_OPS_HAS checks); else NULL after throwing. */
#define EPHPM_OPS_WITH(member) \
    ephpm_ops_with(offsetof(ephpm_kv_ops, member), sizeof(((ephpm_kv_ops *)0)->member))
const ephpm_kv_ops *ephpm_ops_with(size_t offset, size_t size);

/* Takes lock (lock_len bytes) for token with an acquiring step with BOUND
 * (and FENCED if fenced, its fence in *fence, else 0): a lock that lasts
 * no longer than this process, waited for as set_nx_wait waits. A step
 * member's status. ops must have step (EPHPM_KV_OPS_HAS). */
int ephpm_acquire_bound(const ephpm_kv_ops *ops, const char *lock, size_t lock_len, const char *token,
                        size_t token_len, int64_t ttl_ms, int64_t wait_ms, bool fenced, int64_t *fence);

/* Fills arr (initialized here) with the figures of st, under the names
 * ephpm_kv_stats() documents. */
void ephpm_stats_to_array(const ephpm_kv_stats *st, zval *arr);

#endif /* PHP_EPHPM_H */
