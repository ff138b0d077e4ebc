// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Socket family glue: the proto and proto_ops tables, socket creation and
 * module init/exit. Everything else lives in the hps_*.c file of its concern.
 *
 * This is the foundation's skeleton: the family registers, sockets can be
 * created and closed, and every operation without an implementation yet
 * fails with EOPNOTSUPP instead of pretending to work.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/module.h>
#include <linux/net.h>
#include <linux/in.h>
#include <net/sock.h>

#include "hps.h"

static struct proto hps_proto = {
	.name		= "HPS",
	.owner		= THIS_MODULE,
	.obj_size	= sizeof(struct hps_sock),
};

static int hps_release(struct socket *sock)
{
	struct sock *sk = sock->sk;

	if (!sk)
		return 0;

	lock_sock(sk);
	sock_orphan(sk);
	sock->sk = NULL;
	release_sock(sk);
	sock_put(sk);	/* the reference sk_alloc() gave the socket */
	return 0;
}

static const struct proto_ops hps_proto_ops = {
	.family		= PF_HPS,
	.owner		= THIS_MODULE,
	.release	= hps_release,
	.bind		= sock_no_bind,
	.connect	= sock_no_connect,
	.socketpair	= sock_no_socketpair,
	.accept		= sock_no_accept,
	.getname	= sock_no_getname,
	.poll		= datagram_poll,
	.ioctl		= sock_no_ioctl,
	.listen		= sock_no_listen,
	.shutdown	= sock_no_shutdown,
	.sendmsg	= sock_no_sendmsg,
	.recvmsg	= sock_no_recvmsg,
	.mmap		= sock_no_mmap,
	.sendpage	= sock_no_sendpage,
};

static int hps_create(struct net *net, struct socket *sock, int protocol,
		      int kern)
{
	struct sock *sk;

	if (sock->type != SOCK_STREAM)
		return -ESOCKTNOSUPPORT;
	if (protocol != HPSPROTO_HPS && protocol != IPPROTO_TCP)
		return -EPROTONOSUPPORT;

	sk = sk_alloc(net, PF_HPS, GFP_KERNEL, &hps_proto, kern);
	if (!sk)
		return -ENOMEM;

	sock->ops = &hps_proto_ops;
	sock->state = SS_UNCONNECTED;
	sock_init_data(sock, sk);
	sk->sk_protocol = IPPROTO_TCP;
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

	err = proto_register(&hps_proto, 1);
	if (err)
		return err;

	/* Last: from here on the family is visible to socket(2). */
	err = sock_register(&hps_family_ops);
	if (err) {
		pr_err("cannot register family %d: %d (is another module using it?)\n",
		       PF_HPS, err);
		goto out_unreg_proto;
	}
	return 0;

out_unreg_proto:
	proto_unregister(&hps_proto);
	return err;
}

static void __exit hps_exit(void)
{
	sock_unregister(PF_HPS);	/* first: no new sockets */
	proto_unregister(&hps_proto);
}

module_init(hps_init);
module_exit(hps_exit);

MODULE_DESCRIPTION("AF_HPS: stream sockets over RDMA reliable connections");
MODULE_LICENSE("GPL");
MODULE_ALIAS_NETPROTO(PF_HPS);
