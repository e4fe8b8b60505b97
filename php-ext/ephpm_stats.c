/*
 * The store's figures as a PHP array: ephpm_kv_stats(), and
 * ephpm_stats_to_array, which phpinfo() (ephpm.c) shares.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "zend_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

/* {{{ ephpm_kv_stats(): array */
ZEND_FUNCTION(ephpm_kv_stats)
{
    ZEND_PARSE_PARAMETERS_NONE();

    const ephpm_kv_ops *ops = EPHPM_OPS_WITH(stats);
    if (ops == NULL) {
        RETURN_THROWS();
    }
    ephpm_kv_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    int rc = ops->stats(&st);
    if (rc != EPHPM_KV_OK) {
        ephpm_throw_status(rc);
        RETURN_THROWS();
    }
    ephpm_stats_to_array(&st, return_value);
}
/* }}} */

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
