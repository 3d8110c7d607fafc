#!/usr/bin/env python3
"""runner/tests/e2e/pgproxy.py: a TCP proxy in front of PostgreSQL's unix
socket that can lose a connection the way a network does, for the lost-claim
test (22-lost-claims.t, issue 12).

  pgproxy.py PORTFILE SOCKET

Listens on a free port of 127.0.0.1 (written to PORTFILE) and forwards each
connection to the unix socket SOCKET. Signals steer it:

  SIGUSR1  cut: close the client side of every connection, keep the server
           side open and drain it (the server goes on with what it was
           doing: a statement blocked on a lock commits when the lock goes,
           and its answer is lost), and refuse new connections.
  SIGUSR2  heal: close the server sides left by a cut (their sessions end,
           releasing their locks) and accept connections again.
  SIGTERM  exit.

After handling a signal it writes "cut N" or "heal N" (N counting signals)
to PORTFILE.state, so that a test can wait until the network really is
down or up.
"""
import os
import selectors
import signal
import socket
import sys

sel = selectors.DefaultSelector()
pairs = {}          # socket -> its peer socket
orphans = set()     # server sides whose client was cut
cutting = False
todo = []           # signals seen, handled in the loop


def close(s):
    try:
        sel.unregister(s)
    except (KeyError, ValueError):
        pass
    s.close()


def cut():
    global cutting
    cutting = True
    for client in [s for s in pairs if s.family == socket.AF_INET]:
        server = pairs.pop(client)
        pairs.pop(server, None)
        close(client)
        orphans.add(server)


def heal():
    global cutting
    cutting = False
    for server in list(orphans):
        orphans.discard(server)
        close(server)


def accept(listener, sock_path):
    client, _ = listener.accept()
    if cutting:
        client.close()
        return
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.connect(sock_path)
    except OSError:
        client.close()
        return
    pairs[client] = server
    pairs[server] = client
    sel.register(client, selectors.EVENT_READ, "data")
    sel.register(server, selectors.EVENT_READ, "data")


def forward(s):
    try:
        data = s.recv(65536)
    except OSError:
        data = b""
    if s in orphans:
        if not data:
            orphans.discard(s)
            close(s)
        return  # drained: the answer is lost
    peer = pairs.get(s)
    if not data or peer is None:
        pairs.pop(s, None)
        if peer is not None:
            pairs.pop(peer, None)
            close(peer)
        close(s)
        return
    try:
        peer.sendall(data)
    except OSError:
        pass


def main():
    portfile, sock_path = sys.argv[1], sys.argv[2]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    sel.register(listener, selectors.EVENT_READ, "accept")
    signal.signal(signal.SIGUSR1, lambda *_: todo.append("cut"))
    signal.signal(signal.SIGUSR2, lambda *_: todo.append("heal"))
    signal.signal(signal.SIGTERM, lambda *_: todo.append("exit"))
    with open(portfile + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    handled = 0
    while True:
        while todo:
            what = todo.pop(0)
            if what == "exit":
                return
            cut() if what == "cut" else heal()
            handled += 1
            with open(portfile + ".state.tmp", "w") as f:
                f.write("%s %d" % (what, handled))
            os.rename(portfile + ".state.tmp", portfile + ".state")
        for key, _ in sel.select(timeout=0.1):
            if key.data == "accept":
                accept(key.fileobj, sock_path)
            else:
                forward(key.fileobj)


if __name__ == "__main__":
    main()
