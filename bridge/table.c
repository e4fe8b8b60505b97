/*
 * The ops table of this provider, and its fork guard.
 *
 * Each member is a C wrapper that refuses to enter Go in a forked child and
 * rejects NULL pointers, then crosses into Go (the ephpmGo* functions of
 * exports.go). It lives in its own file because cgo forbids C definitions
 * next to //export.
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "ephpm_kv.h"
#include "_cgo_export.h"

/* Set in the child of every fork(): the Go runtime's threads did not come
 * along, so entering Go there would hang at the first GC or goroutine. */
static volatile sig_atomic_t ephpm_forked_child;

static void ephpm_mark_forked_child(void)
{
    ephpm_forked_child = 1;
}

/* Runs when the provider is loaded (or, in a Go host, when it starts). */
__attribute__((constructor)) static void ephpm_install_fork_guard(void)
{
    pthread_atfork(NULL, NULL, ephpm_mark_forked_child);
}

/* The message of this thread's last failure: set from Go (failure() in
 * exports.go) on the thread that made the call, read by last_error. */
static __thread char ephpm_last_error_msg[512];
static __thread size_t ephpm_last_error_len;

void ephpm_set_last_error(const char *msg, size_t len)
{
    if (len >= sizeof ephpm_last_error_msg) {
        len = sizeof ephpm_last_error_msg - 1;
    }
    memcpy(ephpm_last_error_msg, msg, len);
    ephpm_last_error_msg[len] = '\0';
    ephpm_last_error_len = len;
}

/* Does not cross into Go. */
static int ephpm_op_last_error(char *buf, size_t buf_cap, size_t *len)
{
    if (len == NULL || (buf == NULL && buf_cap != 0)) {
        return EPHPM_KV_E_INVALID;
    }
    *len = ephpm_last_error_len;
    if (ephpm_last_error_len > buf_cap) {
        return EPHPM_KV_TOO_SMALL;
    }
    memcpy(buf, ephpm_last_error_msg, ephpm_last_error_len);
    return EPHPM_KV_OK;
}

/* A buffer may be NULL only when it is empty. */
#define EPHPM_BAD_BUF(p, n) ((p) == NULL && (n) != 0)

/* Crosses into Go: ephpmGoGet. */
static int ephpm_op_get(const char *key, size_t key_len,
                        char *buf, size_t buf_cap, size_t *value_len)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len) || EPHPM_BAD_BUF(buf, buf_cap) || value_len == NULL) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoGet((char *)key, key_len, buf, buf_cap, value_len);
}

/* Crosses into Go: ephpmGoSet. */
static int ephpm_op_set(const char *key, size_t key_len,
                        const char *value, size_t value_len, int64_t ttl_ms)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len) || EPHPM_BAD_BUF(value, value_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoSet((char *)key, key_len, (char *)value, value_len, ttl_ms);
}

/* Crosses into Go: ephpmGoSetNX. */
static int ephpm_op_set_nx(const char *key, size_t key_len,
                           const char *value, size_t value_len, int64_t ttl_ms)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len) || EPHPM_BAD_BUF(value, value_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoSetNX((char *)key, key_len, (char *)value, value_len, ttl_ms);
}

/* Crosses into Go: ephpmGoDel. */
static int ephpm_op_del(const char *key, size_t key_len)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoDel((char *)key, key_len);
}

/* Crosses into Go: ephpmGoDelIfEq. */
static int ephpm_op_del_if_eq(const char *key, size_t key_len,
                              const char *token, size_t token_len)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len) || EPHPM_BAD_BUF(token, token_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoDelIfEq((char *)key, key_len, (char *)token, token_len);
}

/* Crosses into Go: ephpmGoWait. */
static int ephpm_op_wait(const char *key, size_t key_len, int64_t timeout_ms)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoWait((char *)key, key_len, timeout_ms);
}

/* Crosses into Go: ephpmGoSetNXWait. */
static int ephpm_op_set_nx_wait(const char *key, size_t key_len,
                                const char *value, size_t value_len,
                                int64_t ttl_ms, int64_t wait_ms)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len) || EPHPM_BAD_BUF(value, value_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoSetNXWait((char *)key, key_len, (char *)value, value_len, ttl_ms, wait_ms);
}

/* Crosses into Go: ephpmGoSetGuarded. */
static int ephpm_op_set_guarded(const char *key, size_t key_len,
                                const char *value, size_t value_len, int64_t ttl_ms,
                                const char *guard_key, size_t guard_key_len,
                                const char *guard_token, size_t guard_token_len)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len) || EPHPM_BAD_BUF(value, value_len)
        || EPHPM_BAD_BUF(guard_key, guard_key_len) || EPHPM_BAD_BUF(guard_token, guard_token_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoSetGuarded((char *)key, key_len, (char *)value, value_len, ttl_ms,
                             (char *)guard_key, guard_key_len, (char *)guard_token, guard_token_len);
}

/* Crosses into Go: ephpmGoExpire. */
static int ephpm_op_expire(const char *key, size_t key_len, int64_t ttl_ms)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoExpire((char *)key, key_len, ttl_ms);
}

/* Crosses into Go: ephpmGoExists. */
static int ephpm_op_exists(const char *key, size_t key_len)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoExists((char *)key, key_len);
}

/* Crosses into Go: ephpmGoPTTL. */
static int ephpm_op_pttl(const char *key, size_t key_len, int64_t *ttl_ms)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len) || ttl_ms == NULL) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoPTTL((char *)key, key_len, ttl_ms);
}

/* Crosses into Go: ephpmGoExpireIfEq. */
static int ephpm_op_expire_if_eq(const char *key, size_t key_len,
                                 const char *token, size_t token_len, int64_t ttl_ms)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len) || EPHPM_BAD_BUF(token, token_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoExpireIfEq((char *)key, key_len, (char *)token, token_len, ttl_ms);
}

/* Crosses into Go: ephpmGoIncrBy. */
static int ephpm_op_incr_by(const char *key, size_t key_len, int64_t delta,
                            int64_t ttl_ms, int64_t *result)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len) || result == NULL) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoIncrBy((char *)key, key_len, delta, ttl_ms, result);
}

/* Crosses into Go: ephpmGoFlush. */
static int ephpm_op_flush(void)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    return ephpmGoFlush();
}

/* Crosses into Go: ephpmGoStats. */
static int ephpm_op_stats(ephpm_kv_stats *out)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (out == NULL || out->struct_size < sizeof(uint32_t)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoStats(out);
}

/* Crosses into Go: ephpmGoConfigure. */
static int ephpm_op_configure(const char *name, size_t name_len, const char *value, size_t value_len)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(name, name_len) || EPHPM_BAD_BUF(value, value_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoConfigure((char *)name, name_len, (char *)value, value_len);
}

/* Crosses into Go: ephpmGoDelGuarded. */
static int ephpm_op_del_guarded(const char *key, size_t key_len,
                                const char *guard_key, size_t guard_key_len,
                                const char *guard_token, size_t guard_token_len)
{
    if (ephpm_forked_child) {
        return EPHPM_KV_E_FORKED;
    }
    if (EPHPM_BAD_BUF(key, key_len) || EPHPM_BAD_BUF(guard_key, guard_key_len)
        || EPHPM_BAD_BUF(guard_token, guard_token_len)) {
        return EPHPM_KV_E_INVALID;
    }
    return ephpmGoDelGuarded((char *)key, key_len, (char *)guard_key, guard_key_len,
                             (char *)guard_token, guard_token_len);
}

static const ephpm_kv_ops ephpm_ops = {
    .abi_version = EPHPM_KV_ABI_VERSION,
    .struct_size = sizeof(ephpm_kv_ops),
    .get = ephpm_op_get,
    .set = ephpm_op_set,
    .set_nx = ephpm_op_set_nx,
    .del = ephpm_op_del,
    .del_if_eq = ephpm_op_del_if_eq,
    .wait = ephpm_op_wait,
    .set_nx_wait = ephpm_op_set_nx_wait,
    .set_guarded = ephpm_op_set_guarded,
    .expire = ephpm_op_expire,
    .exists = ephpm_op_exists,
    .pttl = ephpm_op_pttl,
    .expire_if_eq = ephpm_op_expire_if_eq,
    .incr_by = ephpm_op_incr_by,
    .flush = ephpm_op_flush,
    .stats = ephpm_op_stats,
    .configure = ephpm_op_configure,
    .last_error = ephpm_op_last_error,
    .del_guarded = ephpm_op_del_guarded,
};

/* The provider's one exported symbol. */
__attribute__((visibility("default"))) const ephpm_kv_ops *ephpm_kv_get_ops(void)
{
    return &ephpm_ops;
}
