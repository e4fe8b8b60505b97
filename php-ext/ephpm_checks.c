/*
 * What every ephpm_kv_* function does before its one call through the
 * provider's table: check its arguments (a ValueError or TypeError, the
 * store unchanged) and find the member in the table (an Ephpm\KvException
 * for a library without it). Each function then makes exactly one call
 * through the table (two for a value larger than the get buffer,
 * ephpm_fetch.c) and turns the status into a return value or an
 * Ephpm\KvException.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "zend_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

bool ephpm_check_key(const zend_string *key, uint32_t arg_num)
{
    if (UNEXPECTED(ZSTR_LEN(key) == 0)) {
        zend_argument_value_error(arg_num, "must not be empty");
        return false;
    }
    if (UNEXPECTED(ZSTR_LEN(key) > EPHPM_KV_MAX_KEY_LEN)) {
        zend_argument_value_error(arg_num, "must not be longer than %u bytes", EPHPM_KV_MAX_KEY_LEN);
        return false;
    }
    return true;
}

bool ephpm_check_value(const zend_string *value, uint32_t arg_num)
{
    if (UNEXPECTED(ZSTR_LEN(value) > EPHPM_KV_MAX_VALUE_LEN)) {
        zend_argument_value_error(arg_num, "must not be longer than %u bytes", EPHPM_KV_MAX_VALUE_LEN);
        return false;
    }
    return true;
}

/* A TTL in whole seconds, min..EPHPM_KV_MAX_TTL_SECONDS, to milliseconds.
 * *ttl_ms is set on both paths (0 when refused): at -O3 gcc looks into
 * this function from its callers, and takes a write on one path only for
 * a maybe-uninitialised ttl_ms in each of them. */
bool ephpm_ttl_ms(zend_long ttl, zend_long min, uint32_t arg_num, int64_t *ttl_ms)
{
    if (UNEXPECTED(ttl < min || (int64_t)ttl > EPHPM_KV_MAX_TTL_SECONDS)) {
        *ttl_ms = 0;
        zend_argument_value_error(arg_num, "must be between " ZEND_LONG_FMT " and %" PRId64 " seconds",
                                  min, (int64_t)EPHPM_KV_MAX_TTL_SECONDS);
        return false;
    }
    *ttl_ms = (int64_t)ttl * 1000;
    return true;
}

const ephpm_kv_ops *ephpm_ops_with(size_t offset, size_t size)
{
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops != NULL && UNEXPECTED(ops->struct_size < offset + size
                                  || *(void *const *)((const char *)ops + offset) == NULL)) {
        ephpm_throw_status(EPHPM_KV_E_UNSUPPORTED);
        return NULL;
    }
    return ops;
}
