<?php

declare(strict_types=1);

namespace Ephpm\Psr16;

use DateInterval;
use DateTimeImmutable;
use Psr\SimpleCache\CacheInterface;

/**
 * A PSR-16 cache on ephpm. Keys follow the PSR's rules (non-empty strings
 * without {}()/\@:), values are serialized (so false, null and 0 survive),
 * a null TTL means no expiry and a TTL of 0 or less deletes the entry.
 *
 * One class for psr/simple-cache 1, 2 and 3: the parameters are untyped
 * (wider than 2's and 3's types, as PHP allows), the return types are 3's
 * (narrower than 1's and 2's none, as PHP allows). Arguments of the wrong
 * type are refused with the PSR's InvalidArgumentException.
 */
final class EphpmCache implements CacheInterface
{
    private const RESERVED = '{}()/\@:';

    public function __construct(private string $prefix = '')
    {
    }

    public function get($key, $default = null): mixed
    {
        $value = ephpm_kv_get($this->key($key));
        return $value === null ? $default : unserialize($value);
    }

    public function set($key, $value, $ttl = null): bool
    {
        $k = $this->key($key);
        $seconds = $this->seconds($ttl);
        if ($seconds !== null && $seconds <= 0) {
            ephpm_kv_del($k);
            return true;
        }
        // Longer than the store keeps anything with a TTL: keep it forever.
        return ephpm_kv_set($k, serialize($value), $seconds === null || $seconds > 2147483647 ? 0 : $seconds);
    }

    public function delete($key): bool
    {
        ephpm_kv_del($this->key($key));
        return true;
    }

    public function clear(): bool
    {
        return ephpm_kv_flush_all();
    }

    /**
     * One call into the store (ephpm_kv_get_many) for all the keys. The
     * keys come back as the caller gave them, strings: in an array, or,
     * when one of them is a string a PHP array makes an integer ("123"),
     * in a Generator, which yields it as the string.
     */
    public function getMultiple($keys, $default = null): iterable
    {
        $keys = $this->keys($keys);
        $found = ephpm_kv_get_many(array_map(fn (string $key): string => $this->prefix . $key, $keys));
        $values = [];
        foreach ($keys as $key) {
            $value = $found[$this->prefix . $key] ?? null;
            $values[$key] = $value === null ? $default : unserialize($value);
        }
        foreach ($values as $key => $_) {
            if (\is_int($key)) {
                return self::withStringKeys($values);
            }
        }
        return $values;
    }

    /**
     * One call into the store (ephpm_kv_set_many) for all the entries, after
     * every key has been checked: a bad key throws and writes nothing. Each
     * entry is written atomically on its own; a failure throws
     * Ephpm\KvException naming the entry that was not stored.
     */
    public function setMultiple($values, $ttl = null): bool
    {
        if (!is_iterable($values)) {
            throw new InvalidArgumentException('Values must be an array or Traversable.');
        }
        $seconds = $this->seconds($ttl);
        $batch = [];
        foreach ($values as $key => $value) {
            $batch[$this->key(\is_int($key) ? (string) $key : $key)] = serialize($value);
        }
        if ($seconds !== null && $seconds <= 0) {
            foreach ($batch as $k => $_) {
                ephpm_kv_del((string) $k);
            }
            return true;
        }
        return ephpm_kv_set_many($batch, $seconds === null || $seconds > 2147483647 ? 0 : $seconds);
    }

    public function deleteMultiple($keys): bool
    {
        foreach ($this->keys($keys) as $key) {
            $this->delete($key);
        }
        return true;
    }

    public function has($key): bool
    {
        return ephpm_kv_exists($this->key($key));
    }

    /** $values with each integer key yielded as the string it was made of. */
    private static function withStringKeys(array $values): \Generator
    {
        foreach ($values as $key => $value) {
            yield (string) $key => $value;
        }
    }

    private function key(mixed $key): string
    {
        if (!\is_string($key) || $key === '' || strpbrk($key, self::RESERVED) !== false) {
            throw new InvalidArgumentException(sprintf('Cache key must be a non-empty string without any of %s, %s given.',
                self::RESERVED, \is_string($key) ? '"' . $key . '"' : get_debug_type($key)));
        }
        return $this->prefix . $key;
    }

    /** @return list<string> */
    private function keys(mixed $keys): array
    {
        if (!is_iterable($keys)) {
            throw new InvalidArgumentException('Keys must be an array or Traversable.');
        }
        $list = [];
        foreach ($keys as $key) {
            $this->key($key);
            $list[] = $key;
        }
        return $list;
    }

    private function seconds(mixed $ttl): ?int
    {
        if ($ttl === null) {
            return null;
        }
        if ($ttl instanceof DateInterval) {
            $now = new DateTimeImmutable();
            return $now->add($ttl)->getTimestamp() - $now->getTimestamp();
        }
        if (\is_int($ttl)) {
            return $ttl;
        }
        throw new InvalidArgumentException(sprintf('TTL must be null, an int or a DateInterval, %s given.', get_debug_type($ttl)));
    }
}
