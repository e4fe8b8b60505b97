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
