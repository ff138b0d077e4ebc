#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install everything AF_HPS needs from Debian's package registry, then stage
# the guest kernel (image + modules) and the kernel sources' helper files
# under build/. Idempotent: a second run with everything present takes a
# second or two and touches nothing.
#
# HPS_KERNEL (make's KERNEL=) picks the guest kernel, one of Debian 12's:
#   6.1      linux-image-amd64, Debian 12's own kernel (the default); its
#            headers are installed on the host (linux-headers-ABI)
#   6.12     linux-image-6.12-amd64, the 6.12 LTS line Debian 12 also ships
#   6.12-rt  linux-image-6.12-rt-amd64, its PREEMPT_RT flavour
# 6.12's headers depend on its image, so they are not installed on the host
# (that would install a kernel into /boot): they are unpacked under
# build/headers/ABI instead, and build/.vm-kdir names the tree make builds
# against. siw, which no Debian kernel ships, is built from the same
# series' linux-source (Makefile, target siw).
#
# Nothing is fetched from anywhere but the package registry, and nothing from
# another project is copied into the tree: kselftest_harness.h and
# checkpatch.pl are extracted from Debian's linux-source-6.1 into build/.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${HPS_BUILD:-$top/build}
stamp=$build/.deps-ok

say() { printf 'deps: %s\n' "$*"; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }

# Host packages. One line per purpose so the list stays reviewable.
# The servers among them (inetd, vsftpd, lighttpd) are run by the tests in
# the guests, with their own configuration under build/; on a systemd host
# their packages also enable and start the stock services.
pkgs=(
	build-essential bc flex bison libelf-dev	# out-of-tree kbuild
	sparse						# make C=1
	linux-source-6.1 xz-utils			# checkpatch, harness, siw
	linux-source-6.12				# siw for the 6.12 guests
	qemu-system-x86 busybox-static cpio kmod	# the test VM
	iproute2 rdma-core ibverbs-utils rdmacm-utils	# RDMA user space
	perftest libibverbs-dev librdmacm-dev		# raw-verbs reference
	socat python3					# real programs in tests
	openbsd-inetd iperf3 vsftpd lighttpd curl	# selftests/hps_apps2.sh
	gnuplot-nox					# make bench plots
	redis-server redis-tools			# make bench: redis-benchmark
	trinity						# selftests/hps_trinity.sh
	dkms man-db groff-base				# make dkms, man pages
)

series=${HPS_KERNEL:-6.1}
case $series in
6.1) meta=linux-image-amd64 hmeta=linux-headers-amd64 ;;
6.12) meta=linux-image-6.12-amd64 hmeta=linux-headers-6.12-amd64 ;;
6.12-rt) meta=linux-image-6.12-rt-amd64 hmeta=linux-headers-6.12-rt-amd64 ;;
*) die "KERNEL=$series: the guest kernels are 6.1, 6.12 and 6.12-rt" ;;
esac

need_apt=0
for p in "${pkgs[@]}"; do
	case $p in \#*) continue ;; esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		{ need_apt=1; break; }
done

if [ "$need_apt" = 1 ] || ! apt-cache show "$meta" >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || die "need root to install packages (apt-get)"
	say "apt-get update"
	apt-get update -qq || die "apt-get update failed"
fi

# The guest kernel ABI: read it from the metapackages, never hard-code it.
abi=$(apt-cache depends "$meta" 2>/dev/null |
	sed -n 's/.*Depends: linux-image-\(6\.[0-9.]*[-+][^ ]*-amd64\)$/\1/p' | head -n1)
habi=$(apt-cache depends "$hmeta" 2>/dev/null |
	sed -n 's/.*Depends: linux-headers-\(6\.[0-9.]*[-+][^ ]*-amd64\)$/\1/p' | head -n1)
[ -n "$abi" ] || die "cannot read the kernel ABI from $meta"
[ "$abi" = "$habi" ] || die "image ($abi) and headers ($habi) metapackages disagree"

[ "$series" != 6.1 ] || pkgs+=("linux-headers-$abi")
missing=()
for p in "${pkgs[@]}"; do
	case $p in \#*) continue ;; esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "need root to install: ${missing[*]}"
	say "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null ||
		die "apt-get install failed"
fi

mkdir -p "$build"

# Guest kernel: downloaded and unpacked, never installed on the host.
kroot=$build/kernel/$abi
if [ ! -f "$kroot/boot/vmlinuz-$abi" ]; then
	say "fetching linux-image-$abi for the guest"
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "linux-image-$abi") ||
		die "apt-get download linux-image-$abi failed"
	rm -rf "$kroot" && mkdir -p "$kroot"
	dpkg -x "$tmp"/linux-image-*.deb "$kroot"
	rm -rf "$tmp"
	depmod -b "$kroot" "$abi"
fi
ln -sfn "$abi" "$build/kernel/$series"

# The headers make builds against: the installed ones for 6.1; 6.12's
# unpacked under build/headers/ABI with the kbuild tools and the common
# tree they name, the flavour's Makefile pointed at the unpacked common one.
if [ "$series" = 6.1 ]; then
	kdir=/usr/src/linux-headers-$abi
else
	hroot=$build/headers/$abi
	kdir=$hroot/usr/src/linux-headers-$abi
	if [ ! -f "$hroot/.ok" ]; then
		say "fetching linux-headers-$abi (unpacked under build/, not installed)"
		hpkgs=$(apt-cache depends "linux-headers-$abi" |
			sed -n 's/^ *Depends: \(linux-\(headers-.*-common.*\|kbuild-.*\)\)$/\1/p')
		[ -n "$hpkgs" ] || die "cannot read linux-headers-$abi's dependencies"
		tmp=$(mktemp -d)
		# shellcheck disable=SC2086
		(cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root \
			"linux-headers-$abi" $hpkgs) ||
			die "apt-get download linux-headers-$abi failed"
		rm -rf "$hroot" && mkdir -p "$hroot"
		for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$hroot" || die "dpkg -x $deb"; done
		rm -rf "$tmp"
		sed -i "s|^include /usr/src/|include $hroot/usr/src/|" "$kdir/Makefile"
		grep -q "^include $hroot/" "$kdir/Makefile" ||
			die "unexpected $kdir/Makefile"
		touch "$hroot/.ok"
	fi
fi
[ -f "$kdir/Makefile" ] || die "no kernel headers at $kdir"
echo "$kdir" >"$build/.kdir-$series"

# Files taken from Debian's kernel source at build time: the checkpatch,
# the kselftest harness and siw from linux-source-6.1 into build/linux-source
# (whichever kernel the guests boot), and 6.12's siw from linux-source-6.12
# into build/linux-source-6.12.
extract() {	# extract SERIES DIR PATTERN...
	local v=$1 dir=$2 tarball
	shift 2
	[ ! -f "$dir/.ok" ] || return 0
	tarball=$(ls "/usr/src/linux-source-$v.tar.xz" 2>/dev/null) ||
		die "linux-source-$v tarball missing"
	say "extracting $* from $tarball"
	rm -rf "$dir" && mkdir -p "$dir"
	tar -C "$dir" --strip-components=1 -xJf "$tarball" --wildcards \
		"${@/#/linux-source-$v/}" || die "tar $tarball"
	touch "$dir/.ok"
}
extract 6.1 "$build/linux-source" scripts/checkpatch.pl scripts/spelling.txt \
	scripts/const_structs.checkpatch \
	tools/testing/selftests/kselftest_harness.h \
	tools/testing/selftests/kselftest.h 'drivers/infiniband/sw/siw/*'
case $series in 6.12*)
	extract 6.12 "$build/linux-source-6.12" 'drivers/infiniband/sw/siw/*' ;;
esac

# The guest kernel from now on, unless only staged (HPS_DEPS_STAGE_ONLY=1:
# make lint's other kernels).
if [ -z "${HPS_DEPS_STAGE_ONLY:-}" ]; then
	ln -sfn "$abi" "$build/kernel/current"
	echo "$kdir" >"$build/.vm-kdir"
	echo "$series" >"$build/.vm-series"
	echo "$abi" >"$stamp"
	say "ok (guest kernel $abi)"
else
	say "ok ($abi staged)"
fi
