/*
 * The session lock: one per request, on session_lock:<sid>
 * (include/ephpm_session.h), its value the request's own token.
 *
 *   take     ephpm_session_lock: a fresh 128-bit CSPRNG token, the lock
 *            TTL (ephpm.session_lock_ttl) and a wait budget
 *            (ephpm.session_lock_wait, capped by max_execution_time); the
 *            wait itself, attempt and backoff or the store's wake, runs in
 *            Go (package lockwait). With the step member, the attempt that
 *            wins also mints the grant's fence, binds the lock to this
 *            process where the store can, and reads the data: one call.
 *   hold     ephpm_session_write_held, ephpm_session_remove,
 *            ephpm_session_refresh_held: a write, removal or TTL refresh
 *            made only while nobody else was granted or holds the lock
 *            since this request's grant (its fence; its token where the
 *            grant minted none), checked in the store's step, with the
 *            release in the same call (the step member).
 *   release  ephpm_session_release: del_if_eq with the token, at close and
 *            at the request's end (ephpm_session_request_end).
 *   lost     a write refused because the lock is no longer this request's
 *            (expired, or lost by the store) is warned about
 *            (ephpm_session_warn_lock_lost) and leaves the stored session as
 *            it is; a forked child cannot release its parent's lock and
 *            says what frees it.
 *
 * A library with the step member does each of these in one call of it; an
 * older one with the first session members (set_nx_wait, get,
 * set_guarded, del_guarded, del_if_eq): the version dispatch, "has it or
 * not" (EPHPM_KV_OPS_HAS(ops, step)). The ini handlers of the lock's
 * settings (ephpm.session_lock_ttl, _wait, _timeout_action, _mode) close
 * the file.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <time.h>
#include <unistd.h>

#include "php.h"
#include "zend_execute.h"
#include "zend_smart_str.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"
#include "ephpm_session_handler.h"
#include "ephpm_session_internal.h"

static double ephpm_monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Forgets the request's lock without releasing it. */
void ephpm_session_forget_lock(void)
{
    if (ES(lock_key) != NULL) {
        zend_string_release(ES(lock_key));
        ES(lock_key) = NULL;
    }
    ES(lock_held) = false;
    ES(lock_fence) = 0;
    memset(ES(lock_token), 0, sizeof ES(lock_token));
}


/* Whether this request holds the lock whose key is lock. */
bool ephpm_session_holds(const ephpm_session_key *lock)
{
    zend_string *held = ES(lock_key);
    return ES(lock_held) && held != NULL
        && zend_binary_strcmp(ZSTR_VAL(held), ZSTR_LEN(held), lock->buf, lock->len) == 0;
}

/* Acts on session data (a step's action: SET with value and ttl_ms, DEL or
 * EXPIRE with ttl_ms) only while nobody else was granted or holds the
 * session's lock since this request's grant (GUARD_FENCE_HOLDER with the
 * grant's fence; GUARD_TOKEN where it minted none), and releases the lock,
 * in one call of the step member, which the library must have. OK (done,
 * and the lock is no longer this request's to release), MISS (the guard
 * did not hold, or for EXPIRE the data is gone: nothing changed) or a
 * failure. Crosses into Go. */
int ephpm_session_step_held(const ephpm_kv_ops *ops, int32_t action, const ephpm_session_key *data,
                            const ephpm_session_key *lock, const char *value, size_t value_len, int64_t ttl_ms)
{
    ephpm_kv_step req = {
        .struct_size = sizeof req,
        .flags = EPHPM_KV_STEP_RELEASE,
        .guard = ES(lock_fence) > 0 ? EPHPM_KV_STEP_GUARD_FENCE_HOLDER : EPHPM_KV_STEP_GUARD_TOKEN,
        .action = action,
        .lock = lock->buf,
        .lock_len = lock->len,
        .token = ES(lock_token),
        .token_len = strlen(ES(lock_token)),
        .fence = ES(lock_fence),
        .key = data->buf,
        .key_len = data->len,
        .value = value,
        .value_len = value_len,
        .ttl_ms = ttl_ms,
    };
    int rc = ops->step(&req);
    if (rc == EPHPM_KV_OK && action == EPHPM_KV_STEP_ACTION_EXPIRE && !(req.result & EPHPM_KV_STEP_DONE)) {
        return EPHPM_KV_MISS; /* no data to refresh: nothing changed, the lock still held */
    }
    if (rc == EPHPM_KV_OK) {
        ephpm_session_forget_lock(); /* released, or expired with nobody granted since */
    }
    return rc;
}

/* Removes session data while this request holds the session's lock (one
 * atomic step: ephpm_session_step_held, which also releases the lock; an
 * older library's del_guarded), or, without the lock, outright. OK, MISS
 * (the lock is no longer this request's: nothing changed) or a failure.
 * Crosses into Go. */
int ephpm_session_remove(const ephpm_kv_ops *ops, const ephpm_session_key *data,
                         const ephpm_session_key *lock)
{
    if (ephpm_session_holds(lock)) {
        if (EPHPM_KV_OPS_HAS(ops, step)) {
            return ephpm_session_step_held(ops, EPHPM_KV_STEP_ACTION_DEL, data, lock, NULL, 0, 0);
        }
        const char *token = ES(lock_token);
        return ops->del_guarded(data->buf, data->len, lock->buf, lock->len, token, strlen(token));
    }
    int rc = ops->del(data->buf, data->len);
    return rc == EPHPM_KV_MISS ? EPHPM_KV_OK : rc;
}

/* The warning for a write or destroy refused because the lock is gone: it
 * expired, or the store lost it (a Redis server restarted empty, flushed,
 * or failed over before the lock reached its replica). */
void ephpm_session_warn_lock_lost(const zend_string *sid, const char *what)
{
    php_error_docref(NULL, E_WARNING,
        "ephpm: session %s: not %s, this request no longer holds the session lock "
        "(it expired after ephpm.session_lock_ttl=" ZEND_LONG_FMT " s, or the store lost it, "
        "and another request may hold it); the stored session is left as it is",
        ZSTR_VAL(sid), what, ES(lock_ttl));
}

/* The warning of a forked child that cannot release the session lock of
 * the request it was forked in. The lock is the parent's, which took it
 * (the child cannot take one: it cannot enter the library) and releases it
 * at its own request end; what frees it if the parent dies first depends
 * on the store: a shared-memory segment records the parent as the lock's
 * holder and lets the lock lapse at once (the next call that meets it),
 * Redis lets it lapse a lease after the parent's library stops renewing it
 * (the URL's lock_lease; its TTL with lock_lease=0), and the in-process
 * store is the parent's own and ends with it. */
static void ephpm_session_warn_forked_release(const zend_string *key)
{
    const char *backend = ephpm_provider_backend();
    long parent = (long)ephpm_provider_pid();
    char then[160];
    if (backend != NULL && strcmp(backend, "shm") == 0) {
        snprintf(then, sizeof then,
                 "if pid %ld dies first, the lock lapses at once (the shared-memory segment records "
                 "pid %ld as its holder)", parent, parent);
    } else if (backend != NULL && strcmp(backend, "redis") == 0) {
        snprintf(then, sizeof then,
                 "if pid %ld dies first, the lock lapses within its lease (the backend URL's lock_lease, "
                 "2 s by default; with lock_lease=0 its TTL, ephpm.session_lock_ttl=" ZEND_LONG_FMT " s)",
                 parent, ES(lock_ttl));
    } else if (backend != NULL && strcmp(backend, "memory") == 0) {
        snprintf(then, sizeof then, "the lock is in pid %ld's own in-process store, and ends with it", parent);
    } else {
        snprintf(then, sizeof then, "if pid %ld dies first, the lock lapses with it or by its TTL", parent);
    }
    php_error_docref(NULL, E_WARNING,
        "ephpm: releasing the session lock %s failed: this process (pid %ld) was forked from pid %ld "
        "after the ephpm library was loaded there, and cannot use it; the lock stays with pid %ld, "
        "which took it and releases it when its request ends; %s",
        ZSTR_VAL(key), (long)getpid(), parent, parent, then);
}

/* Releases the request's lock, if it has (or may have) one, with its token.
 * A failure is warned about unless quiet (after the request's globals are
 * gone, a warning's message would outlive its memory). Crosses into Go. */
void ephpm_session_release_ex(const ephpm_kv_ops *ops, bool quiet)
{
    zend_string *key = ES(lock_key);
    if (key == NULL) {
        return;
    }
    if (ops != NULL) {
        int rc = ops->del_if_eq(ZSTR_VAL(key), ZSTR_LEN(key), ES(lock_token),
                                strlen(ES(lock_token)));
        if (rc == EPHPM_KV_E_FORKED && !quiet) {
            ephpm_session_warn_forked_release(key);
        } else if (rc < 0 && !quiet) {
            php_error_docref(NULL, E_WARNING,
                "ephpm: releasing the session lock %s failed: %s; it expires by its TTL",
                ZSTR_VAL(key), EPHPM_CAUSE(rc));
        }
    }
    ephpm_session_forget_lock();
}

void ephpm_session_release(const ephpm_kv_ops *ops)
{
    ephpm_session_release_ex(ops, false);
}

/* Writes value under data while this request holds lock, releasing the
 * lock in the same call (ephpm_session_step_held: one round trip on
 * Redis; the write is the last thing a request does under its session
 * lock); an older library's set_guarded, the release at close. OK, MISS
 * (the lock is no longer this request's: nothing changed) or a failure.
 * Crosses into Go. */
int ephpm_session_write_held(const ephpm_kv_ops *ops, const ephpm_session_key *data,
                             const ephpm_session_key *lock, const char *value, size_t value_len,
                             int64_t ttl_ms)
{
    if (EPHPM_KV_OPS_HAS(ops, step)) {
        return ephpm_session_step_held(ops, EPHPM_KV_STEP_ACTION_SET, data, lock, value, value_len, ttl_ms);
    }
    const char *token = ES(lock_token);
    return ops->set_guarded(data->buf, data->len, value, value_len, ttl_ms, lock->buf, lock->len,
                            token, strlen(token));
}

/* The wait budget in ms: ephpm.session_lock_wait, but never longer than
 * max_execution_time; *capped says the limit, not the setting, decided.
 * (On NTS builds PHP counts CPU time, which a wait does not use, so without
 * the cap a wait could outlast max_execution_time unseen. The cap is the
 * limit itself, not what is left of it: set_time_limit() restarts PHP's
 * timer at a moment this code cannot see, and a cap from the request's
 * start could end a request PHP would have let run.) */
static int64_t ephpm_session_wait_ms(bool *capped)
{
    double wait = ES(lock_wait);
    *capped = false;
    if (EG(timeout_seconds) > 0 && (double)EG(timeout_seconds) < wait) {
        wait = (double)EG(timeout_seconds);
        *capped = true;
    }
    return (int64_t)(wait * 1000.0);
}

/* Takes the lock of session sid for this request. True if it is held;
 * false after a warning that names the cause and then, what follows. A
 * wait that reaches max_execution_time ends the request with PHP's timeout
 * fatal if may_time_out (in session_start()), else it is a failure like
 * any other. With the step member the grant mints its fence (kept for the
 * writes under the lock) and binds the lock to this process where the
 * store can (a shared-memory segment lets a killed request's lock lapse at
 * once); with data too, the call that takes the lock also reads the
 * session's data (one round trip on Redis): *data_rc is then what
 * ephpm_kv_fetch answers, with *val; else it is EPHPM_SESSION_NOT_READ and
 * the caller reads. Crosses into Go (twice for data over the get buffer). */
bool ephpm_session_lock(const ephpm_kv_ops *ops, const zend_string *sid, const char *then,
                        bool may_time_out, const ephpm_session_key *data, int *data_rc,
                        zend_string **val)
{
    ephpm_session_key lock;

    if (!LOCK_KEY(&lock, sid)) {
        return false;
    }
    char *token = ES(lock_token);
    if (!ephpm_new_token(token, false)) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: no random bytes for a lock token; %s",
                         ZSTR_VAL(sid), then);
        return false;
    }

    bool capped;
    int64_t wait_ms = ephpm_session_wait_ms(&capped);
    double start = ephpm_monotonic_seconds();
    int64_t ttl_ms = (int64_t)ES(lock_ttl) * 1000;
    int rc;
    int64_t fence = 0;
    if (data_rc != NULL) {
        *data_rc = EPHPM_SESSION_NOT_READ;
    }
    if (EPHPM_KV_OPS_HAS(ops, step)) {
        ephpm_kv_step req = {
            .struct_size = sizeof req,
            .flags = EPHPM_KV_STEP_ACQUIRE | EPHPM_KV_STEP_FENCED | EPHPM_KV_STEP_BOUND,
            .lock = lock.buf,
            .lock_len = lock.len,
            .token = token,
            .token_len = EPHPM_TOKEN_LEN,
            .lock_ttl_ms = ttl_ms,
            .wait_ms = wait_ms,
        };
        if (data != NULL) {
            req.action = EPHPM_KV_STEP_ACTION_GET;
            req.key = data->buf;
            req.key_len = data->len;
            req.buf = ephpm_kv_fetch_buffer(&req.buf_cap);
        }
        rc = ops->step(&req);
        fence = req.fence;
        if (rc == EPHPM_KV_OK || rc == EPHPM_KV_TOO_SMALL) {
            if (data != NULL) {
                int got = rc == EPHPM_KV_TOO_SMALL ? EPHPM_KV_TOO_SMALL
                        : (req.result & EPHPM_KV_STEP_FOUND) ? EPHPM_KV_OK : EPHPM_KV_MISS;
                *data_rc = ephpm_kv_fetch_finish(ops, data->buf, data->len, got, req.len, val);
            }
            rc = EPHPM_KV_OK; /* the lock is this request's */
        }
    } else {
        rc = ops->set_nx_wait(lock.buf, lock.len, token, EPHPM_TOKEN_LEN, ttl_ms, wait_ms);
    }
    double waited = ephpm_monotonic_seconds() - start;

    if (rc == EPHPM_KV_EXISTS && capped && may_time_out) {
        /* The request ran out of time waiting: end it as PHP does, with the
         * timeout fatal. Nothing is held; the session stays unwritten. */
        ES(timed_out) = true;
        zend_timeout();
    }

    if (rc == EPHPM_KV_OK || rc == EPHPM_KV_E_UNAVAILABLE) {
        /* Granted, or maybe granted: either way close must release it. */
        ES(lock_key) = zend_string_init(lock.buf, lock.len, 0);
        ES(lock_held) = rc == EPHPM_KV_OK;
        ES(lock_fence) = rc == EPHPM_KV_OK ? fence : 0;
    }
    if (rc == EPHPM_KV_OK) {
        return true;
    }
    if (rc == EPHPM_KV_EXISTS) {
        php_error_docref(NULL, E_WARNING,
            "ephpm: session %s: lock not acquired after waiting %.3f s, another request holds it; %s",
            ZSTR_VAL(sid), waited, then);
    } else {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: lock not acquired: %s; %s",
                         ZSTR_VAL(sid), EPHPM_CAUSE(rc), then);
    }
    return false;
}

/* ---- ini: the ephpm.session_lock_* settings ------------------------------- */

/* Whether seconds, read from new_value, lies within min..
 * EPHPM_KV_MAX_TTL_SECONDS (NaN does not); else a warning naming the
 * setting (entry) and the range. */
static bool ephpm_ini_seconds_ok(const zend_ini_entry *entry, const zend_string *new_value, double seconds,
                                 int64_t min)
{
    if (seconds >= (double)min && seconds <= (double)EPHPM_KV_MAX_TTL_SECONDS) {
        return true;
    }
    php_error_docref(NULL, E_WARNING, "%s must be between %" PRId64 " and %" PRId64 " seconds, \"%s\" given",
                     ZSTR_VAL(entry->name), min, (int64_t)EPHPM_KV_MAX_TTL_SECONDS, ZSTR_VAL(new_value));
    return false;
}

/* A word a setting accepts and the value it stands for. */
typedef struct {
    const char *word;
    zend_long value;
} ephpm_ini_word;

/* The value of the word new_value names (case-insensitively) among
 * words, in *out; else false, after a warning naming the setting (entry)
 * and the words it accepts ("a, b or c"). */
static bool ephpm_ini_choose(const zend_ini_entry *entry, const zend_string *new_value,
                             const ephpm_ini_word *words, size_t count, zend_long *out)
{
    for (size_t i = 0; i < count; i++) {
        if (strcasecmp(ZSTR_VAL(new_value), words[i].word) == 0) {
            *out = words[i].value;
            return true;
        }
    }
    smart_str list = {0};
    for (size_t i = 0; i < count; i++) {
        if (i > 0) {
            smart_str_appends(&list, i == count - 1 ? " or " : ", ");
        }
        smart_str_appends(&list, words[i].word);
    }
    smart_str_0(&list);
    php_error_docref(NULL, E_WARNING, "%s must be %s, \"%s\" given", ZSTR_VAL(entry->name), ZSTR_VAL(list.s),
                     ZSTR_VAL(new_value));
    smart_str_free(&list);
    return false;
}

ZEND_INI_MH(OnUpdateEphpmLockTtl)
{
    zend_long ttl = ZEND_STRTOL(ZSTR_VAL(new_value), NULL, 10);
    if (!ephpm_ini_seconds_ok(entry, new_value, (double)ttl, 1)) {
        return FAILURE;
    }
    ES(lock_ttl) = ttl;
    return SUCCESS;
}

ZEND_INI_MH(OnUpdateEphpmLockWait)
{
    double wait = zend_strtod(ZSTR_VAL(new_value), NULL);
    if (!ephpm_ini_seconds_ok(entry, new_value, wait, 0)) {
        return FAILURE;
    }
    ES(lock_wait) = wait;
    return SUCCESS;
}

ZEND_INI_MH(OnUpdateEphpmLockAction)
{
    static const ephpm_ini_word actions[] = {
        {"proceed", EPHPM_LOCK_ACTION_PROCEED},
        {"fail", EPHPM_LOCK_ACTION_FAIL},
        {"readonly", EPHPM_LOCK_ACTION_READONLY},
    };
    return ephpm_ini_choose(entry, new_value, actions, sizeof actions / sizeof actions[0],
                            &ES(lock_timeout_action)) ? SUCCESS : FAILURE;
}

ZEND_INI_MH(OnUpdateEphpmLockMode)
{
    static const ephpm_ini_word modes[] = {
        {"exclusive", EPHPM_LOCK_MODE_EXCLUSIVE},
        {"optimistic", EPHPM_LOCK_MODE_OPTIMISTIC},
    };
    return ephpm_ini_choose(entry, new_value, modes, sizeof modes / sizeof modes[0],
                            &ES(lock_mode)) ? SUCCESS : FAILURE;
}
