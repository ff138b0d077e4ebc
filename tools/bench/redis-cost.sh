#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# redis-cost.sh [REQUESTS]: what one redis request costs the machine over
# TCP and over AF_HPS. Inside a one-node hps-vm guest: redis-server and
# redis-benchmark -c 50 for SET and GET, REQUESTS (20000) each, plain
# (TCP) and then both under hps_run (AF_HPS); /proc/stat, /proc/softirqs,
# /proc/net/hps_stat and the RDMA device's hw_counters before and after,
# printed per request (CPU in us by kind, context switches, interrupts,
# softirqs by kind, AF_HPS counters, packets):
#
#   tools/vm/hps-vm run --nodes 1 --rdma rxe -- tools/bench/redis-cost.sh
#
# Documentation/performance.rst, "redis with 50 clients".
set -u
top=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
addr=${HPS_SELF:-198.18.0.1}
n=${1:-20000}
for c in redis-server redis-benchmark redis-cli; do
	command -v $c >/dev/null || { echo "redis-cost: no $c" >&2; exit 1; }
done

snap() {
	awk '/^cpu /	{ print "cpu_user", $2 + $3; print "cpu_sys", $4
			  print "cpu_idle", $5; print "cpu_softirq", $8 }
	     /^ctxt/	{ print "ctxt", $2 }
	     /^intr/	{ print "intr", $2 }' /proc/stat
	awk 'NR > 1 { s = 0; for (i = 2; i <= NF; i++) s += $i
		      sub(":", "", $1); print "softirq_" $1, s }' /proc/softirqs
	cat /proc/net/hps_stat 2>/dev/null
	for f in /sys/class/infiniband/*/ports/1/hw_counters/*; do
		[ -r "$f" ] && echo "dev_${f##*/} $(cat "$f")"
	done
}

for t in tcp hps; do
	run=()
	[ $t = hps ] && run=("$top/tools/preload/hps_run")
	port=$((7400 + RANDOM % 1000))
	"${run[@]}" redis-server --port $port --bind "$addr" --save "" \
		--appendonly no --protected-mode no --daemonize no \
		--logfile "" >/dev/null 2>&1 &
	server=$!
	# up once it answers (over its own transport), 30 s at most
	for i in $(seq 300); do
		"${run[@]}" redis-cli -h "$addr" -p $port ping 2>/dev/null |
			grep -q PONG && break
		sleep 0.1
	done
	# warm: the connections' windows, the page cache
	"${run[@]}" redis-benchmark -h "$addr" -p $port -c 50 -n 2000 -t set \
		-q >/dev/null 2>&1
	snap | sort >/tmp/redis-cost.a
	s=$(date +%s%N)
	"${run[@]}" redis-benchmark -h "$addr" -p $port -c 50 -n "$n" \
		-t set,get -q 2>&1 | tr '\r' '\n' | grep 'requests per second'
	e=$(date +%s%N)
	snap | sort >/tmp/redis-cost.b
	kill $server
	wait $server 2>/dev/null
	echo "== $t: $(((e - s) / 1000000)) ms, per request (of $((2 * n))):"
	join /tmp/redis-cost.a /tmp/redis-cost.b |
	awk -v n=$((2 * n)) -v hz="$(getconf CLK_TCK)" '
		{ d = $3 - $2; if (!d) next
		  if ($1 ~ /^cpu_/)
			printf "  %-28s %10.1f us\n", $1, d * 1e6 / hz / n
		  else
			printf "  %-28s %10.3f\n", $1, d / n }'
done
