// SPDX-License-Identifier: GPL-2.0
/*
 * The data path between two nodes: a refused connect, an echoed and
 * checksummed stream by copy and by zero copy (tools/hps_xfer on node 2),
 * both streams compared by content. hps_stream and hps_zcopy test the
 * same paths over RDMA loopback on one node; hps_across shares a socket
 * between threads on each node, hps_long moves a long stream.
 *
 * hps-configs: 2:rxe 2:siw
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#include "kselftest_harness.h"
#include "hps_util.h"

#define MB (1 << 20)

/* net.hps.zcopy_thresh: set it to @val (if not NULL), the old value to @old. */
static int sysctl_rw(const char *val, char *old, size_t oldlen)
{
	FILE *f;

	if (old) {
		f = fopen("/proc/sys/net/hps/zcopy_thresh", "r");
		if (!f || !fgets(old, oldlen, f))
			return -1;
		fclose(f);
	}
	if (!val)
		return 0;
	f = fopen("/proc/sys/net/hps/zcopy_thresh", "w");
	if (!f)
		return -1;
	fprintf(f, "%s", val);
	return fclose(f) ? -1 : 0;
}

struct sender {
	int fd, rounds;
	const char *buf;
	size_t len, piece;
	ssize_t ret;
};

/* Send buf @rounds times, @piece bytes per send(). */
static void *send_thread(void *arg)
{
	struct sender *s = arg;
	size_t off;
	int i;

	s->ret = 0;
	for (i = 0; i < s->rounds; i++) {
		for (off = 0; off < s->len; off += s->piece) {
			size_t n = s->len - off < s->piece ?
				   s->len - off : s->piece;
			ssize_t w = hps_write_all(s->fd, s->buf + off, n);

			if (w != (ssize_t)n) {
				s->ret = -1;
				return NULL;
			}
			s->ret += w;
		}
	}
	return NULL;
}

/* No listener on the peer's port: refused at once, as TCP's RST says. */
TEST(connection_refused)
{
	int fd = hps_connect_to(hps_env("HPS_PEER", "127.0.0.1"), hps_rand_port());

	EXPECT_EQ(-1, fd);
	EXPECT_EQ(ECONNREFUSED, errno);
}

/* 8 MiB echoed by tools/hps_xfer on the peer: both streams compared. */
TEST(peer_server_checksummed)
{
	char job[64], *tx, *rx;
	size_t n = 8 << 20;
	struct sender s = { .rounds = 1, .len = n, .piece = n };
	uint64_t sum;
	pthread_t t;
	int port;

	port = hps_peer_server(job, sizeof(job), "--echo");
	ASSERT_GT(port, 0);
	s.fd = hps_connect_peer(port);
	ASSERT_GE(s.fd, 0);
	tx = malloc(n);
	rx = malloc(n);
	hps_fill_random(tx, n);
	s.buf = tx;
	pthread_create(&t, NULL, send_thread, &s);
	EXPECT_EQ((ssize_t)n, hps_read_all(s.fd, rx, n));
	pthread_join(t, NULL);
	EXPECT_EQ((ssize_t)n, s.ret);
	EXPECT_EQ(0, memcmp(tx, rx, n));
	shutdown(s.fd, SHUT_WR);
	EXPECT_EQ(8, hps_read_all(s.fd, &sum, 8));
	close(s.fd);
	EXPECT_EQ(0, hps_peer_wait(job));
	free(tx);
	free(rx);
}

/*
 * Zero copy both ways with the peer node : an
 * echo server there reads our sends with RDMA Read and echoes them, which
 * we read with RDMA Read. The same buffers twice: the second round finds
 * them in the cache. Sends of 64 KiB: between two Soft-RoCE guests larger
 * RDMA Reads crawl (zcopy.rst, Measurement), and the test would time out.
 */
TEST(peer_echo_both_ways)
{
	size_t len = 4 * MB;
	char *tx = malloc(len), *rx = malloc(len), job[64], old[32];
	long tx0 = hps_stat("zcopy_tx"), rd0 = hps_stat("zcopy_rx_reads");
	long hits0 = hps_stat("zcopy_cache_hits");
	struct sender s = { .rounds = 2, .buf = tx, .len = len,
			    .piece = 65536 };
	int port, fd, thresh = 65536, i;
	uint64_t sum;
	pthread_t t;

	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, system("hps-vm-peer sysctl -qw net.hps.zcopy_thresh=65536"));
	ASSERT_EQ(0, sysctl_rw("65536", old, sizeof(old)));
	port = hps_peer_server(job, sizeof(job), "--echo");
	ASSERT_GT(port, 0);
	fd = hps_connect_peer(port);
	sysctl_rw(old, NULL, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, setsockopt(fd, SOL_HPS, HPS_ZCOPY_THRESH, &thresh,
				sizeof(thresh)));
	hps_fill_random(tx, len);
	s.fd = fd;
	pthread_create(&t, NULL, send_thread, &s);
	for (i = 0; i < 2; i++) {
		memset(rx, 0, len);
		EXPECT_EQ((ssize_t)len, hps_read_all(fd, rx, len));
		EXPECT_EQ(0, memcmp(tx, rx, len)) TH_LOG("round %d", i);
	}
	pthread_join(t, NULL);
	EXPECT_EQ((ssize_t)(2 * len), s.ret);
	shutdown(fd, SHUT_WR);
	EXPECT_EQ(8, hps_read_all(fd, &sum, 8));
	close(fd);
	EXPECT_EQ(0, hps_peer_wait(job));
	EXPECT_EQ(0, system("hps-vm-peer sysctl -qw net.hps.zcopy_thresh=0"));
	EXPECT_GE(hps_stat("zcopy_tx") - tx0, 2 * len / 65536);
	EXPECT_GT(hps_stat("zcopy_rx_reads"), rd0);
	EXPECT_GT(hps_stat("zcopy_cache_hits"), hits0);
	free(tx);
	free(rx);
}

TEST_HARNESS_MAIN
