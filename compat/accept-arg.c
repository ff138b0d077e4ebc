// SPDX-License-Identifier: GPL-2.0
/*
 * what: proto_ops.accept
 * have: 6.10, struct proto_accept_arg carries the flags and kern.
 */
#include <linux/net.h>
#include <net/sock.h>
#ifdef HPS_PROBE_HAVE
static int f(struct socket *s, struct socket *n, struct proto_accept_arg *a)
{
	return a->flags;
}
#else
static int f(struct socket *s, struct socket *n, int flags, bool kern)
{
	return flags;
}
#endif
const struct proto_ops hps_probe = { .accept = f };
