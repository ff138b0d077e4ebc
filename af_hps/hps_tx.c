// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Transmit path and credit-based flow control.
 *
 * Send buffers form a ring indexed by free-running counters (all protected
 * by hs->lock):
 *
 *   tx_done <= tx_posted <= tx_fill, tx_fill - tx_done <= ntx
 *
 * [tx_done, tx_posted) are posted and wait for their completion,
 * [tx_posted, tx_fill) are full and wait for a credit (the one at
 * tx_posted may be partly posted: see below), and slot tx_fill, if the
 * ring is not full, is the open slot the writer appends to. Small writes
 * are combined in the open slot while earlier messages are in flight and
 * not acknowledged (Nagle-like, hps_tx_unacked()), unless HPS_NODELAY;
 * HPS_CORK holds it until it is full or the cork is removed. A slot gets
 * its buffer from the writer that first needs it, as large as that write
 * (up to buf_size), and gives it back when the connection has sent
 * nothing for a while (hps_tx_free_idle()).
 *
 * One writer at a time (the socket lock) takes the open slot, only with
 * hps_tx_reserve(), which checks for room under hs->lock in the same
 * critical section that marks the slot as being filled (tx_filling); it
 * then copies without hs->lock, and the completion handlers, which post
 * the open slot when credits come, leave a slot being filled alone. Work
 * requests are posted in one place, hps_wr_post_send(),
 * hps_wr_post_data() and hps_wr_post_zero_write(), and the ring only moves
 * under hs->lock.
 *
 * Credits: tx_credits counts receive buffers the peer has posted for us,
 * and tx_cr their classes, in the order our messages will fill them: a
 * slot's bytes go out in as many DATA messages as the peer's buffers
 * need (hps_wr_post_data()), at most ntx work requests at a time. DATA,
 * FIN and SRCAVAIL need two credits, so that one is always left for a
 * control message (CREDIT, ABORT, a zero-copy answer, SHRINK, PAD); a
 * CREDIT message is only sent when it returns credits (or as the active
 * side's first message). Every message returns all credits pending at
 * the sender.
 *
 * The reserve: each end posts one receive buffer beyond its window
 * (HPS_RX_RESERVE). A CREDIT that returns credits, or an ABORT, goes into
 * it (HPS_MSG_F_RESERVE) when no credit is left, and the peer gives it
 * back (HPS_MSG_F_RESERVE_BACK) on its next message. So an end can always
 * return credits: two ends whose last credits went to zero-copy answers
 * at the same time cannot be left waiting for each other.
 *
 * Growing and shrinking (the receiving side's choice, hps_rx.c): DATA
 * says when more bytes wait behind it (HPS_MSG_F_MORE), and the peer
 * grows its window; a peer whose window shrank asks for its larger
 * buffers back (SHRINK), and this end sends a PAD into each of them once
 * nothing else waits to go out.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/sched/signal.h>
#include <linux/uio.h>
#include <net/tcp_states.h>

#include "hps.h"
#include "hps_trace.h"

static bool hps_can_post(struct hps_sock *hs, u32 need)
{
	return test_bit(HPS_F_CONN_UP, &hs->flags) &&
	       test_bit(HPS_F_PEER_READY, &hs->flags) &&
	       hs->tx_credits >= need;
}

static bool hps_ctrl_free(struct hps_sock *hs)
{
	return hs->ctrl_head - hs->ctrl_done < HPS_NCTRL;
}

/* No credit left, and the peer's reserve buffer is ours to use. */
static bool hps_can_use_reserve(struct hps_sock *hs)
{
	return hps_can_post(hs, 0) && !hs->tx_credits && hs->peer_reserve;
}

/**
 * hps_tx_cr_push() - the peer posted buffers for us
 * @hs: the connection
 * @n: how many
 * @cls: their class
 *
 * The caller checked that they fit in the peer's window (and the
 * reserve): tx_cr has a run for each at most.
 *
 * Context: hs->lock held.
 */
void hps_tx_cr_push(struct hps_sock *hs, u32 n, u8 cls)
{
	struct hps_cr_run *run;

	lockdep_assert_held(&hs->lock);
	if (!n)
		return;
	if (hs->tx_cr_nruns) {
		run = &hs->tx_cr[(hs->tx_cr_first + hs->tx_cr_nruns - 1) %
				 hs->tx_cr_cap];
		if (run->cls == cls) {
			run->n += n;
			return;
		}
	}
	if (WARN_ON_ONCE(hs->tx_cr_nruns >= hs->tx_cr_cap))
		return;
	run = &hs->tx_cr[(hs->tx_cr_first + hs->tx_cr_nruns) % hs->tx_cr_cap];
	run->n = n;
	run->cls = cls;
	hs->tx_cr_nruns++;
}

/**
 * hps_tx_cr_pop() - a message took the peer's oldest buffer
 * @hs: the connection
 *
 * Context: hs->lock held.
 */
void hps_tx_cr_pop(struct hps_sock *hs)
{
	struct hps_cr_run *run;

	lockdep_assert_held(&hs->lock);
	if (WARN_ON_ONCE(!hs->tx_cr_nruns))
		return;
	run = &hs->tx_cr[hs->tx_cr_first];
	if (--run->n)
		return;
	hs->tx_cr_first = (hs->tx_cr_first + 1) % hs->tx_cr_cap;
	hs->tx_cr_nruns--;
}

/*
 * Bytes a send buffer takes: a message's worth, its header left out (the
 * header goes from tx_hdr, but a buffer of a class then fills the peer's
 * buffer of that class exactly).
 */
static u32 hps_tx_cap(const struct hps_buf *b)
{
	return b->size - HPS_HDR_LEN;
}

/* Class of the peer's buffer our next message fills. hs->lock held. */
static u8 hps_tx_head_cls(struct hps_sock *hs)
{
	return hs->tx_cr_nruns ? hs->tx_cr[hs->tx_cr_first].cls : 0;
}

/* Payload bytes the peer's buffer our next message fills takes. */
static u32 hps_tx_head_room(struct hps_sock *hs)
{
	return hps_cls_bytes(hs->peer_buf_size, hps_tx_head_cls(hs)) -
	       HPS_HDR_LEN;
}

/**
 * hps_tx_ctrl_data() - post a control message with a small payload
 * @hs: the connection
 * @type: enum hps_msg_type other than HPS_MSG_DATA
 * @data: payload (at most what a control buffer holds) or NULL
 * @len: its length
 *
 * FIN and SRCAVAIL, which carry the stream forward, and SHRINK and PAD,
 * which no answer waits for, need two credits, so that one is always left
 * for the messages that answer or reset. An ABORT with no credit left
 * goes into the peer's reserve buffer.
 *
 * Context: hs->lock held.
 * Return: true if the message was posted.
 */
bool hps_tx_ctrl_data(struct hps_sock *hs, u8 type, const void *data,
		      u32 len)
{
	bool two = type == HPS_MSG_FIN || type == HPS_MSG_SRCAVAIL ||
		   type == HPS_MSG_SHRINK || type == HPS_MSG_PAD;
	struct hps_buf *b;
	u8 flags = 0;

	lockdep_assert_held(&hs->lock);
	if (!hps_can_post(hs, two ? 2 : 1)) {
		if (type != HPS_MSG_ABORT || !hps_can_use_reserve(hs))
			return false;
		flags = HPS_MSG_F_RESERVE;
	}
	if (!hps_ctrl_free(hs))
		return false;
	b = &hs->ctrl[hs->ctrl_head % HPS_NCTRL];
	b->len = 0;
	if (len)
		memcpy(b->buf + HPS_HDR_LEN, data, len);
	if (hps_wr_post_send(hs, b, type | flags, len)) {
		hps_conn_error(hs, ECONNRESET);
		return false;
	}
	hs->ctrl_head++;
	return true;
}

/**
 * hps_tx_ctrl() - post a control message without payload
 * @hs: the connection
 * @type: HPS_MSG_CREDIT, HPS_MSG_FIN, HPS_MSG_ABORT, HPS_MSG_RDMA_DONE or
 *	  HPS_MSG_CANCEL
 * @force: send a CREDIT message even with no credits to return
 *
 * A CREDIT that returns credits goes into the peer's reserve buffer when
 * no credit is left.
 *
 * Context: hs->lock held.
 * Return: true if the message was posted.
 */
bool hps_tx_ctrl(struct hps_sock *hs, u8 type, bool force)
{
	struct hps_buf *b;
	u8 flags = 0;

	lockdep_assert_held(&hs->lock);
	if (type != HPS_MSG_CREDIT)
		return hps_tx_ctrl_data(hs, type, NULL, 0);
	if (!hs->rx_pending && !force)
		return false;
	if (!hps_can_post(hs, 1)) {
		if (!hs->rx_pending || !hps_can_use_reserve(hs))
			return false;
		flags = HPS_MSG_F_RESERVE;
	}
	if (!hps_ctrl_free(hs))
		return false;
	b = &hs->ctrl[hs->ctrl_head % HPS_NCTRL];
	b->len = 0;
	if (hps_wr_post_send(hs, b, type | flags, 0)) {
		hps_conn_error(hs, ECONNRESET);
		return false;
	}
	hs->ctrl_head++;
	hps_stat_inc(sock_net(&hs->sk), HPS_STAT_CREDIT_MSGS);
	if (flags)
		hps_stat_inc(sock_net(&hs->sk), HPS_STAT_CREDIT_RESERVE);
	return true;
}

/**
 * hps_tx_credits_due() - do the credits pending go back now?
 * @hs: the connection
 *
 * Explicit credit update: see the comment at the top of the file. The
 * threshold is ack_thresh percent of the window as it is now, at least
 * two; the credits of data buffers and those of control messages'
 * buffers are compared with it apart. Every
 * credit goes back at once when the peer is left with fewer than the two
 * a DATA message needs and one of them held data (or is new: the window
 * grew), or buffers of another class wait for the next header
 * (hps_rx_post_credit()).
 *
 * Context: hs->lock held.
 * Return: true if they go in a CREDIT of their own, if nothing else
 * carries them first.
 */
bool hps_tx_credits_due(struct hps_sock *hs)
{
	u32 thresh;

	lockdep_assert_held(&hs->lock);
	if (!hs->rx_pending)
		return false;
	/*
	 * At once when the peer cannot send DATA for want of them, but only
	 * with a data buffer among them: credits of control messages alone
	 * would answer a CREDIT with a CREDIT, both ways, for ever.
	 */
	if ((hs->rx_out < 2 && hs->rx_pending_data) ||
	    !list_empty(&hs->rx_wait))
		return true;
	/*
	 * While our SRCAVAIL waits for its answer, every credit goes back at
	 * once: the answer needs one at the peer, and this writer may not be
	 * reading what would otherwise return them. Only until the answer
	 * comes: two ends both waiting for their LOCAL_INV would otherwise
	 * answer each other's CREDIT with a CREDIT.
	 */
	if (test_bit(HPS_F_ZC_TX, &hs->flags) &&
	    !test_bit(HPS_F_ZC_TX_REPLY, &hs->flags))
		return true;
	/*
	 * Data buffers and control messages' buffers count apart: two at
	 * least of either (the peer still has the two DATA needs), so that a
	 * CREDIT received and a message read do not send a CREDIT of their
	 * own just before the answer that would have carried both. Counted
	 * together, they did so at every turn of a request and its answer,
	 * both ways: each CREDIT took a buffer whose return made the next one
	 * due. While the peer has fewer than two, every pending credit goes
	 * at once if one held data (above).
	 */
	thresh = clamp_t(u32, hs->rx_win * hs->ack_thresh / 100,
			 min(2U, hs->rx_win - 1), hs->rx_win - 1);
	return hs->rx_pending_data >= thresh ||
	       hs->rx_pending - hs->rx_pending_data >= max(thresh, 2U);
}

/* The credit update, if due. Context: hs->lock held. */
static void hps_tx_credit_update(struct hps_sock *hs)
{
	if (hps_tx_credits_due(hs))
		hps_tx_ctrl(hs, HPS_MSG_CREDIT, false);
}

static u32 hps_tx_open_len(struct hps_sock *hs)
{
	if (hs->tx_fill - hs->tx_done >= hs->ntx)
		return 0;
	return hs->tx[hs->tx_fill % hs->ntx].len;
}

/*
 * Was DATA posted since the peer's last acknowledgment (hps_tx_acked())?
 * Context: hs->lock held.
 */
static bool hps_tx_posted_since_ack(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hs->tx_ack_mark != hs->tx_wr_head;
}

/**
 * hps_tx_unacked() - is DATA in flight that the peer has not acknowledged?
 * @hs: the connection
 *
 * TCP's Nagle's rule holds a small write while sent data is not
 * acknowledged, and the answer to a request acknowledges it. Here a DATA
 * message is acknowledged by its completion, or by a message from the
 * peer that returns credits: the peer took a message of ours to return
 * them, and every DATA message posted before that one arrived is taken as
 * acknowledged (hps_tx_acked()). That may be early (credits of a control
 * message, or of a window that grew): a small write then goes sooner, and
 * nothing else depends on it; the completions still free the buffers.
 *
 * Context: hs->lock held.
 * Return: true if such DATA is in flight.
 */
static bool hps_tx_unacked(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hs->tx_wr_out && hps_tx_posted_since_ack(hs);
}

/* Nagle's rule holds a short open slot now. Context: hs->lock held. */
static bool hps_tx_nagle_holds(struct hps_sock *hs)
{
	return !test_bit(HPS_F_NODELAY, &hs->flags) && hps_tx_unacked(hs);
}

/*
 * Credit stalls: data waits to be posted (full buffers, an open one that
 * would go, a zero-copy send's SRCAVAIL) and fewer than the two credits a
 * data message needs are left. Counted and traced when one begins and
 * ends; a connection that goes down ends its stall (__hps_teardown()).
 * Context: hs->lock held.
 */
void hps_tx_stall_update(struct hps_sock *hs)
{
	bool stalled;

	lockdep_assert_held(&hs->lock);
	stalled = hs->tx_credits < 2 &&
		  test_bit(HPS_F_CONN_UP, &hs->flags) &&
		  test_bit(HPS_F_PEER_READY, &hs->flags) &&
		  (hs->tx_posted != hs->tx_fill ||
		   (hps_tx_open_len(hs) && !hs->tx_filling &&
		    !hps_tx_nagle_holds(hs) &&
		    !test_bit(HPS_F_CORK, &hs->flags)) ||
		   (test_bit(HPS_F_ZC_TX_OWNED, &hs->flags) &&
		    !test_bit(HPS_F_ZC_TX, &hs->flags)));
	if (likely(stalled == hs->tx_stalled))
		return;
	hs->tx_stalled = stalled;
	if (stalled) {
		hs->tx_stall_start = ktime_get_ns();
		hs->tx_stalls++;
		hps_stat_inc(sock_net(&hs->sk), HPS_STAT_CREDIT_STALLS);
		trace_hps_tx_credit_stall(hs, hs->tx_credits, hs->tx_queued);
	} else {
		trace_hps_tx_credit_resume(hs, hs->tx_credits,
					   div_u64(ktime_get_ns() -
						   hs->tx_stall_start,
						   NSEC_PER_USEC));
	}
}

/*
 * Does nothing wait to go out but control messages: no data, no FIN, no
 * zero-copy send or answer? Then the peer's buffers may be given back
 * (PAD). Context: hs->lock held.
 */
static bool hps_tx_quiet(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hs->tx_posted == hs->tx_fill && !hps_tx_open_len(hs) &&
	       !hs->tx_filling &&
	       !test_bit(HPS_F_ZC_TX_OWNED, &hs->flags) &&
	       !test_bit(HPS_F_ZC_DONE_OWED, &hs->flags) &&
	       !test_bit(HPS_F_ZC_SENDSM_OWED, &hs->flags) &&
	       !test_bit(HPS_F_ZC_CANCEL_OWED, &hs->flags) &&
	       (!test_bit(HPS_F_FIN_PENDING, &hs->flags) ||
		test_bit(HPS_F_FIN_SENT, &hs->flags));
}

/*
 * Is one of the peer's @n oldest buffers we hold above class @cls?
 * Context: hs->lock held.
 */
static bool hps_tx_cr_above(struct hps_sock *hs, u32 n, u8 cls)
{
	u32 i;

	for (i = 0; i < hs->tx_cr_nruns && n; i++) {
		const struct hps_cr_run *run =
			&hs->tx_cr[(hs->tx_cr_first + i) % hs->tx_cr_cap];

		if (run->cls > cls)
			return true;
		n -= min_t(u32, n, run->n);
	}
	return false;
}

/*
 * The peer asked for its buffers back (SHRINK): those above class
 * tx_pad_cls, and those beyond the tx_pad_win it keeps. Fill the ones we
 * held then (tx_pad of them; every message we send takes one,
 * hps_wr_sent()) with a PAD, oldest first (the smaller ones among them
 * too: a message fills the oldest), while nothing else goes out. A PAD,
 * as DATA, leaves a credit for the answers.
 * Context: hs->lock held.
 */
static void hps_tx_pad(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	while (hs->tx_pad && hps_tx_quiet(hs)) {
		if (!hps_tx_cr_above(hs, hs->tx_pad, hs->tx_pad_cls) &&
		    hs->tx_credits <= hs->tx_pad_win) {
			hs->tx_pad = 0;
			break;
		}
		if (!hps_tx_ctrl(hs, HPS_MSG_PAD, false))
			break;
	}
}

/*
 * Post the next piece of the first slot not fully posted, as much as the
 * peer's next buffer takes. Context: hs->lock held.
 * Return: 0 or -errno from the driver.
 */
static int hps_tx_post_next(struct hps_sock *hs)
{
	struct hps_buf *b = &hs->tx[hs->tx_posted % hs->ntx];
	u32 n = min(b->len - b->sent, hps_tx_head_room(hs));
	bool more, ask;
	int err;

	if (!hs->tx_wr_out)
		hs->tx_stamp = jiffies;	/* nothing was in flight */
	/* bytes wait behind it: in this slot, a later full one, the open one */
	more = b->sent + n < b->len || hs->tx_posted + 1 != hs->tx_fill ||
	       hps_tx_open_len(hs);
	/*
	 * Nagle's rule holds a small write while DATA in flight is neither
	 * complete nor acknowledged (hps_tx_nagle_holds()). If a small write
	 * came after DATA posted since the peer's last acknowledgment, or
	 * did in the period before (the writer sends small writes faster
	 * than the peer answers, or two before each answer: hps_tx_commit()),
	 * the last piece of a short buffer asks for its completion, which
	 * comes once it is delivered (iWARP: once it left), so that the
	 * write after it finds it complete and needs no fence. A writer each
	 * of whose requests the peer answers with credits is not held, and
	 * its requests do not ask. A full buffer does not ask (the open slot
	 * is empty when it goes): a small write after it asks for a fence if
	 * it is held.
	 */
	ask = b->sent + n == b->len && b->len < hps_tx_cap(b) &&
	      (hs->tx_nagle_met || hs->tx_nagle_met_before) &&
	      !test_bit(HPS_F_NODELAY, &hs->flags) &&
	      !test_bit(HPS_F_CORK, &hs->flags);
	err = hps_wr_post_data(hs, b, n, more, ask);
	if (err)
		return err;
	hs->tx_data_stamp = jiffies;
	if (b->sent == b->len)
		hs->tx_posted++;
	return 0;
}

/**
 * hps_tx_acked() - a message from the peer returned credits
 * @hs: the connection
 *
 * Nagle's rule takes the DATA posted so far as acknowledged
 * (hps_tx_unacked()); the caller pushes what it held. If DATA was posted
 * since the last one, a new period begins for hps_tx_post_next()'s
 * choice to ask (a CREDIT and an answer in a row are one).
 *
 * Context: hs->lock held.
 */
void hps_tx_acked(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	if (!hps_tx_posted_since_ack(hs))
		return;
	hs->tx_ack_mark = hs->tx_wr_head;
	hs->tx_nagle_met_before = hs->tx_nagle_met;
	hs->tx_nagle_met = false;
}

/* An open slot holds a tail that waits to be posted. hs->lock held. */
static bool hps_tx_tail_held(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hps_tx_open_len(hs) && !hs->tx_filling &&
	       hs->tx_posted == hs->tx_fill;
}

/*
 * A tail that MSG_MORE held back goes out with the next completion
 * (hps_tx_push() from its handler), as it went out with the last
 * message's when every message asked for its own. If that one did not
 * ask, the cover timer runs within HPS_TX_MORE_DELAY + 1 jiffies (a
 * whole HPS_TX_MORE_DELAY at least, whatever part of a jiffy is left),
 * not HPS_TX_COVER_DELAY, and posts the tail if it is still held
 * (Nagle's rule may ask for a fence first): a write that follows soon
 * takes it along, and one that does not leaves it waiting a few ms. With
 * no DATA in flight no completion is sure to come (a control message's,
 * or a received message's push, may take the tail sooner): the timer
 * posts it within HPS_TX_COVER_DELAY, as TCP's probe timer sends a
 * corked tail after a retransmission timeout. The timer may run sooner,
 * armed earlier for the cover; the delays are upper bounds. If Nagle's
 * rule holds the tail as well, the timer would only find it held: the
 * completion it waits for is asked for now (a fence, unless one is
 * coming), and pushes the tail, as that of a message that asked did; a
 * write meanwhile joins it.
 * Context: hs->lock held.
 */
static void hps_tx_cover_soon(struct hps_sock *hs)
{
	unsigned long due;

	lockdep_assert_held(&hs->lock);
	if (!test_bit(HPS_F_CONN_UP, &hs->flags))
		return;
	if (hps_tx_nagle_holds(hs)) {
		hps_tx_cover(hs);
		return;
	}
	if (hs->tx_wr_sig != hs->tx_wr_head)
		due = jiffies + HPS_TX_MORE_DELAY + 1;
	else if (!hs->tx_wr_out)
		due = jiffies + HPS_TX_COVER_DELAY;
	else
		return;		/* a completion is coming: it pushes the tail */
	hs->cover_soon = true;
	if (!timer_reduce(&hs->cover_timer, due))
		sock_hold(&hs->sk);	/* armed now: the timer's reference */
}

static void __hps_tx_push(struct hps_sock *hs, bool hold)
{
	struct hps_buf *b;
	u32 len;

	lockdep_assert_held(&hs->lock);
	if (!test_bit(HPS_F_CONN_UP, &hs->flags))
		return;

	for (;;) {
		/* Full slots first, in order. */
		while (hs->tx_posted != hs->tx_fill && hps_can_post(hs, 2) &&
		       hs->tx_wr_out < hs->ntx) {
			if (hps_tx_post_next(hs)) {
				hps_conn_error(hs, ECONNRESET);
				return;
			}
		}

		/* Then the open slot, if the Nagle/cork rules let it go. */
		len = hps_tx_open_len(hs);
		if (!len || hs->tx_filling || hs->tx_posted != hs->tx_fill ||
		    !hps_can_post(hs, 2) || hs->tx_wr_out >= hs->ntx)
			break;
		b = &hs->tx[hs->tx_fill % hs->ntx];
		if (len < hps_tx_cap(b) &&
		    !test_bit(HPS_F_FIN_PENDING, &hs->flags) &&
		    (hold || test_bit(HPS_F_CORK, &hs->flags) ||
		     hps_tx_nagle_holds(hs))) {
			/*
			 * Nagle's rule: until what is in flight completes or
			 * the peer acknowledges it
			 */
			if (test_bit(HPS_F_CORK, &hs->flags))
				break;
			if (!hold)
				hps_tx_cover(hs);
			else
				hps_tx_cover_soon(hs);	/* MSG_MORE */
			break;
		}
		hps_tx_wait_begins(hs);
		hs->tx_fill++;		/* full now: posted above */
	}

	/* Zero-copy answers and cancels. */
	hps_zc_push(hs);

	/* FIN after the last byte, none while a zero-copy send is under way. */
	if (test_bit(HPS_F_FIN_PENDING, &hs->flags) &&
	    !test_bit(HPS_F_FIN_SENT, &hs->flags) &&
	    !test_bit(HPS_F_ZC_TX_OWNED, &hs->flags) &&
	    hs->tx_posted == hs->tx_fill && !hps_tx_open_len(hs) &&
	    !hs->tx_filling) {
		if (hps_tx_ctrl(hs, HPS_MSG_FIN, false))
			set_bit(HPS_F_FIN_SENT, &hs->flags);
	}

	/* Our window shrank: ask for the buffers beyond it back. */
	if (hs->rx_shrink_owed) {
		struct hps_shrink sh = {
			.cls	= cpu_to_be32(hs->rx_want),
			.window	= cpu_to_be32(hs->rx_win),
		};

		if (hps_tx_ctrl_data(hs, HPS_MSG_SHRINK, &sh, sizeof(sh)))
			hs->rx_shrink_owed = false;
	}

	hps_tx_credit_update(hs);
	hps_tx_pad(hs);

	/*
	 * The FIN-ack and the reserve's return go out at once, on a CREDIT if
	 * nothing else took them.
	 */
	if (test_bit(HPS_F_FIN_ACK_OWED, &hs->flags) ||
	    hs->rx_reserve_owed)
		hps_tx_ctrl(hs, HPS_MSG_CREDIT, true);

	hps_tx_stall_update(hs);
}

/**
 * hps_tx_nudge() - repeat the active side's first message
 * @t: hs->nudge_timer
 *
 * siw (Linux 6.1) sends the MPA reply before it hands the passive side's
 * socket to the QP; a message arriving in between stays unread in the TCP
 * socket until the next one arrives. So the passive side answers the first
 * message it gets (see hps_recv_done()), and until it has heard anything
 * the active side repeats a CREDIT, at growing intervals, at most
 * %HPS_NUDGES_MAX times: each one makes siw read what was stuck.
 *
 * Context: timer (softirq).
 */
void hps_tx_nudge(struct timer_list *t)
{
	struct hps_sock *hs = from_timer(hs, t, nudge_timer);
	struct sock *sk = &hs->sk;

	spin_lock(&hs->lock);
	if (test_bit(HPS_F_CONN_UP, &hs->flags) &&
	    !test_bit(HPS_F_RX_SEEN, &hs->flags) &&
	    hs->nudges < HPS_NUDGES_MAX &&
	    hps_tx_ctrl(hs, HPS_MSG_CREDIT, true)) {
		/* (none left: the answer returns them, and stops us) */
		hs->nudges++;
		if (hs->nudges < HPS_NUDGES_MAX)
			sk_reset_timer(sk, &hs->nudge_timer, jiffies +
				       (HPS_NUDGE_TIMEOUT << hs->nudges));
	}
	spin_unlock(&hs->lock);
	sock_put(sk);	/* from sk_reset_timer() */
}

/**
 * hps_ka_idle_ms() - TCP_KEEPIDLE in effect, in milliseconds
 * @hs: the socket
 *
 * The socket's own value; else net.hps.keepalive_ms as of connection
 * setup, or as now before a connection (10 s where that is 0).
 *
 * Context: any.
 * Return: milliseconds, never 0.
 */
u32 hps_ka_idle_ms(struct hps_sock *hs)
{
	u32 v = READ_ONCE(hs->ka_idle);

	if (!v)
		v = READ_ONCE(hs->ka_sys_ms);
	if (!v && !test_bit(HPS_F_WAS_CONN, &hs->flags))
		v = READ_ONCE(hps_net(sock_net(&hs->sk))->keepalive_ms);
	return v ?: HPS_KA_DEFAULT_MS;
}

/**
 * hps_ka_intvl_ms() - TCP_KEEPINTVL in effect, in milliseconds
 * @hs: the socket
 *
 * Context: any.
 * Return: milliseconds, never 0 (as hps_ka_idle_ms()).
 */
u32 hps_ka_intvl_ms(struct hps_sock *hs)
{
	u32 v = READ_ONCE(hs->ka_intvl);

	if (!v)
		v = READ_ONCE(hs->ka_sys_ms);
	if (!v && !test_bit(HPS_F_WAS_CONN, &hs->flags))
		v = READ_ONCE(hps_net(sock_net(&hs->sk))->keepalive_ms);
	return v ?: HPS_KA_DEFAULT_MS;
}

/**
 * hps_ka_cnt() - TCP_KEEPCNT in effect
 * @hs: the socket
 *
 * Context: any.
 * Return: the socket's own value, else net.hps.keepalive_probes (as of
 * connection setup, or now before a connection).
 */
u32 hps_ka_cnt(struct hps_sock *hs)
{
	u32 v = READ_ONCE(hs->ka_cnt);

	if (!v)
		v = READ_ONCE(hs->ka_sys_cnt);
	if (!v)
		v = READ_ONCE(hps_net(sock_net(&hs->sk))->keepalive_probes);
	return v ?: HPS_KA_PROBES_DEFAULT;
}

/*
 * Is the sending side waiting: data posted and not completed, full
 * buffers or an open one held for lack of credits, or a zero-copy send
 * under way? TCP_USER_TIMEOUT bounds how long it may wait without
 * progress. Context: hs->lock held.
 */
static bool hps_tx_waiting(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hs->tx_done != hs->tx_fill ||
	       (hps_tx_open_len(hs) && hs->tx_credits < 2) ||
	       test_bit(HPS_F_ZC_TX_OWNED, &hs->flags);
}

/**
 * hps_tx_wait_begins() - the sending side may start waiting now
 * @hs: the connection
 *
 * Called before a change that can make hps_tx_waiting() true (a writer
 * commits bytes, a buffer is posted, a zero-copy send starts): a wait
 * that begins now is measured from now, not from the last progress. With
 * TCP_USER_TIMEOUT set, the timer is brought forward to the end of that
 * wait if it would run later (it looks again only every timeout while
 * nothing waits). The timer re-arms only while the connection is up (see
 * hps_teardown()).
 *
 * Context: hs->lock held.
 */
void hps_tx_wait_begins(struct hps_sock *hs)
{
	unsigned long due;
	u32 ut;

	lockdep_assert_held(&hs->lock);
	if (hps_tx_waiting(hs))
		return;
	hs->tx_stamp = jiffies;
	ut = READ_ONCE(hs->user_timeout);
	if (!ut || !test_bit(HPS_F_CONN_UP, &hs->flags) ||
	    !test_bit(HPS_F_WAS_CONN, &hs->flags) ||
	    test_bit(HPS_F_ABORTED, &hs->flags))
		return;
	due = hs->tx_stamp + msecs_to_jiffies(ut) + 1;	/* see hps_tx_keepalive() */
	if (!timer_pending(&hs->ka_timer) ||
	    time_after(hs->ka_timer.expires, due))
		sk_reset_timer(&hs->sk, &hs->ka_timer, due);
}

/**
 * hps_tx_ka_start() - start the keepalive of a new connection
 * @hs: the connection, just established
 *
 * The timer runs while keepalive (SO_KEEPALIVE) or TCP_USER_TIMEOUT is on.
 *
 * Context: process (connection work), socket lock held.
 */
void hps_tx_ka_start(struct hps_sock *hs)
{
	sock_owned_by_me(&hs->sk);
	spin_lock_bh(&hs->lock);
	WRITE_ONCE(hs->rx_stamp, jiffies);
	hs->tx_stamp = jiffies;
	if (hs->ka_on || hs->user_timeout)
		sk_reset_timer(&hs->sk, &hs->ka_timer, jiffies);
	spin_unlock_bh(&hs->lock);
}

/**
 * hps_tx_ut_set() - set TCP_USER_TIMEOUT
 * @hs: the socket
 * @ms: the new timeout, 0 for none
 *
 * A sender that waits when the timeout changes waits from now: the
 * option never ends a connection at once (hps_tx_ka_config() then runs
 * the timer), and the grace of the old one ends (hps_tx_keepalive()).
 *
 * Context: socket lock and hs->lock held.
 */
void hps_tx_ut_set(struct hps_sock *hs, u32 ms)
{
	sock_owned_by_me(&hs->sk);
	lockdep_assert_held(&hs->lock);
	if (ms == hs->user_timeout)
		return;
	WRITE_ONCE(hs->user_timeout, ms);
	hs->ut_grace = false;
	/* the send buffers exist while the connection is up */
	if (ms && test_bit(HPS_F_CONN_UP, &hs->flags) && hps_tx_waiting(hs))
		hs->tx_stamp = jiffies;
}

/**
 * hps_tx_ka_config() - the keepalive options of a socket changed
 * @hs: the socket
 *
 * On a connection that is up the timer runs at once with the new values.
 * The silence counted so far is cut to the new idle time, so that a
 * change never ends a connection at once: a probe goes out first, as
 * TCP's keepalive sends one when its idle time is shortened (it counts
 * probes, this one silence).
 *
 * Context: process, socket lock held.
 */
void hps_tx_ka_config(struct hps_sock *hs)
{
	unsigned long now = jiffies, idle;

	sock_owned_by_me(&hs->sk);
	spin_lock_bh(&hs->lock);
	if (test_bit(HPS_F_CONN_UP, &hs->flags) &&
	    test_bit(HPS_F_WAS_CONN, &hs->flags) &&
	    !test_bit(HPS_F_ABORTED, &hs->flags) &&
	    (hs->ka_on || hs->user_timeout)) {
		idle = msecs_to_jiffies(hps_ka_idle_ms(hs));
		if (time_before(READ_ONCE(hs->rx_stamp), now - idle))
			WRITE_ONCE(hs->rx_stamp, now - idle);
		sk_reset_timer(&hs->sk, &hs->ka_timer, now);
	}
	spin_unlock_bh(&hs->lock);
}

/* The earlier of two deadlines, 0 meaning none. */
static unsigned long hps_ka_first(unsigned long a, unsigned long b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return time_before(a, b) ? a : b;
}

/**
 * hps_tx_keepalive() - keepalive and user timeout of a connection
 * @t: hs->ka_timer
 *
 * Keepalive (SO_KEEPALIVE): when the peer has given no sign of life (no
 * message, no acknowledged probe) for TCP_KEEPIDLE, send a probe
 * (hps_wr_post_zero_write()) unless one is still in flight, and again every
 * TCP_KEEPINTVL while the silence lasts. A probe that fails aborts the
 * connection, so that calls blocked on a connection whose peer died
 * return (ETIMEDOUT) instead of waiting for ever: see
 * Documentation/reliability.rst. The transport normally decides that
 * within seconds; should it never complete the probe (a driver that stops
 * retrying), the connection is aborted all the same (ETIMEDOUT) after
 * TCP_KEEPIDLE + TCP_KEEPCNT * TCP_KEEPINTVL of silence, or with
 * TCP_USER_TIMEOUT set, as TCP does, after that much silence and at least
 * one probe interval. A probe is never the first message of the passive
 * side (iWARP rule).
 *
 * TCP_USER_TIMEOUT: the sending side may wait (hps_tx_waiting()) without
 * progress for that long; then the connection is aborted (ETIMEDOUT).
 * With a timeout set, every DATA message asks for its completion
 * (hps_wr_post_data()), so progress is seen as it comes; if some posted
 * before it was set did not, and are not yet known complete, their
 * completion is asked for first (hps_tx_cover()) and the timeout looked
 * at again a timeout later (hs->ut_grace), once per progress.
 *
 * The values are read at every run, so a change on an established
 * connection takes effect here (hps_tx_ka_config() runs the timer at once).
 *
 * Context: timer (softirq).
 */
void hps_tx_keepalive(struct timer_list *t)
{
	struct hps_sock *hs = from_timer(hs, t, ka_timer);
	struct sock *sk = &hs->sk;
	unsigned long now, stamp, idle, intvl, limit = 0, ut;
	unsigned long next = 0, silence = 0;
	enum hps_stat why = HPS_STAT_MAX;

	spin_lock(&hs->lock);
	now = jiffies;		/* not before the stamps written under the lock */
	if (!test_bit(HPS_F_CONN_UP, &hs->flags) ||
	    test_bit(HPS_F_ABORTED, &hs->flags))
		goto out;
	ut = msecs_to_jiffies(READ_ONCE(hs->user_timeout));
	if (ut && hps_tx_waiting(hs)) {
		/* more than ut jiffies: the wait began within the first */
		silence = now - hs->tx_stamp;
		if (silence > ut && !hs->ut_grace &&
		    hs->tx_wr_sig != hs->tx_wr_head) {
			/*
			 * DATA messages posted before the timeout was set,
			 * without asking for their completion, may be all it
			 * waits for, done long ago: ask, and give the answer
			 * time to come.
			 */
			hps_tx_cover(hs);
			if (test_bit(HPS_F_ABORTED, &hs->flags))
				goto out;	/* the fence could not go */
			hs->ut_grace = true;
			hs->ut_grace_end = now + max(ut, HPS_TX_FENCE_GRACE) + 1;
			next = hs->ut_grace_end;
		} else if (silence > ut && hs->ut_grace &&
			   time_before(now, hs->ut_grace_end)) {
			next = hs->ut_grace_end;
		} else if (silence > ut) {
			why = HPS_STAT_USER_TIMEOUTS;
			limit = ut;
			goto out;
		} else {
			next = hs->tx_stamp + ut + 1;
		}
	} else if (ut) {
		/*
		 * Nothing waits: a wait that begins brings the timer forward
		 * (hps_tx_wait_begins()); look again now and then all the
		 * same, at most once a second.
		 */
		next = now + max_t(unsigned long, ut, HZ);
	}
	if (hs->ka_on) {
		idle = msecs_to_jiffies(hps_ka_idle_ms(hs));
		intvl = msecs_to_jiffies(hps_ka_intvl_ms(hs));
		limit = ut ? max(ut, idle + intvl) :
			     idle + intvl * hps_ka_cnt(hs);
		stamp = READ_ONCE(hs->rx_stamp);
		if (time_before(now, stamp + idle)) {
			next = hps_ka_first(next, stamp + idle);
		} else if (time_after_eq(now, stamp + limit)) {
			silence = now - stamp;
			why = HPS_STAT_PEER_TIMEOUTS;
			goto out;
		} else {
			if (test_bit(HPS_F_PEER_READY, &hs->flags) &&
			    !test_and_set_bit(HPS_F_KA_OUT, &hs->flags)) {
				if (hps_wr_post_zero_write(hs, &hs->ka_cqe)) {
					clear_bit(HPS_F_KA_OUT, &hs->flags);
				} else {
					silence = now - stamp;
					trace_hps_ka_probe(hs,
							   jiffies_to_msecs(silence));
					hs->ka_probes++;
					hps_stat_inc(sock_net(sk),
						     HPS_STAT_KA_PROBES);
				}
			}
			next = hps_ka_first(next, time_before(now + intvl,
							      stamp + limit) ?
					    now + intvl : stamp + limit);
		}
	}
	if (next)
		sk_reset_timer(sk, &hs->ka_timer, next);
out:
	spin_unlock(&hs->lock);
	if (why != HPS_STAT_MAX) {
		bool ut_why = why == HPS_STAT_USER_TIMEOUTS;

		pr_debug("%s: no progress for %u ms: giving up\n",
			 ut_why ? "user timeout" : "keepalive",
			 jiffies_to_msecs(silence));
		trace_hps_ka_timeout(hs, ut_why, jiffies_to_msecs(silence),
				     jiffies_to_msecs(limit));
		hps_stat_inc(sock_net(sk), why);
		hps_conn_error_why(hs, ETIMEDOUT, ut_why ? HPS_AB_USER_TIMEOUT :
				   HPS_AB_KEEPALIVE);
	}
	sock_put(sk);	/* from sk_reset_timer() */
}

/**
 * hps_tx_fin_step() - one of the two events that complete our FIN
 * @hs: the connection
 * @bit: HPS_F_FIN_CQE (its send completed) or HPS_F_FIN_ACKED (the peer
 *	 says it has it)
 *
 * On iWARP a send completion only says the message left this host, so the
 * FIN is done (the connection may be disconnected once both FINs are done)
 * only when the peer acknowledged it as well.
 *
 * Context: hs->lock held.
 * Return: true if the FIN became done; the caller then calls
 * hps_tx_fin_done() after dropping hs->lock.
 */
bool hps_tx_fin_step(struct hps_sock *hs, int bit)
{
	lockdep_assert_held(&hs->lock);
	set_bit(bit, &hs->flags);
	if (!test_bit(HPS_F_FIN_CQE, &hs->flags) ||
	    !test_bit(HPS_F_FIN_ACKED, &hs->flags))
		return false;
	return !test_and_set_bit(HPS_F_FIN_DONE, &hs->flags);
}

/**
 * hps_tx_fin_done() - our FIN is done: move the state, maybe tear down
 * @hs: the connection
 *
 * Context: any (softirq); hs->lock not held.
 */
void hps_tx_fin_done(struct hps_sock *hs)
{
	/* Paired with smp_mb() after sock_orphan() in hps_release(). */
	smp_mb__after_atomic();
	hps_connd_kick(hs, HPS_W_STATE);
	hs->sk.sk_state_change(&hs->sk);
}

/**
 * hps_tx_push() - post what the credits, Nagle and cork rules allow
 * @hs: the connection
 *
 * Posts queued data, the FIN once all data is posted, and a credit update
 * when enough credits are pending.
 *
 * Context: hs->lock held (process or softirq).
 */
void hps_tx_push(struct hps_sock *hs)
{
	__hps_tx_push(hs, false);
}

/**
 * hps_tx_flushed() - has everything written so far been posted?
 * @hs: the connection
 *
 * A SRCAVAIL may only follow once it has: it takes the next bytes of the
 * stream.
 *
 * Context: hs->lock held.
 * Return: true if no data waits in a send buffer.
 */
bool hps_tx_flushed(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hs->tx_posted == hs->tx_fill && !hps_tx_open_len(hs) &&
	       !hs->tx_filling;
}

/*
 * Room for a writer: an open send slot, no zero-copy send under way (its
 * bytes are not in the stream yet; see hps_zc_send()), and a send buffer
 * for it, or memory for one, as far as the last writer found
 * (tx_nomem, cleared when a send completes).
 * Context: hs->lock held.
 */
static bool hps_tx_room(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hs->ntx && hs->tx_fill - hs->tx_done < hs->ntx &&
	       !test_bit(HPS_F_ZC_TX_OWNED, &hs->flags) && !hs->tx_nomem;
}

/**
 * hps_tx_writable() - is there room for the writer?
 * @hs: the connection
 *
 * A hint for waiting and poll: a writer takes its slot with
 * hps_tx_reserve(), which checks again.
 *
 * If there is none, and DATA messages were posted without asking for their
 * completion, asks for it (hps_tx_cover()): their buffers may be free.
 *
 * Context: any; takes hs->lock.
 * Return: true if a send buffer is open for new data and no zero-copy
 * send is under way.
 */
bool hps_tx_writable(struct hps_sock *hs)
{
	bool ret;

	spin_lock_bh(&hs->lock);
	ret = hps_tx_room(hs);
	if (!ret)
		hps_tx_cover(hs);	/* the room may be sent, not known */
	spin_unlock_bh(&hs->lock);
	return ret;
}

/*
 * Take the open slot for the writer, which then copies into it without
 * hs->lock: hs->tx_filling keeps the completion handlers from posting it
 * meanwhile. The only place a writer gets a slot. A completion may have
 * taken the room the writer waited for (posted the open slot and filled
 * the ring) since it looked: then there is none, and it waits again.
 * Context: hs->lock and the socket lock held (one writer at a time).
 */
static struct hps_buf *hps_tx_reserve(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	sock_owned_by_me(&hs->sk);
	if (!hps_tx_room(hs) || WARN_ON_ONCE(hs->tx_filling))
		return NULL;
	hs->tx_filling = true;
	return &hs->tx[hs->tx_fill % hs->ntx];
}

/*
 * The writer copied @n bytes into the slot it reserved: account for them,
 * close the slot if it is full, and post what may go.
 * Context: hs->lock held.
 */
static void hps_tx_commit(struct hps_sock *hs, struct hps_buf *b, u32 n,
			  bool more)
{
	lockdep_assert_held(&hs->lock);
	hps_tx_wait_begins(hs);
	hs->tx_filling = false;
	b->len += n;
	WRITE_ONCE(hs->tx_queued, hs->tx_queued + n);
	hs->tx_bytes += n;
	if (b->len >= hps_tx_cap(b))
		hs->tx_fill++;
	else if (!test_bit(HPS_F_NODELAY, &hs->flags) &&
		 hps_tx_posted_since_ack(hs))
		hs->tx_nagle_met = true;	/* see hps_tx_post_next() */
	__hps_tx_push(hs, more);
}

/**
 * hps_tx_close_open() - end the open send buffer
 * @hs: the connection
 *
 * Bytes written later go into a new buffer: those of the open one go
 * first (a zero-copy send takes the stream's next bytes).
 *
 * Context: hs->lock held.
 */
void hps_tx_close_open(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	if (hps_tx_open_len(hs) && !hs->tx_filling)
		hs->tx_fill++;
}

static void hps_tx_error(struct hps_sock *hs, struct ib_wc *wc)
{
	bool timeout = wc->status == IB_WC_RETRY_EXC_ERR ||
		       wc->status == IB_WC_RNR_RETRY_EXC_ERR;

	if (wc->status != IB_WC_WR_FLUSH_ERR)
		pr_warn_ratelimited("send failed: %s (%d)\n",
				    ib_wc_status_msg(wc->status), wc->status);
	/* Flushes after our own teardown or the peer's close are expected. */
	if (!test_bit(HPS_F_CONN_UP, &hs->flags) ||
	    (wc->status == IB_WC_WR_FLUSH_ERR &&
	     test_bit(HPS_F_FIN_RCVD, &hs->flags)))
		return;
	/* The transport gave up retrying: the peer is gone, as TCP says. */
	if (timeout)
		hps_stat_inc(sock_net(&hs->sk), HPS_STAT_PEER_TIMEOUTS);
	hps_conn_error_why(hs, timeout ? ETIMEDOUT : ECONNRESET,
			   HPS_AB_TRANSPORT);
}

/**
 * hps_tx_ka_done() - completion of a keepalive probe
 * @cq: the device CQ
 * @wc: the work completion
 *
 * Context: softirq (CQ polling).
 */
void hps_tx_ka_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hps_sock *hs = wc->qp->qp_context;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		hps_tx_error(hs, wc);
		return;
	}
	/* The peer's device acknowledged it (InfiniBand, RoCE): alive. */
	spin_lock(&hs->lock);
	WRITE_ONCE(hs->rx_stamp, jiffies);
	spin_unlock(&hs->lock);
	clear_bit(HPS_F_KA_OUT, &hs->flags);
	hps_zc_sq_done(hs);
}

/*
 * The DATA work requests before @upto (a tx_wr_head value) have completed:
 * count them off their send buffers, oldest first, and free the buffers
 * all of whose messages have. A completion stands for every work request
 * posted before it on the send queue, unsignaled ones included: the queue
 * completes in order, and its completions are handled in that order (the
 * test builds' late ones too, hps_inject_defer_wc()).
 * Context: hs->lock held.
 * Return: a send buffer was freed (room for writers).
 */
static bool hps_tx_retire(struct hps_sock *hs, u32 upto)
{
	u32 n = upto - (hs->tx_wr_head - hs->tx_wr_out);
	bool freed = false;

	lockdep_assert_held(&hs->lock);
	if ((s32)n <= 0)
		return false;		/* a later completion counted them */
	if (WARN_ON_ONCE(n > hs->tx_wr_out))
		n = hs->tx_wr_out;
	hs->tx_stamp = jiffies;		/* progress */
	hs->ut_grace = false;
	while (n) {
		struct hps_buf *b = &hs->tx[hs->tx_done % hs->ntx];
		u32 k = min_t(u32, n, b->pieces - b->done);

		if (WARN_ON_ONCE(!k))
			break;
		b->done += k;
		n -= k;
		hs->tx_wr_out -= k;
		if (b->done < b->pieces || b->sent != b->len)
			break;		/* more of it to post, or to complete */
		WRITE_ONCE(hs->tx_queued, hs->tx_queued - b->len);
		b->len = 0;
		b->sent = 0;
		b->pieces = 0;
		b->done = 0;
		hs->tx_done++;
		hs->tx_nomem = false;	/* its buffer is free */
		freed = true;
	}
	return freed;
}

/**
 * hps_tx_cover_arm() - start the cover timer if it is needed
 * @hs: the connection
 *
 * If DATA messages were posted without a completion coming for them, the
 * timer asks for one once the first of them has gone HPS_TX_COVER_DELAY
 * without, unless it is pending already. A timer that finds a later
 * message's completion came meanwhile waits for the messages posted since.
 *
 * Context: hs->lock held (a timer armed after the connection went down
 * would outlive its teardown's sk_stop_timer_sync()).
 */
void hps_tx_cover_arm(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	if (hs->tx_wr_sig != hs->tx_wr_head &&
	    test_bit(HPS_F_CONN_UP, &hs->flags) &&
	    !timer_pending(&hs->cover_timer))
		sk_reset_timer(&hs->sk, &hs->cover_timer,
			       hs->tx_uncov_stamp + HPS_TX_COVER_DELAY);
}

/**
 * hps_tx_cover() - ask for the completion of the DATA messages sent
 * @hs: the connection
 *
 * DATA messages are sent without asking for their completion, but for
 * one in every @ntx / 2, the one that takes the last send buffer, each
 * with TCP_USER_TIMEOUT set and the last piece of a short buffer once
 * Nagle's rule has held writes (hps_tx_post_next(), hps_wr_post_data());
 * a later completion stands for them (hps_tx_retire()). Someone who
 * waits for one of them to complete (a writer or poll() for room, Nagle's
 * rule, a zero-copy send for an idle send queue, SIOCOUTQ,
 * TCP_USER_TIMEOUT, the cover timer) calls this: unless a completion is
 * already coming for all of them, a fence is posted, a zero-length RDMA
 * WRITE that asks for its completion (hps_tx_fence_done()). One fence at
 * a time; one asked for while it is in flight follows it.
 *
 * Context: hs->lock held.
 */
void hps_tx_cover(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	if (hs->tx_wr_sig == hs->tx_wr_head ||
	    !test_bit(HPS_F_CONN_UP, &hs->flags))
		return;
	if (hs->fence_out) {
		hs->cover_wanted = true;
		return;
	}
	if (hps_wr_post_zero_write(hs, &hs->fence_cqe)) {
		hs->tx_wr_sig = hs->tx_wr_head;	/* no retry: it is going */
		hps_conn_error(hs, ECONNRESET);
		return;
	}
	hs->fence_out = true;
	hs->fence_mark = hs->tx_wr_head;
	hs->tx_wr_sig = hs->tx_wr_head;
	hps_stat_inc(sock_net(&hs->sk), HPS_STAT_TX_FENCES);
}

/**
 * hps_tx_cover_ask() - SIOCOUTQ found bytes not known to be delivered
 * @hs: the connection
 *
 * The bytes of DATA messages sent without asking for their completion
 * count until a completion stands for them. Whoever asks SIOCOUTQ wants
 * to see them go: ask for that completion now, not at the cover timer,
 * so that the next SIOCOUTQ finds them gone once they are. (This call
 * reports what it found before asking.)
 *
 * Context: process; takes hs->lock.
 */
void hps_tx_cover_ask(struct hps_sock *hs)
{
	spin_lock_bh(&hs->lock);
	hps_tx_cover(hs);
	spin_unlock_bh(&hs->lock);
}

/**
 * hps_tx_cover_timer() - DATA messages were sent without a completion
 * @t: hs->cover_timer
 *
 * A tail that MSG_MORE held and no write took along since
 * (hps_tx_cover_soon()) is pushed. If the first of the DATA messages still
 * without a completion has gone HPS_TX_COVER_DELAY without, ask now, so
 * that the send buffers and SIOCOUTQ learn that they completed; if a
 * later completion stood for the ones the timer was armed for, wait for
 * the ones posted since.
 *
 * Context: timer (softirq).
 */
void hps_tx_cover_timer(struct timer_list *t)
{
	struct hps_sock *hs = from_timer(hs, t, cover_timer);

	spin_lock(&hs->lock);
	if (hs->cover_soon) {
		hs->cover_soon = false;
		/* still held (a later write did not take it along): post it */
		if (hps_tx_tail_held(hs))
			__hps_tx_push(hs, false);
	}
	if (hs->tx_wr_sig != hs->tx_wr_head &&
	    time_before(jiffies, hs->tx_uncov_stamp + HPS_TX_COVER_DELAY))
		hps_tx_cover_arm(hs);	/* unless armed again meanwhile */
	else
		hps_tx_cover(hs);
	spin_unlock(&hs->lock);
	sock_put(&hs->sk);
}

/**
 * hps_send_done() - completion of a DATA message that asked for one
 * @cq: the device CQ
 * @wc: the work completion
 *
 * It completes every DATA message posted before it too (hps_tx_retire()).
 * Once every message of a send buffer has completed, frees the buffer and
 * wakes writers; posts what waited for it. A flushed or failed message
 * comes here whether or not it asked.
 *
 * Context: softirq.
 */
void hps_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hps_tx_wr *wr = container_of(wc->wr_cqe, struct hps_tx_wr, cqe);
	struct hps_sock *hs = wc->qp->qp_context;
	struct sock *sk = &hs->sk;
	bool freed;

	if (hps_inject_defer_wc(hs, cq, wc, HPS_INJ_TX_RESERVE, hps_send_done))
		return;
	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		hps_tx_error(hs, wc);
		return;
	}
	spin_lock(&hs->lock);
	freed = hps_tx_retire(hs, wr->seq + 1);
	hps_tx_push(hs);
	spin_unlock(&hs->lock);
	/* The only wakeups for room (hps_tx_wake()) are the retirements'. */
	if (freed)
		sk->sk_write_space(sk);
	hps_zc_sq_done(hs);
}

/**
 * hps_tx_fence_done() - completion of a fence (hps_tx_cover())
 * @cq: the device CQ
 * @wc: the work completion
 *
 * Context: softirq.
 */
void hps_tx_fence_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hps_sock *hs = wc->qp->qp_context;
	struct sock *sk = &hs->sk;
	bool freed;

	/* in order with the DATA completions a test build handles late */
	if (hps_inject_defer_wc(hs, cq, wc, HPS_INJ_NONE, hps_tx_fence_done))
		return;
	spin_lock(&hs->lock);
	hs->fence_out = false;
	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		hs->cover_wanted = false;
		spin_unlock(&hs->lock);
		hps_tx_error(hs, wc);
		hps_zc_sq_done(hs);
		return;
	}
	freed = hps_tx_retire(hs, hs->fence_mark);
	if (hs->cover_wanted) {
		hs->cover_wanted = false;
		hps_tx_cover(hs);
	} else {
		hps_tx_cover_arm(hs);
	}
	hps_tx_push(hs);
	spin_unlock(&hs->lock);
	if (freed)
		sk->sk_write_space(sk);
	hps_zc_sq_done(hs);
}

/**
 * hps_ctrl_done() - completion of a control message
 * @cq: the device CQ
 * @wc: the work completion
 *
 * Context: softirq.
 */
void hps_ctrl_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hps_buf *b = container_of(wc->wr_cqe, struct hps_buf, cqe);
	struct hps_sock *hs = wc->qp->qp_context;
	bool fin = false, freed;

	/* in order with the DATA completions a test build handles late */
	if (hps_inject_defer_wc(hs, cq, wc, HPS_INJ_NONE, hps_ctrl_done))
		return;
	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		hps_tx_error(hs, wc);
		return;
	}
	spin_lock(&hs->lock);
	hs->ctrl_done++;
	/* the DATA messages posted before it have completed too */
	freed = hps_tx_retire(hs, b->mark);
	if (b->type == HPS_MSG_FIN)
		fin = hps_tx_fin_step(hs, HPS_F_FIN_CQE);
	hps_tx_push(hs);
	spin_unlock(&hs->lock);
	if (freed)
		hs->sk.sk_write_space(&hs->sk);
	hps_zc_sq_done(hs);
	if (fin)
		hps_tx_fin_done(hs);
}

/*
 * A writer waits for room, a state change or an error; the receive
 * side's wakeups are not for it. Room comes only from a send completion
 * (hps_send_done(), sk_write_space(): EPOLLOUT) and from the zero-copy
 * owner's release (hps_zc_wake(), no key); credits make none by
 * themselves (hps_recv_done()). sk_data_ready() (sock_def_readable())
 * wakes with read events alone on every message that arrives, and would
 * have a writer blocked on a peer that does not read run, find no room
 * and sleep again once per message it receives. Wakeups without a key
 * (state changes) and those with any other event (EPOLLOUT, EPOLLERR)
 * still wake it.
 * Context: the waker's (a wait queue callback: any context).
 */
static int hps_tx_wake(struct wait_queue_entry *wq_entry, unsigned int mode,
		       int sync, void *key)
{
	if (key && !(key_to_poll(key) &
		     ~(EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND)))
		return 0;
	return woken_wake_function(wq_entry, mode, sync, key);
}

/*
 * Wait until the writer may append, or for an error. Socket lock held.
 * Once some data was queued (@copied), a pending error is left for the
 * next call, as TCP does. %HPS_FELL_BACK: nothing was queued and connect()
 * went on over TCP meanwhile (hps_fallback.c): the caller sends there.
 */
static int hps_tx_wait(struct sock *sk, long *timeo, size_t copied)
{
	DEFINE_WAIT_FUNC(wait, hps_tx_wake);
	struct hps_sock *hs = hps_sk(sk);
	int err = 0;

	add_wait_queue(sk_sleep(sk), &wait);
	for (;;) {
		int state = sk->sk_state;

		/* connect() fell back to TCP while we waited: send there */
		if (!copied && hps_fb(hs)) {
			err = HPS_FELL_BACK;
			break;
		}
		if (sk->sk_err) {
			err = copied ? -EPIPE : sock_error(sk);
			break;
		}
		if (sk->sk_shutdown & SEND_SHUTDOWN ||
		    test_bit(HPS_F_ABORTED, &hs->flags)) {
			err = -EPIPE;
			break;
		}
		if (state != TCP_SYN_SENT && state != TCP_SYN_RECV &&
		    state != TCP_ESTABLISHED && state != TCP_CLOSE_WAIT) {
			err = test_bit(HPS_F_WAS_CONN, &hs->flags) ?
			      -EPIPE : -ENOTCONN;
			break;
		}
		if (state != TCP_SYN_SENT && state != TCP_SYN_RECV &&
		    hps_tx_writable(hs))
			break;
		/* room to come: SIGIO (POLL_OUT) for O_ASYNC, as TCP's */
		if (sk->sk_socket) {
			sk_set_bit(SOCKWQ_ASYNC_NOSPACE, sk);
			set_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		}
		if (!*timeo) {
			err = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(*timeo);
			break;
		}
		sk_wait_event(sk, timeo,
			      sk->sk_err || sk->sk_shutdown & SEND_SHUTDOWN ||
			      sk->sk_state != state ||
			      (state == TCP_ESTABLISHED &&
			       hps_tx_writable(hs)) || hps_fb(hs) ||
			      test_bit(HPS_F_ABORTED, &hs->flags), &wait);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	return err;
}

/*
 * Send buffers: allocated and freed only under the socket lock, with
 * hs->tx_pages, the pages they take, kept along (the idle timer reads it).
 * A connection always keeps one (hps_wr_setup() gives it a page): so a
 * writer can always go on, even with the namespace at its limit.
 */
static int hps_tx_buf_get(struct hps_sock *hs, struct hps_buf *b, u32 size)
{
	int err = hps_wr_buf_alloc(hs, b, size, DMA_TO_DEVICE, true);

	if (!err)
		WRITE_ONCE(hs->tx_pages, hs->tx_pages + (1U << get_order(size)));
	return err;
}

static void hps_tx_buf_put(struct hps_sock *hs, struct hps_buf *b)
{
	if (!b->buf)
		return;
	WRITE_ONCE(hs->tx_pages, hs->tx_pages - (1U << get_order(b->size)));
	hps_wr_buf_free(hs, b, DMA_TO_DEVICE);
}

/* Move the buffer of @from, which has one, to @to, which has none. */
static void hps_tx_buf_move(struct hps_buf *to, struct hps_buf *from)
{
	to->buf = from->buf;
	to->dma = from->dma;
	to->size = from->size;
	from->buf = NULL;
	from->dma = 0;
	from->size = 0;
}

/* Is slot @i free: neither in flight, full nor open? hs->lock held. */
static bool hps_tx_slot_free(struct hps_sock *hs, u32 i)
{
	return (i + hs->ntx - hs->tx_done % hs->ntx) % hs->ntx >=
	       hs->tx_fill - hs->tx_done + 1;
}

/*
 * Give the slot the writer reserved a buffer for the @left bytes it has
 * to write, if it has none or an empty one too small: as large as those
 * bytes (a class of our buf_size), at most buf_size. Without memory for
 * it, a smaller one, or the buffer of a free slot; an empty slot that has
 * a buffer keeps it.
 * Context: process, socket lock held, the slot reserved (tx_filling).
 * Return: 0; -EAGAIN if every buffer is in use (the caller waits for a
 * send to complete: hs->tx_nomem); -EPIPE if the connection is gone.
 */
static int hps_tx_slot_buf(struct hps_sock *hs, struct hps_buf *b,
			   size_t left)
{
	/* no larger than the peer's largest buffer: each a message */
	u32 max = min(hs->buf_size, hs->peer_buf_size);
	u32 want = hps_cls_bytes(max, hps_top_cls(min_t(size_t,
							left + HPS_HDR_LEN,
							max)));
	struct hps_buf nb = {};
	u32 i;

	sock_owned_by_me(&hs->sk);
	if (b->buf && (b->len || b->size >= want))
		return 0;
	if (!hs->dev)
		return -EPIPE;	/* the connection is gone */
	if (!hps_tx_buf_get(hs, &nb, want) ||
	    (!b->buf && want > PAGE_SIZE && !hps_tx_buf_get(hs, &nb,
							      PAGE_SIZE))) {
		/* empty, out of the ring's used part: nothing uses it */
		hps_tx_buf_put(hs, b);
		hps_tx_buf_move(b, &nb);
		hps_idle_arm(hs);
		return 0;
	}
	if (b->buf)
		return 0;	/* no memory for a larger one: this one */
	spin_lock_bh(&hs->lock);
	for (i = 0; i < hs->ntx; i++) {
		if (hs->tx[i].buf && hps_tx_slot_free(hs, i)) {
			hps_tx_buf_move(b, &hs->tx[i]);
			break;
		}
	}
	spin_unlock_bh(&hs->lock);
	return b->buf ? 0 : -EAGAIN;
}

/**
 * hps_tx_idle() - has the connection sent nothing for a while?
 * @hs: the connection
 *
 * Context: hs->lock held.
 * Return: true if no DATA (or SRCAVAIL) was posted for %HPS_RX_IDLE and
 * none is queued or in flight.
 */
bool hps_tx_idle(struct hps_sock *hs)
{
	lockdep_assert_held(&hs->lock);
	return hs->tx_done == hs->tx_fill && !hps_tx_open_len(hs) &&
	       !hs->tx_filling && !test_bit(HPS_F_ZC_TX, &hs->flags) &&
	       time_after_eq(jiffies, hs->tx_data_stamp + HPS_RX_IDLE);
}

/**
 * hps_tx_free_idle() - free the send buffers of an idle connection
 * @hs: the connection
 *
 * One page-sized buffer stays; writers allocate more when they need them
 * (hps_tx_slot_buf()).
 *
 * Context: process (connection work), socket lock held: no writer fills
 * a slot meanwhile.
 */
void hps_tx_free_idle(struct hps_sock *hs)
{
	struct hps_buf *keep = NULL, nb = {};
	bool idle;
	u32 i;

	sock_owned_by_me(&hs->sk);
	if (READ_ONCE(hs->tx_pages) <= 1)
		return;
	spin_lock_bh(&hs->lock);
	idle = hs->tx && hps_tx_idle(hs);
	if (!idle)
		hps_idle_arm(hs);	/* look again later */
	spin_unlock_bh(&hs->lock);
	if (!idle)
		return;
	/* nothing posted or queued: no completion touches a slot */
	for (i = 0; i < hs->ntx; i++) {
		struct hps_buf *b = &hs->tx[i];

		if (!b->buf)
			continue;
		if (keep && b->size < keep->size)
			swap(keep, b);
		else if (!keep)
			keep = b;
		if (b != keep)
			hps_tx_buf_put(hs, b);
	}
	if (keep && keep->size > PAGE_SIZE &&
	    !hps_tx_buf_get(hs, &nb, PAGE_SIZE)) {
		hps_tx_buf_put(hs, keep);
		hps_tx_buf_move(keep, &nb);
	}
}

/**
 * hps_sendmsg() - proto_ops.sendmsg
 * @sock: the socket
 * @msg: data and flags
 * @len: bytes to send
 *
 * Copies the data into send buffers and posts them as credits allow.
 * Blocks (unless non-blocking) while every send buffer is in use.
 *
 * Context: process; takes the socket lock.
 * Return: bytes queued or -errno.
 */
int hps_sendmsg(struct socket *sock, struct msghdr *msg, size_t len)
{
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	int flags = msg->msg_flags;
	struct hps_zc_rest rest = {};
	struct socket *fb = hps_fb(hs);
	bool copy_rest = false;
	size_t copied = 0;
	long timeo;
	int err = 0;

	if (fb) {
		hps_fb_sync(hs, fb);	/* SO_SNDTIMEO, SO_SNDBUF, ... */
		return fb->ops->sendmsg(fb, msg, len);
	}
	if (flags & MSG_OOB)
		return -EOPNOTSUPP;

	lock_sock(sk);
	timeo = sock_sndtimeo(sk, flags & MSG_DONTWAIT);
	while (copied < len) {
		struct iov_iter *from = &msg->msg_iter;
		struct hps_buf *b;
		size_t n, chunk;
		u32 off;

		/* a long write that completions keep up with never sleeps */
		cond_resched();
		err = hps_tx_wait(sk, &timeo, copied);
		if (err)
			break;

		if (!copy_rest) {
			ssize_t zc = hps_zc_send(hs, msg, &timeo, &copy_rest,
						 &rest);

			if (zc < 0) {
				err = zc;
				break;
			}
			copied += zc;
			/* It may have slept: look at the socket again first. */
			if (zc || copy_rest)
				continue;
		}

		/* test builds: until a credit has posted the open slot */
		hps_inject_wait_change(HPS_INJ_TX_RESERVE, &hs->tx_fill);
		spin_lock_bh(&hs->lock);
		b = hps_tx_reserve(hs);
		if (!b) {
			/* A completion took the room: wait again. */
			spin_unlock_bh(&hs->lock);
			continue;
		}
		off = b->len;
		spin_unlock_bh(&hs->lock);

		err = hps_tx_slot_buf(hs, b, len - copied);
		if (err) {
			spin_lock_bh(&hs->lock);
			hs->tx_filling = false;
			/*
			 * None free: not writable until a send completes (if
			 * the last one just did, one is free now: again).
			 */
			if (err == -EAGAIN && hs->tx_done != hs->tx_fill)
				hs->tx_nomem = true;
			spin_unlock_bh(&hs->lock);
			if (err == -EAGAIN) {
				err = 0;
				continue;	/* hps_tx_wait() */
			}
			break;
		}
		chunk = min_t(size_t, hps_tx_cap(b) - off, len - copied);

		/* The rest of a zero-copy send: from its kernel mapping. */
		if (rest.reg) {
			from = &rest.it;
			chunk = min(chunk, iov_iter_count(from));
		}
		n = copy_from_iter(b->buf + off, chunk, from);
		if (rest.reg) {
			iov_iter_advance(&msg->msg_iter, n);
			if (!iov_iter_count(from))
				hps_zc_rest_done(&rest);
		}

		spin_lock_bh(&hs->lock);
		hps_tx_commit(hs, b, n, flags & MSG_MORE);
		spin_unlock_bh(&hs->lock);

		copied += n;
		if (n != chunk) {
			err = -EFAULT;
			break;
		}
	}
	hps_zc_rest_done(&rest);
	release_sock(sk);

	if (err == HPS_FELL_BACK) {
		fb = hps_fb(hs);
		hps_fb_sync(hs, fb);
		return fb->ops->sendmsg(fb, msg, len);
	}
	if (copied)
		return copied;
	if (err == -EPIPE && !(flags & MSG_NOSIGNAL))
		send_sig(SIGPIPE, current, 0);
	return err;
}

/**
 * hps_splice_eof() - proto_ops.splice_eof: the splice source ran dry
 * @sock: the socket
 *
 * sendfile() and splice() pass MSG_MORE while more data may follow; when
 * the source ends early the held tail must go out now, as a send without
 * MSG_MORE would have sent it (HPS_CORK still holds it).
 *
 * Context: process; takes the socket lock.
 */
void hps_splice_eof(struct socket *sock)
{
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	struct socket *fb = hps_fb(hs);

	might_sleep();
	if (fb) {
		if (fb->ops->splice_eof)
			fb->ops->splice_eof(fb);
		return;
	}
	lock_sock(sk);
	spin_lock_bh(&hs->lock);
	if (hs->ntx && hs->tx)
		hps_tx_push(hs);
	spin_unlock_bh(&hs->lock);
	release_sock(sk);
}
