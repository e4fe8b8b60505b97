/*
 * What the PHP functions and the session handler share on top of the
 * table: reading a value into a zend_string (ephpm_kv_fetch, with the
 * request's get buffer) and the store's figures as an array.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"

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

void ephpm_stats_to_array(const ephpm_kv_stats *st, zval *arr)
{
    array_init(arr);
    add_assoc_string(arr, "instance_id", st->instance_id);
    add_assoc_string(arr, "backend", st->backend);
    add_assoc_string(arr, "library", ephpm_provider_origin());
    add_assoc_long(arr, "pid", (zend_long)ephpm_provider_pid());
    add_assoc_string(arr, "eviction", st->eviction);
    add_assoc_string(arr, "compression", st->compression);
    add_assoc_long(arr, "keys", (zend_long)st->keys);
    add_assoc_long(arr, "bytes_used", (zend_long)st->bytes_used);
    add_assoc_long(arr, "memory_limit", (zend_long)st->memory_limit);
    add_assoc_long(arr, "hits", (zend_long)st->hits);
    add_assoc_long(arr, "misses", (zend_long)st->misses);
    add_assoc_long(arr, "sets", (zend_long)st->sets);
    add_assoc_long(arr, "evictions", (zend_long)st->evictions);
    add_assoc_long(arr, "expirations", (zend_long)st->expirations);
    add_assoc_long(arr, "set_nx_wins", (zend_long)st->set_nx_wins);
    add_assoc_long(arr, "set_nx_losses", (zend_long)st->set_nx_losses);
    add_assoc_long(arr, "del_if_eq_matches", (zend_long)st->del_if_eq_matches);
    add_assoc_long(arr, "del_if_eq_mismatches", (zend_long)st->del_if_eq_mismatches);
    add_assoc_long(arr, "lock_timeouts", (zend_long)st->lock_timeouts);
    /* Fields a provider older than them leaves as the caller zeroed them. */
    add_assoc_long(arr, "session_bytes", (zend_long)st->session_bytes);
    add_assoc_long(arr, "session_limit", (zend_long)st->session_limit);
    add_assoc_long(arr, "processes", (zend_long)st->processes);
    add_assoc_string(arr, "store", st->store);
    add_assoc_string(arr, "facts", st->facts);
    /* The rates, newest first, and the segment's shards: empty lists from
     * a store without (or a provider older than them). */
    add_assoc_long(arr, "rate_interval_ms", (zend_long)st->rate_interval_ms);
    zval rates, shards;
    array_init_size(&rates, st->rate_count);
    for (uint32_t i = 0; i < st->rate_count && i < EPHPM_KV_STATS_RATES; i++) {
        const ephpm_kv_rate *r = &st->rates[i];
        zval one;
        array_init_size(&one, 7);
        add_assoc_long(&one, "hits", (zend_long)r->hits);
        add_assoc_long(&one, "misses", (zend_long)r->misses);
        add_assoc_long(&one, "sets", (zend_long)r->sets);
        add_assoc_long(&one, "set_nx_wins", (zend_long)r->set_nx_wins);
        add_assoc_long(&one, "set_nx_losses", (zend_long)r->set_nx_losses);
        add_assoc_long(&one, "evictions", (zend_long)r->evictions);
        add_assoc_long(&one, "expirations", (zend_long)r->expirations);
        add_next_index_zval(&rates, &one);
    }
    add_assoc_zval(arr, "rates", &rates);
    array_init_size(&shards, st->shard_count);
    for (uint32_t i = 0; i < st->shard_count && i < EPHPM_KV_STATS_SHARDS; i++) {
        const ephpm_kv_shard *sh = &st->shard[i];
        zval one;
        array_init_size(&one, 5);
        add_assoc_long(&one, "keys", (zend_long)sh->keys);
        add_assoc_long(&one, "bytes_used", (zend_long)sh->bytes_used);
        add_assoc_long(&one, "heap_size", (zend_long)sh->heap_size);
        add_assoc_long(&one, "heap_free", (zend_long)sh->heap_free);
        add_assoc_long(&one, "largest_free", (zend_long)sh->largest_free);
        add_next_index_zval(&shards, &one);
    }
    add_assoc_zval(arr, "shards", &shards);
}
