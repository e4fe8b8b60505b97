<?php
// Counts this request into the store and says which store served it.
// With ?hold=PATH it first makes PATH.started and waits (its server
// process busy, accepting nothing) until the file PATH exists: a client
// holds one server process with it, so that its other requests go to the
// others. The wait's bound is a hang catch.
if (isset($_GET['hold'])) {
    touch($_GET['hold'] . '.started');
    for ($end = microtime(true) + 120; !file_exists($_GET['hold']) && microtime(true) < $end; ) {
        usleep(10_000);
    }
}
echo ephpm_kv_incr('www:count'), ' ', getmypid(), ' ', ephpm_kv_stats()['store'];
