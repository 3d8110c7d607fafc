/* lib/service.c — see service.h. */
#include "lib/service.h"

#include "lib/log.h"
#include "lib/util.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#define FAILURES_FILE "start-failures"

static bool started; /* service_started was called: an exit now is no start-up failure */

int service_backoff_delay(int n)
{
    int interval = n >= 5 ? SERVICE_BACKOFF_MAX_SEC : SERVICE_RESTART_SEC << n;
    if (interval > SERVICE_BACKOFF_MAX_SEC)
        interval = SERVICE_BACKOFF_MAX_SEC;
    return interval - SERVICE_RESTART_SEC;
}

/* $RUNTIME_DIRECTORY/start-failures (the first directory when systemd
 * lists several), or false when there is none. */
static bool failures_path(char *out, size_t size)
{
    const char *rd = getenv("RUNTIME_DIRECTORY");
    if (rd == NULL || rd[0] == '\0')
        return false;
    size_t len = strcspn(rd, ":");
    int n = snprintf(out, size, "%.*s/" FAILURES_FILE, (int)len, rd);
    return n > 0 && (size_t)n < size;
}

void service_started(void)
{
    char path[PATH_MAX];
    started = true;
    if (failures_path(path, sizeof path) && unlink(path) != 0 && errno != ENOENT)
        log_warning("service", "cannot remove \"%s\": %s", path, strerror(errno));
}

static int read_failures(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0;
    if (f == NULL)
        return 0;
    if (fscanf(f, "%d", &n) != 1 || n < 0)
        n = 0;
    fclose(f);
    return n;
}

static void write_failures(const char *path, int n)
{
    FILE *f = fopen(path, "w");
    bool ok = f != NULL && fprintf(f, "%d\n", n) >= 0;
    if (f != NULL && fclose(f) != 0)
        ok = false;
    if (!ok)
        log_warning("service", "cannot record the start-up failure in \"%s\": %s", path, strerror(errno));
}

void service_refused(const char *component, int code)
{
    char path[PATH_MAX];
    if (started || code == 0 || code == EXIT_USAGE || code == EXIT_CONFIG || !failures_path(path, sizeof path))
        return;
    int n = read_failures(path);
    write_failures(path, n < 1000 ? n + 1 : n);
    int delay = service_backoff_delay(n);
    if (delay <= 0)
        return;
    log_notice(component, "start-up failed (exit %d, failure %d in a row); waiting %d s before exiting "
               "(restart backoff)", code, n + 1, delay);
    sd_notifyf(0, "STATUS=start-up failed %d time(s) in a row; retrying in %d s", n + 1,
               delay + SERVICE_RESTART_SEC);
    struct timespec left = {delay, 0};
    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}

/* ---- watchdog ---- */

uint64_t service_watchdog_interval_ms(void)
{
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return 0;
    uint64_t ms = usec / 2000;
    return ms > 0 ? ms : 1;
}

void service_watchdog_ping(void)
{
    sd_notify(0, "WATCHDOG=1");
}

static void watchdog_cb(uv_timer_t *t)
{
    (void)t;
    service_watchdog_ping();
}

int service_watchdog_start(struct service_watchdog *w, uv_loop_t *loop, const char *component)
{
    uint64_t ms = service_watchdog_interval_ms();
    w->active = 0;
    if (ms == 0)
        return 0;
    int rc = uv_timer_init(loop, &w->timer);
    rc = rc ? rc : uv_timer_start(&w->timer, watchdog_cb, ms, ms);
    if (rc != 0) {
        log_error(component, "cannot start the watchdog timer: %s", uv_strerror(rc));
        return rc;
    }
    w->active = 1;
    service_watchdog_ping();
    log_info(component, "watchdog: WATCHDOG=1 every %llu ms", (unsigned long long)ms);
    return 0;
}
