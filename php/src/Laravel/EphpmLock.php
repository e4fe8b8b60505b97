<?php

declare(strict_types=1);

namespace Ephpm\Laravel;

use Illuminate\Cache\Lock;
use Illuminate\Contracts\Cache\LockTimeoutException;

/**
 * A Laravel atomic lock on ephpm. The owner is the token: acquiring is
 * ephpm_kv_setnx() with the TTL in the same step, releasing is
 * ephpm_kv_del_if_eq(), one step on the store, so a late release can never
 * remove a lock someone else took after this one expired. block() waits
 * inside the library, woken by the release.
 */
class EphpmLock extends Lock
{
    public function acquire(): bool
    {
        return ephpm_kv_setnx($this->name, $this->owner, max(0, (int) $this->seconds));
    }

    public function release(): bool
    {
        return ephpm_kv_del_if_eq($this->name, $this->owner);
    }

    public function forceRelease(): void
    {
        ephpm_kv_del($this->name);
    }

    /** The owner holding the lock now, null if it is free. */
    protected function getCurrentOwner(): ?string
    {
        return ephpm_kv_get($this->name);
    }

    /**
     * Gives the lock a new TTL of $seconds (its own TTL if null; 0: none)
     * from now, only while this owner holds it: one step on the store.
     */
    public function refresh($seconds = null): bool
    {
        return ephpm_kv_expire_if_eq($this->name, $this->owner, max(0, (int) ($seconds ?? $this->seconds)));
    }

    /**
     * @param int $seconds how long to wait
     * @param callable|null $callback run while holding the lock
     * @return mixed true, or what $callback returned
     * @throws LockTimeoutException when the lock is not had in time
     */
    public function block($seconds, $callback = null)
    {
        // A lock without a TTL has none in the store either; ephpm_kv_lock
        // insists on one, and on an owner of at most 255 bytes (what a read
        // hold keeps), so take it the plain way then.
        if ($this->seconds <= 0 || \strlen($this->owner) > 255) {
            return parent::block($seconds, $callback);
        }
        if (ephpm_kv_lock($this->name, (int) $this->seconds, (float) $seconds, $this->owner) === false) {
            throw new LockTimeoutException();
        }
        if (!\is_callable($callback)) {
            return true;
        }
        try {
            return $callback();
        } finally {
            $this->release();
        }
    }
}
