/* test_service.c — the restart backoff of lib/service (issue 15): the
 * units restart every RestartSec=2s on systemd 252, and the daemon's own
 * wait before exiting makes the starts 2, 4, 8, 16, 32 s and then at most
 * 60 s apart; exits a retry cannot fix (0, 64, 78) never wait or count. */
#include "unit.h"

#include "lib/service.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int read_count(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = -1;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -2;
        fclose(f);
    }
    return n;
}

static void check_intervals(void)
{
    const int want[] = {2, 4, 8, 16, 32, 60, 60, 60};
    for (int n = 0; n < (int)(sizeof want / sizeof want[0]); n++)
        CHECK_INT(service_backoff_delay(n) + SERVICE_RESTART_SEC, want[n],
                  "issue 15: the start after %d failure(s) in a row comes %d s after the last", n + 1, want[n]);
    CHECK_INT(service_backoff_delay(1000), SERVICE_BACKOFF_MAX_SEC - SERVICE_RESTART_SEC,
              "issue 15: never more than 60 s between starts");
}

static void check_count(void)
{
    char dir[] = "/tmp/test_service.XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL, "a temporary RUNTIME_DIRECTORY");
    snprintf(path, sizeof path, "%s/start-failures", dir);
    setenv("RUNTIME_DIRECTORY", dir, 1);
    time_t t0 = time(NULL);
    service_refused("test", EXIT_CONFIG);
    service_refused("test", EXIT_USAGE);
    service_refused("test", 0);
    CHECK_INT(read_count(path), -1, "issue 15: exits 78, 64 and 0 count no failure");
    service_refused("test", 1);
    CHECK_INT(read_count(path), 1, "issue 15: a first exit 1 counts one failure");
    CHECK(time(NULL) - t0 <= 1, "issue 15: and does not wait (RestartSec alone: 2 s)");
    service_started();
    CHECK_INT(read_count(path), -1, "issue 15: READY forgets the failures");
    service_refused("test", 1);
    CHECK_INT(read_count(path), -1, "issue 15: an exit after READY is no start-up failure");
    rmdir(dir);
    unsetenv("RUNTIME_DIRECTORY");
}

int main(void)
{
    check_intervals();
    check_count();
    return unit_done();
}
