<?php

declare(strict_types=1);

namespace Ephpm\Laravel;

use Illuminate\Contracts\Cache\CanFlushLocks;

// Laravel 12 added CanFlushLocks; before it the store implements nothing
// more, so one EphpmStore serves Laravel 8 to 13.
if (interface_exists(CanFlushLocks::class)) {
    /** @internal the CanFlushLocks of the Laravel that is installed */
    interface LockFlushing extends CanFlushLocks
    {
    }
} else {
    /** @internal empty: this Laravel has no CanFlushLocks */
    interface LockFlushing
    {
    }
}
