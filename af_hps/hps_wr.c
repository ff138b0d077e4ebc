// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Work requests: the QP of a connection, its DMA-mapped bounce buffers,
 * posting of receives and sends, the hello exchanged in the CM private data
 * and the drain on teardown.
 *
 * Buffers follow use (protocol version 5, Documentation/protocol.rst): a
 * connection starts with %HPS_CREDITS_MIN receive buffers of class 0 and
 * the reserve's (HPS_MSG_F_RESERVE, hps_tx.c), one page each, and no send
 * buffers. The receive window grows to @nrx buffers of @buf_size bytes
 * while the peer has more to send, and goes back when no data moved for
 * a while (hps_rx.c); send buffers are allocated by the writer that needs
 * them and freed when the connection is idle (hps_tx.c). Every buffer is
 * pages of its own (a power of two, charged to the socket's memory
 * cgroup), DMA-mapped while the connection is up. Descriptors for the
 * largest window are allocated at setup: @nrx + HPS_RX_RESERVE receive
 * and @ntx send descriptors, HPS_NCTRL header-only control buffers and
 * @ntx DATA headers (a DATA message is two pieces: its header, and the
 * bytes from a send buffer, which may go out in several messages). The
 * QP's queues have one more slot each for ib_drain_qp(), the send queue
 * one more for the keepalive probe, and the CQ reservation counts them.
 *
 * The buffers' pages are charged to the connection's namespace (hps_mem.c,
 * net.hps.mem) before they are allocated and uncharged when they are
 * freed: a connection that would take the namespace over its limit is not
 * set up (-ENOBUFS), and a window that would is not grown. Not charged:
 * the control buffers and DATA headers (HPS_CTRL_BUF and HPS_HDR_LEN
 * bytes each) and the descriptor arrays (one struct hps_buf, 64 bytes on
 * x86-64, per buffer): at the default 16 credits, under a page.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "hps.h"
#include "hps_trace.h"

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

/*
 * A receive buffer's bytes were synced for the CPU as they came
 * (hps_recv_done()), and the CPU may have copied more behind them since
 * (hps_rx_coalesce(), hps_rx_collapse()) for a reader still to read:
 * unmapped without a sync, which would copy a bounce buffer's stale bytes
 * over them (swiotlb) or drop them from the cache.
 */
static void hps_buf_unmap(struct ib_device *ibdev, struct hps_buf *b,
			  enum dma_data_direction dir)
{
	if (!b->dma)
		return;
	if (dir == DMA_FROM_DEVICE && !ib_uses_virt_dma(ibdev))
		dma_unmap_single_attrs(ibdev->dma_device, b->dma, b->size, dir,
				       DMA_ATTR_SKIP_CPU_SYNC);
	else
		ib_dma_unmap_single(ibdev, b->dma, b->size, dir);
	b->dma = 0;
}

static void hps_bufs_unmap(struct hps_sock *hs)
{
	struct ib_device *ibdev = hs->dev->ibdev;
	u32 i;

	for (i = 0; hs->rx && i < hps_rx_bufs(hs); i++)
		hps_buf_unmap(ibdev, &hs->rx[i], DMA_FROM_DEVICE);
	for (i = 0; hs->tx && i < hs->ntx; i++)
		hps_buf_unmap(ibdev, &hs->tx[i], DMA_TO_DEVICE);
	for (i = 0; hs->ctrl && i < HPS_NCTRL; i++)
		hps_buf_unmap(ibdev, &hs->ctrl[i], DMA_TO_DEVICE);
	if (hs->tx_hdr_dma) {
		ib_dma_unmap_single(ibdev, hs->tx_hdr_dma,
				    hs->ntx * HPS_HDR_LEN, DMA_TO_DEVICE);
		hs->tx_hdr_dma = 0;
	}
}

/* Pages one buffer of @size bytes takes (hps_wr_buf_alloc()). */
static unsigned long hps_wr_buf_pages(u32 size)
{
	return 1UL << get_order(size);
}

/* Free the pages of a buffer, already unmapped. Context: any. */
static void hps_buf_free_pages(struct hps_buf *b)
{
	if (b->buf)
		free_pages((unsigned long)b->buf, get_order(b->size));
	b->buf = NULL;
	b->size = 0;
}

/* Free an array of descriptors and their buffers' pages (unmapped). */
static void hps_bufs_free(struct hps_buf *bufs, u32 n)
{
	u32 i;

	if (!bufs)
		return;
	for (i = 0; i < n; i++)
		hps_buf_free_pages(&bufs[i]);
	kfree(bufs);
}

/* The control buffers: kmalloc()ed, not pages. */
static void hps_ctrl_free(struct hps_buf *bufs)
{
	u32 i;

	if (!bufs)
		return;
	for (i = 0; i < HPS_NCTRL; i++)
		kfree(bufs[i].buf);
	kfree(bufs);
}

/* What hps_wr_setup() and the buffers' users allocated, off a socket. */
struct hps_wr_bufs {
	struct hps_buf		*rx;
	struct hps_buf		*tx;
	struct hps_buf		*ctrl;
	struct hps_hdr		*tx_hdr;
	struct hps_tx_wr	*tx_wr;
	struct hps_cr_run	*tx_cr;
	u32			nrx;
	u32			ntx;
	unsigned long		pages;
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
	b->tx_hdr = hs->tx_hdr;
	b->tx_wr = hs->tx_wr;
	b->tx_cr = hs->tx_cr;
	b->nrx = hps_rx_bufs(hs);
	b->ntx = hs->ntx;
	b->pages = hs->mem_pages;
	hs->rx = NULL;
	hs->tx = NULL;
	hs->ctrl = NULL;
	hs->tx_hdr = NULL;
	hs->tx_wr = NULL;
	hs->tx_cr = NULL;
	hs->tx_cr_cap = 0;
	hs->tx_cr_first = 0;
	hs->tx_cr_nruns = 0;
	hs->nrx = 0;
	hs->ntx = 0;
	hs->rx_nbuf = 0;
	WRITE_ONCE(hs->tx_pages, 0);
	WRITE_ONCE(hs->mem_pages, 0);
}

/*
 * Free buffers taken off @hs and give their charge back to its namespace.
 * Context: any; takes no lock.
 */
static void hps_wr_bufs_put(struct hps_sock *hs, struct hps_wr_bufs *b)
{
	hps_bufs_free(b->rx, b->nrx);
	hps_bufs_free(b->tx, b->ntx);
	hps_ctrl_free(b->ctrl);
	kfree(b->tx_hdr);
	kfree(b->tx_wr);
	kfree(b->tx_cr);
	hps_mem_uncharge(hps_net(sock_net(&hs->sk)), b->pages);
}

/**
 * __hps_wr_free_bufs() - free a socket's buffers as it is destroyed
 * @hs: the socket; its last reference is gone
 *
 * Gives back what was charged for them, if hps_wr_free_bufs() did not.
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
 * up, which nobody may read), the lists of buffers waiting to be posted,
 * the peer's SRCAVAIL and the ring indices, reset under hs->lock since
 * poll(), ioctl() and sock_diag read them under that lock alone; the
 * buffers are freed after it. A second call finds nothing to free or
 * uncharge.
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
	INIT_LIST_HEAD(&hs->rx_wait);
	INIT_LIST_HEAD(&hs->rx_park);
	hs->zc_rx = NULL;
	WRITE_ONCE(hs->rx_queued, 0);
	hs->rx_nready = 0;
	hs->rx_pending = 0;
	hs->rx_pending_data = 0;
	hs->rx_out = 0;
	hs->tx_done = 0;
	hs->tx_posted = 0;
	hs->tx_fill = 0;
	hs->tx_wr_head = 0;
	hs->tx_wr_out = 0;
	hs->tx_wr_sig = 0;
	hs->tx_ack_mark = 0;
	hs->tx_nagle_met = false;
	hs->tx_nagle_met_before = false;
	hs->fence_out = false;
	hs->cover_wanted = false;
	hs->cover_soon = false;
	hs->ut_grace = false;
	WRITE_ONCE(hs->tx_queued, 0);
	hs->ctrl_head = 0;
	hs->ctrl_done = 0;
	spin_unlock_bh(&hs->lock);
	hps_wr_bufs_put(hs, &b);
}

/**
 * hps_wr_buf_alloc() - give a descriptor a buffer
 * @hs: the connection, with its device
 * @b: a descriptor without a buffer
 * @size: bytes
 * @dir: DMA_FROM_DEVICE for a receive buffer, DMA_TO_DEVICE for a send
 *	 buffer
 * @more: a buffer beyond the connection's first ones (a window that
 *	  grows, a larger send buffer): not worth reclaim, let alone the
 *	  OOM killer; the connection goes on without it
 *
 * The pages (a power of two, zeroed) are charged to the namespace
 * (net.hps.mem) first, and to the memory cgroup of the socket's owner
 * (hps_sock.memcg), whichever task allocates them.
 *
 * Context: process, may sleep; socket lock held.
 * Return: 0, -ENOBUFS at the namespace's limit or -ENOMEM.
 */
int hps_wr_buf_alloc(struct hps_sock *hs, struct hps_buf *b, u32 size,
		     enum dma_data_direction dir, bool more)
{
	struct hps_net *hn = hps_net(sock_net(&hs->sk));
	unsigned int order = get_order(size);
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_NOWARN | __GFP_ZERO;
	struct mem_cgroup *old;
	struct page *page;
	int err;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (WARN_ON_ONCE(b->buf || !hs->dev))
		return -EINVAL;
	err = hps_mem_charge(hn, 1UL << order);
	if (err)
		return err;
	/*
	 * Growth tries once; a connection's first buffers try harder, but
	 * neither calls the OOM killer: at its memory cgroup's limit a
	 * connection fails with ENOBUFS, and kills no process for its
	 * buffers (the socket's owner, whose cgroup it is, would be the one).
	 */
	gfp |= more ? __GFP_NORETRY : __GFP_RETRY_MAYFAIL;
	old = set_active_memcg(hs->memcg);
	page = alloc_pages(gfp, order);
	set_active_memcg(old);
	if (!page)
		goto out_uncharge;
	b->buf = page_address(page);
	b->size = size;
	b->dma = ib_dma_map_single(hs->dev->ibdev, b->buf, size, dir);
	if (ib_dma_mapping_error(hs->dev->ibdev, b->dma)) {
		b->dma = 0;
		hps_buf_free_pages(b);
		goto out_uncharge;
	}
	WRITE_ONCE(hs->mem_pages, hs->mem_pages + (1UL << order));
	return 0;

out_uncharge:
	hps_mem_uncharge(hn, 1UL << order);
	return -ENOMEM;
}

/**
 * hps_wr_buf_free() - take a descriptor's buffer away
 * @hs: the connection
 * @b: a descriptor whose buffer no work request uses
 * @dir: as for hps_wr_buf_alloc()
 *
 * Context: process, socket lock held.
 */
void hps_wr_buf_free(struct hps_sock *hs, struct hps_buf *b,
		     enum dma_data_direction dir)
{
	unsigned long pages;

	sock_owned_by_me(&hs->sk);
	if (!b->buf)
		return;
	pages = hps_wr_buf_pages(b->size);
	if (b->dma && hs->dev)
		hps_buf_unmap(hs->dev->ibdev, b, dir);
	hps_buf_free_pages(b);
	WRITE_ONCE(hs->mem_pages, hs->mem_pages - pages);
	hps_mem_uncharge(hps_net(sock_net(&hs->sk)), pages);
}

static struct hps_buf *hps_descs_alloc(u32 n,
				       void (*done)(struct ib_cq *cq,
						    struct ib_wc *wc))
{
	struct hps_buf *bufs;
	u32 i;

	bufs = kcalloc(n, sizeof(*bufs), GFP_KERNEL);
	if (!bufs)
		return NULL;
	for (i = 0; i < n; i++) {
		INIT_LIST_HEAD(&bufs[i].list);
		bufs[i].cqe.done = done;
	}
	return bufs;
}

static struct hps_buf *hps_ctrl_alloc(struct ib_device *ibdev)
{
	struct hps_buf *bufs;
	u32 i;

	bufs = hps_descs_alloc(HPS_NCTRL, hps_ctrl_done);
	if (!bufs)
		return NULL;
	for (i = 0; i < HPS_NCTRL; i++) {
		struct hps_buf *b = &bufs[i];

		b->buf = kzalloc(HPS_CTRL_BUF, GFP_KERNEL);
		if (!b->buf)
			goto out_free;
		b->size = HPS_CTRL_BUF;
		b->dma = ib_dma_map_single(ibdev, b->buf, HPS_CTRL_BUF,
					   DMA_TO_DEVICE);
		if (ib_dma_mapping_error(ibdev, b->dma)) {
			b->dma = 0;
			goto out_free;
		}
	}
	return bufs;

out_free:
	for (i = 0; i < HPS_NCTRL; i++)
		hps_buf_unmap(ibdev, &bufs[i], DMA_TO_DEVICE);
	hps_ctrl_free(bufs);
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
			/*
			 * + drain + probe + fence; hps_zc_setup() adds zero
			 * copy's
			 */
			.max_send_wr	 = hs->ntx + HPS_NCTRL + 3,
			/* + drain */
			.max_recv_wr	 = hps_rx_bufs(hs) + 1,
			/* DATA: its header and its bytes */
			.max_send_sge	 = 2,
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
 * The first receive buffers are charged to the namespace first
 * (hps_mem_charge()); they and the charge stay, whatever happens, until
 * hps_wr_free_bufs() or the socket's destruction (__hps_wr_free_bufs()).
 *
 * Context: connection work, socket lock held. On error the caller tears
 * down what was set up with hps_wr_teardown().
 * Return: 0, -ENOBUFS at the namespace's memory limit (net.hps.mem) or
 * with no room on the device's completion queues, or another -errno.
 */
int hps_wr_setup(struct hps_sock *hs, struct rdma_cm_id *id)
{
	struct ib_device *ibdev = id->device;
	u32 first = HPS_CREDITS_MIN + HPS_RX_RESERVE;
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
			      hs->ntx + HPS_NCTRL + 3 + hps_rx_bufs(hs) + 1 +
			      (hs->zc_thresh ? HPS_ZC_SQ_EXTRA : 0));
	if (err) {
		hps_dev_put(dev);
		return err;
	}

	/* A connection attempt starts without buffers (hps_conn_params()). */
	if (WARN_ON_ONCE(hs->mem_pages || hs->rx || hs->tx || hs->ctrl ||
			 hs->tx_hdr || hs->tx_wr))
		return -EINVAL;
	hs->rx = hps_descs_alloc(hps_rx_bufs(hs), hps_recv_done);
	/* DATA completes through tx_wr[] (hps_wr_post_data()) */
	hs->tx = hps_descs_alloc(hs->ntx, NULL);
	hs->ctrl = hps_ctrl_alloc(ibdev);
	hs->tx_hdr = kcalloc(hs->ntx, HPS_HDR_LEN, GFP_KERNEL);
	hs->tx_wr = kcalloc(hs->ntx, sizeof(*hs->tx_wr), GFP_KERNEL);
	if (!hs->rx || !hs->tx || !hs->ctrl || !hs->tx_hdr || !hs->tx_wr)
		return -ENOMEM;
	for (i = 0; i < hs->ntx; i++)
		hs->tx_wr[i].cqe.done = hps_send_done;
	hs->tx_hdr_dma = ib_dma_map_single(ibdev, hs->tx_hdr,
					   hs->ntx * HPS_HDR_LEN,
					   DMA_TO_DEVICE);
	if (ib_dma_mapping_error(ibdev, hs->tx_hdr_dma)) {
		hs->tx_hdr_dma = 0;
		return -ENOMEM;
	}
	/* The first window: class 0, and the reserve. */
	for (i = 0; i < first; i++) {
		err = hps_wr_buf_alloc(hs, &hs->rx[i],
				       hps_cls_bytes(hs->buf_size, 0),
				       DMA_FROM_DEVICE, false);
		if (err)
			return err;
		hs->rx[i].cls = 0;
		hs->rx[i].ann = 0;	/* the hello announces them so */
	}
	/* and the send buffer a writer can always count on (hps_tx.c) */
	err = hps_wr_buf_alloc(hs, &hs->tx[0], PAGE_SIZE, DMA_TO_DEVICE, false);
	if (err)
		return err;
	hs->tx_pages = 1;

	err = hps_qp_create(hs, id);
	if (err)
		return err;

	/* Nothing else posts yet: HPS_F_CONN_UP is still clear. */
	spin_lock_bh(&hs->lock);
	hs->rx_top = hps_top_cls(hs->buf_size);
	hs->rx_max_cls = hs->rx_top;
	hs->rx_max_win = hs->nrx;
	hs->rx_shrinks = 0;
	hs->rx_want = 0;
	hs->rx_cls = 0;
	hs->rx_win = HPS_CREDITS_MIN;
	hs->rx_nbuf = first;
	hs->rx_out = HPS_CREDITS_MIN;	/* the hello announces them */
	hs->rx_data_stamp = jiffies;
	hs->tx_data_stamp = jiffies;
	for (i = 0; i < first && !err; i++)
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
		.length	= b->size,
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
	ib_dma_sync_single_for_device(hs->dev->ibdev, b->dma, b->size,
				      DMA_FROM_DEVICE);
	return ib_post_recv(hs->qp, &wr, NULL);
}

/*
 * Fill in the header of a message: every pending credit goes back to the
 * peer, with their class, and the FIN acknowledgment and the reserve's
 * return if they are owed. Context: hs->lock held.
 * Return: the credits it returns.
 */
static u32 hps_wr_hdr(struct hps_sock *hs, struct hps_hdr *hdr, u8 type,
		      u32 len)
{
	/* at most HPS_CREDITS_MAX are ever pending */
	u32 credits = min_t(u32, hs->rx_pending, HPS_CR_COUNT);

	lockdep_assert_held(&hs->lock);
	hdr->version = HPS_PROTO_VERSION;
	hdr->type = type;
	if (test_bit(HPS_F_FIN_ACK_OWED, &hs->flags))
		hdr->type |= HPS_MSG_F_FIN_ACK;
	if (hs->rx_reserve_owed)
		hdr->type |= HPS_MSG_F_RESERVE_BACK;
	hdr->credits = cpu_to_be16(credits |
				   (credits ? hs->rx_cls << HPS_CR_CLS_SHIFT :
				    0));
	hdr->len = cpu_to_be32(len);
	return credits;
}

/*
 * A message with header @hdr (returning @credits) was posted: what it
 * said is no longer owed, and it took the peer's oldest buffer.
 * Context: hs->lock held.
 */
static void hps_wr_sent(struct hps_sock *hs, const struct hps_hdr *hdr,
			u32 credits)
{
	lockdep_assert_held(&hs->lock);
	trace_hps_msg_send(hs, hdr->type, be32_to_cpu(hdr->len), credits,
			   be16_to_cpu(hdr->credits) >> HPS_CR_CLS_SHIFT);
	if (hdr->type & HPS_MSG_F_FIN_ACK)
		clear_bit(HPS_F_FIN_ACK_OWED, &hs->flags);
	if (hdr->type & HPS_MSG_F_RESERVE_BACK) {
		hs->rx_reserve_owed = false;
		hs->rx_reserve_taken = false;
	}
	hs->rx_out += credits;
	if (hdr->type & HPS_MSG_F_RESERVE)
		hs->peer_reserve = false;
	else
		hs->tx_credits--;
	hps_tx_cr_pop(hs);
	if (hs->tx_pad)
		hs->tx_pad--;	/* one of the buffers to give back, filled */
	hs->tx_msgs++;
	hs->rx_pending -= min_t(u32, hs->rx_pending, HPS_CR_COUNT);
	if (!hs->rx_pending)
		hs->rx_pending_data = 0;
	/*
	 * A new batch may start: buffers of another class, or posted after
	 * the reserve, waited for it.
	 */
	if (!hs->rx_pending && !list_empty(&hs->rx_wait))
		hps_rx_post_waiting(hs);
}

/**
 * hps_wr_post_send() - post one control message, consuming a credit
 * @hs: the connection; HPS_F_CONN_UP set, a credit available, or the
 *	peer's reserve for a message flagged %HPS_MSG_F_RESERVE
 * @b: a control buffer with @len payload bytes after the header
 * @type: enum hps_msg_type, ORed with %HPS_MSG_F_RESERVE to send into the
 *	  peer's reserve buffer instead of consuming a credit
 * @len: payload bytes
 *
 * Fills in the header (hps_wr_hdr()).
 *
 * Context: hs->lock held.
 * Return: 0 or -errno from the driver.
 */
int hps_wr_post_send(struct hps_sock *hs, struct hps_buf *b, u8 type,
		     u32 len)
{
	struct hps_hdr *hdr = b->buf;
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
	u32 credits;
	int err;

	lockdep_assert_held(&hs->lock);
	credits = hps_wr_hdr(hs, hdr, type, len);
	b->type = type & HPS_MSG_TYPE_MASK;
	b->mark = hs->tx_wr_head;	/* the DATA before it complete with it */
	if (sge.length <= hs->inline_max) {
		/* the device copies it now, from the kernel address */
		wr.send_flags |= IB_SEND_INLINE;
		sge.addr = (uintptr_t)b->buf;
	} else {
		ib_dma_sync_single_for_device(hs->dev->ibdev, b->dma,
					      sge.length, DMA_TO_DEVICE);
	}
	err = ib_post_send(hs->qp, &wr, NULL);
	if (err) {
		pr_warn_ratelimited("post send failed: %d\n", err);
		return err;
	}
	hs->tx_wr_sig = hs->tx_wr_head;
	/* Only once it is posted: after a failure it is still owed. */
	hps_wr_sent(hs, hdr, credits);
	return 0;
}

/**
 * hps_wr_post_data() - post the next piece of a send buffer as DATA
 * @hs: the connection; HPS_F_CONN_UP set, a credit available, and fewer
 *	than @ntx DATA work requests in flight
 * @b: the send buffer; bytes [@b->sent, @b->sent + @len) go
 * @len: payload bytes, at most what the peer's next buffer takes
 * @more: more bytes wait to be sent behind these (%HPS_MSG_F_MORE)
 * @ask: ask for its completion whatever the rule below says
 *
 * The message is two pieces, the next of the @ntx DATA headers and the
 * bytes in @b. One message in every @ntx / 2 asks for its completion, and
 * so does the one that takes the last free send buffer (and every one
 * with TCP_USER_TIMEOUT set, which counts from the last, and those the
 * caller asks for: @ask, and every one of a page or more on a device
 * that needs it: hps_dev.sig_large); the others complete with a later
 * completion
 * (hps_tx_retire()), or with a fence when someone waits for them
 * (hps_tx_cover()) or none came for HPS_TX_COVER_DELAY (the cover
 * timer). So at most @ntx / 2 - 1 work requests have no completion
 * coming, fewer than the @ntx the send queue holds: one that fills it
 * always has one.
 *
 * Context: hs->lock held.
 * Return: 0 or -errno from the driver.
 */
int hps_wr_post_data(struct hps_sock *hs, struct hps_buf *b, u32 len,
		     bool more, bool ask)
{
	u32 slot = hs->tx_wr_head % hs->ntx;
	struct hps_hdr *hdr = &hs->tx_hdr[slot];
	u64 hdr_dma = hs->tx_hdr_dma + slot * HPS_HDR_LEN;
	struct ib_sge sge[2] = {
		{
			.addr	= hdr_dma,
			.length	= HPS_HDR_LEN,
			.lkey	= hs->dev->pd->local_dma_lkey,
		}, {
			.addr	= b->dma + b->sent,
			.length	= len,
			.lkey	= hs->dev->pd->local_dma_lkey,
		},
	};
	struct ib_send_wr wr = {
		.wr_cqe		= &hs->tx_wr[slot].cqe,
		.sg_list	= sge,
		.num_sge	= 2,
		.opcode		= IB_WR_SEND,
	};
	bool signaled;
	u32 credits;
	int err;

	lockdep_assert_held(&hs->lock);
	if (WARN_ON_ONCE(hs->tx_wr_out >= hs->ntx || !len ||
			 len > b->len - b->sent))
		return -EINVAL;
	credits = hps_wr_hdr(hs, hdr, HPS_MSG_DATA |
			     (more ? HPS_MSG_F_MORE : 0), len);
	b->type = HPS_MSG_DATA;
	hs->tx_wr[slot].seq = hs->tx_wr_head;
	/* TCP_USER_TIMEOUT counts from the last completion: each one asks */
	signaled = hs->tx_wr_head + 1 - hs->tx_wr_sig >= max(hs->ntx / 2, 1U) ||
		   (len == b->len - b->sent &&
		    hs->tx_fill + 1 - hs->tx_done >= hs->ntx) ||
		   READ_ONCE(hs->user_timeout) || ask ||
		   (hs->dev->sig_large && HPS_HDR_LEN + len >= PAGE_SIZE);
	if (signaled)
		wr.send_flags |= IB_SEND_SIGNALED;
	if (HPS_HDR_LEN + len <= hs->inline_max) {
		/* the device copies it now, from the kernel addresses */
		wr.send_flags |= IB_SEND_INLINE;
		sge[0].addr = (uintptr_t)hdr;
		sge[1].addr = (uintptr_t)(b->buf + b->sent);
	} else {
		ib_dma_sync_single_for_device(hs->dev->ibdev, hdr_dma,
					      HPS_HDR_LEN, DMA_TO_DEVICE);
		ib_dma_sync_single_for_device(hs->dev->ibdev,
					      b->dma + b->sent, len,
					      DMA_TO_DEVICE);
	}
	err = ib_post_send(hs->qp, &wr, NULL);
	if (err) {
		pr_warn_ratelimited("post send failed: %d\n", err);
		return err;
	}
	hps_wr_sent(hs, hdr, credits);
	hs->tx_wr_head++;
	hs->tx_wr_out++;
	b->sent += len;
	b->pieces++;
	if (signaled) {
		hs->tx_wr_sig = hs->tx_wr_head;
	} else {
		if (hs->tx_wr_sig + 1 == hs->tx_wr_head)
			hs->tx_uncov_stamp = jiffies;	/* the first without */
		hps_stat_inc(sock_net(&hs->sk), HPS_STAT_TX_UNSIGNALED);
		hps_tx_cover_arm(hs);
	}
	return 0;
}

/**
 * hps_wr_post_zero_write() - post a signaled zero-length RDMA WRITE
 * @hs: the connection; HPS_F_CONN_UP set
 * @cqe: whose done callback takes its completion: hps_sock.ka_cqe for a
 *	keepalive probe (hps_tx_keepalive()), hps_sock.fence_cqe for a send
 *	fence (hps_tx_cover()); one of each in flight at most
 *
 * A zero-length RDMA WRITE needs no credit, consumes no receive buffer
 * and touches no memory at the peer (a zero-length RDMA operation carries
 * no valid address or key and none is checked), yet the peer's RDMA
 * device must acknowledge it, and it completes only once every work
 * request posted before it has. Over InfiniBand and RoCE it completes
 * when the peer's device has; if the peer is gone the transport's retries
 * run out and it completes with an error. Over iWARP it completes once it
 * has left this host, and a dead peer is found when the TCP connection
 * underneath gives up retransmitting it.
 *
 * Context: hs->lock held.
 * Return: 0 or -errno from the driver.
 */
int hps_wr_post_zero_write(struct hps_sock *hs, struct ib_cqe *cqe)
{
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe		= cqe,
			.opcode		= IB_WR_RDMA_WRITE,
			.send_flags	= IB_SEND_SIGNALED,
		},
	};
	int err;

	lockdep_assert_held(&hs->lock);
	err = ib_post_send(hs->qp, &wr.wr, NULL);
	if (err)
		pr_warn_ratelimited("zero-length RDMA WRITE (%ps) failed: %d\n",
				    cqe->done, err);
	return err;
}

/**
 * hps_hello_fill() - the hello this end sends in its CM private data
 * @hs: the connection
 * @h: filled in
 * @port: the port the active side connected to (the listener's)
 */
void hps_hello_fill(struct hps_sock *hs, struct hps_hello *h, u16 port)
{
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_be32(HPS_HELLO_MAGIC);
	h->version = HPS_PROTO_VERSION;
	h->port = cpu_to_be16(port);
	h->credits = cpu_to_be32(hs->nrx);
	h->buf_size = cpu_to_be32(hs->buf_size);
}

/**
 * hps_hello_check() - validate the peer's hello and take its parameters
 * @hs: the connection
 * @pdata: the private data received
 * @len: its length
 * @port: the port the active side connected to (the listener's): a hello
 *	  for another port is not for this listener, nor from its client
 *	  (over iWARP, a client's remembered RDMA port may have been taken
 *	  by another listener since: hps_portq.c)
 *
 * The peer starts with %HPS_CREDITS_MIN buffers of class 0 for us, and its
 * reserve's.
 *
 * Context: process (connection work), socket lock held.
 * Return: 0, -EPROTO if the hello is not acceptable, or -ENOMEM.
 */
int hps_hello_check(struct hps_sock *hs, const void *pdata, u8 len, u16 port)
{
	const struct hps_hello *h = pdata;
	struct hps_cr_run *cr;
	u32 credits, buf_size;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (!pdata || len < sizeof(*h))
		return -EPROTO;
	if (be32_to_cpu(h->magic) != HPS_HELLO_MAGIC)
		return -EPROTO;
	if (h->version != HPS_PROTO_VERSION) {
		pr_info_ratelimited("peer speaks protocol version %u, this end %u\n",
				    h->version, HPS_PROTO_VERSION);
		return -EPROTO;
	}
	if (h->flags)
		return -EPROTO;
	if (be16_to_cpu(h->port) != port) {
		pr_info_ratelimited("hello for port %u, not %u\n",
				    be16_to_cpu(h->port), port);
		return -EPROTO;
	}
	credits = be32_to_cpu(h->credits);
	buf_size = be32_to_cpu(h->buf_size);
	if (credits < HPS_CREDITS_MIN || credits > HPS_CREDITS_MAX ||
	    buf_size < HPS_BUF_MIN || buf_size > HPS_BUF_MAX)
		return -EPROTO;
	/* a run per buffer at most: the window and the reserve */
	cr = kcalloc(credits + HPS_RX_RESERVE, sizeof(*cr), GFP_KERNEL);
	if (!cr)
		return -ENOMEM;

	spin_lock_bh(&hs->lock);
	swap(hs->tx_cr, cr);
	hs->tx_cr_cap = credits + HPS_RX_RESERVE;
	hs->tx_cr_first = 0;
	hs->tx_cr_nruns = 0;
	hs->peer_credits_max = credits;
	hs->tx_credits = 0;
	hs->peer_reserve = false;
	hps_tx_cr_push(hs, HPS_CREDITS_MIN + HPS_RX_RESERVE, 0);
	hs->tx_credits = HPS_CREDITS_MIN;
	hs->peer_reserve = true;
	hs->peer_buf_size = buf_size;
	hs->peer_top = hps_top_cls(buf_size);
	spin_unlock_bh(&hs->lock);
	kfree(cr);
	return 0;
}
