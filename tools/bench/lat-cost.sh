#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lat-cost.sh [ITERS]: what a 64-byte round trip costs the machine, AF_HPS
# beside raw verbs. Inside a one-node hps-vm guest (as root), over the
# guest's RDMA device: an hps-bench pingpong of ITERS round trips (2000)
# blocking and with busy polling (net.core.busy_read 1000), then
# ib_send_lat polling and with events (-e). For each, the median and 99th
# percentile one-way latency, and per round trip the context switches
# (/proc/stat), the sleeps of siw's transmit threads (siw_tx/N, whose
# voluntary context switches: siw hands every send of a kernel QP to them)
# and the CPU time of both ends with softirq (/proc/stat):
#
#   tools/vm/hps-vm run --nodes 1 --rdma siw -- tools/bench/lat-cost.sh
#
# Documentation/performance.rst, "Busy polling against raw verbs".
set -u
top=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
hb=$top/tools/bench/hps-bench
iters=${1:-2000}
[ -n "${HPS_SELF:-}" ] || { echo "lat-cost.sh: run it inside an hps-vm guest" >&2; exit 2; }
port=$((21000 + RANDOM % 10000))
busy_was=$(cat /proc/sys/net/core/busy_read)
tmp=$(mktemp -d)
trap 'echo "$busy_was" >/proc/sys/net/core/busy_read; rm -rf "$tmp"' EXIT

# context switches, CPU ticks (not idle or iowait), siw_tx sleeps
snap() {
	local p t=0
	for p in $(pgrep '^siw_tx'); do
		t=$((t + $(awk '/^voluntary_ctxt_switches/ { print $2 }' \
			/proc/"$p"/status)))
	done
	awk -v t=$t '/^ctxt/ { c = $2 } /^cpu / { u = $2 + $3 + $4 + $7 + $8 }
		     END { print c, u, t }' /proc/stat
}

# report NAME "BEFORE" "AFTER" MEDIAN P99
report() {
	local c0 u0 s0 c1 u1 s1
	read -r c0 u0 s0 <<<"$2"
	read -r c1 u1 s1 <<<"$3"
	awk -v n="$1" -v c=$((c1 - c0)) -v u=$((u1 - u0)) -v s=$((s1 - s0)) \
	    -v it="$iters" -v hz="$(getconf CLK_TCK)" -v m="$4" -v p="$5" \
	    'BEGIN { printf "%-16s %9.2f %9.2f %9.2f %9.2f %9.0f\n", n, m, p,
		     c / it, s / it, u * 1e6 / hz / it }'
}

printf "%-16s %9s %9s %9s %9s %9s\n" "$HPS_RDMA" "median_us" "p99_us" \
	"ctxt/rt" "siw_tx/rt" "cpu_us/rt"
for busy in 0 1000; do
	echo $busy >/proc/sys/net/core/busy_read
	port=$((port + 1))
	"$hb" --server --transport hps --port $port >/dev/null 2>&1 &
	srv=$!
	hps-vm-wait-listen $port 30 >/dev/null 2>&1 || sleep 1
	# warm: the connection's window
	"$hb" --client "$HPS_SELF" --port $port --test pingpong --size 64 \
		--iters 500 >/dev/null
	a=$(snap)
	"$hb" --client "$HPS_SELF" --port $port --test pingpong --size 64 \
		--iters "$iters" >"$tmp/out"
	b=$(snap)
	kill $srv
	wait $srv 2>/dev/null
	read -r med p99 <<<"$(sed -n 's/.*median \([0-9.]*\) us, p99 \([0-9.]*\) us.*/\1 \2/p' "$tmp/out")"
	[ -n "${med:-}" ] || { echo "lat-cost.sh: hps-bench printed no latency" >&2; exit 1; }
	[ $busy = 0 ] && name="hps blocking" || name="hps busy $busy"
	report "$name" "$a" "$b" "$med" "$p99"
done
echo 0 >/proc/sys/net/core/busy_read
for how in poll event; do
	port=$((port + 1))
	args=(-R -F -d "$HPS_IBDEV" -s 64 -p $port -n "$iters")
	[ $how = event ] && args+=(-e)
	ib_send_lat "${args[@]}" >"$tmp/srv" 2>&1 &
	srv=$!
	sleep 1
	a=$(snap)
	ib_send_lat "${args[@]}" "$HPS_SELF" >"$tmp/out" 2>&1
	b=$(snap)
	wait $srv
	# bytes iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
	read -r med p99 <<<"$(awk '$1 == 64 && NF >= 9 { print $5, $8 }' "$tmp/out")"
	[ -n "${med:-}" ] || { echo "lat-cost.sh: ib_send_lat printed no latency" >&2; exit 1; }
	report "verbs $how" "$a" "$b" "$med" "$p99"
done
