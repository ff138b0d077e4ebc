#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hps_kfs, the kernel file server (tools/kfs), on the peer (node 2, or
# node 1 itself): it refuses bad parameters, root=/ and pseudo filesystems;
# files fetched over AF_HPS by one client and by eight at once arrive
# intact; bad requests are refused and the server goes on serving; what its
# identity (nobody, or uid=/gid=) may not read is not served, nor anything
# through a symbolic link or a mount, with one reply for all; clients
# outside clients= are refused, and so is a peer over max_per_peer; a
# request trickled in and a reply read too slowly are ended at their
# deadline; idle, vanishing and stalled clients do not stop it; rmmod with
# clients connected works and leaves af_hps's reference count where it
# was; the same server over TCP. Prints TAP, the AF_HPS and TCP rates as
# comments and the kselftest totals line. A missing prerequisite (module or
# client not built) is a failure, not a skip.
#
# The cases whose result cannot depend on the RDMA transport or the number
# of nodes (insmod's refusals, the names refused and the one reply for
# them, the identity's default, mounts under the root, a garbage line, a
# root on a hung FUSE filesystem, the TCP transport) run on one node only;
# make check-full (HPS_FULL) runs them on two as well. The plan line comes
# last, with the number of cases run.
#
# hps-configs: 1:rxe 2:siw
set -u
cd "$(dirname "$0")/.." || exit 1
top=$PWD
ko=$top/tools/kfs/hps_kfs.ko
get=$top/tools/kfs/kfs-get
hangfs=$top/tools/kfs/kfs-hangfs
pass=0 fail=0 n=0
# The transport-independent cases: on one node, or everywhere in check-full.
once() { [ "$HPS_NODES" = 1 ] || [ -n "${HPS_FULL:-}${HPS_EVERYWHERE:-}" ]; }
check() {
	local name=$1 t0=$SECONDS; shift
	n=$((n + 1))
	if "$@"; then pass=$((pass + 1)); echo "ok $n $name # $((SECONDS - t0)) s"
	else fail=$((fail + 1)); echo "not ok $n $name # $((SECONDS - t0)) s"; fi
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
# Wait on the peer, in one round trip, until the number of the server's
# connection threads passes "test $1" (e.g. -eq 0), for at most $2 s by
# the clock (a look at /proc takes most of a second in a slow guest: a
# count of looks ran 100 s for 10). (A client's close reaches its worker
# a little after the client is done.)
workers_wait() {
	hps-vm-peer sh -c "end=\$((\$(date +%s) + $2))
		while n=\$(grep -lx hps_kfs_conn /proc/[0-9]*/comm 2>/dev/null |
			wc -l); ! [ \$n $1 ]; do
			[ \$(date +%s) -lt \$end ] ||
				{ echo \"# \$n worker(s), want $1\"; exit 1; }
			sleep 0.1
		done"
}
no_workers() { workers_wait "-eq 0" 10; }

# Served from the project tree, which both guests mount. The server reads
# as uid 65534 (nobody) unless told otherwise.
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
# The security fixtures: a private directory (the issue's alice), one of
# another group, files for the identity checks, and mount points.
mkdir "$root/alice" "$root/grp" "$root/own" "$root/mnt" "$root/sys"
echo notes >"$root/alice/notes.txt"
chmod 700 "$root/alice"
echo group >"$root/grp/file"
chgrp 4343 "$root/grp" && chmod 750 "$root/grp"
echo nobody >"$root/nobody_only"
chown 65534:65534 "$root/nobody_only" && chmod 400 "$root/nobody_only"
echo own >"$root/own/f"
chown -R 4242:4343 "$root/own" && chmod 700 "$root/own" &&
	chmod 400 "$root/own/f"
echo grpread >"$root/grpread"
chgrp 4343 "$root/grpread" && chmod 040 "$root/grpread"
nets=198.18.0.0/24,2001:db8::/64

port=$((20000 + RANDOM % 20000))
unmount() {
	hps-vm-peer sh -c "for d in mnt sys; do
		! mountpoint -q '$root'/\$d || umount '$root'/\$d; done"
}
cleanup() {
	loaded && hps-vm-peer timeout 30 rmmod hps_kfs
	unmount
	rm -rf "$work"
}
trap cleanup EXIT

echo "TAP version 13"

prereqs() {
	[ -r "$ko" ] || { echo "# $ko not built (make tools)"; return 1; }
	[ -x "$get" ] || { echo "# $get not built (make tools)"; return 1; }
	[ -x "$hangfs" ] || { echo "# $hangfs not built (make tools)"; return 1; }
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
once && check "insmod refuses no root=, a file as root and a bad transport" \
	refuses

refuses2() {
	# One round trip to the peer for the four.
	hps-vm-peer sh -c "for a in root=/ root=/sys 'root=$root uid=0' \
		'root=$root clients=198.18.0.0/33'; do
		! insmod '$ko' \$a port=$port 2>/dev/null ||
			{ echo \"# loaded with \$a\"; exit 1; }
		done" && ! loaded
}
once && check \
	"insmod refuses root=/, /sys (a pseudo filesystem), uid=0, bad clients=" \
	refuses2

ref0=$(refcnt)
echo "# af_hps refcnt on the peer before: $ref0"
start_hps() {
	hps-vm-peer insmod "$ko" root="$root" port=$port timeout=5 max_conns=16 \
		max_per_peer=16 clients=$nets
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
# a closed connection (3, with no reply); never data, never a hang. With
# strict=1, only the ERR reply will do.
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
	3) [ -z "${strict:-}" ] && grep -q "before a reply" "$out/bad.log" ;;
	*) echo "# exit status $rc"; return 1 ;;
	esac
}
long=$(printf 'a%.0s' $(seq 1100))
once && check "bad: ../etc/passwd" refused EACCES "$HPS_PEER" $port ../etc/passwd
once && check "bad: /etc/passwd" refused EACCES "$HPS_PEER" $port /etc/passwd
once && check "bad: sub/abs/passwd (sub/abs -> /etc)" refused ENOENT \
	"$HPS_PEER" $port sub/abs/passwd
once && check "bad: sub/up/outside (sub/up -> ../..)" refused ENOENT \
	"$HPS_PEER" $port sub/up/outside
once && check "bad: link (a symlink)" refused ENOENT "$HPS_PEER" $port link
once && check "bad: missing file" refused ENOENT "$HPS_PEER" $port no/such/file
once && check "bad: a 1100-byte name" refused ENAMETOOLONG "$HPS_PEER" $port "$long"
once && check "bad: a directory" refused ENOENT "$HPS_PEER" $port sub
once && check "bad: a file only its owner (root) may read, 0600" refused ENOENT \
	"$HPS_PEER" $port private
once && check "bad: alice/notes.txt 0644 in alice/ 0700 (root's)" refused ENOENT \
	"$HPS_PEER" $port alice/notes.txt
once && check "bad: grp/file 0644 in grp/ 0750 of group 4343" refused ENOENT \
	"$HPS_PEER" $port grp/file

# Not there, not the server's to read, not a file: the same reply.
same_reply() {
	local want n r
	want=$(timeout 30 "$get" --request $'GET nothere/notes.txt\n' \
		"$HPS_PEER" $port) || return 1
	echo "# reply: $want"
	[ "$want" = "ERR ENOENT not found" ] || return 1
	for n in alice/notes.txt alice/nothere private sub; do
		r=$(timeout 30 "$get" --request "GET $n"$'\n' "$HPS_PEER" $port) ||
			return 1
		[ "$r" = "$want" ] || { echo "# $n: '$r'"; return 1; }
	done
}
once && check "one reply for missing, private and a directory" same_reply

by_nobody() {
	timeout 30 "$get" "$HPS_PEER" $port nobody_only "$out/nobody" &&
		[ "$(cat "$out/nobody")" = nobody ]
}
once && check "served as uid 65534 by default: a file only it may read (0400)" \
	by_nobody

# A tmpfs and a sysfs mounted under the root on the server's node: their
# files are there (the peer reads them) but are not served.
mounts() {
	local bad=0
	hps-vm-peer sh -c "mount -t tmpfs tmpfs '$root/mnt' &&
		echo m >'$root/mnt/f' && mount -t sysfs sysfs '$root/sys' &&
		cat '$root/mnt/f' '$root/sys/module/hps_kfs/parameters/port'" \
		>/dev/null ||
		{ echo "# could not mount on the peer"; unmount; return 1; }
	refused ENOENT "$HPS_PEER" $port mnt/f || bad=1
	refused ENOENT "$HPS_PEER" $port sys/module/hps_kfs/parameters/port ||
		bad=1
	unmount
	[ $bad = 0 ]
}
once && check "bad: files on a tmpfs and a sysfs mounted under the root" mounts

garbage() {
	local r
	r=$(timeout 30 "$get" --request $'\x01\xffhello there\n' "$HPS_PEER" $port |
		tr -d '\0') || return 1
	echo "# reply: $r"
	[ -z "$r" ] || [ "${r#ERR EPROTO }" != "$r" ]
}
once && check "bad: a garbage line gets ERR EPROTO" garbage

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
		hps-vm-peer insmod "$ko" root="$root" port=$port addr="$HPS_PEER6" \
			clients=$nets || return 1
	timeout 30 "$get" "$HPS_PEER6" $port sub/deeper/small "$out/small6" &&
		same "$root/sub/deeper/small" "$out/small6" &&
		timeout 120 "$get" "$HPS_PEER6" $port f4 "$out/f4.6" &&
		same "$root/f4" "$out/f4.6"
}
check "AF_HPS over IPv6 (addr=$HPS_PEER6)" ipv6

# clients=: a peer outside it is refused before its request; without it,
# only the host's own addresses are served (node 1 is not node 2's).
allow() {
	hps-vm-peer rmmod hps_kfs &&
		hps-vm-peer insmod "$ko" root="$root" port=$port \
			clients=198.18.0.99/32,2001:db8::99/128 || return 1
	strict=1 refused EACCES "$HPS_PEER" $port f1 || return 1
	hps-vm-peer rmmod hps_kfs &&
		hps-vm-peer insmod "$ko" root="$root" port=$port || return 1
	if [ "$HPS_NODES" = 1 ]; then
		timeout 30 "$get" "$HPS_PEER" $port sub/deeper/small \
			"$out/local" && same "$root/sub/deeper/small" "$out/local"
	else
		strict=1 refused EACCES "$HPS_PEER" $port f1
	fi
}
check "a client outside clients= refused; no clients=: this host only" allow


# uid=4242 gid=4343: what that identity may read is served, what nobody
# or root may read is not. The same server has the deadline and
# max_per_peer settings of the next two checks.
identity() {
	local bad=0
	hps-vm-peer rmmod hps_kfs &&
		hps-vm-peer insmod "$ko" root="$root" port=$port uid=4242 \
			gid=4343 timeout=30 deadline=3 min_rate=32768 \
			max_per_peer=3 clients=$nets || return 1
	timeout 30 "$get" "$HPS_PEER" $port own/f "$out/own" &&
		[ "$(cat "$out/own")" = own ] || bad=1
	timeout 30 "$get" "$HPS_PEER" $port grpread "$out/grpread" &&
		[ "$(cat "$out/grpread")" = grpread ] || bad=1
	refused ENOENT "$HPS_PEER" $port nobody_only || bad=1
	refused ENOENT "$HPS_PEER" $port private || bad=1
	[ $bad = 0 ]
}
check "uid=4242 gid=4343: own/f (0400 in 0700) and grpread (040) served, nobody's and root's not" \
	identity

# deadline=3 with timeout=30: only the deadline can end these. A request
# sent a byte every 0.5 s is closed at about 3 s; a 64 MiB reply read at
# 256 KiB/s is ended at 3 s + 64 MiB at min_rate 32 MiB/s = 5 s (the
# worker is gone then; the client may still drain what was buffered);
# meanwhile another client is served.
slow() {
	local t0 t tp pt ps pf bad=0
	no_workers
	t0=$(date +%s.%N)
	timeout 30 "$get" --trickle 500 "$HPS_PEER" $port \
		"sub/deeper/small$(printf '%.0s/x' $(seq 20))" /dev/null \
		2>"$out/trickle.log" &
	pt=$!
	timeout 60 "$get" --rate 262144 "$HPS_PEER" $port big /dev/null \
		2>"$out/slowread.log" &
	ps=$!
	timeout 30 "$get" "$HPS_PEER" $port f2 "$out/f2.slow" &
	pf=$!
	# The trickle ends first (the server closes it at its deadline, 3 s),
	# then no worker is left (the slow reader's, f2's), timed on node 1
	# (plus a round trip). (Not "first both at work" on the peer: they
	# live about 3 s, and a slow guest's first look at the peer's /proc
	# came after that.) The clients' own logs say how each one ended.
	wait $pt
	sed 's/^/# /' "$out/trickle.log"
	grep -q "closed the request" "$out/trickle.log" || bad=1
	t=$(sed -n 's/.* in \([0-9.]*\) s$/\1/p' "$out/trickle.log")
	echo "$t" | awk '{ exit !($1 >= 2.5 && $1 <= 10) }' ||
		{ echo "# the trickle was closed after ${t:-?} s, want 3"; bad=1; }
	workers_wait "-eq 0" 40 || bad=1
	tp=$(echo "$(date +%s.%N) - $t0" | bc)
	echo "# workers gone after ${tp} s"
	echo "$tp" | awk '{ exit !($1 <= 30) }' ||
		{ echo "# the slow reader's worker went after $tp s, want at most 30 (its deadline: 5)"; bad=1; }
	wait $pf && same "$root/f2" "$out/f2.slow" ||
		{ echo "# f2 was not served meanwhile"; bad=1; }
	# it reads what was sent before its worker ended, then the end
	wait $ps
	sed 's/^/# /' "$out/slowread.log"
	grep -q "end of stream after [0-9]* of 67108864 bytes" \
		"$out/slowread.log" ||
		{ echo "# the server did not end the slow reader's reply"; bad=1; }
	[ $bad = 0 ]
}
check "deadline: a trickled request and a slow reader are ended, another is served" \
	slow

# max_per_peer=3: a fourth connection from one address is refused; the
# idle three are closed at the deadline (3 s), and then it is served.
per_peer() {
	local i pids=() n bad=0
	for i in 1 2 3; do
		timeout 30 "$get" --idle 20 "$HPS_PEER" $port \
			2>"$out/idle$i.log" &
		pids+=($!)
	done
	for i in $(seq 100); do
		n=$(cat "$out"/idle[123].log 2>/dev/null | grep -c connected)
		[ "$n" = 3 ] && break
		sleep 0.1
	done
	strict=1 refused EBUSY "$HPS_PEER" $port f1 || bad=1
	for i in "${pids[@]}"; do wait "$i" || bad=1; done
	sed 's/^/# /' "$out"/idle[123].log
	timeout 30 "$get" "$HPS_PEER" $port f1 "$out/f1.pp" &&
		same "$root/f1" "$out/f1.pp" || bad=1
	[ $bad = 0 ]
}
check "max_per_peer=3: a 4th connection gets EBUSY; idle ones end at the deadline" \
	per_peer

# Unload with clients connected: idle ones, ones stalled mid-transfer (the
# server blocked in a send) and busy ones.
unload() {
	local i pids=() t0 t rc
	# A send timeout longer than the test: the stalled sends stay blocked.
	! loaded || hps-vm-peer rmmod hps_kfs || return 1
	hps-vm-peer insmod "$ko" root="$root" port=$port timeout=60 \
		max_per_peer=8 clients=$nets || return 1
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

# A root on a FUSE filesystem whose daemon stops reading /dev/fuse after
# the OPEN: the worker waits for the READ's page (a killable wait) and
# rmmod, which sends it SIGKILL, still returns at once.
hung() {
	local d=/tmp/kfs-hangfs.$$ job pid t0 t rc bad=0
	hps-vm-peer sh -c "modprobe fuse && mkdir -p $d" || return 1
	job=$(hps-vm-peer --bg "$hangfs" $d) || return 1
	if hps-vm-peer sh -c "for i in \$(seq 100); do
		! mountpoint -q $d || exit 0; sleep 0.1; done; exit 1" &&
		hps-vm-peer insmod "$ko" root=$d port=$port clients=$nets; then
		timeout 60 "$get" "$HPS_PEER" $port f /dev/null \
			2>"$out/hung.log" &
		pid=$!
		workers_wait "-eq 1" 10
		sleep 1
		t0=$(date +%s)
		hps-vm-peer timeout 30 rmmod hps_kfs
		rc=$?
		t=$(($(date +%s) - t0))
		echo "# rmmod: status $rc after ${t}s"
		[ $rc = 0 ] && [ $t -le 10 ] || bad=1
		wait $pid
		sed 's/^/# /' "$out/hung.log"
		grep -q "after 0 of 100 bytes" "$out/hung.log" ||
			{ echo "# the client did not hang in the data"; bad=1; }
	else
		bad=1
	fi
	hps-vm-peer --kill "$job" >/dev/null
	hps-vm-peer umount -l $d
	! loaded && [ $bad = 0 ]
}
once && check "rmmod with a worker blocked reading a hung FUSE filesystem" hung
once || echo "# on two nodes without HPS_FULL: insmod's refusals, the refused names, mounts, the hung FUSE root and TCP are left to the one-node run"

if once; then
# The same server over TCP, for comparison; "::" takes IPv4 and IPv6.
port=$((port + 1))
start_tcp() {
	hps-vm-peer insmod "$ko" root="$root" port=$port transport=tcp addr=:: \
		max_per_peer=2 clients=$nets
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
	no_workers
	for i in 1 2 3 4; do
		timeout 120 "$get" --transport tcp \
			"$([ $i -le 2 ] && echo "$HPS_PEER6" || echo "$HPS_PEER")" \
			$port "f$i" "$out/t$i" 2>/dev/null &
		pids+=($!)
	done
	for i in 1 2 3 4; do
		wait "${pids[$((i - 1))]}" || bad=1
		same "$root/f$i" "$out/t$i" || bad=1
	done
	[ $bad = 0 ]
}
check "4 TCP clients at once, 2 over IPv6 and 2 over IPv4, every sha256 equal" \
	tcp_par

# max_per_peer=2: two idle clients over IPv4 fill their address's share;
# a third from it is refused, one from node 1's IPv6 address is served.
tcp_peer() {
	local i pids=() n bad=0
	no_workers
	for i in 1 2; do
		timeout 30 "$get" --transport tcp --idle 20 "$HPS_PEER" $port \
			2>"$out/tidle$i.log" &
		pids+=($!)
	done
	for i in $(seq 100); do
		n=$(cat "$out"/tidle[12].log 2>/dev/null | grep -c connected)
		[ "$n" = 2 ] && break
		sleep 0.1
	done
	strict=1 refused EBUSY --transport tcp "$HPS_PEER" $port f1 || bad=1
	timeout 30 "$get" --transport tcp "$HPS_PEER6" $port f1 "$out/f1.t6" &&
		same "$root/f1" "$out/f1.t6" || bad=1
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}"
	[ $bad = 0 ]
}
check "TCP, max_per_peer=2: a 3rd from one address refused, another address served" \
	tcp_peer

stop_tcp() { hps-vm-peer timeout 60 rmmod hps_kfs && ! loaded; }
check "rmmod hps_kfs (TCP)" stop_tcp

fi

echo "# file server rate, 64 MiB, one client: AF_HPS $(rate "$work/rate.hps") MB/s, TCP $([ -f "$work/rate.tcp" ] && rate "$work/rate.tcp" || echo -) MB/s ($HPS_NODES node(s), $HPS_RDMA)"
sed 's/^/# /' /proc/net/hps_stat
echo "1..$n"
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ "$fail" = 0 ]
