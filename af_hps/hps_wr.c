// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Work requests: the QP of a connection, its DMA-mapped bounce buffers,
 * posting of receives and sends, the hello exchanged in the CM private data
 * and the drain on teardown.
 *
 * Every connection has @nrx receive buffers (its window: one credit each)
 * and HPS_RX_RESERVE more (the reserve of HPS_MSG_F_RESERVE, hps_tx.c),
 * @ntx send buffers and HPS_NCTRL header-only control buffers. The QP's
 * queues have one more slot each for ib_drain_qp(), the send queue one
 * more for the keepalive probe, and the CQ reservation counts them too.
 *
 * The receive and send buffers are charged to the connection's namespace
 * (hps_mem.c, net.hps.mem) before they are allocated, by the pages each
 * buffer's allocation takes (hps_wr_buf_pages()), and uncharged when they
 * are freed: a connection that would take the namespace over its limit is
 * not set up (-ENOBUFS). Not charged: the HPS_NCTRL control buffers
 * (HPS_CTRL_BUF bytes each) and the three descriptor arrays (one struct
 * hps_buf, 56 bytes on x86-64, per buffer). Those arrays grow with the
 * window: at HPS_CREDITS_MAX buffers each way the receive and send arrays
 * are 56 KiB each, 16 pages after kmalloc()'s rounding, 32 pages per
 * connection end in all, beside the at least 2048 pages of charged
 * buffers (under 2%); at the default 16 credits, under a page.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/slab.h>

#include "hps.h"

#define HPS_CTRL_BUF	64	/* control buffers: header only, padded */

/**
 * hps_wr_qp_event() - asynchronous event of a connection's QP
 * @ev: the event
 * @ctx: the connection
 *
 * Context: any, hard IRQ included (mlx4 and mlx5 call it from their
 * interrupt handlers).
 */
void hps_wr_qp_event(struct ib_event *ev, void *ctx)
{
	struct hps_sock *hs = ctx;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
	case IB_EVENT_SQ_DRAINED:
	case IB_EVENT_QP_LAST_WQE_REACHED:
		break;
	default:
		pr_warn_ratelimited("QP event %s (%d)\n",
				    ib_event_msg(ev->event), ev->event);
		/* connd resets it: an error report may not come from here */
		WRITE_ONCE(hs->qp_err, ev->element.qp);
		hps_connd_kick(hs, HPS_W_QP_ERROR);
		break;
	}
}

static void hps_buf_unmap(struct ib_device *ibdev, struct hps_buf *b,
			  size_t size, enum dma_data_direction dir)
{
	if (b->dma) {
		ib_dma_unmap_single(ibdev, b->dma, size, dir);
		b->dma = 0;
	}
}

static void hps_bufs_unmap(struct hps_sock *hs)
{
	struct ib_device *ibdev = hs->dev->ibdev;
	u32 i;

	for (i = 0; hs->rx && i < hps_rx_bufs(hs); i++)
		hps_buf_unmap(ibdev, &hs->rx[i], hs->buf_size,
			      DMA_FROM_DEVICE);
	for (i = 0; hs->tx && i < hs->ntx; i++)
		hps_buf_unmap(ibdev, &hs->tx[i], hs->buf_size, DMA_TO_DEVICE);
	for (i = 0; hs->ctrl && i < HPS_NCTRL; i++)
		hps_buf_unmap(ibdev, &hs->ctrl[i], HPS_CTRL_BUF,
			      DMA_TO_DEVICE);
}

static void hps_bufs_free(struct hps_buf *bufs, u32 n)
{
	u32 i;

	if (!bufs)
		return;
	for (i = 0; i < n; i++)
		kfree(bufs[i].buf);
	kfree(bufs);
}

/* What hps_wr_setup() allocated and charged, taken off a socket. */
struct hps_wr_bufs {
	struct hps_buf	*rx;
	struct hps_buf	*tx;
	struct hps_buf	*ctrl;
	u32		nrx;
	u32		ntx;
	unsigned long	pages;
};

/*
 * Take the buffers and their charge off @hs into @b: the socket has none
 * left (no buffers, a window of 0 each way, nothing charged).
 * Context: the caller keeps everybody else away from those fields.
 */
static void hps_wr_bufs_take(struct hps_sock *hs, struct hps_wr_bufs *b)
{
	b->rx = hs->rx;
	b->tx = hs->tx;
	b->ctrl = hs->ctrl;
	b->nrx = hps_rx_bufs(hs);
	b->ntx = hs->ntx;
	b->pages = hs->mem_pages;
	hs->rx = NULL;
	hs->tx = NULL;
	hs->ctrl = NULL;
	hs->nrx = 0;
	hs->ntx = 0;
	hs->mem_pages = 0;
}

/*
 * Free buffers taken off @hs and give their charge back to its namespace.
 * Context: any; takes no lock.
 */
static void hps_wr_bufs_put(struct hps_sock *hs, struct hps_wr_bufs *b)
{
	hps_bufs_free(b->rx, b->nrx);
	hps_bufs_free(b->tx, b->ntx);
	hps_bufs_free(b->ctrl, HPS_NCTRL);
	hps_mem_uncharge(hps_net(sock_net(&hs->sk)), b->pages);
}

/**
 * __hps_wr_free_bufs() - free a socket's buffers as it is destroyed
 * @hs: the socket; its last reference is gone
 *
 * Gives back what hps_wr_setup() charged, if hps_wr_free_bufs() did not.
 *
 * Context: the socket's destructor (hps_sock_destruct()), in whatever
 * context the last sock_put() ran (softirq too): nobody else can look at
 * the socket any more, so it takes no lock.
 */
void __hps_wr_free_bufs(struct hps_sock *hs)
{
	struct hps_wr_bufs b;

	WARN_ON_ONCE(refcount_read(&hs->sk.sk_refcnt));
	hps_wr_bufs_take(hs, &b);
	hps_wr_bufs_put(hs, &b);
}

/**
 * hps_wr_free_bufs() - free a socket's buffers before it is destroyed
 * @hs: the socket, whose connection attempt is over: no QP and no device,
 *	so its buffers are unmapped (hps_wr_teardown()) and no work request
 *	or completion can reach them
 *
 * Frees the buffers of the socket's last connection attempt and gives
 * back their charge: for a connection that never came up, when it is
 * torn down (__hps_teardown(); a refused passive child's in
 * hps_cm_conn_req()), and before a new connection attempt
 * (hps_conn_params()). What points into the buffers goes with them: the
 * queue of received data (only data that came before the connection was
 * up, which nobody may read), the peer's SRCAVAIL and the ring indices,
 * reset under hs->lock since poll(), ioctl() and sock_diag read them
 * under that lock alone; the buffers are freed after it. A second call
 * finds nothing to free or uncharge.
 *
 * Context: process, socket lock held (readers and writers copy to and
 * from the buffers only while they hold it), hs->lock not held.
 */
void hps_wr_free_bufs(struct hps_sock *hs)
{
	struct hps_wr_bufs b;

	sock_owned_by_me(&hs->sk);
	lockdep_assert_not_held(&hs->lock);
	/* Still mapped, perhaps posted: hps_wr_teardown() comes first. */
	if (WARN_ON_ONCE(hs->qp || hs->dev))
		return;
	/*
	 * A zero-copy reader that dropped the socket lock still uses its
	 * SRCAVAIL's buffer; it needs a connection that was up, so never
	 * here: leave the buffers to the destructor if it happens anyway.
	 */
	if (WARN_ON_ONCE(test_bit(HPS_F_ZC_RX_BUSY, &hs->flags)))
		return;

	spin_lock_bh(&hs->lock);
	hps_wr_bufs_take(hs, &b);
	INIT_LIST_HEAD(&hs->rx_ready);
	hs->zc_rx = NULL;
	WRITE_ONCE(hs->rx_queued, 0);
	hs->rx_nready = 0;
	hs->rx_pending = 0;
	hs->rx_pending_data = 0;
	hs->tx_done = 0;
	hs->tx_posted = 0;
	hs->tx_fill = 0;
	WRITE_ONCE(hs->tx_queued, 0);
	hs->ctrl_head = 0;
	hs->ctrl_done = 0;
	spin_unlock_bh(&hs->lock);
	hps_wr_bufs_put(hs, &b);
}

/*
 * Pages one kmalloc() of @size bytes takes: what kmalloc() really gives,
 * not @size. Above KMALLOC_MAX_CACHE_SIZE (8 KiB with SLUB and 4 KiB
 * pages) it takes a power-of-two block of pages from the page allocator,
 * so 12288 bytes take 4 pages and 65537 take 32; below, an object of the
 * kmalloc cache's size (8 KiB for anything above 4 KiB: 2 pages).
 */
static unsigned long hps_wr_buf_pages(u32 size)
{
	return DIV_ROUND_UP(kmalloc_size_roundup(size), PAGE_SIZE);
}

/*
 * Pages the receive and send buffers of @hs take: each is a kmalloc() of
 * buf_size bytes of its own (hps_bufs_alloc()).
 */
static unsigned long hps_wr_bufs_pages(const struct hps_sock *hs)
{
	return ((unsigned long)hps_rx_bufs(hs) + hs->ntx) *
	       hps_wr_buf_pages(hs->buf_size);
}

static struct hps_buf *hps_bufs_alloc(struct ib_device *ibdev, u32 n,
				      size_t size,
				      enum dma_data_direction dir,
				      void (*done)(struct ib_cq *cq,
						   struct ib_wc *wc))
{
	struct hps_buf *bufs;
	u32 i;

	bufs = kcalloc(n, sizeof(*bufs), GFP_KERNEL);
	if (!bufs)
		return NULL;
	for (i = 0; i < n; i++) {
		struct hps_buf *b = &bufs[i];

		INIT_LIST_HEAD(&b->list);
		b->cqe.done = done;
		b->buf = kzalloc(size, GFP_KERNEL | __GFP_NOWARN);
		if (!b->buf)
			goto out_free;
		b->dma = ib_dma_map_single(ibdev, b->buf, size, dir);
		if (ib_dma_mapping_error(ibdev, b->dma)) {
			b->dma = 0;
			goto out_free;
		}
	}
	return bufs;

out_free:
	for (i = 0; i < n; i++)
		hps_buf_unmap(ibdev, &bufs[i], size, dir);
	hps_bufs_free(bufs, n);
	return NULL;
}

static int hps_qp_create(struct hps_sock *hs, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr attr = {
		.event_handler	= hps_wr_qp_event,
		.qp_context	= hs,
		.send_cq	= hs->cq->cq,
		.recv_cq	= hs->cq->cq,
		.cap = {
			/* + drain + probe; hps_zc_setup() adds zero copy's */
			.max_send_wr	 = hs->ntx + HPS_NCTRL + 2,
			/* + drain */
			.max_recv_wr	 = hps_rx_bufs(hs) + 1,
			.max_send_sge	 = 1,
			.max_recv_sge	 = 1,
			.max_inline_data = hs->inline_max,
		},
		.sq_sig_type	= IB_SIGNAL_REQ_WR,
		.qp_type	= IB_QPT_RC,
	};
	int err;

	hps_zc_setup(hs, &attr);

	err = rdma_create_qp(id, hs->dev->pd, &attr);
	if (err && hs->inline_max) {
		/* The device cannot inline that much: do without. */
		attr.cap.max_inline_data = 0;
		err = rdma_create_qp(id, hs->dev->pd, &attr);
	}
	if (err)
		return err;
	hs->inline_max = min(hs->inline_max, attr.cap.max_inline_data);
	hs->qp = id->qp;
	return 0;
}

/**
 * hps_wr_setup() - create the QP and buffers of a connection, post receives
 * @hs: the connection; hs->nrx, ntx, buf_size and inline_max are set
 * @id: its cm_id, with a resolved route (bound to a device)
 *
 * The buffers are charged to the namespace first (hps_mem_charge()); they
 * and the charge stay, whatever happens, until hps_wr_free_bufs() or the
 * socket's destruction (__hps_wr_free_bufs()).
 *
 * Context: connection work, socket lock held. On error the caller tears
 * down what was set up with hps_wr_teardown().
 * Return: 0, -ENOBUFS at the namespace's memory limit (net.hps.mem) or
 * with no room on the device's completion queues, or another -errno.
 */
int hps_wr_setup(struct hps_sock *hs, struct rdma_cm_id *id)
{
	struct ib_device *ibdev = id->device;
	unsigned long pages;
	struct hps_dev *dev;
	u32 i;
	int err;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (!ibdev)
		return -ENODEV;
	dev = hps_dev_get(ibdev);
	if (!dev)
		return -ENODEV;
	/* The queues: see hps_qp_create() and hps_zc_setup(). */
	err = hps_dev_reserve(dev, hs,
			      hs->ntx + HPS_NCTRL + 2 + hps_rx_bufs(hs) + 1 +
			      (hs->zc_thresh ? HPS_ZC_SQ_EXTRA : 0));
	if (err) {
		hps_dev_put(dev);
		return err;
	}

	/* A connection attempt starts without buffers (hps_conn_params()). */
	if (WARN_ON_ONCE(hs->mem_pages || hs->rx || hs->tx || hs->ctrl))
		return -EINVAL;
	pages = hps_wr_bufs_pages(hs);
	err = hps_mem_charge(hps_net(sock_net(&hs->sk)), pages);
	if (err)
		return err;
	hs->mem_pages = pages;

	hs->rx = hps_bufs_alloc(ibdev, hps_rx_bufs(hs), hs->buf_size,
				DMA_FROM_DEVICE, hps_recv_done);
	hs->tx = hps_bufs_alloc(ibdev, hs->ntx, hs->buf_size,
				DMA_TO_DEVICE, hps_send_done);
	hs->ctrl = hps_bufs_alloc(ibdev, HPS_NCTRL, HPS_CTRL_BUF,
				  DMA_TO_DEVICE, hps_ctrl_done);
	if (!hs->rx || !hs->tx || !hs->ctrl)
		return -ENOMEM;

	err = hps_qp_create(hs, id);
	if (err)
		return err;

	/* Nothing else posts yet: HPS_F_CONN_UP is still clear. */
	spin_lock_bh(&hs->lock);
	for (i = 0; i < hps_rx_bufs(hs) && !err; i++)
		err = hps_wr_post_recv(hs, &hs->rx[i]);
	spin_unlock_bh(&hs->lock);
	return err;
}

/**
 * hps_wr_teardown() - drain and destroy the QP, unmap the buffers
 * @hs: the connection
 *
 * The buffers stay allocated (received data can still be read) until the
 * socket is destroyed; those of a connection that never came up are freed
 * by the caller right after (__hps_teardown(), or hps_cm_conn_req() for a
 * refused passive child). Safe on a partially set up connection.
 *
 * Context: process (the connection work, or hps_cm_connect_work()
 * through hps_fail()), socket lock held.
 */
void hps_wr_teardown(struct hps_sock *hs)
{
	sock_owned_by_me(&hs->sk);
	might_sleep();

	spin_lock_bh(&hs->lock);
	clear_bit(HPS_F_CONN_UP, &hs->flags);	/* no more posting */
	spin_unlock_bh(&hs->lock);

	/*
	 * Receives are posted as soon as the QP exists (INIT), before the
	 * connection is up: if it never came up (rejected, failed, aborted),
	 * flush them too, or a driver that flushes them when the QP is
	 * destroyed (siw) completes them after the QP and buffers are gone
	 * (KASAN saw hps_recv_done() read a freed receive buffer). Nothing is
	 * on the send queue before the connection is up.
	 */
	if (hs->qp && test_bit(HPS_F_QP_READY, &hs->flags))
		ib_drain_qp(hs->qp);
	else if (hs->qp)
		ib_drain_rq(hs->qp);
	hps_inject_flush(hs);
	hps_zc_rx_reap(hs);	/* a killed reader's read has completed */
	hps_zc_teardown(hs);	/* every completion has run */
	hps_zc_tx_reap(hs);	/* a killed writer's MR is deregistered */
	if (hs->dev)
		hps_bufs_unmap(hs);
	if (hs->qp) {
		rdma_destroy_qp(hs->cm_id);
		hs->qp = NULL;
	}
	hps_dev_unreserve(hs);
}

/**
 * hps_wr_post_recv() - post one receive buffer
 * @hs: the connection
 * @b: one of its receive buffers
 *
 * Context: hs->lock held.
 * Return: 0 or -errno from the driver.
 */
int hps_wr_post_recv(struct hps_sock *hs, struct hps_buf *b)
{
	struct ib_sge sge = {
		.addr	= b->dma,
		.length	= hs->buf_size,
		.lkey	= hs->dev->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe		= &b->cqe,
		.sg_list	= &sge,
		.num_sge	= 1,
	};

	lockdep_assert_held(&hs->lock);
	b->len = 0;
	b->off = 0;
	ib_dma_sync_single_for_device(hs->dev->ibdev, b->dma, hs->buf_size,
				      DMA_FROM_DEVICE);
	return ib_post_recv(hs->qp, &wr, NULL);
}

/**
 * hps_wr_post_send() - post one message, consuming a credit
 * @hs: the connection; HPS_F_CONN_UP set, a credit available, or the
 *	peer's reserve for a message flagged %HPS_MSG_F_RESERVE
 * @b: a send or control buffer with @len payload bytes after the header
 * @type: enum hps_msg_type, ORed with %HPS_MSG_F_RESERVE to send into the
 *	  peer's reserve buffer instead of consuming a credit
 * @len: payload bytes
 *
 * Fills in the header, returning every pending credit to the peer and
 * acknowledging the peer's FIN and giving back its reserve if that is
 * owed.
 *
 * Context: hs->lock held.
 * Return: 0 or -errno from the driver.
 */
int hps_wr_post_send(struct hps_sock *hs, struct hps_buf *b, u8 type,
		     u32 len)
{
	struct hps_hdr *hdr = b->buf;
	u32 credits = min_t(u32, hs->rx_pending, U16_MAX);
	struct ib_sge sge = {
		.addr	= b->dma,
		.length	= HPS_HDR_LEN + len,
		.lkey	= hs->dev->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe		= &b->cqe,
		.sg_list	= &sge,
		.num_sge	= 1,
		.opcode		= IB_WR_SEND,
		.send_flags	= IB_SEND_SIGNALED,
	};
	int err;

	lockdep_assert_held(&hs->lock);
	hdr->version = HPS_PROTO_VERSION;
	hdr->type = type;
	if (test_bit(HPS_F_FIN_ACK_OWED, &hs->flags))
		hdr->type |= HPS_MSG_F_FIN_ACK;
	if (hs->rx_reserve_owed)
		hdr->type |= HPS_MSG_F_RESERVE_BACK;
	hdr->credits = cpu_to_be16(credits);
	hdr->len = cpu_to_be32(len);
	b->type = type & HPS_MSG_TYPE_MASK;
	if (sge.length <= hs->inline_max)
		wr.send_flags |= IB_SEND_INLINE;
	else
		ib_dma_sync_single_for_device(hs->dev->ibdev, b->dma,
					      sge.length, DMA_TO_DEVICE);
	err = ib_post_send(hs->qp, &wr, NULL);
	if (err) {
		pr_warn_ratelimited("post send failed: %d\n", err);
		return err;
	}
	/* Only once it is posted: after a failure it is still owed. */
	clear_bit(HPS_F_FIN_ACK_OWED, &hs->flags);
	hs->rx_reserve_owed = false;
	if (type & HPS_MSG_F_RESERVE)
		hs->peer_reserve = false;
	else
		hs->tx_credits--;
	hs->tx_msgs++;
	hs->rx_pending -= credits;
	if (!hs->rx_pending)
		hs->rx_pending_data = 0;
	return 0;
}

/**
 * hps_wr_post_probe() - post a keepalive probe
 * @hs: the connection; HPS_F_CONN_UP set, no probe in flight
 *
 * The probe is a zero-length RDMA WRITE: it needs no credit, consumes no
 * receive buffer and touches no memory at the peer (a zero-length RDMA
 * operation carries no valid address or key and none is checked), yet the
 * peer's RDMA device must acknowledge it. Over InfiniBand and RoCE it
 * completes when the peer's device has; if the peer is gone the
 * transport's retries run out and it completes with an error. Over iWARP
 * it completes once it has left this host, and a dead peer is found when
 * the TCP connection underneath gives up retransmitting it.
 *
 * Context: hs->lock held.
 * Return: 0 or -errno from the driver.
 */
int hps_wr_post_probe(struct hps_sock *hs)
{
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe		= &hs->ka_cqe,
			.opcode		= IB_WR_RDMA_WRITE,
			.send_flags	= IB_SEND_SIGNALED,
		},
	};

	lockdep_assert_held(&hs->lock);
	return ib_post_send(hs->qp, &wr.wr, NULL);
}

/**
 * hps_hello_fill() - the hello this end sends in its CM private data
 * @hs: the connection
 * @h: filled in
 */
void hps_hello_fill(struct hps_sock *hs, struct hps_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_be32(HPS_HELLO_MAGIC);
	h->version = HPS_PROTO_VERSION;
	h->credits = cpu_to_be32(hs->nrx);
	h->buf_size = cpu_to_be32(hs->buf_size);
}

/**
 * hps_hello_check() - validate the peer's hello and take its parameters
 * @hs: the connection
 * @pdata: the private data received
 * @len: its length
 *
 * Return: 0, or -EPROTO if the hello is not acceptable.
 */
int hps_hello_check(struct hps_sock *hs, const void *pdata, u8 len)
{
	const struct hps_hello *h = pdata;
	u32 credits, buf_size;

	if (!pdata || len < sizeof(*h))
		return -EPROTO;
	if (be32_to_cpu(h->magic) != HPS_HELLO_MAGIC)
		return -EPROTO;
	if (h->version != HPS_PROTO_VERSION) {
		pr_info_ratelimited("peer speaks protocol version %u, this end %u\n",
				    h->version, HPS_PROTO_VERSION);
		return -EPROTO;
	}
	if (h->flags || h->reserved)
		return -EPROTO;
	credits = be32_to_cpu(h->credits);
	buf_size = be32_to_cpu(h->buf_size);
	if (credits < HPS_CREDITS_MIN || credits > HPS_CREDITS_MAX ||
	    buf_size < HPS_BUF_MIN || buf_size > HPS_BUF_MAX)
		return -EPROTO;

	spin_lock_bh(&hs->lock);
	hs->peer_credits_max = credits;
	hs->tx_credits = credits;
	hs->peer_reserve = true;
	hs->peer_buf_size = buf_size;
	hs->msg_max = min(buf_size, hs->buf_size) - HPS_HDR_LEN;
	spin_unlock_bh(&hs->lock);
	return 0;
}
