#!/usr/bin/env bash
# The packages as a user gets them, in a fresh copy (an overlay) of a Debian
# chroot: what tests/deb_install.sh (Debian 12, PHP 8.2) and
# tests/matrix/debian.sh (Debian 13 and unstable, PHP 8.4) check of the
# packages scripts/deb.sh built for that chroot's PHP, php<X.Y>-ephpm (the
# extension) and ephpm (the command):
#   - `apt-get install ./php<X.Y>-ephpm_*.deb ./ephpm_*.deb` installs them,
#     apt resolving their dependencies; the extension depends on the PHP API
#     of the chroot's PHP;
#   - `php -m` lists ephpm, which reports the package's version and finds
#     libephpm.so by itself; phpenmod enabled it for every SAPI the chroot
#     has (cli, fpm, apache2, cgi); the installed ephpm.ini lists every
#     setting with the module's default;
#   - php-fpm, with the package's configuration and no ephpm setting (the
#     pool's shared-memory segment), gives one winner among 20 requests, each
#     in its own worker, released together from a barrier, for
#     ephpm_kv_setnx('lock', getmypid(), 3600); the ephpm command, on that
#     pool's segment, reads the winner's pid from the lock and lists it among
#     the held locks;
#   - `apt-get remove` leaves only the conffile (the module disabled for
#     every SAPI), and `apt-get purge` leaves nothing of the packages: dpkg
#     knows no file of them, no ephpm.ini is left in /etc/php, and the chroot
#     holds no file it did not hold before the install;
#   - lintian finds no error in them (their warnings are printed): the
#     chroot's lintian if it has one (that release's checks), else the
#     host's.
#
# BASE is never changed: the run installs into an overlay of it (its
# changes in a directory of its own, dropped afterwards), in a mount
# namespace of its own; every mount is undone on exit and php-fpm is
# stopped by its PID. BASE needs php<X.Y>-cli, php<X.Y>-fpm and libfcgi-bin
# (cgi-fcgi) installed, and package lists for apt. Mounts under BASE (a
# matrix chroot's /src, /proc, ...) are not part of the overlay.
#
# Usage: tests/deb_check.sh BASE PHP_VERSION EXTENSION_DEB COMMAND_DEB
# Needs root. Prints "N passed, M failed"; exits non-zero on a failure.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tests/chroot.sh"
[ $# = 4 ] || { echo "usage: tests/deb_check.sh BASE PHP_VERSION EXTENSION_DEB COMMAND_DEB" >&2; exit 2; }
base=$(realpath "$1") php=$2 deb=$(realpath "$3") command_deb=$(realpath "$4")
export PATH=$PATH:/usr/sbin:/sbin
# A mount namespace of our own: nothing mounted here is seen outside.
# Private propagation needs / to be a mount point, which it is not in a
# chroot (a fresh machine made with debootstrap): there the namespace keeps
# the parent's propagation, and the cleanup below undoes every mount.
if [ -z "${EPHPM_DEB_UNSHARED:-}" ]; then
  propagation=private
  unshare --mount --propagation private true 2>/dev/null || propagation=unchanged
  exec unshare --mount --propagation "$propagation" env EPHPM_DEB_UNSHARED=1 "$0" "$@"
fi
start=$SECONDS
phase() { echo "== $* ($((SECONDS - start)) s)"; }

debname=$(basename "$deb")
version=$(dpkg-deb -f "$deb" Version)
case $debname in php$php-ephpm_"$version"_*.deb) ;; *) echo "FAIL: $debname is not php$php-ephpm's"; exit 1 ;; esac
[ -f "$command_deb" ] || { echo "FAIL: no $command_deb"; exit 1; }
pkg=php$php-ephpm

tmp=$(mktemp -d)
run="$tmp/root"
mounted=() fpm_pid='' lintian_pid='' requests=()
cleanup() {
  local pid
  for pid in ${requests[@]+"${requests[@]}"} $lintian_pid; do kill "$pid" 2>/dev/null || true; done
  if [ -n "$fpm_pid" ] && kill -0 "$fpm_pid" 2>/dev/null; then
    kill -TERM "$fpm_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$fpm_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$fpm_pid" 2>/dev/null || true
  fi
  # Anything else still running in the overlay (a worker whose master died).
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    case $(readlink "/proc/$pid/root" 2>/dev/null) in "$run"|"$run"/*) kill -KILL "$pid" 2>/dev/null || true ;; esac
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[$i]}" 2>/dev/null || umount -lR "${mounted[$i]}" 2>/dev/null || true
  done
  chroot_remove "$tmp"
}
trap cleanup EXIT

passed=0 failed=0
check() { # check DESCRIPTION COMMAND...: one assertion
  local what=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok: $what"
  else failed=$((failed + 1)); echo "FAIL: $what"; fi
}
in_root() { chroot "$run" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"; }

lintian_in_chroot=''
[ -x "$base/usr/bin/lintian" ] && lintian_in_chroot=1
if [ -z "$lintian_in_chroot" ]; then
  # The host's lintian reads the packages while the chroot part runs.
  lintian --tag-display-limit 0 "$deb" "$command_deb" > "$tmp/lintian.txt" 2>&1 &
  lintian_pid=$!
fi

# A fresh copy of the base for this run: an overlay, its changes in $tmp.
mkdir -p "$run" "$tmp/upper" "$tmp/work"
mount -t overlay overlay -o "lowerdir=$base,upperdir=$tmp/upper,workdir=$tmp/work" "$run"
mounted+=("$run")
mount -t proc proc "$run/proc"
mounted+=("$run/proc")
# A /dev of the run's own (tests/chroot.sh), with its /dev/shm: the pool's
# segment is made there.
chroot_dev "$run"
mounted+=("$run/dev")

# What the chroot holds before the install (dpkg's and apt's own records,
# man-db's index, which its trigger rebuilds for the command's man page
# where man-db is installed, logs and /tmp aside), to compare with what it
# holds after the purge.
snapshot() {
  (cd "$run" && find . -xdev \( -path ./tmp -o -path ./var/lib/dpkg -o -path ./var/lib/apt \
      -o -path ./var/cache/apt -o -path ./var/cache/debconf -o -path ./var/cache/man -o -path ./var/log -o -path ./run \) -prune \
      -o -printf '%y %p\n' | sort)
}
snapshot > "$tmp/before.txt"

# --- install ---------------------------------------------------------------------
release=$(. "$run/etc/os-release" && echo "$PRETTY_NAME")
phase "apt-get install ./$debname ./$(basename "$command_deb") in a fresh copy of $release"
cp "$deb" "$command_deb" "$run/tmp/"
if ! in_root sh -c "cd /tmp && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ./$debname ./$(basename "$command_deb")" \
     > "$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"; echo "FAIL: apt-get install ./$debname"; exit 1
fi
grep -E '^(The following|  |Setting up)' "$tmp/install.log" || true
check "dpkg has $pkg $version installed" \
  test "$(in_root dpkg-query -W -f='${Status} ${Version}' "$pkg")" = "install ok installed $version"
api=$(in_root php -i | sed -n 's/^PHP API => //p')
depends=$(in_root dpkg-query -W -f='${Depends}' "$pkg")
check "it depends on the PHP API it was built for, the chroot's (phpapi-$api): $depends" \
  grep -qE "(^|, )phpapi-$api(,|$)" <<< "$depends"
modules=$(in_root php -m 2>&1 || true)
check "php -m lists ephpm" grep -qx ephpm <<< "$modules"
check "php -m warns of nothing$(grep -i warning <<< "$modules" | sed 's/^/: /')" \
  test "$(grep -ci warning <<< "$modules")" = 0
check "the module reports the package's version ($version)" \
  test "$(in_root php -r 'echo phpversion("ephpm");' 2>&1 || true)" = "$version"
extdir=$(in_root php -r 'echo ini_get("extension_dir");')
got=$(in_root php -r 'var_dump(ephpm_kv_setnx("k", "v", 5)); echo ephpm_kv_stats()["library"], "\n";' 2>&1 || true)
check "the CLI stores a key, with $extdir/libephpm.so found beside ephpm.so ($(tr '\n' ' ' <<< "$got"))" \
  test "$got" = "bool(true)
$extdir/libephpm.so"
# Every SAPI of this PHP that the chroot has (Debian 12's: cli, fpm and
# apache2; the matrix chroots': cli and fpm).
sapis=()
for sapi in cli fpm apache2 cgi; do [ -d "$base/etc/php/$php/$sapi" ] && sapis+=("$sapi"); done
for sapi in "${sapis[@]}"; do
  link=$(readlink "$run/etc/php/$php/$sapi/conf.d/30-ephpm.ini" || true)
  check "phpenmod enabled it for $sapi (conf.d/30-ephpm.ini -> $link)" \
    test "$link" = /etc/php/$php/mods-available/ephpm.ini
done
mkdir -p "$run/tmp/check/tests"
cp "$src/tests/check_ini.php" "$run/tmp/check/tests/"
cp "$src/composer.json" "$run/tmp/check/"
check "the installed ephpm.ini lists every setting with the installed module's default" \
  in_root php -n -d extension=ephpm.so /tmp/check/tests/check_ini.php /etc/php/$php/mods-available/ephpm.ini

# --- php-fpm: one winner among 20 ------------------------------------------------
phase "php-fpm with no ephpm setting: 20 requests race for one lock"
fpm="$run/tmp/fpm"
mkdir -p "$fpm/barrier"
chmod 1777 "$fpm/barrier"
cat > "$fpm/php-fpm.conf" <<'EOF'
[global]
pid = /tmp/fpm/php-fpm.pid
error_log = /tmp/fpm/error.log
daemonize = no

[race]
user = www-data
group = www-data
listen = /tmp/fpm/sock
pm = static
pm.max_children = 20
catch_workers_output = yes
EOF
cat > "$fpm/race.php" <<'EOF'
<?php
// One contender: loads the library (and the pool's segment) first, says it
// is ready, waits for the go file (a bounded poll: 600 s, a hang catch),
// then races. The lock's hour outlives the reads of it below.
$dir = '/tmp/fpm/barrier';
ephpm_kv_get('warm-up');
touch("$dir/ready." . getmypid());
$deadline = microtime(true) + 600;
while (!file_exists("$dir/go")) {
    if (microtime(true) > $deadline) {
        exit(json_encode(['pid' => getmypid(), 'error' => 'no go within 600 s']) . "\n");
    }
    usleep(1000);
}
$won = ephpm_kv_setnx('lock', (string)getmypid(), 3600);
echo json_encode(['pid' => getmypid(), 'won' => $won, 'store' => ephpm_kv_stats()['store']], JSON_UNESCAPED_SLASHES), "\n";
EOF
cat > "$fpm/holder.php" <<'EOF'
<?php
echo json_encode(['holder' => ephpm_kv_get('lock')]), "\n";
EOF
chroot "$run" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin php-fpm$php -F -y /tmp/fpm/php-fpm.conf > "$tmp/fpm.log" 2>&1 &
fpm_pid=$!
workers=0
for _ in $(seq 3000); do # up to 300 s for the master and its 20 workers (a hang catch)
  workers=$(pgrep -c -P "$fpm_pid" || true)
  [ -S "$fpm/sock" ] && [ "$workers" = 20 ] && break
  kill -0 "$fpm_pid" 2>/dev/null || break
  sleep 0.1
done
if [ ! -S "$fpm/sock" ] || [ "$workers" != 20 ]; then
  cat "$tmp/fpm.log" "$fpm/error.log" 2>/dev/null || true
  echo "FAIL: php-fpm did not start 20 workers ($workers)"; exit 1
fi
request() { # request SCRIPT: one FastCGI request to the pool, bounded (a hang catch)
  in_root env REQUEST_METHOD=GET SCRIPT_FILENAME="/tmp/fpm/$1" SCRIPT_NAME="/$1" \
    timeout 900 cgi-fcgi -bind -connect /tmp/fpm/sock
}
for i in $(seq 20); do
  request race.php > "$tmp/response.$i" 2>&1 &
  requests+=($!)
done
ready=0
for _ in $(seq 3000); do # up to 300 s for all 20 to wait at the barrier (a hang catch)
  ready=$(find "$fpm/barrier" -name 'ready.*' | wc -l)
  [ "$ready" = 20 ] && break
  sleep 0.1
done
check "all 20 requests wait at the barrier, each in a worker ($ready)" test "$ready" = 20
touch "$fpm/barrier/go"
for pid in "${requests[@]}"; do wait "$pid" || true; done
requests=()
cat "$tmp"/response.* | grep -h '^{' > "$tmp/results.txt" || true
results=$(wc -l < "$tmp/results.txt")
winners=$(grep -c '"won":true' "$tmp/results.txt" || true)
losers=$(grep -c '"won":false' "$tmp/results.txt" || true)
pids=$(grep -o '"pid":[0-9]*' "$tmp/results.txt" | sort -u | wc -l)
check "20 answers from 20 workers ($results answers, $pids processes)" test "$results:$pids" = 20:20
check "exactly one winner among 20 contenders ($winners won, $losers lost)" test "$winners:$losers" = 1:19
stores=$(grep -o '"store":"[^"]*"' "$tmp/results.txt" | sort -u)
www_uid=$(in_root id -u www-data)
check "every worker used the pool's shared-memory segment ($stores)" \
  grep -qx "\"store\":\"shm /dev/shm/ephpm-fpm-race.$www_uid (default: php-fpm pool race)\"" <<< "$stores"
winner=$(grep '"won":true' "$tmp/results.txt" | grep -o '"pid":[0-9]*' | cut -d: -f2 || true)
holder=$(request holder.php 2>&1 | grep '^{' || true)
check "the lock holds the winner's pid ($holder, winner $winner)" test "$holder" = "{\"holder\":\"$winner\"}"
read_by_command=$(in_root ephpm --pool race --user www-data get lock 2>&1 || true)
check "ephpm get on the pool's segment reads the winner's pid ($read_by_command)" test "$read_by_command" = "$winner"
held=$(in_root ephpm --pool race --user www-data --json locks 2>&1 || true)
check "ephpm locks lists the lock ($held)" grep -q '"lock"' <<< "$held"
if [ "$failed" != 0 ]; then
  echo "-- responses:"; cat "$tmp"/response.*; echo "-- php-fpm:"; cat "$tmp/fpm.log" "$fpm/error.log" 2>/dev/null || true
fi
kill -QUIT "$fpm_pid"
for _ in $(seq 1200); do kill -0 "$fpm_pid" 2>/dev/null || break; sleep 0.1; done # a hang catch
kill -0 "$fpm_pid" 2>/dev/null && { echo "FAIL: php-fpm did not stop on SIGQUIT within 120 s"; exit 1; }
wait "$fpm_pid" || true
fpm_pid=''
rm -rf "$fpm"

# --- remove, then purge ------------------------------------------------------------
phase "apt-get remove, then apt-get purge"
in_root dpkg-query -L "$pkg" ephpm > "$tmp/files.txt"
conffiles=$(in_root dpkg-query -W -f='${Conffiles}\n' "$pkg" ephpm | awk 'NF { print $1 }')
in_root env DEBIAN_FRONTEND=noninteractive apt-get remove -y "$pkg" ephpm > "$tmp/remove.log" 2>&1 \
  || { cat "$tmp/remove.log"; echo "FAIL: apt-get remove $pkg ephpm"; exit 1; }
check "after remove, dpkg keeps only its conffiles" \
  test "$(in_root dpkg-query -W -f='${Status}' "$pkg")" = "deinstall ok config-files"
left=()
while read -r f; do
  [ -d "$run$f" ] && [ ! -L "$run$f" ] && continue # directories others share
  if grep -qxF "$f" <<< "$conffiles"; then
    [ -e "$run$f" ] || left+=("conffile $f is gone")
  elif [ -e "$run$f" ] || [ -L "$run$f" ]; then
    left+=("$f")
  fi
done < "$tmp/files.txt"
check "after remove, every file of the packages is gone but the conffile ($conffiles) ${left[*]:-}" \
  test ${#left[@]} = 0
links=$(find "$run/etc/php" -name '*ephpm*' -type l)
check "after remove, the module is enabled for no SAPI ($links)" test -z "$links"
modules=$(in_root php -m 2>&1 || true)
check "after remove, php -m neither lists ephpm nor warns" \
  test "$(grep -ci 'ephpm\|warning' <<< "$modules")" = 0
in_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y "$pkg" ephpm > "$tmp/purge.log" 2>&1 \
  || { cat "$tmp/purge.log"; echo "FAIL: apt-get purge $pkg ephpm"; exit 1; }
for p in "$pkg" ephpm; do
  check "after purge, dpkg -L $p lists nothing" test -z "$(in_root dpkg-query -L "$p" 2>/dev/null || true)"
  check "after purge, dpkg knows no $p" test -z "$(in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -v not-installed || true)"
done
inis=$(find "$run/etc/php" -name '*ephpm*')
check "after purge, no ephpm.ini in /etc/php ($inis)" test -z "$inis"
left=()
while read -r f; do
  { [ -d "$run$f" ] && [ ! -L "$run$f" ]; } && continue
  { [ -e "$run$f" ] || [ -L "$run$f" ]; } && left+=("$f")
done < "$tmp/files.txt"
check "after purge, no file of the packages is left ${left[*]:-}" test ${#left[@]} = 0
snapshot > "$tmp/after.txt"
new=$(comm -13 "$tmp/before.txt" "$tmp/after.txt")
check "after purge, the chroot holds no file it did not hold before the install${new:+: $new}" test -z "$new"

# --- lintian -------------------------------------------------------------------------
lintian_rc=0
if [ -n "$lintian_in_chroot" ]; then
  # After the comparison above: lintian leaves files of its own (caches).
  phase "lintian $debname $(basename "$command_deb"), $release's"
  in_root sh -c "cd /tmp && lintian --tag-display-limit 0 ./$debname ./$(basename "$command_deb")" \
    > "$tmp/lintian.txt" 2>&1 || lintian_rc=$?
  lintian_version=$(in_root lintian --version)
else
  phase "lintian $debname $(basename "$command_deb"), the host's"
  wait "$lintian_pid" || lintian_rc=$?
  lintian_pid=''
  lintian_version=$(lintian --version)
fi
cat "$tmp/lintian.txt"
errors=$(grep -c '^E: ' "$tmp/lintian.txt" || true)
warnings=$(grep -c '^W: ' "$tmp/lintian.txt" || true)
# lintian exits 1 on an error tag, 2 when it could not check the package.
check "$lintian_version checked it and reports no error (exit $lintian_rc, $errors errors, $warnings warnings)" \
  test "$lintian_rc:$errors" = 0:0

phase "done"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
