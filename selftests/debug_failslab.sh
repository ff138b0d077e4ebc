#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Allocation failures (make check-debug only: run_guest.sh runs debug_*
# when HPS_DEBUG_KERNEL is set, on the debug kernel with failslab and
# fail_page_alloc). Kernel allocations fail at random (GFP_KERNEL ones too):
#
#   1. in the connection work (the hps_connd workqueue's workers while
#      they run AF_HPS's work: the module parameter connd_make_it_fail of
#      test builds), which sets up (child sockets, QPs, buffers) and tears
#      down every connection, while checked echo
#      transfers of 1 MiB connect, run and close; every transfer that
#      completes must be intact. Over siw only: over rxe a failed
#      allocation inside rxe's own QP creation trips DEBUG_OBJECTS in
#      rxe's error path (rxe_qp_do_cleanup() deletes timers it never set
#      up, Debian's 6.1), a report this test would fail on that is not
#      AF_HPS's;
#   2. in the fuzzer (HPS_FUZZ_FAIL=1: in its own system calls, from
#      its first random call to its last), while it makes random calls on
#      sockets in every state; then, allocations working again, it checks
#      that everything was freed and that a new connection carries data.
#
# Then injection stops, and every socket must be freed (the module's
# reference count back where it started) and a new 64 MiB transfer must
# arrive intact. Errors during injection are expected (ENOMEM, ENOBUFS,
# refused or reset connections); a crash, hang, WARN, KASAN, lockdep or
# kmemleak report is not (hps-vm fails the run on those). Only tasks that
# do not touch a file system fail allocations: the guest's root is 9p,
# which does not survive its own allocations failing.
#
# HPS_FAILSLAB_PCT (default 2) is the failure probability in percent and
# HPS_FAILSLAB_SECONDS (default 60) the time of each of the two phases.
set -u
cd "$(dirname "$0")" || exit 1
top=$(cd .. && pwd)
xfer=$top/tools/hps_xfer
dbg=/sys/kernel/debug
pct=${HPS_FAILSLAB_PCT:-2}
secs=${HPS_FAILSLAB_SECONDS:-60}
self=${HPS_SELF:-127.0.0.1}
pass=0 fail=0 skip=0

echo "TAP version 13"
echo "1..7"
check() {	# check NAME CMD...: one TAP line
	local name=$1
	shift
	if "$@"; then
		pass=$((pass + 1))
		echo "ok $((pass + fail)) $name"
	else
		fail=$((fail + 1))
		echo "not ok $((pass + fail)) $name"
	fi
}
totals() {
	echo "# Totals: pass:$((pass - skip)) fail:$fail xfail:0 xpass:0 skip:$skip error:0"
	[ "$fail" = 0 ]
	exit
}

refcnt() { cat /sys/module/af_hps/refcnt; }
connd=/sys/module/af_hps/parameters/connd_make_it_fail
have_injection() {
	[ -w $dbg/failslab/probability ] && [ -w $dbg/fail_page_alloc/probability ] &&
		[ -w "$connd" ]
}
check "failslab, fail_page_alloc and connd_make_it_fail are there" have_injection ||
	totals

ref0=$(refcnt)
TIMES=100000000
inject() {	# inject PCT: 0 stops
	local f
	for f in failslab fail_page_alloc; do
		echo Y >$dbg/$f/task-filter
		echo N >$dbg/$f/ignore-gfp-wait
		echo 0 >$dbg/$f/verbose
		echo 1 >$dbg/$f/interval
		[ "$1" = 0 ] || echo "$TIMES" >$dbg/$f/times
		echo "$1" >$dbg/$f/probability
	done
}
injected() {
	echo $(( (TIMES - $(cat $dbg/failslab/times)) +
		 (TIMES - $(cat $dbg/fail_page_alloc/times)) ))
}

# Phase 1: the connection work fails; the transfers' own processes do not.
phase1() {
	if [ "${HPS_RDMA:-}" != siw ]; then
		echo "# phase 1 runs over siw only (rxe's QP creation error path)"
		inj1=skip
		return
	fi
	local port=$((20000 + RANDOM % 20000)) end=$(($(date +%s) + secs))
	local n=0 ok=0 bad=0 srv out
	"$xfer" -l "$self" "$port" --echo --count 0 >/dev/null 2>&1 &
	srv=$!
	sleep 1
	inject "$pct"
	echo 1 >"$connd"
	while [ "$(date +%s)" -lt "$end" ]; do
		n=$((n + 1))
		out=$(timeout 60 "$xfer" -c "$self" "$port" -n 1048576 --echo 2>&1)
		case $? in
		0) ok=$((ok + 1)) ;;
		*) grep -q mismatch <<<"$out" && bad=$((bad + 1)) ;;
		esac
		# a server that died of a failed accept comes back
		kill -0 "$srv" 2>/dev/null || {
			"$xfer" -l "$self" "$port" --echo --count 0 >/dev/null 2>&1 &
			srv=$!
			sleep 0.5
		}
	done
	echo 0 >"$connd"
	inj1=$(injected)
	inject 0
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	echo "# phase 1: $n transfers, $ok intact, $bad corrupted; $inj1 allocations failed"
	corrupt=$bad
}

# Phase 2: the fuzzer's own calls fail.
phase2() {
	local out
	inject "$pct"
	out=$(HPS_FUZZ_FAIL=1 HPS_FUZZ_SECONDS=$secs \
	      timeout $((secs + 300)) ./hps_fuzz 2>&1)
	fuzz_rc=$?
	inj2=$(injected)
	inject 0
	grep -E 'calls in|signal|did not return|Expected|hps_fuzz.c' <<<"$out" |
		grep -v 'seed 0x' | sed 's/^/# fuzz: /'
	echo "# phase 2: $inj2 allocations failed"
}

freed() {
	for _ in $(seq 900); do
		[ "$(refcnt)" -le "$ref0" ] && return 0
		sleep 0.1
	done
	echo "# af_hps reference count $(refcnt), was $ref0"
	return 1
}

after() {
	local port=$((20000 + RANDOM % 20000)) srv rc
	"$xfer" -l "$self" "$port" --echo >/dev/null &
	srv=$!
	sleep 1
	timeout 300 "$xfer" -c "$self" "$port" -n 67108864 --echo
	rc=$?
	wait "$srv"
	return $rc
}

inj1=0 inj2=0 corrupt=0 fuzz_rc=1
phase1
phase2
if [ "$inj1" = skip ]; then
	pass=$((pass + 1))
	echo "ok $((pass + fail)) allocations failed in the connection work # SKIP not over rxe"
	skip=$((skip + 1))
else
	check "allocations failed in the connection work" [ "$inj1" -gt 0 ]
fi
check "allocations failed in the fuzzer" [ "$inj2" -gt 0 ]
check "no transfer arrived corrupted" [ "$corrupt" = 0 ]
check "the fuzzer survived, then freed everything and carried data" \
	[ "$fuzz_rc" = 0 ]
check "every socket freed once injection stops" freed
check "a 64 MiB echo transfer is intact afterwards" after
totals
