<?php
// A session kept in the host's store: Go can read session:<sid>.
session_id($_GET['sid'] ?? 'embedhost');
session_start();
$_SESSION['visits'] = ($_SESSION['visits'] ?? 0) + 1;
echo 'visits: ', $_SESSION['visits'], "\n";
echo 'lock held while running: ', ephpm_kv_exists('session_lock:' . session_id()) ? 'yes' : 'no', "\n";
