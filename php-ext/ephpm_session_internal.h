/*
 * The session save handler's parts, for its three files only:
 *
 *   ephpm_session.c        the PS_* functions PHP's session module calls,
 *                          and the session's keys;
 *   ephpm_session_lock.c   the lock: taking it (the wait runs in Go), the
 *                          writes and removals under it, its release, the
 *                          warnings when it is lost, and its settings' ini
 *                          handlers;
 *   ephpm_session_merge.c  ephpm.session_lock_mode=optimistic: the read
 *                          without the lock, and the write that merges this
 *                          request's changes into the stored session.
 *
 * Each function's comment is at its definition. Every function that takes
 * ops calls through the table, so crosses into Go.
 */
#ifndef EPHPM_SESSION_INTERNAL_H
#define EPHPM_SESSION_INTERNAL_H

#include "php.h"

#include "php_ephpm.h"

/* A member of the session handler's state (ephpm_session_state), as PS()
 * is of the session module's. */
#define ES(v) (EPHPM_G(session).v)

/* The cause of a failure with the provider's message, in a buffer that
 * lives until the end of the enclosing statement. */
#define EPHPM_CAUSE(rc) ephpm_failure_text((rc), (char[768]){0}, 768)

/* ---- ephpm_session.c: keys ---------------------------------------------- */

/* A session's key, with room for the longest: a prefix and a session id
 * of any length PHP allows (include/ephpm_session.h). */
typedef struct {
    char buf[EPHPM_SESSION_KEY_MAX_LEN];
    size_t len;
} ephpm_session_key;

bool ephpm_session_make_key(ephpm_session_key *key, const char *prefix, const zend_string *sid);

#define DATA_KEY(k, sid) ephpm_session_make_key((k), EPHPM_SESSION_DATA_PREFIX, (sid))
#define LOCK_KEY(k, sid) ephpm_session_make_key((k), EPHPM_SESSION_LOCK_PREFIX, (sid))

/* ---- ephpm_session_lock.c: the lock -------------------------------------- */

/* *data_rc of ephpm_session_lock when it did not read the data. */
#define EPHPM_SESSION_NOT_READ INT_MIN

bool ephpm_session_lock(const ephpm_kv_ops *ops, const zend_string *sid, const char *then,
                        bool may_time_out, const ephpm_session_key *data, int *data_rc,
                        zend_string **val);
bool ephpm_session_holds(const ephpm_session_key *lock);
int ephpm_session_write_held(const ephpm_kv_ops *ops, const ephpm_session_key *data,
                             const ephpm_session_key *lock, const char *value, size_t value_len,
                             int64_t ttl_ms);
int ephpm_session_step_held(const ephpm_kv_ops *ops, int32_t action, const ephpm_session_key *data,
                            const ephpm_session_key *lock, const char *value, size_t value_len, int64_t ttl_ms);
int ephpm_session_remove(const ephpm_kv_ops *ops, const ephpm_session_key *data,
                         const ephpm_session_key *lock);
void ephpm_session_warn_lock_lost(const zend_string *sid, const char *what);
void ephpm_session_release(const ephpm_kv_ops *ops);
void ephpm_session_release_ex(const ephpm_kv_ops *ops, bool quiet);
void ephpm_session_forget_lock(void);

/* ---- ephpm_session_merge.c: optimistic mode ------------------------------ */

/* ephpm_session_read_optimistic's answer when the caller must lock. */
#define EPHPM_READ_LOCK_INSTEAD 1

bool ephpm_session_optimistic(void);
int ephpm_session_read_optimistic(const ephpm_kv_ops *ops, const ephpm_session_key *data,
                                  const zend_string *sid, zend_string **val);
zend_result ephpm_session_write_merged(const ephpm_kv_ops *ops, const zend_string *sid,
                                       zend_string *val, int64_t ttl_ms);
void ephpm_session_forget_base(void);

#endif
