/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * AF_HPS: what differs between the kernels it builds for (Linux 6.1 and
 * 6.12), one small helper each. The build's feature probes
 * (compat/NAME.c, run by compat/hps-probe.sh) decide which form the target
 * kernel has and write hps_compat_gen.h; nothing here or elsewhere in the
 * module compares version numbers. Documentation/testing.rst, "Porting to
 * a new kernel", says how to add a probe.
 */
#ifndef _HPS_COMPAT_H
#define _HPS_COMPAT_H

#include <linux/net.h>
#include <linux/sysctl.h>
#include <linux/uio.h>
#include <net/net_namespace.h>

#include "hps_compat_gen.h"

/*
 * proto_ops.accept: since 6.10 the flags and "kern" come in a struct
 * proto_accept_arg (HPS_HAVE_ACCEPT_ARG); hps_proto_accept() in af_hps.c
 * hands them to hps_accept() as arguments.
 */

/*
 * Splice and sendfile to a socket: 6.1 calls proto_ops.sendpage, which
 * AF_HPS leaves to sock_no_sendpage() (kernel_sendmsg() of each page);
 * since 6.5 they call proto_ops.sendmsg with MSG_SPLICE_PAGES and a
 * bvec iterator, which hps_sendmsg() copies from as from any iterator.
 */
#ifdef HPS_HAVE_SENDPAGE
#define HPS_PROTO_OPS_SENDPAGE	.sendpage = sock_no_sendpage,
#else
#define HPS_PROTO_OPS_SENDPAGE
#endif

/* A sysctl handler's table: const since 6.11. */
#ifdef HPS_HAVE_SYSCTL_CONST
#define hps_ctl_table_t const struct ctl_table
#else
#define hps_ctl_table_t struct ctl_table
#endif

/**
 * hps_register_net_sysctl() - register_net_sysctl() of a table allocated
 * for one namespace
 * @net: the namespace
 * @path: the directory, "net/hps"
 * @table: the table, @n entries and a zeroed sentinel after them
 * @n: its entries, without the sentinel
 *
 * Since 6.6 the table's size is given (register_net_sysctl_sz()) and the
 * sentinel is not needed; 6.1 walks to the sentinel.
 *
 * Context: process (pernet init).
 * Return: the header, or NULL.
 */
static inline struct ctl_table_header *
hps_register_net_sysctl(struct net *net, const char *path,
			struct ctl_table *table, size_t n)
{
#ifdef HPS_HAVE_NET_SYSCTL_SZ
	return register_net_sysctl_sz(net, path, table, n);
#else
	return register_net_sysctl(net, path, table);
#endif
}

/**
 * hps_iter_seg() - the first segment of an ITER_IOVEC iterator
 * @it: the iterator (iter_is_iovec())
 * @len: its length, from the iterator's position, is stored here
 *
 * Return: the user address of the iterator's position.
 */
static inline void __user *hps_iter_seg(const struct iov_iter *it,
					size_t *len)
{
#ifdef HPS_HAVE_ITER_IOV
	*len = min(iov_iter_count(it), iter_iov_len(it));
	return iter_iov_addr(it);
#else
	struct iovec v = iov_iter_iovec(it);

	*len = v.iov_len;
	return v.iov_base;
#endif
}

#endif /* _HPS_COMPAT_H */
