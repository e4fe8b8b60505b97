/*
 * Reading an answer whose size is known only once it is read: a value into
 * a zend_string (ephpm_kv_fetch, with the request's get buffer, which
 * ephpm_kv_get, ephpm_kv_remember and the session handler share), and a
 * batch or a page into a buffer that grows, a bounded number of times
 * (ephpm_call_growing: ephpm_kv_get_many, ephpm_kv_scan).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "zend_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

/* A get crosses into Go once, into a buffer of two pages: a zend_string of
 * EPHPM_GET_BUF bytes, the largest that fits them with its header. The
 * value is copied once, by Go, into the buffer. A value too big for a small
 * allocation (the size at which emalloc would take whole pages anyway) is
 * handed out as the buffer itself, truncated in place, so it is not copied
 * again (docs/measurements.md, "PHP: the get buffer"); a smaller
 * one is copied into a string of its size and the buffer kept. A value
 * over EPHPM_GET_BUF takes a second crossing into a string of exactly the
 * size the first one reported. */
#define EPHPM_GET_BUF (2 * 4096 - _ZSTR_HEADER_SIZE - 1)
#define EPHPM_GET_HANDOUT_MIN (3072 - _ZSTR_HEADER_SIZE)

char *ephpm_kv_fetch_buffer(size_t *cap)
{
    if (EPHPM_G(get_buf) == NULL) {
        EPHPM_G(get_buf) = zend_string_alloc(EPHPM_GET_BUF, 0);
    }
    *cap = EPHPM_GET_BUF;
    return ZSTR_VAL(EPHPM_G(get_buf));
}

int ephpm_kv_fetch(const ephpm_kv_ops *ops, const char *key, size_t key_len, zend_string **value)
{
    size_t cap, len = 0;
    char *buf = ephpm_kv_fetch_buffer(&cap);
    int rc = ops->get(key, key_len, buf, cap, &len);
    return ephpm_kv_fetch_finish(ops, key, key_len, rc, len, value);
}

int ephpm_kv_fetch_finish(const ephpm_kv_ops *ops, const char *key, size_t key_len, int rc, size_t len,
                          zend_string **value)
{
    zend_string *buf = EPHPM_G(get_buf);
    if (EXPECTED(rc == EPHPM_KV_OK)) {
        if (len >= EPHPM_GET_HANDOUT_MIN) {
            EPHPM_G(get_buf) = NULL;
            *value = zend_string_truncate(buf, len, 0);
            ZSTR_VAL(*value)[len] = '\0';
        } else {
            *value = len <= 1 ? (len ? ZSTR_CHAR((zend_uchar)ZSTR_VAL(buf)[0]) : ZSTR_EMPTY_ALLOC())
                              : zend_string_init(ZSTR_VAL(buf), len, 0);
        }
        return rc;
    }
    /* The value may grow between calls: retry into its newest size. */
    while (rc == EPHPM_KV_TOO_SMALL) {
        zend_string *str = zend_string_alloc(len, 0);
        rc = ops->get(key, key_len, ZSTR_VAL(str), ZSTR_LEN(str), &len);
        if (rc == EPHPM_KV_OK) {
            ZSTR_LEN(str) = len;
            ZSTR_VAL(str)[len] = '\0';
            *value = str;
            return rc;
        }
        zend_string_efree(str);
    }
    return rc;
}

void ephpm_kv_fetch_request_end(void)
{
    if (EPHPM_G(get_buf) != NULL) {
        zend_string_efree(EPHPM_G(get_buf));
        EPHPM_G(get_buf) = NULL;
    }
}

/* The calls ephpm_call_growing makes at most: the first, and four more. */
#define EPHPM_GROWING_TRIES 5

bool ephpm_call_growing(ephpm_answer_fn call, void *ctx, const char *what, char *buf, size_t buf_cap,
                        char **out, size_t *cap, size_t *len, int *rc)
{
    *out = buf;
    *cap = buf_cap;
    *len = 0;
    *rc = call(ctx, *out, *cap, len);
    for (int tries = 0; *rc == EPHPM_KV_TOO_SMALL; tries++) {
        if (*out != buf) {
            efree(*out);
            *out = buf;
        }
        if (*len <= *cap || tries == EPHPM_GROWING_TRIES - 1 || *len > SIZE_MAX / 2) {
            zend_throw_exception_ex(ephpm_kv_exception_ce, -EPHPM_KV_E_UNAVAILABLE,
                                    "%s(): the store's %s did not fit %zu bytes after %d tries "
                                    "(it asked for %zu); the outcome is unknown",
                                    get_active_function_name(), what, *cap, tries + 1, *len);
            return false;
        }
        *cap = *len + *len / 2;
        *out = emalloc(*cap);
        *rc = call(ctx, *out, *cap, len);
    }
    return true;
}
