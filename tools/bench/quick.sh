#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# quick.sh: a quick comparison of AF_HPS with raw verbs, TCP, rsockets and
# SMC, run on node 1 of an hps-vm guest, servers on node 2 (on node 1 itself
# with one node):
#
#   tools/vm/hps-vm run --nodes 1 --rdma rxe -- ./tools/bench/quick.sh
#
# In one run and on one RDMA device it measures the one-way latency of 64-byte
# messages (ib_send_lat -R polling and with -e; hps-bench pingpong) and the
# bandwidth of 64 KiB writes (ib_send_bw -R; hps-bench stream), prints a
# markdown table with the ratios AF_HPS/raw verbs and AF_HPS/TCP, and writes
# it to bench-results/quick-<rdma>-<nodes>n.md and .csv.
#
# Environment: HPS_BENCH_ITERS (pingpong iterations, 2000), HPS_BENCH_SECONDS
# (streaming seconds, 3), HPS_BENCH_HOST (a line describing the host, noted
# in the results), HPS_BENCH_OUT (results directory, bench-results/).
#
# Exit status: 1 when the AF_HPS measurements fail, else 0 (a failing
# comparison transport is reported in the results' notes).
set -u

top=${HPS_TOP:-$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)}
bench=$top/tools/bench/hps-bench
[ -n "${HPS_RUN:-}" ] || { echo "quick.sh: run it inside an hps-vm guest" >&2; exit 2; }
[ -x "$bench" ] || { echo "quick.sh: $bench is missing: run 'make tools'" >&2; exit 2; }

rdma=$HPS_RDMA dev=$HPS_IBDEV peer=$HPS_PEER nodes=${HPS_NODES:-1}
iters=${HPS_BENCH_ITERS:-2000}
secs=${HPS_BENCH_SECONDS:-3}
outdir=${HPS_BENCH_OUT:-$top/bench-results}
base=$outdir/quick-$rdma-${nodes}n
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

declare -A med p99 p999 mean mbps
notes=()
csv=()

note() { notes+=("$*"); echo "quick.sh: $*" >&2; }

# peer_start PORT rdma_cm|tcp CMD...: start a server on the peer, wait for it
peer_start() {
	local port=$1 kind=$2
	shift 2
	job=$(hps-vm-peer --bg "$@") || return 1
	if [ "$kind" = rdma_cm ]; then
		hps-vm-peer hps-vm-wait-listen "$port" 20 >/dev/null 2>&1 || {
			sleep 0.5
			return 1
		}
	else
		# a TCP (or AF_SMC's internal TCP) listener: ask ss on the peer
		hps-vm-peer sh -c "for i in \$(seq 200); do
			ss -Hltn 'sport = :$port' | grep -q . && exit 0; sleep 0.1
			done; exit 1" >/dev/null 2>&1 || { sleep 0.5; return 1; }
	fi
}

# peer_stop: kill the server, keep its output in $tmp/server
peer_stop() {
	hps-vm-peer --kill "$job" >/dev/null 2>&1
	hps-vm-peer --wait "$job" 10 >"$tmp/server" 2>&1
	job=
}

first_error() {
	grep -h -v -E '^\s*$' "$@" 2>/dev/null | grep -i -E 'error|fail|unable|not supported|couldn|timeout|refused|hps-bench:' |
		head -n 2 | tr '\n' ' ' | sed 's/ *$//'
}

# perftest_lat NAME PORT [EXTRA...]
perftest_lat() {
	local name=$1 port=$2
	shift 2
	local args=(-R -F -d "$dev" -s 64 -n "$iters" -p "$port" "$@")
	echo "== $name: ib_send_lat ${args[*]}" >&2
	if ! peer_start "$port" rdma_cm ib_send_lat "${args[@]}"; then
		peer_stop
		note "$name: the ib_send_lat server did not start: $(first_error "$tmp/server")"
		return
	fi
	timeout 120 ib_send_lat "${args[@]}" "$peer" >"$tmp/out" 2>&1
	local rc=$?
	peer_stop
	# #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
	local line
	line=$(awk '$1 == 64 && NF >= 9 { print $5, $8, $9, $6 }' "$tmp/out" | tail -n1)
	if [ $rc -ne 0 ] || [ -z "$line" ]; then
		note "$name: ib_send_lat failed (status $rc$([ $rc = 124 ] && echo ", timed out after 120 s")): $(first_error "$tmp/out" "$tmp/server")"
		return
	fi
	read -r med[$name] p99[$name] p999[$name] mean[$name] <<<"$line"
	csv+=("$name,pingpong,64,$iters,${med[$name]},${p99[$name]},${p999[$name]},")
	echo "$name: median ${med[$name]} us, p99 ${p99[$name]} us, p99.9 ${p999[$name]} us" >&2
}

perftest_bw() {
	local name=$1 port=$2
	local args=(-R -F -d "$dev" -s 65536 -D "$secs" --report_gbits -p "$port")
	echo "== $name: ib_send_bw ${args[*]}" >&2
	if ! peer_start "$port" rdma_cm ib_send_bw "${args[@]}"; then
		peer_stop
		note "$name: the ib_send_bw server did not start: $(first_error "$tmp/server")"
		return
	fi
	timeout 120 ib_send_bw "${args[@]}" "$peer" >"$tmp/out" 2>&1
	local rc=$?
	peer_stop
	# #bytes #iterations BW-peak[Gb/s] BW-average[Gb/s] MsgRate[Mpps]
	local gbps
	gbps=$(awk '$1 == 65536 && NF >= 5 { print $4 }' "$tmp/out" | tail -n1)
	if [ $rc -ne 0 ] || [ -z "$gbps" ]; then
		note "$name: ib_send_bw failed (status $rc): $(first_error "$tmp/out" "$tmp/server")"
		return
	fi
	mbps[$name]=$(awk -v g="$gbps" 'BEGIN { printf "%.1f", g * 125 }')
	csv+=("$name,stream,65536,,,,,${mbps[$name]}")
	echo "$name: ${mbps[$name]} MB/s" >&2
}

# hpsbench NAME TRANSPORT PORT rdma_cm|tcp
hpsbench() {
	local name=$1 t=$2 port=$3 kind=$4 line
	echo "== $name: hps-bench --transport $t" >&2
	if ! peer_start "$port" "$kind" "$bench" --server --transport "$t" --port "$port"; then
		peer_stop
		note "$name: the hps-bench server did not start: $(first_error "$tmp/server")"
		return
	fi
	timeout 120 "$bench" --client "$peer" --transport "$t" --port "$port" \
		--test pingpong --size 64 --iters "$iters" --csv >"$tmp/pp" 2>&1
	local rc=$?
	line=$(grep -E "^$t,pingpong," "$tmp/pp" | tail -n1 | cut -d, -f1-8)
	if [ $rc -eq 0 ] && [ -n "$line" ]; then
		IFS=, read -r _ _ _ _ med[$name] p99[$name] p999[$name] _ <<<"$line"
		mean[$name]=$(sed -n 's/.*mean \([0-9.]*\) us.*/\1/p' "$tmp/pp")
		csv+=("${line/#$t,/$name,}")
		grep -v ",pingpong," "$tmp/pp" >&2
	else
		sleep 1
		peer_stop
		note "$name: pingpong failed (status $rc): $(first_error "$tmp/pp" "$tmp/server")"
		return
	fi
	timeout 120 "$bench" --client "$peer" --transport "$t" --port "$port" \
		--test stream --size 65536 --seconds "$secs" --csv >"$tmp/st" 2>&1
	rc=$?
	peer_stop
	line=$(grep -E "^$t,stream," "$tmp/st" | tail -n1 | cut -d, -f1-8)
	if [ $rc -eq 0 ] && [ -n "$line" ]; then
		mbps[$name]=${line##*,}
		csv+=("${line/#$t,/$name,}")
		grep -v ",stream," "$tmp/st" >&2
	else
		note "$name: stream failed (status $rc): $(first_error "$tmp/st" "$tmp/server")"
	fi
}

t_start=$(date +%s)
echo "quick.sh: $rdma, $nodes node(s), device $dev, peer $peer; $iters pingpong iterations, ${secs}s streams" >&2

perftest_lat verbs-poll 18515
perftest_lat verbs-event 18516 -e
perftest_bw verbs-poll 18517
hpsbench hps hps 20001 rdma_cm
hpsbench tcp tcp 20002 tcp
hpsbench rsocket rsocket 20003 rdma_cm
hpsbench smc smc 20004 tcp

t_total=$(( $(date +%s) - t_start ))

# ratio A B: A/B with two decimals, or "-"
ratio() {
	[ -n "${1:-}" ] && [ -n "${2:-}" ] || { echo -; return; }
	awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}
v() { [ -n "${1:-}" ] && echo "$1" || echo -; }
gbit() { [ -n "${1:-}" ] && awk -v m="$1" 'BEGIN { printf "%.3f", m * 8 / 1000 }' || echo -; }

label() {
	case $1 in
	verbs-poll) echo "raw verbs, polling (ib_send_lat/ib_send_bw -R)" ;;
	verbs-event) echo "raw verbs, events (ib_send_lat -R -e)" ;;
	hps) echo "AF_HPS (hps-bench)" ;;
	tcp) echo "TCP, TCP_NODELAY (hps-bench)" ;;
	rsocket) echo "rsockets (hps-bench)" ;;
	smc) echo "AF_SMC (hps-bench)" ;;
	esac
}

host=${HPS_BENCH_HOST:-unknown host}
qemu=$(qemu-system-x86_64 --version 2>/dev/null | head -n1)
pkgs=$(dpkg-query -W -f '${Package} ${Version}, ' rdma-core perftest 2>/dev/null | sed 's/, $//')
if [ "$nodes" = 1 ]; then
	topo="one node: RDMA loopback on $dev over dummy interface $HPS_IFNAME; TCP over $peer on the same interface (local delivery)"
else
	topo="two nodes: $dev over virtio-net joined by QEMU's UDP socket backend; TCP over the same link"
fi

mkdir -p "$outdir"
{
	echo "# quick benchmark: $rdma, $nodes node(s)"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- platform: QEMU TCG guest(s) (2 vCPUs, no KVM), kernel $(uname -r), $rdma ($dev); $qemu"
	echo "- host: $host"
	echo "- topology: $topo"
	echo "- software: $pkgs"
	echo "- method: 64 B one-way latency (RTT/2; $iters iterations after warm-up), 64 KiB streaming for ${secs} s; run time ${t_total} s"
	echo "- absolute numbers mean little under TCG with software RDMA; compare the ratios within this run"
	echo
	echo "| transport | 64 B median (us) | p99 (us) | p99.9 (us) | mean (us) | 64 KiB MB/s | Gbit/s |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	for n in verbs-poll verbs-event hps tcp rsocket smc; do
		echo "| $(label $n) | $(v "${med[$n]:-}") | $(v "${p99[$n]:-}") | $(v "${p999[$n]:-}") | $(v "${mean[$n]:-}") | $(v "${mbps[$n]:-}") | $(gbit "${mbps[$n]:-}") |"
	done
	echo
	echo "Ratios (latency: AF_HPS median / other median, above 1 = AF_HPS slower;"
	echo "bandwidth: AF_HPS MB/s / other MB/s, below 1 = AF_HPS slower):"
	echo
	echo "| ratio | latency | bandwidth |"
	echo "|---|---:|---:|"
	echo "| AF_HPS / raw verbs (polling) | $(ratio "${med[hps]:-}" "${med[verbs-poll]:-}") | $(ratio "${mbps[hps]:-}" "${mbps[verbs-poll]:-}") |"
	echo "| AF_HPS / raw verbs (events) | $(ratio "${med[hps]:-}" "${med[verbs-event]:-}") | - |"
	echo "| AF_HPS / TCP | $(ratio "${med[hps]:-}" "${med[tcp]:-}") | $(ratio "${mbps[hps]:-}" "${mbps[tcp]:-}") |"
	echo "| AF_HPS / rsockets | $(ratio "${med[hps]:-}" "${med[rsocket]:-}") | $(ratio "${mbps[hps]:-}" "${mbps[rsocket]:-}") |"
	echo "| AF_HPS / AF_SMC | $(ratio "${med[hps]:-}" "${med[smc]:-}") | $(ratio "${mbps[hps]:-}" "${mbps[smc]:-}") |"
	if [ ${#notes[@]} -gt 0 ]; then
		echo
		echo "Notes:"
		echo
		for n in "${notes[@]}"; do
			echo "- $n"
		done
	fi
} >"$base.md"
{
	echo "# quick benchmark $rdma ${nodes}n, $(date -u '+%Y-%m-%d %H:%M UTC'), QEMU TCG, kernel $(uname -r), host: $host"
	echo "transport,test,size,iters,median_us,p99_us,p999_us,mbps"
	printf '%s\n' "${csv[@]}"
} >"$base.csv"

cat "$base.md"
echo "quick.sh: wrote $base.md and $base.csv" >&2
[ -n "${med[hps]:-}" ] && [ -n "${mbps[hps]:-}" ]
