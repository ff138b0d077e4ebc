// SPDX-License-Identifier: GPL-2.0
/*
 * what: iov_iter segment access
 * have: 6.4, iter_iov_addr() and iter_iov_len() replace iov_iter_iovec().
 */
#include <linux/uio.h>
static size_t f(const struct iov_iter *it)
{
#ifdef HPS_PROBE_HAVE
	return (size_t)iter_iov_addr(it) + iter_iov_len(it);
#else
	struct iovec v = iov_iter_iovec(it);

	return (size_t)v.iov_base + v.iov_len;
#endif
}

size_t (*hps_probe)(const struct iov_iter *it) = f;
