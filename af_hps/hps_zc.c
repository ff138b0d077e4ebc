// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Zero-copy transfers (Documentation/zcopy.rst).
 *
 * A blocking send of at least zc_thresh bytes from user memory pins the
 * pages, registers them with fast registration (IB_WR_REG_MR, remote read
 * only, a fresh key each time) and advertises them in a SRCAVAIL message,
 * which takes the place of those bytes in the stream. The REG_MR is
 * posted on an idle send queue and the SRCAVAIL only once it has
 * completed: rxe as in Debian's 6.1 executes a REG_MR again when a
 * retransmission rewinds its send queue over it before it was completed,
 * finds the MR registered and stops the QP without an error completion
 * (Documentation/zcopy.rst). A send queue that does not go idle within
 * HPS_ZC_IDLE_TIMEOUT (readers of the same socket reading back to back)
 * sends by copy instead. The receiver pulls
 * them with RDMA Read (rdma_rw) straight into the pinned pages of a large
 * enough blocking read, in as many pieces as the reads ask for, and answers
 * RDMA_DONE once all were read. A read that cannot take them that way
 * (non-blocking, MSG_PEEK, small, kernel memory) answers SENDSM instead:
 * the sender sends the rest by copy, behind the SRCAVAIL in the stream.
 * A sender that waits too long (the peer is not reading), is interrupted
 * or times out sends CANCEL, and the receiver answers at once from its
 * completion handler, so that two writers facing each other fall back to
 * buffering rather than deadlock. Only then, and only after a LOCAL_INV
 * has completed (or the QP was drained and the MR deregistered), are the
 * pages unpinned and send() returns.
 *
 * One zero-copy send and one zero-copy read per connection are under way
 * at a time, each with a single owner. A writer owns the sending side
 * (HPS_F_ZC_TX_OWNED: zc_mr, its keys, the SRCAVAIL and its answer) from
 * before it touches the MR until the key is revoked and its pages are
 * unmapped; other writers, and poll's EPOLLOUT, wait for it (hps_tx_room())
 * so that nothing is posted behind its bytes, and so does a FIN. A reader
 * owns the receiving side (HPS_F_ZC_RX_BUSY: zc_rw, zc_rd_*) from before it
 * reads the SRCAVAIL's address until it has given the pages back; other
 * readers, peeking ones included, wait for it (hps_rx_readable()). Both
 * wait for their turn interruptibly, with the socket's timeouts.
 *
 * Waits the peer can prolong are bounded and killable: the REG_MR's
 * completion (on an idle queue it completes at once), the answer to a
 * SRCAVAIL and the LOCAL_INV's completion. A writer whose
 * CANCEL goes unanswered for HPS_ZC_REPLY_TIMEOUT, or for another
 * HPS_ZC_CANCEL_TIMEOUT once it is killed, aborts the connection: its
 * pages cannot be given back while the peer may still read them. So does
 * one whose key is not revoked within those times: it leaves, and connd
 * gives its pages back after the teardown (hps_zc_tx_reap()). A reader
 * killed while its RDMA Read is in flight leaves at once: the read is
 * orphaned, its bytes do not count as read (the next reader reads them
 * again), and connd gives its pages back when the completion comes; a read
 * that takes HPS_ZC_REPLY_TIMEOUT aborts the connection, orphaned or not.
 * Other signals do not end a read in flight (the device would write into
 * the buffer after recv() returned): it completes within that bound.
 *
 * State: HPS_F_ZC_* bits and the zc_* fields of struct hps_sock, under
 * hs->lock unless their comment says otherwise.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "hps.h"
#include "hps_trace.h"

static void hps_zc_wake(struct sock *sk)
{
	struct socket_wq *wq;

	rcu_read_lock();
	wq = rcu_dereference(sk->sk_wq);
	if (skwq_has_sleeper(wq))
		wake_up_all(&wq->wait);
	rcu_read_unlock();
}

/*
 * Sleep without the socket lock until @cond(@hs), at the latest until
 * @deadline (jiffies); in @state TASK_KILLABLE a fatal signal ends the
 * wait too. Other signals are ignored: pages the device may still access
 * cannot be handed back early. Completion handlers wake us (hps_zc_wake());
 * a 100 ms tick covers the wakeups of connection errors, which wake
 * interruptible sleepers only. Socket lock held around it.
 * Return: 0 once @cond holds, -ETIMEDOUT at the deadline, -EINTR on a
 * fatal signal.
 */
static int hps_zc_wait(struct hps_sock *hs, bool (*cond)(struct hps_sock *),
		       unsigned long deadline, unsigned int state)
{
	struct sock *sk = &hs->sk;
	DEFINE_WAIT(wait);
	int ret = 0;
	long t;

	sock_owned_by_me(sk);
	for (;;) {
		prepare_to_wait(sk_sleep(sk), &wait, state);
		if (cond(hs))
			break;
		if (state == TASK_KILLABLE && fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		t = (long)(deadline - jiffies);
		if (t <= 0) {
			ret = -ETIMEDOUT;
			break;
		}
		release_sock(sk);
		schedule_timeout(min_t(long, HZ / 10, t));
		lock_sock(sk);
	}
	finish_wait(sk_sleep(sk), &wait);
	return ret;
}

/*
 * The same, killable; a killed task still gives @cond a grace of
 * HPS_ZC_CANCEL_TIMEOUT (an answer normally comes within a round trip).
 */
static int hps_zc_wait_grace(struct hps_sock *hs,
			     bool (*cond)(struct hps_sock *),
			     unsigned long deadline)
{
	int err = hps_zc_wait(hs, cond, deadline, TASK_KILLABLE);

	if (err == -EINTR &&
	    !hps_zc_wait(hs, cond, jiffies + HPS_ZC_CANCEL_TIMEOUT, TASK_IDLE))
		err = 0;
	return err;
}

#define HPS_ZC_FOREVER	(jiffies + MAX_JIFFY_OFFSET)

/* Conditions of the waits above. */
static bool hps_zc_tx_answered(struct hps_sock *hs)
{
	return test_bit(HPS_F_ZC_TX_REPLY, &hs->flags) ||
	       !test_bit(HPS_F_CONN_UP, &hs->flags) ||
	       test_bit(HPS_F_ABORTED, &hs->flags);
}

static bool hps_zc_tx_revoked(struct hps_sock *hs)
{
	return test_bit(HPS_F_ZC_TX_INV, &hs->flags) || !hs->zc_mr;
}

/*
 * Nothing of ours is in the send queue: every send, RDMA Read, probe and
 * fence posted has completed (in order; a DATA message that did not ask
 * for its completion is known complete with a later one, hps_tx_cover()).
 * Context: hs->lock held.
 */
static bool __hps_zc_sq_idle(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hs->tx_done == hs->tx_posted && hs->ctrl_done == hs->ctrl_head &&
	       !test_bit(HPS_F_ZC_READING, &hs->flags) &&
	       !test_bit(HPS_F_KA_OUT, &hs->flags) && !hs->fence_out;
}

/* Is the send queue idle? If not, ask for the completions it waits for. */
static bool hps_zc_sq_idle(struct hps_sock *hs)
{
	bool idle;

	spin_lock_bh(&hs->lock);
	idle = __hps_zc_sq_idle(hs);
	if (!idle)
		hps_tx_cover(hs);
	spin_unlock_bh(&hs->lock);
	return idle;
}

/**
 * hps_zc_tx_credits() - credits came from the peer
 * @hs: the connection
 *
 * A zero-copy send that waits to post its SRCAVAIL (hps_zc_tx_ready(): it
 * owns the sending side, its SRCAVAIL is not out yet) may go on; it is
 * the only sleeper that waits for credits. Woken with EPOLLOUT, which
 * readers ignore (hps_rx_wake()). Called after the credits were added
 * under hs->lock, so a sender that set HPS_F_ZC_TX_OWNED before it looked
 * at them under that lock either saw them or is woken here.
 *
 * Context: a completion handler (softirq, or a busy poller with BHs
 * disabled), hs->lock not held.
 */
void hps_zc_tx_credits(struct hps_sock *hs)
{
	struct socket_wq *wq;

	if (!test_bit(HPS_F_ZC_TX_OWNED, &hs->flags) ||
	    test_bit(HPS_F_ZC_TX, &hs->flags))
		return;
	rcu_read_lock();
	wq = rcu_dereference(hs->sk.sk_wq);
	if (skwq_has_sleeper(wq))
		wake_up_interruptible_poll(&wq->wait, EPOLLOUT | EPOLLWRNORM);
	rcu_read_unlock();
}

/**
 * hps_zc_sq_done() - one of our sends or probes completed
 * @hs: the connection
 *
 * A zero-copy writer may be waiting for an idle send queue: wake it when
 * the queue became idle. (An RDMA Read's completion wakes every waiter
 * anyway.)
 *
 * Context: softirq.
 */
void hps_zc_sq_done(struct hps_sock *hs)
{
	bool idle;

	if (!test_bit(HPS_F_ZC_TX_OWNED, &hs->flags))
		return;
	spin_lock(&hs->lock);
	idle = __hps_zc_sq_idle(hs);
	spin_unlock(&hs->lock);
	if (idle)
		hps_zc_wake(&hs->sk);
}

static bool hps_zc_tx_registered(struct hps_sock *hs)
{
	return READ_ONCE(hs->zc_tx_regd) ||
	       !test_bit(HPS_F_CONN_UP, &hs->flags) ||
	       test_bit(HPS_F_ABORTED, &hs->flags);
}

/*
 * Wait for an idle send queue before the REG_MR, interruptibly and with
 * the send timeout, as for room: nothing is posted yet. Socket lock held.
 * Return: 0 when idle; -EBUSY if it was not within HPS_ZC_IDLE_TIMEOUT
 * (send by copy instead); -EAGAIN, -EINTR or -ERESTARTSYS as a blocked
 * send(); -EPIPE if the connection is going.
 */
static int hps_zc_idle_wait(struct hps_sock *hs, long *timeo)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	unsigned long deadline = jiffies + HPS_ZC_IDLE_TIMEOUT;
	struct sock *sk = &hs->sk;
	int err = 0;

	add_wait_queue(sk_sleep(sk), &wait);
	for (;;) {
		long t = deadline - jiffies, start = jiffies;

		if (sk->sk_err || sk->sk_shutdown & SEND_SHUTDOWN ||
		    test_bit(HPS_F_ABORTED, &hs->flags) ||
		    !test_bit(HPS_F_CONN_UP, &hs->flags)) {
			err = -EPIPE;
			break;
		}
		if (hps_zc_sq_idle(hs))
			break;
		if (t <= 0) {
			err = -EBUSY;
			break;
		}
		if (!*timeo) {
			err = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(*timeo);
			break;
		}
		t = min(t, *timeo);
		sk_wait_event(sk, &t, sk->sk_err ||
			      test_bit(HPS_F_ABORTED, &hs->flags) ||
			      !test_bit(HPS_F_CONN_UP, &hs->flags) ||
			      hps_zc_sq_idle(hs), &wait);
		if (*timeo != MAX_SCHEDULE_TIMEOUT)
			*timeo = max(0L, *timeo - (long)(jiffies - start));
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	return err;
}

static bool hps_zc_rd_over(struct hps_sock *hs)
{
	return !test_bit(HPS_F_ZC_READING, &hs->flags);
}

/**
 * hps_zc_setup() - zero-copy needs of a new QP
 * @hs: the connection
 * @attr: its QP attributes, filled in for rdma_create_qp()
 *
 * Only a socket whose threshold is not 0 when its connection is set up
 * gets them (%HPS_ZC_SQ_EXTRA more send queue and CQ entries, and rdma_rw
 * MRs on iWARP); any other sends by copy and answers SENDSM to the peer's
 * SRCAVAILs.
 *
 * Context: connection work, socket lock held.
 */
void hps_zc_setup(struct hps_sock *hs, struct ib_qp_init_attr *attr)
{
	struct ib_device *ibdev = hs->dev->ibdev;
	u32 port = hs->cm_id->port_num;
	u32 per_ctx;

	sock_owned_by_me(&hs->sk);
	hs->zc_rx = NULL;
	hs->zc_cap = hs->zc_thresh;
	hs->zc_rd_pages = 0;
	if (!hs->zc_cap)
		return;
	attr->cap.max_send_wr += 2;	/* REG_MR, LOCAL_INV */
	attr->port_num = port;
	attr->cap.max_rdma_ctxs = HPS_ZC_RW_CTXS;
	hs->zc_port = port;
	if (rdma_protocol_iwarp(ibdev, port)) {
		per_ctx = ibdev->attrs.max_fast_reg_page_list_len;
	} else {
		/* rdma_rw puts min(max_sge_rd, max_send_sge) pages in a WR */
		attr->cap.max_send_sge = clamp_t(u32, ibdev->attrs.max_send_sge,
						 2, HPS_ZC_SGE);
		per_ctx = min_t(u32, ibdev->attrs.max_sge_rd,
				attr->cap.max_send_sge);
	}
	hs->zc_rd_pages = min_t(u32, HPS_ZC_PAGES, per_ctx * HPS_ZC_RW_CTXS);
}

/**
 * hps_zc_teardown() - revoke remote access after the QP was drained
 * @hs: the connection
 *
 * Every completion has run: no read is in flight and the sender's MR can
 * go, which also revokes its key if no LOCAL_INV did.
 *
 * Context: connection work, socket lock held.
 */
void hps_zc_teardown(struct hps_sock *hs)
{
	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (hs->zc_mr) {
		ib_dereg_mr(hs->zc_mr);
		hs->zc_mr = NULL;
	}
	hps_zc_wake(&hs->sk);
}

/*
 * Sender: the REG_MR completed, or the REG_MR or LOCAL_INV failed.
 * Context: softirq.
 */
static void hps_zc_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hps_sock *hs = wc->qp->qp_context;

	if (wc->status == IB_WC_SUCCESS) {
		spin_lock(&hs->lock);
		WRITE_ONCE(hs->zc_tx_regd, true);
		spin_unlock(&hs->lock);
		hps_zc_wake(&hs->sk);
		return;
	}
	if (wc->status != IB_WC_WR_FLUSH_ERR)
		pr_warn_ratelimited("memory registration failed: %s (%d)\n",
				    ib_wc_status_msg(wc->status), wc->status);
	hps_conn_error(hs, ECONNRESET);
	hps_zc_wake(&hs->sk);
}

/* Sender: LOCAL_INV completed. Context: softirq. */
static void hps_zc_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hps_sock *hs = wc->qp->qp_context;

	if (wc->status != IB_WC_SUCCESS) {
		hps_zc_reg_done(cq, wc);
		return;
	}
	set_bit(HPS_F_ZC_TX_INV, &hs->flags);
	hps_zc_wake(&hs->sk);
}

/*
 * The pinned pages of the iterator's current segment, at most @max bytes
 * of it and at most @maxpages pages (hps_reg_get(): from the registration
 * cache or pinned now); nothing if the segment is shorter than @min.
 * Return: bytes covered, with the entry in *@regp, the number of its pages
 * used in *@npagesp and the offset into the first in *@offp; 0 if the
 * segment does not qualify; -ENOMEM if its pages could not be had (memory
 * lock limit, pinning failed): copy instead.
 */
static ssize_t hps_zc_pin(struct hps_sock *hs, struct iov_iter *it,
			  size_t min, size_t max, u32 maxpages, bool write,
			  struct hps_reg **regp, u32 *npagesp, u32 *offp)
{
	struct hps_reg *r;
	unsigned long start;
	size_t seg, n;
	u32 off, npages;

	if (iter_is_ubuf(it)) {
		start = (unsigned long)it->ubuf + it->iov_offset;
		seg = it->count;
	} else if (iter_is_iovec(it)) {
		start = (unsigned long)hps_iter_seg(it, &seg);
	} else {
		return 0;
	}
	off = offset_in_page(start);
	n = min3(seg, max, (size_t)maxpages * PAGE_SIZE - off);
	if (!n || seg < min)
		return 0;
	npages = DIV_ROUND_UP(off + n, PAGE_SIZE);
	r = hps_reg_get(hps_net(sock_net(&hs->sk)), start & PAGE_MASK, npages,
			write);
	if (!r)
		return -ENOMEM;
	if (r->npages < npages) {
		npages = r->npages;
		n = (size_t)npages * PAGE_SIZE - off;
	}
	*regp = r;
	*npagesp = npages;
	*offp = off;
	return n;
}

/*
 * The peer asked for the rest of our SRCAVAIL by copy: hand hps_sendmsg()
 * bytes [@from, @to) of the registration to copy, through its kernel
 * mapping or page by page. Keeps the reference to @r; false if that
 * cannot be done (the caller copies from the user's buffer).
 */
static bool hps_zc_rest_init(struct hps_zc_rest *rest, struct hps_reg *r,
			     u32 npages, size_t from, size_t to)
{
	u32 i, first = from >> PAGE_SHIFT;

	if (r->vaddr) {
		rest->kv.iov_base = r->vaddr + from;
		rest->kv.iov_len = to - from;
		iov_iter_kvec(&rest->it, ITER_SOURCE, &rest->kv, 1, to - from);
	} else {
		rest->bv = kvmalloc_array(npages - first, sizeof(*rest->bv),
					  GFP_KERNEL);
		if (!rest->bv)
			return false;
		for (i = first; i < npages; i++)
			bvec_set_page(&rest->bv[i - first], r->pages[i],
				      PAGE_SIZE, 0);
		iov_iter_bvec(&rest->it, ITER_SOURCE, rest->bv, npages - first,
			      to - (size_t)first * PAGE_SIZE);
		iov_iter_advance(&rest->it, offset_in_page(from));
	}
	rest->reg = r;
	hps_net_stat_inc(hps_reg_cache_net(r->cache), HPS_STAT_REG_KMAP_COPIES);
	return true;
}

/**
 * hps_zc_rest_done() - the rest of a zero-copy send was copied
 * @rest: from hps_zc_send(); its registration is given back
 *
 * Context: process, may sleep.
 */
void hps_zc_rest_done(struct hps_zc_rest *rest)
{
	if (!rest->reg)
		return;
	kvfree(rest->bv);
	rest->bv = NULL;
	hps_reg_put(rest->reg, 0);
	rest->reg = NULL;
}

/* Could the SRCAVAIL be posted now? Context: any; takes hs->lock. */
static bool hps_zc_tx_ready(struct hps_sock *hs)
{
	bool ready;

	spin_lock_bh(&hs->lock);
	ready = hps_tx_flushed(hs) && hs->tx_credits >= 2 &&
		hs->ctrl_head - hs->ctrl_done < HPS_NCTRL;
	spin_unlock_bh(&hs->lock);
	return ready;
}

/* Wait until the SRCAVAIL may be posted. Socket lock held. */
static int hps_zc_tx_wait(struct hps_sock *hs, long *timeo)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = &hs->sk;
	int err = 0;

	add_wait_queue(sk_sleep(sk), &wait);
	for (;;) {
		if (sk->sk_err || sk->sk_shutdown & SEND_SHUTDOWN ||
		    test_bit(HPS_F_ABORTED, &hs->flags) ||
		    !test_bit(HPS_F_CONN_UP, &hs->flags)) {
			err = -EPIPE;
			break;
		}
		if (hps_zc_tx_ready(hs))
			break;
		if (!*timeo) {
			err = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(*timeo);
			break;
		}
		sk_wait_event(sk, timeo, sk->sk_err ||
			      test_bit(HPS_F_ABORTED, &hs->flags) ||
			      hps_zc_tx_ready(hs), &wait);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	return err;
}

/*
 * Post the REG_MR, signaled, once the send queue is idle; the SRCAVAIL
 * waits for its completion. Context: hs->lock held.
 * Return: 0; -EAGAIN if the send queue is not idle yet (what was written
 * before was pushed); -EPIPE if the connection is going.
 */
static int hps_zc_reg_post(struct hps_sock *hs, struct ib_reg_wr *reg)
{
	int err;

	lockdep_assert_held(&hs->lock);
	sock_owned_by_me(&hs->sk);
	/* Another thread may have shut the socket down meanwhile. */
	if (!test_bit(HPS_F_CONN_UP, &hs->flags) ||
	    test_bit(HPS_F_ABORTED, &hs->flags) ||
	    hs->sk.sk_shutdown & SEND_SHUTDOWN)
		return -EPIPE;
	/* A partly filled buffer goes first: its bytes come first. */
	hps_tx_close_open(hs);
	hps_tx_push(hs);
	if (!__hps_zc_sq_idle(hs))
		return -EAGAIN;
	WRITE_ONCE(hs->zc_tx_regd, false);
	err = ib_post_send(hs->qp, &reg->wr, NULL);
	if (err) {
		pr_warn_ratelimited("posting a registration failed: %d\n", err);
		hps_conn_error(hs, ECONNRESET);
		return -EPIPE;
	}
	clear_bit(HPS_F_ZC_TX_INV, &hs->flags);
	return 0;
}

/* Post the SRCAVAIL. Context: hs->lock held. */
static int hps_zc_post(struct hps_sock *hs, const struct hps_srcavail *sa)
{
	lockdep_assert_held(&hs->lock);
	sock_owned_by_me(&hs->sk);
	/* Another thread may have shut the socket down while we waited. */
	if (!test_bit(HPS_F_CONN_UP, &hs->flags) ||
	    test_bit(HPS_F_ABORTED, &hs->flags) ||
	    hs->sk.sk_shutdown & SEND_SHUTDOWN)
		return -EPIPE;
	/* A partly filled buffer goes first: its bytes come first. */
	hps_tx_close_open(hs);
	hps_tx_push(hs);
	if (!hps_tx_flushed(hs) || hs->tx_credits < 2 ||
	    hs->ctrl_head - hs->ctrl_done >= HPS_NCTRL)
		return -EAGAIN;
	clear_bit(HPS_F_ZC_TX_REPLY, &hs->flags);
	clear_bit(HPS_F_ZC_CANCEL_OWED, &hs->flags);
	hs->zc_tx_len = be32_to_cpu(sa->len);
	hs->zc_tx_consumed = 0;
	set_bit(HPS_F_ZC_TX, &hs->flags);
	if (!hps_tx_ctrl_data(hs, HPS_MSG_SRCAVAIL, sa, sizeof(*sa))) {
		clear_bit(HPS_F_ZC_TX, &hs->flags);
		hps_conn_error(hs, ECONNRESET);
		return -EPIPE;
	}
	hs->tx_data_stamp = jiffies;	/* data, as DATA is (hps_rx_idle()) */
	return 0;
}

/*
 * Wait for the answer to our SRCAVAIL; cancel after HPS_ZC_CANCEL_TIMEOUT,
 * on a signal or when the send timeout runs out. The peer answers a
 * CANCEL at once; if it has not within HPS_ZC_REPLY_TIMEOUT, or the writer
 * is killed meanwhile, the connection is aborted (its teardown revokes the
 * key). Socket lock held.
 */
static void hps_zc_tx_await(struct hps_sock *hs, long *timeo)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = &hs->sk;
	unsigned long deadline = jiffies + HPS_ZC_CANCEL_TIMEOUT;
	int err;

	add_wait_queue(sk_sleep(sk), &wait);
	while (!hps_zc_tx_answered(hs)) {
		long t = deadline - jiffies, start = jiffies;

		if (t <= 0 || !*timeo || signal_pending(current))
			break;
		t = min(t, *timeo);
		sk_wait_event(sk, &t, hps_zc_tx_answered(hs), &wait);
		if (*timeo != MAX_SCHEDULE_TIMEOUT)
			*timeo = max(0L, *timeo - (long)(jiffies - start));
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	if (hps_zc_tx_answered(hs))
		return;

	trace_hps_zc_cancel(hs, hs->zc_tx_len,
			    signal_pending(current) ? HPS_ZCW_SIGNAL :
			    !*timeo ? HPS_ZCW_SNDTIMEO : HPS_ZCW_TIMEOUT);
	spin_lock_bh(&hs->lock);
	set_bit(HPS_F_ZC_CANCEL_OWED, &hs->flags);
	hps_tx_push(hs);
	spin_unlock_bh(&hs->lock);
	hps_stat_inc(sock_net(&hs->sk), HPS_STAT_ZC_CANCELS);
	/*
	 * The pages cannot go before the answer (or the key's revocation by
	 * an abort's teardown). Killed, the writer waits a little more: the
	 * answer normally comes within a round trip, and then the
	 * connection lives on.
	 */
	err = hps_zc_wait_grace(hs, hps_zc_tx_answered,
				jiffies + HPS_ZC_REPLY_TIMEOUT);
	if (err == -ETIMEDOUT) {
		pr_warn_ratelimited("no answer to a zero-copy cancel: reset\n");
		hps_abort(hs, ETIMEDOUT, true);
	} else if (err) {
		hps_abort(hs, ECONNABORTED, true);
	}
}

/*
 * A writer killed (or timed out) while its registration or the revocation
 * of its key did not complete: the connection is being aborted, and connd
 * gives its pages back once the teardown has deregistered the MR
 * (hps_zc_tx_reap()). The sending side stays owned until then.
 * Context: socket lock held.
 */
static void hps_zc_tx_orphan(struct hps_sock *hs, struct sg_table *sgt,
			     struct hps_reg *r, struct hps_dev *dev)
{
	sock_owned_by_me(&hs->sk);
	hs->zc_tx_sgt = *sgt;
	hs->zc_tx_reg = r;
	hs->zc_tx_dev = dev;
	set_bit(HPS_F_ZC_TX_ORPHAN, &hs->flags);
}

/*
 * The registration or the invalidation did not complete in time, or the
 * writer was killed waiting for it: abort the connection and leave the
 * pages to connd (hps_zc_tx_orphan()). Context: socket lock held.
 */
static ssize_t hps_zc_tx_stuck(struct hps_sock *hs, int err,
			       struct sg_table *sgt, struct hps_reg *r,
			       struct hps_dev *dev)
{
	if (err == -ETIMEDOUT)
		pr_warn_ratelimited("a registration or invalidation hung: reset\n");
	hps_abort(hs, err == -EINTR ? ECONNABORTED : ETIMEDOUT, true);
	hps_zc_tx_orphan(hs, sgt, r, dev);
	return -EPIPE;
}

/**
 * hps_zc_tx_reap() - give back the pages of a killed zero-copy writer
 * @hs: the connection; its QP drained and its MR deregistered
 *
 * Context: connection work (teardown), socket lock held.
 */
void hps_zc_tx_reap(struct hps_sock *hs)
{
	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (!test_and_clear_bit(HPS_F_ZC_TX_ORPHAN, &hs->flags))
		return;
	ib_dma_unmap_sgtable_attrs(hs->zc_tx_dev->ibdev, &hs->zc_tx_sgt,
				   DMA_TO_DEVICE, 0);
	hps_dev_put(hs->zc_tx_dev);
	sg_free_table(&hs->zc_tx_sgt);
	hps_reg_put(hs->zc_tx_reg, 0);
	hs->zc_tx_reg = NULL;
	hs->zc_tx_dev = NULL;
	spin_lock_bh(&hs->lock);
	clear_bit(HPS_F_ZC_TX, &hs->flags);
	clear_bit(HPS_F_ZC_TX_OWNED, &hs->flags);
	spin_unlock_bh(&hs->lock);
	hps_zc_wake(&hs->sk);
}

/*
 * Is this send one for zero copy? A blocking send of at least zc_thresh
 * bytes of user memory on a connection set up for it, over a device that
 * can register memory remotely. Context: socket lock held.
 */
static bool hps_zc_tx_eligible(struct hps_sock *hs, struct msghdr *msg,
			       long timeo)
{
	sock_owned_by_me(&hs->sk);
	return hs->zc_thresh && hs->zc_cap && timeo && hs->qp &&
	       test_bit(HPS_F_CONN_UP, &hs->flags) &&
	       user_backed_iter(&msg->msg_iter) &&
	       iov_iter_count(&msg->msg_iter) >= hs->zc_thresh &&
	       hs->dev->ibdev->attrs.device_cap_flags &
	       IB_DEVICE_MEM_MGT_EXTENSIONS;
}

/* Why a send is not one for zero copy (hps_zc_tx tracepoint). */
static int hps_zc_tx_why(struct hps_sock *hs, struct msghdr *msg, long timeo)
{
	if (!hs->zc_cap)
		return HPS_ZCW_NOT_SET_UP;
	if (!timeo)
		return HPS_ZCW_NONBLOCK;
	if (!hs->qp || !test_bit(HPS_F_CONN_UP, &hs->flags))
		return HPS_ZCW_NOT_CONNECTED;
	if (!user_backed_iter(&msg->msg_iter))
		return HPS_ZCW_KERNEL;
	if (iov_iter_count(&msg->msg_iter) < hs->zc_thresh)
		return HPS_ZCW_SMALL;
	return HPS_ZCW_NO_DEVICE;
}

/*
 * The MR zero-copy sends register pages with, made on first use (it may
 * sleep: socket lock, not hs->lock). Context: socket lock held.
 */
static struct ib_mr *hps_zc_mr(struct hps_sock *hs, u32 maxpages)
{
	struct ib_device *ibdev = hs->dev->ibdev;
	struct ib_mr *mr;
	u32 mrpages;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (hs->zc_mr)
		return hs->zc_mr;
	/*
	 * One page more than is ever registered, where the device allows
	 * it: rxe as in Debian's 6.1 (before its page map became an xarray)
	 * reads one entry past the map of an MR when an RDMA Read ends
	 * exactly at the end of a full block of 256 pages (rxe_mr_copy();
	 * KASAN slab-out-of-bounds, Documentation/zcopy.rst). Unused, the
	 * extra entry costs nothing on the wire.
	 */
	mrpages = min_t(u32, maxpages + 1,
			ibdev->attrs.max_fast_reg_page_list_len);
	mr = ib_alloc_mr(hs->dev->pd, IB_MR_TYPE_MEM_REG, mrpages);
	if (IS_ERR(mr))
		return NULL;
	hs->zc_mr = mr;
	return mr;
}

/**
 * hps_zc_send() - send the next bytes of @msg zero copy, if they qualify
 * @hs: the connection
 * @msg: the data; advanced past what was sent
 * @timeo: the send timeout left
 * @copy_rest: set when the peer asked for the rest by copy
 * @rest: set up, when the peer asked for the rest by copy, to copy the
 *	  rest of the registered range from its kernel mapping; the caller
 *	  advances @msg past what it copies from there, then calls
 *	  hps_zc_rest_done()
 *
 * The caller waited for room (hps_tx_wait()) and has held the socket lock
 * since: no other writer's zero-copy send is under way. This one owns the
 * sending side (HPS_F_ZC_TX_OWNED) until it returns.
 *
 * Context: process, socket lock held (released while waiting).
 * Return: bytes sent (possibly 0, with @copy_rest set); 0 if they do not
 * qualify; -errno if nothing was sent.
 */
ssize_t hps_zc_send(struct hps_sock *hs, struct msghdr *msg, long *timeo,
		    bool *copy_rest, struct hps_zc_rest *rest)
{
	struct sock *sk = &hs->sk;
	struct hps_srcavail sa;
	struct ib_reg_wr reg = {};
	struct sg_table sgt;
	struct hps_dev *dev;
	struct ib_mr *mr;
	struct hps_reg *r;
	u32 npages, off, maxpages;
	ssize_t ret;
	size_t n;
	int err;

	sock_owned_by_me(sk);
	might_sleep();
	if (!hps_zc_tx_eligible(hs, msg, *timeo)) {
		if (trace_hps_zc_tx_enabled() && hs->zc_thresh)
			trace_hps_zc_tx(hs, iov_iter_count(&msg->msg_iter),
					hps_zc_tx_why(hs, msg, *timeo));
		return 0;
	}
	dev = hs->dev;
	maxpages = min_t(u32, HPS_ZC_PAGES,
			 dev->ibdev->attrs.max_fast_reg_page_list_len);
	mr = hps_zc_mr(hs, maxpages);
	if (!mr) {
		trace_hps_zc_tx(hs, iov_iter_count(&msg->msg_iter),
				HPS_ZCW_NO_MR);
		return 0;
	}
	DEBUG_NET_WARN_ON_ONCE(test_bit(HPS_F_ZC_TX_OWNED, &hs->flags));
	spin_lock_bh(&hs->lock);
	hps_tx_wait_begins(hs);		/* for TCP_USER_TIMEOUT */
	set_bit(HPS_F_ZC_TX_OWNED, &hs->flags);
	spin_unlock_bh(&hs->lock);

	ret = hps_zc_pin(hs, &msg->msg_iter, hs->zc_thresh,
			 iov_iter_count(&msg->msg_iter), maxpages, false, &r,
			 &npages, &off);
	if (ret <= 0) {
		trace_hps_zc_tx(hs, iov_iter_count(&msg->msg_iter),
				HPS_ZCW_NOT_PINNED);
		/* Not every chunk of this send again: copy the rest of it. */
		if (ret < 0)
			*copy_rest = true;
		ret = 0;
		goto out_own;
	}
	n = ret;
	ret = 0;
	trace_hps_zc_tx(hs, n, HPS_ZCW_ZCOPY);
	if (sg_alloc_table_from_pages(&sgt, r->pages, npages, off, n,
				      GFP_KERNEL))
		goto out_unpin;
	/* The device stays while the pages are mapped, past a teardown. */
	kref_get(&dev->ref);
	if (ib_dma_map_sgtable_attrs(dev->ibdev, &sgt, DMA_TO_DEVICE, 0)) {
		hps_dev_put(dev);
		goto out_free_sgt;
	}
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	if (ib_map_mr_sg(mr, sgt.sgl, sgt.nents, NULL, PAGE_SIZE) != sgt.nents)
		goto out_unmap;

	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.wr_cqe = &hs->zc_reg_cqe;
	reg.wr.send_flags = IB_SEND_SIGNALED;
	reg.mr = mr;
	reg.key = mr->rkey;
	reg.access = IB_ACCESS_REMOTE_READ;
	hs->zc_reg_cqe.done = hps_zc_reg_done;
	hs->zc_inv_cqe.done = hps_zc_inv_done;
	sa.addr = cpu_to_be64(mr->iova);
	sa.rkey = cpu_to_be32(mr->rkey);
	sa.len = cpu_to_be32(n);

	if (hps_inject_ms(HPS_INJ_ZC_TX_POST)) {
		release_sock(sk);
		hps_inject_sleep(HPS_INJ_ZC_TX_POST);
		lock_sock(sk);
	}
	for (;;) {
		spin_lock_bh(&hs->lock);
		err = hps_zc_reg_post(hs, &reg);
		spin_unlock_bh(&hs->lock);
		if (err != -EAGAIN)
			break;
		err = hps_zc_idle_wait(hs, timeo);
		if (err)
			break;
	}
	if (err == -EBUSY) {
		/* The queue stays busy: copy this send's bytes instead. */
		hps_stat_inc(sock_net(sk), HPS_STAT_ZC_FALLBACKS);
		*copy_rest = true;
		ret = 0;
		goto out_unmap;
	}
	if (err) {
		/* Not posted: nothing was registered. */
		ret = err;
		goto out_unmap;
	}
	/*
	 * On an idle queue the REG_MR completes at once; a device that holds
	 * it up is bounded and killable like the LOCAL_INV below.
	 */
	err = hps_zc_wait_grace(hs, hps_zc_tx_registered,
				jiffies + HPS_ZC_REPLY_TIMEOUT);
	if (err)
		return hps_zc_tx_stuck(hs, err, &sgt, r, dev);
	ret = -EPIPE;
	if (fatal_signal_pending(current)) {
		ret = -EINTR;	/* killed: revoke, advertise nothing */
	} else if (READ_ONCE(hs->zc_tx_regd)) {
		for (;;) {
			spin_lock_bh(&hs->lock);
			err = hps_zc_post(hs, &sa);
			spin_unlock_bh(&hs->lock);
			if (err != -EAGAIN)
				break;
			err = hps_zc_tx_wait(hs, timeo);
			if (err)
				break;
		}
		/* Not advertised: the key was never given out. */
		ret = err;
		if (!err) {
			hps_stat_inc(sock_net(&hs->sk), HPS_STAT_ZC_TX);
			hps_zc_tx_await(hs, timeo);
		}
	}

	/*
	 * Revoke the key before the pages go back. HPS_F_ZC_TX_OWNED stays
	 * set until then: the MR is not registered again while its
	 * LOCAL_INV is in flight. A teardown (the connection went down, or
	 * was aborted above) deregisters the MR instead, after the QP's
	 * drain.
	 */
	spin_lock_bh(&hs->lock);
	if ((ret || test_bit(HPS_F_ZC_TX_REPLY, &hs->flags)) &&
	    test_bit(HPS_F_CONN_UP, &hs->flags) &&
	    !test_bit(HPS_F_ABORTED, &hs->flags)) {
		struct ib_send_wr inv = {
			.opcode		= IB_WR_LOCAL_INV,
			.wr_cqe		= &hs->zc_inv_cqe,
			.send_flags	= IB_SEND_SIGNALED,
			.ex.invalidate_rkey = mr->rkey,
		};

		err = ib_post_send(hs->qp, &inv, NULL);
		if (err) {
			pr_warn_ratelimited("posting an invalidation failed: %d\n",
					    err);
			hps_conn_error(hs, ECONNRESET);
		}
	} else if (!ret && !test_bit(HPS_F_ZC_TX_REPLY, &hs->flags)) {
		pr_debug("zero-copy send ended without an answer\n");
		hps_conn_error(hs, ECONNRESET);
	}
	spin_unlock_bh(&hs->lock);
	/*
	 * The LOCAL_INV completes behind every send before it, which the
	 * peer can hold up (no acknowledgment, a zero TCP window under
	 * iWARP): bounded and killable. Then the connection is aborted and
	 * connd gives the pages back once its teardown has deregistered the
	 * MR (hps_zc_tx_reap()).
	 */
	err = hps_zc_wait_grace(hs, hps_zc_tx_revoked,
				jiffies + HPS_ZC_REPLY_TIMEOUT);
	if (err)
		return hps_zc_tx_stuck(hs, err, &sgt, r, dev);
	clear_bit(HPS_F_ZC_TX, &hs->flags);
	if (ret)
		goto out_unmap;

	/* Answered: the peer has the bytes it read, key revoked or MR gone. */
	if (test_bit(HPS_F_ZC_TX_REPLY, &hs->flags)) {
		ret = hs->zc_tx_consumed;
		if (ret < n) {
			*copy_rest = true;
			/* Not once the mapping changed: copy from it. */
			if (r->watched && !READ_ONCE(r->stale) &&
			    hps_zc_rest_init(rest, r, npages, off + ret,
					     off + n))
				r = NULL;	/* held by @rest */
		}
		iov_iter_advance(&msg->msg_iter, ret);
		hps_stat_add(sock_net(&hs->sk), HPS_STAT_ZC_TX_BYTES, ret);
		spin_lock_bh(&hs->lock);
		hs->tx_bytes += ret;
		spin_unlock_bh(&hs->lock);
	} else {
		ret = -EPIPE;
	}
out_unmap:
	ib_dma_unmap_sgtable_attrs(dev->ibdev, &sgt, DMA_TO_DEVICE, 0);
	hps_dev_put(dev);
out_free_sgt:
	sg_free_table(&sgt);
out_unpin:
	if (r)
		hps_reg_put(r, 0);
out_own:
	spin_lock_bh(&hs->lock);
	clear_bit(HPS_F_ZC_TX_OWNED, &hs->flags);
	hps_tx_push(hs);	/* a FIN may have waited for us */
	spin_unlock_bh(&hs->lock);
	hps_zc_wake(sk);	/* writers that waited for their turn */
	return ret;
}

/**
 * hps_zc_push() - send the zero-copy answers and cancels that are owed
 * @hs: the connection
 *
 * Context: hs->lock held.
 */
void hps_zc_push(struct hps_sock *hs)
{
	__be32 consumed;

	lockdep_assert_held(&hs->lock);
	if (test_bit(HPS_F_ZC_DONE_OWED, &hs->flags) &&
	    hps_tx_ctrl(hs, HPS_MSG_RDMA_DONE, false))
		clear_bit(HPS_F_ZC_DONE_OWED, &hs->flags);
	if (test_bit(HPS_F_ZC_SENDSM_OWED, &hs->flags)) {
		consumed = cpu_to_be32(hs->zc_rx_sendsm);
		if (hps_tx_ctrl_data(hs, HPS_MSG_SENDSM, &consumed,
				     sizeof(consumed)))
			clear_bit(HPS_F_ZC_SENDSM_OWED, &hs->flags);
	}
	if (test_bit(HPS_F_ZC_CANCEL_OWED, &hs->flags) &&
	    test_bit(HPS_F_ZC_TX, &hs->flags) &&
	    !test_bit(HPS_F_ZC_TX_REPLY, &hs->flags) &&
	    hps_tx_ctrl(hs, HPS_MSG_CANCEL, false))
		clear_bit(HPS_F_ZC_CANCEL_OWED, &hs->flags);
}

/**
 * hps_zc_rx_abandon() - take the rest of the peer's SRCAVAIL by copy
 * @hs: the connection, with a live hs->zc_rx and no read in flight (the
 *	reader owning it, if any, finds it gone and reads by copy too)
 *
 * Answers SENDSM; the remaining bytes will arrive as DATA behind it. The
 * SRCAVAIL's buffer, now empty, goes back to the receive queue when a
 * reader passes it or, at the latest, from the connection work
 * (hps_rx_release_dead()).
 *
 * Context: hs->lock held.
 */
void hps_zc_rx_abandon(struct hps_sock *hs)
{
	struct hps_buf *b = hs->zc_rx;

	lockdep_assert_held(&hs->lock);
	trace_hps_zc_sendsm(hs, b->off, b->len);
	WRITE_ONCE(hs->rx_queued, hs->rx_queued - (b->len - b->off));
	b->len = b->off;
	b->dead = true;
	hs->zc_rx = NULL;
	hs->zc_rx_sendsm = b->off;
	set_bit(HPS_F_ZC_SENDSM_OWED, &hs->flags);
	hps_stat_inc(sock_net(&hs->sk), HPS_STAT_ZC_FALLBACKS);
	hps_tx_push(hs);
	hps_connd_kick(hs, HPS_W_RX_DEAD);
}

/**
 * hps_zc_rx_msg() - a zero-copy message arrived
 * @hs: the connection
 * @b: its receive buffer
 * @type: HPS_MSG_SRCAVAIL, HPS_MSG_RDMA_DONE, HPS_MSG_SENDSM or
 *	  HPS_MSG_CANCEL
 * @len: payload bytes
 *
 * Context: softirq, hs->lock held.
 * Return: 1 if @b was queued for the reader (SRCAVAIL), 0 if it may be
 * reposted, -EPROTO if the message breaks the protocol.
 */
int hps_zc_rx_msg(struct hps_sock *hs, struct hps_buf *b, u8 type, u32 len)
{
	const void *p = b->buf + HPS_HDR_LEN;
	const struct hps_srcavail *sa = p;
	u32 n;

	lockdep_assert_held(&hs->lock);
	switch (type) {
	case HPS_MSG_SRCAVAIL:
		/* not while one is outstanding: unread, or its answer owed */
		if (len != sizeof(*sa) || hs->zc_rx ||
		    test_bit(HPS_F_ZC_DONE_OWED, &hs->flags) ||
		    test_bit(HPS_F_ZC_SENDSM_OWED, &hs->flags) ||
		    test_bit(HPS_F_FIN_RCVD, &hs->flags))
			return -EPROTO;
		n = be32_to_cpu(sa->len);
		if (!n || n > HPS_ZC_ADV_MAX)
			return -EPROTO;
		b->type = HPS_MSG_SRCAVAIL;
		b->len = n;
		b->off = 0;
		b->dead = false;
		list_add_tail(&b->list, &hs->rx_ready);
		WRITE_ONCE(hs->rx_queued, hs->rx_queued + n);
		hs->rx_nready++;
		hs->zc_rx = b;
		hs->rx_data_stamp = jiffies;	/* as DATA (hps_rx_idle()) */
		return 1;
	case HPS_MSG_RDMA_DONE:
	case HPS_MSG_SENDSM:
		if (!test_bit(HPS_F_ZC_TX, &hs->flags) ||
		    test_bit(HPS_F_ZC_TX_REPLY, &hs->flags))
			return -EPROTO;
		if (type == HPS_MSG_SENDSM) {
			if (len != sizeof(__be32))
				return -EPROTO;
			n = be32_to_cpup(p);
			if (n > hs->zc_tx_len)
				return -EPROTO;
			hs->zc_tx_consumed = n;
		} else {
			if (len)
				return -EPROTO;
			hs->zc_tx_consumed = hs->zc_tx_len;
		}
		set_bit(HPS_F_ZC_TX_REPLY, &hs->flags);
		hps_zc_wake(&hs->sk);
		return 0;
	case HPS_MSG_CANCEL:
		if (len)
			return -EPROTO;
		/* Crossed with our answer: nothing left to cancel. */
		if (!hs->zc_rx)
			return 0;
		if (test_bit(HPS_F_ZC_READING, &hs->flags))
			set_bit(HPS_F_ZC_RX_CANCEL, &hs->flags);
		else
			hps_zc_rx_abandon(hs);
		return 0;
	}
	return -EPROTO;
}

/* RDMA Read completed. Context: softirq. */
static void hps_zc_read_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hps_sock *hs = wc->qp->qp_context;
	bool ok = wc->status == IB_WC_SUCCESS, orphan;
	struct hps_buf *b;

	if (hps_inject_defer_wc(hs, cq, wc, HPS_INJ_ZC_RD_DONE,
				hps_zc_read_done))
		return;
	rdma_rw_ctx_destroy(&hs->zc_rw, hs->qp, hs->zc_port,
			    hs->zc_rd_sgt.sgl, hs->zc_rd_sgt.orig_nents,
			    DMA_FROM_DEVICE);
	spin_lock(&hs->lock);
	b = hs->zc_rx;
	orphan = test_bit(HPS_F_ZC_RD_ORPHAN, &hs->flags);
	hs->zc_rd_ok = ok && b;
	/* An orphaned read does not count: the next reader reads it again. */
	if (hs->zc_rd_ok && !orphan) {
		b->off += hs->zc_rd_len;
		WRITE_ONCE(hs->rx_queued, hs->rx_queued - hs->zc_rd_len);
		hs->rx_bytes += hs->zc_rd_len;
		if (b->off == b->len) {
			b->dead = true;
			hs->zc_rx = NULL;
			set_bit(HPS_F_ZC_DONE_OWED, &hs->flags);
		}
	}
	/* The peer cancelled meanwhile: the rest comes by copy. */
	if (hs->zc_rx && test_bit(HPS_F_ZC_RX_CANCEL, &hs->flags))
		hps_zc_rx_abandon(hs);
	clear_bit(HPS_F_ZC_RX_CANCEL, &hs->flags);
	clear_bit(HPS_F_ZC_READING, &hs->flags);
	hps_tx_push(hs);
	spin_unlock(&hs->lock);
	if (!ok && wc->status != IB_WC_WR_FLUSH_ERR)
		pr_warn_ratelimited("RDMA Read failed: %s (%d)\n",
				    ib_wc_status_msg(wc->status), wc->status);
	if (!ok)
		hps_conn_error(hs, ECONNRESET);
	if (orphan)
		hps_connd_kick(hs, HPS_W_ZC_REAP);
	hps_zc_wake(&hs->sk);
}

/*
 * The reader is done with the zero-copy read state: give the pages back
 * and let the next reader in. Context: socket lock held.
 */
static void hps_zc_rd_release(struct hps_sock *hs)
{
	struct hps_reg *r = hs->zc_rd_reg;

	sock_owned_by_me(&hs->sk);
	sg_free_table(&hs->zc_rd_sgt);
	hs->zc_rd_reg = NULL;
	/* written pages are dirty, even those of a killed reader */
	hps_reg_put(r, hs->zc_rd_ok ? hs->zc_rd_npages : 0);
	clear_bit(HPS_F_ZC_RX_BUSY, &hs->flags);
	/* read or abandoned meanwhile: its buffer is no longer owned */
	hps_rx_release_dead(hs);
	hps_zc_wake(&hs->sk);
}

/**
 * hps_zc_rd_timeout() - an orphaned RDMA Read is past its deadline
 * @t: hs->zc_timer
 *
 * Its reader was killed; the read has not completed within
 * %HPS_ZC_REPLY_TIMEOUT of being posted: the peer holds it up, and every
 * other reader with it. Abort the connection (its teardown flushes the
 * read).
 *
 * Context: timer (softirq).
 */
void hps_zc_rd_timeout(struct timer_list *t)
{
	struct hps_sock *hs = from_timer(hs, t, zc_timer);

	if (test_bit(HPS_F_ZC_RD_ORPHAN, &hs->flags) &&
	    test_bit(HPS_F_ZC_READING, &hs->flags)) {
		pr_warn_ratelimited("an RDMA Read did not complete: reset\n");
		hps_abort(hs, ETIMEDOUT, true);
	}
	sock_put(&hs->sk);	/* from sk_reset_timer() */
}

/**
 * hps_zc_rx_reap() - clean up after a reader killed mid RDMA Read
 * @hs: the connection
 *
 * Once the orphaned read has completed (or was flushed by a teardown),
 * its pages go back and the next reader may read the SRCAVAIL.
 *
 * Context: connection work (HPS_W_ZC_REAP, teardown), socket lock held.
 */
void hps_zc_rx_reap(struct hps_sock *hs)
{
	bool reap;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	spin_lock_bh(&hs->lock);
	reap = test_bit(HPS_F_ZC_RD_ORPHAN, &hs->flags) &&
	       !test_bit(HPS_F_ZC_READING, &hs->flags);
	if (reap)
		clear_bit(HPS_F_ZC_RD_ORPHAN, &hs->flags);
	spin_unlock_bh(&hs->lock);
	if (reap)
		hps_zc_rd_release(hs);
}

/**
 * hps_zc_rx_eligible() - may this read take the SRCAVAIL at the head?
 * @hs: the connection
 * @msg: the destination
 * @len: bytes the read still wants
 * @timeo: its receive timeout (0: non-blocking)
 *
 * Context: process, socket lock held.
 * Return: true for a blocking read into user memory that wants at least
 * %HPS_ZC_RX_MIN bytes (or all that is left of the SRCAVAIL).
 */
bool hps_zc_rx_eligible(struct hps_sock *hs, struct msghdr *msg, size_t len,
			long timeo)
{
	struct hps_buf *b = hs->zc_rx;

	sock_owned_by_me(&hs->sk);
	return b && timeo && hs->zc_rd_pages && hs->qp &&
	       test_bit(HPS_F_CONN_UP, &hs->flags) &&
	       user_backed_iter(&msg->msg_iter) &&
	       len >= min_t(u32, HPS_ZC_RX_MIN, b->len - b->off);
}

/**
 * hps_zc_rx_why() - why a read takes the SRCAVAIL at the head by copy
 * @hs: the connection, with hs->zc_rx
 * @msg: the destination
 * @len: bytes the read still wants
 * @timeo: its receive timeout (0: non-blocking)
 *
 * For the hps_zc_rx tracepoint, when hps_zc_rx_eligible() said no.
 *
 * Context: process, socket lock held.
 * Return: enum hps_zc_why.
 */
int hps_zc_rx_why(struct hps_sock *hs, struct msghdr *msg, size_t len,
		  long timeo)
{
	struct hps_buf *b = hs->zc_rx;

	if (!timeo)
		return HPS_ZCW_NONBLOCK;
	if (!hs->zc_rd_pages)
		return HPS_ZCW_NOT_SET_UP;
	if (!hs->qp || !test_bit(HPS_F_CONN_UP, &hs->flags))
		return HPS_ZCW_NOT_CONNECTED;
	if (!user_backed_iter(&msg->msg_iter))
		return HPS_ZCW_KERNEL;
	if (b && len < min_t(u32, HPS_ZC_RX_MIN, b->len - b->off))
		return HPS_ZCW_SMALL;
	return HPS_ZCW_NOT_PINNED;
}

/**
 * hps_zc_recv() - read the SRCAVAIL at the head of the queue into @msg
 * @hs: the connection; hs->zc_rx is the first buffer of rx_ready
 * @msg: the destination, user memory
 * @len: most bytes to read
 *
 * Owns the receiving side (HPS_F_ZC_RX_BUSY) until the pages are given
 * back: other readers wait. See the top of this file for what a signal,
 * a kill and a read that does not complete do.
 *
 * Context: process, socket lock held (released while the read runs).
 * Return: bytes read; 0 if another reader owns the SRCAVAIL (wait for it)
 * or it had to be taken by copy instead; -errno.
 */
int hps_zc_recv(struct hps_sock *hs, struct msghdr *msg, size_t len)
{
	struct sock *sk = &hs->sk;
	const struct hps_srcavail *sa;
	struct hps_reg *r;
	struct hps_buf *b;
	u32 npages, off, rkey;
	u64 addr;
	size_t n;
	int ret;

	sock_owned_by_me(sk);
	might_sleep();
	spin_lock_bh(&hs->lock);
	b = hs->zc_rx;
	/*
	 * Only at the head of the queue: hps_rx_zc() checked that, but
	 * dropped hs->lock since, and the SRCAVAIL it saw may have been
	 * abandoned and a new one queued behind the rest sent by copy.
	 */
	if (!b ||
	    b != list_first_entry(&hs->rx_ready, struct hps_buf, list) ||
	    test_and_set_bit(HPS_F_ZC_RX_BUSY, &hs->flags)) {
		spin_unlock_bh(&hs->lock);
		return 0;
	}
	sa = b->buf + HPS_HDR_LEN;
	addr = be64_to_cpu(sa->addr) + b->off;
	rkey = be32_to_cpu(sa->rkey);
	n = min_t(size_t, len, b->len - b->off);
	spin_unlock_bh(&hs->lock);

	ret = hps_zc_pin(hs, &msg->msg_iter, 0, n, hs->zc_rd_pages, true, &r,
			 &npages, &off);
	if (ret <= 0)
		goto fallback;
	n = ret;
	if (sg_alloc_table_from_pages(&hs->zc_rd_sgt, r->pages, npages, off, n,
				      GFP_KERNEL))
		goto fallback_unpin;
	hs->zc_rd_cqe.done = hps_zc_read_done;
	ret = rdma_rw_ctx_init(&hs->zc_rw, hs->qp, hs->zc_port,
			       hs->zc_rd_sgt.sgl, hs->zc_rd_sgt.orig_nents, 0,
			       addr, rkey, DMA_FROM_DEVICE);
	if (ret < 0)
		goto fallback_sgt;

	spin_lock_bh(&hs->lock);
	hs->zc_rd_reg = r;
	hs->zc_rd_npages = npages;
	hs->zc_rd_len = n;
	hs->zc_rd_ok = false;
	hs->zc_rd_deadline = jiffies + HPS_ZC_REPLY_TIMEOUT;
	if (!test_bit(HPS_F_CONN_UP, &hs->flags) || hs->zc_rx != b) {
		/* Cancelled meanwhile, or the connection went down. */
		spin_unlock_bh(&hs->lock);
		rdma_rw_ctx_destroy(&hs->zc_rw, hs->qp, hs->zc_port,
				    hs->zc_rd_sgt.sgl, hs->zc_rd_sgt.orig_nents,
				    DMA_FROM_DEVICE);
		hps_zc_rd_release(hs);
		return 0;
	}
	set_bit(HPS_F_ZC_READING, &hs->flags);
	ret = rdma_rw_ctx_post(&hs->zc_rw, hs->qp, hs->zc_port,
			       &hs->zc_rd_cqe, NULL);
	if (ret) {
		pr_warn_ratelimited("posting an RDMA Read failed: %d\n", ret);
		clear_bit(HPS_F_ZC_READING, &hs->flags);
		spin_unlock_bh(&hs->lock);
		rdma_rw_ctx_destroy(&hs->zc_rw, hs->qp, hs->zc_port,
				    hs->zc_rd_sgt.sgl, hs->zc_rd_sgt.orig_nents,
				    DMA_FROM_DEVICE);
		hps_zc_rd_release(hs);
		hps_conn_error(hs, ECONNRESET);
		return -ECONNRESET;
	}
	spin_unlock_bh(&hs->lock);

	if (hps_inject_ms(HPS_INJ_ZC_RX_WAIT)) {
		release_sock(sk);
		hps_inject_sleep(HPS_INJ_ZC_RX_WAIT);
		lock_sock(sk);
	}
	/* The device writes into the pages until the completion. */
	ret = hps_zc_wait(hs, hps_zc_rd_over, hs->zc_rd_deadline,
			  TASK_KILLABLE);
	if (ret == -ETIMEDOUT) {
		pr_warn_ratelimited("an RDMA Read did not complete: reset\n");
		hps_abort(hs, ETIMEDOUT, true);
		ret = hps_zc_wait(hs, hps_zc_rd_over, HPS_ZC_FOREVER,
				  TASK_KILLABLE);
	}
	if (ret == -EINTR) {
		/*
		 * Killed: leave now, connd gives the pages back later; the
		 * read's deadline still holds (hps_zc_rd_timeout()).
		 */
		spin_lock_bh(&hs->lock);
		if (test_bit(HPS_F_ZC_READING, &hs->flags)) {
			set_bit(HPS_F_ZC_RD_ORPHAN, &hs->flags);
			sk_reset_timer(sk, &hs->zc_timer, hs->zc_rd_deadline);
			spin_unlock_bh(&hs->lock);
			return -EINTR;
		}
		spin_unlock_bh(&hs->lock);
	}
	ret = hs->zc_rd_ok ? n : -ECONNRESET;
	hps_zc_rd_release(hs);
	if (ret < 0)
		return ret;
	iov_iter_advance(&msg->msg_iter, n);
	hps_stat_inc(sock_net(&hs->sk), HPS_STAT_ZC_RX_READS);
	hps_stat_add(sock_net(&hs->sk), HPS_STAT_ZC_RX_BYTES, n);
	return n;

fallback_sgt:
	sg_free_table(&hs->zc_rd_sgt);
fallback_unpin:
	hps_reg_put(r, 0);
fallback:
	spin_lock_bh(&hs->lock);
	if (hs->zc_rx == b)
		hps_zc_rx_abandon(hs);
	clear_bit(HPS_F_ZC_RX_BUSY, &hs->flags);
	spin_unlock_bh(&hs->lock);
	hps_zc_wake(sk);
	return 0;
}
