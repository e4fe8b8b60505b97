<?php
/* ns per call of $f: the best of 3 runs of $n calls each. */
function measure(callable $f, int $n): float
{
    $best = INF;
    for ($r = 0; $r < 3; $r++) {
        $t = hrtime(true);
        for ($i = 0; $i < $n; $i++) {
            $f();
        }
        $best = min($best, (hrtime(true) - $t) / $n);
    }
    return $best;
}
