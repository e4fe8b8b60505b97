<?php
/*
 * The stale-release scenario, run for real.
 *
 * A takes a lock with a 1 s TTL and overruns it; B takes the lock after it
 * expired; then A, finishing late, releases; then C tries to take the lock.
 *
 *   lock.php?release=del        A releases with a blind delete: it removes
 *                               B's lock and C walks in on top of B.
 *   lock.php?release=del_if_eq  A releases with its own token: the release
 *                               is a no-op, B keeps the lock, C is refused.
 *
 * Every acquisition uses a fresh 128-bit token from the CSPRNG; the last
 * line names the holder whose token the lock now holds.
 */
declare(strict_types=1);

header('Content-Type: text/plain; charset=utf-8');

$release = $_GET['release'] ?? 'del_if_eq';
if (!in_array($release, ['del', 'del_if_eq'], true)) {
    http_response_code(400);
    echo "release must be del or del_if_eq\n";
    return;
}

// A key of this request's own, so concurrent demo requests do not meet.
$lock = 'lock:nightly-report:' . bin2hex(random_bytes(8));
$token = [];
foreach (['A', 'B', 'C'] as $who) {
    $token[$who] = bin2hex(random_bytes(16));
}

$line = static function (string $label, mixed $value): void {
    printf("%-24s %s\n", $label . ':', var_export($value, true));
};

$line('A acquires (1s TTL)', ephpm_kv_setnx($lock, $token['A'], 1));
usleep(1_200_000); // A overruns its TTL
$line('B acquires (30s TTL)', ephpm_kv_setnx($lock, $token['B'], 30));
$line(
    "A releases with $release",
    $release === 'del' ? ephpm_kv_del($lock) : ephpm_kv_del_if_eq($lock, $token['A']),
);
$line('C tries to acquire', ephpm_kv_setnx($lock, $token['C'], 30));
$holder = array_search(ephpm_kv_get($lock), $token, true);
$line('lock holder now', $holder === false ? null : $holder);

// Whoever holds the lock now releases it, with its own token.
foreach ($token as $t) {
    ephpm_kv_del_if_eq($lock, $t);
}
