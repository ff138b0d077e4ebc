#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# host_kbuild.sh: the build's kernel checks, on the host (make check runs it
# before the guests; Documentation/testing.rst, "Kernels"). For each kernel
# tools/deps.sh has staged (build/.kdir-SERIES):
# - af_hps.ko and hps_kfs.ko build from a copy of the tree, and the probes
#   chose the forms the series has;
# - DKMS (dkms.conf, as make dkms stages it) builds af_hps.ko for it.
# And the refusals, on the guest kernel's headers:
# - a kernel outside 6.1 and 6.12 (PATCHLEVEL given as 6) is refused in
#   one line before anything compiles;
# - an interface neither series has (a probe forced to fail,
#   HPS_PROBE_BREAK) is refused in one line, without compiler errors;
# - DKMS skips (status 77) a kernel outside BUILD_EXCLUSIVE_KERNEL.
# Ends with "kbuild: N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
work=$(mktemp -d "${TMPDIR:-/tmp}/host_kbuild.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
pass=0 fail=0

check() {	# check NAME CMD...
	local name=$1
	shift
	if "$@" >"$work/out" 2>&1; then
		echo "ok - kbuild: $name"
		pass=$((pass + 1))
	else
		echo "not ok - kbuild: $name"
		sed 's/^/#   /' "$work/out" | tail -n 15
		fail=$((fail + 1))
	fi
}

copy() {	# copy DIR: the module's sources, without build products
	rm -rf "$1" && mkdir -p "$1/tools" &&
	(cd "$top" && cp -r Kbuild include af_hps compat "$1/" &&
	 cp -r tools/kfs "$1/tools/") &&
	rm -f "$1"/af_hps/hps_compat_gen.h* "$1"/tools/kfs/hps_kfs_compat_gen.h* &&
	find "$1" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' \) -delete
}

# The forms each series has (compat/*.c): HAVE names for 6.1 and 6.12.
want_6_1="SENDPAGE"
want_6_12="ACCEPT_ARG SYSCTL_CONST NET_SYSCTL_SZ ITER_IOV"

builds() {	# builds SERIES KDIR
	local s=$1 kd=$2 d=$work/tree-$1 have want
	copy "$d" || return 1
	make -s -C "$kd" M="$d" CONFIG_AF_HPS_INJECT= modules || return 1
	make -s -C "$kd" M="$d/tools/kfs" modules || return 1
	[ -f "$d/af_hps.ko" ] && [ -f "$d/tools/kfs/hps_kfs.ko" ] || return 1
	have=$(sed -n 's/^#define HPS_HAVE_\([A-Z_]*\) 1$/\1/p' \
		"$d/af_hps/hps_compat_gen.h" | sort | xargs)
	case $s in 6.1) want=$want_6_1 ;; *) want=$want_6_12 ;; esac
	want=$(echo "$want" | tr ' ' '\n' | sort | xargs)
	[ "$have" = "$want" ] || { echo "probes: '$have', want '$want'"; return 1; }
	case $s in
	6.1) want='#undef HPS_HAVE_MNT_IDMAP' ;;
	*) want='#define HPS_HAVE_MNT_IDMAP 1' ;;
	esac
	grep -qx "$want" "$d/tools/kfs/hps_kfs_compat_gen.h" ||
		{ echo "kfs probes: want '$want'"; return 1; }
}

dkms_src() {	# the source tree make dkms stages, added to a private tree
	[ -d "$work/dkmstree/af_hps" ] && return 0
	make -s -C "$top" dkms DESTDIR="$work/dkms" >/dev/null || return 1
	mkdir -p "$work/dkmstree"
	dkms add --sourcetree "$work/dkms/usr/src" --dkmstree "$work/dkmstree" \
		-m af_hps -v "$ver" >/dev/null
}

dkms_builds() {	# dkms_builds KREL KDIR
	dkms_src || return 1
	dkms build --sourcetree "$work/dkms/usr/src" --dkmstree "$work/dkmstree" \
		-m af_hps -v "$ver" -k "$1" --kernelsourcedir "$2" || return 1
	[ -f "$work/dkmstree/af_hps/$ver/$1/x86_64/module/af_hps.ko" ]
}

dkms_skips() {	# a release BUILD_EXCLUSIVE_KERNEL does not match: status 77
	local rc
	dkms_src || return 1
	dkms build --sourcetree "$work/dkms/usr/src" --dkmstree "$work/dkmstree" \
		-m af_hps -v "$ver" -k 6.6.0-99-amd64 --kernelsourcedir "$1"
	rc=$?
	echo "dkms build: status $rc"
	[ "$rc" = 77 ]
}

refused() {	# refused KDIR WHAT MAKE-ARGS...: one line, no compiler output
	local kd=$1 what=$2 d=$work/tree-refused n
	shift 2
	copy "$d" || return 1
	! make -s -C "$kd" M="$d" "$@" modules >"$work/refusal" 2>&1 || return 1
	cat "$work/refusal"
	n=$(grep -c "af_hps: Linux .* is not supported: $what" "$work/refusal")
	[ "$n" = 1 ] || return 1
	! grep -q -E 'error:|warning:' "$work/refusal" || return 1
	[ ! -f "$d/af_hps.ko" ]
}

ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dkms.conf")
for kf in "$build"/.kdir-*; do
	[ -f "$kf" ] || continue
	s=${kf##*/.kdir-} kd=$(cat "$kf")
	krel=$(sed -n 's/.*UTS_RELEASE "\(.*\)".*/\1/p' "$kd/include/generated/utsrelease.h")
	check "Linux $s ($krel): af_hps.ko and hps_kfs.ko build, the probes chose $s's forms" \
		builds "$s" "$kd"
	if command -v dkms >/dev/null; then
		check "Linux $s ($krel): dkms build of make dkms's tree" \
			dkms_builds "$krel" "$kd"
	fi
done
kd=$(cat "$build/.vm-kdir")
check "a kernel outside 6.1 and 6.12 is refused in one line" \
	refused "$kd" "af_hps builds for Linux 6.1 and 6.12" PATCHLEVEL=6
check "make clean works for a kernel that is refused" \
	make -s -C "$kd" M="$work/tree-refused" PATCHLEVEL=6 clean
check "an interface neither series has is refused in one line (HPS_PROBE_BREAK)" \
	refused "$kd" "its iov_iter segment access is neither" HPS_PROBE_BREAK=iter-iov
if command -v dkms >/dev/null; then
	check "dkms skips a kernel outside BUILD_EXCLUSIVE_KERNEL (status 77)" \
		dkms_skips "$kd"
fi
echo "kbuild: $pass passed, $fail failed"
[ "$fail" = 0 ]
