#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install everything AF_HPS needs from Debian's package registry, then stage
# the guest kernel (image + modules) and the kernel sources' helper files
# under build/. Idempotent: a second run with everything present takes a
# second or two and touches nothing.
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

need_apt=0
for p in "${pkgs[@]}"; do
	case $p in \#*) continue ;; esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		{ need_apt=1; break; }
done

if [ "$need_apt" = 1 ] || ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || die "need root to install packages (apt-get)"
	say "apt-get update"
	apt-get update -qq || die "apt-get update failed"
fi

# The guest kernel ABI: read it from the metapackages, never hard-code it.
abi=$(apt-cache depends linux-image-amd64 2>/dev/null |
	sed -n 's/.*Depends: linux-image-\(6\.1\.0-[0-9]*-amd64\)$/\1/p' | head -n1)
habi=$(apt-cache depends linux-headers-amd64 2>/dev/null |
	sed -n 's/.*Depends: linux-headers-\(6\.1\.0-[0-9]*-amd64\)$/\1/p' | head -n1)
[ -n "$abi" ] || die "cannot read the kernel ABI from linux-image-amd64"
[ "$abi" = "$habi" ] || die "image ($abi) and headers ($habi) metapackages disagree"

pkgs+=("linux-headers-$abi")
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
ln -sfn "$abi" "$build/kernel/current"

# Files taken from Debian's kernel source at build time.
src=$build/linux-source
if [ ! -f "$src/.ok" ]; then
	tarball=$(ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null) ||
		die "linux-source-6.1 tarball missing"
	say "extracting checkpatch, kselftest harness and siw from $tarball"
	rm -rf "$src" && mkdir -p "$src"
	tar -C "$src" --strip-components=1 -xJf "$tarball" \
		--wildcards \
		'linux-source-6.1/scripts/checkpatch.pl' \
		'linux-source-6.1/scripts/spelling.txt' \
		'linux-source-6.1/scripts/const_structs.checkpatch' \
		'linux-source-6.1/tools/testing/selftests/kselftest_harness.h' \
		'linux-source-6.1/tools/testing/selftests/kselftest.h' \
		'linux-source-6.1/drivers/infiniband/sw/siw/*'
	touch "$src/.ok"
fi

echo "$abi" >"$stamp"
say "ok (guest kernel $abi)"
