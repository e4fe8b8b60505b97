<?php
/*
 * ns per operation of each function in $fs (name => function (int $n) that
 * performs the operation $n times, or null), measured side by side:
 * $rounds rounds, each timing every function in turn, so that a slow spell
 * of a shared machine falls on all of them alike instead of on whichever
 * ran then. 'best' keeps each function's fastest round (in-process work,
 * where noise only adds); 'median' its median round (round trips, whose
 * spread is part of the cost).
 *
 * The loop is inside each function, so a figure is the operation plus a
 * loop step, not a closure call per operation, which costs several times
 * more (docs/measurements.md, "Figures moved out of code comments").
 */
function measure_all(array $fs, int $n, int $rounds = 5, string $stat = 'best'): array
{
    $runs = array_map(fn () => [], array_filter($fs));
    for ($r = 0; $r < $rounds; $r++) {
        foreach ($runs as $name => $_) {
            $t = hrtime(true);
            $fs[$name]($n);
            $runs[$name][] = (hrtime(true) - $t) / $n;
        }
    }
    $out = array_map(fn () => null, $fs);
    foreach ($runs as $name => $ns) {
        sort($ns);
        $out[$name] = $stat === 'median' ? $ns[intdiv(count($ns), 2)] : $ns[0];
    }
    return $out;
}

/*
 * $op repeated $n times, for measure_all: one closure call per operation,
 * which is noise next to a network round trip.
 */
function looped(?callable $op): ?Closure
{
    return $op === null ? null : function (int $n) use ($op) {
        for ($i = 0; $i < $n; $i++) {
            $op();
        }
    };
}
