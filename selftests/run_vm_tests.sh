#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: run the whole selftest suite in the VM test bed, on one node
# (RDMA loopback) and two nodes, over Soft-RoCE (rxe) and soft-iWARP (siw),
# then check the test bed itself (a kernel WARN, a timeout and a failing
# command each fail a run). Ends with the plain line "N passed, N failed".
#
# Each test runs in the configurations its source names (run_guest.sh,
# "hps-configs:"), with soaks sized for CI; HPS_FULL=1 (make check-full)
# runs every test everywhere at full length. HPS_CONFIGS="1:rxe 2:siw"
# narrows the configurations; HPS_TESTS="hps_x" narrows the tests (see
# run_guest.sh). make check-debug sets HPS_FULL_CONFIGS and
# HPS_SUBSET_TESTS: the configurations not listed in the first run only
# the tests listed in the second. At the end: each configuration's time
# and the ten slowest tests and cases, and the failed tests by name.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
vm=$top/tools/vm/hps-vm
res=$top/build/selftests
mkdir -p "$res"
rm -f "$res/times.all" "$res/cases.all"
configs=${HPS_CONFIGS:-1:rxe 2:rxe 1:siw 2:siw}
timeout=${HPS_CHECK_TIMEOUT:-2400}

# run_guest.sh reads a test's "hps-configs:" and "hps-nodes:" markers in
# its first 60 lines only; one further down would go unseen.
late=$(grep -n -E 'hps-(configs|nodes):' "$top"/selftests/{hps,final}_*.{c,sh} \
	2>/dev/null | awk -F: '$2 > 60 { print $1 ":" $2 }')
if [ -n "$late" ]; then
	echo "run_vm_tests: markers past line 60, which run_guest.sh does not read:"
	echo "$late"
	exit 1
fi

pass=0 fail=0 skip=0
failed=()
times=()
start=$(date +%s)

# The build's kernel checks, on the host: both modules for every kernel
# staged, the probes, DKMS, the refusals (host_kbuild.sh; HPS_NO_KBUILD=1:
# not again, make check-smoke and check-debug)
if [ -z "${HPS_NO_KBUILD:-}" ]; then
	printf '\n##### [%s] kernel builds (host)\n' "$(date +%T)"
	t0=$(date +%s)
	"$top/selftests/host_kbuild.sh" | tee "$res/kbuild"
	read -r p f < <(sed -n 's/^kbuild: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$res/kbuild")
	[ -n "${p:-}" ] || { p=0 f=1; }
	pass=$((pass + p))
	if [ "$f" != 0 ]; then
		fail=$((fail + f))
		failed+=("kernel builds: $(grep -c '^not ok' "$res/kbuild") check(s)")
	fi
	times+=("kernel builds (host): $(($(date +%s) - t0)) s")
fi

for c in $configs; do
	nodes=${c%%:*} rdma=${c#*:}
	name="$nodes-node $rdma"
	file=$res/result.$nodes-$rdma
	rm -f "$file" "$file.failed" "$file.cases" "$file.running"
	tests=${HPS_TESTS:-} what=
	if [ -z "$tests" ] && [ -n "${HPS_FULL_CONFIGS:-}" ] &&
	   [[ " $HPS_FULL_CONFIGS " != *" $c "* ]]; then
		tests=$HPS_SUBSET_TESTS what=", the subset: $tests"
	fi
	printf '\n##### [%s] %s (%ds elapsed%s)\n' "$(date +%T)" "$name" \
		$(($(date +%s) - start)) "$what"
	t0=$(date +%s)
	HPS_TESTS=$tests "$vm" run --nodes "$nodes" --rdma "$rdma" \
		--timeout "$timeout" -- "$top/selftests/run_guest.sh" "$file"
	vmrc=$?
	times+=("$name: $(($(date +%s) - t0)) s")
	[ -f "$file.times" ] && sed "s/^/$c /" "$file.times" >>"$res/times.all"
	[ -f "$file.cases" ] && sed "s/^/$c /" "$file.cases" >>"$res/cases.all"
	if [ -f "$file" ]; then
		read -r p f s <"$file"
	else
		p=0 f=0 s=0
	fi
	pass=$((pass + p)) skip=$((skip + s))
	if [ "$f" != 0 ]; then
		fail=$((fail + f))
		failed+=("$name: $f test(s): $(paste -sd';' "$file.failed" 2>/dev/null)")
	fi
	if [ "$vmrc" != 0 ] && { [ "$f" = 0 ] || [ "$vmrc" != 1 ]; }; then
		# The run failed beyond its tests' failures (status 1): a kernel
		# report, a timeout, a guest that never answered; a failure of
		# its own where no test failed.
		[ "$f" != 0 ] || fail=$((fail + 1))
		failed+=("$name: run failed with status $vmrc$([ -f "$file.running" ] &&
			echo " during $(head -c 100 "$file.running")")")
	fi
done

# The test bed must be able to fail: each of these runs is expected to
# (HPS_NO_TESTBED_CHECKS=1: not again, make check-debug-smoke).
[ -z "${HPS_NO_TESTBED_CHECKS:-}" ] &&
	printf '\n##### [%s] test bed self-checks\n' "$(date +%T)"
tb() {
	local name=$1 want=$2 got
	shift 2
	HPS_VM_QUIET=1 "$vm" run --timeout "${HPS_TB_TIMEOUT:-120}" "$@" >/dev/null 2>&1
	got=$?
	if [ "$got" = "$want" ]; then
		echo "ok - $name (status $got)"
		pass=$((pass + 1))
	else
		echo "not ok - $name (status $got, expected $want)"
		fail=$((fail + 1))
		failed+=("test bed: $name")
	fi
}
if [ -z "${HPS_NO_TESTBED_CHECKS:-}" ]; then
	tb "a command's exit status is returned" 3 -- sh -c 'exit 3'
	tb "a kernel WARN fails a successful command" 125 -- \
		insmod "$top/selftests/testbed/warn_on_load/hps_test_warn.ko"
	tb "a run past its timeout fails" 124 --timeout 20 -- sleep 600
fi

elapsed=$(($(date +%s) - start))
echo
echo "Time per configuration (boot included):"
for t in "${times[@]}"; do echo "  $t"; done
if [ -s "$res/times.all" ]; then
	echo "The ten slowest tests:"
	sort -k3,3nr "$res/times.all" | head -n 10 |
		awk '{ printf "  %-8s %-26s %5d s\n", $1, $2, $3 }'
fi
if [ -s "$res/cases.all" ]; then
	echo "The ten slowest cases:"
	sort -k3,3nr "$res/cases.all" | head -n 10 |
		awk '{ t = $3 / 1000; $3 = ""; c = $1; n = $2; $1 = $2 = ""
		       sub(/^ +/, ""); printf "  %-8s %-20s %6.1f s  %s\n", c, n, t, $0 }'
fi
for f in "${failed[@]}"; do echo "FAILED: $f"; done
echo "make check took ${elapsed}s"
if [ "$skip" != 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" = 0 ]
