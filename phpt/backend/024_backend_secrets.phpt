--TEST--
ephpm.kv_backend: a Redis password appears in no exception, warning, stats or phpinfo(), whatever is wrong with the URL
--EXTENSIONS--
ephpm
session
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
// Everything a visitor or a log could see, with display_errors on.
$code = <<<'PHP'
    foreach ([fn () => ephpm_kv_get('k'), fn () => ephpm_kv_stats()] as $f) {
        try { $f(); } catch (Ephpm\KvException $e) { echo 'exception: ', $e->getMessage(), "\n"; }
    }
    set_error_handler(function ($no, $msg) { echo "warning: $msg\n"; return true; });
    session_id('t24');
    session_start();
    restore_error_handler();
    phpinfo(INFO_MODULES);
    ephpm_kv_get('k');                              // uncaught: PHP prints it
    PHP;
foreach ([
    'redis://:Sup3rS3cret@127.0.0.1:6379/abc',
    'redis://:Sup3rS3cret@127.0.0.1:6379?max_retries=1',
    'redis://:Sup3rS3cret@127.0.0.1:6379?dial_timeout=soon',
    'redis+sentinel://:Sup3rS3cret@127.0.0.1:1?master_name=m&password=Sup3rS3cret&dial_timeout=soon',
    'redis://:Sup3r/S3cret@127.0.0.1:6379',
] as $url) {
    $out = ephpm_child($code, ['ephpm.kv_backend' => "\"$url\"", 'display_errors' => 'On',
                               'session.save_handler' => 'ephpm', 'session.use_cookies' => '0']);
    echo $url, ":\n";
    preg_match_all('~^(exception|warning: session_start\(\): ephpm): .*$|^ephpm\.kv_backend => .*$|^PHP Fatal error: .*$|^Fatal error: .*$~m', $out, $m);
    echo preg_replace('~the library \S+~', 'the library [path]', implode("\n", $m[0])), "\n";
    echo 'secret shown: ', var_export(str_contains($out, 'Sup3r') || str_contains($out, 'S3cret'), true), "\n\n";
}

// The phpinfo() displayer's masking, case by case (the same rule as the
// library's messages: redisstore/redact.go).
foreach ([
    'redis://app:pw@h:1',
    'redis://pw@h:1',
    'redis://:p@w/o?r#d@h:1?db=2',
    'redis:pw@h',
    'unix://:pw@/run/redis.sock?db=1',
    'unix:///run/redis.sock',
    'redis+sentinel://a:1?password=d@p&master_name=m',
    'redis://h?sentinel_password=x&Pass%77ord=y&password&',
    'redis://h?',
    'memory',
] as $url) {
    $out = ephpm_child('phpinfo(INFO_MODULES);', ['ephpm.kv_backend' => "\"$url\""]);
    preg_match('~^ephpm\.kv_backend => (.*) => ~m', $out, $m);
    echo $url, ' -> ', $m[1], "\n";
}
?>
--EXPECT--
redis://:Sup3rS3cret@127.0.0.1:6379/abc:
exception: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379/abc: redis: invalid database number: "abc"
exception: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379/abc: redis: invalid database number: "abc"
warning: session_start(): ephpm: session handler: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379/abc: redis: invalid database number: "abc"
ephpm.kv_backend => redis://xxxxx@127.0.0.1:6379/abc => redis://xxxxx@127.0.0.1:6379/abc
Fatal error: Uncaught Ephpm\KvException: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379/abc: redis: invalid database number: "abc" in Command line code:9
secret shown: false

redis://:Sup3rS3cret@127.0.0.1:6379?max_retries=1:
exception: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379?max_retries=1: max_retries is not accepted: ephpm never retries a command whose reply was lost
exception: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379?max_retries=1: max_retries is not accepted: ephpm never retries a command whose reply was lost
warning: session_start(): ephpm: session handler: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379?max_retries=1: max_retries is not accepted: ephpm never retries a command whose reply was lost
ephpm.kv_backend => redis://xxxxx@127.0.0.1:6379?max_retries=1 => redis://xxxxx@127.0.0.1:6379?max_retries=1
Fatal error: Uncaught Ephpm\KvException: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379?max_retries=1: max_retries is not accepted: ephpm never retries a command whose reply was lost in Command line code:9
secret shown: false

redis://:Sup3rS3cret@127.0.0.1:6379?dial_timeout=soon:
exception: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379?dial_timeout=soon: redis: invalid dial_timeout duration: time: invalid duration "soon"
exception: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379?dial_timeout=soon: redis: invalid dial_timeout duration: time: invalid duration "soon"
warning: session_start(): ephpm: session handler: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379?dial_timeout=soon: redis: invalid dial_timeout duration: time: invalid duration "soon"
ephpm.kv_backend => redis://xxxxx@127.0.0.1:6379?dial_timeout=soon => redis://xxxxx@127.0.0.1:6379?dial_timeout=soon
Fatal error: Uncaught Ephpm\KvException: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379?dial_timeout=soon: redis: invalid dial_timeout duration: time: invalid duration "soon" in Command line code:9
secret shown: false

redis+sentinel://:Sup3rS3cret@127.0.0.1:1?master_name=m&password=Sup3rS3cret&dial_timeout=soon:
exception: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis+sentinel://xxxxx@127.0.0.1:1?master_name=m&password=xxxxx&dial_timeout=soon: redis: invalid dial_timeout duration: time: invalid duration "soon"
exception: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis+sentinel://xxxxx@127.0.0.1:1?master_name=m&password=xxxxx&dial_timeout=soon: redis: invalid dial_timeout duration: time: invalid duration "soon"
warning: session_start(): ephpm: session handler: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis+sentinel://xxxxx@127.0.0.1:1?master_name=m&password=xxxxx&dial_timeout=soon: redis: invalid dial_timeout duration: time: invalid duration "soon"
ephpm.kv_backend => redis+sentinel://xxxxx@127.0.0.1:1?master_name=m&password=xxxxx&dial_timeout=soon => redis+sentinel://xxxxx@127.0.0.1:1?master_name=m&password=xxxxx&dial_timeout=soon
Fatal error: Uncaught Ephpm\KvException: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis+sentinel://xxxxx@127.0.0.1:1?master_name=m&password=xxxxx&dial_timeout=soon: redis: invalid dial_timeout duration: time: invalid duration "soon" in Command line code:9
secret shown: false

redis://:Sup3r/S3cret@127.0.0.1:6379:
exception: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379: its user info or a password parameter is not valid in a URL (percent-encode characters such as @ : / ? # & % in it)
exception: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379: its user info or a password parameter is not valid in a URL (percent-encode characters such as @ : / ? # & % in it)
warning: session_start(): ephpm: session handler: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379: its user info or a password parameter is not valid in a URL (percent-encode characters such as @ : / ? # & % in it)
ephpm.kv_backend => redis://xxxxx@127.0.0.1:6379 => redis://xxxxx@127.0.0.1:6379
Fatal error: Uncaught Ephpm\KvException: ephpm: the library [path] refused ephpm.kv_backend: kv: invalid argument: invalid Redis backend URL redis://xxxxx@127.0.0.1:6379: its user info or a password parameter is not valid in a URL (percent-encode characters such as @ : / ? # & % in it) in Command line code:9
secret shown: false

redis://app:pw@h:1 -> redis://xxxxx@h:1
redis://pw@h:1 -> redis://xxxxx@h:1
redis://:p@w/o?r#d@h:1?db=2 -> redis://xxxxx@h:1?db=2
redis:pw@h -> redis:xxxxx@h
unix://:pw@/run/redis.sock?db=1 -> unix://xxxxx@/run/redis.sock?db=1
unix:///run/redis.sock -> unix:///run/redis.sock
redis+sentinel://a:1?password=d@p&master_name=m -> redis+sentinel://a:1?password=xxxxx&master_name=m
redis://h?sentinel_password=x&Pass%77ord=y&password& -> redis://h?sentinel_password=xxxxx&Pass%77ord=xxxxx&password&
redis://h? -> redis://h?
memory -> memory
