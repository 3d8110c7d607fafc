#!/usr/bin/env python3
"""runner/tests/e2e/ingress-client.py: raw-socket clients for the ingress
limit tests (ingress-limits.t, issue 11). curl cannot hold a thousand idle
connections, or claim a gigabyte and then trickle a few bytes, so these do.

  hold PORT N SRC OUT RELEASE SECS
      Opens N connections from address SRC to 127.0.0.1:PORT and sends
      nothing. Once the number the server keeps open has not changed for
      1 s, writes "open K" to OUT; then holds them until the file RELEASE
      exists (or SECS have passed), closes them and exits.

  declare PORT N LENGTH PIECE EVERY_MS SECS READY OUT
      Opens N connections, sends on each the head of a POST /hooks/sw with
      Content-Length LENGTH and a forged Standard Webhooks signature, and
      writes "sent" to READY. Then, every EVERY_MS for SECS seconds, on each
      connection the server has not closed, reads what was answered and
      sends PIECE more bytes of body (PIECE 0: only holds them). Writes one
      JSON object to OUT: the statuses answered ("000" when none), how many
      connections the server closed, the most body bytes one connection got
      into the socket, and the slowest answer in ms.
"""
import json
import os
import select
import socket
import sys
import time


def connect(port, src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def closed_by_server(s):
    """True once the server has closed s (EOF or reset); never blocks."""
    r, _, _ = select.select([s], [], [], 0)
    if not r:
        return False
    try:
        return s.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def hold(port, n, src, out, release, secs):
    socks = []
    for _ in range(n):
        try:
            socks.append(connect(port, src))
        except OSError:
            pass  # refused outright: it is not open either
    deadline = time.time() + secs
    last, since = -1, time.time()
    while time.time() < deadline:
        k = sum(1 for s in socks if not closed_by_server(s))
        if k != last:
            last, since = k, time.time()
        elif time.time() - since >= 1.0:
            break
        time.sleep(0.1)
    write(out, "open %d\n" % last)
    while time.time() < deadline and not os.path.exists(release):
        time.sleep(0.1)
    for s in socks:
        s.close()


def request_head(length):
    ts = str(int(time.time()))
    return ("POST /hooks/sw HTTP/1.1\r\nHost: ingress\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\nwebhook-id: forged\r\nwebhook-timestamp: %s\r\n"
            "webhook-signature: v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n" % (length, ts)).encode()


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.sent = 0
        self.answer = b""
        self.closed = False
        self.answered_ms = None


def send_piece(c, piece, start):
    read_answer(c, start)
    if c.closed or not piece:
        return
    try:
        c.sock.setblocking(False)
        c.sent += c.sock.send(piece)
    except BlockingIOError:
        pass  # the server reads nothing more: its socket buffers are full
    except OSError:
        c.closed = True


def read_answer(c, start):
    while not c.closed:
        r, _, _ = select.select([c.sock], [], [], 0)
        if not r:
            return
        try:
            data = c.sock.recv(65536)
        except OSError:
            c.closed = True
            return
        if data == b"":
            c.closed = True
            return
        if not c.answer:
            c.answered_ms = int((time.time() - start) * 1000)
        c.answer += data


def declare(port, n, length, piece_len, every_ms, secs, ready, out):
    piece = b"x" * piece_len
    start = time.time()
    conns = []
    for _ in range(n):
        c = Conn(connect(port, "127.0.0.1"))
        c.sock.sendall(request_head(length))
        conns.append(c)
    write(ready, "sent\n")
    deadline = start + secs
    while time.time() < deadline:
        time.sleep(every_ms / 1000.0)
        for c in conns:
            send_piece(c, piece, start)
    statuses = []
    for c in conns:
        read_answer(c, start)
        head = c.answer.split(b"\r\n", 1)[0].split()
        statuses.append(head[1].decode() if len(head) > 1 else "000")
        if not c.closed:
            c.closed = closed_by_server(c.sock)
    result = {
        "statuses": sorted(set(statuses)),
        "answered": sum(1 for s in statuses if s != "000"),
        "closed_by_server": sum(1 for c in conns if c.closed),
        "max_sent": max(c.sent for c in conns),
        "slowest_answer_ms": max((c.answered_ms or 0) for c in conns),
    }
    write(out, json.dumps(result, sort_keys=True) + "\n")
    for c in conns:
        c.sock.close()


def main(argv):
    if len(argv) == 8 and argv[1] == "hold":
        hold(int(argv[2]), int(argv[3]), argv[4], argv[5], argv[6], float(argv[7]))
    elif len(argv) == 10 and argv[1] == "declare":
        declare(int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]), int(argv[6]), float(argv[7]), argv[8],
                argv[9])
    else:
        sys.stderr.write(__doc__)
        return 64
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
