/*
 * The counters: ephpm_kv_incr, _decr and _incr_by, each one call of the
 * incr_by member (the store reads the entry as an integer and writes the
 * sum in one step).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "zend_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

/* Shared body of the counters: sign is +1 (incr, incr_by) or -1 (decr). */
static void ephpm_incr(INTERNAL_FUNCTION_PARAMETERS, zend_long sign, bool delta_required)
{
    zend_string *key;
    zend_long by = 1, ttl = 0;
    int64_t ttl_ms, result = 0;

    /* Where Z_PARAM_OPTIONAL stands must match the minimum count: the
     * parser's bookkeeping goes wrong otherwise (UBSan caught it). */
    if (delta_required) {
        ZEND_PARSE_PARAMETERS_START(2, 3)
            Z_PARAM_STR(key)
            Z_PARAM_LONG(by)
            Z_PARAM_OPTIONAL
            Z_PARAM_LONG(ttl)
        ZEND_PARSE_PARAMETERS_END();
    } else {
        ZEND_PARSE_PARAMETERS_START(1, 3)
            Z_PARAM_STR(key)
            Z_PARAM_OPTIONAL
            Z_PARAM_LONG(by)
            Z_PARAM_LONG(ttl)
        ZEND_PARSE_PARAMETERS_END();
    }

    if (!ephpm_check_key(key, 1) || !ephpm_ttl_ms(ttl, 0, 3, &ttl_ms)) {
        RETURN_THROWS();
    }
    if (sign < 0 && by == ZEND_LONG_MIN) {
        zend_argument_value_error(2, "must be greater than " ZEND_LONG_FMT, ZEND_LONG_MIN);
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(incr_by);
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ops->incr_by(ZSTR_VAL(key), ZSTR_LEN(key), (int64_t)(sign * by), ttl_ms, &result);
    if (rc == EPHPM_KV_OK) {
        RETURN_LONG((zend_long)result);
    }
    ephpm_throw_status(rc);
    RETURN_THROWS();
}

/* {{{ ephpm_kv_incr(string $key, int $by = 1, int $ttl = 0): int */
ZEND_FUNCTION(ephpm_kv_incr)
{
    ephpm_incr(INTERNAL_FUNCTION_PARAM_PASSTHRU, 1, false);
}
/* }}} */

/* {{{ ephpm_kv_decr(string $key, int $by = 1, int $ttl = 0): int */
ZEND_FUNCTION(ephpm_kv_decr)
{
    ephpm_incr(INTERNAL_FUNCTION_PARAM_PASSTHRU, -1, false);
}
/* }}} */

/* {{{ ephpm_kv_incr_by(string $key, int $delta, int $ttl = 0): int */
ZEND_FUNCTION(ephpm_kv_incr_by)
{
    ephpm_incr(INTERNAL_FUNCTION_PARAM_PASSTHRU, 1, true);
}
/* }}} */
