<?php
// Counts this request into the store and says which store served it.
echo ephpm_kv_incr('www:count'), ' ', getmypid(), ' ', ephpm_kv_stats()['store'];
