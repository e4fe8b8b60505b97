/*
 * The provider's fork guard, and what must work without entering Go: the
 * thread's last error message and the member that reads it (last_error,
 * which a forked child may call too).
 *
 * The table and the wrapper of every other member (the fork guard, the
 * NULL checks, the crossing into Go) are generated into members.c from
 * struct ephpm_kv_ops. C definitions live in .c files because cgo forbids
 * them next to //export.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ephpm_kv.h"
#include "members.h"

/* Set in the child of every fork(): the Go runtime's threads did not come
 * along, so entering Go there would hang at the first GC or goroutine. */
volatile sig_atomic_t ephpm_forked_child;

static void ephpm_mark_forked_child(void)
{
    ephpm_forked_child = 1;
}

/* Runs when the provider is loaded (or, in a Go host, when it starts). */
__attribute__((constructor)) static void ephpm_install_fork_guard(void)
{
    pthread_atfork(NULL, NULL, ephpm_mark_forked_child);
}

/* The message of this thread's last failure: set from Go (failure() in
 * answers.go) on the thread that made the call, read by last_error. */
static __thread char ephpm_last_error_msg[512];
static __thread size_t ephpm_last_error_len;

void ephpm_set_last_error(const char *msg, size_t len)
{
    if (len >= sizeof ephpm_last_error_msg) {
        len = sizeof ephpm_last_error_msg - 1;
    }
    memcpy(ephpm_last_error_msg, msg, len);
    ephpm_last_error_msg[len] = '\0';
    ephpm_last_error_len = len;
}

int ephpm_reject_null(const char *member)
{
    char msg[128];
    int n = snprintf(msg, sizeof msg,
                     "%s: a required pointer is NULL (a buffer may be NULL only when empty)", member);
    ephpm_set_last_error(msg, n < 0 ? 0 : (size_t)n);
    return EPHPM_KV_E_INVALID;
}

/* last_error (see the header); it does not cross into Go, so it works in
 * a forked child too. */
int ephpm_op_last_error(char *buf, size_t buf_cap, size_t *len)
{
    if (len == NULL || EPHPM_BAD_BUF(buf, buf_cap)) {
        return EPHPM_KV_E_INVALID;
    }
    *len = ephpm_last_error_len;
    if (ephpm_last_error_len > buf_cap) {
        return EPHPM_KV_TOO_SMALL;
    }
    memcpy(buf, ephpm_last_error_msg, ephpm_last_error_len);
    return EPHPM_KV_OK;
}
