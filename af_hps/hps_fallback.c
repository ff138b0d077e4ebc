// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * TCP fallback. A connect() whose attempt over RDMA fails before anything
 * reached an AF_HPS peer (no RDMA device on the route, the peer's RDMA
 * stack has no AF_HPS listener, no answer, a local limit) goes on as a
 * plain TCP connection on the same socket, when HPS_TCP_FALLBACK and
 * net.hps.tcp_fallback allow it (Documentation/af_hps.rst, "TCP
 * fallback"). connect() makes the TCP socket beforehand (hps_fb_prepare()),
 * in the caller's context, so that it is the caller's: its cgroup (and
 * cgroup BPF programs), memory cgroup, uid and security label, as if the
 * program had made it. The decision is made once, in the connection work,
 * where the attempt failed: hps_fb_try() points the TCP socket's wait
 * queue at ours and starts a non-blocking connect. From then on
 * every call on the socket is passed to that TCP socket (the hps_fb()
 * tests at the top of the proto_ops), and the RDMA side is torn down as
 * for a failed connect(), without an error.
 *
 * A listener that may fall back listens on its port over TCP as well
 * (hps_fb_listen()), where the transport leaves the port to the TCP stack
 * (not over iWARP, whose driver listens there itself): accept() hands a
 * plain TCP client out as an AF_HPS socket that fell back
 * (hps_fb_accept()), with the reason HPS_FB_TCP_CLIENT. A socket that may
 * fall back gives its attempt over RDMA up after %HPS_FB_DEADLINE
 * (hps_fb_deadline_work()), except over iWARP.
 *
 * The TCP socket wakes our wait queue directly (its sk_wq is ours), so a
 * poll(), epoll or blocked call that started on the connecting socket is
 * woken by TCP's events. Its errors are copied to our sk_err too
 * (hps_fb_error_report()), for SO_ERROR, which the socket layer reads from
 * our sock. Lock order: our socket lock, then the TCP socket's.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/net.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/tcp.h>
#include <linux/poll.h>
#include <rdma/rdma_cm.h>
#include <rdma/ib_cm.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "hps.h"
#include "hps_trace.h"

/**
 * hps_fb_reason() - the HPS_FB_* reason of a failed connection attempt
 * @event: the rdma_cm event that ended it, or HPS_TP_NO_EVENT when a call
 *	   failed
 * @status: the event's status, or the failed call's -errno
 *
 * Context: any.
 * Return: the reason.
 */
int hps_fb_reason(int event, int status)
{
	switch (event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return status == -ETIMEDOUT ? HPS_FB_UNREACHABLE :
		       HPS_FB_NO_DEVICE;
	case RDMA_CM_EVENT_REJECTED:
		/* an AF_HPS listener refuses as the consumer */
		if (status == IB_CM_REJ_CONSUMER_DEFINED)
			return HPS_FB_REJECTED;
		return status == -ETIMEDOUT ? HPS_FB_UNREACHABLE :
		       HPS_FB_REFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
		/* iWARP: the TCP connect underneath was refused */
		return status == -ECONNREFUSED ? HPS_FB_REFUSED :
		       HPS_FB_UNREACHABLE;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_ESTABLISHED:	/* a bad hello */
		return HPS_FB_PEER_ERROR;
	default:
		if (status == -ENODEV || status == -ENETUNREACH ||
		    status == -EHOSTUNREACH || status == -EADDRNOTAVAIL)
			return HPS_FB_NO_DEVICE;
		if (status == -ECONNREFUSED)
			return HPS_FB_REFUSED;
		if (status == -ETIMEDOUT)
			return HPS_FB_UNREACHABLE;
		return HPS_FB_RESOURCE;
	}
}

/*
 * sk_error_report of the TCP socket: copy its error to ours for SO_ERROR,
 * then wake (our wait queue). Context: softirq or process, with the TCP
 * socket's lock or spinlock.
 */
static void hps_fb_error_report(struct sock *fsk)
{
	struct socket_wq *wq;
	struct hps_sock *hs;

	read_lock_bh(&fsk->sk_callback_lock);
	hs = fsk->sk_user_data;
	if (hs)
		WRITE_ONCE(hs->sk.sk_err, READ_ONCE(fsk->sk_err));
	read_unlock_bh(&fsk->sk_callback_lock);
	/* what sock_def_error_report() does (static) */
	rcu_read_lock();
	wq = rcu_dereference(fsk->sk_wq);
	if (skwq_has_sleeper(wq))
		wake_up_interruptible_poll(&wq->wait, EPOLLERR);
	sk_wake_async(fsk, SOCK_WAKE_IO, POLL_ERR);
	rcu_read_unlock();
}

/**
 * hps_fb_sync() - our SOL_SOCKET options onto the TCP socket
 * @hs: the socket
 * @fb: the TCP socket
 *
 * setsockopt(SOL_SOCKET) sets our sock (Linux 6.1 passes only MPTCP's to
 * the protocol), so the calls that the TCP socket serves copy what TCP
 * reads first: timeouts, linger, low-water mark, mark, priority, buffer
 * sizes the application chose. The mark, priority and bound device only
 * when the application set them (not 0): what cgroup BPF gave the TCP
 * socket at creation (a VRF, a mark) stays. Context: process.
 */
void hps_fb_sync(struct hps_sock *hs, struct socket *fb)
{
	struct sock *sk = &hs->sk, *fsk = fb->sk;
	u8 locks = sk->sk_userlocks;	/* a bit-field, set under our lock */

	if (READ_ONCE(fsk->sk_rcvtimeo) != READ_ONCE(sk->sk_rcvtimeo))
		WRITE_ONCE(fsk->sk_rcvtimeo, READ_ONCE(sk->sk_rcvtimeo));
	if (READ_ONCE(fsk->sk_sndtimeo) != READ_ONCE(sk->sk_sndtimeo))
		WRITE_ONCE(fsk->sk_sndtimeo, READ_ONCE(sk->sk_sndtimeo));
	if (READ_ONCE(fsk->sk_rcvlowat) != READ_ONCE(sk->sk_rcvlowat))
		WRITE_ONCE(fsk->sk_rcvlowat, READ_ONCE(sk->sk_rcvlowat));
	if (READ_ONCE(sk->sk_mark) &&
	    READ_ONCE(fsk->sk_mark) != READ_ONCE(sk->sk_mark))
		WRITE_ONCE(fsk->sk_mark, READ_ONCE(sk->sk_mark));
	if (READ_ONCE(sk->sk_priority) &&
	    READ_ONCE(fsk->sk_priority) != READ_ONCE(sk->sk_priority))
		WRITE_ONCE(fsk->sk_priority, READ_ONCE(sk->sk_priority));
	if (sock_flag(sk, SOCK_LINGER) != sock_flag(fsk, SOCK_LINGER) ||
	    READ_ONCE(fsk->sk_lingertime) != READ_ONCE(sk->sk_lingertime)) {
		lock_sock(fsk);
		fsk->sk_lingertime = READ_ONCE(sk->sk_lingertime);
		sock_valbool_flag(fsk, SOCK_LINGER,
				  sock_flag(sk, SOCK_LINGER));
		release_sock(fsk);
	}
	/*
	 * sk_flags bits are set non-atomically: under the TCP socket's lock,
	 * which keeps its softirq work (SOCK_DONE, SOCK_QUEUE_SHRUNK) off
	 * them.
	 */
	if (sock_flag(sk, SOCK_URGINLINE) != sock_flag(fsk, SOCK_URGINLINE)) {
		lock_sock(fsk);
		sock_valbool_flag(fsk, SOCK_URGINLINE,
				  sock_flag(sk, SOCK_URGINLINE));
		release_sock(fsk);
	}
	if (locks & SOCK_SNDBUF_LOCK &&
	    READ_ONCE(fsk->sk_sndbuf) != READ_ONCE(sk->sk_sndbuf)) {
		lock_sock(fsk);
		fsk->sk_userlocks |= SOCK_SNDBUF_LOCK;
		WRITE_ONCE(fsk->sk_sndbuf, READ_ONCE(sk->sk_sndbuf));
		fsk->sk_write_space(fsk);
		release_sock(fsk);
	}
	if (locks & SOCK_RCVBUF_LOCK &&
	    READ_ONCE(fsk->sk_rcvbuf) != READ_ONCE(sk->sk_rcvbuf)) {
		lock_sock(fsk);
		fsk->sk_userlocks |= SOCK_RCVBUF_LOCK;
		WRITE_ONCE(fsk->sk_rcvbuf, READ_ONCE(sk->sk_rcvbuf));
		release_sock(fsk);
	}
}

/* What our socket's options say, onto the TCP socket before it connects. */
static void hps_fb_copy_opts(struct hps_sock *hs, struct socket *fb)
{
	struct sock *fsk = fb->sk;

	if (hs->sk.sk_bound_dev_if)	/* else a VRF's, if any, stays */
		fsk->sk_bound_dev_if = hs->sk.sk_bound_dev_if;
	hps_fb_sync(hs, fb);
	if (test_bit(HPS_F_NODELAY, &hs->flags))
		tcp_sock_set_nodelay(fsk);
	if (test_bit(HPS_F_CORK, &hs->flags))
		tcp_sock_set_cork(fsk, true);
	if (hs->ka_user && hs->ka_on)
		sock_set_keepalive(fsk);
	if (hs->ka_idle)
		tcp_sock_set_keepidle(fsk, hs->ka_idle / MSEC_PER_SEC);
	if (hs->ka_intvl)
		tcp_sock_set_keepintvl(fsk, hs->ka_intvl / MSEC_PER_SEC);
	if (hs->ka_cnt)
		tcp_sock_set_keepcnt(fsk, hs->ka_cnt);
	if (hs->user_timeout)
		tcp_sock_set_user_timeout(fsk, hs->user_timeout);
}

/* The socket may fall back. Context: process, socket lock held. */
static bool hps_fb_allowed(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;

	return hs->fb_on && !sk->sk_kern_sock &&
	       READ_ONCE(hps_net(sock_net(sk))->tcp_fallback) !=
	       HPS_FB_SYSCTL_NEVER;
}

/*
 * Point the TCP socket's events at our wait queue, and with @errors its
 * errors at our sk_err. Not for a TCP listener's errors: its children are
 * cloned with its sk_user_data and sk_error_report, and would report
 * theirs to our listener (and after it is gone). Under the TCP socket's
 * lock: a connected one's softirq work changes its sk_flags too.
 * Context: process, our socket lock held (then TCP's).
 */
static void hps_fb_attach(struct hps_sock *hs, struct socket *fb, bool errors)
{
	struct sock *sk = &hs->sk, *fsk = fb->sk;

	sock_owned_by_me(sk);
	lock_sock(fsk);
	write_lock_bh(&fsk->sk_callback_lock);
	if (errors) {
		fsk->sk_user_data = hs;
		hs->fb_error_report = fsk->sk_error_report;
		fsk->sk_error_report = hps_fb_error_report;
	}
	/*
	 * O_ASYNC: TCP signals through our wait queue's fasync list, which
	 * is empty (nothing sent) unless the application asked.
	 */
	sock_set_flag(fsk, SOCK_FASYNC);
	rcu_assign_pointer(fsk->sk_wq,
			   rcu_dereference_protected(sk->sk_wq,
						     lockdep_sock_is_held(sk)));
	write_unlock_bh(&fsk->sk_callback_lock);
	release_sock(fsk);
}

/*
 * Give the TCP socket its own wait queue (and with @errors its own
 * sk_error_report) back and close it. Context: process, may sleep.
 */
static void hps_fb_detach_release(struct hps_sock *hs, struct socket *fb,
				  bool errors)
{
	struct sock *fsk = fb->sk;

	write_lock_bh(&fsk->sk_callback_lock);
	if (errors) {
		fsk->sk_user_data = NULL;
		fsk->sk_error_report = hs->fb_error_report;
	}
	/* its own wait queue again: ours goes with our socket */
	rcu_assign_pointer(fsk->sk_wq, &fb->wq);
	write_unlock_bh(&fsk->sk_callback_lock);
	/* tcp_close() orphans it: no wakeup of our wait queue after this */
	sock_release(fb);
}

/**
 * hps_fb_prepare() - make the TCP socket a fallback would need
 * @hs: a socket about to connect, its peer's address set
 *
 * In the caller's context, so that the socket is the caller's as a TCP
 * socket it made would be (see the top of this file); not for kernel
 * sockets, which do not fall back. A socket that cannot be made (memory,
 * a security policy refusing TCP sockets) only means no fallback.
 * Context: process, socket lock held.
 */
void hps_fb_prepare(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;

	sock_owned_by_me(sk);
	might_sleep();
	/* one from an earlier connect() to another address family goes */
	if (hs->fb_spare &&
	    hs->fb_spare->sk->sk_family != hs->peer.ss_family)
		hps_fb_drop_spare(hs);
	if (!hps_fb_allowed(hs))
		return;
	/* (one an earlier attempt did not use will do) */
	if (!hs->fb_spare &&
	    __sock_create(sock_net(sk), hs->peer.ss_family, SOCK_STREAM,
			  IPPROTO_TCP, &hs->fb_spare, 0)) {
		hs->fb_spare = NULL;
		return;
	}
	/* this attempt's deadline */
	sk_reset_timer(sk, &hs->fb_timer, jiffies + HPS_FB_DEADLINE);
}

/**
 * hps_fb_deadline() - fb_timer: the attempt over RDMA took too long
 * @t: hps_sock.fb_timer
 *
 * Context: timer (softirq).
 */
void hps_fb_deadline(struct timer_list *t)
{
	struct hps_sock *hs = from_timer(hs, t, fb_timer);

	hps_connd_kick(hs, HPS_W_FB_DEADLINE);
	sock_put(&hs->sk);	/* from sk_reset_timer() */
}

/**
 * hps_fb_deadline_work() - give up on RDMA, go on over TCP
 * @hs: a socket whose attempt over RDMA passed %HPS_FB_DEADLINE
 *
 * Unless the attempt ended meanwhile (it came up, failed, or fell back:
 * the spare TCP socket is gone then), a later connect() armed the timer
 * again, or the attempt runs over iWARP, the socket falls back with the
 * reason HPS_FB_UNREACHABLE, as when rdma_cm gives up on a host that does
 * not answer, and the attempt is torn down. If it may not fall back now
 * (the sysctl was set to 0 since) the attempt goes on.
 *
 * The id's handler mutex is held from the check that no event of the id
 * waits for this work until the QP is gone: an answer (REP) that arrives
 * meanwhile finds no QP to move to RTS, and the peer never sees its
 * request accepted. An answer that came before waits as an event: the
 * deadline is put off a little, and the event decides.
 *
 * Context: connection work, socket lock held.
 * Return: the cm_id to destroy after releasing the socket lock, or NULL.
 */
struct rdma_cm_id *hps_fb_deadline_work(struct hps_sock *hs)
{
	struct rdma_cm_id *id = hs->cm_id, *destroy = NULL;
	struct sock *sk = &hs->sk;

	sock_owned_by_me(sk);
	might_sleep();
	if (!hs->fb_spare || sk->sk_state != TCP_SYN_SENT || !id ||
	    timer_pending(&hs->fb_timer))
		return NULL;
	/*
	 * Over iWARP the attempt is a TCP connection, answered at once by a
	 * host that is there, and the MPA exchange on it has its own bound
	 * (siw: 10 s); tearing the QP down in the middle of that exchange
	 * would wait for it anyway, with the socket lock held. (@hs->dev is
	 * set by this work, at ROUTE_RESOLVED, before any MPA exchange.)
	 */
	if (hs->dev && hs->dev->iwarp)
		return NULL;
	rdma_lock_handler(id);
	if (test_bit(HPS_F_CONNECTING, &hs->flags) ||
	    hps_connd_events_pending(hs)) {
		rdma_unlock_handler(id);
		sk_reset_timer(sk, &hs->fb_timer, jiffies + HZ / 10);
		return NULL;
	}
	if (hps_fb_try(hs, HPS_FB_UNREACHABLE)) {
		trace_hps_conn_connect(hs, HPS_TP_NO_EVENT, -ETIMEDOUT,
				       ETIMEDOUT);
		destroy = hps_fail(hs, 0);
	}
	rdma_unlock_handler(id);
	return destroy;
}

/**
 * hps_fb_drop_spare() - the connection is up over RDMA: no fallback
 * @hs: the socket
 *
 * Context: process, socket lock held (then the TCP socket's).
 */
void hps_fb_drop_spare(struct hps_sock *hs)
{
	struct socket *spare = hs->fb_spare;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (!spare)
		return;
	hs->fb_spare = NULL;
	sk_stop_timer(&hs->sk, &hs->fb_timer);
	sock_release(spare);	/* never connected: nothing lingers */
}

/*
 * Set the prepared TCP socket up as ours and start connecting it without
 * blocking, then publish it. Context: process (connection work or
 * connect()), socket lock held.
 */
static int hps_fb_start(struct hps_sock *hs, int reason)
{
	struct socket *fb = hs->fb_spare;
	int err;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (!fb)
		return -ENOBUFS;	/* hps_fb_prepare() could not make it */
	hs->fb_spare = NULL;
	sk_stop_timer(&hs->sk, &hs->fb_timer);
	hps_fb_copy_opts(hs, fb);
	hps_fb_attach(hs, fb, true);
	err = kernel_connect(fb, (struct sockaddr *)&hs->peer,
			     hps_addr_len(&hs->peer), O_NONBLOCK);
	if (err && err != -EINPROGRESS) {
		hps_fb_close(hs, fb);	/* never published */
		return err;
	}
	hs->fb_reason = reason;
	smp_store_release(&hs->fb, fb);	/* paired with hps_fb() */
	/*
	 * Before the teardown's state change: a lockless reader that sees
	 * the socket closed (hps_poll()) then sees @fb too.
	 */
	smp_wmb();
	return 0;
}

/**
 * hps_fb_try() - fall back to TCP if the socket may
 * @hs: an active socket whose connection attempt over RDMA failed
 * @reason: HPS_FB_*
 *
 * Context: process (connection work or connect()), socket lock held.
 * Return: true if the socket now connects over TCP: the caller tears the
 * RDMA side down without an error. False: it fails the attempt as usual.
 */
bool hps_fb_try(struct hps_sock *hs, int reason)
{
	struct sock *sk = &hs->sk;
	struct net *net = sock_net(sk);
	int err;

	sock_owned_by_me(sk);
	if (!hps_fb_allowed(hs) || hs->fb || hs->parent ||
	    !test_bit(HPS_F_ACTIVE, &hs->flags) ||
	    test_bit(HPS_F_WAS_CONN, &hs->flags) ||
	    test_bit(HPS_F_ABORTED, &hs->flags) ||
	    sock_flag(sk, SOCK_DEAD) || !sk->sk_socket)
		return false;
	if (WARN_ON_ONCE(reason <= HPS_FB_NONE || reason >= __HPS_FB_MAX))
		reason = HPS_FB_RESOURCE;
	err = hps_fb_start(hs, reason);
	trace_hps_conn_fallback(hs, reason, err);
	if (err) {
		hps_stat_inc(net, HPS_STAT_FB_ERRORS);
		return false;
	}
	BUILD_BUG_ON(HPS_STAT_FB_TCP_CLIENT - HPS_STAT_FB_NO_DEVICE !=
		     HPS_FB_TCP_CLIENT - HPS_FB_NO_DEVICE ||
		     HPS_FB_TCP_CLIENT + 1 != __HPS_FB_MAX);
	hps_stat_inc(net, HPS_STAT_FB_NO_DEVICE + reason - HPS_FB_NO_DEVICE);
	return true;
}

/*
 * Listen over TCP at @addr (its port 0: one of TCP's choosing), the TCP
 * socket's wakeups ours; not published in @hs->fb_lsn yet. Context:
 * process, socket lock held. Return: 0 or -errno.
 */
static int hps_fb_listen_at(struct hps_sock *hs,
			    const struct sockaddr_storage *addr, int backlog,
			    struct socket **lsnp)
{
	struct sock *sk = &hs->sk;
	struct socket *lsn;
	int err;

	sock_owned_by_me(sk);
	might_sleep();
	err = __sock_create(sock_net(sk), addr->ss_family, SOCK_STREAM,
			    IPPROTO_TCP, &lsn, 0);
	if (err)
		return err;
	/*
	 * A port the socket was bound to, or rdma_listen() chose, was bound
	 * as with SO_REUSEADDR: a connection with SO_REUSEADDR in TIME_WAIT
	 * there (siw's are; an earlier connection's ephemeral port) must
	 * not leave the listener without its TCP side, nor, over iWARP,
	 * with its RDMA side on the port.
	 */
	lsn->sk->sk_reuse = hps_addr_port(addr) ? SK_CAN_REUSE : sk->sk_reuse;
	hps_fb_copy_opts(hs, lsn);	/* what TCP's children inherit */
	err = kernel_bind(lsn, (struct sockaddr *)addr, hps_addr_len(addr));
	if (err) {
		sock_release(lsn);
		return err;
	}
	/* before it listens: every client's wakeup reaches our waiters */
	hps_fb_attach(hs, lsn, false);
	err = kernel_listen(lsn, backlog);
	if (err) {
		hps_fb_detach_release(hs, lsn, false);
		return err;
	}
	*lsnp = lsn;
	return 0;
}

/**
 * hps_fb_listen() - listen over TCP too, on the listener's port
 * @hs: a socket that has just started listening over RDMA
 * @backlog: listen()'s
 *
 * For a socket that may fall back, so that plain TCP clients reach the
 * server too. In the caller's context, as hps_fb_prepare() makes its
 * socket. Where the TCP stack has the port already (over iWARP the
 * driver's own listener, when hps_fb_listen_iwarp() could not move it, or
 * a TCP program) the listener takes AF_HPS clients only, counted in
 * fallback_errors: listen() does not fail for what the application did
 * not ask for. Context: process, socket lock held.
 */
void hps_fb_listen(struct hps_sock *hs, int backlog)
{
	struct sock *sk = &hs->sk;
	struct socket *lsn;
	int err;

	sock_owned_by_me(sk);
	might_sleep();
	if (hs->fb_lsn || !hps_fb_allowed(hs) ||
	    sk->sk_shutdown & RCV_SHUTDOWN)
		return;
	err = hps_fb_listen_at(hs, &hs->local, backlog, &lsn);
	if (err) {
		trace_hps_conn_fallback(hs, HPS_FB_TCP_CLIENT, err);
		hps_stat_inc(sock_net(sk), HPS_STAT_FB_ERRORS);
		return;
	}
	smp_store_release(&hs->fb_lsn, lsn);	/* paired with hps_fb_lsn() */
}

/**
 * hps_fb_listen_iwarp() - listen over TCP on the port, over RDMA elsewhere
 * @hs: a socket about to listen, with its cm_id (bound or not)
 * @backlog: listen()'s
 * @destroy: set to a cm_id to destroy after releasing the socket lock, or
 *	     NULL
 *
 * Over iWARP (hps_portq_wanted()), whose driver would take the listener's
 * port in the TCP stack, a listener that may fall back takes the port for
 * TCP and for the port query (hps_portq.c), and its RDMA side listens on
 * a port of the TCP stack's choosing, with a new cm_id; the one bound to
 * the port goes (@destroy). The socket's address stays the port's. When
 * any of that fails, all of it is undone (then @destroy is the new id),
 * and the caller listens over RDMA on the port, as without iWARP: the
 * port is not held in the TCP stack meanwhile (hps_cm_bind_held()), as
 * the TCP side took it, and a TCP socket that binds it then makes
 * listen() fail with EADDRINUSE.
 *
 * Context: process, socket lock held.
 * Return: 0 if the RDMA side listens on its own port, else -errno.
 */
int hps_fb_listen_iwarp(struct hps_sock *hs, int backlog,
			struct rdma_cm_id **destroy)
{
	struct sock *sk = &hs->sk;
	struct rdma_cm_id *old = hs->cm_id;
	struct sockaddr_storage local, rdma, bound;
	struct socket *lsn, *udp;
	int err;

	sock_owned_by_me(sk);
	might_sleep();
	*destroy = NULL;
	if (!hps_portq_wanted(old) || !hps_fb_allowed(hs) || hs->fb_lsn)
		return -EOPNOTSUPP;
	memcpy(&bound, &hs->local, sizeof(bound));
	memcpy(&local, &hs->local, sizeof(local));
	if (!local.ss_family)	/* not bound: as rdma_listen() binds */
		local.ss_family = AF_INET;
	hps_cm_release_port(hs);	/* TCP's listener takes the port */
	err = hps_fb_listen_at(hs, &local, backlog, &lsn);
	if (err)
		return err;
	err = kernel_getsockname(lsn, (struct sockaddr *)&local);
	if (err < 0)
		goto undo_tcp;
	memcpy(&hs->local, &local, sizeof(local));
	err = hps_portq_listen(hs);
	if (err)
		goto undo_tcp;
	/* the new id, on a port of its own (hps_cm_bind_held()) */
	hs->cm_id = NULL;
	err = hps_cm_create_id(sk);
	if (err)
		goto undo_udp;
	memcpy(&rdma, &local, sizeof(rdma));
	hps_addr_set_port(&rdma, 0);
	err = hps_cm_bind_held(hs, &rdma);
	if (!err)
		err = rdma_listen(hs->cm_id, backlog);
	hps_cm_release_port(hs);	/* the driver listens on the port */
	if (err)
		goto undo_id;
	smp_store_release(&hs->fb_lsn, lsn);	/* paired with hps_fb_lsn() */
	*destroy = old;
	return 0;

undo_id:
	*destroy = hs->cm_id;
undo_udp:
	hs->cm_id = old;
	udp = hps_portq_take(hs);
	hps_portq_release(hs, udp);
undo_tcp:
	hps_fb_detach_release(hs, lsn, false);
	memcpy(&hs->local, &bound, sizeof(hs->local));
	return err;
}

/**
 * hps_fb_acceptable() - a TCP client waits in the listener's TCP queue
 * @hs: a listener
 *
 * Context: any, the file open.
 * Return: true if accept() would find one.
 */
bool hps_fb_acceptable(const struct hps_sock *hs)
{
	struct socket *lsn = hps_fb_lsn(hs);

	return lsn && !reqsk_queue_empty(&inet_csk(lsn->sk)->icsk_accept_queue);
}

/**
 * hps_fb_accept() - take a TCP client from the listener's TCP queue
 * @lhs: the listener, hps_fb_acceptable()
 * @newsock: accept()'s new socket
 *
 * The AF_HPS socket is made first, so that a client is never taken off
 * the queue and then dropped. It is one that fell back (HPS_FB_TCP_CLIENT),
 * with the listener's options, as an accepted AF_HPS connection has them.
 * Context: process, the listener's socket lock held.
 * Return: 0, -EAGAIN when another accept() took the client first, or
 * -errno (-ENOMEM).
 */
int hps_fb_accept(struct hps_sock *lhs, struct socket *newsock)
{
	struct net *net = sock_net(&lhs->sk);
	struct socket *tcp;
	struct hps_sock *hs;
	struct sock *sk;
	int err;

	sock_owned_by_me(&lhs->sk);
	sk = hps_sock_alloc(net, NULL, lhs->sk.sk_kern_sock);
	if (!sk) {
		hps_stat_inc(net, HPS_STAT_FB_ERRORS);
		return -ENOMEM;
	}
	err = kernel_accept(lhs->fb_lsn, &tcp, O_NONBLOCK);
	if (err) {
		sock_put(sk);	/* never seen: hps_cm_conn_req() does so too */
		return err;
	}
	hs = hps_sk(sk);
	hps_sock_inherit(hs, lhs);
	lock_sock_nested(sk, SINGLE_DEPTH_NESTING);
	sock_graft(sk, newsock);
	newsock->state = SS_CONNECTED;
	hps_fb_copy_opts(hs, tcp);
	hps_fb_attach(hs, tcp, true);
	/* an error before now (a reset while queued), for SO_ERROR */
	WRITE_ONCE(sk->sk_err, READ_ONCE(tcp->sk->sk_err));
	hs->fb_reason = HPS_FB_TCP_CLIENT;
	smp_store_release(&hs->fb, tcp);	/* paired with hps_fb() */
	release_sock(sk);
	trace_hps_conn_fallback(hs, HPS_FB_TCP_CLIENT, 0);
	hps_stat_inc(net, HPS_STAT_FB_TCP_CLIENT);
	return 0;
}

/**
 * hps_fb_listen_close() - close a listener's TCP listening socket
 * @hs: the listener
 * @lsn: its TCP listening socket, no longer reachable through @hs->fb_lsn
 *
 * Resets the TCP clients not accepted, as TCP's close() does.
 * Context: process, may sleep.
 */
void hps_fb_listen_close(struct hps_sock *hs, struct socket *lsn)
{
	if (!lsn)
		return;
	might_sleep();
	hps_fb_detach_release(hs, lsn, false);
}

/**
 * hps_fb_close() - close the TCP socket, as close() closes TCP's
 * @hs: the socket it served
 * @fb: the TCP socket, no longer reachable through @hs->fb
 *
 * Lingers as SO_LINGER says. Context: process, may sleep; our socket lock
 * held or not (the lock order allows both).
 */
void hps_fb_close(struct hps_sock *hs, struct socket *fb)
{
	if (!fb)
		return;
	might_sleep();
	hps_fb_sync(hs, fb);	/* SO_LINGER */
	hps_fb_detach_release(hs, fb, true);
}

/**
 * hps_fb_connect() - connect() on a socket that fell back
 * @hs: the socket
 * @fb: the TCP socket
 * @addr: as given to connect()
 * @len: its length
 * @flags: file flags
 *
 * The connect() that started the attempt over RDMA, or a later one: TCP's
 * answer (0, -EINPROGRESS, -EALREADY, -EISCONN, its error).
 * Context: process, no socket lock held.
 */
int hps_fb_connect(struct hps_sock *hs, struct socket *fb,
		   struct sockaddr *addr, int len, int flags)
{
	might_sleep();
	hps_fb_sync(hs, fb);	/* SO_SNDTIMEO */
	return fb->ops->connect(fb, addr, len, flags);
}

/**
 * hps_fb_poll() - poll() on a socket that fell back
 * @file: the file
 * @sock: our socket, whose wait queue the TCP socket wakes
 * @fb: the TCP socket
 * @wait: the poll table
 *
 * Context: process.
 * Return: TCP's mask.
 */
__poll_t hps_fb_poll(struct file *file, struct socket *sock,
		     struct socket *fb, poll_table *wait)
{
	sock_poll_wait(file, sock, wait);
	return hps_fb_mask(file, sock, fb);
}

/**
 * hps_fb_mask() - TCP's poll mask, our wait queue already registered
 * @file: the file
 * @sock: our socket
 * @fb: the TCP socket
 *
 * Context: process.
 * Return: TCP's mask.
 */
__poll_t hps_fb_mask(struct file *file, struct socket *sock,
		     struct socket *fb)
{
	hps_fb_sync(hps_sk(sock->sk), fb);
	return fb->ops->poll(file, fb, NULL);
}

/**
 * hps_fb_setsockopt() - setsockopt() on a socket that fell back
 * @fb: the TCP socket
 * @level: the level (not SOL_SOCKET: the socket layer sets ours)
 * @optname: the option
 * @optval: its value
 * @optlen: its length
 *
 * Context: process.
 * Return: 0 or -errno, as TCP.
 */
int hps_fb_setsockopt(struct socket *fb, int level, int optname,
		      sockptr_t optval, unsigned int optlen)
{
	return fb->ops->setsockopt(fb, level, optname, optval, optlen);
}
