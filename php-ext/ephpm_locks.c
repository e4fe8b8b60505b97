/*
 * The lock functions: ephpm_kv_lock and _lock_read (take), _lock_refresh
 * and _expire_if_eq (extend while the token holds), _unlock and
 * _del_if_eq (release while the token holds), _lock_info and
 * _lock_release_all. Every release compares the token in the store's one
 * step; none deletes blindly but _lock_release_all, which is asked to.
 * The fences the locks grant are used by ephpm_fences.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "zend_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

/* {{{ ephpm_kv_del_if_eq(string $key, string $token): bool */
ZEND_FUNCTION(ephpm_kv_del_if_eq)
{
    zend_string *key, *token;

    ZEND_PARSE_PARAMETERS_START(2, 2)
        Z_PARAM_STR(key)
        Z_PARAM_STR(token)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1) || !ephpm_check_value(token, 2)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ops->del_if_eq(ZSTR_VAL(key), ZSTR_LEN(key), ZSTR_VAL(token), ZSTR_LEN(token));
    EPHPM_RETURN_ANSWER(rc, EPHPM_KV_MISS);
}
/* }}} */

/* A member that takes a key, a token and a TTL: expire_if_eq, lock_refresh. */
typedef int (*ephpm_token_ttl_member)(const char *key, size_t key_len, const char *token, size_t token_len,
                                      int64_t ttl_ms);

/* Shared body of ephpm_kv_expire_if_eq and ephpm_kv_lock_refresh, (string
 * $key, string $token, int $ttl): bool, through the member at offset in
 * the table, with a TTL of at least min_ttl seconds. */
static void ephpm_token_ttl(INTERNAL_FUNCTION_PARAMETERS, size_t offset, zend_long min_ttl)
{
    zend_string *key, *token;
    zend_long ttl;
    int64_t ttl_ms;

    ZEND_PARSE_PARAMETERS_START(3, 3)
        Z_PARAM_STR(key)
        Z_PARAM_STR(token)
        Z_PARAM_LONG(ttl)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1) || !ephpm_check_value(token, 2) || !ephpm_ttl_ms(ttl, min_ttl, 3, &ttl_ms)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_ops_with(offset, sizeof(ephpm_token_ttl_member));
    if (ops == NULL) {
        RETURN_THROWS();
    }
    ephpm_token_ttl_member member = *(const ephpm_token_ttl_member *)((const char *)ops + offset);
    int rc = member(ZSTR_VAL(key), ZSTR_LEN(key), ZSTR_VAL(token), ZSTR_LEN(token), ttl_ms);
    EPHPM_RETURN_ANSWER(rc, EPHPM_KV_MISS);
}

/* {{{ ephpm_kv_expire_if_eq(string $key, string $token, int $ttl): bool */
ZEND_FUNCTION(ephpm_kv_expire_if_eq)
{
    ephpm_token_ttl(INTERNAL_FUNCTION_PARAM_PASSTHRU, offsetof(ephpm_kv_ops, expire_if_eq), 0);
}
/* }}} */

/* Releases token's hold of name after a failure that leaves its grant
 * possible: through lock_release when the lock was taken by lock_acquire
 * (rw), else del_if_eq. */
static void ephpm_release_after_failure(const ephpm_kv_ops *ops, bool rw, const zend_string *name,
                                        const zend_string *token)
{
    if (rw) {
        ops->lock_release(ZSTR_VAL(name), ZSTR_LEN(name), ZSTR_VAL(token), ZSTR_LEN(token));
    } else {
        ops->del_if_eq(ZSTR_VAL(name), ZSTR_LEN(name), ZSTR_VAL(token), ZSTR_LEN(token));
    }
}

int ephpm_acquire_bound(const ephpm_kv_ops *ops, const char *lock, size_t lock_len, const char *token,
                        size_t token_len, int64_t ttl_ms, int64_t wait_ms, bool fenced, int64_t *fence)
{
    ephpm_kv_step sp = {
        .struct_size = sizeof sp,
        .flags = EPHPM_KV_STEP_ACQUIRE | EPHPM_KV_STEP_BOUND | (fenced ? EPHPM_KV_STEP_FENCED : 0),
        .guard = EPHPM_KV_STEP_GUARD_NONE,
        .action = EPHPM_KV_STEP_ACTION_NONE,
        .lock = lock,
        .lock_len = lock_len,
        .token = token,
        .token_len = token_len,
        .lock_ttl_ms = ttl_ms,
        .wait_ms = wait_ms,
    };
    int rc = ops->step(&sp);
    *fence = fenced ? sp.fence : 0;
    return rc;
}

/* Shared body of ephpm_kv_lock (mode EXCLUSIVE) and ephpm_kv_lock_read
 * (SHARED): (string $name, int $ttl, float $wait = 0.0, ?string $token =
 * null, ?int &$fence = null, bool $bound = false): string|false, $bound
 * for EXCLUSIVE only. */
static void ephpm_lock(INTERNAL_FUNCTION_PARAMETERS, int32_t mode)
{
    zend_string *name, *given = NULL;
    zend_long ttl;
    double wait = 0.0;
    int64_t ttl_ms;
    zval *fence_ref = NULL;
    bool bound = false;

    ZEND_PARSE_PARAMETERS_START(2, mode == EPHPM_KV_LOCK_EXCLUSIVE ? 6 : 5)
        Z_PARAM_STR(name)
        Z_PARAM_LONG(ttl)
        Z_PARAM_OPTIONAL
        Z_PARAM_DOUBLE(wait)
        Z_PARAM_STR_OR_NULL(given)
        Z_PARAM_ZVAL(fence_ref)
        Z_PARAM_BOOL(bound)
    ZEND_PARSE_PARAMETERS_END();

    /* A lock without a TTL outlives a crashed holder forever: require one. */
    if (!ephpm_check_key(name, 1) || !ephpm_ttl_ms(ttl, 1, 2, &ttl_ms)) {
        RETURN_THROWS();
    }
    if (!(wait >= 0.0 && wait <= (double)EPHPM_KV_MAX_TTL_SECONDS)) {
        zend_argument_value_error(3, "must be between 0 and %" PRId64 " seconds",
                                  (int64_t)EPHPM_KV_MAX_TTL_SECONDS);
        RETURN_THROWS();
    }
    /* A caller's own token (a framework's lock owner) must be one that
     * cannot be guessed or shared by accident: it is the caller's to make.
     * A read hold keeps its token beside the others': 1..255 bytes. */
    if (given != NULL && ZSTR_LEN(given) == 0) {
        zend_argument_value_error(4, "must not be empty");
        RETURN_THROWS();
    }
    if (given != NULL && ZSTR_LEN(given) > EPHPM_KV_MAX_LOCK_TOKEN_LEN) {
        zend_argument_value_error(4, "must not be longer than %u bytes", EPHPM_KV_MAX_LOCK_TOKEN_LEN);
        RETURN_THROWS();
    }
    /* Every grant goes through lock_acquire where the provider has it, so
     * that a writer keeps new readers out while it waits, and every grant
     * is fenced where the provider can mint fences, so that a caller who
     * asked for no fence still makes earlier holders' fences stale. An
     * older provider serves exclusive locks through set_nx_wait_fenced (or,
     * for callers who ask for no fence, set_nx_wait). */
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    bool rw = !bound && EPHPM_KV_OPS_HAS(ops, lock_acquire);
    bool fenced = EPHPM_KV_OPS_HAS(ops, set_nx_wait_fenced);
    if ((bound && !EPHPM_KV_OPS_HAS(ops, step))
        || (!rw && !bound && (mode != EPHPM_KV_LOCK_EXCLUSIVE
                              || (!fenced && (fence_ref != NULL || !EPHPM_KV_OPS_HAS(ops, set_nx_wait)))))) {
        ephpm_throw_status(EPHPM_KV_E_UNSUPPORTED);
        RETURN_THROWS();
    }

    zend_string *token;
    if (given != NULL) {
        token = zend_string_copy(given);
    } else {
        token = zend_string_alloc(EPHPM_TOKEN_LEN, 0);
        if (!ephpm_new_token(ZSTR_VAL(token), true)) {
            zend_string_efree(token);
            RETURN_THROWS();
        }
    }

    int64_t fence = 0, wait_ms = (int64_t)(wait * 1000.0);
    int rc = bound ? ephpm_acquire_bound(ops, ZSTR_VAL(name), ZSTR_LEN(name), ZSTR_VAL(token), ZSTR_LEN(token),
                                         ttl_ms, wait_ms, true, &fence)
        : rw ? ops->lock_acquire(ZSTR_VAL(name), ZSTR_LEN(name), ZSTR_VAL(token), ZSTR_LEN(token),
                                    mode, ttl_ms, wait_ms, &fence)
        : fenced ? ops->set_nx_wait_fenced(ZSTR_VAL(name), ZSTR_LEN(name), ZSTR_VAL(token), ZSTR_LEN(token),
                                           ttl_ms, wait_ms, &fence)
                 : ops->set_nx_wait(ZSTR_VAL(name), ZSTR_LEN(name), ZSTR_VAL(token), ZSTR_LEN(token),
                                    ttl_ms, wait_ms);
    if ((rc == EPHPM_KV_OK || rc == EPHPM_KV_EXISTS) && fence_ref != NULL) {
        ZEND_TRY_ASSIGN_REF_LONG(fence_ref, rc == EPHPM_KV_OK ? (zend_long)fence : 0);
        if (UNEXPECTED(EG(exception) != NULL)) {
            /* $fence is a reference to a typed property that takes no int:
             * the caller gets the TypeError, not a lock it cannot see. */
            if (rc == EPHPM_KV_OK) {
                ephpm_release_after_failure(ops, rw, name, token);
            }
            zend_string_release(token);
            RETURN_THROWS();
        }
    }
    if (rc == EPHPM_KV_OK) {
        RETURN_STR(token); /* not NEW_STR: a caller's token may be interned */
    }
    if (rc == EPHPM_KV_EXISTS) {
        zend_string_release(token);
        RETURN_FALSE;
    }
    /* Throw first: the message takes this failure's cause before the
     * cleanup below can replace it. */
    ephpm_throw_status(rc);
    if (rc == EPHPM_KV_E_UNAVAILABLE && given == NULL) {
        /* The grant may have landed: release it. Not with a caller's token,
         * which may stand for a lock the caller already held. */
        ephpm_release_after_failure(ops, rw, name, token);
    }
    zend_string_release(token);
    RETURN_THROWS();
}

/* {{{ ephpm_kv_lock(string $name, int $ttl, float $wait = 0.0, ?string $token = null, ?int &$fence = null, bool $bound = false): string|false */
ZEND_FUNCTION(ephpm_kv_lock)
{
    ephpm_lock(INTERNAL_FUNCTION_PARAM_PASSTHRU, EPHPM_KV_LOCK_EXCLUSIVE);
}
/* }}} */

/* {{{ ephpm_kv_lock_read(string $name, int $ttl, float $wait = 0.0, ?string $token = null, ?int &$fence = null): string|false */
ZEND_FUNCTION(ephpm_kv_lock_read)
{
    ephpm_lock(INTERNAL_FUNCTION_PARAM_PASSTHRU, EPHPM_KV_LOCK_SHARED);
}
/* }}} */

/* {{{ ephpm_kv_lock_refresh(string $name, string $token, int $ttl): bool */
ZEND_FUNCTION(ephpm_kv_lock_refresh)
{
    /* As ephpm_kv_lock: a hold without a TTL would outlive a crashed holder. */
    ephpm_token_ttl(INTERNAL_FUNCTION_PARAM_PASSTHRU, offsetof(ephpm_kv_ops, lock_refresh), 1);
}
/* }}} */

/* {{{ ephpm_kv_lock_info(string $name): ?array */
ZEND_FUNCTION(ephpm_kv_lock_info)
{
    zend_string *name;

    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(name)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(name, 1)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(lock_info);
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int32_t mode = EPHPM_KV_LOCK_EXCLUSIVE;
    int64_t holders = 0;
    int rc = ops->lock_info(ZSTR_VAL(name), ZSTR_LEN(name), &mode, &holders);
    if (rc == EPHPM_KV_MISS) {
        RETURN_NULL();
    }
    if (rc != EPHPM_KV_OK) {
        ephpm_throw_status(rc);
        RETURN_THROWS();
    }
    array_init_size(return_value, 2);
    add_assoc_string(return_value, "mode", mode == EPHPM_KV_LOCK_SHARED ? "shared" : "exclusive");
    add_assoc_long(return_value, "holders", (zend_long)holders);
}
/* }}} */

/* {{{ ephpm_kv_lock_release_all(string $name): bool */
ZEND_FUNCTION(ephpm_kv_lock_release_all)
{
    zend_string *name;

    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(name)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(name, 1)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    /* Every holder is in the name's one entry: del removes them all, and
     * wakes the waiters as every removal does. */
    EPHPM_RETURN_ANSWER(ops->del(ZSTR_VAL(name), ZSTR_LEN(name)), EPHPM_KV_MISS);
}
/* }}} */

/* {{{ ephpm_kv_unlock(string $name, string $token): bool */
ZEND_FUNCTION(ephpm_kv_unlock)
{
    zend_string *name, *token;

    ZEND_PARSE_PARAMETERS_START(2, 2)
        Z_PARAM_STR(name)
        Z_PARAM_STR(token)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(name, 1) || !ephpm_check_value(token, 2)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    /* lock_release frees a read hold too; del_if_eq, on an older provider,
     * the exclusive locks it granted. */
    int rc = EPHPM_KV_OPS_HAS(ops, lock_release)
        ? ops->lock_release(ZSTR_VAL(name), ZSTR_LEN(name), ZSTR_VAL(token), ZSTR_LEN(token))
        : ops->del_if_eq(ZSTR_VAL(name), ZSTR_LEN(name), ZSTR_VAL(token), ZSTR_LEN(token));
    EPHPM_RETURN_ANSWER(rc, EPHPM_KV_MISS);
}
/* }}} */
