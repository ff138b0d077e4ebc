/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Module-wide private definitions: the socket and connection state, the
 * wire format and the functions each hps_*.c file exports to the others.
 *
 * Locking (see also hps_core.c):
 *
 *   socket lock (lock_sock)          socket state, addresses, cm_id, qp,
 *                                    buffer rings' setup and teardown, the
 *                                    reader's use of the rx ready list head
 *     -> hps_dev.cq_mutex            making a device's next shared CQ
 *       -> hps_dev.lock (spin, BH)   a device's CQ entry reservations and
 *                                    its list of connections
 *     -> hps_sock.lock (spin, BH)    credits, ring indices, rx ready list,
 *                                    everything the CQ handlers touch
 *     -> an accepted child's socket  a listener's lock, then its new child's
 *        lock (SINGLE_DEPTH_NESTING)  (hps_cm_conn_req(), hps_fb_accept())
 *     -> the cm_id's handler mutex   (rdma_lock_handler()) an id's event
 *                                    handling, held by the connection work
 *                                    around rdma_accept() and a fallback's
 *                                    teardown (hps_fb_deadline_work()); the
 *                                    event handler under it takes only
 *                                    hps_connd_lock
 *     -> a TCP socket's lock         the TCP socket of a fallback, or a
 *                                    listener's TCP listening socket
 *                                    (hps_fallback.c); TCP never takes ours
 *
 *   hps_net.socks_lock (spin, BH)    a namespace's socket list; nothing
 *                                    else is taken under it
 *
 *   a shared CQ, taken by a busy     its completions, handled by one CPU at
 *   poller (IRQ_POLL_F_SCHED,        a time: the softirq poller's or a busy
 *   hps_cq_busy_get())               poller's. A bit, only ever tried, never
 *                                    waited for (ib_free_cq()'s wait is
 *                                    excluded by the poller's device
 *                                    reference); taken with no lock held
 *                                    and preemption off, and outermost:
 *                                    the completion handlers run under it
 *                                    and take hps_sock.lock and the rest
 *
 *   hps_dev_mutex                    the device list (never taken under
 *                                    hps_sock.lock)
 *   hps_connd_lock (spin, IRQ)       every socket's connection work:
 *                                    its event list, work bits and queued
 *                                    flag (leaf lock; QP events take it in
 *                                    hard-IRQ context on some drivers)
 *   hps_reg_cache.lock (spin)        a namespace's registration cache
 *                                    (leaf lock; process context and MMU
 *                                    notifier callbacks only, never softirq)
 *   hps_mem_mutex (hps_sysctl.c)     writes of net.hps.mem, so that each
 *                                    stores a whole checked triple, and
 *                                    init_net's values while another
 *                                    namespace copies them or is checked
 *                                    against them (leaf lock; the sysctl
 *                                    handler and pernet init only). The
 *                                    memory accounting itself is lockless
 *                                    (hps_net.mem_allocated, hps_mem.c).
 *
 * CQ completion handlers run in softirq (IB_POLL_SOFTIRQ), or in a busy
 * polling task with BHs disabled (hps_rx_busy_poll()), and only take
 * hps_sock.lock. The rdma_cm event handler takes no socket lock: it copies
 * the event and hands it to the socket's connection work (hps_connd_work()
 * on the hps_connd workqueue), which is the only context that destroys
 * cm_ids and QPs of connections. A socket's connection work runs on one
 * CPU at a time; different sockets' run in parallel.
 */
#ifndef _HPS_H
#define _HPS_H

#include <linux/completion.h>
#include <linux/hashtable.h>
#include <linux/irq_work.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mmu_notifier.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rw.h>
#include <linux/af_hps.h>

#include "hps_compat.h"

struct hps_inject_wc;

/* ---- wire protocol (Documentation/protocol.rst) ---- */

#define HPS_HELLO_MAGIC		0x48505331	/* "HPS1" */
#define HPS_PROTO_VERSION	7

/**
 * struct hps_hello - CM private data of the connect request and reply
 * @magic: %HPS_HELLO_MAGIC
 * @version: protocol version, %HPS_PROTO_VERSION
 * @flags: must be zero
 * @port: the TCP port the active side connected to (P: the listener's,
 *	  where its RDMA side moved or not; see hps_portq.c), in both
 *	  directions; the passive side rejects another
 * @credits: the largest window the sender grants (receive buffers)
 * @buf_size: the sender's largest receive buffer, header included
 *
 * Each end starts with %HPS_CREDITS_MIN credits and the reserve, all for
 * buffers of class 0 (%HPS_BUF_MIN bytes): see hps_hdr.credits.
 */
struct hps_hello {
	__be32	magic;
	u8	version;
	u8	flags;
	__be16	port;
	__be32	credits;
	__be32	buf_size;
} __packed;

/*
 * The iWARP port query (hps_portq.c): a UDP datagram to the listener's
 * port, and its answer from there.
 */
#define HPS_PORTQ_MAGIC		0x48505051	/* "HPPQ" */
#define HPS_PORTQ_ASK		1
#define HPS_PORTQ_ANSWER	2

/**
 * struct hps_portq - the iWARP port query and its answer, one datagram
 * @magic: %HPS_PORTQ_MAGIC
 * @version: protocol version, %HPS_PROTO_VERSION
 * @type: %HPS_PORTQ_ASK or %HPS_PORTQ_ANSWER
 * @port: the TCP port the client connects to (the datagram's own)
 * @nonce: the asker's, echoed in the answer
 * @rdma_port: answer: the port the listener's RDMA side listens on; 0 in
 *	       a query
 * @reserved: must be zero
 */
struct hps_portq {
	__be32	magic;
	u8	version;
	u8	type;
	__be16	port;
	__be32	nonce;
	__be16	rdma_port;
	__be16	reserved;
} __packed;

enum hps_msg_type {
	HPS_MSG_DATA	= 1,	/* payload; len > 0 */
	HPS_MSG_CREDIT	= 2,	/* credit update only; len 0 */
	HPS_MSG_FIN	= 3,	/* no more data from the sender; len 0 */
	HPS_MSG_ABORT	= 4,	/* connection reset; len 0 */
	HPS_MSG_SRCAVAIL = 5,	/* zero copy: struct hps_srcavail */
	HPS_MSG_RDMA_DONE = 6,	/* zero copy: all of it was read; len 0 */
	HPS_MSG_SENDSM	= 7,	/* zero copy: send the rest by copy; __be32 */
	HPS_MSG_CANCEL	= 8,	/* zero copy: sender gives up; len 0 */
	HPS_MSG_SHRINK	= 9,	/* give buffers back: struct hps_shrink */
	HPS_MSG_PAD	= 10,	/* takes a credit, carries nothing; len 0 */
};

/**
 * struct hps_shrink - payload of HPS_MSG_SHRINK
 * @cls: PAD the sender's buffers above this class
 * @window: and those beyond this many credits
 */
struct hps_shrink {
	__be32	cls;
	__be32	window;
} __packed;

/**
 * struct hps_srcavail - payload of HPS_MSG_SRCAVAIL
 * @addr: address of the advertised bytes under @rkey
 * @rkey: remote key; grants RDMA Read of exactly [@addr, @addr + @len)
 * @len: bytes advertised; the next @len bytes of the stream
 */
struct hps_srcavail {
	__be64	addr;
	__be32	rkey;
	__be32	len;
} __packed;

/*
 * Flags in hps_hdr.type, on any message:
 *
 * FIN_ACK: the sender has received the receiver's FIN. Sent once per
 * connection, on the first message after the FIN arrived (a CREDIT at once
 * if nothing else goes out).
 *
 * RESERVE: this message is counted against the receiver's reserve, the
 * one receive buffer each end posts beyond its window, not against a
 * credit (it fills the oldest posted buffer, as every message does).
 * Only a CREDIT that returns credits, or an ABORT, sent with no credit
 * left, may use it: so an end can always return credits, even when both
 * ends are out of them.
 *
 * RESERVE_BACK: the sender has reposted the reserve buffer the receiver
 * last sent into, which the receiver may use again: right after the
 * buffers this message's credits announce, and as of class 0 (it is not
 * a credit). Sent on the first message after the reserve message arrived
 * (a CREDIT at once if nothing else goes out): the reserve is posted at
 * once, and the buffers that come back after it wait for that message.
 *
 * MORE: on DATA, the sender had more bytes ready to send than this
 * message carried; the receiver may grow its window (hps_rx.c).
 */
#define HPS_MSG_F_FIN_ACK	0x80
#define HPS_MSG_F_RESERVE	0x40
#define HPS_MSG_F_RESERVE_BACK	0x20
#define HPS_MSG_F_MORE		0x10
#define HPS_MSG_TYPE_MASK	0x0f

/**
 * struct hps_hdr - header at the start of every SEND
 * @version: %HPS_PROTO_VERSION
 * @type: enum hps_msg_type, ORed with the %HPS_MSG_F_ flags
 * @credits: receive buffers the sender has posted since its last message,
 *	     in the low 12 bits (%HPS_CR_COUNT), and their class above
 *	     (%HPS_CR_CLS_SHIFT): each buffer takes a message of up to
 *	     hps_cls_bytes(the sender's buf_size, class) bytes, header
 *	     included. The receiver's messages fill them in the order they
 *	     were posted: the first message takes the oldest.
 * @len: payload bytes following the header
 */
struct hps_hdr {
	u8	version;
	u8	type;
	__be16	credits;
	__be32	len;
} __packed;

#define HPS_HDR_LEN		sizeof(struct hps_hdr)
#define HPS_CR_COUNT		0x0fff
#define HPS_CR_CLS_SHIFT	12
#define HPS_CLS_MAX		8	/* HPS_BUF_MIN << 8: HPS_BUF_MAX */

/* ---- limits ---- */

/*
 * At least three: a window of W leaves the sender at least W - 1 credits
 * once the peer's reader has taken what was queued, since the peer holds
 * back at most one credit of control messages alone (it waits for two
 * before an explicit update; an answered SRCAVAIL's buffer goes back
 * without a reader, hps_rx_release_dead()), and DATA and FIN need two.
 * With W = 2 a FIN could wait forever behind one stranded credit.
 */
#define HPS_CREDITS_MIN		3
/* Receive buffers each end posts beyond its window: HPS_MSG_F_RESERVE */
#define HPS_RX_RESERVE		1
#define HPS_CREDITS_MAX		1024
#define HPS_BUF_MIN		4096
#define HPS_BUF_MAX		(1024 * 1024)
#define HPS_INLINE_MAX		1024
#define HPS_NCTRL		4	/* control message slots per connection */
#define HPS_CQ_MAX		32768
#define HPS_FIN_TIMEOUT		(60 * HZ)	/* closed, FIN not taken */
#define HPS_NUDGE_TIMEOUT	(HZ / 5)	/* first nudge; doubles */
#define HPS_NUDGES_MAX		4
#define HPS_ZC_PAGES		256	/* pages advertised or read at once */
#define HPS_ZC_ADV_MAX		(16 << 20)	/* largest SRCAVAIL accepted */
#define HPS_ZC_RW_CTXS		8	/* rdma_rw budget of a connection */
#define HPS_ZC_SGE		32	/* send SGEs: pages per RDMA Read WR */
/* send queue entries zero copy adds: REG_MR, LOCAL_INV, rdma_rw's 3/ctx */
#define HPS_ZC_SQ_EXTRA		(2 + 3 * HPS_ZC_RW_CTXS)
#define HPS_ZC_RX_MIN		16384	/* smaller reads take the copy */
#define HPS_ZC_CANCEL_TIMEOUT	(HZ / 2)	/* unread SRCAVAIL: cancel */
#define HPS_ZC_REPLY_TIMEOUT	(30 * HZ)	/* no answer to CANCEL: reset */
#define HPS_ZC_IDLE_TIMEOUT	HZ		/* send queue busy: copy */
#define HPS_ZC_THRESH_MAX	BIT(30)
#define HPS_ZC_THRESH_DEFAULT	0	/* off: see Documentation/zcopy.rst */
#define HPS_REG_CACHE_MAX	BIT(30)	/* largest zcopy_cache_bytes */
#define HPS_REG_CACHE_DEFAULT	(64 << 20)
#define HPS_REG_HASH_BITS	7
#define HPS_RX_IDLE		HZ	/* no data for that long: shrink */
/*
 * DATA sent without a completion coming for it that long: ask for one.
 * Traffic of at least ntx / 2 messages in that time (8 at the default
 * credits) has the completion of a signaled one first and needs no
 * fence; slower traffic one per delay at most.
 */
#define HPS_TX_COVER_DELAY	(HZ / 5)
/* time given a fence's completion to come (TCP_USER_TIMEOUT's grace) */
#define HPS_TX_FENCE_GRACE	(HZ / 250 ?: 1)
/*
 * a tail that MSG_MORE held, the messages before it unsignaled: waits at
 * most this (+1 jiffy in hps_tx_cover_soon(): at least this, too)
 */
#define HPS_TX_MORE_DELAY	(HZ / 250 ?: 1)
#define HPS_RX_SHRINKS_MAX	4	/* SHRINKs an idle window sends */
/* no window grows while this many bytes wait to be read (hps_rx_grow()) */
#define HPS_RX_UNREAD_MAX	(256 << 10)
#define HPS_KA_DEFAULT_MS	10000	/* keepalive_ms: idle before a probe */
#define HPS_KA_MAX_MS		3600000
#define HPS_KA_PROBES_DEFAULT	9	/* keepalive_probes, as TCP's */
#define HPS_KA_PROBES_MAX	127
/* the per-socket options' bounds are TCP's (include/net/tcp.h) */
#define HPS_KA_IDLE_MAX_S	32767	/* TCP_KEEPIDLE, MAX_TCP_KEEPIDLE */
#define HPS_KA_INTVL_MAX_S	32767	/* TCP_KEEPINTVL, MAX_TCP_KEEPINTVL */
#define HPS_KA_CNT_MAX		127	/* TCP_KEEPCNT, MAX_TCP_KEEPCNT */
/* net.hps.mem: the thresholds in hps_net.mem[], in pages (hps_mem.c) */
#define HPS_MEM_LOW		0	/* pressure ends below it */
#define HPS_MEM_PRESSURE	1	/* pressure starts above it */
#define HPS_MEM_HIGH		2	/* no charge takes the total above it */
#define HPS_MEM_NR		3
#define HPS_MEM_MAX		LONG_MAX	/* largest threshold accepted */

/* ---- per-device state (hps_ib.c) ---- */

/* Completion queues a device gets at most (module parameter max_cqs). */
#define HPS_DEV_CQS_MAX		64

/**
 * struct hps_cq - a completion queue shared by connections of a device
 * @cq: the CQ, polled in softirq
 * @size: entries
 * @used: entries reserved by connections (hps_dev.lock)
 */
struct hps_cq {
	struct ib_cq	*cq;
	int		size;
	int		used;
};

/**
 * struct hps_dev - an RDMA device AF_HPS uses
 * @list: entry in the device list, protected by hps_dev_mutex
 * @ibdev: the device
 * @pd: protection domain of every AF_HPS QP on the device
 * @cqs: its completion queues, shared by every AF_HPS QP on the device:
 *	 the first made with the device, the others when those are full;
 *	 @ncqs of them, each published under @lock and freed with the device
 * @ncqs: see @cqs
 * @cq_mutex: serialises making a new CQ (taken under a socket lock;
 *	      @lock nests inside it)
 * @lock: protects the CQs' @used, @ncqs, @conns, @dead and @released
 * @conns: connections (hps_sock.dev_node) with a QP on this device
 * @iwarp: an iWARP device (its driver binds TCP sockets)
 * @sig_large: every send of a page or more asks for its completion
 *	       (hps_wr_post_data()): siw sends an unsignaled one by splicing
 *	       its pages into TCP (siw_qp_tx.c, SENDPAGE_THRESH), and 6.12's
 *	       TCP keeps them, to send for the first time or again, after
 *	       the completion that covers it (Debian's 6.1 TCP copies); a
 *	       signaled one, or a smaller one, siw copies, so its buffer is
 *	       free at its completion
 * @dead: the device is being removed; no new connections
 * @ref: lifetime; the device list, each connection and each zero-copy
 *	 send under way hold one
 * @released: removal's completion, completed when @ref drops to zero (the
 *	      CQs and PD are freed by then); set with @dead
 */
struct hps_dev {
	struct list_head	list;
	struct ib_device	*ibdev;
	struct ib_pd		*pd;
	struct hps_cq		cqs[HPS_DEV_CQS_MAX];
	int			ncqs;
	struct mutex		cq_mutex;	/* see @cq_mutex above */
	spinlock_t		lock;		/* see @lock above */
	struct list_head	conns;
	bool			iwarp;
	bool			sig_large;
	bool			dead;
	struct kref		ref;
	struct completion	*released;
};

/* ---- buffers ---- */

/**
 * struct hps_buf - one DMA-mapped kernel bounce buffer
 * @cqe: completion callback of the WR using this buffer (rx and control;
 *	 a send buffer's DATA complete through hps_sock.tx_wr)
 * @list: rx: entry in hps_sock.rx_ready while it holds unread data, or in
 *	  rx_wait or rx_park while it waits to be posted again
 * @buf: kernel address (rx and control: header first; tx: payload only),
 *	 NULL while the descriptor has no buffer
 * @dma: bus address, 0 when unmapped
 * @size: bytes at @buf
 * @len: rx: payload bytes (of the last DATA buffer on rx_ready, grows
 *	 under hs->lock while a reader copies below it: hps_rx_coalesce();
 *	 of any, under both locks, when the connection work collapses them:
 *	 hps_rx_collapse()); tx: payload bytes filled
 * @off: rx: payload bytes already consumed by the reader
 * @sent: tx: payload bytes posted so far (a buffer may go out in pieces)
 * @pieces: tx: work requests posted for it so far
 * @done: tx: of those, completed
 * @type: message type last sent (tx) or received and queued (rx)
 * @cls: rx: the class it was allocated for (@size is its hps_cls_bytes())
 * @ann: rx: the class it was announced as when last posted (at most @cls)
 * @dead: rx SRCAVAIL: fully read or abandoned; a reader passing it or
 *	  the connection work (hps_rx_release_dead()) reposts it
 * @data: rx: it held DATA, or is new in a window that grew, and waits to
 *	  be posted (rx_pending_data)
 * @keep: rx: too large for the window, but no memory for a smaller one:
 *	  posted as of the class wanted now (hps_rx_realloc())
 * @mark: control: the DATA work requests before it (a tx_wr_head value)
 *	  complete with it
 */
struct hps_buf {
	struct ib_cqe		cqe;
	struct list_head	list;
	void			*buf;
	u64			dma;
	u32			size;
	u32			len;
	u32			off;
	u32			sent;
	u16			pieces;
	u16			done;
	u8			type;
	u8			cls;
	u8			ann;
	bool			dead;
	bool			data;
	bool			keep;
	u32			mark;
};

/**
 * struct hps_tx_wr - completion of a DATA work request, one per tx_hdr
 * @cqe: its done callback, hps_send_done()
 * @seq: the work request that used it last (a tx_wr_head value)
 */
struct hps_tx_wr {
	struct ib_cqe	cqe;
	u32		seq;
};

/**
 * struct hps_cr_run - credits for peer buffers of one class, in order
 * @n: how many
 * @cls: their class
 */
struct hps_cr_run {
	u16	n;
	u8	cls;
};

/* hps_sock.flags bits (atomic bitops) */
enum {
	HPS_F_PEER_READY,	/* peer spoke first (iWARP rule): may send */
	HPS_F_QP_READY,		/* QP reached RTR: drain before destroy */
	HPS_F_CONN_UP,		/* QP usable: post WRs */
	HPS_F_FIN_PENDING,	/* queue a FIN after the data */
	HPS_F_FIN_SENT,		/* FIN posted */
	HPS_F_FIN_CQE,		/* FIN's send completed */
	HPS_F_FIN_ACKED,	/* peer acknowledged our FIN */
	HPS_F_FIN_DONE,		/* both of the above: peer has the FIN */
	HPS_F_FIN_RCVD,		/* peer's FIN received */
	HPS_F_FIN_ACK_OWED,	/* tell the peer we have its FIN */
	HPS_F_RX_SEEN,		/* a message from the peer arrived */
	HPS_F_ABORTED,		/* ABORT sent or connection reset */
	HPS_F_TEARDOWN,		/* teardown requested from connd */
	HPS_F_WAS_CONN,		/* connection was established once */
	HPS_F_NODELAY,
	HPS_F_CORK,
	HPS_F_ACTIVE,		/* this end called connect() */
	HPS_F_CONNECTING,	/* rdma_connect() running in connect_work */
	HPS_F_TEARDOWN_DEFER,	/* teardown waits for connect_work */
	HPS_F_RESTART_DEFER,	/* a restart waits for it (hps_cm_restart()) */
	HPS_F_RESTART_OWED,	/* ... then for the old id's destruction */
	HPS_F_ZC_TX_OWNED,	/* a writer's zero-copy send is under way */
	HPS_F_ZC_TX_ORPHAN,	/* ... whose writer left: connd cleans up */
	HPS_F_ZC_TX,		/* our SRCAVAIL is out, its key not revoked */
	HPS_F_ZC_TX_REPLY,	/* ... which came (zc_tx_consumed) */
	HPS_F_ZC_TX_INV,	/* the sender's MR was invalidated */
	HPS_F_ZC_CANCEL_OWED,	/* send CANCEL */
	HPS_F_ZC_DONE_OWED,	/* send RDMA_DONE */
	HPS_F_ZC_SENDSM_OWED,	/* send SENDSM(zc_rx_sendsm) */
	HPS_F_ZC_RX_BUSY,	/* a reader owns zc_rx and the zc_rd_* state */
	HPS_F_ZC_READING,	/* an RDMA Read of zc_rx is in flight */
	HPS_F_ZC_RD_ORPHAN,	/* ... whose reader was killed: connd cleans up */
	HPS_F_ZC_RX_CANCEL,	/* CANCEL came during that read */
	HPS_F_KA_OUT,		/* a keepalive probe is in flight */
	HPS_F_NBITS		/* at most BITS_PER_LONG (hps_flags_reset()) */
};

/* connection work bits (hps_sock.connd_work) */
enum {
	HPS_W_ACCEPT,		/* passive side: QP, buffers, rdma_accept() */
	HPS_W_TEARDOWN,		/* disconnect, drain and destroy */
	HPS_W_STATE,		/* a FIN went out or came in */
	HPS_W_QP_ERROR,		/* a fatal QP event (any context, hard IRQ too) */
	HPS_W_DEV_GONE,		/* rdma_cm: the id's device is being removed */
	HPS_W_ZC_REAP,		/* an orphaned RDMA Read completed */
	HPS_W_RX_DEAD,		/* abandoned SRCAVAILs hold receive buffers */
	HPS_W_RESIZE,		/* buffers to allocate, resize or free */
	HPS_W_FB_DEADLINE,	/* the attempt over RDMA took too long */
	HPS_W_PORTQ,		/* iWARP port query: datagram, error, timer */
	HPS_W_RESTART,		/* a remembered RDMA port failed: start again */
};

/**
 * struct hps_sock - an AF_HPS socket and its connection
 * @sk: the generic socket; must stay first (sk_alloc() sizes by proto)
 * @net_node: entry in its namespace's socket list (hps_net.socks)
 * @flags: HPS_F_* bits
 * @cm_id: rdma_cm id (listener or connection); socket lock, destroyed by
 *	   connd for connections and by release for listeners
 * @qp: connection QP, same lock as @cm_id
 * @dev: device of @qp, holds a reference
 * @dev_node: entry in hps_dev.conns, protected by hps_dev.lock
 * @cq: the CQ of @dev its QP uses
 * @cq_reserved: CQ entries reserved on @cq
 * @local: local address (bind, connect, accept)
 * @peer: peer address
 * @parent: listener of a child not yet accepted (holds a reference)
 * @accept_list: listener: established children (hps_sock.accept_node);
 *		 child: entry in its listener's list. Listener's socket lock.
 * @accept_node: see @accept_list
 * @npending: listener: children between CONNECT_REQUEST and ESTABLISHED
 * @connd_wi: the socket's connection work (hps_connd_work()); while
 *	      queued it holds a socket reference
 * @connd_events: rdma_cm events for it (struct hps_cm_ev), in order
 * @connd_work: HPS_W_* bits for it
 * @connd_queued: @connd_wi is queued or running and will look at
 *		  @connd_events and @connd_work again before it ends
 *		  (the three under hps_connd_lock)
 * @estab_seq: when its ESTABLISHED event came, among all sockets' (a
 *	       passive child's place in the accept queue); set under
 *	       hps_connd_lock before the event is queued
 * @connect_work: calls rdma_connect(), which may block for a long time
 *		  (siw connects a TCP socket synchronously), outside the
 *		  connection work and without the socket lock
 * @port_hold: active side: a TCP socket holding the local port in the TCP
 *	       stack until rdma_connect() has run (see hps_cm_hold_port());
 *	       socket lock
 * @nudge_timer: active side: repeats the first message until the peer
 *		 speaks (see hps_tx_nudge()); holds a socket reference
 *		 while pending
 * @ka_timer: keepalive (see hps_tx_keepalive()); holds a socket reference
 *	      while pending
 * @ka_cqe: completion of the keepalive probe (hps_tx_ka_done())
 * @cover_timer: asks for the completion of DATA messages sent without one
 *		 once they have gone HPS_TX_COVER_DELAY without, and posts a
 *		 tail that MSG_MORE held (@cover_soon) (hps_tx_cover_timer());
 *		 holds a socket reference while pending
 * @fence_cqe: completion of the send fence (hps_tx_fence_done())
 * @ka_on: keepalive on (SO_KEEPALIVE; see hps_tx_keepalive())
 * @ka_user: the application set SO_KEEPALIVE (else @ka_on follows
 *	     net.hps.keepalive_ms at connection setup)
 * @ka_idle: TCP_KEEPIDLE in ms, 0: not set (the sysctl's, @ka_sys_ms)
 * @ka_intvl: TCP_KEEPINTVL in ms, 0: not set (@ka_sys_ms)
 * @ka_cnt: TCP_KEEPCNT, 0: not set (@ka_sys_cnt)
 * @ka_sys_ms: net.hps.keepalive_ms as of connection setup (0 before)
 * @ka_sys_cnt: net.hps.keepalive_probes as of connection setup
 * @user_timeout: TCP_USER_TIMEOUT in ms, 0: none
 *
 * The ka_ fields and @user_timeout are written under the socket lock and
 * @lock (WRITE_ONCE()), read by the timer under @lock and by getsockopt()
 * with READ_ONCE().
 * @qp_err: the QP a fatal QP event came for (HPS_W_QP_ERROR)
 * @rx_stamp: jiffies of the last sign of life from the peer, a message
 *	      received or a probe it acknowledged (WRITE_ONCE() under
 *	      @lock, read locklessly by the keepalive timer)
 * @mem_pages: pages of the buffers of @rx and @tx charged to the
 *	       namespace (hps_mem_charge()), 0 when none are; changed with
 *	       the buffers under the socket lock (WRITE_ONCE()), cleared by
 *	       hps_wr_free_bufs() or, at destruction, __hps_wr_free_bufs()
 * @memcg: the memory cgroup the socket's buffers are charged to: its
 *	   creator's, an accepted socket's listener's (a reference)
 * @fb: the kernel TCP socket a connect() fell back to (hps_fallback.c), or
 *	NULL. Set once, under the socket lock, with smp_store_release() after
 *	the socket is set up; read with hps_fb(). hps_release() clears it
 *	under the socket lock and closes it after: a reader holding the
 *	socket lock (sock_diag) may use it, lockless ones only while the
 *	file is open.
 * @fb_spare: the TCP socket connect() made for a fallback (hps_fb_prepare()),
 *	      not connected; it becomes @fb, or goes when the connection is
 *	      up over RDMA or the socket is closed (socket lock)
 * @fb_lsn: a listener's TCP listening socket on its port, for plain TCP
 *	    clients (hps_fb_listen()), or NULL. Set once, under the socket
 *	    lock, with smp_store_release(); read with hps_fb_lsn(). Cleared
 *	    and closed as @fb is.
 * @fb_error_report: @fb's own sk_error_report, put back at release
 * @fb_timer: ends the attempt over RDMA of a socket that may fall back
 *	      after %HPS_FB_DEADLINE (hps_fb_deadline()); pending only while
 *	      @fb_spare exists, and holds a socket reference while pending
 * @portq: iWARP port query (hps_portq.c): a listener's UDP socket on its
 *	   port, answering queries, or an active socket's asking the peer's
 *	   listener, between ADDR_RESOLVED and the answer. Socket lock; its
 *	   callbacks find us through its sk_user_data, under its
 *	   sk_callback_lock, cleared before it is released.
 * @portq_data_ready: @portq's own sk_data_ready, put back at release
 * @portq_error_report: @portq's own sk_error_report, put back at release
 * @portq_timer: an active socket's query: the next try, or giving up
 *		 (hps_portq_timer()); holds a socket reference while pending
 * @portq_nonce: an active socket's query: echoed in the answer
 * @portq_tries: an active socket's query: datagrams sent
 * @portq_addr: an active socket's query: its address is resolved, the
 *		route waits for the query's outcome
 * @portq_refused: an active socket's query: the peer refused it (ICMP),
 *		   to be remembered once the route is known to be iWARP
 * @portq_result: an active socket's query: its outcome, when it came
 *		  before the address was resolved (0: none)
 * @portq_cached: an active socket's attempt goes to this RDMA port, which
 *		  the namespace remembered, not one asked for (0: none): if
 *		  it fails, the socket forgets it and starts again, asking
 *		  (hps_cm_restart())
 * @portq_restarted: an active socket's connect() started again so: it
 *		     takes no remembered answer now (once per connect())
 * @fb_on: HPS_TCP_FALLBACK (socket lock; read by the connection work)
 * @fb_reason: HPS_FB_*: why @fb exists (socket lock)
 * @idle_timer: gives memory back when no data moved for %HPS_RX_IDLE
 *		(hps_rx_idle()); runs while the window is larger than the
 *		smallest or send buffers are allocated, and holds a socket
 *		reference while pending
 * @lock: protects everything below, taken from softirq (BH-safe)
 * @nudges: first messages repeated so far
 * @nrx: our largest window, the most credits the peer may hold; one
 *	  receive descriptor more for the reserve (hps_rx_bufs())
 * @ntx: send buffers, and the most DATA work requests in flight
 * @buf_size: our largest buffer, header included (hps_cls_bytes())
 * @peer_buf_size: peer's largest buffer from its hello
 * @peer_credits_max: peer's largest window from its hello
 * @peer_top: class of @peer_buf_size
 * @rx: receive descriptors, hps_rx_bufs() of them; those without a buffer
 *	are on no list (their @buf is NULL)
 * @tx: send buffers (allocated by the writer when it needs them)
 * @tx_hdr: the headers of DATA work requests, @ntx of them, used in turn
 * @tx_hdr_dma: their bus address
 * @ctrl: control message buffers (header only)
 * @rx_win: our window now: credit buffers to keep (%HPS_CREDITS_MIN up
 *	    to @nrx)
 * @rx_want: class of the buffers to post now (0 up to @rx_top)
 * @rx_top: class of @buf_size
 * @rx_cls: class of the buffers in @rx_pending (the next header's)
 * @rx_nbuf: receive buffers allocated (the reserve's included)
 * @rx_out: credits the peer holds: announced and not yet used
 * @rx_wait: buffers that wait for the next header before they are posted
 *	     (their class is not @rx_cls, or the reserve, posted again, waits
 *	     to be announced: @rx_reserve_owed)
 * @rx_park: buffers for the connection work (HPS_W_RESIZE) to resize or
 *	     free
 * @rx_shrink_owed: send SHRINK: the window shrank
 * @rx_shrinks: SHRINKs sent since the window last grew
 * @rx_max_cls: the window grows to this class at most: its top class, or
 *		lower since a buffer could not be had (until it shrinks)
 * @rx_max_win: and to this many buffers at most (likewise)
 * @rx_reserve_taken: the peer sent into our reserve and has not been
 *		      told it is back (HPS_MSG_F_RESERVE_BACK)
 * @rx_data_stamp: jiffies of the last DATA or SRCAVAIL received
 * @rx_ready: received DATA and SRCAVAIL buffers not yet fully read or
 *	      given back, oldest first
 * @rx_queued: unread payload bytes in @rx_ready
 * @rx_nready: buffers in @rx_ready
 * @rx_pending: reposted receive buffers not yet announced to the peer
 * @rx_pending_data: how many of @rx_pending held DATA or are new
 * @tx_credits: peer receive buffers we may still fill
 * @tx_cr: the classes of those buffers and of the reserve's, in the order
 *	   our messages fill them (a ring of runs)
 * @tx_cr_cap: entries of @tx_cr
 * @tx_cr_first: first run of @tx_cr
 * @tx_cr_nruns: runs in @tx_cr
 * @tx_pad: the peer asked for its buffers above class @tx_pad_cls, and
 *	    beyond @tx_pad_win, back (SHRINK): the buffers we held then not
 *	    yet sent into, which PADs fill while nothing else goes out
 * @tx_pad_cls: see @tx_pad
 * @tx_pad_win: see @tx_pad
 * @tx_nomem: a writer found no send buffer and no memory for one: no
 *	      room for writers until a send completes
 * @tx_wr: the completions of DATA work requests, one per @tx_hdr
 * @tx_wr_head: DATA work requests posted so far (@tx_hdr's index)
 * @tx_wr_out: DATA work requests not known to be complete
 * @tx_wr_sig: the DATA work requests before it (a @tx_wr_head value) have
 *	       a completion coming that stands for them: their own, a later
 *	       one's, a control message's or a fence's (hps_tx_retire())
 * @tx_uncov_stamp: jiffies when the first of the DATA work requests from
 *		    @tx_wr_sig on (those without a completion coming) was
 *		    posted; the cover timer counts from it. Meaningful only
 *		    while @tx_wr_sig != @tx_wr_head (it is set then, and
 *		    left stale otherwise)
 * @tx_ack_mark: the @tx_wr_head value when the last message from the peer
 *		 that returned credits arrived: Nagle's rule takes the DATA
 *		 work requests before it as acknowledged (hps_tx_unacked())
 * @tx_nagle_met: a small write came, without TCP_NODELAY, while DATA
 *		  posted since @tx_ack_mark last moved was in flight (Nagle's
 *		  rule held it, or would have but for that DATA's completion):
 *		  a short buffer asks for its completion (hps_tx_post_next())
 * @tx_nagle_met_before: ... or one came in the period before that, which
 *			 also makes a short buffer ask
 * @fence_mark: the @tx_wr_head value when the fence in flight was posted
 * @fence_out: a fence is in flight (hps_tx_cover())
 * @cover_wanted: ... and another was asked for meanwhile
 * @cover_soon: a tail that MSG_MORE held may wait for a push no
 *		completion brings: the cover timer (due within
 *		HPS_TX_MORE_DELAY, or HPS_TX_COVER_DELAY with no DATA in
 *		flight) posts it if still held (hps_tx_cover_soon())
 * @ut_grace: TCP_USER_TIMEOUT was due with DATA messages that did not
 *	      ask for their completion, and it was asked for
 *	      (hps_tx_keepalive()); cleared by a completion (hps_tx_retire()),
 *	      a new timeout (hps_tx_ut_set()) and a new connection
 * @ut_grace_end: jiffies until which that answer is waited for
 * @tx_data_stamp: jiffies of the last DATA or SRCAVAIL posted
 * @tx_pages: pages of the send buffers (changed under the socket lock,
 *	      WRITE_ONCE(); read by the idle timer)
 * @peer_reserve: the peer's reserve buffer is posted for us (HPS_MSG_F_RESERVE)
 * @rx_reserve_owed: the peer sent into our reserve buffer, which is posted
 *		     again: tell it (HPS_MSG_F_RESERVE_BACK)
 * @tx_done: first tx slot not yet completed
 * @tx_posted: first tx slot not yet posted
 * @tx_fill: slot being filled (open) if @tx_fill - @tx_done < @ntx
 * @tx_filling: the writer is copying into slot @tx_fill without the lock
 * @tx_queued: payload bytes in tx slots not yet completed (SIOCOUTQ)
 * @ctrl_head: next control slot to use
 * @ctrl_done: first control slot not yet completed
 * @ack_thresh: explicit credit update when this percentage of the window
 *		as it is now is pending for data buffers, or for control
 *		messages' buffers counted apart (net.hps.ack_thresh)
 * @inline_max: largest message sent inline
 * @tx_bytes: payload bytes sent
 * @rx_bytes: payload bytes received
 * @tx_stamp: jiffies of the last progress of the sending side (a send
 *	      completed, credits or a zero-copy answer came) or of the last
 *	      moment it was seen not waiting (hps_tx_waiting()): what
 *	      TCP_USER_TIMEOUT is measured from
 * @ka_probes: keepalive probes sent
 * @tx_stalled: data waits for credits (hps_tx_stall_update())
 * @tx_stall_start: ktime_get_ns() when that stall began
 * @tx_stalls: credit stalls so far
 * @tx_msgs: messages posted (data and control)
 * @rx_msgs: messages received
 * @zc_thresh: sends of at least this many bytes go zero copy (0: never);
 *	       socket lock
 * @zc_cap: the QP was set up for zero copy (@zc_thresh was not 0 then)
 * @zc_mr: sender's fast-registration MR, allocated on first use; socket
 *	   lock, deregistered after the QP is drained
 * @zc_port: port of the connection, for rdma_rw
 * @zc_rd_pages: most pages one RDMA Read context may cover
 * @zc_reg_cqe: REG_MR completion (hps_zc_reg_done())
 * @zc_inv_cqe: LOCAL_INV completion (hps_zc_inv_done())
 * @zc_rd_cqe: RDMA Read completion (hps_zc_read_done())
 * @zc_rw: RDMA Read context of the reader
 * @zc_rd_sgt: pages @zc_rw reads into
 * @zc_rd_reg: the registration of those pages
 * @zc_rd_npages: how many of its pages the read covers
 * @zc_rd_len: bytes @zc_rw reads
 * @zc_rd_ok: the read completed successfully
 * @zc_rd_deadline: jiffies by which the read must complete
 * @zc_timer: the deadline of an orphaned read (hps_zc_rd_timeout()); holds
 *	      a socket reference while pending
 * @zc_tx_sgt: an orphaned zero-copy send's mapped pages (socket lock)
 * @zc_tx_reg: their registration
 * @zc_tx_dev: the device they are mapped for, referenced
 * @zc_rx: the peer's SRCAVAIL not yet fully read or abandoned (in rx_ready)
 * @zc_rx_sendsm: bytes of the abandoned SRCAVAIL read before SENDSM
 * @zc_tx_len: bytes our outstanding SRCAVAIL advertised
 * @zc_tx_consumed: bytes of it the peer read (its answer)
 * @zc_tx_regd: its REG_MR completed (hps_zc_reg_done()), under @lock
 */
struct hps_sock {
	struct sock		sk;
	struct hlist_node	net_node;
	unsigned long		flags;
	struct rdma_cm_id	*cm_id;
	struct ib_qp		*qp;
	struct hps_dev		*dev;
	struct list_head	dev_node;
	struct hps_cq		*cq;
	int			cq_reserved;
	struct sockaddr_storage	local;
	struct sockaddr_storage	peer;
	struct sock		*parent;
	struct list_head	accept_list;
	struct list_head	accept_node;
	int			npending;
	struct work_struct	connd_wi;
	struct list_head	connd_events;
	unsigned long		connd_work;
	bool			connd_queued;
	u64			estab_seq;
	struct work_struct	connect_work;
	struct socket		*port_hold;
	struct timer_list	nudge_timer;
	struct timer_list	ka_timer;
	struct ib_cqe		ka_cqe;
	struct timer_list	cover_timer;
	struct ib_cqe		fence_cqe;
	bool			ka_on;
	bool			ka_user;
	u32			ka_idle;
	u32			ka_intvl;
	u32			ka_cnt;
	u32			ka_sys_ms;
	u32			ka_sys_cnt;
	u32			user_timeout;
	struct ib_qp		*qp_err;
	unsigned long		rx_stamp;
	unsigned long		mem_pages;
	struct mem_cgroup	*memcg;
	struct socket		*fb;
	struct socket		*fb_spare;
	struct socket		*fb_lsn;
	void			(*fb_error_report)(struct sock *sk);
	struct timer_list	fb_timer;
	struct socket		*portq;
	void			(*portq_data_ready)(struct sock *sk);
	void			(*portq_error_report)(struct sock *sk);
	struct timer_list	portq_timer;
	u32			portq_nonce;
	u8			portq_tries;
	bool			portq_addr;
	bool			portq_refused;
	int			portq_result;
	u16			portq_cached;
	bool			portq_restarted;
	bool			fb_on;
	u8			fb_reason;
	struct timer_list	idle_timer;

	spinlock_t		lock;		/* see @lock above */
	u8			nudges;
	u32			nrx;
	u32			ntx;
	u32			buf_size;
	u32			peer_buf_size;
	u32			peer_credits_max;
	u8			peer_top;
	struct hps_buf		*rx;
	struct hps_buf		*tx;
	struct hps_hdr		*tx_hdr;
	u64			tx_hdr_dma;
	struct hps_buf		*ctrl;
	u32			rx_win;
	u8			rx_want;
	u8			rx_top;
	u8			rx_cls;
	u32			rx_nbuf;
	u32			rx_out;
	struct list_head	rx_wait;
	struct list_head	rx_park;
	bool			rx_shrink_owed;
	u8			rx_shrinks;
	u8			rx_max_cls;
	u32			rx_max_win;
	bool			rx_reserve_taken;
	unsigned long		rx_data_stamp;
	struct list_head	rx_ready;
	u32			rx_queued;
	u32			rx_nready;
	u32			rx_pending;
	u32			rx_pending_data;
	u32			tx_credits;
	struct hps_cr_run	*tx_cr;
	u32			tx_cr_cap;
	u32			tx_cr_first;
	u32			tx_cr_nruns;
	u32			tx_pad;
	u8			tx_pad_cls;
	u32			tx_pad_win;
	bool			tx_nomem;
	struct hps_tx_wr	*tx_wr;
	u32			tx_wr_head;
	u32			tx_wr_out;
	u32			tx_wr_sig;
	unsigned long		tx_uncov_stamp;
	u32			tx_ack_mark;
	bool			tx_nagle_met;
	bool			tx_nagle_met_before;
	u32			fence_mark;
	bool			fence_out;
	bool			cover_wanted;
	bool			cover_soon;
	bool			ut_grace;
	unsigned long		ut_grace_end;
	unsigned long		tx_data_stamp;
	u32			tx_pages;
	bool			peer_reserve;
	bool			rx_reserve_owed;
	u32			tx_done;
	u32			tx_posted;
	u32			tx_fill;
	bool			tx_filling;
	u32			tx_queued;
	u32			ctrl_head;
	u32			ctrl_done;
	u32			ack_thresh;
	u32			inline_max;
	u64			tx_bytes;
	u64			rx_bytes;
	unsigned long		tx_stamp;
	u32			ka_probes;
	bool			tx_stalled;
	u64			tx_stall_start;
	u32			tx_stalls;
	u64			tx_msgs;
	u64			rx_msgs;

	u32			zc_thresh;
	bool			zc_cap;
	struct ib_mr		*zc_mr;
	u32			zc_port;
	u32			zc_rd_pages;
	struct ib_cqe		zc_reg_cqe;
	struct ib_cqe		zc_inv_cqe;
	struct ib_cqe		zc_rd_cqe;
	struct rdma_rw_ctx	zc_rw;
	struct sg_table		zc_rd_sgt;
	struct hps_reg		*zc_rd_reg;
	u32			zc_rd_npages;
	u32			zc_rd_len;
	bool			zc_rd_ok;
	unsigned long		zc_rd_deadline;
	struct timer_list	zc_timer;
	struct sg_table		zc_tx_sgt;
	struct hps_reg		*zc_tx_reg;
	struct hps_dev		*zc_tx_dev;
	struct hps_buf		*zc_rx;
	u32			zc_rx_sendsm;
	u32			zc_tx_len;
	u32			zc_tx_consumed;
	bool			zc_tx_regd;
#ifdef HPS_INJECT
	/* hps_inject.c: the selftests' fault injection (test builds only) */
	struct irq_work		inj_irq;
	struct timer_list	inj_timer;
	spinlock_t		inj_lock;	/* the inj_ fields below */
	struct hps_inject_wc	*inj_q;
	u32			inj_qlen;
	u32			inj_head;
	u32			inj_tail;
	int			inj_cpu;
	bool			inj_busy;
#endif
};

static inline struct hps_sock *hps_sk(const struct sock *sk)
{
	return container_of(sk, struct hps_sock, sk);
}

static inline bool hps_test(const struct hps_sock *hs, int bit)
{
	return test_bit(bit, &hs->flags);
}

/* Receive buffers of a connection: its window and the reserve. */
static inline u32 hps_rx_bufs(const struct hps_sock *hs)
{
	return hs->nrx + HPS_RX_RESERVE;
}

/*
 * Credits the peer holds: buffers of our window announced to it and not
 * used yet (messages in flight are not known). Context: hs->lock held.
 */
static inline u32 hps_peer_credits(const struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hs->rx_out;
}

/*
 * Bytes of a buffer of class @cls, header included, at an end whose
 * largest buffer is @max bytes: HPS_BUF_MIN doubled @cls times, at most
 * @max.
 */
static inline u32 hps_cls_bytes(u32 max, u8 cls)
{
	return min_t(u32, (u32)HPS_BUF_MIN << min_t(u8, cls, HPS_CLS_MAX),
		     max);
}

/* The class of an end's largest buffer, @max bytes. */
static inline u8 hps_top_cls(u32 max)
{
	return order_base_2(DIV_ROUND_UP(max, HPS_BUF_MIN));
}

void hps_sock_memcg_from(struct hps_sock *hs, struct hps_sock *from);
void hps_sock_inherit(struct hps_sock *hs, struct hps_sock *lhs);

/* ---- what the tracepoints report (hps_trace.h) ---- */

/* hps_conn_connect, hps_conn_accept: no rdma_cm event (AF_HPS's own step) */
#define HPS_TP_NO_EVENT		(-1)

/* hps_conn_accept: what became of a connection request */
enum hps_accept_outcome {
	HPS_ACC_ACCEPTED,	/* a new socket answered it (rdma_accept()) */
	HPS_ACC_ESTABLISHED,	/* ... and is up, in the accept queue */
	HPS_ACC_BACKLOG,	/* refused: backlog full or listener closing */
	HPS_ACC_BAD_HELLO,	/* refused: the hello broke the protocol */
	HPS_ACC_SETUP,		/* refused: no memory or device resources */
	HPS_ACC_FAILED,		/* the new socket failed before it was up */
};

/* hps_conn_abort: why a connection was reset */
enum hps_abort_why {
	HPS_AB_ERROR,		/* a local error (see the caller) */
	/* this end reset it: close with unread data, SO_LINGER 0, the
	 * listener closed, a zero-copy transfer that could not finish
	 */
	HPS_AB_LOCAL,
	HPS_AB_PROTO,		/* the peer broke the protocol */
	HPS_AB_PEER,		/* the peer sent ABORT */
	HPS_AB_PEER_GONE,	/* the peer disconnected without a FIN */
	HPS_AB_TRANSPORT,	/* a work request failed (retries exhausted) */
	HPS_AB_KEEPALIVE,	/* the peer was silent too long */
	HPS_AB_USER_TIMEOUT,	/* TCP_USER_TIMEOUT */
	HPS_AB_DEVICE,		/* the RDMA device went away */
	HPS_AB_FIN_TIMEOUT,	/* our FIN was not taken in 60 s */
};

/* hps_zc_tx, hps_zc_rx, hps_zc_cancel: zero copy or copy, and why */
enum hps_zc_why {
	HPS_ZCW_ZCOPY,		/* zero copy */
	HPS_ZCW_SMALL,		/* below HPS_ZCOPY_THRESH, or a read < 16 KiB */
	HPS_ZCW_NONBLOCK,	/* a non-blocking call */
	HPS_ZCW_KERNEL,		/* not user memory */
	HPS_ZCW_NOT_SET_UP,	/* the connection was set up without it */
	HPS_ZCW_NO_DEVICE,	/* the device cannot register memory remotely */
	HPS_ZCW_NOT_CONNECTED,	/* no connection (up) */
	HPS_ZCW_NO_MR,		/* no memory region could be made */
	HPS_ZCW_NOT_PINNED,	/* pages not pinned (RLIMIT_MEMLOCK, fault) */
	HPS_ZCW_PEEK,		/* MSG_PEEK */
	HPS_ZCW_TIMEOUT,	/* cancel: the peer did not read in 500 ms */
	HPS_ZCW_SIGNAL,		/* cancel: a signal */
	HPS_ZCW_SNDTIMEO,	/* cancel: SO_SNDTIMEO ran out */
};

/* af_hps.c */
extern struct proto hps_proto;
extern const struct proto_ops hps_proto_ops;

/* hps_core.c */
void hps_sock_init(struct hps_sock *hs);
struct sock *hps_sock_alloc(struct net *net, struct socket *sock, int kern);
void hps_set_state(struct sock *sk, int state);
int hps_connd_start(void);
void hps_connd_stop(void);
void hps_connd_kick(struct hps_sock *hs, int work);
void hps_connect_queue(struct hps_sock *hs);
void hps_flags_reset(struct hps_sock *hs);
bool hps_connd_events_pending(struct hps_sock *hs);
int hps_connd_queue_event(struct rdma_cm_id *id, struct rdma_cm_event *ev,
			  struct sock *sk);

/* hps_ib.c */
int hps_ib_register(void);
bool hps_ib_have_iwarp(void);
void hps_ib_unregister(void);
struct hps_dev *hps_dev_get(struct ib_device *ibdev);
void hps_dev_put(struct hps_dev *dev);
int hps_dev_reserve(struct hps_dev *dev, struct hps_sock *hs, int ncqe);
void hps_dev_unreserve(struct hps_sock *hs);
void hps_dev_hold(struct hps_dev *dev);
bool hps_cq_busy_get(struct hps_cq *c);

/*
 * A busy poller holds a CQ (hps_cq_busy_get() to hps_cq_busy_put()) with
 * preemption off, so that it never sleeps while every connection of the CQ
 * waits for it. On PREEMPT_RT the completion handlers' spinlocks sleep:
 * there preemption stays on, as in napi_busy_loop(), and since the CQ is
 * shared by every user's connections, the poller holds it for one pass
 * (get, poll, put) at a time, with BHs off (hps_cq_busy_poll(),
 * hps_cq_busy_put()), as the softirq poller does.
 */
static inline void hps_busy_hold(void)
{
	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		preempt_disable();
}

static inline void hps_busy_release(void)
{
	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		preempt_enable();
}

int hps_cq_busy_poll(struct hps_cq *c, int budget);
void hps_cq_busy_put(struct hps_cq *c);

/* hps_cm.c */
int hps_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
int hps_cm_create_id(struct sock *sk);
int hps_bind(struct socket *sock, struct sockaddr *addr, int len);
int hps_listen(struct socket *sock, int backlog);
int hps_connect(struct socket *sock, struct sockaddr *addr, int len,
		int flags);
int hps_accept(struct socket *sock, struct socket *newsock, int flags,
	       bool kern);
int hps_getname(struct socket *sock, struct sockaddr *addr, int peer);
void hps_cm_process(struct rdma_cm_id *id, int event, int status,
		    const void *pdata, u8 pdata_len, struct sock *sk);
void hps_cm_destroy_id(struct sock *sk, struct rdma_cm_id *id);
void hps_cm_connect_work(struct work_struct *work);
void hps_cm_accept_work(struct hps_sock *hs);
void hps_cm_release_port(struct hps_sock *hs);
int hps_cm_bind_held(struct hps_sock *hs, const struct sockaddr_storage *addr);
struct rdma_cm_id *hps_cm_resolve_route(struct hps_sock *hs,
					struct rdma_cm_id *id);
struct rdma_cm_id *hps_cm_restart_work(struct hps_sock *hs);
struct rdma_cm_id *hps_cm_dev_gone(struct hps_sock *hs);

/* hps_wr.c */
void hps_wr_qp_event(struct ib_event *ev, void *ctx);
int hps_wr_setup(struct hps_sock *hs, struct rdma_cm_id *id);
void hps_wr_teardown(struct hps_sock *hs);
void hps_wr_free_bufs(struct hps_sock *hs);
void __hps_wr_free_bufs(struct hps_sock *hs);
int hps_wr_buf_alloc(struct hps_sock *hs, struct hps_buf *b, u32 size,
		     enum dma_data_direction dir, bool more);
void hps_wr_buf_free(struct hps_sock *hs, struct hps_buf *b,
		     enum dma_data_direction dir);
int hps_wr_post_recv(struct hps_sock *hs, struct hps_buf *b);
int hps_wr_post_send(struct hps_sock *hs, struct hps_buf *b, u8 type,
		     u32 len);
int hps_wr_post_data(struct hps_sock *hs, struct hps_buf *b, u32 len,
		     bool more, bool ask);
int hps_wr_post_zero_write(struct hps_sock *hs, struct ib_cqe *cqe);
void hps_hello_fill(struct hps_sock *hs, struct hps_hello *h, u16 port);
int hps_hello_check(struct hps_sock *hs, const void *pdata, u8 len, u16 port);

/* hps_tx.c */
int hps_sendmsg(struct socket *sock, struct msghdr *msg, size_t len);
void hps_tx_push(struct hps_sock *hs);
bool hps_tx_writable(struct hps_sock *hs);
void hps_tx_close_open(struct hps_sock *hs);
void hps_tx_stall_update(struct hps_sock *hs);
void hps_send_done(struct ib_cq *cq, struct ib_wc *wc);
void hps_ctrl_done(struct ib_cq *cq, struct ib_wc *wc);
bool hps_tx_ctrl(struct hps_sock *hs, u8 type, bool force);
bool hps_tx_ctrl_data(struct hps_sock *hs, u8 type, const void *data,
		      u32 len);
bool hps_tx_flushed(struct hps_sock *hs);
bool hps_tx_credits_due(struct hps_sock *hs);
bool hps_tx_fin_step(struct hps_sock *hs, int bit);
void hps_tx_nudge(struct timer_list *t);
void hps_tx_keepalive(struct timer_list *t);
void hps_tx_ka_done(struct ib_cq *cq, struct ib_wc *wc);
void hps_tx_fence_done(struct ib_cq *cq, struct ib_wc *wc);
void hps_tx_cover_timer(struct timer_list *t);
void hps_tx_cover(struct hps_sock *hs);
void hps_tx_acked(struct hps_sock *hs);
void hps_tx_cover_arm(struct hps_sock *hs);
void hps_tx_cover_ask(struct hps_sock *hs);
void hps_tx_ut_set(struct hps_sock *hs, u32 ms);
void hps_tx_ka_start(struct hps_sock *hs);
void hps_tx_ka_config(struct hps_sock *hs);
void hps_tx_wait_begins(struct hps_sock *hs);
u32 hps_ka_idle_ms(struct hps_sock *hs);
u32 hps_ka_intvl_ms(struct hps_sock *hs);
u32 hps_ka_cnt(struct hps_sock *hs);
void hps_tx_fin_done(struct hps_sock *hs);
void hps_splice_eof(struct socket *sock);
void hps_tx_cr_push(struct hps_sock *hs, u32 n, u8 cls);
void hps_tx_cr_pop(struct hps_sock *hs);
void hps_tx_free_idle(struct hps_sock *hs);
bool hps_tx_idle(struct hps_sock *hs);

/* hps_rx.c */
int hps_recvmsg(struct socket *sock, struct msghdr *msg, size_t len,
		int flags);
void hps_recv_done(struct ib_cq *cq, struct ib_wc *wc);
bool hps_rx_readable(struct hps_sock *hs);
#ifdef CONFIG_NET_RX_BUSY_POLL
bool hps_rx_busy_poll(struct hps_sock *hs, bool nonblock);
void hps_rx_busy_poll_once(struct hps_sock *hs);
#else
static inline bool hps_rx_busy_poll(struct hps_sock *hs, bool nonblock)
{
	return false;
}

static inline void hps_rx_busy_poll_once(struct hps_sock *hs)
{
}
#endif
void hps_rx_release_dead(struct hps_sock *hs);
void hps_rx_post_waiting(struct hps_sock *hs);
void hps_rx_resize(struct hps_sock *hs);
void hps_rx_idle(struct timer_list *t);
void hps_idle_arm(struct hps_sock *hs);
ssize_t hps_splice_read(struct socket *sock, loff_t *ppos,
			struct pipe_inode_info *pipe, size_t len,
			unsigned int flags);

/* hps_zc.c */

/**
 * struct hps_zc_rest - the rest of a zero-copy send, to be sent by copy
 * @reg: the registration the bytes are in (held), or NULL: none left
 * @it: the bytes, through the kernel mapping of @reg
 * @kv: @it's segment when @reg has a kernel mapping
 * @bv: @it's pages when it has not (mapped one by one as they are copied)
 */
struct hps_zc_rest {
	struct hps_reg		*reg;
	struct iov_iter		it;
	struct kvec		kv;
	struct bio_vec		*bv;
};

ssize_t hps_zc_send(struct hps_sock *hs, struct msghdr *msg, long *timeo,
		    bool *copy_rest, struct hps_zc_rest *rest);
void hps_zc_rest_done(struct hps_zc_rest *rest);
int hps_zc_recv(struct hps_sock *hs, struct msghdr *msg, size_t len);
bool hps_zc_rx_eligible(struct hps_sock *hs, struct msghdr *msg, size_t len,
			long timeo);
int hps_zc_rx_why(struct hps_sock *hs, struct msghdr *msg, size_t len,
		  long timeo);
void hps_zc_rx_abandon(struct hps_sock *hs);
void hps_zc_rx_reap(struct hps_sock *hs);
void hps_zc_tx_reap(struct hps_sock *hs);
void hps_zc_rd_timeout(struct timer_list *t);
int hps_zc_rx_msg(struct hps_sock *hs, struct hps_buf *b, u8 type, u32 len);
void hps_zc_sq_done(struct hps_sock *hs);
void hps_zc_tx_credits(struct hps_sock *hs);
void hps_zc_push(struct hps_sock *hs);
void hps_zc_setup(struct hps_sock *hs, struct ib_qp_init_attr *attr);
void hps_zc_teardown(struct hps_sock *hs);

/* hps_close.c */
int hps_shutdown(struct socket *sock, int how);
int hps_release(struct socket *sock);
void __hps_abort(struct hps_sock *hs, int err, bool send_abort,
		 enum hps_abort_why why, unsigned long ip);
void hps_teardown(struct hps_sock *hs, unsigned long work);
void hps_update_state(struct hps_sock *hs);
void __hps_conn_error(struct hps_sock *hs, int err, enum hps_abort_why why,
		      unsigned long ip);

/*
 * Reset a connection: hps_conn_error() for an error, hps_abort() from
 * this end (see hps_close.c). The _why forms say why, for the
 * hps_conn_abort tracepoint; every form records where it was called.
 */
#define hps_conn_error(hs, err) \
	__hps_conn_error(hs, err, HPS_AB_ERROR, _THIS_IP_)
#define hps_conn_error_why(hs, err, why) \
	__hps_conn_error(hs, err, why, _THIS_IP_)
#define hps_abort(hs, err, send_abort) \
	__hps_abort(hs, err, send_abort, HPS_AB_LOCAL, _THIS_IP_)
#define hps_abort_why(hs, err, send_abort, why) \
	__hps_abort(hs, err, send_abort, why, _THIS_IP_)
struct rdma_cm_id *hps_fail(struct hps_sock *hs, int err);
void hps_child_established(struct hps_sock *hs);

/* hps_reg.c */

/**
 * struct hps_reg_cache - a namespace's registration cache
 * @lock: protects everything below and the users, hashed and stale fields
 *	  of its entries
 * @hash: cached entries by address space and first page
 * @lru: cached entries, least recently used first
 * @dead: stale idle entries taken out by an invalidation, for @work
 * @work: frees @dead (an invalidation callback cannot)
 * @bytes: bytes pinned by cached entries
 */
struct hps_reg_cache {
	spinlock_t		lock;	/* see above */
	DECLARE_HASHTABLE(hash, HPS_REG_HASH_BITS);
	struct list_head	lru;
	struct list_head	dead;
	struct work_struct	work;
	u64			bytes;
};

/**
 * struct hps_reg - pinned pages of a user buffer (Documentation/zcopy.rst)
 * @notifier: watches the range while the entry may be cached
 * @hnode: in the cache's hash while cached
 * @lru: in the cache's LRU list while cached; then on a free list
 * @cache: the namespace's cache
 * @mm: the address space (mmgrab()bed); its pinned_vm is charged
 * @start: first page's user address
 * @pages: the pinned pages
 * @vaddr: kernel mapping of @pages made at registration, or NULL
 * @npages: number of @pages
 * @users: transfers using the entry; cache lock
 * @write: pinned for the device to write (a receive)
 * @watched: @notifier is registered
 * @hashed: in the cache; cache lock
 * @stale: the mapping changed since the pages were pinned; cache lock
 */
struct hps_reg {
	struct mmu_interval_notifier	notifier;
	struct hlist_node		hnode;
	struct list_head		lru;
	struct hps_reg_cache		*cache;
	struct mm_struct		*mm;
	unsigned long			start;
	struct page			**pages;
	void				*vaddr;
	u32				npages;
	u32				users;
	bool				write;
	bool				watched;
	bool				hashed;
	bool				stale;
};

struct hps_net;
struct hps_reg *hps_reg_get(struct hps_net *hn, unsigned long start,
			    u32 npages, bool write);
void hps_reg_put(struct hps_reg *r, u32 written);
void hps_reg_cache_init(struct hps_reg_cache *c);
void hps_reg_cache_exit(struct hps_reg_cache *c);

/*
 * iWARP port queries' outcomes a namespace remembers (hps_portq.c): how
 * many, and for how long an answer and a refusal (no listener) hold.
 */
#define HPS_PORTQ_SEEN		64
#define HPS_PORTQ_ANSWER_TTL	(10 * HZ)
#define HPS_PORTQ_REFUSED_TTL	(2 * HZ)

/**
 * struct hps_portq_seen - a port query's outcome, remembered
 * @addr: the peer's address (IPv4 mapped)
 * @port: the port asked about
 * @rdma_port: the answer's port, or 0: the query was refused
 * @expires: jiffies until which it holds (0: an empty slot)
 */
struct hps_portq_seen {
	struct in6_addr	addr;
	__be16		port;
	u16		rdma_port;
	unsigned long	expires;
};

/* hps_sysctl.c */
/**
 * struct hps_net - a network namespace's AF_HPS state
 * @hdr: its sysctl table
 * @socks_lock: protects @socks (BH: sockets may be freed from softirq)
 * @socks: every AF_HPS socket of the namespace (hps_sock.net_node), the
 *	   newest first
 * @reg: its registration cache
 * @stats: its event counters (per CPU; hps_stats.c)
 * @mem: net.hps.mem: the low, pressure and high thresholds in pages
 *	 (HPS_MEM_*); written whole under hps_mem_mutex, read with
 *	 READ_ONCE() one by one (under the mutex: init_net's, by the
 *	 other namespaces)
 * @mem_allocated: pages charged to the namespace (hps_mem.c)
 * @mem_flags: HPS_MEM_F_* bits (atomic bitops)
 * @portq_lock: protects @portq_seen (taken in process context only)
 * @portq_seen: port queries' outcomes, by hash of address and port
 *
 * The other fields are the sysctls (Documentation/sysctl.rst).
 */
struct hps_net {
	struct ctl_table_header	*hdr;
	spinlock_t		socks_lock;	/* see above */
	struct hlist_head	socks;
	unsigned int		credits;
	unsigned int		buf_size;
	unsigned int		ack_thresh;
	unsigned int		inline_max;
	unsigned int		zcopy_thresh;
	int			rmem_default;
	int			wmem_default;
	unsigned int		zcopy_cache_bytes;
	unsigned int		zcopy_cache_kmap;
	unsigned int		keepalive_ms;
	unsigned int		keepalive_probes;
	unsigned int		tcp_fallback;
	struct hps_reg_cache	reg;
	struct hps_stats __percpu *stats;
	unsigned long		mem[HPS_MEM_NR];
	atomic_long_t		mem_allocated;
	unsigned long		mem_flags;
	spinlock_t		portq_lock;	/* see above */
	struct hps_portq_seen	portq_seen[HPS_PORTQ_SEEN];
};

/* hps_net.mem_flags bits */
enum {
	HPS_MEM_F_PRESSURE,	/* under memory pressure (hps_mem.c) */
};

/* The namespace a registration cache belongs to. */
static inline struct hps_net *hps_reg_cache_net(struct hps_reg_cache *c)
{
	return container_of(c, struct hps_net, reg);
}

int hps_sysctl_register(void);
void hps_sysctl_unregister(void);
struct hps_net *hps_net(const struct net *net);

/* hps_mem.c */
int hps_mem_charge(struct hps_net *hn, unsigned long pages);
void hps_mem_uncharge(struct hps_net *hn, unsigned long pages);
bool hps_mem_pressure(struct hps_net *hn);
void hps_mem_recheck(struct hps_net *hn);
void hps_mem_net_init(struct hps_net *hn, const unsigned long *from);
void hps_mem_net_exit(struct hps_net *hn);

/* hps_fallback.c */

/* net.hps.tcp_fallback */
enum {
	HPS_FB_SYSCTL_NEVER,	/* no socket falls back */
	HPS_FB_SYSCTL_ASKED,	/* sockets that set HPS_TCP_FALLBACK */
	HPS_FB_SYSCTL_DEFAULT,	/* ... and it is on by default */
};

/* The port of an AF_INET or AF_INET6 address, host order. */
static inline u16 hps_addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static inline void hps_addr_set_port(struct sockaddr_storage *ss, u16 port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

/* The wildcard address of its family? */
static inline bool hps_addr_any(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET6)
		return ipv6_addr_any(&sin6->sin6_addr);
	return ((const struct sockaddr_in *)ss)->sin_addr.s_addr ==
	       htonl(INADDR_ANY);
}

/* The length of an AF_INET or AF_INET6 address, for bind() or connect(). */
static inline int hps_addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

/*
 * The TCP socket the connection fell back to, or NULL. Context: any; it
 * does not change once set.
 */
static inline struct socket *hps_fb(const struct hps_sock *hs)
{
	/* Paired with smp_store_release() in hps_fb_start(). */
	return smp_load_acquire(&hs->fb);
}

/*
 * A listener's TCP listening socket, or NULL. Context: any, the file open
 * (hps_release() closes it); it does not change once set.
 */
static inline struct socket *hps_fb_lsn(const struct hps_sock *hs)
{
	/* Paired with smp_store_release() in hps_fb_listen(). */
	return smp_load_acquire(&hs->fb_lsn);
}

/*
 * How long a socket that may fall back waits for its connection over RDMA
 * before it goes on over TCP: more than an AF_HPS peer takes to answer
 * (milliseconds; a burst of connects under emulation, under a second),
 * far less than rdma_cm's retries to a silent host (about 100 s over
 * RoCE: a peer without an RDMA device never answers).
 */
#define HPS_FB_DEADLINE		(3 * HZ)

/*
 * What a blocked sendmsg() or recvmsg() that has moved nothing yet gets
 * from its wait when connect() fell back meanwhile: it goes on over TCP.
 */
#define HPS_FELL_BACK	1

bool hps_fb_try(struct hps_sock *hs, int reason);
int hps_fb_reason(int event, int status);
void hps_fb_prepare(struct hps_sock *hs);
void hps_fb_drop_spare(struct hps_sock *hs);
void hps_fb_close(struct hps_sock *hs, struct socket *fb);
__poll_t hps_fb_mask(struct file *file, struct socket *sock,
		     struct socket *fb);
int hps_fb_connect(struct hps_sock *hs, struct socket *fb,
		   struct sockaddr *addr, int len, int flags);
__poll_t hps_fb_poll(struct file *file, struct socket *sock,
		     struct socket *fb, poll_table *wait);
int hps_fb_setsockopt(struct socket *fb, int level, int optname,
		      sockptr_t optval, unsigned int optlen);
void hps_fb_sync(struct hps_sock *hs, struct socket *fb);
void hps_fb_listen(struct hps_sock *hs, int backlog);
bool hps_fb_acceptable(const struct hps_sock *hs);
int hps_fb_accept(struct hps_sock *lhs, struct socket *newsock);
void hps_fb_listen_close(struct hps_sock *hs, struct socket *lsn);
void hps_fb_deadline(struct timer_list *t);
struct rdma_cm_id *hps_fb_deadline_work(struct hps_sock *hs);
int hps_fb_listen_iwarp(struct hps_sock *hs, int backlog,
			struct rdma_cm_id **destroy);

/* hps_portq.c */
bool hps_portq_wanted(const struct rdma_cm_id *id);
int hps_portq_listen(struct hps_sock *hs);
void hps_portq_start(struct hps_sock *hs);
struct rdma_cm_id *hps_portq_ask(struct hps_sock *hs, struct rdma_cm_id *id);
struct rdma_cm_id *hps_portq_work(struct hps_sock *hs);
struct socket *hps_portq_take(struct hps_sock *hs);
void hps_portq_release(struct hps_sock *hs, struct socket *sock);
void hps_portq_timer(struct timer_list *t);
bool hps_portq_forget(struct hps_sock *hs);

/* hps_diag.c */
int hps_diag_register(void);
void hps_diag_unregister(void);

/* hps_stats.c */
enum hps_stat {
	HPS_STAT_CONN_ACTIVE,
	HPS_STAT_CONN_PASSIVE,
	HPS_STAT_ABORTS,
	HPS_STAT_PROTO_ERRORS,
	HPS_STAT_CREDIT_MSGS,
	HPS_STAT_LISTEN_DROPS,
	HPS_STAT_ACCEPT_ERRORS,
	HPS_STAT_CONNECT_ERRORS,
	HPS_STAT_ZC_TX,
	HPS_STAT_ZC_TX_BYTES,
	HPS_STAT_ZC_RX_READS,
	HPS_STAT_ZC_RX_BYTES,
	HPS_STAT_ZC_FALLBACKS,
	HPS_STAT_ZC_CANCELS,
	HPS_STAT_REG_HITS,
	HPS_STAT_REG_MISSES,
	HPS_STAT_REG_EVICTIONS,
	HPS_STAT_REG_INVALIDATIONS,
	HPS_STAT_REG_PINNED,
	HPS_STAT_REG_LIMIT_COPIES,
	HPS_STAT_REG_KMAP_COPIES,
	HPS_STAT_REG_KMAP_FAILS,
	HPS_STAT_KA_PROBES,
	HPS_STAT_PEER_TIMEOUTS,
	HPS_STAT_USER_TIMEOUTS,
	HPS_STAT_CREDIT_STALLS,
	HPS_STAT_MEM_PAGES,	/* a level: hps_net.mem_allocated itself */
	HPS_STAT_MEM_PRESSURE_ENTRIES,
	HPS_STAT_MEM_LIMIT_FAILURES,
	HPS_STAT_CREDIT_RESERVE,
	HPS_STAT_RX_GROWS,
	HPS_STAT_RX_SHRINKS,
	HPS_STAT_BUSY_POLL_HITS,
	HPS_STAT_BUSY_POLL_MISSES,
	HPS_STAT_BUSY_POLL_CQES,
	HPS_STAT_TX_UNSIGNALED,
	HPS_STAT_TX_FENCES,
	HPS_STAT_FB_NO_DEVICE,	/* one per HPS_FB_*, in its order */
	HPS_STAT_FB_REFUSED,
	HPS_STAT_FB_REJECTED,
	HPS_STAT_FB_UNREACHABLE,
	HPS_STAT_FB_PEER_ERROR,
	HPS_STAT_FB_RESOURCE,
	HPS_STAT_FB_TCP_CLIENT,
	HPS_STAT_FB_ERRORS,	/* a fallback wanted, but TCP failed to start */
	HPS_STAT_PORTQ_ANSWERS,	/* iWARP port queries a listener answered */
	HPS_STAT_PORTQ_TIMEOUTS, /* a connect()'s port query got no answer */
	HPS_STAT_PORTQ_CACHED,	/* a connect() took a remembered answer */
	HPS_STAT_PORTQ_STALE,	/* ... which failed: it asked again */
	HPS_STAT_MAX,
};

/**
 * struct hps_stats - a namespace's counters on one CPU (hps_net.stats)
 * @v: one value per enum hps_stat; a counter is the sum over the CPUs
 */
struct hps_stats {
	long	v[HPS_STAT_MAX];
};

void hps_net_stat_add(struct hps_net *hn, enum hps_stat s, long n);
void hps_stat_add(const struct net *net, enum hps_stat s, long n);
long hps_stat_read(struct hps_net *hn, enum hps_stat s);
const char *hps_stat_name(enum hps_stat s);
int hps_stats_net_init(struct net *net, struct hps_net *hn);
void hps_stats_net_exit(struct net *net, struct hps_net *hn);

/* Count an event of @net (a socket's: sock_net()). Context: any. */
static inline void hps_stat_inc(const struct net *net, enum hps_stat s)
{
	hps_stat_add(net, s, 1);
}

static inline void hps_net_stat_inc(struct hps_net *hn, enum hps_stat s)
{
	hps_net_stat_add(hn, s, 1);
}

/* hps_inject.c: widened race windows for the selftests (test builds only) */
enum hps_inject_point {
	HPS_INJ_NONE,
	HPS_INJ_TX_RESERVE,	/* room seen, slot not taken; sends late */
	HPS_INJ_ZC_RX_WAIT,	/* zero-copy read posted: reader away */
	HPS_INJ_ZC_TX_POST,	/* zero-copy send registered, not posted */
	HPS_INJ_ZC_RD_DONE,	/* an RDMA Read's completion handled late */
	HPS_INJ_RESOLVE,	/* a connect's address resolution: its timeout */
	HPS_INJ_ACCEPT_SETUP,	/* one accepted child's setup (once) */
	HPS_INJ_ACCEPT_QUEUE,	/* one child's move to the accept queue (once) */
	HPS_INJ_PORTQ_ANSWER,	/* a listener's answer to a port query (once) */
	HPS_INJ_CONNECT_DONE,	/* rdma_connect() returned: taken late (once) */
	HPS_INJ_RESTART,	/* a restart waits, the socket without an id */
};

/* SOL_HPS option of test builds: a fatal QP event from hard-IRQ context */
#define HPS_INJECT_QP_EVENT	1000

#ifdef HPS_INJECT
unsigned int hps_inject_ms(enum hps_inject_point point);
void hps_inject_sleep(enum hps_inject_point point);
void hps_inject_sleep_once(enum hps_inject_point point);
void hps_inject_connd(bool start);
void hps_inject_wait_change(enum hps_inject_point point, const u32 *val);
int hps_inject_qp_event(struct hps_sock *hs);
void hps_inject_init(struct hps_sock *hs);
bool hps_inject_defer_wc(struct hps_sock *hs, struct ib_cq *cq,
			 struct ib_wc *wc, enum hps_inject_point point,
			 void (*done)(struct ib_cq *cq, struct ib_wc *wc));
void hps_inject_flush(struct hps_sock *hs);
void hps_inject_free(struct hps_sock *hs);
#else
static inline unsigned int hps_inject_ms(enum hps_inject_point point)
{
	return 0;
}

static inline void hps_inject_sleep(enum hps_inject_point point)
{
}

static inline void hps_inject_sleep_once(enum hps_inject_point point)
{
}

static inline void hps_inject_connd(bool start)
{
}

static inline void hps_inject_wait_change(enum hps_inject_point point,
					  const u32 *val)
{
}

static inline int hps_inject_qp_event(struct hps_sock *hs)
{
	return -ENOPROTOOPT;
}

static inline void hps_inject_init(struct hps_sock *hs)
{
}

static inline bool hps_inject_defer_wc(struct hps_sock *hs, struct ib_cq *cq,
				       struct ib_wc *wc,
				       enum hps_inject_point point,
				       void (*done)(struct ib_cq *cq,
						    struct ib_wc *wc))
{
	return false;
}

static inline void hps_inject_flush(struct hps_sock *hs)
{
}

static inline void hps_inject_free(struct hps_sock *hs)
{
}
#endif

#endif /* _HPS_H */
