/*
 * The functions on one entry: ephpm_kv_get, _exists, _ttl, _pttl, _set,
 * _setnx, _del, _expire; and ephpm_kv_flush_all, which removes every
 * entry. The lock functions, del_if_eq and expire_if_eq among them, are
 * in ephpm_locks.c; the counters in ephpm_counters.c; the batches in
 * ephpm_batch.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "zend_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

/* {{{ ephpm_kv_get(string $key): ?string */
ZEND_FUNCTION(ephpm_kv_get)
{
    zend_string *key, *value;

    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(key)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ephpm_kv_fetch(ops, ZSTR_VAL(key), ZSTR_LEN(key), &value);
    if (EXPECTED(rc == EPHPM_KV_OK)) {
        RETURN_STR(value);
    }
    if (rc == EPHPM_KV_MISS) {
        RETURN_NULL();
    }
    ephpm_throw_status(rc);
    RETURN_THROWS();
}
/* }}} */

/* {{{ ephpm_kv_exists(string $key): bool */
ZEND_FUNCTION(ephpm_kv_exists)
{
    zend_string *key;

    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(key)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(exists);
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ops->exists(ZSTR_VAL(key), ZSTR_LEN(key));
    EPHPM_RETURN_ANSWER(rc, EPHPM_KV_MISS);
}
/* }}} */

/* Shared body of ephpm_kv_ttl and ephpm_kv_pttl: -2 missing, -1 no expiry. */
static void ephpm_ttl(INTERNAL_FUNCTION_PARAMETERS, bool in_ms)
{
    zend_string *key;
    int64_t ms = 0;

    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(key)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(pttl);
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ops->pttl(ZSTR_VAL(key), ZSTR_LEN(key), &ms);
    if (rc == EPHPM_KV_MISS) {
        RETURN_LONG(-2);
    }
    if (rc != EPHPM_KV_OK) {
        ephpm_throw_status(rc);
        RETURN_THROWS();
    }
    if (ms < 0) {
        RETURN_LONG(-1);
    }
    /* Seconds round to the nearest, as Redis's TTL does. */
    RETURN_LONG(in_ms ? (zend_long)ms : (zend_long)((ms + 500) / 1000));
}

/* {{{ ephpm_kv_ttl(string $key): int */
ZEND_FUNCTION(ephpm_kv_ttl)
{
    ephpm_ttl(INTERNAL_FUNCTION_PARAM_PASSTHRU, false);
}
/* }}} */

/* {{{ ephpm_kv_pttl(string $key): int */
ZEND_FUNCTION(ephpm_kv_pttl)
{
    ephpm_ttl(INTERNAL_FUNCTION_PARAM_PASSTHRU, true);
}
/* }}} */

/* ---- writes ------------------------------------------------------------- */

/* Shared body of ephpm_kv_set and ephpm_kv_setnx. */
static void ephpm_write(INTERNAL_FUNCTION_PARAMETERS, bool only_if_absent)
{
    zend_string *key, *value;
    zend_long ttl = 0;
    int64_t ttl_ms;

    ZEND_PARSE_PARAMETERS_START(2, 3)
        Z_PARAM_STR(key)
        Z_PARAM_STR(value)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(ttl)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1) || !ephpm_check_value(value, 2) || !ephpm_ttl_ms(ttl, 0, 3, &ttl_ms)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int (*write)(const char *, size_t, const char *, size_t, int64_t) = only_if_absent ? ops->set_nx : ops->set;
    int rc = write(ZSTR_VAL(key), ZSTR_LEN(key), ZSTR_VAL(value), ZSTR_LEN(value), ttl_ms);
    EPHPM_RETURN_ANSWER(rc, only_if_absent ? EPHPM_KV_EXISTS : EPHPM_KV_OK);
}

/* {{{ ephpm_kv_set(string $key, string $value, int $ttl = 0): bool */
ZEND_FUNCTION(ephpm_kv_set)
{
    ephpm_write(INTERNAL_FUNCTION_PARAM_PASSTHRU, false);
}
/* }}} */

/* {{{ ephpm_kv_setnx(string $key, string $value, int $ttl = 0): bool */
ZEND_FUNCTION(ephpm_kv_setnx)
{
    ephpm_write(INTERNAL_FUNCTION_PARAM_PASSTHRU, true);
}
/* }}} */

/* {{{ ephpm_kv_del(string $key): int */
ZEND_FUNCTION(ephpm_kv_del)
{
    zend_string *key;

    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(key)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ops->del(ZSTR_VAL(key), ZSTR_LEN(key));
    if (rc == EPHPM_KV_OK || rc == EPHPM_KV_MISS) {
        RETURN_LONG(rc == EPHPM_KV_OK ? 1 : 0);
    }
    ephpm_throw_status(rc);
    RETURN_THROWS();
}
/* }}} */

/* {{{ ephpm_kv_expire(string $key, int $ttl): bool */
ZEND_FUNCTION(ephpm_kv_expire)
{
    zend_string *key;
    zend_long ttl;
    int64_t ttl_ms;

    ZEND_PARSE_PARAMETERS_START(2, 2)
        Z_PARAM_STR(key)
        Z_PARAM_LONG(ttl)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1) || !ephpm_ttl_ms(ttl, 0, 2, &ttl_ms)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(expire);
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ops->expire(ZSTR_VAL(key), ZSTR_LEN(key), ttl_ms);
    EPHPM_RETURN_ANSWER(rc, EPHPM_KV_MISS);
}
/* }}} */

/* {{{ ephpm_kv_flush_all(): bool */
ZEND_FUNCTION(ephpm_kv_flush_all)
{
    ZEND_PARSE_PARAMETERS_NONE();

    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(flush);
    if (ops == NULL) {
        RETURN_THROWS();
    }
    EPHPM_RETURN_ANSWER(ops->flush(), EPHPM_KV_OK);
}
/* }}} */
