/*
 * ephpm: PHP functions over the ephpm key-value provider.
 *
 * This file parses and checks arguments, makes exactly one call through the
 * provider's ops table per PHP call (two for a value larger than the stack
 * buffer of ephpm_kv_get), and turns status codes into return values or
 * exceptions. The store's logic lives in Go, behind the table.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <unistd.h>

#include "php.h"
#include "php_ini.h"
#include "ext/standard/info.h"
#include "zend_exceptions.h"
#include "ext/spl/spl_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"
#include "ephpm_session_handler.h"
#include "ephpm_arginfo.h"

ZEND_DECLARE_MODULE_GLOBALS(ephpm)

zend_class_entry *ephpm_kv_exception_ce;

PHP_INI_BEGIN()
    STD_PHP_INI_ENTRY("ephpm.library", "", PHP_INI_SYSTEM, OnUpdateString,
                      library, zend_ephpm_globals, ephpm_globals)
    STD_PHP_INI_BOOLEAN("ephpm.session_locking", "1", PHP_INI_ALL, OnUpdateBool,
                        session_locking, zend_ephpm_globals, ephpm_globals)
    PHP_INI_ENTRY("ephpm.session_lock_ttl", "30", PHP_INI_ALL, OnUpdateEphpmLockTtl)
    PHP_INI_ENTRY("ephpm.session_lock_wait", "30", PHP_INI_ALL, OnUpdateEphpmLockWait)
    PHP_INI_ENTRY("ephpm.session_lock_timeout_action", "proceed", PHP_INI_ALL, OnUpdateEphpmLockAction)
PHP_INI_END()

const char *ephpm_status_cause(int rc)
{
    switch (rc) {
    case EPHPM_KV_E_NOMEM:
        return "the store is out of memory; nothing was written";
    case EPHPM_KV_E_UNAVAILABLE:
        return "the store is unavailable; the outcome is unknown";
    case EPHPM_KV_E_INVALID:
        return "the store rejected an argument";
    case EPHPM_KV_E_FORKED:
        return "this process was forked after the ephpm library was loaded";
    case EPHPM_KV_E_NOT_LOADED:
        return "the ephpm library is not loaded";
    case EPHPM_KV_E_UNSUPPORTED:
        return "not supported by the loaded ephpm library";
    default:
        return "the library answered with an unknown status";
    }
}

/* Throws Ephpm\KvException for a failure status of the running function. */
static ZEND_COLD void ephpm_throw_status(int rc)
{
    const char *func = get_active_function_name();
    switch (rc) {
    case EPHPM_KV_E_NOMEM:
    case EPHPM_KV_E_UNAVAILABLE:
    case EPHPM_KV_E_INVALID:
        zend_throw_exception_ex(ephpm_kv_exception_ce, -rc, "%s(): %s", func, ephpm_status_cause(rc));
        break;
    case EPHPM_KV_E_FORKED:
        zend_throw_exception_ex(ephpm_kv_exception_ce, -rc,
            "%s(): this process (pid %ld) was forked from pid %ld after the ephpm library was "
            "loaded there, and a Go runtime does not survive fork. Use the store only in "
            "pid %ld, or fork before the first ephpm call so the child loads its own",
            func, (long)getpid(), (long)ephpm_provider_pid(), (long)ephpm_provider_pid());
        break;
    case EPHPM_KV_E_UNSUPPORTED:
        zend_throw_exception_ex(ephpm_kv_exception_ce, -rc,
            "%s(): not supported by the loaded library %s", func, ephpm_provider_origin());
        break;
    default:
        zend_throw_exception_ex(ephpm_kv_exception_ce, -EPHPM_KV_E_UNAVAILABLE,
            "%s(): the library answered with the unknown status %d", func, rc);
        break;
    }
}

/* Argument checks. Each throws ValueError and returns false on a bad value,
 * so a rejected call changes nothing. */
static bool ephpm_check_key(const zend_string *key, uint32_t arg_num)
{
    if (UNEXPECTED(ZSTR_LEN(key) == 0)) {
        zend_argument_value_error(arg_num, "must not be empty");
        return false;
    }
    if (UNEXPECTED(ZSTR_LEN(key) > EPHPM_KV_MAX_KEY_LEN)) {
        zend_argument_value_error(arg_num, "must not be longer than %u bytes", EPHPM_KV_MAX_KEY_LEN);
        return false;
    }
    return true;
}

static bool ephpm_check_value(const zend_string *value, uint32_t arg_num)
{
    if (UNEXPECTED(ZSTR_LEN(value) > EPHPM_KV_MAX_VALUE_LEN)) {
        zend_argument_value_error(arg_num, "must not be longer than %u bytes", EPHPM_KV_MAX_VALUE_LEN);
        return false;
    }
    return true;
}

static bool ephpm_ttl_ms(zend_long ttl, uint32_t arg_num, int64_t *ttl_ms)
{
    if (UNEXPECTED(ttl < 0 || (int64_t)ttl > EPHPM_KV_MAX_TTL_SECONDS)) {
        zend_argument_value_error(arg_num, "must be between 0 and %" PRId64 " seconds",
                                  (int64_t)EPHPM_KV_MAX_TTL_SECONDS);
        return false;
    }
    *ttl_ms = (int64_t)ttl * 1000;
    return true;
}

/* Values up to this size come back in one crossing; larger ones take a
 * second call into a zend_string of exactly the reported size. */
#define EPHPM_GET_STACK_BUF 8192

int ephpm_kv_fetch(const ephpm_kv_ops *ops, const char *key, size_t key_len, zend_string **value)
{
    char stack[EPHPM_GET_STACK_BUF];
    size_t len = 0;
    int rc = ops->get(key, key_len, stack, sizeof stack, &len);
    if (EXPECTED(rc == EPHPM_KV_OK)) {
        *value = len <= 1 ? (len ? ZSTR_CHAR((zend_uchar)stack[0]) : ZSTR_EMPTY_ALLOC())
                          : zend_string_init(stack, len, 0);
        return rc;
    }
    /* The value may grow between calls: retry into its newest size. */
    while (rc == EPHPM_KV_TOO_SMALL) {
        zend_string *str = zend_string_alloc(len, 0);
        rc = ops->get(key, key_len, ZSTR_VAL(str), ZSTR_LEN(str), &len);
        if (rc == EPHPM_KV_OK) {
            ZSTR_LEN(str) = len;
            ZSTR_VAL(str)[len] = '\0';
            *value = str;
            return rc;
        }
        zend_string_efree(str);
    }
    return rc;
}

/* {{{ ephpm_kv_get(string $key): ?string. Crosses into Go. */
ZEND_FUNCTION(ephpm_kv_get)
{
    zend_string *key, *value;

    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(key)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ephpm_kv_fetch(ops, ZSTR_VAL(key), ZSTR_LEN(key), &value);
    if (EXPECTED(rc == EPHPM_KV_OK)) {
        RETURN_STR(value);
    }
    if (rc == EPHPM_KV_MISS) {
        RETURN_NULL();
    }
    ephpm_throw_status(rc);
    RETURN_THROWS();
}
/* }}} */

/* Shared body of ephpm_kv_set and ephpm_kv_setnx. Crosses into Go once.
 * Returns the status, or 1 after throwing for a bad argument. */
static void ephpm_write(INTERNAL_FUNCTION_PARAMETERS, bool only_if_absent)
{
    zend_string *key, *value;
    zend_long ttl = 0;
    int64_t ttl_ms;

    ZEND_PARSE_PARAMETERS_START(2, 3)
        Z_PARAM_STR(key)
        Z_PARAM_STR(value)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(ttl)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1) || !ephpm_check_value(value, 2) || !ephpm_ttl_ms(ttl, 3, &ttl_ms)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int (*write)(const char *, size_t, const char *, size_t, int64_t) = only_if_absent ? ops->set_nx : ops->set;
    int rc = write(ZSTR_VAL(key), ZSTR_LEN(key), ZSTR_VAL(value), ZSTR_LEN(value), ttl_ms);
    if (EXPECTED(rc == EPHPM_KV_OK)) {
        RETURN_TRUE;
    }
    if (only_if_absent && rc == EPHPM_KV_EXISTS) {
        RETURN_FALSE;
    }
    ephpm_throw_status(rc);
    RETURN_THROWS();
}

/* {{{ ephpm_kv_set(string $key, string $value, int $ttl = 0): bool */
ZEND_FUNCTION(ephpm_kv_set)
{
    ephpm_write(INTERNAL_FUNCTION_PARAM_PASSTHRU, false);
}
/* }}} */

/* {{{ ephpm_kv_setnx(string $key, string $value, int $ttl = 0): bool */
ZEND_FUNCTION(ephpm_kv_setnx)
{
    ephpm_write(INTERNAL_FUNCTION_PARAM_PASSTHRU, true);
}
/* }}} */

/* {{{ ephpm_kv_del(string $key): int. Crosses into Go. */
ZEND_FUNCTION(ephpm_kv_del)
{
    zend_string *key;

    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(key)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ops->del(ZSTR_VAL(key), ZSTR_LEN(key));
    if (rc == EPHPM_KV_OK || rc == EPHPM_KV_MISS) {
        RETURN_LONG(rc == EPHPM_KV_OK ? 1 : 0);
    }
    ephpm_throw_status(rc);
    RETURN_THROWS();
}
/* }}} */

/* {{{ ephpm_kv_del_if_eq(string $key, string $token): bool. Crosses into Go. */
ZEND_FUNCTION(ephpm_kv_del_if_eq)
{
    zend_string *key, *token;

    ZEND_PARSE_PARAMETERS_START(2, 2)
        Z_PARAM_STR(key)
        Z_PARAM_STR(token)
    ZEND_PARSE_PARAMETERS_END();

    if (!ephpm_check_key(key, 1) || !ephpm_check_value(token, 2)) {
        RETURN_THROWS();
    }
    const ephpm_kv_ops *ops = ephpm_provider_ops();
    if (ops == NULL) {
        RETURN_THROWS();
    }
    int rc = ops->del_if_eq(ZSTR_VAL(key), ZSTR_LEN(key), ZSTR_VAL(token), ZSTR_LEN(token));
    if (rc == EPHPM_KV_OK || rc == EPHPM_KV_MISS) {
        RETURN_BOOL(rc == EPHPM_KV_OK);
    }
    ephpm_throw_status(rc);
    RETURN_THROWS();
}
/* }}} */

static PHP_GINIT_FUNCTION(ephpm)
{
#if defined(COMPILE_DL_EPHPM) && defined(ZTS)
    ZEND_TSRMLS_CACHE_UPDATE();
#endif
    memset(ephpm_globals, 0, sizeof *ephpm_globals);
    ephpm_globals->session_locking = true;
    ephpm_globals->session_lock_ttl = 30;
    ephpm_globals->session_lock_wait = 30;
}

/* Loads no library: see ephpm_provider.h for why. */
static PHP_MINIT_FUNCTION(ephpm)
{
    REGISTER_INI_ENTRIES();
    ephpm_kv_exception_ce = register_class_Ephpm_KvException(spl_ce_RuntimeException);
    ephpm_session_register();
    return SUCCESS;
}

/* After every module's RSHUTDOWN, including the session extension's final
 * write and close: release a session lock the request still holds. */
static ZEND_MODULE_POST_ZEND_DEACTIVATE_D(ephpm)
{
    ephpm_session_request_end();
    return SUCCESS;
}

static PHP_MSHUTDOWN_FUNCTION(ephpm)
{
    UNREGISTER_INI_ENTRIES();
    return SUCCESS;
}

static PHP_MINFO_FUNCTION(ephpm)
{
    char abi[64];
    const ephpm_kv_ops *ops = ephpm_provider_loaded();

    php_info_print_table_start();
    php_info_print_table_row(2, "ephpm support", "enabled");
    php_info_print_table_row(2, "Extension version", PHP_EPHPM_VERSION);
    snprintf(abi, sizeof abi, "%u", EPHPM_KV_ABI_VERSION);
    php_info_print_table_row(2, "ABI version (extension)", abi);
    if (ops != NULL) {
        php_info_print_table_row(2, "Library loaded", "yes");
        php_info_print_table_row(2, "Library", ephpm_provider_origin());
        snprintf(abi, sizeof abi, "%u (table of %u bytes)", ops->abi_version, ops->struct_size);
        php_info_print_table_row(2, "ABI version (library)", abi);
    } else {
        php_info_print_table_row(2, "Library loaded", "no (loaded on first use in each process)");
    }
    php_info_print_table_end();

    DISPLAY_INI_ENTRIES();
}

static const zend_module_dep ephpm_deps[] = {
    ZEND_MOD_REQUIRED("session")
    ZEND_MOD_END
};

zend_module_entry ephpm_module_entry = {
    STANDARD_MODULE_HEADER_EX,
    NULL,
    ephpm_deps,
    "ephpm",
    ext_functions,
    PHP_MINIT(ephpm),
    PHP_MSHUTDOWN(ephpm),
    NULL, /* RINIT */
    NULL, /* RSHUTDOWN */
    PHP_MINFO(ephpm),
    PHP_EPHPM_VERSION,
    PHP_MODULE_GLOBALS(ephpm),
    PHP_GINIT(ephpm),
    NULL, /* GSHUTDOWN */
    ZEND_MODULE_POST_ZEND_DEACTIVATE_N(ephpm),
    STANDARD_MODULE_PROPERTIES_EX
};

#ifdef COMPILE_DL_EPHPM
#ifdef ZTS
ZEND_TSRMLS_CACHE_DEFINE()
#endif
ZEND_GET_MODULE(ephpm)
#endif
