<?php

/**
 * The documented signatures of the ephpm extension. ephpm_arginfo.h carries
 * the same types for the engine; keep the two in step.
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
}

namespace Ephpm {
    /** A runtime failure of the store; the code says which. */
    class KvException extends \RuntimeException
    {
        /** The store has no room; the old value is kept. */
        public const OUT_OF_MEMORY = 1;
        /** The outcome is unknown (backend unreachable, timed out). */
        public const UNAVAILABLE = 2;
        /** The provider rejected an argument. */
        public const INVALID_ARGUMENT = 3;
        /** This process was forked after the library was loaded. */
        public const FORKED = 4;
        /** The library could not be loaded. */
        public const NOT_LOADED = 5;
        /** The loaded library is too old for this function. */
        public const UNSUPPORTED = 6;
    }
}
