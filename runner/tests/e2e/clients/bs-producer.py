#!/usr/bin/python3
"""bs-producer.py PORT TUBE N ACKED — puts N jobs (bodies "1".."N") into TUBE
through a beanstalkd-protocol server on 127.0.0.1:PORT, and appends the id
of every put the server acknowledged (INSERTED) to the file ACKED, flushed
at once. A lost connection (the server killed or restarting) is retried
every 0.1 s for up to 60 s; the put that was in flight is sent again (it
may have been stored or not: only acknowledged ids are promised). Exit 0
once N puts were acknowledged, 1 otherwise.
"""
import socket
import sys
import time


def connect(port, tube, deadline):
    while time.monotonic() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"use %s\r\n" % tube.encode())
            if s.recv(256).startswith(b"USING "):
                return s
            s.close()
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("bs-producer: no server within 60 s")


def main():
    port, tube, n, acked = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    deadline = time.monotonic() + 60
    s = connect(port, tube, deadline)
    i = 1
    with open(acked, "a") as out:
        while i <= n:
            body = str(i).encode()
            try:
                s.sendall(b"put 0 0 60 %d\r\n%s\r\n" % (len(body), body))
                reply = b""
                while not reply.endswith(b"\r\n"):
                    chunk = s.recv(256)
                    if not chunk:
                        raise OSError("closed")
                    reply += chunk
            except OSError:
                s.close()
                deadline = time.monotonic() + 60
                s = connect(port, tube, deadline)
                continue
            if not reply.startswith(b"INSERTED "):
                print("bs-producer: put %d: %r" % (i, reply), file=sys.stderr)
                return 1
            out.write(reply.split()[1].decode() + "\n")
            out.flush()
            i += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
