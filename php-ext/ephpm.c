/*
 * ephpm: the module. Its ini settings, the exception class, phpinfo() and
 * the request hooks. The PHP functions are in a file a subsystem
 * (ephpm_entries.c, _counters.c, _locks.c, _fences.c, _batch.c,
 * _remember.c, _scan.c, _stats.c; their argument checks in
 * ephpm_checks.c), the session handler in ephpm_session*.c, the read both
 * use in ephpm_fetch.c, the failure texts and exceptions in
 * ephpm_errors.c; the store's logic lives in Go, behind the table.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "php_ini.h"
#include "php_main.h"
#include "SAPI.h"
#include "zend_smart_str.h"
#include "ext/standard/url.h"
#include "ext/standard/info.h"
#include "zend_exceptions.h"
#include "ext/spl/spl_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"
#include "ephpm_session_handler.h"
#include "ephpm_arginfo.h"

ZEND_DECLARE_MODULE_GLOBALS(ephpm)

zend_class_entry *ephpm_kv_exception_ce;

/* Whether a query parameter's name (percent-escapes decoded) contains
 * "password", in any case. */
static bool ephpm_names_password(const char *name, size_t len)
{
    char *buf = estrndup(name, len);
    len = php_url_decode(buf, len);
    zend_str_tolower(buf, len);
    bool found = zend_memnstr(buf, "password", sizeof "password" - 1, buf + len) != NULL;
    efree(buf);
    return found;
}

/* The backend URL with its secrets masked, for phpinfo(): the value of
 * every query parameter whose name contains "password", then the user info
 * (from the start of the authority to the last '@'). It reads the URL as
 * text, so a malformed one is masked too. The same rule as redact in
 * redisstore/redact.go, which masks the URL in the library's messages. */
static zend_string *ephpm_redact_url(const char *url, size_t len)
{
    static const char mask[] = "xxxxx";
    const char *end = url + len, *query = memchr(url, '?', len);
    smart_str out = {0};

    smart_str_appendl(&out, url, query ? (size_t)(query - url) : len);
    for (const char *p = query; p != NULL && p < end;) {
        const char *pair = p + 1;
        const char *amp = memchr(pair, '&', end - pair);
        const char *stop = amp ? amp : end;
        const char *eq = memchr(pair, '=', stop - pair);
        smart_str_appendc(&out, *p); /* '?' or '&' */
        if (eq != NULL && ephpm_names_password(pair, eq - pair)) {
            smart_str_appendl(&out, pair, eq + 1 - pair);
            smart_str_appends(&out, mask);
        } else {
            smart_str_appendl(&out, pair, stop - pair);
        }
        p = amp;
    }
    smart_str_0(&out);

    /* The user info, in what is left. */
    zend_string *s = out.s ? out.s : ZSTR_EMPTY_ALLOC();
    const char *v = ZSTR_VAL(s), *vend = v + ZSTR_LEN(s);
    const char *scheme_end = zend_memnstr(v, "://", 3, vend);
    const char *colon = memchr(v, ':', ZSTR_LEN(s));
    size_t start = scheme_end ? (size_t)(scheme_end - v) + 3 : colon ? (size_t)(colon - v) + 1 : 0;
    const char *at = zend_memrchr(v, '@', ZSTR_LEN(s));
    if (at == NULL || (size_t)(at - v) < start) {
        return s;
    }
    zend_string *masked = zend_string_concat3(v, start, mask, sizeof mask - 1, at, vend - at);
    zend_string_release(s);
    return masked;
}

/* phpinfo() shows ephpm.kv_backend with its secrets masked: a Redis
 * password must not reach a page that visitors may see. */
static ZEND_INI_DISP(ephpm_display_backend)
{
    zend_string *value = type == ZEND_INI_DISPLAY_ORIG && ini_entry->modified ? ini_entry->orig_value
                                                                              : ini_entry->value;
    if (value == NULL || ZSTR_LEN(value) == 0) {
        PUTS(sapi_module.phpinfo_as_text ? "no value" : "<i>no value</i>");
        return;
    }
    zend_string *shown = ephpm_redact_url(ZSTR_VAL(value), ZSTR_LEN(value));
    if (sapi_module.phpinfo_as_text) {
        PHPWRITE(ZSTR_VAL(shown), ZSTR_LEN(shown));
    } else {
        php_html_puts(ZSTR_VAL(shown), ZSTR_LEN(shown));
    }
    zend_string_release(shown);
}

/* The store's settings (ephpm.kv_*, ephpm.session_memory_limit) have no
 * update handler: C parses none of them, it forwards each as text to the
 * library when the library is loaded (ephpm_each_store_setting), and the
 * library's one table parses them; a bad value is refused then, with the
 * setting's name. The others are the extension's own. */
PHP_INI_BEGIN()
    STD_PHP_INI_ENTRY("ephpm.library", "", PHP_INI_SYSTEM, OnUpdateString,
                      library, zend_ephpm_globals, ephpm_globals)
    PHP_INI_ENTRY("ephpm.kv_memory_limit", "64M", PHP_INI_SYSTEM, NULL)
    /* After memory_limit, which it must stay below. */
    PHP_INI_ENTRY("ephpm.session_memory_limit", "0", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("ephpm.kv_eviction", "noeviction", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("ephpm.kv_compression", "none", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("ephpm.kv_compression_min_size", "1024", PHP_INI_SYSTEM, NULL)
    /* The near cache before the backend, which is opened with it. */
    PHP_INI_ENTRY("ephpm.kv_near_cache_prefixes", "", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("ephpm.kv_near_cache_staleness_ms", "1000", PHP_INI_SYSTEM, NULL)
    PHP_INI_ENTRY("ephpm.kv_near_cache_size", "16M", PHP_INI_SYSTEM, NULL)
    /* Last: it opens the backend with the settings above. */
    PHP_INI_ENTRY_EX("ephpm.kv_backend", "auto", PHP_INI_SYSTEM, NULL, ephpm_display_backend)
    STD_PHP_INI_BOOLEAN("ephpm.session_locking", "1", PHP_INI_ALL, OnUpdateBool,
                        session.locking, zend_ephpm_globals, ephpm_globals)
    PHP_INI_ENTRY("ephpm.session_lock_ttl", "30", PHP_INI_ALL, OnUpdateEphpmLockTtl)
    PHP_INI_ENTRY("ephpm.session_lock_wait", "30", PHP_INI_ALL, OnUpdateEphpmLockWait)
    PHP_INI_ENTRY("ephpm.session_lock_timeout_action", "proceed", PHP_INI_ALL, OnUpdateEphpmLockAction)
    PHP_INI_ENTRY("ephpm.session_lock_mode", "exclusive", PHP_INI_ALL, OnUpdateEphpmLockMode)
PHP_INI_END()

static PHP_GINIT_FUNCTION(ephpm)
{
#if defined(COMPILE_DL_EPHPM) && defined(ZTS)
    ZEND_TSRMLS_CACHE_UPDATE();
#endif
    /* The settings get their values, defaults included, from the entries
     * above: PHP applies each through its update handler at startup (in
     * every thread, under ZTS), so no default is written here. */
    memset(ephpm_globals, 0, sizeof *ephpm_globals);
}

bool ephpm_each_store_setting(ephpm_setting_fn fn, void *arg)
{
    for (const zend_ini_entry_def *def = ini_entries; def->name != NULL; def++) {
        if (def->on_modify != NULL) {
            continue; /* the extension's own */
        }
        const char *name = def->name + sizeof "ephpm." - 1;
        if (strncmp(name, "kv_", 3) == 0) {
            name += 3;
        }
        const char *value = zend_ini_string_ex(def->name, def->name_length, 0, NULL);
        if (!fn(def->name, name, value ? value : "", def->value ? def->value : "", arg)) {
            return false;
        }
    }
    return true;
}

/* Loads no library: see ephpm_provider.h for why. */
static PHP_MINIT_FUNCTION(ephpm)
{
    REGISTER_INI_ENTRIES();
    ephpm_kv_exception_ce = register_class_Ephpm_KvException(spl_ce_RuntimeException);
    ephpm_session_register();
    ephpm_provider_startup();
    return SUCCESS;
}

/* The get buffer is request memory: a request starts without one. (It is
 * freed after the request too, but PHP runs the post-deactivate hooks in
 * one zend_try, so an earlier module's bailout can skip ours.)
 *
 * Where this process has the library loaded (an earlier request used it),
 * the backend checks that its store is still the one other processes
 * share (begin_request: a shared-memory segment whose file systemd-logind
 * removed). Its answer is not shown here: if the store is gone, every call
 * of the request fails with the cause and the fix. A process that has not
 * loaded the library loads it at its first call, which opens the store
 * afresh. */
static PHP_RINIT_FUNCTION(ephpm)
{
#if defined(COMPILE_DL_EPHPM) && defined(ZTS)
    ZEND_TSRMLS_CACHE_UPDATE();
#endif
    EPHPM_G(get_buf) = NULL;
    const ephpm_kv_ops *ops = ephpm_provider_loaded();
    if (ops != NULL && EPHPM_KV_OPS_HAS(ops, begin_request)) {
        (void)ops->begin_request();
    }
    return SUCCESS;
}

/* After every module's RSHUTDOWN, including the session extension's final
 * write and close: release a session lock the request still holds, and
 * free the get buffer (nothing reads after this). */
static ZEND_MODULE_POST_ZEND_DEACTIVATE_D(ephpm)
{
    ephpm_session_request_end();
    ephpm_kv_fetch_request_end();
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
        ephpm_kv_stats st;
        memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        if (EPHPM_KV_OPS_HAS(ops, stats) && ops->stats(&st) == EPHPM_KV_OK) {
            /* The same figures as ephpm_kv_stats(). */
            zval arr, *v;
            zend_string *name;
            ephpm_stats_to_array(&st, &arr);
            ZEND_HASH_FOREACH_STR_KEY_VAL(Z_ARRVAL(arr), name, v) {
                if (zend_string_equals_literal(name, "library") || Z_TYPE_P(v) == IS_ARRAY
                    || zend_string_equals_literal(name, "rate_interval_ms")
                    || (Z_TYPE_P(v) == IS_STRING && Z_STRLEN_P(v) == 0)) {
                    continue; /* the rates and shards are the status page's */
                }
                zend_string *text = zval_get_string(v);
                php_info_print_table_row(2, ZSTR_VAL(name), ZSTR_VAL(text));
                zend_string_release(text);
            } ZEND_HASH_FOREACH_END();
            zval_ptr_dtor(&arr);
        }
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
    PHP_RINIT(ephpm),
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
