<?php

declare(strict_types=1);

use Ephpm\Psr16\EphpmCache;
use PHPUnit\Framework\TestCase;
use Psr\SimpleCache\InvalidArgumentException;

final class Psr16Test extends TestCase
{
    private EphpmCache $cache;

    protected function setUp(): void
    {
        $this->cache = new EphpmCache('psr:' . bin2hex(random_bytes(4)) . '.');
    }

    public function testValuesRoundTripIncludingFalsyOnes(): void
    {
        foreach (['s' => 'str', 'i' => 0, 'f' => 1.5, 'n' => null, 'b' => false, 'a' => [1, ['x' => true]]] as $k => $v) {
            $this->assertTrue($this->cache->set($k, $v));
            $this->assertSame($v, $this->cache->get($k, 'default'), $k);
            $this->assertTrue($this->cache->has($k));
        }
        $this->assertSame('default', $this->cache->get('missing', 'default'));
        $this->assertFalse($this->cache->has('missing'));
    }

    /**
     * Sets $key with $ttl and asserts the store's TTL (whole seconds,
     * rounded) is $seconds, less what this host took since (measured, not
     * bounded: a loaded host may take more than the half second rounding
     * hides).
     */
    private function assertTtlSet(string $key, int|DateInterval $ttl, int $seconds): void
    {
        $start = hrtime(true);
        $this->cache->set($key, 1, $ttl);
        $left = ephpm_kv_ttl($this->prefixed($key));
        $took = (hrtime(true) - $start) / 1e9 + 0.01;     // + the coarse clocks' lag
        $this->assertLessThanOrEqual($seconds, $left, $key);
        $this->assertGreaterThanOrEqual($seconds - (int) ceil($took), $left, "$key, $took s after the set");
    }

    public function testTtlSemantics(): void
    {
        $this->cache->set('forever', 1, null);
        $this->assertSame(-1, ephpm_kv_ttl($this->prefixed('forever')));
        $this->assertTtlSet('int', 100, 100);
        $this->assertTtlSet('interval', new DateInterval('PT2M'), 120);
        $this->cache->set('gone', 1);
        $this->assertTrue($this->cache->set('gone', 2, 0), 'a TTL of 0 deletes');
        $this->assertFalse($this->cache->has('gone'));
        $this->cache->set('gone', 1);
        $this->cache->set('gone', 2, new DateInterval('PT0S'));
        $this->assertFalse($this->cache->has('gone'));
        $this->cache->set('short', 1, 1);
        usleep(1_100_000);
        $this->assertFalse($this->cache->has('short'));
    }

    public function testMultiple(): void
    {
        $this->assertTrue($this->cache->setMultiple(['a' => 1, 'b' => 2]));
        $this->assertSame(['a' => 1, 'b' => 2, 'c' => 'd'], $this->cache->getMultiple(['a', 'b', 'c'], 'd'));
        $this->assertTrue($this->cache->deleteMultiple(new ArrayIterator(['a', 'b'])));
        $this->assertSame(['a' => null], $this->cache->getMultiple(['a']));
    }

    public function testMultipleInOneBatch(): void
    {
        $values = ['m1' => false, 'm2' => null, '3' => ['x' => 1], 'm4' => 0.5];
        $this->assertTrue($this->cache->setMultiple(new ArrayIterator($values), 60));
        $this->assertSame([['m1', false], ['m2', null], ['3', ['x' => 1]], ['m4', 0.5], ['none', 'd']],
            $this->pairs($this->cache->getMultiple(['m1', 'm2', '3', 'm4', 'none'], 'd')));
        $this->assertGreaterThan(50, ephpm_kv_ttl($this->prefixed('m1')), 'the TTL applies to every entry');
        try {
            $this->cache->setMultiple(['m5' => 1, 'bad:key' => 2]);
            $this->fail('a bad key accepted');
        } catch (InvalidArgumentException) {
            $this->assertFalse($this->cache->has('m5'), 'a bad key writes nothing');
        }
        $this->assertTrue($this->cache->setMultiple(['m1' => 1, 'm4' => 2], 0));
        $this->assertFalse($this->cache->has('m1'), 'a TTL of 0 deletes');
        $this->assertFalse($this->cache->has('m4'));
    }

    /**
     * getMultiple() gives every key back as the caller gave it, a string,
     * even one that a PHP array would make an integer ('123'), and get(),
     * has() and delete() take what it gives.
     */
    public function testGetMultipleGivesTheCallersKeys(): void
    {
        $this->assertTrue($this->cache->setMultiple(['123' => 'a', '0' => 'z', 'k' => 'b']));
        $got = $this->pairs($this->cache->getMultiple(['123', '0', 'k', '-7', '123'], 'd'));
        $this->assertSame([['123', 'a'], ['0', 'z'], ['k', 'b'], ['-7', 'd']], $got);
        foreach ($this->cache->getMultiple(['123', '0', 'k', '-7']) as $key => $value) {
            $this->assertSame($value, $this->cache->get($key), "get($key)");
            $this->assertSame($value !== null, $this->cache->has($key), "has($key)");
            $this->assertTrue($this->cache->delete($key), "delete($key)");
            $this->assertFalse($this->cache->has($key));
        }
        $this->assertSame(['k' => null], $this->cache->getMultiple(['k']), 'keys a PHP array keeps as strings: an array, as before');
    }

    /** What getMultiple() gave, as [key, value] pairs in order. */
    private function pairs(iterable $values): array
    {
        $pairs = [];
        foreach ($values as $key => $value) {
            $pairs[] = [$key, $value];
        }

        return $pairs;
    }

    public function testKeyRules(): void
    {
        foreach (['', 'a{b', 'a}b', 'a(b', 'a)b', 'a/b', 'a\\b', 'a@b', 'a:b'] as $bad) {
            try {
                $this->cache->get($bad);
                $this->fail("key \"$bad\" accepted");
            } catch (InvalidArgumentException) {
                $this->addToAssertionCount(1);
            }
        }
        $this->expectException(InvalidArgumentException::class);
        $this->cache->getMultiple('not iterable');
    }

    private function prefixed(string $key): string
    {
        return (fn () => $this->prefix)->call($this->cache) . $key;
    }
}
