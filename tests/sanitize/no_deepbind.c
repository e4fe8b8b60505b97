/*
 * LD_PRELOAD shim for sanitizer runs: Debian's PHP loads extensions with
 * RTLD_DEEPBIND, which AddressSanitizer refuses. This dlopen drops the flag
 * and hands on to the next dlopen (the sanitizer's).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

void *dlopen(const char *filename, int flags)
{
    static void *(*next)(const char *, int);
    if (next == NULL) {
        next = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    }
    return next(filename, flags & ~RTLD_DEEPBIND);
}
