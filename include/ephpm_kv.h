/*
 * ephpm_kv.h - the C ABI between a key-value provider and its consumers.
 *
 * This header is the contract, and the one place it is written down.
 *
 * A *provider* is whatever implements the store: the Go library libephpm.so
 * (built with -buildmode=c-shared from ./bridge), or a Go program that links
 * ./bridge into its own runtime and embeds PHP. A provider exports exactly one
 * symbol, EPHPM_KV_GET_OPS_SYMBOL, which returns its operations table.
 * A *consumer* (the PHP extension, the C tests) looks that symbol up, checks
 * the table's version and size, and calls through the table.
 *
 * ABI rules (append-only):
 *   1. Members are never reordered, removed, or changed in type or meaning.
 *      A new operation is appended at the end of struct ephpm_kv_ops, and
 *      struct_size grows with it. Return codes are never renumbered.
 *   2. abi_version names this family of tables. It changes only if rule 1 is
 *      ever broken, which it must not be; a consumer refuses a table whose
 *      abi_version differs from the EPHPM_KV_ABI_VERSION it was built with.
 *   3. A consumer refuses a table smaller than EPHPM_KV_OPS_V1_SIZE, and
 *      before calling any member added later it checks
 *      EPHPM_KV_OPS_HAS(ops, member): an older provider's table simply ends
 *      before that member.
 *   4. The table is immutable and lives as long as the process.
 *
 * Calling conventions, for every member:
 *   - Keys and values cross as pointer + length. They are binary-safe (NUL
 *     bytes allowed) and need no terminator. The provider copies what it
 *     keeps; the caller's buffers are only read during the call.
 *   - A key is 1..EPHPM_KV_MAX_KEY_LEN bytes, a value
 *     0..EPHPM_KV_MAX_VALUE_LEN bytes, a TTL 0..EPHPM_KV_MAX_TTL_MS
 *     milliseconds where 0 means "no expiry".
 *   - The return value is an ephpm_kv_status. Non-negative codes are
 *     definite outcomes; negative codes are failures, after which the store
 *     is unchanged, or (EPHPM_KV_E_UNAVAILABLE) its state is unknown.
 *   - Every member is safe to call from any number of threads at once.
 *   - A provider loaded into a process that later forks answers every call
 *     in the child with EPHPM_KV_E_FORKED without entering its runtime (a
 *     Go runtime does not survive fork). The child must load its own.
 *
 * Expiry: a TTL is kept to within one kernel tick (1-10 ms; 4 ms on most
 * Linux builds): an entry is absent, for every member, from an instant
 * within a tick of its TTL's end on, whether or not it has been reclaimed
 * yet. The in-process and shared-memory stores read CLOCK_MONOTONIC_COARSE,
 * which lags the precise clock by up to a tick at the write and at the
 * check, so an entry lives its TTL give or take a tick; Redis keeps TTLs
 * to the millisecond.
 * A read/write lock's hold has a deadline of its own inside its name's
 * entry (lock_acquire): a hold whose deadline has passed counts as absent
 * in the same way, and the entry lapses with its latest hold.
 */
#ifndef EPHPM_KV_H
#define EPHPM_KV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The table family this header describes. See ABI rule 2. */
#define EPHPM_KV_ABI_VERSION 1u

/* The name of the one symbol a provider exports: an ephpm_kv_get_ops_fn. */
#define EPHPM_KV_GET_OPS_SYMBOL "ephpm_kv_get_ops"

/* Limits every provider enforces (kv.MaxKeyLen, kv.MaxValueLen, kv.MaxTTL). */
#define EPHPM_KV_MAX_KEY_LEN   4096u
#define EPHPM_KV_MAX_VALUE_LEN (256u * 1024u * 1024u)
#define EPHPM_KV_MAX_TTL_SECONDS INT64_C(2147483647)
#define EPHPM_KV_MAX_TTL_MS    (EPHPM_KV_MAX_TTL_SECONDS * 1000)

/* value_len of a get_many value record for a key without a live entry. */
#define EPHPM_KV_BATCH_MISSING UINT32_C(0xFFFFFFFF)

/* Lock modes, for lock_acquire and lock_info (kv.LockExclusive, kv.LockShared). */
#define EPHPM_KV_LOCK_EXCLUSIVE 0
#define EPHPM_KV_LOCK_SHARED    1
/* The longest token lock_acquire takes (kv.CheckLockToken); the shortest is 1 byte. */
#define EPHPM_KV_MAX_LOCK_TOKEN_LEN 255u

/* The scan member. A page crosses as records laid end to end in the
 * caller's buffer, without padding, each field in the machine's byte
 * order, read with memcpy (records are not aligned):
 *   uint32_t key_len
 *   uint32_t kind        EPHPM_KV_SCAN_VALUE, _LOCK, _LOCK_SHARED, _SESSION,
 *                        _SKIPPED
 *   int64_t  size        the value's length as get returns it; -1 when the
 *                        store cannot say (a Redis key that is no string)
 *   int64_t  ttl_ms      the time left, rounded up as pttl does; -1: none
 *   int64_t  holders     a lock's holders: 1 (exclusive) or its read
 *                        holds; 0 for a value or session data
 *   int64_t  waiters     callers waiting for the key to be free (wait and
 *                        the waiting members); -1 when the store cannot
 *                        say (Redis, in a walk of every key)
 *   int64_t  holder_pid  the process the store records as the lock's
 *                        holder (a session lock on a shared-memory
 *                        segment); 0: none recorded
 *   key_len bytes of key
 * A lock is an entry the store keeps as one (set_nx, lock_acquire, a
 * session's lock: never evicted). Redis keeps a lock as a plain string:
 * it tells a session's lock by its prefix, and in a walk of locks also a
 * read-held name and a name with callers in its line; a set_nx lock
 * nobody waits for is a VALUE there. SESSION is the session handler's
 * data (its data prefix). A SKIPPED record is no entry: its key bytes are
 * the text of why a part of the store was left out (a damaged shard), its
 * numbers 0. */
#define EPHPM_KV_SCAN_RECORD_HEAD 48u   /* the fixed part of a record */
#define EPHPM_KV_SCAN_VALUE       0u    /* a value */
#define EPHPM_KV_SCAN_LOCK        1u    /* a lock held exclusively */
#define EPHPM_KV_SCAN_LOCK_SHARED 2u    /* a lock held for reading */
#define EPHPM_KV_SCAN_SESSION     3u    /* a session's data */
#define EPHPM_KV_SCAN_SKIPPED     4u    /* a part of the store the walk left out */
/* scan's flags. */
#define EPHPM_KV_SCAN_LOCKS       1     /* only the locks */
/* The most records a scan may ask for. */
#define EPHPM_KV_SCAN_MAX_COUNT   100000u

/* Return codes. Never renumbered; new codes take new numbers. */
typedef enum ephpm_kv_status {
    /* The operation happened: found, stored, deleted. */
    EPHPM_KV_OK = 0,
    /* The key holds no live entry (absent or expired), or, for a compare
     * operation, its value differs from the one given. Nothing changed. */
    EPHPM_KV_MISS = 1,
    /* set_nx: a live entry already holds the key. Nothing changed. */
    EPHPM_KV_EXISTS = 2,
    /* get: the value does not fit the buffer; *value_len holds its length.
     * Nothing was copied. Retry with a buffer of at least that size. */
    EPHPM_KV_TOO_SMALL = 3,

    /* The store has no room for the write. The old value, if any, is kept. */
    EPHPM_KV_E_NOMEM = -1,
    /* The outcome is unknown: the backend is unreachable, timed out, or its
     * reply was lost. The operation may or may not have taken effect. Never
     * read this as "absent" or "held". Unless last_error begins with
     * EPHPM_KV_NOTHING_DONE: then the provider refused the call before it
     * sent, wrote or granted anything (a Redis server that may evict keys,
     * a fence file that cannot be made), and nothing changed. */
    EPHPM_KV_E_UNAVAILABLE = -2,
    /* An argument is outside the limits above, or a required pointer is
     * NULL; last_error says which. Nothing changed. */
    EPHPM_KV_E_INVALID = -3,
    /* This process was forked after the provider was loaded; the provider
     * cannot run in the child. Nothing changed. */
    EPHPM_KV_E_FORKED = -4,
    /* Consumer-side: no provider could be loaded. Never returned by a
     * provider; defined here so every consumer reports it the same way. */
    EPHPM_KV_E_NOT_LOADED = -5,
    /* Consumer-side: the loaded provider's table lacks the member needed
     * (EPHPM_KV_OPS_HAS was false). Never returned by a provider. */
    EPHPM_KV_E_UNSUPPORTED = -6,
    /* incr_by: the stored value is not a decimal 64-bit integer (see
     * incr_by for what is one). Nothing changed. */
    EPHPM_KV_E_NOT_INTEGER = -7,
    /* incr_by: the result would leave the 64-bit range. Nothing changed. */
    EPHPM_KV_E_OVERFLOW = -8
} ephpm_kv_status;

/* How last_error begins, followed by ": " and the cause, for an
 * E_UNAVAILABLE that the provider refused before it did anything (see
 * EPHPM_KV_E_UNAVAILABLE). Go's kv.ErrNothingDone has this text. */
#define EPHPM_KV_NOTHING_DONE "nothing was written or granted"

/* The counts of one interval of the rates a store keeps (the stats
 * member's rates[]): what happened in it, as the totals of ephpm_kv_stats
 * count it. */
typedef struct ephpm_kv_rate {
    uint64_t hits, misses, sets, set_nx_wins, set_nx_losses, evictions, expirations;
} ephpm_kv_rate;

/* One shard of a shared-memory segment (the stats member's shard[]). */
typedef struct ephpm_kv_shard {
    int64_t keys;          /* entries, counting expired ones not yet reclaimed */
    int64_t bytes_used;    /* memory charged to entries */
    int64_t heap_size;     /* bytes of the shard's heap */
    int64_t heap_free;     /* bytes of its free blocks */
    int64_t largest_free;  /* its largest free block: heap_free much larger
                            * than it is a fragmented heap; -1 unknown (the
                            * shard is damaged) */
} ephpm_kv_shard;

/* How many intervals and shards ephpm_kv_stats has room for. */
#define EPHPM_KV_STATS_RATES  30
#define EPHPM_KV_STATS_SHARDS 32

/* Filled by the stats member. The caller sets struct_size to the size of
 * its own struct; the provider fills only the fields that lie within it, so
 * fields appended later never overrun an older caller's struct. Text fields
 * are NUL-terminated. */
typedef struct ephpm_kv_stats {
    uint32_t struct_size;
    uint32_t reserved;
    char instance_id[40];  /* a UUID drawn when the store was made */
    char backend[16];      /* "memory", "shm" or "redis" */
    char eviction[16];     /* "noeviction", "volatile-lru" or "allkeys-lru" */
    char compression[8];   /* "none" or "lz4" */
    int64_t keys;          /* entries, counting expired ones not yet reclaimed */
    int64_t bytes_used;    /* memory charged to entries */
    int64_t memory_limit;  /* 0: none */
    uint64_t hits, misses; /* get */
    uint64_t sets;         /* set, and set_guarded that wrote */
    uint64_t evictions;    /* entries removed to make room */
    uint64_t expirations;  /* expired entries reclaimed */
    uint64_t set_nx_wins, set_nx_losses; /* set_nx, and each lock_acquire attempt */
    uint64_t del_if_eq_matches, del_if_eq_mismatches;
    uint64_t lock_timeouts; /* set_nx_wait and lock_acquire calls that ran out
                             * of time */
    /* ---- appended for the session budget and the shared-memory store ---- */
    int64_t session_bytes;  /* the part of bytes_used charged to session data */
    int64_t session_limit;  /* the session data's budget; 0: none */
    int64_t processes;      /* processes attached to the shared-memory segment;
                             * 0 for a backend that has none */
    /* ---- appended for the shared-memory default ---- */
    char store[256];        /* which store serves the table and why, e.g.
                             * "shm /dev/shm/ephpm-fpm-www.33 (default: php-fpm
                             * pool www)" or "redis (ephpm.kv_backend)"; cut to
                             * fit, NUL-terminated */
    /* ---- appended for the status page ---- */
    char facts[256];        /* what the store is, for a person: a segment's
                             * file and shape, a Redis server's version, mode
                             * and memory policy; "" for the in-process store */
    uint32_t rate_interval_ms; /* the length of each interval of rates[]; 0:
                                * the store keeps no rates (Redis) */
    uint32_t rate_count;    /* intervals in rates[], newest first: rates[0]
                             * is the last complete one. A ring of counters
                             * the store keeps (in a segment, for every
                             * process), 10 s intervals over 5 minutes */
    ephpm_kv_rate rates[EPHPM_KV_STATS_RATES];
    uint32_t shard_count;   /* shards in shard[]; 0 for a store without (the
                             * in-process store, Redis) */
    uint32_t reserved2;
    ephpm_kv_shard shard[EPHPM_KV_STATS_SHARDS];
} ephpm_kv_stats;

/* The step member's request and answer: one atomic step that takes or
 * checks a lock, acts on one key, and releases the lock, in any
 * combination (kv.Step in Go; docs/design.md, "One step"). The caller
 * sets struct_size to the size of its own struct and fills the inputs; the
 * provider reads only the fields within struct_size and writes only the
 * outputs within it, so fields appended later never overrun an older
 * caller's struct. The parts, in the order the step applies them:
 *   acquire  (flags ACQUIRE) if lock holds no live entry, lock = token with
 *            lock_ttl_ms (0: none), kept as set_nx keeps a lock (never
 *            evicted); with FENCED the grant mints its fence into fence, in
 *            the sequence set_nx_wait_fenced and lock_acquire mint from;
 *            with BOUND the lock lasts no longer than the process that took
 *            it where the store can tell: on a shared-memory segment it
 *            lapses once that process is dead; on Redis its PX is a short
 *            lease (lock_lease in the URL, 2 s by default) that the process
 *            renews, never past lock_ttl_ms, so it lapses within a lease of
 *            the process's death; lock_refresh and expire_if_eq by token
 *            keep it so. Held by
 *            another: retried as set_nx_wait retries (backoff from 10 ms
 *            doubling to 100 ms, woken early by a release) for at most
 *            wait_ms (0: one attempt), then EXISTS. An acquiring step
 *            checks no guard and releases nothing.
 *   guard    (not with ACQUIRE) what must hold of lock for the step to act,
 *            checked in the same atomic step as the action:
 *              GUARD_NONE          nothing;
 *              GUARD_TOKEN         lock holds a live entry equal to token;
 *              GUARD_FENCE         fence is still lock's latest fenced
 *                                  grant (held or not);
 *              GUARD_FENCE_HOLDER  GUARD_FENCE, and lock holds no live
 *                                  entry other than token.
 *   action   on key, once the lock is taken or the guard holds:
 *              ACTION_NONE    nothing;
 *              ACTION_GET     key's live value into buf as get copies it:
 *                             len its length; DONE; FOUND if there was one;
 *              ACTION_SET     value under key with ttl_ms, as set stores it;
 *              ACTION_DEL     key removed (DONE if a live entry was);
 *              ACTION_EXPIRE  key's live entry gets ttl_ms (0: none) from
 *                             now, its value kept (DONE if it was live).
 *   release  (flags RELEASE) del_if_eq of lock with token, waking a waiter
 *            as every release does, when the guard held and, for
 *            ACTION_EXPIRE, the action was done: RELEASED if lock held
 *            token.
 * Every output is written by the call, whatever it held before.
 *   OK         the acquire took lock, or the guard held: the action and the
 *              release are as result says.
 *   TOO_SMALL  as OK, with ACTION_GET: len is the value's length, larger
 *              than buf_cap, and nothing was copied (the lock, if acquired,
 *              is the caller's: read the value with get).
 *   EXISTS     ACQUIRE: lock was held by others for the whole of wait_ms;
 *              nothing changed.
 *   MISS       the guard did not hold; nothing changed.
 *   E_NOMEM    no room for ACTION_SET's value: nothing changed (an acquired
 *              lock is not kept, a guarded one is still held).
 *   E_INVALID  a bad key, value, TTL or fence (<= 0 for a fence guard), an
 *              unknown flag, guard or action, a combination that means
 *              nothing (GUARD or RELEASE with ACQUIRE, FENCED, BOUND or
 *              wait_ms without it, ACQUIRE acting on lock itself), or a
 *              Redis Cluster lock and key in different slots. Nothing
 *              changed.
 * A field the step does not use is not read (the lock and token without
 * ACQUIRE, a guard or RELEASE; key without an action; value for any action
 * but SET; ttl_ms but for SET and EXPIRE; buf but for GET): a reused struct
 * may keep old ones. buf_cap beyond EPHPM_KV_MAX_VALUE_LEN is used as that.
 * After another failure the outcome is unknown: an acquire may have been
 * granted (release it with token), a write or release may have happened.
 * One atomic step where the backend has one (a Redis script: one round
 * trip per attempt). */
typedef struct ephpm_kv_step {
    uint32_t struct_size;   /* in: sizeof(ephpm_kv_step) as the caller was built */
    uint32_t flags;         /* in: EPHPM_KV_STEP_ACQUIRE, _FENCED, _BOUND, _RELEASE */
    int32_t guard;          /* in: EPHPM_KV_STEP_GUARD_* */
    int32_t action;         /* in: EPHPM_KV_STEP_ACTION_* */
    const char *lock;       /* in: the lock's key; with token, its holder's value */
    size_t lock_len;
    const char *token;
    size_t token_len;
    int64_t lock_ttl_ms;    /* in, ACQUIRE: the lock's TTL (0: none) */
    int64_t wait_ms;        /* in, ACQUIRE: how long to wait for the lock */
    int64_t fence;          /* in: the fence a fence guard checks; out, after
                             * ACQUIRE|FENCED: the grant's fence (0: none) */
    const char *key;        /* in: the key the action acts on */
    size_t key_len;
    const char *value;      /* in, ACTION_SET: the value and its TTL */
    size_t value_len;
    int64_t ttl_ms;         /* in, ACTION_SET and ACTION_EXPIRE */
    char *buf;              /* in, ACTION_GET: where the value goes; may be
                             * NULL when buf_cap is 0 */
    size_t buf_cap;
    size_t len;             /* out, ACTION_GET: the value's length; else 0 */
    uint32_t result;        /* out: EPHPM_KV_STEP_HELD, _DONE, _FOUND, _RELEASED */
    uint32_t reserved;
} ephpm_kv_step;

/* ephpm_kv_step.flags. */
#define EPHPM_KV_STEP_ACQUIRE 1u   /* take lock for token (waiting up to wait_ms) */
#define EPHPM_KV_STEP_FENCED  2u   /* the acquire mints its fence */
#define EPHPM_KV_STEP_BOUND   4u   /* the lock ends with the process where the store can tell */
#define EPHPM_KV_STEP_RELEASE 8u   /* release lock with token after the action */
/* ephpm_kv_step.guard (kv.Guard). */
#define EPHPM_KV_STEP_GUARD_NONE         0
#define EPHPM_KV_STEP_GUARD_TOKEN        1
#define EPHPM_KV_STEP_GUARD_FENCE        2
#define EPHPM_KV_STEP_GUARD_FENCE_HOLDER 3
/* ephpm_kv_step.action (kv.Action). */
#define EPHPM_KV_STEP_ACTION_NONE   0
#define EPHPM_KV_STEP_ACTION_GET    1
#define EPHPM_KV_STEP_ACTION_SET    2
#define EPHPM_KV_STEP_ACTION_DEL    3
#define EPHPM_KV_STEP_ACTION_EXPIRE 4
/* ephpm_kv_step.result. */
#define EPHPM_KV_STEP_HELD     1u  /* the acquire took lock, or the guard held */
#define EPHPM_KV_STEP_DONE     2u  /* the action was done (never for ACTION_NONE) */
#define EPHPM_KV_STEP_FOUND    4u  /* ACTION_GET: key had a live value */
#define EPHPM_KV_STEP_RELEASED 8u  /* lock held token and was released */

typedef struct ephpm_kv_ops {
    /* EPHPM_KV_ABI_VERSION of the provider. */
    uint32_t abi_version;
    /* sizeof(struct ephpm_kv_ops) as the provider was built: tells which
     * members exist (EPHPM_KV_OPS_HAS). */
    uint32_t struct_size;

    /* get: look up key.
     *   OK         the value was copied to buf[0..*value_len). buf may be
     *              NULL when buf_cap is 0.
     *   TOO_SMALL  *value_len is the value's length, larger than buf_cap;
     *              nothing was copied. The value may change before a retry,
     *              so a retry may answer TOO_SMALL again or MISS.
     *   MISS       no live entry; *value_len is 0.
     * value_len must not be NULL. */
    int (*get)(const char *key, size_t key_len,
               char *buf, size_t buf_cap, size_t *value_len);

    /* set: store value under key, replacing any entry, with ttl_ms (0: no
     * expiry, and any previous TTL is cleared). The replacement is atomic:
     * no reader ever sees the key absent. OK or a failure; on E_NOMEM the
     * old value stays. */
    int (*set)(const char *key, size_t key_len,
               const char *value, size_t value_len, int64_t ttl_ms);

    /* set_nx: store value under key only if no live entry holds it, and
     * apply ttl_ms in the same atomic step. Among any number of concurrent
     * callers on a free key exactly one gets OK; the others get EXISTS.
     * An expired entry counts as absent. The entry is a lock: the store
     * never evicts it, only its TTL, del, del_if_eq and flush remove it (a
     * Redis backend refuses set_nx, with E_UNAVAILABLE, while the server
     * may evict keys, unless its URL says allow_evicting_server=1). */
    int (*set_nx)(const char *key, size_t key_len,
                  const char *value, size_t value_len, int64_t ttl_ms);

    /* del: remove key. OK if a live entry was removed, MISS if there was
     * none (an expired entry is removed too, and answers MISS). */
    int (*del)(const char *key, size_t key_len);

    /* del_if_eq: remove key only while it holds a live entry whose value
     * equals token byte for byte. The compare and the delete are one atomic
     * step where the decision is made; an expired entry never matches.
     * OK if removed; MISS if absent, expired or different. */
    int (*del_if_eq)(const char *key, size_t key_len,
                     const char *token, size_t token_len);

    /* ---- appended for the session handler ---- */

    /* wait: block until key holds no live entry, for at most timeout_ms
     * (0..EPHPM_KV_MAX_TTL_MS).
     *   OK      the key is free (it was, or it was removed, or its TTL
     *           passed, during the wait).
     *   EXISTS  timeout_ms passed and the key is still held.
     * A removal wakes waiters one at a time, oldest first: a woken caller is
     * expected to try to take the key at once (set_nx), so that waiters are
     * served roughly in arrival order. */
    int (*wait)(const char *key, size_t key_len, int64_t timeout_ms);

    /* set_nx_wait: set_nx, retried on contention until it succeeds or
     * wait_ms (0..EPHPM_KV_MAX_TTL_MS) of wall-clock time has passed. Between
     * attempts it waits 10 ms, doubling to a 100 ms cap, returning early
     * when the key is released (as wait does). At least one attempt.
     *   OK      this call inserted value, with ttl_ms, as set_nx does.
     *   EXISTS  the key was held by others for the whole of wait_ms.
     * A failure ends the call at once and is never reported as EXISTS. */
    int (*set_nx_wait)(const char *key, size_t key_len,
                       const char *value, size_t value_len,
                       int64_t ttl_ms, int64_t wait_ms);

    /* set_guarded: store value under key, as set does, only while guard_key
     * holds a live entry equal to guard_token. The check and the write are
     * one atomic step. OK if written; MISS if the guard did not hold (then
     * nothing changed). Used to write a session only while its lock is
     * still this request's. */
    int (*set_guarded)(const char *key, size_t key_len,
                       const char *value, size_t value_len, int64_t ttl_ms,
                       const char *guard_key, size_t guard_key_len,
                       const char *guard_token, size_t guard_token_len);

    /* expire: give a live entry a new TTL of ttl_ms from now (0: no expiry)
     * without touching its value. OK if done; MISS if no live entry. */
    int (*expire)(const char *key, size_t key_len, int64_t ttl_ms);

    /* ---- appended for the full key API ---- */

    /* exists: OK if key holds a live entry, MISS if not. */
    int (*exists)(const char *key, size_t key_len);

    /* pttl: OK with *ttl_ms the remaining TTL in milliseconds, or -1 if the
     * entry has no expiry; MISS if no live entry. ttl_ms must not be NULL. */
    int (*pttl)(const char *key, size_t key_len, int64_t *ttl_ms);

    /* expire_if_eq: expire, only while key holds a live entry equal to
     * token (the token-guarded refresh of a lock). OK if done; MISS if
     * absent, expired or different. */
    int (*expire_if_eq)(const char *key, size_t key_len,
                        const char *token, size_t token_len, int64_t ttl_ms);

    /* incr_by: add delta to the decimal integer stored under key, atomically,
     * and put the sum in *result. A missing key is created holding delta
     * with ttl_ms (0: none); an existing entry keeps its TTL. OK, or
     * E_NOT_INTEGER, E_OVERFLOW, E_NOMEM with nothing changed.
     * A decimal integer is what Redis's INCRBY takes, on every backend: an
     * optional '-' and the digits 0-9, with no leading zero ("0" itself
     * excepted), within the int64 range. "007", "-0", "+1", " 1", "1 " and
     * "" are not integers. */
    int (*incr_by)(const char *key, size_t key_len, int64_t delta,
                   int64_t ttl_ms, int64_t *result);

    /* flush: remove every entry. OK. */
    int (*flush)(void);

    /* stats: fill *out (see ephpm_kv_stats; set out->struct_size first). */
    int (*stats)(ephpm_kv_stats *out);

    /* configure: set one setting of the store, by name, as text:
     *   "memory_limit"          bytes, decimal; "0" means no limit     } the in-process
     *   "session_memory_limit"  bytes of session data, below memory_limit;   } store
     *                           "0" means half of memory_limit          }
     *   "eviction"              "noeviction" | "volatile-lru" | "allkeys-lru" }
     *   "compression"           "none" | "lz4"                          }
     *   "compression_min_size"  bytes, decimal                          }
     *   "near_cache_prefixes"   comma-separated key prefixes a Redis backend may }
     *                           serve from a per-process cache                 } set before
     *   "near_cache_staleness_ms"  how old a near-cache entry may be, ms         } "backend"
     *   "near_cache_size"       bytes the near cache may hold                   }
     *   "sapi"                  the host's server API (PHP's sapi_module.name),
     *                           which "auto" chooses by           } set before "backend"
     *   "backend"               "auto" (a shared-memory segment per pool where
     *                           several processes serve requests, else the
     *                           in-process store: see README), "memory", "shm",
     *                           "shm://NAME", or a Redis/Valkey URL: every
     *                           member is then served by that store
     * Names and words are lowercase and matched exactly; sizes are decimal,
     * with an optional K, M or G suffix (2^10, 2^20, 2^30), as in php.ini.
     * OK, E_INVALID for an unknown name or a bad value, or E_UNAVAILABLE for
     * a backend that cannot be opened now (a full /dev/shm, a segment another
     * server holds); nothing changed, and last_error says why. Settings apply
     * to calls from then on. */
    int (*configure)(const char *name, size_t name_len,
                     const char *value, size_t value_len);

    /* ---- appended for the shared backend ---- */

    /* last_error: the message of the most recent failure (negative status)
     * of a call made on this thread, e.g. "dial tcp 127.0.0.1:6379: connect:
     * connection refused", copied into buf as get copies a value (OK, or
     * TOO_SMALL with *len set); "" if there was none. Every E_NOMEM,
     * E_UNAVAILABLE, E_INVALID (from the table that has get_many on),
     * E_NOT_INTEGER and E_OVERFLOW a provider returns sets one; E_FORKED
     * does not (the consumer knows its pids best). It does not enter the
     * provider's runtime and works in a forked child. */
    int (*last_error)(char *buf, size_t buf_cap, size_t *len);

    /* ---- appended for the guarded session destroy ---- */

    /* del_guarded: remove key only while guard_key holds a live entry equal
     * to guard_token, as set_guarded writes. The check and the removal are
     * one atomic step where the decision is made.
     *   OK    the guard held; key holds no entry now (whether or not it
     *         held one before).
     *   MISS  the guard did not hold (absent, expired or different);
     *         nothing changed.
     * Used to destroy a session, or remove its emptied data, only while its
     * lock is still this request's. */
    int (*del_guarded)(const char *key, size_t key_len,
                       const char *guard_key, size_t guard_key_len,
                       const char *guard_token, size_t guard_token_len);

    /* ---- appended for batches (one crossing for many keys) ---- */

    /* Batch records. A batch crosses as one buffer of count records laid
     * end to end, without padding; every length is a uint32_t in the
     * machine's byte order (provider and consumer share a process), read
     * and written with memcpy (records are not aligned):
     *   key record    uint32_t key_len, then key_len bytes of key
     *   value record  uint32_t value_len, then value_len bytes of value;
     *                 EPHPM_KV_BATCH_MISSING as value_len (and no bytes)
     *                 for a key that holds no live entry
     * Each key and value obeys the limits of the calling conventions. A
     * buffer whose records do not add up to exactly count records of
     * buf_len bytes is refused with E_INVALID, and nothing is read or
     * written. Each key of a batch is read or written atomically on its
     * own, as get or set would; the batch as a whole is not one atomic
     * step (another caller may see some of its writes and not others). */

    /* get_many: look up the count keys of the key records in keys[0..
     * keys_len) and write one value record per key, in the same order,
     * into buf. Values are the logical (decompressed) ones.
     *   OK         buf[0..*out_len) holds the count value records.
     *   TOO_SMALL  *out_len is the length the records need, larger than
     *              buf_cap; buf holds nothing usable. Values may change
     *              before a retry, which may answer TOO_SMALL again.
     *   E_INVALID  malformed records (see above); nothing read.
     * count may be 0 (OK, *out_len 0). A Redis backend sends the batch in
     * one round trip to each server that owns some of its keys (a Cluster:
     * one per node). out_len must not be NULL. */
    int (*get_many)(const char *keys, size_t keys_len, size_t count,
                    char *buf, size_t buf_cap, size_t *out_len);

    /* set_many: store each of the count entries of entries[0..entries_len)
     * (a key record followed by a value record, never MISSING) with ttl_ms,
     * as set does, in order. Every entry is checked before any is written:
     * a bad one is E_INVALID with nothing written.
     *   OK         every entry is stored; *stored is count.
     *   a failure  (E_NOMEM, E_UNAVAILABLE, ...) the entries before
     *              *stored are stored; the entry at *stored failed with
     *              this status (E_NOMEM: its old value is kept). The
     *              in-process and shared-memory stores write nothing after
     *              it; a Redis backend has sent the whole batch at once, so
     *              each entry after it may or may not have been written.
     * A key given twice ends with its later value. stored must not be
     * NULL. */
    int (*set_many)(const char *entries, size_t entries_len, size_t count,
                    int64_t ttl_ms, size_t *stored);

    /* ---- appended for fencing tokens ---- */

    /* set_nx_wait_fenced: set_nx_wait that also mints the grant's fencing
     * token in the same atomic step as the grant, and puts it in *fence: a
     * number strictly greater than that of every earlier grant of key by
     * this member, set_nx_wait_get_fenced or lock_acquire, minted where
     * the grant is decided, and never reset by the lock's release, expiry
     * or eviction, nor by flush (the in-process and shared-memory stores
     * keep fences outside their entries; a Redis server keeps each in a
     * key of its own, and after FLUSHDB, or a failover that lost the
     * latest one, continues from its clock in microseconds). Grants by
     * set_nx, set_nx_wait and set_nx_wait_get mint no fence.
     *   OK      this call holds the lock; *fence > 0.
     *   EXISTS  held by others for the whole of wait_ms; *fence is 0.
     * A failure is never reported as EXISTS; after E_UNAVAILABLE the lock
     * may have been granted (release it with its token). On a Redis
     * Cluster a name without a hash tag that holds a '}' is E_INVALID: its
     * fence cannot share its slot. fence must not be NULL. */
    int (*set_nx_wait_fenced)(const char *key, size_t key_len,
                              const char *value, size_t value_len,
                              int64_t ttl_ms, int64_t wait_ms, int64_t *fence);

    /* fence: OK with *fence the latest fence granted for key by
     * set_nx_wait_fenced, set_nx_wait_get_fenced or lock_acquire, 0 if
     * none was. A store that had to forget a name (the in-process and
     * shared-memory stores remember a bounded number of names: README)
     * reports a number no smaller than its latest grant. fence must not
     * be NULL. */
    int (*fence)(const char *key, size_t key_len, int64_t *fence);

    /* set_fenced: store value under key, as set does, only while fence is
     * still the latest grant of lock (none of set_nx_wait_fenced,
     * set_nx_wait_get_fenced and lock_acquire has granted lock since the
     * grant that returned fence; whether the lock is still held does not
     * matter). The check and the write are one atomic step.
     *   OK       written.
     *   MISS     fence is not lock's latest grant (or the store forgot the
     *            name, or lost its fence: see fence); nothing changed.
     *   E_INVALID  fence <= 0, or on a Redis Cluster key and lock are in
     *            different slots (give both one hash tag). */
    int (*set_fenced)(const char *key, size_t key_len,
                      const char *value, size_t value_len, int64_t ttl_ms,
                      const char *lock, size_t lock_len, int64_t fence);

    /* del_fenced: remove key only while fence is still the latest grant of
     * lock, as set_fenced writes. The check and the removal are one atomic
     * step.
     *   OK       the fence held; key holds no entry now (whether or not it
     *            held one before).
     *   MISS     fence is not lock's latest grant; nothing changed.
     *   E_INVALID  fence <= 0, or on a Redis Cluster key and lock are in
     *            different slots.
     * For the session handler: to destroy a session, or remove its emptied
     * data, only while nobody else was granted its lock since. */
    int (*del_fenced)(const char *key, size_t key_len,
                      const char *lock, size_t lock_len, int64_t fence);

    /* ---- appended for two round trips per session request ---- */

    /* set_nx_wait_get: set_nx_wait on key (value, ttl_ms, wait_ms), and once
     * that is OK, get of data_key into buf as get does: taking a session's
     * lock and reading its data in one call. Each attempt is one atomic step
     * where the backend has one (a Redis script: one round trip); elsewhere
     * the read follows the grant under the same lock.
     *   OK         the lock is this call's; data_key's value is in buf, *len
     *              its length.
     *   MISS       the lock is this call's; data_key holds no live entry
     *              (*len is 0).
     *   TOO_SMALL  the lock is this call's; *len is the value's length and
     *              nothing was copied (read it with get).
     *   EXISTS     as set_nx_wait: key was held by others for the whole of
     *              wait_ms; nothing was read.
     * A failure ends the call at once and is never reported as EXISTS; as
     * after set_nx_wait, the lock may have been granted. */
    int (*set_nx_wait_get)(const char *key, size_t key_len,
                           const char *value, size_t value_len,
                           int64_t ttl_ms, int64_t wait_ms,
                           const char *data_key, size_t data_key_len,
                           char *buf, size_t buf_cap, size_t *len);

    /* set_guarded_release: set_guarded, and if the guard held, del_if_eq of
     * guard_key with guard_token (waking a waiter, as every release does):
     * writing a session and releasing its lock in one call, one atomic step
     * where the backend has one (a Redis script: one round trip).
     *   OK    written, and the guard released.
     *   MISS  the guard did not hold (absent, expired or different);
     *         nothing changed.
     *   E_NOMEM  no room for value: nothing changed (the old value kept,
     *         the guard still held); release it with its token (a full
     *         Redis runs that release, handing the lock on).
     * After another failure both the write and the release are unknown. */
    int (*set_guarded_release)(const char *key, size_t key_len,
                               const char *value, size_t value_len, int64_t ttl_ms,
                               const char *guard_key, size_t guard_key_len,
                               const char *guard_token, size_t guard_token_len);

    /* ---- appended for the fenced session lock ---- */

    /* set_nx_wait_get_fenced: set_nx_wait_get whose grant also mints its
     * fencing token in the same atomic step, as set_nx_wait_fenced mints
     * it and in the same sequence of key's fences, and puts it in *fence.
     * On Redis the attempts wait in key's line of waiters as
     * set_nx_wait_get's do. Answers as set_nx_wait_get; with OK, MISS and
     * TOO_SMALL (the lock is this call's) *fence > 0, else *fence is 0.
     * After E_UNAVAILABLE the lock may have been granted (release it with
     * its token). On a Redis Cluster, key's fence and data_key must share
     * key's slot (the session keys do). fence must not be NULL. */
    int (*set_nx_wait_get_fenced)(const char *key, size_t key_len,
                                  const char *value, size_t value_len,
                                  int64_t ttl_ms, int64_t wait_ms,
                                  const char *data_key, size_t data_key_len,
                                  char *buf, size_t buf_cap, size_t *len,
                                  int64_t *fence);

    /* set_fenced_release: store value under key, as set does, only while
     * fence is still the latest grant of lock (as set_fenced) and lock
     * holds no live entry other than token (a holder whose grant minted no
     * fence: set_nx, set_nx_wait, set_nx_wait_get), and then, if lock holds
     * token, del_if_eq of lock with token (waking a waiter, as every
     * release does): writing a session when nobody else was granted its
     * lock since this request's grant, even after the lock expired, and
     * releasing it, in one call; one atomic step where the backend has one
     * (a Redis script: one round trip), elsewhere the release follows the
     * write.
     *   OK         written (and lock released if it held token).
     *   MISS       fence is not lock's latest grant, or another holds
     *              lock; nothing changed.
     *   E_INVALID  fence <= 0, or on a Redis Cluster key and lock are in
     *              different slots.
     *   E_NOMEM    no room for value: as set_guarded_release.
     * After another failure both the write and the release are unknown. */
    int (*set_fenced_release)(const char *key, size_t key_len,
                              const char *value, size_t value_len, int64_t ttl_ms,
                              const char *lock, size_t lock_len, int64_t fence,
                              const char *token, size_t token_len);

    /* del_fenced_release: set_fenced_release that removes key instead of
     * writing it. OK: key holds no entry now (whether or not it held one
     * before), and lock is released if it held token; MISS, E_INVALID and
     * failures as set_fenced_release. For the session handler's destroy
     * and the removal of emptied data. */
    int (*del_fenced_release)(const char *key, size_t key_len,
                              const char *lock, size_t lock_len, int64_t fence,
                              const char *token, size_t token_len);

    /* ---- appended for read/write locks ---- */

    /* Read/write locks. A name is free, held exclusively, or held for
     * reading. Held exclusively, it holds the holder's token as a plain
     * entry, exactly as set_nx leaves it: get returns the token, and
     * set_nx, del_if_eq and expire_if_eq work on it. Held for reading, it
     * holds a reader record: bytes beginning with a NUL byte (no token
     * ephpm draws begins so) that list each reader's hold (its token and
     * its own deadline) and, while a writer waits for the readers to
     * leave, that writer's claim. get of a read-held name returns the
     * record's bytes; set_nx sees the name held, del_if_eq and expire_if_eq
     * see it unequal to any token; del removes every holder (the force
     * release). A lapsed hold or claim counts as absent. The entry is a
     * lock: never evicted, as set_nx's. Writers never starve: a waiting
     * writer's claim refuses new readers. Modes are EPHPM_KV_LOCK_*. */

    /* lock_acquire: take key in mode for token (1..EPHPM_KV_MAX_LOCK_TOKEN_LEN
     * bytes) with ttl_ms, retrying as set_nx_wait does for at most wait_ms,
     * and mint the grant's fence in the same atomic step (one sequence per
     * name with set_nx_wait_fenced: fence, set_fenced and del_fenced work
     * with it).
     *   EXCLUSIVE  granted when key holds no live entry, or only a waiting
     *              writer's claim; key then holds token as set_nx leaves it.
     *   SHARED     granted when key holds no live entry, or live read holds
     *              and no live claim; the call's hold has its own token and
     *              ttl_ms.
     * An EXCLUSIVE attempt refused by read holds leaves a claim (250 ms,
     * renewed by each attempt, never past wait_ms) that refuses new SHARED
     * attempts, so a stream of readers cannot starve the writer. Releases
     * wake waiters (oldest first); a SHARED grant wakes the next waiter
     * too, so a run of waiting readers enter in turn.
     *   OK         granted; *fence > 0.
     *   EXISTS     held against mode for the whole of wait_ms; *fence 0.
     *   E_INVALID  a bad token or mode, or token already holds key for
     *              reading.
     *   E_NOMEM    key has the most read holds a name keeps (10000; 1000
     *              on Redis, where each call's server time is linear in
     *              them and blocks the server), or
     *              the store has no room for the record.
     * A failure is never reported as EXISTS; after E_UNAVAILABLE the lock
     * may have been granted (release it with its token). fence must not
     * be NULL. */
    int (*lock_acquire)(const char *key, size_t key_len,
                        const char *token, size_t token_len,
                        int32_t mode, int64_t ttl_ms, int64_t wait_ms, int64_t *fence);

    /* lock_release: remove token's hold of key: the exclusive entry equal
     * to token (as del_if_eq), or token's read hold. OK if token held key;
     * MISS if not (nothing changed). A release that frees key, or leaves
     * only a waiting writer's claim, wakes waiters. */
    int (*lock_release)(const char *key, size_t key_len,
                        const char *token, size_t token_len);

    /* lock_refresh: token's hold of key (exclusive or read) lapses ttl_ms
     * from now (0: never); other holds keep theirs. OK; MISS if token
     * holds nothing (nothing changed). */
    int (*lock_refresh)(const char *key, size_t key_len,
                        const char *token, size_t token_len, int64_t ttl_ms);

    /* lock_info: who holds key.
     *   OK    *mode EXCLUSIVE and *holders 1 (any live entry that is not a
     *         reader record), or *mode SHARED and *holders the live read
     *         holds.
     *   MISS  free (no live entry, or only a waiting writer's claim):
     *         *mode EXCLUSIVE, *holders 0.
     * mode and holders must not be NULL. */
    int (*lock_info)(const char *key, size_t key_len, int32_t *mode, int64_t *holders);

    /* ---- appended for a lazy session write in one round trip ---- */

    /* expire_guarded_release: while guard_key holds a live entry equal to
     * guard_token, give key's live entry a new TTL of ttl_ms from now (0: no
     * expiry; its value is kept) and del_if_eq guard_key with guard_token
     * (waking a waiter, as every release does): refreshing an unchanged
     * session and releasing its lock in one call. One atomic step where the
     * backend has one (a Redis script: one round trip); elsewhere the
     * refresh follows the guard's check and the release the refresh, under
     * the lock the call holds.
     *   OK    refreshed, and the guard released.
     *   MISS  the guard did not hold, or key holds no live entry; nothing
     *         changed (the guard is still held if it was).
     * After a failure both the refresh and the release are unknown. */
    int (*expire_guarded_release)(const char *key, size_t key_len, int64_t ttl_ms,
                                  const char *guard_key, size_t guard_key_len,
                                  const char *guard_token, size_t guard_token_len);

    /* ---- appended for a segment removed under its processes ---- */

    /* begin_request: the consumer calls it as each request begins, in a
     * process that has the provider loaded (it never loads one for this).
     * A backend whose store can be taken away from under a running process
     * checks now: a shared-memory segment whose file was removed or
     * replaced (systemd-logind's RemoveIPC=yes removes a user's files in
     * /dev/shm when the user's last login session ends) answers this and
     * every later call of the process with E_UNAVAILABLE and nothing done,
     * last_error naming the cause and the fix, rather than answer from a
     * store the other processes no longer share (it also checks by itself,
     * at a call at most every 100 ms). OK otherwise, and at once on every
     * other backend. Changes nothing in the store. */
    int (*begin_request)(void);

    /* ---- appended for the status page (a key browser, the held locks) ---- */

    /* scan: one page of a walk of the store's live entries whose key begins
     * with prefix (0..EPHPM_KV_MAX_KEY_LEN bytes; empty: every key), with
     * flags EPHPM_KV_SCAN_LOCKS only the locks, as scan records in buf.
     * cursor is 0 to begin, else the *next of the page before; *next is
     * 0 once the walk is complete. count (1..EPHPM_KV_SCAN_MAX_COUNT) is
     * about how many records a page holds: fewer, even none, with the walk
     * not complete (a page visits a bounded part of the store), or more
     * (entries the walk cannot part, Redis's SCAN COUNT being a hint).
     *   OK         buf[0..*len) holds the page's records, *next the cursor.
     *   TOO_SMALL  *len is the length the page's records need, larger than
     *              buf_cap; nothing usable was written and *next is 0:
     *              call again with the same cursor and a larger buffer.
     *   E_INVALID  a bad prefix, count or flag, or a cursor no walk gave.
     * A walk is no snapshot: each entry is read at an instant of its own.
     * An entry live for the whole walk is in at least one page; one
     * written or removed during it may be or not, and one may be in two
     * (the shared-memory store: after a compaction; Redis: across a
     * rehash). It changes nothing (no LRU stamp, no counter; an expired
     * entry it meets is left for the store's own sweep). A shared-memory
     * segment with a damaged shard walks past it, saying so in a record of
     * kind EPHPM_KV_SCAN_SKIPPED: the walk is then not the store's whole
     * content, and a caller that shows or counts keys must say so. A
     * Redis Cluster is walked master by master; the cursor's top byte is
     * the master's place, its next 16 bits a hash of the masters'
     * addresses: a page of a walk whose masters changed since it began (a
     * failover, a master added or removed) is E_UNAVAILABLE, last_error
     * beginning with EPHPM_KV_NOTHING_DONE (begin again from cursor 0),
     * never a walk that skips a master. len and next must not be NULL. */
    int (*scan)(const char *prefix, size_t prefix_len, uint64_t cursor, size_t count,
                int32_t flags, char *buf, size_t buf_cap, size_t *len, uint64_t *next);

    /* ---- appended for one general member: a combination needs no new one ---- */

    /* step: one atomic step as *req asks (see ephpm_kv_step: its answers,
     * outputs and failures); the members that fuse a lock with a read or a
     * write are each one step. req must not be NULL and req->struct_size
     * must reach at least to reserved (this header's first ephpm_kv_step). */
    int (*step)(ephpm_kv_step *req);

    /* Members appended by later versions go here, and only here: this
     * struct is the one list of members that bridge/members.c is generated
     * from (docs/design.md, "To append a member"). */
} ephpm_kv_ops;

/* The size of the first table (the five members above). A consumer refuses
 * a table smaller than this (ABI rule 3). */
#define EPHPM_KV_OPS_V1_SIZE \
    (offsetof(ephpm_kv_ops, del_if_eq) + sizeof(((ephpm_kv_ops *)0)->del_if_eq))

/* True if the provider's table has member (its struct_size reaches past it). */
#define EPHPM_KV_OPS_HAS(ops, member) \
    ((ops)->struct_size >= offsetof(ephpm_kv_ops, member) + sizeof((ops)->member) \
     && (ops)->member != NULL)

/* The exported getter. It never fails and may be called before the
 * provider's runtime has finished starting (calls through the table wait). */
typedef const ephpm_kv_ops *(*ephpm_kv_get_ops_fn)(void);
const ephpm_kv_ops *ephpm_kv_get_ops(void);

#ifdef __cplusplus
}
#endif

#endif /* EPHPM_KV_H */
