/* lib/service.h — what a daemon (serve, ingress, maintain) owes systemd
 * beyond READY=1 (issue 15): a restart backoff that works on systemd 252,
 * and watchdog pings.
 *
 * Backoff: systemd 252 knows no RestartSteps=/RestartMaxDelaySec= (254),
 * so the units restart every RestartSec=2s and the daemon stretches the
 * interval itself: a start-up that fails for a reason a retry may fix
 * (any exit but 0, 64 and 78, before READY) waits before exiting, so that
 * successive starts come 2, 4, 8, 16, 32, then 60 s apart. The count of
 * consecutive failures lives in $RUNTIME_DIRECTORY/start-failures (the
 * units keep it across restarts: RuntimeDirectoryPreserve=restart; a stop
 * removes it); READY removes it. Without $RUNTIME_DIRECTORY (run by hand)
 * nothing waits.
 * Owns: the failure count file. Uses: libsystemd, libuv, log. */
#ifndef PEPSI_LIB_SERVICE_H
#define PEPSI_LIB_SERVICE_H

#include <stdint.h>
#include <uv.h>

#define SERVICE_RESTART_SEC 2      /* the units' RestartSec= */
#define SERVICE_BACKOFF_MAX_SEC 60 /* the longest interval between two starts */

/* The seconds to wait before exiting after failure number n (0: the
 * first): min(2 << n, 60) less the units' RestartSec. */
int service_backoff_delay(int n);

/* The daemon is serving: forgets earlier start-up failures. */
void service_started(void);

/* The daemon is about to exit with code: when it never served
 * (service_started) and a retry may fix it, counts the failure and waits
 * as service_backoff_delay says (logged). */
void service_refused(const char *component, int code);

/* Watchdog pings from the daemon's own loop. */
struct service_watchdog {
    uv_timer_t timer;
    int active;                    /* the timer was started */
};

/* When systemd asked for a watchdog ($WATCHDOG_USEC, for this pid),
 * starts a timer on loop sending WATCHDOG=1 at half the period: a loop
 * that stops turning stops the pings. 0 (also when none is asked), or a
 * libuv error (logged). */
int service_watchdog_start(struct service_watchdog *w, uv_loop_t *loop, const char *component);

/* The interval in ms at which a loop without libuv should send
 * WATCHDOG=1 (service_watchdog_ping), or 0 when none is asked. */
uint64_t service_watchdog_interval_ms(void);

/* Sends WATCHDOG=1. */
void service_watchdog_ping(void);

#endif
