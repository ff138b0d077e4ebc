#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Unmodified programs over AF_HPS through hps_run, node 1 to its peer
# (node 2, or itself over RDMA loopback), checked by content: socat moving a
# file each way, and Python's http.server serving a file to urllib; then
# hps_run's curl against a plain http.server (not under hps_run), which
# hps_run reaches by falling back to TCP, plain curl against an hps_run
# http.server, whose listener takes it over TCP, and socat used
# interactively both ways round (af_hps.rst, "TCP fallback").
# Prints TAP and the kselftest totals line.
#
# make check runs it on two nodes over rxe, and hps_apps2.sh over siw: each
# transport carries one set of real programs between two machines (the
# data path under them is hps_peer's, hps_across's and hps_long's, on
# both); make check-full runs both sets on both.
#
# hps-configs: 2:rxe
set -u
cd "$(dirname "$0")/.." || exit 1
top=$PWD
run=$top/tools/preload/hps_run
pass=0 fail=0 n=0
check() {
	local name=$1; shift
	n=$((n + 1))
	if "$@"; then pass=$((pass + 1)); echo "ok $n $name"
	else fail=$((fail + 1)); echo "not ok $n $name"; fi
}
port() { echo $((20000 + RANDOM % 20000)); }
# In the project tree, which both guests mount: the peer sees the files.
mkdir -p "$top/build"
work=$(mktemp -d "$top/build/hps_apps.XXXXXX")
mib=8	# make check-full: 24
[ -n "${HPS_FULL:-}" ] && mib=24
head -c $((mib << 20)) /dev/urandom >"$work/in"
want=$(sha256sum <"$work/in" | cut -d' ' -f1)
peerwork=$work/peer
mkdir -p "$peerwork"

active() { awk '$1 == "conn_active" { print $2 }' /proc/net/hps_stat; }
before=$(active)

echo "TAP version 13"
echo "1..5"

# socat: node 1 sends 8 MiB (24), the peer writes it to a file.
socat_push() {
	local p id got
	p=$(port)
	id=$(hps-vm-peer --bg "$run" socat -u "TCP4-LISTEN:$p,reuseaddr" \
		"CREATE:$peerwork/out") || return 1
	hps-vm-peer hps-vm-wait-listen "$p" 60 || return 1
	timeout 120 "$run" socat -u "OPEN:$work/in" "TCP4:$HPS_PEER:$p" || return 1
	hps-vm-peer --wait "$id" 120 || return 1
	got=$(hps-vm-peer sh -c "sha256sum <$peerwork/out" | cut -d' ' -f1)
	[ "$got" = "$want" ] || { echo "# sha256 $got, want $want"; return 1; }
}
check "socat to the peer over AF_HPS, $mib MiB, sha256 equal" socat_push

# socat: the peer serves the file, node 1 reads it (IPv6 this time).
socat_pull() {
	local p id got
	p=$(port)
	hps-vm-peer cp "$work/in" "$peerwork/src" || return 1
	id=$(hps-vm-peer --bg "$run" socat -u "OPEN:$peerwork/src" \
		"TCP6-LISTEN:$p,reuseaddr") || return 1
	hps-vm-peer hps-vm-wait-listen "$p" 60 || return 1
	timeout 120 "$run" socat -u "TCP6:[$HPS_PEER6]:$p" "CREATE:$work/out" ||
		return 1
	hps-vm-peer --wait "$id" 120 || return 1
	got=$(sha256sum <"$work/out" | cut -d' ' -f1)
	[ "$got" = "$want" ] || { echo "# sha256 $got, want $want"; return 1; }
}
check "socat from the peer over AF_HPS (IPv6), sha256 equal" socat_pull

# Python's http.server and urllib, both unmodified.
http() {
	local p id got
	p=$(port)
	id=$(hps-vm-peer --bg sh -c "cd $peerwork && exec $run python3 -m http.server --bind $HPS_PEER $p") ||
		return 1
	hps-vm-peer hps-vm-wait-listen "$p" 60 || { hps-vm-peer --kill "$id"; return 1; }
	got=$(timeout 120 "$run" python3 -c "import hashlib, urllib.request
print(hashlib.sha256(urllib.request.urlopen('http://$HPS_PEER:$p/src').read()).hexdigest())")
	hps-vm-peer --kill "$id"
	[ "$got" = "$want" ] || { echo "# sha256 '$got', want $want"; return 1; }
}
check "python3 http.server to urllib over AF_HPS, sha256 equal" http

# Every connection above was an AF_HPS one (over RDMA), not TCP.
all_hps() { [ $(($(active) - before)) -eq 3 ]; }
check "the three connections were AF_HPS connections (conn_active +3)" all_hps

# hps_run, no rules file, against a plain TCP server: connect() falls back
# to TCP (af_hps.rst, "TCP fallback") and curl gets the file intact.
fallbacks() { hps-vm-fallbacks; }
fallback_curl() {
	local p id got f0
	p=$(port)
	id=$(hps-vm-peer --bg sh -c "cd $peerwork && exec python3 -m http.server --bind $HPS_PEER $p") ||
		return 1
	hps-vm-peer hps-vm-wait-listen --tcp "$p" 60 || { hps-vm-peer --kill "$id"; return 1; }
	f0=$(fallbacks)
	got=$(timeout 120 "$run" curl -sSf "http://$HPS_PEER:$p/src" |
		sha256sum | cut -d' ' -f1)
	hps-vm-peer --kill "$id"
	[ "$got" = "$want" ] || { echo "# sha256 '$got', want $want"; return 1; }
	[ $(($(fallbacks) - f0)) -eq 1 ] ||
		{ echo "# fallbacks: $(($(fallbacks) - f0)), want 1"; return 1; }
}
check "hps_run curl to a plain TCP http.server: falls back, sha256 equal" fallback_curl

# The other way: plain curl (no hps_run) against an hps_run http.server.
# Its listener takes TCP clients on its port too (af_hps.rst, "TCP
# fallback"), and hands this one out as a socket that fell back; over
# iWARP (make check-full) its RDMA side listens on another port, which
# AF_HPS clients ask for (protocol.rst, "iWARP port query").
peer_stat() {
	hps-vm-peer awk -v n="$1" '$1 == n { print $2 }' /proc/net/hps_stat
}
plain_curl_to_hps_server() {
	local p id got c0
	p=$(port)
	id=$(hps-vm-peer --bg sh -c "cd $peerwork && exec $run python3 -m http.server --bind $HPS_PEER $p") ||
		return 1
	hps-vm-peer hps-vm-wait-listen --tcp "$p" 60 || { hps-vm-peer --kill "$id"; return 1; }
	c0=$(peer_stat fallback_tcp_client)
	got=$(timeout 120 curl -sSf -m 30 "http://$HPS_PEER:$p/src" |
		sha256sum | cut -d' ' -f1)
	hps-vm-peer --kill "$id"
	[ "$got" = "$want" ] || { echo "# sha256 '$got', want $want"; return 1; }
	[ $(($(peer_stat fallback_tcp_client) - c0)) -eq 1 ] ||
		{ echo "# TCP clients accepted: $(($(peer_stat fallback_tcp_client) - c0)), want 1"; return 1; }
}
check "plain curl to an hps_run http.server: over TCP, sha256 equal" \
	plain_curl_to_hps_server

# Interactive use, as ssh's: socat line by line, each line's echo read
# before the next is written, over both fallbacks: a plain client of an
# hps_run server (EXEC:cat), and an hps_run client of a plain server.
interactive() {	# SERVER-RUN CLIENT-RUN
	local srun=$1 crun=$2 p id i line want_line ok=0
	p=$(port)
	# fork, as a real server would
	id=$(hps-vm-peer --bg $srun socat "TCP4-LISTEN:$p,bind=$HPS_PEER,reuseaddr,fork" EXEC:cat) ||
		return 1
	hps-vm-peer hps-vm-wait-listen --tcp "$p" 60 || { hps-vm-peer --kill "$id"; return 1; }
	coproc SOC { timeout 60 $crun socat - "TCP4:$HPS_PEER:$p"; }
	for i in 1 2 3 4 5; do
		want_line="line $i $RANDOM$RANDOM"
		echo "$want_line" >&"${SOC[1]}" || break
		read -r -t 10 line <&"${SOC[0]}" || break
		[ "$line" = "$want_line" ] || { echo "# got '$line', want '$want_line'"; break; }
		ok=$((ok + 1))
	done
	[ -z "${SOC[1]:-}" ] || eval "exec ${SOC[1]}>&-"
	[ -z "${SOC_PID:-}" ] || wait "$SOC_PID"
	hps-vm-peer --kill "$id" >/dev/null 2>&1
	[ "$ok" = 5 ] || { echo "# $ok of 5 lines echoed"; return 1; }
}
check "interactive socat, plain client to an hps_run server: 5 lines echoed" \
	interactive "$run" ""
check "interactive socat, hps_run client to a plain server: 5 lines echoed" \
	interactive "" "$run"
sed 's/^/# /' /proc/net/hps_stat

rm -rf "$work"
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ "$fail" = 0 ]
