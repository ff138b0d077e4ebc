// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Receive path. Receive completions (softirq) validate the header, take
 * the returned credits and queue DATA buffers on hs->rx_ready; the reader
 * copies from them and reposts each buffer once it is empty, which gives
 * the credit back (returned on the next message, or by an explicit credit
 * update). Control messages are reposted at once.
 *
 * Only readers and the connection work (hps_rx_release_dead()), under the
 * socket lock, remove buffers from rx_ready; the softirq only appends. So
 * the reader may copy from the first buffer without holding hs->lock.
 * Readers sharing a socket take turns under the socket lock; one whose
 * zero-copy read of the SRCAVAIL at the head is in flight has dropped it,
 * and owns the head until it is done (HPS_F_ZC_RX_BUSY): the others,
 * peeking ones included, wait for it (hps_rx_readable()).
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/bvec.h>
#include <linux/pipe_fs_i.h>
#include <linux/sched/signal.h>
#include <linux/splice.h>
#include <linux/uio.h>
#include <net/tcp_states.h>

#include "hps.h"
#include "hps_trace.h"

/*
 * Post a receive buffer again, if the connection is up.
 * Context: hs->lock held.
 * Return: true if it was posted.
 */
static bool hps_rx_post_again(struct hps_sock *hs, struct hps_buf *b)
{
	lockdep_assert_held(&hs->lock);
	if (!test_bit(HPS_F_CONN_UP, &hs->flags))
		return false;
	if (hps_wr_post_recv(hs, b)) {
		hps_conn_error(hs, ECONNRESET);
		return false;
	}
	return true;
}

/* Give a receive buffer back, as a credit. Context: hs->lock held. */
static void hps_rx_repost(struct hps_sock *hs, struct hps_buf *b, bool data)
{
	if (!hps_rx_post_again(hs, b))
		return;
	hs->rx_pending++;
	if (data)
		hs->rx_pending_data++;
}

/*
 * The peer sent into our reserve buffer (HPS_MSG_F_RESERVE): repost it,
 * not as a credit, and tell the peer on our next message.
 * Context: hs->lock held.
 */
static void hps_rx_repost_reserve(struct hps_sock *hs, struct hps_buf *b)
{
	if (hps_rx_post_again(hs, b))
		hs->rx_reserve_owed = true;
}

static void hps_rx_violation(struct hps_sock *hs, const char *what)
{
	pr_warn_ratelimited("protocol violation from peer: %s\n", what);
	hps_stat_inc(sock_net(&hs->sk), HPS_STAT_PROTO_ERRORS);
	hps_conn_error_why(hs, EPROTO, HPS_AB_PROTO);
}

/**
 * hps_recv_done() - completion of a receive
 * @cq: the device CQ
 * @wc: the work completion
 *
 * Context: softirq.
 */
void hps_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hps_buf *b = container_of(wc->wr_cqe, struct hps_buf, cqe);
	struct hps_sock *hs = wc->qp->qp_context;
	struct sock *sk = &hs->sk;
	const struct hps_hdr *hdr = b->buf;
	bool data = false, fin = false, fin_done = false, reserve, answer;
	u32 len, credits;
	u8 type;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_warn_ratelimited("receive failed: %s (%d)\n",
					    ib_wc_status_msg(wc->status),
					    wc->status);
		if (test_bit(HPS_F_CONN_UP, &hs->flags) &&
		    !test_bit(HPS_F_FIN_RCVD, &hs->flags))
			hps_conn_error_why(hs, ECONNRESET, HPS_AB_TRANSPORT);
		return;
	}

	ib_dma_sync_single_for_cpu(hs->dev->ibdev, b->dma, hs->buf_size,
				   DMA_FROM_DEVICE);
	if (wc->byte_len < HPS_HDR_LEN || hdr->version != HPS_PROTO_VERSION) {
		hps_rx_violation(hs, "bad header");
		return;
	}
	len = be32_to_cpu(hdr->len);
	credits = be16_to_cpu(hdr->credits);
	if (len != wc->byte_len - HPS_HDR_LEN ||
	    len > hs->buf_size - HPS_HDR_LEN) {
		hps_rx_violation(hs, "bad length");
		return;
	}

	spin_lock(&hs->lock);
	WRITE_ONCE(hs->rx_stamp, jiffies);	/* the peer is alive */
	hs->rx_msgs++;
	if (credits > hs->peer_credits_max - hs->tx_credits) {
		spin_unlock(&hs->lock);
		hps_rx_violation(hs, "credit overflow");
		return;
	}
	hs->tx_credits += credits;
	type = hdr->type & HPS_MSG_TYPE_MASK;
	/* progress of the sending side: room, or a zero-copy answer */
	if (credits || type == HPS_MSG_RDMA_DONE || type == HPS_MSG_SENDSM)
		hs->tx_stamp = jiffies;
	set_bit(HPS_F_PEER_READY, &hs->flags);
	/* The passive side answers the first message: see hps_tx_nudge(). */
	answer = !test_and_set_bit(HPS_F_RX_SEEN, &hs->flags) &&
		 !test_bit(HPS_F_ACTIVE, &hs->flags);

	if (hdr->type & HPS_MSG_F_FIN_ACK) {
		/* Only for a FIN we sent, and only once. */
		if (!test_bit(HPS_F_FIN_SENT, &hs->flags) ||
		    test_bit(HPS_F_FIN_ACKED, &hs->flags))
			goto violation;
		fin_done = hps_tx_fin_step(hs, HPS_F_FIN_ACKED);
	}
	if (hdr->type & HPS_MSG_F_RESERVE_BACK) {
		/* Only for the reserve we used, once. */
		if (hs->peer_reserve)
			goto violation;
		hs->peer_reserve = true;
	}
	/*
	 * Our reserve buffer: only for a CREDIT that returns credits or an
	 * ABORT, and not again before we gave it back.
	 */
	reserve = hdr->type & HPS_MSG_F_RESERVE;
	if (reserve && (hs->rx_reserve_owed ||
			(type == HPS_MSG_CREDIT ? !credits :
			 type != HPS_MSG_ABORT)))
		goto violation;

	switch (type) {
	case HPS_MSG_DATA:
		if (!len || test_bit(HPS_F_FIN_RCVD, &hs->flags))
			goto violation;
		if (sock_flag(sk, SOCK_DEAD)) {
			/* Data for a closed socket: reset, as TCP does. */
			spin_unlock(&hs->lock);
			hps_conn_error(hs, ECONNRESET);
			return;
		}
		b->type = HPS_MSG_DATA;
		b->len = len;
		b->off = 0;
		list_add_tail(&b->list, &hs->rx_ready);
		WRITE_ONCE(hs->rx_queued, hs->rx_queued + len);
		hs->rx_nready++;
		hs->rx_bytes += len;
		data = true;
		break;
	case HPS_MSG_CREDIT:
		if (len)
			goto violation;
		if (reserve)
			hps_rx_repost_reserve(hs, b);
		else
			hps_rx_repost(hs, b, false);
		break;
	case HPS_MSG_FIN:
		if (len || test_bit(HPS_F_FIN_RCVD, &hs->flags))
			goto violation;
		set_bit(HPS_F_FIN_RCVD, &hs->flags);
		set_bit(HPS_F_FIN_ACK_OWED, &hs->flags);
		hps_rx_repost(hs, b, false);
		fin = true;
		break;
	case HPS_MSG_SRCAVAIL:
		if (sock_flag(sk, SOCK_DEAD)) {
			spin_unlock(&hs->lock);
			hps_conn_error(hs, ECONNRESET);
			return;
		}
		fallthrough;
	case HPS_MSG_RDMA_DONE:
	case HPS_MSG_SENDSM:
	case HPS_MSG_CANCEL:
		switch (hps_zc_rx_msg(hs, b, type, len)) {
		case 1:
			data = true;
			break;
		case 0:
			hps_rx_repost(hs, b, false);
			break;
		default:
			goto violation;
		}
		break;
	case HPS_MSG_ABORT:
		spin_unlock(&hs->lock);
		hps_stat_inc(sock_net(&hs->sk), HPS_STAT_ABORTS);
		hps_conn_error_why(hs, ECONNRESET, HPS_AB_PEER);
		return;
	default:
		goto violation;
	}
	if (answer)
		hps_tx_ctrl(hs, HPS_MSG_CREDIT, true);
	hps_tx_push(hs);
	spin_unlock(&hs->lock);

	if (data)
		sk->sk_data_ready(sk);
	if (fin_done)
		hps_tx_fin_done(hs);
	if (fin) {
		hps_connd_kick(hs, HPS_W_STATE);
		sk->sk_state_change(sk);
	}
	if (credits)
		sk->sk_write_space(sk);
	return;

violation:
	spin_unlock(&hs->lock);
	hps_rx_violation(hs, "bad message");
}

/* Bytes ready to read. Context: any. */
static u32 hps_rx_queued(struct hps_sock *hs)
{
	return READ_ONCE(hs->rx_queued);
}

/**
 * hps_rx_readable() - may a reader take bytes now?
 * @hs: the connection
 *
 * Not while another reader's zero-copy read owns the head of the queue:
 * nothing behind it may be read before it either.
 *
 * Context: any.
 * Return: true if bytes are queued and no other reader owns them.
 */
bool hps_rx_readable(struct hps_sock *hs)
{
	return hps_rx_queued(hs) &&
	       !test_bit(HPS_F_ZC_RX_BUSY, &hs->flags);
}

/**
 * hps_rx_release_dead() - give back the buffers of abandoned SRCAVAILs
 * @hs: the connection
 *
 * An SRCAVAIL answered with SENDSM stays in rx_ready, empty, until a
 * reader passes it; one abandoned from the completion handler (the peer
 * cancelled) or by a peeking reader may wait there for long, holding a
 * buffer of the window the peer needs to send the rest by copy: at the
 * smallest window both ends could wait for each other that way. So they
 * go back here, where no reader holds a pointer into rx_ready (readers
 * walk it under the socket lock) except one whose zero-copy read owns
 * the head (HPS_F_ZC_RX_BUSY), which gives that one back itself.
 *
 * Context: process, socket lock held: the connection work (HPS_W_RX_DEAD,
 * kicked by hps_zc_rx_abandon()), or hps_zc_rd_release() (a reader's, or
 * the connection work's reap, in teardown too: nothing is reposted once
 * the connection is down).
 */
void hps_rx_release_dead(struct hps_sock *hs)
{
	struct hps_buf *b, *n;
	bool head = true;

	sock_owned_by_me(&hs->sk);
	spin_lock_bh(&hs->lock);
	list_for_each_entry_safe(b, n, &hs->rx_ready, list) {
		bool owned = head && test_bit(HPS_F_ZC_RX_BUSY, &hs->flags);

		head = false;
		if (owned || b->type != HPS_MSG_SRCAVAIL || !b->dead)
			continue;
		list_del_init(&b->list);
		hs->rx_nready--;
		hps_rx_repost(hs, b, true);
	}
	hps_tx_push(hs);
	spin_unlock_bh(&hs->lock);
}

/* Copy up to @len bytes to @msg; skip @skip bytes first when peeking. */
static int hps_rx_copy(struct hps_sock *hs, struct msghdr *msg, size_t len,
		       bool peek, size_t skip)
{
	struct hps_buf *b;
	size_t done = 0;

	spin_lock_bh(&hs->lock);
	b = list_first_entry_or_null(&hs->rx_ready, struct hps_buf, list);
	spin_unlock_bh(&hs->lock);

	while (b && done < len) {
		u32 avail = b->len - b->off, start = b->off;
		size_t chunk, n;

		if (b->type == HPS_MSG_SRCAVAIL) {
			if (b->dead && peek)
				goto next;
			if (b->dead) {
				/* Read or abandoned: the buffer goes back. */
				spin_lock_bh(&hs->lock);
				list_del_init(&b->list);
				hs->rx_nready--;
				hps_rx_repost(hs, b, true);
				hps_tx_push(hs);
				b = list_first_entry_or_null(&hs->rx_ready,
							     struct hps_buf,
							     list);
				spin_unlock_bh(&hs->lock);
				continue;
			}
			/* A peek cannot see these bytes: have them copied. */
			if (peek) {
				spin_lock_bh(&hs->lock);
				if (hs->zc_rx == b &&
				    !test_bit(HPS_F_ZC_RX_BUSY, &hs->flags)) {
					trace_hps_zc_rx(hs, len, HPS_ZCW_PEEK);
					hps_zc_rx_abandon(hs);
				}
				spin_unlock_bh(&hs->lock);
			}
			break;	/* hps_recvmsg() reads it with hps_zc_recv() */
		}

		if (peek && skip >= avail) {
			skip -= avail;
			goto next;
		}
		if (peek) {
			start += skip;
			avail -= skip;
			skip = 0;
		}
		chunk = min_t(size_t, avail, len - done);
		n = copy_to_iter(b->buf + HPS_HDR_LEN + start, chunk,
				 &msg->msg_iter);
		done += n;
		if (!peek && n) {
			spin_lock_bh(&hs->lock);
			b->off += n;
			WRITE_ONCE(hs->rx_queued, hs->rx_queued - n);
			if (b->off == b->len) {
				list_del_init(&b->list);
				hs->rx_nready--;
				hps_rx_repost(hs, b, true);
				hps_tx_push(hs);
			}
			spin_unlock_bh(&hs->lock);
		}
		if (n != chunk)
			return done ? done : -EFAULT;
		if (!peek) {
			spin_lock_bh(&hs->lock);
			b = list_first_entry_or_null(&hs->rx_ready,
						     struct hps_buf, list);
			spin_unlock_bh(&hs->lock);
			continue;
		}
next:
		spin_lock_bh(&hs->lock);
		b = list_is_last(&b->list, &hs->rx_ready) ? NULL :
		    list_next_entry(b, list);
		spin_unlock_bh(&hs->lock);
	}
	return done;
}

/*
 * The reader stopped at the peer's SRCAVAIL: read it zero copy if this read
 * qualifies, else have the rest sent by copy; nothing while another
 * reader's zero-copy read owns it. Socket lock held.
 * Return: bytes read, 0 or -errno.
 */
static int hps_rx_zc(struct hps_sock *hs, struct msghdr *msg, size_t len,
		     long timeo)
{
	struct hps_buf *b;

	spin_lock_bh(&hs->lock);
	b = list_first_entry_or_null(&hs->rx_ready, struct hps_buf, list);
	if (!b || b != hs->zc_rx ||
	    test_bit(HPS_F_ZC_RX_BUSY, &hs->flags)) {
		spin_unlock_bh(&hs->lock);
		return 0;
	}
	if (hps_zc_rx_eligible(hs, msg, len, timeo)) {
		spin_unlock_bh(&hs->lock);
		trace_hps_zc_rx(hs, len, HPS_ZCW_ZCOPY);
		return hps_zc_recv(hs, msg, len);
	}
	if (trace_hps_zc_rx_enabled())
		trace_hps_zc_rx(hs, len, hps_zc_rx_why(hs, msg, len, timeo));
	hps_zc_rx_abandon(hs);
	spin_unlock_bh(&hs->lock);
	return 0;
}

static bool hps_rx_eof(struct hps_sock *hs)
{
	return hs->sk.sk_shutdown & RCV_SHUTDOWN ||
	       test_bit(HPS_F_FIN_RCVD, &hs->flags);
}

/**
 * hps_recvmsg() - proto_ops.recvmsg
 * @sock: the socket
 * @msg: destination
 * @len: bytes wanted
 * @flags: MSG_DONTWAIT, MSG_PEEK, MSG_WAITALL, MSG_TRUNC is ignored
 *
 * Context: process; takes the socket lock.
 * Return: bytes copied, 0 at end of stream, or -errno.
 */
int hps_recvmsg(struct socket *sock, struct msghdr *msg, size_t len,
		int flags)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	bool peek = flags & MSG_PEEK;
	size_t copied = 0;
	int target, err = 0;
	long timeo;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP;

	lock_sock(sk);
	if (sk->sk_state == TCP_LISTEN) {
		err = -ENOTCONN;
		goto out;
	}
	timeo = sock_rcvtimeo(sk, flags & MSG_DONTWAIT);
	target = sock_rcvlowat(sk, flags & MSG_WAITALL, len);

	add_wait_queue(sk_sleep(sk), &wait);
	while (copied < len) {
		int n = hps_rx_copy(hs, msg, len - copied, peek, copied);
		bool owned;

		if (n < 0) {
			err = n;
			break;
		}
		copied += n;
		if (copied >= target || (copied && n == 0 && peek))
			break;
		if (n)
			continue;
		if (!peek) {
			n = hps_rx_zc(hs, msg, len - copied, timeo);
			if (n < 0) {
				err = copied ? 0 : n;
				break;
			}
			copied += n;
			if (copied >= target)
				break;
			if (n)
				continue;
		}
		/* Each pass over readable bytes takes some or drops some. */
		if (hps_rx_readable(hs))
			continue;
		if (hps_rx_eof(hs) || sk->sk_err) {
			/* Data queued before the FIN or the error comes first. */
			smp_rmb();
			if (hps_rx_readable(hs))
				continue;
		}
		/* Another reader's zero-copy read owns what is queued. */
		owned = hps_rx_queued(hs) &&
			test_bit(HPS_F_ZC_RX_BUSY, &hs->flags);
		if (!owned) {
			/* As TCP's SOCK_DONE: a FIN read is EOF, whatever came after. */
			if (test_bit(HPS_F_FIN_RCVD, &hs->flags)) {
				hps_update_state(hs);
				break;
			}
			if (sk->sk_err) {
				err = copied ? 0 : sock_error(sk);
				break;
			}
			if (hps_rx_eof(hs))
				break;
			if (sk->sk_state == TCP_CLOSE) {
				if (!test_bit(HPS_F_WAS_CONN, &hs->flags))
					err = -ENOTCONN;
				break;
			}
		}
		if (!timeo) {
			err = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(timeo);
			break;
		}
		if (owned)
			sk_wait_event(sk, &timeo,
				      !test_bit(HPS_F_ZC_RX_BUSY, &hs->flags),
				      &wait);
		else
			sk_wait_event(sk, &timeo,
				      hps_rx_readable(hs) || sk->sk_err ||
				      hps_rx_eof(hs) ||
				      sk->sk_state == TCP_CLOSE, &wait);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
out:
	release_sock(sk);
	return copied ? copied : err;
}

/* Pages one splice_read call fills at most: the default pipe's 16 slots. */
#define HPS_SPLICE_PAGES	16

/*
 * The pipe owns the pages it is given: private pages of our own, which a
 * reader may share (get) but not steal, as with any socket.
 */
static const struct pipe_buf_operations hps_pipe_buf_ops = {
	.release	= generic_pipe_buf_release,
	.get		= generic_pipe_buf_get,
};

static void hps_spd_release(struct splice_pipe_desc *spd, unsigned int i)
{
	put_page(spd->pages[i]);
}

/**
 * hps_splice_read() - proto_ops.splice_read: from the socket into a pipe
 * @sock: the socket
 * @ppos: file position; unused, a socket has none
 * @pipe: destination, locked by the caller
 * @len: bytes wanted
 * @flags: SPLICE_F_* (SPLICE_F_NONBLOCK: do not wait for data)
 *
 * Receives into freshly allocated pages through hps_recvmsg(), so every
 * rule of recvmsg (EOF, errors, timeouts, signals, O_NONBLOCK) holds, then
 * hands the filled pages to the pipe. At most as many pages as the pipe
 * has free slots are filled: the caller holds the pipe lock, so those
 * slots stay free and no byte taken off the stream can be dropped.
 *
 * Context: process; may sleep; takes the socket lock (in hps_recvmsg())
 * under the pipe lock, as TCP does.
 * Return: bytes moved to the pipe, 0 at end of stream, or -errno.
 */
ssize_t hps_splice_read(struct socket *sock, loff_t *ppos,
			struct pipe_inode_info *pipe, size_t len,
			unsigned int flags)
{
	struct page *pages[HPS_SPLICE_PAGES];
	struct partial_page partial[HPS_SPLICE_PAGES];
	struct bio_vec bvec[HPS_SPLICE_PAGES];
	struct splice_pipe_desc spd = {
		.pages		= pages,
		.partial	= partial,
		.nr_pages_max	= HPS_SPLICE_PAGES,
		.ops		= &hps_pipe_buf_ops,
		.spd_release	= hps_spd_release,
	};
	struct hps_sock *hs = hps_sk(sock->sk);
	struct msghdr msg = {};
	unsigned int i, nr, space;
	int mflags = 0;
	ssize_t ret;
	size_t got;
	u32 queued;

	might_sleep();
	if (!pipe->readers) {
		send_sig(SIGPIPE, current, 0);
		return -EPIPE;
	}
	space = pipe->max_usage - pipe_occupancy(pipe->head, pipe->tail);
	if (!space)
		return -EAGAIN;
	if (flags & SPLICE_F_NONBLOCK || sock->file->f_flags & O_NONBLOCK)
		mflags |= MSG_DONTWAIT;

	len = min_t(size_t, len, (size_t)min_t(unsigned int, space,
					       HPS_SPLICE_PAGES) << PAGE_SHIFT);
	/* Allocate no more pages than the data already here needs. */
	queued = READ_ONCE(hs->rx_queued);
	if (queued)
		len = min_t(size_t, len, queued);
	if (!len)
		return 0;

	nr = DIV_ROUND_UP(len, PAGE_SIZE);
	for (i = 0; i < nr; i++) {
		pages[i] = alloc_page(GFP_KERNEL_ACCOUNT);
		if (!pages[i]) {
			ret = -ENOMEM;
			goto out_free;
		}
		bvec_set_page(&bvec[i], pages[i],
			      min_t(size_t, PAGE_SIZE, len - i * PAGE_SIZE), 0);
	}
	iov_iter_bvec(&msg.msg_iter, ITER_DEST, bvec, nr, len);

	ret = hps_recvmsg(sock, &msg, len, mflags);
	if (ret <= 0)
		goto out_free;
	got = ret;

	spd.nr_pages = DIV_ROUND_UP(got, PAGE_SIZE);
	for (i = 0; i < spd.nr_pages; i++) {
		partial[i].offset = 0;
		partial[i].len = min_t(size_t, PAGE_SIZE, got - i * PAGE_SIZE);
		partial[i].private = 0;
	}
	while (nr > spd.nr_pages)
		put_page(pages[--nr]);

	/* Takes (or on failure releases) every page. */
	ret = splice_to_pipe(pipe, &spd);
	WARN_ON_ONCE(ret >= 0 && ret != got);
	return ret;

out_free:
	while (i--)
		put_page(pages[i]);
	return ret;
}
