// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kernel API test for AF_HPS: sock_create_kern(), kernel_bind/listen/
 * connect/accept/sendmsg/recvmsg over RDMA loopback. Loading the module
 * runs the test; it fails to load (-EIO) if the data does not arrive
 * intact. Used by selftests/hps_kapi.
 */
#define pr_fmt(fmt) "hps_kapi_test: " fmt

#include <linux/inet.h>
#include <linux/in.h>
#include <linux/module.h>
#include <linux/net.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <linux/af_hps.h>

static char *addr = "198.18.0.1";
module_param(addr, charp, 0444);
static int port = 18515;
module_param(port, int, 0444);

#define LEN	(512 * 1024)

static int hps_kapi_run(void)
{
	struct socket *l = NULL, *c = NULL, *a = NULL;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct msghdr msg = { };
	struct kvec iov;
	char *tx, *rx;
	int err;

	tx = kvmalloc(LEN, GFP_KERNEL);
	rx = kvzalloc(LEN, GFP_KERNEL);
	if (!tx || !rx) {
		err = -ENOMEM;
		goto out;
	}
	get_random_bytes(tx, LEN);
	sin.sin_port = htons(port);
	if (!in4_pton(addr, -1, (u8 *)&sin.sin_addr, -1, NULL)) {
		err = -EINVAL;
		goto out;
	}

	err = sock_create_kern(&init_net, AF_HPS, SOCK_STREAM, 0, &l);
	if (err)
		goto out;
	err = kernel_bind(l, (struct sockaddr *)&sin, sizeof(sin));
	if (!err)
		err = kernel_listen(l, 4);
	if (err)
		goto out;
	err = sock_create_kern(&init_net, AF_HPS, SOCK_STREAM, 0, &c);
	if (!err)
		err = kernel_connect(c, (struct sockaddr *)&sin, sizeof(sin), 0);
	if (!err)
		err = kernel_accept(l, &a, 0);
	if (err)
		goto out;

	iov.iov_base = tx;
	iov.iov_len = LEN;
	err = kernel_sendmsg(c, &msg, &iov, 1, LEN);
	if (err != LEN) {
		pr_err("sendmsg: %d\n", err);
		err = err < 0 ? err : -EIO;
		goto out;
	}
	iov.iov_base = rx;
	err = kernel_recvmsg(a, &msg, &iov, 1, LEN, MSG_WAITALL);
	if (err != LEN || memcmp(tx, rx, LEN)) {
		pr_err("recvmsg: %d or data differs\n", err);
		err = -EIO;
		goto out;
	}
	err = 0;
	pr_info("kernel API transfer of %d bytes ok\n", LEN);
out:
	if (a)
		sock_release(a);
	if (c)
		sock_release(c);
	if (l)
		sock_release(l);
	kvfree(tx);
	kvfree(rx);
	return err;
}

static int __init hps_kapi_init(void)
{
	return hps_kapi_run();
}

static void __exit hps_kapi_exit(void)
{
}

module_init(hps_kapi_init);
module_exit(hps_kapi_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("AF_HPS kernel API test");
