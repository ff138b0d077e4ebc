/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Module-wide definitions: the socket structure and its accessor.
 */
#ifndef _HPS_H
#define _HPS_H

#include <net/sock.h>
#include <linux/af_hps.h>

/**
 * struct hps_sock - an AF_HPS socket
 * @sk: the generic socket; must stay first (sk_alloc() sizes by proto)
 */
struct hps_sock {
	struct sock	sk;
};

static inline struct hps_sock *hps_sk(const struct sock *sk)
{
	return container_of(sk, struct hps_sock, sk);
}

#endif /* _HPS_H */
