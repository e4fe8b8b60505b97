<?php
/*
 * The Debian package's debian/ephpm.ini stays in step with the extension:
 * it lists every ephpm.* setting the loaded extension registers (and no
 * other), each commented out, with the extension's own default and a
 * one-line description on the line above; its only active line is
 * extension=ephpm.so, so that installing the package sets nothing; and its
 * "; priority=" (phpenmod's load order) is composer.json's (PIE's).
 *
 * Usage: php -n -d extension=PATH/ephpm.so tests/check_ini.php INI_FILE
 * (-n: the defaults are the extension's, not a php.ini's.) Exits 1 on any
 * difference, naming it.
 */
$file = $argv[1] ?? '';
$lines = @file($file, FILE_IGNORE_NEW_LINES);
if ($lines === false) {
    fwrite(STDERR, "usage: php -n -d extension=ephpm.so tests/check_ini.php INI_FILE\n");
    exit(2);
}
if (!extension_loaded('ephpm')) {
    fwrite(STDERR, "check_ini: the ephpm extension is not loaded\n");
    exit(2);
}

$errors = [];
$settings = [];   // name => the default the file shows
$active = [];
$priority = null;
foreach ($lines as $i => $line) {
    $n = $i + 1;
    if (preg_match('/^;[ \t]*priority[ \t]*=[ \t]*([0-9]+)[ \t]*$/', $line, $m)) {
        $priority = (int)$m[1];
    } elseif (preg_match('/^;(ephpm\.[a-z_]+) =(?: (.*))?$/', $line, $m)) {
        [$name, $shown] = [$m[1], $m[2] ?? ''];
        if (isset($settings[$name])) {
            $errors[] = "line $n: $name is listed twice";
        }
        // The value as PHP would read it once the ';' is removed.
        $parsed = parse_ini_string("x = $shown", false, INI_SCANNER_NORMAL);
        $settings[$name] = $parsed === false ? null : (string)$parsed['x'];
        $above = $lines[$i - 1] ?? '';
        if (!preg_match('/^; \S/', $above) || preg_match('/^;ephpm\./', $above)) {
            $errors[] = "line $n: $name has no one-line description above it";
        }
    } elseif (trim($line) !== '' && !str_starts_with($line, ';')) {
        $active[] = "line $n: $line";
    }
}

if (count($active) !== 1 || !str_ends_with($active[0], ': extension=ephpm.so')) {
    $errors[] = "the only active line must be extension=ephpm.so; active: " . implode('; ', $active);
}

$composer = json_decode((string)@file_get_contents(__DIR__ . '/../composer.json'), true);
$want_priority = $composer['php-ext']['priority'] ?? null;
if ($priority === null || $priority !== $want_priority) {
    $errors[] = "priority " . var_export($priority, true) . " is not composer.json's php-ext.priority "
        . var_export($want_priority, true);
}

$registered = ini_get_all('ephpm', true);
foreach ($registered as $name => $entry) {
    if (!array_key_exists($name, $settings)) {
        $errors[] = "$name (default '" . $entry['global_value'] . "') is missing";
    } elseif ($settings[$name] !== (string)$entry['global_value']) {
        $errors[] = "$name shows '" . $settings[$name] . "', its default is '" . $entry['global_value'] . "'";
    }
}
foreach (array_diff_key($settings, $registered) as $name => $_) {
    $errors[] = "$name is not a setting of the extension";
}

foreach ($errors as $e) {
    echo "FAIL: $file: $e\n";
}
if ($errors) {
    exit(1);
}
echo "ok: $file lists the " . count($registered) . " ephpm settings with their defaults\n";
