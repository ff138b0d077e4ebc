#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make run: boot two guests joined by a Soft-RoCE link and show AF_HPS at
# work there (tools/demo-guest.sh runs on node 1).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
echo "make run: booting two QEMU guests (Soft-RoCE), about half a minute..."
exec "$top/tools/vm/hps-vm" run --nodes 2 --rdma "${HPS_RDMA:-rxe}" \
	--timeout 600 -- "$top/tools/demo-guest.sh"
