# runner/tests/e2e/lib.sh — sourced by every end-to-end test (*.t).
#
# scripts/test-e2e starts the cluster, deploys the schema into a template
# database and exports PG*, PEPSI_RUNNER, PEPSI_E2E_TMP, PEPSI_E2E_TEMPLATE.
# Sourcing this file then gives the test:
#   - its own database E2E_DB, cloned from the template and dropped at exit,
#     with the side tables e2e_visit, e2e_done and e2e_paused the stage
#     programs write (stages/misbehave says what goes in each);
#   - its own directory E2E_DIR (configs, logs, flag files), exported, so
#     the stage programs under stages/ find it;
#   - TAP helpers: plan, ok, is, like, diag, note, done_testing;
#   - sql, wait_for, wait_cmd, write_conf, start_runner, stop_runner,
#     kill_runner, run_runner, runner_log, worker_pids, record_claims;
#   - a trap that stops the runner, kills every process it started (found
#     by a tag in their environment, never by name) and drops the database,
#     also when a test fails or dies.
#
# Assertions take exit statuses: `ok DESC CMD ARGS...` passes when CMD
# succeeds, e.g. ok "D-24: all finished" wait_for "select count(*) ..." 0 20.

set -uo pipefail

if [ -z "${PEPSI_E2E_TMP:-}" ] || [ -z "${PGHOST:-}" ]; then
    echo "Bail out! run the end-to-end tests through scripts/test-e2e"
    exit 255
fi

E2E_ROOT=${PEPSI_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
RUNNER=${PEPSI_RUNNER:-$E2E_ROOT/build/pepsi-runner}
E2E_STAGES=$E2E_ROOT/runner/tests/e2e/stages
E2E_NAME=$(basename "$0" .t | tr -c 'A-Za-z0-9_\n' '_' | tr 'A-Z' 'a-z')
E2E_DB=e2e_${E2E_NAME}_$$
E2E_DIR=$(mktemp -d "$PEPSI_E2E_TMP/$E2E_NAME.XXXXXX")
E2E_CONNINFO="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$E2E_DB"
# Every process the runner starts inherits this; the clean-up finds them by it.
E2E_TAG=$E2E_DB
export E2E_DIR E2E_DB E2E_CONNINFO
export PGDATABASE=$E2E_DB

RUNNER_PID=
RUNNER_LOG=
_runner_n=0
_t_n=0
_t_fail=0
_t_plan=
_t_done=0

# ---- TAP ----

plan() { _t_plan=$1; echo "1..$1"; }
# diag MSG...: each argument (and each line of it) as a TAP comment on stderr.
diag() { local a l; for a; do while IFS= read -r l; do printf '# %s\n' "$l" >&2; done <<<"$a"; done; }
note() { local a l; for a; do while IFS= read -r l; do printf '# %s\n' "$l"; done <<<"$a"; done; }

_tap() {
    _t_n=$((_t_n + 1))
    if [ "$1" = 0 ]; then
        echo "ok $_t_n - $2"
    else
        _t_fail=$((_t_fail + 1))
        echo "not ok $_t_n - $2"
        diag "  Failed test '$2' (${BASH_SOURCE[2]##*/} line ${BASH_LINENO[1]})"
    fi
}

# ok DESC CMD ARGS...: passes when CMD exits 0.
ok() {
    local desc=$1
    shift
    "$@"
    _tap $? "$desc"
}

# is GOT EXPECTED DESC
is() {
    if [ "$1" = "$2" ]; then
        _tap 0 "$3"
    else
        _tap 1 "$3"
        diag "         got: '$1'" "    expected: '$2'"
    fi
}

# like GOT ERE DESC
like() {
    if grep -Eq -- "$2" <<<"$1"; then
        _tap 0 "$3"
    else
        _tap 1 "$3"
        diag "    '$(head -c 400 <<<"$1")'" "    does not match /$2/"
    fi
}

# num_between GOT MIN MAX: for ok.
num_between() {
    [[ $1 =~ ^-?[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ] && return 0
    diag "    $1 is not between $2 and $3"
    return 1
}

done_testing() {
    _t_done=1
    [ -n "$_t_plan" ] || echo "1..$_t_n"
    if [ -n "$_t_plan" ] && [ "$_t_plan" != "$_t_n" ]; then
        diag "planned $_t_plan tests but ran $_t_n"
    fi
    exit $((_t_fail > 254 ? 254 : _t_fail))
}

# ---- the database ----

# sql "STATEMENTS": runs them in the test database, prints unaligned
# tuples-only output; fails on the first error.
sql() {
    psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" -c "$1" </dev/null
}

# wait_for "SQL" EXPECTED [TIMEOUT_S]: polls every 100 ms until the query
# prints EXPECTED. Returns 1 (with a diagnostic) on timeout.
wait_for() {
    local q=$1 want=$2 secs=${3:-20} got deadline
    deadline=$(($(date +%s%N) + secs * 1000000000))
    while :; do
        got=$(sql "$q" 2>&1)
        [ "$got" = "$want" ] && return 0
        [ "$(date +%s%N)" -ge "$deadline" ] && break
        sleep 0.1
    done
    diag "waited ${secs}s for: $q" "    last got: '$got'" "    expected: '$want'"
    return 1
}

# wait_cmd TIMEOUT_S CMD ARGS...: polls CMD every 100 ms until it succeeds.
wait_cmd() {
    local secs=$1 deadline
    shift
    deadline=$(($(date +%s%N) + secs * 1000000000))
    while :; do
        "$@" && return 0
        [ "$(date +%s%N)" -ge "$deadline" ] && break
        sleep 0.1
    done
    diag "waited ${secs}s for: $*"
    return 1
}

# elapsed_ms SINCE_NS: milliseconds since a $(date +%s%N) reading.
elapsed_ms() { echo $((($(date +%s%N) - $1) / 1000000)); }

# ---- configuration ----

# write_conf FILE [KEY=VALUE ...] <<EOF ...stage sections... EOF
# Writes [pepsi-postgres] with the test database and [pepsi-dispatch] with
# short timings (overridden by KEY=VALUE), then the stage sections read
# from stdin.
write_conf() {
    local file=$1 kv k
    shift
    local -A d=([POLL_INTERVAL]=1s [STATS_INTERVAL]=1s [COOLDOWN]=500ms [LOCK_WAIT]=2s)
    for kv in "$@"; do
        d[${kv%%=*}]=${kv#*=}
    done
    {
        echo "[pepsi-postgres]"
        echo "CONNINFO = $E2E_CONNINFO"
        echo
        echo "[pepsi-dispatch]"
        for k in $(printf '%s\n' "${!d[@]}" | sort); do
            echo "$k = ${d[$k]}"
        done
        echo
        cat
    } >"$file"
    # A configuration may hold secrets: not for other users (issue 11).
    chmod 640 "$file"
}

# ---- the runner ----

_runner_cmd() {
    if [ "${PEPSI_VALGRIND:-0}" = 1 ]; then
        echo valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            --trace-children=no --child-silent-after-fork=yes --log-file="$E2E_DIR/valgrind.$_runner_n.%p.log"
    fi
}

_alive() { [ -e "/proc/$1" ] && ! grep -q '^[^)]*) Z' "/proc/$1/stat" 2>/dev/null; }

# run_runner LOG ARGS...: runs the runner in the foreground with ARGS
# (e.g. -c FILE serve), output to LOG; returns its exit status.
run_runner() {
    local log=$1
    shift
    _runner_n=$((_runner_n + 1))
    # shellcheck disable=SC2046
    PEPSI_E2E_TAG=$E2E_TAG timeout -k 5 120 $(_runner_cmd) "$RUNNER" "$@" >"$log" 2>&1 </dev/null
    local rc=$?
    _valgrind_report "$rc"
    return $rc
}

# start_runner CONF [ARGS...]: starts `pepsi-runner -c CONF -v serve` in the
# background (log: $RUNNER_LOG, pid: $RUNNER_PID) and waits until it serves.
start_runner() {
    local conf=$1
    shift
    _runner_n=$((_runner_n + 1))
    RUNNER_LOG=$E2E_DIR/runner.$_runner_n.log
    : >"$RUNNER_LOG"
    # shellcheck disable=SC2046
    # Descriptors 5..9 are the tests' own (fifos of held sessions): the
    # runner and its workers must not keep them open.
    PEPSI_E2E_TAG=$E2E_TAG $(_runner_cmd) "$RUNNER" -c "$conf" -v "$@" serve >"$RUNNER_LOG" 2>&1 </dev/null \
        5>&- 6>&- 7>&- 8>&- 9>&- &
    RUNNER_PID=$!
    local deadline=$(($(date +%s) + 60))
    until runner_log_has 'serving [0-9]+ stage'; do
        if ! _alive "$RUNNER_PID" || [ "$(date +%s)" -ge "$deadline" ]; then
            # Nothing after this can pass: stop the file here.
            diag "the runner did not start; its log:" "$(tail -n 30 "$RUNNER_LOG")"
            _tap 1 "the runner serves (giving up on this test file)"
            exit 1
        fi
        sleep 0.1
    done
}

# runner_log_has ERE: whether the current runner's log matches.
runner_log_has() { grep -Eq -- "$1" "$RUNNER_LOG"; }

# runner_log: the current runner's log.
runner_log() { cat "$RUNNER_LOG"; }
# The most ids the adaptive hand-out gave one worker, by the runner's
# "handing N id(s) per worker" lines (issue 19); empty when it never said.
max_handed() { sed -n 's/.*handing \([0-9]*\) id(s) per worker.*/\1/p' "${1:-$RUNNER_LOG}" | sort -n | tail -n 1; }

_valgrind_report() {
    [ "${PEPSI_VALGRIND:-0}" = 1 ] || return 0
    local f
    for f in "$E2E_DIR"/valgrind."$_runner_n".*.log; do
        [ -s "$f" ] || continue
        diag "valgrind (exit $1), $f:" "$(head -n 80 "$f")"
    done
}

# stop_runner [SIGNAL]: signals the runner (TERM), waits up to 60 s for it
# to exit and returns its exit status (124 when it had to be killed).
stop_runner() {
    local sig=${1:-TERM} pid=$RUNNER_PID rc deadline
    [ -n "$pid" ] || return 0
    kill -"$sig" "$pid" 2>/dev/null
    deadline=$(($(date +%s) + 60))
    while _alive "$pid" && [ "$(date +%s)" -lt "$deadline" ]; do
        sleep 0.1
    done
    if _alive "$pid"; then
        diag "the runner (pid $pid) did not exit within 60 s of SIG$sig; killing it"
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        rc=124
    else
        wait "$pid" 2>/dev/null
        rc=$?
    fi
    RUNNER_PID=
    _valgrind_report "$rc"
    return $rc
}

# kill_runner: SIGKILL, as a crash of the runner alone; its workers live on.
kill_runner() {
    [ -n "$RUNNER_PID" ] || return 0
    kill -KILL "$RUNNER_PID" 2>/dev/null
    wait "$RUNNER_PID" 2>/dev/null
    RUNNER_PID=
}

# record_claims: from now on, every row a claim takes (pending to running)
# is recorded in the table e2e_claims (claim_id, workqueue_id, sender_key):
# the order of the claims is the order of claim_id, then workqueue_id.
record_claims() {
    sql "create table e2e_claims (claim_id bigint, workqueue_id bigint, sender_key text);
         create function e2e_claims_rec() returns trigger language plpgsql as \$\$
         begin
             if old.status = 'pending' and new.status = 'running' then
                 insert into public.e2e_claims values (new.claim_id, new.workqueue_id, new.sender_key);
             end if;
             return null;
         end \$\$;
         create trigger e2e_claims after update on pepsi.workqueue for each row execute function e2e_claims_rec();" >/dev/null
}

# worker_pids: the live processes the runner(s) of this test started
# (workers and their helpers), found by the tag in their environment.
worker_pids() {
    local f pid
    for f in $(grep -lzx "PEPSI_E2E_TAG=$E2E_TAG" /proc/[0-9]*/environ 2>/dev/null); do
        pid=${f#/proc/}
        pid=${pid%/environ}
        [ "$pid" = "$RUNNER_PID" ] || [ "$pid" = "$$" ] && continue
        _alive "$pid" && echo "$pid"
    done
}

# worker_cmdlines: "PID COMMAND LINE" of each process worker_pids finds.
worker_cmdlines() {
    local pid
    for pid in $(worker_pids); do
        echo "$pid $({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null)"
    done
}

# no_workers: true when no process started by the runner is left.
no_workers() { [ -z "$(worker_pids)" ]; }

# children_of PID: the direct children of a process.
children_of() { pgrep -P "$1" || true; }

# ---- set-up and clean-up ----

_e2e_cleanup() {
    local rc=$? pid
    if [ -n "$RUNNER_PID" ] && _alive "$RUNNER_PID"; then
        kill -TERM "$RUNNER_PID" 2>/dev/null
        for _ in $(seq 1 50); do _alive "$RUNNER_PID" || break; sleep 0.1; done
        kill -KILL "$RUNNER_PID" 2>/dev/null
        wait "$RUNNER_PID" 2>/dev/null
    fi
    RUNNER_PID=
    for pid in $(worker_pids); do
        kill -KILL "$pid" 2>/dev/null
    done
    # Whatever else the test started in the background (a proxy, an HTTP
    # sink, a held session) would keep prove's pipe open: it goes too.
    for pid in $(jobs -p); do
        kill -KILL "$pid" 2>/dev/null
    done
    if [ "$_t_done" != 1 ] || [ "$_t_fail" -gt 0 ]; then
        local f
        for f in "$E2E_DIR"/runner.*.log; do
            [ -f "$f" ] || continue
            diag "---- last lines of $f ----" "$(tail -n 40 "$f")"
        done
    fi
    dropdb --if-exists --force "$E2E_DB" >/dev/null 2>&1 ||
        dropdb --if-exists "$E2E_DB" >/dev/null 2>&1
    [ "${PEPSI_E2E_KEEP:-0}" = 1 ] || rm -rf "$E2E_DIR"
    exit $rc
}
trap _e2e_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

_e2e_setup() {
    local made=0
    # Concurrent clones of one template can collide ("being accessed by
    # other users"); retry a few times.
    for _ in $(seq 1 20); do
        if createdb -T "${PEPSI_E2E_TEMPLATE:-pepsi_tmpl}" "$E2E_DB" 2>"$E2E_DIR/createdb.err"; then
            made=1
            break
        fi
        sleep 0.25
    done
    if [ "$made" != 1 ]; then
        echo "not ok 1 - create the test database $E2E_DB"
        diag "$(cat "$E2E_DIR/createdb.err")"
        exit 1
    fi
    if ! sql "create table e2e_visit (id bigint not null, stage text not null, pid int not null,
                                      at timestamptz not null default clock_timestamp());
              create table e2e_done (id bigint not null, stage text not null, pid int not null,
                                     state jsonb, at timestamptz not null default clock_timestamp());
              create table e2e_paused (id bigint not null, stage text not null, status text not null,
                                       timeout timestamptz, state jsonb, at timestamptz not null default now());"; then
        echo "not ok 1 - create the side tables in $E2E_DB"
        exit 1
    fi
}
_e2e_setup
