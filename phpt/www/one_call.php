<?php
// One call on the store, named by ?call= (setnx, refresh or store), and
// what it answered: its value, or "refused: " and the exception's message.
try {
    echo match ($_GET['call']) {
        'setnx' => var_export(ephpm_kv_setnx($_GET['key'], $_GET['token'], 60), true),
        'refresh' => var_export(ephpm_kv_lock_refresh($_GET['key'], $_GET['token'], 60), true),
        'store' => ephpm_kv_stats()['store'],
    };
} catch (Ephpm\KvException $e) {
    echo 'refused: ', $e->getMessage();
}
