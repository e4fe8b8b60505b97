<?php
// Session scenarios for the phpt suite, run under `php -S` (see inc/server.inc).
// The session id comes from ?sid=, so no cookies are needed.
session_id($_GET['sid']);
$lockKey = 'session_lock:' . $_GET['sid'];

switch ($_GET['do']) {
    case 'token':       // report this request's lock token
        session_start();
        echo ephpm_kv_get($lockKey);
        break;
    case 'exit':        // leave with exit() while holding the lock
        session_start();
        $_SESSION['by'] = 'exit';
        echo 'held:', ephpm_kv_get($lockKey) !== null ? 'yes' : 'no';
        exit(0);
    case 'throw':       // leave with an uncaught exception
        session_start();
        $_SESSION['by'] = 'throw';
        throw new RuntimeException('boom');
    case 'fatal':       // leave with a fatal error (memory exhausted)
        session_start();
        ini_set('memory_limit', '8M');
        $s = str_repeat('x', 32 << 20);
        break;
    case 'hold':        // a foreign lock on the session, for 300 s (it outlives the slowest run), and data
        ephpm_kv_set('session:' . $_GET['sid'], 'v|s:5:"keep!";');
        echo var_export(ephpm_kv_setnx($lockKey, 'foreign', 300), true);
        break;
    case 'timeout':     // wait for that lock with a 1 s max_execution_time
        set_time_limit(1);
        session_start();
        echo "not reached\n";
        break;
    case 'add':         // add this request's own key, after a little work
        session_start();
        usleep(2000);
        $_SESSION['k' . $_GET['i']] = getmypid();
        echo getmypid();
        break;
    case 'count':       // how many keys the session holds
        session_start(['read_and_close' => true]);
        echo count($_SESSION);
        break;
    case 'inspect':     // what the store holds for the session, without starting it
        header('Content-Type: application/json');
        echo json_encode(['lock' => ephpm_kv_get($lockKey), 'data' => ephpm_kv_get('session:' . $_GET['sid'])]);
        break;
}
