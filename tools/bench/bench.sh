#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh: the benchmark suite (make bench, make bench-full). Boots the
# test guests once per configuration, runs tools/bench/bench-guest.sh in
# them, then writes the summary and plots on the host.
#
#   bench.sh [--quick | --full | --sweep] [--configs "1:rxe 2:siw"]
#            [--out DIR] [--dry-run]
#
# quick (default): 1 node rxe and 2 nodes siw; perftest send latency and
#   bandwidth, rdma-core's cmtime (raw rdma_cm setup, 100 connections),
#   hps-bench over AF_HPS and TCP (two latency and two bandwidth
#   sizes, bidir, streams, fanin, fanout, connrate, conns with 200
#   connections held open, 2 of them busy), rsockets and AF_SMC at 64 B and
#   64 KiB, redis-benchmark (50 clients) over AF_HPS (hps_run) and TCP;
#   1 s per bandwidth point. A few minutes.
# full: all four configurations (1 and 2 nodes, rxe and siw); perftest
#   ib_send_lat, ib_write_lat, ib_send_bw, ib_write_bw, ib_read_bw, each
#   polling and with -e, at several sizes; cmtime as in quick; every
#   hps-bench test over AF_HPS, TCP, rsockets and AF_SMC (conns, with 1000 connections, over AF_HPS and
#   TCP only), latency 1 B..1 MiB and bandwidth 64 B..16 MiB in powers of
#   4, redis-benchmark as in quick; 3 s per bandwidth point; then the
#   sweeps.
# sweep: only the parameter sweeps of AF_HPS (credits, buf_size, ack_thresh,
#   inline_max, small-write combining, zcopy_thresh; bench-guest.sh's
#   $sweeps), 1 node rxe and 2 nodes siw by default, 2 s per point.
#
# Results: bench-results/<UTC date>-<mode>/ (or --out): raw.csv (all
# measurements), sweep.csv (the sweep points), summary.md (tables, ratio tables AF_HPS / raw verbs, TCP,
# SMC-R, rsockets, notes), lat-/bw-/cpu-CONFIG.png (gnuplot), meta.txt, and
# each configuration's guest output in log-CONFIG.txt.
#
# The guests boot the kernel make staged last (make bench KERNEL=6.1|6.12|
# 6.12-rt); the results directory and meta.txt name it.
#
# Environment: HPS_BENCH_SMCR=1 (try SMC-R on two nodes over rxe too,
# which hung both kernels on 6.1; the default on 6.12, where it works), HPS_BENCH_SECONDS (per bandwidth point), HPS_BENCH_ITERS
# (pingpong iterations for small messages), HPS_BENCH_HOST (a line about the
# host for meta.txt), HPS_BENCH_FILTER (run only the plan lines matching
# this extended regular expression; see bench-guest.sh --plan),
# HPS_BENCH_CONNS (the connections of conns).
set -u

top=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
guest=$top/tools/bench/bench-guest.sh
vm=$top/tools/vm/hps-vm
mode=quick configs= out= dry=0
# Two vCPUs per guest on two nodes too, as every result in
# performance.rst was measured (make check gives them one each: hps-vm)
export HPS_VM_SMP=${HPS_VM_SMP:-2}

while [ $# -gt 0 ]; do
	case $1 in
	--quick) mode=quick; shift ;;
	--full) mode=full; shift ;;
	--sweep) mode=sweep; shift ;;
	--configs) configs=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--dry-run) dry=1; shift ;;
	-h|--help) sed -n '4,30s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ -z "$configs" ]; then
	[ "$mode" = full ] && configs="1:rxe 2:rxe 1:siw 2:siw" || configs="1:rxe 2:siw"
fi
series=$(cat "$top/build/.vm-series" 2>/dev/null || echo 6.1)
kver=$(readlink "$top/build/kernel/current" 2>/dev/null)
case $series in 6.12*) export HPS_BENCH_SMCR=${HPS_BENCH_SMCR:-1} ;; esac
out=${out:-$top/bench-results/$(date -u +%Y%m%d-%H%M)-$mode-$series}

# The plan, and an estimate from rough per-item costs measured on a quiet
# 2-core host under TCG (boot 10 s or 30 s; a perftest point 6 s; an
# hps-bench point its duration plus 3 s, latency points more at big sizes).
case $mode in
quick) secs=1 ;;
sweep) secs=2 ;;
*) secs=3 ;;
esac
secs=${HPS_BENCH_SECONDS:-$secs}
total=0 est=0
declare -A count limit
for c in $configs; do
	n=${c%%:*} r=${c#*:}
	k=0 est0=$est
	while read -r kind f1 f2 f3 f4; do
		k=$((k + 1))
		case $kind in
		perf) est=$((est + 6 + (f2 >= 262144 ? 10 : 0))); continue ;;
		cm) est=$((est + 8)); continue ;;
		app) est=$((est + ($([ "$mode" = quick ] && echo 40 || echo 200)))); continue ;;
		hb) t=$f2 sz=$f3 nc=${f4:-0} ;;
		sw)	# plus a server restart per value
			t=$f3 sz=$f4
			[ "$f1=$f2" != "${last:-}" ] && est=$((est + 3)) last="$f1=$f2"
			;;
		esac
		case $t in
		pingpong|fanin) est=$((est + 4 + (sz >= 65536 ? 10 : 0))) ;;
		conns) est=$((est + 10 + nc / 25)) ;;	# ~50 connects/s
		*) est=$((est + secs + 3)) ;;
		esac
	done < <("$guest" --plan "$mode" "$n" "$r")
	count[$c]=$k
	total=$((total + k))
	est=$((est + (n == 2 ? 30 : 10)))
	limit[$c]=$(( (est - est0) * 3 + 600 ))
done
echo "bench: $mode mode, configurations: $configs; $total measurements;" \
	"estimated $((est / 60)) min $((est % 60)) s on an idle host (more on a busy one)"
echo "bench: results in $out"
[ "$dry" = 1 ] && exit 0

for f in "$top/af_hps.ko" "$top/tools/bench/hps-bench" "$top/tools/bench/smc-setup"; do
	[ -e "$f" ] || { echo "bench.sh: $f missing: run 'make vm-modules tools'" >&2; exit 2; }
done
mkdir -p "$out" || exit 1
cols=$("$top/tools/bench/hps-bench" --csv-columns)
echo "config,$cols" >"$out/raw.csv"
[ "$mode" = quick ] || echo "config,knob,value,default,$cols" >"$out/sweep.csv"
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), mode $mode ($secs s per bandwidth point), configurations $configs"
	echo "tree: $(git -C "$top" describe --always --dirty 2>/dev/null)"
	echo "host: ${HPS_BENCH_HOST:-$(nproc) cores, $(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release)}; load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "platform: QEMU TCG guests (2 vCPUs each, no KVM), $(qemu-system-x86_64 --version 2>/dev/null | head -n1)"
	echo "kernel: Linux $series ($kver)"
	echo "software: $(dpkg-query -W -f '${Package} ${Version}, ' rdma-core perftest 2>/dev/null | sed 's/, $//')"
} >"$out/meta.txt"

start=$(date +%s) first=1 failed=0
for c in $configs; do
	n=${c%%:*} r=${c#*:}
	cfg=${n}n-$r
	"$vm" run --nodes "$n" --rdma "$r" --timeout "${limit[$c]}" -- \
		"$guest" "$mode" "$out" "$first" "$total" 2>&1 |
		tee "$out/log-$cfg.txt" | grep --line-buffered -E '^\[[0-9]+/[0-9]+\]|^bench:|^hps-vm:'
	rc=${PIPESTATUS[0]}
	case $rc in
	0) ;;
	125)
		# hps-vm's report list also matches a user-space crash's "traps:" line
		rep=$(grep -A1 'kernel report in its log' "$out/log-$cfg.txt" | sed -n '2s/^ *//p')
		echo "hps-vm status 125, the guest kernel log matched its list of reports: ${rep:-see log-$cfg.txt}" >>"$out/notes-$cfg.txt"
		failed=1 ;;
	124) echo "the $cfg run hit its time limit (${limit[$c]} s): later measurements are missing, or the guests did not power off" >>"$out/notes-$cfg.txt"; failed=1 ;;
	*) echo "the $cfg run ended with status $rc" >>"$out/notes-$cfg.txt"; failed=1 ;;
	esac
	first=$((first + ${count[$c]}))
done
echo "bench: guests done in $(( $(date +%s) - start )) s"
python3 "$top/tools/bench/bench-report.py" "$out"
echo "bench: wrote $out/summary.md"
exit $failed
