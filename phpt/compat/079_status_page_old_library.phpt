--TEST--
ephpm: the status page with a library from before it (no scan member, no rates) shows the figures and says there is no walk, no rates, no key browser
--EXTENSIONS--
ephpm
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
$dir = ephpm_modules_dir() . '/test';
$page = realpath(__DIR__ . '/../../examples/status.php');
// The page, as a GET of each format, in a child on the old table.
$render = fn (string $format) => ephpm_child(
    '$_GET["format"] = ' . var_export($format, true) . '; require ' . var_export($page, true) . ';',
    ['ephpm.library' => "$dir/libfake_prescan.so"]);

$html = $render('');
// The text of the element with id $id (the page's markup, no DOM: run-tests runs with -n).
$text = function (string $tag, string $id) use ($html): string {
    return preg_match('~<' . $tag . '[^>]* id="' . $id . '"[^>]*>(.*?)</' . $tag . '>~s', $html, $m)
        ? trim(preg_replace('/\s+/', ' ', html_entity_decode(strip_tags($m[1])))) : '(none)';
};
echo 'errors: ', preg_match('/(Fatal|Warning|Uncaught|Notice)/', $html) ? $html : 'none', "\n";
echo 'hits: ', preg_match('/data-stat="hits" data-value="(\d+)"/', $html, $m) ? $m[1] : '(none)', "\n";
echo str_replace($dir, '[dir]', $text('p', 'old-library-banner')), "\n";
echo $text('p', 'no-rates'), "\n";
echo $text('p', 'no-locks'), "\n";
echo $text('td', 'session-count'), "\n";
echo $text('p', 'no-browser'), "\n";
echo 'tables: ', preg_match_all('/id="(locks|keys|rates)-table"/', $html), "\n";

$metrics = $render('prometheus');
echo 'metrics: ', preg_match('/^ephpm_hits_total\{[^}]*\} 3$/m', $metrics), ' hits, ',
    preg_match('/^ephpm_(locks_held|sessions)\{/m', $metrics), " walked figures\n";

// A library from before ephpm_kv_stats() (the first table): one line that says so.
echo str_replace($dir, '[dir]', ephpm_child('require ' . var_export($page, true) . ';',
    ['ephpm.library' => "$dir/libfake_v1.so"])), "\n";
?>
--EXPECTF--
errors: none
hits: 3
The loaded library is older than this page: it keeps no rates and cannot walk the store, so no held locks, session count or key browser are shown (ephpm_kv_scan(): not supported by the loaded library [dir]/libfake_prescan.so: its table (%d bytes) is older than this extension's (%d bytes); install the library built with this extension).
The loaded library keeps no rates (it is older than them).
The loaded library cannot walk the store.
not known (no walk of the store)
No key browser: the loaded library cannot walk the store.
tables: 0
metrics: 1 hits, 0 walked figures
ephpm status: the loaded library is too old for this page: ephpm_kv_stats(): not supported by the loaded library [dir]/libfake_v1.so: its table (48 bytes) is older than this extension's (%d bytes); install the library built with this extension
