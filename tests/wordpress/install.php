<?php
/*
 * Installs WordPress into the database the document root's wp-config.php
 * names, from the command line (Debian has no wp-cli): what the installer's
 * last step does, wp_install(). With "network" it then turns the site into
 * a multisite network (what the Network Setup screen does); with "add-site
 * PATH TITLE", run once wp-config.php says MULTISITE, it adds a site of the
 * network at PATH. Used by tests/wordpress/run.sh and bench/wordpress.sh.
 *
 * With "posts N" it adds N published posts (a few paragraphs, a category
 * and two tags each), for a front page of some substance.
 *
 * Usage: php install.php DOCROOT single|network TITLE
 *        php install.php DOCROOT add-site PATH TITLE
 *        php install.php DOCROOT posts N
 *        php install.php DOCROOT theme NAME   (switches to an installed theme)
 */
[$root, $mode, $a, $b] = array_pad(array_slice($argv, 1), 4, '');
// What the web installer would have from its request.
$_SERVER += ['HTTP_HOST' => 'localhost', 'SERVER_NAME' => 'localhost', 'SERVER_PORT' => '80',
             'REQUEST_URI' => '/', 'REQUEST_METHOD' => 'GET', 'SCRIPT_NAME' => '/index.php',
             'REMOTE_ADDR' => '127.0.0.1'];

if ($mode === 'posts') {
    require $root . '/wp-load.php';
    $category = wp_insert_term('Measured', 'category')['term_id'];
    for ($i = 1; $i <= (int) $a; $i++) {
        $text = '';
        for ($p = 1; $p <= 4; $p++) {
            $text .= "<!-- wp:paragraph -->\n<p>Paragraph $p of post $i: " . str_repeat('words of some length ', 12) . "</p>\n<!-- /wp:paragraph -->\n\n";
        }
        $id = wp_insert_post(['post_title' => "Post $i", 'post_content' => $text, 'post_status' => 'publish',
                              'post_category' => [$category], 'tags_input' => ["tag$i", 'common']], true);
        if (is_wp_error($id)) {
            fwrite(STDERR, 'install: a post: ' . $id->get_error_message() . "\n");
            exit(1);
        }
    }
    echo "$a posts\n";
    exit(0);
}
if ($mode === 'theme') {
    require $root . '/wp-load.php';
    if (!wp_get_theme($a)->exists()) {
        fwrite(STDERR, "install: no theme $a in " . get_theme_root() . "\n");
        exit(1);
    }
    switch_theme($a);
    echo 'theme ', get_stylesheet(), "\n";
    exit(0);
}
if ($mode === 'add-site') {
    require $root . '/wp-load.php';
    require_once ABSPATH . 'wp-admin/includes/admin.php';
    $id = wp_insert_site(['domain' => 'localhost', 'path' => $a, 'title' => $b, 'user_id' => 1]);
    if (is_wp_error($id)) {
        fwrite(STDERR, "install: adding the site $a failed: " . $id->get_error_message() . "\n");
        exit(1);
    }
    echo "site $id at $a\n";
    exit(0);
}

define('WP_INSTALLING', true);
// No mail is sent (there is no MTA): the installer's one pluggable notice.
function wp_new_blog_notification($blog_title, $blog_url, $user_id, $password)
{
}
require $root . '/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';

$result = wp_install($a, 'admin', 'admin@example.com', true, '', 'ephpm-test-password');
if (empty($result['user_id'])) {
    fwrite(STDERR, "install: wp_install gave no user\n");
    exit(1);
}
// A release whose default theme Debian ships apart (the newer ones) gets
// the first theme there is.
if (!wp_get_theme()->exists()) {
    $themes = array_keys(wp_get_themes());
    if (!$themes) {
        fwrite(STDERR, "install: no theme installed in " . get_theme_root() . "\n");
        exit(1);
    }
    switch_theme($themes[0]);
}
if ($mode === 'network') {
    // What wp-admin/network.php does before its form's step (install_network()
    // then defines WP_INSTALLING_NETWORK: defined before wp_install(), it
    // would have the network's tables made too, with no names yet).
    foreach ($wpdb->tables('ms_global') as $table => $prefixed) {
        $wpdb->$table = $prefixed;
    }
    install_network();
    $error = populate_network(1, 'localhost', 'admin@example.com', $a, '/', false);
    if (is_wp_error($error)) {
        fwrite(STDERR, 'install: populate_network: ' . $error->get_error_message() . "\n");
        exit(1);
    }
}
echo "installed: ", get_option('blogname'), ", theme ", get_stylesheet(), ", ", $wpdb->num_queries, " queries\n";
