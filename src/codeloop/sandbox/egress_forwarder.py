"""Runs INSIDE the sandbox (system python3): TCP 127.0.0.1:PORT to the proxy's unix socket.

Usage: python3 egress_forwarder.py SOCKET PORT COMMAND. It listens first, then runs
`/bin/sh -c COMMAND` as its child, relays connections until the child exits, and exits
with the child's status. Standard library only: it must run on any system python3.
"""

from __future__ import annotations

import os
import selectors
import socket
import sys
import threading


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    sel = selectors.DefaultSelector()
    sel.register(a, selectors.EVENT_READ, b)
    sel.register(b, selectors.EVENT_READ, a)
    try:
        while True:
            for key, _ in sel.select():
                src: socket.socket = key.fileobj  # type: ignore[assignment]
                data = src.recv(65536)
                if not data:
                    return
                key.data.sendall(data)
    except OSError:
        return
    finally:
        a.close()
        b.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()


def main() -> None:
    path, port, command = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    listener = socket.socket(socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    child = os.fork()
    if child == 0:
        listener.close()
        os.execv("/bin/sh", ["/bin/sh", "-c", command])
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
