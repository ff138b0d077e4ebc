#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run inside an hps-vm guest (node 1): the selftest programs (hps_*) and
# shell tests (hps_*.sh) in this directory that belong to this
# configuration, in order, each under a timeout, then, on the debug kernel
# of make check-debug, debug_*, and last the destructive ones (final_*:
# they remove the RDMA device or kill node 2). Prints their output and
# writes the summed counts ("pass fail skip") to the file named by $1 (in
# the project tree, which the host reads back) after each test, the test
# running to $1.running (gone at the end), each test's time to $1.times
# ("test seconds") and each failed test, with up to three of its failed
# cases, to $1.failed.
#
# Which configurations a test runs in: its source's "hps-configs:" line
# (e.g. "hps-configs: 1:rxe 1:siw"; every configuration without one);
# Documentation/testing.rst says why each test is where it is. make
# check-full and check-debug (HPS_EVERYWHERE=1) run every test in every
# configuration, and
# HPS_TESTS="hps_x ..." runs the tests it names wherever it is asked to
# (with HPS_TESTS_IN_CONFIGS=1, make check-smoke, only where their
# markers say); but a test marked "hps-nodes: 2" (it needs a second machine: one to
# kill, one whose link to take away) never runs on one node.
set -u
result=$(realpath -m "${1:?usage: run_guest.sh RESULT_FILE}")
cd "$(dirname "$0")" || exit 126
per_test_timeout=${HPS_TEST_TIMEOUT:-600}
filter=${HPS_TESTS:-}
here="$HPS_NODES:$HPS_RDMA"

# Builtins only, here and in the loop below: every program this script
# starts costs about a second on the debug kernel under TCG (exec over 9p
# with KASAN), and grep and sed for each of some fifty files took two
# minutes of make check-debug-smoke's ten (Documentation/testing.rst).
#
# markers FILE: set $configs and $nodes from FILE's "hps-configs:" and
# "hps-nodes:" lines, which are in the first 60 lines of every test
markers() {
	local line lines

	configs= nodes=
	[ -f "$1" ] || return 0
	mapfile -n 60 -t lines <"$1"
	for line in "${lines[@]}"; do
		if [ -z "$configs" ] && [[ $line == *hps-configs:* ]]; then
			configs=" ${line#*hps-configs:} "
		elif [ -z "$nodes" ] &&
		     [[ $line =~ hps-nodes:\ *([0-9]+) ]]; then
			nodes=${BASH_REMATCH[1]}
		fi
	done
}

# runs_here TEST: the test belongs to this configuration
runs_here() {
	local src=$1

	[ -f "$1.c" ] && src=$1.c
	markers "$src"
	[ "$HPS_NODES" = 1 ] && [ "$nodes" = 2 ] && return 1
	if [ -n "$filter" ]; then
		[[ " $filter " == *" ${1%.sh} "* || " $filter " == *" $1 "* ]] ||
			return 1
		# make check-smoke: the tests named, where make check runs them
		[ -n "${HPS_TESTS_IN_CONFIGS:-}" ] || return 0
	fi
	[ -n "${HPS_EVERYWHERE:-}" ] && return 0
	[ -z "$configs" ] || [[ $configs == *" $here "* ]]
}

# Copies a test's output and times each case, from its "#  RUN" line (or
# the previous case's end) to its "ok"/"not ok" line, into "$result.cases"
# ("test ms case"), for the run's ten slowest cases (testing.rst, "Times").
case_times() {
	local l t0=$EPOCHREALTIME t1
	while IFS= read -r l || [ -n "$l" ]; do
		printf '%s\n' "$l"
		case $l in
		"#  RUN "*) t0=$EPOCHREALTIME ;;
		"ok "[0-9]*|"not ok "[0-9]*)
			t1=$EPOCHREALTIME
			l=${l#not }
			l=${l#ok }
			echo "$1 $(((${t1/./} - ${t0/./}) / 1000)) ${l#* }" >>"$2"
			t0=$t1 ;;
		esac
	done
}

# blocked: the tasks in an uninterruptible wait, with their kernel stacks
# (the state is the field after the last ")": a comm may hold ") D ")
blocked() {
	local task st comm

	for task in /proc/[0-9]*; do
		{ read -r st <"$task/stat"; } 2>/dev/null || continue
		[[ ${st##*) } == D\ * ]] || continue
		{ read -r comm <"$task/comm"; } 2>/dev/null
		echo "# blocked: ${task#/proc/} $comm"
		sed 's/^/#   /' "$task/stack" 2>/dev/null
	done
}

# run_bounded TEST RAW RC: run TEST under its timeout, its output into RAW
# (created by the caller, before tail opens it), its exit status into RC.
# timeout ends at the latest 10 s after its SIGTERM (its SIGKILL goes to
# its own process group, itself included), whether or not the test has
# ended: a test it ended is then given a SIGKILL to the whole group
# (timeout's pid is its id) and 40 s; what is left of it after that is
# stuck in the kernel (an uninterruptible wait). Then RC gets "stuck", the
# blocked tasks' kernel stacks go to RAW and to the console (sysrq w), and
# the caller stops the run there (testing.rst, "Times").
run_bounded() {
	local p rc end

	timeout -k 10 "$per_test_timeout" "./$1" >>"$2" 2>&1 {tick}<&- &
	p=$!
	wait "$p"
	rc=$?
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		kill -KILL -- "-$p" 2>/dev/null
		end=$((SECONDS + 40))
		while kill -0 -- "-$p" 2>/dev/null; do
			if ((SECONDS >= end)); then
				{
					echo "=== $1: still running 40 s after its SIGKILL: stuck in the kernel"
					blocked
				} >>"$2"
				echo w >/proc/sysrq-trigger
				echo stuck >"$3"
				return
			fi
			read -r -t 1 -u "$tick" _ 2>/dev/null
		done
	fi
	echo "$rc" >"$3"
}
# (a one-second sleep without a program: a read from a FIFO nobody writes)
[ -p /tmp/run_guest.tick ] || { rm -f /tmp/run_guest.tick; mkfifo /tmp/run_guest.tick; }
exec {tick}<>/tmp/run_guest.tick

pass=0 fail=0 skip=0
# the boot's share of the configuration's time (testing.rst, "Times")
read -r up _ </proc/uptime
echo "=== the guest is ready after $up s of uptime"
: >"$result.times"
: >"$result.cases"
: >"$result.failed"
# A test whose program was not built is a failure, not a silent omission.
for c in hps_*.c; do
	t=${c%.c}
	runs_here "$t" || continue
	if [ ! -x "$t" ]; then
		echo "=== $t: not built (make selftests)"
		fail=$((fail + 1))
	fi
done
# debug_*: only on make check-debug's kernel (fault injection)
for t in hps_* ${HPS_DEBUG_KERNEL:+debug_*} final_*; do
	case $t in *.c|*.h|*.o) continue ;; esac
	[ -x "$t" ] || continue
	runs_here "$t" || continue
	# final_peer_death resets node 2, which never ends on its own then:
	# its leak scan (make check-debug) now, into its log
	[ "$t" = final_peer_death ] && [ "$HPS_NODES" = 2 ] &&
		timeout 120 hps-vm-peer hps-vm-kmemleak
	echo "=== $t ($HPS_NODES node(s), $HPS_RDMA)"
	out=/tmp/run_guest.out
	f0=$fail
	t0=$SECONDS
	# where node 1's kernel log stood, by its timestamps (a failure's
	# report below shows what came after)
	read -r up0 _ </proc/uptime
	echo "$t" >"$result.running"
	# the output file before tail: tail -f gives up on a missing one
	: >"$out.raw"
	rm -f "$out.rc"
	run_bounded "$t" "$out.raw" "$out.rc" &
	tail -s 0.2 -n +1 -f --pid=$! "$out.raw" 2>/dev/null |
		case_times "$t" "$result.cases" | tee "$out"
	wait
	{ rc=$(<"$out.rc"); } 2>/dev/null || rc=lost
	# A test killed by its timeout: what was left blocked in the kernel
	# (a child of it in an uninterruptible wait outlives the SIGKILL)
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		echo "=== $t: ended by its timeout (status $rc); tasks left blocked:"
		blocked
	fi
	# the last "# Totals: pass:P fail:F xfail:X xpass:X skip:S error:E"
	mapfile -t lines <"$out"
	p= f= s= e=
	for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
		[[ ${lines[i]} =~ ^#\ Totals:\ pass:([0-9]+)\ fail:([0-9]+) ]] ||
			continue
		p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
		[[ ${lines[i]} =~ \ skip:([0-9]+) ]] && s=${BASH_REMATCH[1]}
		[[ ${lines[i]} =~ \ error:([0-9]+) ]] && e=${BASH_REMATCH[1]}
		break
	done
	if [ -n "$p" ]; then
		pass=$((pass + p))
		fail=$((fail + f + ${e:-0}))
		skip=$((skip + ${s:-0}))
		# A program that died after printing totals still failed.
		if [ "$rc" != 0 ] && [ "$f" = 0 ] && [ "${e:-0}" = 0 ]; then
			echo "=== $t: exit status $rc despite no failed test"
			fail=$((fail + 1))
		fi
	else
		echo "=== $t: no totals (exit status $rc: crashed or timed out)"
		fail=$((fail + 1))
	fi
	echo "=== $t: $((SECONDS - t0)) s"
	echo "$t $((SECONDS - t0))" >>"$result.times"
	# On failure: the program and its failed cases, for the run's summary;
	# what the kernel said meanwhile and the module's counters.
	if [ "$fail" != "$f0" ]; then
		echo "$t ($(sed -n 's/^not ok [0-9]* //p' "$out" | head -n 3 |
			paste -sd ',' -))" >>"$result.failed"
		echo "=== $t failed: kernel logs, and hps_stat"
		dmesg | awk -F '[][]' -v t="$up0" '$2 + 0 >= t' |
			tail -n "$([ "$rc" = stuck ] && echo 300 || echo 40)" |
			sed 's/^/# node1: /'
		# node 2's last lines (bounded: final_peer_death reboots it)
		[ "$HPS_NODES" = 2 ] && timeout 20 hps-vm-peer dmesg |
			tail -n 40 | sed 's/^/# node2: /'
		tr '\n' ' ' </proc/net/hps_stat | sed 's/^/# hps_stat: /'
		echo
		# node 2's counters: which end aborted, and why
		[ "$HPS_NODES" = 2 ] && timeout 20 hps-vm-peer cat /proc/net/hps_stat |
			tr '\n' ' ' | sed 's/^/# node2 hps_stat: /' && echo
		# Memory and the device's GIDs (rxe sends nothing without a
		# valid source GID, nor without an skb).
		grep -E '^(MemFree|MemAvailable|Slab|SUnreclaim):' /proc/meminfo |
			tr -s ' \n' ' ' | sed 's/^/# meminfo: /'
		echo
		rdma link show | sed 's/^/# /'
		# (one grep: a cat per entry took minutes on the debug kernel)
		grep -Hv '^0000:0000:0000:0000:0000:0000:0000:0000$' \
			/sys/class/infiniband/*/ports/1/gids/* 2>/dev/null |
			sed 's|^/sys/class/infiniband/\([^:]*\):|# \1 |'
	fi
	rm -f "$out" "$out.raw" "$out.rc"
	# the counts so far (a run past its timeout still reports them)
	echo "$pass $fail $skip" >"$result"
	if [ "$rc" = stuck ]; then
		echo "=== the tests after $t are not run: a task is stuck in the kernel"
		break
	fi
done
rm -f "$result.running"
echo "$pass $fail $skip" >"$result"
echo "=== $HPS_NODES node(s), $HPS_RDMA: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
