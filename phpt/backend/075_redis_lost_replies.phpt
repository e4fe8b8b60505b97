--TEST--
Redis backend, replies that do not come (CLIENT PAUSE beyond read_timeout): every call throws UNAVAILABLE, ephpm_kv_set_many() does not claim the entry was not stored, and the next call after the pause works
--EXTENSIONS--
ephpm
--SKIPIF--
<?php if (!is_executable(trim((string) shell_exec('command -v redis-server')))) die('skip redis-server not installed'); ?>
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
require __DIR__ . '/../inc/redis.inc';
$port = ephpm_redis_server();

// The child pauses the server's writes over a connection of its own, so a
// write's reply cannot come within its read_timeout, then ends the pause
// (CLIENT UNPAUSE). The pause is 10 minutes, a hang catch: a pause that
// ran out by itself could end before a slow host even sent the call.
$code = <<<'PHP'
    $admin = stream_socket_client('tcp://' . $argv[1]);
    $pause = function () use ($admin): void {
        fwrite($admin, "*4\r\n$6\r\nCLIENT\r\n$5\r\nPAUSE\r\n$6\r\n600000\r\n$5\r\nWRITE\r\n");
        fgets($admin);
    };
    $unpause = function () use ($admin): void {
        fwrite($admin, "*2\r\n$6\r\nCLIENT\r\n$7\r\nUNPAUSE\r\n");
        fgets($admin);
    };
    // A call outside the pause has its reply within 200 ms on a quick host,
    // not on every host (valgrind, a loaded machine): it is tried again
    // until it is answered; 600 tries is a hang catch.
    $answered = function (callable $call) {
        for ($try = 1; ; $try++) {
            try {
                return $call();
            } catch (Ephpm\KvException $e) {
                if ($e->getCode() !== Ephpm\KvException::UNAVAILABLE || $try >= 600) {
                    throw $e;
                }
            }
        }
    };
    $answered(fn() => ephpm_kv_set('t75:warm', '1'));
    $calls = [
        'set'       => fn() => ephpm_kv_set('t75:a', 'x'),
        'setnx'     => fn() => ephpm_kv_setnx('t75:nx', 'x', 10),
        'lock'      => fn() => ephpm_kv_lock('t75:l', 10, 0.5),
        'incr'      => fn() => ephpm_kv_incr('t75:n'),
        'set_many'  => fn() => ephpm_kv_set_many(['t75:m1' => 'a', 't75:m2' => 'b']),
    ];
    foreach ($calls as $name => $call) {
        $pause();
        try {
            var_dump($call());
        } catch (Ephpm\KvException $e) {
            echo $name, ': ', $e->getCode() === Ephpm\KvException::UNAVAILABLE ? 'UNAVAILABLE' : $e->getCode(), ': ', $e->getMessage(), "\n";
        }
        $unpause();
    }
    var_dump($answered(fn() => ephpm_kv_get('t75:warm')));
    PHP;
echo ephpm_child('$argv = [0, ' . var_export("127.0.0.1:$port", true) . ']; ' . $code,
    ['ephpm.kv_backend' => "\"redis://127.0.0.1:$port?read_timeout=200ms\""]);
?>
--EXPECTF--
set: UNAVAILABLE: ephpm_kv_set(): the store is unavailable; the outcome is unknown (%si/o timeout)
setnx: UNAVAILABLE: ephpm_kv_setnx(): the store is unavailable; the outcome is unknown (%si/o timeout)
lock: UNAVAILABLE: ephpm_kv_lock(): the store is unavailable; the outcome is unknown (%si/o timeout)
incr: UNAVAILABLE: ephpm_kv_incr(): the store is unavailable; the outcome is unknown (%si/o timeout)
set_many: UNAVAILABLE: ephpm_kv_set_many(): the outcome of entry 1 of 2 and of those after it is unknown, the 0 before it were stored: the store is unavailable; the outcome is unknown (key "t75:m1": %si/o timeout)
string(1) "1"
