#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lat-breakdown.sh [ITERS [BUSY_US]]: where a one-way 64-byte AF_HPS
# message's time goes. Inside a one-node hps-vm guest (as root), it traces
# an hps-bench pingpong of ITERS round trips (2000), with busy polling if
# BUSY_US is given (net.core.busy_read for the run), over RDMA loopback
# with the syscalls' sendto entry and recvfrom return, sched_wakeup and
# af_hps's hps_msg_send and hps_msg_recv, then prints the median and 99th
# percentile of each stage (lat-breakdown.py): send, wire, wake, recv.
# Tracing slows every stage; compare the stages with each other. With
# HPS_LB_TRACE=FILE set, the raw trace is also kept in FILE.
#
#   tools/vm/hps-vm run --nodes 1 --rdma rxe -- tools/bench/lat-breakdown.sh
#
# Documentation/performance.rst, "Blocking path".
set -u
top=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
hb=$top/tools/bench/hps-bench
t=hps iters=${1:-2000} busy=${2:-0}
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs none $T || exit 1
port=$((21000 + RANDOM % 10000))
busy_was=$(cat /proc/sys/net/core/busy_read)
echo "$busy" > /proc/sys/net/core/busy_read || exit 1
$hb --server --transport "$t" --port $port >/dev/null 2>&1 &
srv=$!
sleep 1
echo 0 > $T/tracing_on
echo > $T/trace
echo 8192 > $T/buffer_size_kb
for e in syscalls/sys_enter_sendto syscalls/sys_exit_recvfrom \
	 sched/sched_wakeup af_hps/hps_msg_send af_hps/hps_msg_recv; do
	echo 1 > $T/events/$e/enable
done
echo 1 > $T/tracing_on
"$hb" --client "$HPS_SELF" --transport "$t" --port $port --test pingpong \
	--size 64 --iters "$iters" | grep -o 'median [0-9.]* us, p99 [0-9.]* us'
echo 0 > $T/tracing_on
kill $srv; wait $srv 2>/dev/null
echo "$busy_was" > /proc/sys/net/core/busy_read
trace=$(mktemp)
cat $T/trace > "$trace"
echo 0 > $T/events/enable
echo > $T/trace
[ -n "${HPS_LB_TRACE:-}" ] && cp "$trace" "$HPS_LB_TRACE"
python3 "$top/tools/bench/lat-breakdown.py" "$trace"
rc=$?
rm -f "$trace"
exit $rc
