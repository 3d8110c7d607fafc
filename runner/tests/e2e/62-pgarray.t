#!/usr/bin/env bash
# issue 13: every array parameter is built by lib/pgarray; its literals
# read back in a real PostgreSQL exactly as built. runner/tests/test_pgarray.c
# holds the cases (quotes, backslashes, commas, braces, spaces, the empty
# string, the text "NULL" beside a NULL element, UTF-8, 10,000 elements,
# int64 min and max, float8 exactly, booleans); given this test's database
# it sends each literal as $1::text[] (bigint[], float8[], boolean[]) and
# compares array_length and every element. Built by `make test`; `make
# check-e2e` builds it first.
. "$(dirname "$0")/lib.sh"
plan 3

bin=$PEPSI_BUILD/tests/test_pgarray
if [ ! -x "$bin" ]; then
    echo "Bail out! $bin not found: run make test first"
    exit 255
fi

out=$("$bin" "$E2E_CONNINFO" 2>&1)
rc=$?
is "$rc" 0 "issue 13: every pgarray literal reads back in PostgreSQL as built"
[ "$rc" = 0 ] || diag "$(grep -v '^ok' <<<"$out")"
# The database part ran, not only the checks without one.
db_ok=$(grep -c '^ok .*PostgreSQL reads it as\|^ok .*every element as added' <<<"$out")
is "$db_ok" 12 "issue 13: the round trip ran all its 6 literals through PostgreSQL (array_length and elements)"
like "$(tail -n 1 <<<"$out")" '^[0-9]+ passed, 0 failed$' "issue 13: test_pgarray's last line says nothing failed"
done_testing
