#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""lat-breakdown.py TRACE: where a one-way message's time goes, from a
tracefs text trace of a 64-byte hps-bench pingpong on one node
(lat-breakdown.sh records it). For every DATA message, four stages:

  send   the sender's sendto() entry to the message's post (hps_msg_send)
  wire   the post to the receiver's receive completion (hps_msg_recv):
         the device's work, both sides' softirq processing (0 when the
         completion came before the post's event: rxe may carry a
         message within ib_post_send(), and a busy poller handle it
         before the call returns)
  wake   the completion to the receiving thread's wakeup (sched_wakeup),
         0 when the thread did not sleep; also apart for a reader asleep
         on the CPU that handled the completion and on the other one
         (sched_wakeup's target_cpu: waking a task on another CPU takes
         an interrupt there first)
  recv   the wakeup (or the completion) to the receiver's recvfrom() return

and the one-way time they add up to (the sender's sendto() entry to the
receiver's recvfrom() return). Prints median and 99th percentile of each
in microseconds, and the count of messages seen.

Events are matched by order within each direction (the k-th post from
one end is the other end's k-th receive completion) and by time within a
thread, not by their order in the trace: a busy-polling receiver may
finish with a message, and answer it, before the sender's post event.
Events stamped alike (the trace clock can stand still for a while under
TCG) are taken in order: one sendto() and one recvfrom() per message."""

import re
import sys
from bisect import bisect_left, bisect_right

LINE = re.compile(r'^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+'
                  r'(?P<ts>\d+\.\d+):\s+(?P<ev>[a-z_0-9]+)[:( ]\s*(?P<rest>.*)$')
TUPLE = re.compile(r'src=(\S+) dst=(\S+) type=DATA len=(\d+)')
RET = re.compile(r'->\s*(0x[0-9a-f]+|-?\d+)')


def pct(v, p):
    if not v:
        return float('nan')
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))]


def read(path):
    """The trace's events: per pid the sendto entries, the recvfrom
    returns with data and the wakeups (time, target CPU); per direction
    (the sender's src, dst) the DATA posts (time, pid) and the DATA
    receive completions (time, CPU)."""
    enter, ret, wake = {}, {}, {}
    sent, recvd = {}, {}
    for line in open(path, errors='replace'):
        m = LINE.match(line)
        if not m:
            continue
        ev, ts, pid = m['ev'], float(m['ts']) * 1e6, int(m['pid'])
        rest = m['rest']
        if ev == 'sys_sendto':
            enter.setdefault(pid, []).append(ts)
        elif ev == 'sys_recvfrom':
            r = RET.search(rest)
            # an error returns as a 64-bit two's complement in hex
            if r and 0 < int(r.group(1), 0) < 1 << 63:
                ret.setdefault(pid, []).append(ts)
        elif ev == 'sched_wakeup':
            w = re.search(r'pid=(\d+).*target_cpu=(\d+)', rest)
            if w:
                wake.setdefault(int(w.group(1)), []).append(
                    (ts, int(w.group(2))))
        elif ev in ('hps_msg_send', 'hps_msg_recv'):
            t = TUPLE.search(rest)
            if not t:
                continue
            if ev == 'hps_msg_send':
                sent.setdefault((t[1], t[2]), []).append(
                    (ts, pid, int(t[3])))
            else:
                # the receiving end's tuple: the sender's is the reverse
                recvd.setdefault((t[2], t[1]), []).append(
                    (ts, int(m['cpu'])))
    return enter, ret, wake, sent, recvd


def owner(posts, enter):
    """The thread that sends in a direction: the one whose sendto() made
    most of its posts (a post from softirq, of a send that waited for
    credits, runs in whatever thread that interrupted)."""
    n = {}
    for _, pid, _ in posts:
        if pid in enter:
            n[pid] = n.get(pid, 0) + 1
    return max(n, key=n.get) if n else None


def main():
    enter, ret, wake, sent, recvd = read(sys.argv[1])
    # the benchmark's messages, not the client's and server's hello
    lens = [p[2] for posts in sent.values() for p in posts]
    size = max(set(lens), key=lens.count) if lens else 0
    stages = {k: [] for k in ('send', 'wire', 'wake', 'recv', 'oneway')}
    wake_cpu = {'same': [], 'other': []}
    for d, posts in sent.items():
        src = owner(posts, enter)
        dst = owner(sent.get((d[1], d[0]), []), enter)
        if src is None or dst is None:
            continue
        ent, rets = enter[src], ret.get(dst, [])
        wakes = wake.get(dst, [])
        wts = [w[0] for w in wakes]
        last_i = last_j = -1
        if len(posts) != len(recvd.get(d, [])):
            print(f"lat-breakdown.py: {d[0]} -> {d[1]}: {len(posts)} posts "
                  f"but {len(recvd.get(d, []))} receive completions (trace "
                  f"events lost?)", file=sys.stderr)
        # the k-th post in a direction is the k-th receive completion
        for (b, _, size_b), (c, ccpu) in zip(posts, recvd.get(d, [])):
            if size_b != size:
                continue
            # the post's event fires once ib_post_send() returned; rxe
            # may carry the message within that call and a busy poller
            # handle its completion first: it was posted by then
            b = min(b, c)
            i = bisect_right(ent, b) - 1
            # the guest's trace clock can stand still for a while (seen
            # under TCG with both vCPUs busy polling): of the sendto()s
            # stamped alike, the first not taken yet
            while i - 1 > last_i and ent[i - 1] == ent[i]:
                i -= 1
            if i <= last_i:
                continue        # no sendto() of its own: not timed
            a, last_i = ent[i], i
            # each message returns from its own recvfrom(), in order
            j = max(bisect_left(rets, c), last_j + 1)
            if j == len(rets):
                continue
            e, last_j = rets[j], j
            k = bisect_left(wts, c)
            slept = k < len(wts) and wts[k] <= e
            w = wts[k] if slept else c
            st = {'send': b - a, 'wire': c - b, 'wake': w - c,
                  'recv': e - w, 'oneway': e - a}
            for key, v in st.items():
                stages[key].append(v)
            if slept:
                wake_cpu['same' if wakes[k][1] == ccpu else
                         'other'].append(st['wake'])
    n = len(stages['oneway'])
    print(f"messages: {n}")
    print(f"{'stage':8} {'median us':>10} {'p99 us':>10}")
    for k in ('send', 'wire', 'wake', 'recv', 'oneway'):
        print(f"{k:8} {pct(stages[k], 50):10.1f} {pct(stages[k], 99):10.1f}")
    slept = sum(1 for v in stages['wake'] if v > 0)
    print(f"receiver asleep when the message came: {slept} of {n}")
    for k, what in (('same', 'on the completion\'s CPU'),
                    ('other', 'on the other CPU')):
        v = wake_cpu[k]
        print(f"  wake, reader asleep {what}: {len(v)}, median "
              f"{pct(v, 50):.1f} us, p99 {pct(v, 99):.1f} us")
    return 0 if n else 1


if __name__ == '__main__':
    sys.exit(main())
