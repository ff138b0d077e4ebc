#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The link goes down and comes back. NOT in make check yet: it fails on two
# nodes (Documentation/reliability.rst, "Link down"). Run it by hand:
#   ./tools/vm/hps-vm run --nodes 2 [--rdma siw] -- ./selftests/manual_link_flap.sh
# A 64 MiB echo transfer runs between the nodes (on one node, over the
# RDMA loopback) while node 1's interface is set down for 4 s, well inside
# the transport's retry time (rxe: about 15 s; siw: TCP's retransmissions):
# it should pause and then finish with every byte intact, and a new
# connection should work once the link is back.
#
# Seen on 2026-11-22: on one node over rxe it passes (33 MB/s, intact).
# On two nodes the transfer is reset ("Connection reset by peer") over
# both drivers. siw drops every connection of a device whose interface is
# going down (siw_device_goes_down() on NETDEV_GOING_DOWN), so over siw an
# administrative link down is a reset by design; a new connection then
# works. Over rxe the reset's origin is not found yet, and the next
# connection attempt timed out too.
#
# HPS_FLAP=loss makes the outage a silent one instead: the interface stays
# up with its routes, and netem drops every frame it sends for the 4 s.
set -u
cd "$(dirname "$0")/.." || exit 1
mode=${HPS_FLAP:-down}
xfer=./tools/hps_xfer
pass=0 fail=0
port=$((20000 + RANDOM % 20000))

echo "TAP version 13"
echo "1..2"
result() {	# result NAME RC
	if [ "$2" = 0 ]; then
		pass=$((pass + 1)); echo "ok $((pass + fail)) $1"
	else
		fail=$((fail + 1)); echo "not ok $((pass + fail)) $1"
	fi
}

# A server on the peer (node 2, or node 1 itself on one node), echoing.
# transfer BYTES FLAP: one checked echo transfer from here to there,
# with the link down for FLAP seconds two seconds into it.
transfer() {
	local bytes=$1 flap=$2 job cli rc t0
	port=$((port + 1))
	job=$(hps-vm-peer --bg ./tools/hps_xfer -l "$HPS_PEER" "$port" --echo)
	hps-vm-peer hps-vm-wait-listen "$port" 30 >/dev/null 2>&1
	t0=$(date +%s)
	timeout 300 $xfer -c "$HPS_PEER" "$port" -n "$bytes" --echo \
		>/tmp/flap_cli.log 2>&1 &
	cli=$!
	if [ "$flap" != 0 ] && [ "$mode" = down ]; then
		sleep 2
		ip link set dev "$HPS_IFNAME" down
		echo "# $HPS_IFNAME down for ${flap} s"
		sleep "$flap"
		ip link set dev "$HPS_IFNAME" up
	elif [ "$flap" != 0 ]; then
		sleep 2
		tc qdisc add dev "$HPS_IFNAME" root netem loss 100%
		echo "# every frame $HPS_IFNAME sends dropped for ${flap} s"
		sleep "$flap"
		tc qdisc del dev "$HPS_IFNAME" root
	fi
	wait "$cli"
	rc=$?
	sed 's/^/# /' /tmp/flap_cli.log
	hps-vm-peer --wait "$job" 120 | sed 's/^/# server: /'
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
	echo "# $((($(date +%s) - t0))) s in all"
	return "$rc"
}

transfer 67108864 4
result "a 64 MiB echo transfer survives a 4 s outage ($mode), intact" $?
# the RDMA port comes back ACTIVE with the interface
for _ in $(seq 100); do
	rdma link show "$HPS_IBDEV/1" | grep -q 'state ACTIVE' && break
	sleep 0.1
done
transfer 8388608 0
result "a new connection works after the link came back" $?
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ "$fail" = 0 ]
