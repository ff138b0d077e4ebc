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
in microseconds, and the count of messages seen."""

import re
import sys

LINE = re.compile(r'^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+'
                  r'(?P<ts>\d+\.\d+):\s+(?P<ev>[a-z_0-9]+)[:( ]\s*(?P<rest>.*)$')


def pct(v, p):
    if not v:
        return float('nan')
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))]


def main():
    enter = {}          # pid -> last sys_enter_sendto time
    pending = None      # the message in flight
    early = None        # a DATA receive seen before its send's event
    stages = {k: [] for k in ('send', 'wire', 'wake', 'recv', 'oneway')}
    wake_cpu = {'same': [], 'other': []}
    bench = set()
    for line in open(sys.argv[1], errors='replace'):
        m = LINE.match(line)
        if not m:
            continue
        ev, ts, pid = m['ev'], float(m['ts']) * 1e6, int(m['pid'])
        rest = m['rest']
        if ev == 'sys_sendto':
            bench.add(pid)
            enter[pid] = ts
        elif ev == 'hps_msg_send' and 'type=DATA' in rest:
            if pid in enter:
                pending = {'pid': pid, 'a': enter.pop(pid), 'b': ts}
                # hps_msg_send fires once ib_post_send() returned; rxe
                # may have carried the message within that call and a
                # busy poller handled its completion first: the post
                # was no later than that completion
                if early and early[0] >= pending['a']:
                    pending['b'] = min(ts, early[0])
                    pending['c'], pending['ccpu'] = early
            else:
                pending = None
            early = None
        elif ev == 'hps_msg_recv' and 'type=DATA' in rest:
            if pending and 'c' not in pending:
                pending['c'] = ts
                pending['ccpu'] = int(m['cpu'])
            else:
                early = (ts, int(m['cpu']))
        elif ev == 'sched_wakeup':
            w = re.search(r'pid=(\d+)', rest)
            if (pending and 'c' in pending and 'd' not in pending and w and
                    int(w.group(1)) != pending['pid'] and
                    int(w.group(1)) in bench):
                pending['d'] = ts
                t = re.search(r'target_cpu=(\d+)', rest)
                if t:
                    pending['same'] = int(t.group(1)) == pending['ccpu']
        elif ev == 'sys_recvfrom' and '->' in rest:
            if (pending and 'c' in pending and pid != pending['pid'] and
                    pid in bench):
                p = pending
                d = p.get('d', p['c'])
                st = {'send': p['b'] - p['a'], 'wire': p['c'] - p['b'],
                      'wake': d - p['c'], 'recv': ts - d,
                      'oneway': ts - p['a']}
                if min(st.values()) >= 0:
                    for k, v in st.items():
                        stages[k].append(v)
                    if 'same' in p:
                        wake_cpu['same' if p['same'] else
                                 'other'].append(st['wake'])
                pending = None
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
