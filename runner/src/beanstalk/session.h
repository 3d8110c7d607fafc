/* beanstalk/session.h — one client connection: its input (framed by
 * proto.c), its commands run one at a time in order (backend.c sends each
 * to SQL), its replies, its logical session in SQL (opened at accept,
 * closed at disconnect or quit), its used tube and watch list as the SQL
 * confirmed them, and a reserve that waits for a NOTIFY, its next_at or
 * its timeout.
 * Owns: struct bs_session. Uses: beanstalk/, lib/, libuv. */
#ifndef PEPSI_BEANSTALK_SESSION_H
#define PEPSI_BEANSTALK_SESSION_H

#include "beanstalk/beanstalk.h"
#include "beanstalk/waiters.h"

struct bs_session {
    struct bs_frontend *fe;
    struct bs_session *prev, *next;
    uv_tcp_t tcp;
    uv_timer_t timer;              /* a waiting reserve's wake-up */
    int refs;                      /* open handles + the query in flight; 0: freed */
    struct db *db;                 /* the pool connection its commands run on */
    int64_t id;                    /* its pepsi.beanstalk_session id, 0 before open */
    char id_text[24];
    struct bs_framer framer;
    char *in;                      /* input read, not yet framed */
    size_t in_len, in_off, in_cap;
    bool reading;                  /* uv_read_start in force */
    bool busy;                     /* a query in flight */
    bool waiting;                  /* a reserve waits for a wake-up */
    bool in_reserve;               /* a reserve runs or waits: its links are on their tubes' lists */
    bool notify_armed;             /* the timer was set (or kept) for a NOTIFY's wake-up */
    uint64_t last_notify_ms;       /* when a NOTIFY last made its reserve query again (now_ms) */
    size_t n_woken;                /* tubes whose woken waiter it is (waiters.h: woken) */
    bool gone;                     /* the client connection is closed (or closing) */
    bool closed_sql;               /* beanstalk_session_close sent (or not needed) */
    bool watch_limit_logged;       /* told the log it reached BS_MAX_WATCHED */
    struct bs_cmd cmd;             /* the command being run */
    char *body;                    /* its body (put) */
    uint64_t deadline_ms;          /* reserve-with-timeout: when to answer TIMED_OUT (now_ms), UINT64_MAX: never */
    char use[TUBE_NAME_MAX + 1];
    char **watch;                  /* the watch list, in the order watched */
    struct bs_wlink **wlink;       /* watch[i]'s link in the frontend's waiter index */
    size_t n_watch;
    struct bs_wlink *new_link;     /* the link of a watch whose SQL runs, NULL: none */
};

/* Accepts a client from the listener: a session that opens itself in SQL
 * first. 0, or -1 (nothing kept). */
int bs_session_accept(struct bs_frontend *fe, uv_stream_t *listener);

/* A NOTIFY pepsi_beanstalk naming tube (len bytes, a valid name): one
 * reserve waiting on it runs again (the next in turn; the one after it
 * when that one finds a job, and so on), at the earliest
 * BS_NOTIFY_FLOOR_MS after the tube's and that session's last NOTIFY-made
 * query; NOTIFYs in between fold into that query. O(1) with the index. */
void bs_session_notify(struct bs_frontend *fe, const char *tube, size_t len);

/* The watch whose SQL committed (s->cmd.tube, s->new_link) joins the
 * watch list. */
void bs_session_watch_add(struct bs_session *s);

/* tube leaves the watch list (ignore committed). */
void bs_session_watch_remove(struct bs_session *s, const char *tube);

/* The frontend stops: the session closes once its command in flight is
 * answered (hard: at once, without its SQL close). */
void bs_session_shutdown(struct bs_session *s, bool hard);

/* Whether the session watches tube. */
bool bs_session_watches(const struct bs_session *s, const char *tube);

/* Sends text (len bytes) to the client (copied). */
void bs_session_write(struct bs_session *s, const char *text, size_t len);

/* The command in flight is answered: reply (len bytes) goes out, the next
 * command runs. */
void bs_session_reply(struct bs_session *s, const char *reply, size_t len);

/* The reserve in flight found nothing: wait up to wait_ms (< 0: only for
 * a NOTIFY or the timeout), or answer TIMED_OUT when its time is up.
 * next_at_ms names that moment (the database's clock; not needed here):
 * a reserve first wakes a second before it, so that a job of its own
 * reaching the last second of its TTR is answered DEADLINE_SOON as
 * beanstalkd does. */
void bs_session_wait(struct bs_session *s, int64_t wait_ms, int64_t next_at_ms);

/* Starts reading the client's input (again). */
void bs_session_read_start(struct bs_session *s);

/* The session is open in SQL (s->id set): its commands run. */
void bs_session_opened(struct bs_session *s);

/* A reference for a query in flight; released when it is answered (the
 * last release frees the session). */
void bs_session_hold(struct bs_session *s);
void bs_session_release(struct bs_session *s);

/* The session must not be served (its generation or session was refused
 * by SQL, T-40): the client connection is dropped. */
void bs_session_drop(struct bs_session *s, const char *why);

#endif
