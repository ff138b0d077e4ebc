// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * sock_diag: the AF_HPS sockets of a network namespace, and its counters,
 * over NETLINK_SOCK_DIAG (the requests and answers are in
 * <linux/af_hps.h>; tools/hps-ss.c reads them). Built into af_hps.ko:
 * sock_diag_register() takes any family below AF_MAX, and AF_HPS borrows
 * AF_SNA (22), which no diag module of Linux 6.1 registers.
 *
 * A dump walks the namespace's socket list (hps_net.socks). The list is
 * newest first (new sockets go at its head), so a dump that has to go on
 * in a new message buffer goes on after the socket it stopped at, which
 * it keeps a reference on: sockets made meanwhile are not listed, none is
 * listed twice, and every socket that lives through the dump is listed.
 * Sockets are taken out of the list a few at a time, each with a
 * reference, under socks_lock; each
 * is then described under its socket lock (its cm_id and QP are
 * protected by it) and hps_sock.lock (its counters).
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/sock_diag.h>
#include <net/netlink.h>
#include <net/tcp.h>
#include <net/tcp_states.h>

#include "hps.h"

#define HPS_DIAG_BATCH	16	/* sockets taken from the list at once */

/* The request of a dump; its length was checked at its start. */
static const struct hps_diag_req *hps_diag_req(struct netlink_callback *cb)
{
	return nlmsg_data(cb->nlh);
}

static void hps_diag_addr(const struct sockaddr_storage *ss, __be32 *addr,
			  __be16 *port)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		addr[0] = sin->sin_addr.s_addr;
		*port = sin->sin_port;
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)ss;

		memcpy(addr, &sin6->sin6_addr, sizeof(sin6->sin6_addr));
		*port = sin6->sin6_port;
	}
}

/* What is read under hs->lock. */
struct hps_diag_snap {
	struct hps_diag_flow		flow;
	struct hps_diag_counters	cnt;
	struct hps_diag_zcopy		zc;
	struct hps_diag_keepalive	ka;
};

static void hps_diag_snap(struct hps_sock *hs, struct hps_diag_snap *s)
{
	bool conn = test_bit(HPS_F_WAS_CONN, &hs->flags);

	memset(s, 0, sizeof(*s));
	s->ka.hdk_on = READ_ONCE(hs->ka_on);
	s->ka.hdk_idle_ms = hps_ka_idle_ms(hs);
	s->ka.hdk_intvl_ms = hps_ka_intvl_ms(hs);
	s->ka.hdk_cnt = hps_ka_cnt(hs);
	s->ka.hdk_user_timeout_ms = READ_ONCE(hs->user_timeout);
	s->zc.hdz_thresh = READ_ONCE(hs->zc_thresh);

	spin_lock_bh(&hs->lock);
	if (conn) {
		s->flow.hdf_version = HPS_PROTO_VERSION;
		s->flow.hdf_credits = hs->tx_credits;
		/* posted, announced and not holding unread data (HPS_INFO) */
		s->flow.hdf_peer_credits = hps_peer_credits(hs);
		s->flow.hdf_rx_bufs = hs->nrx;
		s->flow.hdf_tx_bufs = hs->ntx;
		s->flow.hdf_peer_window = hs->peer_credits_max;
		s->flow.hdf_buf_size = hs->buf_size;
		s->flow.hdf_rx_win = hs->rx_win;
		s->flow.hdf_rx_buf = hps_cls_bytes(hs->buf_size, hs->rx_want);
	}
	s->flow.hdf_mem_kib = READ_ONCE(hs->mem_pages) << (PAGE_SHIFT - 10);
	s->flow.hdf_rx_queued = READ_ONCE(hs->rx_queued);
	s->flow.hdf_tx_queued = READ_ONCE(hs->tx_queued);
	s->flow.hdf_stalls = hs->tx_stalls;
	s->flow.hdf_stalled = hs->tx_stalled;
	s->cnt.hdc_tx_bytes = hs->tx_bytes;
	s->cnt.hdc_rx_bytes = hs->rx_bytes;
	s->cnt.hdc_tx_msgs = hs->tx_msgs;
	s->cnt.hdc_rx_msgs = hs->rx_msgs;
	s->ka.hdk_probes = hs->ka_probes;
	if (hs->zc_cap)
		s->zc.hdz_flags |= HPS_DIAG_ZC_CAPABLE;
	if (test_bit(HPS_F_ZC_TX, &hs->flags)) {
		s->zc.hdz_flags |= HPS_DIAG_ZC_TX;
		s->zc.hdz_tx_len = hs->zc_tx_len;
	}
	if (hs->zc_rx) {
		s->zc.hdz_flags |= HPS_DIAG_ZC_RX;
		s->zc.hdz_rx_len = hs->zc_rx->len - hs->zc_rx->off;
	}
	if (test_bit(HPS_F_ZC_READING, &hs->flags))
		s->zc.hdz_flags |= HPS_DIAG_ZC_READING;
	spin_unlock_bh(&hs->lock);
}

/*
 * A socket that fell back: state, addresses and queues of its TCP
 * connection, as inet_diag reports them. Context: process, our socket
 * lock held (then the TCP socket's: the lock order).
 */
static void hps_diag_fb(struct socket *fb, struct hps_diag_msg *r)
{
	const struct tcp_sock *tp = tcp_sk(fb->sk);
	struct sockaddr_storage ss;
	int len;

	r->hdiag_state = READ_ONCE(fb->sk->sk_state);
	r->hdiag_shutdown = READ_ONCE(fb->sk->sk_shutdown);
	len = kernel_getsockname(fb, (struct sockaddr *)&ss);
	if (len > 0) {
		r->hdiag_addr_family = ss.ss_family;
		hps_diag_addr(&ss, r->hdiag_src, &r->hdiag_sport);
	}
	len = kernel_getpeername(fb, (struct sockaddr *)&ss);
	if (len > 0)
		hps_diag_addr(&ss, r->hdiag_dst, &r->hdiag_dport);
	r->hdiag_rqueue = max_t(int, READ_ONCE(tp->rcv_nxt) -
				     READ_ONCE(tp->copied_seq), 0);
	r->hdiag_wqueue = READ_ONCE(tp->write_seq) - READ_ONCE(tp->snd_una);
}

/*
 * One socket's message. Context: process, the socket's lock held.
 * Return: 0, or -EMSGSIZE when @skb is full.
 */
static int hps_diag_fill(struct sk_buff *skb, struct netlink_callback *cb,
			 struct hps_sock *hs)
{
	const struct hps_diag_req *req = hps_diag_req(cb);
	struct user_namespace *user_ns = sk_user_ns(NETLINK_CB(cb->skb).sk);
	struct sock *sk = &hs->sk;
	u32 show = req->hdiag_show;
	struct hps_diag_snap snap;
	struct hps_diag_msg *r;
	struct nlmsghdr *nlh;

	sock_owned_by_me(sk);
	nlh = nlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			SOCK_DIAG_BY_FAMILY, sizeof(*r), NLM_F_MULTI);
	if (!nlh)
		return -EMSGSIZE;
	r = nlmsg_data(nlh);
	memset(r, 0, sizeof(*r));
	r->hdiag_family = AF_HPS;
	r->hdiag_state = sk->sk_state;
	r->hdiag_shutdown = sk->sk_shutdown;
	r->hdiag_addr_family = hs->local.ss_family ?: hs->peer.ss_family;
	hps_diag_addr(&hs->local, r->hdiag_src, &r->hdiag_sport);
	hps_diag_addr(&hs->peer, r->hdiag_dst, &r->hdiag_dport);
	if (hps_fb(hs)) {
		hps_diag_fb(hps_fb(hs), r);
	} else if (sk->sk_state == TCP_LISTEN) {
		struct socket *lsn = hps_fb_lsn(hs);

		/* with the TCP clients waiting (hps_fb_listen()) */
		r->hdiag_rqueue = READ_ONCE(sk->sk_ack_backlog) +
				  (lsn ? READ_ONCE(lsn->sk->sk_ack_backlog) : 0);
		r->hdiag_wqueue = READ_ONCE(sk->sk_max_ack_backlog);
	} else {
		r->hdiag_rqueue = READ_ONCE(hs->rx_queued);
		r->hdiag_wqueue = READ_ONCE(hs->tx_queued);
	}
	r->hdiag_uid = from_kuid_munged(user_ns, sock_i_uid(sk));
	r->hdiag_inode = sock_i_ino(sk);
	sock_diag_save_cookie(sk, r->hdiag_cookie);

	if (show & HPS_SHOW_RDMA) {
		struct hps_diag_rdma rd = {};
		struct rdma_cm_id *id = hs->cm_id;

		if (id && id->device) {
			strscpy(rd.hdr_dev, dev_name(&id->device->dev),
				sizeof(rd.hdr_dev));
			rd.hdr_port = id->port_num;
		}
		if (hs->qp)
			rd.hdr_qpn = hs->qp->qp_num;
		if (hps_fb(hs)) {
			rd.hdr_transport = HPS_TRANSPORT_TCP;
			rd.hdr_fallback = hs->fb_reason;
		} else if (hps_fb_lsn(hs)) {
			rd.hdr_transport = HPS_TRANSPORT_RDMA_TCP;
		}
		if (nla_put(skb, HPS_DIAG_RDMA, sizeof(rd), &rd))
			goto full;
	}
	hps_diag_snap(hs, &snap);
	if (show & HPS_SHOW_FLOW &&
	    nla_put(skb, HPS_DIAG_FLOW, sizeof(snap.flow), &snap.flow))
		goto full;
	if (show & HPS_SHOW_COUNTERS &&
	    nla_put_64bit(skb, HPS_DIAG_COUNTERS, sizeof(snap.cnt), &snap.cnt,
			  HPS_DIAG_PAD))
		goto full;
	if (show & HPS_SHOW_ZCOPY &&
	    nla_put(skb, HPS_DIAG_ZCOPY, sizeof(snap.zc), &snap.zc))
		goto full;
	if (show & HPS_SHOW_KEEPALIVE &&
	    nla_put(skb, HPS_DIAG_KEEPALIVE, sizeof(snap.ka), &snap.ka))
		goto full;
	if (show & HPS_SHOW_BUSYPOLL) {
		struct hps_diag_busypoll bp = {
			.hdb_state = HPS_BUSYPOLL_ABSENT,
		};

#ifdef CONFIG_NET_RX_BUSY_POLL
		bp.hdb_usecs = READ_ONCE(hs->sk.sk_ll_usec);
		bp.hdb_state = bp.hdb_usecs ? HPS_BUSYPOLL_ON :
					      HPS_BUSYPOLL_OFF;
#endif

		if (nla_put(skb, HPS_DIAG_BUSYPOLL, sizeof(bp), &bp))
			goto full;
	}
	nlmsg_end(skb, nlh);
	return 0;

full:
	nlmsg_cancel(skb, nlh);
	return -EMSGSIZE;
}

/*
 * Whether the request wants @hs. Without its lock (@locked false) the
 * state of a socket that fell back is left for the second look, with it:
 * its TCP socket is only safe to touch under our lock (hps_release()).
 */
static bool hps_diag_wanted(const struct hps_diag_req *req,
			    struct hps_sock *hs, bool locked)
{
	struct socket *fb = hps_fb(hs);
	u32 states = req->hdiag_states;
	int state;

	if (fb && !locked)
		state = -1;
	else
		state = READ_ONCE((fb ? fb->sk : &hs->sk)->sk_state);
	if (states && state >= 0 && !(states & BIT(state)))
		return false;
	return !req->hdiag_ino || sock_i_ino(&hs->sk) == req->hdiag_ino;
}

/*
 * netlink dump callback: the sockets after the one cb->args[0] holds (a
 * referenced hps_sock, NULL at the start). A referenced socket stays on
 * the list (hps_sock_destruct() takes it off), so the walk goes on from it
 * in every batch and in every later buffer, and a dump of N sockets visits
 * each once. Context: process (the requester's recvmsg(), or the request
 * itself); sleeps on socket locks.
 */
static int hps_diag_dump_socks(struct sk_buff *skb,
			       struct netlink_callback *cb)
{
	struct hps_net *hn = hps_net(sock_net(skb->sk));
	const struct hps_diag_req *req = hps_diag_req(cb);
	struct hps_sock *batch[HPS_DIAG_BATCH], *hs;
	struct hps_sock *cur = (struct hps_sock *)cb->args[0];
	int i, n, err = 0;

	might_sleep();
	do {
		n = 0;
		spin_lock_bh(&hn->socks_lock);
		hs = cur ? hlist_entry_safe(cur->net_node.next,
					    struct hps_sock, net_node) :
			   hlist_entry_safe(hn->socks.first,
					    struct hps_sock, net_node);
		hlist_for_each_entry_from(hs, net_node) {
			/* a socket being freed is still on the list */
			if (!refcount_inc_not_zero(&hs->sk.sk_refcnt))
				continue;
			batch[n++] = hs;
			if (n == HPS_DIAG_BATCH)
				break;
		}
		spin_unlock_bh(&hn->socks_lock);

		for (i = 0; i < n; i++) {
			hs = batch[i];
			if (!err && hps_diag_wanted(req, hs, false)) {
				lock_sock(&hs->sk);
				if (hps_diag_wanted(req, hs, true))
					err = hps_diag_fill(skb, cb, hs);
				release_sock(&hs->sk);
			}
			if (err) {
				sock_put(&hs->sk);
				continue;
			}
			/* the new cursor keeps its reference */
			if (cur)
				sock_put(&cur->sk);
			cur = hs;
		}
		cb->args[0] = (long)cur;
	} while (!err && n == HPS_DIAG_BATCH);

	/* Full: the rest goes in the next buffer (one socket always fits). */
	return err && !skb->len ? err : skb->len;
}

/* netlink dump .done of HPS_DIAG_SOCKS: the cursor's reference. */
static int hps_diag_dump_socks_done(struct netlink_callback *cb)
{
	struct hps_sock *cur = (struct hps_sock *)cb->args[0];

	if (cur)
		sock_put(&cur->sk);
	cb->args[0] = 0;
	return 0;
}

/* netlink dump callback of HPS_DIAG_STATS: one message. */
static int hps_diag_dump_stats(struct sk_buff *skb,
			       struct netlink_callback *cb)
{
	struct hps_net *hn = hps_net(sock_net(skb->sk));
	struct hps_diag_stats *r;
	struct nlmsghdr *nlh;
	struct nlattr *nest;
	int i;

	if (cb->args[0])
		return 0;	/* sent */
	nlh = nlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			SOCK_DIAG_BY_FAMILY, sizeof(*r), NLM_F_MULTI);
	if (!nlh)
		return -EMSGSIZE;
	r = nlmsg_data(nlh);
	memset(r, 0, sizeof(*r));
	r->hdiag_family = AF_HPS;
	r->hdiag_count = HPS_STAT_MAX;
	for (i = 0; i < HPS_STAT_MAX; i++) {
		nest = nla_nest_start(skb, HPS_DIAG_STAT);
		if (!nest ||
		    nla_put_string(skb, HPS_DIAG_STAT_NAME, hps_stat_name(i)) ||
		    nla_put_s64(skb, HPS_DIAG_STAT_VALUE, hps_stat_read(hn, i),
				HPS_DIAG_STAT_PAD)) {
			nlmsg_cancel(skb, nlh);
			return -EMSGSIZE;
		}
		nla_nest_end(skb, nest);
	}
	nlmsg_end(skb, nlh);
	cb->args[0] = 1;
	return skb->len;
}

/*
 * sock_diag_handler.dump: a SOCK_DIAG_BY_FAMILY request for AF_HPS.
 * Context: process, under sock_diag's mutex.
 */
static int hps_diag_handler_dump(struct sk_buff *skb, struct nlmsghdr *h)
{
	struct net *net = sock_net(skb->sk);
	const struct hps_diag_req *req;
	struct netlink_dump_control c = {};

	if (nlmsg_len(h) < (int)sizeof(*req))
		return -EINVAL;
	req = nlmsg_data(h);
	if (req->hdiag_pad)
		return -EINVAL;
	if (!(h->nlmsg_flags & NLM_F_DUMP))
		return -EOPNOTSUPP;
	switch (req->sdiag_protocol) {
	case HPS_DIAG_SOCKS:
		c.dump = hps_diag_dump_socks;
		c.done = hps_diag_dump_socks_done;
		break;
	case HPS_DIAG_STATS:
		c.dump = hps_diag_dump_stats;
		break;
	default:
		return -EINVAL;
	}
	return netlink_dump_start(net->diag_nlsk, skb, h, &c);
}

static const struct sock_diag_handler hps_diag_handler = {
	.owner	= THIS_MODULE,
	.family	= AF_HPS,
	.dump	= hps_diag_handler_dump,
};

/* The handler is ours (module init and exit only). */
static bool hps_diag_registered;

/**
 * hps_diag_register() - answer sock_diag requests for AF_HPS
 *
 * Context: module init.
 * Return: 0 or -errno (-EBUSY: another module has a handler for 22).
 */
int hps_diag_register(void)
{
	int err = sock_diag_register(&hps_diag_handler);

	hps_diag_registered = !err;
	return err;
}

/**
 * hps_diag_unregister() - undo hps_diag_register()
 *
 * sock_diag holds a module reference while it runs a handler, so none
 * runs once the module goes. Only a handler that was registered is taken
 * away: sock_diag_unregister() clears the family's slot whoever holds it.
 */
void hps_diag_unregister(void)
{
	if (hps_diag_registered)
		sock_diag_unregister(&hps_diag_handler);
	hps_diag_registered = false;
}
