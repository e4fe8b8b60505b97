/* The session save handler "ephpm" (session.save_handler=ephpm), as the
 * module sees it: ephpm_session.c, ephpm_session_lock.c and
 * ephpm_session_merge.c implement it (ephpm_session_internal.h). */
#ifndef EPHPM_SESSION_HANDLER_H
#define EPHPM_SESSION_HANDLER_H

#include "php.h"

/* Registers the handler with the session extension (from MINIT). */
void ephpm_session_register(void);

/* Releases a session lock the request still holds. Called after every
 * module's RSHUTDOWN (so after the session extension's final write), so that
 * exit(), fatal errors and uncaught exceptions never leave a lock behind. */
void ephpm_session_request_end(void);

/* ini handlers of the ephpm.session_* settings. */
ZEND_INI_MH(OnUpdateEphpmLockTtl);
ZEND_INI_MH(OnUpdateEphpmLockWait);
ZEND_INI_MH(OnUpdateEphpmLockAction);
ZEND_INI_MH(OnUpdateEphpmLockMode);

#endif
