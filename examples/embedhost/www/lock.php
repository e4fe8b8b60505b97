<?php
require __DIR__ . '/../../lock.php';
