#!/usr/bin/env bash
# issue 11: pepsi-stage-exec passes large message data through a file
# descriptor, never through an environment that can overflow. Before, a
# 600 kB state or 5,000 recipients did not fit in the command's
# environment: execve failed and every such message failed for good with a
# bare "command exited with status 127". Now each variable is in the
# environment only within its bound (32 KiB, 64 KiB for all), the whole
# metadata is JSON on fd 3 (PEPSI_MESSAGE_FD), PEPSI_TRUNCATED names what
# was left out, and a command that cannot be run says why. A command that
# cannot be run is the host's fault, not the message's: a host error,
# retried with backoff (D-103, issue 12), never a permanent failure.
. "$(dirname "$0")/lib.sh"
plan 31

# dump.sh: the command's environment, the metadata on fd 3 and the body.
cat >"$E2E_DIR/dump.sh" <<'EOF'
tr '\0' '\n' </proc/self/environ >"$E2E_DIR/env.$PEPSI_MESSAGE_ID"
cat <&"$PEPSI_MESSAGE_FD" >"$E2E_DIR/meta.$PEPSI_MESSAGE_ID.json"
wc -c >"$E2E_DIR/body.$PEPSI_MESSAGE_ID"
EOF
printf 'echo "never runs"\n' >"$E2E_DIR/notexec"
chmod 644 "$E2E_DIR/notexec"

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-dump]
PROGRAM = pepsi-stage-exec
COMMAND = sh $E2E_DIR/dump.sh
[stage-missing]
PROGRAM = pepsi-stage-exec
COMMAND = /nonexistent/pepsi-e2e-command --flag
[stage-noexec]
PROGRAM = pepsi-stage-exec
COMMAND = $E2E_DIR/notexec
EOF

# meta ID PYTHON-EXPRESSION: evaluates it over the metadata JSON (m).
meta() {
    python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$E2E_DIR/meta.$1.json" "$2" 2>&1
}
# envvar ID NAME: NAME's value in the command's environment, or "(unset)".
envvar() { grep -m1 "^$2=" "$E2E_DIR/env.$1" | sed "s/^$2=//" | grep . || echo "(unset)"; }
gone() { wait_for "select count(*) from pepsi.workqueue where workqueue_id = $1" 0 60; }

small=$(sql "select pepsi.workqueue_inject('dump', p_body => 'abc', p_envelope_sender => 's@x.org',
                    p_recipients => array['a@x.org', 'b@y.org'], p_state => '{\"k\": \"v\"}', p_subject => 'small')")
# A state of 600 kB and 1,000 recipients of 60 bytes: sizes the input
# limits of the schema accept (pepsi.input_limits), each too large for an
# environment variable of 32 KiB.
big=$(sql "select pepsi.workqueue_inject('dump', p_envelope_sender => 's@x.org',
                  p_recipients => (select array_agg(format('user%s-%s@example.org', i, repeat('x', 40)))
                                     from generate_series(1, 1000) i),
                  p_state => jsonb_build_object('blob', repeat('x', 600 * 1024)), p_subject => repeat('s', 998))")
# The sizes of the issue (10 MB state, 200 kB subject, 100,000 recipients),
# written past workqueue_inject (whose input limits may refuse them) before
# the runner starts.
huge=$(sql "select pepsi.workqueue_inject('dump', p_envelope_sender => 's@x.org')")
sql "update pepsi.workqueue
        set state = jsonb_build_object('blob', repeat('y', 10 * 1024 * 1024)), subject = repeat('t', 200 * 1024),
            recipients = (select array_agg(format('r%s@example.org', i)) from generate_series(1, 100000) i)
      where workqueue_id = $huge"
missing=$(sql "select pepsi.workqueue_inject('missing')")
noexec=$(sql "select pepsi.workqueue_inject('noexec')")

ok "runner starts" start_runner "$conf"

# ---- a small message: everything in the environment as before ----
ok "a small message runs" gone "$small"
is "$(envvar "$small" PEPSI_STATE)" '{"k":"v"}' "PEPSI_STATE in the environment"
is "$(envvar "$small" PEPSI_RECIPIENTS)" "a@x.org b@y.org" "PEPSI_RECIPIENTS in the environment"
is "$(envvar "$small" PEPSI_TRUNCATED)" "(unset)" "issue 11: nothing left out: no PEPSI_TRUNCATED"
is "$(envvar "$small" PEPSI_MESSAGE_FD)" 3 "issue 11: PEPSI_MESSAGE_FD=3"
is "$(meta "$small" '(m["id"], m["state"], m["recipients"], m["envelope_sender"], m["subject"])')" \
   "($small, {'k': 'v'}, ['a@x.org', 'b@y.org'], 's@x.org', 'small')" "issue 11: the metadata as JSON on fd 3"
is "$(tr -d ' ' <"$E2E_DIR/body.$small")" 3 "the body on stdin"

# ---- 600 kB state, 5,000 recipients ----
ok "issue 11: a message with a 600 kB state and 1,000 long recipients runs (it failed with status 127)" gone "$big"
is "$(envvar "$big" PEPSI_TRUNCATED)" "PEPSI_RECIPIENTS,PEPSI_STATE" \
   "issue 11: PEPSI_TRUNCATED names the variables left out"
is "$(envvar "$big" PEPSI_STATE)" "(unset)" "issue 11: the state is not in the environment"
is "$(envvar "$big" PEPSI_RECIPIENTS)" "(unset)" "issue 11: nor are the recipients"
is "$(envvar "$big" PEPSI_SUBJECT | wc -c)" 999 "the 998-byte subject still is"
is "$(meta "$big" '(len(m["recipients"]), m["recipients"][-1], len(m["state"]["blob"]), len(m["subject"]))')" \
   "(1000, 'user1000-$(printf 'x%.0s' $(seq 40))@example.org', 614400, 998)" "issue 11: fd 3 has all of it"
ok "issue 11: the command's whole environment stays under 64 KiB" \
    num_between "$(wc -c <"$E2E_DIR/env.$big")" 1 65536

# ---- 10 MB state, 200 kB subject, 100,000 recipients ----
ok "issue 11: the sizes of the issue run too" gone "$huge"
is "$(envvar "$huge" PEPSI_TRUNCATED)" "PEPSI_SUBJECT,PEPSI_RECIPIENTS,PEPSI_STATE" \
   "issue 11: the 200 kB subject is left out as well"
is "$(meta "$huge" '(len(m["recipients"]), len(m["state"]["blob"]), len(m["subject"]))')" \
   "(100000, 10485760, 204800)" "issue 11: fd 3 has all of it"

# ---- commands that cannot be run say why, and are host errors ----
# host_error ID STAGE: paused at STAGE after a host error (D-104), counted
# in state.temporary_failures.STAGE.
host_error() {
    wait_for "select status || '/' || stage || '/' || ((state->'temporary_failures'->>'$2')::int >= 1)
                from pepsi.workqueue where workqueue_id = $1" "paused/$2/true" 20
}
ok "D-103: a command that does not exist is a host error: paused, temporary_failures counted" host_error "$missing" missing
reason=$(sql "select state->>'last_error' from pepsi.workqueue where workqueue_id = $missing")
note "$reason"
like "$reason" \
     '^stage missing: command not found \(exit 127\): .*pepsi-e2e-command' \
     "issue 11: the reason says command not found, not a bare 127"
ok "D-103: a command that is not executable is a host error too" host_error "$noexec" noexec
reason=$(sql "select state->>'last_error' from pepsi.workqueue where workqueue_id = $noexec")
note "$reason"
like "$reason" \
     '^stage noexec: command cannot be run \(exit 126' "issue 11: the reason says it cannot be run"
is "$(sql "select count(*) from pepsi.workqueue where status = 'failed'")" 0 "D-103: neither failed"
ok "D-104: neither counts as a failure of its stage" \
    wait_for "select sum(failed) || '/' || (sum(succeeded) >= 2) from pepsi.stage_stats where stage in ('missing', 'noexec')" "0/true" 10
like "$(runner_log)" "WARNING: +missing: \[[0-9]+\] host error on message $missing: stage missing: command not found" \
   "D-106: the retry is a warning under the stage's name"
stop_runner
is "$?" 0 "clean shutdown"

# ---- an environment too large for the system ----
# With a 256 kB stack the kernel allows 128 KiB of arguments and
# environment (ARG_MAX's floor). The runner's environment takes 80 kB of
# it, so that a message whose variables fill their 64 KiB no longer fits
# while a small one still does.
cat >"$E2E_DIR/small-stack" <<EOF
#!/bin/sh
ulimit -s 256 && exec "$RUNNER" "\$@"
EOF
chmod 755 "$E2E_DIR/small-stack"
tight=$(sql "select pepsi.workqueue_inject('dump',
                    p_recipients => (select array_agg(format('r%s-%s@example.org', i, repeat('x', 40)))
                                       from generate_series(1, 480) i),
                    p_state => jsonb_build_object('v', repeat('v', 30000)))")
fits=$(sql "select pepsi.workqueue_inject('dump', p_subject => 'fits')")
PEPSI_E2E_PAD=$(head -c 80000 /dev/zero | tr '\0' p) RUNNER=$E2E_DIR/small-stack \
    ok "a runner with a small stack and a large environment starts" start_runner "$conf"
ok "issue 11, D-103: a message whose environment does not fit is a host error (the runner's environment is)" \
    host_error "$tight" dump
reason=$(sql "select state->>'last_error' from pepsi.workqueue where workqueue_id = $tight")
note "$reason"
like "$reason" \
     '^stage dump: environment too large to start the command \([0-9]+ bytes in [0-9]+ variables' \
     "issue 11: the reason says the environment is too large"
ok "a small message still runs with the same limits" gone "$fits"
stop_runner
is "$?" 0 "clean shutdown"
done_testing
