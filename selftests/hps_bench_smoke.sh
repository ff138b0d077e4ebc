#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Smoke test of the benchmark tool: every hps-bench test, tiny, once for
# AF_HPS, TCP and rsockets, and one stream over AF_SMC; servers on the peer
# (node 2, or node 1 itself over loopback). Checks the exit status (which
# covers hps-bench's own data checks: echo compare, stream checksums) and
# the shape of the CSV line, never the speed.
#
# AF_SMC here is plain socket(AF_SMC) without a pnet table or user EID, so
# over rxe and siw it falls back to TCP inside the kernel: the case checks
# that the tool runs and the data arrive intact over that path, not SMC-R.
#
# Prints TAP and the kselftest totals line.
set -u
cd "$(dirname "$0")/.." || exit 1
top=$PWD
bench=$top/tools/bench/hps-bench
ncols=19	# columns of hps-bench's CSV line
pass=0 fail=0 n=0
peer=${HPS_PEER:?run inside an hps-vm guest}

tests=(
	"pingpong --size 64 --iters 20"
	"stream --size 65536 --iters 20"
	"bidir --size 4096 --iters 20"
	"streams --streams 2 --size 65536 --iters 10"
	"fanin --streams 2 --size 64 --iters 20"
	"fanout --streams 2 --size 65536 --iters 10"
	"connrate --size 64 --iters 5"
)
transports=(hps tcp rsocket)

echo "TAP version 13"
echo "1..$(( ${#tests[@]} * ${#transports[@]} + 1 ))"

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
}

# suite TRANSPORT PORT TEST-LINES...
suite() {
	local t=$1 port=$2 job spec
	shift 2
	job=$(hps-vm-peer --bg "$bench" --server --transport "$t" \
		--port "$port" --nports 2)
	if ! wait_listen "$t" "$port"; then
		echo "# the $t server did not start"
		hps-vm-peer --kill "$job" >/dev/null 2>&1
		hps-vm-peer --wait "$job" 10 2>&1 | sed 's/^/# server: /'
		for spec in "$@"; do
			result 1 "$t ${spec%% *}"
		done
		return
	fi
	for spec in "$@"; do
		# shellcheck disable=SC2086 # spec is words on purpose
		run_one "$t" "$port" $spec
		result $? "$t ${spec%% *}"
	done
	hps-vm-peer --kill "$job" >/dev/null 2>&1
	hps-vm-peer --wait "$job" 10 2>&1 | grep -v 'listening on' |
		sed 's/^/# server: /'
}

port=$((21000 + RANDOM % 20000))
for t in "${transports[@]}"; do
	suite "$t" "$port" "${tests[@]}"
	port=$((port + 2))
done
suite smc "$port" "stream --size 65536 --iters 20"

echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ "$fail" = 0 ]
