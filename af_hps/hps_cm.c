// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Connection management with rdma_cm: bind, listen, connect, accept and
 * the rdma_cm event processing, which runs in each socket's connection
 * work (hps_core.c).
 *
 * The rdma_cm event handler only copies the event to the socket's
 * connection work and returns 0; it returns non-zero only for a
 * CONNECT_REQUEST it could not queue, whose new id the core then
 * destroys. The connection work accepts or rejects every new id
 * it is given, and destroys ids (never from within their own handler).
 *
 * Active side: connect -> rdma_resolve_addr -> ADDR_RESOLVED ->
 * rdma_resolve_route -> ROUTE_RESOLVED -> QP, buffers, receives,
 * rdma_connect(hello) -> ESTABLISHED (peer's hello) -> first message.
 * Passive side: CONNECT_REQUEST(hello) -> child socket, QP, buffers,
 * receives, rdma_accept(hello) -> ESTABLISHED -> accept queue.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/sched/signal.h>
#include <net/tcp_states.h>
#include <rdma/ib_cm.h>

#include "hps.h"
#include "hps_trace.h"

#define HPS_RESOLVE_MS	2000

/*
 * A connect's address resolution gives up after HPS_RESOLVE_MS; test builds
 * can make that longer (HPS_INJ_RESOLVE: inject_ms), so that a device
 * removal on a slow kernel still finds the connect resolving.
 */
static int hps_resolve_ms(void)
{
	return hps_inject_ms(HPS_INJ_RESOLVE) ?: HPS_RESOLVE_MS;
}

/**
 * hps_cm_destroy_id() - destroy a connection's or listener's cm_id
 * @sk: the socket the id belonged to
 * @id: the id, or NULL
 *
 * A restart (hps_cm_restart()) starts once the old id is gone: no late
 * event of it can then be taken for one of the new id, which may have
 * its address. (Until then the socket has no id: only the destruction
 * of the old one comes here with an id.)
 *
 * Context: process, not within @id's event handler, socket lock not held.
 */
void hps_cm_destroy_id(struct sock *sk, struct rdma_cm_id *id)
{
	struct hps_sock *hs = hps_sk(sk);

	might_sleep();
	if (!id)
		return;
	rdma_destroy_id(id);
	if (test_and_clear_bit(HPS_F_RESTART_OWED, &hs->flags))
		hps_connd_kick(hs, HPS_W_RESTART);	/* its own reference */
	sock_put(sk);	/* the cm_id's reference (hps_cm_create_id()) */
}

/**
 * hps_cm_handler() - rdma_cm event handler of every AF_HPS cm_id
 * @id: the id
 * @ev: the event
 *
 * Context: rdma_cm (process context, the id's handler mutex held).
 * Return: 0, or -ENOMEM for a CONNECT_REQUEST that could not be queued.
 */
int hps_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct sock *sk = id->context;
	int err;

	switch (ev->event) {
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * The removal waits until every id on the device is gone.
		 * Connections were aborted by the ib_client's remove callback
		 * already; a listener, a socket only bound and a connect()
		 * still resolving are dealt with by connd (hps_cm_dev_gone()).
		 * A kick needs no allocation: it cannot fail.
		 */
		hps_connd_kick(hps_sk(sk), HPS_W_DEV_GONE);
		return 0;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		return 0;
	default:
		break;
	}
	err = hps_connd_queue_event(id, ev, sk);
	if (err && ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return err;	/* the core destroys the new id */
	if (err)
		hps_conn_error(hps_sk(sk), ENOMEM);
	return 0;
}

/**
 * hps_cm_create_id() - give a socket its rdma_cm id
 * @sk: the socket, locked, without an id
 *
 * Return: 0 or -errno.
 */
int hps_cm_create_id(struct sock *sk)
{
	struct hps_sock *hs = hps_sk(sk);
	struct rdma_cm_id *id;

	sock_owned_by_me(sk);
	id = rdma_create_id(sock_net(sk), hps_cm_handler, sk, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	if (sk->sk_reuse)
		rdma_set_reuseaddr(id, 1);
	sock_hold(sk);	/* put by hps_cm_destroy_id() */
	hs->cm_id = id;
	/*
	 * A socket whose connection attempt failed may be bound, listen or
	 * connect again: the new id starts with none of the old attempt's
	 * flags. A stale HPS_F_ABORTED made close() skip the teardown of a
	 * socket bound after a failed connect(), and leak it with its id.
	 */
	hps_flags_reset(hs);
	return 0;
}

/*
 * Give a socket without a cm_id one. A socket that was bound keeps its
 * address when its id goes with a removed device (hps_cm_dev_gone()): the
 * new id is bound to that address again, on whatever device has it now.
 * Context: process, socket lock held. Return: 0 or -errno, with *@created
 * set if a new id was made (the caller drops it on a later failure).
 */
static int hps_cm_ensure_id(struct sock *sk, bool *created)
{
	struct hps_sock *hs = hps_sk(sk);
	int err;

	*created = false;
	if (hs->cm_id)
		return 0;
	err = hps_cm_create_id(sk);
	if (err)
		return err;
	*created = true;
	if (!hs->local.ss_family)
		return 0;
	err = rdma_bind_addr(hs->cm_id, (struct sockaddr *)&hs->local);
	return err == -ENODEV || err == -EINVAL ? -EADDRNOTAVAIL : err;
}

/**
 * hps_cm_dev_gone() - the device of a socket's cm_id is being removed
 * @hs: the socket, locked
 *
 * rdma_cm's removal waits until every id on the device is destroyed.
 * Connections (a QP) were aborted by hps_ib_remove_one(). This destroys
 * the id of a listener (accept() then fails with ENODEV, then EINVAL: it
 * is shut, and only close() is left to do with it), of a connect()
 * that had not set up its QP yet (it fails with ENETUNREACH) and of a
 * socket that was only bound (it keeps its address: listen() and
 * connect() bind a new id to it, or fail with EADDRNOTAVAIL).
 *
 * Context: connection work (HPS_W_DEV_GONE), socket lock held.
 * Return: the id to destroy after releasing the socket lock, or NULL.
 */
struct rdma_cm_id *hps_cm_dev_gone(struct hps_sock *hs)
{
	struct rdma_cm_id *id = hs->cm_id;
	struct sock *sk = &hs->sk;
	struct hps_dev *dev;

	sock_owned_by_me(sk);
	might_sleep();
	if (!id || !id->device || hs->qp)
		return NULL;
	dev = hps_dev_get(id->device);
	if (dev) {
		/* An id on a device that stays (the socket moved on). */
		hps_dev_put(dev);
		return NULL;
	}
	if (sk->sk_state == TCP_SYN_SENT) {
		trace_hps_conn_connect(hs, RDMA_CM_EVENT_DEVICE_REMOVAL, 0,
				       ENETUNREACH);
		return hps_fail(hs, ENETUNREACH);
	}
	if (hs->parent) {
		/* a child not set up yet: dropped, with its id */
		trace_hps_conn_accept(hs, id, HPS_ACC_FAILED,
				      RDMA_CM_EVENT_DEVICE_REMOVAL, 0,
				      ENETUNREACH);
		return hps_fail(hs, ENETUNREACH);
	}
	hs->cm_id = NULL;
	if (sk->sk_state == TCP_LISTEN) {
		/* accept(): ENODEV once, then EINVAL as on a shut listener */
		sk->sk_shutdown |= RCV_SHUTDOWN;
		if (hs->fb_lsn)	/* TCP's stops too, as after shutdown() */
			kernel_sock_shutdown(hs->fb_lsn, SHUT_RD);
		/* iWARP clients: no listener here now (ICMP) */
		hps_portq_release(hs, hps_portq_take(hs));
		WRITE_ONCE(sk->sk_err, ENODEV);
		sk_error_report(sk);
	}
	return id;
}

/*
 * Connection parameters from the sysctls and the socket's buffer sizes.
 * While the namespace is under memory pressure (net.hps.mem, hps_mem.c) a
 * new connection gets the smallest window, HPS_CREDITS_MIN receive and
 * send buffers, instead of credits; buf_size stays, and so does a buffer
 * size the application set itself (SO_RCVBUF, SO_SNDBUF: SOCK_*BUF_LOCK,
 * a listener's passed on to its connections), as TCP leaves a SO_SNDBUF
 * the application set alone under pressure (sk_stream_moderate_sndbuf()).
 * Context: process, socket lock held.
 */
static void hps_conn_params(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;
	struct hps_net *hn = hps_net(sock_net(sk));
	u32 credits = READ_ONCE(hn->credits);
	u32 buf_size = READ_ONCE(hn->buf_size);
	u32 pct = READ_ONCE(hn->ack_thresh);

	sock_owned_by_me(sk);
	/* none: __hps_teardown() freed those of an earlier, failed connect */
	hps_wr_free_bufs(hs);
	hps_flags_reset(hs);
	if (hps_mem_pressure(hn))
		credits = HPS_CREDITS_MIN;
	hs->buf_size = buf_size;
	hs->nrx = credits;
	hs->ntx = credits;
	/* SO_RCVBUF/SO_SNDBUF (kernel-doubled) set the number of buffers. */
	if (sk->sk_userlocks & SOCK_RCVBUF_LOCK)
		hs->nrx = clamp_t(u32, sk->sk_rcvbuf / 2 / buf_size,
				  HPS_CREDITS_MIN, HPS_CREDITS_MAX);
	if (sk->sk_userlocks & SOCK_SNDBUF_LOCK)
		hs->ntx = clamp_t(u32, sk->sk_sndbuf / 2 / buf_size,
				  HPS_CREDITS_MIN, HPS_CREDITS_MAX);
	/* a power of two: the ring's free-running indices wrap cleanly */
	hs->ntx = roundup_pow_of_two(hs->ntx);
	hs->ack_thresh = pct;	/* of the window as it is (hps_tx.c) */
	hs->inline_max = min_t(u32, READ_ONCE(hn->inline_max),
			       HPS_INLINE_MAX);
	/*
	 * Keepalive: the socket's own options, else the namespace's as of
	 * now; SO_KEEPALIVE, unless the application set it, is on when
	 * keepalive_ms is not 0 (Documentation/af_hps.rst).
	 */
	spin_lock_bh(&hs->lock);
	WRITE_ONCE(hs->ka_sys_ms, READ_ONCE(hn->keepalive_ms));
	WRITE_ONCE(hs->ka_sys_cnt, READ_ONCE(hn->keepalive_probes));
	if (!hs->ka_user)
		hs->ka_on = hs->ka_sys_ms != 0;
	spin_unlock_bh(&hs->lock);
	sock_valbool_flag(sk, SOCK_KEEPOPEN, hs->ka_on);

	/* the rings and receive queue were reset with the buffers, above */
	hs->tx_credits = 0;
	hs->peer_reserve = false;
	hs->rx_reserve_owed = false;
	hs->rx_reserve_taken = false;
	hs->rx_shrink_owed = false;
	hs->tx_pad = 0;
	hs->tx_nomem = false;
}

/**
 * hps_cm_release_port() - drop the TCP socket holding our local port
 * @hs: the socket, locked
 *
 * Context: process, socket lock held.
 */
void hps_cm_release_port(struct hps_sock *hs)
{
	sock_owned_by_me(&hs->sk);
	if (hs->port_hold) {
		sock_release(hs->port_hold);
		hs->port_hold = NULL;
	}
}

/*
 * Bind the id to @addr with a local port that is free in the TCP stack as
 * well as in rdma_cm's port space. iWARP drivers (siw) bind a TCP socket
 * to the port rdma_cm chose, when they connect or listen, and rdma_cm
 * knows nothing of the TCP stack's own sockets: a port that a TCP socket
 * without SO_REUSEADDR holds (one in TIME_WAIT will do) made rdma_connect()
 * fail with EADDRINUSE, about one connection in a thousand on one node in
 * the test bed, and listen() likewise. So a TCP socket with SO_REUSEADDR
 * binds @addr first (the TCP stack picks the port if @addr has none, and
 * refuses a busy one with EADDRINUSE, as bind() on TCP would), keeps the
 * port until the driver has bound its own socket (SO_REUSEADDR too, so it
 * can), and rdma_cm takes the same port.
 *
 * Context: process, socket lock held. Return: 0 or -errno.
 */
int hps_cm_bind_held(struct hps_sock *hs, const struct sockaddr_storage *addr)
{
	struct sock *sk = &hs->sk;
	struct sockaddr_storage a;
	struct socket *tcp;
	int i, err = -EADDRINUSE, len;

	sock_owned_by_me(sk);
	might_sleep();
	len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					    sizeof(struct sockaddr_in);
	for (i = 0; i < 8; i++) {
		memcpy(&a, addr, sizeof(a));
		err = sock_create_kern(sock_net(sk), a.ss_family, SOCK_STREAM,
				       IPPROTO_TCP, &tcp);
		if (err)
			return err;
		/*
		 * The TCP stack chooses a port from the whole ephemeral range
		 * only for a socket without SO_REUSEADDR (6.1 gives the others
		 * half of it, too few for many thousand connections): that
		 * comes after such a bind, in time for the driver's.
		 */
		if (hps_addr_port(addr))
			sock_set_reuseaddr(tcp->sk);
		err = kernel_bind(tcp, (struct sockaddr *)&a, len);
		if (!err && !hps_addr_port(addr))
			sock_set_reuseaddr(tcp->sk);
		if (!err)
			err = kernel_getsockname(tcp, (struct sockaddr *)&a);
		if (err >= 0)
			err = rdma_bind_addr(hs->cm_id, (struct sockaddr *)&a);
		if (!err) {
			hps_cm_release_port(hs);
			hs->port_hold = tcp;
			return 0;
		}
		sock_release(tcp);
		/*
		 * Only a port of our own choosing can be chosen again; rdma_cm
		 * says EADDRNOTAVAIL when a wildcard bind meets a port in use.
		 */
		if ((err != -EADDRINUSE && err != -EADDRNOTAVAIL) ||
		    hps_addr_port(addr))
			return err;
	}
	return err;
}

/*
 * Bind the id of a connect() without bind() to the wildcard address and a
 * port of rdma_cm's choosing, from the whole ephemeral range, avoiding
 * only its own; with an iWARP device in use the port must be free in the
 * TCP stack as well (hps_cm_bind_held()). No TCP socket otherwise: the
 * port is rdma_cm's alone.
 * Context: process, socket lock held. Return: 0 or -errno.
 */
static int hps_cm_bind_any(struct hps_sock *hs, sa_family_t family)
{
	struct sockaddr_storage any = { .ss_family = family };

	sock_owned_by_me(&hs->sk);
	if (hps_ib_have_iwarp())
		return hps_cm_bind_held(hs, &any);
	return rdma_bind_addr(hs->cm_id, (struct sockaddr *)&any);
}

/* Check a user address; copy it to @ss. Return: 0 or -errno as TCP. */
static int hps_addr_get(struct sockaddr *addr, int len,
			struct sockaddr_storage *ss)
{
	if (!addr || len < (int)offsetofend(struct sockaddr, sa_family))
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	switch (addr->sa_family) {
	case AF_INET:
		if (len < (int)sizeof(struct sockaddr_in))
			return -EINVAL;
		memcpy(ss, addr, sizeof(struct sockaddr_in));
		return 0;
	case AF_INET6:
		if (len < SIN6_LEN_RFC2133)
			return -EINVAL;
		memcpy(ss, addr, min_t(int, len, sizeof(struct sockaddr_in6)));
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

/*
 * Undo the hps_cm_create_id() of a bind() or listen() that failed: the id
 * goes, and the socket lock with it (ids are destroyed without it).
 *
 * Context: process, socket lock held; released on return.
 */
static void hps_cm_drop_new_id(struct sock *sk)
{
	struct hps_sock *hs = hps_sk(sk);
	struct rdma_cm_id *id = hs->cm_id;

	sock_owned_by_me(sk);
	hs->cm_id = NULL;
	release_sock(sk);
	hps_cm_destroy_id(sk, id);
}

/**
 * hps_bind() - proto_ops.bind
 * @sock: the socket
 * @addr: struct sockaddr_in or sockaddr_in6
 * @len: its length
 *
 * Return: 0 or -errno.
 */
int hps_bind(struct socket *sock, struct sockaddr *addr, int len)
{
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	struct socket *fb;
	struct sockaddr_storage ss;
	bool created = false;
	int err;

	fb = hps_fb(hs);
	if (fb)
		return fb->ops->bind(fb, addr, len);
	err = hps_addr_get(addr, len, &ss);
	if (err)
		return err;

	lock_sock(sk);
	if (sk->sk_state != TCP_CLOSE || hs->local.ss_family ||
	    test_bit(HPS_F_WAS_CONN, &hs->flags) || hs->fb) {
		err = -EINVAL;	/* hs->fb: it fell back meanwhile */
		goto out;
	}
	if (!hs->cm_id) {
		err = hps_cm_create_id(sk);
		if (err)
			goto out;
		created = true;
	}
	err = hps_cm_bind_held(hs, &ss);
	if (err) {
		if (err == -ENODEV || err == -EINVAL)
			err = -EADDRNOTAVAIL;
		if (created) {
			hps_cm_drop_new_id(sk);
			return err;
		}
		goto out;
	}
	memcpy(&hs->local, &hs->cm_id->route.addr.src_addr, sizeof(hs->local));
out:
	release_sock(sk);
	return err;
}

/**
 * hps_listen() - proto_ops.listen
 * @sock: the socket
 * @backlog: connections waiting for accept (plus one, as TCP)
 *
 * Return: 0 or -errno.
 */
int hps_listen(struct socket *sock, int backlog)
{
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	struct rdma_cm_id *destroy = NULL;
	bool created = false, moved = false;
	int err = 0;

	if (hps_fb(hs))
		return -EINVAL;	/* not over TCP: see hps_accept() */
	lock_sock(sk);
	if (sock->state != SS_UNCONNECTED || hs->fb ||
	    (sk->sk_state != TCP_CLOSE && sk->sk_state != TCP_LISTEN) ||
	    test_bit(HPS_F_WAS_CONN, &hs->flags)) {
		err = -EINVAL;
		goto out;
	}
	if (sk->sk_state == TCP_LISTEN) {
		WRITE_ONCE(sk->sk_max_ack_backlog, backlog);
		/* not after shutdown(), which stopped TCP's too */
		if (hs->fb_lsn && !(sk->sk_shutdown & RCV_SHUTDOWN))
			kernel_listen(hs->fb_lsn, backlog);
		else
			hps_fb_listen(hs, backlog);	/* option set since */
		goto out;
	}
	err = hps_cm_ensure_id(sk, &created);
	/* over iWARP, the RDMA side on a port of its own (hps_portq.c) */
	if (!err && !hps_fb_listen_iwarp(hs, backlog, &destroy))
		moved = true;
	else if (!err)
		err = rdma_listen(hs->cm_id, backlog);
	if (err) {
		if (created) {
			hps_cm_drop_new_id(sk);
			hps_cm_destroy_id(sk, destroy);
			return err;
		}
		goto out;
	}
	hps_cm_release_port(hs);	/* the driver listens on the port */
	if (!moved)
		memcpy(&hs->local, &hs->cm_id->route.addr.src_addr,
		       sizeof(hs->local));
	WRITE_ONCE(sk->sk_max_ack_backlog, backlog);
	sk->sk_ack_backlog = 0;
	sk->sk_shutdown = 0;
	hps_set_state(sk, TCP_LISTEN);
	if (!moved)
		hps_fb_listen(hs, backlog);	/* plain TCP clients too */
	/* iWARP clients ask where the RDMA side is; not beside a TCP side */
	if (hps_portq_wanted(hs->cm_id) && (moved || !hs->fb_lsn))
		hps_portq_listen(hs);
out:
	release_sock(sk);
	hps_cm_destroy_id(sk, destroy);
	return err;
}

static int hps_wait_connect(struct sock *sk, long *timeo)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct hps_sock *hs = hps_sk(sk);
	int err = 0;

	add_wait_queue(sk_sleep(sk), &wait);
	/* a fallback may come before the RDMA side is torn down */
	while (sk->sk_state == TCP_SYN_SENT && !hps_fb(hs)) {
		if (!*timeo) {
			err = -EINPROGRESS;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(*timeo);
			break;
		}
		sk_wait_event(sk, timeo,
			      sk->sk_state != TCP_SYN_SENT || hps_fb(hs),
			      &wait);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	return err;
}

/*
 * The connect() call whose attempt fell back waits for TCP's handshake. TCP
 * has been connecting since the fallback, so its connect() says EALREADY
 * when the wait ends without an answer: this call started the attempt,
 * and says EINPROGRESS, as TCP's first connect() would. Context: process,
 * no socket lock held.
 */
static int hps_fb_connect_first(struct hps_sock *hs, struct socket *fb,
				struct sockaddr *addr, int len, int flags)
{
	int err = hps_fb_connect(hs, fb, addr, len, flags);

	return err == -EALREADY ? -EINPROGRESS : err;
}

/**
 * hps_connect() - proto_ops.connect
 * @sock: the socket
 * @addr: peer address, struct sockaddr_in or sockaddr_in6
 * @len: its length
 * @flags: file flags (O_NONBLOCK)
 *
 * Return: 0, -EINPROGRESS (non-blocking) or -errno as TCP.
 */
int hps_connect(struct socket *sock, struct sockaddr *addr, int len,
		int flags)
{
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	struct sockaddr_storage ss;
	struct socket *fb;
	bool created;
	long timeo;
	int err;

	fb = hps_fb(hs);
	if (fb)
		return hps_fb_connect(hs, fb, addr, len, flags);
	err = hps_addr_get(addr, len, &ss);
	if (err)
		return err;

	lock_sock(sk);
	fb = hs->fb;
	if (fb) {	/* another thread's connect() fell back meanwhile */
		release_sock(sk);
		return hps_fb_connect(hs, fb, addr, len, flags);
	}
	switch (sock->state) {
	case SS_CONNECTED:
		err = -EISCONN;
		goto out;
	case SS_CONNECTING:
		err = -EALREADY;
		break;
	default:
		if (sk->sk_state != TCP_CLOSE) {
			err = sk->sk_state == TCP_LISTEN ? -EISCONN : -EALREADY;
			goto out;
		}
		if (test_bit(HPS_F_WAS_CONN, &hs->flags)) {
			err = -EISCONN;
			goto out;
		}
		hps_conn_params(hs);
		err = hps_cm_ensure_id(sk, &created);
		if (err) {
			if (created)
				hps_cm_drop_new_id(sk);
			else
				release_sock(sk);
			return err;
		}
		if (!hs->local.ss_family) {
			err = hps_cm_bind_any(hs, ss.ss_family);
			if (err) {
				struct rdma_cm_id *id = hs->cm_id;

				hs->cm_id = NULL;
				release_sock(sk);
				hps_cm_destroy_id(sk, id);
				return err == -EADDRINUSE ? -EADDRNOTAVAIL :
				       err;
			}
		}
		memcpy(&hs->peer, &ss, sizeof(ss));
		hs->portq_restarted = false;
		hps_fb_prepare(hs);
		set_bit(HPS_F_ACTIVE, &hs->flags);
		sk->sk_err = 0;
		sk->sk_shutdown = 0;
		hps_set_state(sk, TCP_SYN_SENT);
		err = rdma_resolve_addr(hs->cm_id, NULL, (struct sockaddr *)&ss,
					hps_resolve_ms());
		if (err) {
			struct rdma_cm_id *id = hs->cm_id;
			bool fell;

			err = err == -ENODEV ? -ENETUNREACH : err;
			trace_hps_conn_connect(hs, HPS_TP_NO_EVENT, err, -err);
			fell = hps_fb_try(hs, hps_fb_reason(HPS_TP_NO_EVENT,
							    err));
			hps_cm_release_port(hs);
			hs->cm_id = NULL;
			hs->local.ss_family = 0;
			hps_set_state(sk, TCP_CLOSE);
			release_sock(sk);
			hps_cm_destroy_id(sk, id);
			fb = hps_fb(hs);
			if (!fell || !fb)
				return err;
			if (flags & O_NONBLOCK)
				return -EINPROGRESS;
			return hps_fb_connect_first(hs, fb, addr, len, flags);
		}
		/* over iWARP, the port query while the address resolves */
		hps_portq_start(hs);
		sock->state = SS_CONNECTING;
		err = -EINPROGRESS;
		break;
	}

	timeo = sock_sndtimeo(sk, flags & O_NONBLOCK);
	if (sk->sk_state == TCP_SYN_SENT) {
		int werr = hps_wait_connect(sk, &timeo);

		if (werr) {
			if (werr != -EINPROGRESS)
				err = werr;
			goto out;
		}
	}
	fb = hps_fb(hs);
	if (fb) {
		/* fell back while we waited: TCP's connect decides */
		release_sock(sk);
		if (!timeo)
			return -EINPROGRESS;
		return hps_fb_connect_first(hs, fb, addr, len, flags);
	}
	if (sk->sk_state == TCP_CLOSE) {
		err = sock_error(sk) ? : -ECONNABORTED;
		sock->state = SS_UNCONNECTED;
		goto out;
	}
	sock->state = SS_CONNECTED;
	err = 0;
out:
	release_sock(sk);
	return err;
}

/**
 * hps_accept() - proto_ops.accept
 * @sock: the listening socket
 * @newsock: the new socket to graft the connection to
 * @flags: file flags (O_NONBLOCK)
 * @kern: kernel socket
 *
 * Return: 0 or -errno.
 */
int hps_accept(struct socket *sock, struct socket *newsock, int flags,
	       bool kern)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk), *child = NULL;
	bool tcp = false;
	long timeo;
	int err = 0;

	/*
	 * A socket that fell back is never a listener (hps_listen()): @newsock
	 * is an AF_HPS socket, TCP's accept() could not fill it.
	 */
	if (hps_fb(hs))
		return -EINVAL;
	lock_sock(sk);
	if (sk->sk_state != TCP_LISTEN) {
		err = -EINVAL;
		goto out;
	}
	timeo = sock_rcvtimeo(sk, flags & O_NONBLOCK);
	add_wait_queue(sk_sleep(sk), &wait);
	while (list_empty(&hs->accept_list)) {
		/* a plain TCP client (hps_fb_listen()); EAGAIN: one raced */
		if (hps_fb_acceptable(hs)) {
			err = hps_fb_accept(hs, newsock);
			if (err != -EAGAIN) {
				tcp = true;
				break;
			}
			err = 0;
		}
		if (sk->sk_err) {
			err = sock_error(sk);
			break;
		}
		if (sk->sk_state != TCP_LISTEN ||
		    sk->sk_shutdown & RCV_SHUTDOWN) {
			err = -EINVAL;
			break;
		}
		if (!timeo) {
			err = -EAGAIN;
			break;
		}
		if (signal_pending(current)) {
			err = sock_intr_errno(timeo);
			break;
		}
		sk_wait_event(sk, &timeo,
			      !list_empty(&hs->accept_list) ||
			      hps_fb_acceptable(hs) || sk->sk_err ||
			      sk->sk_state != TCP_LISTEN ||
			      sk->sk_shutdown & RCV_SHUTDOWN, &wait);
	}
	remove_wait_queue(sk_sleep(sk), &wait);
	if (!err && !tcp) {
		child = list_first_entry(&hs->accept_list, struct hps_sock,
					 accept_node);
		list_del_init(&child->accept_node);
		sk_acceptq_removed(sk);
	}
out:
	release_sock(sk);
	if (!child)
		return err;

	lock_sock(&child->sk);
	sock_graft(&child->sk, newsock);
	newsock->state = SS_CONNECTED;
	release_sock(&child->sk);
	return 0;
}

/**
 * hps_getname() - proto_ops.getname
 * @sock: the socket
 * @addr: filled in
 * @peer: peer address instead of the local one
 *
 * Return: address length or -ENOTCONN.
 */
int hps_getname(struct socket *sock, struct sockaddr *addr, int peer)
{
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	struct socket *fb;
	struct sockaddr_storage *ss;
	int len;

	fb = hps_fb(hs);
	if (fb)
		return fb->ops->getname(fb, addr, peer);
	lock_sock(sk);
	if (peer) {
		if (!test_bit(HPS_F_WAS_CONN, &hs->flags) &&
		    sk->sk_state != TCP_ESTABLISHED) {
			release_sock(sk);
			return -ENOTCONN;
		}
		ss = &hs->peer;
	} else {
		ss = &hs->local;
	}
	if (ss->ss_family == AF_INET6) {
		len = sizeof(struct sockaddr_in6);
		memcpy(addr, ss, len);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)addr;

		len = sizeof(*sin);
		memcpy(addr, ss, len);
		sin->sin_family = AF_INET;
	}
	release_sock(sk);
	return len;
}

/*
 * The QP's ACK timeout over RoCE: 4.096 us << HPS_ACK_TIMEOUT, about 2.1 s,
 * what rdma_cm gave RoCE QPs up to 6.1 (its packet lifetime 18, plus one).
 * 6.12's rdma_cm gives 17 (0.5 s, so a dead path ends a connection after
 * about 4 s of retries instead of 15); AF_HPS sets 6.1's on every kernel,
 * the timing its keepalive and link-outage handling are sized for
 * (reliability.rst). Set over RoCE only: iWARP has no such timeout, and
 * InfiniBand's comes from the subnet's path record.
 */
#define HPS_ACK_TIMEOUT	19

static void hps_cm_set_ack_timeout(struct rdma_cm_id *id)
{
	/* RoCE's comes from rdma_cm; InfiniBand's from the path record */
	if (id->device && rdma_protocol_roce(id->device, id->port_num))
		rdma_set_ack_timeout(id, HPS_ACK_TIMEOUT);	/* RC: no error */
}

static void hps_conn_param(struct rdma_conn_param *p, struct hps_hello *h)
{
	memset(p, 0, sizeof(*p));
	p->private_data = h;
	p->private_data_len = sizeof(*h);
	p->responder_resources = 1;
	p->initiator_depth = 1;
	/*
	 * 6, not 7: rxe (6.1) retries for ever at 7 (infinite is what 7
	 * means for RNR retries only), and then a dead peer is never found.
	 * RNR cannot happen (protocol.rst), so its count does not matter.
	 */
	p->retry_count = 6;
	p->rnr_retry_count = 7;
}

/*
 * CONNECT_REQUEST on listener @lsk: a child for @id, or reject it. Only
 * what needs the listener is done here, under its lock: the backlog, the
 * child and its options, the hello. The child's QP, buffers and
 * rdma_accept() come in its own connection work (hps_cm_accept_work()),
 * so that the listener takes the next request meanwhile.
 * Context: the listener's connection work.
 */
static void hps_cm_conn_req(struct sock *lsk, struct rdma_cm_id *id,
			    const void *pdata, u8 pdata_len)
{
	struct hps_sock *lhs = hps_sk(lsk), *chs;
	struct sock *sk;
	int err;

	lock_sock(lsk);
	if (lsk->sk_state != TCP_LISTEN || lsk->sk_shutdown & RCV_SHUTDOWN ||
	    lhs->npending + lsk->sk_ack_backlog > lsk->sk_max_ack_backlog) {
		hps_stat_inc(sock_net(lsk), HPS_STAT_LISTEN_DROPS);
		trace_hps_conn_accept(lhs, id, HPS_ACC_BACKLOG,
				      RDMA_CM_EVENT_CONNECT_REQUEST, 0,
				      ECONNREFUSED);
		goto reject;
	}
	sk = hps_sock_alloc(sock_net(lsk), NULL, lsk->sk_kern_sock);
	if (!sk) {
		err = -ENOMEM;
		hps_stat_inc(sock_net(lsk), HPS_STAT_ACCEPT_ERRORS);
		trace_hps_conn_accept(lhs, id, HPS_ACC_SETUP,
				      RDMA_CM_EVENT_CONNECT_REQUEST, err,
				      ECONNREFUSED);
		pr_info_ratelimited("connection request rejected: setup failed (%d)\n",
				    err);
		goto reject;
	}
	chs = hps_sk(sk);
	hps_sock_inherit(chs, lhs);

	lock_sock_nested(sk, SINGLE_DEPTH_NESTING);
	hps_conn_params(chs);
	/* for this listener's port, not another's (hps_portq.c) */
	err = hps_hello_check(chs, pdata, pdata_len,
			      hps_addr_port(&lhs->local));
	if (err) {
		pr_info_ratelimited("connection request with a bad hello rejected\n");
		hps_stat_inc(sock_net(sk), HPS_STAT_PROTO_ERRORS);
		trace_hps_conn_accept(lhs, id, HPS_ACC_BAD_HELLO,
				      RDMA_CM_EVENT_CONNECT_REQUEST, 0, EPROTO);
		release_sock(sk);
		sock_put(sk);
		goto reject;
	}
	sock_hold(sk);		/* the cm_id's reference */
	chs->cm_id = id;
	sock_hold(lsk);		/* the child's reference on its listener */
	chs->parent = lsk;
	lhs->npending++;
	memcpy(&chs->local, &id->route.addr.src_addr, sizeof(chs->local));
	/* the listener's port, where its RDMA side moved or not */
	hps_addr_set_port(&chs->local, hps_addr_port(&lhs->local));
	memcpy(&chs->peer, &id->route.addr.dst_addr, sizeof(chs->peer));
	trace_hps_sock_state(chs, sk->sk_state, TCP_SYN_RECV);
	sk->sk_state = TCP_SYN_RECV;
	release_sock(sk);
	release_sock(lsk);
	/*
	 * The id's events go to the child from now on (the handler reads
	 * the context under this mutex), then the child sets itself up;
	 * events that come before that wait behind it (hps_connd_work()).
	 * Once the context is the child, an event (the peer gave up, the
	 * device goes) can have the child's work drop it, and free it,
	 * before the kick: hold it until then.
	 */
	sock_hold(sk);
	rdma_lock_handler(id);
	id->context = sk;
	rdma_unlock_handler(id);
	hps_connd_kick(chs, HPS_W_ACCEPT);
	sock_put(sk);
	return;

reject:
	release_sock(lsk);
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	rdma_destroy_id(id);
}

/**
 * hps_cm_accept_work() - set up an accepted child and accept its request
 * @hs: the child, in SYN_RECV with its cm_id and its listener (parent)
 *
 * The QP, the buffers and their receives, then rdma_accept() with our
 * hello; the child goes to its listener's accept queue at ESTABLISHED.
 * A child whose listener was closed meanwhile, or whose setup fails, is
 * rejected and dropped, as one the listener had no room for.
 *
 * Context: the child's connection work (%HPS_W_ACCEPT); takes the child's
 * socket lock, never the listener's (but through hps_fail()).
 */
void hps_cm_accept_work(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;
	struct rdma_cm_id *id, *destroy = NULL;
	struct rdma_conn_param param;
	struct hps_hello hello;
	bool rejected = false;
	int err;

	might_sleep();
	lock_sock(sk);
	id = hs->cm_id;
	/* once, and not for a child dropped already (device removal) */
	if (!id || hs->qp || !hs->parent ||
	    test_bit(HPS_F_ABORTED, &hs->flags))
		goto out;
	hps_inject_sleep_once(HPS_INJ_ACCEPT_SETUP);
	if (READ_ONCE(hs->parent->sk_state) != TCP_LISTEN)
		goto dropped;
	err = hps_wr_setup(hs, id);
	if (err)
		goto fail_setup;
	/* and again: the setup may have slept for a while */
	if (READ_ONCE(hs->parent->sk_state) != TCP_LISTEN)
		goto dropped;
	set_bit(HPS_F_CONN_UP, &hs->flags);
	hps_hello_fill(hs, &hello, hps_addr_port(&hs->local));
	hps_conn_param(&param, &hello);
	/*
	 * rdma_accept() wants the id's handler mutex, which its event
	 * handler runs under; we are not in the handler (events come here
	 * through the connection work), so take it. The handler only queues
	 * events and never waits for this work, so this cannot deadlock.
	 */
	hps_cm_set_ack_timeout(id);
	rdma_lock_handler(id);
	err = rdma_accept(id, &param);
	rdma_unlock_handler(id);
	if (err) {
		rejected = true;	/* rdma_accept() rejected the request */
		goto fail_setup;
	}
	set_bit(HPS_F_QP_READY, &hs->flags);
	trace_hps_conn_accept(hs, id, HPS_ACC_ACCEPTED,
			      RDMA_CM_EVENT_CONNECT_REQUEST, 0, 0);
	hps_stat_inc(sock_net(sk), HPS_STAT_CONN_PASSIVE);
	goto out;

dropped:
	hps_stat_inc(sock_net(sk), HPS_STAT_LISTEN_DROPS);
	trace_hps_conn_accept(hs, id, HPS_ACC_BACKLOG,
			      RDMA_CM_EVENT_CONNECT_REQUEST, 0, ECONNREFUSED);
	goto fail;

fail_setup:
	hps_stat_inc(sock_net(sk), HPS_STAT_ACCEPT_ERRORS);
	trace_hps_conn_accept(hs, id, HPS_ACC_SETUP,
			      RDMA_CM_EVENT_CONNECT_REQUEST, err, ECONNREFUSED);
	pr_info_ratelimited("connection request rejected: setup failed (%d)\n",
			    err);
fail:
	if (!rejected)
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	/* dropped: its own teardown destroys the id and frees it */
	destroy = hps_fail(hs, 0);
out:
	release_sock(sk);
	hps_cm_destroy_id(sk, destroy);
}

/*
 * An attempt to an RDMA port the namespace remembered failed (over iWARP,
 * hps_portq_forget()): the socket starts again, asking, with a new id and
 * QP, and stays in SYN_SENT with nothing to report. The QP and buffers go
 * now, the id when the caller has released the socket lock
 * (hps_cm_destroy_id()), and then the connection work starts the new
 * attempt (hps_cm_restart_work()). While rdma_connect() runs,
 * hps_cm_connect_work() does this when it returns.
 * Context: process, socket lock held.
 * Return: the cm_id to destroy after releasing the socket lock, or NULL.
 */
static struct rdma_cm_id *hps_cm_restart(struct hps_sock *hs)
{
	struct rdma_cm_id *id;

	sock_owned_by_me(&hs->sk);
	if (test_bit(HPS_F_CONNECTING, &hs->flags)) {
		set_bit(HPS_F_RESTART_DEFER, &hs->flags);
		return NULL;
	}
	hps_cm_release_port(hs);
	hps_portq_release(hs, hps_portq_take(hs));
	/* (never up: hps_cm_active_up() clears hs->portq_cached) */
	hps_wr_teardown(hs);
	hps_wr_free_bufs(hs);	/* and their charge: as __hps_teardown() */
	id = hs->cm_id;
	hs->cm_id = NULL;
	hs->portq_restarted = true;
	if (id)		/* (always: an attempt has its id) */
		set_bit(HPS_F_RESTART_OWED, &hs->flags); /* hps_cm_destroy_id() */
	else
		hps_connd_kick(hs, HPS_W_RESTART);
	return id;
}

/*
 * A connection attempt failed with @err (a positive errno): it goes on
 * over TCP if the socket may (hps_fb_try()), else fails; or, when the
 * peer's end failed it (@remote: rejected, unreachable, rdma_connect()
 * failed) and it went to a remembered RDMA port, starts again, asking
 * (hps_cm_restart()); not after an abort or close(). @event and @status
 * say how (HPS_TP_NO_EVENT and a call's -errno when a call failed).
 * Context: connection work, socket lock held.
 * Return: the cm_id to destroy after releasing the socket lock, or NULL.
 */
static struct rdma_cm_id *hps_cm_connect_failed(struct hps_sock *hs,
						int event, int status,
						int err, bool remote)
{
	sock_owned_by_me(&hs->sk);
	if (remote && hps_portq_forget(hs) &&
	    !test_bit(HPS_F_ABORTED, &hs->flags) &&
	    !sock_flag(&hs->sk, SOCK_DEAD))
		return hps_cm_restart(hs);
	if (test_bit(HPS_F_ACTIVE, &hs->flags) &&
	    hps_fb_try(hs, hps_fb_reason(event, status)))
		return hps_fail(hs, 0);
	hps_stat_inc(sock_net(&hs->sk), HPS_STAT_CONNECT_ERRORS);
	return hps_fail(hs, err);
}

/**
 * hps_cm_connect_work() - send the connect request
 * @work: hps_sock.connect_work
 *
 * rdma_connect() may block for as long as a TCP connect (siw), so it runs
 * here, without the socket lock and outside the socket's connection work.
 * While HPS_F_CONNECTING is set the id and QP stay (teardown is deferred).
 *
 * Context: process (hps_connect workqueue, hps_connect_queue()).
 */
void hps_cm_connect_work(struct work_struct *work)
{
	struct hps_sock *hs = container_of(work, struct hps_sock,
					   connect_work);
	struct sock *sk = &hs->sk;
	struct rdma_cm_id *destroy = NULL;
	struct rdma_conn_param param;
	struct hps_hello hello;
	int err;

	hps_hello_fill(hs, &hello, hps_addr_port(&hs->peer));
	hps_conn_param(&param, &hello);
	err = rdma_connect(hs->cm_id, &param);
	/* test builds: the attempt's outcome may come first (a restart) */
	hps_inject_sleep_once(HPS_INJ_CONNECT_DONE);

	lock_sock(sk);
	hps_cm_release_port(hs);	/* the driver has bound its socket */
	clear_bit(HPS_F_CONNECTING, &hs->flags);
	if (test_and_clear_bit(HPS_F_TEARDOWN_DEFER, &hs->flags)) {
		clear_bit(HPS_F_RESTART_DEFER, &hs->flags);
		hps_connd_kick(hs, HPS_W_TEARDOWN);
	} else if (test_and_clear_bit(HPS_F_RESTART_DEFER, &hs->flags)) {
		/* its failure came meanwhile; an abort or close() since too */
		if (test_bit(HPS_F_ABORTED, &hs->flags) ||
		    sock_flag(sk, SOCK_DEAD))
			destroy = hps_fail(hs, ECONNABORTED);
		else
			destroy = hps_cm_restart(hs);
	} else if (err) {
		int e = err == -ETIMEDOUT ? ETIMEDOUT :
			err == -ENETUNREACH ? ENETUNREACH : ECONNREFUSED;

		pr_debug("rdma_connect failed: %d\n", err);
		trace_hps_conn_connect(hs, HPS_TP_NO_EVENT, err, e);
		/* the peer's (a remembered port: nobody there), not ours */
		destroy = hps_cm_connect_failed(hs, HPS_TP_NO_EVENT, err, e,
						err == -ECONNREFUSED ||
						err == -ECONNRESET ||
						err == -ETIMEDOUT);
	}
	release_sock(sk);
	hps_cm_destroy_id(sk, destroy);
	sock_put(sk);	/* from hps_cm_process() */
}

/* ESTABLISHED on the active side: take the peer's hello, speak first. */
static struct rdma_cm_id *hps_cm_active_up(struct hps_sock *hs,
					   struct rdma_cm_id *id,
					   const void *pdata, u8 pdata_len)
{
	struct sock *sk = &hs->sk;

	set_bit(HPS_F_QP_READY, &hs->flags);
	hs->portq_cached = 0;	/* it held */
	if (hps_hello_check(hs, pdata, pdata_len, hps_addr_port(&hs->peer))) {
		pr_warn_ratelimited("bad hello from the passive side\n");
		hps_stat_inc(sock_net(sk), HPS_STAT_PROTO_ERRORS);
		trace_hps_conn_connect(hs, RDMA_CM_EVENT_ESTABLISHED, 0, EPROTO);
		if (hps_fb_try(hs, HPS_FB_PEER_ERROR))
			return hps_fail(hs, 0);
		return hps_fail(hs, EPROTO);
	}
	memcpy(&hs->local, &id->route.addr.src_addr, sizeof(hs->local));
	set_bit(HPS_F_WAS_CONN, &hs->flags);
	hps_fb_drop_spare(hs);	/* up over RDMA: no fallback */
	spin_lock_bh(&hs->lock);
	set_bit(HPS_F_CONN_UP, &hs->flags);
	set_bit(HPS_F_PEER_READY, &hs->flags);
	/*
	 * iWARP: the passive side may only send after our first message.
	 * It answers it; until then the message is repeated (siw can leave
	 * it unread: see hps_tx_nudge()).
	 */
	hps_tx_ctrl(hs, HPS_MSG_CREDIT, true);
	sk_reset_timer(sk, &hs->nudge_timer, jiffies + HPS_NUDGE_TIMEOUT);
	hps_tx_push(hs);
	spin_unlock_bh(&hs->lock);
	hps_tx_ka_start(hs);
	trace_hps_conn_connect(hs, RDMA_CM_EVENT_ESTABLISHED, 0, 0);
	hps_set_state(sk, TCP_ESTABLISHED);
	sk->sk_write_space(sk);
	hps_stat_inc(sock_net(sk), HPS_STAT_CONN_ACTIVE);
	return NULL;
}

/**
 * hps_cm_resolve_route() - the address is resolved: resolve the route
 * @hs: an active socket
 * @id: its cm_id, ADDR_RESOLVED
 *
 * Context: connection work, socket lock held.
 * Return: the cm_id to destroy after releasing the socket lock, or NULL.
 */
struct rdma_cm_id *hps_cm_resolve_route(struct hps_sock *hs,
					struct rdma_cm_id *id)
{
	int err;

	sock_owned_by_me(&hs->sk);
	hps_cm_set_ack_timeout(id);
	err = rdma_resolve_route(id, HPS_RESOLVE_MS);
	if (!err)
		return NULL;
	trace_hps_conn_connect(hs, RDMA_CM_EVENT_ADDR_RESOLVED, err,
			       EHOSTUNREACH);
	return hps_cm_connect_failed(hs, HPS_TP_NO_EVENT, err, EHOSTUNREACH,
				     false);
}

/**
 * hps_cm_restart_work() - start a connection attempt again
 * @hs: an active socket whose attempt to a remembered RDMA port failed,
 *	without an id (hps_cm_restart())
 *
 * As connect() started it, from the same socket state; the port query
 * goes out now, as the remembered port was forgotten. A socket aborted
 * or closed meanwhile fails now (ECONNABORTED; an aborted one keeps its
 * abort's error); one that fell back or failed is left as it is.
 *
 * Context: connection work (%HPS_W_RESTART), socket lock held.
 * Return: the cm_id to destroy after releasing the socket lock, or NULL.
 */
struct rdma_cm_id *hps_cm_restart_work(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;
	int err, e;

	sock_owned_by_me(sk);
	might_sleep();
	if (sk->sk_state != TCP_SYN_SENT || hs->cm_id || hs->qp || hs->fb)
		return NULL;
	/* aborted or closed meanwhile (no id: nothing else ends it) */
	if (test_bit(HPS_F_TEARDOWN, &hs->flags) ||
	    test_bit(HPS_F_ABORTED, &hs->flags) || sock_flag(sk, SOCK_DEAD))
		return hps_fail(hs, ECONNABORTED);
	hps_conn_params(hs);
	err = hps_cm_create_id(sk);
	set_bit(HPS_F_ACTIVE, &hs->flags);	/* (both reset the flags) */
	if (!err)
		err = hps_cm_bind_any(hs, hs->peer.ss_family);
	if (!err)
		err = rdma_resolve_addr(hs->cm_id, NULL,
					(struct sockaddr *)&hs->peer,
					hps_resolve_ms());
	if (err) {
		e = err == -ENODEV ? ENETUNREACH :
		    err == -EADDRINUSE ? EADDRNOTAVAIL : -err;
		trace_hps_conn_connect(hs, HPS_TP_NO_EVENT, err, e);
		return hps_cm_connect_failed(hs, HPS_TP_NO_EVENT, err, e, false);
	}
	hps_portq_start(hs);
	return NULL;
}

/*
 * The outcome of a connection attempt, for the tracepoints: connect() on
 * the active side, the request's new socket on the passive side.
 */
static void hps_cm_outcome(struct hps_sock *hs, struct rdma_cm_id *id,
			   int event, int status, int err)
{
	if (test_bit(HPS_F_ACTIVE, &hs->flags))
		trace_hps_conn_connect(hs, event, status, err);
	else
		trace_hps_conn_accept(hs, id, HPS_ACC_FAILED, event, status,
				      err);
}

/* The errno (negative) a failed connection attempt reports. */
static int hps_cm_errno(int event, int status)
{
	switch (event) {
	case RDMA_CM_EVENT_REJECTED:
		return status == -ETIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return status == -ETIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH;
	case RDMA_CM_EVENT_UNREACHABLE:
		if (status == -ECONNREFUSED || status == -ECONNRESET ||
		    status == -ENETUNREACH || status == -EHOSTUNREACH)
			return status;
		return -ETIMEDOUT;
	default:
		return -ECONNRESET;
	}
}

/**
 * hps_cm_process() - handle one rdma_cm event in the connection work
 * @id: the event's cm_id
 * @event: enum rdma_cm_event_type
 * @status: the event's status
 * @pdata: copy of the private data
 * @pdata_len: its length
 * @sk: the socket (listener for CONNECT_REQUEST); the caller holds a ref
 *
 * Context: the connection work of @sk.
 */
void hps_cm_process(struct rdma_cm_id *id, int event, int status,
		    const void *pdata, u8 pdata_len, struct sock *sk)
{
	struct hps_sock *hs = hps_sk(sk);
	struct rdma_cm_id *destroy = NULL;
	bool aborted;
	int err;

	if (event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		hps_cm_conn_req(sk, id, pdata, pdata_len);
		return;
	}

	lock_sock(sk);
	if (hs->cm_id != id || test_bit(HPS_F_TEARDOWN, &hs->flags))
		goto out;	/* stale: the id is gone or going */

	switch (event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		/* over iWARP, where the listener's RDMA side is, first */
		destroy = hps_portq_ask(hs, id);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		err = hps_wr_setup(hs, id);
		if (err) {
			int e = err == -ENODEV ? ENETUNREACH :
				err == -ENOBUFS || err == -ENOMEM ? ENOBUFS :
				ECONNREFUSED;

			pr_debug("connection setup failed: %d\n", err);
			trace_hps_conn_connect(hs, event, err, e);
			destroy = hps_cm_connect_failed(hs, HPS_TP_NO_EVENT,
							err, e, false);
			break;
		}
		set_bit(HPS_F_CONNECTING, &hs->flags);
		sock_hold(sk);	/* put by hps_cm_connect_work() */
		hps_connect_queue(hs);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (test_bit(HPS_F_ACTIVE, &hs->flags)) {
			destroy = hps_cm_active_up(hs, id, pdata, pdata_len);
		} else {
			set_bit(HPS_F_WAS_CONN, &hs->flags);
			hps_tx_ka_start(hs);
			trace_hps_conn_accept(hs, id, HPS_ACC_ESTABLISHED,
					      event, status, 0);
			hps_set_state(sk, TCP_ESTABLISHED);
			if (test_bit(HPS_F_FIN_RCVD, &hs->flags))
				hps_connd_kick(hs, HPS_W_STATE);
			hps_child_established(hs);
		}
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		/*
		 * On a connection that is up, this is rdma_cm's neighbour
		 * watch (6.1: cma_netevent_callback()): the peer's IP
		 * neighbour entry failed, as it does a few seconds into
		 * any link outage (ARP gets no answer). The QP still works
		 * and its retries decide: a peer really gone ends it with
		 * a retry error (ETIMEDOUT), a link back in time costs
		 * nothing. Aborting here broke every connection on a 4 s
		 * link flap (reliability.rst, "Link down").
		 */
		if (test_bit(HPS_F_WAS_CONN, &hs->flags)) {
			pr_debug("peer's neighbour entry failed: left to the transport\n");
			break;
		}
		fallthrough;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		pr_debug("connect failed: %s, status %d\n",
			 rdma_event_msg(event), status);
		hps_cm_outcome(hs, id, event, status,
			       -hps_cm_errno(event, status));
		destroy = hps_cm_connect_failed(hs, event, status,
						-hps_cm_errno(event, status),
						event != RDMA_CM_EVENT_ADDR_ERROR &&
						event != RDMA_CM_EVENT_ROUTE_ERROR);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * The peer's last data and FIN may still wait in the CQ:
		 * tear down first (ib_drain_qp() runs every completion
		 * before it), then tell a graceful close from a reset.
		 */
		aborted = test_bit(HPS_F_ABORTED, &hs->flags);
		if (!test_bit(HPS_F_WAS_CONN, &hs->flags))
			hps_cm_outcome(hs, id, event, status, ECONNRESET);
		destroy = hps_fail(hs, 0);
		if (!aborted && !test_bit(HPS_F_FIN_RCVD, &hs->flags) &&
		    test_bit(HPS_F_WAS_CONN, &hs->flags))
			trace_hps_conn_abort(hs, ECONNRESET, HPS_AB_PEER_GONE,
					     _THIS_IP_);
		if (!aborted && !test_bit(HPS_F_FIN_RCVD, &hs->flags) &&
		    !sock_flag(sk, SOCK_DEAD)) {
			WRITE_ONCE(sk->sk_err, ECONNRESET);
			sk_error_report(sk);
		}
		break;
	default:
		pr_debug("unexpected rdma_cm event %s (%d)\n",
			 rdma_event_msg(event), event);
		break;
	}
out:
	release_sock(sk);
	hps_cm_destroy_id(sk, destroy);
}
