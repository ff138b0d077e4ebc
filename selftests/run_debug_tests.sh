#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-debug: the selftest suite on a debug kernel (KASAN, lockdep,
# kmemleak, DEBUG_ATOMIC_SLEEP, DEBUG_OBJECTS, failslab, fail_page_alloc)
# built from Debian's linux-source-6.1 by tools/vm/debug-kernel.sh, plus
# the allocation-failure test (debug_failslab.sh, which only runs there).
# Any KASAN, lockdep, kmemleak, DEBUG_OBJECTS or WARN report fails a run
# (tools/vm/hps-vm). See Documentation/reliability.rst.
#
# The modules (af_hps.ko, hps_kfs.ko, the test modules) are built for that
# kernel in a copy of the tree, build/debug-kernel/tree, so the tree's own
# modules stay built for Debian's kernel. HPS_CONFIGS and HPS_TESTS narrow
# the run as for make check.
#
# --smoke (make check-debug-smoke, which .ci/run runs after make check):
# the data path, zero copy, sharing and fault tests on one node over rxe,
# sized for the debug kernel, within HPS_SMOKE_TIMEOUT (1500 s) in the
# guest; with the kernel's build, about 25 minutes on a fresh machine.
# The guest takes about 500 s here and took 900 s on a slower machine of
# CI's kind (2026-12-02): the bound is three times the usual, a hang's
# limit, not a budget.
set -u
smoke=
[ "${1:-}" = --smoke ] && smoke=1
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
say() { printf 'check-debug: %s\n' "$*"; }

t0=$(date +%s)
release=$("$top/tools/vm/debug-kernel.sh") || exit 1
say "kernel $release (built in $(cat "$build/debug-kernel/build-seconds") s)"
obj=$build/debug-kernel/obj
tree=$build/debug-kernel/tree

say "copying the tree to $tree and building its modules for $release"
# Sources only, into an empty directory: no build products, no git, no
# build/ (shared by symlink). A build product copied from the tree, or
# left from an earlier copy, passes for up to date: modules.order names
# the tree's af_hps.ko by its absolute path, and kbuild in the copy then
# relinked the tree's module for this kernel and left the copy's own
# module as it was, so the tests loaded an af_hps.ko that predated the
# sources they were meant to test.
rm -rf "$tree"
mkdir -p "$tree"
tar -C "$top" --exclude=./build --exclude=./.git --exclude='*.ko' \
	--exclude='*.o' --exclude='*.mod*' --exclude='.*.cmd' \
	--exclude='*.order' --exclude='*.symvers' \
	--exclude=./selftests/install-tree --exclude=./selftests/install-tree.log \
	-cf - . | tar -C "$tree" -xf - || exit 1
ln -sfn "$build" "$tree/build"
# The kselftest harness's per-test timeouts (30 s unless a test says
# otherwise) are for Debian's kernel; this one runs several times slower
# under TCG. The selftests of the copy are built against a copy of the
# harness taken from the same linux-source-6.1 whose alarm() is ten
# times as long.
ksft=$build/debug-kernel/ksft
mkdir -p "$ksft"
cp "$build/linux-source/tools/testing/selftests/kselftest.h" "$ksft/"
# When a test's timeout fires, the copy first prints the kernel stack,
# wait channel and system call of every thread of the test's process
# group (its child runs in one of its own), so that a hang says where it
# waits (reliability.rst, *Debug kernel*).
sed -e 's/alarm(t->timeout);/alarm(t->timeout * 10);/' \
    -e 's|^\(\t*\)t->timed_out = true;|&\n\1hps_dump_stacks(t->pid);|' \
    -e '/^static void __timeout_handler(/i\
static void hps_dump_stacks(pid_t pgrp)\
{\
	char cmd[600];\
\
	snprintf(cmd, sizeof(cmd), "for p in /proc/[0-9]*; do "\
		 "[ \\"$(cut -d\\" \\" -f5 $p/stat 2>/dev/null)\\" = %d ] || continue; "\
		 "for t in $p/task/*; do echo \\"# timeout: $t ($(cat $p/comm)) "\
		 "wchan $(cat $t/wchan) syscall $(cat $t/syscall)\\"; "\
		 "sed \\"s/^/#   /\\" $t/stack; done; done >&2", (int)pgrp);\
	if (system(cmd))\
		fprintf(stderr, "# timeout: no stacks\\n");\
}\
' \
	"$build/linux-source/tools/testing/selftests/kselftest_harness.h" \
	>"$ksft/kselftest_harness.h"
grep -q 'alarm(t->timeout \* 10)' "$ksft/kselftest_harness.h" &&
grep -q 'hps_dump_stacks(t->pid);' "$ksft/kselftest_harness.h" || {
	say "cannot adapt the harness (its timeouts, its stacks on timeout)"
	exit 1
}
for f in "$tree"/selftests/hps_* "$tree"/selftests/final_* \
	 "$tree"/selftests/peer_*; do
	case $f in *.c|*.h|*.sh) ;; *) rm -f "$f" ;; esac	# rebuilt below
done
# The smoke run does not install (hps_install.sh): no install tree, 24 s
# fewer.
notree=
[ -n "$smoke" ] && [[ " ${HPS_TESTS:-} " != *" hps_install "* ]] && notree=1
make -s -C "$tree" VM_KDIR="$obj" KDIR="$obj" KSFT="$ksft" \
	NO_INSTALL_TREE=$notree vm-modules selftests \
	>"$build/debug-kernel/modules.log" 2>&1 || {
	tail -n 30 "$build/debug-kernel/modules.log"
	say "building the modules for $release failed"
	exit 1
}
say "ready after $(($(date +%s) - t0)) s"

# Everything is slower under KASAN and lockdep: a longer leash per test
# program and per configuration. make check built every kernel's modules
# (host_kbuild.sh): not again.
export HPS_NO_KBUILD=1
export HPS_VM_KERNEL=$build/debug-kernel/root
export HPS_TEST_TIMEOUT=${HPS_TEST_TIMEOUT:-2400}
export HPS_CHECK_TIMEOUT=${HPS_CHECK_TIMEOUT:-10800}
export HPS_TB_TIMEOUT=${HPS_TB_TIMEOUT:-600}
export HPS_DEBUG_KERNEL=1
# PCLMULQDQ for the debug kernel's crc32 (rxe's ICRC), SSE4.2 for its
# crc32c: the generic ones run under KASAN (testing.rst, "Times")
export HPS_VM_CPU=${HPS_VM_CPU:-qemu64,+ssse3,+sse4.1,+sse4.2,+pclmulqdq}
# every test in its configurations, not only those make check runs there
export HPS_EVERYWHERE=1
# The whole suite on one node over rxe; elsewhere what depends on the
# transport or on there being two machines (the fault tests, the data
# paths, the fuzzers, the rogue peer). The application tests drive the
# same socket code on every configuration and take most of the time
# (two nodes run about nine times slower than on Debian's kernel, which
# would make the whole suite about three hours per configuration).
# HPS_DEBUG_ALL=1 runs the whole suite everywhere; HPS_TESTS overrides
# both.
if [ -n "$smoke" ]; then
	export HPS_CONFIGS=1:rxe
	export HPS_TESTS=${HPS_TESTS:-"hps_share hps_zcopy hps_hostile \
hps_errors hps_busypoll hps_fallback hps_mem final_device_removal"}
	export HPS_CHECK_TIMEOUT=${HPS_SMOKE_TIMEOUT:-1500}
	export HPS_NO_TESTBED_CHECKS=1	# make check ran them
	# Jumbo frames: rxe's path MTU 4096 instead of 1024, a quarter of
	# the packets, each with its allocations, KASAN's and kmemleak's
	# stack traces and its ICRC (3.5 times the throughput; testing.rst,
	# "Times")
	export HPS_VM_MTU=${HPS_VM_MTU:-9000}
elif [ -z "${HPS_DEBUG_ALL:-}" ]; then
	export HPS_FULL_CONFIGS=${HPS_FULL_CONFIGS:-1:rxe}
	export HPS_SUBSET_TESTS=${HPS_SUBSET_TESTS:-"hps_socket hps_errors \
hps_sysctl hps_kapi hps_testbed hps_stream hps_zcopy hps_share hps_fallback hps_across \
hps_peer hps_hostile hps_fuzz hps_trinity hps_scale hps_long hps_link debug_failslab \
final_device_removal final_peer_death"}
fi
# hps_long: 256 MiB (about 4 minutes at this kernel's 1 MB/s), not 1 GiB
export HPS_LONG_BYTES=${HPS_LONG_BYTES:-268435456}
# hps_fuzz's concurrent cases: a minute each here (15 s in make check and
# in the smoke run)
[ -z "$smoke" ] && export HPS_FUZZ_MT_SECONDS=${HPS_FUZZ_MT_SECONDS:-60}
"$tree/selftests/run_vm_tests.sh"
rc=$?
echo "make check-debug took $(($(date +%s) - t0))s in all"
exit $rc
