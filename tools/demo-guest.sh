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

step "AF_HPS sockets created on node 1"
python3 - <<'PY'
import socket
AF_HPS = 22
socks = [socket.socket(AF_HPS, socket.SOCK_STREAM) for _ in range(3)]
for s in socks:
    print("fd %d: family %d, type %d, protocol %d" % (
        s.fileno(),
        s.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN),
        s.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE),
        s.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL)))
try:
    socket.socket(AF_HPS, socket.SOCK_DGRAM)
except OSError as e:
    print("SOCK_DGRAM refused as it should be:", e)
PY

step "raw RDMA verbs between the nodes (ib_send_bw, 64 KiB messages)"
id=$(hps-vm-peer --bg ib_send_bw -R -d "$HPS_IBDEV" -n 200 -s 65536)
hps-vm-peer hps-vm-wait-listen 18515 60
ib_send_bw -R -d "$HPS_IBDEV" -n 200 -s 65536 "$HPS_PEER" | grep -A1 '#bytes'
hps-vm-peer --wait "$id" 60 >/dev/null

step "AF_HPS is registered and the RDMA link carries traffic."
echo "The data path (connect, send, receive over AF_HPS) lands with the core issue."
