// SPDX-License-Identifier: GPL-2.0
/*
 * AF_HPS sysctls: net.hps.* exist with their defaults, reject values out of
 * range with EINVAL, are per network namespace, and take effect on new
 * connections (credits and buf_size show in HPS_INFO).
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "hps_util.h"

static char b_unused[16];

static long rd(const char *name)
{
	char path[128], buf[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/hps/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtol(buf, NULL, 10);
}

/* Return 0 or the errno of the write. */
static int wr(const char *name, const char *val)
{
	char path[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/proc/sys/net/hps/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = errno;
	close(fd);
	return ret;
}

static const struct {
	const char *name, *low, *high, *ok;
	long def;
} knobs[] = {
	{ "credits", "2", "1025", "8", 16 },
	{ "buf_size", "4095", "1048577", "8192", 65536 },
	{ "ack_thresh", "0", "101", "50", 25 },
	{ "inline_max", "-1", "1025", "0", 128 },
	{ "zcopy_thresh", "-1", "1073741825", "1048576", 0 },
	{ "rmem_default", "4095", "67108865", "131072", 1 << 20 },
	{ "wmem_default", "4095", "67108865", "131072", 1 << 20 },
	{ "zcopy_cache_bytes", "-1", "1073741825", "1048576", 64 << 20 },
	{ "zcopy_cache_kmap", "-1", "2", "0", 1 },
	{ "keepalive_ms", "-1", "3600001", "500", 10000 },
	{ "keepalive_probes", "0", "128", "3", 9 },
};

#define NKNOBS (sizeof(knobs) / sizeof(knobs[0]))

static void need_hps(struct __test_metadata *_metadata)
{
	if (access("/proc/sys/net/hps", F_OK))
		ASSERT_TRUE(0) TH_LOG("net.hps not present: is af_hps.ko loaded?");
}

TEST(defaults_and_ranges)
{
	char save[32];
	size_t i;

	if (access("/proc/sys/net/hps", F_OK))
		ASSERT_TRUE(0) TH_LOG("net.hps not present: is af_hps.ko loaded?");
	for (i = 0; i < NKNOBS; i++) {
		long v = rd(knobs[i].name);

		EXPECT_EQ(knobs[i].def, v) TH_LOG("%s", knobs[i].name);
		snprintf(save, sizeof(save), "%ld", v);
		EXPECT_EQ(EINVAL, wr(knobs[i].name, knobs[i].low))
			TH_LOG("%s=%s", knobs[i].name, knobs[i].low);
		EXPECT_EQ(EINVAL, wr(knobs[i].name, knobs[i].high))
			TH_LOG("%s=%s", knobs[i].name, knobs[i].high);
		EXPECT_EQ(v, rd(knobs[i].name));
		EXPECT_EQ(0, wr(knobs[i].name, knobs[i].ok));
		EXPECT_EQ(strtol(knobs[i].ok, NULL, 10), rd(knobs[i].name));
		EXPECT_EQ(0, wr(knobs[i].name, save));
	}
	(void)need_hps;
}

TEST(credits_and_buf_size_apply_to_new_connections)
{
	struct hps_info ci, ai;
	socklen_t len = sizeof(ci);
	long oc, ob;
	int c, a;
	char *tx, *rx;
	size_t n = 300000;

	if (access("/proc/sys/net/hps", F_OK))
		ASSERT_TRUE(0) TH_LOG("net.hps not present: is af_hps.ko loaded?");
	oc = rd("credits");
	ob = rd("buf_size");
	ASSERT_EQ(0, wr("credits", "4"));
	ASSERT_EQ(0, wr("buf_size", "8192"));
	ASSERT_EQ(0, hps_pair(&c, &a));
	ASSERT_EQ(0, getsockopt(c, SOL_HPS, HPS_INFO, &ci, &len));
	ASSERT_EQ(0, getsockopt(a, SOL_HPS, HPS_INFO, &ai, &len));
	EXPECT_EQ(4, ci.hpsi_rx_bufs);
	EXPECT_EQ(4, ai.hpsi_rx_bufs);
	EXPECT_EQ(8192, ci.hpsi_buf_size);
	/* data still flows with a tiny window */
	tx = malloc(n);
	rx = malloc(n);
	hps_fill_random(tx, n);
	if (!fork())
		_exit(hps_write_all(c, tx, n) == (ssize_t)n ? 0 : 1);
	EXPECT_EQ((ssize_t)n, recv(a, rx, n, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(tx, rx, n));
	wait(NULL);
	close(c);
	close(a);
	free(tx);
	free(rx);
	{
		char b[16];

		snprintf(b, sizeof(b), "%ld", oc);
		wr("credits", b);
		snprintf(b, sizeof(b), "%ld", ob);
		wr("buf_size", b);
	}
}

TEST(so_rcvbuf_sets_window)
{
	int port, l, c, a, v = 3 * 65536;
	struct hps_info ci;
	socklen_t len = sizeof(ci);
	struct sockaddr_in sin;

	l = hps_listener(&port, 2);
	if (l < 0)
		ASSERT_TRUE(0) TH_LOG("AF_HPS not available: is af_hps.ko loaded?");
	c = socket(AF_HPS, SOCK_STREAM, 0);
	/* the kernel doubles it: 6 * 64 KiB / 2 / buf_size = 3 buffers */
	ASSERT_EQ(0, setsockopt(c, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)));
	hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"), port);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&sin, sizeof(sin)));
	a = accept(l, NULL, NULL);
	ASSERT_GE(a, 0);
	ASSERT_EQ(0, getsockopt(c, SOL_HPS, HPS_INFO, &ci, &len));
	EXPECT_EQ(3, ci.hpsi_rx_bufs);
	close(a);
	close(c);
	close(l);
}

TEST(cq_full_fails_new_connections_cleanly)
{
	int c[64], a[64], n = 0, i, err = 0;
	long oc, ob;

	if (access("/proc/sys/net/hps", F_OK))
		ASSERT_TRUE(0) TH_LOG("net.hps not present: is af_hps.ko loaded?");
	oc = rd("credits");
	ob = rd("buf_size");
	/* 2 * (1024 + 1024 + 7) CQ entries per loopback pair */
	ASSERT_EQ(0, wr("credits", "1024"));
	ASSERT_EQ(0, wr("buf_size", "4096"));
	for (n = 0; n < 64; n++) {
		if (hps_pair(&c[n], &a[n])) {
			err = errno;
			if (c[n] >= 0)
				close(c[n]);
			break;
		}
	}
	TH_LOG("%d connections before the CQ was full (errno %d)", n, err);
	EXPECT_LT(n, 64);
	EXPECT_GE(n, 2);
	EXPECT_TRUE(err == ENOBUFS || err == ECONNREFUSED);
	for (i = 0; i < n; i++) {
		close(c[i]);
		close(a[i]);
	}
	{
		char b[16];

		snprintf(b, sizeof(b), "%ld", oc);
		wr("credits", b);
		snprintf(b, sizeof(b), "%ld", ob);
		wr("buf_size", b);
	}
	/* the reservations came back */
	usleep(500000);
	ASSERT_EQ(0, hps_pair(&c[0], &a[0]));
	EXPECT_EQ(2, send(c[0], "ok", 2, 0));
	EXPECT_EQ(2, recv(a[0], b_unused, 2, MSG_WAITALL));
	close(c[0]);
	close(a[0]);
}

TEST(per_namespace)
{
	pid_t pid;
	int st;

	if (access("/proc/sys/net/hps", F_OK))
		ASSERT_TRUE(0) TH_LOG("net.hps not present: is af_hps.ko loaded?");
	ASSERT_EQ(0, wr("credits", "32"));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		if (unshare(CLONE_NEWNET))
			_exit(2);
		/* a new namespace starts from the defaults */
		if (rd("credits") != 16)
			_exit(3);
		if (wr("credits", "64") || rd("credits") != 64)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(0, WEXITSTATUS(st));
	EXPECT_EQ(32, rd("credits"));
	EXPECT_EQ(0, wr("credits", "16"));
}

TEST_HARNESS_MAIN
