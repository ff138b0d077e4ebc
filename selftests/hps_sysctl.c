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

	snprintf(path, sizeof(path), "/proc/sys/net/hps/%s", name);
	return hps_write_file(path, val);
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

/* Read or write /sys/module/af_hps/parameters/max_cqs; -1 on error. */
static long max_cqs(long set)
{
	const char *path = "/sys/module/af_hps/parameters/max_cqs";
	char buf[32];
	long v = -1;
	FILE *f;

	if (set >= 0) {
		f = fopen(path, "w");
		if (!f)
			return -1;
		fprintf(f, "%ld\n", set);
		return fclose(f) ? -1 : set;
	}
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

/*
 * Open connections of the largest window (each end reserves 2056 CQ
 * entries: 2 * 1024 + 8) until one fails or @max are up; how many, and
 * the errno of the failure (0 if none failed) in *@err.
 */
static int open_big(int *c, int *a, int max, int *err)
{
	int n;

	*err = 0;
	for (n = 0; n < max; n++) {
		if (hps_pair(&c[n], &a[n])) {
			*err = errno;
			if (c[n] >= 0)
				close(c[n]);
			c[n] = a[n] = -1;
			break;
		}
	}
	return n;
}

/* The namespace's counter @name; -1 if absent. */
static long stat_of(const char *name)
{
	return hps_stat(name);
}

/*
 * Wait up to 70 s for the namespace's buffers to be back to @pages (the
 * connections closed before are torn down a little after close(), and
 * a closed socket whose FIN is not taken keeps its charge up to 60 s).
 */
static long settle(long pages)
{
	double end = hps_now() + 70;
	long v;

	while ((v = stat_of("mem_pages")) > pages && hps_now() < end)
		usleep(50000);
	return v;
}

/*
 * The completion queues, with the host-wide max_cqs set for the case and
 * put back by the teardown, whatever the case did; and credits 1024 at
 * buf_size 4096, connections that reserve many entries for little memory,
 * with net.hps.mem raised so that none is under pressure (a smaller
 * window reserves fewer entries).
 */
FIXTURE(cq)
{
	long credits, buf_size, max_cqs, mem0;
	char mem[128];
	int n, c[64], a[64];
};

FIXTURE_SETUP(cq)
{
	FILE *f = fopen("/proc/sys/net/hps/mem", "r");
	int i;

	for (i = 0; i < 64; i++)
		self->c[i] = self->a[i] = -1;
	self->n = 0;
	ASSERT_NE(NULL, f) TH_LOG("net.hps not present: is af_hps.ko loaded?");
	ASSERT_NE(NULL, fgets(self->mem, sizeof(self->mem), f));
	fclose(f);
	self->credits = rd("credits");
	self->buf_size = rd("buf_size");
	self->max_cqs = max_cqs(-1);
	ASSERT_LE(1, self->max_cqs) TH_LOG("no max_cqs parameter");
	self->mem0 = stat_of("mem_pages");
	ASSERT_LE(0, self->mem0);
}

FIXTURE_TEARDOWN(cq)
{
	char b[32];
	int i;

	for (i = 0; i < 64; i++) {
		if (self->c[i] >= 0)
			close(self->c[i]);
		if (self->a[i] >= 0)
			close(self->a[i]);
	}
	snprintf(b, sizeof(b), "%ld", self->credits);
	wr("credits", b);
	snprintf(b, sizeof(b), "%ld", self->buf_size);
	wr("buf_size", b);
	max_cqs(self->max_cqs);
	settle(self->mem0);
	wr("mem", self->mem);
}

/* credits 1024, buf_size 4096, no pressure: see the fixture. */
static void big_windows(struct __test_metadata *_metadata,
			FIXTURE_DATA(cq) *self)
{
	ASSERT_EQ(0, wr("credits", "1024"));
	ASSERT_EQ(0, wr("buf_size", "4096"));
	/* 32 ends of 2049 pages (protocol version 4) well below pressure */
	ASSERT_EQ(0, wr("mem", "100000 200000 250000"));
}

static void close_all(FIXTURE_DATA(cq) *self)
{
	int i;

	for (i = 0; i < self->n; i++) {
		close(self->c[i]);
		close(self->a[i]);
		self->c[i] = self->a[i] = -1;
	}
	self->n = 0;
}

/*
 * With max_cqs 1 the device's first completion queue fills: the next
 * connection fails cleanly, and once those are closed their entries are
 * free again.
 */
TEST_F_TIMEOUT(cq, full_fails_new_connections_cleanly, 300)
{
	long p0 = stat_of("mem_pressure_entries");
	int err;

	big_windows(_metadata, self);
	ASSERT_EQ(1, max_cqs(1));
	self->n = open_big(self->c, self->a, 64, &err);
	TH_LOG("%d connections before the CQ was full (errno %d)", self->n,
	       err);
	EXPECT_LT(self->n, 64);
	EXPECT_GE(self->n, 2);
	EXPECT_TRUE(err == ENOBUFS || err == ECONNREFUSED);
	EXPECT_EQ(p0, stat_of("mem_pressure_entries"));
	close_all(self);
	/* the reservations came back */
	EXPECT_EQ(self->mem0, settle(self->mem0));
	ASSERT_EQ(0, hps_pair(&self->c[0], &self->a[0]));
	self->n = 1;
	EXPECT_EQ(2, send(self->c[0], "ok", 2, 0));
	EXPECT_EQ(2, recv(self->a[0], b_unused, 2, MSG_WAITALL));
}

/*
 * Where the first completion queue is full the next connection gets a
 * second, shared with the later ones: at max_cqs 2 twice as many
 * connections of the largest window fit as on the first queue alone
 * (max_cqs 1: a new connection uses the first max_cqs queues only), and
 * every one carries its own checked data.
 */
TEST_F_TIMEOUT(cq, second_when_the_first_is_full, 300)
{
	long p0 = stat_of("mem_pressure_entries");
	int n1, err, i;

	big_windows(_metadata, self);
	ASSERT_EQ(1, max_cqs(1));
	n1 = self->n = open_big(self->c, self->a, 32, &err);
	EXPECT_LT(n1, 32);
	EXPECT_TRUE(err == ENOBUFS || err == ECONNREFUSED) TH_LOG("%d", err);
	close_all(self);
	EXPECT_EQ(self->mem0, settle(self->mem0));
	ASSERT_EQ(2, max_cqs(2));
	self->n = open_big(self->c, self->a, 32, &err);
	TH_LOG("%d connections on the first queue, %d on two (then errno %d)",
	       n1, self->n, err);
	EXPECT_LE(2 * n1, self->n);
	EXPECT_EQ(p0, stat_of("mem_pressure_entries"));
	for (i = 0; i < self->n; i++) {
		char t[64], r[64];

		hps_fill_random(t, sizeof(t));
		ASSERT_EQ((ssize_t)sizeof(t), send(self->c[i], t, sizeof(t), 0));
		ASSERT_EQ((ssize_t)sizeof(r), recv(self->a[i], r, sizeof(r),
						   MSG_WAITALL));
		EXPECT_EQ(0, memcmp(t, r, sizeof(t))) TH_LOG("connection %d", i);
	}
	/* max_cqs takes 1 to 64 */
	EXPECT_EQ(-1, max_cqs(0));
	EXPECT_EQ(-1, max_cqs(65));
	EXPECT_EQ(2, max_cqs(-1));
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
