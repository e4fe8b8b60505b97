/*
 * ephpm_session.h - the names the session protocol gives to keys.
 *
 * The PHP session handler (php-ext/ephpm_session_handler.c) and the Go
 * package session/ must agree on them; session/session_test.go reads this
 * file to prove it. A session <sid> keeps its data under
 * EPHPM_SESSION_DATA_PREFIX<sid> and its lock under
 * EPHPM_SESSION_LOCK_PREFIX<sid>; the lock's value is the holder's token,
 * EPHPM_SESSION_TOKEN_BYTES random bytes from a CSPRNG, hex-encoded.
 */
#ifndef EPHPM_SESSION_H
#define EPHPM_SESSION_H

#define EPHPM_SESSION_DATA_PREFIX "session:"
#define EPHPM_SESSION_LOCK_PREFIX "session_lock:"
#define EPHPM_SESSION_TOKEN_BYTES 16

#endif /* EPHPM_SESSION_H */
