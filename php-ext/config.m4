dnl config.m4 for the ephpm extension: phpize && ./configure --enable-ephpm
dnl && make && make install. Makefile.frag builds the Go library libephpm.so
dnl with go (1.21 or later, which fetches the release go.mod names) and
dnl installs it next to ephpm.so.

PHP_ARG_ENABLE([ephpm],
  [whether to enable the ephpm key-value extension],
  [AS_HELP_STRING([--enable-ephpm], [Enable ephpm])],
  [no])

if test "$PHP_EPHPM" != "no"; then
  PHP_ADD_LIBRARY([dl], [1], [EPHPM_SHARED_LIBADD])
  PHP_ADD_LIBRARY([pthread], [1], [EPHPM_SHARED_LIBADD])
  PHP_SUBST([EPHPM_SHARED_LIBADD])
  PHP_NEW_EXTENSION([ephpm], [ephpm.c ephpm_batch.c ephpm_checks.c ephpm_counters.c ephpm_entries.c ephpm_errors.c ephpm_fences.c ephpm_fetch.c ephpm_locks.c ephpm_provider.c ephpm_remember.c ephpm_scan.c ephpm_session.c ephpm_session_lock.c ephpm_session_merge.c ephpm_stats.c ephpm_token.c], [$ext_shared],, [-DZEND_ENABLE_STATIC_TSRMLS_CACHE=1 -fvisibility=hidden])
  PHP_ADD_EXTENSION_DEP([ephpm], [session])
  dnl The C ABI header lives at the top of the repository (ext_srcdir is
  dnl known only after PHP_NEW_EXTENSION).
  PHP_ADD_INCLUDE([$ext_srcdir/../include])
  PHP_ADD_MAKEFILE_FRAGMENT
fi
