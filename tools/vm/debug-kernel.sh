#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the debug kernel of 'make check-debug' from Debian's linux-source-6.1:
# x86_64_defconfig + kvm_guest.config + tools/vm/debug.config (KASAN, lockdep,
# kmemleak, DEBUG_ATOMIC_SLEEP, DEBUG_OBJECTS, failslab, fail_page_alloc; the
# guest's drivers; the big driver families and what a TCG guest never
# touches off; -Os). The result is staged as
#
#   build/debug-kernel/root/boot/vmlinuz-KVER
#   build/debug-kernel/root/lib/modules/KVER/...	(hps-vm --kernel DIR)
#   build/debug-kernel/obj				(KDIR for external modules)
#   build/siw/KVER/siw.ko				(where hps-vm looks for siw)
#
# and cached: it is rebuilt only when debug.config or this script changes, or
# Debian's linux-source-6.1 does. Prints the kernel release on stdout.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${HPS_BUILD:-$top/build}
d=$build/debug-kernel
frag=$top/tools/vm/debug.config
tarball=/usr/src/linux-source-6.1.tar.xz

say() { printf 'debug-kernel: %s\n' "$*" >&2; }
die() { printf 'debug-kernel: error: %s\n' "$*" >&2; exit 1; }

[ -f "$tarball" ] || die "$tarball missing: run 'make deps'"
want=$(cat "$frag" "$0" | sha256sum | cut -c1-16)-$(stat -c %s.%Y "$tarball")
if [ -f "$d/stamp" ] && [ "$(cat "$d/stamp")" = "$want" ] &&
   [ -f "$d/release" ]; then
	cat "$d/release"
	exit 0
fi

jobs=$(($(nproc) + 1))
start=$(date +%s)
rm -rf "$d"
mkdir -p "$d"
say "unpacking linux-source-6.1 into $d/src"
tar -C "$d" -xJf "$tarball"
mv "$d/linux-source-6.1" "$d/src"

say "configuring (x86_64_defconfig + kvm_guest.config + tools/vm/debug.config)"
mkdir -p "$d/obj"
make -s -C "$d/src" O="$d/obj" x86_64_defconfig >/dev/null
(cd "$d/src" && scripts/kconfig/merge_config.sh -m -O "$d/obj" \
	"$d/obj/.config" kernel/configs/kvm_guest.config "$frag" >/dev/null)
make -s -C "$d/src" O="$d/obj" olddefconfig >/dev/null

# Every option the fragment asks for must have survived olddefconfig
# (a dependency it lacks would silently drop it).
bad=0
while IFS= read -r line; do
	case $line in
	CONFIG_*=*) grep -qx -- "$line" "$d/obj/.config" ||
		{ say "not in the final .config: $line"; bad=1; } ;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }; opt=${opt%% *}
		! grep -q "^$opt=" "$d/obj/.config" ||
		{ say "still set: $opt"; bad=1; } ;;
	esac
done <"$frag"
[ "$bad" = 0 ] || die "tools/vm/debug.config does not apply cleanly"

say "building bzImage and modules with -j$jobs (about 15 minutes on 2 cores)"
make -s -C "$d/src" O="$d/obj" -j"$jobs" bzImage modules >"$d/build.log" 2>&1 ||
	{ tail -n 40 "$d/build.log" >&2; die "kernel build failed (log: $d/build.log)"; }
release=$(cat "$d/obj/include/config/kernel.release")
mkdir -p "$d/root/boot"
cp "$d/obj/arch/x86/boot/bzImage" "$d/root/boot/vmlinuz-$release"
cp "$d/obj/.config" "$d/root/boot/config-$release"
make -s -C "$d/src" O="$d/obj" INSTALL_MOD_PATH="$d/root" \
	modules_install >>"$d/build.log" 2>&1 ||
	die "modules_install failed (log: $d/build.log)"
rm -f "$d/root/lib/modules/$release/build" "$d/root/lib/modules/$release/source"
siw=$(find "$d/root/lib/modules/$release" -name 'siw.ko*' | head -n1)
[ -n "$siw" ] || die "siw.ko was not built"
mkdir -p "$build/siw/$release"
cp "$siw" "$build/siw/$release/siw.ko"

echo "$release" >"$d/release"
echo "$(($(date +%s) - start))" >"$d/build-seconds"
echo "$want" >"$d/stamp"
say "built $release in $(cat "$d/build-seconds") s"
echo "$release"
