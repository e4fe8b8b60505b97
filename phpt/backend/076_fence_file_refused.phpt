--TEST--
shared-memory store whose fence file cannot be made: the fenced calls fail with UNAVAILABLE saying that nothing was written or granted (not that the outcome is unknown), and work once it can
--EXTENSIONS--
ephpm
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
// A segment of this test's own, with a directory where its fence file goes.
$name = 't76-' . getmypid();
$segment = "/dev/shm/ephpm-$name." . (int) trim(shell_exec('id -u'));
$fences = "$segment.fences1";
@rmdir($fences);
mkdir($fences, 0700);
$code = <<<'PHP'
    foreach (['ephpm_kv_lock' => ['t76:lock', 60], 'ephpm_kv_fence' => ['t76:lock']] as $f => $args) {
        try { var_dump($f(...$args)); } catch (Ephpm\KvException $e) {
            echo $e->getCode() === Ephpm\KvException::UNAVAILABLE ? 'UNAVAILABLE' : $e->getCode(), ': ', $e->getMessage(), "\n";
        }
    }
    var_dump(ephpm_kv_exists('t76:lock'));
    PHP;
echo ephpm_child($code, ['ephpm.kv_backend' => "shm://$name"]);
echo "-- the fence file can be made\n";
rmdir($fences);
echo ephpm_child($code, ['ephpm.kv_backend' => "shm://$name"]);
@unlink($fences);
@unlink($segment);
?>
--EXPECTF--
UNAVAILABLE: ephpm_kv_lock(): the store is unavailable; nothing was written or granted (shm: open /dev/shm/ephpm-t76-%d.%d.fences1: is a directory)
UNAVAILABLE: ephpm_kv_fence(): the store is unavailable; nothing was written or granted (shm: open /dev/shm/ephpm-t76-%d.%d.fences1: is a directory)
bool(false)
-- the fence file can be made
string(32) "%s"
int(%d)
bool(true)
