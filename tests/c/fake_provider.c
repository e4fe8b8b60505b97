/*
 * A stand-in provider for the compatibility tests: a table of the first ABI
 * size (the five original members, an empty store), built with
 * FAKE_ABI_VERSION 1 to act as an older library, or another version to act
 * as an incompatible one. It has no Go in it.
 *
 * Built with FAKE_GROWING, it is a table of this header's size whose
 * get_many and scan answer TOO_SMALL for ever, each time asking for more
 * than they were given: a garbled answer the extension must give up on.
 *
 * Built with FAKE_PRESCAN, it is a library from before the status page:
 * its table ends before the scan member (it has stats, of the figures it
 * had then, and the five original members; the members in between are
 * NULL, which EPHPM_KV_OPS_HAS reads as absent) and its stats fill
 * ephpm_kv_stats up to store, with no rates, facts or shards.
 */
#include <stddef.h>
#include <string.h>

#include "ephpm_kv.h"

#ifndef FAKE_ABI_VERSION
#define FAKE_ABI_VERSION 1
#endif

static int fake_get(const char *key, size_t key_len, char *buf, size_t buf_cap, size_t *value_len)
{
    (void)key, (void)key_len, (void)buf, (void)buf_cap;
    *value_len = 0;
    return EPHPM_KV_MISS;
}

static int fake_set(const char *key, size_t key_len, const char *value, size_t value_len, int64_t ttl_ms)
{
    (void)key, (void)key_len, (void)value, (void)value_len, (void)ttl_ms;
    return EPHPM_KV_OK;
}

static int fake_del(const char *key, size_t key_len)
{
    (void)key, (void)key_len;
    return EPHPM_KV_MISS;
}

static int fake_del_if_eq(const char *key, size_t key_len, const char *token, size_t token_len)
{
    (void)key, (void)key_len, (void)token, (void)token_len;
    return EPHPM_KV_MISS;
}

#ifdef FAKE_GROWING
static int fake_get_many(const char *keys, size_t keys_len, size_t count, char *buf, size_t buf_cap,
                         size_t *len)
{
    (void)keys, (void)keys_len, (void)count, (void)buf;
    *len = buf_cap + 1;
    return EPHPM_KV_TOO_SMALL;
}

static int fake_scan(const char *prefix, size_t prefix_len, uint64_t cursor, size_t count, int32_t flags,
                     char *buf, size_t buf_cap, size_t *len, uint64_t *next)
{
    (void)prefix, (void)prefix_len, (void)cursor, (void)count, (void)flags, (void)buf;
    *len = buf_cap + 1;
    *next = 0;
    return EPHPM_KV_TOO_SMALL;
}
#endif

#ifdef FAKE_PRESCAN
/* The figures of ephpm_kv_stats up to store, as a library from before the
 * status page filled them: only the fields within the caller's struct and
 * its own. */
static int fake_stats(ephpm_kv_stats *out)
{
    if (out == NULL || out->struct_size < sizeof(uint32_t)) {
        return EPHPM_KV_E_INVALID;
    }
    ephpm_kv_stats st;
    memset(&st, 0, sizeof st);
    strcpy(st.instance_id, "00000000-0000-4000-8000-000000000000");
    strcpy(st.backend, "memory");
    strcpy(st.eviction, "noeviction");
    strcpy(st.compression, "none");
    st.hits = 3;
    st.misses = 1;
    strcpy(st.store, "memory (a library from before the status page)");
    size_t known = offsetof(ephpm_kv_stats, store) + sizeof st.store;
    size_t n = out->struct_size < known ? out->struct_size : known;
    st.struct_size = out->struct_size;
    memcpy(out, &st, n);
    return EPHPM_KV_OK;
}
#endif

static const ephpm_kv_ops fake_ops = {
    .abi_version = FAKE_ABI_VERSION,
#ifdef FAKE_GROWING
    .struct_size = sizeof(ephpm_kv_ops),
    .get_many = fake_get_many,
    .scan = fake_scan,
#elif defined(FAKE_PRESCAN)
    .struct_size = offsetof(ephpm_kv_ops, scan),
    .stats = fake_stats,
#else
    .struct_size = EPHPM_KV_OPS_V1_SIZE,
#endif
    .get = fake_get,
    .set = fake_set,
    .set_nx = fake_set,
    .del = fake_del,
    .del_if_eq = fake_del_if_eq,
};

__attribute__((visibility("default"))) const ephpm_kv_ops *ephpm_kv_get_ops(void)
{
    return &fake_ops;
}
