#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# zcopy.sh: the zero-copy sweep (make bench-zcopy). For each configuration
# boots the guests, runs tools/bench/zcopy-sweep.sh in them (AF_HPS stream
# with zero copy off and on, ib_read_bw, ib_write_bw; 64 KiB to 16 MiB),
# then writes on the host:
#
#   bench-results/<UTC date>-zcopy/zcopy.csv      every measurement
#   bench-results/<UTC date>-zcopy/zcopy.md       table with ratios
#   bench-results/<UTC date>-zcopy/zcopy-CFG.png  bandwidth and CPU plots
#
#   zcopy.sh [--configs "1:rxe 2:rxe 2:siw"] [--seconds S] [--out DIR]
#   zcopy.sh --report DIR     tables and plots again from DIR/zcopy.csv
set -u
top=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
configs="1:rxe 2:rxe 2:siw" secs=3
out=$top/bench-results/$(date -u +%Y%m%d-%H%M)-zcopy
while [ $# -gt 0 ]; do
	case $1 in
	--configs) configs=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--report) out=$2; configs=; shift 2 ;;
	*) echo "usage: $0 [--configs LIST] [--seconds S] [--out DIR] | --report DIR" >&2
	   exit 2 ;;
	esac
done
case $(readlink -f "$out") in
"$top"/*) ;;
*) echo "zcopy: --out must be inside $top (the guests see only the tree)" >&2
   exit 2 ;;
esac
mkdir -p "$out"
# two vCPUs per guest, as for make bench (bench.sh)
export HPS_VM_SMP=${HPS_VM_SMP:-2}
rc=0
for c in $configs; do
	echo "zcopy: ${c%%:*} node(s), ${c#*:}" >&2
	"$top/tools/vm/hps-vm" run --nodes "${c%%:*}" --rdma "${c#*:}" \
		--timeout 1500 -- "$top/tools/bench/zcopy-sweep.sh" "$out" \
		"$secs" 2>&1 | grep --line-buffered -E '^\[|zcopy-sweep|^hps-vm' >&2
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
done

csv=$out/zcopy.csv
[ -s "$csv" ] || { echo "zcopy: no results" >&2; exit 1; }
{
	echo "# Zero-copy sweep ($(date -u +%F), ${secs} s per point)"
	echo
	echo "MB/s; CPU user+sys s/GiB of the sender and the receiver; ratios"
	echo "of AF_HPS with zero copy (and the registration cache) to without,"
	echo "and to ib_read_bw on the same device. \"no cache\": zero copy with"
	echo "net.hps.zcopy_cache_bytes=0; hit rate: registration cache hits /"
	echo "(hits + misses), sender and receiver together, the sender cycling"
	echo "through 16 buffers of the size."
	tail -n +2 "$csv" | sort -t, -k1,1 -k3,3n | awk -F, '{
		k = $1 SUBSEP $3
		if (!(k in seen)) { seen[k] = 1; order[++n] = k }
		bw[$2, k] = $4; cpu[$2, k] = $5 + $6; srv[$2, k] = $8 + $9
		hit[$2, k] = $13; miss[$2, k] = $14
	} END {
		last = ""
		for (i = 1; i <= n; i++) {
			split(order[i], f, SUBSEP)
			k = order[i]
			if (f[1] != last) {
				last = f[1]
				printf "\n## %s\n\n", f[1]
				print "| size | copy MB/s | zcopy no cache MB/s | zcopy MB/s | zcopy/copy | ib_read_bw | zcopy/read | ib_write_bw | copy CPU s/GiB (snd+rcv) | zcopy no cache CPU | zcopy CPU | cache hit rate |"
				print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
			}
			off = bw["hps-zcopy-off", k]; on = bw["hps-zcopy-on", k]
			ncpu = (("hps-zcopy-nocache", k) in bw) ? sprintf("%.2f+%.2f", cpu["hps-zcopy-nocache", k], srv["hps-zcopy-nocache", k]) : "-"
			nc = bw["hps-zcopy-nocache", k]
			h = hit["hps-zcopy-on", k]; m = miss["hps-zcopy-on", k]
			hr = (h + m > 0) ? sprintf("%.1f%% (%d/%d)", 100 * h / (h + m), h, h + m) : "-"
			if (nc == "") nc = "-"
			rd = bw["verbs-read", k]; wr = bw["verbs-write", k]
			r1 = "-"; r2 = "-"
			if (off > 0 && on != "") r1 = sprintf("%.2f", on / off)
			if (rd > 0 && on != "") r2 = sprintf("%.2f", on / rd)
			if (off == "") off = "-"
			if (on == "") on = "-"
			if (rd == "") rd = "-"
			if (wr == "") wr = "-"
			printf "| %d KiB | %s | %s | %s | %s | %s | %s | %s | %.2f+%.2f | %s | %.2f+%.2f | %s |\n", f[2] / 1024, off, nc, on, r1, rd, r2, wr, cpu["hps-zcopy-off", k], srv["hps-zcopy-off", k], ncpu, cpu["hps-zcopy-on", k], srv["hps-zcopy-on", k], hr
		}
	}'
} >"$out/zcopy.md"

if command -v gnuplot >/dev/null; then
	for c in $(awk -F, 'NR > 1 { print $1 }' "$csv" | sort -u); do
		for w in hps-zcopy-off hps-zcopy-nocache hps-zcopy-on verbs-read verbs-write; do
			awk -F, -v c="$c" -v w="$w" '$1 == c && $2 == w {
				print $3 / 1024, $4, $5 + $6 + $8 + $9 }' "$csv" \
				>"$out/.$c-$w.dat"
		done
		gnuplot <<-GP
		set terminal pngcairo size 1100,500 font ",10" noenhanced
		set output "$out/zcopy-$c.png"
		set multiplot layout 1,2 title "AF_HPS zero copy, $c"
		set logscale x 2
		set xlabel "transfer size (KiB)"
		set key below
		set ylabel "MB/s"
		plot "$out/.$c-hps-zcopy-off.dat" u 1:2 w lp t "AF_HPS copy", \
		     "$out/.$c-hps-zcopy-nocache.dat" u 1:2 w lp t "AF_HPS zero copy, no cache", \
		     "$out/.$c-hps-zcopy-on.dat" u 1:2 w lp t "AF_HPS zero copy", \
		     "$out/.$c-verbs-read.dat" u 1:2 w lp t "ib_read_bw", \
		     "$out/.$c-verbs-write.dat" u 1:2 w lp t "ib_write_bw"
		set ylabel "CPU s/GiB (both ends, user+sys)"
		plot "$out/.$c-hps-zcopy-off.dat" u 1:3 w lp t "AF_HPS copy", \
		     "$out/.$c-hps-zcopy-nocache.dat" u 1:3 w lp t "AF_HPS zero copy, no cache", \
		     "$out/.$c-hps-zcopy-on.dat" u 1:3 w lp t "AF_HPS zero copy"
		unset multiplot
		GP
		rm -f "$out"/.$c-*.dat
	done
fi
echo "zcopy: results in $out (zcopy.md, zcopy.csv, zcopy-*.png)" >&2
exit $rc
