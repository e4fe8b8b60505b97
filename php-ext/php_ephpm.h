/* ephpm: the PHP face of the ephpm key-value store. */
#ifndef PHP_EPHPM_H
#define PHP_EPHPM_H

#include "php.h"

extern zend_module_entry ephpm_module_entry;
#define phpext_ephpm_ptr &ephpm_module_entry

#define PHP_EPHPM_VERSION "0.1.0"

ZEND_BEGIN_MODULE_GLOBALS(ephpm)
    char *library; /* ini ephpm.library: path of the provider library, or "" */
ZEND_END_MODULE_GLOBALS(ephpm)

ZEND_EXTERN_MODULE_GLOBALS(ephpm)
#define EPHPM_G(v) ZEND_MODULE_GLOBALS_ACCESSOR(ephpm, v)

#if defined(ZTS) && defined(COMPILE_DL_EPHPM)
ZEND_TSRMLS_CACHE_EXTERN()
#endif

/* Ephpm\KvException, thrown for every runtime failure of the store. */
extern zend_class_entry *ephpm_kv_exception_ce;

#endif /* PHP_EPHPM_H */
