#!/usr/bin/env bash
# Issue 15: `make install` gives a service that can start. Installs into a
# DESTDIR (PREFIX=/usr/local), checks what it put where with which modes
# and owners, creates the pepsi user from the same sysusers.d file the
# install ships (into an empty root, and on this machine when root, as CI
# is), checks the four installed units with `systemd-analyze verify` (no
# output at all: no unknown key on systemd 252, every command and man page
# found) and the man pages with groff and man, then runs the INSTALLED
# binary as the pepsi user (runuser) with the INSTALLED configuration,
# only its CONNINFO adapted to the test database: it reads the file, serves
# its three stages and a message goes through. A second install keeps the
# edited configuration; as root without DESTDIR (every directory moved
# under the test's), make install applies the sysusers file itself;
# `make uninstall` removes all but the configuration.
. "$(dirname "$0")/lib.sh"
plan 33

root_user() { [ "$(id -u)" = 0 ]; }
skip() { echo "ok $((_t_n + 1)) # skip $1"; _t_n=$((_t_n + 1)); }

make_q() { make -s -C "$E2E_ROOT" BUILD="${PEPSI_BUILD:-build}" PREFIX=/usr/local "$@"; }
mode_of() { stat -c '%a %U:%G' "$1"; }
# The make's output goes to a log, not into the TAP stream.
make_logged() { make_q "$@" >>"$E2E_DIR/install.log" 2>&1; }

# ---- the user, from the file the install ships ----

sysroot=$E2E_DIR/sysroot
mkdir -p "$sysroot/etc"
ok "systemd-sysusers applies conf/pepsi.sysusers to an empty root" \
   systemd-sysusers --root="$sysroot" - <"$E2E_ROOT/conf/pepsi.sysusers"
like "$(grep '^pepsi:' "$sysroot/etc/passwd")" '^pepsi:x:[0-9]+:[0-9]+:[^:]*:[^:]*:/usr/sbin/nologin$' \
     "it creates the system user pepsi, no login shell"
like "$(grep '^pepsi:' "$sysroot/etc/group")" '^pepsi:x:[0-9]+:' "and the group pepsi"
if root_user; then
    # The real system too (idempotent): runuser needs a user it can look up.
    ok "as root: the same file creates the user here" systemd-sysusers - <"$E2E_ROOT/conf/pepsi.sysusers"
else
    skip "not root: the user cannot be created on this machine"
fi

# ---- make install DESTDIR=... PREFIX=/usr/local ----

# The pepsi user must reach the installed binary and configuration.
chmod 755 "$E2E_DIR"
dest=$E2E_DIR/dest
ok "make install DESTDIR PREFIX=/usr/local" make_logged install DESTDIR="$dest"
bin=$dest/usr/local/bin/pepsi-runner
conf=$dest/etc/pepsi/pepsi.conf
is "$(mode_of "$bin")" "755 root:root" "the runner is installed 0755"
is "$(readlink "$dest/usr/local/bin/pepsi-stage-pass")" pepsi-stage "pepsi-stage-pass links to pepsi-stage (issue 19: the built-in stages alone)"
if root_user; then
    is "$(mode_of "$conf")" "640 root:pepsi" "the configuration is 0640 root:pepsi (the group exists here)"
else
    is "$(stat -c %a "$conf")" 640 "the configuration is 0640 (no group pepsi here: the install says so)"
fi
is "$(mode_of "$dest/usr/lib/sysusers.d/pepsi.conf")" "644 root:root" "the sysusers.d file is in /usr/lib/sysusers.d"
cmp -s "$E2E_ROOT/conf/pepsi.sysusers" "$dest/usr/lib/sysusers.d/pepsi.conf"
is $? 0 "it is conf/pepsi.sysusers, the file applied above"
units_ok() {
    local u
    for u in pepsi-runner pepsi-ingress pepsi-maintain pepsi-beanstalk; do
        [ "$(mode_of "$dest/lib/systemd/system/$u.service")" = "644 root:root" ] || return 1
    done
}
ok "the four units are installed 0644" units_ok
is "$(mode_of "$dest/usr/local/share/man/man8/pepsi-runner.8") $(mode_of "$dest/usr/local/share/man/man5/pepsi.conf.5")" \
   "644 root:root 644 root:root" "pepsi-runner(8) and pepsi.conf(5) are installed"
ok "the README the units' Documentation= names is installed" test -f "$dest/usr/local/share/doc/pepsi/README.md"
like "$(grep -h '^Documentation=' "$dest"/lib/systemd/system/pepsi-*.service | sort -u)" \
     '^Documentation=man:pepsi-runner\(8\) man:pepsi.conf\(5\) file:///usr/local/share/doc/pepsi/README.md$' \
     "every unit's Documentation= points at the installed pages and README"

# ---- the units under systemd-analyze verify (systemd 252) ----

# A DESTDIR holds no base system: lend it the host's units (sysinit.target,
# network-online.target, ...) and /bin/kill (ExecReload=), and let man find
# the installed pages through MANPATH.
vroot=$E2E_DIR/vroot
cp -a "$dest" "$vroot"
mkdir -p "$vroot/usr/lib/systemd" "$vroot/bin"
cp -a /usr/lib/systemd/system "$vroot/usr/lib/systemd/"
cp /bin/kill "$vroot/bin/"
for u in pepsi-runner pepsi-ingress pepsi-maintain pepsi-beanstalk; do
    out=$(MANPATH=$vroot/usr/local/share/man systemd-analyze verify --root="$vroot" "$u.service" 2>&1)
    is "$out" "" "systemd-analyze verify $u.service prints nothing"
done

# ---- the man pages ----

for p in man8/pepsi-runner.8 man5/pepsi.conf.5; do
    out=$( { groff -ww -man -z "$dest/usr/local/share/man/$p"; LANG=C.UTF-8 man -l "$dest/usr/local/share/man/$p" >/dev/null; } 2>&1)
    is "$out" "" "$p renders without a warning (groff -ww, man -l)"
done

# ---- the installed binary, as the pepsi user ----

# Only CONNINFO changes; written in place, so mode and owner stay.
adapted=$(awk -v c="CONNINFO = $E2E_CONNINFO" '{ print } /^\[pepsi-postgres\]$/ { print c }' "$conf")
printf '%s\n' "$adapted" >"$conf"
ok "a second make install succeeds" make_logged install DESTDIR="$dest"
ok "and leaves the edited configuration as it is" grep -qxF "CONNINFO = $E2E_CONNINFO" "$conf"

if root_user; then
    RUNNER_LOG=$E2E_DIR/runner.installed.log
    PEPSI_E2E_TAG=$E2E_TAG runuser -u pepsi -- "$bin" -c "$conf" serve >"$RUNNER_LOG" 2>&1 </dev/null &
    su_pid=$!
    ok "the installed runner serves the installed configuration's three stages, as pepsi" \
       wait_cmd 30 runner_log_has 'serving 3 stage\(s\)'
    RUNNER_PID=$(pgrep -P "$su_pid" | head -n 1)
    is "$(stat -c %U "/proc/$RUNNER_PID" 2>/dev/null)" pepsi "the runner process runs as the pepsi user"
    sql "select pepsi.workqueue_inject('receive')" >/dev/null
    ok "a message injected at receive goes through receive, transform, deliver" \
       wait_for "select count(*) from pepsi.workqueue" 0 30
    # The runner, not runuser: runuser would follow with SIGKILL after 2 s.
    kill -TERM "$RUNNER_PID"
    wait "$su_pid"
    is "$?" 0 "SIGTERM stops it with exit 0"
    RUNNER_PID=
    is "$(sql "select string_agg(stage || '=' || runs || '/' || failed, ' ' order by stage)
                 from (select stage, sum(runs) as runs, sum(failed) as failed
                         from pepsi.stage_stats group by stage) s")" \
       "deliver=1/0 receive=1/0 transform=1/0" "each of the three stages ran it once, none failed it"
    like "$(cat "$RUNNER_LOG")" 'dispatch: serving 3 stage' "its log is the runner's own"
else
    for _ in 1 2 3 4 5 6; do skip "not root: cannot run the runner as the pepsi user"; done
fi

# ---- without DESTDIR, as root: the sysusers file is applied ----

# Every directory moved under the test's own, so nothing of this machine
# changes but the pepsi user (already made above, from the same file).
if root_user; then
    live=$E2E_DIR/live
    ok "as root without DESTDIR: make install" make_logged install PREFIX="$live/usr" SYSCONFDIR="$live/etc" \
       UNITDIR="$live/units" SYSUSERSDIR="$live/sysusers.d"
    ok "it applies the installed sysusers.d file with systemd-sysusers" \
       grep -qxF "systemd-sysusers $live/sysusers.d/pepsi.conf" "$E2E_DIR/install.log"
    is "$(mode_of "$live/etc/pepsi/pepsi.conf")" "640 root:pepsi" "and installs the configuration 0640 root:pepsi"
else
    for _ in 1 2 3; do skip "not root: make install without DESTDIR would not apply the sysusers file"; done
fi

# ---- make uninstall ----

ok "make uninstall" make_logged uninstall DESTDIR="$dest"
is "$(cd "$dest" && find . ! -type d | sort | tr '\n' ' ')" "./etc/pepsi/pepsi.conf " \
   "it removes everything but the configuration"
done_testing
