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
 * Only readers and the connection work (hps_rx_release_dead(), and
 * hps_rx_collapse(), which copies unread bytes into fewer buffers), under
 * the socket lock, remove buffers from rx_ready; the softirq only appends,
 * buffers or, behind the bytes of the last DATA buffer, the bytes of a
 * short DATA (hps_rx_coalesce(): the length grows after the bytes are
 * there). So the reader may copy from the first buffer without holding
 * hs->lock, up to the length it read.
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
#include <net/busy_poll.h>
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

/*
 * Post a buffer of our window as one of the credits the next header
 * announces. Those credits have one class, the first buffer's; a buffer
 * of another class waits on rx_wait until they are announced
 * (hps_rx_post_waiting()), as does every buffer while the reserve, posted
 * again after them, waits to be announced (it follows the credits of the
 * header with HPS_MSG_F_RESERVE_BACK); one above rx_want goes back to the
 * connection work (the window shrank since it was sized).
 * Context: hs->lock held.
 */
static void hps_rx_post_credit(struct hps_sock *hs, struct hps_buf *b)
{
	u8 cls = b->cls;

	lockdep_assert_held(&hs->lock);
	/* one that could not be made smaller stands for a smaller one */
	if (b->keep)
		cls = min(cls, hs->rx_want);
	if (cls > hs->rx_want) {
		/* the window shrank meanwhile: not that large */
		list_add_tail(&b->list, &hs->rx_park);
		hps_connd_kick(hs, HPS_W_RESIZE);
		return;
	}
	if (hs->rx_reserve_owed || (hs->rx_pending && cls != hs->rx_cls)) {
		list_add_tail(&b->list, &hs->rx_wait);
		return;
	}
	if (!hps_rx_post_again(hs, b))
		return;
	b->keep = false;
	hs->rx_cls = cls;
	b->ann = cls;
	hs->rx_pending++;
	if (b->data)
		hs->rx_pending_data++;
	b->data = false;
}

/**
 * hps_rx_post_waiting() - post the buffers that waited for a header
 * @hs: the connection; the last header announced every pending credit
 *
 * Context: hs->lock held.
 */
void hps_rx_post_waiting(struct hps_sock *hs)
{
	struct hps_buf *b, *n;
	LIST_HEAD(wait);

	lockdep_assert_held(&hs->lock);
	list_splice_init(&hs->rx_wait, &wait);
	list_for_each_entry_safe(b, n, &wait, list) {
		list_del_init(&b->list);
		hps_rx_post_credit(hs, b);
	}
}

/*
 * Give a receive buffer back, as a credit: posted at once if it is of the
 * class to post now and the window keeps it, else left to the connection
 * work (hps_rx_resize()), which resizes or frees it. @data: it held DATA.
 * Context: hs->lock held.
 */
static void hps_rx_repost(struct hps_sock *hs, struct hps_buf *b, bool data)
{
	lockdep_assert_held(&hs->lock);
	if (!test_bit(HPS_F_CONN_UP, &hs->flags))
		return;
	b->data = data;
	if (b->cls != hs->rx_want ||
	    hs->rx_nbuf > hs->rx_win + HPS_RX_RESERVE) {
		list_add_tail(&b->list, &hs->rx_park);
		hps_connd_kick(hs, HPS_W_RESIZE);
		return;
	}
	hps_rx_post_credit(hs, b);
}

/*
 * The peer sent into our reserve buffer (HPS_MSG_F_RESERVE): post it
 * again, and tell the peer with the credits that announce it.
 * Context: hs->lock held.
 */
static void hps_rx_repost_reserve(struct hps_sock *hs, struct hps_buf *b)
{
	lockdep_assert_held(&hs->lock);
	if (!hps_rx_post_again(hs, b))
		return;
	b->ann = 0;	/* announced as of class 0, whatever it is */
	hs->rx_reserve_owed = true;
}

/**
 * hps_idle_arm() - watch a connection that holds more than it needs idle
 * @hs: the connection: its window grew or a send buffer was allocated
 *
 * Context: hs->lock held (a timer armed after the connection went down
 * would outlive its teardown's sk_stop_timer_sync()), or the socket lock
 * with the connection up (the teardown needs that lock).
 */
void hps_idle_arm(struct hps_sock *hs)
{
	if (test_bit(HPS_F_CONN_UP, &hs->flags) &&
	    !timer_pending(&hs->idle_timer))
		sk_reset_timer(&hs->sk, &hs->idle_timer,
			       jiffies + HPS_RX_IDLE);
}

/*
 * Unread bytes hold the buffers the peer needs: it is left with fewer
 * than the two credits DATA needs, counting those due to go back.
 * Context: hs->lock held.
 */
static bool hps_rx_starved(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hs->rx_nready && !test_bit(HPS_F_FIN_RCVD, &hs->flags) &&
	       hs->rx_out + (hps_tx_credits_due(hs) ? hs->rx_pending : 0) < 2;
}

/* Unread bytes may take more memory: below the unread limit, no pressure. */
static bool hps_rx_may_hold_more(struct hps_sock *hs)
{
	return (hs->rx_queued < HPS_RX_UNREAD_MAX ||
		hs->sk.sk_userlocks & SOCK_RCVBUF_LOCK) &&
	       !hps_mem_pressure(hps_net(sock_net(&hs->sk)));
}

/*
 * A DATA buffer, not the last unread one, of a class below @cls, whose
 * next buffer's unread bytes do not fit behind its own and would in a
 * buffer of @cls; else NULL. Context: hs->lock held.
 */
static struct hps_buf *hps_rx_to_enlarge(struct hps_sock *hs, u8 cls)
{
	u32 room = hps_cls_bytes(hs->buf_size, cls) - HPS_HDR_LEN;
	struct hps_buf *b, *next;

	lockdep_assert_held(&hs->lock);
	list_for_each_entry(b, &hs->rx_ready, list) {
		if (list_is_last(&b->list, &hs->rx_ready))
			break;
		next = list_next_entry(b, list);
		if (b->type == HPS_MSG_DATA && next->type == HPS_MSG_DATA &&
		    b->cls < cls &&
		    b->len - b->off + next->len - next->off <= room)
			return b;
	}
	return NULL;
}

/*
 * A message arrived: grow the window if the peer has more to send than it
 * takes. @b: the buffer a DATA of @len bytes stays in, unread, else NULL;
 * @more: that DATA was flagged HPS_MSG_F_MORE.
 *
 * A step to buffers twice as large when such a DATA filled @b and @b was
 * announced as of at least the class we post now (the last step is in
 * use), up to our buf_size or the peer's, whichever is smaller (its send
 * buffers are no larger). Twice as many buffers, up to nrx, when the peer
 * is left with fewer than the two credits DATA needs and the last
 * doubling's buffers are all there, if such a DATA filled @b or, unread
 * bytes holding buffers, the credits due to go back would not give the
 * peer two (a reader that waits for more before it reads, with MSG_PEEK
 * or FIONREAD, would wait for ever); not after the peer's FIN. Doubling
 * does not wait for the steps: larger buffers take the place of smaller
 * ones only as the reader empties them, and a reader that reads nothing
 * would leave the peer stalled at a few kilobytes.
 * Neither beyond what a failed allocation left (rx_max_cls, rx_max_win,
 * for a second: hps_rx_idle()), nor while %HPS_RX_UNREAD_MAX bytes wait
 * to be read (a larger window would not help a reader that far behind;
 * TCP lets in no more than its receive buffer either; no limit but the
 * window when SO_RCVBUF was set), nor while the namespace is under memory
 * pressure. Growth refused is looked at again a second later
 * (hps_rx_idle() calls this with @b NULL): the peer may be waiting for
 * it. The new buffers are announced at once (hps_rx_resize()).
 * Context: hs->lock held.
 */
static void hps_rx_grow(struct hps_sock *hs, struct hps_buf *b, u32 len,
			bool more)
{
	u8 top = min3(hs->rx_top, hs->peer_top, hs->rx_max_cls);
	u32 max = min(hs->nrx, hs->rx_max_win);
	bool full, starved, maxed, step, count;

	lockdep_assert_held(&hs->lock);
	/* full: the peer had more than it took */
	full = b && more &&
	       len + HPS_HDR_LEN >= hps_cls_bytes(hs->buf_size, b->ann);
	starved = hps_rx_starved(hs);
	maxed = hs->rx_win >= max;
	/*
	 * As many buffers as may be, all there: copy unread bytes into fewer
	 * of them (hps_rx_collapse()), and have those given back grow a
	 * class. Again from the timer (@b NULL) only if a buffer may grow:
	 * nothing else changed.
	 */
	if (starved && maxed && hs->rx_nready > 1 &&
	    hs->rx_nbuf >= hs->rx_win + HPS_RX_RESERVE &&
	    (b || hps_rx_to_enlarge(hs, min(hs->rx_top, hs->rx_max_cls))))
		hps_connd_kick(hs, HPS_W_RESIZE);
	step = hs->rx_want < top &&
	       ((full && b->ann >= hs->rx_want) || (starved && maxed));
	count = !maxed && hs->rx_out < 2 &&
		hs->rx_nbuf >= hs->rx_win + HPS_RX_RESERVE &&
		!test_bit(HPS_F_FIN_RCVD, &hs->flags) && (full || starved);
	if (!step && !count)
		return;
	if (!hps_rx_may_hold_more(hs)) {
		hps_idle_arm(hs);	/* again later */
		return;
	}
	if (step)
		hs->rx_want++;
	if (count)
		hs->rx_win = min(hs->rx_win * 2, max);
	hs->rx_shrinks = 0;
	hs->rx_shrink_owed = false;
	hps_stat_inc(sock_net(&hs->sk), HPS_STAT_RX_GROWS);
	hps_connd_kick(hs, HPS_W_RESIZE);
	hps_idle_arm(hs);
}

/**
 * hps_rx_idle() - give memory back when no data moved for a while
 * @t: hs->idle_timer
 *
 * No DATA received or sent for %HPS_RX_IDLE: the window goes back to
 * %HPS_CREDITS_MIN buffers of class 0, and the peer is asked for its
 * larger buffers back (SHRINK). No DATA sent for as long: the send
 * buffers go (hps_tx_free_idle()). The connection work does the freeing.
 * The timer runs again while there is more to give back.
 *
 * Context: timer (softirq).
 */
void hps_rx_idle(struct timer_list *t)
{
	struct hps_sock *hs = from_timer(hs, t, idle_timer);
	struct sock *sk = &hs->sk;
	unsigned long due, next = 0, now = jiffies;
	bool grown, left, kick = false;

	spin_lock(&hs->lock);
	if (!test_bit(HPS_F_CONN_UP, &hs->flags))
		goto out;
	/*
	 * A failed allocation capped the window a second ago or more, and
	 * growth may have been refused meanwhile: look again.
	 */
	hs->rx_max_cls = hs->rx_top;
	hs->rx_max_win = hs->nrx;
	hps_rx_grow(hs, NULL, 0, false);
	grown = hs->rx_want || hs->rx_win > HPS_CREDITS_MIN;
	/*
	 * Shrunk, but buffers beyond the window are still posted: the peer
	 * had something to send when it got the SHRINK. Ask again, a few
	 * times, if it is idle now.
	 */
	left = !grown && hs->rx_nbuf > HPS_CREDITS_MIN + HPS_RX_RESERVE &&
	       hs->rx_shrinks < HPS_RX_SHRINKS_MAX;
	if (grown || left) {
		due = hs->rx_data_stamp + HPS_RX_IDLE;
		/*
		 * A slow reader, not an idle peer, or a connection that sends:
		 * keep the window. The peer's credits come back into it, and
		 * the SHRINK and the PADs it brings would take the credits our
		 * DATA needs.
		 */
		if ((hs->rx_queued || !hps_tx_idle(hs)) &&
		    time_after_eq(now, due))
			due = now + HPS_RX_IDLE;
		if (time_after_eq(now, due)) {
			/* the larger buffers come back as the peer pads them */
			if (grown)
				hps_stat_inc(sock_net(sk), HPS_STAT_RX_SHRINKS);
			hs->rx_want = 0;
			hs->rx_win = HPS_CREDITS_MIN;
			hs->rx_shrink_owed = true;
			hs->rx_shrinks++;
			kick = true;
			due = now + HPS_RX_IDLE;
		}
		next = due;
	}
	if (READ_ONCE(hs->tx_pages) > 1) {
		if (hps_tx_idle(hs)) {
			kick = true;
		} else {
			due = max(hs->tx_data_stamp + HPS_RX_IDLE,
				  now + HPS_RX_IDLE / 4);
			next = next ? min(next, due) : due;
		}
	}
	if (kick)
		hps_connd_kick(hs, HPS_W_RESIZE);
	hps_tx_push(hs);
	if (next)
		sk_reset_timer(sk, &hs->idle_timer, next);
out:
	spin_unlock(&hs->lock);
	sock_put(sk);	/* from sk_reset_timer() */
}

/*
 * Give @b a buffer of class @cls instead of its own. Without memory it
 * keeps its own: a smaller one, and the window grows no more than that
 * class until it shrinks (else every buffer would come back to the
 * connection work); a larger one, posted as of @cls (the peer fills no
 * more of it) until it comes back again. The new buffer is allocated
 * before the old is freed: a buffer of the window never goes missing.
 * Context: process, socket lock held; nothing uses @b.
 */
static void hps_rx_realloc(struct hps_sock *hs, struct hps_buf *b, u8 cls)
{
	struct hps_buf nb = {};

	if (hps_wr_buf_alloc(hs, &nb, hps_cls_bytes(hs->buf_size, cls),
			     DMA_FROM_DEVICE, true)) {
		spin_lock_bh(&hs->lock);
		if (cls > b->cls) {
			/* could not grow: not beyond this class for now */
			hs->rx_want = min(hs->rx_want, b->cls);
			hs->rx_max_cls = min(hs->rx_max_cls, b->cls);
			hps_idle_arm(hs);	/* lifted a second later */
		} else {
			/* could not shrink: it stands for a smaller one */
			b->keep = true;
		}
		spin_unlock_bh(&hs->lock);
		return;
	}
	hps_wr_buf_free(hs, b, DMA_FROM_DEVICE);
	b->buf = nb.buf;
	b->dma = nb.dma;
	b->size = nb.size;
	b->cls = cls;
}

/* A receive descriptor without a buffer. Socket lock held. */
static struct hps_buf *hps_rx_free_desc(struct hps_sock *hs)
{
	u32 i;

	for (i = 0; i < hps_rx_bufs(hs); i++)
		if (!hs->rx[i].buf)
			return &hs->rx[i];
	return NULL;
}

/*
 * Copy the unread bytes of each DATA buffer behind those of the one
 * before it where they fit, and give the emptied buffers back. Context:
 * hs->lock and the socket lock held.
 */
static void hps_rx_merge(struct hps_sock *hs)
{
	struct hps_buf *b, *n, *prev = NULL;
	u32 avail;

	lockdep_assert_held(&hs->lock);
	list_for_each_entry_safe(b, n, &hs->rx_ready, list) {
		if (b->type != HPS_MSG_DATA) {
			prev = NULL;
			continue;
		}
		avail = b->len - b->off;
		if (prev && prev->len + avail <= prev->size - HPS_HDR_LEN) {
			memcpy(prev->buf + HPS_HDR_LEN + prev->len,
			       b->buf + HPS_HDR_LEN + b->off, avail);
			WRITE_ONCE(prev->len, prev->len + avail);
			list_del_init(&b->list);
			hs->rx_nready--;
			hps_rx_repost(hs, b, true);
			continue;
		}
		prev = b;
	}
}

/*
 * Give @b, which holds unread bytes and is not the last unread buffer, a
 * buffer of class @cls with the same bytes. Nothing else touches it: the
 * softirq copies only behind the last buffer, and readers take the
 * socket lock, which the caller holds.
 * Return: 0 or -errno (no memory, or the namespace's limit).
 */
static int hps_rx_enlarge(struct hps_sock *hs, struct hps_buf *b, u8 cls)
{
	struct hps_buf nb = {};
	u32 avail;
	int err;

	sock_owned_by_me(&hs->sk);
	err = hps_wr_buf_alloc(hs, &nb, hps_cls_bytes(hs->buf_size, cls),
			       DMA_FROM_DEVICE, true);
	if (err)
		return err;
	avail = b->len - b->off;
	memcpy(nb.buf + HPS_HDR_LEN, b->buf + HPS_HDR_LEN + b->off, avail);
	hps_wr_buf_free(hs, b, DMA_FROM_DEVICE);
	spin_lock_bh(&hs->lock);
	b->buf = nb.buf;
	b->dma = nb.dma;
	b->size = nb.size;
	b->cls = cls;
	b->off = 0;
	b->len = avail;
	spin_unlock_bh(&hs->lock);
	return 0;
}

/*
 * The peer is left without the two credits DATA needs and the window may
 * grow no more: unread bytes hold more buffers than they need (small
 * messages that came while the peer had credits, each in a buffer of its
 * own; or buffers of the first, smallest classes, the larger ones coming
 * only as buffers are read). Copy the unread bytes into fewer buffers,
 * larger ones if need be (of the largest class, within the unread limit
 * and the memory hps_rx_grow() allows), and give the emptied buffers
 * back, as TCP collapses its receive queue. The order of the bytes is
 * kept; nothing is copied across a SRCAVAIL.
 * Context: connection work, socket lock held (no reader walks rx_ready
 * or copies from its buffers); the softirq copies behind the last buffer
 * (hps_rx_coalesce()) under hs->lock, which the merges hold too.
 */
static void hps_rx_collapse(struct hps_sock *hs)
{
	struct hps_buf *b;
	u8 top;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	for (;;) {
		spin_lock_bh(&hs->lock);
		if (!test_bit(HPS_F_CONN_UP, &hs->flags) ||
		    !hps_rx_starved(hs) ||
		    hs->rx_win < min(hs->nrx, hs->rx_max_win) ||
		    hs->rx_nbuf < hs->rx_win + HPS_RX_RESERVE)
			break;
		hps_rx_merge(hs);
		top = min(hs->rx_top, hs->rx_max_cls);
		if (!hps_rx_starved(hs) || !hps_rx_may_hold_more(hs))
			break;
		b = hps_rx_to_enlarge(hs, top);
		spin_unlock_bh(&hs->lock);
		if (!b)
			return;
		if (hps_rx_enlarge(hs, b, top)) {
			spin_lock_bh(&hs->lock);
			/* not that class for a second (hps_rx_idle()) */
			hs->rx_max_cls = min(hs->rx_max_cls, b->cls);
			hps_idle_arm(hs);
			break;
		}
		cond_resched();
	}
	spin_unlock_bh(&hs->lock);
}

/**
 * hps_rx_resize() - make the window what rx_win and rx_want say
 * @hs: the connection
 *
 * The buffers left on rx_park are freed while the window is larger than
 * rx_win, else resized to the class rx_want and posted; new buffers are
 * allocated while it is smaller. A buffer that cannot be allocated leaves
 * the window as it is (the namespace's limit, net.hps.mem, or no memory).
 * An idle connection's send buffers go too (hps_tx_free_idle()).
 *
 * Context: connection work (HPS_W_RESIZE), socket lock held: nothing but
 * this allocates or frees buffers of a connection that is up, and a
 * descriptor on no list, without a buffer, is nobody's.
 */
void hps_rx_resize(struct hps_sock *hs)
{
	struct hps_buf *b, *n;
	LIST_HEAD(park);
	bool excess, grow;
	u8 want;
	int err;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (!hs->dev || !hs->rx)
		return;
	hps_tx_free_idle(hs);
	hps_rx_collapse(hs);

	spin_lock_bh(&hs->lock);
	if (!test_bit(HPS_F_CONN_UP, &hs->flags)) {
		spin_unlock_bh(&hs->lock);
		return;
	}
	list_splice_init(&hs->rx_park, &park);
	want = hs->rx_want;
	spin_unlock_bh(&hs->lock);

	list_for_each_entry_safe(b, n, &park, list) {
		list_del_init(&b->list);
		spin_lock_bh(&hs->lock);
		excess = hs->rx_nbuf > hs->rx_win + HPS_RX_RESERVE;
		if (excess)
			hs->rx_nbuf--;
		spin_unlock_bh(&hs->lock);
		if (excess) {
			hps_wr_buf_free(hs, b, DMA_FROM_DEVICE);
			b->data = false;
			continue;
		}
		if (b->cls != want)
			hps_rx_realloc(hs, b, want);
		spin_lock_bh(&hs->lock);
		hps_rx_post_credit(hs, b);
		spin_unlock_bh(&hs->lock);
	}

	for (;;) {
		spin_lock_bh(&hs->lock);
		grow = test_bit(HPS_F_CONN_UP, &hs->flags) &&
		       hs->rx_nbuf < hs->rx_win + HPS_RX_RESERVE;
		if (grow)
			hs->rx_nbuf++;
		want = hs->rx_want;
		spin_unlock_bh(&hs->lock);
		if (!grow)
			break;
		b = hps_rx_free_desc(hs);
		err = b ? hps_wr_buf_alloc(hs, b, hps_cls_bytes(hs->buf_size,
								   want),
					   DMA_FROM_DEVICE, true) : -EINVAL;
		spin_lock_bh(&hs->lock);
		if (err) {
			/* the window stays as large as it got */
			hs->rx_nbuf--;
			hs->rx_win = max_t(u32, hs->rx_nbuf - HPS_RX_RESERVE,
					   HPS_CREDITS_MIN);
			hs->rx_max_win = hs->rx_win;
			hps_idle_arm(hs);	/* lifted a second later */
			spin_unlock_bh(&hs->lock);
			break;
		}
		b->cls = want;
		/*
		 * announced at once when the peer is out of credits, as a
		 * consumed DATA buffer is (hps_tx_credit_update()): the
		 * window grew because the peer has more to send
		 */
		b->data = true;
		hps_rx_post_credit(hs, b);
		spin_unlock_bh(&hs->lock);
	}

	spin_lock_bh(&hs->lock);
	hps_tx_push(hs);
	spin_unlock_bh(&hs->lock);
}

/* DATA this short is copied behind unread bytes (hps_rx_coalesce()) */
#define HPS_RX_COALESCE_MAX	512

/*
 * A DATA of @len bytes arrived in @b: if it is short (or the peer is left
 * with fewer than the two credits DATA needs) and the last unread buffer
 * is DATA with room behind its bytes, copy them there and give @b back at
 * once, as TCP collapses small segments: unread small messages would
 * otherwise hold a buffer of the window each, and at a window of three
 * two of them leave the peer without the two credits DATA needs. A
 * reader copies from the head buffer without hs->lock, up to the length
 * it reads: the bytes are written before the new length (smp_wmb(),
 * paired with the smp_rmb() in hps_rx_copy()). Context: hs->lock held.
 * Return: true if @b was given back.
 */
static bool hps_rx_coalesce(struct hps_sock *hs, struct hps_buf *b, u32 len)
{
	struct hps_buf *prev;

	lockdep_assert_held(&hs->lock);
	/* any that fits when the peer is short of credits */
	if ((len > HPS_RX_COALESCE_MAX && hs->rx_out >= 2) ||
	    list_empty(&hs->rx_ready))
		return false;
	prev = list_last_entry(&hs->rx_ready, struct hps_buf, list);
	if (prev->type != HPS_MSG_DATA ||
	    prev->len + len > prev->size - HPS_HDR_LEN)
		return false;
	memcpy(prev->buf + HPS_HDR_LEN + prev->len, b->buf + HPS_HDR_LEN, len);
	smp_wmb();	/* the bytes before the length: see hps_rx_copy() */
	WRITE_ONCE(prev->len, prev->len + len);
	hps_rx_repost(hs, b, true);
	return true;
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
	struct hps_buf *queued = NULL;	/* a DATA buffer that stays unread */
	struct sock *sk = &hs->sk;
	const struct hps_hdr *hdr = b->buf;
	bool data = false, fin = false, fin_done = false, reserve, answer, more;
	u32 len, credits, back;
	u8 type, cls;

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

	/* only the bytes the message brought */
	ib_dma_sync_single_for_cpu(hs->dev->ibdev, b->dma,
				   min(wc->byte_len, b->size), DMA_FROM_DEVICE);
	if (wc->byte_len < HPS_HDR_LEN || hdr->version != HPS_PROTO_VERSION) {
		hps_rx_violation(hs, "bad header");
		return;
	}
	len = be32_to_cpu(hdr->len);
	credits = be16_to_cpu(hdr->credits);
	cls = credits >> HPS_CR_CLS_SHIFT;
	credits &= HPS_CR_COUNT;
	/* and no more than the class the buffer was announced as */
	if (len != wc->byte_len - HPS_HDR_LEN ||
	    len > b->size - HPS_HDR_LEN ||
	    len > hps_cls_bytes(hs->buf_size, b->ann) - HPS_HDR_LEN) {
		hps_rx_violation(hs, "bad length");
		return;
	}

	trace_hps_msg_recv(hs, hdr->type, len, credits, cls);
	spin_lock(&hs->lock);
	WRITE_ONCE(hs->rx_stamp, jiffies);	/* the peer is alive */
	hs->rx_msgs++;
	type = hdr->type & HPS_MSG_TYPE_MASK;
	reserve = hdr->type & HPS_MSG_F_RESERVE;
	more = hdr->type & HPS_MSG_F_MORE;
	back = !!(hdr->type & HPS_MSG_F_RESERVE_BACK);
	/*
	 * RESERVE_BACK: only for the reserve we used, once. The credits are
	 * of a class the peer's buffers have, within its window.
	 */
	if (back && hs->peer_reserve)
		goto violation;
	if ((credits && cls > hs->peer_top) ||
	    credits > hs->peer_credits_max - hs->tx_credits) {
		spin_unlock(&hs->lock);
		hps_rx_violation(hs, "credit overflow");
		return;
	}
	/* It took one of the credits we gave, or the reserve. */
	if (!reserve) {
		if (!hs->rx_out)
			goto violation;
		hs->rx_out--;
	}
	hps_tx_cr_push(hs, credits, cls);
	hs->tx_credits += credits;
	if (credits)
		hps_tx_acked(hs);	/* Nagle's rule; pushed below */
	if (back) {
		/* posted after them, as of class 0 */
		hps_tx_cr_push(hs, 1, 0);
		hs->peer_reserve = true;
	}
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
	/*
	 * Our reserve buffer: only for a CREDIT that returns credits or an
	 * ABORT, and not again before we gave it back.
	 */
	if (reserve && (hs->rx_reserve_taken ||
			(type == HPS_MSG_CREDIT ? !credits :
			 type != HPS_MSG_ABORT)))
		goto violation;
	if (reserve)
		hs->rx_reserve_taken = true;
	/* MORE: only on DATA */
	if (more && type != HPS_MSG_DATA)
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
		hs->rx_data_stamp = jiffies;
		data = true;
		hs->rx_bytes += len;
		WRITE_ONCE(hs->rx_queued, hs->rx_queued + len);
		if (hps_rx_coalesce(hs, b, len))
			break;
		b->type = HPS_MSG_DATA;
		b->len = len;
		b->off = 0;
		list_add_tail(&b->list, &hs->rx_ready);
		hs->rx_nready++;
		queued = b;
		break;
	case HPS_MSG_PAD:
		if (len)
			goto violation;
		hps_rx_repost(hs, b, false);
		break;
	case HPS_MSG_SHRINK: {
		const struct hps_shrink *sh = (const void *)(hdr + 1);

		if (len != sizeof(*sh))
			goto violation;
		/* the buffers the peer has given us so far, not later ones */
		hs->tx_pad = hs->tx_credits + hs->peer_reserve;
		hs->tx_pad_cls = min_t(u32, be32_to_cpu(sh->cls), HPS_CLS_MAX);
		hs->tx_pad_win = max_t(u32, be32_to_cpu(sh->window),
				       HPS_CREDITS_MIN);
		hps_rx_repost(hs, b, false);
		break;
	}
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
	hps_rx_grow(hs, queued, len, more);
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
	/*
	 * Credits make no room for a writer or a poller by themselves: they
	 * let queued buffers go, whose send completions make room and wake
	 * them (hps_send_done()). Only a zero-copy send waits for credits.
	 */
	if (credits)
		hps_zc_tx_credits(hs);
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

/*
 * Copy up to @len bytes to @msg; skip @skip bytes first when peeking.
 * Context: process, socket lock held; may sleep.
 */
static int hps_rx_copy(struct hps_sock *hs, struct msghdr *msg, size_t len,
		       bool peek, size_t skip)
{
	struct hps_buf *b;
	size_t done = 0;

	spin_lock_bh(&hs->lock);
	b = list_first_entry_or_null(&hs->rx_ready, struct hps_buf, list);
	spin_unlock_bh(&hs->lock);

	while (b && done < len) {
		/* a short DATA may be copied behind (hps_rx_coalesce()) */
		u32 blen = READ_ONCE(b->len), avail = blen - b->off;
		u32 start = b->off;
		size_t chunk, n;

		smp_rmb();	/* the bytes before the length that covers them */

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
			/*
			 * Each buffer given back lets the peer send another,
			 * which may be here by now: a reader that keeps up
			 * stays in this loop for the whole stream.
			 */
			cond_resched();
			spin_lock_bh(&hs->lock);
			b = list_first_entry_or_null(&hs->rx_ready,
						     struct hps_buf, list);
			spin_unlock_bh(&hs->lock);
			continue;
		}
next:
		spin_lock_bh(&hs->lock);
		if (b->type == HPS_MSG_DATA && b->len != blen) {
			/*
			 * A peek passed it and it grew meanwhile: the bytes
			 * it passed (skipped or copied) are skipped, and the
			 * new ones come before the next buffer's.
			 */
			skip += blen - b->off;
			spin_unlock_bh(&hs->lock);
			continue;
		}
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
	return READ_ONCE(hs->sk.sk_shutdown) & RCV_SHUTDOWN ||
	       test_bit(HPS_F_FIN_RCVD, &hs->flags);
}

/*
 * A sleeping reader waits for data, the end of the stream, an error or
 * another reader's zero-copy read; the send side's wakeups are not for it.
 * sk_write_space() (sock_def_write_space()) wakes with EPOLLOUT alone on
 * every send completion, and would have the
 * reader of a request-response connection run, find nothing and sleep
 * again once per message it sends. Wakeups without a key (state changes,
 * hps_zc_wake()) and those with any other event still wake it.
 * Context: the waker's (a wait queue callback: any context).
 */
static int hps_rx_wake(struct wait_queue_entry *wq_entry, unsigned int mode,
		       int sync, void *key)
{
	if (key && !(key_to_poll(key) &
		     ~(EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND)))
		return 0;
	return woken_wake_function(wq_entry, mode, sync, key);
}

#ifdef CONFIG_NET_RX_BUSY_POLL
/* What ends a reader's busy polling: what would wake it. Context: any. */
static bool hps_rx_busy_end(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;

	return hps_rx_readable(hs) || READ_ONCE(sk->sk_err) ||
	       hps_rx_eof(hs) || READ_ONCE(sk->sk_state) == TCP_CLOSE;
}

/* Completions one pass handles at most, whatever SO_BUSY_POLL_BUDGET says */
#define HPS_BUSY_BUDGET_MAX	256	/* IB_POLL_BUDGET_IRQ, the softirq's */

/*
 * The busy loop of hps_rx_busy_poll() and hps_rx_busy_poll_once(), with
 * no socket lock: @dev is held (hps_dev_hold()) and put here, @c is one
 * of its CQs. Context: process, may sleep; no lock held.
 */
static bool hps_rx_busy_loop(struct hps_sock *hs, struct hps_dev *dev,
			     struct hps_cq *c, bool nonblock)
{
	struct sock *sk = &hs->sk;
	int budget = READ_ONCE(sk->sk_busy_poll_budget) ?: BUSY_POLL_BUDGET;
	bool owned = false, ready;
	unsigned long start;
	long n = 0;

	might_sleep();
	budget = min(budget, HPS_BUSY_BUDGET_MAX);
	start = busy_loop_current_time();
	hps_busy_hold();
	for (;;) {
		if (!owned)
			owned = hps_cq_busy_get(c);
		if (owned)
			n += hps_cq_busy_poll(c, budget);
		/*
		 * PREEMPT_RT: one pass at a time, since the holder may be
		 * preempted, and every connection of the CQ would wait for
		 * it (hps_busy_hold())
		 */
		if (owned && IS_ENABLED(CONFIG_PREEMPT_RT)) {
			hps_cq_busy_put(c);
			owned = false;
		}
		ready = hps_rx_busy_end(hs);
		if (ready || nonblock || signal_pending(current) ||
		    sk_busy_loop_timeout(sk, start))
			break;
		if (need_resched()) {
			if (owned)
				hps_cq_busy_put(c);
			owned = false;
			hps_busy_release();
			cond_resched();
			hps_busy_hold();
			continue;
		}
		cpu_relax();
	}
	if (owned)
		hps_cq_busy_put(c);
	hps_busy_release();
	/* the CQs are freed with the device's last reference */
	hps_dev_put(dev);

	if (!nonblock)
		hps_stat_inc(sock_net(sk), ready ? HPS_STAT_BUSY_POLL_HITS :
						   HPS_STAT_BUSY_POLL_MISSES);
	if (n)
		hps_stat_add(sock_net(sk), HPS_STAT_BUSY_POLL_CQES, n);
	return ready;
}

/**
 * hps_rx_busy_poll() - poll the connection's completions instead of sleeping
 * @hs: the connection
 * @nonblock: one pass only (a non-blocking read)
 *
 * Busy polling (SO_BUSY_POLL; net.core.busy_read by default): for up to
 * sk_ll_usec microseconds, until the socket has something for the reader,
 * the reader handles the completions of the CQ its connection shares,
 * every connection's, taken from the CQ's softirq poller
 * (hps_cq_busy_get()) as NAPI busy polling takes a device queue. While the
 * softirq poller has the CQ, the reader only watches its socket. It stops
 * at a signal, and gives the CQ back and the CPU up while another task
 * needs the CPU, as napi_busy_loop() does. SO_BUSY_POLL_BUDGET bounds the
 * completions of one pass (8 by default, as for NAPI; 256 at most).
 *
 * Context: process; the socket lock held, released while polling (the
 * device reference keeps the CQ while the connection may be torn down).
 * Return: true if the socket has something for the reader.
 */
bool hps_rx_busy_poll(struct hps_sock *hs, bool nonblock)
{
	struct sock *sk = &hs->sk;
	struct hps_dev *dev = hs->dev;
	struct hps_cq *c = hs->cq;
	bool ready;

	sock_owned_by_me(sk);
	if (!c || !test_bit(HPS_F_CONN_UP, &hs->flags))
		return hps_rx_busy_end(hs);
	hps_dev_hold(dev);
	release_sock(sk);
	ready = hps_rx_busy_loop(hs, dev, c, nonblock);
	lock_sock(sk);
	return ready;
}

/**
 * hps_rx_busy_poll_once() - one pass over the connection's completions
 * @hs: the connection
 *
 * For poll() and select(), which call again until net.core.busy_poll's
 * time is up, without the socket lock, as tcp_poll(): the connection's
 * device and CQ, which change only while the socket lock is owned, are
 * read under its spinlock while nobody owns it; while somebody does, the
 * pass is skipped.
 *
 * Context: process, may sleep; the socket lock not held.
 */
void hps_rx_busy_poll_once(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;
	struct hps_dev *dev = NULL;
	struct hps_cq *c = NULL;

	spin_lock_bh(&sk->sk_lock.slock);
	if (!sock_owned_by_user_nocheck(sk) && hs->cq &&
	    test_bit(HPS_F_CONN_UP, &hs->flags)) {
		dev = hs->dev;
		c = hs->cq;
		hps_dev_hold(dev);
	}
	spin_unlock_bh(&sk->sk_lock.slock);
	if (c)
		hps_rx_busy_loop(hs, dev, c, true);
}
#endif /* CONFIG_NET_RX_BUSY_POLL */

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
	DEFINE_WAIT_FUNC(wait, hps_rx_wake);
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	struct socket *fb = hps_fb(hs);
	bool peek = flags & MSG_PEEK;
	bool busy = false;
	size_t copied = 0;
	int target, err = 0;
	long timeo;

	if (fb) {
		hps_fb_sync(hs, fb);	/* SO_RCVTIMEO, SO_RCVLOWAT, ... */
		return fb->ops->recvmsg(fb, msg, len, flags);
	}
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
		bool owned;
		int n;

		/* a long read that data keeps up with never sleeps */
		cond_resched();
		/* connect() fell back to TCP while we waited: read there */
		if (!copied && hps_fb(hs)) {
			err = HPS_FELL_BACK;
			break;
		}
		n = hps_rx_copy(hs, msg, len - copied, peek, copied);

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
		/* Once a call, as TCP: poll the completions, then sleep. */
		if (!busy && !owned && sk_can_busy_loop(sk)) {
			busy = true;
			/* off the wait queue: its wakeups are for a sleeper */
			remove_wait_queue(sk_sleep(sk), &wait);
			hps_rx_busy_poll(hs, !timeo);
			add_wait_queue(sk_sleep(sk), &wait);
			continue;
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
				      hps_rx_eof(hs) || hps_fb(hs) ||
				      sk->sk_state == TCP_CLOSE, &wait);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
out:
	release_sock(sk);
	if (err == HPS_FELL_BACK) {
		fb = hps_fb(hs);
		hps_fb_sync(hs, fb);
		return fb->ops->recvmsg(fb, msg, len, flags);
	}
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
