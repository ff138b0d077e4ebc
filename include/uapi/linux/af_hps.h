/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * User-space and kernel interface of the AF_HPS socket family. Sockets are
 * created with socket(AF_HPS, SOCK_STREAM, 0) and addressed with the usual
 * struct sockaddr_in / struct sockaddr_in6 of an RDMA-capable interface, in
 * the TCP port space. See Documentation/af_hps.rst.
 */
#ifndef _UAPI_LINUX_AF_HPS_H
#define _UAPI_LINUX_AF_HPS_H

#include <linux/types.h>

/*
 * An out-of-tree module cannot be given a family number of its own:
 * sock_register() only takes families below AF_MAX (46 on Linux 6.1). AF_HPS
 * borrows AF_SNA (22, "Linux SNA Project"), which no Linux 6.1 module
 * implements. Tools that decode families by number (strace, ss) print it as
 * SNA.
 */
#define AF_HPS		22
#define PF_HPS		AF_HPS

/* Protocol argument of socket(2): 0 or IPPROTO_TCP (6) mean the same. */
#define HPSPROTO_HPS	0

/*
 * Socket option level of the AF_HPS options below, chosen above every SOL_*
 * value Linux 6.1 uses (SOL_VSOCK, 287, is the highest).
 */
#define SOL_HPS		299

/* Socket options at level SOL_HPS (int unless said otherwise). */
#define HPS_NODELAY	1	/* send small writes at once (TCP_NODELAY) */
#define HPS_CORK	2	/* hold partial buffers until uncorked (TCP_CORK) */
#define HPS_INFO	3	/* struct hps_info, read only */
#define HPS_ZCOPY_THRESH 4	/* zero-copy sends from this many bytes; 0 off */

/**
 * struct hps_info - connection state read with getsockopt(SOL_HPS, HPS_INFO)
 * @hpsi_version:	wire protocol version in use (0 if not connected)
 * @hpsi_state:		socket state (TCP_* numbering, as in struct tcp_info)
 * @hpsi_credits:	send credits currently held
 * @hpsi_peer_credits:	receive buffers the peer may still fill (at most;
 *			messages in flight are not known)
 * @hpsi_buf_size:	bytes per kernel buffer on this connection
 * @hpsi_rx_bufs:	receive buffers posted by this end (its window)
 * @hpsi_tx_bytes:	payload bytes sent
 * @hpsi_rx_bytes:	payload bytes received
 *
 * New fields are only ever appended; a caller with a shorter structure gets
 * the leading part.
 */
struct hps_info {
	__u32	hpsi_version;
	__u32	hpsi_state;
	__u32	hpsi_credits;
	__u32	hpsi_peer_credits;
	__u32	hpsi_buf_size;
	__u32	hpsi_rx_bufs;
	__u64	hpsi_tx_bytes;
	__u64	hpsi_rx_bytes;
};

#endif /* _UAPI_LINUX_AF_HPS_H */
