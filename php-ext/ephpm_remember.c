/*
 * ephpm_kv_remember: a single-flight fill. On a miss exactly one caller,
 * across every process sharing the backend, runs $compute, holding a lock
 * on the key (EPHPM_REMEMBER_LOCK_PREFIX + key, with a fresh token per
 * acquisition: ephpm_new_token); the others wait in set_nx_wait, which the
 * release wakes. The loop is here, in C, because $compute is PHP: it is a
 * chain of existing members, each one crossing (get; set_nx_wait; get;
 * set; del_if_eq), with no decision of its own beyond their answers.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "zend_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

/* The namespace of the fill locks: no session key, lock or ordinary key
 * made by the adapters starts with it. */
#define EPHPM_REMEMBER_LOCK_PREFIX "remember_lock:"
#define EPHPM_REMEMBER_LOCK_PREFIX_LEN (sizeof EPHPM_REMEMBER_LOCK_PREFIX - 1)

/* A fill lock lives for $wait, at least this long: the time the other
 * callers are willing to wait for this one's value. */
#define EPHPM_REMEMBER_MIN_LOCK_MS 1000

/* The keys this thread's enclosing ephpm_kv_remember() calls are computing:
 * a list of nodes on their C stacks. A nested call of one of them would
 * wait for itself; it is refused instead. A node leaves by search, not only
 * from the top: Fibers may finish their calls out of order. */
struct ephpm_filling {
    const zend_string *key;
    struct ephpm_filling *prev;
};
ZEND_TLS struct ephpm_filling *ephpm_filling_top;

static bool ephpm_is_filling(const zend_string *key)
{
    for (const struct ephpm_filling *f = ephpm_filling_top; f != NULL; f = f->prev) {
        if (zend_string_equals(f->key, key)) {
            return true;
        }
    }
    return false;
}

static void ephpm_filling_leave(struct ephpm_filling *node)
{
    for (struct ephpm_filling **at = &ephpm_filling_top; *at != NULL; at = &(*at)->prev) {
        if (*at == node) {
            *at = node->prev;
            return;
        }
    }
}

static void ephpm_release(const ephpm_kv_ops *ops, const zend_string *lock, const char *token)
{
    /* Its failure leaves the lock to its TTL: the value (if stored) is
     * found by whoever takes the lock next. */
    ops->del_if_eq(ZSTR_VAL(lock), ZSTR_LEN(lock), token, EPHPM_TOKEN_LEN);
}

/* {{{ ephpm_kv_remember(string $key, int $ttl, callable $compute, float $wait = 10.0): string */
ZEND_FUNCTION(ephpm_kv_remember)
{
    zend_string *key, *value;
    zend_long ttl;
    zend_fcall_info fci;
    zend_fcall_info_cache fcc;
    double wait = 10.0;
    int64_t ttl_ms;

    ZEND_PARSE_PARAMETERS_START(3, 4)
        Z_PARAM_STR(key)
        Z_PARAM_LONG(ttl)
        Z_PARAM_FUNC(fci, fcc)
        Z_PARAM_OPTIONAL
        Z_PARAM_DOUBLE(wait)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1) || !ephpm_ttl_ms(ttl, 0, 2, &ttl_ms)) {
        RETURN_THROWS();
    }
    if (UNEXPECTED(ZSTR_LEN(key) > EPHPM_KV_MAX_KEY_LEN - EPHPM_REMEMBER_LOCK_PREFIX_LEN)) {
        zend_argument_value_error(1, "must not be longer than %zu bytes (its lock key is longer by %zu)",
                                  EPHPM_KV_MAX_KEY_LEN - EPHPM_REMEMBER_LOCK_PREFIX_LEN,
                                  EPHPM_REMEMBER_LOCK_PREFIX_LEN);
        RETURN_THROWS();
    }
    if (!(wait >= 0.0 && wait <= (double)EPHPM_KV_MAX_TTL_SECONDS)) {
        zend_argument_value_error(4, "must be between 0 and %" PRId64 " seconds",
                                  (int64_t)EPHPM_KV_MAX_TTL_SECONDS);
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(set_nx_wait);
    if (ops == NULL) {
        RETURN_THROWS();
    }

    int rc = ephpm_kv_fetch(ops, ZSTR_VAL(key), ZSTR_LEN(key), &value);
    if (EXPECTED(rc == EPHPM_KV_OK)) {
        RETURN_STR(value);
    }
    if (rc != EPHPM_KV_MISS) {
        ephpm_throw_status(rc);
        RETURN_THROWS();
    }
    if (UNEXPECTED(ephpm_is_filling(key))) {
        zend_argument_value_error(1, "is being computed by an enclosing ephpm_kv_remember() call, "
                                     "which this one would wait for");
        RETURN_THROWS();
    }

    char token[EPHPM_TOKEN_LEN + 1];
    if (!ephpm_new_token(token, true)) {
        RETURN_THROWS();
    }
    int64_t wait_ms = (int64_t)(wait * 1000.0);
    int64_t lock_ttl_ms = wait_ms > EPHPM_REMEMBER_MIN_LOCK_MS ? wait_ms : EPHPM_REMEMBER_MIN_LOCK_MS;
    zend_string *lock = zend_string_concat2(EPHPM_REMEMBER_LOCK_PREFIX, EPHPM_REMEMBER_LOCK_PREFIX_LEN,
                                            ZSTR_VAL(key), ZSTR_LEN(key));
    /* The fill's lock is bound to this process where the provider can
     * bind it: a filler killed mid-computation holds up its waiters for a
     * lease at most (on a segment: not at all), not the lock's TTL. */
    int64_t no_fence;
    rc = EPHPM_KV_OPS_HAS(ops, step)
        ? ephpm_acquire_bound(ops, ZSTR_VAL(lock), ZSTR_LEN(lock), token, EPHPM_TOKEN_LEN, lock_ttl_ms, wait_ms,
                              false, &no_fence)
        : ops->set_nx_wait(ZSTR_VAL(lock), ZSTR_LEN(lock), token, EPHPM_TOKEN_LEN, lock_ttl_ms, wait_ms);
    if (rc == EPHPM_KV_EXISTS) {
        zend_throw_exception_ex(ephpm_kv_exception_ce, 0,
            "%s(): another caller held the fill of this key for the whole wait of %.3f s", 
            get_active_function_name(), wait);
        goto done;
    }
    if (rc != EPHPM_KV_OK) {
        ephpm_throw_status(rc);
        if (rc == EPHPM_KV_E_UNAVAILABLE) {
            ephpm_release(ops, lock, token); /* the grant may have landed */
        }
        goto done;
    }

    /* Held. A caller that waited finds the value the holder before it
     * stored, and passes the lock on by releasing it. */
    rc = ephpm_kv_fetch(ops, ZSTR_VAL(key), ZSTR_LEN(key), &value);
    if (rc == EPHPM_KV_OK) {
        ephpm_release(ops, lock, token);
        zend_string_release(lock);
        RETURN_STR(value);
    }
    if (rc != EPHPM_KV_MISS) {
        ephpm_throw_status(rc);
        ephpm_release(ops, lock, token);
        goto done;
    }

    zval computed;
    ZVAL_UNDEF(&computed);
    fci.retval = &computed;
    fci.param_count = 0;
    fci.named_params = NULL;
    volatile bool bailed_out = false; /* set after a longjmp */
    struct ephpm_filling filling = {.key = key, .prev = ephpm_filling_top};
    ephpm_filling_top = &filling;
    /* A fatal error (max_execution_time among them) unwinds by longjmp:
     * release on the way, so that the next caller computes now rather than
     * after the lock's TTL. */
    zend_try {
        zend_call_function(&fci, &fcc);
    } zend_catch {
        bailed_out = true;
    } zend_end_try();
    ephpm_filling_leave(&filling);
    if (UNEXPECTED(bailed_out)) {
        ephpm_release(ops, lock, token);
        zend_string_release(lock);
        zend_bailout();
    }
    if (EG(exception) != NULL) {
        /* $compute's exception goes to its caller; the next waiter computes. */
        zval_ptr_dtor(&computed);
        ephpm_release(ops, lock, token);
        goto done;
    }
    if (UNEXPECTED(Z_TYPE(computed) != IS_STRING)) {
        zend_type_error("%s(): Return value of argument #3 ($compute) must be of type string, %s returned",
                        get_active_function_name(), zend_zval_type_name(&computed));
        zval_ptr_dtor(&computed);
        ephpm_release(ops, lock, token);
        goto done;
    }
    if (!ephpm_check_value(Z_STR(computed), 3)) {
        zval_ptr_dtor(&computed);
        ephpm_release(ops, lock, token);
        goto done;
    }
    rc = ops->set(ZSTR_VAL(key), ZSTR_LEN(key), Z_STRVAL(computed), Z_STRLEN(computed), ttl_ms);
    if (rc != EPHPM_KV_OK) {
        ephpm_throw_status(rc);
        zval_ptr_dtor(&computed);
        ephpm_release(ops, lock, token);
        goto done;
    }
    /* The release wakes the next waiter, which finds the value. */
    ephpm_release(ops, lock, token);
    zend_string_release(lock);
    RETURN_STR(Z_STR(computed));

done:
    zend_string_release(lock);
    RETURN_THROWS();
}
/* }}} */
