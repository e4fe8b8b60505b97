<?php

/**
 * The documented signatures of the ephpm extension: the one place they are
 * written. ephpm_arginfo.h is generated from it (php -n
 * php-ext/gen_arginfo.php); each class constant's C value is its @cvalue,
 * the negated ephpm_kv_status of include/ephpm_kv.h.
 *
 * TTLs are whole seconds, 0 = no expiry, at most 2147483647.
 * Keys are 1..4096 bytes and binary-safe; values are at most 256 MiB.
 * A bad argument throws ValueError or TypeError and changes nothing; a
 * failure of the store throws Ephpm\KvException.
 *
 * @generate-class-entries
 */

namespace {
    /** The value of a live entry, or null if there is none. */
    function ephpm_kv_get(string $key): ?string {}

    /** Stores the value, replacing any entry. Always true; failures throw. */
    function ephpm_kv_set(string $key, string $value, int $ttl = 0): bool {}

    /** Stores the value only if the key is free; true only if this call did. */
    function ephpm_kv_setnx(string $key, string $value, int $ttl = 0): bool {}

    /** Removes the key; the number of live entries removed (0 or 1). */
    function ephpm_kv_del(string $key): int {}

    /** Removes the key only while it holds exactly $token; true if it did. */
    function ephpm_kv_del_if_eq(string $key, string $token): bool {}

    /** Whether the key holds a live entry. */
    function ephpm_kv_exists(string $key): bool {}

    /** Seconds left (rounded), -1 if the entry has no expiry, -2 if there is none. */
    function ephpm_kv_ttl(string $key): int {}

    /** Milliseconds left, -1 if the entry has no expiry, -2 if there is none. */
    function ephpm_kv_pttl(string $key): int {}

    /** Gives a live entry a new TTL from now (0: no expiry); false if there is none. */
    function ephpm_kv_expire(string $key, int $ttl): bool {}

    /** ephpm_kv_expire() only while the key holds exactly $token: refreshes a held lock. */
    function ephpm_kv_expire_if_eq(string $key, string $token, int $ttl): bool {}

    /** Adds $by atomically and returns the sum; a missing key starts at 0 with $ttl. */
    function ephpm_kv_incr(string $key, int $by = 1, int $ttl = 0): int {}

    /** Subtracts $by atomically and returns the result. */
    function ephpm_kv_decr(string $key, int $by = 1, int $ttl = 0): int {}

    /** Adds $delta atomically and returns the sum. */
    function ephpm_kv_incr_by(string $key, int $delta, int $ttl = 0): int {}

    /** Removes every entry of the store. */
    function ephpm_kv_flush_all(): bool {}

    /** The store's figures: keys, memory, hits, evictions, lock outcomes, instance id. */
    function ephpm_kv_stats(): array {}

    /**
     * Takes the lock $name exclusively for $ttl seconds (at least 1), waiting
     * up to $wait seconds with backoff (woken by the release), and returns its
     * token, or false if another holder kept it for the whole wait. The token
     * is 32 hex digits of 128 fresh bits from PHP's CSPRNG, or $token when
     * given (a framework's lock owner, 1 to 255 bytes, which must be
     * unguessable and fresh per acquisition). While it waits for readers
     * (ephpm_kv_lock_read) to leave, it keeps new readers out.
     * Every grant mints a fencing token, set in $fence (0 when not granted):
     * larger than that of every earlier grant of $name, never reset.
     * With $bound, the lock lasts no longer than this process: if it dies
     * (killed, crashed) the lock lapses at once on a shared-memory segment
     * and within a lease (lock_lease, 2 s by default) on Redis, instead of
     * at its TTL; while it waits it keeps no new readers out. Leave $bound
     * off for a lock that another process releases or takes over with its
     * token.
     */
    function ephpm_kv_lock(string $name, int $ttl, float $wait = 0.0, ?string $token = null, ?int &$fence = null, bool $bound = false): string|false {}

    /**
     * Takes the lock $name for reading, as ephpm_kv_lock() takes it for
     * writing: any number of readers share it, each with its own token and
     * $ttl; a writer waits until every reader has left, and a waiting writer
     * keeps new readers out. Returns the hold's token, or false if a writer
     * held or claimed it for the whole wait. Release it with
     * ephpm_kv_unlock(), refresh it with ephpm_kv_lock_refresh().
     */
    function ephpm_kv_lock_read(string $name, int $ttl, float $wait = 0.0, ?string $token = null, ?int &$fence = null): string|false {}

    /**
     * Makes the hold of $token on the lock $name (exclusive or read) last
     * $ttl seconds (at least 1) from now; false if $token holds nothing.
     */
    function ephpm_kv_lock_refresh(string $name, string $token, int $ttl): bool {}

    /**
     * Who holds the lock $name: null when free, else ['mode' => 'exclusive'
     * or 'shared', 'holders' => 1 or the number of readers].
     */
    function ephpm_kv_lock_info(string $name): ?array {}

    /** Releases every holder of the lock $name (a force release); true if it was held. */
    function ephpm_kv_lock_release_all(string $name): bool {}

    /** The latest fencing token granted for the lock $name; 0 if none was. */
    function ephpm_kv_fence(string $name): int {}

    /**
     * Stores the value only while $fence is still the latest grant of the
     * lock $lock (nobody was granted it since), in one atomic step; true if
     * it did. On a Redis Cluster $key and $lock must share a hash tag.
     */
    function ephpm_kv_set_fenced(string $key, string $value, string $lock, int $fence, int $ttl = 0): bool {}

    /** Releases the hold of $token on the lock $name (exclusive or read); true if it held it. */
    function ephpm_kv_unlock(string $name, string $token): bool {}

    /**
     * The values of the live entries among $keys (strings or integers), as
     * key => value in the order of $keys; a key without one is absent from
     * the result, as apcu_fetch(array) does. One call into the store: each
     * key is read atomically on its own, the batch is no snapshot.
     */
    function ephpm_kv_get_many(array $keys): array {}

    /**
     * Stores every key => value of $values (string values) with $ttl, in
     * order, each atomically on its own; true. Every key and value is checked
     * first: a bad one throws ValueError or TypeError and writes nothing. A
     * failure throws Ephpm\KvException saying how many entries were stored
     * before the one that failed and naming that key.
     */
    function ephpm_kv_set_many(array $values, int $ttl = 0): bool {}

    /**
     * One page of a walk of the store's live entries whose key begins with
     * $prefix (only the locks with $locks_only), as a list of
     * ['key' => string, 'kind' => 'value'|'lock'|'lock_shared'|'session'|
     * 'skipped', 'size' => bytes (-1: unknown), 'pttl' => ms left (-1:
     * none), 'holders' => 1 or the read holds of a lock (0 otherwise),
     * 'waiters' => ?int (null: unknown), 'holder_pid' => ?int]. $cursor is
     * null or 0 to begin and is set to the next page's cursor, 0 once the
     * walk is done: do { ... } while ($cursor !== 0). $count (1..100000)
     * is about how many a page holds: a page may hold fewer, even none,
     * before the walk is done. An entry live for the whole walk is in at
     * least one page; the walk is no snapshot. A 'skipped' record names,
     * in its 'key', a damaged part of the store the walk left out.
     */
    function ephpm_kv_scan(string $prefix = '', ?int &$cursor = null, int $count = 100, bool $locks_only = false): array {}

    /**
     * The value of $key; on a miss, exactly one caller among all processes
     * sharing the store runs $compute (holding a lock on the key, for $wait
     * and at least 1 s), stores its string with $ttl and returns it, while
     * the others wait up to $wait seconds, woken when it is stored. An
     * exception of $compute reaches its caller, and the next waiter computes.
     * A wait that runs out throws Ephpm\KvException (code 0). A nested call for
     * a key an enclosing call is computing throws ValueError.
     */
    function ephpm_kv_remember(string $key, int $ttl, callable $compute, float $wait = 10.0): string {}
}

namespace Ephpm {
    /** A runtime failure of the store; the code says which. */
    class KvException extends \RuntimeException
    {
        /** The store has no room; the old value is kept. @cvalue -EPHPM_KV_E_NOMEM */
        public const OUT_OF_MEMORY = 1;
        /** The outcome is unknown (backend unreachable, timed out). @cvalue -EPHPM_KV_E_UNAVAILABLE */
        public const UNAVAILABLE = 2;
        /** The provider rejected an argument. @cvalue -EPHPM_KV_E_INVALID */
        public const INVALID_ARGUMENT = 3;
        /** This process was forked after the library was loaded. @cvalue -EPHPM_KV_E_FORKED */
        public const FORKED = 4;
        /** The library could not be loaded. @cvalue -EPHPM_KV_E_NOT_LOADED */
        public const NOT_LOADED = 5;
        /** The loaded library is too old for this function. @cvalue -EPHPM_KV_E_UNSUPPORTED */
        public const UNSUPPORTED = 6;
        /** The stored value is not an integer (ephpm_kv_incr and kin). @cvalue -EPHPM_KV_E_NOT_INTEGER */
        public const NOT_INTEGER = 7;
        /** The counter would overflow a 64-bit integer. @cvalue -EPHPM_KV_E_OVERFLOW */
        public const OVERFLOW = 8;
    }
}
