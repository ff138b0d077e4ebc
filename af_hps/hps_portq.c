// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * The iWARP port query (Documentation/protocol.rst, "iWARP port query").
 * An iWARP driver listens on a listener's port in the TCP stack itself
 * (siw binds a TCP socket there), so a listener that also takes plain TCP
 * clients (hps_fb_listen()) cannot have its RDMA side on the same port.
 * Over iWARP such a listener moves its RDMA side to a port of its own
 * (hps_fb_listen_iwarp()), keeps the application's port for TCP, and
 * answers on that port over UDP where its RDMA side is. Every listener
 * over iWARP answers so, moved or not (hps_portq_listen()).
 *
 * A connect() whose route goes over an iWARP device asks the peer first,
 * with one datagram to the port it connects to, sent as the address
 * starts resolving (hps_portq_start(), taken up at ADDR_RESOLVED by
 * hps_portq_ask()), and tries again twice. An answer gives the port to
 * connect to over RDMA. An ICMP port unreachable says that no AF_HPS
 * listener is there: a socket that may fall back goes on over TCP at once
 * (HPS_FB_REFUSED), without an iWARP connection attempt reaching a plain
 * TCP server, and so does every such socket to that address and port for
 * %HPS_PORTQ_REFUSED_TTL, without asking (ICMP errors to another host come
 * at a limited rate, net.ipv4.icmp_ratelimit). Anything else (no answer
 * after the last try, hps_portq_wait_ms[], a datagram that is not an
 * answer) leaves the attempt to go to the port it was given, as before
 * there was a query. Only a socket whose listener may be over iWARP takes
 * part (hps_portq_wanted()).
 *
 * The namespace remembers an answer for %HPS_PORTQ_ANSWER_TTL: a socket
 * that did not bind connects to that RDMA port without asking, and the
 * hello carries the port it asked for, which the listener there checks
 * (hps_hello_check()). If the attempt fails, the listener may have gone
 * or moved: the answer is forgotten, and the socket starts again, asking
 * (hps_portq_forget(), hps_cm_restart()).
 *
 * Both sides run in the socket's connection work (HPS_W_PORTQ), which the
 * UDP socket's callbacks and the query's timer kick; the UDP socket is
 * the socket's, under its socket lock. Lock order: our socket lock, then
 * the UDP socket's (its sk_callback_lock, its socket lock).
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/jhash.h>
#include <linux/net.h>
#include <linux/random.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/route.h>
#include <net/sock.h>
#include <rdma/rdma_cm.h>

#include "hps.h"
#include "hps_trace.h"

/* the query's tries: at 0, then after each of these (ms) */
static const unsigned int hps_portq_wait_ms[] = { 50, 100, 200 };

/* datagrams one run of the connection work reads before it lets others run */
#define HPS_PORTQ_BATCH	32

/* room for the IP_PKTINFO or IPV6_PKTINFO of a query */
#define HPS_PORTQ_CMSG	CMSG_SPACE(sizeof(struct in6_pktinfo))

/**
 * hps_portq_wanted() - may a listener on this id be reached over iWARP?
 * @id: a listener's cm_id, bound or not
 *
 * While an iWARP device is in use: an id bound to one, or to no device
 * (the wildcard address: every device).
 *
 * Context: any.
 * Return: true if the listener takes part in the port query.
 */
bool hps_portq_wanted(const struct rdma_cm_id *id)
{
	if (!hps_ib_have_iwarp())
		return false;
	return !id->device || rdma_protocol_iwarp(id->device, id->port_num);
}

/*
 * sk_data_ready and sk_error_report of the UDP socket: a datagram or an
 * error (ICMP) for the connection work. Context: softirq or process.
 */
static void hps_portq_ready(struct sock *usk)
{
	struct hps_sock *hs;

	read_lock_bh(&usk->sk_callback_lock);
	hs = usk->sk_user_data;
	if (hs)
		hps_connd_kick(hs, HPS_W_PORTQ);
	read_unlock_bh(&usk->sk_callback_lock);
}

/*
 * Make the socket's UDP socket, hooked to its connection work, with our
 * bound device and mark. @kern: a kernel socket (made by the connection
 * work, or for one of the kernel API's); else the caller's, checked as
 * one it made itself (listen()).
 * Context: process, socket lock held.
 */
static int hps_portq_make(struct hps_sock *hs, sa_family_t family, int kern,
			  struct socket **sockp)
{
	struct sock *sk = &hs->sk;
	struct socket *sock;
	struct sock *usk;
	int err;

	sock_owned_by_me(sk);
	might_sleep();
	err = __sock_create(sock_net(sk), family, SOCK_DGRAM, IPPROTO_UDP,
			    &sock, kern);
	if (err)
		return err;
	usk = sock->sk;
	/* (not over what a cgroup's BPF program gave it: ip vrf exec) */
	if (READ_ONCE(sk->sk_bound_dev_if))
		usk->sk_bound_dev_if = READ_ONCE(sk->sk_bound_dev_if);
	if (READ_ONCE(sk->sk_mark))
		usk->sk_mark = READ_ONCE(sk->sk_mark);
	write_lock_bh(&usk->sk_callback_lock);
	usk->sk_user_data = hs;
	hs->portq_data_ready = usk->sk_data_ready;
	hs->portq_error_report = usk->sk_error_report;
	usk->sk_data_ready = hps_portq_ready;
	usk->sk_error_report = hps_portq_ready;
	write_unlock_bh(&usk->sk_callback_lock);
	*sockp = sock;
	return 0;
}

/**
 * hps_portq_release() - close a socket's UDP socket
 * @hs: the socket
 * @sock: what hps_portq_take() returned, or NULL
 *
 * Context: process, may sleep; our socket lock held or not.
 */
void hps_portq_release(struct hps_sock *hs, struct socket *sock)
{
	struct sock *usk;

	if (!sock)
		return;
	might_sleep();
	usk = sock->sk;
	/* no callback reaches @hs after this, nor this module's code */
	write_lock_bh(&usk->sk_callback_lock);
	usk->sk_user_data = NULL;
	usk->sk_data_ready = hs->portq_data_ready;
	usk->sk_error_report = hs->portq_error_report;
	write_unlock_bh(&usk->sk_callback_lock);
	sock_release(sock);
}

/**
 * hps_portq_take() - take the socket's UDP socket away, and its timer
 * @hs: the socket
 *
 * Context: process, socket lock held.
 * Return: the UDP socket, for hps_portq_release(), or NULL.
 */
struct socket *hps_portq_take(struct hps_sock *hs)
{
	struct socket *sock = hs->portq;

	sock_owned_by_me(&hs->sk);
	hs->portq = NULL;
	sk_stop_timer(&hs->sk, &hs->portq_timer);
	return sock;
}

/**
 * hps_portq_listen() - answer the port query on a listener's port
 * @hs: a listener over iWARP, its RDMA side listening
 *
 * Binds UDP to the listener's address and port (hs->local). A port that
 * UDP has already (another program's) only means no answers: clients then
 * connect to the listener's port, as without the query. Each query's
 * destination address comes with it (IP_PKTINFO, IPV6_PKTINFO), for the
 * answer's source: a client takes answers from the address it asked only.
 *
 * Context: process, socket lock held.
 * Return: 0 or -errno.
 */
int hps_portq_listen(struct hps_sock *hs)
{
	struct socket *sock;
	int err;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (hs->portq)
		return 0;
	err = hps_portq_make(hs, hs->local.ss_family, hs->sk.sk_kern_sock,
			     &sock);
	if (err)
		return err;
	if (hs->local.ss_family == AF_INET6)
		ip6_sock_set_recvpktinfo(sock->sk);	/* IPv4 ones too */
	else
		ip_sock_set_pktinfo(sock->sk);
	err = kernel_bind(sock, (struct sockaddr *)&hs->local,
			  hps_addr_len(&hs->local));
	if (err) {
		hps_portq_release(hs, sock);
		pr_info_ratelimited("listener on port %u answers no iWARP port queries: UDP bind failed (%d)\n",
				    hps_addr_port(&hs->local), err);
		return err;
	}
	hs->portq = sock;
	return 0;
}

/*
 * The destination of a query, from its IP_PKTINFO or IPV6_PKTINFO @cm
 * (@len bytes): true for a unicast address of this host, not a broadcast
 * or multicast one (one query, at most one answer on the network). Clears
 * the interface in it, for the answer: only the address is its source,
 * the route chooses the interface.
 */
static bool hps_portq_unicast(struct net *net, struct cmsghdr *cm, int len)
{
	if (len < (int)sizeof(*cm) || cm->cmsg_len > len)
		return false;
	if (cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_PKTINFO &&
	    cm->cmsg_len >= CMSG_LEN(sizeof(struct in_pktinfo))) {
		struct in_pktinfo *pi = CMSG_DATA(cm);

		pi->ipi_ifindex = 0;
		return inet_addr_type(net, pi->ipi_addr.s_addr) == RTN_LOCAL;
	}
	if (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_PKTINFO &&
	    cm->cmsg_len >= CMSG_LEN(sizeof(struct in6_pktinfo))) {
		struct in6_pktinfo *pi = CMSG_DATA(cm);

		pi->ipi6_ifindex = 0;
		if (ipv6_addr_v4mapped(&pi->ipi6_addr))
			return inet_addr_type(net, pi->ipi6_addr.s6_addr32[3]) ==
			       RTN_LOCAL;
		return !(ipv6_addr_type(&pi->ipi6_addr) &
			 (IPV6_ADDR_MULTICAST | IPV6_ADDR_ANY));
	}
	return false;
}

/*
 * A listener's work: answer every query waiting, with the port its RDMA
 * side listens on, from the address the query went to. What is not a
 * query of this port is dropped unanswered. An answer is no larger than
 * the query. Context: connection work, socket lock held.
 */
static void hps_portq_answer(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;
	struct sockaddr_storage from;
	union {
		struct cmsghdr	hdr;
		u8		buf[HPS_PORTQ_CMSG];
	} cm;
	struct hps_portq q;
	struct msghdr msg;
	struct kvec iov;
	u16 port = hps_addr_port(&hs->local), rdma_port = 0;
	int i, n;

	sock_owned_by_me(sk);
	if (sk->sk_state == TCP_LISTEN && !(sk->sk_shutdown & RCV_SHUTDOWN) &&
	    hs->cm_id)
		rdma_port = hps_addr_port(&hs->cm_id->route.addr.src_addr);
	for (i = 0; i < HPS_PORTQ_BATCH; i++) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_name = &from;
		msg.msg_namelen = sizeof(from);
		msg.msg_control = &cm;
		msg.msg_controllen = sizeof(cm);
		iov.iov_base = &q;
		iov.iov_len = sizeof(q);
		/* a longer datagram is truncated: MSG_TRUNC says so */
		n = kernel_recvmsg(hs->portq, &msg, &iov, 1, sizeof(q),
				   MSG_DONTWAIT);
		if (n == -EAGAIN)
			return;
		if (n < 0)
			continue;
		if (n != sizeof(q) || msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC) ||
		    q.magic != htonl(HPS_PORTQ_MAGIC) ||
		    q.version != HPS_PROTO_VERSION || q.type != HPS_PORTQ_ASK ||
		    ntohs(q.port) != port || q.rdma_port || q.reserved ||
		    !rdma_port)
			continue;
		/* the query's IP_PKTINFO or IPV6_PKTINFO back: its source */
		n = sizeof(cm) - msg.msg_controllen;
		if (!hps_portq_unicast(sock_net(sk), &cm.hdr, n))
			continue;
		/* test builds: a slow answer, the client waiting for it */
		hps_inject_sleep_once(HPS_INJ_PORTQ_ANSWER);
		q.type = HPS_PORTQ_ANSWER;
		q.rdma_port = htons(rdma_port);
		memset(&msg, 0, sizeof(msg));
		msg.msg_name = &from;
		msg.msg_namelen = hps_addr_len(&from);
		msg.msg_control = &cm;
		msg.msg_controllen = n;
		msg.msg_flags = MSG_DONTWAIT;
		iov.iov_base = &q;
		iov.iov_len = sizeof(q);
		if (kernel_sendmsg(hs->portq, &msg, &iov, 1, sizeof(q)) ==
		    sizeof(q))
			hps_stat_inc(sock_net(sk), HPS_STAT_PORTQ_ANSWERS);
	}
	hps_connd_kick(hs, HPS_W_PORTQ);	/* more may wait: later */
}

/* Send the query (again). Context: process, socket lock held. */
static void hps_portq_send(struct hps_sock *hs)
{
	struct hps_portq q = {
		.magic = htonl(HPS_PORTQ_MAGIC),
		.version = HPS_PROTO_VERSION,
		.type = HPS_PORTQ_ASK,
		.port = htons(hps_addr_port(&hs->peer)),
		.nonce = htonl(hs->portq_nonce),
	};
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	struct kvec iov = { .iov_base = &q, .iov_len = sizeof(q) };

	sock_owned_by_me(&hs->sk);
	/* a datagram lost here is one lost on the way: the timer decides */
	kernel_sendmsg(hs->portq, &msg, &iov, 1, sizeof(q));
	sk_reset_timer(&hs->sk, &hs->portq_timer, jiffies +
		       msecs_to_jiffies(hps_portq_wait_ms[hs->portq_tries]));
	hs->portq_tries++;
}

/*
 * Open an active socket's query socket and send the first query. It is
 * bound to @from's address when that is a specific address of the peer's
 * family, so that the query leaves from the address the connection will
 * have, and connected to the peer's port: only that port answers, and its
 * ICMP errors count. Context: process or connection work, socket lock
 * held. Return: 0, or -errno with nothing left open.
 */
static int hps_portq_open(struct hps_sock *hs,
			  const struct sockaddr_storage *from)
{
	struct sockaddr_storage src;
	struct socket *sock;
	int ret;

	sock_owned_by_me(&hs->sk);
	ret = hps_portq_make(hs, hs->peer.ss_family, 1, &sock);
	if (ret)
		return ret;
	memcpy(&src, from, sizeof(src));
	hps_addr_set_port(&src, 0);
	if (src.ss_family == hs->peer.ss_family && !hps_addr_any(&src) &&
	    kernel_bind(sock, (struct sockaddr *)&src, hps_addr_len(&src)))
		pr_debug("port query from the default address\n");
	ret = kernel_connect(sock, (struct sockaddr *)&hs->peer,
			     hps_addr_len(&hs->peer), 0);
	if (ret) {
		hps_portq_release(hs, sock);
		return ret;
	}
	hs->portq = sock;
	hs->portq_nonce = get_random_u32();
	hs->portq_tries = 0;
	hps_portq_send(hs);
	return 0;
}

/* The peer's address, IPv4 mapped, and port, as remembered. */
static void hps_portq_key(const struct sockaddr_storage *ss,
			  struct in6_addr *addr, __be16 *port)
{
	if (ss->ss_family == AF_INET6) {
		*addr = ((const struct sockaddr_in6 *)ss)->sin6_addr;
	} else {
		ipv6_addr_set_v4mapped(((const struct sockaddr_in *)ss)->
				       sin_addr.s_addr, addr);
	}
	*port = htons(hps_addr_port(ss));
}

/*
 * The slot of the peer's address and port, by hash; @claim: made theirs
 * (what another pair left there is lost). Return: the slot if it is
 * theirs, or NULL.
 */
static struct hps_portq_seen *hps_portq_slot(struct hps_sock *hs, bool claim)
{
	struct hps_net *hn = hps_net(sock_net(&hs->sk));
	struct hps_portq_seen *s;
	struct in6_addr addr;
	__be16 port;

	lockdep_assert_held(&hn->portq_lock);
	hps_portq_key(&hs->peer, &addr, &port);
	s = &hn->portq_seen[jhash(&addr, sizeof(addr), (__force u32)port) %
			    HPS_PORTQ_SEEN];
	if (s->port == port && ipv6_addr_equal(&s->addr, &addr))
		return s;
	if (!claim)
		return NULL;
	s->addr = addr;
	s->port = port;
	return s;
}

/*
 * What the namespace remembers of the peer's port: the RDMA port of an
 * answer, for a socket that did not bind (hps_cm_restart_work() binds a
 * new id anew) and has not started again already (hs->portq_cached is
 * set); -ECONNREFUSED for a refusal, for a socket that may fall back;
 * else 0. Context: process, socket lock held.
 */
static int hps_portq_recall(struct hps_sock *hs)
{
	struct hps_net *hn = hps_net(sock_net(&hs->sk));
	struct hps_portq_seen *s;
	int ret = 0;

	sock_owned_by_me(&hs->sk);
	spin_lock(&hn->portq_lock);
	s = hps_portq_slot(hs, false);
	if (s && s->expires && time_before(jiffies, s->expires))
		ret = s->rdma_port ?: -ECONNREFUSED;
	spin_unlock(&hn->portq_lock);
	if (ret > 0 && !hs->local.ss_family && !hs->portq_restarted) {
		hs->portq_cached = ret;
		return ret;
	}
	return ret == -ECONNREFUSED && hs->fb_spare ? ret : 0;
}

/*
 * Remember the outcome of the query of the peer's port: the answer's
 * @rdma_port, or 0 for a refusal.
 */
static void hps_portq_remember(struct hps_sock *hs, u16 rdma_port)
{
	struct hps_net *hn = hps_net(sock_net(&hs->sk));
	struct hps_portq_seen *s;

	spin_lock(&hn->portq_lock);
	s = hps_portq_slot(hs, true);
	s->rdma_port = rdma_port;
	s->expires = (jiffies + (rdma_port ? HPS_PORTQ_ANSWER_TTL :
				 HPS_PORTQ_REFUSED_TTL)) ?: 1;
	spin_unlock(&hn->portq_lock);
}

/**
 * hps_portq_forget() - an attempt failed: was its RDMA port remembered?
 * @hs: an active socket, its attempt failed
 *
 * An attempt to a remembered port forgets it (unless the namespace
 * remembers another answer already), as the listener may have gone or
 * moved, and counts it (portq_stale); the caller starts again, asking
 * (hps_cm_restart()). Once per connect(): the new attempt asks.
 *
 * Context: process, socket lock held.
 * Return: true if the attempt went to a remembered port.
 */
bool hps_portq_forget(struct hps_sock *hs)
{
	struct hps_net *hn = hps_net(sock_net(&hs->sk));
	struct hps_portq_seen *s;

	sock_owned_by_me(&hs->sk);
	if (!hs->portq_cached)
		return false;
	spin_lock(&hn->portq_lock);
	s = hps_portq_slot(hs, false);
	if (s && s->rdma_port == hs->portq_cached)
		s->expires = 0;
	hs->portq_cached = 0;
	spin_unlock(&hn->portq_lock);
	hps_stat_inc(sock_net(&hs->sk), HPS_STAT_PORTQ_STALE);
	trace_hps_conn_portq(hs, -ESTALE);
	return true;
}

/*
 * The query's outcome @ret (hps_portq_result()), then the route. Context:
 * connection work, socket lock held. Return: the cm_id to destroy after
 * releasing the socket lock, or NULL.
 */
static struct rdma_cm_id *hps_portq_done(struct hps_sock *hs,
					 struct rdma_cm_id *id, int ret)
{
	struct sock *sk = &hs->sk;

	sock_owned_by_me(sk);
	trace_hps_conn_portq(hs, ret);
	/* (not one remembered: only what came from the network) */
	if (ret == -ECONNREFUSED && hs->portq_refused)
		hps_portq_remember(hs, 0);
	hs->portq_refused = false;
	if (ret > 0) {
		if (hs->portq_cached)
			hps_stat_inc(sock_net(sk), HPS_STAT_PORTQ_CACHED);
		else
			hps_portq_remember(hs, ret);
		hps_addr_set_port(&id->route.addr.dst_addr, ret);
	} else if (ret == -ECONNREFUSED) {
		/* no AF_HPS listener there: TCP now, if the socket may */
		if (hps_fb_try(hs, HPS_FB_REFUSED)) {
			trace_hps_conn_connect(hs, HPS_TP_NO_EVENT, ret,
					       ECONNREFUSED);
			return hps_fail(hs, 0);
		}
	} else {
		hps_stat_inc(sock_net(sk), HPS_STAT_PORTQ_TIMEOUTS);
	}
	return hps_cm_resolve_route(hs, id);
}

/**
 * hps_portq_ask() - ask the peer's listener where its RDMA side is
 * @hs: an active socket, its address resolved (ADDR_RESOLVED)
 * @id: its cm_id
 *
 * Only when the route goes over an iWARP device; otherwise, or when the
 * query cannot be sent, the route is resolved now. What the namespace
 * remembers of the peer's port (hps_portq_recall()) is taken without
 * asking: a socket that may fall back and whose peer refused a query of
 * that port lately goes on over TCP, one whose peer answered lately goes
 * to that answer's port. Else the connection work goes on with
 * hps_portq_work() when the answer, an error or the timer comes.
 *
 * Context: connection work, socket lock held.
 * Return: the cm_id to destroy after releasing the socket lock, or NULL.
 */
struct rdma_cm_id *hps_portq_ask(struct hps_sock *hs, struct rdma_cm_id *id)
{
	int ret;

	sock_owned_by_me(&hs->sk);
	might_sleep();
	ret = hs->portq_result;
	hs->portq_result = 0;
	if (!id->device || !rdma_protocol_iwarp(id->device, id->port_num)) {
		/* one hps_portq_start() sent is of no use over RoCE */
		hps_portq_release(hs, hps_portq_take(hs));
		hs->portq_cached = 0;
		return hps_cm_resolve_route(hs, id);
	}
	if (hs->portq) {	/* under way since connect() */
		hs->portq_addr = true;
		return NULL;
	}
	if (!ret)		/* remembered (not already at connect()) */
		ret = hps_portq_recall(hs);
	if (ret)		/* it came already, or was remembered */
		return hps_portq_done(hs, id, ret);
	/* from the address the connection will have */
	if (hps_portq_open(hs, &id->route.addr.src_addr))
		return hps_cm_resolve_route(hs, id);	/* as without it */
	hs->portq_addr = true;
	return NULL;
}

/**
 * hps_portq_start() - ask while the address resolves
 * @hs: an active socket whose connect() has just started resolving
 *
 * While an iWARP device is in use, the query goes at once, from the
 * caller's context, so that its round trip overlaps address resolution;
 * hps_portq_ask() takes it up at ADDR_RESOLVED, or drops it when the
 * route goes over another kind of device. What the namespace remembers
 * of the peer's port (hps_portq_recall()) is taken instead, the same way.
 * When the query cannot be sent, ADDR_RESOLVED asks as if none had been.
 *
 * Context: process (connect()), socket lock held.
 */
void hps_portq_start(struct hps_sock *hs)
{
	sock_owned_by_me(&hs->sk);
	might_sleep();
	hs->portq_addr = false;
	hs->portq_result = 0;
	hs->portq_refused = false;
	hs->portq_cached = 0;
	if (!hps_ib_have_iwarp() || hs->portq)
		return;
	/* remembered: ADDR_RESOLVED takes it (hps_portq_ask()) */
	hs->portq_result = hps_portq_recall(hs);
	if (hs->portq_result)
		return;
	/* from the address the socket is bound to, if it is one */
	hps_portq_open(hs, &hs->local);
}

/**
 * hps_portq_timer() - portq_timer: try again, or give up
 * @t: hps_sock.portq_timer
 *
 * Context: timer (softirq).
 */
void hps_portq_timer(struct timer_list *t)
{
	struct hps_sock *hs = from_timer(hs, t, portq_timer);

	hps_connd_kick(hs, HPS_W_PORTQ);
	sock_put(&hs->sk);	/* from sk_reset_timer() */
}

/*
 * An active socket's query: the answer's RDMA port, 0 while none came yet,
 * or -errno: -ECONNREFUSED (no listener), -ETIMEDOUT (no answer, given
 * up). Context: connection work, socket lock held.
 */
static int hps_portq_result(struct hps_sock *hs)
{
	struct hps_portq a;
	struct msghdr msg;
	struct kvec iov;
	int i, n;

	sock_owned_by_me(&hs->sk);
	for (i = 0; i < HPS_PORTQ_BATCH; i++) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = &a;
		iov.iov_len = sizeof(a);
		n = kernel_recvmsg(hs->portq, &msg, &iov, 1, sizeof(a),
				   MSG_DONTWAIT);
		if (n == -EAGAIN)
			break;
		if (n == -ECONNREFUSED)
			return n;
		if (n != sizeof(a) || msg.msg_flags & MSG_TRUNC ||
		    a.magic != htonl(HPS_PORTQ_MAGIC) ||
		    a.version != HPS_PROTO_VERSION ||
		    a.type != HPS_PORTQ_ANSWER ||
		    a.port != htons(hps_addr_port(&hs->peer)) ||
		    a.nonce != htonl(hs->portq_nonce) || !a.rdma_port ||
		    a.reserved)
			continue;	/* not an answer to us: ignored */
		return ntohs(a.rdma_port);
	}
	/* a flood does not hold the timeout off */
	if (!timer_pending(&hs->portq_timer)) {
		if (hs->portq_tries >= ARRAY_SIZE(hps_portq_wait_ms))
			return -ETIMEDOUT;
		hps_portq_send(hs);
	}
	if (i == HPS_PORTQ_BATCH)	/* the rest in the next run */
		hps_connd_kick(hs, HPS_W_PORTQ);
	return 0;
}

/*
 * An active socket's work: the query's outcome, then the route. Context:
 * connection work, socket lock held. Return: the cm_id to destroy after
 * releasing the socket lock, or NULL.
 */
static struct rdma_cm_id *hps_portq_asked(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;
	struct rdma_cm_id *id = hs->cm_id;
	int ret = 0;

	sock_owned_by_me(sk);
	if (sk->sk_state == TCP_SYN_SENT && id &&
	    !test_bit(HPS_F_TEARDOWN, &hs->flags) &&
	    !test_bit(HPS_F_ABORTED, &hs->flags)) {
		ret = hps_portq_result(hs);
		if (!ret)
			return NULL;	/* no outcome yet */
	} else {
		id = NULL;	/* the attempt ended: the query with it */
	}
	hps_portq_release(hs, hps_portq_take(hs));
	if (!id)
		return NULL;
	hs->portq_refused = ret == -ECONNREFUSED;
	if (!hs->portq_addr) {
		/*
		 * Before ADDR_RESOLVED, which takes it up; not a timeout,
		 * which may be the neighbour's resolution: it asks again.
		 */
		if (ret != -ETIMEDOUT)
			hs->portq_result = ret;
		return NULL;
	}
	hs->portq_addr = false;
	return hps_portq_done(hs, id, ret);
}

/**
 * hps_portq_work() - the connection work's part of the port query
 * @hs: the socket
 *
 * A listener answers; an active socket takes the outcome of its query.
 * Context: connection work (HPS_W_PORTQ), socket lock held.
 * Return: the cm_id to destroy after releasing the socket lock, or NULL.
 */
struct rdma_cm_id *hps_portq_work(struct hps_sock *hs)
{
	sock_owned_by_me(&hs->sk);
	might_sleep();
	if (!hs->portq)
		return NULL;
	if (test_bit(HPS_F_ACTIVE, &hs->flags))
		return hps_portq_asked(hs);
	if (hs->sk.sk_state == TCP_LISTEN)
		hps_portq_answer(hs);
	else	/* closing (hps_release() takes it next) */
		hps_portq_release(hs, hps_portq_take(hs));
	return NULL;
}
