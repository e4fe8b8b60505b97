<?php
// The frameworks' own code, as Debian ships it, and the adapters.
require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';
require_once '/usr/share/php/Illuminate/Cache/autoload.php';
require_once '/usr/share/php/Psr/SimpleCache/autoload.php';

spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Ephpm\\')) {
        $file = __DIR__ . '/../src/' . str_replace('\\', '/', substr($class, 6)) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});

if (!extension_loaded('ephpm')) {
    fwrite(STDERR, "Load the extension: php -d extension=/path/to/ephpm.so /usr/bin/phpunit\n");
    exit(1);
}

/** A PHP process of its own, with the extension (EPHPM_SO) and this process's backend, running $code. */
function ephpm_test_spawn(string $code): array
{
    $cmd = [PHP_BINARY, '-n', '-d', 'extension=' . getenv('EPHPM_SO'), '-d', 'ephpm.kv_backend=' . ini_get('ephpm.kv_backend'), '-r', $code];
    $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
    return [$proc, $pipes];
}

/**
 * Runs $code $rounds times in each of $n PHP processes of their own (the
 * extension, this process's backend and this bootstrap loaded; $i is each
 * one's number, 0 to $n - 1, and $r the round's, 0 to $rounds - 1),
 * released together at a barrier before each round: each process says it
 * is ready and blocks reading its stdin, which is written only once all $n
 * have said so. Returns what each wrote to stdout, in order; throws if one
 * did not get ready, wrote to stderr or exited with an error.
 *
 * @return list<string>
 */
function ephpm_test_race(int $n, string $code, int $rounds = 1): array
{
    // No php.ini, as ephpm_test_spawn(); mbstring, which Laravel's Carbon
    // needs, where it is a module of its own.
    $modules = is_file(ini_get('extension_dir') . '/mbstring.so') ? ['-d', 'extension=mbstring'] : [];
    $children = [];
    for ($i = 0; $i < $n; $i++) {
        $cmd = [PHP_BINARY, '-n', ...$modules, '-d', 'display_errors=stderr', '-d', 'error_reporting=-1',
            '-d', 'extension=' . getenv('EPHPM_SO'), '-d', 'ephpm.kv_backend=' . ini_get('ephpm.kv_backend'),
            '-r', sprintf('$i = %d; require %s; for ($r = 0; $r < %d; $r++) { echo "ready\n"; if (fgets(STDIN) !== "go\n") { exit(3); } %s }',
                $i, var_export(__FILE__, true), $rounds, $code)];
        $proc = proc_open($cmd, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $children[] = [$proc, $pipes];
    }
    $outputs = array_fill(0, $n, '');
    $ready = true;
    for ($r = 0; $r < $rounds && $ready; $r++) {
        foreach ($children as $i => [, $pipes]) {
            while ($ready && ($line = fgets($pipes[1])) !== "ready\n") {
                $ready = $line !== false;
                $outputs[$i] .= $line;
            }
        }
        foreach ($children as [, $pipes]) {
            if ($ready) {
                fwrite($pipes[0], "go\n");
            }
        }
    }
    // If one was not ready, the others are let go without "go" and end
    // there, so that no process waits at the barrier forever.
    $errors = '';
    foreach ($children as $i => [$proc, $pipes]) {
        fclose($pipes[0]);
        $outputs[$i] .= stream_get_contents($pipes[1]);
        $stderr = stream_get_contents($pipes[2]);
        $status = proc_close($proc);
        if ($stderr !== '' || $status !== 0) {
            $errors .= "process $i (exit status $status): $stderr\n";
        }
    }
    if (!$ready || $errors !== '') {
        throw new RuntimeException(($ready ? '' : "not every process got ready\n") . $errors);
    }

    return $outputs;
}
