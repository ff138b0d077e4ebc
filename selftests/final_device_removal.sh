#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Device removal and module refcount, run inside an hps-vm guest. It
# deletes the RDMA device, so run_guest.sh runs it (as every final_* test)
# after all the hps_* tests:
#   ./tools/vm/hps-vm run [--rdma siw] -- ./selftests/final_device_removal.sh
# A transfer is running while the device goes away: both ends must fail
# (ECONNABORTED/EPIPE), a listener bound to the device must not block the
# removal, rmmod must be refused while sockets exist and succeed after.
set -u
cd "$(dirname "$0")/.." || exit 1
xfer=./tools/hps_xfer
fail=0
port=$((20000 + RANDOM % 20000))

$xfer -l "$HPS_SELF" $port --count 0 >/tmp/dr_srv.log 2>&1 &
srv=$!
sleep 1
$xfer -c "$HPS_SELF" $port -n 4000000000 >/tmp/dr_cli.log 2>&1 &
cli=$!
sleep 3
if rmmod af_hps 2>/dev/null; then
	echo "FAIL: rmmod succeeded with open sockets"; fail=1
fi
timeout 60 rdma link delete "$HPS_IBDEV" || { echo "FAIL: rdma link delete"; fail=1; }
timeout 60 tail --pid=$cli -f /dev/null
wait $cli; rc=$?
[ $rc = 0 ] && { echo "FAIL: client did not notice the removal"; fail=1; }
timeout 60 tail --pid=$srv -f /dev/null
wait $srv; rc=$?
[ $rc = 0 ] && { echo "FAIL: server did not notice the removal"; fail=1; }
cat /tmp/dr_cli.log /tmp/dr_srv.log
sleep 1
rmmod af_hps || { echo "FAIL: rmmod after close"; fail=1; }
if [ $fail = 0 ]; then
	echo "ok 1 device removal under a live transfer"
	echo "# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0"
else
	echo "not ok 1 device removal under a live transfer"
	echo "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
fi
exit $fail
