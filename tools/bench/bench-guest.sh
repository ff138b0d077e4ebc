#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench-guest.sh: the part of 'make bench' that runs inside an hps-vm guest
# (node 1; servers on node 2, or node 1 itself with one node).
#
#   bench-guest.sh --plan quick|full NODES RDMA    print the plan, one line
#                                                  per measurement
#   bench-guest.sh quick|full OUTDIR FIRST TOTAL   run it (inside a guest)
#
# Plan lines: "perf PROGRAM SIZE poll|event" (perftest over rdma_cm, -R),
# "cm CONNS" (rdma-core's cmtime: the raw rdma_cm limit of connection
# setup, CONNS connections created, connected with a QP, disconnected and
# destroyed, each step for all of them at once; a row "verbs-cm connrate
# 0" with their rate),
# "lb ITERS BUSY_US" (lat-breakdown.sh: where a 64-byte message's time
# goes, one node only, blocking and with busy polling; rows to
# OUTDIR/breakdown.csv),
# "hb TRANSPORT TEST SIZE [CONNS]" (hps-bench; CONNS for conns, its
# --conns) or "app redis TRANSPORT CLIENTS" (redis-benchmark against
# redis-server; a row per command, test "redis-COMMAND", size CLIENTS,
# its requests/s as rate_per_s). Running appends to OUTDIR/raw.csv
# one line per measurement, the configuration ("2n-siw") first and then
# hps-bench's CSV columns (perftest results mapped onto them: t_typical as
# the median, BW average as mbps), and what went wrong or needs saying to
# OUTDIR/notes-CONFIG.txt. FIRST and TOTAL number the progress lines
# ("[3/27] 2n siw: hps stream 64KiB") across configurations. Exit status 1
# when an AF_HPS measurement failed (other transports' failures are noted).
#
# AF_SMC: over rxe the script first registers a user EID and a pnet table
# entry on both nodes (smc-setup), which SMC-Rv2 over RoCEv2 needs (on two
# nodes only with HPS_BENCH_SMCR=1: there it hangs the kernels); every
# AF_SMC run is bounded and abandoned if it hangs; the client node's RDMA
# packet counters are read around each run, and a run during which no RDMA
# packets flowed is recorded as transport "smc-tcp" (SMC fell back to TCP),
# never as SMC-R. Over siw SMC-R cannot work at all (it needs an IB/RoCE
# device), so AF_SMC there is always recorded as smc-tcp.
set -u

streams=4	# connections of streams, fanin and fanout
# conns: connections held open (HPS_BENCH_CONNS overrides), of which
# conns_busy do pingpong; over AF_HPS and TCP only (rsockets stalled in their
# multi-connection tests, and AF_SMC falls back to TCP here)
conns_quick=200
conns_full=1000
conns_busy=2
# cm: connections of cmtime (raw rdma_cm setup and teardown)
cm_conns=100
# app redis: redis-server on the peer, redis-benchmark with this many
# clients on node 1, both under hps_run for AF_HPS and plain for TCP;
# redis-benchmark's usual commands (not the larger LRANGEs), each
# redis_n requests (quick) or ten times as many (full)
redis_clients=50
redis_cmds=ping,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset
redis_n=2000

# TCP fallback: transport hps-fb is AF_HPS clients with HPS_TCP_FALLBACK
# of a plain TCP server (af_hps.rst, "TCP fallback"): its connrate row,
# beside tcp's and hps's, is what a fallback costs a connection; tcp-hps
# is plain TCP clients of an AF_HPS server with HPS_TCP_FALLBACK, whose
# listener takes them over TCP
#
# Busy polling: transports hps-bp and tcp-bp are hps and tcp with
# net.core.busy_read and net.core.busy_poll at busy_us on both nodes
# (HPS_BENCH_BUSY_US overrides), set before their server starts, so that
# every socket of the run, listeners' children included, busy-polls, as a
# TCP user would set it; 0 again for every other transport
busy_us=${HPS_BENCH_BUSY_US:-1000}

lat_sizes_full="1 4 16 64 256 1024 4096 16384 65536 262144 1048576"
bw_sizes_full="64 256 1024 4096 16384 65536 262144 1048576 4194304 16777216"
perf_lat_sizes_full="2 64 1024 16384 262144 1048576"
perf_bw_sizes_full="64 4096 65536 1048576"

# The parameter sweeps (AF_HPS only), to choose and justify the defaults:
# "KNOB VALUES TESTS", the default value marked with *, each test
# TEST:SIZE. KNOB is a net.hps sysctl, set on both nodes for its values
# (the rest at their defaults), or nodelay (1: HPS_NODELAY on, as in every
# other AF_HPS measurement; 0: small writes are combined).
sweeps="credits 4,8,16*,32,64 pingpong:64,stream:1024,stream:65536
buf_size 16384,65536*,262144 pingpong:64,stream:65536,stream:1048576
ack_thresh 25*,50,100 pingpong:64,stream:1024,stream:65536
inline_max 0,128*,1024 pingpong:64,pingpong:1024
nodelay 1*,0 pingpong:64,stream:64,stream:1024
zcopy_thresh 0*,262144 stream:1048576,stream:4194304"

# plan lines "sw KNOB VALUE TEST SIZE" (VALUE with * when the default)
sweep_plan() {
	local knob vals tests v t
	while read -r knob vals tests; do
		for v in ${vals//,/ }; do
			for t in ${tests//,/ }; do
				echo "sw $knob $v ${t%%:*} ${t#*:}"
			done
		done
	done <<<"$sweeps"
}

plan() {
	local mode=$1 nodes=$2 rdma=$3 t s p
	[ "$mode" = sweep ] && { sweep_plan; return; }
	if [ "$mode" = quick ]; then
		echo "perf ib_send_lat 64 poll"
		echo "perf ib_send_lat 64 event"
		echo "perf ib_send_bw 65536 poll"
		echo "cm $cm_conns"
		for t in hps tcp; do
			for s in 64 4096; do echo "hb $t pingpong $s"; done
			for s in 65536 1048576; do echo "hb $t stream $s"; done
			echo "hb $t bidir 65536"
			echo "hb $t streams 65536"
			echo "hb $t fanin 64"
			echo "hb $t fanout 65536"
			echo "hb $t connrate 64"
			echo "hb $t conns 64 ${HPS_BENCH_CONNS:-$conns_quick}"
		done
		for t in rsocket smc; do
			echo "hb $t pingpong 64"
			echo "hb $t stream 65536"
		done
		echo "hb hps-fb connrate 64"
		echo "hb tcp-hps connrate 64"
		for t in hps-bp tcp-bp; do echo "hb $t pingpong 64"; done
		[ "$nodes" = 1 ] && echo "lb 2000 0" && echo "lb 2000 $busy_us"
		for t in hps tcp; do echo "app redis $t $redis_clients"; done
		return
	fi
	# ib_write_lat has no event mode (perftest 4.5 refuses -e)
	for s in $perf_lat_sizes_full; do
		echo "perf ib_send_lat $s poll"
		echo "perf ib_send_lat $s event"
		echo "perf ib_write_lat $s poll"
	done
	# polling only: perftest 4.5 refuses -e for ib_write_bw and
	# ib_read_bw ("Parser function exited with Error"), and ib_send_bw -e
	# -D never came up as a server here
	for p in ib_send_bw ib_write_bw ib_read_bw; do
		for s in $perf_bw_sizes_full; do
			echo "perf $p $s poll"
		done
	done
	echo "cm $cm_conns"
	for t in hps tcp rsocket smc; do
		for s in $lat_sizes_full; do echo "hb $t pingpong $s"; done
		for s in $bw_sizes_full; do echo "hb $t stream $s"; done
		echo "hb $t bidir 65536"
		echo "hb $t streams 65536"
		echo "hb $t fanin 64"
		echo "hb $t fanout 65536"
		echo "hb $t connrate 64"
		case $t in
		hps|tcp) echo "hb $t conns 64 ${HPS_BENCH_CONNS:-$conns_full}" ;;
		esac
	done
	echo "hb hps-fb connrate 64"
	echo "hb tcp-hps connrate 64"
	for t in hps-bp tcp-bp; do
		for s in 64 4096; do echo "hb $t pingpong $s"; done
		echo "hb $t fanin 64"
	done
	[ "$nodes" = 1 ] && echo "lb 2000 0" && echo "lb 2000 $busy_us"
	for t in hps tcp; do echo "app redis $t $redis_clients"; done
	sweep_plan
}

# HPS_BENCH_FILTER: an extended regular expression; only plan lines that
# match it run ("hb (hps|tcp) " for instance)
filtered_plan() {
	plan "$@" | grep -E -- "${HPS_BENCH_FILTER:-.}"
}

if [ "${1:-}" = --plan ]; then
	filtered_plan "${2:?}" "${3:?}" "${4:?}"
	exit 0
fi

mode=${1:?usage: bench-guest.sh quick|full OUTDIR FIRST TOTAL}
outdir=${2:?}
first=${3:-1}
total=${4:-0}
[ -n "${HPS_RUN:-}" ] || { echo "bench-guest.sh: run it inside an hps-vm guest" >&2; exit 2; }
top=${HPS_TOP:-$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)}
bench=$top/tools/bench/hps-bench
smcsetup=$top/tools/bench/smc-setup
# empty fields that bring perftest's rows (hps-bench's first 19 columns)
# to hps-bench's column count
pad=$("$bench" --csv-columns | awk -F, '{ for (i = 20; i <= NF; i++) printf "," }')
nodes=${HPS_NODES:-1} rdma=$HPS_RDMA dev=$HPS_IBDEV peer=$HPS_PEER
cfg=${nodes}n-$rdma
raw=$outdir/raw.csv
notes=$outdir/notes-$cfg.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$outdir"
: >"$notes"
if [ "$mode" = quick ]; then
	secs=${HPS_BENCH_SECONDS:-1}
else
	secs=${HPS_BENCH_SECONDS:-3}
fi

note() { echo "$*" >>"$notes"; echo "bench: $cfg: $*" >&2; }

human() {
	local s=$1
	if [ "$s" -ge 1048576 ] && [ $((s % 1048576)) = 0 ]; then echo "$((s / 1048576))MiB"
	elif [ "$s" -ge 1024 ] && [ $((s % 1024)) = 0 ]; then echo "$((s / 1024))KiB"
	else echo "${s}B"; fi
}

# pingpong iterations: fewer for big messages (TCG moves ~10 MB/s)
pp_iters() {
	local s=$1 base=${HPS_BENCH_ITERS:-}
	[ -n "$base" ] || { [ "$mode" = quick ] && base=500 || base=2000; }
	if [ "$s" -le 4096 ]; then echo "$base"
	elif [ "$s" -le 65536 ]; then echo $((base / 5 > 20 ? base / 5 : 20))
	else echo 20; fi
}

# run_bounded SECONDS OUT CMD...: run CMD with output to OUT; after SECONDS
# kill it, and if it still does not go (a task stuck in the kernel), leave
# it behind. Return CMD's status, or 124 on timeout.
run_bounded() {
	local limit=$1 out=$2 pid end
	shift 2
	"$@" >"$out" 2>&1 &
	pid=$!
	end=$((SECONDS + limit))	# wall time: a loaded guest sleeps long
	while [ "$SECONDS" -lt "$end" ]; do
		kill -0 "$pid" 2>/dev/null || { wait "$pid"; return; }
		sleep 0.1
	done
	kill "$pid" 2>/dev/null
	sleep 2
	kill -9 "$pid" 2>/dev/null
	sleep 1
	if kill -0 "$pid" 2>/dev/null; then
		disown "$pid" 2>/dev/null
		echo "(process $pid did not die: stuck in the kernel)" >>"$out"
	fi
	return 124
}

first_error() {
	grep -h -v -E '^\s*$' "$@" 2>/dev/null |
		grep -i -E 'error|fail|unable|not supported|couldn|timeout|refused|hps-bench:|stuck' |
		head -n 2 | tr '\n' ' ' | sed 's/ *$//'
}

# peer_start PORT rdma_cm|tcp CMD...
job=
peer_start() {
	local port=$1 kind=$2
	shift 2
	job=$(hps-vm-peer --bg "$@") || return 1
	if [ "$kind" = rdma_cm ]; then
		hps-vm-peer hps-vm-wait-listen "$port" 30 >/dev/null 2>&1
	else
		hps-vm-peer sh -c "for i in \$(seq 300); do
			ss -Hltn 'sport = :$port' | grep -q . && exit 0; sleep 0.1
			done; exit 1" >/dev/null 2>&1
	fi
}

peer_stop() {
	[ -n "$job" ] || return 0
	hps-vm-peer --kill "$job" >/dev/null 2>&1
	hps-vm-peer --wait "$job" 10 >"$tmp/server" 2>&1
	job=
}

rdma_pkts() {
	local d=/sys/class/infiniband/$dev/ports/1/hw_counters
	[ -r "$d/sent_pkts" ] || { echo -1; return; }
	echo $(($(cat "$d/sent_pkts") + $(cat "$d/rcvd_pkts")))
}

emit() { echo "$cfg,$*" >>"$raw"; }

idx=$((first - 1))
progress() {
	idx=$((idx + 1))
	echo "[$idx/$total] $nodes""n $rdma: $*" >&2
}

perf_port=18600
# perf PROGRAM SIZE poll|event
# perftest's latency tools sometimes print "inf" under TCG (their CPU clock
# estimate fails; two of the first twelve points of a run), and a perftest
# server sometimes does not come up: such a point is tried up to 3 times.
run_perf() {
	progress "$1 $(human "$2") $3"
	run_perf_once "$@" 1 || run_perf_once "$@" 2 || run_perf_once "$@" 3
}

# run_perf_once PROGRAM SIZE poll|event TRY: status 3 when a try before the
# last failed in a way worth another (nothing recorded), else 0
run_perf_once() {
	local prog=$1 size=$2 how=$3 try=$4 name args line rc kind
	perf_port=$((perf_port + 1))
	args=(-R -F -d "$dev" -s "$size" -p "$perf_port")
	case $prog in
	*_lat) args+=(-n "$(pp_iters "$size")"); kind=pingpong ;;
	*) args+=(-D "$secs" --report_gbits); kind=stream ;;
	esac
	[ "$how" = event ] && args+=(-e)
	name=verbs-${prog#ib_}-$how
	name=${name/_lat/}
	name=${name/_bw/}
	if ! peer_start "$perf_port" rdma_cm "$prog" "${args[@]}"; then
		peer_stop
		[ "$try" -lt 3 ] && return 3
		note "$name $(human "$size"): the $prog server did not start, 3 tries: $(first_error "$tmp/server")"
		return
	fi
	run_bounded 120 "$tmp/out" "$prog" "${args[@]}" "$peer"
	rc=$?
	peer_stop
	if [ "$kind" = pingpong ]; then
		# bytes iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
		line=$(awk -v s="$size" '$1 == s && NF >= 9 { print $2 "," $5 "," $8 "," $9 "," $6 }' "$tmp/out" | tail -n1)
		if [ $rc = 0 ] && [[ $line == *[Nn][Aa][Nn]* || $line == *inf* ]]; then
			[ "$try" -lt 3 ] && return 3
			note "$name $(human "$size"): $prog printed no finite latency, 3 tries: $(awk -v s="$size" '$1 == s' "$tmp/out" | tail -n1)"
			return
		fi
		if [ $rc = 0 ] && [ -n "$line" ]; then
			IFS=, read -r it med p99 p999 mean <<<"$line"
			emit "$name,pingpong,$size,$it,$med,$p99,$p999,,1,,,,,,,,,,$mean$pad"
			return
		fi
	else
		# bytes iterations BW-peak BW-average MsgRate (Gbit/s)
		line=$(awk -v s="$size" '$1 == s && NF >= 5 { print $2 "," $4 }' "$tmp/out" | tail -n1)
		if [ $rc = 0 ] && [ -n "$line" ]; then
			IFS=, read -r it gbps <<<"$line"
			emit "$name,stream,$size,$it,,,,$(awk -v g="$gbps" 'BEGIN { printf "%.1f", g * 125 }'),1,,,,,,,,,,$pad"
			return
		fi
	fi
	note "$name $(human "$size"): $prog failed (status $rc$([ $rc = 124 ] && echo ", timed out")): $(first_error "$tmp/out" "$tmp/server")"
}

# cm CONNS: rdma-core's cmtime, its server on the peer. It times each
# step (create id, resolve address and route, create QP, connect,
# disconnect, destroy) for all CONNS connections at once, in ms; their
# sum over CONNS is what one connection's setup and teardown cost at the
# raw rdma_cm interface, without data, as a rate (rate_per_s) and as the
# time per connection (mean_us). A server that never sees the client
# leaves cmtime waiting: bounded like the others.
run_cm() {
	local n=$1 port rc ms
	progress "raw rdma_cm (cmtime), $n connections"
	perf_port=$((perf_port + 1))
	port=$perf_port
	if ! peer_start "$port" rdma_cm cmtime -p "$port" -c "$n"; then
		peer_stop
		note "verbs-cm: the cmtime server did not start: $(first_error "$tmp/server")"
		return
	fi
	run_bounded 120 "$tmp/out" cmtime -s "$peer" -p "$port" -c "$n"
	rc=$?
	peer_stop
	# "connect      :      419.26     367.60   66653.00    4192.61"
	ms=$(awk -F: '/^(create id|resolve addr|resolve route|create qp|connect|disconnect|destroy) *:/ {
			split($2, f, " "); s += f[1]; k++ }
		END { if (k == 7 && s > 0) printf "%.3f", s }' "$tmp/out")
	if [ $rc != 0 ] || [ -z "$ms" ] || grep -q -i -E 'error|reject' "$tmp/out"; then
		note "verbs-cm: cmtime failed (status $rc$([ $rc = 124 ] && echo ", timed out")): $(first_error "$tmp/out" "$tmp/server")"
		return
	fi
	emit "verbs-cm,connrate,0,$n,,,,,1,$(awk -v n="$n" -v ms="$ms" 'BEGIN { printf "%.1f", n / ms * 1000 }'),0,$(awk -v ms="$ms" 'BEGIN { printf "%.3f", ms / 1000 }'),,,,,,,$(awk -v n="$n" -v ms="$ms" 'BEGIN { printf "%.1f", ms * 1000 / n }')$pad"
}

# hb_server TRANSPORT PORT: start the transport's server on the peer,
# listening on PORT to PORT+streams-1. rsockets (rdma-core 44) get one server
# process per port: with several listening rsockets in one process,
# connections stalled (0.2 MB/s instead of 80 MB/s on one node over rxe,
# whether one rpoll() loop or one blocking raccept() thread per listener
# served them).
hb_server() {
	local t=$1 port=$2 kind=tcp
	case $t in hps|rsocket) kind=rdma_cm ;; esac
	if [ "$t" = rsocket ]; then
		peer_start "$((port + streams - 1))" "$kind" sh -c "
			for i in \$(seq 0 $((streams - 1))); do
				$bench --server --transport rsocket \\
					--port \$(($port + i)) --nports 1 &
			done
			wait" || return 1
		local i
		for i in $(seq 0 $((streams - 2))); do
			hps-vm-peer hps-vm-wait-listen "$((port + i))" 30 >/dev/null 2>&1 ||
				return 1
		done
		return 0
	fi
	peer_start "$port" "$kind" "$bench" --server --transport "$t" \
		--port "$port" --nports "$streams"
}

smc_state=		# "", ok, skip: why
smc_prepare() {
	local n
	if [ "$rdma" != rxe ]; then
		note "smc: SMC-R needs an InfiniBand/RoCE device (net/smc/smc_ib.c ignores iWARP); over $rdma AF_SMC can only fall back to TCP: recorded as smc-tcp"
		return
	fi
	if [ "$nodes" = 2 ] && [ "${HPS_BENCH_SMCR:-0}" != 1 ]; then
		note "smc: no SMC-R setup (user EID, pnet table) on two nodes: with it the first AF_SMC connect hung both kernels in smc_wr_drain_cq and the guests never powered off (Documentation/performance.rst); HPS_BENCH_SMCR=1 tries anyway. AF_SMC ran without it"
		return
	fi
	# both nodes (node 1 twice with one node: the second add is refused)
	for n in self peer; do
		local run=()
		[ $n = peer ] && run=(hps-vm-peer)
		if ! "${run[@]}" sh -c "modprobe smc && $smcsetup ueid-add HPS-BENCH &&
			$smcsetup pnet-add HPSBENCH $HPS_IFNAME $dev 1" >"$tmp/smc" 2>&1; then
			[ "$nodes" = 1 ] && [ $n = peer ] && continue
			note "smc: SMC-R setup on the $n node failed: $(tr '\n' ' ' <"$tmp/smc")"
		fi
	done
}

# SMC's fallback reasons counted so far on this node (SMC_CLC_DECL_* codes)
smc_fallbacks() {
	"$smcsetup" fallbacks 2>&1 | awk '{ printf "%s%s %s %s", (NR > 1 ? "; " : ""), $1, $4, $3 }'
}

# stop the current hps-bench server; after a failure note what it said
group_failed=0
server_stop() {
	peer_stop
	if [ "$group_failed" = 1 ]; then
		note "$cur: the hps-bench server said: $(grep -v 'listening on' "$tmp/server" | tail -n 4 | tr '\n' ' ')"
	fi
	group_failed=0
}

# hb TRANSPORT TEST SIZE PORT [KNOB VALUE]: one hps-bench measurement;
# with KNOB (a sweep point, VALUE with * when it is the default) the row
# goes to sweep.csv; conns opens $hb_conns connections (the plan line's)
run_hb() {
	local t=${1%-bp} test=$2 size=$3 port=$4 knob=${5:-} val=${6:-}
	local args line rc p0 p1 name=$1 limit=300 f
	[ "$t" = tcp-hps ] && t=tcp	# the clients are plain TCP
	progress "$name${knob:+ $knob=${val%\*}} $test $(human "$size")$([ "$test" = conns ] && echo ", $hb_conns connections")"
	if [ "$t" = smc ] && [ -n "$smc_state" ] && [ "$smc_state" != ok ]; then
		note "smc $test $(human "$size"): not run: $smc_state"
		return
	fi
	args=(--client "$peer" --transport "$t" --port "$port" --test "$test"
		--size "$size" --csv)
	[ "$knob" = nodelay ] && [ "${val%\*}" = 0 ] && args+=(--no-nodelay)
	case $test in
	pingpong|fanin|conns) args+=(--iters "$(pp_iters "$size")") ;;
	connrate) args+=(--seconds "$secs") ;;
	*) args+=(--seconds "$secs") ;;
	esac
	case $test in
	streams|fanin|fanout) args+=(--streams "$streams") ;;
	conns)	# a thousand connects at tens per second under TCG
		args+=(--conns "$hb_conns" --busy "$conns_busy")
		limit=900 ;;
	esac
	[ "$t" = smc ] && limit=60
	p0=$(rdma_pkts)
	run_bounded "$limit" "$tmp/hb" "$bench" "${args[@]}"
	rc=$?
	p1=$(rdma_pkts)
	line=$(grep -E "^$t,$test," "$tmp/hb" | tail -n1)
	if [ $rc != 0 ] || [ -z "$line" ]; then
		note "$name${knob:+ $knob=${val%\*}} $test $(human "$size"): hps-bench failed (status $rc$([ $rc = 124 ] && echo ", timed out or hung")): $(first_error "$tmp/hb")"
		[ "$t" = hps ] && hps_failed=$((hps_failed + 1))
		group_failed=1
		# a fresh server for the next run: hps-bench's watchdog may
		# have ended this one (rsockets' bidir stalled so once)
		[ "$t" = smc ] || restart=1
		if [ "$t" = smc ]; then
			smc_state="an earlier AF_SMC run failed or hung ($test $(human "$size"), status $rc)"
			[ "$p0" -ge 0 ] &&
				note "smc $test $(human "$size"): $dev counted $((p1 - p0)) RDMA packets during the failed run"
		fi
		return
	fi
	if [ "$t" = smc ]; then
		smc_state=ok
		if [ "$rdma" != rxe ]; then
			name=smc-tcp
		elif [ "$p0" -lt 0 ]; then
			name=smc-tcp
			note "smc $test $(human "$size"): no RDMA packet counters on $dev; cannot show SMC-R was used: recorded as smc-tcp"
		elif [ $((p1 - p0)) -lt 100 ]; then
			name=smc-tcp
			note "smc $test $(human "$size"): $dev counted $((p1 - p0)) RDMA packets during the run: AF_SMC fell back to TCP; the kernel's fallback counts so far (reason, count): $(smc_fallbacks)"
		else
			note "smc $test $(human "$size"): $dev counted $((p1 - p0)) RDMA packets during the run: SMC-R carried it"
		fi
	fi
	if [ "$test" = conns ]; then
		# iters: opened; conns: asked for; conn_err: what stopped it
		IFS=, read -r -a f <<<"$line"
		[ -z "${f[20]:-}" ] ||
			note "$t conns: ${f[3]} of ${f[19]} connections, then ${f[20]}"
	fi
	if [ -n "$knob" ]; then
		echo "$cfg,$knob,${val%\*},$([ "$val" != "${val%\*}" ] && echo 1 || echo 0),${line}" >>"$outdir/sweep.csv"
		return
	fi
	emit "$name,${line#*,}"
}

# app redis TRANSPORT CLIENTS: redis-server on the peer and
# redis-benchmark here, under hps_run (every TCP socket over AF_HPS) for
# hps, plain for tcp; a row per command
run_app() {
	local app=$1 t=$2 clients=$3 port n rc kind=tcp run=() cmd rps avg p50 p99
	progress "$t $app, $clients clients"
	if ! command -v redis-server >/dev/null ||
	   ! command -v redis-benchmark >/dev/null; then
		note "$t redis: redis-server or redis-benchmark missing (tools/deps.sh installs them)"
		[ "$t" = hps ] && hps_failed=$((hps_failed + 1))
		return
	fi
	port=$((7400 + RANDOM % 1000))	# (not 6379: a stock redis-server)
	n=$redis_n
	[ "$mode" = quick ] || n=$((redis_n * 10))
	[ -z "${HPS_BENCH_REDIS_N:-}" ] || n=$HPS_BENCH_REDIS_N
	if [ "$t" = hps ]; then
		run=("$top/tools/preload/hps_run")
		kind=rdma_cm
	fi
	if ! peer_start "$port" "$kind" "${run[@]}" redis-server --port "$port" \
		--bind "$peer" --save "" --appendonly no --protected-mode no \
		--daemonize no --logfile ""; then
		peer_stop
		note "$t redis: redis-server did not start: $(first_error "$tmp/server")"
		[ "$t" = hps ] && hps_failed=$((hps_failed + 1))
		return
	fi
	run_bounded 900 "$tmp/app" "${run[@]}" redis-benchmark -h "$peer" \
		-p "$port" -c "$clients" -n "$n" -t "$redis_cmds" --csv
	rc=$?
	peer_stop
	# "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
	# "p95_latency_ms","p99_latency_ms","max_latency_ms"
	if [ $rc = 0 ] && grep -q '^"test","rps"' "$tmp/app"; then
		grep -v '^"test"' "$tmp/app" | tr -d '"' >"$tmp/app.csv"
		while IFS=, read -r cmd rps avg _ p50 _ p99 _; do
			# (not the LPUSH that only fills the list for LRANGE)
			[[ $cmd == *needed* ]] && continue
			cmd=${cmd%% *}
			emit "$t,redis-$cmd,$clients,$n,$(awk -v v="$p50" 'BEGIN { print v * 1000 }'),$(awk -v v="$p99" 'BEGIN { print v * 1000 }'),,,$clients,$rps,,,,,,,,,$(awk -v v="$avg" 'BEGIN { print v * 1000 }')$pad"
		done <"$tmp/app.csv"
		return
	fi
	note "$t redis: redis-benchmark failed (status $rc$([ $rc = 124 ] && echo ", timed out")): $(first_error "$tmp/app" "$tmp/server")"
	[ "$t" = hps ] && hps_failed=$((hps_failed + 1))
}

# lb ITERS BUSY_US: lat-breakdown.sh's stages, "CONFIG,BUSY_US,STAGE,
# MEDIAN_US,P99_US,COUNT" lines in breakdown.csv: the stages (send, wire,
# wake, recv, oneway), the wake stage of readers asleep on the
# completion's CPU and on the other (wake_same_cpu, wake_other_cpu, with
# their counts), and the counts of messages and of those whose reader
# slept (messages, asleep)
run_lb() {
	local iters=$1 us=$2 rc
	progress "hps latency breakdown, busy_read $us"
	run_bounded 300 "$tmp/lb" "$top/tools/bench/lat-breakdown.sh" \
		"$iters" "$us"
	rc=$?
	if [ $rc != 0 ]; then
		note "latency breakdown (busy_read $us): lat-breakdown.sh failed (status $rc): $(first_error "$tmp/lb")"
		hps_failed=$((hps_failed + 1))
		return
	fi
	awk -v c="$cfg" -v us="$us" '
		/^(send|wire|wake|recv|oneway) / {
			print c "," us "," $1 "," $2 "," $3 "," }
		/^messages:/ { print c "," us ",messages,,," $2 }
		/^receiver asleep/ { print c "," us ",asleep,,," $(NF-2) }
		/^  wake, reader asleep on the completion/ {
			gsub(/[:,]/, "")
			print c "," us ",wake_same_cpu," $10 "," $13 "," $8 }
		/^  wake, reader asleep on the other/ {
			gsub(/[:,]/, "")
			print c "," us ",wake_other_cpu," $10 "," $13 "," $8 }
	' "$tmp/lb" >>"$outdir/breakdown.csv"
}

# The sysctls the sweeps change, with their values at the start (restored
# after the sweeps and before each sweep point)
sweep_knobs="credits buf_size ack_thresh inline_max zcopy_thresh"
declare -A knob_default
for k in $sweep_knobs; do
	knob_default[$k]=$(cat "/proc/sys/net/hps/$k")
done

# sweep_set [KNOB VALUE]: every swept sysctl at its default on both nodes,
# then KNOB at VALUE (nothing for nodelay, a socket option)
sweep_set() {
	local cmd= k
	for k in $sweep_knobs; do
		v=${knob_default[$k]}
		[ "$k" = "${1:-}" ] && v=${2%\*}
		cmd="$cmd echo $v >/proc/sys/net/hps/$k &&"
	done
	sh -c "$cmd true" && hps-vm-peer sh -c "$cmd true"
}

# busy_set TRANSPORT: net.core.busy_read and busy_poll on both nodes,
# busy_us for the busy-polling transports (*-bp), else 0
busy_set() {
	local us=0 cmd
	[[ $1 == *-bp ]] && us=$busy_us
	cmd="echo $us >/proc/sys/net/core/busy_read && echo $us >/proc/sys/net/core/busy_poll"
	sh -c "$cmd" && hps-vm-peer sh -c "$cmd" ||
		note "$1: could not set net.core.busy_read and busy_poll to $us"
}

echo "bench: $cfg, device $dev, peer $peer, $mode mode, ${secs}s streams" >&2
hps_failed=0
hb_port=21000
cur= restart=0 hb_conns=
filtered_plan "$mode" "$nodes" "$rdma" >"$tmp/plan"	# no /dev/fd in the guest
while read -r kind a b c d <&3; do
	case $kind in
	perf) run_perf "$a" "$b" "$c" ;;
	cm) run_cm "$a" ;;
	hb)
		if [ "$a" != "$cur" ] || [ "$restart" = 1 ]; then
			server_stop
			[ "$a" = smc ] && [ "$a" != "$cur" ] && smc_prepare
			cur=$a restart=0
			hb_port=$((hb_port + 10))
			busy_set "$a"
			# hps-fb: AF_HPS clients that fall back, of a TCP server;
			# tcp-hps: TCP clients of a server that may fall back
			srv=${a%-bp}
			[ "$srv" = hps-fb ] && srv=tcp
			[ "$srv" = tcp-hps ] && srv=hps-fb
			if ! hb_server "$srv" "$hb_port"; then
				peer_stop
				note "$a: the hps-bench server did not start: $(first_error "$tmp/server")"
			fi
		fi
		hb_conns=$d
		run_hb "$a" "$b" "$c" "$hb_port"
		;;
	lb)	# lb ITERS BUSY_US: its own server, busy_read set by itself
		server_stop
		busy_set none
		cur=
		run_lb "$a" "$b"
		;;
	app)	# app redis TRANSPORT CLIENTS
		server_stop
		busy_set "$b"
		cur=
		run_app "$a" "$b" "$c"
		;;
	sw)	# sw KNOB VALUE TEST SIZE
		if [ "sw $a=$b" != "$cur" ] || [ "$restart" = 1 ]; then
			server_stop
			cur="sw $a=$b" restart=0
			hb_port=$((hb_port + 10))
			busy_set hps
			sweep_set "$a" "$b" ||
				note "sweep $a=$b: could not set the sysctls"
			if ! hb_server hps "$hb_port"; then
				peer_stop
				note "sweep $a=$b: the hps-bench server did not start: $(first_error "$tmp/server")"
			fi
		fi
		run_hb hps "$c" "$d" "$hb_port" "$a" "$b"
		;;
	esac
done 3<"$tmp/plan"
server_stop
busy_set none
sweep_set
echo "bench: $cfg done" >&2
if [ "$hps_failed" != 0 ]; then
	echo "bench: $cfg: $hps_failed AF_HPS measurement(s) failed" >&2
	exit 1
fi
