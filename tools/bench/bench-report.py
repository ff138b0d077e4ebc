#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench-report.py OUTDIR: turn OUTDIR/raw.csv (written by bench-guest.sh)
into OUTDIR/summary.md (tables and ratio tables per configuration) and, when
gnuplot is installed, PNG plots per configuration: lat-CONFIG.png (one-way
latency against message size), bw-CONFIG.png (bandwidth against write size)
and cpu-CONFIG.png (CPU seconds per GiB against write size, streaming).
OUTDIR/sweep.csv, when present, adds a table per swept parameter and
sweep-CONFIG.png (each point relative to the default's).
OUTDIR/meta.txt and OUTDIR/notes-CONFIG.txt, when present, are copied into
the summary."""

import csv
import math
import os
import shutil
import subprocess
import sys

LABEL = {
    'verbs-send-poll': 'raw verbs send, polling',
    'verbs-send-event': 'raw verbs send, events (-e)',
    'verbs-write-poll': 'raw verbs RDMA write, polling',
    'verbs-write-event': 'raw verbs RDMA write, events (-e)',
    'verbs-read-poll': 'raw verbs RDMA read, polling',
    'verbs-read-event': 'raw verbs RDMA read, events (-e)',
    'verbs-cm': 'raw rdma_cm setup and teardown (cmtime, all at once, no data)',
    'hps': 'AF_HPS',
    'hps-bp': 'AF_HPS, busy polling (net.core.busy_read)',
    'tcp': 'TCP (TCP_NODELAY)',
    'tcp-bp': 'TCP, busy polling (net.core.busy_read)',
    'rsocket': 'rsockets',
    'smc': 'SMC-R (AF_SMC, RDMA packets seen)',
    'smc-tcp': 'AF_SMC fallen back to TCP',
    'hps-fb': 'AF_HPS fallen back to TCP (HPS_TCP_FALLBACK, TCP server)',
    'tcp-hps': 'TCP clients of an AF_HPS listener (HPS_TCP_FALLBACK)',
}
ORDER = list(LABEL)


def num(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def human(s):
    s = int(s)
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return '%d MiB' % (s >> 20)
    if s >= 1024 and s % 1024 == 0:
        return '%d KiB' % (s >> 10)
    return '%d B' % s


def fmt(v, digits=1):
    return '-' if v is None else '%.*f' % (digits, v)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return '-'
    return '%.2f' % (a / b)


def pos_ratio(a, b):
    """a / b of two amounts that only mean something above 0 (memory)"""
    if a is None or b is None or a <= 0 or b <= 0:
        return '-'
    return '%.2f' % (a / b)


def opened(r):
    """conns: the connections opened, and what stopped the rest"""
    n, want = r.get('iters') or '0', r.get('conns') or '?'
    if not r.get('conn_err') and n == want:
        return n
    return '%s of %s%s' % (n, want, ' (%s)' % r['conn_err']
                           if r.get('conn_err') else '')


def order_key(t):
    return (ORDER.index(t) if t in ORDER else len(ORDER), t)


def table(out, head, rows):
    out.append('| ' + ' | '.join(head) + ' |')
    out.append('|---' + '|---:' * (len(head) - 1) + '|')
    for r in rows:
        out.append('| ' + ' | '.join(r) + ' |')
    out.append('')


def cpu_total(r):
    """client and server user+system and the softirq time, s/GiB"""
    parts = [num(r.get(k)) for k in ('cli_user_s_gib', 'cli_sys_s_gib',
                                      'srv_user_s_gib', 'srv_sys_s_gib')]
    if any(p is None for p in parts):
        return None
    total = sum(parts)
    sirq = num(r.get('cli_softirq_s_gib')) or 0
    if not r['config'].startswith('1n'):
        sirq += num(r.get('srv_softirq_s_gib')) or 0
    return total + sirq


def plot(outdir, cfg, name, title, ylabel, series):
    """series: {transport: [(x, y)]}; log-log lines"""
    if not shutil.which('gnuplot') or not any(series.values()):
        return None
    png = '%s-%s.png' % (name, cfg)
    cmds = ['set terminal png size 900,600 noenhanced',
            'set output "%s"' % os.path.join(outdir, png),
            'set title "%s (%s)"' % (title, cfg),
            'set logscale xy', 'set grid',
            'set xlabel "message size (bytes)"',
            'set ylabel "%s"' % ylabel, 'set key outside right',
            'set format x "%.0s%cB"']
    plots, data = [], []
    for t in sorted(series, key=order_key):
        pts = sorted(p for p in series[t] if p[1] and p[1] > 0)
        if not pts:
            continue
        plots.append("'-' with linespoints title \"%s\"" % LABEL.get(t, t))
        data.append('\n'.join('%g %g' % p for p in pts) + '\ne')
    if not plots:
        return None
    script = '\n'.join(cmds) + '\nplot ' + ', '.join(plots) + '\n' + \
        '\n'.join(data) + '\n'
    r = subprocess.run(['gnuplot'], input=script, text=True,
                       capture_output=True)
    if r.returncode:
        sys.stderr.write('bench-report: gnuplot: %s\n' % r.stderr.strip())
        return None
    return png


SWEEP_TITLE = {
    'credits': 'credits (receive window, buffers)',
    'buf_size': 'buf_size (bytes per bounce buffer)',
    'ack_thresh': 'ack_thresh (% of the window before an explicit credit '
                  'update)',
    'inline_max': 'inline_max (bytes sent inline)',
    'nodelay': 'nodelay (1: HPS_NODELAY; 0: small writes combined)',
    'zcopy_thresh': 'zcopy_thresh (bytes; 0: zero copy off)',
}


def sweep_metric(r):
    """(value, unit, higher is better) of one sweep row"""
    if r['test'] == 'pingpong':
        return num(r['median_us']), 'us', False
    return num(r['mbps']), 'MB/s', True


def sweeps(outdir):
    """the sweep section of summary.md, and sweep-CONFIG.png"""
    path = os.path.join(outdir, 'sweep.csv')
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = list(csv.DictReader(ln for ln in f if ln.strip()))
    if not rows:
        return []
    out = ['## Parameter sweeps (AF_HPS)', '',
           'Each parameter alone, the others at their defaults, set on both '
           'nodes (nodelay on the client). Latency: one-way median, us '
           '(lower is better); bandwidth: MB/s (higher is better). In '
           'brackets: relative to the default\'s measurement in the same '
           'run; the default is marked with *.', '']
    configs = []
    for r in rows:
        if r['config'] not in configs:
            configs.append(r['config'])
    for cfg in configs:
        rs = [r for r in rows if r['config'] == cfg]
        out += ['### %s' % cfg, '']
        knobs = []
        for r in rs:
            if r['knob'] not in knobs:
                knobs.append(r['knob'])
        panels = []
        for k in knobs:
            kr = [r for r in rs if r['knob'] == k]
            values, points = [], []
            for r in kr:
                if r['value'] not in values:
                    values.append(r['value'])
                if (r['test'], r['size']) not in points:
                    points.append((r['test'], r['size']))
            dflt = {r['value'] for r in kr if r['default'] == '1'}

            def cell(v, p):
                for r in kr:
                    if r['value'] == v and (r['test'], r['size']) == p:
                        return sweep_metric(r)[0]
                return None

            head = [k] + ['%s %s (%s)' % (t, human(s), 'us' if t ==
                                          'pingpong' else 'MB/s')
                          for t, s in points]
            trows, series = [], {}
            for v in values:
                row = [v + ('*' if v in dflt else '')]
                for p in points:
                    x = cell(v, p)
                    d = next((cell(dv, p) for dv in dflt), None)
                    rel = x / d if x is not None and d else None
                    row.append(fmt(x, 2 if p[0] == 'pingpong' else 1) +
                               ('' if rel is None else ' (%.2f)' % rel))
                    series.setdefault(p, []).append(rel)
                trows.append(row)
            out += ['%s:' % SWEEP_TITLE.get(k, k), '']
            table(out, head, trows)
            panels.append((k, values, series))
        png = sweep_plot(outdir, cfg, panels)
        if png:
            out += ['![%s](%s)' % (png, png), '']
    return out


def sweep_plot(outdir, cfg, panels):
    """one panel per parameter: each measurement over the default's"""
    if not shutil.which('gnuplot') or not panels:
        return None
    png = 'sweep-%s.png' % cfg
    ncol = 3
    nrow = (len(panels) + ncol - 1) // ncol
    cmds = ['set terminal png size 1200,%d noenhanced' % (380 * nrow),
            'set output "%s"' % os.path.join(outdir, png),
            'set multiplot layout %d,%d title "AF_HPS parameter sweeps '
            '(%s): each point / the default\'s, higher is better"' %
            (nrow, ncol, cfg),
            'set grid', 'set key bottom left font ",9"',
            'set yrange [0:*]']
    for k, values, series in panels:
        xt = ', '.join('"%s" %d' % (v, i) for i, v in enumerate(values))
        cmds += ['set title "%s"' % k, 'set xtics (%s)' % xt,
                 'set xrange [-0.3:%g]' % (len(values) - 0.7)]
        plots, data = [], []
        for (t, s), rel in series.items():
            pts = []
            for i, r in enumerate(rel):
                if r is None or r <= 0:
                    continue
                # latency: lower is better, so plot default/value
                pts.append((i, 1 / r if t == 'pingpong' else r))
            if not pts:
                continue
            plots.append("'-' with linespoints title \"%s %s\"" %
                         ('latency' if t == 'pingpong' else 'bandwidth',
                          human(s)))
            data.append('\n'.join('%d %g' % p for p in pts) + '\ne')
        if plots:
            cmds.append('plot ' + ', '.join(plots) + '\n' + '\n'.join(data))
    cmds.append('unset multiplot')
    r = subprocess.run(['gnuplot'], input='\n'.join(cmds) + '\n', text=True,
                       capture_output=True)
    if r.returncode:
        sys.stderr.write('bench-report: gnuplot: %s\n' % r.stderr.strip())
        return None
    return png


def redis_ratios(rows, cfg):
    """{command: AF_HPS requests/s / TCP's} of one configuration"""
    rate = {}
    for r in rows:
        if r['config'] == cfg and r['test'].startswith('redis-'):
            rate[(r['transport'], r['test'][len('redis-'):])] = \
                num(r.get('rate_per_s'))
    out = {}
    for (t, c), v in rate.items():
        if t == 'hps' and v and rate.get(('tcp', c)):
            out[c] = v / rate[('tcp', c)]
    return out


def headline(rows, configs):
    """one table over the configurations: the ratios a user asks first"""
    def val(cfg, t, test, size, col):
        for r in rows:
            if (r['config'], r['transport'], r['test']) == (cfg, t, test) \
                    and int(r['size']) == size:
                return num(r.get(col))
        return None

    refs = [('raw verbs (polling)', 'verbs-send-poll'),
            ('raw verbs (events)', 'verbs-send-event'),
            ('TCP', 'tcp'), ('SMC-R', 'smc'),
            ('AF_SMC fallen back to TCP', 'smc-tcp'), ('rsockets', 'rsocket')]
    head = ['configuration']
    head += ['64 B latency / %s' % n for n, _ in refs]
    head += ['64 KiB bandwidth / %s' % n for n, t in refs
             if t != 'verbs-send-event']
    head += ['connections/s / TCP', 'connections/s / raw rdma_cm',
             'fallen-back connections/s / TCP',
             'TCP clients of AF_HPS connections/s / TCP',
             'conns setup/s / TCP',
             'memory per connection / TCP',
             'redis requests/s / TCP, worst command']
    trows = []
    for cfg in configs:
        row = [cfg]
        lat = val(cfg, 'hps', 'pingpong', 64, 'median_us')
        bw = val(cfg, 'hps', 'stream', 65536, 'mbps')
        for _, t in refs:
            row.append(ratio(lat, val(cfg, t, 'pingpong', 64, 'median_us')))
        for _, t in refs:
            if t != 'verbs-send-event':
                row.append(ratio(bw, val(cfg, t, 'stream', 65536, 'mbps')))
        row.append(ratio(val(cfg, 'hps', 'connrate', 64, 'rate_per_s'),
                         val(cfg, 'tcp', 'connrate', 64, 'rate_per_s')))
        row.append(ratio(val(cfg, 'hps', 'connrate', 64, 'rate_per_s'),
                         val(cfg, 'verbs-cm', 'connrate', 0, 'rate_per_s')))
        row.append(ratio(val(cfg, 'hps-fb', 'connrate', 64, 'rate_per_s'),
                         val(cfg, 'tcp', 'connrate', 64, 'rate_per_s')))
        row.append(ratio(val(cfg, 'tcp-hps', 'connrate', 64, 'rate_per_s'),
                         val(cfg, 'tcp', 'connrate', 64, 'rate_per_s')))
        row.append(ratio(val(cfg, 'hps', 'conns', 64, 'rate_per_s'),
                         val(cfg, 'tcp', 'conns', 64, 'rate_per_s')))
        row.append(pos_ratio(val(cfg, 'hps', 'conns', 64, 'mem_kib_end'),
                             val(cfg, 'tcp', 'conns', 64, 'mem_kib_end')))
        rr = redis_ratios(rows, cfg)
        worst = min(rr, key=rr.get) if rr else None
        row.append('%.2f (%s)' % (rr[worst], worst) if worst else '-')
        trows.append(row)
    if not trows:
        return []
    out = ['## Headline: AF_HPS against the others', '',
           'Latency: AF_HPS one-way median / the other\'s (above 1: AF_HPS '
           'slower). Bandwidth and connection rate: AF_HPS / the other '
           '(below 1: AF_HPS slower). Memory per connection (conns, '
           'MemAvailable): AF_HPS / TCP (above 1: AF_HPS takes more). "-": '
           'no result for the other (see the notes: SMC-R never carried a '
           'run here).', '']
    table(out, head, trows)
    return out


def latency(rows, configs):
    """64 B one-way latency, blocking and busy polling, against the others"""
    def val(cfg, t, col='median_us'):
        for r in rows:
            if (r['config'], r['transport'], r['test']) == (cfg, t, 'pingpong') \
                    and int(r['size']) == 64:
                return num(r.get(col))
        return None

    def cpu_msg(cfg, t):
        """CPU microseconds per message, both ends and their softirq"""
        for r in rows:
            if (r['config'], r['transport'], r['test']) == (cfg, t, 'pingpong') \
                    and int(r['size']) == 64:
                c = cpu_total(r)
                return None if c is None else c * 64 / (1 << 30) * 1e6
        return None

    head = ['configuration', 'AF_HPS blocking (p99)',
            'AF_HPS busy polling (p99)', 'busy / verbs polling',
            'busy / rsockets', 'busy / TCP busy polling',
            'blocking / verbs events', 'blocking / TCP',
            'CPU us per message: AF_HPS blocking, busy; TCP, busy']
    trows = []
    for cfg in configs:
        blk, bp = val(cfg, 'hps'), val(cfg, 'hps-bp')
        if blk is None and bp is None:
            continue
        trows.append([
            cfg,
            '%s (%s)' % (fmt(blk), fmt(val(cfg, 'hps', 'p99_us'))),
            '%s (%s)' % (fmt(bp), fmt(val(cfg, 'hps-bp', 'p99_us'))),
            ratio(bp, val(cfg, 'verbs-send-poll')),
            ratio(bp, val(cfg, 'rsocket')),
            ratio(bp, val(cfg, 'tcp-bp')),
            ratio(blk, val(cfg, 'verbs-send-event')),
            ratio(blk, val(cfg, 'tcp')),
            '%s, %s; %s, %s' % tuple(fmt(cpu_msg(cfg, t)) for t in
                                     ('hps', 'hps-bp', 'tcp', 'tcp-bp'))])
    if not trows:
        return []
    out = ['## Small-message latency: blocking and busy polling', '',
           '64 B one-way median in microseconds (p99), and AF_HPS\'s '
           'median over the other\'s (above 1: AF_HPS slower). Busy '
           'polling: net.core.busy_read and busy_poll set on both nodes '
           '(hps-bp, tcp-bp rows). CPU per message: user, system and '
           'softirq time of both ends over the messages of the run (one '
           'node\'s softirq counted once), so the cost of spinning shows.',
           '']
    table(out, head, trows)
    return out


def breakdown(outdir):
    """lat-breakdown.sh's stages (breakdown.csv), blocking and busy"""
    path = os.path.join(outdir, 'breakdown.csv')
    if not os.path.exists(path):
        return []
    data = {}
    for ln in open(path):
        f = ln.strip().split(',')
        if len(f) == 6:
            data.setdefault((f[0], f[1]), {})[f[2]] = f[3:]
    out = ['## Where a 64-byte message\'s time goes (one node)', '',
           'tools/bench/lat-breakdown.sh: a traced AF_HPS pingpong (tracing '
           'slows every stage: compare them with each other). send: '
           'sendto() to the post; wire: the post to the receive completion; '
           'wake: the completion to the reader\'s wakeup (0 if it did not '
           'sleep); recv: to recvfrom()\'s return. Median (p99) in '
           'microseconds.', '']
    rows = []
    for (cfg, us), st in sorted(data.items()):
        def cell(k):
            v = st.get(k)
            return '%s (%s)' % (v[0], v[1]) if v and v[0] else '-'

        def cnt(k):
            v = st.get(k)
            return v[2] if v and v[2] else '-'
        rows.append([cfg, 'off' if us == '0' else us + ' us'] +
                    [cell(k) for k in ('send', 'wire', 'wake', 'recv',
                                       'oneway')] +
                    ['%s of %s' % (cnt('asleep'), cnt('messages')),
                     '%s: %s' % (cnt('wake_same_cpu'), cell('wake_same_cpu')),
                     '%s: %s' % (cnt('wake_other_cpu'),
                                 cell('wake_other_cpu'))])
    table(out, ['configuration', 'busy polling', 'send', 'wire', 'wake',
                'recv', 'one way', 'reader asleep',
                'woken on the completion\'s CPU', 'woken on the other CPU'],
          rows)
    return out


def main():
    outdir = sys.argv[1]
    rows = []
    with open(os.path.join(outdir, 'raw.csv')) as f:
        lines = [ln for ln in f if ln.strip() and not ln.startswith('#')]
    for r in csv.DictReader(lines):
        rows.append(r)
    configs = []
    for r in rows:
        if r['config'] not in configs:
            configs.append(r['config'])

    out = ['# AF_HPS benchmark: %s' % os.path.basename(outdir.rstrip('/')), '']
    meta = os.path.join(outdir, 'meta.txt')
    if os.path.exists(meta):
        out += ['- ' + ln.rstrip() for ln in open(meta) if ln.strip()]
        out.append('')
    out += ['Under QEMU TCG with software RDMA the absolute numbers mean '
            'little; compare the ratios within one run. Latency is one-way '
            '(half the round trip), median, in microseconds; bandwidth in '
            'MB/s (10^6 bytes/s). CPU is seconds per GiB moved: client and '
            'server user+system from getrusage, plus the softirq time of '
            'the node(s) from /proc/stat. Raw data: raw.csv.', '']

    out += headline(rows, configs)
    out += latency(rows, configs)
    out += breakdown(outdir)
    for cfg in configs:
        rs = [r for r in rows if r['config'] == cfg]
        out += ['## %s' % cfg, '']
        by = {}
        for r in rs:
            by.setdefault((r['transport'], r['test']), []).append(r)

        def get(t, test, size, col):
            for r in by.get((t, test), []):
                if int(r['size']) == size:
                    return num(r[col])
            return None

        transports = sorted({r['transport'] for r in rs}, key=order_key)
        lat_sizes = sorted({int(r['size']) for r in rs
                            if r['test'] == 'pingpong'})
        bw_sizes = sorted({int(r['size']) for r in rs
                           if r['test'] == 'stream'})

        if lat_sizes:
            out += ['### One-way latency, median (us)', '']
            table(out, ['transport'] + [human(s) for s in lat_sizes],
                  [[LABEL.get(t, t)] +
                   [fmt(get(t, 'pingpong', s, 'median_us'), 2)
                    for s in lat_sizes]
                   for t in transports if (t, 'pingpong') in by])
        if bw_sizes:
            out += ['### Streaming bandwidth (MB/s)', '']
            table(out, ['transport'] + [human(s) for s in bw_sizes],
                  [[LABEL.get(t, t)] +
                   [fmt(get(t, 'stream', s, 'mbps')) for s in bw_sizes]
                   for t in transports if (t, 'stream') in by])

        multi = [t for t in transports
                 if any((t, x) in by for x in ('bidir', 'streams', 'fanin',
                                               'fanout', 'connrate'))]
        if multi:
            out += ['### Many directions and connections', '']

            def first(t, test, col):
                rr = by.get((t, test))
                return num(rr[0][col]) if rr else None

            table(out, ['transport', 'bidir MB/s', 'streams MB/s',
                        'fanin median us', 'fanin round trips/s',
                        'fanout MB/s', 'connections/s'],
                  [[LABEL.get(t, t), fmt(first(t, 'bidir', 'mbps')),
                    fmt(first(t, 'streams', 'mbps')),
                    fmt(first(t, 'fanin', 'median_us'), 2),
                    fmt(first(t, 'fanin', 'rate_per_s')),
                    fmt(first(t, 'fanout', 'mbps')),
                    fmt(first(t, 'connrate', 'rate_per_s'))]
                   for t in multi])
            sizes = sorted({int(r['size']) for r in rs
                            if r['test'] in ('bidir', 'streams', 'fanout')})
            out += ['(bidir, streams and fanout with %s writes, fanin with '
                    '64 B messages, connrate exchanging 64 B, one connection '
                    'after another (raw rdma_cm: no data, all at once); '
                    'streams, fanin and fanout with %s connections)' %
                    (', '.join(human(s) for s in sizes) or '-',
                     next((r['streams'] for r in rs
                           if r['test'] in ('streams', 'fanin', 'fanout')),
                          '-')), '']

        held = [t for t in transports if (t, 'conns') in by]
        if held:
            def cv(t, col):
                rr = by.get((t, 'conns'))
                return num(rr[0].get(col)) if rr else None

            cols = [('rate_per_s', 1, ratio), ('mem_kib_end', 1, pos_ratio),
                    ('slab_kib_end', 2, pos_ratio),
                    ('sunreclaim_kib_end', 2, pos_ratio),
                    ('vmalloc_kib_end', 2, pos_ratio),
                    ('median_us', 2, ratio), ('close_s', 3, ratio)]
            trows = [[LABEL.get(t, t), opened(by[(t, 'conns')][0])] +
                     [fmt(cv(t, c), d) for c, d, _ in cols] for t in held]
            if 'hps' in held and 'tcp' in held:
                trows.append(['AF_HPS / TCP', ''] +
                             [f(cv('hps', c), cv('tcp', c))
                              for c, _, f in cols])
            out += ['### Connections held open (conns)', '']
            table(out, ['transport', 'connections', 'setup/s',
                        'KiB per connection end', 'Slab KiB/end',
                        'SUnreclaim KiB/end', 'VmallocUsed KiB/end',
                        'busy median us', 'close s'], trows)
            r0 = by[(held[0], 'conns')][0]
            out += ['(connections opened one after another and all held '
                    'open; %s of them busy with %s round trips meanwhile, '
                    'then one checked echo on each. Memory: the drop of '
                    'MemAvailable (and the growth of Slab, SUnreclaim, '
                    'VmallocUsed) on the client\'s node from before the '
                    'first connection to after the last, over the '
                    'connection ends on that node: %s. Busy median: one-way '
                    'latency, to compare with fanin\'s. "N of M (ERROR)": '
                    'the opening stopped at that error)' %
                    (r0.get('streams') or '-', human(r0['size']),
                     'two per connection (both ends on one node)'
                     if cfg.startswith('1n') else
                     'one per connection (the server on the other node)'),
                    '']

        cmds = []
        for r in rs:
            c = r['test'][len('redis-'):]
            if r['test'].startswith('redis-') and c not in cmds:
                cmds.append(c)
        if cmds:
            def rv(t, c, col, scale=1):
                rr = by.get((t, 'redis-' + c))
                v = num(rr[0].get(col)) if rr else None
                return None if v is None else v / scale

            out += ['### redis-benchmark', '']
            table(out, ['command', 'AF_HPS requests/s', 'TCP requests/s',
                        'AF_HPS / TCP', 'AF_HPS median ms', 'TCP median ms',
                        'AF_HPS p99 ms', 'TCP p99 ms'],
                  [[c, fmt(rv('hps', c, 'rate_per_s')),
                    fmt(rv('tcp', c, 'rate_per_s')),
                    ratio(rv('hps', c, 'rate_per_s'),
                          rv('tcp', c, 'rate_per_s')),
                    fmt(rv('hps', c, 'median_us', 1000), 2),
                    fmt(rv('tcp', c, 'median_us', 1000), 2),
                    fmt(rv('hps', c, 'p99_us', 1000), 2),
                    fmt(rv('tcp', c, 'p99_us', 1000), 2)] for c in cmds])
            r0 = next(r for r in rs if r['test'].startswith('redis-'))
            out += ['(redis-server on the %s, redis-benchmark with %s '
                    'clients and %s requests per command; AF_HPS through '
                    'hps_run on both sides, TCP plain)' %
                    ('other node' if not cfg.startswith('1n') else
                     'same node', r0['size'], r0['iters']), '']

        cpu_rows = []
        for t in transports:
            for r in sorted(by.get((t, 'stream'), []),
                            key=lambda r: int(r['size'])):
                if int(r['size']) != 65536 and len(bw_sizes) > 2:
                    continue
                if num(r.get('cli_user_s_gib')) is None:
                    continue
                cpu_rows.append([LABEL.get(t, t), human(r['size'])] +
                                [fmt(num(r[c]), 3) for c in
                                 ('cli_user_s_gib', 'cli_sys_s_gib',
                                  'cli_softirq_s_gib', 'srv_user_s_gib',
                                  'srv_sys_s_gib', 'srv_softirq_s_gib')] +
                                [fmt(cpu_total(r), 3)])
        if cpu_rows:
            out += ['### CPU per GiB, streaming (s/GiB)', '']
            table(out, ['transport', 'size', 'client usr', 'client sys',
                        'softirq (client node)', 'server usr', 'server sys',
                        'softirq (server node)', 'total'], cpu_rows)
            if cfg.startswith('1n'):
                out += ['(one node: both softirq columns are the same '
                        'node\'s; the total counts it once)', '']

        # ratios
        refs = [('raw verbs send, polling', 'verbs-send-poll'),
                ('raw verbs send, events', 'verbs-send-event'),
                ('TCP', 'tcp'), ('SMC-R', 'smc'), ('rsockets', 'rsocket')]
        cols, head = [], ['AF_HPS / ...']
        for s in lat_sizes:
            if get('hps', 'pingpong', s, 'median_us') is not None:
                cols.append(('pingpong', s, 'median_us'))
                head.append('latency %s' % human(s))
        for s in bw_sizes:
            if get('hps', 'stream', s, 'mbps') is not None:
                cols.append(('stream', s, 'mbps'))
                head.append('bandwidth %s' % human(s))
        if cols:
            out += ['### Ratios', '',
                    'Latency: AF_HPS median / other (above 1: AF_HPS '
                    'slower). Bandwidth: AF_HPS / other (below 1: AF_HPS '
                    'slower).', '']
            rrows = []
            for name, t in refs:
                row = [name]
                for test, s, col in cols:
                    row.append(ratio(get('hps', test, s, col),
                                     get(t, test, s, col)))
                if t == 'smc' and (t, 'pingpong') not in by and \
                        (t, 'stream') not in by:
                    row = [name] + ['- (no SMC-R result)'] + \
                        ['-'] * (len(cols) - 1)
                rrows.append(row)
            table(out, head, rrows)

        notes = os.path.join(outdir, 'notes-%s.txt' % cfg)
        if os.path.exists(notes):
            nl = [ln.rstrip() for ln in open(notes) if ln.strip()]
            if nl:
                out += ['### Notes', ''] + ['- ' + n for n in nl] + ['']

        lat = {t: [(int(r['size']), num(r['median_us']))
                   for r in by.get((t, 'pingpong'), [])] for t in transports}
        bw = {t: [(int(r['size']), num(r['mbps']))
                  for r in by.get((t, 'stream'), [])] for t in transports}
        cpu = {t: [(int(r['size']), cpu_total(r))
                   for r in by.get((t, 'stream'), [])] for t in transports}
        pngs = [plot(outdir, cfg, 'lat', 'one-way latency, median',
                     'microseconds', lat),
                plot(outdir, cfg, 'bw', 'streaming bandwidth', 'MB/s', bw),
                plot(outdir, cfg, 'cpu', 'CPU per GiB streamed',
                     'CPU seconds per GiB', cpu)]
        pngs = [p for p in pngs if p]
        if pngs:
            out += ['### Plots', ''] + ['![%s](%s)' % (p, p) for p in pngs]
            out.append('')

    out += sweeps(outdir)
    with open(os.path.join(outdir, 'summary.md'), 'w') as f:
        f.write('\n'.join(out))
    print('\n'.join(out))


if __name__ == '__main__':
    main()
