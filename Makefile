# SPDX-License-Identifier: GPL-2.0
#
# AF_HPS: stream sockets over RDMA. See README for the two commands that
# matter (make run, make check); 'make help' lists the rest.

SHELL	:= /bin/bash
TOP	:= $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD	:= $(TOP)/build

# The guest kernel: KERNEL=6.1 (Debian 12's own, the default), 6.12 (the
# 6.12 LTS line Debian 12 also ships) or 6.12-rt (its PREEMPT_RT flavour).
# tools/deps.sh stages it and writes its ABI (read from Debian's
# metapackages, never hard-coded) and its headers' tree; the targets that
# boot guests or build for them (vm-modules, check, run, bench, lint, ...)
# use that kernel. KERNELS are the kernels 'make lint' and 'make
# check-kernels' build for.
KERNEL	?= 6.1
KERNELS	:= 6.1 6.12 6.12-rt
export HPS_KERNEL := $(KERNEL)
VM_ABI	 = $(shell cat $(BUILD)/.deps-ok 2>/dev/null)
VM_KDIR	 = $(shell cat $(BUILD)/.vm-kdir 2>/dev/null)
VM_SERIES = $(shell cat $(BUILD)/.vm-series 2>/dev/null)

# The kernel af_hps.ko is built for: KVER=RELEASE builds against
# /lib/modules/RELEASE/build, KDIR=DIR against that build tree. Neither: the
# running kernel's build tree when its headers are installed, else the
# headers of the kernel the test VM boots (staged by tools/deps.sh on first
# use). KREL is the release KDIR builds for, read from its utsrelease.h
# (Debian's include/config/kernel.release holds the upstream version).
KDIR_GIVEN := $(if $(KVER)$(filter-out undefined,$(origin KDIR)),y)
ifneq ($(KVER),)
KDIR	?= /lib/modules/$(KVER)/build
endif
RUNNING	:= $(shell uname -r)
RUNNING_KDIR := /lib/modules/$(RUNNING)/build
KDIR	?= $(if $(shell test -f $(RUNNING_KDIR)/Makefile && echo y),$(RUNNING_KDIR),$(VM_KDIR))
KREL	 = $(shell sed -n 's/.*UTS_RELEASE "\(.*\)".*/\1/p' \
		$(KDIR)/include/generated/utsrelease.h 2>/dev/null)

# Where make install puts things. DESTDIR stages them under another root (a
# package, an image, a guest's root): nothing is then written outside it,
# and depmod indexes the tree under DESTDIR (depmod -b).
PREFIX	?= /usr/local
BINDIR	?= $(PREFIX)/bin
LIBDIR	?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR	?= $(PREFIX)/share/man
DEPMOD	?= $(firstword $(wildcard /sbin/depmod /usr/sbin/depmod) depmod)
MODINFO	?= $(firstword $(wildcard /sbin/modinfo /usr/sbin/modinfo) modinfo)
MODDIR	 = $(DESTDIR)/lib/modules/$(KREL)/updates
MANPAGES := $(wildcard $(TOP)/Documentation/man/*.[1-9])
DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' $(TOP)/dkms.conf)
DKMS_SRC = $(DESTDIR)/usr/src/af_hps-$(DKMS_VERSION)

HPS_VM	:= $(TOP)/tools/vm/hps-vm
SRC	:= $(BUILD)/linux-source
CHECKPATCH := $(SRC)/scripts/checkpatch.pl
KSRCS	 = $(filter-out %/hps_compat_gen.h,$(wildcard $(TOP)/af_hps/*.[ch])) \
	   $(wildcard $(TOP)/compat/*.c) $(TOP)/include/uapi/linux/af_hps.h \
	   $(TOP)/tools/kfs/hps_kfs.c

.PHONY: all modules kdir progs deps clean help run check check-full \
	check-debug-smoke check-smoke check-vm lint checkpatch docs-check install \
	install-module install-progs install-headers install-man uninstall \
	dkms dkms-remove \
	uapi-check sparse siw selftests check-debug vm-modules tools bench bench-full bench-sweep bench-zcopy

# What make install installs: the module, hps_run's library, hps-bench,
# hps-ss.
all: modules progs

help:
	@echo 'make            build af_hps.ko for $(or $(KREL),the running kernel),'
	@echo '                libhps-preload.so, hps-bench and hps-ss (KVER=RELEASE or KDIR=DIR:'
	@echo '                af_hps.ko for another kernel)'
	@echo 'make install    install them, the uapi header, hps_run and the man pages (as'
	@echo '                root; DESTDIR=DIR stages them under DIR; PREFIX=$(PREFIX))'
	@echo 'make uninstall  remove what make install installed'
	@echo 'make dkms       register the module with DKMS (rebuilt for every new kernel)'
	@echo 'make dkms-remove  unregister it'
	@echo 'make deps       install and stage what everything else needs'
	@echo 'make run        boot two guests and show AF_HPS working'
	@echo 'make check      the selftests in the VMs (rxe and siw, 1 and 2 nodes; what CI runs)'
	@echo 'make check-full every selftest in every configuration, soaks at full length'
	@echo 'make check-smoke  data path, sharing, zero copy, fallback, faults (CI: the'
	@echo '                other kernels)'
	@echo 'KERNEL=6.1|6.12|6.12-rt  the guest kernel of check, run, bench, ... (6.1)'
	@echo 'make check-debug  the selftests on a KASAN/lockdep/kmemleak/failslab kernel it builds'
	@echo 'make check-debug-smoke  its data-path/zero-copy/fault subset, one node (CI, 15-30 min)'
	@echo 'make lint       W=1 C=2 (sparse) builds for 6.1, 6.12, 6.12-rt, checkpatch --strict,'
	@echo '                uapi and docs checks'
	@echo 'make docs-check the man pages and Documentation/ against the code (tools/check-docs.py)'
	@echo 'make bench      quick benchmark (1-node rxe, 2-node siw; CONFIGS=...) into bench-results/'
	@echo 'make bench-zcopy  zero copy on/off vs ib_read_bw/ib_write_bw, 64 KiB-16 MiB'
	@echo 'make bench-full every benchmark and the sweeps, all four configurations (about 85 min)'
	@echo 'make bench-sweep  the AF_HPS parameter sweeps only (1-node rxe, 2-node siw, 10 min)'
	@echo 'make clean      remove build products (keeps the staged kernel)'

deps:
	@$(TOP)/tools/deps.sh

# Plain 'make' on a machine without headers for the running kernel stages
# the test VM kernel's first (tools/deps.sh), in a target of its own: make
# expands a recipe before running its first line, so KDIR and KREL must
# only be expanded, in the recipe below, once that has run.
kdir:
ifeq ($(KDIR_GIVEN),y)
	@[ -f "$(KDIR)/Makefile" ] || { echo "no kernel build tree at $(KDIR):" \
		"install the headers of $(or $(KVER),that kernel)" \
		"(linux-headers-$(or $(KVER),RELEASE))" >&2; exit 1; }
else
	@[ -f "$(KDIR)/Makefile" ] || $(TOP)/tools/deps.sh
endif

# The plain module, never the selftests' fault injection (vm-modules).
modules: kdir
	@[ "$(KREL)" = "$(RUNNING)" ] || echo "note: building af_hps.ko for" \
		"$(KREL), not for the running kernel $(RUNNING)$(if \
		$(KDIR_GIVEN),, (no $(RUNNING_KDIR): install" \
		"linux-headers-$(RUNNING) to build for it))"
	$(MAKE) -C $(KDIR) M=$(TOP) CONFIG_AF_HPS_INJECT= modules

# The user-space programs make install installs (make tools builds them all).
progs:
	$(MAKE) -C $(TOP)/tools/preload
	$(MAKE) -C $(TOP)/tools bench/hps-bench hps-ss

# The module as the test VM needs it: built against the VM kernel's headers,
# with the selftests' fault injection (af_hps/hps_inject.c) compiled in.
vm-modules: deps
	$(MAKE) -C $(VM_KDIR) M=$(TOP) CONFIG_AF_HPS_INJECT=y modules
	@$(MAKE) --no-print-directory siw

# Soft-iWARP, built out of tree from Debian's linux-source of the guest
# kernel's series (no Debian kernel ships it).
SIW_DIR	 = $(BUILD)/siw/$(VM_ABI)
SIW_SRC	 = $(if $(filter 6.12%,$(VM_SERIES)),$(BUILD)/linux-source-6.12,$(SRC))
siw:
	@if [ ! -f $(SIW_DIR)/siw.ko ]; then \
		mkdir -p $(SIW_DIR) && \
		cp $(SIW_SRC)/drivers/infiniband/sw/siw/* $(SIW_DIR)/ && \
		echo "  SIW     $(SIW_DIR)/siw.ko" && \
		$(MAKE) -s -C $(VM_KDIR) M=$(SIW_DIR) CONFIG_RDMA_SIW=m modules \
			>$(SIW_DIR)/build.log 2>&1 || \
		{ cat $(SIW_DIR)/build.log; exit 1; }; \
	fi

tools: deps
	$(MAKE) -C $(TOP)/tools

selftests: deps tools
	$(MAKE) -C $(TOP)/selftests

run: vm-modules selftests
	@$(TOP)/tools/run-demo.sh

check: vm-modules selftests
	@$(TOP)/selftests/run_vm_tests.sh

# The smoke tier, on KERNEL: the data path, sharing, zero copy, TCP
# fallback and the faults, one node and two, rxe and siw, each test in the
# configurations make check runs it in. CI runs it on the kernels make
# check does not boot there (Documentation/testing.rst, "Kernels").
SMOKE_TESTS := hps_stream hps_peer hps_share hps_across hps_zcopy \
	hps_busypoll hps_fallback hps_link final_device_removal final_peer_death
check-smoke: vm-modules selftests
	@[ -n "$${HPS_TESTS:-}" ] || export HPS_TESTS="$(SMOKE_TESTS)" \
		HPS_TESTS_IN_CONFIGS=1; HPS_NO_KBUILD=1 \
		HPS_NO_TESTBED_CHECKS=1 $(TOP)/selftests/run_vm_tests.sh

# Every test in every configuration, the soaks at full length (about two
# and a half hours a kernel; Documentation/testing.rst), on 6.1 and then
# 6.12, or on KERNEL only when it is given.
ifeq ($(origin KERNEL),file)
check-full:
	@rc=0; for k in 6.1 6.12; do \
		echo "##### make check-full KERNEL=$$k"; \
		$(MAKE) --no-print-directory check-full KERNEL=$$k || rc=1; \
	done; exit $$rc
else
check-full: vm-modules selftests
	@HPS_FULL=1 HPS_EVERYWHERE=1 HPS_CHECK_TIMEOUT=$${HPS_CHECK_TIMEOUT:-4800} \
		$(TOP)/selftests/run_vm_tests.sh
endif

# The suite on a debug kernel (KASAN, lockdep, kmemleak, fault injection)
# built from linux-source-6.1 and cached under build/debug-kernel.
check-debug: deps tools
	@$(TOP)/selftests/run_debug_tests.sh

# Its smoke run, in CI after make check: data path, zero copy, sharing and
# faults on one node over rxe (about 25 minutes with the kernel's build).
check-debug-smoke: deps tools
	@$(TOP)/selftests/run_debug_tests.sh --smoke

# CONFIGS="1:rxe 2:rxe" picks the configurations (bench.sh --configs)
bench: vm-modules tools
	@$(TOP)/tools/bench/bench.sh --quick $(if $(CONFIGS),--configs "$(CONFIGS)")

bench-full: vm-modules tools
	@$(TOP)/tools/bench/bench.sh --full

bench-sweep: vm-modules tools
	@$(TOP)/tools/bench/bench.sh --sweep

bench-zcopy: vm-modules tools
	@$(TOP)/tools/bench/zcopy.sh

clean:
	@[ ! -f "$(VM_KDIR)/Makefile" ] || $(MAKE) -C $(VM_KDIR) M=$(TOP) clean
	$(MAKE) -C $(TOP)/selftests clean
	$(MAKE) -C $(TOP)/tools clean
	rm -rf $(BUILD)/vm/run.* $(BUILD)/siw

# The file server in tools/kfs is a kernel module too, held to the same rules.
# Both modules are built, warnings as errors, for every kernel of KERNELS,
# each in a copy of the sources under build/lint/SERIES (the tree's own
# objects stay those of the guest kernel).
LINT_FILES := Kbuild include af_hps compat tools/kfs
lint: deps
	@set -o pipefail; : >$(BUILD)/lint.log; for k in $(KERNELS); do \
		HPS_DEPS_STAGE_ONLY=1 HPS_KERNEL=$$k $(TOP)/tools/deps.sh >/dev/null || exit; \
		kd=$$(cat $(BUILD)/.kdir-$$k); d=$(BUILD)/lint/$$k; \
		echo "  LINT    Linux $$k ($$kd)"; \
		rm -rf $$d && mkdir -p $$d/tools && \
		(cd $(TOP) && cp -r Kbuild include af_hps compat $$d/ && \
		 cp -r tools/kfs $$d/tools/) && \
		rm -f $$d/af_hps/hps_compat_gen.h $$d/tools/kfs/hps_kfs_compat_gen.h && \
		{ $(MAKE) -s -C $$kd M=$$d W=1 C=2 KCFLAGS=-Werror \
			CONFIG_AF_HPS_INJECT=y modules && \
		  $(MAKE) -s -C $$kd M=$$d/tools/kfs W=1 C=2 KCFLAGS=-Werror \
			modules; } 2>&1 | tee -a $(BUILD)/lint.log || exit; \
	done; ! grep -E 'warning:|error:' $(BUILD)/lint.log
	@$(MAKE) --no-print-directory checkpatch uapi-check docs-check

checkpatch:
	perl $(CHECKPATCH) --strict --no-tree --terse --show-types \
		-f $(KSRCS)

# The uapi header must stand alone, in C90 as the kernel's header test has it.
uapi-check:
	gcc -std=c90 -fsyntax-only -Wall -Wextra -Werror -I$(TOP)/include/uapi \
		-x c - <<<'#include <linux/af_hps.h>'
	@echo "uapi header: ok"

# The man pages (Documentation/man) and Documentation/ name every sysctl,
# option and counter of the code, and the pages render without warnings.
docs-check:
	@$(TOP)/tools/check-docs.py

# ---------------------------------------------------------------------------
# Installing (Documentation/install.rst)

# depmod KVER, under DESTDIR when it is set. A DESTDIR holding only what
# make install put there has no modules.order or modules.builtin*: depmod's
# warnings about those are left out, nothing else.
define depmod_fn
	depmod_run() { \
		echo "$(DEPMOD) $(if $(DESTDIR),-b $(DESTDIR)) $$1"; \
		out=$$($(DEPMOD) $(if $(DESTDIR),-b "$(DESTDIR)") "$$1" 2>&1); \
		rc=$$?; \
		printf '%s\n' "$$out" | grep -v -e '^$$' \
			-e 'could not open modules\.\(order\|builtin\)' >&2; \
		return $$rc; \
	}
endef

# Without DESTDIR, make install writes into the system: root only.
define need_root
	@[ -n "$(DESTDIR)" ] || [ "$$(id -u)" = 0 ] || { echo "make $@ writes" \
		"into /lib/modules and $(PREFIX): run it as root (sudo make" \
		"$@), or give DESTDIR=DIR to stage it there" >&2; exit 1; }
endef

install: install-module install-progs install-headers install-man
	@echo "installed af_hps.ko for $(KREL) under $(DESTDIR)/lib/modules," \
		"the rest under $(DESTDIR)$(PREFIX)"
	@[ -n "$(DESTDIR)" ] || [ "$(KREL)" = "$(RUNNING)" ] || echo "note:" \
		"the running kernel is $(RUNNING): socket(AF_HPS, ...) loads" \
		"af_hps only once $(KREL) runs"

# The module goes to updates/, which depmod prefers to the kernel's own.
# A test build (vm-modules, with fault injection) or one for another kernel
# is refused, and so is a second af_hps.ko beside DKMS's (make dkms).
install-module: modules
	$(need_root)
	@[ -n "$(DESTDIR)" ] || [ ! -f /lib/modules/$(KREL)/updates/dkms/af_hps.ko ] || \
		{ echo "DKMS has installed af_hps.ko for $(KREL): make" \
		"dkms-remove first, or keep DKMS's" >&2; exit 1; }
	@ko=$(TOP)/af_hps.ko; \
	[ -n "$(KREL)" ] || { echo "no kernel release in $(KDIR)" >&2; exit 1; }; \
	vm=$$($(MODINFO) -F vermagic "$$ko" | cut -d' ' -f1); \
	[ "$$vm" = "$(KREL)" ] || { echo "$$ko is built for '$$vm', not" \
		"for $(KREL)" >&2; exit 1; }; \
	! $(MODINFO) -F parm "$$ko" | grep -q '^inject_' || { echo "$$ko is a" \
		"test build with fault injection (make vm-modules): run make" \
		"first" >&2; exit 1; }
	install -D -m 644 $(TOP)/af_hps.ko $(MODDIR)/af_hps.ko
	@$(depmod_fn); depmod_run $(KREL)

install-progs: progs
	$(need_root)
	$(MAKE) -C $(TOP)/tools install BINDIR=$(BINDIR) LIBDIR=$(LIBDIR)

install-headers:
	$(need_root)
	install -D -m 644 $(TOP)/include/uapi/linux/af_hps.h \
		$(DESTDIR)$(INCLUDEDIR)/linux/af_hps.h

install-man:
	$(need_root)
	@for p in $(MANPAGES); do \
		s=$${p##*.}; \
		echo "install -D -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/$${p##*/}"; \
		install -D -m 644 "$$p" "$(DESTDIR)$(MANDIR)/man$$s/$${p##*/}" || exit; \
	done

# Removes af_hps.ko from every kernel's updates/ (not DKMS's updates/dkms/:
# make dkms-remove), so it needs no kernel headers.
uninstall:
	$(need_root)
	@$(depmod_fn); \
	for ko in $(DESTDIR)/lib/modules/*/updates/af_hps.ko; do \
		[ -f "$$ko" ] || continue; \
		kver=$${ko#$(DESTDIR)/lib/modules/}; kver=$${kver%%/*}; \
		echo "rm -f $$ko"; rm -f "$$ko" || exit; \
		rmdir --ignore-fail-on-non-empty "$${ko%/*}"; \
		depmod_run "$$kver" || exit; \
	done
	$(MAKE) -C $(TOP)/tools uninstall BINDIR=$(BINDIR) LIBDIR=$(LIBDIR)
	rm -f $(DESTDIR)$(INCLUDEDIR)/linux/af_hps.h
	rm -f $(foreach p,$(MANPAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(p)))/$(notdir $(p)))

# DKMS: the module's sources and dkms.conf into /usr/src/af_hps-VERSION,
# registered, and built and installed for KVER (the running kernel unless
# given) when its headers are there; DKMS builds it for every kernel
# installed later (AUTOINSTALL). With DESTDIR the source tree is only staged
# there (a package's postinst runs dkms).
DKMS_FILES := dkms.conf Kbuild COPYING include/uapi/linux/af_hps.h \
	$(patsubst $(TOP)/%,%,$(filter-out %/hps_compat_gen.h,\
		$(wildcard $(TOP)/af_hps/*.[ch])) \
		$(wildcard $(TOP)/compat/*.[ch] $(TOP)/compat/*.sh \
		$(TOP)/compat/Kbuild.include))
DKMS_KVER = $(or $(KVER),$(RUNNING))
dkms:
	$(need_root)
	@[ -n "$(DESTDIR)" ] || command -v dkms >/dev/null || { echo "dkms is" \
		"not installed (apt-get install dkms)" >&2; exit 1; }
	@[ -n "$(DESTDIR)" ] || [ ! -f /lib/modules/$(DKMS_KVER)/updates/af_hps.ko ] || \
		{ echo "af_hps.ko from make install is in" \
		"/lib/modules/$(DKMS_KVER)/updates: make uninstall first" >&2; \
		exit 1; }
	rm -rf $(DKMS_SRC)
	cd $(TOP) && for f in $(DKMS_FILES); do \
		install -D -m 644 "$$f" "$(DKMS_SRC)/$$f" || exit; done
ifeq ($(DESTDIR),)
	! dkms status -m af_hps -v $(DKMS_VERSION) | grep -q . || \
		dkms remove -m af_hps -v $(DKMS_VERSION) --all
	dkms add -m af_hps -v $(DKMS_VERSION)
	@if [ -f /lib/modules/$(DKMS_KVER)/build/Makefile ]; then \
		echo "dkms install -m af_hps -v $(DKMS_VERSION) -k $(DKMS_KVER)"; \
		dkms install -m af_hps -v $(DKMS_VERSION) -k $(DKMS_KVER); \
	else \
		echo "no headers for $(DKMS_KVER) (/lib/modules/$(DKMS_KVER)/build):" \
			"DKMS builds af_hps once they, or a new kernel with" \
			"its headers, are installed"; \
	fi
endif

dkms-remove:
	$(need_root)
ifeq ($(DESTDIR),)
	! dkms status -m af_hps -v $(DKMS_VERSION) | grep -q . || \
		dkms remove -m af_hps -v $(DKMS_VERSION) --all
endif
	rm -rf $(DKMS_SRC)
