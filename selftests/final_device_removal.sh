#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Device removal and module refcount, run inside an hps-vm guest. It
# deletes the RDMA device, so run_guest.sh runs it (as every final_* test)
# after all the hps_* tests:
#   ./tools/vm/hps-vm run [--rdma siw] -- ./selftests/final_device_removal.sh
# A transfer is running while the device goes away: both ends must fail
# (ECONNABORTED/EPIPE); a listener bound to the device, a socket only bound
# to it and a connect() from it still resolving its peer's address must not
# block the removal (peer_devhold checks what becomes of the last two);
# rmmod must be refused while sockets exist. Then a new device of
# the same kind is added (the module still loaded): a new connection must
# work on it, checksummed. Then every socket is closed, rmmod must succeed,
# and after insmod again a new connection must work once more.
#
# hps-configs: 1:rxe 1:siw
set -u
cd "$(dirname "$0")/.." || exit 1
xfer=./tools/hps_xfer
fail=0
port=$((20000 + RANDOM % 20000))
# each step's time since the start, for the run's log
step() { echo "# [${SECONDS} s] $*"; }

$xfer -l "$HPS_SELF" $port --count 0 >/tmp/dr_srv.log 2>&1 &
srv=$!
sleep 1
$xfer -c "$HPS_SELF" $port -n 4000000000 >/tmp/dr_cli.log 2>&1 &
cli=$!
sleep 3
# Sockets without a connection: the connect's address resolution must be
# under way when the device goes, so no one may answer for its peer (on a
# dummy interface, which answers for everyone, ARP is turned on meanwhile).
noarp=$(ip -o link show "$HPS_IFNAME" | grep -c NOARP)
[ "$noarp" = 1 ] && ip link set "$HPS_IFNAME" arp on
# The connect's resolution gives up after 2 s, which a slow kernel (the
# debug kernel's removal alone took 3.5 s) can spend before the removal
# reaches it: the test build makes it 10 s here (HPS_INJ_RESOLVE, 5).
inj=/sys/module/af_hps/parameters
echo 10000 >$inj/inject_ms && echo 5 >$inj/inject_point ||
	{ echo "FAIL: no fault injection (make vm-modules)"; fail=1; }
coproc HOLD { ./selftests/peer_devhold "$HPS_SELF" 198.18.0.99 $((port + 7)); }
hold=$HOLD_PID
read -r -t 10 ready <&"${HOLD[0]}"
[ "$ready" = ready ] || { echo "FAIL: peer_devhold did not start"; fail=1; }
if rmmod af_hps 2>/dev/null; then
	echo "FAIL: rmmod succeeded with open sockets"; fail=1
fi
t0=$(date +%s.%N)
step "rdma link delete"
timeout 60 rdma link delete "$HPS_IBDEV" || { echo "FAIL: rdma link delete"; fail=1; }
echo "# rdma link delete took $(echo "$(date +%s.%N) - $t0" | bc) s"
echo 0 >$inj/inject_point
echo go >&"${HOLD[1]}"
timeout 30 cat <&"${HOLD[0]}"
wait "$hold" || { echo "FAIL: peer_devhold"; fail=1; }
[ "$noarp" = 1 ] && ip link set "$HPS_IFNAME" arp off
step "waiting for the client and the server to fail"
timeout 60 tail --pid=$cli -f /dev/null
wait $cli; rc=$?
[ $rc = 0 ] && { echo "FAIL: client did not notice the removal"; fail=1; }
timeout 60 tail --pid=$srv -f /dev/null
wait $srv; rc=$?
[ $rc = 0 ] && { echo "FAIL: server did not notice the removal"; fail=1; }
cat /tmp/dr_cli.log /tmp/dr_srv.log
# xfer_ok NAME: a fresh 8 MiB transfer, checksummed by hps_xfer
xfer_ok() {
	local p=$((port + 1 + RANDOM % 1000)) s rc
	$xfer -l "$HPS_SELF" $p >/tmp/dr_srv2.log 2>&1 &
	s=$!
	hps-vm-wait-listen $p 30 >/dev/null 2>&1
	timeout 120 $xfer -c "$HPS_SELF" $p -n 8388608 >/tmp/dr_cli2.log 2>&1
	rc=$?
	timeout 30 tail --pid=$s -f /dev/null
	wait $s || rc=1
	if [ $rc != 0 ]; then
		echo "FAIL: $1: transfer failed"
		cat /tmp/dr_cli2.log /tmp/dr_srv2.log
		fail=1
	fi
}

# wait_active: the (new) device's port is up
wait_active() {
	for _ in $(seq 100); do
		rdma link show "$HPS_IBDEV/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.1
	done
	echo "FAIL: $HPS_IBDEV did not become active"; fail=1
}

# A new device while the module stays loaded
step "rdma link add"
if timeout 60 rdma link add "$HPS_IBDEV" type "$HPS_RDMA" netdev "$HPS_IFNAME"; then
	wait_active
	xfer_ok "on a device added after the removal"
else
	echo "FAIL: rdma link add"; fail=1
fi

# Every socket is closed: the module becomes idle (bounded wait) and unloads.
step "waiting for the module's references to go"
for _ in $(seq 300); do
	[ "$(cat /sys/module/af_hps/refcnt)" = 0 ] && break
	sleep 0.1
done
step "rmmod, insmod"
rmmod af_hps || { echo "FAIL: rmmod after close"; fail=1; }
# and loads again, and works
if insmod ./af_hps.ko; then
	xfer_ok "after the module was loaded again"
else
	echo "FAIL: insmod after rmmod"; fail=1
fi
step "done"
if [ $fail = 0 ]; then
	echo "ok 1 device removal under a live transfer, a new device, module reload"
	echo "# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0"
else
	echo "not ok 1 device removal under a live transfer, a new device, module reload"
	echo "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
fi
exit $fail
