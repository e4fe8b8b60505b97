--TEST--
a signal PHP blocked (pcntl_sigprocmask) is never taken by the library's threads: it waits for pcntl_sigwaitinfo
--EXTENSIONS--
ephpm
pcntl
--FILE--
<?php
ephpm_kv_set('sig', 'loaded');                     // the library and its threads are up
var_dump(count(glob('/proc/self/task/*')) > 1);
pcntl_sigprocmask(SIG_BLOCK, [SIGHUP, SIGTERM, SIGUSR1]);
$me = getmypid();
foreach ([SIGHUP, SIGTERM, SIGUSR1] as $sig) {
    for ($i = 0; $i < 20; $i++) {
        // Sent by another process while this thread does not wait for it:
        // a thread that does not block it would take it and die of it.
        exec("kill -$sig $me");
        $info = [];
        $got = pcntl_sigwaitinfo([$sig], $info);
        if ($got !== $sig) {
            echo "signal $sig: got ", var_export($got, true), "\n";
        }
    }
}
// Threads started later by the library (a blocked wait) keep the block too.
ephpm_kv_setnx('sig:lock', 'x', 10);
ephpm_kv_lock('sig:lock', 10, 0.2);
exec("kill -HUP $me");
var_dump(pcntl_sigwaitinfo([SIGHUP]) === SIGHUP);
var_dump(ephpm_kv_get('sig'));
?>
--EXPECT--
bool(true)
bool(true)
string(6) "loaded"
