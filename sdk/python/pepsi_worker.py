"""pepsi_worker: the pepsi worker protocol for stage programs in Python (issue 16).

A stage program is a function from a loaded message to an action::

    import pepsi_worker

    def handle(msg):
        if not msg.recipients:
            return pepsi_worker.fail("no recipients")
        return pepsi_worker.advance(state={"seen": True})   # to NEXT, or finished

    if __name__ == "__main__":
        pepsi_worker.run(handle)

The module owns the protocol (README "The worker protocol", "Workers in
Python"): it connects with the runner's PEPSI_CONNINFO, checks the schema's
API level (exit 78 before "ready" when it is not served), says "ready",
takes every id already waiting on stdin (at most QUEUE_LIMIT), loads them
with one pepsi.worker_load call, runs the handler on each, commits every
result with one pepsi.workqueue_commit call and answers one status line
per id, in input order. It exits 0 on stdin EOF and on SIGTERM (after the
batch in hand). What it reads from its environment, all set by
`pepsi-runner serve`: PEPSI_STAGE, PEPSI_CONNINFO, PEPSI_SCHEMA_VERIFIED,
PEPSI_QUEUE_LIMIT, PEPSI_MAX_HOPS, PEPSI_MAX_LIFETIME_MS,
PEPSI_WORKER_SYNCHRONOUS_COMMIT and PEPSI_MAX_MESSAGES. It never reads the
configuration file.

Recycling (D-68): when PEPSI_MAX_MESSAGES is a count, the process the
runner started stays a clean parent that never runs the handler nor
touches the database; it forks a child that does the work, and forks a
fresh one each time a child has answered that many messages; the ids a
child read but did not take go to the next one through its parent. It says
"ready recycles", so the runner does not start a new program every
MAX_MESSAGES messages: a new Python interpreter and `import psycopg` cost
about 0.3 s of CPU, a fork and a new connection about a tenth of that.
Whatever a handler leaks dies with its child, as D-68 means.

Needs psycopg 3 (Debian: python3-psycopg).
"""

import datetime as _dt
import json
import os
import select
import signal
import sys
import time
import traceback

import psycopg

__all__ = [
    "API_LEVEL", "Message", "Action", "advance", "finish", "fail", "pause", "host_error", "run", "log",
]

# The schema API level this module is written against (pepsi.schema_api(),
# D-12): it runs when oldest <= API_LEVEL <= level.
API_LEVEL = 1

EX_USAGE, EX_IOERR, EX_TEMPFAIL, EX_CONFIG = 64, 74, 75, 78

LOAD_SQL = ("select workqueue_id, tube, sender_key, envelope_sender, recipients, header_from, subject,"
            " state, arrived_at, headers, body, settings, next_stage, bounce_stage"
            " from pepsi.worker_load(%s, %s::bigint[], %s)")
COMMIT_SQL = "select workqueue_id, outcome from pepsi.workqueue_commit(%s, %s::jsonb, %s::int)"
CHECK_SQL = ("select a.level, a.oldest,"
             " pg_catalog.to_regprocedure('pepsi.worker_load(text, bigint[], boolean)') is not null,"
             " coalesce(pg_catalog.has_function_privilege("
             "   pg_catalog.to_regprocedure('pepsi.worker_load(text, bigint[], boolean)'), 'execute'), false),"
             " pg_catalog.has_function_privilege('pepsi.workqueue_commit(text, jsonb, int)', 'execute'),"
             " current_user"
             " from pepsi.schema_api() a")

MAX_BATCH = 1024  # QUEUE_LIMIT's upper bound
RECYCLE = -1      # serve(): replace this process with a fresh fork (D-68)


# ---- log lines: the runner's format on stderr (stdout is the protocol's) ----

_stage_name = "worker"


def log(level, text):
    """Writes one log line on stderr, as the runner writes its own:
    'LEVEL:  stage: [pid] text'. level: ERROR, WARNING, NOTICE, INFO, DEBUG."""
    line = "%s:  %s: [%d] %s\n" % (level, _stage_name, os.getpid(), str(text).replace("\n", " | "))
    try:
        os.write(2, line.encode("utf-8", "replace"))
    except OSError:
        pass


# ---- actions ----

class Action:
    """What the handler decided for one message. Build it with advance(),
    finish(), fail(), pause() or host_error()."""

    __slots__ = ("kind", "next", "state", "reason", "failure_class", "until")

    def __init__(self, kind, next=None, state=None, reason=None, failure_class=None, until=None):
        self.kind = kind
        self.next = next
        self.state = state
        self.reason = reason
        self.failure_class = failure_class
        self.until = until

    def __repr__(self):
        return "Action(%r, next=%r, reason=%r)" % (self.kind, self.next, self.reason)


def advance(next=None, state=None):
    """Advance to `next`, by default the stage's NEXT (finished when the
    stage has none). `state`: a dict merged into the message's state."""
    return Action("advance", next=next, state=state)


def finish(state=None):
    """Done: the message is deleted."""
    return Action("finish", state=state)


def fail(reason, failure_class="permanent", state=None):
    """A permanent failure: the message is left failed with `reason`
    (answered non-zero, counted failed in pepsi.stage_stats)."""
    return Action("fail", reason=str(reason), failure_class=failure_class, state=state)


def pause(until=None, seconds=None, reason=None, state=None):
    """Paused at this stage until `until` (an aware datetime) or for
    `seconds` (default 1 s); the runner claims it again then."""
    if until is None:
        until = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=1 if seconds is None else seconds)
    elif until.tzinfo is None:
        raise ValueError("pause(until=...) needs an aware datetime")
    return Action("pause", until=until, reason=reason, state=state)


def host_error(reason):
    """The host's fault, not the message's (D-103): paused and retried 1,
    2, 4 ... minutes until the stage's MAX_LIFETIME, then BOUNCE_STAGE or
    failed. A handler that raises gets this too."""
    return Action("host_error", reason=str(reason))


_ADVANCE = Action("advance")


# ---- messages ----

class Message:
    """One message as pepsi.worker_load returns it."""

    __slots__ = ("id", "stage", "tube", "sender_key", "envelope_sender", "recipients", "header_from",
                 "subject", "state", "arrived_at", "headers", "body", "settings", "next", "bounce_stage")

    def __init__(self, stage, row):
        (self.id, self.tube, self.sender_key, self.envelope_sender, self.recipients, self.header_from,
         self.subject, self.state, self.arrived_at, self.headers, self.body, self.settings, self.next,
         self.bounce_stage) = row
        self.stage = stage
        if self.recipients is None:
            self.recipients = []

    def option(self, key, default=None):
        """A per-address override of this stage's option `key` (pepsi.settings)
        when every correspondent that sets it agrees on one value; else
        `default`. (This module does not split a message whose recipients
        disagree, as the C SDK does.)"""
        if not self.settings:
            return default
        values = {opts[key] for opts in self.settings.values() if isinstance(opts, dict) and key in opts}
        return values.pop() if len(values) == 1 else default

    def __repr__(self):
        return "Message(%d at %s)" % (self.id, self.stage)


# ---- the worker ----

class _Fatal(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


def _trouble(exc, conn):
    """74 for a lost connection, 75 for overload, 0 for any other error."""
    code = getattr(getattr(exc, "diag", None), "sqlstate", None) or getattr(exc, "sqlstate", None) or ""
    if code.startswith("08") or code in ("57P01", "57P02", "57P03"):
        return EX_IOERR
    if code.startswith("53"):
        return EX_TEMPFAIL
    if conn is None or conn.closed or conn.broken or not code:
        return EX_IOERR
    return 0


def _env_int(name, default, low, high):
    try:
        v = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return v if low <= v <= high else default


def _schema_verified_covers():
    token = os.environ.get("PEPSI_SCHEMA_VERIFIED", "")
    try:
        level, oldest = (int(x) for x in token.split(":"))
    except ValueError:
        return False
    return oldest <= API_LEVEL <= level


class _Worker:
    def __init__(self, handler, stage, with_body):
        self.handler = handler
        self.stage = stage
        self.with_body = with_body
        self.conninfo = os.environ.get("PEPSI_CONNINFO", "")
        self.sync = os.environ.get("PEPSI_WORKER_SYNCHRONOUS_COMMIT", "no") == "yes"
        self.max_hops = _env_int("PEPSI_MAX_HOPS", 1000, 1, 100000000)
        self.queue_limit = min(_env_int("PEPSI_QUEUE_LIMIT", MAX_BATCH, 1, MAX_BATCH), MAX_BATCH)
        self.lifetime = "%d milliseconds" % _env_int("PEPSI_MAX_LIFETIME_MS", 120 * 3600 * 1000, 1, 2 ** 62)
        self.conn = None
        self.buf = bytearray()
        self.eof = False
        self.terminate = False
        self.wake_r = None
        self.fd_in = 0
        self.handled = 0       # ids answered by this process
        self.max_messages = 0  # > 0: return RECYCLE once this many are answered

    # -- connection --

    def connect(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None
        self.conn = psycopg.connect(self.conninfo, autocommit=True,
                                    application_name="pepsi-stage-%s" % self.stage)
        if not self.sync:
            # Concurrent workers commit as a group; a lost advance is a
            # repeated stage, never a lost message (D-77).
            self.conn.execute("set synchronous_commit = off")

    def start(self):
        """Everything before "ready"; returns 0 or the exit code."""
        try:
            self.connect()
        except psycopg.Error as e:
            log("ERROR", "cannot connect: %s" % str(e).strip())
            return EX_TEMPFAIL if "too many" in str(e) or _trouble(e, None) == EX_TEMPFAIL else 1
        try:
            level, oldest, has_load, may_load, may_commit, login = self.conn.execute(CHECK_SQL).fetchone()
        except psycopg.Error as e:
            log("ERROR", "cannot check the schema (pepsi.schema_api()): %s" % str(e).strip())
            return EX_CONFIG if _trouble(e, self.conn) == 0 else 1
        if not _schema_verified_covers() and not (oldest <= API_LEVEL <= level):
            if level < API_LEVEL:
                log("ERROR", "the schema serves API levels %d..%d, older than this program's %d: run sqitch deploy"
                    % (oldest, level, API_LEVEL))
            else:
                log("ERROR", "the schema serves API levels %d..%d and no longer %d: upgrade this program"
                    % (oldest, level, API_LEVEL))
            return EX_CONFIG
        if not has_load:
            log("ERROR", "the schema has no pepsi.worker_load(text, bigint[], boolean): run sqitch deploy")
            return EX_CONFIG
        if not (may_load and may_commit):
            log("ERROR", 'login "%s" lacks execute on pepsi.worker_load or pepsi.workqueue_commit: '
                'grant pepsi_worker to "%s" (README "Roles")' % (login, login))
            return EX_CONFIG
        return 0

    # -- stdin --

    def _fill(self, block):
        """Reads what stdin has; blocks (until data, EOF or SIGTERM) when block."""
        while True:
            try:
                r, _, _ = select.select([self.fd_in, self.wake_r], [], [], None if block else 0)
            except InterruptedError:
                continue
            if self.wake_r in r:
                try:
                    os.read(self.wake_r, 64)
                except OSError:
                    pass
            if self.fd_in not in r:
                if block and not self.terminate:
                    continue
                return
            data = os.read(self.fd_in, 65536)
            if not data:
                self.eof = True
            else:
                self.buf += data
            return

    def read_ids(self):
        """The next batch of ids: at least one (blocking), then every id
        already waiting, up to QUEUE_LIMIT. None at EOF or SIGTERM."""
        while b"\n" not in self.buf:
            if self.eof or self.terminate:
                return None
            self._fill(True)
        if self.queue_limit > 1 and not self.eof and self.buf.count(b"\n") < self.queue_limit:
            self._fill(False)
        lines = self.buf.split(b"\n")
        take = min(len(lines) - 1, self.queue_limit)
        if self.max_messages:
            take = min(take, self.max_messages - self.handled)
        ids = []
        for raw in lines[:take]:
            try:
                ids.append(int(raw))
            except ValueError:
                log("ERROR", 'unreadable message id "%s" from the dispatcher' % raw[:64].decode("ascii", "replace"))
                raise _Fatal(1)
        self.buf = bytearray(b"\n".join(lines[take:]))
        return ids

    # -- one batch --

    def _result(self, msg, act, state_error=None):
        r = {"id": msg.id}
        kind = act.kind
        if kind == "advance":
            nxt = act.next or msg.next
            if nxt:
                r["do"], r["next"] = "advance", nxt
            else:
                r["do"] = "finish"
        elif kind == "finish":
            r["do"] = "finish"
        elif kind == "pause":
            r["do"] = "pause"
            r["until"] = act.until.isoformat()
            if act.reason:
                r["reason"] = act.reason
        elif kind == "fail":
            r["do"], r["reason"], r["class"] = "fail", act.reason or "failed", act.failure_class or "permanent"
        else:
            r["do"], r["reason"], r["lifetime"] = "host_error", "stage %s: %s" % (self.stage, act.reason), self.lifetime
            if msg.bounce_stage:
                r["bounce"] = msg.bounce_stage
        if act.state:
            r["state"] = act.state
        return r

    def run_batch(self, ids):
        """One status (and report) per id, in order."""
        n = len(ids)
        try:
            if self.conn is None or self.conn.closed or self.conn.broken:
                self.connect()
            rows = self.conn.execute(LOAD_SQL, (self.stage, "{%s}" % ",".join(map(str, ids)), self.with_body),
                                     prepare=True).fetchall()
        except psycopg.Error as e:
            st = _trouble(e, self.conn)
            log("ERROR", "cannot load a batch: %s" % str(e).strip())
            if st:
                return [(st, None)] * n
            # an SQL error of the load: a host error of each message (D-103)
            results = [{"id": i, "do": "host_error", "reason": "stage %s: cannot load the message: %s"
                        % (self.stage, str(e).strip()[:500]), "lifetime": self.lifetime} for i in ids]
            return self.commit(ids, results, {}, [None] * n)
        by_id = {}
        for row in rows:
            by_id.setdefault(row[0], row)
        results, kinds, times = [], {}, [None] * n
        seen = set()
        for k, i in enumerate(ids):
            row = by_id.get(i)
            if row is None or i in seen:
                if row is None:
                    log("WARNING", "message %d is not running at this stage; skipping it" % i)
                continue
            seen.add(i)
            msg = Message(self.stage, row)
            t0 = time.perf_counter_ns()
            if not isinstance(msg.state, dict):
                act = fail("stage %s: the message state is not a JSON object" % self.stage)
            else:
                try:
                    act = self.handler(msg)
                    if act is None:
                        act = _ADVANCE
                    elif not isinstance(act, Action):
                        act = host_error("the handler returned %r, not an action" % (act,))
                except Exception as e:
                    log("ERROR", "message %d: the handler raised %s" % (i, "".join(
                        traceback.format_exception_only(type(e), e)).strip()))
                    act = host_error("%s: %s" % (type(e).__name__, e))
            times[k] = (time.perf_counter_ns() - t0) // 1000
            results.append(self._result(msg, act))
            kinds[i] = act.kind
        return self.commit(ids, results, kinds, times)

    def commit(self, ids, results, kinds, times):
        outcome = {}
        if results:
            try:
                outcome = self._commit_call(results)
            except psycopg.Error as e:
                st = _trouble(e, self.conn)
                if st:
                    log("ERROR", "cannot commit a batch: %s" % str(e).strip())
                    return [(st, None)] * len(ids)
                log("WARNING", "the batch commit was refused (%s); committing one by one" % str(e).strip())
                outcome = {}
                for r in results:
                    try:
                        outcome.update(self._commit_call([r]))
                    except psycopg.Error as e1:
                        st = _trouble(e1, self.conn)
                        log("ERROR", "message %s: the commit was refused: %s" % (r["id"], str(e1).strip()))
                        outcome[r["id"]] = st or EX_IOERR
        answers = []
        for k, i in enumerate(ids):
            o = outcome.get(i)
            if o is None:
                status = 0  # not running here: skipped, answered 0
            elif isinstance(o, int):
                status = o
            elif o == "ok":
                status = 1 if kinds.get(i) == "fail" else 0
            elif o == "loop":
                log("WARNING", "message %d failed as a loop: more than MAX_HOPS (%d) hops" % (i, self.max_hops))
                status = 1
            elif o == "failed":
                log("WARNING", "message %d failed: host errors until MAX_LIFETIME" % i)
                status = 1
            else:
                log("WARNING", "message %d moved on before its result was written" % i)
                status = 0
            answers.append((status, times[k]))
        return answers

    def _commit_call(self, results):
        cur = self.conn.execute(COMMIT_SQL, (self.stage, json.dumps(results, default=str), self.max_hops),
                                prepare=True)
        return {i: o for i, o in cur.fetchall()}

    def answer(self, answers):
        stage = json.dumps(self.stage)
        out = []
        for status, us in answers:
            if us is None:
                out.append("%d\n" % status)
            else:
                out.append('%d [[%s,%d]]\n' % (status, stage, us))
        _write_all("".join(out).encode())

    def serve(self):
        """0 at EOF or SIGTERM; RECYCLE once max_messages ids are answered
        (what is left in self.buf then belongs to the next process)."""
        while not self.terminate:
            ids = self.read_ids()
            if ids is None:
                break
            self.answer(self.run_batch(ids))
            self.handled += len(ids)
            if self.max_messages and self.handled >= self.max_messages:
                return RECYCLE
        return 0


def _write_all(data, fd=1):
    view = memoryview(data)
    while view:
        try:
            k = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError as e:
            log("ERROR", "cannot write to the dispatcher: %s" % e)
            raise _Fatal(1)
        view = view[k:]


def _usage(argv):
    """PROGRAM [-c FILE] [-L LEVEL] [-v] worker, as the runner starts a worker."""
    args = list(argv[1:])
    while args and args[0] != "worker":
        opt = args.pop(0)
        if opt in ("-c", "-L"):
            if not args:
                return False
            args.pop(0)
        elif opt != "-v":
            return False
    return args == ["worker"]


def run(handler, body=True, argv=None):
    """Runs a worker of $PEPSI_STAGE until stdin's EOF or SIGTERM and exits
    the process with its code. handler(msg) returns an Action (None means
    advance). body=False: the header block and body are not loaded."""
    global _stage_name
    argv = sys.argv if argv is None else argv
    stage = os.environ.get("PEPSI_STAGE", "")
    if stage:
        _stage_name = stage
    if not _usage(argv):
        log("ERROR", "usage: %s [-c FILE] [-L LEVEL] [-v] worker" % os.path.basename(argv[0] if argv else "stage"))
        sys.exit(EX_USAGE)
    if not stage:
        log("ERROR", "PEPSI_STAGE is not set: a worker is started by pepsi-runner serve")
        sys.exit(EX_CONFIG)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    max_messages = _env_int("PEPSI_MAX_MESSAGES", 0, 0, 2 ** 31 - 1)
    if max_messages > 0:
        sys.exit(_run_forking(handler, stage, body, max_messages))
    sys.exit(_run_worker(handler, stage, body, True, 0, b"")[0])


def _run_worker(handler, stage, body, first, max_messages, pending):
    """One worker process: the checks and "ready" when first, then ids
    (pending: input a previous process read and left) until EOF, SIGTERM or
    (max_messages > 0) RECYCLE. Returns the code and the unread input."""
    w = _Worker(handler, stage, body)
    w.max_messages = max_messages
    w.buf += pending
    # SIGTERM/SIGINT: finish the batch in hand, then exit 0. The handler
    # only sets a flag; the wake-up pipe ends a select() that waits for ids.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    w.wake_r = wake_r
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)

    def on_term(signum, frame):
        w.terminate = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _TERM_SIGNALS)  # blocked by a forking parent
    # A later child of a recycling worker skips the checks its first child
    # made before "ready" (as a long-lived worker never repeats them) and
    # connects at its first batch, where a failure answers 74 per id.
    code = w.start() if first else 0
    if code == 0:
        try:
            if first:
                _write_all(b"ready recycles\n" if max_messages else b"ready\n")
            code = w.serve()
        except _Fatal as f:
            code = f.code
    if w.conn is not None:
        try:
            w.conn.close()
        except Exception:
            pass
    return code, bytes(w.buf)


_TERM_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _die_with_parent(parent):
    """A child must not outlive its parent (a SIGKILL of the parent alone)
    holding the dispatcher's pipes: PR_SET_PDEATHSIG through libc (ctypes
    is loaded by psycopg already)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError) as e:
        log("WARNING", "cannot tie this child to its parent: %s" % e)
    if os.getppid() != parent:
        os._exit(EX_IOERR)


def _fork_child(handler, stage, body, first, max_messages, pending):
    """Forks a child that serves; returns (pid, the read end of a pipe on
    which the child writes 'r' and its unread input when it ends to be
    replaced: at most QUEUE_LIMIT ids, far less than a pipe holds)."""
    parent = os.getpid()
    note_r, note_w = os.pipe()
    # A SIGTERM between the fork and the child's own handler would reach
    # the parent's handler in the child and be lost: held until then.
    signal.pthread_sigmask(signal.SIG_BLOCK, _TERM_SIGNALS)
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _TERM_SIGNALS)
        os.close(note_r)
        os.close(note_w)
        raise
    if pid != 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _TERM_SIGNALS)
    if pid == 0:
        code = 1
        try:
            os.close(note_r)
            _die_with_parent(parent)
            code, left = _run_worker(handler, stage, body, first, max_messages, pending)
            if code == RECYCLE:
                _write_all(b"r" + left, note_w)
                code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException as e:  # noqa: B902: the child must end here, whatever happened
            log("ERROR", "the worker process failed: %s" % "".join(
                traceback.format_exception_only(type(e), e)).strip())
        finally:
            os._exit(code)
    os.close(note_w)
    return pid, note_r


def _run_forking(handler, stage, body, max_messages):
    """The clean parent of a recycling worker (D-68): forks a child that
    serves, then a fresh one each time a child ends asking to be replaced.
    Any other end of a child is the worker's: its code, or its signal."""
    state = {"child": 0, "terminate": False}

    def on_term(signum, frame):
        state["terminate"] = True
        if state["child"]:
            try:
                os.kill(state["child"], signum)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    first, served, pending = True, 0, b""
    while True:
        try:
            pid, note_r = _fork_child(handler, stage, body, first, max_messages, pending)
        except OSError as e:
            log("ERROR", "cannot fork a worker process: %s" % e)
            return 1
        state["child"] = pid
        _, status = os.waitpid(pid, 0)
        state["child"] = 0
        note = bytearray()
        try:
            while True:
                chunk = os.read(note_r, 65536)
                if not chunk:
                    break
                note += chunk
        finally:
            os.close(note_r)
        recycled, pending = note[:1] == b"r", bytes(note[1:])
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            log("ERROR", "worker process pid=%d was killed by signal %d" % (pid, sig))
            if sig != signal.SIGKILL:
                signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
            return 128 + sig  # a signal that does not end a process (SIGCHLD, ...)
        code = os.waitstatus_to_exitcode(status)
        if not recycled or state["terminate"]:
            return code
        served += 1
        log("DEBUG", "worker process pid=%d answered %d messages; forking a fresh one (D-68, %d so far)"
            % (pid, max_messages, served))
        first = False
