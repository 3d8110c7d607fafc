#!/usr/bin/env bash
# issue 13: libpepsi-worker is installable and a stage program of one's own
# is written against it in C. `make install` into a temporary PREFIX puts
# pepsi-worker.h, libpepsi-worker.{a,so.0} and pepsi-worker.pc there; the
# example examples/c-stage/ is copied out of the tree and built with its
# own Makefile, through pkg-config only (no -I into runner/src), once
# against the shared library and once against the static one; both run as
# stages of a real pipeline (dyn -> static -> done), and the messages come
# out transformed: the state patch of each, a failure over MAX_RECIPIENTS,
# a per-address override checked by the stage's check_option, a section
# its setup refuses (exit 78). A missing or incomplete header, library or
# .pc fails the build steps, and so every test after them.
. "$(dirname "$0")/lib.sh"
plan 17

build=$(cd "$(dirname "$RUNNER")" && pwd)
prefix=$E2E_DIR/prefix
mklog=$E2E_DIR/make.log
# make in the source tree, on the build the suite runs (nothing to rebuild).
mk() { make -C "$E2E_ROOT" BUILD="$build" "$@" >>"$mklog" 2>&1 || { diag "$(tail -20 "$mklog")"; return 1; }; }
# example DIR MAKE-ARGS...: the example's own Makefile, in its copy DIR.
example() {
    local dir=$1
    shift
    make -C "$dir" "$@" >>"$mklog" 2>&1 || { diag "$(tail -20 "$mklog")"; return 1; }
}

# Every directory outside PREFIX moved too: as root without DESTDIR, make
# install also applies its sysusers.d file (issue 15).
ok "issue 13: make install PREFIX=$prefix" \
    mk install PREFIX="$prefix" SYSCONFDIR="$E2E_DIR/etc" UNITDIR="$E2E_DIR/units" SYSUSERSDIR="$E2E_DIR/sysusers.d"
installed() {
    local f
    for f in include/pepsi-worker.h lib/libpepsi-worker.a lib/libpepsi-worker.so.0 lib/libpepsi-worker.so \
             lib/pkgconfig/pepsi-worker.pc; do
        [ -e "$1/$f" ] || { diag "$1/$f is missing"; return 1; }
    done
}
ok "the header, the static and shared libraries and the .pc are installed" installed "$prefix"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
is "$(pkg-config --variable=prefix pepsi-worker) $(pkg-config --modversion pepsi-worker)" \
   "$prefix $("$RUNNER" --version | awk '{print $2}')" "pepsi-worker.pc: the install prefix, the runner's version"

ok "DESTDIR honoured: make install DESTDIR=... PREFIX=/opt/pepsi" \
    mk install DESTDIR="$E2E_DIR/dest" PREFIX=/opt/pepsi
ok "... the files under DESTDIR, the .pc naming /opt/pepsi" \
    eval 'installed "$E2E_DIR/dest/opt/pepsi" && grep -qx "prefix=/opt/pepsi" "$E2E_DIR/dest/opt/pepsi/lib/pkgconfig/pepsi-worker.pc"'

# A library built with ASan/UBSan (make SANITIZE=1) needs them in the program too.
san=
nm -u "$build/libpepsi-worker.a" | grep -q __asan_ && san="-fsanitize=address,undefined"

# The shared build: out of the tree, pkg-config only.
cp -r "$E2E_ROOT/examples/c-stage" "$E2E_DIR/dyn"
ok "issue 13: the example builds against libpepsi-worker.so with pkg-config --cflags --libs pepsi-worker" \
    example "$E2E_DIR/dyn" CFLAGS="-O2 -g $san" LDFLAGS="-Wl,-rpath,$prefix/lib $san"
ok "... linked to libpepsi-worker.so.0 (its soname), nothing from the source tree on its command line" \
    eval 'readelf -d "$E2E_DIR/dyn/count-recipients" | grep -q "NEEDED.*\[libpepsi-worker.so.0\]" &&
          ! grep "count-recipients.c" "$mklog" | grep -q "$E2E_ROOT/runner"'

# The static build: a prefix holding the header, the .a and the .pc only.
sprefix=$E2E_DIR/static-prefix
mkdir -p "$sprefix/lib/pkgconfig"
cp -r "$prefix/include" "$sprefix/"
cp "$prefix/lib/libpepsi-worker.a" "$sprefix/lib/"
sed "s|^prefix=.*|prefix=$sprefix|" "$prefix/lib/pkgconfig/pepsi-worker.pc" >"$sprefix/lib/pkgconfig/pepsi-worker.pc"
cp -r "$E2E_ROOT/examples/c-stage" "$E2E_DIR/static"
static_example() { PKG_CONFIG_PATH=$sprefix/lib/pkgconfig example "$@"; }
ok "issue 13: the example builds against libpepsi-worker.a with pkg-config --static (Libs.private complete)" \
    static_example "$E2E_DIR/static" PKG_CONFIG="pkg-config --static" CFLAGS="-O2 -g $san" LDFLAGS="$san"
ok "... with the library inside it (no libpepsi-worker.so.0 needed)" \
    eval '[ -x "$E2E_DIR/static/count-recipients" ] &&
          ! readelf -d "$E2E_DIR/static/count-recipients" | grep -q libpepsi-worker'

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-dyn]
PROGRAM = $E2E_DIR/dyn/count-recipients
QUEUE_LIMIT = 8
STATE_KEY = dyn
NEXT = static

[stage-static]
PROGRAM = $E2E_DIR/static/count-recipients
STATE_KEY = static
MAX_RECIPIENTS = 3
NEXT = done

[stage-done]
PROGRAM = $E2E_STAGES/misbehave

[stage-refused]
PROGRAM = $E2E_DIR/dyn/count-recipients
MAX_RECIPIENTS = zero
EOF

# Per-address MAX_RECIPIENTS of stage static: 10 for the vip addresses (their
# 4 recipients pass), "lots" for odd@ (the stage's check_option refuses it).
sql "select pepsi.settings_set(format('v%s@vip.example', i), 'static', 'MAX_RECIPIENTS', '10')
       from generate_series(1, 4) i;
     select pepsi.settings_set('odd@odd.example', 'static', 'MAX_RECIPIENTS', 'lots')" >/dev/null
# 20 messages with 1..5 recipients (n % 5 + 1), then the two with overrides.
sql "select pepsi.workqueue_inject_batch((
       select jsonb_agg(jsonb_build_object(
           'stage', 'dyn', 'subject', format('hello %s', n), 'envelope_sender', 'from@example.org',
           'recipients', (select jsonb_agg(format('r%s@example.org', r)) from generate_series(1, n % 5 + 1) r),
           'state', jsonb_build_object('n', n)))
         from generate_series(1, 20) n));
     select pepsi.workqueue_inject('dyn', p_subject => 'vip', p_state => '{\"n\": 21}',
                                   p_recipients => array['v1@vip.example', 'v2@vip.example',
                                                         'v3@vip.example', 'v4@vip.example']);
     select pepsi.workqueue_inject('dyn', p_subject => 'odd', p_state => '{\"n\": 22}',
                                   p_recipients => array['odd@odd.example']);
     select pepsi.workqueue_inject('refused', p_state => '{\"n\": 23}')" >/dev/null

ok "runner starts" start_runner "$conf"
ok "issue 13: every message went through both C stages: 13 done, 9 failed" \
    wait_for "select count(*) filter (where status = 'failed') || '/' || (select count(*) from e2e_done)
                from pepsi.workqueue where stage <> 'refused'" "9/13" 30
is "$(sql "select string_agg(format('%s:%s/%s/%s', state->>'n', state->'dyn'->>'count',
                                    state->'static'->>'count', state->'static'->>'subject'), ' '
                             order by (state->>'n')::int)
             from e2e_done")" \
   "1:2/2/HELLO 1 2:3/3/HELLO 2 5:1/1/HELLO 5 6:2/2/HELLO 6 7:3/3/HELLO 7 10:1/1/HELLO 10 11:2/2/HELLO 11 12:3/3/HELLO 12 15:1/1/HELLO 15 16:2/2/HELLO 16 17:3/3/HELLO 17 20:1/1/HELLO 20 21:4/4/VIP" \
   "the state patches of the shared and the static build: recipients counted, subject upper-cased (n 21: per-address MAX_RECIPIENTS 10)"
is "$(sql "select string_agg(format('%s:%s/%s/%s', f.state->>'n', failed_stage, failure_class,
                                    f.state->'dyn'->>'count'), ' ' order by (f.state->>'n')::int)
             from pepsi.failed join pepsi.workqueue f using (workqueue_id)
            where last_error ~ '^[0-9]+ recipients, more than MAX_RECIPIENTS \(3\)$'")" \
   "3:static/permanent/4 4:static/permanent/5 8:static/permanent/4 9:static/permanent/5 13:static/permanent/4 14:static/permanent/5 18:static/permanent/4 19:static/permanent/5" \
   "PEPSI_FAIL over MAX_RECIPIENTS: failed at static, class permanent, with its reason and the first stage's patch"
like "$(sql "select failed_stage || ': ' || last_error from pepsi.failed join pepsi.workqueue w using (workqueue_id)
              where w.state->>'n' = '22'")" \
     '^static: .*MAX_RECIPIENTS "lots" is not a positive whole number' \
     "D-114: a per-address value the stage's check_option refuses fails that message, with the stage's reason"
ok "a section the stage's setup refuses: exit 78 before ready, the reason in the runner's log" \
    wait_cmd 20 grep -q 'refused.*MAX_RECIPIENTS "zero" is not a positive whole number' "$RUNNER_LOG"
# (pending, or running for the moment a new worker starts and refuses again)
is "$(sql "select status in ('pending', 'running') and state->'strikes' is null
             from pepsi.workqueue where stage = 'refused'")" t \
   "... and its message waits, neither failed nor struck for the stage's refusal"
ok "D-26: both C stages reported their passes (stage_stats)" \
    wait_for "select string_agg(format('%s:%s', stage, runs), ' ' order by stage) from pepsi.stage_totals
               where stage in ('dyn', 'static')" "dyn:22 static:22" 20
stop_runner
done_testing
