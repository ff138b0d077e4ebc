#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ab-connrate.sh [-r ROUNDS] [-s SECONDS] A.ko B.ko ...: compare the
# AF_HPS-to-AF_HPS connection rate of builds of af_hps.ko in one hps-vm
# run, on one node or two, where the host's load, which moves a single
# bench result by 15 % or more, weighs on each alike. Inside a run started
# with --no-module, for each round, each module in turn (the order reversed
# every other round): insmod it on both nodes; SECONDS (5) of hps-bench
# connrate (connect, 64 bytes each way, close) to an AF_HPS server on the
# peer, then as long of TCP connrate between the same addresses; rmmod.
# One line per module and round with both rates, their ratio, a
# connection's median time, the port queries that gave up and the
# connections that took a remembered answer (portq_cached), then per
# module the medians of the rounds, against the first module's. The
# modules are built as the tree's, from a worktree each (make modules
# KDIR=..., for the guest's kernel):
#
#   tools/vm/hps-vm run --nodes 2 --rdma siw --no-module --timeout 1800 -- \
#	tools/bench/ab-connrate.sh -r 6 build/ab/before.ko build/ab/after.ko
#
# Documentation/performance.rst, "TCP fallback over iWARP: the port query".
set -u
top=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
hb=$top/tools/bench/hps-bench
rounds=4 secs=5
while getopts r:s: o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) secs=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: ab-connrate.sh [-r ROUNDS] [-s SECONDS] A.ko B.ko ..." >&2; exit 2; }
[ -n "${HPS_SELF:-}" ] || { echo "ab-connrate.sh: run it inside an hps-vm guest" >&2; exit 2; }
mods=()
for m in "$@"; do
	mods+=("$(readlink -f "$m")")
done

# on both nodes (hps-vm-peer runs on node 1 itself when there is one)
both() {
	"$@" || return 1
	[ "${HPS_NODES:-1}" = 2 ] || return 0
	hps-vm-peer "$@"
}
load() {
	both sh -c "rmmod af_hps 2>/dev/null; modprobe -a rdma_cm ib_cm ib_uverbs 2>/dev/null; insmod '$1'"
}
# a counter of /proc/net/hps_stat, empty when the module has none
stat() { awk -v k="$1" '$1 == k { print $2 }' /proc/net/hps_stat; }
count() { [ -n "$1" ] && [ -n "$2" ] && echo $(($2 - $1)) || echo none; }
# rate TRANSPORT PORT: "connections/s median-us" of SECONDS of connrate
# to the peer
rate() {
	local id out r m
	id=$(hps-vm-peer --bg "$hb" --server --transport "$1" --bind "$HPS_PEER" --port "$2")
	hps-vm-peer hps-vm-wait-listen "$2" 30 >/dev/null 2>&1
	out=$("$hb" --client "$HPS_PEER" --transport "$1" --port "$2" --test connrate \
		--size 64 --seconds "$secs")
	r=$(echo "$out" | grep -o '[0-9.]* connections/s' | cut -d' ' -f1)
	m=$(echo "$out" | grep -o 'median [0-9.]* us' | cut -d' ' -f2)
	hps-vm-peer --kill "$id" >/dev/null 2>&1
	echo "${r:-0} ${m:-0}"
}

res=$(mktemp)
port=7600 rc=0
for r in $(seq "$rounds"); do
	order=("${mods[@]}")
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((i = ${#mods[@]} - 1; i >= 0; i--)); do
			order+=("${mods[i]}")
		done
	fi
	for m in "${order[@]}"; do
		if ! load "$m"; then
			echo "ab-connrate.sh: insmod $m failed" >&2
			rc=1
			continue
		fi
		port=$((port + 2))
		t0=$(stat portq_timeouts) c0=$(stat portq_cached)
		read -r h hm <<<"$(rate hps $port)"
		t1=$(stat portq_timeouts) c1=$(stat portq_cached)
		read -r t tm <<<"$(rate tcp $((port + 1)))"
		ratio=$(awk -v h="$h" -v t="$t" 'BEGIN { printf "%.3f", (t > 0 ? h / t : 0) }')
		printf '%s round %s %s: hps %s/s (median %s us), tcp %s/s (%s us), hps/tcp %s | port query timeouts %s, answers remembered %s\n' \
			"$(date +%T)" "$r" "$(basename "$m" .ko)" "$h" "$hm" "$t" "$tm" \
			"$ratio" "$(count "$t0" "$t1")" "$(count "$c0" "$c1")"
		echo "$(basename "$m" .ko) $h $ratio $hm $tm" >>"$res"
	done
done
both rmmod af_hps 2>/dev/null
python3 - "$res" "$(basename "${mods[0]}" .ko)" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m, h, q, hm, tm = line.split()
    rows.setdefault(m, []).append((float(h), float(q), float(hm), float(tm)))
base = sys.argv[2]


def med(m, i):
    return statistics.median(r[i] for r in rows.get(m, [(0,) * 4]))


def rel(x, i):
    return x / med(base, i) if med(base, i) else 0


for m in rows:
    h, q, hm = med(m, 0), med(m, 1), med(m, 2)
    print(f"{m}: {len(rows[m])} rounds, median of the rounds: hps {h:.1f}/s"
          f" ({rel(h, 0):.3f}x {base}), hps/tcp {q:.3f} ({rel(q, 1):.3f}x),"
          f" a connection's median {hm:.0f} us ({rel(hm, 2):.3f}x)")
EOF
rm -f "$res"
exit $rc
