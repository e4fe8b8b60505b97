/*
 * Lock tokens: every acquisition's own, EPHPM_SESSION_TOKEN_BYTES (16)
 * bytes from PHP's CSPRNG, hex-encoded, for ephpm_kv_lock() and the session
 * handler alike.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "ext/random/php_random.h"

#include "php_ephpm.h"

bool ephpm_new_token(char out[EPHPM_TOKEN_LEN + 1], bool throw)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[EPHPM_SESSION_TOKEN_BYTES];
    if ((throw ? php_random_bytes_throw(raw, sizeof raw) : php_random_bytes_silent(raw, sizeof raw))
        == FAILURE) {
        return false;
    }
    for (size_t i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[EPHPM_TOKEN_LEN] = '\0';
    return true;
}
