/*
 * ephpm_kv_get_many and ephpm_kv_set_many: a batch of keys in one call
 * through the table (get_many, set_many), its keys and values packed as the
 * header's batch records. The C checks every key and value (TypeError,
 * ValueError: nothing sent), packs, unpacks; the store decides.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "zend_exceptions.h"
#include "zend_smart_str.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

/* The first get_many answer lands in this much stack: 100 values of 64
 * bytes take 6800. A larger answer takes a second call into a buffer of
 * the size the first one reported and half again (ephpm_call_growing). */
#define EPHPM_BATCH_STACK_BUF 8192

static void ephpm_put_len(smart_str *buf, size_t len)
{
    uint32_t n = (uint32_t)len;
    smart_str_appendl(buf, (const char *)&n, sizeof n);
}

static void ephpm_put_record(smart_str *buf, const char *p, size_t len)
{
    ephpm_put_len(buf, len);
    smart_str_appendl(buf, p, len);
}

/* Appends the key record of an array key or element: a string, or an
 * integer as its decimal text (as PHP's own array keys read "1" and 1
 * alike). False, with ValueError thrown, for a key out of limits. */
static bool ephpm_put_key(smart_str *buf, const zend_string *str, zend_long num, uint32_t arg_num)
{
    if (str == NULL) {
        char tmp[MAX_LENGTH_OF_LONG + 1];
        char *end = tmp + sizeof tmp - 1;
        char *start = zend_print_long_to_buf(end, num);
        ephpm_put_record(buf, start, (size_t)(end - start));
        return true;
    }
    if (UNEXPECTED(ZSTR_LEN(str) == 0)) {
        zend_argument_value_error(arg_num, "must not contain an empty key");
        return false;
    }
    if (UNEXPECTED(ZSTR_LEN(str) > EPHPM_KV_MAX_KEY_LEN)) {
        zend_argument_value_error(arg_num, "must not contain a key longer than %u bytes", EPHPM_KV_MAX_KEY_LEN);
        return false;
    }
    ephpm_put_record(buf, ZSTR_VAL(str), ZSTR_LEN(str));
    return true;
}

/* One call of the get_many member, for ephpm_call_growing. */
typedef struct {
    const ephpm_kv_ops *ops;
    const char *req;
    size_t req_len;
    uint32_t count;
} ephpm_get_many_call;

static int ephpm_get_many_into(void *ctx, char *buf, size_t cap, size_t *len)
{
    const ephpm_get_many_call *c = ctx;
    return c->ops->get_many(c->req, c->req_len, c->count, buf, cap, len);
}

/* {{{ ephpm_kv_get_many(array $keys): array */
ZEND_FUNCTION(ephpm_kv_get_many)
{
    HashTable *keys;
    zval *entry;

    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_ARRAY_HT(keys)
    ZEND_PARSE_PARAMETERS_END();

    uint32_t count = zend_hash_num_elements(keys);
    smart_str req = {0};
    smart_str_alloc(&req, (size_t)count * 24, 0);
    ZEND_HASH_FOREACH_VAL(keys, entry) {
        ZVAL_DEREF(entry);
        bool ok;
        if (Z_TYPE_P(entry) == IS_STRING) {
            ok = ephpm_put_key(&req, Z_STR_P(entry), 0, 1);
        } else if (Z_TYPE_P(entry) == IS_LONG) {
            ok = ephpm_put_key(&req, NULL, Z_LVAL_P(entry), 1);
        } else {
            zend_argument_type_error(1, "must contain only strings and integers, %s given",
                                     zend_zval_type_name(entry));
            ok = false;
        }
        if (!ok) {
            smart_str_free(&req);
            RETURN_THROWS();
        }
    } ZEND_HASH_FOREACH_END();

    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(get_many);
    if (ops == NULL) {
        smart_str_free(&req);
        RETURN_THROWS();
    }
    const char *req_buf = req.s ? ZSTR_VAL(req.s) : NULL;
    size_t req_len = req.s ? ZSTR_LEN(req.s) : 0;

    char stack_buf[EPHPM_BATCH_STACK_BUF];
    char *out;
    size_t out_cap, out_len;
    int rc;
    ephpm_get_many_call call = {ops, req_buf, req_len, count};
    /* The values may grow between calls: a bounded number of retries. */
    bool answered = ephpm_call_growing(ephpm_get_many_into, &call, "answer", stack_buf, sizeof stack_buf, &out,
                                       &out_cap, &out_len, &rc);
    smart_str_free(&req);
    if (!answered) {
        RETURN_THROWS();
    }
    if (rc != EPHPM_KV_OK) {
        if (out != stack_buf) {
            efree(out);
        }
        ephpm_throw_status(rc);
        RETURN_THROWS();
    }

    /* One value record per key, in the order of $keys. */
    array_init_size(return_value, count);
    const char *p = out;
    ZEND_HASH_FOREACH_VAL(keys, entry) {
        uint32_t len;
        memcpy(&len, p, sizeof len);
        p += sizeof len;
        if (len == EPHPM_KV_BATCH_MISSING) {
            continue;
        }
        zval value;
        ZVAL_STR(&value, len == 0 ? ZSTR_EMPTY_ALLOC() : zend_string_init(p, len, 0));
        p += len;
        ZVAL_DEREF(entry);
        if (Z_TYPE_P(entry) == IS_LONG) {
            zend_hash_index_update(Z_ARRVAL_P(return_value), Z_LVAL_P(entry), &value);
        } else {
            zend_symtable_update(Z_ARRVAL_P(return_value), Z_STR_P(entry), &value);
        }
    } ZEND_HASH_FOREACH_END();
    if (out != stack_buf) {
        efree(out);
    }
}
/* }}} */

/* {{{ ephpm_kv_set_many(array $values, int $ttl = 0): bool */
ZEND_FUNCTION(ephpm_kv_set_many)
{
    HashTable *values;
    zend_long ttl = 0;
    int64_t ttl_ms;
    zend_string *key;
    zend_ulong num;
    zval *entry;

    ZEND_PARSE_PARAMETERS_START(1, 2)
        Z_PARAM_ARRAY_HT(values)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(ttl)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_ttl_ms(ttl, 0, 2, &ttl_ms)) {
        RETURN_THROWS();
    }
    uint32_t count = zend_hash_num_elements(values);
    smart_str req = {0};
    smart_str_alloc(&req, (size_t)count * 96, 0);
    ZEND_HASH_FOREACH_KEY_VAL(values, num, key, entry) {
        ZVAL_DEREF(entry);
        if (UNEXPECTED(Z_TYPE_P(entry) != IS_STRING)) {
            zend_argument_type_error(1, "must contain only string values, %s given", zend_zval_type_name(entry));
            smart_str_free(&req);
            RETURN_THROWS();
        }
        if (!ephpm_put_key(&req, key, (zend_long)num, 1) || !ephpm_check_value(Z_STR_P(entry), 1)) {
            smart_str_free(&req);
            RETURN_THROWS();
        }
        ephpm_put_record(&req, Z_STRVAL_P(entry), Z_STRLEN_P(entry));
    } ZEND_HASH_FOREACH_END();

    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(set_many);
    if (ops == NULL) {
        smart_str_free(&req);
        RETURN_THROWS();
    }
    size_t stored = 0;
    int rc = ops->set_many(req.s ? ZSTR_VAL(req.s) : NULL, req.s ? ZSTR_LEN(req.s) : 0, count, ttl_ms, &stored);
    smart_str_free(&req);
    if (EXPECTED(rc == EPHPM_KV_OK)) {
        RETURN_TRUE;
    }
    if (rc == EPHPM_KV_E_FORKED || rc == EPHPM_KV_E_INVALID) {
        ephpm_throw_status(rc); /* nothing was written */
        RETURN_THROWS();
    }
    /* The message says how far the batch got; the provider's message
     * (last_error) names the key that failed. E_UNAVAILABLE leaves the
     * failed entry's outcome unknown (a lost reply may follow a write), so
     * the message does not say it was not stored, unless the provider
     * refused it before sending anything. */
    char text[768];
    bool unknown;
    ephpm_failure_outcome(rc, text, sizeof text, &unknown);
    zend_throw_exception_ex(ephpm_kv_exception_ce, rc < 0 ? -rc : 0,
        unknown
            ? "%s(): the outcome of entry %zu of %u and of those after it is unknown, the %zu before it were stored: %s"
            : "%s(): entry %zu of %u was not stored, the %zu before it were: %s",
        get_active_function_name(), stored + 1, count, stored, text);
    RETURN_THROWS();
}
/* }}} */
