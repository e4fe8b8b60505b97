#!/usr/bin/env bash
# Builds the Debian packages of ephpm, php<X.Y>-ephpm_<VERSION>_<ARCH>.deb
# (the extension) and ephpm_<VERSION>_<ARCH>.deb (the ephpm command),
# from this tree with Debian's tools (dpkg-buildpackage, debhelper, dh-php:
# debian/rules says how), for the PHP that php-config names (Debian 12:
# 8.2; Debian 13 and unstable: 8.4), into OUTDIR. DEB_BUILD_OPTIONS is
# dpkg-buildpackage's (nocheck, noautodbgsym, ...).
#
# The version is php-ext/php_ephpm.h's PHP_EPHPM_VERSION, the one the
# extension reports (phpversion('ephpm')). debian/control (from
# debian/control.in, for the PHP version) and debian/changelog (that
# version, the commit built) are written into a copy of the tree, where the
# package is built: the tree itself is left as it was.
#
# Installs the build dependencies that are missing (as root, or with sudo).
# Go is the one scripts/go-env.sh finds (the official toolchain in
# /usr/local/go if there is one, else Debian's golang-go, 1.21 or later);
# the modules and the Go release go.mod names come from Go's module cache
# or proxy at build time.
#
# Usage: scripts/deb.sh OUTDIR
#   OUTDIR receives the .deb (and the -dbgsym package, .buildinfo,
#   .changes); the last line printed is the extension's .deb's path, the
#   command's is beside it. The build runs in
#   build/deb, which EPHPM_DEB_KEEP=1 keeps afterwards (to look into it).
#   The tree's files are those git knows of; where git or the tree's git
#   metadata is not at hand (tests/matrix/debian.sh builds in a chroot
#   without them), EPHPM_DEB_FILES names a file that lists them (NUL-ended
#   paths relative to the tree, as `git ls-files -z` prints them) and
#   EPHPM_DEB_BUILT_FROM says what they are ("commit 0123abcd").
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
[ $# = 1 ] || { echo "usage: scripts/deb.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
. "$src/scripts/go-env.sh"

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "deb: need root (or sudo) to run: $*" >&2; exit 1
  fi
}
install_packages() { # with the package lists there are, else fresh ones
  echo "deb: installing $*"
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@")
  as_root "${apt[@]}" 2>/dev/null || { as_root apt-get update -qq && as_root "${apt[@]}"; }
}

version=$(sed -n 's/^#define PHP_EPHPM_VERSION "\([^"]*\)"$/\1/p' "$src/php-ext/php_ephpm.h")
[ -n "$version" ] || { echo "deb: no PHP_EPHPM_VERSION in php-ext/php_ephpm.h" >&2; exit 1; }
command -v php-config >/dev/null || { echo "deb: no php-config: install php<X.Y>-dev" >&2; exit 1; }
php_version=$(php-config --version | cut -d. -f1,2)

# What building a package takes, before anything can read debian/control.
tools=(dpkg-dev debhelper dh-php)
missing=()
for p in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} = 0 ] || install_packages "${missing[@]}"

# The copy is built in build/deb (build/ is the tree's build directory,
# which the copy leaves out): always the same path, so that Go reuses the
# builds it cached for it (the linker flags name the copy's path). One
# build at a time; the directory is emptied before and after.
mkdir -p "$src/build"
exec 8> "$src/build/deb.lock"
flock 8
tmp="$src/build/deb"
rm -rf "$tmp"
mkdir "$tmp"
trap '[ -n "${EPHPM_DEB_KEEP:-}" ] || rm -rf "$tmp"' EXIT
pkgsrc="$tmp/ephpm-$version"
mkdir "$pkgsrc"

# The tree's files: in a git checkout those git knows of (tracked, or new
# and not ignored: no build/, no phpize output), else all but build/.
copy_files() { # NUL-ended paths on stdin: those that exist, into the copy
  (cd "$src" && while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
     | tar --null -T - -cf -) | tar -C "$pkgsrc" -xf -
}
if [ -n "${EPHPM_DEB_FILES:-}" ]; then
  copy_files < "$EPHPM_DEB_FILES"
  built_from=${EPHPM_DEB_BUILT_FROM:-the files $EPHPM_DEB_FILES lists}
  when=${SOURCE_DATE_EPOCH:-$(date +%s)}
elif command -v git >/dev/null && git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$src" ls-files -z --cached --others --exclude-standard | copy_files
  commit=$(git -C "$src" rev-parse --short=12 HEAD)
  [ -z "$(git -C "$src" status --porcelain)" ] || commit="$commit, with uncommitted changes"
  built_from="commit $commit"
  when=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct)}
else
  (cd "$src" && tar --exclude=./build --exclude=./.git -cf - .) | tar -C "$pkgsrc" -xf -
  built_from="a source tree without git metadata"
  when=${SOURCE_DATE_EPOCH:-$(date +%s)}
fi

sed "s/@PHP_VERSION@/$php_version/g" "$src/debian/control.in" > "$pkgsrc/debian/control"
maintainer=$(sed -n 's/^Maintainer: //p' "$src/debian/control.in")
cat > "$pkgsrc/debian/changelog" <<EOF
ephpm ($version) unstable; urgency=medium

  * ephpm $version for PHP $php_version.
  * Built from $built_from.

 -- $maintainer  $(LC_ALL=C date -u -R -d "@$when")
EOF

# Go: Debian's golang-go is a build dependency unless the go found is
# another one (the build profile pkg.ephpm.external-go drops it).
profiles=()
go_bin=$(command -v go || true)
if [ -n "$go_bin" ] && ! dpkg -S "$(readlink -f "$go_bin")" >/dev/null 2>&1; then
  profiles=(--build-profiles=pkg.ephpm.external-go)
fi

# The remaining build dependencies (php<X.Y>-dev, golang-go,
# build-essential, ...).
if ! unmet=$(cd "$pkgsrc" && dpkg-checkbuilddeps "${profiles[@]/--build-profiles=/-P}" 2>&1); then
  names=$(sed -n 's/.*[Uu]nmet build dependencies: //p' <<< "$unmet" |
          sed 's/([^)]*)//g; s/<[^>]*>//g; s/|[^ ]*//g; s/:native//g; s/:any//g')
  [ -n "$names" ] || { echo "$unmet" >&2; exit 1; }
  # shellcheck disable=SC2086 # a list of package names
  install_packages $names
fi

# debhelper gives each build step a HOME of its own: Go's caches are named
# here, so that the build uses the modules and builds already had.
GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE)
export GOMODCACHE GOCACHE

echo "deb: building php$php_version-ephpm $version from $built_from"
if ! (cd "$pkgsrc" && dpkg-buildpackage -b --no-sign --no-pre-clean -jauto "${profiles[@]}") > "$tmp/build.log" 2>&1; then
  tail -40 "$tmp/build.log"
  exit 1
fi
grep -E '^(ok|FAIL)' "$tmp/build.log" || true
deb="php$php_version-ephpm_${version}_$(dpkg --print-architecture).deb"
[ -f "$tmp/$deb" ] || { echo "deb: no $deb was built" >&2; ls "$tmp" >&2; exit 1; }
command_deb="ephpm_${version}_$(dpkg --print-architecture).deb"
[ -f "$tmp/$command_deb" ] || { echo "deb: no $command_deb was built" >&2; ls "$tmp" >&2; exit 1; }
find "$tmp" -maxdepth 1 -type f \( -name '*.deb' -o -name '*.ddeb' -o -name '*.buildinfo' -o -name '*.changes' \) \
  -exec cp {} "$out/" \;
echo "$out/$deb"
