<?php
/*
 * ephpm status: what the store holds and does, like APCu's apc.php. Charts
 * are inline SVG: no CDN, no script. ?format=json gives the same figures.
 */
declare(strict_types=1);

$s = ephpm_kv_stats();
$private = $s['backend'] === 'memory' && PHP_SAPI === 'fpm-fcgi';
$lookups = $s['hits'] + $s['misses'];
$hitRatio = $lookups > 0 ? $s['hits'] / $lookups : 0.0;
$locks = $s['set_nx_wins'] + $s['set_nx_losses'];

if (($_GET['format'] ?? '') === 'json') {
    header('Content-Type: application/json');
    echo json_encode($s + ['hit_ratio' => $hitRatio, 'private_to_worker' => $private], JSON_PRETTY_PRINT);
    return;
}

$h = static fn (mixed $v): string => htmlspecialchars((string) $v, ENT_QUOTES);
$bytes = static function (int $n): string {
    foreach (['B', 'KiB', 'MiB', 'GiB'] as $unit) {
        if ($n < 1024 || $unit === 'GiB') {
            return $unit === 'B' ? "$n B" : sprintf('%.1f %s', $n, $unit);
        }
        $n /= 1024;
    }
};
/** A horizontal bar of parts (label => [value, colour]) as inline SVG. */
$bar = static function (array $parts) use ($h): string {
    $total = max(1, array_sum(array_column($parts, 0)));
    $x = 0.0;
    $svg = '<svg viewBox="0 0 400 24" width="400" height="24" role="img">';
    foreach ($parts as $label => [$value, $colour]) {
        $w = 400 * $value / $total;
        $svg .= sprintf('<rect x="%.2f" y="0" width="%.2f" height="24" fill="%s"><title>%s: %s</title></rect>', $x, $w, $colour, $h($label), $h($value));
        $x += $w;
    }
    return $svg . '</svg>';
};
$row = static fn (string $name, string $label, mixed $value, ?string $shown = null): string => sprintf(
    '<tr><th>%s</th><td data-stat="%s" data-value="%s">%s</td></tr>', $h($label), $h($name), $h($value), $h($shown ?? $value));
?>
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ephpm status</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
  h1 { font-size: 1.4em; }
  table { border-collapse: collapse; margin: 1em 0; }
  th { text-align: left; font-weight: normal; color: #555; padding: 2px 1.5em 2px 0; }
  td { font-variant-numeric: tabular-nums; }
  .banner { background: #fff3cd; border: 1px solid #e0c060; padding: .8em 1em; max-width: 60em; }
  .charts div { margin: .6em 0; display: flex; gap: 1em; align-items: center; }
</style>
</head>
<body>
<h1>ephpm status</h1>
<?php if ($private): ?>
<p class="banner" id="private-banner">This store is private to this php-fpm worker (pid <?= getmypid() ?>):
other workers have their own, and locks and sessions are not shared between them.
Leave <code>ephpm.kv_backend</code> at <code>auto</code> (the pool's shared-memory segment), or set it to <code>shm://NAME</code> or a Redis or Valkey URL, to share them.</p>
<?php endif ?>
<table>
<?= $row('backend', 'backend', $s['backend']) ?>
<?= $row('instance_id', 'instance id', $s['instance_id']) ?>
<?= $row('library', 'library', $s['library']) ?>
<?= $row('eviction', 'eviction', $s['eviction']) ?>
<?= $row('compression', 'compression', $s['compression']) ?>
<?= $row('bytes_used', 'memory used', $s['bytes_used'], $bytes($s['bytes_used'])) ?>
<?= $row('memory_limit', 'memory limit', $s['memory_limit'], $s['memory_limit'] > 0 ? $bytes($s['memory_limit']) : 'none') ?>
<?= $row('keys', 'keys', $s['keys']) ?>
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
<div class="charts">
  <div><?= $bar(['used' => [$s['bytes_used'], '#4a7'], 'free' => [max(0, $s['memory_limit'] - $s['bytes_used']), '#ddd']]) ?>
    memory: <?= $h($bytes($s['bytes_used'])) ?> used<?= $s['memory_limit'] > 0 ? ' of ' . $h($bytes($s['memory_limit'])) : '' ?></div>
  <div><?= $bar(['hits' => [$s['hits'], '#4a7'], 'misses' => [$s['misses'], '#d64']]) ?>
    lookups: <?= $h($s['hits']) ?> hits (green), <?= $h($s['misses']) ?> misses (red)</div>
  <div><?= $bar(['won' => [$s['set_nx_wins'], '#4a7'], 'lost' => [$s['set_nx_losses'], '#e93'], 'timed out' => [$s['lock_timeouts'], '#d64']]) ?>
    locks: <?= $h($s['set_nx_wins']) ?> won (green), <?= $h($s['set_nx_losses']) ?> lost (orange), <?= $h($s['lock_timeouts']) ?> waits timed out (red)</div>
</div>
</body>
</html>
