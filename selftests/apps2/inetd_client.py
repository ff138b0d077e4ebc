# SPDX-License-Identifier: GPL-2.0
"""Client for the inetd services of selftests/hps_apps2.sh.

usage: python3 inetd_client.py SERVICE HOST PORT

Talks to one service over an ordinary TCP socket (which hps_run turns into
an AF_HPS one), checks what comes back by content, prints one line saying
what it saw and exits 0 on success, 1 on a mismatch.
"""
import datetime
import hashlib
import os
import socket
import sys
import threading


def connect(host, port):
    s = socket.create_connection((host, port), timeout=60)
    return s


def send_then_shut(s, data):
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)


def read_all(s):
    out = []
    while True:
        b = s.recv(1 << 16)
        if not b:
            return b''.join(out)
        out.append(b)


def echo(host, port):
    """1 MiB of random bytes come back exactly."""
    data = os.urandom(1 << 20)
    s = connect(host, port)
    t = threading.Thread(target=send_then_shut, args=(s, data))
    t.start()
    got = read_all(s)
    t.join()
    want, have = hashlib.sha256(data).hexdigest(), hashlib.sha256(got).hexdigest()
    print(f'echo: sent {len(data)}, got {len(got)}, sha256 {have[:16]}')
    return got == data


def discard(host, port):
    """4 MiB are taken; the server closes cleanly once it read them all."""
    s = connect(host, port)
    data = os.urandom(4 << 20)
    send_then_shut(s, data)
    rest = read_all(s)
    print(f'discard: sent {len(data)}, got back {len(rest)} bytes, then EOF')
    return rest == b''


def chargen(host, port):
    """The RFC 864 pattern: 72 of the 95 printable characters per line,
    each line starting one character further on the ring."""
    ring = bytes(range(32, 127))
    nlines = 2000
    s = connect(host, port)
    buf = b''
    while len(buf) < nlines * 74:
        b = s.recv(1 << 16)
        if not b:
            break
        buf += b
    s.close()
    lines = [buf[i * 74:(i + 1) * 74] for i in range(nlines)]
    first = ring.find(lines[0][:1]) if lines[0] else -1
    bad = 0
    for i, line in enumerate(lines):
        k = (first + i) % len(ring)
        want = (ring[k:] + ring[:k])[:72] + b'\r\n'
        bad += line != want
    print(f'chargen: {nlines} lines of 74 bytes, {bad} differ from RFC 864')
    return first >= 0 and bad == 0


def daytime(host, port):
    """One ctime()-style line, within five minutes of our own clock."""
    s = connect(host, port)
    got = read_all(s)
    line = got.decode('ascii', 'replace')
    try:
        when = datetime.datetime.strptime(line.strip(), '%a %b %d %H:%M:%S %Y')
    except ValueError:
        print(f'daytime: not a date line: {line!r}')
        return False
    skew = abs((datetime.datetime.now() - when).total_seconds())
    print(f'daytime: {line.strip()!r}, {skew:.0f} s from our clock')
    return got.endswith(b'\r\n') and skew < 300


def sha256(host, port):
    """A real program (sha256sum) as a stream service: its digest of
    2 MiB of random bytes is ours."""
    data = os.urandom(2 << 20)
    s = connect(host, port)
    t = threading.Thread(target=send_then_shut, args=(s, data))
    t.start()
    got = read_all(s).decode('ascii', 'replace')
    t.join()
    want = hashlib.sha256(data).hexdigest()
    print(f'sha256sum: answered {got.strip()!r}')
    return got == want + '  -\n'


def main():
    service, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ok = globals()[service](host, port)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
