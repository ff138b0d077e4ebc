#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ab-modules.sh [-r ROUNDS] [-n REQUESTS] A.ko B.ko ...: compare builds of
# af_hps.ko in one guest, where the host's load, which moves a result by
# half between guests, weighs on each alike. Inside a one-node hps-vm
# guest started with --no-module, for each round, each module in turn:
# insmod it; redis-server and redis-benchmark -c 50 -n REQUESTS (20000)
# for ping, set, get, lpush, spop and hset through hps_run; a 64-byte
# hps-bench pingpong of 2000 round trips; 3 s of connrate; the fences and
# unsignaled sends of the run (/proc/net/hps_stat); rmmod. One line per
# module and round. The modules are built as the tree's (make modules
# KDIR=..., for the guest's kernel), from a worktree each:
#
#   tools/vm/hps-vm run --nodes 1 --rdma rxe --no-module --timeout 900 -- \
#	tools/bench/ab-modules.sh build/ab/before.ko build/ab/after.ko
#
# Documentation/performance.rst, "Fences and Nagle's rule".
set -u
top=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
hb=$top/tools/bench/hps-bench
run=$top/tools/preload/hps_run
rounds=2 n=20000
while getopts r:n: o; do
	case $o in
	r) rounds=$OPTARG ;;
	n) n=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: ab-modules.sh [-r ROUNDS] [-n REQUESTS] A.ko B.ko ..." >&2; exit 2; }
[ -n "${HPS_SELF:-}" ] || { echo "ab-modules.sh: run it inside an hps-vm guest" >&2; exit 2; }
modprobe -a rdma_cm ib_cm ib_uverbs 2>/dev/null
stat() { awk -v k="$1" '$1 == k { print $2 }' /proc/net/hps_stat; }
port=7460 rc=0
for r in $(seq "$rounds"); do
	for m in "$@"; do
		rmmod af_hps 2>/dev/null
		if ! insmod "$m"; then
			echo "ab-modules.sh: insmod $m failed" >&2
			rc=1
			continue
		fi
		port=$((port + 1))
		$run redis-server --port $port --bind "$HPS_SELF" --save "" \
			--appendonly no --protected-mode no --daemonize no \
			--logfile "" >/dev/null 2>&1 &
		srv=$!
		hps-vm-wait-listen "$port" 30 >/dev/null 2>&1
		f0=$(stat tx_fences) u0=$(stat tx_unsignaled)
		res=$($run redis-benchmark -h "$HPS_SELF" -p $port -c 50 -n "$n" \
			-t ping,set,get,lpush,spop,hset --csv |
			grep -v '^"test"' | tr -d '"' |
			awk -F, '{ printf "%s %s, ", $1, $2; s += $2 } END { printf "sum %.0f", s }')
		f1=$(stat tx_fences) u1=$(stat tx_unsignaled)
		kill $srv
		wait $srv 2>/dev/null
		p=$((port + 100))
		$hb --server --transport hps --port $p >/dev/null 2>&1 &
		srv=$!
		hps-vm-wait-listen "$p" 30 >/dev/null 2>&1
		pp=$($hb --client "$HPS_SELF" --transport hps --port $p --test pingpong \
			--size 64 --iters 2000 | grep -o 'median [0-9.]* us')
		cr=$($hb --client "$HPS_SELF" --transport hps --port $p --test connrate \
			--size 64 --seconds 3 | grep -o '[0-9.]* connections/s')
		kill $srv
		wait $srv 2>/dev/null
		echo "round $r $(basename "$m" .ko): redis requests/s: $res | fences $((f1 - f0)), unsignaled $((u1 - u0)) | pingpong $pp | connrate $cr"
	done
done
exit $rc	# (the last module stays loaded)
