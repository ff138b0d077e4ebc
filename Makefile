# SPDX-License-Identifier: GPL-2.0
#
# AF_HPS: stream sockets over RDMA. See README for the two commands that
# matter (make run, make check); 'make help' lists the rest.

SHELL	:= /bin/bash
TOP	:= $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD	:= $(TOP)/build

# The guest kernel ABI staged by tools/deps.sh (read from Debian's
# linux-image-amd64 metapackage, never hard-coded).
VM_ABI	 = $(shell cat $(BUILD)/.deps-ok 2>/dev/null)
VM_KDIR	 = /usr/src/linux-headers-$(VM_ABI)

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

HPS_VM	:= $(TOP)/tools/vm/hps-vm
SRC	:= $(BUILD)/linux-source
CHECKPATCH := $(SRC)/scripts/checkpatch.pl
KSRCS	 = $(wildcard $(TOP)/af_hps/*.[ch]) $(TOP)/include/uapi/linux/af_hps.h \
	   $(TOP)/tools/kfs/hps_kfs.c

.PHONY: all modules kdir deps clean help run check check-full check-debug-smoke \
	check-vm lint checkpatch docs-check \
	uapi-check sparse siw selftests check-debug vm-modules tools bench bench-full bench-sweep bench-zcopy

all: modules

help:
	@echo 'make            build af_hps.ko for $(or $(KREL),the running kernel (or the test guests'"'"' when it has no headers))'
	@echo '                (KVER=RELEASE or KDIR=DIR: another kernel)'
	@echo 'make deps       install and stage what everything else needs'
	@echo 'make run        boot two guests and show AF_HPS working'
	@echo 'make check      the selftests in the VMs (rxe and siw, 1 and 2 nodes; what CI runs)'
	@echo 'make check-full every selftest in every configuration, soaks at full length'
	@echo 'make check-debug  the selftests on a KASAN/lockdep/kmemleak/failslab kernel it builds'
	@echo 'make check-debug-smoke  its data-path/zero-copy/fault subset, one node (CI, ~20 min)'
	@echo 'make lint       W=1 C=1 (sparse) build, checkpatch --strict, uapi and docs checks'
	@echo 'make docs-check the man pages and Documentation/ against the code (tools/check-docs.py)'
	@echo 'make bench      quick benchmark (1-node rxe, 2-node siw) into bench-results/'
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

# The module as the test VM needs it: built against the VM kernel's headers,
# with the selftests' fault injection (af_hps/hps_inject.c) compiled in.
vm-modules: deps
	$(MAKE) -C $(VM_KDIR) M=$(TOP) CONFIG_AF_HPS_INJECT=y modules
	@$(MAKE) --no-print-directory siw

# Soft-iWARP, built out of tree from Debian's linux-source-6.1 (Debian's
# kernel does not ship it).
SIW_DIR	 = $(BUILD)/siw/$(VM_ABI)
siw:
	@if [ ! -f $(SIW_DIR)/siw.ko ]; then \
		mkdir -p $(SIW_DIR) && \
		cp $(SRC)/drivers/infiniband/sw/siw/* $(SIW_DIR)/ && \
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

# Every test in every configuration, the soaks at full length (about 100
# minutes; Documentation/testing.rst).
check-full: vm-modules selftests
	@HPS_FULL=1 HPS_EVERYWHERE=1 HPS_CHECK_TIMEOUT=$${HPS_CHECK_TIMEOUT:-4800} \
		$(TOP)/selftests/run_vm_tests.sh

# The suite on a debug kernel (KASAN, lockdep, kmemleak, fault injection)
# built from linux-source-6.1 and cached under build/debug-kernel.
check-debug: deps tools
	@$(TOP)/selftests/run_debug_tests.sh

# Its smoke run, in CI after make check: data path, zero copy, sharing and
# faults on one node over rxe (about 20 minutes with the kernel's build).
check-debug-smoke: deps tools
	@$(TOP)/selftests/run_debug_tests.sh --smoke

bench: vm-modules tools
	@$(TOP)/tools/bench/bench.sh --quick

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
lint: deps
	{ $(MAKE) -C $(VM_KDIR) M=$(TOP) W=1 C=2 KCFLAGS=-Werror \
		CONFIG_AF_HPS_INJECT=y modules && \
	  $(MAKE) -C $(VM_KDIR) M=$(TOP)/tools/kfs W=1 C=2 KCFLAGS=-Werror \
		modules; } 2>&1 | tee $(BUILD)/lint.log; \
		! grep -E 'warning:|error:' $(BUILD)/lint.log
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
