/* beanstalk/backend.h — each command as the SQL contract's call
 * (/work/bs-contract.md: pepsi.beanstalk_*), and each answer as
 * beanstalkd's reply: the statements, their parameters, the SQLSTATE
 * mapping (PX043 NOT_FOUND, PX062 NOT_IGNORED, PX006 and PX003
 * BAD_FORMAT, PX061 drops the client, PX060 stops the frontend: its
 * generation was reaped, T-40).
 * Owns: nothing kept. Uses: beanstalk/, lib/ (db, pgarray, pgerr). */
#ifndef PEPSI_BEANSTALK_BACKEND_H
#define PEPSI_BEANSTALK_BACKEND_H

#include "beanstalk/session.h"

/* Runs s->cmd (one that needs the database) on s->db; the answer comes
 * back through bs_session_reply, bs_session_wait or bs_session_drop, or,
 * when the connection is lost, bs_frontend_fatal. */
void bs_backend_run(struct bs_session *s);

/* Opens s in SQL (pepsi.beanstalk_session_open); then s->id is set and
 * the session's input is read. */
void bs_backend_open(struct bs_session *s);

/* Closes s in SQL (pepsi.beanstalk_session_close); done(s) afterwards. */
void bs_backend_close(struct bs_session *s, void (*done)(struct bs_session *s));

#endif
