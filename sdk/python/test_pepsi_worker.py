#!/usr/bin/python3
"""Unit tests of sdk/python/pepsi_worker.py without a database (make
check-unit runs them; the database side is runner/tests/e2e/79-python-sdk.t):
reading ids in batches, the results sent to pepsi.workqueue_commit, the
statuses answered for its outcomes, in input order, and the small helpers."""
import datetime as dt
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pepsi_worker as pw  # noqa: E402


def worker(queue_limit="8"):
    os.environ["PEPSI_QUEUE_LIMIT"] = queue_limit
    os.environ["PEPSI_MAX_LIFETIME_MS"] = "60000"
    w = pw._Worker(lambda m: None, "st", False)
    w.fd_in, feed = os.pipe()
    w.wake_r, _ = os.pipe()
    return w, feed


def row(i, state=None, nxt="next", bounce=None, settings=None):
    return (i, "default", "from:x.org", "a@x.org", ["b@y.org"], None, "subj", {} if state is None else state,
            None, None, None, settings, nxt, bounce)


class FakeConn:
    """Answers worker_load with the given rows and workqueue_commit with the given outcomes."""

    closed = broken = False

    def __init__(self, rows, outcomes):
        self.rows, self.outcomes, self.commits = rows, outcomes, []

    def execute(self, sql, params=None, prepare=None):
        conn = self

        class Cur:
            def fetchall(self):
                if "worker_load" in sql:
                    return conn.rows
                import json
                results = json.loads(params[1])
                conn.commits.append(results)
                return [(r["id"], conn.outcomes.get(r["id"], "ok")) for r in results]
        return Cur()


class ReadIds(unittest.TestCase):
    def test_batches_what_is_there_up_to_queue_limit(self):
        w, feed = worker("3")
        os.write(feed, b"1\n2\n3\n4\n5")
        self.assertEqual(w.read_ids(), [1, 2, 3])
        os.write(feed, b"\n")
        self.assertEqual(w.read_ids(), [4, 5])
        os.close(feed)
        self.assertIsNone(w.read_ids(), "EOF: None")

    def test_terminate_ends_the_wait(self):
        w, feed = worker()
        w.terminate = True
        self.assertIsNone(w.read_ids())

    def test_unreadable_id_is_fatal(self):
        w, feed = worker()
        os.write(feed, b"12x\n")
        with self.assertRaises(pw._Fatal):
            w.read_ids()


class Recycle(unittest.TestCase):
    """D-68 in the worker (PEPSI_MAX_MESSAGES): a process takes no more ids
    than it may still answer, and serve() hands what it read but did not
    take to the next process."""

    def test_takes_no_more_than_max_messages(self):
        w, feed = worker("8")
        w.max_messages, w.handled = 5, 3
        os.write(feed, b"1\n2\n3\n4\n")
        self.assertEqual(w.read_ids(), [1, 2], "2 left of 5")
        self.assertEqual(bytes(w.buf), b"3\n4\n", "the rest stays unread")

    def test_serve_recycles_with_the_rest(self):
        w, feed = worker("4")
        w.conn = FakeConn([row(i) for i in range(1, 8)], {})
        w.max_messages = 3
        out_r, out_w = os.pipe()
        saved = os.dup(1)
        os.dup2(out_w, 1)
        try:
            os.write(feed, b"1\n2\n3\n4\n5\n6")
            code = w.serve()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(out_w)
        self.assertEqual(code, pw.RECYCLE)
        self.assertEqual(w.handled, 3)
        self.assertEqual(os.read(out_r, 4096).count(b"\n"), 3, "three statuses")
        self.assertEqual(bytes(w.buf), b"4\n5\n6", "the next process gets 4, 5 and half of 6")

    def test_without_max_messages_serves_to_eof(self):
        w, feed = worker("4")
        w.conn = FakeConn([row(i) for i in range(1, 4)], {})
        out_r, out_w = os.pipe()
        saved = os.dup(1)
        os.dup2(out_w, 1)
        try:
            os.write(feed, b"1\n2\n3\n")
            os.close(feed)
            code = w.serve()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(out_w)
        self.assertEqual(code, 0)
        self.assertEqual(os.read(out_r, 4096).count(b"\n"), 3)


class Batch(unittest.TestCase):
    def run_batch(self, handler, ids, rows, outcomes=None):
        w, _ = worker()
        w.handler = handler
        w.conn = FakeConn(rows, outcomes or {})
        return w, w.run_batch(ids)

    def test_statuses_in_input_order(self):
        def h(m):
            return pw.fail("no") if m.id == 7 else None
        w, answers = self.run_batch(h, [9, 7, 5, 3], [row(3), row(5), row(7), row(9)])
        self.assertEqual([a[0] for a in answers], [0, 1, 0, 0], "the failure answers 1 in its own place")
        self.assertEqual(len(w.conn.commits), 1, "one commit call for the batch")
        self.assertEqual([r["id"] for r in w.conn.commits[0]], [9, 7, 5, 3])

    def test_results(self):
        until = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
        acts = {1: None, 2: pw.advance("other", state={"k": 1}), 3: pw.finish(), 4: pw.pause(until, reason="r"),
                5: pw.fail("bad", "permanent"), 6: pw.host_error("down")}
        w, answers = self.run_batch(lambda m: acts[m.id], [1, 2, 3, 4, 5, 6],
                                    [row(i, bounce="bounce") for i in range(1, 7)])
        got = {r["id"]: r for r in w.conn.commits[0]}
        self.assertEqual(got[1], {"id": 1, "do": "advance", "next": "next"}, "None: advance to NEXT")
        self.assertEqual(got[2], {"id": 2, "do": "advance", "next": "other", "state": {"k": 1}})
        self.assertEqual(got[3], {"id": 3, "do": "finish"})
        self.assertEqual(got[4], {"id": 4, "do": "pause", "until": "2030-01-02T03:04:05+00:00", "reason": "r"})
        self.assertEqual(got[5], {"id": 5, "do": "fail", "reason": "bad", "class": "permanent"})
        self.assertEqual(got[6], {"id": 6, "do": "host_error", "reason": "stage st: down",
                                  "lifetime": "60000 milliseconds", "bounce": "bounce"})

    def test_no_next_finishes(self):
        w, _ = self.run_batch(lambda m: None, [1], [row(1, nxt=None)])
        self.assertEqual(w.conn.commits[0], [{"id": 1, "do": "finish"}])

    def test_outcomes(self):
        w, answers = self.run_batch(lambda m: None, [1, 2, 3, 4], [row(1), row(2), row(3)],
                                    {1: "loop", 2: "refused", 3: "ok"})
        self.assertEqual([a[0] for a in answers], [1, 0, 0, 0],
                         "loop: 1; refused (moved on): 0; ok: 0; not loaded (not running here): 0")
        self.assertIsNone(answers[3][1], "no report for a message not run")

    def test_handler_exception_is_a_host_error(self):
        def h(m):
            raise RuntimeError("boom")
        w, answers = self.run_batch(h, [1], [row(1)])
        self.assertEqual(w.conn.commits[0][0]["do"], "host_error")
        self.assertIn("boom", w.conn.commits[0][0]["reason"])
        self.assertEqual(answers[0][0], 0)

    def test_state_not_an_object_fails(self):
        w, answers = self.run_batch(lambda m: None, [1], [row(1, state=[1])])
        self.assertEqual(w.conn.commits[0][0]["do"], "fail")
        self.assertEqual(answers[0][0], 1)


class Helpers(unittest.TestCase):
    def test_option(self):
        m = pw.Message("st", row(1, settings={"a@x.org": {"K": "1"}, "b@x.org": {"K": "1", "L": "2"}}))
        self.assertEqual(m.option("K"), "1")
        self.assertEqual(m.option("L"), "2")
        self.assertEqual(m.option("M", "d"), "d")
        m.settings = {"a@x.org": {"K": "1"}, "b@x.org": {"K": "2"}}
        self.assertEqual(m.option("K", "d"), "d", "correspondents disagree: the default")

    def test_usage(self):
        self.assertTrue(pw._usage(["p", "worker"]))
        self.assertTrue(pw._usage(["p", "-c", "/f", "-v", "worker"]))
        self.assertFalse(pw._usage(["p"]))
        self.assertFalse(pw._usage(["p", "-x", "worker"]))

    def test_schema_verified(self):
        for token, want in (("1:1", True), ("2:1", True), ("3:2", False), ("", False), ("x", False)):
            os.environ["PEPSI_SCHEMA_VERIFIED"] = token
            self.assertEqual(pw._schema_verified_covers(), want, token)

    def test_answer_lines(self):
        w, _ = worker()
        r, wfd = os.pipe()
        saved = os.dup(1)
        os.dup2(wfd, 1)
        try:
            w.answer([(0, 12), (1, None), (74, None)])
        finally:
            os.dup2(saved, 1)
        os.close(wfd)
        self.assertEqual(os.read(r, 1000), b'0 [["st",12]]\n1\n74\n')


if __name__ == "__main__":
    unittest.main()
