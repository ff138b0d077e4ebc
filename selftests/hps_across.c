// SPDX-License-Identifier: GPL-2.0
/*
 * A socket shared by several threads on each of two nodes: writers on one
 * node and readers on the other, both ways, zero copy on and off, every
 * byte accounted for (hps_words.h). The other end is this program on the
 * peer node, started with --peer (peer_main()). With one node the peer is
 * this node and the stream goes over RDMA loopback.
 *
 * hps-configs: 2:rxe 2:siw
 */
#define _GNU_SOURCE
#include <signal.h>

#include "kselftest_harness.h"
#include "hps_words.h"

/*
 * node 2: hps_across --peer PORT ROLE N ZC WORDS
 * ROLE r: accept one connection, read it with N readers and check it
 * (as many writers as the connecting side announces in its first word,
 * WORDS words each); ROLE w: accept one connection and write WORDS words
 * with each of N writers. Prints one line and exits 0 if all was well.
 */
static int peer_main(int argc, char **argv)
{
	struct share s = { .wmin = 1, .wmax = KB(256), .rmin = 1,
			   .rmax = KB(256), .stall = 20 };
	int port, n, zc, l, fd, one = 1, nw;
	char role;
	struct sockaddr_in sin;

	if (argc != 7)
		return 2;
	port = atoi(argv[2]);
	role = argv[3][0];
	n = atoi(argv[4]);
	zc = atoi(argv[5]);
	s.words = atol(argv[6]);
	l = socket(AF_HPS, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	set_int(l, SOL_HPS, HPS_ZCOPY_THRESH, zc);
	hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"), port);
	if (bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 1)) {
		perror("peer: listen");
		return 1;
	}
	fd = accept(l, NULL, NULL);
	if (fd < 0) {
		perror("peer: accept");
		return 1;
	}
	if (role == 'r') {
		unsigned long long hello;

		if (recv(fd, &hello, sizeof(hello), MSG_WAITALL) != sizeof(hello))
			return 1;
		nw = hello;
		s.rfd = fd;
		s.nr = n;
		share_init(&s, nw);
		share_run(&s);
		share_complete(&s, nw);
		printf("peer: %d readers: %ld bytes: %s\n", n, (long)s.bytes,
		       s.errors ? s.first : "every word once");
		return s.errors || s.bytes != (long)(nw * s.words * WORD);
	}
	s.wfd = fd;
	s.nw = n;
	share_run(&s);
	printf("peer: %d writers: %s\n", n, s.errors ? s.first : "done");
	return !!s.errors;
}

static int peer_start(char *job, size_t joblen, int port, char role, int n,
		      int zc, size_t words)
{
	char cmd[PATH_MAX + 256], exe[PATH_MAX];

	if (hps_self_exe(exe))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s --peer %d %c %d %d %zu", exe, port,
		 role, n, zc, words);
	return hps_peer_bg(job, joblen, cmd);
}

FIXTURE(across)
{
	char job[64];
	int fd;
};

FIXTURE_VARIANT(across)
{
	int n, zc, mib;
};

FIXTURE_VARIANT_ADD(across, copy_2x2) { .n = 2, .zc = 0, .mib = 8, };
FIXTURE_VARIANT_ADD(across, zc_3x3) { .n = 3, .zc = 65536, .mib = 16, };

/*
 * Each writer's MiB: zero copy writes an eighth in make check, 2 MiB, still
 * 32 zero-copy sends of 64 KiB per writer (an RDMA Read between two rxe
 * guests moves about 0.3 MB/s: 16 MiB each way took 5 minutes there, a
 * quarter 80 s); make check-full (HPS_FULL) writes all.
 */
static size_t across_words(const FIXTURE_VARIANT(across) *v)
{
	return share_words(v->zc && !getenv("HPS_FULL") ? v->mib / 8 : v->mib);
}

FIXTURE_SETUP(across)
{
	self->fd = -1;
	signal(SIGPIPE, SIG_IGN);
}

FIXTURE_TEARDOWN(across)
{
	if (self->fd >= 0)
		close(self->fd);
}

static int across_connect(int port, int zc)
{
	struct sockaddr_in sin;
	int i, fd = -1;

	hps_sin(&sin, hps_env("HPS_PEER", "127.0.0.1"), port);
	for (i = 0; i < 100; i++) {
		fd = socket(AF_HPS, SOCK_STREAM, 0);
		set_int(fd, SOL_HPS, HPS_ZCOPY_THRESH, zc);
		if (!connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			return fd;
		close(fd);
		fd = -1;
		if (errno != ECONNREFUSED)
			break;
		usleep(100000);
	}
	return fd;
}

/* Writers here, readers on the peer. */
TEST_F_TIMEOUT(across, writers_here_readers_there, 600)
{
	struct share s = { .nw = variant->n, .words = across_words(variant),
			   .wmin = 1, .wmax = KB(256), .stall = 20 };
	unsigned long long hello = variant->n;
	int port = hps_rand_port();

	ASSERT_EQ(0, peer_start(self->job, sizeof(self->job), port, 'r',
				variant->n, variant->zc, s.words));
	self->fd = across_connect(port, variant->zc);
	ASSERT_LE(0, self->fd) TH_LOG("connect to the peer: %s", strerror(errno));
	ASSERT_EQ(sizeof(hello), send(self->fd, &hello, sizeof(hello), 0));
	s.wfd = self->fd;
	share_run(&s);
	EXPECT_EQ(0, s.errors) TH_LOG("%s", s.first);
	EXPECT_EQ(0, hps_peer_wait(self->job));
}

/* Writers on the peer, readers here. */
TEST_F_TIMEOUT(across, writers_there_readers_here, 600)
{
	struct share s = { .nr = variant->n, .words = across_words(variant),
			   .rmin = 1, .rmax = KB(256), .stall = 20 };
	int port = hps_rand_port();

	ASSERT_EQ(0, peer_start(self->job, sizeof(self->job), port, 'w',
				variant->n, variant->zc, s.words));
	self->fd = across_connect(port, variant->zc);
	ASSERT_LE(0, self->fd) TH_LOG("connect to the peer: %s", strerror(errno));
	s.rfd = self->fd;
	share_init(&s, variant->n);
	share_run(&s);
	share_complete(&s, variant->n);
	EXPECT_EQ(0, s.errors) TH_LOG("%s", s.first);
	EXPECT_EQ((long)(variant->n * s.words * WORD), (long)s.bytes);
	EXPECT_EQ(0, hps_peer_wait(self->job));
	share_free(&s);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--peer"))
		return peer_main(argc, argv);
	return test_harness_run(argc, argv);
}
