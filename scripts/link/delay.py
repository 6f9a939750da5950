"""A TCP proxy that holds each request back for a while: the first byte of
every answer then comes that much later, as from object storage far away.

    python3 delay.py LISTEN_HOST:PORT UPSTREAM_HOST:PORT DELAY_MS

Bytes from a client are forwarded to the upstream DELAY_MS after they
arrive (HTTP/1.1 clients send a request only once the previous answer is
in, so each request of a kept-alive connection waits once); answers go
back by splice(2), through a pipe and never through this process's memory,
so the proxy costs little CPU at hundreds of MB/s. One thread per
direction of each connection.
"""

import fcntl
import os
import socket
import sys
import threading
import time

PIPE_SIZE = 1 << 20
CHUNK = 1 << 20
F_SETPIPE_SZ = 1031


def close(*socks):
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


def requests(client, upstream, delay):
    """Client to upstream: each burst of bytes waits `delay` seconds."""
    try:
        while True:
            data = client.recv(65536)
            if not data:
                break
            time.sleep(delay)
            upstream.sendall(data)
    except OSError:
        pass
    finally:
        try:
            upstream.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def answers(upstream, client):
    """Upstream to client, by splice through a pipe."""
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:
        pass
    try:
        while True:
            n = os.splice(upstream.fileno(), w, CHUNK)
            if n == 0:
                break
            while n:
                n -= os.splice(r, client.fileno(), n)
    except OSError:
        pass
    finally:
        os.close(r)
        os.close(w)
        close(client, upstream)


def serve(conn, target, delay):
    try:
        upstream = socket.create_connection(target)
    except OSError:
        conn.close()
        return
    for s in (conn, upstream):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=requests, args=(conn, upstream, delay), daemon=True).start()
    threading.Thread(target=answers, args=(upstream, conn), daemon=True).start()


def addr(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


def main():
    listen, target, delay_ms = addr(sys.argv[1]), addr(sys.argv[2]), float(sys.argv[3])
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(listen)
    server.listen(512)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        serve(conn, target, delay_ms / 1000)


if __name__ == "__main__":
    main()
