<?php
/*
 * ephpm status: what the store holds and does, and a tool to look inside
 * it, like APCu's apc.php: the figures, rates over the last minutes, held
 * locks with their TTL and waiters (with every entry taken with set_nx:
 * the store cannot tell a lock from a value add() stored), sessions, a
 * shared-memory segment's shards, the backend's facts, a key browser with
 * a prefix filter and paging, and deleting a key or flushing the store. A
 * library from before this page (no scan member, no rates) gets the
 * figures alone, and the page says so.
 *
 * One file, no external asset and no script: charts are inline SVG. Copy it
 * into a docroot served by the PHP whose store it shows (the same php-fpm
 * pool: each pool has its own segment). Formats: the page; ?format=json
 * (ephpm_kv_stats() and two derived figures); ?format=prometheus (the text
 * exposition format, for scraping).
 *
 * Actions (delete a key, flush the store) are OFF unless this file sets a
 * password or an allow-list below, and the page says which. When on, each
 * action is a POST that must carry a one-time token the page drew (kept in
 * the store for 15 minutes under ephpm:status:token:), the password if one
 * is set, and, with an allow-list, come from an address on it; a flush
 * also asks to type "flush". Reading the page needs no password: protect
 * it as any admin page (the web server's auth, or an allow-list there).
 * See docs/operations.md, "Status page".
 */
declare(strict_types=1);

// ---- configuration ---------------------------------------------------------
// Set here, or define() the constants in a file that includes this one.
// EPHPM_STATUS_PASSWORD: '' (none), a password, or a password_hash() of one.
defined('EPHPM_STATUS_PASSWORD') || define('EPHPM_STATUS_PASSWORD', '');
// EPHPM_STATUS_ALLOW: client addresses or CIDR ranges that may act, e.g.
// ['127.0.0.1', '::1', '10.0.0.0/8']; [] lets any address act (with the
// password). With both set, an action needs both.
defined('EPHPM_STATUS_ALLOW') || define('EPHPM_STATUS_ALLOW', []);
// Keys per page of the key browser.
defined('EPHPM_STATUS_PAGE_SIZE') || define('EPHPM_STATUS_PAGE_SIZE', 50);
// ----------------------------------------------------------------------------

const EPHPM_STATUS_TOKEN_PREFIX = 'ephpm:status:token:';
const EPHPM_STATUS_TOKEN_TTL = 900;

/** Whether $ip is one of $list's addresses or in one of its CIDR ranges. */
function ephpm_status_allowed(string $ip, array $list): bool
{
    $addr = @inet_pton($ip);
    if ($addr === false) {
        return false;
    }
    foreach ($list as $entry) {
        [$net, $bits] = str_contains($entry, '/') ? explode('/', $entry, 2) : [$entry, null];
        $n = @inet_pton($net);
        if ($n === false || strlen($n) !== strlen($addr)) {
            continue;
        }
        $bits = $bits === null ? 8 * strlen($n) : (int) $bits;
        $bytes = intdiv($bits, 8);
        if (substr($n, 0, $bytes) !== substr($addr, 0, $bytes)) {
            continue;
        }
        $rest = $bits % 8;
        if ($rest === 0 || ((ord($n[$bytes]) ^ ord($addr[$bytes])) >> (8 - $rest)) === 0) {
            return true;
        }
    }
    return false;
}

/**
 * Walks the entries under $prefix (only locks with $locks) from $cursor
 * for at most $limit records and 64 calls (each walks up to 65536 slots:
 * a rare prefix in a large store is walked that far, however fast the
 * host): [records, complete, skipped parts]. $cursor is where it stopped.
 */
function ephpm_status_walk(string $prefix, bool $locks, int $limit, int &$cursor = 0): array
{
    $out = [];
    $skipped = [];
    $calls = 0;
    do {
        $calls++;
        foreach (ephpm_kv_scan($prefix, $cursor, min(1000, $limit), $locks) as $r) {
            if ($r['kind'] === 'skipped') {
                $skipped[] = $r['key'];
            } else {
                $out[] = $r;
            }
        }
    } while ($cursor !== 0 && count($out) < $limit && $calls < 64);
    return [$out, $cursor === 0, $skipped];
}

/** The POST action, if any: [HTTP status, message]. */
function ephpm_status_act(bool $actionsOn, bool $clientAllowed): array
{
    if (!$actionsOn) {
        return [403, 'Refused: actions are off (no password and no allow-list is set in the page).'];
    }
    if (!$clientAllowed) {
        return [403, 'Refused: your address is not on the allow-list.'];
    }
    $token = $_POST['token'] ?? '';
    if (!is_string($token) || !preg_match('/^[0-9a-f]{32}$/', $token)
        || ephpm_kv_del(EPHPM_STATUS_TOKEN_PREFIX . $token) !== 1) {
        return [403, 'Refused: the form token is missing, used or stale. Reload the page and try again.'];
    }
    if (EPHPM_STATUS_PASSWORD !== '') {
        $given = $_POST['password'] ?? '';
        $info = password_get_info(EPHPM_STATUS_PASSWORD);
        $ok = is_string($given) && ($info['algo'] !== null && $info['algo'] !== 0
            ? password_verify($given, EPHPM_STATUS_PASSWORD)
            : hash_equals(EPHPM_STATUS_PASSWORD, $given));
        if (!$ok) {
            return [403, 'Refused: wrong password.'];
        }
    }
    switch ($_POST['action'] ?? '') {
        case 'delete':
            $key = is_string($_POST['key'] ?? null) && preg_match('/^(?:[0-9a-fA-F]{2})+$/', $_POST['key'])
                ? hex2bin($_POST['key']) : '';
            if ($key === '' || strlen($key) > 4096) {
                return [400, 'Refused: no key to delete.'];
            }
            return [200, ephpm_kv_del($key) === 1 ? 'Deleted ' . ephpm_status_key_text($key) . '.'
                : 'No key ' . ephpm_status_key_text($key) . ': nothing deleted.'];
        case 'flush':
            if (($_POST['confirm'] ?? '') !== 'flush') {
                return [400, 'Not flushed: type "flush" to confirm.'];
            }
            ephpm_kv_flush_all();
            return [200, 'Flushed: every key, locks and sessions included, was removed.'];
    }
    return [400, 'Refused: unknown action.'];
}

/** A key as text: printable UTF-8 as it is, else bytes as \xNN escapes. */
function ephpm_status_key_text(string $k): string
{
    if (preg_match('//u', $k) === 1 && preg_match('/[\x00-\x1f\x7f]/', $k) === 0) {
        return $k;
    }
    return preg_replace_callback('/[^\x20-\x5b\x5d-\x7e]/', fn ($m) => sprintf('\\x%02x', ord($m[0])), $k);
}

/**
 * Whether $e says the loaded library lacks the member a function needs
 * (the extension's EPHPM_KV_OPS_HAS check: a library older than the
 * function throws UNSUPPORTED, having done nothing).
 */
function ephpm_status_unsupported(Throwable $e): bool
{
    return $e instanceof Ephpm\KvException && $e->getCode() === Ephpm\KvException::UNSUPPORTED;
}

try {
    $s = ephpm_kv_stats();
} catch (Ephpm\KvException $e) {
    if (!ephpm_status_unsupported($e)) {
        throw $e;
    }
    // A library from before ephpm_kv_stats(): nothing this page shows.
    http_response_code(501);
    header('Content-Type: text/plain; charset=utf-8');
    echo 'ephpm status: the loaded library is too old for this page: ', $e->getMessage(), "\n";
    return;
}
$private = $s['backend'] === 'memory' && PHP_SAPI === 'fpm-fcgi';
$redis = str_starts_with($s['backend'], 'redis');
$lookups = $s['hits'] + $s['misses'];
$hitRatio = $lookups > 0 ? $s['hits'] / $lookups : 0.0;
$format = $_GET['format'] ?? '';

if ($format === 'json') {
    header('Content-Type: application/json');
    echo json_encode($s + ['hit_ratio' => $hitRatio, 'private_to_worker' => $private], JSON_PRETTY_PRINT | JSON_INVALID_UTF8_SUBSTITUTE);
    return;
}

// The held locks and the sessions, by walks of bounded length. The walks
// need the library's scan member: a library from before this page has
// none (nor rates: its stats leave rate_interval_ms 0), and the page then
// shows no lock table, session count or key browser, and says why. A walk
// the store fails (a Redis Cluster whose masters changed under it, a
// server gone) is named instead of its table.
$noScan = null;      // why the library cannot walk the store
$walkError = null;   // why a walk of it failed
$locks = $sessions = $skipped = $skippedS = [];
$locksComplete = $sessionsComplete = true;
try {
    [$locks, $locksComplete, $skipped] = ephpm_status_walk('', true, 1000);
    [$sessions, $sessionsComplete, $skippedS] = ephpm_status_walk('session:', false, 100000);
} catch (Ephpm\KvException $e) {
    if (ephpm_status_unsupported($e)) {
        $noScan = $e->getMessage();
    } else {
        $walkError = $e->getMessage();
    }
}
usort($locks, fn ($a, $b) => strcmp($a['key'], $b['key']));
$sessionCount = count(array_filter($sessions, fn ($r) => $r['kind'] === 'session'));
$sessionLocks = count(array_filter($locks, fn ($r) => str_starts_with($r['key'], 'session_lock:')));
$skipped = array_values(array_unique(array_merge($skipped, $skippedS)));
$walked = $noScan === null && $walkError === null;

if ($format === 'prometheus') {
    header('Content-Type: text/plain; version=0.0.4; charset=utf-8');
    $label = static fn (string $v): string => str_replace(['\\', '"', "\n"], ['\\\\', '\\"', '\\n'], $v);
    $base = sprintf('backend="%s",instance="%s"', $label($s['backend']), $label($s['instance_id']));
    $metric = static function (string $name, string $type, string $help, array $samples) use ($base): string {
        $out = "# HELP ephpm_$name $help\n# TYPE ephpm_$name $type\n";
        foreach ($samples as [$labels, $value]) {
            $out .= sprintf("ephpm_%s{%s} %s\n", $name, $base . ($labels === '' ? '' : ",$labels"), $value);
        }
        return $out;
    };
    $one = static fn ($v): array => [['', is_float($v) ? sprintf('%.6g', $v) : (string) $v]];
    echo $metric('info', 'gauge', 'The store: its backend, eviction policy and compression (always 1).',
        [[sprintf('eviction="%s",compression="%s"', $label($s['eviction']), $label($s['compression'])), '1']]);
    foreach ([
        ['keys', 'gauge', 'Entries, counting expired ones not yet reclaimed.', $s['keys']],
        ['memory_used_bytes', 'gauge', 'Memory charged to entries.', $s['bytes_used']],
        ['memory_limit_bytes', 'gauge', 'The memory limit; 0: none.', $s['memory_limit']],
        ['session_bytes', 'gauge', 'Memory charged to session data.', $s['session_bytes']],
        ['session_limit_bytes', 'gauge', "The session data's budget; 0: none.", $s['session_limit']],
        ['sessions', 'gauge', 'Session data entries (a bounded walk: at least this many).', $walked ? $sessionCount : null],
        ['locks_held', 'gauge', 'Entries the store keeps as locks: held locks, session locks included, and every entry '
            . 'taken with set_nx, add()ed values too, which the store cannot tell from locks (a bounded walk: at least this many).',
            $walked ? count($locks) : null],
        ['processes', 'gauge', 'Processes attached to the shared-memory segment.', $s['processes']],
        ['hits_total', 'counter', 'Lookups that found a live entry.', $s['hits']],
        ['misses_total', 'counter', 'Lookups that found none.', $s['misses']],
        ['sets_total', 'counter', 'Writes.', $s['sets']],
        ['evictions_total', 'counter', 'Entries removed to make room.', $s['evictions']],
        ['expirations_total', 'counter', 'Expired entries reclaimed.', $s['expirations']],
        ['lock_grants_total', 'counter', 'set_nx and lock attempts that won.', $s['set_nx_wins']],
        ['lock_refusals_total', 'counter', 'set_nx and lock attempts that found the key held.', $s['set_nx_losses']],
        ['releases_total', 'counter', 'del_if_eq calls that matched (a holder released).', $s['del_if_eq_matches']],
        ['release_mismatches_total', 'counter', 'del_if_eq calls that did not match.', $s['del_if_eq_mismatches']],
        ['lock_timeouts_total', 'counter', 'Lock waits that ran out of time, in the process that answered.', $s['lock_timeouts']],
    ] as [$name, $type, $help, $v]) {
        if ($v !== null) { // null: the library cannot walk the store, or the walk failed
            echo $metric($name, $type, $help, $one($v));
        }
    }
    if ($s['shards'] !== []) {
        foreach (['keys' => 'Entries of each shard of the segment.', 'bytes_used' => 'Memory charged to entries, per shard.',
                  'heap_free' => 'Free heap bytes, per shard.', 'largest_free' => 'The largest free block, per shard.'] as $f => $help) {
            $name = 'shard_' . $f . ($f === 'keys' ? '' : ($f === 'bytes_used' ? '' : '_bytes'));
            $samples = [];
            foreach ($s['shards'] as $i => $sh) {
                $samples[] = ["shard=\"$i\"", (string) $sh[$f]];
            }
            echo $metric($name, 'gauge', $help, $samples);
        }
    }
    return;
}

$actionsOn = EPHPM_STATUS_PASSWORD !== '' || EPHPM_STATUS_ALLOW !== [];
$client = (string) ($_SERVER['REMOTE_ADDR'] ?? '');
$clientAllowed = EPHPM_STATUS_ALLOW === [] || ephpm_status_allowed($client, EPHPM_STATUS_ALLOW);
$notice = null;
if (($_SERVER['REQUEST_METHOD'] ?? 'GET') === 'POST') {
    [$code, $notice] = ephpm_status_act($actionsOn, $clientAllowed);
    http_response_code($code);
    $s = ephpm_kv_stats();
    if ($walked) {
        try {
            [$locks] = ephpm_status_walk('', true, 1000);
        } catch (Ephpm\KvException $e) {
            [$locks, $walked, $walkError] = [[], false, $e->getMessage()];
        }
        usort($locks, fn ($a, $b) => strcmp($a['key'], $b['key']));
    }
}
// A fresh one-time token for this page's forms.
$token = null;
if ($actionsOn && $clientAllowed) {
    $token = bin2hex(random_bytes(16));
    ephpm_kv_set(EPHPM_STATUS_TOKEN_PREFIX . $token, '1', EPHPM_STATUS_TOKEN_TTL);
}

// The key browser's page: about EPHPM_STATUS_PAGE_SIZE keys from $cursor.
$prefix = is_string($_GET['prefix'] ?? null) ? $_GET['prefix'] : '';
$cursor = is_string($_GET['cursor'] ?? null) && preg_match('/^-?[0-9]{1,20}$/', $_GET['cursor']) ? (int) $_GET['cursor'] : 0;
$keys = [];
$browseError = null;
if ($noScan !== null) {
    $cursor = 0;
} elseif (strlen($prefix) <= 4096) {
    try {
        [$keys, , $browseSkipped] = ephpm_status_walk($prefix, false, EPHPM_STATUS_PAGE_SIZE, $cursor);
        array_push($skipped, ...$browseSkipped);
    } catch (ValueError $e) {
        $browseError = 'That cursor is not one this store gave: the browser starts over.';
        $cursor = 0;
    } catch (Ephpm\KvException $e) {
        // A Redis Cluster whose masters changed since the walk began, or
        // a store that failed: go on from this cursor no further.
        $browseError = 'The walk failed: ' . $e->getMessage() . ' The browser starts over from the first page.';
        $keys = [];
        $cursor = 0;
    }
} else {
    $browseError = 'A prefix is at most 4096 bytes.';
}
$skipped = array_values(array_unique($skipped));
usort($keys, fn ($a, $b) => strcmp($a['key'], $b['key']));

$h = static fn (mixed $v): string => htmlspecialchars((string) $v, ENT_QUOTES | ENT_SUBSTITUTE);
$k = static fn (string $key): string => $h(ephpm_status_key_text($key));
$bytes = static function (int $n): string {
    foreach (['B', 'KiB', 'MiB', 'GiB'] as $unit) {
        if ($n < 1024 || $unit === 'GiB') {
            return $unit === 'B' ? "$n B" : sprintf('%.1f %s', $n, $unit);
        }
        $n /= 1024;
    }
};
$ttl = static function (int $ms): string {
    if ($ms < 0) {
        return 'none';
    }
    return match (true) {
        $ms < 1000 => "$ms ms",
        $ms < 60000 => sprintf('%.1f s', $ms / 1000),
        $ms < 3600000 => sprintf('%d min %d s', intdiv($ms, 60000), intdiv($ms % 60000, 1000)),
        default => sprintf('%d h %d min', intdiv($ms, 3600000), intdiv($ms % 3600000, 60000)),
    };
};
/** A horizontal bar of parts (label => [value, colour]) as inline SVG. */
$bar = static function (array $parts, int $width = 400) use ($h): string {
    $total = max(1, array_sum(array_column($parts, 0)));
    $x = 0.0;
    $svg = sprintf('<svg viewBox="0 0 %d 24" width="%d" height="24" role="img">', $width, $width);
    foreach ($parts as $label => [$value, $colour]) {
        $w = $width * $value / $total;
        $svg .= sprintf('<rect x="%.2f" y="0" width="%.2f" height="24" fill="%s"><title>%s: %s</title></rect>', $x, $w, $colour, $h($label), $h($value));
        $x += $w;
    }
    return $svg . '</svg>';
};
$row = static fn (string $name, string $label, mixed $value, ?string $shown = null): string => sprintf(
    '<tr><th>%s</th><td data-stat="%s" data-value="%s">%s</td></tr>', $h($label), $h($name), $h($value), $h($shown ?? $value));
$url = static function (array $q) use ($h): string {
    return $h('?' . http_build_query(array_filter($q, fn ($v) => $v !== null && $v !== '')));
};
/** The fields every action form carries. */
$formFields = static function () use ($h, $token): string {
    $f = '<input type="hidden" name="token" value="' . $h($token) . '">';
    if (EPHPM_STATUS_PASSWORD !== '') {
        // The hidden user name is for browsers' password managers.
        $f .= '<input type="text" name="user" value="ephpm-status" autocomplete="username" hidden>'
            . '<input type="password" name="password" placeholder="password" required autocomplete="current-password">';
    }
    return $f;
};
$deleteForm = static function (string $key, string $label = 'delete') use ($h, $formFields): string {
    return '<form method="post" class="inline"><input type="hidden" name="action" value="delete">'
        . '<input type="hidden" name="key" value="' . bin2hex($key) . '">' . $formFields()
        . '<button type="submit">' . $h($label) . '</button></form>';
};
$canAct = $token !== null;

// Rates: per second over each interval, oldest first for the chart.
$interval = $s['rate_interval_ms'] / 1000;
$rates = array_reverse($s['rates']);
$series = [
    'lookups' => ['#357', fn ($r) => $r['hits'] + $r['misses']],
    'hits' => ['#4a7', fn ($r) => $r['hits']],
    'sets' => ['#e93', fn ($r) => $r['sets']],
    'lock grants' => ['#a4c', fn ($r) => $r['set_nx_wins']],
];
$perSecond = [];
foreach ($series as $name => [, $f]) {
    $perSecond[$name] = array_map(fn ($r) => $interval > 0 ? $f($r) / $interval : 0.0, $rates);
}
$avg = static function (array $values, int $n): ?float {
    $last = array_slice($values, -$n);
    return $last === [] ? null : array_sum($last) / count($last);
};
$rateChart = static function () use ($perSecond, $series, $rates, $interval, $h): string {
    $n = count($rates);
    if ($n === 0) {
        return '';
    }
    $w = 600;
    $ht = 120;
    $max = max(1.0, ...array_map(fn ($v) => $v === [] ? 0.0 : max($v), array_values($perSecond)));
    $svg = sprintf('<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" class="chart"><title>per second, the last %d intervals of %g s</title>', $w, $ht + 14, $w, $ht + 14, $n, $interval);
    $svg .= sprintf('<line x1="0" y1="%d" x2="%d" y2="%d" stroke="#bbb"/>', $ht, $w, $ht);
    foreach ($perSecond as $name => $values) {
        $pts = [];
        foreach ($values as $i => $v) {
            $x = $n === 1 ? $w : $w * $i / ($n - 1);
            $pts[] = sprintf('%.1f,%.1f', $x, $ht - ($ht - 4) * $v / $max);
        }
        $svg .= sprintf('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>', $series[$name][0], implode(' ', $pts), $h($name));
    }
    $svg .= sprintf('<text x="0" y="%d" font-size="11">-%d s</text><text x="%d" y="%d" font-size="11" text-anchor="end">now · peak %.1f/s</text>', $ht + 12, (int) ($n * $interval), $w, $ht + 12, $max);
    return $svg . '</svg>';
};

header('Content-Security-Policy: default-src \'none\'; style-src \'unsafe-inline\'; img-src data:; form-action \'self\'; frame-ancestors \'none\'; base-uri \'none\'');
header('X-Content-Type-Options: nosniff');
header('Referrer-Policy: no-referrer');
header('Cache-Control: no-store');
?>
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ephpm status</title>
<link rel="icon" href="data:,">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 75em; }
  h1 { font-size: 1.4em; }
  h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
  table { border-collapse: collapse; margin: .6em 0; }
  th { text-align: left; font-weight: normal; color: #555; padding: 2px 1.5em 2px 0; }
  td { font-variant-numeric: tabular-nums; padding: 2px 1.2em 2px 0; vertical-align: top; }
  table.list th { font-weight: 600; color: #333; border-bottom: 1px solid #ccc; }
  table.list td.key { font-family: ui-monospace, monospace; word-break: break-all; max-width: 40em; }
  .banner { background: #fff3cd; border: 1px solid #e0c060; padding: .8em 1em; max-width: 60em; }
  .notice { background: #e6f4ea; border: 1px solid #7b6; padding: .6em 1em; max-width: 60em; }
  .refused { background: #fde8e8; border-color: #d66; }
  .off { color: #666; }
  .charts div { margin: .6em 0; display: flex; gap: 1em; align-items: center; }
  .cols { display: grid; grid-template-columns: minmax(0, 1.4fr) minmax(0, 1fr); gap: 2em; }
  details { margin: .4em 0; }
  form.inline { display: inline; margin: 0; }
  form.inline input[type=password] { width: 8em; }
  .legend span { margin-right: 1.2em; }
  .legend i { display: inline-block; width: .9em; height: .9em; margin-right: .3em; vertical-align: -1px; }
</style>
</head>
<body>
<h1>ephpm status</h1>
<?php if ($notice !== null): ?>
<p class="notice<?= http_response_code() >= 400 ? ' refused' : '' ?>" id="notice"><?= $h($notice) ?></p>
<?php endif ?>
<?php if ($private): ?>
<p class="banner" id="private-banner">This store is private to this php-fpm worker (pid <?= getmypid() ?>):
other workers have their own, and locks and sessions are not shared between them.
Leave <code>ephpm.kv_backend</code> at <code>auto</code> (the pool's shared-memory segment), or set it to <code>shm://NAME</code> or a Redis or Valkey URL, to share them.</p>
<?php endif ?>
<?php if ($noScan !== null): ?>
<p class="banner" id="old-library-banner">The loaded library is older than this page: it keeps no rates and cannot walk
the store, so no held locks, session count or key browser are shown (<?= $h($noScan) ?>).</p>
<?php elseif ($walkError !== null): ?>
<p class="banner" id="walk-error-banner">The walk of the store's locks and sessions failed: <?= $h($walkError) ?></p>
<?php endif ?>
<?php if ($skipped !== []): ?>
<p class="banner" id="skipped-banner">The walks of the store left out damaged parts of it (their keys are not listed):
<?= $h(implode('; ', $skipped)) ?>. <code>ephpm check</code> says more.</p>
<?php endif ?>

<div class="cols"><div>
<h2>Store</h2>
<table>
<?= $row('backend', 'backend', $s['backend']) ?>
<?= $row('store', 'store', $s['store']) ?>
<?php if ($s['facts'] !== ''): ?><?= $row('facts', 'facts', $s['facts']) ?><?php endif ?>
<?= $row('instance_id', 'instance id', $s['instance_id']) ?>
<?= $row('library', 'library', $s['library']) ?>
<?= $row('eviction', 'eviction', $s['eviction']) ?>
<?= $row('compression', 'compression', $s['compression']) ?>
<?= $row('bytes_used', 'memory used', $s['bytes_used'], $bytes($s['bytes_used'])) ?>
<?= $row('memory_limit', 'memory limit', $s['memory_limit'], $s['memory_limit'] > 0 ? $bytes($s['memory_limit']) : 'none') ?>
<?= $row('keys', 'keys', $s['keys']) ?>
<?php if ($s['backend'] === 'shm'): ?><?= $row('processes', 'processes attached', $s['processes']) ?><?php endif ?>
</table>
</div><div>
<h2>Activity</h2>
<table>
<?= $row('hits', 'hits', $s['hits']) ?>
<?= $row('misses', 'misses', $s['misses']) ?>
<?= $row('hit_ratio', 'hit ratio', round($hitRatio, 4), sprintf('%.1f %%', 100 * $hitRatio)) ?>
<?= $row('sets', 'sets', $s['sets']) ?>
<?= $row('evictions', 'evictions', $s['evictions']) ?>
<?= $row('expirations', 'expirations', $s['expirations']) ?>
<?= $row('set_nx_wins', 'locks won', $s['set_nx_wins']) ?>
<?= $row('set_nx_losses', 'locks lost', $s['set_nx_losses']) ?>
<?= $row('lock_timeouts', 'lock waits timed out', $s['lock_timeouts']) ?>
<?= $row('del_if_eq_matches', 'releases by the holder', $s['del_if_eq_matches']) ?>
<?= $row('del_if_eq_mismatches', 'releases refused (not the holder)', $s['del_if_eq_mismatches']) ?>
</table>
</div></div>
<div class="charts">
  <div><?= $bar(['used' => [$s['bytes_used'], '#4a7'], 'free' => [max(0, $s['memory_limit'] - $s['bytes_used']), '#ddd']]) ?>
    memory: <?= $h($bytes($s['bytes_used'])) ?> used<?= $s['memory_limit'] > 0 ? ' of ' . $h($bytes($s['memory_limit'])) : '' ?></div>
  <div><?= $bar(['hits' => [$s['hits'], '#4a7'], 'misses' => [$s['misses'], '#d64']]) ?>
    lookups: <?= $h($s['hits']) ?> hits (green), <?= $h($s['misses']) ?> misses (red)</div>
  <div><?= $bar(['won' => [$s['set_nx_wins'], '#4a7'], 'lost' => [$s['set_nx_losses'], '#e93'], 'timed out' => [$s['lock_timeouts'], '#d64']]) ?>
    locks: <?= $h($s['set_nx_wins']) ?> won (green), <?= $h($s['set_nx_losses']) ?> lost (orange), <?= $h($s['lock_timeouts']) ?> waits timed out (red)</div>
</div>

<h2 id="rates">Rates over the last minutes</h2>
<?php if ($interval <= 0 && $noScan !== null): ?>
<p class="off" id="no-rates">The loaded library keeps no rates (it is older than them).</p>
<?php elseif ($interval <= 0): ?>
<p class="off" id="no-rates">This backend keeps no rates<?= str_starts_with($s['backend'], 'redis') ? ' (a Redis server: see its <code>INFO stats</code>, instantaneous_ops_per_sec)' : '' ?>.</p>
<?php elseif ($rates === []): ?>
<p class="off">No interval of <?= $h($interval) ?> s is complete yet: reload in a moment.</p>
<?php else: ?>
<table class="list" id="rates-table">
<?php $span = count($rates) * $interval; ?>
<tr><th>per second</th><th>last <?= $h($interval) ?> s</th><th>last minute</th><th>last <?= $h($span >= 120 ? round($span / 60) . ' min' : $span . ' s') ?></th></tr>
<?php foreach ($perSecond as $name => $values): ?>
<tr><td><?= $h($name) ?></td>
<?php foreach ([1, (int) max(1, round(60 / $interval)), count($values)] as $n): ?>
<td><?= $h(sprintf('%.2f', $avg($values, $n) ?? 0)) ?></td>
<?php endforeach ?></tr>
<?php endforeach ?>
</table>
<?= $rateChart() ?>
<p class="legend"><?php foreach ($series as $name => [$colour]): ?><span><i style="background: <?= $h($colour) ?>"></i><?= $h($name) ?></span><?php endforeach ?></p>
<?php endif ?>

<h2 id="locks">Locks, and entries taken with set_nx</h2>
<?php if (!$walked): ?>
<p class="off" id="no-locks"><?= $noScan !== null ? 'The loaded library cannot walk the store.' : 'The walk failed (see above).' ?></p>
<?php else: ?>
<?php if ($redis): ?>
<p class="off">Redis keeps a lock as a plain string: listed are the locks it can tell from a value (session locks,
read-held names, names with waiters in line); a lock taken with set_nx that nobody waits for is not.</p>
<?php else: ?>
<p class="off">The store keeps as a lock every entry taken with set_nx, and cannot tell the two uses of set_nx apart: listed
are locks (ephpm_kv_lock(), ephpm_kv_setnx(), read locks, the session handler's) and values stored by an add()
(WordPress's <code>wp_cache_add()</code>, a cache's <code>add()</code>). The last column says which an entry surely is.</p>
<?php endif ?>
<?php if ($locks === []): ?>
<p class="off">No lock is held<?= $redis ? ' that Redis can tell from a value' : ', and no entry taken with set_nx is stored' ?>.</p>
<?php else: ?>
<table class="list" id="locks-table">
<tr><th>key</th><th>mode</th><th>holders</th><th>TTL left</th><th>waiters</th><th>holder</th><th>what</th><?= $canAct ? '<th></th>' : '' ?></tr>
<?php foreach ($locks as $l): ?>
<tr><td class="key"><?= $k($l['key']) ?></td><td><?= $l['kind'] === 'lock_shared' ? 'shared' : 'exclusive' ?></td>
<td><?= $h($l['holders']) ?></td><td><?= $h($ttl($l['pttl'])) ?></td><td><?= $l['waiters'] === null ? '?' : $h($l['waiters']) ?></td>
<td><?= $l['holder_pid'] === null ? '-' : 'pid ' . $h($l['holder_pid']) ?></td>
<td><?= $h(match (true) {
    str_starts_with($l['key'], 'session_lock:') => 'a session lock',
    $l['kind'] === 'lock_shared' => 'a lock held for reading',
    $l['waiters'] !== null && $l['waiters'] > 0 => 'a lock (callers wait for it)',
    $redis => 'a lock',
    default => 'a lock, or a value add() stored',
}) ?></td>
<?= $canAct ? '<td>' . $deleteForm($l['key'], 'force release') . '</td>' : '' ?></tr>
<?php endforeach ?>
</table>
<p><?= count($locks) ?> <?= $redis ? (count($locks) === 1 ? 'lock' : 'locks') . ' held'
    : (count($locks) === 1 ? 'entry' : 'entries') . ' taken with set_nx (locks and add()ed values)' ?><?= $locksComplete ? '' : ' (the walk stopped there: there are more)' ?>.</p>
<?php endif ?>
<?php endif ?>

<h2 id="sessions">Sessions</h2>
<table>
<?php if ($walked): ?>
<tr><th>sessions stored</th><td id="session-count"><?= $h($sessionCount) ?><?= $sessionsComplete ? '' : ' or more (the walk stopped there)' ?></td></tr>
<tr><th>held now (their lock taken)</th><td><?= $h($sessionLocks) ?></td></tr>
<?php else: ?>
<tr><th>sessions stored</th><td id="session-count">not known (no walk of the store)</td></tr>
<?php endif ?>
<?= $row('session_bytes', 'session data', $s['session_bytes'], $bytes($s['session_bytes'])) ?>
<?= $row('session_limit', 'session budget', $s['session_limit'], $s['session_limit'] > 0 ? $bytes($s['session_limit']) : 'none') ?>
</table>
<?php if ($s['session_limit'] > 0): ?>
<div class="charts"><div><?= $bar(['session data' => [$s['session_bytes'], '#357'], 'budget left' => [max(0, $s['session_limit'] - $s['session_bytes']), '#ddd']]) ?>
  <?= $h(sprintf('%.1f %%', 100 * $s['session_bytes'] / $s['session_limit'])) ?> of the budget</div></div>
<?php endif ?>

<?php if ($s['shards'] !== []): ?>
<h2 id="shards">Segment shards</h2>
<?php
$heapTotal = array_sum(array_column($s['shards'], 'heap_size'));
$freeTotal = array_sum(array_column($s['shards'], 'heap_free'));
// A damaged shard's largest free block is unknown (-1): no figure, 0 %.
$frags = array_map(fn ($sh) => $sh['heap_free'] > 0 && $sh['largest_free'] >= 0 ? 1 - $sh['largest_free'] / $sh['heap_free'] : 0.0, $s['shards']);
$worst = (int) array_search(max($frags), $frags, true);
$n = count($s['shards']);
$cw = max(6, intdiv(600, $n));
?>
<p><?= $h($n) ?> shards of <?= $h($bytes($s['shards'][0]['heap_size'])) ?> of heap: <?= $h($bytes($heapTotal - $freeTotal)) ?> in blocks,
<?= $h($bytes($freeTotal)) ?> free; the most fragmented is shard <?= $h($worst) ?> (<?= $h(sprintf('%.0f %%', 100 * $frags[$worst])) ?>:
its largest free block is <?= $h($bytes($s['shards'][$worst]['largest_free'])) ?> of <?= $h($bytes($s['shards'][$worst]['heap_free'])) ?> free).</p>
<svg viewBox="0 0 <?= $n * $cw ?> 64" width="<?= $n * $cw ?>" height="64" role="img" class="chart" id="shards-chart">
<?php foreach ($s['shards'] as $i => $sh): ?>
<?php $usedH = 60 * ($sh['heap_size'] - $sh['heap_free']) / max(1, $sh['heap_size']); $fragH = 60 * ($sh['heap_free'] - $sh['largest_free']) / max(1, $sh['heap_size']); ?>
<g><title><?= $h(sprintf('shard %d: %d keys, %s used, %s free, largest free block %s, fragmentation %.0f %%', $i, $sh['keys'],
    $bytes($sh['bytes_used']), $bytes($sh['heap_free']), $bytes($sh['largest_free']), 100 * $frags[$i])) ?></title>
<rect x="<?= $i * $cw ?>" y="0" width="<?= $cw - 2 ?>" height="60" fill="#e4e4e4"/>
<rect x="<?= $i * $cw ?>" y="<?= sprintf('%.2f', 60 - $usedH) ?>" width="<?= $cw - 2 ?>" height="<?= sprintf('%.2f', $usedH) ?>" fill="#4a7"/>
<rect x="<?= $i * $cw ?>" y="<?= sprintf('%.2f', 60 - $usedH - $fragH) ?>" width="<?= $cw - 2 ?>" height="<?= sprintf('%.2f', $fragH) ?>" fill="#e93"/></g>
<?php endforeach ?>
</svg>
<p class="legend"><span><i style="background: #4a7"></i>heap in blocks</span><span><i style="background: #e93"></i>free outside the largest free block (fragmentation)</span><span><i style="background: #e4e4e4"></i>the largest free block</span></p>
<details><summary>each shard</summary>
<table class="list" id="shards-table">
<tr><th>shard</th><th>keys</th><th>used</th><th>heap</th><th>free</th><th>largest free block</th><th>fragmentation</th></tr>
<?php foreach ($s['shards'] as $i => $sh): ?>
<tr><td><?= $h($i) ?></td><td><?= $h($sh['keys']) ?></td><td><?= $h($bytes($sh['bytes_used'])) ?></td><td><?= $h($bytes($sh['heap_size'])) ?></td>
<td><?= $h($bytes($sh['heap_free'])) ?></td><td><?= $h($bytes($sh['largest_free'])) ?></td><td><?= $h(sprintf('%.0f %%', 100 * $frags[$i])) ?></td></tr>
<?php endforeach ?>
</table></details>
<p class="off">Fragmentation is the part of a shard's free heap outside its largest free block: a write larger than that block moves entries first.</p>
<?php endif ?>

<h2 id="keys">Keys</h2>
<?php if ($noScan !== null): ?>
<p class="off" id="no-browser">No key browser: the loaded library cannot walk the store.</p>
<?php else: ?>
<form method="get" id="browse">
  <label>prefix <input type="text" name="prefix" value="<?= $h($prefix) ?>" size="40"></label>
  <button type="submit">filter</button>
</form>
<?php if ($browseError !== null): ?><p class="banner"><?= $h($browseError) ?></p><?php endif ?>
<?php if ($keys === []): ?>
<p class="off" id="no-keys">No key<?= $prefix !== '' ? ' begins with ' . $k($prefix) : '' ?> on this page.</p>
<?php else: ?>
<table class="list" id="keys-table">
<tr><th>key</th><th>kind</th><th>size</th><th>TTL left</th><?= $canAct ? '<th></th>' : '' ?></tr>
<?php foreach ($keys as $r): ?>
<tr><td class="key" data-key-hex="<?= bin2hex($r['key']) ?>"><?= $k($r['key']) ?></td><td><?= $h($r['kind'] === 'lock' && !$redis && !($r['waiters'] > 0)
    && !str_starts_with($r['key'], 'session_lock:') ? 'lock or add()ed value' : str_replace('_', ' ', $r['kind'])) ?></td>
<td><?= $r['size'] < 0 ? '?' : $h($bytes($r['size'])) ?></td><td><?= $h($ttl($r['pttl'])) ?></td>
<?= $canAct ? '<td>' . $deleteForm($r['key']) . '</td>' : '' ?></tr>
<?php endforeach ?>
</table>
<?php endif ?>
<p><?= count($keys) ?> key<?= count($keys) === 1 ? '' : 's' ?> on this page.
<?php if ($cursor !== 0): ?><a id="next-page" href="<?= $url(['prefix' => $prefix, 'cursor' => (string) $cursor]) ?>#keys">next page</a><?php else: ?>That is the end of the walk.<?php endif ?>
<?php if (isset($_GET['cursor'])): ?> <a href="<?= $url(['prefix' => $prefix]) ?>#keys">first page</a><?php endif ?></p>
<?php endif ?>

<h2 id="actions">Actions</h2>
<?php if (!$actionsOn): ?>
<p class="off" id="actions-off">Actions are off: deleting a key and flushing the store need a password or an allow-list,
set in this page's file (<code>EPHPM_STATUS_PASSWORD</code>, <code>EPHPM_STATUS_ALLOW</code>).</p>
<?php elseif (!$clientAllowed): ?>
<p class="off" id="actions-off">Actions are off for your address (<?= $h($client) ?>): it is not on the page's allow-list.</p>
<?php else: ?>
<p id="actions-on">Actions are on (<?= EPHPM_STATUS_PASSWORD !== '' ? 'with the password' : 'no password' ?><?= EPHPM_STATUS_ALLOW !== [] ? ', from the allow-list' : '' ?>):
each form carries a one-time token.</p>
<form method="post" id="flush"><input type="hidden" name="action" value="flush"><?= $formFields() ?>
  <label>type <code>flush</code> to remove every key, locks and sessions included: <input type="text" name="confirm" size="6" required></label>
  <button type="submit">flush the store</button></form>
<?php endif ?>
</body>
</html>
