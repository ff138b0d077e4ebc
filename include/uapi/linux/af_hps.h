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
#define HPS_TCP_FALLBACK 5	/* 1: connect() goes on over TCP when RDMA
				 * cannot carry the connection (if
				 * net.hps.tcp_fallback allows); 0: RDMA only
				 */

/* struct hps_info.hpsi_transport: what carries the connection */
#define HPS_TRANSPORT_RDMA	0
#define HPS_TRANSPORT_TCP	1	/* fell back to TCP */
#define HPS_TRANSPORT_RDMA_TCP	2	/* a listener that also takes TCP
					 * clients on its port
					 */

/*
 * struct hps_info.hpsi_fallback: why the connection attempt over RDMA
 * failed and connect() went on over TCP, or (HPS_FB_TCP_CLIENT) that a
 * listener accepted a plain TCP client (Documentation/af_hps.rst, "TCP
 * fallback"). The names are those of /proc/net/hps_stat's fallback_*
 * counters.
 */
enum {
	HPS_FB_NONE,		/* not fallen back */
	HPS_FB_NO_DEVICE,	/* no RDMA device on the route to the peer */
	HPS_FB_REFUSED,		/* the peer's RDMA stack refused: no AF_HPS
				 * listener on the port, or no AF_HPS
				 */
	HPS_FB_REJECTED,	/* an AF_HPS peer turned the request down:
				 * protocol version, backlog, resources
				 */
	HPS_FB_UNREACHABLE,	/* no answer over RDMA, or peer unreachable */
	HPS_FB_PEER_ERROR,	/* the attempt failed in the transport's own
				 * handshake (iWARP MPA) or the peer's hello
				 */
	HPS_FB_RESOURCE,	/* a local limit: QP, completion queue entries,
				 * buffers, net.hps.mem
				 */
	HPS_FB_TCP_CLIENT,	/* accepted: the client connected over TCP */
	__HPS_FB_MAX
};

/**
 * struct hps_info - connection state read with getsockopt(SOL_HPS, HPS_INFO)
 * @hpsi_version:	wire protocol version in use (0 if not connected)
 * @hpsi_state:		socket state (TCP_* numbering, as in struct tcp_info)
 * @hpsi_credits:	send credits currently held
 * @hpsi_peer_credits:	receive buffers the peer may still fill (at most;
 *			messages in flight are not known)
 * @hpsi_buf_size:	largest kernel buffer on this connection (bytes)
 * @hpsi_rx_bufs:	largest receive window of this end (buffers)
 * @hpsi_tx_bytes:	payload bytes sent
 * @hpsi_rx_bytes:	payload bytes received
 * @hpsi_rx_win:	receive window of this end now (buffers; it grows
 *			while the peer has more to send and shrinks when
 *			the connection is idle)
 * @hpsi_rx_buf:	bytes of each receive buffer posted now
 * @hpsi_mem:		bytes of buffers this end holds now (receive and
 *			send, as charged to net.hps.mem)
 * @hpsi_transport:	HPS_TRANSPORT_RDMA or HPS_TRANSPORT_TCP
 *			(HPS_TRANSPORT_RDMA_TCP: a listener that takes TCP
 *			clients too)
 * @hpsi_fallback:	HPS_FB_*: why it is TCP (HPS_FB_NONE if not)
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
	__u32	hpsi_rx_win;
	__u32	hpsi_rx_buf;
	__u64	hpsi_mem;
	__u32	hpsi_transport;
	__u32	hpsi_fallback;
};

/*
 * sock_diag: a NETLINK_SOCK_DIAG socket lists the AF_HPS sockets of its
 * network namespace, and reads the namespace's counters, with a
 * SOCK_DIAG_BY_FAMILY request (NLM_F_REQUEST | NLM_F_DUMP) carrying a
 * struct hps_diag_req whose sdiag_family is AF_HPS (as ss(8) does for
 * TCP, tools/hps-ss.c). Any user may ask: every socket of the namespace
 * is listed, with its owner's uid, as ss lists TCP sockets.
 */

/* hps_diag_req.sdiag_protocol: what to dump */
#define HPS_DIAG_SOCKS	0	/* one struct hps_diag_msg per socket */
#define HPS_DIAG_STATS	1	/* one struct hps_diag_stats: the counters */

/**
 * struct hps_diag_req - the request
 * @sdiag_family:	AF_HPS
 * @sdiag_protocol:	HPS_DIAG_SOCKS or HPS_DIAG_STATS
 * @hdiag_pad:		0
 * @hdiag_states:	sockets in these states only, a bit (1 << TCP_*) per
 *			state (TCP_ESTABLISHED is 1, ..., TCP_LISTEN 10); 0
 *			or ~0: every state
 * @hdiag_show:		the attributes wanted, HPS_SHOW_* bits
 * @hdiag_ino:		0, or only the socket of this inode
 *
 * Requests shorter than this structure fail with EINVAL.
 */
struct hps_diag_req {
	__u8	sdiag_family;
	__u8	sdiag_protocol;
	__u16	hdiag_pad;
	__u32	hdiag_states;
	__u32	hdiag_show;
	__u32	hdiag_ino;
};

/**
 * struct hps_diag_msg - one socket (HPS_DIAG_SOCKS), then its attributes
 * @hdiag_family:	AF_HPS
 * @hdiag_state:	socket state, TCP_* numbering
 * @hdiag_shutdown:	shut down: 1 receiving, 2 sending (bits)
 * @hdiag_addr_family:	AF_INET or AF_INET6 of the addresses below; 0 while
 *			the socket has none
 * @hdiag_sport:	local port (network order)
 * @hdiag_dport:	peer port (network order), 0 without a peer
 * @hdiag_src:		local address; IPv4 in hdiag_src[0]
 * @hdiag_dst:		peer address
 * @hdiag_rqueue:	listener: connections waiting for accept(); else
 *			bytes received and not read (SIOCINQ)
 * @hdiag_wqueue:	listener: its backlog; else bytes written and not
 *			yet delivered to the peer (SIOCOUTQ)
 * @hdiag_uid:		owner's uid, in the requester's user namespace
 * @hdiag_inode:	inode of the socket's file (as in /proc/PID/fd:
 *			socket:[INODE]), 0 when it has none (a connection
 *			not yet accepted, a closed socket finishing)
 * @hdiag_cookie:	the socket's cookie (SO_COOKIE), low word first
 */
struct hps_diag_msg {
	__u8	hdiag_family;
	__u8	hdiag_state;
	__u8	hdiag_shutdown;
	__u8	hdiag_addr_family;
	__be16	hdiag_sport;
	__be16	hdiag_dport;
	__be32	hdiag_src[4];
	__be32	hdiag_dst[4];
	__u32	hdiag_rqueue;
	__u32	hdiag_wqueue;
	__u32	hdiag_uid;
	__u32	hdiag_inode;
	__u32	hdiag_cookie[2];
};

/*
 * Attributes after struct hps_diag_msg, each sent when its HPS_SHOW_* bit
 * is in hdiag_show. Their structures only ever grow at the end; a reader
 * takes min(its size, the attribute's length) and zero for the rest.
 */
enum {
	HPS_DIAG_UNSPEC,
	HPS_DIAG_RDMA,		/* struct hps_diag_rdma */
	HPS_DIAG_FLOW,		/* struct hps_diag_flow */
	HPS_DIAG_COUNTERS,	/* struct hps_diag_counters */
	HPS_DIAG_ZCOPY,		/* struct hps_diag_zcopy */
	HPS_DIAG_KEEPALIVE,	/* struct hps_diag_keepalive */
	HPS_DIAG_BUSYPOLL,	/* struct hps_diag_busypoll */
	HPS_DIAG_STAT,		/* HPS_DIAG_STATS: one counter, nested */
	HPS_DIAG_PAD,
	__HPS_DIAG_MAX
};

#define HPS_DIAG_MAX		(__HPS_DIAG_MAX - 1)

#define HPS_SHOW_RDMA		(1U << (HPS_DIAG_RDMA - 1))
#define HPS_SHOW_FLOW		(1U << (HPS_DIAG_FLOW - 1))
#define HPS_SHOW_COUNTERS	(1U << (HPS_DIAG_COUNTERS - 1))
#define HPS_SHOW_ZCOPY		(1U << (HPS_DIAG_ZCOPY - 1))
#define HPS_SHOW_KEEPALIVE	(1U << (HPS_DIAG_KEEPALIVE - 1))
#define HPS_SHOW_BUSYPOLL	(1U << (HPS_DIAG_BUSYPOLL - 1))

#define HPS_DIAG_DEVNAME_MAX	64	/* IB_DEVICE_NAME_MAX */

/**
 * struct hps_diag_rdma - where the connection runs (HPS_DIAG_RDMA)
 * @hdr_dev:	RDMA device name ("rxe0"), "" while the socket has none
 *		(unbound, or a listener on every device)
 * @hdr_port:	the device's port number, 0 if none
 * @hdr_qpn:	the connection's QP number, 0 without a QP
 * @hdr_transport: HPS_TRANSPORT_RDMA, or HPS_TRANSPORT_TCP when connect()
 *		fell back or the client came over TCP (then the state,
 *		addresses and queues of struct hps_diag_msg are the TCP
 *		connection's), or HPS_TRANSPORT_RDMA_TCP for a listener
 *		that takes TCP clients too
 * @hdr_fallback: HPS_FB_*: why it fell back
 */
struct hps_diag_rdma {
	char	hdr_dev[HPS_DIAG_DEVNAME_MAX];
	__u32	hdr_port;
	__u32	hdr_qpn;
	__u32	hdr_transport;
	__u32	hdr_fallback;
};

/**
 * struct hps_diag_flow - credits and queues (HPS_DIAG_FLOW)
 * @hdf_version:	wire protocol version in use (0 before a connection)
 * @hdf_credits:	send credits held: peer receive buffers this end may
 *			still fill
 * @hdf_peer_credits:	receive buffers of this end the peer may still fill
 *			(at most: messages in flight are not known)
 * @hdf_rx_bufs:	receive buffers this end posted: its window
 * @hdf_tx_bufs:	send buffers
 * @hdf_peer_window:	the peer's window (its hello's credits)
 * @hdf_buf_size:	bytes per buffer, the 8-byte header included; the
 *			window in bytes is hdf_rx_bufs * hdf_buf_size
 * @hdf_rx_queued:	bytes received and not read
 * @hdf_tx_queued:	bytes written and not yet delivered
 * @hdf_stalls:		credit stalls so far (data waited for credits)
 * @hdf_stalled:	1 while data waits for credits now
 * @hdf_rx_win:		receive window now (buffers; hdf_rx_bufs is the
 *			largest it may grow to)
 * @hdf_rx_buf:		bytes of each receive buffer posted now
 * @hdf_mem_kib:	KiB of buffers the socket holds (net.hps.mem)
 */
struct hps_diag_flow {
	__u32	hdf_version;
	__u32	hdf_credits;
	__u32	hdf_peer_credits;
	__u32	hdf_rx_bufs;
	__u32	hdf_tx_bufs;
	__u32	hdf_peer_window;
	__u32	hdf_buf_size;
	__u32	hdf_rx_queued;
	__u32	hdf_tx_queued;
	__u32	hdf_stalls;
	__u32	hdf_stalled;
	__u32	hdf_rx_win;
	__u32	hdf_rx_buf;
	__u32	hdf_mem_kib;
};

/**
 * struct hps_diag_counters - what the socket moved (HPS_DIAG_COUNTERS)
 * @hdc_tx_bytes:	payload bytes sent
 * @hdc_rx_bytes:	payload bytes received
 * @hdc_tx_msgs:	messages sent (data and control, protocol.rst)
 * @hdc_rx_msgs:	messages received
 */
struct hps_diag_counters {
	__u64	hdc_tx_bytes;
	__u64	hdc_rx_bytes;
	__u64	hdc_tx_msgs;
	__u64	hdc_rx_msgs;
};

/* hps_diag_zcopy.hdz_flags */
#define HPS_DIAG_ZC_CAPABLE	0x1	/* set up for zero-copy sends */
#define HPS_DIAG_ZC_TX		0x2	/* a zero-copy send is under way */
#define HPS_DIAG_ZC_RX		0x4	/* the peer's advertised bytes wait */
#define HPS_DIAG_ZC_READING	0x8	/* an RDMA Read of them is in flight */

/**
 * struct hps_diag_zcopy - zero copy (HPS_DIAG_ZCOPY)
 * @hdz_thresh:		HPS_ZCOPY_THRESH (0: off)
 * @hdz_flags:		HPS_DIAG_ZC_* bits
 * @hdz_tx_len:		bytes the send under way advertised
 * @hdz_rx_len:		advertised bytes of the peer not read yet
 */
struct hps_diag_zcopy {
	__u32	hdz_thresh;
	__u32	hdz_flags;
	__u32	hdz_tx_len;
	__u32	hdz_rx_len;
};

/**
 * struct hps_diag_keepalive - keepalive in effect (HPS_DIAG_KEEPALIVE)
 * @hdk_on:		SO_KEEPALIVE
 * @hdk_idle_ms:	TCP_KEEPIDLE, in milliseconds
 * @hdk_intvl_ms:	TCP_KEEPINTVL, in milliseconds
 * @hdk_cnt:		TCP_KEEPCNT
 * @hdk_user_timeout_ms: TCP_USER_TIMEOUT (0: none)
 * @hdk_probes:		probes sent so far
 */
struct hps_diag_keepalive {
	__u32	hdk_on;
	__u32	hdk_idle_ms;
	__u32	hdk_intvl_ms;
	__u32	hdk_cnt;
	__u32	hdk_user_timeout_ms;
	__u32	hdk_probes;
};

/* hps_diag_busypoll.hdb_state */
#define HPS_BUSYPOLL_ABSENT	0	/* this AF_HPS does not busy-poll */
#define HPS_BUSYPOLL_OFF	1	/* SO_BUSY_POLL is 0 */
#define HPS_BUSYPOLL_ON		2	/* a read busy-polls for hdb_usecs */

/**
 * struct hps_diag_busypoll - busy polling (HPS_DIAG_BUSYPOLL)
 * @hdb_state:		HPS_BUSYPOLL_OFF or HPS_BUSYPOLL_ON; HPS_BUSYPOLL_ABSENT
 *			from a module without busy polling (before 2026-11-28,
 *			or a kernel without CONFIG_NET_RX_BUSY_POLL)
 * @hdb_usecs:		how long a read busy-polls, in microseconds
 *			(SO_BUSY_POLL; net.core.busy_read by default)
 */
struct hps_diag_busypoll {
	__u32	hdb_state;
	__u32	hdb_usecs;
};

/*
 * HPS_DIAG_STATS: one message, struct hps_diag_stats, then an HPS_DIAG_STAT
 * attribute per counter of /proc/net/hps_stat, in its order, nesting its
 * name and value.
 */
struct hps_diag_stats {
	__u8	hdiag_family;	/* AF_HPS */
	__u8	hdiag_pad[3];
	__u32	hdiag_count;	/* number of HPS_DIAG_STAT attributes */
};

enum {
	HPS_DIAG_STAT_UNSPEC,
	HPS_DIAG_STAT_NAME,	/* string: the line's name */
	HPS_DIAG_STAT_VALUE,	/* __s64: its value */
	HPS_DIAG_STAT_PAD,
	__HPS_DIAG_STAT_MAX
};

#define HPS_DIAG_STAT_MAX	(__HPS_DIAG_STAT_MAX - 1)

#endif /* _UAPI_LINUX_AF_HPS_H */
