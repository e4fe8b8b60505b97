dnl config.m4 for the ephpm extension (phpize && ./configure && make).
dnl The Go library libephpm.so is built separately (see CMakeLists.txt) and
dnl must sit next to ephpm.so, or be named by ini ephpm.library.

PHP_ARG_ENABLE([ephpm],
  [whether to enable the ephpm key-value extension],
  [AS_HELP_STRING([--enable-ephpm], [Enable ephpm])],
  [no])

if test "$PHP_EPHPM" != "no"; then
  dnl The C ABI header lives at the top of the repository.
  PHP_ADD_INCLUDE([$ext_srcdir/../include])
  PHP_ADD_LIBRARY([dl], [1], [EPHPM_SHARED_LIBADD])
  PHP_ADD_LIBRARY([pthread], [1], [EPHPM_SHARED_LIBADD])
  PHP_SUBST([EPHPM_SHARED_LIBADD])
  PHP_NEW_EXTENSION([ephpm], [ephpm.c ephpm_functions.c ephpm_provider.c ephpm_session_handler.c], [$ext_shared],, [-DZEND_ENABLE_STATIC_TSRMLS_CACHE=1])
  PHP_ADD_EXTENSION_DEP([ephpm], [session])
fi
