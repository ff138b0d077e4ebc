#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The syscall fuzzer trinity (Debian's package) against AF_HPS sockets
# (Documentation/reliability.rst, "Fuzzing").
#
# trinity only makes sockets of the families it has descriptions of, and
# AF_HPS's borrowed number 22 is not one of them. So it runs under
# tools/preload/hps_run, which turns its TCP stream sockets into AF_HPS
# sockets (-f error: no silent fallback to TCP), with its socket cache
# seeded with 8 of them (IPv4 and IPv6, protocol 0 and IPPROTO_TCP): every
# socket call it makes on its socket pool is made on an AF_HPS socket that
# trinity believes to be TCP, with arguments (addresses, options, flags,
# iovecs, ioctls, 64-bit and 32-bit system calls) generated for TCP and
# mangled as trinity does. It runs as nobody, 8 children, on the socket
# system calls only, for HPS_TRINITY_SECONDS (30; 180 on make
# check-debug's kernel) or HPS_TRINITY_CALLS (1,000,000) calls;
# HPS_TRINITY_SEED replays a seed (each run prints its own).
#
# Checked: trinity ran (at least 10,000 calls; 5,000 on make check-debug's
# kernel, where two nodes over rxe made 10,181 in 180 s) on AF_HPS sockets
# (as many as its pool holds, seen in the module's reference count while
# it ran); afterwards every AF_HPS socket is freed (the reference count
# returns to its start) and a new connection carries 8 MiB intact; the
# kernel log is clean (tools/vm/hps-vm fails the run otherwise).
#
# Why 8 sockets: trinity 2023.01 (Debian's) reads past the end of its own
# protocol table when it picks a random protocol's socket option
# (do_random_sso(): rnd() % PF_MAX into net_protocols[TRINITY_PF_MAX]),
# which it does while it sets up each pool socket, until a setsockopt()
# succeeds. With 16 pool sockets or more it died of SIGSEGV in that setup
# on every seed tried, with plain TCP sockets as much as with AF_HPS ones;
# with 8 it did not. Should it still die there (before any fuzzed call),
# it is started again with another seed, up to 5 times.
#
# hps-configs: 1:rxe 1:siw
set -u
cd "$(dirname "$0")/.." || exit 1
top=$PWD
# (make check-debug's kernel runs system calls several times slower)
secs=${HPS_TRINITY_SECONDS:-$([ -n "${HPS_DEBUG_KERNEL:-}" ] && echo 180 ||
	{ [ -n "${HPS_FULL:-}" ] && echo 300; } || echo 30)}
# How long trinity (its main process and 8 children) has to exit after
# timeout's SIGTERM before SIGKILL: on two debug-kernel nodes it once took
# longer than 10 s.
grace=$([ -n "${HPS_DEBUG_KERNEL:-}" ] && echo 60 || echo 10)
floor=$([ -n "${HPS_DEBUG_KERNEL:-}" ] && echo 5000 || echo 10000)
calls=${HPS_TRINITY_CALLS:-1000000}
seed=${HPS_TRINITY_SEED:-}
n=0 pass=0 fail=0

echo "TAP version 13"
echo "1..4"
result() {	# result RC NAME
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		pass=$((pass + 1)); echo "ok $n $2"
	else
		fail=$((fail + 1)); echo "not ok $n $2"
	fi
}
refcnt() { cat /sys/module/af_hps/refcnt; }

if ! command -v trinity >/dev/null; then
	echo "# trinity is not installed (tools/deps.sh installs it)"
	echo "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
	exit 1
fi

d=$(mktemp -d /tmp/hps_trinity.XXXXXX) || exit 1
chmod 777 "$d"
trap 'rm -rf "$d"' EXIT
cd "$d" || exit 1

# trinity.socketcache: (family, type, protocol) as three native 32-bit
# integers per socket, which trinity opens at start instead of probing.
pool=8
le32() {	# a byte value as a little-endian 32-bit integer
	# shellcheck disable=SC2059 # the format is the escape being built
	printf "\\x$(printf %02x "$1")\\x00\\x00\\x00"
}
seedcache() {
	local i fam
	for i in $(seq $((pool / 2))); do
		for fam in 2 10; do	# AF_INET, AF_INET6; SOCK_STREAM
			le32 "$fam"; le32 1; le32 $((i % 2 ? 0 : 6))
		done
	done >trinity.socketcache
	chmod 666 trinity.socketcache
}

ref0=$(refcnt)
peak=0
for try in 1 2 3 4 5; do
	seedcache
	s=${seed:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
	echo "# trinity, seed $s, ${secs} s or $calls calls (try $try)"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		timeout -k "$grace" "$secs" \
		"$top/tools/preload/hps_run" -d -f error \
		trinity -q -l off --enable-fds=sockets -C 8 -N "$calls" -s "$s" \
		-c setsockopt -c getsockopt -c bind -c connect -c listen \
		-c accept -c accept4 -c sendto -c recvfrom -c sendmsg \
		-c recvmsg -c sendmmsg -c recvmmsg -c shutdown \
		-c getsockname -c getpeername -c ioctl -c read -c write \
		-c readv -c writev -c fcntl -c poll -c splice -c sendfile \
		>out.log 2>err.log &
	pid=$!
	t0=$(date +%s) shown=
	while kill -0 "$pid" 2>/dev/null; do
		r=$(refcnt)
		[ "$r" -gt "$peak" ] && peak=$r
		# still there 5 s after the SIGTERM: show where its tasks are
		if [ -z "$shown" ] && [ $(($(date +%s) - t0)) -gt $((secs + 5)) ]; then
			shown=1
			ps -u 65534 -o pid=,stat=,wchan:32=,comm= | sed 's/^/# still running after SIGTERM: /'
		fi
		sleep 1
	done
	wait "$pid"
	rc=$?
	echo "# trinity ended after $(($(date +%s) - t0)) s"
	iters=$(sed -n 's/^\[main\] \([0-9]*\) iterations.*/\1/p' out.log | tail -n1)
	echo "# trinity's status $rc, ${iters:-no} iterations counted"
	# died in its own setup: nothing fuzzed yet, go again
	if [ "$rc" = 139 ] && [ -z "$iters" ] && [ -z "$seed" ]; then
		echo "# trinity died of SIGSEGV in its setup; another seed"
		continue
	fi
	break
done
hps=$(grep -c 'socket -> hps' err.log)
grep -v 'socket -> hps' err.log | grep -v 'mode all, 0 rule' | head -n 5 |
	sed 's/^/# stderr: /'
echo "# $hps AF_HPS sockets made for trinity; af_hps references: $ref0 before, up to $peak while it ran"

case $rc in 0|124) r=0 ;; *) r=1 ;; esac
[ "${iters:-0}" -ge "$floor" ] || r=1
result $r "trinity ran at least $floor calls and ended as told (status $rc)"

[ "$hps" -ge "$pool" ] && [ "$peak" -ge $((ref0 + pool)) ]
result $? "its socket pool was AF_HPS sockets ($hps made, references up to $peak)"

# A connect to a random address over siw waits for TCP's SYN retries
# (about 130 s) before its socket can go.
for i in $(seq 180); do
	[ "$(refcnt)" -le "$ref0" ] && break
	sleep 1
done
echo "# af_hps references $(refcnt) after ${i} s (start: $ref0)"
[ "$(refcnt)" -le "$ref0" ]
result $? "every AF_HPS socket trinity had is freed"

cd "$top" || exit 1
port=$((20000 + RANDOM % 20000))
job=$(hps-vm-peer --bg ./tools/hps_xfer -l "$HPS_PEER" "$port" --echo)
hps-vm-peer hps-vm-wait-listen "$port" 30 >/dev/null 2>&1
timeout 120 ./tools/hps_xfer -c "$HPS_PEER" "$port" -n 8388608 --echo 2>&1 |
	sed 's/^/# /'
r=${PIPESTATUS[0]}
hps-vm-peer --wait "$job" 60 >/dev/null || r=1
result "$r" "a new connection carries 8 MiB intact afterwards"

echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ "$fail" = 0 ]
