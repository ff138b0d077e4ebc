// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Socket family glue: the proto and proto_ops tables, socket creation,
 * poll, ioctl, socket options and module init/exit. Everything else lives
 * in the hps_*.c file of its concern.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/module.h>
#include <linux/net.h>
#include <linux/in.h>
#include <linux/poll.h>
#include <linux/ioctl.h>
#include <linux/termios.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <net/busy_poll.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "hps.h"

/*
 * proto.keepalive: SO_KEEPALIVE (sk_setsockopt(), sock_set_keepalive()),
 * which set SOCK_KEEPOPEN after this. Context: process, socket lock held.
 */
static void hps_keepalive(struct sock *sk, int valbool)
{
	struct hps_sock *hs = hps_sk(sk);

	sock_owned_by_me(sk);
	if (hps_fb(hs)) {	/* TCP's keepalive; lock order: ours, TCP's */
		sock_setsockopt(hps_fb(hs), SOL_SOCKET, SO_KEEPALIVE,
				KERNEL_SOCKPTR(&valbool), sizeof(valbool));
		return;
	}
	spin_lock_bh(&hs->lock);
	WRITE_ONCE(hs->ka_user, true);
	WRITE_ONCE(hs->ka_on, !!valbool);
	spin_unlock_bh(&hs->lock);
	hps_tx_ka_config(hs);
}

struct proto hps_proto = {
	.name		= "HPS",
	.owner		= THIS_MODULE,
	.obj_size	= sizeof(struct hps_sock),
	.keepalive	= hps_keepalive,
};

/* proto_ops.poll: lockless, like tcp_poll(). Context: process. */
static __poll_t hps_poll(struct file *file, struct socket *sock,
			 poll_table *wait)
{
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	struct socket *fb = hps_fb(hs);
	__poll_t mask = 0;
	u8 shutdown;
	int state;

	if (fb)
		return hps_fb_poll(file, sock, fb, wait);
	sock_poll_wait(file, sock, wait);
	/*
	 * poll() and select() with net.core.busy_poll set ask for busy
	 * polling (POLL_BUSY_LOOP) and call again until the time is up: one
	 * pass over the connection's completions each call, as sock_poll()
	 * does for a NAPI socket.
	 */
	if (wait && poll_requested_events(wait) & POLL_BUSY_LOOP &&
	    test_bit(HPS_F_CONN_UP, &hs->flags) && sk_can_busy_loop(sk) &&
	    !hps_rx_readable(hs))
		hps_rx_busy_poll_once(hs);
	state = READ_ONCE(sk->sk_state);
	if (state == TCP_LISTEN) {
		if (READ_ONCE(sk->sk_err))
			mask |= EPOLLERR;
		if (!list_empty_careful(&hs->accept_list) ||
		    hps_fb_acceptable(hs))
			mask |= EPOLLIN | EPOLLRDNORM;
		return mask;
	}

	shutdown = READ_ONCE(sk->sk_shutdown);
	if (state == TCP_CLOSE || shutdown == SHUTDOWN_MASK) {
		/*
		 * A connect() that fell back tears the RDMA side down: TCP
		 * answers. Paired with smp_wmb() in hps_fb_start().
		 */
		smp_rmb();
		fb = hps_fb(hs);
		if (fb)
			return hps_fb_mask(file, sock, fb);
	}
	if (test_bit(HPS_F_FIN_RCVD, &hs->flags))
		shutdown |= RCV_SHUTDOWN;
	if (READ_ONCE(sk->sk_err))
		mask |= EPOLLERR;
	if (shutdown == SHUTDOWN_MASK || state == TCP_CLOSE)
		mask |= EPOLLHUP;
	if (shutdown & RCV_SHUTDOWN)
		mask |= EPOLLIN | EPOLLRDNORM | EPOLLRDHUP;
	if (state == TCP_SYN_SENT || state == TCP_SYN_RECV)
		return mask;
	if (hps_rx_readable(hs))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (shutdown & SEND_SHUTDOWN || state == TCP_CLOSE) {
		mask |= EPOLLOUT | EPOLLWRNORM;
	} else if (hps_tx_writable(hs)) {
		mask |= EPOLLOUT | EPOLLWRNORM;
	} else {
		sk_set_bit(SOCKWQ_ASYNC_NOSPACE, sk);
		set_bit(SOCK_NOSPACE, &sock->flags);
		/* Paired with the lock in hps_send_done() */
		smp_mb__after_atomic();
		if (hps_tx_writable(hs))
			mask |= EPOLLOUT | EPOLLWRNORM;
	}
	return mask;
}

/* proto_ops.ioctl: SIOCINQ and SIOCOUTQ. Context: process. */
static int hps_ioctl(struct socket *sock, unsigned int cmd, unsigned long arg)
{
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	struct socket *fb = hps_fb(hs);
	int val;

	if (fb)
		return fb->ops->ioctl(fb, cmd, arg);
	switch (cmd) {
	case SIOCINQ:
		if (READ_ONCE(sk->sk_state) == TCP_LISTEN)
			return -EINVAL;
		val = READ_ONCE(hs->rx_queued);
		break;
	case SIOCOUTQ:
		if (READ_ONCE(sk->sk_state) == TCP_LISTEN)
			return -EINVAL;
		val = READ_ONCE(hs->tx_queued);
		if (val)
			hps_tx_cover_ask(hs);
		break;
	default:
		return -ENOIOCTLCMD;
	}
	return put_user(val, (int __user *)arg);
}

/* Map SOL_HPS and IPPROTO_TCP options to HPS_F_* bits; -1 if unknown. */
static int hps_opt_bit(int level, int optname)
{
	if (level == SOL_HPS) {
		if (optname == HPS_NODELAY)
			return HPS_F_NODELAY;
		if (optname == HPS_CORK)
			return HPS_F_CORK;
	} else if (level == SOL_TCP) {
		if (optname == TCP_NODELAY)
			return HPS_F_NODELAY;
		if (optname == TCP_CORK)
			return HPS_F_CORK;
	}
	return -1;
}

/* The keepalive options at SOL_TCP. */
static bool hps_ka_opt(int optname)
{
	return optname == TCP_KEEPIDLE || optname == TCP_KEEPINTVL ||
	       optname == TCP_KEEPCNT || optname == TCP_USER_TIMEOUT;
}

/*
 * TCP_KEEPIDLE, TCP_KEEPINTVL (seconds), TCP_KEEPCNT and TCP_USER_TIMEOUT
 * (milliseconds), with the errnos of TCP's do_tcp_setsockopt(). Before or
 * after connect(); on a connection that is up, the keepalive timer runs at
 * once with the new values. Context: process; takes the socket lock.
 */
static int hps_set_ka_opt(struct hps_sock *hs, int optname,
			  sockptr_t optval, unsigned int optlen)
{
	struct sock *sk = &hs->sk;
	int val;

	if (optlen < sizeof(int))
		return -EINVAL;
	if (copy_from_sockptr(&val, optval, sizeof(val)))
		return -EFAULT;
	switch (optname) {
	case TCP_KEEPIDLE:
		if (val < 1 || val > HPS_KA_IDLE_MAX_S)
			return -EINVAL;
		break;
	case TCP_KEEPINTVL:
		if (val < 1 || val > HPS_KA_INTVL_MAX_S)
			return -EINVAL;
		break;
	case TCP_KEEPCNT:
		if (val < 1 || val > HPS_KA_CNT_MAX)
			return -EINVAL;
		break;
	default:	/* TCP_USER_TIMEOUT */
		if (val < 0)
			return -EINVAL;
		break;
	}

	lock_sock(sk);
	if (hs->fb) {	/* fell back meanwhile: TCP's own option */
		release_sock(sk);
		return hps_fb_setsockopt(hps_fb(hs), SOL_TCP, optname, optval,
					 optlen);
	}
	spin_lock_bh(&hs->lock);
	switch (optname) {
	case TCP_KEEPIDLE:
		WRITE_ONCE(hs->ka_idle, val * MSEC_PER_SEC);
		break;
	case TCP_KEEPINTVL:
		WRITE_ONCE(hs->ka_intvl, val * MSEC_PER_SEC);
		break;
	case TCP_KEEPCNT:
		WRITE_ONCE(hs->ka_cnt, val);
		break;
	default:
		hps_tx_ut_set(hs, val);
		break;
	}
	spin_unlock_bh(&hs->lock);
	hps_tx_ka_config(hs);
	release_sock(sk);
	return 0;
}

/* What getsockopt() returns for a keepalive option, as TCP. */
static int hps_get_ka_opt(struct hps_sock *hs, int optname)
{
	switch (optname) {
	case TCP_KEEPIDLE:
		return DIV_ROUND_UP(hps_ka_idle_ms(hs), MSEC_PER_SEC);
	case TCP_KEEPINTVL:
		return DIV_ROUND_UP(hps_ka_intvl_ms(hs), MSEC_PER_SEC);
	case TCP_KEEPCNT:
		return hps_ka_cnt(hs);
	default:
		return READ_ONCE(hs->user_timeout);
	}
}

/* proto_ops.setsockopt for SOL_HPS and SOL_TCP. Context: process. */
static int hps_setsockopt(struct socket *sock, int level, int optname,
			  sockptr_t optval, unsigned int optlen)
{
	struct sock *sk = sock->sk;
	struct hps_sock *hs = hps_sk(sk);
	int bit = hps_opt_bit(level, optname);
	struct socket *fb = hps_fb(hs);
	int val;

	if (level == SOL_HPS && optname == HPS_TCP_FALLBACK) {
		if (optlen < sizeof(int))
			return -EINVAL;
		if (copy_from_sockptr(&val, optval, sizeof(val)))
			return -EFAULT;
		lock_sock(sk);
		hs->fb_on = !!val;
		release_sock(sk);
		return 0;
	}
	if (fb && level != SOL_HPS)
		return hps_fb_setsockopt(fb, level, optname, optval, optlen);
	if (fb && bit >= 0)	/* HPS_NODELAY, HPS_CORK: TCP's own */
		return hps_fb_setsockopt(fb, SOL_TCP,
					 bit == HPS_F_NODELAY ? TCP_NODELAY :
					 TCP_CORK, optval, optlen);
	if (level == SOL_HPS && optname == HPS_ZCOPY_THRESH) {
		if (optlen < sizeof(int))
			return -EINVAL;
		if (copy_from_sockptr(&val, optval, sizeof(val)))
			return -EFAULT;
		if (val < 0 || val > HPS_ZC_THRESH_MAX)
			return -EINVAL;
		lock_sock(sk);
		WRITE_ONCE(hs->zc_thresh, val);
		release_sock(sk);
		return 0;
	}
	if (level == SOL_TCP && hps_ka_opt(optname))
		return hps_set_ka_opt(hs, optname, optval, optlen);
	if (level == SOL_HPS && optname == HPS_INJECT_QP_EVENT) {
		lock_sock(sk);
		val = hps_inject_qp_event(hs);
		release_sock(sk);
		return val;
	}
	if (bit < 0)
		return -ENOPROTOOPT;
	if (optlen < sizeof(int))
		return -EINVAL;
	if (copy_from_sockptr(&val, optval, sizeof(val)))
		return -EFAULT;

	lock_sock(sk);
	if (hs->fb) {	/* fell back meanwhile: TCP's own option */
		release_sock(sk);
		return hps_fb_setsockopt(hps_fb(hs), SOL_TCP,
					 bit == HPS_F_NODELAY ? TCP_NODELAY :
					 TCP_CORK, optval, optlen);
	}
	spin_lock_bh(&hs->lock);
	if (val)
		set_bit(bit, &hs->flags);
	else
		clear_bit(bit, &hs->flags);
	if (hs->ntx && hs->tx)
		hps_tx_push(hs);	/* uncork or nodelay: send now */
	spin_unlock_bh(&hs->lock);
	release_sock(sk);
	return 0;
}

static void hps_get_info(struct hps_sock *hs, struct hps_info *info)
{
	memset(info, 0, sizeof(*info));
	info->hpsi_state = READ_ONCE(hs->sk.sk_state);
	if (hps_fb_lsn(hs))
		info->hpsi_transport = HPS_TRANSPORT_RDMA_TCP;
	spin_lock_bh(&hs->lock);
	if (test_bit(HPS_F_WAS_CONN, &hs->flags)) {
		info->hpsi_version = HPS_PROTO_VERSION;
		info->hpsi_credits = hs->tx_credits;
		info->hpsi_peer_credits = hps_peer_credits(hs);
		info->hpsi_buf_size = hs->buf_size;
		info->hpsi_rx_bufs = hs->nrx;
		info->hpsi_rx_win = hs->rx_win;
		info->hpsi_rx_buf = hps_cls_bytes(hs->buf_size, hs->rx_want);
	}
	info->hpsi_mem = (u64)READ_ONCE(hs->mem_pages) << PAGE_SHIFT;
	info->hpsi_tx_bytes = hs->tx_bytes;
	info->hpsi_rx_bytes = hs->rx_bytes;
	spin_unlock_bh(&hs->lock);
}

/* HPS_INFO of a socket that fell back: the TCP connection's. */
static void hps_get_fb_info(struct hps_sock *hs, struct socket *fb,
			    struct hps_info *info)
{
	struct sock *fsk = fb->sk;
	struct tcp_sock *tp = tcp_sk(fsk);

	memset(info, 0, sizeof(*info));
	info->hpsi_state = READ_ONCE(fsk->sk_state);
	info->hpsi_transport = HPS_TRANSPORT_TCP;
	info->hpsi_fallback = READ_ONCE(hs->fb_reason);
	lock_sock(fsk);
	info->hpsi_tx_bytes = tp->bytes_acked;
	info->hpsi_rx_bytes = tp->bytes_received;
	release_sock(fsk);
}

/* proto_ops.getsockopt for SOL_HPS and SOL_TCP. Context: process. */
static int hps_getsockopt(struct socket *sock, int level, int optname,
			  char __user *optval, int __user *optlen)
{
	struct hps_sock *hs = hps_sk(sock->sk);
	struct socket *fb = hps_fb(hs);
	struct hps_info info;
	int len, val, bit;

	if (fb && level != SOL_HPS)
		return fb->ops->getsockopt(fb, level, optname, optval, optlen);
	if (get_user(len, optlen))
		return -EFAULT;
	if (len < 0)
		return -EINVAL;

	if (level == SOL_HPS && optname == HPS_INFO) {
		if (fb)
			hps_get_fb_info(hs, fb, &info);
		else
			hps_get_info(hs, &info);
		len = min_t(int, len, sizeof(info));
		if (put_user(len, optlen) || copy_to_user(optval, &info, len))
			return -EFAULT;
		return 0;
	}
	bit = hps_opt_bit(level, optname);
	if (bit < 0 && !(level == SOL_HPS && optname == HPS_ZCOPY_THRESH) &&
	    !(level == SOL_HPS && optname == HPS_TCP_FALLBACK) &&
	    !(level == SOL_TCP && hps_ka_opt(optname)))
		return -ENOPROTOOPT;
	if (len < sizeof(int))
		return -EINVAL;
	if (level == SOL_HPS && optname == HPS_TCP_FALLBACK)
		val = READ_ONCE(hs->fb_on);
	else if (level == SOL_TCP && hps_ka_opt(optname))
		val = hps_get_ka_opt(hs, optname);
	else if (bit < 0)
		val = READ_ONCE(hs->zc_thresh);
	else
		val = test_bit(bit, &hs->flags);
	len = sizeof(int);
	if (put_user(len, optlen) || copy_to_user(optval, &val, len))
		return -EFAULT;
	return 0;
}

/* proto_ops.accept of either form (hps_compat.h). Context: process. */
#ifdef HPS_HAVE_ACCEPT_ARG
static int hps_proto_accept(struct socket *sock, struct socket *newsock,
			    struct proto_accept_arg *arg)
{
	return hps_accept(sock, newsock, arg->flags, arg->kern);
}
#else
static int hps_proto_accept(struct socket *sock, struct socket *newsock,
			    int flags, bool kern)
{
	return hps_accept(sock, newsock, flags, kern);
}
#endif

const struct proto_ops hps_proto_ops = {
	.family		= PF_HPS,
	.owner		= THIS_MODULE,
	.release	= hps_release,
	.bind		= hps_bind,
	.connect	= hps_connect,
	.socketpair	= sock_no_socketpair,
	.accept		= hps_proto_accept,
	.getname	= hps_getname,
	.poll		= hps_poll,
	.ioctl		= hps_ioctl,
	.listen		= hps_listen,
	.shutdown	= hps_shutdown,
	.setsockopt	= hps_setsockopt,
	.getsockopt	= hps_getsockopt,
	.sendmsg	= hps_sendmsg,
	.recvmsg	= hps_recvmsg,
	.mmap		= sock_no_mmap,
	HPS_PROTO_OPS_SENDPAGE
	.splice_read	= hps_splice_read,
	.splice_eof	= hps_splice_eof,
};

/* net_proto_family.create: socket(AF_HPS, ...). Context: process. */
static int hps_create(struct net *net, struct socket *sock, int protocol,
		      int kern)
{
	if (sock->type != SOCK_STREAM)
		return -ESOCKTNOSUPPORT;
	if (protocol != HPSPROTO_HPS && protocol != IPPROTO_TCP)
		return -EPROTONOSUPPORT;

	sock->ops = &hps_proto_ops;
	sock->state = SS_UNCONNECTED;
	if (!hps_sock_alloc(net, sock, kern))
		return -ENOMEM;
	return 0;
}

static const struct net_proto_family hps_family_ops = {
	.family	= PF_HPS,
	.create	= hps_create,
	.owner	= THIS_MODULE,
};

static int __init hps_init(void)
{
	int err;

	BUILD_BUG_ON(sizeof(struct hps_hdr) != 8);
	BUILD_BUG_ON(sizeof(struct hps_hello) != 16);

	err = hps_sysctl_register();
	if (err)
		return err;
	err = hps_connd_start();
	if (err)
		goto out_sysctl;
	err = hps_ib_register();
	if (err)
		goto out_connd;
	err = proto_register(&hps_proto, 1);
	if (err)
		goto out_ib;

	/* Last: from here on the family is visible to socket(2). */
	err = sock_register(&hps_family_ops);
	if (err) {
		pr_err("cannot register family %d: %d (is another module using it?)\n",
		       PF_HPS, err);
		goto out_unreg_proto;
	}
	/* Not fatal: the sockets work without it, hps-ss does not. */
	if (hps_diag_register())
		pr_warn("no sock_diag for family %d: another module has it\n",
			PF_HPS);
	return 0;

out_unreg_proto:
	proto_unregister(&hps_proto);
out_ib:
	hps_ib_unregister();
out_connd:
	hps_connd_stop();
out_sysctl:
	hps_sysctl_unregister();
	return err;
}

static void __exit hps_exit(void)
{
	hps_diag_unregister();
	sock_unregister(PF_HPS);	/* first: no new sockets */
	proto_unregister(&hps_proto);
	hps_ib_unregister();		/* every connection is gone by now */
	hps_connd_stop();
	hps_sysctl_unregister();
}

module_init(hps_init);
module_exit(hps_exit);

MODULE_DESCRIPTION("AF_HPS: stream sockets over RDMA reliable connections");
MODULE_LICENSE("GPL");
MODULE_ALIAS_NETPROTO(PF_HPS);
