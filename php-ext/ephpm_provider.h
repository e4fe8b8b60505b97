/*
 * Finding and loading the key-value provider, lazily, once per process.
 *
 * Never at module startup: a Go runtime started in a process that later
 * forks (the php-fpm master, php -S with workers) leaves every child hung.
 * So the first call that needs the store, in each process, loads it:
 *   1. a table the host process already provides (a Go program embedding
 *      PHP), found with dlsym(RTLD_DEFAULT, ...);
 *   2. else the library named by ini ephpm.library, if set;
 *   3. else libephpm.so in the directory that holds ephpm.so.
 * The library is never unloaded (a Go runtime cannot be).
 */
#ifndef EPHPM_PROVIDER_H
#define EPHPM_PROVIDER_H

#include <sys/types.h>

#include "ephpm_kv.h"

/* Registers the loader's fork handlers; called once, from MINIT. */
void ephpm_provider_startup(void);

/* Returns the provider's table, loading it on first use. On failure it
 * returns NULL with Ephpm\KvException (code NOT_LOADED) thrown. */
const ephpm_kv_ops *ephpm_provider_ops(void);

/* The same without throwing: on failure it returns NULL and writes why
 * into err (for the session handler, which must warn, not throw). */
const ephpm_kv_ops *ephpm_provider_get(char *err, size_t err_len);

/* Returns the table only if already loaded in this process, else NULL.
 * Never loads, never throws (phpinfo() uses it). */
const ephpm_kv_ops *ephpm_provider_loaded(void);

/* Where the loaded table came from (a path, or the host process), and the
 * pid of the process that loaded it. Valid once ephpm_provider_loaded(). */
const char *ephpm_provider_origin(void);

/* Calls fn with each store setting, in the order of the ini table (where
 * the order the library needs is written): its php.ini name, its name for
 * the configure member (without "ephpm." and "kv_"), its value and its
 * default. Stops, returning false, when fn does. (ephpm.c) */
typedef bool (*ephpm_setting_fn)(const char *ini, const char *name, const char *value,
                                 const char *default_value, void *arg);
bool ephpm_each_store_setting(ephpm_setting_fn fn, void *arg);
pid_t ephpm_provider_pid(void);

/* The kind of store the loaded table serves, as its backend setting said
 * when it was loaded: "memory" (this process's own), "shm" (a
 * shared-memory segment) or "redis"; NULL if not loaded or unknown. It
 * never enters the library, so a forked child can ask it. */
const char *ephpm_provider_backend(void);

#endif /* EPHPM_PROVIDER_H */
