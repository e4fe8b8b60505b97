/* ephpm: the PHP face of the ephpm key-value store. */
#ifndef PHP_EPHPM_H
#define PHP_EPHPM_H

#include "php.h"
#include "ephpm_kv.h"
#include "ephpm_session.h"

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

ZEND_BEGIN_MODULE_GLOBALS(ephpm)
    char *library; /* ini ephpm.library: path of the provider library, or "" */

    /* ini settings of the store, handed to the library when it is loaded */
    zend_long kv_memory_limit;        /* bytes; 0: none */
    zend_long session_memory_limit;   /* bytes of session data within it; 0: half of it */
    char *kv_eviction;                /* noeviction | volatile-lru | allkeys-lru */
    char *kv_compression;             /* none | lz4 */
    zend_long kv_compression_min_size; /* bytes */
    char *kv_backend;                 /* "memory" or a Redis/Valkey URL */
    char *kv_near_cache_prefixes;     /* "" : no near cache */
    zend_long kv_near_cache_staleness_ms;
    zend_long kv_near_cache_size;     /* bytes */

    /* ini settings of the session handler */
    bool session_locking;
    zend_long session_lock_ttl;        /* seconds */
    double session_lock_wait;          /* seconds */
    zend_long session_lock_timeout_action; /* ephpm_lock_action */
    zend_long session_lock_mode;       /* ephpm_lock_mode */

    /* The session lock of the current request. lock_key is set from the
     * moment a lock may have been granted (even if the outcome is unknown)
     * until it is released; lock_held only once the grant is confirmed. */
    zend_string *session_lock_key;
    char session_lock_token[EPHPM_SESSION_TOKEN_BYTES * 2 + 1];
    bool session_lock_held;
    bool session_readonly; /* the lock was not had and the action is readonly */
    bool session_timed_out; /* the request hit max_execution_time waiting for the lock */

    /* An optimistic request (read without the lock): the session it read
     * and the data read, against which its write finds its changes. NULL
     * when the request holds the lock from the read on (exclusive mode, or
     * the fallback to it). */
    zend_string *session_base_sid;
    zend_string *session_base;

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

/* A short English cause for a failure status, for messages. */
const char *ephpm_status_cause(int rc);

/* The cause of a failure status with the provider's own message for it
 * (last_error), e.g. "the store is unavailable; the outcome is unknown
 * (dial tcp 127.0.0.1:6379: connect: connection refused)", in buf. */
const char *ephpm_failure_text(int rc, char *buf, size_t buf_len);

/* Throws Ephpm\KvException for a failure status of the running function. */
ZEND_COLD void ephpm_throw_status(int rc);

/* Fills arr (initialized here) with the figures of st, under the names
 * ephpm_kv_stats() documents. */
void ephpm_stats_to_array(const ephpm_kv_stats *st, zval *arr);

#endif /* PHP_EPHPM_H */
