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
 * the size the first one reported and half again (ephpm_call_growing). */
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

/* One call of the scan member, for ephpm_call_growing: its arguments, and
 * the cursor it answers. */
typedef struct {
    const ephpm_kv_ops *ops;
    const char *prefix;
    size_t prefix_len;
    uint64_t cursor;
    size_t count;
    int32_t flags;
    uint64_t next;
} ephpm_scan_call;

static int ephpm_scan_into(void *ctx, char *buf, size_t cap, size_t *len)
{
    ephpm_scan_call *c = ctx;
    return c->ops->scan(c->prefix, c->prefix_len, c->cursor, c->count, c->flags, buf, cap, len, &c->next);
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
    char *out;
    size_t len, cap;
    int rc;
    ephpm_scan_call call = {ops, p, p_len, cursor, (size_t)count, flags, 0};
    /* The page may grow between calls: a bounded number of retries. */
    if (!ephpm_call_growing(ephpm_scan_into, &call, "page", stack_buf, sizeof stack_buf, &out, &cap, &len, &rc)) {
        RETURN_THROWS();
    }
    uint64_t next = call.next;
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
