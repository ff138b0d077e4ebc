// SPDX-License-Identifier: GPL-2.0
/*
 * A silent peer is detected within the bounds its socket's own options set
 * (hps_keepalive has the options themselves, on one node). Node 2's link
 * is taken away (hps-vm-link: its carrier, as a pulled cable) under a
 * connection to a server there, and given back afterwards:
 *
 *  - a writer streaming with TCP_USER_TIMEOUT 2000 fails with ETIMEDOUT
 *    about 2 s after its data stopped moving, well before the transport
 *    gives up (RoCE: 15 s; iWARP: TCP's retransmissions), over both
 *    transports;
 *  - an idle reader with TCP_KEEPIDLE 1, TCP_KEEPINTVL 1 and TCP_KEEPCNT 2
 *    (net.hps.keepalive_ms stays at its 10 s) fails with ETIMEDOUT within
 *    its 3 s of silence over RoCE, where an unanswered probe is silence.
 *    Over iWARP a probe completes once it left this host (a sign of life,
 *    protocol.rst), so there the same socket lives through a 5 s outage
 *    and TCP's retransmissions decide: the test checks that, and that the
 *    connection still works afterwards.
 *
 *   hps_ka_peer --serve PORT    the server (on node 2)
 *
 * It runs over RoCE only in make check (44 s over siw, of the suite's
 * budget); HPS_EVERYWHERE=1 (make check-full) runs the iWARP case too.
 *
 * hps-configs: 2:rxe
 * hps-nodes: 2 (not even in make check-full: it takes node 2's link away)
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>

#include "kselftest_harness.h"
#include "hps_util.h"

static void *serve_conn(void *arg)
{
	int fd = (int)(long)arg;
	static char sink[1 << 16];
	char kind;

	if (recv(fd, &kind, 1, MSG_WAITALL) != 1)
		return NULL;
	if (kind == 'S') {		/* sink */
		while (recv(fd, sink, sizeof(sink), 0) > 0)
			;
	} else if (kind == 'E') {	/* echo one byte at a time */
		while (recv(fd, &kind, 1, 0) == 1)
			if (send(fd, &kind, 1, MSG_NOSIGNAL) != 1)
				break;
	}
	close(fd);
	return NULL;
}

static int serve(int port)
{
	struct sockaddr_in sin;
	int l = socket(AF_HPS, SOCK_STREAM, 0), one = 1;

	hps_sin(&sin, hps_env("HPS_SELF", "0.0.0.0"), port);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(l, 8)) {
		perror("hps_ka_peer --serve");
		return 1;
	}
	for (;;) {
		int fd = accept(l, NULL, NULL);
		pthread_t t;

		if (fd >= 0)
			pthread_create(&t, NULL, serve_conn, (void *)(long)fd);
	}
	return 0;
}

static int seti(int fd, int level, int opt, int v)
{
	return setsockopt(fd, level, opt, &v, sizeof(v)) ? errno : 0;
}

static int is_siw(void)
{
	return !strcmp(hps_env("HPS_RDMA", "rxe"), "siw");
}

struct blocked {
	int fd;
	int recv;
	int pause, parked;	/* (the writer: __atomic) */
	long long bytes;
	double t_last, t_end;
	int err;
};

static void *run_blocked(void *arg)
{
	struct blocked *b = arg;
	static char buf[1 << 16];
	ssize_t r;

	for (;;) {
		if (__atomic_load_n(&b->pause, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&b->parked, 1, __ATOMIC_RELEASE);
			while (__atomic_load_n(&b->pause, __ATOMIC_ACQUIRE))
				usleep(1000);
			__atomic_store_n(&b->parked, 0, __ATOMIC_RELEASE);
		}
		r = b->recv ? recv(b->fd, buf, sizeof(buf), 0)
			    : send(b->fd, buf, sizeof(buf), MSG_NOSIGNAL);
		if (r <= 0)
			break;
		b->bytes += r;
		b->t_last = hps_now();
	}
	b->err = r < 0 ? errno : 0;
	b->t_end = hps_now();
	return NULL;
}

FIXTURE(peer) {
	char job[64];
	int port;
};

FIXTURE_SETUP(peer)
{
	char cmd[PATH_MAX + 128], exe[PATH_MAX];
	ssize_t n;
	FILE *f;

	ASSERT_EQ(0, strcmp(hps_env("HPS_NODES", "1"), "2"))
		TH_LOG("needs two nodes (hps-configs)");
	signal(SIGPIPE, SIG_IGN);
	self->port = hps_rand_port();
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_GT(n, 0);
	exe[n] = 0;
	snprintf(cmd, sizeof(cmd), "hps-vm-peer --bg %s --serve %d", exe,
		 self->port);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(self->job, sizeof(self->job), f));
	pclose(f);
	self->job[strcspn(self->job, "\n")] = 0;
}

FIXTURE_TEARDOWN(peer)
{
	if (system("hps-vm-link 2 up >/dev/null 2>&1"))
		TH_LOG("hps-vm-link 2 up failed");
	hps_peer_kill(self->job);
}

/* Start @b's thread on a new connection of @kind; 0 or -1. */
static int start(struct __test_metadata *_metadata, int port,
		 struct blocked *b, char kind, pthread_t *th)
{
	int i;

	/* (a link that just came back may need a moment: ARP) */
	for (i = 0; i < 40; i++) {
		b->fd = hps_connect_to(hps_env("HPS_PEER", "127.0.0.1"), port);
		if (b->fd >= 0)
			break;
		usleep(500000);
	}
	if (b->fd < 0) {
		TH_LOG("connect: %s", strerror(errno));
		return -1;
	}
	if (send(b->fd, &kind, 1, 0) != 1)
		return -1;
	return pthread_create(th, NULL, run_blocked, b) ? -1 : 0;
}

/* Wait up to @max s for @b to end; the time it ended after @t0, or -1. */
static double ended(struct blocked *b, double t0, double max)
{
	while (!b->t_end && hps_now() - t0 < max)
		usleep(50000);
	return b->t_end ? b->t_end - t0 : -1;
}

TEST_F_TIMEOUT(peer, user_timeout_ends_a_writer, 120)
{
	struct blocked b = { .fd = -1 };
	pthread_t th;
	double t0, gone;
	int queued = -1;

	ASSERT_EQ(0, start(_metadata, self->port, &b, 'S', &th));
	ASSERT_EQ(0, seti(b.fd, SOL_TCP, TCP_USER_TIMEOUT, 2000));
	sleep(1);
	ASSERT_EQ(0, b.t_end) TH_LOG("the writer ended early: %s",
				     strerror(b.err));
	ASSERT_GT(b.bytes, 0);

	/*
	 * The timeout counts from the sender's last progress, which on a
	 * starved host may lie a while before the link goes. So the writer
	 * pauses until all it sent has completed (SIOCOUTQ 0: nothing
	 * waits), the link goes, and then it writes again: its wait, and
	 * the 2 s, begin after t0.
	 */
	__atomic_store_n(&b.pause, 1, __ATOMIC_RELEASE);
	for (t0 = hps_now(); hps_now() - t0 < 20; usleep(10000))
		if (__atomic_load_n(&b.parked, __ATOMIC_ACQUIRE) &&
		    !ioctl(b.fd, SIOCOUTQ, &queued) && !queued)
			break;
	ASSERT_EQ(0, queued) TH_LOG("the writer's data did not drain in 20 s");
	ASSERT_EQ(0, b.t_end) TH_LOG("the writer ended while paused: %s",
				     strerror(b.err));
	ASSERT_EQ(0, system("hps-vm-link 2 down"));
	t0 = hps_now();
	__atomic_store_n(&b.pause, 0, __ATOMIC_RELEASE);
	gone = ended(&b, t0, 40);
	TH_LOG("writer: %s %.1f s after it wrote again, the link gone (%lld bytes; the last send returned %.1f s after)",
	       strerror(b.err), gone, b.bytes, b.t_last - t0);
	ASSERT_GE(gone, 0) TH_LOG("still blocked 40 s after the link went");
	pthread_join(th, NULL);
	EXPECT_EQ(ETIMEDOUT, b.err);
	/* 2 s after the data stopped: not before, and not the transport */
	EXPECT_GE(gone, 1.9);
	EXPECT_LT(gone, 2.0 + 5.0);
	close(b.fd);
}

TEST_F_TIMEOUT(peer, keepalive_ends_an_idle_reader, 120)
{
	struct blocked b = { .fd = -1, .recv = 1 };
	pthread_t th;
	double t0, t1, gone;
	char c = 'x';

	ASSERT_EQ(0, start(_metadata, self->port, &b, 'E', &th));
	ASSERT_EQ(0, seti(b.fd, SOL_TCP, TCP_KEEPIDLE, 1));
	ASSERT_EQ(0, seti(b.fd, SOL_TCP, TCP_KEEPINTVL, 1));
	ASSERT_EQ(0, seti(b.fd, SOL_TCP, TCP_KEEPCNT, 2));
	ASSERT_EQ(0, seti(b.fd, SOL_SOCKET, SO_KEEPALIVE, 1));
	/* alive: an echo, and the probes answered meanwhile */
	ASSERT_EQ(1, send(b.fd, &c, 1, 0));
	sleep(2);
	ASSERT_EQ(0, b.t_end) TH_LOG("the reader ended early: %s",
				     strerror(b.err));
	ASSERT_EQ(1, b.bytes);

	t0 = hps_now();
	ASSERT_EQ(0, system("hps-vm-link 2 down"));
	if (is_siw()) {
		/* iWARP: probes complete once sent; TCP decides */
		gone = ended(&b, t0, 5);
		EXPECT_LT(gone, 0) TH_LOG("ended: %s", strerror(b.err));
		ASSERT_EQ(0, system("hps-vm-link 2 up"));
		ASSERT_EQ(1, send(b.fd, &c, 1, MSG_NOSIGNAL));
		while (b.bytes < 2 && !b.t_end && hps_now() - t0 < 60)
			usleep(50000);
		EXPECT_EQ(2, b.bytes) TH_LOG("no echo after the link came back");
		shutdown(b.fd, SHUT_RDWR);
		pthread_join(th, NULL);
		close(b.fd);
		return;
	}
	/* (the link went between t0 and now: a slow host's request is slow) */
	t1 = hps_now();
	gone = ended(&b, t0, 40);
	TH_LOG("reader: %s %.1f s after the request to take the link, %.1f s after it returned",
	       strerror(b.err), gone, b.t_end - t1);
	ASSERT_GE(gone, 0) TH_LOG("still blocked 40 s after the link went");
	pthread_join(th, NULL);
	EXPECT_EQ(ETIMEDOUT, b.err);
	/* 3 s of silence (1 + 2 * 1), not the transport's 15 s */
	EXPECT_LT(b.t_end - t1, 3.0 + 5.0);
	close(b.fd);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--serve"))
		return serve(atoi(argv[2]));
	return test_harness_run(argc, argv);
}
