#!/usr/bin/env python3
"""tcp_pingpong.py - one-way latency of a link of the emulated cluster.

    tcp_pingpong.py server PORT            (in one host's namespace)
    tcp_pingpong.py client HOST PORT [N]   (in another's): prints JSON

An 8-byte TCP ping-pong (TCP_NODELAY) whose both ends poll non-blocking
sockets, as MPI's progress engine does, so the figure is the path
(kernel TCP + veth + bridge + qdiscs), not a process wake-up.  Reports
half the round trip: median, min and 90th percentile over N round trips
after N/10 warm-up ones.  This is the per-step latency cluster.sh's
platform uses (LBS_EMU_HOP_US): measured independently of `lbscale coll`.
"""
import json
import socket
import statistics
import sys
import time


def recv_spin(s, n):
    while True:
        try:
            return s.recv(n)
        except BlockingIOError:
            pass


def server(port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    ls.settimeout(30)
    c, _ = ls.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.setblocking(False)
    while True:
        b = recv_spin(c, 64)
        if not b:
            return
        c.send(b)


def client(host, port, n):
    for _ in range(100):            # the server may still be starting
        try:
            s = socket.create_connection((host, port), timeout=5)
            break
        except OSError:
            time.sleep(0.05)
    else:
        sys.exit("tcp_pingpong.py: cannot connect to %s:%d" % (host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setblocking(False)
    msg = b"x" * 8
    rt = []
    for i in range(n + n // 10):
        t0 = time.perf_counter()
        s.send(msg)
        got = 0
        while got < len(msg):
            got += len(recv_spin(s, 64))
        rt.append(time.perf_counter() - t0)
    s.close()
    rt = sorted(rt[n // 10:])
    half = [x * 5e5 for x in rt]        # us, half a round trip
    print(json.dumps({"bench": "tcp_pingpong", "host": host,
                      "round_trips": n,
                      "half_rtt_us_median": statistics.median(half),
                      "half_rtt_us_min": half[0],
                      "half_rtt_us_p90": half[int(0.9 * (len(half) - 1))]}))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "server":
        server(int(sys.argv[2]))
    elif len(sys.argv) >= 4 and sys.argv[1] == "client":
        client(sys.argv[2], int(sys.argv[3]),
               int(sys.argv[4]) if len(sys.argv) > 4 else 5000)
    else:
        sys.exit(__doc__)
