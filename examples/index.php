<?php
header('Content-Type: text/html; charset=utf-8');
?>
<!doctype html>
<title>ephpm demo</title>
<h1>ephpm demo</h1>
<p>The stale-release scenario, against the in-process store of this server:</p>
<ul>
  <li><a href="lock.php?release=del">lock.php?release=del</a>: A releases with a blind delete, and C gets in on top of B</li>
  <li><a href="lock.php?release=del_if_eq">lock.php?release=del_if_eq</a>: A releases with its token, and B keeps the lock</li>
</ul>
