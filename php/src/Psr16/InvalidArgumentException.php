<?php

declare(strict_types=1);

namespace Ephpm\Psr16;

/** A key or TTL that PSR-16 does not allow. */
final class InvalidArgumentException extends \InvalidArgumentException implements \Psr\SimpleCache\InvalidArgumentException
{
}
