// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Shutdown, close, abort and teardown.
 *
 * A graceful close queues a FIN behind the data; once the FIN has
 * completed (the peer has it) an orphaned socket is torn down by its
 * connection work: rdma_disconnect(), ib_drain_qp(), unmap the buffers,
 * rdma_destroy_qp(), give back the CQ reservation, rdma_destroy_id(). The
 * same happens to an open socket once both FINs went through, or when the
 * peer disconnects. An abort (SO_LINGER 0, unread data at close, protocol
 * violation, device removal) posts an ABORT if a credit (or the peer's
 * reserve buffer) is left and tears down at once; the peer sees
 * ECONNRESET either from the ABORT or from the disconnect without a FIN.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/sched/signal.h>
#include <net/tcp_states.h>

#include "hps.h"
#include "hps_trace.h"

/**
 * __hps_conn_error() - reset a connection because of an error
 * @hs: the connection
 * @err: positive errno for the socket (SO_ERROR)
 * @why: the reason, for the hps_conn_abort tracepoint
 * @ip: where it was decided (hps_conn_error() passes its caller's)
 *
 * Context: any, including softirq and hs->lock held.
 */
void __hps_conn_error(struct hps_sock *hs, int err, enum hps_abort_why why,
		      unsigned long ip)
{
	struct sock *sk = &hs->sk;

	if (test_and_set_bit(HPS_F_ABORTED, &hs->flags))
		return;
	trace_hps_conn_abort(hs, err, why, ip);
	WRITE_ONCE(sk->sk_err, err);
	hps_connd_kick(hs, HPS_W_TEARDOWN);
	sk_error_report(sk);
}

/**
 * __hps_abort() - abort a connection from this end
 * @hs: the connection
 * @err: positive errno for this socket, 0 for none
 * @send_abort: tell the peer with an ABORT message
 * @why: the reason, for the hps_conn_abort tracepoint
 * @ip: where it was decided (hps_abort() passes its caller's)
 *
 * Context: process or softirq; takes hs->lock.
 */
void __hps_abort(struct hps_sock *hs, int err, bool send_abort,
		 enum hps_abort_why why, unsigned long ip)
{
	if (test_and_set_bit(HPS_F_ABORTED, &hs->flags))
		return;
	trace_hps_conn_abort(hs, err, why, ip);
	hps_stat_inc(sock_net(&hs->sk), HPS_STAT_ABORTS);
	if (send_abort) {
		spin_lock_bh(&hs->lock);
		hps_tx_ctrl(hs, HPS_MSG_ABORT, false);
		spin_unlock_bh(&hs->lock);
	}
	if (err)
		WRITE_ONCE(hs->sk.sk_err, err);
	hps_connd_kick(hs, HPS_W_TEARDOWN);
	sk_error_report(&hs->sk);
}

/**
 * __hps_teardown() - disconnect and destroy the QP of a connection
 * @hs: the connection
 *
 * A connection that never came up (HPS_F_WAS_CONN clear) has no data
 * anybody may read: its buffers go at once, and their charge to the
 * namespace's memory limit with them, rather than when the socket is
 * freed or connects again (a socket can stay open, or listen, for long
 * after a failed connect()). One that was up keeps them until the socket
 * is freed: its received data can still be read.
 *
 * Context: process (the connection work, or hps_cm_connect_work()),
 * socket lock held.
 * Return: the cm_id, which the caller destroys (then drops the id's
 * socket reference) after releasing the socket lock; or NULL.
 */
static struct rdma_cm_id *__hps_teardown(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;
	struct rdma_cm_id *id;

	sock_owned_by_me(sk);
	if (test_bit(HPS_F_CONNECTING, &hs->flags)) {
		/* hps_cm_connect_work() uses the id and QP: it kicks us */
		set_bit(HPS_F_TEARDOWN_DEFER, &hs->flags);
		return NULL;
	}
	set_bit(HPS_F_TEARDOWN, &hs->flags);
	hps_cm_release_port(hs);
	hps_portq_release(hs, hps_portq_take(hs));	/* a query under way */
	/*
	 * The timers re-arm themselves only while the connection is up:
	 * take it down first, then wait for a running one to finish.
	 */
	spin_lock_bh(&hs->lock);
	clear_bit(HPS_F_CONN_UP, &hs->flags);
	hps_tx_stall_update(hs);	/* a stall ends with the connection */
	spin_unlock_bh(&hs->lock);
	sk_stop_timer_sync(sk, &sk->sk_timer);
	sk_stop_timer_sync(sk, &hs->nudge_timer);
	sk_stop_timer_sync(sk, &hs->ka_timer);
	sk_stop_timer_sync(sk, &hs->zc_timer);
	sk_stop_timer_sync(sk, &hs->idle_timer);
	sk_stop_timer_sync(sk, &hs->cover_timer);
	if (hs->cm_id && test_bit(HPS_F_QP_READY, &hs->flags))
		rdma_disconnect(hs->cm_id);
	hps_wr_teardown(hs);
	/*
	 * Nothing can reach the buffers now: the QP was drained (both queues
	 * once it reached RTR, HPS_F_QP_READY; before, only receives can
	 * have been posted) and destroyed, so every completion has run, and
	 * they are unmapped, the device given back.
	 */
	if (!test_bit(HPS_F_WAS_CONN, &hs->flags))
		hps_wr_free_bufs(hs);
	id = hs->cm_id;
	hs->cm_id = NULL;
	sk->sk_shutdown = SHUTDOWN_MASK;
	if (sk->sk_state != TCP_CLOSE)
		hps_set_state(sk, TCP_CLOSE);
	return id;
}

/* An unaccepted child failed or its listener went away. */
static void hps_child_kill(struct sock *sk)
{
	struct rdma_cm_id *id;

	lock_sock(sk);
	set_bit(HPS_F_ABORTED, &hps_sk(sk)->flags);
	sock_set_flag(sk, SOCK_DEAD);
	id = __hps_teardown(hps_sk(sk));
	release_sock(sk);
	hps_cm_destroy_id(sk, id);
	sock_put(sk);	/* the child's own reference (sk_alloc) */
}

/**
 * hps_child_detach() - a pending child is done with its listener
 * @hs: the child, socket lock held; hs->parent set
 * @established: move it to the accept queue (else it is dropped)
 *
 * Context: connection work. Takes the listener's lock after the
 * child's: the two are never held together.
 */
static void hps_child_detach(struct hps_sock *hs, bool established)
{
	struct sock *parent = hs->parent;
	struct hps_sock *lhs = hps_sk(parent), *q;
	struct list_head *pos = &lhs->accept_list;
	struct sock *sk = &hs->sk;
	bool queued = false;

	hs->parent = NULL;
	release_sock(sk);
	if (established)
		hps_inject_sleep_once(HPS_INJ_ACCEPT_QUEUE);

	lock_sock(parent);
	lhs->npending--;
	if (established && parent->sk_state == TCP_LISTEN) {
		/*
		 * In the order the connections came up (hps_estab_seq), not
		 * the order their works got here: children's works run in
		 * parallel. Nearly always at the tail.
		 */
		list_for_each_entry_reverse(q, &lhs->accept_list, accept_node) {
			if (READ_ONCE(q->estab_seq) < READ_ONCE(hs->estab_seq))
				break;
			pos = &q->accept_node;
		}
		list_add_tail(&hs->accept_node, pos);
		sk_acceptq_added(parent);
		queued = true;
	}
	release_sock(parent);
	if (queued)
		parent->sk_data_ready(parent);
	sock_put(parent);	/* the child's reference on its listener */
	if (!queued)
		hps_child_kill(sk);
	lock_sock(sk);
}

/**
 * hps_child_established() - a passive connection is up
 * @hs: the child, socket lock held
 *
 * Context: connection work.
 */
void hps_child_established(struct hps_sock *hs)
{
	if (hs->parent)
		hps_child_detach(hs, true);
}

/**
 * hps_fail() - a connection attempt or connection failed
 * @hs: the socket, socket lock held
 * @err: positive errno for SO_ERROR (0: none)
 *
 * Context: connection work.
 * Return: the cm_id to destroy after releasing the socket lock, or NULL.
 */
struct rdma_cm_id *hps_fail(struct hps_sock *hs, int err)
{
	struct sock *sk = &hs->sk;

	if (err && !test_bit(HPS_F_ABORTED, &hs->flags))
		WRITE_ONCE(sk->sk_err, err);
	set_bit(HPS_F_ABORTED, &hs->flags);
	hps_cm_release_port(hs);
	if (hs->parent) {
		/* The child is dropped; its own teardown does the rest. */
		hps_child_detach(hs, false);
		return NULL;
	}
	sk_error_report(sk);
	return __hps_teardown(hs);
}

/**
 * hps_update_state() - move the state along the TCP diagram from the FINs
 * @hs: the socket
 *
 * The connection work does this when a FIN is received or the send of
 * ours has completed, and shutdown() when it queues ours. recvmsg() does
 * it too as it returns the end of the stream, so that a reader that has
 * seen it finds the socket in CLOSE_WAIT (HPS_INFO, sock_diag), as on
 * TCP. (TCP is in CLOSE_WAIT from the moment the FIN arrives; here, until
 * a read or the connection work gets to it, the state can still say
 * ESTABLISHED after poll() has reported POLLRDHUP.)
 *
 * Context: process, socket lock held.
 */
void hps_update_state(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;
	bool out = test_bit(HPS_F_FIN_PENDING, &hs->flags);
	bool done = test_bit(HPS_F_FIN_DONE, &hs->flags);
	bool in = test_bit(HPS_F_FIN_RCVD, &hs->flags);
	int state = sk->sk_state;

	sock_owned_by_me(sk);
	if (state == TCP_CLOSE || state == TCP_LISTEN ||
	    state == TCP_SYN_SENT || state == TCP_SYN_RECV)
		return;
	if (out && in)
		state = done ? TCP_TIME_WAIT : TCP_LAST_ACK;
	else if (out)
		state = done ? TCP_FIN_WAIT2 : TCP_FIN_WAIT1;
	else if (in)
		state = TCP_CLOSE_WAIT;
	else
		state = TCP_ESTABLISHED;
	if (in)
		sk->sk_shutdown |= RCV_SHUTDOWN;
	if (state != sk->sk_state)
		hps_set_state(sk, state);
}

/**
 * hps_teardown() - connection work: state changes and teardown
 * @hs: the socket
 * @work: HPS_W_* bits
 *
 * Context: connection work; takes the socket lock.
 */
void hps_teardown(struct hps_sock *hs, unsigned long work)
{
	struct sock *sk = &hs->sk;
	struct rdma_cm_id *id = NULL;
	bool down;

	/* test builds: a restart late, the socket without an id (once) */
	if (test_bit(HPS_W_RESTART, &work))
		hps_inject_sleep_once(HPS_INJ_RESTART);
	lock_sock(sk);
	/* (not for an earlier connection's QP: the socket may have moved on) */
	if (test_bit(HPS_W_QP_ERROR, &work) && hs->qp &&
	    hs->qp == READ_ONCE(hs->qp_err))
		hps_conn_error_why(hs, ECONNRESET, HPS_AB_TRANSPORT);
	if (test_bit(HPS_W_ZC_REAP, &work))
		hps_zc_rx_reap(hs);
	if (test_bit(HPS_W_RX_DEAD, &work))
		hps_rx_release_dead(hs);
	if (test_bit(HPS_W_RESIZE, &work))
		hps_rx_resize(hs);
	if (test_bit(HPS_W_DEV_GONE, &work))
		id = hps_cm_dev_gone(hs);
	if (test_bit(HPS_W_STATE, &work))
		hps_update_state(hs);
	if (!id && test_bit(HPS_W_FB_DEADLINE, &work))
		id = hps_fb_deadline_work(hs);
	if (!id && test_bit(HPS_W_RESTART, &work))
		id = hps_cm_restart_work(hs);
	if (!id && test_bit(HPS_W_PORTQ, &work))
		id = hps_portq_work(hs);
	down = test_bit(HPS_F_FIN_DONE, &hs->flags) &&
	       (sock_flag(sk, SOCK_DEAD) ||
		test_bit(HPS_F_FIN_RCVD, &hs->flags));
	if (!id && (test_bit(HPS_W_TEARDOWN, &work) || down)) {
		if (hs->parent)
			id = hps_fail(hs, 0);
		else if (hs->cm_id || hs->qp)
			id = __hps_teardown(hs);
	}
	release_sock(sk);
	hps_cm_destroy_id(sk, id);
}

/**
 * hps_shutdown() - proto_ops.shutdown
 * @sock: the socket
 * @how: SHUT_RD, SHUT_WR or SHUT_RDWR
 *
 * Return: 0 or -errno.
 */
int hps_shutdown(struct socket *sock, int how)
{
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	struct socket *fb = hps_fb(hs);
	int err = 0;

	if (fb)
		return fb->ops->shutdown(fb, how);
	if (how < SHUT_RD || how > SHUT_RDWR)
		return -EINVAL;
	how++;	/* SHUT_* to RCV_SHUTDOWN/SEND_SHUTDOWN bits */

	lock_sock(sk);
	switch (sk->sk_state) {
	case TCP_ESTABLISHED:
	case TCP_CLOSE_WAIT:
	case TCP_FIN_WAIT1:
	case TCP_FIN_WAIT2:
	case TCP_LAST_ACK:
	case TCP_TIME_WAIT:
		sk->sk_shutdown |= how;
		if (how & SEND_SHUTDOWN &&
		    !test_and_set_bit(HPS_F_FIN_PENDING, &hs->flags)) {
			spin_lock_bh(&hs->lock);
			hps_tx_push(hs);
			spin_unlock_bh(&hs->lock);
		}
		hps_update_state(hs);
		break;
	case TCP_LISTEN:
		sk->sk_shutdown |= how;
		/* TCP's stops listening, as a listener's shutdown() does */
		if (how & RCV_SHUTDOWN && hs->fb_lsn)
			kernel_sock_shutdown(hs->fb_lsn, SHUT_RD);
		/* iWARP clients: no listener here now (ICMP) */
		if (how & RCV_SHUTDOWN)
			hps_portq_release(hs, hps_portq_take(hs));
		break;
	default:
		err = -ENOTCONN;
		break;
	}
	sk->sk_state_change(sk);
	release_sock(sk);
	return err;
}

/* Close a listener: stop listening, reset the children not accepted. */
static void hps_close_listener(struct sock *sk)
{
	struct hps_sock *hs = hps_sk(sk), *child, *tmp;
	struct rdma_cm_id *id;
	LIST_HEAD(children);

	id = xchg(&hs->cm_id, NULL);
	list_splice_init(&hs->accept_list, &children);
	sk->sk_ack_backlog = 0;
	hps_set_state(sk, TCP_CLOSE);
	release_sock(sk);

	hps_cm_destroy_id(sk, id);
	list_for_each_entry_safe(child, tmp, &children, accept_node) {
		list_del_init(&child->accept_node);
		lock_sock(&child->sk);
		hps_abort(child, 0, true);
		sock_orphan(&child->sk);
		release_sock(&child->sk);
		sock_put(&child->sk);	/* the child's own reference */
	}
	lock_sock(sk);
}

/**
 * hps_release() - proto_ops.release: close(2)
 * @sock: the socket
 *
 * Return: 0.
 */
int hps_release(struct socket *sock)
{
	struct socket *fb, *lsn, *spare, *portq;
	struct sock *sk = sock->sk;
	struct hps_sock *hs;
	bool abort;

	if (!sk)
		return 0;
	hs = hps_sk(sk);

	lock_sock(sk);
	if (!test_bit(HPS_F_CONNECTING, &hs->flags))
		hps_cm_release_port(hs);
	if (sk->sk_state == TCP_LISTEN) {
		hps_close_listener(sk);
	} else if (hs->cm_id || hs->qp) {
		abort = READ_ONCE(hs->rx_queued) ||
			(sock_flag(sk, SOCK_LINGER) && !sk->sk_lingertime) ||
			sk->sk_state == TCP_SYN_SENT ||
			!test_bit(HPS_F_WAS_CONN, &hs->flags);
		if (abort) {
			hps_abort(hs, 0, true);
		} else if (!test_and_set_bit(HPS_F_FIN_PENDING, &hs->flags)) {
			sk->sk_shutdown |= SEND_SHUTDOWN;
			spin_lock_bh(&hs->lock);
			hps_tx_push(hs);
			spin_unlock_bh(&hs->lock);
		}
		if (!abort && sock_flag(sk, SOCK_LINGER)) {
			DEFINE_WAIT_FUNC(wait, woken_wake_function);
			long timeo = sk->sk_lingertime;

			add_wait_queue(sk_sleep(sk), &wait);
			while (!test_bit(HPS_F_FIN_DONE, &hs->flags) &&
			       !test_bit(HPS_F_ABORTED, &hs->flags) && timeo &&
			       !signal_pending(current))
				sk_wait_event(sk, &timeo,
					      test_bit(HPS_F_FIN_DONE,
						       &hs->flags) ||
					      test_bit(HPS_F_ABORTED,
						       &hs->flags), &wait);
			remove_wait_queue(sk_sleep(sk), &wait);
		}
	}
	sock_orphan(sk);
	/* Paired with smp_mb__after_atomic() in hps_ctrl_done(). */
	smp_mb();
	if (test_bit(HPS_F_FIN_DONE, &hs->flags))
		hps_connd_kick(hs, HPS_W_STATE);
	else if (hs->cm_id && !test_bit(HPS_F_ABORTED, &hs->flags))
		sk_reset_timer(sk, &sk->sk_timer, jiffies + HPS_FIN_TIMEOUT);
	sock->sk = NULL;
	/*
	 * SOCK_DEAD: no fallback starts now (hps_fb_try()). Taken off under
	 * the lock, closed after it (SO_LINGER may wait).
	 */
	fb = hs->fb;
	WRITE_ONCE(hs->fb, NULL);
	lsn = hs->fb_lsn;
	WRITE_ONCE(hs->fb_lsn, NULL);
	spare = hs->fb_spare;
	hs->fb_spare = NULL;
	sk_stop_timer(sk, &hs->fb_timer);
	portq = hps_portq_take(hs);
	release_sock(sk);
	hps_portq_release(hs, portq);
	hps_fb_close(hs, fb);
	hps_fb_listen_close(hs, lsn);
	if (spare)
		sock_release(spare);
	sock_put(sk);	/* the socket's own reference (sk_alloc) */
	return 0;
}
