/*
 * ephpm_kv_scan: one page of the walk of the store's entries (the scan
 * member), its records unpacked into arrays. The C checks the arguments
 * (TypeError, ValueError: nothing sent); the store walks.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "zend_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

/* The cursor is a 64-bit number handed to PHP as an int. */
#if SIZEOF_ZEND_LONG < 8
# error "ephpm_kv_scan() needs a 64-bit zend_long"
#endif

/* The first scan answer lands in this much stack: 100 records of keys of
 * 30 bytes take 7800. A larger page takes a second call into a buffer of
 * exactly the size the first one reported. */
#define EPHPM_SCAN_STACK_BUF 16384

static const char *ephpm_scan_kind(uint32_t kind)
{
    switch (kind) {
    case EPHPM_KV_SCAN_VALUE:
        return "value";
    case EPHPM_KV_SCAN_LOCK:
        return "lock";
    case EPHPM_KV_SCAN_LOCK_SHARED:
        return "lock_shared";
    case EPHPM_KV_SCAN_SESSION:
        return "session";
    case EPHPM_KV_SCAN_SKIPPED:
        return "skipped";
    }
    return "unknown";
}

/* {{{ ephpm_kv_scan(string $prefix = '', ?int &$cursor = null, int $count = 100, bool $locks_only = false): array */
ZEND_FUNCTION(ephpm_kv_scan)
{
    zend_string *prefix = NULL;
    zval *cursor_ref = NULL;
    zend_long count = 100;
    bool locks_only = false;

    ZEND_PARSE_PARAMETERS_START(0, 4)
        Z_PARAM_OPTIONAL
        Z_PARAM_STR(prefix)
        Z_PARAM_ZVAL(cursor_ref)
        Z_PARAM_LONG(count)
        Z_PARAM_BOOL(locks_only)
    ZEND_PARSE_PARAMETERS_END();

    if (prefix != NULL && ZSTR_LEN(prefix) > EPHPM_KV_MAX_KEY_LEN) {
        zend_argument_value_error(1, "must not be longer than %u bytes", EPHPM_KV_MAX_KEY_LEN);
        RETURN_THROWS();
    }
    uint64_t cursor = 0;
    if (cursor_ref != NULL) {
        zval *c = cursor_ref;
        ZVAL_DEREF(c);
        if (Z_TYPE_P(c) == IS_LONG) {
            cursor = (uint64_t)Z_LVAL_P(c); /* opaque: all 64 bits */
        } else if (Z_TYPE_P(c) != IS_NULL) {
            zend_argument_type_error(2, "must be of type ?int, %s given", zend_zval_type_name(c));
            RETURN_THROWS();
        }
    }
    if (count < 1 || (zend_ulong)count > EPHPM_KV_SCAN_MAX_COUNT) {
        zend_argument_value_error(3, "must be between 1 and %u", EPHPM_KV_SCAN_MAX_COUNT);
        RETURN_THROWS();
    }

    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(scan);
    if (ops == NULL) {
        RETURN_THROWS();
    }
    const char *p = prefix ? ZSTR_VAL(prefix) : NULL;
    size_t p_len = prefix ? ZSTR_LEN(prefix) : 0;
    int32_t flags = locks_only ? EPHPM_KV_SCAN_LOCKS : 0;

    char stack_buf[EPHPM_SCAN_STACK_BUF];
    char *out = stack_buf;
    size_t len = 0;
    uint64_t next = 0;
    size_t cap = sizeof stack_buf;
    int rc = ops->scan(p, p_len, cursor, (size_t)count, flags, out, cap, &len, &next);
    /* The page may grow between calls: retry into its newest size and half
     * again, a few times. A TOO_SMALL that asks for no more than was given
     * is a garbled answer, as is one that keeps growing. */
    for (int tries = 0; rc == EPHPM_KV_TOO_SMALL; tries++) {
        if (out != stack_buf) {
            efree(out);
            out = stack_buf;
        }
        if (len <= cap || tries == 4 || len > SIZE_MAX / 2) {
            zend_throw_exception_ex(ephpm_kv_exception_ce, -EPHPM_KV_E_UNAVAILABLE,
                                    "ephpm_kv_scan(): the store's page did not fit %zu bytes after %d tries "
                                    "(it asked for %zu); the outcome is unknown", cap, tries + 1, len);
            RETURN_THROWS();
        }
        cap = len + len / 2;
        out = emalloc(cap);
        rc = ops->scan(p, p_len, cursor, (size_t)count, flags, out, cap, &len, &next);
    }
    if (rc != EPHPM_KV_OK) {
        if (out != stack_buf) {
            efree(out);
        }
        if (rc == EPHPM_KV_E_INVALID) {
            /* The arguments the C checked are within limits: the store
             * refused the cursor, as no walk of it gave. */
            char text[768];
            zend_argument_value_error(2, "must be a cursor an earlier call returned (%s)",
                                      ephpm_failure_text(rc, text, sizeof text));
        } else {
            ephpm_throw_status(rc);
        }
        RETURN_THROWS();
    }

    /* The records are the provider's: each is checked to lie within the
     * answer before it is read, and a garbled one fails the call whole. */
    if (len > cap) {
        goto garbled;
    }
    const char *end = out + len;
    array_init(return_value);
    for (const char *at = out; at < end;) {
        uint32_t key_len, kind;
        if ((size_t)(end - at) < EPHPM_KV_SCAN_RECORD_HEAD) {
            goto garbled;
        }
        int64_t size, ttl_ms, holders, waiters, pid;
        memcpy(&key_len, at, 4);
        memcpy(&kind, at + 4, 4);
        memcpy(&size, at + 8, 8);
        memcpy(&ttl_ms, at + 16, 8);
        memcpy(&holders, at + 24, 8);
        memcpy(&waiters, at + 32, 8);
        memcpy(&pid, at + 40, 8);
        at += EPHPM_KV_SCAN_RECORD_HEAD;
        if ((size_t)(end - at) < key_len) {
            goto garbled;
        }
        zval rec;
        array_init_size(&rec, 7);
        add_assoc_stringl(&rec, "key", at, key_len);
        add_assoc_string(&rec, "kind", ephpm_scan_kind(kind));
        add_assoc_long(&rec, "size", (zend_long)size);
        add_assoc_long(&rec, "pttl", (zend_long)ttl_ms);
        add_assoc_long(&rec, "holders", (zend_long)holders);
        if (waiters < 0) {
            add_assoc_null(&rec, "waiters");
        } else {
            add_assoc_long(&rec, "waiters", (zend_long)waiters);
        }
        if (pid == 0) {
            add_assoc_null(&rec, "holder_pid");
        } else {
            add_assoc_long(&rec, "holder_pid", (zend_long)pid);
        }
        add_next_index_zval(return_value, &rec);
        at += key_len;
    }
    if (out != stack_buf) {
        efree(out);
    }
    if (cursor_ref != NULL) {
        ZEND_TRY_ASSIGN_REF_LONG(cursor_ref, (zend_long)next);
    }
    return;

garbled:
    if (out != stack_buf) {
        efree(out);
    }
    zval_ptr_dtor(return_value);
    ZVAL_UNDEF(return_value);
    zend_throw_exception_ex(ephpm_kv_exception_ce, -EPHPM_KV_E_UNAVAILABLE,
                            "ephpm_kv_scan(): the store's answer is garbled (%zu bytes for a buffer of %zu); "
                            "the outcome is unknown", len, cap);
}
/* }}} */
