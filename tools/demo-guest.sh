#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The make run demonstration, on node 1 of a two-node hps-vm run.
set -eu
cd "$(dirname "$0")/.."

step() { printf '\n--- %s\n' "$*"; }

step "node 1 ($HPS_SELF) and node 2 ($HPS_PEER), kernel $(uname -r)"
rdma link show
step "af_hps.ko loaded on both nodes"
lsmod | grep -E '^(af_hps|rdma_rxe|siw|rdma_cm) '
hps-vm-peer sh -c 'lsmod | grep ^af_hps'

port=$((20000 + RANDOM % 20000))
bytes=$((256 << 20))
step "256 MiB of random data from node 1 to node 2 over AF_HPS ($HPS_RDMA)"
id=$(hps-vm-peer --bg ./tools/hps_xfer -l "$HPS_PEER" "$port" --count 1)
hps-vm-peer hps-vm-wait-listen "$port" 60
echo "node 1 (sender):"
./tools/hps_xfer -c "$HPS_PEER" "$port" -n "$bytes" | sed 's/^/  /'
echo "node 2 (receiver):"
hps-vm-peer --wait "$id" 120 | sed 's/^/  /'

step "the same over TCP between the same guests, for comparison"
id=$(hps-vm-peer --bg ./tools/hps_xfer --transport tcp -l "$HPS_PEER" "$port" --count 1)
hps-vm-peer hps-vm-wait-listen --tcp "$port" 60
./tools/hps_xfer --transport tcp -c "$HPS_PEER" "$port" -n "$bytes" | sed 's/^/  /'
hps-vm-peer --wait "$id" 120 | sed 's/^/  /'

step "raw RDMA verbs on the same link (ib_send_bw, 64 KiB messages)"
id=$(hps-vm-peer --bg ib_send_bw -R -d "$HPS_IBDEV" -n 200 -s 65536)
hps-vm-peer hps-vm-wait-listen 18515 60
ib_send_bw -R -d "$HPS_IBDEV" -n 200 -s 65536 "$HPS_PEER" | grep -A1 '#bytes'
hps-vm-peer --wait "$id" 60 >/dev/null

step "done: equal checksums on both nodes mean the bytes arrived intact."
