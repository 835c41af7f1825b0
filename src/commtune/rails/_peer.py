"""The receiving end of the rails bench, run inside the peer network namespace.

``python -m commtune.rails._peer ADDR:PORT...`` listens on every address; each connection
carries messages framed as an 8-byte big-endian length and the bytes, and gets one byte back
once the whole message has arrived. Prints ``ready`` when it listens; ends on SIGTERM.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading


def _serve(conn: socket.socket) -> None:
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    with conn:
        while True:
            header = conn.recv(8, socket.MSG_WAITALL)
            if len(header) < 8:
                return
            (left,) = struct.unpack("!Q", header)
            while left > 0:
                got = conn.recv_into(view, min(left, len(buffer)))
                if got == 0:
                    return
                left -= got
            conn.sendall(b"k")


def _listen(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, int(port)))
    server.listen(8)
    return server


def _accept(server: socket.socket) -> None:
    while True:
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_serve, args=(conn,), daemon=True).start()


def main(addresses: list[str]) -> None:
    servers = [_listen(a) for a in addresses]
    for server in servers:
        threading.Thread(target=_accept, args=(server,), daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
