<?php
// One of the processes bench/lock_handoff.sh runs side by side: ROUNDS
// times it takes the lock (ephpm_kv_lock on the store ephpm.kv_backend
// names, bound to the process with MODE "bound", or flock(2) on FILE with
// MODE "flock"), holds it HOLD_US microseconds, releases it and pauses up
// to 200 µs (the others line up meanwhile). It writes one line per hold:
// hrtime(true) after the grant and before the release; the runner reads a
// hand-off as the time from one holder's release call to the next
// holder's grant (hrtime is one monotonic clock for every process).
//
// Usage: php lock_handoff.php MODE ROUNDS HOLD_US OUT [FILE]
[, $mode, $rounds, $hold, $out] = $argv;
$file = $argv[5] ?? null;
$f = $mode === 'flock' ? fopen($file, 'c') : null;
$log = '';
for ($i = 0; $i < (int)$rounds; $i++) {
    if ($f !== null) {
        flock($f, LOCK_EX);
    } else {
        $token = ephpm_kv_lock('bench:handoff', 30, 30.0, null, $fence, $mode === 'bound');
        if ($token === false) {
            fwrite(STDERR, "lock_handoff: the lock was not granted within 30 s\n");
            exit(1);
        }
    }
    $granted = hrtime(true);
    usleep((int)$hold);
    $releasing = hrtime(true);
    if ($f !== null) {
        flock($f, LOCK_UN);
    } else {
        ephpm_kv_unlock('bench:handoff', $token);
    }
    $log .= "$granted $releasing\n";
    usleep(random_int(0, 200));
}
file_put_contents($out, $log);
