/* Loads the key-value provider: see ephpm_provider.h for the order. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, Dl_info */
#endif
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "php.h"
#include "SAPI.h"
#include "zend_exceptions.h"
#include "php_ephpm.h"
#include "ephpm_provider.h"

#define EPHPM_LIBRARY_NAME "libephpm.so"

/* Process-wide: the provider serves every thread of the process. Written
 * once under the mutex, read without it after an acquire load. */
static const ephpm_kv_ops *loaded_ops;
static char loaded_origin[PATH_MAX + 32];
static pid_t loaded_pid;
/* Whether the loaded table serves its in-process store: ephpm.kv_backend is
 * memory, or the library refused auto (older than the shared default). */
static bool loaded_private;
/* Which store the loaded table serves, from the backend setting it took:
 * "memory", "shm", "redis", or NULL if unknown (a library without
 * configure). See ephpm_provider_backend. */
static const char *loaded_backend;
static pthread_mutex_t load_mutex = PTHREAD_MUTEX_INITIALIZER;

/* A fork while another thread loads the provider (a ZTS server) must not
 * leave the child a mutex locked by a thread it does not have: fork waits
 * for the load to finish, and parent and child each unlock. */
static void ephpm_load_mutex_lock(void)
{
    pthread_mutex_lock(&load_mutex);
}

static void ephpm_load_mutex_unlock(void)
{
    pthread_mutex_unlock(&load_mutex);
}

void ephpm_provider_startup(void)
{
    /* Once per load of ephpm.so: two registrations would lock twice. (glibc
     * drops the handlers when ephpm.so is unloaded, as at a graceful
     * restart, so a reload registers them anew.) */
    static bool registered;
    if (!registered) {
        registered = true;
        pthread_atfork(ephpm_load_mutex_lock, ephpm_load_mutex_unlock, ephpm_load_mutex_unlock);
    }
}

/* Checks a table against this extension's ABI. Returns NULL if it is usable,
 * else a reason for the error message. */
static const char *ephpm_check_table(const ephpm_kv_ops *ops, char *why, size_t why_len)
{
    if (ops == NULL) {
        return "its getter returned no table";
    }
    if (ops->abi_version != EPHPM_KV_ABI_VERSION) {
        snprintf(why, why_len, "it provides ABI version %u, this extension needs version %u",
                 ops->abi_version, EPHPM_KV_ABI_VERSION);
        return why;
    }
    if (ops->struct_size < EPHPM_KV_OPS_V1_SIZE) {
        snprintf(why, why_len, "its table is %u bytes, smaller than the %zu bytes of ABI version %u",
                 ops->struct_size, (size_t)EPHPM_KV_OPS_V1_SIZE, EPHPM_KV_ABI_VERSION);
        return why;
    }
    return NULL;
}

/* The directory of ephpm.so, with a trailing slash, or "" if unknown. */
static void ephpm_own_dir(char *dir, size_t dir_len)
{
    Dl_info info;
    dir[0] = '\0';
    /* Any object of this file names ephpm.so's path (an object, not a
     * function: ISO C has no function-to-object pointer conversion, and
     * PHP's CFLAGS have -pedantic). */
    if (dladdr(loaded_origin, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        size_t n = (size_t)(strrchr(info.dli_fname, '/') - info.dli_fname) + 1;
        if (n < dir_len) {
            memcpy(dir, info.dli_fname, n);
            dir[n] = '\0';
        }
    }
}

/* Opens the library with every asynchronous signal blocked on this thread,
 * then restores the mask. The Go runtime's threads take the signal mask of
 * the thread that loads the library, and keep it but for the signals Go
 * needs unblocked itself (SIGURG for preemption, and the synchronous ones);
 * so they never take a process-directed signal that PHP means to handle or
 * wait for (pcntl_sigwaitinfo, php-fpm's SIGTERM and SIGUSR2): on a Go
 * thread, a signal Go has no handler for would take its default action and
 * end the process. The synchronous signals stay unblocked: a fault during
 * the load must still be reported. */
static void *ephpm_dlopen_masked(const char *path)
{
    sigset_t async, saved;
    sigfillset(&async);
    static const int synchronous[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof synchronous / sizeof synchronous[0]; i++) {
        sigdelset(&async, synchronous[i]);
    }
    pthread_sigmask(SIG_BLOCK, &async, &saved);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return handle;
}

/* dlsym of the provider's entry point in handle. ISO C has no conversion
 * from an object pointer to a function pointer (PHP's CFLAGS have
 * -pedantic); POSIX gives the two one representation, so the pointer's
 * bytes are copied. */
static ephpm_kv_get_ops_fn ephpm_find_get_ops(void *handle)
{
    void *sym = dlsym(handle, EPHPM_KV_GET_OPS_SYMBOL);
    ephpm_kv_get_ops_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    return fn;
}

/* Tries the three places in order. Caller holds load_mutex. Returns the
 * table, or NULL with an explanation in err. */
static const ephpm_kv_ops *ephpm_load(char *err, size_t err_len)
{
    char why[160];
    const char *bad;

    /* 1. A host process that links the bridge into its own Go runtime. */
    ephpm_kv_get_ops_fn get_ops = ephpm_find_get_ops(RTLD_DEFAULT);
    if (get_ops != NULL) {
        const ephpm_kv_ops *ops = get_ops();
        if ((bad = ephpm_check_table(ops, why, sizeof why)) != NULL) {
            snprintf(err, err_len, "the host process provides %s, but %s", EPHPM_KV_GET_OPS_SYMBOL, bad);
            return NULL;
        }
        snprintf(loaded_origin, sizeof loaded_origin, "(provided by the host process)");
        return ops;
    }

    /* 2. ini ephpm.library, else 3. libephpm.so beside ephpm.so. */
    char path[PATH_MAX];
    const char *ini = EPHPM_G(library);
    if (ini != NULL && ini[0] != '\0') {
        snprintf(path, sizeof path, "%s", ini);
    } else {
        char dir[PATH_MAX];
        ephpm_own_dir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s%s", dir, EPHPM_LIBRARY_NAME);
    }

    void *handle = ephpm_dlopen_masked(path);
    if (handle == NULL) {
        const char *dl = dlerror();
        snprintf(err, err_len, "cannot load the library %s (set ephpm.library to its path): %s",
                 path, dl ? dl : "unknown error");
        return NULL;
    }
    get_ops = ephpm_find_get_ops(handle);
    if (get_ops == NULL) {
        snprintf(err, err_len, "the library %s does not export %s", path, EPHPM_KV_GET_OPS_SYMBOL);
        return NULL;
    }
    const ephpm_kv_ops *ops = get_ops();
    if ((bad = ephpm_check_table(ops, why, sizeof why)) != NULL) {
        snprintf(err, err_len, "cannot use the library %s: %s", path, bad);
        return NULL;
    }
    snprintf(loaded_origin, sizeof loaded_origin, "%s", path);
    return ops;
}

struct ephpm_configure_call {
    const ephpm_kv_ops *ops;
    char *err;
    size_t err_len;
    bool private_store; /* see loaded_private */
    const char *backend; /* see loaded_backend */
};

static const char *ephpm_one_of_several_processes(void);

/* The kind of store a backend setting the library took serves: "auto" is
 * a shared-memory segment where several processes serve requests, else the
 * in-process store (the library's rule, bridge/auto.go). */
static const char *ephpm_backend_kind(const char *value)
{
    if (strcmp(value, "memory") == 0) {
        return "memory";
    }
    if (strcmp(value, "auto") == 0) {
        return ephpm_one_of_several_processes() != NULL ? "shm" : "memory";
    }
    if (strncmp(value, "shm", 3) == 0) {
        return "shm";
    }
    return "redis";
}

/* Sends one setting. A library that refuses a value that is the setting's
 * default is older than the setting, and does what the default says
 * anyway: that refusal is ignored, so an older library still loads. */
static bool ephpm_send_setting(const char *ini, const char *name, const char *value,
                               const char *default_value, void *arg)
{
    struct ephpm_configure_call *call = arg;
    int rc = call->ops->configure(name, strlen(name), value, strlen(value));
    bool is_backend = strcmp(name, "backend") == 0;
    if (rc == EPHPM_KV_OK || (rc == EPHPM_KV_E_INVALID && strcmp(value, default_value) == 0)) {
        if (is_backend) {
            call->private_store = rc != EPHPM_KV_OK || strcmp(value, "memory") == 0;
            call->backend = rc != EPHPM_KV_OK ? "memory" : ephpm_backend_kind(value);
        }
        return true;
    }
    char detail[512];
    size_t len = 0;
    detail[0] = '\0';
    if (EPHPM_KV_OPS_HAS(call->ops, last_error)
        && call->ops->last_error(detail, sizeof detail - 1, &len) == EPHPM_KV_OK) {
        detail[len] = '\0';
    }
    /* The setting's name and the library's message only: the value may
     * hold a password, which the library's message masks (backend URL) or
     * names (other settings). */
    snprintf(call->err, call->err_len, "the library %s refused %s: %s",
             loaded_origin, ini, detail[0] ? detail : ephpm_status_cause(rc));
    return false;
}

/* Hands the store settings of php.ini to a freshly loaded table, after the
 * server API ("auto" chooses the backend by it). Returns false with err
 * filled if the library refuses one. A library too old to have configure
 * gets none (phpinfo() shows what it runs with). */
static bool ephpm_configure(const ephpm_kv_ops *ops, char *err, size_t err_len)
{
    if (!EPHPM_KV_OPS_HAS(ops, configure)) {
        loaded_private = true;
        return true;
    }
    struct ephpm_configure_call call = {ops, err, err_len, false, NULL};
    const char *sapi = sapi_module.name ? sapi_module.name : "";
    /* Sent as its own default: an older library, which knows no "sapi", may refuse it. */
    bool ok = ephpm_send_setting("the server API", "sapi", sapi, sapi, &call)
           && ephpm_each_store_setting(ephpm_send_setting, &call);
    loaded_private = call.private_store;
    loaded_backend = call.backend;
    return ok;
}

/* What this process is, if the SAPI serves requests from several processes
 * (each then loads its own library, with its own in-process store), else
 * NULL. php-cgi counts as one of several: FastCGI servers run a pool of
 * them, and PHP_FCGI_CHILDREN forks one. */
static const char *ephpm_one_of_several_processes(void)
{
    const char *sapi = sapi_module.name;
    if (sapi == NULL) {
        return NULL;
    }
    if (strcmp(sapi, "fpm-fcgi") == 0) {
        return "php-fpm worker";
    }
    if (strcmp(sapi, "apache2handler") == 0) {
        return "Apache child process";
    }
    if (strcmp(sapi, "cgi-fcgi") == 0) {
        return "FastCGI process";
    }
    const char *workers = getenv("PHP_CLI_SERVER_WORKERS");
    if (strcmp(sapi, "cli-server") == 0 && workers != NULL && atoi(workers) > 1) {
        return "php -S worker (PHP_CLI_SERVER_WORKERS)";
    }
    return NULL;
}

/* Where several processes serve requests, an in-process store is private
 * to each: say so once, when the process loads the library. */
static void ephpm_warn_private_store(void)
{
    const char *what = ephpm_one_of_several_processes();
    if (what != NULL && loaded_private) {
        php_error_docref(NULL, E_WARNING,
            "ephpm: the in-process store is private to this %s (pid %ld): locks, sessions and "
            "values are not shared with the other processes serving requests. Leave "
            "ephpm.kv_backend at auto (a shared-memory segment for the pool), or set it to "
            "shm://NAME or a Redis or Valkey URL (redis://host:6379) to share them",
            what, (long)getpid());
    }
}

const ephpm_kv_ops *ephpm_provider_loaded(void)
{
    return __atomic_load_n(&loaded_ops, __ATOMIC_ACQUIRE);
}

const ephpm_kv_ops *ephpm_provider_get(char *err, size_t err_len)
{
    const ephpm_kv_ops *ops = ephpm_provider_loaded();
    if (EXPECTED(ops != NULL)) {
        return ops;
    }
    bool fresh = false;
    pthread_mutex_lock(&load_mutex);
    ops = loaded_ops;
    if (ops == NULL) {
        fresh = true;
        ops = ephpm_load(err, err_len);
        if (ops != NULL && !ephpm_configure(ops, err, err_len)) {
            ops = NULL;
        }
        if (ops != NULL) {
            loaded_pid = getpid();
            __atomic_store_n(&loaded_ops, ops, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&load_mutex);
    if (ops != NULL && fresh) {
        ephpm_warn_private_store();
    }
    return ops;
}

const ephpm_kv_ops *ephpm_provider_ops(void)
{
    const ephpm_kv_ops *ops = ephpm_provider_loaded();
    if (EXPECTED(ops != NULL)) {
        return ops;
    }
    char err[PATH_MAX + 256];
    ops = ephpm_provider_get(err, sizeof err);
    if (ops == NULL) {
        zend_throw_exception_ex(ephpm_kv_exception_ce, -EPHPM_KV_E_NOT_LOADED, "ephpm: %s", err);
    }
    return ops;
}

const char *ephpm_provider_origin(void)
{
    return loaded_origin;
}

pid_t ephpm_provider_pid(void)
{
    return loaded_pid;
}

const char *ephpm_provider_backend(void)
{
    return loaded_backend;
}
