/*
 * The failures of the table, as PHP shows them: a short cause per status,
 * the provider's own message for it (last_error), and the exception the
 * PHP functions throw. The session handler warns with the same texts.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <unistd.h>

#include "php.h"
#include "zend_exceptions.h"

#include "php_ephpm.h"
#include "ephpm_provider.h"

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
    case EPHPM_KV_E_NOT_INTEGER:
        return "the stored value is not an integer";
    case EPHPM_KV_E_OVERFLOW:
        return "the result would overflow a 64-bit integer";
    default:
        return "the library answered with an unknown status";
    }
}

const char *ephpm_failure_text(int rc, char *buf, size_t buf_len)
{
    return ephpm_failure_outcome(rc, buf, buf_len, NULL);
}

const char *ephpm_failure_outcome(int rc, char *buf, size_t buf_len, bool *unknown)
{
    static const char nothing_done[] = EPHPM_KV_NOTHING_DONE ": ";
    const ephpm_kv_ops *ops = ephpm_provider_loaded();
    char detail[512];
    size_t len = 0;
    /* The header names the codes a provider returns with a message; for
     * the others (FORKED, the consumer-side ones) last_error may still hold
     * an older, unrelated one. INVALID carries one from the table that has
     * get_many on (an older library's may be an older failure's). */
    bool from_provider = rc == EPHPM_KV_E_NOMEM || rc == EPHPM_KV_E_UNAVAILABLE
                         || rc == EPHPM_KV_E_NOT_INTEGER || rc == EPHPM_KV_E_OVERFLOW
                         || (rc == EPHPM_KV_E_INVALID && ops != NULL && EPHPM_KV_OPS_HAS(ops, get_many));
    if (unknown != NULL) {
        *unknown = rc == EPHPM_KV_E_UNAVAILABLE;
    }
    if (from_provider && ops != NULL && EPHPM_KV_OPS_HAS(ops, last_error)
        && ops->last_error(detail, sizeof detail - 1, &len) == EPHPM_KV_OK && len > 0) {
        detail[len] = '\0';
        /* Refused before anything was sent, written or granted (an
         * evicting Redis, a fence file that cannot be made): the outcome
         * is known, and the message says so instead. */
        if (rc == EPHPM_KV_E_UNAVAILABLE && strncmp(detail, nothing_done, sizeof nothing_done - 1) == 0) {
            if (unknown != NULL) {
                *unknown = false;
            }
            snprintf(buf, buf_len, "the store is unavailable; " EPHPM_KV_NOTHING_DONE " (%s)",
                     detail + sizeof nothing_done - 1);
        } else {
            snprintf(buf, buf_len, "%s (%s)", ephpm_status_cause(rc), detail);
        }
    } else {
        snprintf(buf, buf_len, "%s", ephpm_status_cause(rc));
    }
    return buf;
}

ZEND_COLD void ephpm_throw_status(int rc)
{
    const char *func = get_active_function_name();
    switch (rc) {
    case EPHPM_KV_E_NOMEM:
    case EPHPM_KV_E_UNAVAILABLE:
    case EPHPM_KV_E_INVALID:
    case EPHPM_KV_E_NOT_INTEGER:
    case EPHPM_KV_E_OVERFLOW: {
        char text[768];
        zend_throw_exception_ex(ephpm_kv_exception_ce, -rc, "%s(): %s", func,
                                ephpm_failure_text(rc, text, sizeof text));
        break;
    }
    case EPHPM_KV_E_FORKED:
        zend_throw_exception_ex(ephpm_kv_exception_ce, -rc,
            "%s(): this process (pid %ld) was forked from pid %ld after the ephpm library was "
            "loaded there, and a Go runtime does not survive fork. Use the store only in "
            "pid %ld, or fork before the first ephpm call so the child loads its own",
            func, (long)getpid(), (long)ephpm_provider_pid(), (long)ephpm_provider_pid());
        break;
    case EPHPM_KV_E_UNSUPPORTED: {
        const ephpm_kv_ops *ops = ephpm_provider_loaded();
        zend_throw_exception_ex(ephpm_kv_exception_ce, -rc,
            "%s(): not supported by the loaded library %s: its table (%u bytes) is older than "
            "this extension's (%zu bytes); install the library built with this extension",
            func, ephpm_provider_origin(), ops ? ops->struct_size : 0, sizeof(ephpm_kv_ops));
        break;
    }
    default:
        zend_throw_exception_ex(ephpm_kv_exception_ce, -EPHPM_KV_E_UNAVAILABLE,
            "%s(): the library answered with the unknown status %d", func, rc);
        break;
    }
}
