/*
 * The fencing tokens: ephpm_kv_fence (a name's latest grant) and
 * ephpm_kv_set_fenced (a write the store makes only while the fence given
 * is the lock's latest grant). The grants are ephpm_kv_lock's
 * (ephpm_locks.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "zend_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

/* {{{ ephpm_kv_fence(string $name): int */
ZEND_FUNCTION(ephpm_kv_fence)
{
    zend_string *name;

    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(name)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(name, 1)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(fence);
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int64_t fence = 0;
    int rc = ops->fence(ZSTR_VAL(name), ZSTR_LEN(name), &fence);
    if (rc == EPHPM_KV_OK) {
        RETURN_LONG((zend_long)fence);
    }
    ephpm_throw_status(rc);
    RETURN_THROWS();
}
/* }}} */

/* {{{ ephpm_kv_set_fenced(string $key, string $value, string $lock, int $fence, int $ttl = 0): bool */
ZEND_FUNCTION(ephpm_kv_set_fenced)
{
    zend_string *key, *value, *lock;
    zend_long fence, ttl = 0;
    int64_t ttl_ms;

    ZEND_PARSE_PARAMETERS_START(4, 5)
        Z_PARAM_STR(key)
        Z_PARAM_STR(value)
        Z_PARAM_STR(lock)
        Z_PARAM_LONG(fence)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(ttl)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1) || !ephpm_check_value(value, 2) || !ephpm_check_key(lock, 3)) {
        RETURN_THROWS();
    }
    if (fence <= 0) {
        zend_argument_value_error(4, "must be greater than 0 (a fence ephpm_kv_lock() returned)");
        RETURN_THROWS();
    }
    if (!ephpm_ttl_ms(ttl, 0, 5, &ttl_ms)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(set_fenced);
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ops->set_fenced(ZSTR_VAL(key), ZSTR_LEN(key), ZSTR_VAL(value), ZSTR_LEN(value), ttl_ms,
                             ZSTR_VAL(lock), ZSTR_LEN(lock), (int64_t)fence);
    EPHPM_RETURN_ANSWER(rc, EPHPM_KV_MISS);
}
/* }}} */
