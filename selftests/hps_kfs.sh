#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hps_kfs, the kernel file server (tools/kfs), on the peer (node 2, or
# node 1 itself): it refuses bad parameters; files fetched over AF_HPS by
# one client and by eight at once arrive intact; bad requests are refused
# and the server goes on serving; idle, vanishing and stalled clients do not
# stop it; rmmod with clients connected works and leaves af_hps's reference
# count where it was; the same server over TCP. Prints TAP, the AF_HPS and
# TCP rates as comments and the kselftest totals line. A missing
# prerequisite (module or client not built) is a failure, not a skip.
set -u
cd "$(dirname "$0")/.." || exit 1
top=$PWD
ko=$top/tools/kfs/hps_kfs.ko
get=$top/tools/kfs/kfs-get
pass=0 fail=0 n=0
check() {
	local name=$1; shift
	n=$((n + 1))
	if "$@"; then pass=$((pass + 1)); echo "ok $n $name"
	else fail=$((fail + 1)); echo "not ok $n $name"; fi
}
sha() { sha256sum <"$1" | cut -d' ' -f1; }
same() {
	local a b
	a=$(sha "$1") b=$(sha "$2")
	[ "$a" = "$b" ] || { echo "# $2: sha256 $b, want $a"; return 1; }
}
loaded() { hps-vm-peer grep -q '^hps_kfs ' /proc/modules; }
refcnt() { hps-vm-peer cat /sys/module/af_hps/refcnt; }
active() { awk '$1 == "conn_active" { print $2 }' /proc/net/hps_stat; }
rate() { sed -n 's/.* \([0-9.]*\) MB\/s over .*/\1/p' "$1"; }

# Served from the project tree, which both guests mount. Only files
# readable by everyone are served.
umask 022
mkdir -p "$top/build"
work=$(mktemp -d "$top/build/hps_kfs.XXXXXX")
root=$work/root
out=$work/out
mkdir -p "$root/sub/deeper" "$out"
chmod 755 "$work" "$root"
head -c $((64 << 20)) /dev/urandom >"$root/big"
for i in 1 2 3 4 5 6 7 8; do
	head -c $((2 << 20)) /dev/urandom >"$root/f$i"
done
head -c 12345 /dev/urandom >"$root/sub/deeper/small"
: >"$root/empty"
echo secret >"$root/private"
chmod 600 "$root/private"
ln -s /etc/passwd "$root/link"
ln -s /etc "$root/sub/abs"
ln -s ../.. "$root/sub/up"
echo outside >"$work/outside"

port=$((20000 + RANDOM % 20000))
cleanup() {
	loaded && hps-vm-peer rmmod hps_kfs
	rm -rf "$work"
}
trap cleanup EXIT

echo "TAP version 13"
echo "1..27"

prereqs() {
	[ -r "$ko" ] || { echo "# $ko not built (make tools)"; return 1; }
	[ -x "$get" ] || { echo "# $get not built (make tools)"; return 1; }
	! loaded || { echo "# hps_kfs is loaded already"; return 1; }
}
check "hps_kfs.ko and kfs-get are built" prereqs

refuses() {
	if hps-vm-peer insmod "$ko" port=$port 2>/dev/null; then
		echo "# loaded without root="; return 1
	fi
	if hps-vm-peer insmod "$ko" root="$root/big" port=$port 2>/dev/null; then
		echo "# loaded with a file as root"; return 1
	fi
	if hps-vm-peer insmod "$ko" root="$root" transport=udp port=$port \
		2>/dev/null; then
		echo "# loaded with transport=udp"; return 1
	fi
	! loaded
}
check "insmod refuses no root=, a file as root and a bad transport" refuses

ref0=$(refcnt)
echo "# af_hps refcnt on the peer before: $ref0"
start_hps() {
	hps-vm-peer insmod "$ko" root="$root" port=$port timeout=5 max_conns=16
}
check "insmod hps_kfs on the peer, AF_HPS, port $port" start_hps

big() {
	local a0=$(active)
	timeout 120 "$get" "$HPS_PEER" $port big "$out/big" 2>"$work/rate.hps" ||
		{ cat "$work/rate.hps"; return 1; }
	sed 's/^/# /' "$work/rate.hps"
	same "$root/big" "$out/big" || return 1
	[ $(($(active) - a0)) -ge 1 ] ||
		{ echo "# conn_active did not move: not an AF_HPS connection"; return 1; }
}
check "64 MiB over AF_HPS, sha256 equal (an AF_HPS connection)" big

parallel() {
	local i pids=() bad=0
	for i in 1 2 3 4 5 6 7 8; do
		timeout 120 "$get" "$HPS_PEER" $port "f$i" "$out/f$i" 2>"$out/log$i" &
		pids+=($!)
	done
	for i in 1 2 3 4 5 6 7 8; do
		wait "${pids[$((i - 1))]}" || { bad=1; cat "$out/log$i"; }
		same "$root/f$i" "$out/f$i" || bad=1
	done
	[ $bad = 0 ]
}
check "8 clients at once, every sha256 equal" parallel

nested() {
	timeout 30 "$get" "$HPS_PEER" $port sub/deeper/small "$out/small" &&
		same "$root/sub/deeper/small" "$out/small" &&
		timeout 30 "$get" "$HPS_PEER" $port empty "$out/empty" &&
		[ ! -s "$out/empty" ]
}
check "a nested name and an empty file" nested

two() {
	{ echo "OK $((2 << 20))"; cat "$root/f1"
	  echo "OK 12345"; cat "$root/sub/deeper/small"; } >"$out/two.want"
	timeout 30 "$get" --request $'GET f1\nGET sub/deeper/small\r\n' \
		"$HPS_PEER" $port "$out/two" && same "$out/two.want" "$out/two"
}
check "two requests on one connection" two

# A bad request gets "ERR <ERRNO> <text>" (kfs-get exits 1), or at worst
# a closed connection (3, with no reply); never data, never a hang.
refused() {
	local want=$1 rc
	shift
	timeout 30 "$get" "$@" "$out/bad" 2>"$out/bad.log"
	rc=$?
	cut -c1-160 "$out/bad.log" | sed 's/^/# /'
	[ ! -s "$out/bad" ] || { echo "# data was sent"; return 1; }
	case $rc in
	1) grep -qE ": ($want) " "$out/bad.log" ||
		{ echo "# want $want"; return 1; } ;;
	3) grep -q "before a reply" "$out/bad.log" ;;
	*) echo "# exit status $rc"; return 1 ;;
	esac
}
long=$(printf 'a%.0s' $(seq 1100))
check "bad: ../etc/passwd" refused EACCES "$HPS_PEER" $port ../etc/passwd
check "bad: /etc/passwd" refused EACCES "$HPS_PEER" $port /etc/passwd
check "bad: sub/abs/passwd (sub/abs -> /etc)" refused 'ENOENT|EACCES|ELOOP' \
	"$HPS_PEER" $port sub/abs/passwd
check "bad: sub/up/outside (sub/up -> ../..)" refused 'ENOENT|EACCES' \
	"$HPS_PEER" $port sub/up/outside
check "bad: link (a symlink)" refused ELOOP "$HPS_PEER" $port link
check "bad: missing file" refused ENOENT "$HPS_PEER" $port no/such/file
check "bad: a 1100-byte name" refused ENAMETOOLONG "$HPS_PEER" $port "$long"
check "bad: a directory" refused EISDIR "$HPS_PEER" $port sub
check "bad: a file not readable by everyone" refused EACCES "$HPS_PEER" $port \
	private

garbage() {
	local r
	r=$(timeout 30 "$get" --request $'\x01\xffhello there\n' "$HPS_PEER" $port |
		tr -d '\0') || return 1
	echo "# reply: $r"
	[ -z "$r" ] || [ "${r#ERR EPROTO }" != "$r" ]
}
check "bad: a garbage line gets ERR EPROTO" garbage

still() {
	timeout 30 "$get" "$HPS_PEER" $port f3 "$out/again" 2>"$out/still.log" ||
		{ sed 's/^/# /' "$out/still.log"; return 1; }
	same "$root/f3" "$out/again"
}
check "the server still serves after the bad requests" still

# Idle (timeout=5) and vanishing clients: the server drops them and goes on.
idle() {
	local pid rc
	timeout 30 "$get" --idle 40 "$HPS_PEER" $port 2>"$out/idle.log" &
	pid=$!
	sleep 1
	still || return 1
	wait $pid
	rc=$?
	sed 's/^/# /' "$out/idle.log"
	[ $rc = 0 ]
}
check "a client that sends nothing is closed after timeout=5, others served" idle

vanish() {
	timeout 30 "$get" --abort-after $((1 << 20)) "$HPS_PEER" $port big \
		/dev/null 2>"$out/vanish.log" ||
		{ sed 's/^/# /' "$out/vanish.log"; return 1; }
	timeout 120 "$get" "$HPS_PEER" $port big "$out/big2" 2>"$out/vanish.log" ||
		{ sed 's/^/# /' "$out/vanish.log"; return 1; }
	same "$root/big" "$out/big2"
}
check "a client vanishing mid-transfer does not stop the server" vanish

# IPv6: the default listener is the IPv4 wildcard (see kfs.rst).
ipv6() {
	hps-vm-peer rmmod hps_kfs &&
		hps-vm-peer insmod "$ko" root="$root" port=$port addr="$HPS_PEER6" ||
		return 1
	timeout 30 "$get" "$HPS_PEER6" $port sub/deeper/small "$out/small6" &&
		same "$root/sub/deeper/small" "$out/small6" &&
		timeout 120 "$get" "$HPS_PEER6" $port f4 "$out/f4.6" &&
		same "$root/f4" "$out/f4.6"
}
check "AF_HPS over IPv6 (addr=$HPS_PEER6)" ipv6

# Unload with clients connected: idle ones, ones stalled mid-transfer (the
# server blocked in a send) and busy ones.
unload() {
	local i pids=() t0 t rc
	# A send timeout longer than the test: the stalled sends stay blocked.
	! loaded || hps-vm-peer rmmod hps_kfs || return 1
	hps-vm-peer insmod "$ko" root="$root" port=$port timeout=60 || return 1
	for i in 1 2; do
		timeout 90 "$get" --idle 60 "$HPS_PEER" $port 2>/dev/null &
		pids+=($!)
		timeout 90 "$get" --stall-after $((1 << 20)) "$HPS_PEER" $port \
			big /dev/null 2>"$out/stall$i" &
		pids+=($!)
		timeout 90 "$get" "$HPS_PEER" $port big /dev/null 2>/dev/null &
		pids+=($!)
	done
	for i in $(seq 100); do
		[ "$(cat "$out/stall1" "$out/stall2" 2>/dev/null |
			grep -c stalling)" = 2 ] && break
		sleep 0.2
	done
	t0=$(date +%s)
	hps-vm-peer timeout 60 rmmod hps_kfs
	rc=$?
	t=$(($(date +%s) - t0))
	echo "# rmmod: status $rc after ${t}s"
	for i in "${pids[@]}"; do wait "$i"; done
	[ $rc = 0 ] && ! loaded
}
check "rmmod hps_kfs with idle, stalled and busy clients connected" unload

refs_back() {
	local i r
	for i in $(seq 60); do
		r=$(refcnt)
		[ "$r" = "$ref0" ] && return 0
		sleep 0.5
	done
	echo "# af_hps refcnt $r, was $ref0"
	return 1
}
check "af_hps's reference count is back to $ref0" refs_back

# The same server over TCP, for comparison; "::" takes IPv4 and IPv6.
port=$((port + 1))
start_tcp() {
	hps-vm-peer insmod "$ko" root="$root" port=$port transport=tcp addr=::
}
check "insmod hps_kfs on the peer, TCP on [::], port $port" start_tcp

tcp() {
	timeout 120 "$get" --transport tcp "$HPS_PEER" $port big "$out/big" \
		2>"$work/rate.tcp" || { cat "$work/rate.tcp"; return 1; }
	sed 's/^/# /' "$work/rate.tcp"
	same "$root/big" "$out/big"
}
check "64 MiB over TCP, sha256 equal" tcp

tcp_par() {
	local i pids=() bad=0
	for i in 1 2 3 4; do
		timeout 120 "$get" --transport tcp "$HPS_PEER6" $port "f$i" \
			"$out/t$i" 2>/dev/null &
		pids+=($!)
	done
	for i in 1 2 3 4; do
		wait "${pids[$((i - 1))]}" || bad=1
		same "$root/f$i" "$out/t$i" || bad=1
	done
	[ $bad = 0 ]
}
check "4 TCP clients at once over IPv6, every sha256 equal" tcp_par

stop_tcp() { hps-vm-peer timeout 60 rmmod hps_kfs && ! loaded; }
check "rmmod hps_kfs (TCP)" stop_tcp

echo "# file server rate, 64 MiB, one client: AF_HPS $(rate "$work/rate.hps") MB/s, TCP $(rate "$work/rate.tcp") MB/s ($HPS_NODES node(s), $HPS_RDMA)"
sed 's/^/# /' /proc/net/hps_stat
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ "$fail" = 0 ]
