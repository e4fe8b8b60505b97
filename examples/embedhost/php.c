/*
 * The PHP side of the embedding host: start PHP's embed SAPI with the ephpm
 * extension, and run one script per request on the one thread that owns
 * PHP (the build is NTS: one request at a time).
 *
 * The host links ./bridge into its own Go runtime and exports
 * ephpm_kv_get_ops, so the extension finds the table with
 * dlsym(RTLD_DEFAULT, ...) and loads no libephpm.so: one Go runtime.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <sapi/embed/php_embed.h>
#include "SAPI.h"
#include "php_main.h"
#include "php_variables.h"

#include "_cgo_export.h"

/* Crosses into Go: hostWrite collects the response body. */
static size_t host_ub_write(const char *str, size_t len)
{
    hostWrite((char *)str, len);
    return len;
}

static void host_log_message(const char *message, int syslog_type)
{
    (void)syslog_type;
    hostWrite((char *)message, strlen(message));
    hostWrite("\n", 1);
}

/* Starts PHP with the php.ini at ini_path, and no other (the system's
 * conf.d is not scanned). The embed SAPI overwrites ini_entries, and only an
 * ini file can load an extension, hence a file. */
int host_php_start(const char *ini_path)
{
    php_embed_module.ub_write = host_ub_write;
    php_embed_module.log_message = host_log_message;
    php_embed_module.php_ini_path_override = strdup(ini_path);
    setenv("PHP_INI_SCAN_DIR", "", 1);
    if (php_embed_init(0, NULL) != SUCCESS) {
        return -1;
    }
    /* php_embed_init starts a request; each script gets its own. */
    php_request_shutdown(NULL);
    return 0;
}

/* Runs one script as a GET request with this query string and cookie. */
int host_php_run(const char *path, const char *query, const char *cookie)
{
    SG(request_info).request_method = "GET";
    /* malloc, not emalloc: they outlive the request's memory manager. */
    SG(request_info).query_string = query[0] ? strdup(query) : NULL;
    SG(request_info).cookie_data = cookie[0] ? strdup(cookie) : NULL;
    SG(request_info).path_translated = (char *)path;
    if (php_request_startup() == FAILURE) {
        return -1;
    }
    zend_file_handle file;
    zend_stream_init_filename(&file, path);
    int ok = php_execute_script(&file);
    zend_destroy_file_handle(&file);
    php_request_shutdown(NULL);
    free(SG(request_info).query_string);
    SG(request_info).query_string = NULL;
    free(SG(request_info).cookie_data);
    SG(request_info).cookie_data = NULL;
    return ok ? 0 : -1;
}
