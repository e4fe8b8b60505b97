<?php
/*
 * ns per call of each function in $fs (name => callable or null), measured
 * side by side: $rounds rounds, each timing $n calls of every function in
 * turn, so that a slow spell of a shared machine falls on all of them
 * alike instead of on whichever ran then. 'best' keeps each function's
 * fastest round (in-process work, where noise only adds); 'median' its
 * median round (round trips, whose spread is part of the cost).
 */
function measure_all(array $fs, int $n, int $rounds = 5, string $stat = 'best'): array
{
    $runs = array_map(fn () => [], array_filter($fs));
    for ($r = 0; $r < $rounds; $r++) {
        foreach ($runs as $name => $_) {
            $f = $fs[$name];
            $t = hrtime(true);
            for ($i = 0; $i < $n; $i++) {
                $f();
            }
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
