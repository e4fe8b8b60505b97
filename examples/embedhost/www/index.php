<?php
// Run by PHP embedded in a Go program: the store is the host's own.
echo "greeting from the host: ", ephpm_kv_get('host:greeting') ?? '(none)', "\n";
echo "requests so far: ", ephpm_kv_incr('php:requests'), "\n";
echo "library: ", ephpm_kv_stats()['library'], "\n";
