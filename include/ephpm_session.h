/*
 * ephpm_session.h - the names the session protocol gives to keys.
 *
 * A session <sid> keeps its data under EPHPM_SESSION_DATA_PREFIX<sid> and
 * its lock under EPHPM_SESSION_LOCK_PREFIX<sid>; the lock's value is the
 * holder's token, EPHPM_SESSION_TOKEN_BYTES random bytes from a CSPRNG,
 * hex-encoded.
 *
 * This file is the contract; who builds what from it:
 *   - the PHP session handler builds its keys (from the session id, which
 *     it validates as it does) and its tokens in C, in
 *     php-ext/ephpm_session_handler.c and php-ext/ephpm_token.c, and times
 *     its wait itself;
 *   - the Go package session holds the same names (session/session_test.go
 *     reads this file to prove it): the bridge tells each backend which
 *     prefixes are the session's (kept in one Cluster slot, never evicted),
 *     and Go callers build keys and tokens with session.DataKey, LockKey and
 *     NewToken.
 */
#ifndef EPHPM_SESSION_H
#define EPHPM_SESSION_H

#define EPHPM_SESSION_DATA_PREFIX "session:"
#define EPHPM_SESSION_LOCK_PREFIX "session_lock:"
#define EPHPM_SESSION_TOKEN_BYTES 16

#endif /* EPHPM_SESSION_H */
