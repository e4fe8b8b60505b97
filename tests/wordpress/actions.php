<?php
/*
 * What tests/wordpress/run.sh asks of a WordPress site, one action per
 * request (?do=...), inside a real WordPress request (installed by lib.sh
 * as ephpm-test.php in the document root). It prints "name value" lines.
 *
 * A request given ?barrier=FILE&racers=N boots WordPress, then waits on
 * FILE (a shared flock the test holds exclusively, released once every
 * request waits), then counts itself in on the store's own counter and
 * polls it until all N have (a flock's release wakes every waiter, but on
 * a host of 2 CPUs the first to run could be done before the others are
 * scheduled): the racing requests act together.
 */
require __DIR__ . '/wp-load.php';

header('Content-Type: text/plain');
$say = static function (string $name, $value): void {
    echo $name, ' ', is_bool($value) ? ($value ? 'true' : 'false') : (is_scalar($value) ? $value : json_encode($value)), "\n";
};
$get = static fn (string $name, string $default = ''): string => isset($_GET[$name]) ? (string) $_GET[$name] : $default;

if ($get('barrier') !== '') {
    $f = fopen($get('barrier'), 'r');
    flock($f, LOCK_SH);
    flock($f, LOCK_UN);
    // The counter's hour and the 600 s are hang catches, not speed bounds;
    // a poll of 1 ms leaves the CPUs to the racers still on their way.
    $counter = 'ephpm-test-barrier:' . $get('barrier');
    ephpm_kv_incr($counter, 1, 3600);
    for ($deadline = microtime(true) + 600; (int) ephpm_kv_get($counter) < (int) $get('racers') && microtime(true) < $deadline;) {
        usleep(1000);
    }
}
$say('pid', getmypid());

switch ($get('do')) {
    case 'edit': // a post's title changed, as the editor would
        $id = wp_update_post(['ID' => (int) $get('id'), 'post_title' => $get('title')], true);
        $say('updated', is_wp_error($id) ? $id->get_error_message() : $id);
        break;

    case 'marker-set': // a key of the test's own group
        $say('set', wp_cache_set($get('key'), $get('value'), 'ephpm-test'));
        break;

    case 'marker-get':
        $value = wp_cache_get($get('key'), 'ephpm-test', false, $found);
        $say('found', $found);
        $say('value', $found ? $value : '-');
        break;

    case 'flush':
        $say('flushed', wp_cache_flush());
        break;

    case 'race-add':
        // wp_cache_add of keys k0..k(N-1), from k(START) on and round
        // (racers starting at different keys meet on every key); prints
        // the keys this request added.
        $won = [];
        $n = (int) $get('keys', '200');
        $t = hrtime(true);
        for ($j = 0, $start = (int) $get('start'); $j < $n; $j++) {
            $i = ($start + $j) % $n;
            if (wp_cache_add("k$i", getmypid(), $get('group'))) {
                $won[] = $i;
            }
        }
        $say('us', intdiv(hrtime(true) - $t, 1000));
        sort($won);
        $say('won', $won ? implode(',', $won) : '-');
        break;

    case 'race-option': // one option written, by update_option
        $say('updated', update_option($get('name'), $get('value')));
        break;

    case 'options':
        // The options NAME0..NAME(N-1), each expected to hold VALUE$i: as
        // the cache's alloptions holds them, as the database does, and as
        // get_option() answers. Asked with ?savequeries=1: whether this
        // request's alloptions came from the cache (WordPress read no
        // autoloaded options from the database).
        $name = $get('name');
        $want = $get('value');
        $n = (int) $get('n');
        $loaded = 0;
        foreach ((array) $wpdb->queries as $q) {
            $loaded += (int) (bool) preg_match('/FROM \S*options\s+WHERE autoload/i', $q[0]);
        }
        $say('alloptions_from_db', $loaded > 0);
        $all = wp_cache_get('alloptions', 'options');
        $say('alloptions_cached', is_array($all));
        $all = is_array($all) ? $all : [];
        $rows = [];
        foreach ($wpdb->get_results($wpdb->prepare(
            "SELECT option_name, option_value FROM $wpdb->options WHERE option_name LIKE %s",
            $wpdb->esc_like($name) . '%'
        )) as $row) {
            $rows[$row->option_name] = $row->option_value;
        }
        $missing = $stale = $db_missing = $read_wrong = [];
        for ($i = 0; $i < $n; $i++) {
            if (!array_key_exists("$name$i", $all)) {
                $missing[] = $i;
            } elseif ($all["$name$i"] !== "$want$i") {
                $stale[] = $i;
            }
            if (($rows["$name$i"] ?? null) !== "$want$i") {
                $db_missing[] = $i;
            }
            if (get_option("$name$i") !== "$want$i") {
                $read_wrong[] = $i;
            }
        }
        $say('cache_missing', count($missing));
        $say('cache_stale', count($stale));
        $say('db_wrong', count($db_missing));
        $say('get_option_wrong', count($read_wrong));
        break;

    case 'multisite': // step 1, then step 2 in a new request
        if (!is_multisite()) {
            $say('error', 'not a multisite network');
            break;
        }
        $key = $get('key');
        if ($get('step') === '1') {
            // Site 1 writes a key in "posts" (a site's group) and one in
            // "users" (a global group); site 2 then looks for both, and
            // writes its own under the same name.
            wp_cache_set($key, 'site-1', 'posts');
            wp_cache_set($key, 'global', 'users');
            switch_to_blog(2);
            $value = wp_cache_get($key, 'posts', false, $found);
            $say('site2_sees_site1_posts_key', $found);
            $say('site2_users_key', wp_cache_get($key, 'users'));
            wp_cache_set($key, 'site-2', 'posts');
            // Post 1 of site 2 (each site has its own "Hello world!").
            $say('site2_edit', wp_update_post(['ID' => 1, 'post_title' => $get('title')]));
            restore_current_blog();
            $say('site1_posts_key', wp_cache_get($key, 'posts'));
        } else {
            // A new request: the values come from the shared store.
            $say('site1_posts_key', wp_cache_get($key, 'posts'));
            $say('site1_users_key', wp_cache_get($key, 'users'));
            $say('site1_post1', str_replace(' ', '_', get_post(1)->post_title));
            $say('site1_name', get_option('blogname'));
            switch_to_blog(2);
            $say('site2_posts_key', wp_cache_get($key, 'posts'));
            $say('site2_users_key', wp_cache_get($key, 'users'));
            $say('site2_post1', str_replace(' ', '_', get_post(1)->post_title));
            $say('site2_name', get_option('blogname'));
            restore_current_blog();
        }
        break;

    default:
        $say('error', 'unknown action');
}
