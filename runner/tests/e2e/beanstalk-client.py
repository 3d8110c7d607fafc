#!/usr/bin/python3
"""runner/tests/e2e/beanstalk-client.py — a small beanstalkd protocol client
for the end-to-end tests of `pepsi-runner beanstalk` (issue 17).

    beanstalk-client.py SCENARIO PORT [PORT2] [ARGS...]

Each check prints one line, "ok<TAB>DESCRIPTION" or
"not ok<TAB>DESCRIPTION<TAB>DIAGNOSTIC", which the .t file turns into TAP.
The expected replies are beanstalkd 1.12's, byte for byte
(doc/protocol.txt, and Debian's beanstalkd on the wire). Scenarios:
  protocol PORT       every command and error reply on one frontend
  t31 PORT PORT2      parallel use/watch of one new tube through two frontends
  hold PORT TUBE      use and watch TUBE, print "held", wait for stdin to close
  loop PORT PORT2 N   N jobs put and consumed through two frontends, each once
  t40 PORT            after the generation is deleted (a line on stdin): dropped
  maxclients PORT     a frontend with MAX_CLIENTS = 1 closes a second client
  wait-close PORT     a reserve waits; prints "closed" when the server closes
"""
import re
import socket
import sys
import threading
import time

BEANSTALKD_JOB_KEYS = ["id", "tube", "state", "pri", "age", "delay", "ttr", "time-left", "file",
                       "reserves", "timeouts", "releases", "buries", "kicks"]
BEANSTALKD_TUBE_KEYS = ["name", "current-jobs-urgent", "current-jobs-ready", "current-jobs-reserved",
                        "current-jobs-delayed", "current-jobs-buried", "total-jobs", "current-using",
                        "current-watching", "current-waiting", "cmd-delete", "cmd-pause-tube", "pause",
                        "pause-time-left"]
BEANSTALKD_STATS_KEYS = [
    "current-jobs-urgent", "current-jobs-ready", "current-jobs-reserved", "current-jobs-delayed",
    "current-jobs-buried", "cmd-put", "cmd-peek", "cmd-peek-ready", "cmd-peek-delayed", "cmd-peek-buried",
    "cmd-reserve", "cmd-reserve-with-timeout", "cmd-delete", "cmd-release", "cmd-use", "cmd-watch",
    "cmd-ignore", "cmd-bury", "cmd-kick", "cmd-touch", "cmd-stats", "cmd-stats-job", "cmd-stats-tube",
    "cmd-list-tubes", "cmd-list-tube-used", "cmd-list-tubes-watched", "cmd-pause-tube", "job-timeouts",
    "total-jobs", "max-job-size", "current-tubes", "current-connections", "current-producers",
    "current-workers", "current-waiting", "total-connections", "pid", "version", "rusage-utime",
    "rusage-stime", "uptime", "binlog-oldest-index", "binlog-current-index", "binlog-records-migrated",
    "binlog-records-written", "binlog-max-size", "draining", "id", "hostname", "os", "platform"]


def out(ok, desc, diag=""):
    line = ("ok" if ok else "not ok") + "\t" + desc.replace("\t", " ")
    if not ok:
        line += "\t" + diag.replace("\t", " ").replace("\n", "\\n")
    print(line, flush=True)
    return ok


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, timeout):
        self.sock.settimeout(timeout)
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("connection closed")
        self.buf += data

    def line(self, timeout=10):
        deadline = time.monotonic() + timeout
        while b"\r\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply line")
            self._fill(left)
        i = self.buf.index(b"\r\n") + 2
        line, self.buf = self.buf[:i], self.buf[i:]
        return line

    def exact(self, n, timeout=10):
        deadline = time.monotonic() + timeout
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("short reply body")
            self._fill(left)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def reply(self, timeout=10):
        """One reply: its line, and the body of RESERVED, FOUND and OK."""
        line = self.line(timeout)
        m = re.match(rb"^(RESERVED|FOUND) \d+ (\d+)\r\n$", line) or re.match(rb"^(OK) (\d+)\r\n$", line)
        if m:
            return line + self.exact(int(m.group(2)) + 2, timeout)
        return line

    def cmd(self, data, timeout=10):
        self.send(data)
        return self.reply(timeout)

    def closed(self, timeout=5):
        """True when the server closed the connection (and sent nothing)."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, socket.timeout):
            return False

    def close(self):
        self.sock.close()


def expect(c, data, want, desc, timeout=10):
    try:
        got = c.cmd(data, timeout)
    except Exception as e:  # a missing reply is a failure of this check
        return out(False, desc, "no reply: %r" % e), None
    if isinstance(want, bytes):
        return out(got == want, desc, "got %r, expected %r" % (got[:300], want)), got
    return out(re.compile(want.pattern, re.S).fullmatch(got) is not None, desc,
               "got %r, expected /%s/" % (got[:300], want.pattern)), got


def job_id(reply):
    m = re.match(rb"^(?:INSERTED|RESERVED|FOUND) (\d+)", reply or b"")
    return int(m.group(1)) if m else -1


def yaml(reply):
    """The key: value pairs of an OK reply, in order."""
    body = reply.split(b"\r\n", 1)[1][:-2].decode()
    assert body.startswith("---\n"), body
    pairs = []
    for ln in body[4:].splitlines():
        k, _, v = ln.partition(": ")
        pairs.append((k, v))
    return pairs


def put(c, body, pri=0, delay=0, ttr=60, desc=None):
    data = b"put %d %d %d %d\r\n%s\r\n" % (pri, delay, ttr, len(body), body)
    ok, got = expect(c, data, re.compile(rb"INSERTED \d+\r\n"), desc or "put: INSERTED <id>")
    return job_id(got)


def stats_job(c, jid):
    got = c.cmd(b"stats-job %d\r\n" % jid)
    if not got.startswith(b"OK "):
        return {"_reply": got.decode(errors="replace")}
    return dict(yaml(got))


def timed(c, data, timeout=10):
    t0 = time.monotonic()
    got = c.cmd(data, timeout)
    return got, time.monotonic() - t0


def scenario_protocol(port):
    a = Client(port)
    expect(a, b"list-tube-used\r\n", b"USING default\r\n", "a new connection uses default")
    expect(a, b"list-tubes-watched\r\n", b"OK 14\r\n---\n- default\n\r\n", "and watches default alone (T-24)")
    expect(a, b"use t1\r\n", b"USING t1\r\n", "use t1: USING t1")
    jid = put(a, b"hello", pri=5, ttr=60)
    expect(a, b"peek-ready\r\n", b"FOUND %d 5\r\nhello\r\n" % jid, "peek-ready: FOUND <id> <bytes> and the body")
    expect(a, b"peek %d\r\n" % jid, b"FOUND %d 5\r\nhello\r\n" % jid, "peek <id>")
    s = stats_job(a, jid)
    out(list(s.keys()) == BEANSTALKD_JOB_KEYS, "stats-job: beanstalkd's keys in its order", repr(s))
    want = {"id": str(jid), "tube": "t1", "state": "ready", "pri": "5", "delay": "0", "ttr": "60",
            "time-left": "0", "file": "0", "reserves": "0", "timeouts": "0", "releases": "0",
            "buries": "0", "kicks": "0"}
    out(all(s.get(k) == v for k, v in want.items()), "stats-job of a fresh job: state ready, pri 5, ttr 60, counters 0",
        repr(s))
    expect(a, b"watch t1\r\n", b"WATCHING 2\r\n", "watch t1: WATCHING 2")
    expect(a, b"watch t1\r\n", b"WATCHING 2\r\n", "watch t1 again: still WATCHING 2")
    expect(a, b"ignore default\r\n", b"WATCHING 1\r\n", "ignore default: WATCHING 1")
    expect(a, b"ignore t1\r\n", b"NOT_IGNORED\r\n", "ignore the last watched tube: NOT_IGNORED")
    expect(a, b"ignore nosuch\r\n", b"WATCHING 1\r\n", "ignore a tube not watched: WATCHING 1")
    expect(a, b"list-tubes-watched\r\n", b"OK 9\r\n---\n- t1\n\r\n", "list-tubes-watched: t1")
    expect(a, b"reserve\r\n", b"RESERVED %d 5\r\nhello\r\n" % jid, "reserve: RESERVED <id> <bytes> and the body")
    s = stats_job(a, jid)
    out(s.get("state") == "reserved" and s.get("reserves") == "1" and 55 <= int(s.get("time-left", -1)) <= 60,
        "stats-job of a reserved job: state reserved, reserves 1, time-left about the TTR", repr(s))
    expect(a, b"touch %d\r\n" % jid, b"TOUCHED\r\n", "touch: TOUCHED")
    expect(a, b"touch 999999999\r\n", b"NOT_FOUND\r\n", "touch of no such job: NOT_FOUND")
    expect(a, b"release %d 7 2\r\n" % jid, b"RELEASED\r\n", "release with a delay: RELEASED")
    s = stats_job(a, jid)
    out(s.get("state") == "delayed" and s.get("pri") == "7" and s.get("releases") == "1" and s.get("delay") == "2",
        "stats-job after release <id> 7 2: delayed, pri 7, delay 2, releases 1", repr(s))
    expect(a, b"peek-delayed\r\n", b"FOUND %d 5\r\nhello\r\n" % jid, "peek-delayed")
    expect(a, b"peek-ready\r\n", b"NOT_FOUND\r\n", "peek-ready of a tube with no ready job: NOT_FOUND")
    expect(a, b"reserve-with-timeout 0\r\n", b"TIMED_OUT\r\n", "reserve-with-timeout 0 with the job delayed: TIMED_OUT at once")
    expect(a, b"kick 10\r\n", b"KICKED 1\r\n", "kick with no buried job kicks the delayed one: KICKED 1")
    expect(a, b"reserve\r\n", b"RESERVED %d 5\r\nhello\r\n" % jid, "reserve the kicked job")
    expect(a, b"bury %d 9\r\n" % jid, b"BURIED\r\n", "bury: BURIED")
    expect(a, b"bury %d 9\r\n" % jid, b"NOT_FOUND\r\n", "bury of a job not reserved: NOT_FOUND")
    expect(a, b"peek-buried\r\n", b"FOUND %d 5\r\nhello\r\n" % jid, "peek-buried")
    s = stats_job(a, jid)
    out(s.get("state") == "buried" and s.get("pri") == "9" and s.get("buries") == "1" and s.get("kicks") == "1",
        "stats-job of the buried job: buried, pri 9, buries 1, kicks 1", repr(s))
    expect(a, b"kick-job %d\r\n" % jid, b"KICKED\r\n", "kick-job of a buried job: KICKED")
    expect(a, b"kick-job %d\r\n" % jid, b"NOT_FOUND\r\n", "kick-job of a ready job: NOT_FOUND")
    expect(a, b"reserve-job %d\r\n" % jid, b"RESERVED %d 5\r\nhello\r\n" % jid, "reserve-job <id>")
    expect(a, b"delete %d\r\n" % jid, b"DELETED\r\n", "delete: DELETED")
    expect(a, b"delete %d\r\n" % jid, b"NOT_FOUND\r\n", "delete again: NOT_FOUND")
    expect(a, b"peek %d\r\n" % jid, b"NOT_FOUND\r\n", "peek of a deleted job: NOT_FOUND")
    expect(a, b"stats-job %d\r\n" % jid, b"NOT_FOUND\r\n", "stats-job of a deleted job: NOT_FOUND")
    expect(a, b"reserve-job %d\r\n" % jid, b"NOT_FOUND\r\n", "reserve-job of a deleted job: NOT_FOUND")
    expect(a, b"delete 18446744073709551615\r\n", b"NOT_FOUND\r\n", "delete of id 2^64-1: NOT_FOUND")

    # priority order, then id
    j1 = put(a, b"low", pri=100)
    j2 = put(a, b"high", pri=1)
    j3 = put(a, b"high2", pri=1)
    expect(a, b"reserve\r\n", b"RESERVED %d 4\r\nhigh\r\n" % j2, "reserve takes the lowest priority first")
    expect(a, b"reserve\r\n", b"RESERVED %d 5\r\nhigh2\r\n" % j3, "then, at one priority, the lowest id")
    expect(a, b"reserve\r\n", b"RESERVED %d 3\r\nlow\r\n" % j1, "then the higher priority")
    for j in (j1, j2, j3):
        a.cmd(b"delete %d\r\n" % j)

    # release with a delay comes back by itself after it
    jid = put(a, b"later")
    a.cmd(b"reserve\r\n")
    a.cmd(b"release %d 0 1\r\n" % jid)
    got, secs = timed(a, b"reserve-with-timeout 5\r\n")
    out(got == b"RESERVED %d 5\r\nlater\r\n" % jid and 0.5 <= secs <= 2.5,
        "release <id> 0 1: reserved again after about 1 s (%.2f s)" % secs, repr(got))
    a.cmd(b"delete %d\r\n" % jid)

    # reserve-with-timeout 1 on an empty tube
    got, secs = timed(a, b"reserve-with-timeout 1\r\n")
    out(got == b"TIMED_OUT\r\n" and 0.9 <= secs <= 2.0, "reserve-with-timeout 1: TIMED_OUT after about 1 s (%.2f s)" % secs,
        repr(got))

    # DEADLINE_SOON with ttr 1
    jid = put(a, b"soon", ttr=1)
    expect(a, b"reserve\r\n", b"RESERVED %d 4\r\nsoon\r\n" % jid, "reserve a job with ttr 1")
    expect(a, b"reserve-with-timeout 5\r\n", b"DEADLINE_SOON\r\n",
           "reserve again within the last second of its TTR: DEADLINE_SOON")
    time.sleep(1.3)
    b = Client(port)
    b.cmd(b"watch t1\r\n")
    got, secs = timed(b, b"reserve-with-timeout 3\r\n")
    out(got == b"RESERVED %d 4\r\nsoon\r\n" % jid, "TTR expiry returns the job to ready: another client reserves it",
        repr(got))
    s = stats_job(b, jid)
    out(s.get("timeouts") == "1" and s.get("reserves") == "2", "stats-job: timeouts 1, reserves 2", repr(s))
    b.cmd(b"delete %d\r\n" % jid)

    # a reserve waiting while the client holds a job: DEADLINE_SOON when the
    # job enters the last second of its TTR (beanstalkd wakes it then)
    jd = put(a, b"dl", ttr=3)
    expect(a, b"reserve-job %d\r\n" % jd, b"RESERVED %d 2\r\ndl\r\n" % jd, "reserve-job a job with ttr 3")
    got, secs = timed(a, b"reserve\r\n")
    out(got == b"DEADLINE_SOON\r\n" and 1.5 <= secs <= 2.8,
        "a waiting reserve is answered DEADLINE_SOON as the job enters its last second (%.2f s)" % secs, repr(got))
    a.cmd(b"delete %d\r\n" % jd)

    # a reserve blocked in one client is woken by a put from another
    b.cmd(b"watch wake1\r\n")
    b.cmd(b"ignore t1\r\n")
    b.cmd(b"ignore default\r\n")
    b.send(b"reserve\r\n")
    time.sleep(0.5)
    a.cmd(b"use wake1\r\n")
    t0 = time.monotonic()
    jid = put(a, b"wake")
    try:
        got = b.reply(5)
    except Exception as e:
        got = repr(e).encode()
    secs = time.monotonic() - t0
    out(got == b"RESERVED %d 4\r\nwake\r\n" % jid and secs < 0.2,
        "a reserve waiting in one client is answered by a put from another within 200 ms (%.0f ms)" % (secs * 1000),
        repr(got))

    # disconnect releases the reserved jobs
    b.close()
    c = Client(port)
    c.cmd(b"watch wake1\r\n")
    got, secs = timed(c, b"reserve-with-timeout 5\r\n")
    out(got == b"RESERVED %d 4\r\nwake\r\n" % jid and secs < 1.0,
        "a client that disconnects gives its reserved job back at once (%.0f ms)" % (secs * 1000), repr(got))
    s = stats_job(c, jid)
    out(s.get("releases") == "0" and s.get("reserves") == "2", "a disconnect counts no release (reserves 2, releases 0)",
        repr(s))
    c.cmd(b"delete %d\r\n" % jid)

    # a client that disconnects while its reserve waits is cleaned up
    d = Client(port)
    d.cmd(b"watch gone1\r\n")
    d.send(b"reserve\r\n")
    time.sleep(0.3)
    d.close()
    time.sleep(0.3)
    a.cmd(b"use gone1\r\n")
    jid = put(a, b"after")
    expect(c, b"watch gone1\r\n", b"WATCHING 3\r\n", "watch gone1 on another client")
    expect(c, b"reserve-with-timeout 2\r\n", b"RESERVED %d 5\r\nafter\r\n" % jid,
           "the job put after a waiting client left is reserved by the next one, not lost to the dead one")
    c.cmd(b"delete %d\r\n" % jid)

    # pause-tube
    expect(a, b"pause-tube nosuch 10\r\n", b"NOT_FOUND\r\n", "pause-tube of no such tube: NOT_FOUND (T-33)")
    expect(a, b"stats-tube nosuch\r\n", b"NOT_FOUND\r\n", "stats-tube of no such tube: NOT_FOUND (T-32)")
    ok, got = expect(a, b"list-tubes\r\n", re.compile(rb"OK \d+\r\n---\n(- [^\n]+\n)+\r\n"), "list-tubes: a YAML list")
    names = [k for k, _ in yaml(got)] if got and got.startswith(b"OK") else []
    out("- nosuch" not in names, "T-32, T-33: neither NOT_FOUND created the tube", repr(names))
    out(names.count("- default") == 1, "list-tubes shows default once (T-37)", repr(names))
    a.cmd(b"use p1\r\n")
    jid = put(a, b"paused")
    expect(a, b"pause-tube p1 2\r\n", b"PAUSED\r\n", "pause-tube p1 2: PAUSED")
    ok, got = expect(a, b"stats-tube p1\r\n", re.compile(rb"OK \d+\r\n---\n.*\r\n"), "stats-tube p1: OK")
    st = yaml(got) if got and got.startswith(b"OK") else []
    out([k for k, _ in st] == BEANSTALKD_TUBE_KEYS, "stats-tube: beanstalkd's keys in its order", repr(st))
    d = dict(st)
    out(d.get("name") == "p1" and d.get("current-jobs-ready") == "1" and d.get("current-jobs-urgent") == "1"
        and d.get("pause") == "2" and d.get("current-using") == "1",
        "stats-tube p1: name, one ready urgent job, pause 2, one client using it", repr(d))
    e = Client(port)
    e.cmd(b"watch p1\r\n")
    e.cmd(b"ignore default\r\n")
    expect(e, b"reserve-with-timeout 0\r\n", b"TIMED_OUT\r\n", "a job of a paused tube is not reserved")
    got, secs = timed(e, b"reserve-with-timeout 5\r\n")
    out(got == b"RESERVED %d 6\r\npaused\r\n" % jid and 1.0 <= secs <= 3.5,
        "it is reserved once the pause ends (%.2f s)" % secs, repr(got))
    e.cmd(b"delete %d\r\n" % jid)
    e.close()

    # stats
    ok, got = expect(a, b"stats\r\n", re.compile(rb"OK \d+\r\n---\n.*\r\n"), "stats: OK")
    st = yaml(got) if got and got.startswith(b"OK") else []
    out([k for k, _ in st] == BEANSTALKD_STATS_KEYS, "stats: beanstalkd 1.12's keys in its order", repr(st))
    d = dict(st)
    out(d.get("max-job-size") == "1000" and int(d.get("cmd-put", 0)) >= 8 and int(d.get("current-connections", 0)) >= 2,
        "stats: max-job-size is MAX_JOB_SIZE, cmd-put counted, connections counted", repr(d))

    # errors, byte for byte
    expect(a, b"put 1 0 1 1001\r\n" + b"x" * 1001 + b"\r\n", b"JOB_TOO_BIG\r\n",
           "put over MAX_JOB_SIZE: JOB_TOO_BIG once its body is read")
    expect(a, b"put 1 0 1 3\r\nabcde\r\n", b"EXPECTED_CRLF\r\n", "a body not followed by CRLF: EXPECTED_CRLF")
    expect(a, b"", b"UNKNOWN_COMMAND\r\n", "and the rest (an empty line) is a command, as beanstalkd reads it")
    expect(a, b"frobnicate\r\n", b"UNKNOWN_COMMAND\r\n", "an unknown command: UNKNOWN_COMMAND")
    expect(a, b"use -bad\r\n", b"BAD_FORMAT\r\n", "use of a name starting with '-': BAD_FORMAT")
    expect(a, b"watch a*b\r\n", b"BAD_FORMAT\r\n", "watch of a name with '*': BAD_FORMAT")
    expect(a, b"use " + b"a" * 201 + b"\r\n", b"BAD_FORMAT\r\n", "use of a 201-byte name: BAD_FORMAT")
    expect(a, b"x" * 300 + b"\r\n", b"BAD_FORMAT\r\n", "a 302-byte line: BAD_FORMAT")
    expect(a, b"list-tube-used\r\n", b"USING p1\r\n", "the rest of the long line was dropped: the next command is read")
    expect(a, b"put 1 0 1\r\n", b"BAD_FORMAT\r\n", "put with three numbers: BAD_FORMAT")
    expect(a, b"delete x\r\n", b"BAD_FORMAT\r\n", "delete x: BAD_FORMAT")
    expect(a, b"reservex\r\n", b"BAD_FORMAT\r\n", "reserve with trailing bytes: BAD_FORMAT")
    expect(a, b"kick\r\n", b"UNKNOWN_COMMAND\r\n", "kick without its space: UNKNOWN_COMMAND")
    expect(a, b"stats-tube -x\r\n", b"BAD_FORMAT\r\n", "stats-tube of a bad name: BAD_FORMAT")
    expect(a, b"pause-tube p1\r\n", b"BAD_FORMAT\r\n", "pause-tube without a delay: BAD_FORMAT")
    # several commands in one write are answered in order
    a.send(b"use pipe1\r\nlist-tube-used\r\nwatch pipe1\r\n")
    got = [a.reply(), a.reply(), a.reply()]
    out(got == [b"USING pipe1\r\n", b"USING pipe1\r\n", b"WATCHING 2\r\n"],
        "pipelined commands are answered in order", repr(got))
    a.send(b"quit\r\n")
    out(a.closed(), "quit closes the connection", "")


def scenario_t31(port1, port2):
    tube = b"t31tube"
    barrier = threading.Barrier(2)
    results = {}

    def run(name, port):
        try:
            c = Client(port)
            barrier.wait()
            results[name] = [c.cmd(b"use " + tube + b"\r\n"), c.cmd(b"watch " + tube + b"\r\n")]
            results[name + "-c"] = c
        except Exception as e:
            results[name] = [repr(e).encode()]

    ts = [threading.Thread(target=run, args=("a", port1)), threading.Thread(target=run, args=("b", port2))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    want = [b"USING t31tube\r\n", b"WATCHING 2\r\n"]
    out(results.get("a") == want and results.get("b") == want,
        "T-31: use and watch of one new tube at once through two frontends both succeed", repr(results))
    c = results.get("a-c")
    got = c.cmd(b"stats-tube t31tube\r\n") if c else b""
    d = dict(yaml(got)) if got.startswith(b"OK") else {}
    out(d.get("current-using") == "2" and d.get("current-watching") == "2",
        "T-31: the tube counts both clients' references (using 2, watching 2)", repr(got))
    got = c.cmd(b"list-tubes\r\n") if c else b""
    names = [k for k, _ in yaml(got)] if got.startswith(b"OK") else []
    out(names.count("- t31tube") == 1, "T-31: list-tubes shows the tube once", repr(names))
    print("held", flush=True)
    sys.stdin.read()


def scenario_loop(port1, port2, n):
    """A producer putting n jobs through both frontends while four workers
    (two per frontend) reserve and delete them: each exactly once."""
    tube = b"loop1"
    put_ids, reserved, errors, put_secs = [], [], [], []
    lock = threading.Lock()
    produced = threading.Event()

    def producer():
        try:
            cs = [Client(port1), Client(port2)]
            for c in cs:
                c.cmd(b"use " + tube + b"\r\n")
            t = time.monotonic()
            for i in range(n):
                r = cs[i % 2].cmd(b"put 0 0 30 5\r\nj%04d\r\n" % (i % 10000))
                put_ids.append(job_id(r))
            put_secs.append(time.monotonic() - t)
        except Exception as e:
            errors.append("producer: %r" % e)
        produced.set()

    def worker(port):
        try:
            c = Client(port)
            c.cmd(b"watch " + tube + b"\r\n")
            c.cmd(b"ignore default\r\n")
            while True:
                r = c.cmd(b"reserve-with-timeout 1\r\n", 10)
                if r == b"TIMED_OUT\r\n":
                    if produced.is_set():
                        return
                    continue
                jid = job_id(r)
                with lock:
                    reserved.append(jid)
                d = c.cmd(b"delete %d\r\n" % jid)
                if d != b"DELETED\r\n":
                    errors.append("delete %d: %r" % (jid, d))
        except Exception as e:
            errors.append("worker: %r" % e)

    ts = [threading.Thread(target=producer)] + [threading.Thread(target=worker, args=(p,))
                                                 for p in (port1, port2, port1, port2)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    secs = time.monotonic() - t0
    out(len(put_ids) == n and -1 not in put_ids,
        "worker loop: %d jobs put through two frontends (%.1f s)" % (n, put_secs[0] if put_secs else -1),
        "%d put, errors %r" % (len(put_ids), errors[:5]))
    out(sorted(reserved) == sorted(put_ids) and not errors,
        "worker loop: four workers on two frontends reserved and deleted each job exactly once (%.1f s)" % secs,
        "%d reserved, %d distinct, %d put, errors %r" % (len(reserved), len(set(reserved)), len(put_ids), errors[:5]))


def scenario_t40(port):
    """T-40 after the frontend's generation is deleted under it: a client
    in session is dropped at its next use (PX061), a new client is not
    served (PX060: the frontend stops)."""
    a = Client(port)
    a.cmd(b"list-tube-used\r\n")
    print("held", flush=True)
    sys.stdin.readline()
    a.send(b"use t40tube\r\n")
    out(a.closed(10), "T-40: a client whose session was reaped is dropped at its next use (PX061)", "")
    try:
        b = Client(port)
        out(b.closed(10), "T-40: a new client of the reaped generation is not served (PX060)", "")
    except OSError:
        out(True, "T-40: a new client of the reaped generation is not served (PX060)", "")


def scenario_hold(port, tube):
    c = Client(port)
    c.cmd(b"use " + tube.encode() + b"\r\n")
    c.cmd(b"watch " + tube.encode() + b"\r\n")
    print("held", flush=True)
    sys.stdin.read()


def scenario_maxclients(port):
    a = Client(port)
    expect(a, b"list-tube-used\r\n", b"USING default\r\n", "MAX_CLIENTS = 1: the first client is served")
    b = Client(port)
    out(b.closed(), "MAX_CLIENTS = 1: a second client's connection is closed at once", "")
    a.close()


def scenario_wait_close(port):
    """Prints "held" once in, "closed" when the server closes the connection."""
    c = Client(port)
    c.cmd(b"watch waitclose\r\n")
    c.send(b"reserve\r\n")
    print("held", flush=True)
    print("closed" if c.closed(60) else "open", flush=True)


def main():
    try:
        name = sys.argv[1]
        if name == "protocol":
            scenario_protocol(int(sys.argv[2]))
        elif name == "t31":
            scenario_t31(int(sys.argv[2]), int(sys.argv[3]))
        elif name == "loop":
            scenario_loop(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        elif name == "t40":
            scenario_t40(int(sys.argv[2]))
        elif name == "maxclients":
            scenario_maxclients(int(sys.argv[2]))
        elif name == "wait-close":
            scenario_wait_close(int(sys.argv[2]))
        elif name == "hold":
            scenario_hold(int(sys.argv[2]), sys.argv[3])
        else:
            out(False, "scenario " + name, "unknown scenario")
    except Exception as e:
        import traceback
        out(False, "the client ran to its end", traceback.format_exc())


if __name__ == "__main__":
    main()
