#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Smoke test of the benchmark tool: every hps-bench test, tiny, once for
# AF_HPS and TCP, pingpong and stream for rsockets, one stream over
# AF_SMC, and connrate of AF_HPS clients that fall back to TCP (hps-fb,
# against a TCP server, each connection counted); servers on the peer
# (node 2, or node 1 itself over loopback);
# on one node, lat-breakdown.sh's stages of a traced pingpong, blocking
# and busy-polling, ab-modules.sh with the tree's module (reloaded) and
# redis-cost.sh.
# Checks the exit status (which covers hps-bench's own data checks: echo
# compare, stream checksums) and the shape of the CSV line (and for conns
# that every connection was opened), never the speed.
#
# AF_SMC here is plain socket(AF_SMC) without a pnet table or user EID, so
# over rxe and siw it falls back to TCP inside the kernel: the case checks
# that the tool runs and the data arrive intact over that path, not SMC-R.
#
# The TCP and AF_SMC rows do not depend on the RDMA transport: make check
# runs them on one node only (make check-full everywhere).
#
# Prints TAP and the kselftest totals line.
#
# hps-configs: 1:rxe 2:siw
set -u
cd "$(dirname "$0")/.." || exit 1
top=$PWD
bench=$top/tools/bench/hps-bench
ncols=26	# columns of hps-bench's CSV line
pass=0 fail=0 n=0
peer=${HPS_PEER:?run inside an hps-vm guest}

tests=(
	"pingpong --size 64 --iters 20"
	"stream --size 65536 --iters 20"
	"stream --size 64 --iters 200 --no-nodelay"
	"bidir --size 4096 --iters 20"
	"streams --streams 2 --size 65536 --iters 10"
	"fanin --streams 2 --size 64 --iters 20"
	"fanout --streams 2 --size 65536 --iters 10"
	"connrate --size 64 --iters 5"
	"conns --conns 8 --busy 2 --size 64 --iters 20"
)
# rsockets (rdma-core 44) only with the two one-connection tests: on two
# nodes over siw, its fanout and connrate stalled until the watchdog, and
# bidir and fanin exited with errors (seen in make check; the same runs
# pass over TCP and AF_HPS). They test rsockets, not AF_HPS. For the same
# reason a failed rsockets run is tried once more with a fresh server (its
# stream once failed in connect() with EINVAL on two siw nodes): the smoke
# test is of hps-bench, and AF_HPS and TCP get no second try.
rs_tests=("${tests[@]:0:2}")

# tcp_tests and smc: the rows that run on one node only
once() { [ "$HPS_NODES" = 1 ] || [ -n "${HPS_FULL:-}${HPS_EVERYWHERE:-}" ]; }
tcp_tests=() smc=0
once && tcp_tests=("${tests[@]}") smc=1

# lat-breakdown.sh (one node: it traces both ends in one buffer), and
# ab-modules.sh and redis-cost.sh (one node)
lb=0
[ "$HPS_NODES" = 1 ] && lb=4

echo "TAP version 13"
echo "1..$(( ${#tests[@]} + ${#tcp_tests[@]} + ${#rs_tests[@]} + smc + 1 + lb ))"

result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		pass=$((pass + 1))
		echo "ok $n $2"
	else
		fail=$((fail + 1))
		echo "not ok $n $2"
	fi
}

# wait_listen TRANSPORT PORT: rdma_cm listeners show in 'rdma resource';
# TCP's and AF_SMC's (a TCP socket inside) in ss
wait_listen() {
	case $1 in
	hps|rsocket) hps-vm-peer hps-vm-wait-listen "$2" 30 >/dev/null 2>&1 ;;
	*) hps-vm-peer sh -c "for i in \$(seq 300); do
		ss -Hltn 'sport = :$2' | grep -q . && exit 0; sleep 0.1
		done; exit 1" >/dev/null 2>&1 ;;
	esac
}

# run_one TRANSPORT PORT TEST ARGS...: one client run, checked
run_one() {
	local t=$1 port=$2 out rc cols
	shift 2
	out=$(timeout -k 5 120 "$bench" --client "$peer" --transport "$t" \
		--port "$port" --test "$@" --csv 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	[ "$rc" = 0 ] || { echo "# exit status $rc"; return 1; }
	cols=$(echo "$out" | grep -E "^$t,$1," | tail -n1 | awk -F, '{ print NF }')
	[ "${cols:-0}" = "$ncols" ] ||
		{ echo "# CSV line has ${cols:-no} columns, want $ncols"; return 1; }
	# conns: every connection asked for was opened (iters = conns, no
	# conn_err), since its exit status is 0 when only some were
	[ "$1" != conns ] || echo "$out" | grep -E "^$t,$1," | tail -n1 |
		awk -F, '$4 == $20 && $21 == "" { ok = 1 } END { exit !ok }' ||
		{ echo "# conns did not open every connection"; return 1; }
}

job=
server_start() {	# TRANSPORT PORT
	job=$(hps-vm-peer --bg "$bench" --server --transport "$1" \
		--port "$2" --nports 2)
	wait_listen "$1" "$2" && return
	echo "# the $1 server did not start"
	server_stop
	return 1
}

server_stop() {
	hps-vm-peer --kill "$job" >/dev/null 2>&1
	hps-vm-peer --wait "$job" 10 2>&1 | grep -v 'listening on' |
		sed 's/^/# server: /'
}

# suite TRANSPORT TEST-LINES...: a fresh server after a failure, so that
# one failure does not take the following tests with it
suite() {
	local t=$1 spec up=0 rc
	shift
	for spec in "$@"; do
		if [ $up = 0 ]; then
			port=$((port + 2))
			server_start "$t" "$port" || { result 1 "$t ${spec%% *}"; continue; }
			up=1
		fi
		# shellcheck disable=SC2086 # spec is words on purpose
		run_one "$t" "$port" $spec
		rc=$?
		if [ $rc != 0 ] && [ "$t" = rsocket ]; then
			echo "# rsockets failed; once more with a fresh server"
			server_stop
			port=$((port + 2))
			if server_start "$t" "$port"; then
				# shellcheck disable=SC2086
				run_one "$t" "$port" $spec
				rc=$?
			else
				up=0
			fi
		fi
		result $rc "$t ${spec%% *}"
		[ $rc = 0 ] || { server_stop; up=0; }
	done
	[ $up = 0 ] || server_stop
}

port=$((21000 + RANDOM % 20000))
suite hps "${tests[@]}"
[ ${#tcp_tests[@]} = 0 ] || suite tcp "${tcp_tests[@]}"
suite rsocket "${rs_tests[@]}"
[ "$smc" = 0 ] || suite smc "stream --size 65536 --iters 20"

# hps-fb: AF_HPS clients of a TCP server fall back, one fallback each
fallbacks() { hps-vm-fallbacks; }
port=$((port + 2))
if server_start tcp "$port"; then
	f0=$(fallbacks)
	run_one hps-fb "$port" connrate --size 64 --iters 5
	rc=$?
	# each of the 5, and the client's connections asking the server
	# for its CPU time
	[ $rc = 0 ] && [ $(($(fallbacks) - f0)) -ge 5 ] ||
		{ echo "# fallbacks: $(($(fallbacks) - f0)), want 5 or more"; rc=1; }
	result $rc "hps-fb connrate (falls back to TCP)"
	server_stop
else
	result 1 "hps-fb connrate (falls back to TCP)"
fi

# tcp-hps (make bench's row): TCP clients of an AF_HPS server whose listener
# takes them over TCP, one fallback_tcp_client each on the server's node.
peer_tcp_clients() {
	hps-vm-peer awk '$1 == "fallback_tcp_client" { print $2 }' \
		/proc/net/hps_stat
}
port=$((port + 2))
if server_start hps-fb "$port"; then
	f0=$(peer_tcp_clients)
	run_one tcp "$port" connrate --size 64 --iters 5
	rc=$?
	[ $rc = 0 ] && [ $(($(peer_tcp_clients) - f0)) -ge 5 ] ||
		{ echo "# TCP clients: $(($(peer_tcp_clients) - f0)), want 5 or more"; rc=1; }
	result $rc "tcp-hps connrate (TCP clients of an AF_HPS listener)"
	server_stop
else
	result 1 "tcp-hps connrate (TCP clients of an AF_HPS listener)"
fi

# The latency breakdown: every stage found for nearly every message of
# 200 round trips (220 with the warm-up, 440 messages)
if [ "$lb" != 0 ]; then
	out=$(timeout -k 5 120 "$top/tools/bench/lat-breakdown.sh" 200 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	msgs=$(echo "$out" | awk '/^messages:/ { print $2 }')
	stages=$(echo "$out" | grep -cE '^(send|wire|wake|recv|oneway) +[0-9.]+ +[0-9.]+$')
	wakes=$(echo "$out" | grep -cE '^  wake, reader asleep on the (completion.s|other) CPU: [0-9]+, median')
	[ "$rc" = 0 ] && [ "${msgs:-0}" -ge 400 ] && [ "$stages" = 5 ] &&
		[ "$wakes" = 2 ]
	result $? "lat-breakdown.sh: five stages over ${msgs:-no} messages, the wakeups by CPU"
	# the same with busy polling (net.core.busy_read 1000, put back)
	out=$(timeout -k 5 120 "$top/tools/bench/lat-breakdown.sh" 200 1000 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	msgs=$(echo "$out" | awk '/^messages:/ { print $2 }')
	stages=$(echo "$out" | grep -cE '^(send|wire|wake|recv|oneway) +[0-9.]+ +[0-9.]+$')
	[ "$rc" = 0 ] && [ "${msgs:-0}" -ge 400 ] && [ "$stages" = 5 ] &&
		[ "$(cat /proc/sys/net/core/busy_read)" = 0 ]
	result $? "lat-breakdown.sh 200 1000 (busy polling): five stages over ${msgs:-no} messages, busy_read put back"

	# one round with the module loaded now, reloaded: its line whole
	out=$(timeout -k 5 300 "$top/tools/bench/ab-modules.sh" -r 1 -n 300 \
		"$top/af_hps.ko" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	[ "$rc" = 0 ] && lsmod | grep -q '^af_hps ' &&
		echo "$out" | grep -qE '^round 1 af_hps: redis requests/s: PING_INLINE [0-9.]+, .*sum [0-9]+ \| fences [0-9]+, unsignaled [0-9]+ \| pingpong median [0-9.]+ us \| connrate [0-9.]+ connections/s$'
	result $? "ab-modules.sh -r 1 -n 300 af_hps.ko: redis, pingpong and connrate, the module loaded after"

	# per-request costs: both transports, CPU and softirqs, and AF_HPS's
	# own counters and the device's packets on its side only
	out=$(timeout -k 5 120 "$top/tools/bench/redis-cost.sh" 300 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	hps_part=$(echo "$out" | sed -n '/^== hps:/,$p')
	[ "$rc" = 0 ] &&
		echo "$out" | grep -qE '^== tcp: [0-9]+ ms, per request \(of 600\):$' &&
		echo "$out" | sed -n '/^== tcp:/,/^== hps:/p' | grep -qE '^  cpu_sys +[0-9.]+ us$' &&
		! echo "$out" | sed -n '/^== tcp:/,/^== hps:/p' | grep -q 'tx_unsignaled' &&
		echo "$hps_part" | grep -qE '^  cpu_softirq +[0-9.]+ us$' &&
		echo "$hps_part" | grep -qE '^  (tx_unsignaled|conn_active) +[0-9.]+$' &&
		echo "$hps_part" | grep -qE '^  dev_(sent|rcvd)_pkts +[0-9.]+$'
	result $? "redis-cost.sh 300: per-request CPU over TCP and AF_HPS, AF_HPS's counters and packets on its side only"
fi

echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ "$fail" = 0 ]
