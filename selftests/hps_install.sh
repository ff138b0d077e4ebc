#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# AF_HPS installed like a kernel feature, checked in the guest
# (Documentation/install.rst):
#
# - make install DESTDIR=DIR puts the plain module under
#   lib/modules/KVER/updates, indexed there by depmod -b, the uapi header,
#   hps_run and its library, hps-bench and the man pages (which render
#   without warnings) under DIR/usr/local, and writes nothing outside DIR;
#   make uninstall DESTDIR=DIR takes all of it away again;
# - make install refuses a test build (make vm-modules, fault injection);
# - make install into the guest's own root (an overlay with a tmpfs upper
#   layer: the host is not touched): with af_hps unloaded, a program built
#   against the installed header gets socket(AF_HPS, ...) with no insmod,
#   the installed module loaded through its net-pf-22 alias, and the
#   installed hps_run moves a program's TCP socket to AF_HPS; make
#   uninstall removes it all, after which socket(AF_HPS, ...) fails with
#   EAFNOSUPPORT (in make check over a module tree of af_hps's
#   dependencies only, which depmod indexes in a second, not 70 s;
#   make check-full uses the kernel's whole tree: small_tree below);
# - dkms accepts the source tree make dkms stages; the man pages and
#   Documentation/ agree with the code (tools/check-docs.py).
#
# make runs on selftests/install-tree, a copy of the sources that make
# selftests built on the host for the guests' kernel (compiling under TCG
# takes minutes). The guest is given /lib/modules/KVER/build, as the
# kernel's headers package would, so that make picks the running kernel as
# on a real host. At the end the test bed's own af_hps.ko (the tree's,
# with fault injection) is loaded again. Prints kselftest-style TAP.
#
# hps-configs: 1:rxe
set -u
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)
tree=$top/selftests/install-tree
kver=$(uname -r)
work=$(mktemp -d /tmp/hps_install.XXXXXX) || exit 1
dest=$work/dest
log=$work/make.log
link=/lib/modules/$kver/build
made_link='' made_devfd=''
pass=0 fail=0 n=0
ok() { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n $1"; }
check() {
	local name=$1 t0=$SECONDS; shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
	say "($((SECONDS - t0)) s)"
}
say() { echo "# $*"; }

cleanup() {
	# Whatever a failed case left installed in the guest's root goes.
	[ -f "/lib/modules/$kver/updates/af_hps.ko" ] &&
		make -C "$tree" uninstall >/dev/null 2>&1
	small_tree_gone
	[ -n "$made_link" ] && rm -f "$link"
	[ -n "$made_devfd" ] && rm -f /dev/fd
	lsmod | grep -q '^af_hps ' || insmod "$top/af_hps.ko" dyndbg=+p
	rm -rf "$work"
}
trap cleanup EXIT

echo "TAP version 13"
echo "1..13"

# make in the install tree, its output shown when it fails.
mk() {
	local rc t0=$SECONDS
	make -C "$tree" "$@" >"$log" 2>&1
	rc=$?
	say "make $* (status $rc, $((SECONDS - t0)) s)"
	grep -q 'CC \[M\]' "$log" && say "(it compiled the module again)"
	[ "$rc" = 0 ] || tail -n 30 "$log" | sed 's/^/# /'
	return "$rc"
}

# Earlier tests may leave connections being torn down; wait, bounded, until
# the module is idle, then unload it.
unload() {
	local i
	for i in $(seq 1800); do
		[ "$(cat /sys/module/af_hps/refcnt 2>/dev/null)" = 0 ] && break
		[ "$i" = 1800 ] && { say "af_hps still in use after 180 s"; return 1; }
		sleep 0.1
	done
	rmmod af_hps || return 1
	! lsmod | grep -q '^af_hps '
}

# The files make install puts under PREFIX (/usr/local), relative to it.
prefix_files="include/linux/af_hps.h bin/hps_run bin/hps-bench bin/hps-ss
lib/libhps-preload.so share/man/man7/af_hps.7 share/man/man1/hps_run.1
share/man/man1/hps-bench.1 share/man/man8/hps-ss.8"

prepared() {
	if [ ! -f "$tree/af_hps.ko" ] || [ ! -f "$tree/.hps-kdir" ]; then
		say "$tree is not built (make selftests)"
		return 1
	fi
	if [ ! -e "$link" ]; then
		ln -s "$(cat "$tree/.hps-kdir")" "$link" || return 1
		made_link=1
	fi
	[ -f "$link/Makefile" ] || { say "no kernel build tree at $link"; return 1; }
	touch "$work/stamp"
}
check "the install tree is built, the running kernel's build tree linked" prepared

destdir_module() {
	local d=$dest/lib/modules/$kver ko
	ko=$d/updates/af_hps.ko
	mk install DESTDIR="$dest" || return 1
	[ -f "$ko" ] || { say "no $ko"; return 1; }
	[ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$kver" ] ||
		{ say "$ko: vermagic $(modinfo -F vermagic "$ko")"; return 1; }
	! modinfo -F parm "$ko" | grep -q '^inject_' ||
		{ say "$ko has fault injection"; return 1; }
	grep -q '^updates/af_hps\.ko:' "$d/modules.dep" ||
		{ say "modules.dep: $(cat "$d/modules.dep")"; return 1; }
	grep -qx 'alias net-pf-22 af_hps' "$d/modules.alias" ||
		{ say "modules.alias lacks net-pf-22"; return 1; }
}
check "make install DESTDIR: af_hps.ko in lib/modules/$kver/updates, depmod -b indexed it" \
	destdir_module

# A program using the header's names, built against the header given.
cat >"$work/afsock.c" <<'EOF'
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/af_hps.h>

int main(void)
{
	struct hps_info info;
	socklen_t ilen = sizeof(info), dlen;
	int fd, domain;

	fd = socket(AF_HPS, SOCK_STREAM, HPSPROTO_HPS);
	if (fd < 0) {
		printf("socket: %s\n", strerror(errno));
		return 1;
	}
	dlen = sizeof(domain);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) ||
	    getsockopt(fd, SOL_HPS, HPS_INFO, &info, &ilen)) {
		printf("getsockopt: %s\n", strerror(errno));
		return 1;
	}
	printf("%d %u\n", domain, info.hpsi_version);
	return 0;
}
EOF

destdir_files() {
	local p=$dest/usr/local f page out rc=0
	for f in $prefix_files; do
		[ -f "$p/$f" ] || { say "missing $p/$f"; rc=1; }
	done
	[ "$rc" = 0 ] || return 1
	cmp "$p/include/linux/af_hps.h" include/uapi/linux/af_hps.h || return 1
	gcc -Wall -Werror -fsyntax-only -I"$p/include" "$work/afsock.c" || return 1
	[ -x "$p/bin/hps_run" ] && [ -x "$p/bin/hps-bench" ] &&
		[ -x "$p/bin/hps-ss" ] || return 1
	# hps_run finds its library in ../lib (a dry run needs no module).
	"$p/bin/hps_run" -n true || { say "hps_run -n true failed"; return 1; }
	"$p/bin/hps-bench" --csv-columns | grep -q '^transport,test,' || return 1
	"$p/bin/hps-ss" --help | grep -q '^usage: hps-ss' || return 1
	for page in "$p"/share/man/man*/*; do
		out=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
		[ -z "$out" ] || { say "$page: $out"; rc=1; }
	done
	[ "$(MANPATH=$p/share/man man -w af_hps)" = "$p/share/man/man7/af_hps.7" ] ||
		{ say "man -w af_hps does not find the page"; rc=1; }
	return $rc
}
check "make install DESTDIR: header, hps_run, its library, hps-bench, hps-ss, man pages" \
	destdir_files

# The test bed's /lib/modules is an overlay whose upper layer, a tmpfs at
# /run/modules/upper (tools/vm/guest-init), holds every file written under
# it and nothing else: searched there, not through the thousands of the
# kernel's modules (a minute under TCG).
nothing_outside() {
	local new mods=/lib/modules/$kver
	[ -d /run/modules/upper ] && mods=/run/modules/upper
	new=$(find "$mods" /usr/local /etc -newer "$work/stamp" 2>/dev/null)
	[ -z "$new" ] || { say "written outside DESTDIR: $new"; return 1; }
}
check "make install DESTDIR: nothing written outside DESTDIR" nothing_outside

destdir_uninstall() {
	local left
	mk uninstall DESTDIR="$dest" || return 1
	left=$(find "$dest" -type f ! -name 'modules.*')
	[ -z "$left" ] || { say "left behind: $left"; return 1; }
	! grep -q af_hps "$dest/lib/modules/$kver/modules.dep"
}
check "make uninstall DESTDIR: everything make install put there is gone" \
	destdir_uninstall

# The tree's own af_hps.ko is the test bed's, with fault injection.
refuses_test_build() {
	modinfo -F parm af_hps.ko | grep -q '^inject_' ||
		{ say "the tree's af_hps.ko is not a test build (make vm-modules)"; return 1; }
	make -C "$top" -o modules -o kdir install-module DESTDIR="$work/refused" \
		>"$log" 2>&1 && { say "installed a test build"; return 1; }
	grep -q 'test build with fault injection' "$log" &&
		[ ! -e "$work/refused" ]
}
check "make install refuses a test build (make vm-modules)" refuses_test_build

# In make check the root cases install into a module tree that holds what
# af_hps needs and nothing else: the modules it depends on (and theirs, as
# the kernel's modules.dep lists them), the kernel's modules.order and
# modules.builtin*, and the build link, bind-mounted over /lib/modules/KVER
# until root_uninstall is done. depmod over Debian's 4,000 modules took
# 70 s under TCG at make install and 36 s at make uninstall; make
# check-full (HPS_FULL) installs into the whole tree.
small_tree() {
	local real=/lib/modules/$kver mods=$work/mods m p files=''

	[ -n "${HPS_FULL:-}" ] && return 0
	for m in $(modinfo -F depends "$tree/af_hps.ko" | tr , ' '); do
		p=$(modinfo -n "$m") || return 1
		p=${p#"$real"/}
		files="$files $p $(sed -n "s|^$p: *||p" "$real/modules.dep")"
	done
	mkdir -p "$mods"
	# shellcheck disable=SC2086	# (paths without spaces, one per word)
	(cd "$real" && cp --parents -t "$mods" $files modules.order \
		modules.builtin modules.builtin.modinfo) || return 1
	ln -s "$(readlink "$link")" "$mods/build" || return 1
	mount --bind "$mods" "$real" || return 1
	small=1
	depmod "$kver" || return 1	# indexed, as the whole tree was
	say "a module tree of $(find "$real/" -name '*.ko' | wc -l) modules over $real"
}
small=''
small_tree_gone() {
	[ -z "$small" ] || umount "/lib/modules/$kver" && small=''
}

root_install() {
	local f
	small_tree || { say "cannot set up the small module tree"; return 1; }
	# The build is the DESTDIR case's: here make is told the module and
	# the programs are up to date (kbuild's second check of that took
	# about 17 s under TCG).
	mk -o modules -o progs install || return 1
	for f in $prefix_files; do
		[ -f "/usr/local/$f" ] || { say "missing /usr/local/$f"; return 1; }
	done
	[ "$(modinfo -n af_hps)" = "/lib/modules/$kver/updates/af_hps.ko" ] ||
		{ say "modinfo -n af_hps: $(modinfo -n af_hps 2>&1)"; return 1; }
	# (Debian's /usr/local/man is a link to share/man)
	[ "$(readlink -f "$(man -w af_hps)")" = /usr/local/share/man/man7/af_hps.7 ] ||
		{ say "man -w af_hps: $(man -w af_hps 2>&1)"; return 1; }
	[ "$(readlink -f "$(man -w hps_run)")" = /usr/local/share/man/man1/hps_run.1 ]
}
check "make install: into the guest's root, found by modinfo and man" root_install

# Built against the installed header (the compiler's default path), with
# af_hps unloaded: socket() loads the installed module, the plain one.
autoload() {
	gcc -Wall -Werror -o "$work/afsock" "$work/afsock.c" || return 1
	unload || return 1
	"$work/afsock" >"$work/out" || { say "$(cat "$work/out")"; return 1; }
	read -r domain _ <"$work/out"
	[ "$domain" = 22 ] || { say "SO_DOMAIN $domain"; return 1; }
	lsmod | grep -q '^af_hps ' || return 1
	[ ! -e /sys/module/af_hps/parameters/inject_point ] ||
		{ say "the test build was loaded, not the installed module"; return 1; }
}
check "socket(AF_HPS) with no insmod loads the installed af_hps (net-pf-22)" autoload

installed_hps_run() {
	local out
	[ "$(command -v hps_run)" = /usr/local/bin/hps_run ] || return 1
	out=$(hps_run -f error python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
print(s.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN))') ||
		return 1
	[ "$out" = 22 ] || { say "SO_DOMAIN under hps_run: $out"; return 1; }
}
check "the installed hps_run moves a program's TCP socket to AF_HPS" installed_hps_run

root_uninstall() {
	local f out
	mk uninstall || return 1
	for f in $prefix_files; do
		[ ! -e "/usr/local/$f" ] || { say "left /usr/local/$f"; return 1; }
	done
	[ ! -e "/lib/modules/$kver/updates/af_hps.ko" ] || return 1
	unload || return 1
	modinfo -n af_hps >/dev/null 2>&1 && { say "modinfo still finds af_hps"; return 1; }
	man -w af_hps >/dev/null 2>&1 && { say "man still finds af_hps"; return 1; }
	out=$("$work/afsock") && { say "socket(AF_HPS) worked: $out"; return 1; }
	[ "$out" = "socket: Address family not supported by protocol" ] ||
		{ say "$out"; return 1; }
	! lsmod | grep -q '^af_hps ' || return 1
	small_tree_gone
}
check "make uninstall: all gone, socket(AF_HPS) fails with EAFNOSUPPORT" root_uninstall

dkms_tree() {
	local ver src
	ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
	src=$work/dkms/usr/src/af_hps-$ver
	mk dkms DESTDIR="$work/dkms" || return 1
	if [ ! -f "$src/dkms.conf" ] || [ ! -f "$src/Kbuild" ] ||
	   [ ! -f "$src/af_hps/af_hps.c" ] || [ -e "$src/Makefile" ]; then
		say "$src: $(ls "$src")"
		return 1
	fi
	# What dkms add does not check: the module it builds, where it goes,
	# for every new kernel, and the plain build (dkms.conf is bash).
	# shellcheck disable=SC1091
	(
		set +u	# it names dkms's variables (kernel_source_dir, ...)
		. "$src/dkms.conf"
		[ "$PACKAGE_NAME" = af_hps ] && [ "$PACKAGE_VERSION" = "$ver" ] &&
		[ "${BUILT_MODULE_NAME[0]}" = af_hps ] &&
		[ "${DEST_MODULE_LOCATION[0]}" = /updates/dkms ] &&
		[ "$AUTOINSTALL" = yes ] &&
		[[ "${MAKE[0]}" == *" CONFIG_AF_HPS_INJECT= modules" ]]
	) || { say "dkms.conf: $(grep -v '^#' "$src/dkms.conf")"; return 1; }
	# dkms needs /dev/fd (bash's <(...)), which the guest's /dev lacks.
	if [ ! -e /dev/fd ]; then
		ln -s /proc/self/fd /dev/fd && made_devfd=1
	fi
	mkdir -p "$work/dkmstree"
	dkms add --sourcetree "$work/dkms/usr/src" --dkmstree "$work/dkmstree" \
		-m af_hps -v "$ver" >"$log" 2>&1 || { sed 's/^/# /' "$log"; return 1; }
	dkms status --dkmstree "$work/dkmstree" >"$log" 2>&1
	grep -qx "af_hps/$ver: added" "$log" || { sed 's/^/# /' "$log"; return 1; }
}
check "make dkms DESTDIR: the source tree, accepted by dkms add" dkms_tree

docs() {
	tools/check-docs.py | sed 's/^/# /'
	return "${PIPESTATUS[0]}"
}
check "man pages and Documentation/ agree with the code (check-docs.py)" docs

# The rest of the run needs the test bed's module back, as guest-init
# loads it.
restore() {
	insmod "$top/af_hps.ko" dyndbg=+p &&
		[ -e /sys/module/af_hps/parameters/inject_point ]
}
check "the test bed's af_hps.ko loads again" restore

echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ "$fail" = 0 ]
