/*
 * The session save handler "ephpm" (session.save_handler=ephpm): the
 * functions PHP's session module calls, over the ops table. A session's
 * data lives under session:<sid>, its lock under session_lock:<sid>
 * (include/ephpm_session.h, generated from sessionkeys/sessionkeys.go).
 *
 *   open     finds the table;
 *   read     takes the lock (ephpm_session_lock.c), then reads;
 *   write    writes while the lock is still this request's, releasing it;
 *   destroy  removes the data under the same condition;
 *   close    releases the lock.
 *
 * With ephpm.session_lock_mode=optimistic, read takes no lock, and write
 * merges this request's changes into the stored session under the lock,
 * held for that step only (ephpm_session_merge.c).
 *
 * This file builds the handler's keys (the ini handlers of the
 * ephpm.session_lock_* settings are ephpm_session_lock.c's). The
 * handler's state, its settings and the request's lock, is one struct
 * (ephpm_session_state, read with ES()). Handlers warn (E_WARNING) and
 * return FAILURE; they never throw. Every call through the table crosses
 * into Go: each PS_* function says what it may block on.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "ext/session/php_session.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"
#include "ephpm_session_handler.h"
#include "ephpm_session_internal.h"

PS_FUNCS_UPDATE_TIMESTAMP(ephpm) /* the macro ends in its own semicolon (-pedantic) */

/* The handler PHP registers as "ephpm" (ephpm_session_register). */
static const ps_module ps_mod_ephpm = {
    PS_MOD_UPDATE_TIMESTAMP(ephpm)
};

/* Builds prefix + sid into key. False, with the files handler's warning,
 * if sid is not a valid session id (php_session_valid_key: 1 to
 * EPHPM_SESSION_SID_MAX_LEN of EPHPM_SESSION_SID_CHARS), so that no client
 * picks an arbitrary store key. */
bool ephpm_session_make_key(ephpm_session_key *key, const char *prefix, const zend_string *sid)
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

/* What follows a lock not had, as a warning says it. */
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

/*
 * Open: find the ops table and keep it as the module data.
 * PARAMETERS: PS_OPEN_ARGS in php_session.h; save_path and session_name
 *   are not used (the store is the library's: ephpm.kv_backend).
 * MAY BLOCK ON: loading and configuring the library, on the process's
 *   first use of the store (ephpm_provider_get); nothing after that.
 * RETURN VALUE: SUCCESS, with the table as mod_data. FAILURE after a
 *   warning: no library loads, or the one loaded is too old to have the
 *   session members.
 */
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

/*
 * Close: release the request's session lock if it holds one, or may (a
 * grant whose outcome was unknown), and forget an optimistic read.
 * PARAMETERS: PS_CLOSE_ARGS in php_session.h.
 * MAY BLOCK ON: the release (del_if_eq), one call into the store.
 * RETURN VALUE: SUCCESS, always: a release that fails is warned about, and
 *   the lock expires by its TTL (ephpm_session_release).
 */
PS_CLOSE_FUNC(ephpm)
{
    ephpm_session_release(PS_GET_MOD_DATA());
    ephpm_session_forget_base();
    ES(readonly) = false;
    PS_SET_MOD_DATA(NULL);
    return SUCCESS;
}

/*
 * Read: take the session's lock, then read its data. A lock left over
 * from an earlier read in this request is released first. With
 * ephpm.session_locking=0 it only reads; with
 * ephpm.session_lock_mode=optimistic it reads without the lock and keeps
 * what it read for the merge at write (ephpm_session_read_optimistic),
 * unless that data cannot be merged: then it locks as exclusive mode does.
 * PARAMETERS: PS_READ_ARGS in php_session.h; key is the session id, *val
 *   receives the data.
 * MAY BLOCK ON: the lock, up to ephpm.session_lock_wait, capped at
 *   max_execution_time (a wait that reaches it ends the request with PHP's
 *   timeout fatal); the read, in the call that takes the lock where the
 *   library has set_nx_wait_get, else one call after it.
 * RETURN VALUE: SUCCESS, with *val the data, or an empty string for a
 *   session with none stored. SUCCESS too without the lock, after a
 *   warning, under ephpm.session_lock_timeout_action=proceed (the write is
 *   then not guarded) or readonly (the write and destroy are then
 *   refused). FAILURE after a warning: an invalid session id (the files
 *   handler's warning), the lock not had under action fail, or the read
 *   failing.
 */
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

/*
 * Write: store the session's data, with session.gc_maxlifetime as its TTL,
 * while the lock is still this request's, releasing the lock in the same
 * call where the library can (ephpm_session_write_held). Without the lock
 * (ephpm.session_locking=0, or action proceed) it is a plain set. Empty
 * data is not stored: the entry is removed, under the same condition. An
 * optimistic request merges its changes into the stored session instead
 * (ephpm_session_write_merged), holding the lock for that step only.
 * PARAMETERS: PS_WRITE_ARGS in php_session.h; key is the session id, val
 *   the data, maxlifetime session.gc_maxlifetime.
 * MAY BLOCK ON: one call into the store; an optimistic write: the lock's
 *   wait, the read of the stored session, the write and the release.
 * RETURN VALUE: SUCCESS. FAILURE after a warning: the request reached
 *   max_execution_time waiting for the lock, or has the session read-only
 *   (action readonly); an invalid session id; the lock no longer this
 *   request's (it expired, or the store lost it: nothing is written); an
 *   optimistic merge that cannot be made; the store failing.
 */
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

/*
 * Destroy: remove the session's data under the same condition as a write,
 * then release the lock if this request holds it. An optimistic request
 * takes the lock for the removal.
 * PARAMETERS: PS_DESTROY_ARGS in php_session.h; key is the session id.
 * MAY BLOCK ON: the removal and the release; an optimistic request's wait
 *   for the lock.
 * RETURN VALUE: SUCCESS, also for a session with no data. FAILURE after a
 *   warning: the request does not hold the lock (it timed out, or has the
 *   session read-only); an invalid session id; an optimistic request not
 *   getting the lock; the lock no longer this request's; the store
 *   failing.
 */
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

/*
 * Garbage collection: nothing to do. Every entry carries its TTL: the
 * store expires sessions by itself.
 * PARAMETERS: PS_GC_ARGS in php_session.h; *nrdels is set to 0.
 * MAY BLOCK ON: nothing.
 * RETURN VALUE: SUCCESS.
 */
PS_GC_FUNC(ephpm)
{
    *nrdels = 0;
    return SUCCESS;
}

/*
 * Create a session id that no session uses yet: PHP's
 * (php_session_create_id), checked against the store, up to 3 attempts.
 * PARAMETERS: PS_CREATE_SID_ARGS in php_session.h.
 * MAY BLOCK ON: one read of the store per attempt.
 * RETURN VALUE: the new id; unchecked if the handler has no table, and
 *   after a warning if the store cannot tell (128+ random bits make a
 *   collision far less likely than the store failing again). NULL if PHP
 *   makes no id, or after a warning if 3 ids in a row are taken.
 */
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

/*
 * Validate a session id (session.use_strict_mode): only the ids of
 * existing sessions are accepted.
 * PARAMETERS: PS_VALIDATE_SID_ARGS in php_session.h; key is the id the
 *   client sent.
 * MAY BLOCK ON: one read of the store.
 * RETURN VALUE: SUCCESS if the session's data is stored. FAILURE if the id
 *   is not valid (silently, as the files handler: PHP makes a new id), if
 *   no such session is stored, or after a warning if the store cannot
 *   tell.
 */
PS_VALIDATE_SID_FUNC(ephpm)
{
    const ephpm_kv_ops *ops = PS_GET_MOD_DATA();
    if (php_session_valid_key(ZSTR_VAL(key)) == FAILURE) {
        return FAILURE; /* silently, as the files handler: PHP makes a new id */
    }
    return ephpm_session_exists(ops, key) == 1 ? SUCCESS : FAILURE;
}

/*
 * Update the timestamp (session.lazy_write, the data unchanged): refresh
 * the TTL to session.gc_maxlifetime, keep the value. Under the lock, where
 * the library has the step member, the refresh also releases the lock
 * (ephpm_session_step_held: one round trip on Redis, where a refresh and
 * then the release are two: the refresh is the last thing a request does
 * under its session lock); if the lock is no longer this request's, or
 * the data expired,
 * that call changes nothing and the refresh goes as without the lock. Data
 * that expired during the request is written back (PS_WRITE), unless the
 * request may not write.
 * PARAMETERS: PS_UPDATE_TIMESTAMP_ARGS in php_session.h; key is the
 *   session id, val the data, maxlifetime session.gc_maxlifetime.
 * MAY BLOCK ON: one call into the store, two in that case, and a write
 *   back's.
 * RETURN VALUE: SUCCESS, also for an empty session (not stored: nothing to
 *   refresh). FAILURE after a warning: an invalid session id, the store
 *   failing, or the write back failing as PS_WRITE does.
 */
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
    if (ephpm_session_holds(&lock) && EPHPM_KV_OPS_HAS(ops, step)) {
        int rc = ephpm_session_step_held(ops, EPHPM_KV_STEP_ACTION_EXPIRE, &data, &lock, NULL, 0,
                                         ephpm_session_ttl_ms(maxlifetime));
        if (rc == EPHPM_KV_OK) {
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
