#!/usr/bin/env bash
# issue 15: one pipeline run by logins that hold only their duty roles, as
# README "Roles" describes: the dispatcher as a pepsi_runner login
# (CONNINFO), its workers as a pepsi_worker login (WORKER_CONNINFO), an
# application injecting as a pepsi_ingress login, a person on call as a
# pepsi_operator login (resume, the overlay), a dashboard as a
# pepsi_reader login. Then the wrong logins: workers whose login lacks
# pepsi_worker refuse before "ready" (78) with the grant to make, and the
# messages wait untouched; a dispatcher whose login lacks pepsi_runner
# exits 78 at start with the grant to make.
. "$(dirname "$0")/lib.sh"
plan 20

sfx=$$
r=e2e_r_$sfx w=e2e_w_$sfx i=e2e_i_$sfx o=e2e_o_$sfx ro=e2e_ro_$sfx
sql "create role $r login in role pepsi_runner; create role $w login in role pepsi_worker;
     create role $i login in role pepsi_ingress; create role $o login in role pepsi_operator;
     create role $ro login in role pepsi_reader" >/dev/null || exit 1
# Roles are the cluster's: drop them with the test's database.
drop_roles() {
    psql -XAtq -d postgres -c "drop database if exists $E2E_DB with (force)" >/dev/null 2>&1
    psql -XAtq -d postgres -c "drop role if exists $r, $w, $i, $o, $ro" >/dev/null 2>&1
}

# as LOGIN SQL: runs SQL as that login; prints the result or the error.
as() { psql -XAtq -v ON_ERROR_STOP=1 -U "$1" -d "$E2E_DB" -c "$2" </dev/null 2>&1; }

block=$E2E_DIR/block
touch "$block"
# pipeline CONF RUNNER-LOGIN WORKER-LOGIN: a three-stage pipeline; stage b
# fails a message whose subject is "fail" while $block exists.
pipeline() {
    write_conf /dev/stdout <<EOF | sed -e "s|^CONNINFO = .*|CONNINFO = host=$PGHOST port=$PGPORT user=$2 dbname=$E2E_DB|" \
        -e "/^CONNINFO = /a WORKER_CONNINFO = host=$PGHOST port=$PGPORT user=$3 dbname=$E2E_DB" >"$1"
[stage-a]
PROGRAM = pepsi-stage-pass
NEXT = b

[stage-b]
PROGRAM = pepsi-stage-exec
COMMAND = test ! -e '$block' || test "\$PEPSI_SUBJECT" != fail
NEXT = c

[stage-c]
PROGRAM = pepsi-stage-pass
EOF
    chmod 640 "$1"
}

conf=$E2E_DIR/pepsi.conf
pipeline "$conf" "$r" "$w"
ok "issue 15: the dispatcher serves as a login holding only pepsi_runner" start_runner "$conf"

ids=$(as "$i" "select pepsi.workqueue_inject('a', convert_to('hello', 'UTF8'), p_subject => 'm' || g)
                 from generate_series(1, 20) g" | paste -sd,)
failing=$(as "$i" "select pepsi.workqueue_inject('a', p_subject => 'fail')")
like "$ids,$failing" '^[0-9]+(,[0-9]+){20}$' "issue 15: an application injects as a login holding only pepsi_ingress"
ok "issue 15: every message runs through the three stages (workers log in holding only pepsi_worker)" \
    wait_for "select count(*) from pepsi.workqueue where workqueue_id in ($ids)" 0 30
ok "issue 15: the failing message fails at stage b" \
    wait_for "select status || '/' || stage from pepsi.workqueue where workqueue_id = $failing" "failed/b" 30
is "$(sql "select string_agg(distinct usename, ',') from pg_stat_activity
            where datname = current_database() and application_name like 'pepsi-stage-%'")" \
   "$w" "issue 15: the workers' sessions are the pepsi_worker login's"
is "$(sql "select string_agg(distinct usename, ',') from pg_stat_activity
            where datname = current_database() and application_name = 'pepsi-runner'")" \
   "$r" "issue 15: the dispatcher's session is the pepsi_runner login's"

# The dashboard: the message through pepsi.messages, never its body.
is "$(as "$ro" "select status || '/' || stage || '/' || subject from pepsi.messages where workqueue_id = $failing")" \
   "failed/b/fail" "issue 15: a pepsi_reader login reads the failed message's envelope and status"
like "$(as "$ro" "select count(*) from pepsi.workqueue_body")" 'permission denied' \
     "issue 15: ... but not the bodies (42501)"
like "$(as "$ro" "select pepsi.workqueue_resume(array[$failing]::bigint[])")" 'permission denied' \
     "issue 15: ... and it cannot resume (42501)"
like "$(as "$ro" "select count(*) from pepsi.queue_overview")" '^[0-9]+$' "issue 15: ... it reads the views"

# The person on call: resume after the fix, and an overlay change.
rm -f "$block"
is "$(as "$o" "select pepsi.workqueue_resume(array[$failing]::bigint[])")" 1 \
   "issue 15: a pepsi_operator login resumes the failed message"
ok "issue 15: ... and it finishes" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $failing" 0 30
like "$(as "$o" "select pepsi.config_set('c', 'PARALLELISM', '2')")" '^[^E]*$' \
     "issue 15: a pepsi_operator login changes the stage overlay"
ok "issue 15: ... and the dispatcher reloads it" wait_cmd 20 runner_log_has 'configuration reloaded'
like "$(as "$o" "select count(*) from pepsi.workqueue")" 'permission denied' \
     "issue 15: a pepsi_operator login cannot read the queue table itself (42501)"
stop_runner

# Workers whose login lacks pepsi_worker: they refuse before "ready", the
# messages wait.
bad=$E2E_DIR/bad-worker.conf
pipeline "$bad" "$r" "$ro"
ok "issue 15: a dispatcher whose workers' login lacks pepsi_worker still starts" start_runner "$bad"
waiting=$(as "$i" "select pepsi.workqueue_inject('a')")
ok "issue 15: the worker refuses with the login, what it lacks and the grant to make" \
    wait_cmd 20 runner_log_has "login \"$ro\" lacks .*execute on pepsi\.workqueue_commit\(\).*grant pepsi_worker to \"$ro\""
sleep 1
is "$(sql "select status || '/' || stage || '/' || coalesce(state->>'strikes', '0') from pepsi.workqueue where workqueue_id = $waiting")" \
   "pending/a/0" "issue 15: ... and the message waits at its stage, no strike, not failed"
stop_runner

# A dispatcher whose login lacks pepsi_runner: 78 at start.
badr=$E2E_DIR/bad-runner.conf
pipeline "$badr" "$w" "$w"
run_runner "$E2E_DIR/bad-runner.log" -c "$badr" serve
is "$?" 78 "issue 15: a dispatcher whose login lacks pepsi_runner exits 78 at start"
ok "issue 15: ... saying what it lacks and the grant to make" \
    grep -Eq "login \"$w\" lacks .*execute on pepsi\.workqueue_claim\(\).*grant pepsi_runner to \"$w\"" "$E2E_DIR/bad-runner.log"

drop_roles
done_testing
