#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The test bed and the module's loading, checked from inside the guest:
# raw verbs work between the nodes on the configured device, an open socket
# keeps the module from being unloaded, and it unloads and loads again once
# idle. (Its autoload through net-pf-22 after make install is
# hps_install.sh's.) Prints kselftest-style TAP and a totals line.
#
# hps-configs: 2:rxe 2:siw
set -u
cd "$(dirname "$0")/.." || exit 1
pass=0 fail=0 n=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }

echo "TAP version 13"
echo "1..3"

# Raw verbs between node 1 and its peer (node 2, or itself over loopback),
# with rdma_cm as iWARP requires. Each try uses its own port, so a server
# left behind by a failed try cannot answer the next one.
verbs_once() {
	local port=$1 id rc

	rm -f /tmp/verbs.out /tmp/verbs.srv
	id=$(hps-vm-peer --bg ib_send_bw -R -p "$port" -d "$HPS_IBDEV" \
		-n 100 -s 4096) || return 1
	if ! hps-vm-peer hps-vm-wait-listen "$port" 60; then
		hps-vm-peer --kill "$id"
		return 1
	fi
	timeout -k 5 60 ib_send_bw -R -p "$port" -d "$HPS_IBDEV" -n 100 -s 4096 \
		"$HPS_PEER" >/tmp/verbs.out 2>&1
	rc=$?
	echo "client exit status $rc" >>/tmp/verbs.out
	# A server whose client failed is still waiting for one: its output
	# after a few seconds, not after the 30 a passing run may need.
	if ! hps-vm-peer --wait "$id" $((rc == 0 ? 30 : 3)) >/tmp/verbs.srv 2>&1; then
		hps-vm-peer --kill "$id"
		rc=1
	fi
	[ "$rc" = 0 ] && grep -E '^ *4096 +100 ' /tmp/verbs.out
}
# Three tries, each failure shown with the server's side. perftest's own
# client and server race over rdma_cm (-R) on two nodes: the client
# connects twice, first for its parameter exchange, then for the test's
# QP, and the server destroys its listening cm_id after the first
# connection and creates a new one for the second. A client whose second
# REQ arrives in between gets a REJ with IB_CM_REJ_INVALID_SERVICE_ID
# ("RDMA_CM_EVENT_REJECTED; error: 8": no listener) and then crashes on
# that error path, a general protection fault inside librdmacm (exit
# status 139; "traps: ib_send_bw[...] general protection fault ... in
# librdmacm.so"). Seen with the ib_cma and rdma_cma trace events on both
# nodes (2026-11-26): listener destroyed at 200.742 s, the new one at
# 201.117, the second REQ received at 201.121, 4 ms later, in a run that
# passed. It is perftest's (4.5), not the test bed's nor AF_HPS's; it
# happens most after hps_link.sh, and the next try, on a fresh port, passes.
# What rdma_cm saw, for a failed try: the RDMA devices and their GIDs'
# netdevs, the cm_ids left, the neighbour entries.
verbs_state() {
	rdma link show
	rdma resource show cm_id
	ip -br addr show
	ip neigh show
}
verbs() {
	local port
	for port in 18515 18516 18517; do
		verbs_once "$port" && return 0
		sed 's/^/# client: /' /tmp/verbs.out
		sed 's/^/# server: /' /tmp/verbs.srv 2>/dev/null
		echo "# try on port $port failed; the devices, cm_ids and neighbours:"
		verbs_state 2>&1 | sed 's/^/# node 1: /'
		[ "$HPS_NODES" = 2 ] &&
			hps-vm-peer bash -c "$(declare -f verbs_state); verbs_state" 2>&1 |
			sed 's/^/# node 2: /'
	done
	return 1
}

check "raw verbs ($HPS_RDMA, ib_send_bw -R) to $HPS_PEER" verbs


# Earlier tests may leave connections being torn down (over iWARP, one still
# in siw's TCP connect to an unreachable address lasts until the SYN retries
# run out, about two minutes); wait, bounded, until the module is idle.
idle_module() {
	for _ in $(seq 1800); do
		[ "$(cat /sys/module/af_hps/refcnt 2>/dev/null)" = 0 ] && return 0
		sleep 0.1
	done
	echo "# af_hps still in use after 180 s: $(cat /sys/module/af_hps/refcnt)"
	return 1
}

# rmmod with a socket open is refused, and the socket still works after.
pinned() {
	local fifo=/tmp/pin.fifo pid rc=0
	mkfifo "$fifo"
	python3 -c 'import socket, sys
s = socket.socket(22, socket.SOCK_STREAM)
print("open", flush=True)
sys.stdin.read()
print(s.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN))' <"$fifo" >/tmp/pin.out &
	pid=$!
	exec 9>"$fifo"
	for _ in $(seq 50); do grep -q open /tmp/pin.out && break; sleep 0.1; done
	rmmod af_hps 2>/dev/null && rc=1
	lsmod | grep -q '^af_hps ' || rc=1
	exec 9>&-
	wait "$pid" || rc=1
	grep -qx 22 /tmp/pin.out || rc=1
	rm -f "$fifo"
	return $rc
}
check "rmmod refused while a socket is open" pinned

# With no socket left, the module unloads and loads again cleanly.
reload() {
	idle_module && rmmod af_hps && insmod af_hps.ko && lsmod | grep -q '^af_hps '
}
check "module unloads and reloads" reload

echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ "$fail" = 0 ]
