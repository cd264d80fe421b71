#!/usr/bin/env python3
"""Hostile clients against a running `tide serve` (python3 stdlib only).

usage: overload.py URL [--idle N] [--loris N] [--per-ip N] [--timeout S]

Opens N idle sockets (connect, send nothing) and N slow-loris sockets (a
partial request, then one header byte every 25 s) from loopback addresses
127.0.0.2.. (at most --per-ip per address, so the per-address limit does not
simply refuse them), then from 127.0.0.1:
  - GET /healthz must answer within 1 s (timed 5 times, the worst is printed);
  - POST /v1/jobs must succeed (201);
then checks the per-address limit (more than --per-ip sockets from one
address: the excess is closed by the server) and, after --timeout + 3 s,
that the slow-loris sockets were dropped by the server (their first byte
was sent well within 25 s, the next one would come 25 s later).
Prints one line per measurement; exit 0 when every check holds, 1 otherwise.
Run by tests/e2e/serve_overload.sh; also usable by hand against any daemon.
"""
import argparse
import json
import resource
import select
import socket
import sys
import time
import urllib.parse


def raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft


def open_from(host, port, src, n, payload=b""):
    """Up to n connected sockets from source address src (non-blocking)."""
    out = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((src, 0))
            s.settimeout(2)
            s.connect((host, port))
            if payload:
                s.sendall(payload)
            s.setblocking(False)
            out.append(s)
        except OSError:
            s.close()
            break
    return out


def spread(host, port, total, per_ip, first, payload=b""):
    """total sockets from 127.0.0.first, .first+1, ... (per_ip each)."""
    socks, addr = [], first
    while len(socks) < total and addr < 255:
        socks += open_from(host, port, "127.0.0.%d" % addr, min(per_ip, total - len(socks)), payload)
        addr += 1
    return socks, addr


def closed_by_server(s):
    """True when the server closed s (EOF, reset, or an answer then EOF)."""
    try:
        p = select.poll()
        p.register(s, select.POLLIN)
        if not p.poll(0):
            return False
        data = s.recv(4096)
        return data == b"" or data.startswith(b"HTTP/")
    except OSError:
        return True


def request(host, port, method, path, body=None, timeout=5):
    t0 = time.monotonic()
    s = socket.create_connection((host, port), timeout=timeout, source_address=("127.0.0.1", 0))
    data = body.encode() if body else b""
    head = "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n" % (method, path, host)
    if body is not None:
        head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(data)
    s.sendall(head.encode() + b"\r\n" + data)
    resp = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        resp += b
    s.close()
    status = int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/") else -1
    return status, resp.split(b"\r\n\r\n", 1)[-1], time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--idle", type=int, default=1100)
    ap.add_argument("--loris", type=int, default=1030)
    ap.add_argument("--per-ip", type=int, default=128)
    ap.add_argument("--timeout", type=float, default=10, help="the server's inactivity timeout")
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    host, port = u.hostname, u.port
    have = raise_nofile(a.idle + a.loris + a.per_ip + 200)
    if have < a.idle + a.loris + a.per_ip + 100:
        print("skip: descriptor limit %d is too low" % have)
        return 77
    fails = []
    per = max(1, a.per_ip - 8)  # leave the server's per-address limit some room
    t0 = time.monotonic()
    idle, nxt = spread(host, port, a.idle, per, 2)
    loris_head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-a: "
    loris, nxt = spread(host, port, a.loris, per, nxt, loris_head)
    opened = time.monotonic() - t0
    print("opened %d idle + %d slow-loris sockets from 127.0.0.2-.%d in %.1f s"
          % (len(idle), len(loris), nxt - 1, opened))
    if len(idle) < a.idle or len(loris) < a.loris:
        fails.append("could open only %d idle / %d slow-loris sockets" % (len(idle), len(loris)))
    worst = 0.0
    for _ in range(5):
        st, body, dt = request(host, port, "GET", "/healthz")
        worst = max(worst, dt)
        if st != 200:
            fails.append("/healthz answered %d under load: %r" % (st, body[:200]))
    print("healthz under load: worst of 5 = %.3f s" % worst)
    if worst > 1.0:
        fails.append("/healthz took %.3f s (> 1 s)" % worst)
    job = json.dumps({"job_id": "under-load-%d" % (int(time.time() * 1000) % 10**9),
                      "priority": 2, "gpus": 8, "duration_s": 3600})
    st, body, dt = request(host, port, "POST", "/v1/jobs", job)
    print("submit under load: HTTP %d in %.3f s" % (st, dt))
    if st != 201:
        fails.append("submit under load answered %d: %r" % (st, body[:200]))
    alive_idle = sum(not closed_by_server(s) for s in idle)
    print("idle sockets still open after the checks: %d of %d" % (alive_idle, len(idle)))

    # the per-address limit: one more address, more sockets than allowed
    extra = open_from(host, port, "127.0.0.%d" % nxt, a.per_ip + 40)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        kept = sum(not closed_by_server(s) for s in extra)
        if kept <= a.per_ip:
            break
        time.sleep(0.1)
    print("per-address limit: %d of %d sockets from one address kept (limit %d)"
          % (kept, len(extra), a.per_ip))
    if kept > a.per_ip:
        fails.append("%d sockets from one address kept open (limit %d)" % (kept, a.per_ip))
    for s in extra:
        s.close()

    # the slow-loris sockets: sent their first bytes at most `opened` s ago;
    # a client sending one byte every 25 s must be dropped by the timeout
    wait_until = t0 + a.timeout + 3 + opened
    while time.monotonic() < wait_until:
        if all(closed_by_server(s) for s in loris):
            break
        time.sleep(0.25)
    dropped = sum(closed_by_server(s) for s in loris)
    print("slow-loris sockets dropped by the server within %.0f s: %d of %d"
          % (time.monotonic() - t0, dropped, len(loris)))
    if dropped < len(loris):
        fails.append("%d slow-loris sockets still open after %.0f s"
                     % (len(loris) - dropped, time.monotonic() - t0))
    st, body, dt = request(host, port, "GET", "/healthz")
    print("healthz after: HTTP %d in %.3f s" % (st, dt))
    if st != 200:
        fails.append("/healthz after the flood answered %d" % st)
    for s in idle + loris:
        s.close()
    for f in fails:
        print("FAIL: " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
