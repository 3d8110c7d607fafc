#!/usr/bin/python3
"""count-recipients in Python: the stage of examples/c-stage/ written with
sdk/python/pepsi_worker.py. It writes the recipient count and the upper-cased
subject under the state key `recipients` (a per-address setting STATE_KEY
may rename it) and fails messages with more than MAX_RECIPIENTS (from the
environment, default 100) recipients; a message whose subject says
"later" is paused for a minute once.

    [stage-count]
    PROGRAM = /usr/local/libexec/pepsi/example_stage.py
    NEXT = deliver

pepsi_worker.py must be importable: next to this file, or on PYTHONPATH.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pepsi_worker  # noqa: E402

MAX_RECIPIENTS = int(os.environ.get("MAX_RECIPIENTS", "100"))


def count(msg):
    n = len(msg.recipients)
    if n > MAX_RECIPIENTS:
        return pepsi_worker.fail("%d recipients, more than %d" % (n, MAX_RECIPIENTS))
    if "later" in (msg.subject or "") and not msg.state.get("delayed"):
        return pepsi_worker.pause(seconds=60, reason="asked to wait", state={"delayed": True})
    key = msg.option("STATE_KEY", "recipients")
    return pepsi_worker.advance(state={key: {"count": n, "subject": (msg.subject or "").upper()}})


if __name__ == "__main__":
    pepsi_worker.run(count, body=False)  # body=False: no header block or body is loaded
