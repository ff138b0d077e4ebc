// SPDX-License-Identifier: GPL-2.0
/*
 * Keepalive parity with TCP: SO_KEEPALIVE, and TCP_KEEPIDLE,
 * TCP_KEEPINTVL, TCP_KEEPCNT and TCP_USER_TIMEOUT at SOL_TCP, per socket.
 *
 *  - every option sets and reads back, before and after connect(), and
 *    gives exactly what a TCP socket gives for the same calls (values,
 *    bad values, short and unreadable arguments);
 *  - the defaults come from net.hps.keepalive_ms and keepalive_probes,
 *    SO_KEEPALIVE starts on where keepalive_ms is not 0;
 *  - accepted sockets inherit the listener's options;
 *  - a change on an established connection takes effect at once (probes
 *    start; SO_KEEPALIVE off stops them) and a live peer is never given
 *    up on;
 *  - TCP_USER_TIMEOUT ends a writer whose peer stopped reading (no
 *    credits come back) with ETIMEDOUT within the timeout; without it the
 *    writer waits, and the data arrives intact once the peer reads; an
 *    idle connection whose last messages did not ask for their
 *    completion is not ended by it.
 *
 * A silent peer (one whose node is gone) is in hps_ka_peer (two nodes).
 *
 * hps-configs: 1:rxe
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "hps_util.h"

static long rd_sysctl(const char *name)
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

static int wr_sysctl(const char *name, long v)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/hps/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%ld\n", v);
	return fclose(f);
}


static int geti(int fd, int level, int opt)
{
	int v = -12345;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, level, opt, &v, &len))
		return -errno - 100000;
	return v;
}

static int seti(int fd, int level, int opt, int v)
{
	return setsockopt(fd, level, opt, &v, sizeof(v)) ? errno : 0;
}

static const int kaopts[] = {
	TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT, TCP_USER_TIMEOUT,
};

static const char *optname(int opt)
{
	switch (opt) {
	case TCP_KEEPIDLE: return "TCP_KEEPIDLE";
	case TCP_KEEPINTVL: return "TCP_KEEPINTVL";
	case TCP_KEEPCNT: return "TCP_KEEPCNT";
	default: return "TCP_USER_TIMEOUT";
	}
}

/*
 * Each option with good and bad values, a short optlen and an unreadable
 * optval: AF_HPS and TCP must return the same, and read back the same.
 */
static void compare_with_tcp(struct __test_metadata *_metadata, int hfd,
			     int tfd)
{
	static const int vals[] = {
		-2147483647 - 1, -1, 0, 1, 2, 7, 127, 128, 5000, 32767, 32768,
		2147483647,
	};
	void *unmapped = mmap(NULL, 4096, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t i, j;
	int v = 3;

	for (i = 0; i < sizeof(kaopts) / sizeof(kaopts[0]); i++) {
		int opt = kaopts[i];

		/* from the same value (the defaults differ: TCP's 7200 s) */
		EXPECT_EQ(0, seti(tfd, SOL_TCP, opt, 1));
		EXPECT_EQ(0, seti(hfd, SOL_TCP, opt, 1));
		for (j = 0; j < sizeof(vals) / sizeof(vals[0]); j++) {
			EXPECT_EQ(seti(tfd, SOL_TCP, opt, vals[j]),
				  seti(hfd, SOL_TCP, opt, vals[j]))
				TH_LOG("%s = %d", optname(opt), vals[j]);
			EXPECT_EQ(geti(tfd, SOL_TCP, opt),
				  geti(hfd, SOL_TCP, opt))
				TH_LOG("%s after %d", optname(opt), vals[j]);
		}
		EXPECT_EQ(-1, setsockopt(hfd, SOL_TCP, opt, &v, 2));
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(-1, setsockopt(hfd, SOL_TCP, opt, unmapped,
					 sizeof(int)));
		EXPECT_EQ(EFAULT, errno);
	}
	for (j = 0; j < 2; j++) {
		EXPECT_EQ(0, seti(hfd, SOL_SOCKET, SO_KEEPALIVE, j));
		EXPECT_EQ(j, geti(hfd, SOL_SOCKET, SO_KEEPALIVE));
	}
	munmap(unmapped, 4096);
}

TEST(options_set_and_read_back_as_tcp)
{
	int hfd = socket(AF_HPS, SOCK_STREAM, 0);
	int tfd = socket(AF_INET, SOCK_STREAM, 0);
	int cfd, afd;
	char b[5];

	ASSERT_GE(hfd, 0);
	ASSERT_GE(tfd, 0);
	/* unconnected */
	compare_with_tcp(_metadata, hfd, tfd);
	close(hfd);
	/* connected, both ends */
	ASSERT_EQ(0, hps_pair(&cfd, &afd));
	compare_with_tcp(_metadata, cfd, tfd);
	compare_with_tcp(_metadata, afd, tfd);
	/* still a working connection */
	ASSERT_EQ(5, send(cfd, "hello", 5, 0));
	ASSERT_EQ(5, recv(afd, b, 5, MSG_WAITALL));
	close(cfd);
	close(afd);
	close(tfd);
}

/* What a new socket reads for each option, sysctls as they are. */
static void expect_defaults(struct __test_metadata *_metadata, int fd,
			    int idle_s, int cnt, int on)
{
	EXPECT_EQ(idle_s, geti(fd, SOL_TCP, TCP_KEEPIDLE));
	EXPECT_EQ(idle_s, geti(fd, SOL_TCP, TCP_KEEPINTVL));
	EXPECT_EQ(cnt, geti(fd, SOL_TCP, TCP_KEEPCNT));
	EXPECT_EQ(0, geti(fd, SOL_TCP, TCP_USER_TIMEOUT));
	EXPECT_EQ(on, geti(fd, SOL_SOCKET, SO_KEEPALIVE));
}

TEST(defaults_follow_the_sysctls)
{
	long ms = rd_sysctl("keepalive_ms"), probes = rd_sysctl("keepalive_probes");
	struct sockaddr_in sin;
	int fd, cfd, afd, port, l;

	ASSERT_GE(ms, 0);
	fd = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	expect_defaults(_metadata, fd, (ms + 999) / 1000, probes, ms != 0);
	close(fd);

	ASSERT_EQ(0, wr_sysctl("keepalive_ms", 1500));	/* rounded up */
	ASSERT_EQ(0, wr_sysctl("keepalive_probes", 4));
	fd = socket(AF_HPS, SOCK_STREAM, 0);
	expect_defaults(_metadata, fd, 2, 4, 1);
	close(fd);

	/* keepalive_ms 0: SO_KEEPALIVE starts off, even on a connection */
	ASSERT_EQ(0, wr_sysctl("keepalive_ms", 0));
	fd = socket(AF_HPS, SOCK_STREAM, 0);
	expect_defaults(_metadata, fd, 10, 4, 0);
	close(fd);
	EXPECT_EQ(0, hps_pair(&cfd, &afd));
	EXPECT_EQ(0, geti(cfd, SOL_SOCKET, SO_KEEPALIVE));
	EXPECT_EQ(0, geti(afd, SOL_SOCKET, SO_KEEPALIVE));
	/* the connection took the sysctls at setup: changing them now... */
	ASSERT_EQ(0, wr_sysctl("keepalive_ms", 3000));
	ASSERT_EQ(0, wr_sysctl("keepalive_probes", 6));
	/* ... does not change it: the 10 s default of a switched-on one */
	EXPECT_EQ(10, geti(cfd, SOL_TCP, TCP_KEEPIDLE));
	EXPECT_EQ(4, geti(cfd, SOL_TCP, TCP_KEEPCNT));
	EXPECT_EQ(0, geti(cfd, SOL_SOCKET, SO_KEEPALIVE));
	/* a new socket does see them */
	fd = socket(AF_HPS, SOCK_STREAM, 0);
	expect_defaults(_metadata, fd, 3, 6, 1);
	close(fd);
	close(cfd);
	close(afd);
	/* an application's SO_KEEPALIVE is kept at connect */
	ASSERT_EQ(0, wr_sysctl("keepalive_ms", 0));
	l = hps_listener(&port, 4);
	ASSERT_GE(l, 0);
	fd = socket(AF_HPS, SOCK_STREAM, 0);
	EXPECT_EQ(0, seti(fd, SOL_SOCKET, SO_KEEPALIVE, 1));
	hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"), port);
	EXPECT_EQ(0, connect(fd, (struct sockaddr *)&sin, sizeof(sin)));
	EXPECT_EQ(1, geti(fd, SOL_SOCKET, SO_KEEPALIVE));
	afd = accept(l, NULL, NULL);
	EXPECT_EQ(0, geti(afd, SOL_SOCKET, SO_KEEPALIVE));
	close(afd);
	close(fd);
	close(l);
	ASSERT_EQ(0, wr_sysctl("keepalive_ms", ms));
	ASSERT_EQ(0, wr_sysctl("keepalive_probes", probes));
}

TEST(accepted_sockets_inherit)
{
	int port, l = hps_listener(&port, 4), cfd, afd;
	struct sockaddr_in sin;

	ASSERT_GE(l, 0);
	ASSERT_EQ(0, seti(l, SOL_TCP, TCP_KEEPIDLE, 5));
	ASSERT_EQ(0, seti(l, SOL_TCP, TCP_KEEPINTVL, 2));
	ASSERT_EQ(0, seti(l, SOL_TCP, TCP_KEEPCNT, 3));
	ASSERT_EQ(0, seti(l, SOL_TCP, TCP_USER_TIMEOUT, 1234));
	ASSERT_EQ(0, seti(l, SOL_SOCKET, SO_KEEPALIVE, 0));
	cfd = socket(AF_HPS, SOCK_STREAM, 0);
	hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"), port);
	ASSERT_EQ(0, connect(cfd, (struct sockaddr *)&sin, sizeof(sin)));
	afd = accept(l, NULL, NULL);
	ASSERT_GE(afd, 0);
	EXPECT_EQ(5, geti(afd, SOL_TCP, TCP_KEEPIDLE));
	EXPECT_EQ(2, geti(afd, SOL_TCP, TCP_KEEPINTVL));
	EXPECT_EQ(3, geti(afd, SOL_TCP, TCP_KEEPCNT));
	EXPECT_EQ(1234, geti(afd, SOL_TCP, TCP_USER_TIMEOUT));
	EXPECT_EQ(0, geti(afd, SOL_SOCKET, SO_KEEPALIVE));
	/* the connecting side has its own (the sysctl's) */
	EXPECT_EQ(0, geti(cfd, SOL_TCP, TCP_USER_TIMEOUT));
	close(cfd);
	close(afd);
	close(l);
}

/*
 * An idle connection probes at the sysctl's 10 s; TCP_KEEPIDLE and
 * TCP_KEEPINTVL of 1 s set now make the probes start at once and go on
 * every second; the live peer answers every one (TCP_KEEPCNT 2 does not
 * end it); SO_KEEPALIVE 0 stops them.
 */
TEST(change_after_connect_takes_effect)
{
	long p0, p1, p2, p3;
	int cfd, afd;
	char b[4];

	ASSERT_EQ(10000, rd_sysctl("keepalive_ms"));
	ASSERT_EQ(0, hps_pair(&cfd, &afd));
	p0 = hps_stat("keepalive_probes");
	usleep(500000);
	p1 = hps_stat("keepalive_probes");
	EXPECT_EQ(p0, p1) TH_LOG("probes before the 10 s were up");

	ASSERT_EQ(0, seti(cfd, SOL_TCP, TCP_KEEPIDLE, 1));
	ASSERT_EQ(0, seti(cfd, SOL_TCP, TCP_KEEPINTVL, 1));
	ASSERT_EQ(0, seti(cfd, SOL_TCP, TCP_KEEPCNT, 2));
	usleep(2500000);
	p2 = hps_stat("keepalive_probes");
	TH_LOG("%ld probes in 2.5 s at 1 s", p2 - p1);
	EXPECT_GE(p2 - p1, 1);
	EXPECT_LE(p2 - p1, 4);

	ASSERT_EQ(0, seti(cfd, SOL_SOCKET, SO_KEEPALIVE, 0));
	usleep(200000);
	p2 = hps_stat("keepalive_probes");
	usleep(1500000);
	p3 = hps_stat("keepalive_probes");
	EXPECT_EQ(p2, p3) TH_LOG("probes after SO_KEEPALIVE 0");

	/* the connection lived through it */
	EXPECT_EQ(0, geti(cfd, SOL_SOCKET, SO_ERROR));
	ASSERT_EQ(4, send(cfd, "ping", 4, 0));
	ASSERT_EQ(4, recv(afd, b, 4, MSG_WAITALL));
	ASSERT_EQ(4, send(afd, "pong", 4, 0));
	ASSERT_EQ(4, recv(cfd, b, 4, MSG_WAITALL));
	close(cfd);
	close(afd);
}

struct writer {
	int fd;
	long long bytes;
	int err;
	double t_last, t_end;	/* last send that returned bytes; the end */
};

static void *write_until_error(void *arg)
{
	struct writer *w = arg;
	static char buf[1 << 16];
	ssize_t r;

	for (;;) {
		r = send(w->fd, buf, sizeof(buf), MSG_NOSIGNAL);
		if (r <= 0)
			break;
		w->bytes += r;
		w->t_last = hps_now();
	}
	w->err = r < 0 ? errno : 0;
	w->t_end = hps_now();
	return NULL;
}

/*
 * The peer stops reading: its window fills and no credits come back. With
 * TCP_USER_TIMEOUT 1000 the writer fails with ETIMEDOUT about 1 s after
 * its data stopped moving (as TCP's with a zero window), the peer gets a
 * reset; user_timeouts counts it.
 */
TEST(user_timeout_ends_a_writer_nobody_reads)
{
	static char sink[1 << 16];
	struct writer w = { 0 };
	long ut0 = hps_stat("user_timeouts");
	pthread_t th;
	int cfd, afd;
	double t0, waited;
	ssize_t r;

	ASSERT_GE(ut0, 0);
	ASSERT_EQ(0, hps_pair(&cfd, &afd));
	ASSERT_EQ(0, seti(cfd, SOL_TCP, TCP_USER_TIMEOUT, 1000));
	w.fd = cfd;
	t0 = hps_now();
	ASSERT_EQ(0, pthread_create(&th, NULL, write_until_error, &w));
	while (!w.t_end && hps_now() - t0 < 20)
		usleep(50000);
	ASSERT_NE(0, w.t_end) TH_LOG("the writer still runs after 20 s");
	pthread_join(th, NULL);
	waited = w.t_end - t0;
	TH_LOG("%s after %lld bytes, %.2f s after the writer started",
	       strerror(w.err), w.bytes, waited);
	EXPECT_EQ(ETIMEDOUT, w.err);
	EXPECT_GT(w.bytes, 0);
	/*
	 * The window fills within a fraction of a second over loopback;
	 * then 1 s without progress: at least the timeout, not much more.
	 */
	EXPECT_GE(waited, 0.95);
	EXPECT_LT(waited, 4.0);
	EXPECT_EQ(ut0 + 1, hps_stat("user_timeouts"));
	/* the peer was reset */
	while ((r = recv(afd, sink, sizeof(sink), 0)) > 0)
		;
	EXPECT_EQ(-1, r);
	EXPECT_EQ(ECONNRESET, errno);
	close(cfd);
	close(afd);
}

/*
 * Without TCP_USER_TIMEOUT the writer waits for the reader as long as it
 * takes (SO_SNDTIMEO ends its wait, not the connection); once the peer
 * reads, every byte arrives.
 */
TEST(no_user_timeout_waits_for_the_reader)
{
	struct timeval tv = { .tv_sec = 1 };
	static char buf[1 << 16], sink[1 << 16];
	long long sent = 0, got = 0;
	int cfd, afd;
	ssize_t r;

	ASSERT_EQ(0, hps_pair(&cfd, &afd));
	ASSERT_EQ(0, setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv,
				sizeof(tv)));
	for (;;) {
		r = send(cfd, buf, sizeof(buf), MSG_NOSIGNAL);
		if (r <= 0)
			break;
		sent += r;
	}
	EXPECT_EQ(-1, r);
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, geti(cfd, SOL_SOCKET, SO_ERROR));
	shutdown(cfd, SHUT_WR);
	while ((r = recv(afd, sink, sizeof(sink), 0)) > 0)
		got += r;
	EXPECT_EQ(0, r);
	EXPECT_EQ(sent, got);
	close(cfd);
	close(afd);
}

/*
 * Small messages that did not ask for their completion (af_hps.rst, "Send
 * completions") are no wait either: a request-response exchange, then an
 * idle connection for three times TCP_USER_TIMEOUT, then another exchange,
 * by content. Without a completion asked for while idle, the sends looked
 * unacknowledged for the whole pause and the timeout ended the connection.
 */
TEST(user_timeout_spares_an_idle_exchange)
{
	int cfd, afd, one = 1, k, round;
	char req[64], got[64];

	ASSERT_EQ(0, hps_pair(&cfd, &afd));
	ASSERT_EQ(0, seti(cfd, SOL_TCP, TCP_USER_TIMEOUT, 300));
	ASSERT_EQ(0, seti(afd, SOL_TCP, TCP_USER_TIMEOUT, 300));
	ASSERT_EQ(0, setsockopt(cfd, SOL_TCP, TCP_NODELAY, &one, sizeof(one)));
	ASSERT_EQ(0, setsockopt(afd, SOL_TCP, TCP_NODELAY, &one, sizeof(one)));
	for (round = 0; round < 2; round++) {
		for (k = 0; k < 50; k++) {
			memset(req, 'a' + (k + round) % 26, sizeof(req));
			ASSERT_EQ(sizeof(req), send(cfd, req, sizeof(req), 0));
			ASSERT_EQ(sizeof(got), hps_read_all(afd, got, sizeof(got)));
			ASSERT_EQ(0, memcmp(req, got, sizeof(req)));
			ASSERT_EQ(sizeof(got), send(afd, got, sizeof(got), 0));
			ASSERT_EQ(sizeof(got), hps_read_all(cfd, got, sizeof(got)));
			ASSERT_EQ(0, memcmp(req, got, sizeof(req)));
		}
		if (!round)
			usleep(900000);
	}
	EXPECT_EQ(0, geti(cfd, SOL_SOCKET, SO_ERROR));
	EXPECT_EQ(0, geti(afd, SOL_SOCKET, SO_ERROR));
	close(cfd);
	close(afd);
}

/* A reading peer is progress: TCP_USER_TIMEOUT never fires on it. */
TEST(user_timeout_spares_a_live_stream)
{
	static char buf[1 << 16], sink[1 << 16];
	long long got = 0, total = 32LL << 20;
	int cfd, afd, i, st;
	ssize_t r;
	pid_t pid;

	ASSERT_EQ(0, hps_pair(&cfd, &afd));
	ASSERT_EQ(0, seti(cfd, SOL_TCP, TCP_USER_TIMEOUT, 1500));
	ASSERT_EQ(0, seti(cfd, SOL_TCP, TCP_KEEPIDLE, 1));
	ASSERT_EQ(0, seti(cfd, SOL_TCP, TCP_KEEPINTVL, 1));
	ASSERT_EQ(0, seti(cfd, SOL_TCP, TCP_KEEPCNT, 1));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(afd);
		for (i = 0; i < total / (long long)sizeof(buf); i++)
			if (hps_write_all(cfd, buf, sizeof(buf)) < 0)
				_exit(1);
		/* then idle past the timeouts, still a live peer */
		usleep(2500000);
		_exit(send(cfd, "x", 1, MSG_NOSIGNAL) == 1 ? 0 : 2);
	}
	while (got < total + 1 &&
	       (r = recv(afd, sink, sizeof(sink), 0)) > 0) {
		got += r;
		if (!(got % (8 << 20)))
			usleep(300000);	/* a slow reader is progress too */
	}
	EXPECT_EQ(total + 1, got);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	EXPECT_EQ(0, geti(cfd, SOL_SOCKET, SO_ERROR));
	close(cfd);
	close(afd);
}

TEST_HARNESS_MAIN
