/*
 * The session save handler "ephpm": PHP's session module glue over the ops
 * table. Data lives under session:<sid>, the lock under session_lock:<sid>
 * (include/ephpm_session.h).
 *
 *   read    takes the lock (set_nx_wait: a fresh 128-bit CSPRNG token, the
 *           lock TTL, and a wait budget with backoff, run in Go), then reads;
 *           where the library has the fenced session members, the grant
 *           also mints a fence (set_nx_wait_get_fenced).
 *   write   writes with TTL session.gc_maxlifetime, and only while the lock is
 *           still this request's (set_guarded: check and write in one step),
 *           or, with a fence, while nobody else was granted or holds the
 *           lock since this request's grant, even if the lock expired
 *           (set_fenced_release); empty data is not stored: the entry is
 *           removed (del_guarded, del_fenced_release).
 *   destroy removes the data, under the same condition as the write.
 *   close   releases the lock with del_if_eq and the token.
 *
 * With ephpm.session_lock_mode=optimistic, read takes no lock and keeps
 * the data it read; write then decodes that and the data to write with the
 * configured session.serialize_handler, finds this request's changes (keys
 * set, changed, unset) and, holding the lock only for that step, re-reads
 * the stored session, applies the changes, writes (set_guarded) and
 * releases. A request that changed nothing writes nothing. Data the
 * serializer cannot decode and re-encode unchanged is locked at read, as in
 * exclusive mode, after a warning.
 *
 * This file builds the handler's keys and lock tokens and times its lock
 * wait (include/ephpm_session.h says who owns what); its state, settings
 * and the request's lock, is one struct (ephpm_session_state, read with
 * ES()). Handlers warn (E_WARNING) and return FAILURE; they never throw.
 * Every function here that calls through the table crosses into Go.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <time.h>
#include <unistd.h>

#include "php.h"
#include "zend_execute.h"
#include "ext/session/php_session.h"
#include "ext/standard/php_var.h"
#include "zend_smart_str.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"
#include "ephpm_session_handler.h"

PS_FUNCS_UPDATE_TIMESTAMP(ephpm) /* the macro ends in its own semicolon (-pedantic) */

/* A member of the session handler's state (ephpm_session_state), as PS()
 * is of the session module's. */
#define ES(v) (EPHPM_G(session).v)

static const ps_module ps_mod_ephpm = {
    PS_MOD_UPDATE_TIMESTAMP(ephpm)
};

/* A session's key, with room for the longest: a prefix and a session id
 * of any length PHP allows (include/ephpm_session.h). */
typedef struct {
    char buf[EPHPM_SESSION_KEY_MAX_LEN];
    size_t len;
} ephpm_session_key;

/* Builds prefix + sid into key. False, with the files handler's warning,
 * if sid is not a valid session id (php_session_valid_key: 1 to
 * EPHPM_SESSION_SID_MAX_LEN of EPHPM_SESSION_SID_CHARS), so that no client
 * picks an arbitrary store key. */
static bool ephpm_session_make_key(ephpm_session_key *key, const char *prefix, const zend_string *sid)
{
    size_t plen = strlen(prefix);
    if (ZSTR_LEN(sid) == 0 || plen + ZSTR_LEN(sid) > sizeof key->buf
        || php_session_valid_key(ZSTR_VAL(sid)) == FAILURE) {
        php_error_docref(NULL, E_WARNING,
            "Session ID is too long or contains illegal characters. Only the A-Z, a-z, 0-9, "
            "\"-\", and \",\" characters are allowed");
        return false;
    }
    memcpy(key->buf, prefix, plen);
    memcpy(key->buf + plen, ZSTR_VAL(sid), ZSTR_LEN(sid));
    key->len = plen + ZSTR_LEN(sid);
    return true;
}

/* The cause of a failure with the provider's message, in a buffer that
 * lives until the end of the enclosing statement. */
#define EPHPM_CAUSE(rc) ephpm_failure_text((rc), (char[768]){0}, 768)

#define DATA_KEY(k, sid) ephpm_session_make_key((k), EPHPM_SESSION_DATA_PREFIX, (sid))
#define LOCK_KEY(k, sid) ephpm_session_make_key((k), EPHPM_SESSION_LOCK_PREFIX, (sid))

static double ephpm_monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A session TTL in ms from gc_maxlifetime, kept inside what the store takes. */
static int64_t ephpm_session_ttl_ms(zend_long maxlifetime)
{
    if (maxlifetime < 1) {
        maxlifetime = 1;
    }
    if ((int64_t)maxlifetime > EPHPM_KV_MAX_TTL_SECONDS) {
        maxlifetime = (zend_long)EPHPM_KV_MAX_TTL_SECONDS;
    }
    return (int64_t)maxlifetime * 1000;
}

static const char *ephpm_lock_action_text(void)
{
    switch (ES(lock_timeout_action)) {
    case EPHPM_LOCK_ACTION_FAIL:
        return "the session is not started (ephpm.session_lock_timeout_action=fail)";
    case EPHPM_LOCK_ACTION_READONLY:
        return "the session is read-only for this request (ephpm.session_lock_timeout_action=readonly)";
    default:
        return "continuing without the lock (ephpm.session_lock_timeout_action=proceed)";
    }
}

/* Forgets the request's lock without releasing it. */
static void ephpm_session_forget_lock(void)
{
    if (ES(lock_key) != NULL) {
        zend_string_release(ES(lock_key));
        ES(lock_key) = NULL;
    }
    ES(lock_held) = false;
    ES(lock_fence) = 0;
    memset(ES(lock_token), 0, sizeof ES(lock_token));
}

/* Whether the library has the fenced session members (appended together:
 * the lock with its fence, the fenced write and removal with the release). */
static bool ephpm_session_fenced(const ephpm_kv_ops *ops)
{
    return EPHPM_KV_OPS_HAS(ops, set_nx_wait_get_fenced) && EPHPM_KV_OPS_HAS(ops, set_fenced_release)
        && EPHPM_KV_OPS_HAS(ops, del_fenced_release);
}

/* Whether this request holds the lock whose key is lock. */
static bool ephpm_session_holds(const ephpm_session_key *lock)
{
    zend_string *held = ES(lock_key);
    return ES(lock_held) && held != NULL
        && zend_binary_strcmp(ZSTR_VAL(held), ZSTR_LEN(held), lock->buf, lock->len) == 0;
}

/* Removes session data while this request holds the session's lock (one
 * atomic step: del_guarded; with a fence, del_fenced_release, which also
 * releases the lock), or, without the lock, outright. OK, MISS (the lock is
 * no longer this request's: nothing changed) or a failure. Crosses into Go. */
static int ephpm_session_remove(const ephpm_kv_ops *ops, const ephpm_session_key *data,
                                const ephpm_session_key *lock)
{
    if (ephpm_session_holds(lock)) {
        const char *token = ES(lock_token);
        if (ES(lock_fence) > 0) {
            int rc = ops->del_fenced_release(data->buf, data->len, lock->buf, lock->len, ES(lock_fence),
                                             token, strlen(token));
            if (rc == EPHPM_KV_OK) {
                ephpm_session_forget_lock(); /* released, or expired with nobody granted since */
            }
            return rc;
        }
        return ops->del_guarded(data->buf, data->len, lock->buf, lock->len, token, strlen(token));
    }
    int rc = ops->del(data->buf, data->len);
    return rc == EPHPM_KV_MISS ? EPHPM_KV_OK : rc;
}

/* The warning for a write or destroy refused because the lock is gone: it
 * expired, or the store lost it (a Redis server restarted empty, flushed,
 * or failed over before the lock reached its replica). */
static void ephpm_session_warn_lock_lost(const zend_string *sid, const char *what)
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
 * Redis records no holder and waits for the lock's TTL, and the in-process
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
                 "if pid %ld dies first, the lock expires by its TTL (ephpm.session_lock_ttl=" ZEND_LONG_FMT
                 " s)", parent, ES(lock_ttl));
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
static void ephpm_session_release_ex(const ephpm_kv_ops *ops, bool quiet)
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

static void ephpm_session_release(const ephpm_kv_ops *ops)
{
    ephpm_session_release_ex(ops, false);
}

/* Writes value under data while this request holds lock (set_guarded),
 * releasing the lock in the same call where the library has
 * set_guarded_release (one round trip on Redis; the write is the last
 * thing a request does under its session lock). With the grant's fence,
 * set_fenced_release: written while nobody else was granted or holds the
 * lock, even after it expired. OK, MISS (the lock is no longer this
 * request's: nothing changed) or a failure. Crosses into Go. */
static int ephpm_session_write_held(const ephpm_kv_ops *ops, const ephpm_session_key *data,
                                    const ephpm_session_key *lock, const char *value, size_t value_len,
                                    int64_t ttl_ms)
{
    const char *token = ES(lock_token);
    if (ES(lock_fence) > 0) {
        int rc = ops->set_fenced_release(data->buf, data->len, value, value_len, ttl_ms, lock->buf,
                                         lock->len, ES(lock_fence), token, strlen(token));
        if (rc == EPHPM_KV_OK) {
            ephpm_session_forget_lock(); /* released, or expired with nobody granted since */
        }
        return rc;
    }
    if (EPHPM_KV_OPS_HAS(ops, set_guarded_release)) {
        int rc = ops->set_guarded_release(data->buf, data->len, value, value_len, ttl_ms,
                                          lock->buf, lock->len, token, strlen(token));
        if (rc == EPHPM_KV_OK) {
            ephpm_session_forget_lock(); /* released */
        }
        return rc;
    }
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

/* *data_rc of ephpm_session_lock when it did not read the data. */
#define EPHPM_SESSION_NOT_READ INT_MIN

/* Takes the lock of session sid for this request. True if it is held;
 * false after a warning that names the cause and then, what follows. A
 * wait that reaches max_execution_time ends the request with PHP's timeout
 * fatal if may_time_out (in session_start()), else it is a failure like
 * any other. With data, and a library that has set_nx_wait_get, the call
 * that takes the lock also reads the session's data (one round trip on
 * Redis): *data_rc is then what ephpm_kv_fetch answers, with *val; else it
 * is EPHPM_SESSION_NOT_READ and the caller reads. Crosses into Go (twice
 * for data over the get buffer). */
static bool ephpm_session_lock(const ephpm_kv_ops *ops, const zend_string *sid, const char *then,
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
    bool fenced = ephpm_session_fenced(ops);
    int64_t fence = 0;
    if (data_rc != NULL) {
        *data_rc = EPHPM_SESSION_NOT_READ;
    }
    if (data != NULL && (fenced || EPHPM_KV_OPS_HAS(ops, set_nx_wait_get))) {
        size_t cap, len = 0;
        char *buf = ephpm_kv_fetch_buffer(&cap);
        rc = fenced
            ? ops->set_nx_wait_get_fenced(lock.buf, lock.len, token, EPHPM_TOKEN_LEN, ttl_ms, wait_ms,
                                          data->buf, data->len, buf, cap, &len, &fence)
            : ops->set_nx_wait_get(lock.buf, lock.len, token, EPHPM_TOKEN_LEN, ttl_ms, wait_ms,
                                   data->buf, data->len, buf, cap, &len);
        if (rc == EPHPM_KV_OK || rc == EPHPM_KV_MISS || rc == EPHPM_KV_TOO_SMALL) {
            *data_rc = ephpm_kv_fetch_finish(ops, data->buf, data->len, rc, len, val);
            rc = EPHPM_KV_OK; /* the lock is this request's */
        }
    } else if (fenced) {
        rc = ops->set_nx_wait_fenced(lock.buf, lock.len, token, EPHPM_TOKEN_LEN, ttl_ms, wait_ms, &fence);
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

/* Whether session sid has data: 1 yes, 0 no, -1 unknown (after a warning).
 * Crosses into Go. */
static int ephpm_session_exists(const ephpm_kv_ops *ops, const zend_string *sid)
{
    ephpm_session_key data;
    size_t len = 0;
    if (!DATA_KEY(&data, sid)) {
        return -1;
    }
    int rc = ops->get(data.buf, data.len, NULL, 0, &len);
    if (rc == EPHPM_KV_OK || rc == EPHPM_KV_TOO_SMALL) {
        return 1;
    }
    if (rc == EPHPM_KV_MISS) {
        return 0;
    }
    php_error_docref(NULL, E_WARNING, "ephpm: session %s: cannot tell whether it exists: %s",
                     ZSTR_VAL(sid), EPHPM_CAUSE(rc));
    return -1;
}

/* ---- optimistic mode: decoding, comparing, merging ----------------------- */

#define EPHPM_NOT_MERGED "this request's changes are not written"

static bool ephpm_session_optimistic(void)
{
    return ES(locking) && ES(lock_mode) == EPHPM_LOCK_MODE_OPTIMISTIC;
}

/* Forgets what an optimistic request read. */
static void ephpm_session_forget_base(void)
{
    if (ES(base) != NULL) {
        zend_string_release(ES(base));
        ES(base) = NULL;
    }
    if (ES(base_sid) != NULL) {
        zend_string_release(ES(base_sid));
        ES(base_sid) = NULL;
    }
}

static const char *ephpm_serializer_name(void)
{
    return PS(serializer) != NULL ? PS(serializer)->name : "(none)";
}

/* Decodes data with the configured session.serialize_handler into *vars, a
 * new array (the caller frees it). The serializers decode into
 * PS(http_session_vars), and php_serialize also binds a new $_SESSION in the
 * global symbol table: both point at a fresh array during the call and are
 * put back after it, so the request's $_SESSION is untouched. Empty data is
 * an empty array (an empty session is not stored). False, with *vars
 * undefined, if the serializer fails or leaves no array. */
static bool ephpm_session_decode(const zend_string *data, zval *vars)
{
    static const char name[] = "_SESSION";
    const ps_serializer *ser = PS(serializer);
    zval saved_vars, saved_global, fresh, *now, *global;

    ZVAL_UNDEF(vars);
    if (ZSTR_LEN(data) == 0) {
        array_init(vars);
        return true;
    }
    if (ser == NULL || ser->decode == NULL) {
        return false;
    }
    ZVAL_COPY_VALUE(&saved_vars, &PS(http_session_vars));
    global = zend_hash_str_find_ind(&EG(symbol_table), name, sizeof name - 1);
    bool had_global = global != NULL;
    if (had_global) {
        ZVAL_COPY(&saved_global, global);
    }

    array_init(&fresh);
    ZVAL_NEW_REF(&PS(http_session_vars), &fresh);
    zend_result rc = ser->decode(ZSTR_VAL(data), ZSTR_LEN(data));
    now = &PS(http_session_vars);
    if (rc == SUCCESS && Z_ISREF_P(now) && Z_TYPE_P(Z_REFVAL_P(now)) == IS_ARRAY) {
        ZVAL_COPY(vars, Z_REFVAL_P(now));
    }
    zval_ptr_dtor(now);
    ZVAL_COPY_VALUE(&PS(http_session_vars), &saved_vars);

    if (had_global) {
        zend_hash_str_update_ind(&EG(symbol_table), name, sizeof name - 1, &saved_global);
    } else {
        zend_hash_str_del_ind(&EG(symbol_table), name, sizeof name - 1);
    }
    return !Z_ISUNDEF_P(vars) && EG(exception) == NULL;
}

/* Encodes the array vars with the configured session.serialize_handler
 * (which reads PS(http_session_vars), pointed at vars for the call). NULL
 * for what PHP too would store as an empty session. */
static zend_string *ephpm_session_encode(zval *vars)
{
    const ps_serializer *ser = PS(serializer);
    zval saved_vars, ref_to;
    if (ser == NULL || ser->encode == NULL) {
        return NULL;
    }
    ZVAL_COPY_VALUE(&saved_vars, &PS(http_session_vars));
    ZVAL_COPY(&ref_to, vars);
    ZVAL_NEW_REF(&PS(http_session_vars), &ref_to);
    zend_string *out = ser->encode();
    zval_ptr_dtor(&PS(http_session_vars));
    ZVAL_COPY_VALUE(&PS(http_session_vars), &saved_vars);
    return out;
}

/* Whether data decodes and re-encodes to itself: only then can a write of
 * this request be merged without changing what it did not touch. */
static bool ephpm_session_round_trips(const zend_string *data)
{
    zval vars;
    if (ZSTR_LEN(data) == 0) {
        return true;
    }
    if (!ephpm_session_decode(data, &vars)) {
        return false;
    }
    zend_string *again = ephpm_session_encode(&vars);
    zval_ptr_dtor(&vars);
    bool same = again != NULL && zend_string_equals(again, data);
    if (again != NULL) {
        zend_string_release(again);
    }
    return same && EG(exception) == NULL;
}

/* A value serialized on its own, to compare values of any type exactly
 * ("1" and "01", 0 and false, two objects with the same properties of
 * different classes all differ). */
static zend_string *ephpm_serialize_value(zval *value)
{
    smart_str buf = {0};
    php_serialize_data_t hash;
    PHP_VAR_SERIALIZE_INIT(hash);
    php_var_serialize(&buf, value, &hash);
    PHP_VAR_SERIALIZE_DESTROY(hash);
    smart_str_0(&buf);
    return buf.s != NULL ? buf.s : ZSTR_EMPTY_ALLOC();
}

static bool ephpm_session_values_equal(zval *a, zval *b)
{
    ZVAL_DEREF(a);
    ZVAL_DEREF(b);
    if (Z_TYPE_P(a) != Z_TYPE_P(b)) {
        return false;
    }
    if (Z_TYPE_P(a) != IS_ARRAY && Z_TYPE_P(a) != IS_OBJECT) {
        return zend_is_identical(a, b);
    }
    zend_string *sa = ephpm_serialize_value(a), *sb = ephpm_serialize_value(b);
    bool equal = zend_string_equals(sa, sb);
    zend_string_release(sa);
    zend_string_release(sb);
    return equal;
}

static zval *ephpm_hash_find_key(HashTable *ht, zend_string *skey, zend_ulong ikey)
{
    return skey != NULL ? zend_hash_find(ht, skey) : zend_hash_index_find(ht, ikey);
}

/* This request's changes from base to mine: into set (key => new value)
 * the keys set or changed, into unset (key => true) the keys removed. */
static void ephpm_session_changes(HashTable *base, HashTable *mine, zval *set, zval *unset)
{
    zend_string *skey;
    zend_ulong ikey;
    zval *value, *old;

    array_init(set);
    array_init(unset);
    ZEND_HASH_FOREACH_KEY_VAL(mine, ikey, skey, value) {
        old = ephpm_hash_find_key(base, skey, ikey);
        if (old == NULL || !ephpm_session_values_equal(old, value)) {
            zval copy;
            ZVAL_COPY_DEREF(&copy, value);
            if (skey != NULL) {
                zend_hash_update(Z_ARRVAL_P(set), skey, &copy);
            } else {
                zend_hash_index_update(Z_ARRVAL_P(set), ikey, &copy);
            }
        }
    } ZEND_HASH_FOREACH_END();
    ZEND_HASH_FOREACH_KEY(base, ikey, skey) {
        if (ephpm_hash_find_key(mine, skey, ikey) == NULL) {
            if (skey != NULL) {
                add_assoc_bool_ex(unset, ZSTR_VAL(skey), ZSTR_LEN(skey), true);
            } else {
                add_index_bool(unset, ikey, true);
            }
        }
    } ZEND_HASH_FOREACH_END();
}

/* Applies the changes to the array stored (separated first). */
static void ephpm_session_apply(zval *stored, zval *set, zval *unset)
{
    zend_string *skey;
    zend_ulong ikey;
    zval *value;

    SEPARATE_ARRAY(stored);
    ZEND_HASH_FOREACH_KEY_VAL(Z_ARRVAL_P(set), ikey, skey, value) {
        Z_TRY_ADDREF_P(value);
        if (skey != NULL) {
            zend_hash_update(Z_ARRVAL_P(stored), skey, value);
        } else {
            zend_hash_index_update(Z_ARRVAL_P(stored), ikey, value);
        }
    } ZEND_HASH_FOREACH_END();
    ZEND_HASH_FOREACH_KEY(Z_ARRVAL_P(unset), ikey, skey) {
        if (skey != NULL) {
            zend_hash_del(Z_ARRVAL_P(stored), skey);
        } else {
            zend_hash_index_del(Z_ARRVAL_P(stored), ikey);
        }
    } ZEND_HASH_FOREACH_END();
}

/* Optimistic read: the data without the lock, kept as the request's base.
 * SUCCESS or FAILURE as PS_READ returns; EPHPM_READ_LOCK_INSTEAD (nothing
 * kept, *val not set) if the data cannot be merged later, after a warning:
 * the caller then locks as exclusive mode does. Crosses into Go once. */
#define EPHPM_READ_LOCK_INSTEAD 1
static int ephpm_session_read_optimistic(const ephpm_kv_ops *ops, const ephpm_session_key *data,
                                         const zend_string *sid, zend_string **val)
{
    zend_string *read;
    int rc = ephpm_kv_fetch(ops, data->buf, data->len, &read);
    if (rc == EPHPM_KV_MISS) {
        read = ZSTR_EMPTY_ALLOC();
    } else if (rc != EPHPM_KV_OK) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: reading its data failed: %s",
                         ZSTR_VAL(sid), EPHPM_CAUSE(rc));
        return FAILURE;
    }
    if (!ephpm_session_round_trips(read)) {
        zend_string_release(read);
        if (EG(exception) != NULL) {
            return FAILURE;
        }
        php_error_docref(NULL, E_WARNING,
            "ephpm: session %s: session.serialize_handler=%s does not decode and re-encode its data "
            "unchanged, so this request's changes cannot be merged; it holds the session lock as "
            "ephpm.session_lock_mode=exclusive does", ZSTR_VAL(sid), ephpm_serializer_name());
        return EPHPM_READ_LOCK_INSTEAD;
    }
    ES(base_sid) = zend_string_copy((zend_string *)sid);
    ES(base) = zend_string_copy(read);
    *val = read;
    return SUCCESS;
}

/* Optimistic write: this request's changes since its read, merged into the
 * stored session under the lock, which it holds only for this: lock, read,
 * write (set_guarded, or del_guarded for an empty result), release. Writes
 * nothing if nothing changed. Crosses into Go up to four times. */
static zend_result ephpm_session_write_merged(const ephpm_kv_ops *ops, const zend_string *sid,
                                              zend_string *val, int64_t ttl_ms)
{
    ephpm_session_key data, lock;
    zend_string *base = ZSTR_EMPTY_ALLOC(), *stored = NULL, *out = NULL;
    zval base_vars, my_vars, stored_vars, set, unset;
    zend_result result = FAILURE;
    int rc;

    if (!DATA_KEY(&data, sid) || !LOCK_KEY(&lock, sid)) {
        return FAILURE;
    }
    /* A session other than the one read (session_regenerate_id()) has no
     * base: all its keys are this request's. */
    if (ES(base_sid) != NULL && zend_string_equals(ES(base_sid), sid)) {
        base = ES(base);
    }
    if (zend_string_equals(base, val)) {
        return SUCCESS;
    }
    ZVAL_UNDEF(&stored_vars);
    ZVAL_UNDEF(&set);
    ZVAL_UNDEF(&unset);
    if (!ephpm_session_decode(base, &base_vars)) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written, the data read no longer "
                         "decodes with session.serialize_handler=%s", ZSTR_VAL(sid), ephpm_serializer_name());
        return FAILURE;
    }
    if (!ephpm_session_decode(val, &my_vars)) {
        zval_ptr_dtor(&base_vars);
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written, its data does not decode "
                         "with session.serialize_handler=%s to be merged", ZSTR_VAL(sid), ephpm_serializer_name());
        return FAILURE;
    }
    ephpm_session_changes(Z_ARRVAL(base_vars), Z_ARRVAL(my_vars), &set, &unset);
    if (zend_hash_num_elements(Z_ARRVAL(set)) == 0 && zend_hash_num_elements(Z_ARRVAL(unset)) == 0) {
        result = SUCCESS; /* only the encoding differs: nothing to write */
        goto done;
    }

    if (!ephpm_session_lock(ops, sid, EPHPM_NOT_MERGED, false, &data, &rc, &stored)) {
        ephpm_session_release(ops); /* a lock whose grant is unknown */
        goto done;
    }
    if (rc == EPHPM_SESSION_NOT_READ) {
        rc = ephpm_kv_fetch(ops, data.buf, data.len, &stored);
    }
    if (rc == EPHPM_KV_MISS) {
        stored = ZSTR_EMPTY_ALLOC();
    } else if (rc != EPHPM_KV_OK) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written, reading the stored data "
                         "to merge into failed: %s", ZSTR_VAL(sid), EPHPM_CAUSE(rc));
        goto release;
    }
    if (!ephpm_session_decode(stored, &stored_vars)) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written, the stored data does not "
                         "decode with session.serialize_handler=%s to merge into", ZSTR_VAL(sid),
                         ephpm_serializer_name());
        goto release;
    }
    ephpm_session_apply(&stored_vars, &set, &unset);
    out = ephpm_session_encode(&stored_vars);
    if (EG(exception) != NULL) {
        goto release;
    }
    if (out == NULL || ZSTR_LEN(out) == 0) {
        rc = ephpm_session_remove(ops, &data, &lock);
    } else {
        rc = ephpm_session_write_held(ops, &data, &lock, ZSTR_VAL(out), ZSTR_LEN(out), ttl_ms);
    }
    if (rc == EPHPM_KV_MISS) {
        ephpm_session_warn_lock_lost(sid, "written");
    } else if (rc != EPHPM_KV_OK) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written: %s",
                         ZSTR_VAL(sid), EPHPM_CAUSE(rc));
    } else {
        /* A later write in this request changes this request's view. */
        ephpm_session_forget_base();
        ES(base_sid) = zend_string_copy((zend_string *)sid);
        ES(base) = zend_string_copy(val);
        result = SUCCESS;
    }
release:
    ephpm_session_release(ops);
done:
    zval_ptr_dtor(&base_vars);
    zval_ptr_dtor(&my_vars);
    zval_ptr_dtor(&stored_vars);
    zval_ptr_dtor(&set);
    zval_ptr_dtor(&unset);
    if (stored != NULL) {
        zend_string_release(stored);
    }
    if (out != NULL) {
        zend_string_release(out);
    }
    return result;
}

PS_OPEN_FUNC(ephpm)
{
    char err[512];
    const ephpm_kv_ops *ops = ephpm_provider_get(err, sizeof err);
    if (ops == NULL) {
        php_error_docref(NULL, E_WARNING, "ephpm: session handler: %s", err);
        return FAILURE;
    }
    if (!EPHPM_KV_OPS_HAS(ops, expire) || !EPHPM_KV_OPS_HAS(ops, set_nx_wait)
        || !EPHPM_KV_OPS_HAS(ops, set_guarded) || !EPHPM_KV_OPS_HAS(ops, wait)
        || !EPHPM_KV_OPS_HAS(ops, del_guarded)) {
        php_error_docref(NULL, E_WARNING,
            "ephpm: session handler: the loaded library %s is too old (table of %u bytes has no "
            "session members)", ephpm_provider_origin(), ops->struct_size);
        return FAILURE;
    }
    PS_SET_MOD_DATA((void *)ops);
    ES(readonly) = false;
    return SUCCESS;
}

PS_CLOSE_FUNC(ephpm)
{
    ephpm_session_release(PS_GET_MOD_DATA());
    ephpm_session_forget_base();
    ES(readonly) = false;
    PS_SET_MOD_DATA(NULL);
    return SUCCESS;
}

PS_READ_FUNC(ephpm)
{
    const ephpm_kv_ops *ops = PS_GET_MOD_DATA();
    ephpm_session_key data;

    if (!DATA_KEY(&data, key)) {
        return FAILURE;
    }
    ES(readonly) = false;
    ephpm_session_forget_base();
    if (ephpm_session_optimistic()) {
        ephpm_session_release(ops);
        int orc = ephpm_session_read_optimistic(ops, &data, key, val);
        if (orc != EPHPM_READ_LOCK_INSTEAD) {
            return orc == SUCCESS ? SUCCESS : FAILURE;
        }
    }
    int rc = EPHPM_SESSION_NOT_READ;
    if (ES(locking)) {
        /* One session lock per request: drop any left over first. */
        ephpm_session_release(ops);
        if (!ephpm_session_lock(ops, key, ephpm_lock_action_text(), true, &data, &rc, val)) {
            switch (ES(lock_timeout_action)) {
            case EPHPM_LOCK_ACTION_FAIL:
                ephpm_session_release(ops); /* a lock whose grant is unknown */
                return FAILURE;
            case EPHPM_LOCK_ACTION_READONLY:
                ES(readonly) = true;
                break;
            }
        }
    }

    if (rc == EPHPM_SESSION_NOT_READ) {
        rc = ephpm_kv_fetch(ops, data.buf, data.len, val);
    }
    if (rc == EPHPM_KV_MISS) {
        *val = ZSTR_EMPTY_ALLOC();
        return SUCCESS;
    }
    if (rc != EPHPM_KV_OK) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: reading its data failed: %s",
                         ZSTR_VAL(key), EPHPM_CAUSE(rc));
        return FAILURE;
    }
    return SUCCESS;
}

PS_WRITE_FUNC(ephpm)
{
    const ephpm_kv_ops *ops = PS_GET_MOD_DATA();
    ephpm_session_key data, lock;
    int rc;

    if (ES(timed_out)) {
        php_error_docref(NULL, E_WARNING,
            "ephpm: session %s: not written, the request reached max_execution_time waiting for "
            "the session lock", ZSTR_VAL(key));
        return FAILURE;
    }
    if (ES(readonly)) {
        php_error_docref(NULL, E_WARNING,
            "ephpm: session %s: not written, this request did not get the session lock "
            "(ephpm.session_lock_timeout_action=readonly)", ZSTR_VAL(key));
        return FAILURE;
    }
    if (!DATA_KEY(&data, key) || !LOCK_KEY(&lock, key)) {
        return FAILURE;
    }
    int64_t ttl_ms = ephpm_session_ttl_ms(maxlifetime);
    if (ES(base) != NULL) {
        return ephpm_session_write_merged(ops, key, val, ttl_ms);
    }
    if (ZSTR_LEN(val) == 0) {
        /* An empty session is not stored: a visitor who never puts anything
         * in $_SESSION costs the store nothing. */
        rc = ephpm_session_remove(ops, &data, &lock);
        if (rc == EPHPM_KV_MISS) {
            ephpm_session_warn_lock_lost(key, "written");
            return FAILURE;
        }
    } else if (ephpm_session_holds(&lock)) {
        rc = ephpm_session_write_held(ops, &data, &lock, ZSTR_VAL(val), ZSTR_LEN(val), ttl_ms);
        if (rc == EPHPM_KV_MISS) {
            ephpm_session_warn_lock_lost(key, "written");
            return FAILURE;
        }
    } else {
        rc = ops->set(data.buf, data.len, ZSTR_VAL(val), ZSTR_LEN(val), ttl_ms);
    }
    if (rc != EPHPM_KV_OK) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written: %s",
                         ZSTR_VAL(key), EPHPM_CAUSE(rc));
        return FAILURE;
    }
    return SUCCESS;
}

PS_DESTROY_FUNC(ephpm)
{
    const ephpm_kv_ops *ops = PS_GET_MOD_DATA();
    ephpm_session_key data, lock;

    /* Destroying is writing: refused when the write would be. */
    if (ES(readonly) || ES(timed_out)) {
        php_error_docref(NULL, E_WARNING,
            "ephpm: session %s: not destroyed, this request does not hold the session lock", ZSTR_VAL(key));
        return FAILURE;
    }

    if (!DATA_KEY(&data, key) || !LOCK_KEY(&lock, key)) {
        return FAILURE;
    }
    if (ES(base) != NULL) {
        /* Optimistic: the destroy too happens under the lock, taken for it. */
        ephpm_session_forget_base();
        if (!ephpm_session_holds(&lock)
            && !ephpm_session_lock(ops, key, "the session is not destroyed", false, NULL, NULL, NULL)) {
            ephpm_session_release(ops); /* a lock whose grant is unknown */
            return FAILURE;
        }
    }
    int rc = ephpm_session_remove(ops, &data, &lock);
    zend_string *held = ES(lock_key);
    if (held != NULL && zend_binary_strcmp(ZSTR_VAL(held), ZSTR_LEN(held), lock.buf, lock.len) == 0) {
        ephpm_session_release(ops);
    }
    if (rc == EPHPM_KV_MISS) {
        ephpm_session_warn_lock_lost(key, "destroyed");
        return FAILURE;
    }
    if (rc < 0) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not destroyed: %s",
                         ZSTR_VAL(key), EPHPM_CAUSE(rc));
        return FAILURE;
    }
    return SUCCESS;
}

/* Every entry carries its TTL: the store expires sessions by itself. */
PS_GC_FUNC(ephpm)
{
    *nrdels = 0;
    return SUCCESS;
}

/* A new id that no session uses yet. */
PS_CREATE_SID_FUNC(ephpm)
{
    const ephpm_kv_ops *ops = PS_GET_MOD_DATA();
    for (int attempt = 0; attempt < 3; attempt++) {
        zend_string *sid = php_session_create_id(mod_data);
        if (sid == NULL || ops == NULL) {
            return sid;
        }
        int exists = ephpm_session_exists(ops, sid);
        if (exists <= 0) {
            /* Free, or unknown after a warning: 128+ random bits make a
             * collision far less likely than the store failing again. */
            return sid;
        }
        zend_string_release_ex(sid, 0);
    }
    php_error_docref(NULL, E_WARNING, "ephpm: no unused session id after 3 attempts");
    return NULL;
}

/* session.use_strict_mode: only ids of existing sessions are accepted. */
PS_VALIDATE_SID_FUNC(ephpm)
{
    const ephpm_kv_ops *ops = PS_GET_MOD_DATA();
    if (php_session_valid_key(ZSTR_VAL(key)) == FAILURE) {
        return FAILURE; /* silently, as the files handler: PHP makes a new id */
    }
    return ephpm_session_exists(ops, key) == 1 ? SUCCESS : FAILURE;
}

/* session.lazy_write with unchanged data: refresh the TTL, keep the value.
 * Under the lock, where the library has expire_guarded_release, the refresh
 * also releases the lock (one round trip on Redis, where a refresh and then
 * the release are two: the refresh is the last thing a request does under
 * its session lock); if the lock is no longer this request's, or the data
 * expired, that call changes nothing and the refresh goes as without the
 * lock. Crosses into Go (twice in that case). */
PS_UPDATE_TIMESTAMP_FUNC(ephpm)
{
    const ephpm_kv_ops *ops = PS_GET_MOD_DATA();
    ephpm_session_key data, lock;

    if (ZSTR_LEN(val) == 0) {
        return SUCCESS; /* an empty session is not stored: nothing to refresh */
    }
    if (!DATA_KEY(&data, key) || !LOCK_KEY(&lock, key)) {
        return FAILURE;
    }
    if (ephpm_session_holds(&lock) && EPHPM_KV_OPS_HAS(ops, expire_guarded_release)) {
        const char *token = ES(lock_token);
        int rc = ops->expire_guarded_release(data.buf, data.len, ephpm_session_ttl_ms(maxlifetime),
                                             lock.buf, lock.len, token, strlen(token));
        if (rc == EPHPM_KV_OK) {
            ephpm_session_forget_lock(); /* released */
            return SUCCESS;
        }
        if (rc < 0) {
            php_error_docref(NULL, E_WARNING, "ephpm: session %s: TTL not refreshed: %s",
                             ZSTR_VAL(key), EPHPM_CAUSE(rc));
            return FAILURE;
        }
    }
    int rc = ops->expire(data.buf, data.len, ephpm_session_ttl_ms(maxlifetime));
    if (rc == EPHPM_KV_MISS && !ES(readonly) && !ES(timed_out)) {
        /* The data expired during the request: write it back. */
        return ps_write_ephpm(mod_data, key, val, maxlifetime);
    }
    if (rc < 0) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: TTL not refreshed: %s",
                         ZSTR_VAL(key), EPHPM_CAUSE(rc));
        return FAILURE;
    }
    return SUCCESS;
}

void ephpm_session_register(void)
{
    php_session_register_module(&ps_mod_ephpm);
}

void ephpm_session_request_end(void)
{
    ephpm_session_release_ex(ephpm_provider_loaded(), true);
    ephpm_session_forget_base();
    ES(readonly) = false;
    ES(timed_out) = false;
}

/* ---- ini ---------------------------------------------------------------- */

ZEND_INI_MH(OnUpdateEphpmLockTtl)
{
    zend_long ttl = ZEND_STRTOL(ZSTR_VAL(new_value), NULL, 10);
    if (ttl < 1 || (int64_t)ttl > EPHPM_KV_MAX_TTL_SECONDS) {
        php_error_docref(NULL, E_WARNING,
            "ephpm.session_lock_ttl must be between 1 and %" PRId64 " seconds, \"%s\" given",
            (int64_t)EPHPM_KV_MAX_TTL_SECONDS, ZSTR_VAL(new_value));
        return FAILURE;
    }
    ES(lock_ttl) = ttl;
    return SUCCESS;
}

ZEND_INI_MH(OnUpdateEphpmLockWait)
{
    double wait = zend_strtod(ZSTR_VAL(new_value), NULL);
    if (!(wait >= 0 && wait <= (double)EPHPM_KV_MAX_TTL_SECONDS)) {
        php_error_docref(NULL, E_WARNING,
            "ephpm.session_lock_wait must be between 0 and %" PRId64 " seconds, \"%s\" given",
            (int64_t)EPHPM_KV_MAX_TTL_SECONDS, ZSTR_VAL(new_value));
        return FAILURE;
    }
    ES(lock_wait) = wait;
    return SUCCESS;
}

ZEND_INI_MH(OnUpdateEphpmLockAction)
{
    static const struct {
        const char *name;
        ephpm_lock_action action;
    } actions[] = {
        {"proceed", EPHPM_LOCK_ACTION_PROCEED},
        {"fail", EPHPM_LOCK_ACTION_FAIL},
        {"readonly", EPHPM_LOCK_ACTION_READONLY},
    };
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        if (strcasecmp(ZSTR_VAL(new_value), actions[i].name) == 0) {
            ES(lock_timeout_action) = actions[i].action;
            return SUCCESS;
        }
    }
    php_error_docref(NULL, E_WARNING,
        "ephpm.session_lock_timeout_action must be proceed, fail or readonly, \"%s\" given",
        ZSTR_VAL(new_value));
    return FAILURE;
}

ZEND_INI_MH(OnUpdateEphpmLockMode)
{
    if (strcasecmp(ZSTR_VAL(new_value), "exclusive") == 0) {
        ES(lock_mode) = EPHPM_LOCK_MODE_EXCLUSIVE;
    } else if (strcasecmp(ZSTR_VAL(new_value), "optimistic") == 0) {
        ES(lock_mode) = EPHPM_LOCK_MODE_OPTIMISTIC;
    } else {
        php_error_docref(NULL, E_WARNING,
            "ephpm.session_lock_mode must be exclusive or optimistic, \"%s\" given", ZSTR_VAL(new_value));
        return FAILURE;
    }
    return SUCCESS;
}
