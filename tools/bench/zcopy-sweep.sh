#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# zcopy-sweep.sh OUTDIR [SECONDS]: the zero-copy sweep, inside an hps-vm
# guest (node 1; the receivers on node 2, or node 1 itself with one node).
#
# For each size from 64 KiB to 16 MiB: an AF_HPS stream (hps-bench, one
# connection, sends and receives of that size; the sender cycles through
# 16 buffers, the receiver reads into one) with zero copy off
# (net.hps.zcopy_thresh=0 on the sending node; the receiving server is
# started with it at 64 KiB, so that it can read zero copy), on without the
# registration cache (threshold 64 KiB, net.hps.zcopy_cache_bytes=0 on
# both nodes) and on with it (the default 64 MiB cache), then ib_read_bw
# and ib_write_bw (perftest over rdma_cm) of the same size on the same
# device. Appends to OUTDIR/zcopy.csv:
#
#   config,what,size,mbps,cli_user_s_gib,cli_sys_s_gib,cli_softirq_s_gib,
#   srv_user_s_gib,srv_sys_s_gib,srv_softirq_s_gib,zcopy_tx,zcopy_rx_reads,
#   cache_hits,cache_misses
#
# (CPU columns empty for perftest; zcopy_* are the counters' increase on
# node 1 during the run: with two nodes the reads happen on node 2;
# cache_* are the increase on both nodes, sender and receiver together).
# Progress goes to stderr, one line per run.
set -u
out=${1:?usage: zcopy-sweep.sh OUTDIR [SECONDS]}
secs=${2:-3}
top=${HPS_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
bench=$top/tools/bench/hps-bench
cfg=${HPS_NODES}n-$HPS_RDMA
peer=$HPS_PEER
sizes="65536 262144 1048576 4194304 16777216"
csv=$out/zcopy.csv
port=21000 pport=21100
rc=0

mkdir -p "$out"
[ -s "$csv" ] || echo "config,what,size,mbps,cli_user_s_gib,cli_sys_s_gib,cli_softirq_s_gib,srv_user_s_gib,srv_sys_s_gib,srv_softirq_s_gib,zcopy_tx,zcopy_rx_reads,cache_hits,cache_misses" >"$csv"

stat() { awk -v k="$1" '$1 == k { print $2 }' /proc/net/hps_stat; }
# a counter summed over both nodes (node 1 alone with one node)
stat2() {
	local a b=0
	a=$(stat "$1")
	[ "$HPS_NODES" = 1 ] ||
		b=$(hps-vm-peer awk -v k="$1" '$1 == k { print $2 }' /proc/net/hps_stat)
	echo $((a + ${b:-0}))
}
# a sysctl on both nodes
both() {
	sysctl -qw "$1"
	[ "$HPS_NODES" = 1 ] || hps-vm-peer sysctl -qw "$1"
}
cache0=$(sysctl -n net.hps.zcopy_cache_bytes)
# The receiving side gets zero copy's resources only if its threshold is
# not 0 when the connection is set up: the server listens with it on.
both net.hps.zcopy_thresh=65536

job=$(hps-vm-peer --bg "$bench" --server --port $port) || exit 1
hps-vm-peer hps-vm-wait-listen $port 30 >/dev/null 2>&1 ||
	{ echo "zcopy-sweep: server did not start" >&2; exit 1; }

n=0 total=$(($(wc -w <<<"$sizes") * 5))
for s in $sizes; do
	for zc in off nocache on; do
		n=$((n + 1))
		echo "[$n/$total] $cfg: AF_HPS stream $((s >> 10)) KiB, zero copy $zc" >&2
		sysctl -qw net.hps.zcopy_thresh=$([ $zc = off ] && echo 0 || echo 65536)
		both net.hps.zcopy_cache_bytes=$([ $zc = nocache ] && echo 0 || echo "$cache0")
		t0=$(stat zcopy_tx) r0=$(stat zcopy_rx_reads)
		h0=$(stat2 zcopy_cache_hits) m0=$(stat2 zcopy_cache_misses)
		line=$(timeout 120 "$bench" --client "$peer" --port $port \
			--test stream --size "$s" --seconds "$secs" --csv | tail -n1)
		if [ -z "$line" ]; then
			echo "zcopy-sweep: hps-bench failed ($s, $zc)" >&2
			rc=1
			continue
		fi
		# transport,test,size,iters,median,p99,p999,mbps,streams,rate,
		# bytes,seconds,cu,cs,cq,su,ss,sq,mean
		IFS=, read -r _ _ _ _ _ _ _ mbps _ _ _ _ cu cs cq su ss sq _ <<<"$line"
		echo "$cfg,hps-zcopy-$zc,$s,$mbps,$cu,$cs,$cq,$su,$ss,$sq,$(($(stat zcopy_tx) - t0)),$(($(stat zcopy_rx_reads) - r0)),$(($(stat2 zcopy_cache_hits) - h0)),$(($(stat2 zcopy_cache_misses) - m0))" >>"$csv"
	done
	for prog in ib_read_bw ib_write_bw; do
		n=$((n + 1))
		pport=$((pport + 1))
		echo "[$n/$total] $cfg: $prog $((s >> 10)) KiB" >&2
		args=(-R -F -d "$HPS_IBDEV" -s "$s" -p $pport -D "$secs" --report_gbits)
		pj=$(hps-vm-peer --bg "$prog" "${args[@]}")
		hps-vm-peer hps-vm-wait-listen $pport 30 >/dev/null 2>&1
		g=$(timeout 120 "$prog" "${args[@]}" "$peer" 2>/dev/null |
			awk -v s="$s" '$1 == s && NF >= 5 { print $4 }' | tail -n1)
		hps-vm-peer --kill "$pj" >/dev/null 2>&1
		hps-vm-peer --wait "$pj" 10 >/dev/null 2>&1
		if [ -z "$g" ]; then
			echo "zcopy-sweep: $prog failed ($s)" >&2
			continue
		fi
		w=${prog#ib_}
		echo "$cfg,verbs-${w%_bw},$s,$(awk -v g="$g" 'BEGIN { printf "%.1f", g * 125 }'),,,,,,,,,," >>"$csv"
	done
done
both net.hps.zcopy_thresh=0
both net.hps.zcopy_cache_bytes="$cache0"
hps-vm-peer --kill "$job" >/dev/null 2>&1
exit $rc
