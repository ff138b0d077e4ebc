// SPDX-License-Identifier: GPL-2.0
/*
 * TCP fallback (Documentation/af_hps.rst, "TCP fallback"): an AF_HPS
 * socket whose connection cannot go over RDMA goes on over TCP on the same
 * descriptor when HPS_TCP_FALLBACK and net.hps.tcp_fallback allow it. The
 * servers here are plain TCP sockets (AF_INET), the data is checked by
 * content both ways, with one and with several threads on each end, and
 * the socket must behave as TCP: non-blocking connect(), SO_ERROR,
 * shutdown(), poll(), SO_LINGER, getpeername(). HPS_INFO, the fallback_*
 * counters and hps-ss must say what happened.
 *
 * hps-configs: 1:rxe 1:siw 2:rxe 2:siw
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <netinet/tcp.h>
#include <sys/wait.h>
#include <poll.h>
#include <fcntl.h>
#include <ifaddrs.h>

#include "kselftest_harness.h"
#include "hps_util.h"

#define MAGIC	"HPSFBTST"	/* what our clients send first */
#define FB_SYSCTL "/proc/sys/net/hps/tcp_fallback"

static const char *self_addr(void)
{
	return hps_env("HPS_SELF", "127.0.0.1");
}

static bool over_iwarp(void)
{
	return !strcmp(hps_env("HPS_RDMA", "rxe"), "siw");
}

static int fb_sysctl(void)
{
	return (int)hps_read_long(FB_SYSCTL);
}

static int set_fb_sysctl(int v)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%d", v);
	return hps_write_file(FB_SYSCTL, buf);
}

/* Bind @fd to @addr at a random free port and listen; @fd or -1 (closed). */
static int listen_at_random_port(int fd, const char *addr, int *port,
				 int backlog)
{
	struct sockaddr_in sin;
	int i;

	if (fd < 0)
		return -1;
	for (i = 0; i < 50; i++) {
		*port = hps_rand_port();
		hps_sin(&sin, addr, *port);
		if (!bind(fd, (struct sockaddr *)&sin, sizeof(sin)))
			break;
	}
	if (i == 50 || listen(fd, backlog)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A plain TCP listener on @addr at a random free port. */
static int tcp_listener(const char *addr, int *port)
{
	return listen_at_random_port(socket(AF_INET, SOCK_STREAM, 0), addr,
				     port, 16);
}

/*
 * The server: accept until a connection starts with MAGIC. Anything else
 * is closed at once, as a real server closes a request it does not
 * understand (over iWARP, the RDMA attempt's MPA request comes here
 * first when the port query gets no answer: see af_hps.rst).
 */
struct srv {
	int l, fd, others;
	pthread_t t;
};

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	struct timeval tv = { .tv_sec = 20 };
	char buf[8];

	s->fd = -1;
	for (;;) {
		int fd = accept(s->l, NULL, NULL);

		if (fd < 0)
			return NULL;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (recv(fd, buf, sizeof(buf), MSG_WAITALL) == sizeof(buf) &&
		    !memcmp(buf, MAGIC, sizeof(buf))) {
			tv.tv_sec = 0;
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				   sizeof(tv));
			s->fd = fd;
			return NULL;
		}
		s->others++;
		close(fd);
	}
}

static int srv_start(struct srv *s, const char *addr, int *port)
{
	memset(s, 0, sizeof(*s));
	s->l = tcp_listener(addr, port);
	if (s->l < 0)
		return -1;
	return pthread_create(&s->t, NULL, srv_main, s);
}

/* No client is coming: stop the server. */
static void srv_stop(struct srv *s)
{
	shutdown(s->l, SHUT_RDWR);	/* wakes accept() */
	pthread_join(s->t, NULL);
	close(s->l);
	if (s->fd >= 0)
		close(s->fd);
}

/* The server's connection (after the client sent MAGIC), or -1. */
static int srv_join(struct srv *s)
{
	pthread_join(s->t, NULL);
	close(s->l);
	return s->fd;
}

static int fb_socket(int on)
{
	int fd = socket(AF_HPS, SOCK_STREAM, 0);

	if (fd >= 0 && setsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &on,
				  sizeof(on))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int fb_connect(int fd, const char *addr, int port)
{
	struct sockaddr_in sin;

	hps_sin(&sin, addr, port);
	return connect(fd, (struct sockaddr *)&sin, sizeof(sin));
}

/*
 * A connected pair over the fallback: our AF_HPS client, which sends
 * MAGIC, and the plain TCP server's end (@s->others: what else the server
 * saw first). 0, or -1 with both ends -1.
 */
static int fb_pair(const char *addr, int *cfd, int *afd, struct srv *s)
{
	int port;

	*cfd = *afd = -1;
	if (srv_start(s, addr, &port))
		return -1;
	*cfd = fb_socket(1);
	if (*cfd < 0 || fb_connect(*cfd, addr, port) ||
	    send(*cfd, MAGIC, 8, 0) != 8) {
		fprintf(stderr, "fb_pair: connect: %s\n", strerror(errno));
		srv_stop(s);
		close(*cfd);
		*cfd = -1;
		return -1;
	}
	*afd = srv_join(s);
	return *afd < 0 ? -1 : 0;
}

static int info(int fd, struct hps_info *hi)
{
	socklen_t len = sizeof(*hi);

	memset(hi, 0, sizeof(*hi));
	return getsockopt(fd, SOL_HPS, HPS_INFO, hi, &len);
}

static long fb_count(void)
{
	static const char * const names[] = {
		"fallback_no_device", "fallback_refused", "fallback_rejected",
		"fallback_unreachable", "fallback_peer_error",
		"fallback_resource",
	};
	long n = 0;
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		n += hps_stat(names[i]);
	return n;
}

/*
 * Echo @n random bytes through the pair: the client writes, the server
 * sends back what it reads, the client checks it by content. 0 if equal.
 */
struct echo {
	int fd;
	size_t n;
};

static void *echo_main(void *arg)
{
	struct echo *e = arg;
	char buf[16384];
	ssize_t r;

	while ((r = recv(e->fd, buf, sizeof(buf), 0)) > 0)
		if (hps_write_all(e->fd, buf, r) != r)
			break;
	shutdown(e->fd, SHUT_WR);
	return NULL;
}

static int echo_check(int cfd, int afd, size_t n)
{
	unsigned char *out = malloc(n), *in = malloc(n);
	struct echo e = { .fd = afd, .n = n };
	pthread_t t;
	int ok;

	hps_fill_random(out, n);
	pthread_create(&t, NULL, echo_main, &e);
	ok = hps_write_all(cfd, out, n) == (ssize_t)n &&
	     !shutdown(cfd, SHUT_WR) &&
	     hps_read_all(cfd, in, n) == (ssize_t)n &&
	     recv(cfd, in, 1, 0) == 0 &&	/* then the server's FIN */
	     !memcmp(out, in, n);
	pthread_join(t, NULL);
	free(out);
	free(in);
	return ok ? 0 : -1;
}

TEST(option_and_sysctl)
{
	struct hps_info hi;
	socklen_t len = sizeof(int);
	int fd, v = -1, old = fb_sysctl();

	ASSERT_EQ(1, old);	/* the default: sockets that ask */
	fd = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, getsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &v, &len));
	EXPECT_EQ(0, v);
	EXPECT_EQ(sizeof(int), len);
	v = 1;
	EXPECT_EQ(0, setsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &v, sizeof(v)));
	v = -1;
	EXPECT_EQ(0, getsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &v, &len));
	EXPECT_EQ(1, v);
	v = 7;	/* any non-zero value turns it on, as for TCP_NODELAY */
	EXPECT_EQ(0, setsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &v, sizeof(v)));
	EXPECT_EQ(0, getsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &v, &len));
	EXPECT_EQ(1, v);
	EXPECT_EQ(-1, setsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &v, 2));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, setsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, NULL, 4));
	EXPECT_EQ(EFAULT, errno);
	len = 2;
	EXPECT_EQ(-1, getsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &v, &len));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, info(fd, &hi));
	EXPECT_EQ(HPS_TRANSPORT_RDMA, hi.hpsi_transport);
	EXPECT_EQ(HPS_FB_NONE, hi.hpsi_fallback);
	close(fd);

	/* 2: on by default; out of range refused */
	ASSERT_EQ(0, set_fb_sysctl(2));
	fd = socket(AF_HPS, SOCK_STREAM, 0);
	len = sizeof(int);
	EXPECT_EQ(0, getsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &v, &len));
	EXPECT_EQ(1, v);
	close(fd);
	EXPECT_EQ(EINVAL, set_fb_sysctl(3));
	EXPECT_EQ(EINVAL, set_fb_sysctl(-1));
	EXPECT_EQ(2, fb_sysctl());
	ASSERT_EQ(0, set_fb_sysctl(old));
}

/* An AF_HPS client, a plain TCP server: the content both ways, as TCP. */
TEST(plain_tcp_server)
{
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	struct hps_info hi;
	struct srv s;
	long before = fb_count();
	int port, cfd, afd;

	ASSERT_EQ(0, srv_start(&s, self_addr(), &port));
	cfd = fb_socket(1);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(0, fb_connect(cfd, self_addr(), port)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(8, send(cfd, MAGIC, 8, 0));
	afd = srv_join(&s);
	ASSERT_LE(0, afd);

	ASSERT_EQ(0, info(cfd, &hi));
	EXPECT_EQ(HPS_TRANSPORT_TCP, hi.hpsi_transport);
	EXPECT_EQ(1 /* TCP_ESTABLISHED */, hi.hpsi_state);
	/* over iWARP too: the port query found no listener (ICMP) */
	EXPECT_EQ(0, s.others);
	EXPECT_EQ(HPS_FB_REFUSED, hi.hpsi_fallback);
	EXPECT_EQ(before + 1, fb_count());
	ASSERT_EQ(0, getpeername(cfd, (struct sockaddr *)&peer, &plen));
	EXPECT_EQ(AF_INET, peer.sin_family);
	EXPECT_EQ(htons(port), peer.sin_port);

	EXPECT_EQ(0, echo_check(cfd, afd, 1 << 20));
	/* TCP's tcpi_bytes_acked and tcpi_bytes_received (FINs count) */
	ASSERT_EQ(0, info(cfd, &hi));
	EXPECT_LE(8 + (1 << 20), hi.hpsi_tx_bytes);
	EXPECT_LE(1 << 20, hi.hpsi_rx_bytes);
	EXPECT_GE((1 << 20) + 1, hi.hpsi_rx_bytes);
	close(cfd);
	close(afd);
}

/* Without the option the errors stay: nothing moves to TCP. */
TEST(required_rdma)
{
	long before = fb_count();
	struct srv srv;
	int port, fd, v;

	ASSERT_EQ(0, srv_start(&srv, self_addr(), &port));
	fd = fb_socket(0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, fb_connect(fd, self_addr(), port));
	EXPECT_NE(0, errno);
	EXPECT_EQ(before, fb_count());
	close(fd);

	/* net.hps.tcp_fallback = 0 overrides the option */
	ASSERT_EQ(0, set_fb_sysctl(0));
	fd = fb_socket(1);
	v = fb_connect(fd, self_addr(), port);
	EXPECT_EQ(-1, v);
	EXPECT_EQ(before, fb_count());
	close(fd);
	ASSERT_EQ(0, set_fb_sysctl(1));
	srv_stop(&srv);
	EXPECT_EQ(-1, srv.fd);	/* no connection went on over TCP */
}

/* Non-blocking: EINPROGRESS, POLLOUT, SO_ERROR 0, then as TCP, data. */
TEST(nonblocking_connect)
{
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	struct srv s;
	int port, cfd, afd, err = -1, fl;

	ASSERT_EQ(0, srv_start(&s, self_addr(), &port));
	cfd = fb_socket(1);
	fl = fcntl(cfd, F_GETFL);
	ASSERT_EQ(0, fcntl(cfd, F_SETFL, fl | O_NONBLOCK));
	ASSERT_EQ(-1, fb_connect(cfd, self_addr(), port));
	ASSERT_EQ(EINPROGRESS, errno);
	pfd = (struct pollfd){ .fd = cfd, .events = POLLOUT };
	ASSERT_EQ(1, poll(&pfd, 1, 30000));
	EXPECT_EQ(POLLOUT, pfd.revents & (POLLOUT | POLLERR | POLLHUP));
	ASSERT_EQ(0, getsockopt(cfd, SOL_SOCKET, SO_ERROR, &err, &len));
	EXPECT_EQ(0, err);
	/* as TCP: the next connect() reports the completion, then EISCONN */
	EXPECT_EQ(0, fb_connect(cfd, self_addr(), port));
	EXPECT_EQ(-1, fb_connect(cfd, self_addr(), port));
	EXPECT_EQ(EISCONN, errno);
	/* nothing to read yet: EAGAIN, as TCP */
	EXPECT_EQ(-1, recv(cfd, &err, 1, 0));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, fcntl(cfd, F_SETFL, fl));
	ASSERT_EQ(8, send(cfd, MAGIC, 8, 0));
	afd = srv_join(&s);
	ASSERT_LE(0, afd);
	EXPECT_EQ(0, echo_check(cfd, afd, 256 << 10));
	close(cfd);
	close(afd);
}

/*
 * Calls made while the connection is still being set up wait for it and
 * then go on over TCP, as TCP's wait for the handshake: a blocking send()
 * and recv() right after a non-blocking connect(), before the attempt over
 * RDMA has failed (it takes a round trip at least).
 */
struct rd {
	int fd;
	ssize_t r;
	char buf[8];
};

static void *rd_main(void *arg)
{
	struct rd *r = arg;

	r->r = recv(r->fd, r->buf, sizeof(r->buf), MSG_WAITALL);
	return NULL;
}

TEST(calls_blocked_during_connect)
{
	struct rd r = {};
	struct srv s;
	pthread_t t;
	int port, cfd, afd;

	ASSERT_EQ(0, srv_start(&s, self_addr(), &port));
	cfd = fb_socket(1);
	ASSERT_EQ(0, fcntl(cfd, F_SETFL, O_NONBLOCK));
	ASSERT_EQ(-1, fb_connect(cfd, self_addr(), port));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, fcntl(cfd, F_SETFL, 0));
	r.fd = cfd;
	ASSERT_EQ(0, pthread_create(&t, NULL, rd_main, &r));
	/* no MSG_NOSIGNAL: an EPIPE here would kill the test */
	EXPECT_EQ(8, send(cfd, MAGIC, 8, 0)) TH_LOG("%s", strerror(errno));
	afd = srv_join(&s);
	ASSERT_LE(0, afd);
	ASSERT_EQ(8, send(afd, "SRVHELLO", 8, 0));
	pthread_join(t, NULL);
	EXPECT_EQ(8, r.r);
	EXPECT_EQ(0, memcmp(r.buf, "SRVHELLO", 8));
	close(cfd);
	close(afd);
}

/* Nobody listens, over RDMA or TCP: TCP's ECONNREFUSED, both ways. */
TEST(nobody_listens)
{
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	long before = fb_count();
	int port, fd, l, err = 0;

	l = tcp_listener(self_addr(), &port);	/* a port surely free... */
	ASSERT_LE(0, l);
	close(l);				/* ...and now closed */
	fd = fb_socket(1);
	EXPECT_EQ(-1, fb_connect(fd, self_addr(), port));
	EXPECT_EQ(ECONNREFUSED, errno);
	EXPECT_EQ(before + 1, fb_count());
	close(fd);

	fd = fb_socket(1);
	ASSERT_EQ(0, fcntl(fd, F_SETFL, O_NONBLOCK));
	ASSERT_EQ(-1, fb_connect(fd, self_addr(), port));
	ASSERT_EQ(EINPROGRESS, errno);
	pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
	ASSERT_EQ(1, poll(&pfd, 1, 30000));
	EXPECT_TRUE(pfd.revents & POLLERR);
	ASSERT_EQ(0, getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len));
	EXPECT_EQ(ECONNREFUSED, err);
	close(fd);
}

/*
 * No RDMA device on the route: an address on lo (rdma_cm finds no device
 * for it). The fallback is immediate and the reason says so.
 */
TEST(no_rdma_device)
{
	const char *addr = "198.51.100.7";
	struct hps_info hi;
	struct srv s;
	double t0;
	int port, cfd, afd;

	if (system("ip addr add 198.51.100.7/32 dev lo 2>/dev/null"))
		TH_LOG("address already there");
	ASSERT_EQ(0, srv_start(&s, addr, &port));
	cfd = fb_socket(1);
	t0 = hps_now();
	ASSERT_EQ(0, fb_connect(cfd, addr, port)) TH_LOG("%s", strerror(errno));
	EXPECT_GT(2.0, hps_now() - t0);
	ASSERT_EQ(8, send(cfd, MAGIC, 8, 0));
	afd = srv_join(&s);
	ASSERT_LE(0, afd);
	EXPECT_EQ(0, s.others);	/* nothing reached the server but us */
	ASSERT_EQ(0, info(cfd, &hi));
	EXPECT_EQ(HPS_TRANSPORT_TCP, hi.hpsi_transport);
	EXPECT_EQ(HPS_FB_NO_DEVICE, hi.hpsi_fallback);
	EXPECT_EQ(0, echo_check(cfd, afd, 64 << 10));
	close(cfd);
	close(afd);
	ASSERT_EQ(0, system("ip addr del 198.51.100.7/32 dev lo"));
}

/* With an AF_HPS listener there the connection is RDMA, option or not. */
TEST(hps_listener_stays_rdma)
{
	struct hps_info hi;
	long before = fb_count();
	int port, l, cfd, afd;
	char buf[8];

	l = hps_listener(&port, 4);
	ASSERT_LE(0, l);
	cfd = fb_socket(1);
	ASSERT_EQ(0, fb_connect(cfd, self_addr(), port));
	afd = accept(l, NULL, NULL);
	ASSERT_LE(0, afd);
	ASSERT_EQ(0, info(cfd, &hi));
	EXPECT_EQ(HPS_TRANSPORT_RDMA, hi.hpsi_transport);
	EXPECT_EQ(HPS_FB_NONE, hi.hpsi_fallback);
	EXPECT_NE(0, hi.hpsi_version);
	EXPECT_EQ(before, fb_count());
	ASSERT_EQ(8, send(cfd, MAGIC, 8, 0));
	ASSERT_EQ(8, recv(afd, buf, 8, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(buf, MAGIC, 8));
	close(cfd);
	close(afd);
	close(l);
}

/*
 * Several writers and several readers on each end at once, both ways. TCP
 * may split any write or read anywhere, so each writer writes its own
 * byte value and the readers count them: nothing lost, duplicated or
 * foreign, byte for byte.
 */
#define NT	3
#define PER	(768 << 10)

struct duplex {
	int fd;
	int id;
	_Atomic long *count;	/* [256] */
	_Atomic long *bad;
	_Atomic int *writers_left;
};

static void *dx_writer(void *arg)
{
	struct duplex *d = arg;
	unsigned char buf[9000];
	unsigned long long rng = 0x9e3779b97f4a7c15ULL * (d->id + 1);
	long left = PER;

	memset(buf, 0x40 + d->id, sizeof(buf));
	while (left > 0) {
		size_t n;
		ssize_t r;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		n = 1 + rng % sizeof(buf);
		if ((long)n > left)
			n = left;
		r = send(d->fd, buf, n, MSG_NOSIGNAL);
		if (r <= 0) {
			atomic_fetch_add(d->bad, 1);
			break;
		}
		left -= r;
	}
	if (atomic_fetch_sub(d->writers_left, 1) == 1)
		shutdown(d->fd, SHUT_WR);
	return NULL;
}

static void *dx_reader(void *arg)
{
	struct duplex *d = arg;
	unsigned char buf[7000];
	ssize_t r, i;

	while ((r = recv(d->fd, buf, 1 + d->id * 2500, 0)) > 0)
		for (i = 0; i < r; i++)
			atomic_fetch_add(&d->count[buf[i]], 1);
	if (r < 0)
		atomic_fetch_add(d->bad, 1);
	return NULL;
}

static int duplex_run(int cfd, int afd)
{
	static _Atomic long cnt[2][256];
	_Atomic long bad = 0;
	_Atomic int left[2] = { NT, NT };
	struct duplex d[2][2 * NT];
	pthread_t t[2][2 * NT];
	int side, i, ok = 1;

	memset(cnt, 0, sizeof(cnt));
	for (side = 0; side < 2; side++)
		for (i = 0; i < 2 * NT; i++) {
			d[side][i] = (struct duplex){
				.fd = side ? afd : cfd, .id = i % NT,
				.count = cnt[side], .bad = &bad,
				.writers_left = &left[side],
			};
			pthread_create(&t[side][i], NULL,
				       i < NT ? dx_writer : dx_reader,
				       &d[side][i]);
		}
	for (side = 0; side < 2; side++)
		for (i = 0; i < 2 * NT; i++)
			pthread_join(t[side][i], NULL);
	if (bad)
		return 0;
	for (side = 0; side < 2; side++)
		for (i = 0; i < 256; i++)
			if (cnt[side][i] != (i >= 0x40 && i < 0x40 + NT ?
					     PER : 0))
				ok = 0;
	return ok;
}

/* a fixture only for the timeout */
FIXTURE(slow) {};
FIXTURE_SETUP(slow) {}
FIXTURE_TEARDOWN(slow) {}

TEST_F_TIMEOUT(slow, several_writers_and_readers, 300)
{
	struct srv s;
	int cfd, afd;

	ASSERT_EQ(0, fb_pair(self_addr(), &cfd, &afd, &s));
	EXPECT_TRUE(duplex_run(cfd, afd));
	close(cfd);
	close(afd);
}

/*
 * Socket options set after the fallback reach the TCP connection:
 * SO_RCVTIMEO, TCP_NODELAY, and SO_LINGER 0, which resets it.
 */
TEST(linger_zero_resets)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct timeval tv = { .tv_usec = 200000 };
	double t0;
	struct srv s;
	int cfd, afd, one = 1, v = 0;
	socklen_t len = sizeof(v);
	char c;

	ASSERT_EQ(0, fb_pair(self_addr(), &cfd, &afd, &s));
	/* SOL_TCP goes to TCP itself */
	EXPECT_EQ(0, setsockopt(cfd, SOL_TCP, TCP_NODELAY, &one, sizeof(one)));
	EXPECT_EQ(0, getsockopt(cfd, SOL_TCP, TCP_NODELAY, &v, &len));
	EXPECT_EQ(1, v);
	/* SOL_SOCKET after the fallback: the next call has it */
	ASSERT_EQ(0, setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	t0 = hps_now();
	EXPECT_EQ(-1, recv(cfd, &c, 1, 0));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_LT(0.15, hps_now() - t0);
	EXPECT_GT(10.0, hps_now() - t0);
	ASSERT_EQ(0, setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	close(cfd);
	EXPECT_EQ(-1, recv(afd, &c, 1, 0));
	EXPECT_EQ(ECONNRESET, errno);
	close(afd);
}

/* hps-ss shows the socket and why it is TCP. */
TEST(hps_ss_shows_it)
{
	char exe[PATH_MAX], cmd[PATH_MAX + 64], line[512];
	struct srv s;
	int cfd, afd, found = 0;
	FILE *f;

	ASSERT_EQ(0, hps_self_exe(exe));
	*strrchr(exe, '/') = 0;
	ASSERT_EQ(0, fb_pair(self_addr(), &cfd, &afd, &s));
	snprintf(cmd, sizeof(cmd), "%s/../tools/hps-ss -i", exe);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "tcp fallback:"))
			found++;
	pclose(f);
	EXPECT_EQ(1, found);
	close(cfd);
	close(afd);
}

/*
 * Two nodes (or this one): net.hps.tcp_fallback = 2 turns it on for every
 * socket, so an unmodified AF_HPS program (tools/hps_xfer) reaches a TCP
 * server on the peer; hps_xfer checks the echo by content.
 */
TEST_F_TIMEOUT(slow, unmodified_client_to_peer_tcp_server, 120)
{
	char job[64], cmd[PATH_MAX + 256], exe[PATH_MAX];
	long before = fb_count();
	int port = hps_rand_port(), rc;

	ASSERT_EQ(0, hps_self_exe(exe));
	*strrchr(exe, '/') = 0;
	/*
	 * --count 0: serve every connection (over iWARP, one whose port
	 * query gets no answer sends the RDMA attempt's MPA request here
	 * first: af_hps.rst, Limitations).
	 */
	snprintf(cmd, sizeof(cmd),
		 "sh -c 'exec %s/../tools/hps_xfer --transport tcp -l $HPS_SELF %d --echo --count 0'",
		 exe, port);
	ASSERT_EQ(0, hps_peer_bg(job, sizeof(job), cmd));
	ASSERT_EQ(0, set_fb_sysctl(2));
	snprintf(cmd, sizeof(cmd),
		 "for i in $(seq 50); do %s/../tools/hps_xfer -c %s %d -n 4000000 --echo && exit 0; sleep 0.2; done; exit 1",
		 exe, hps_env("HPS_PEER", "127.0.0.1"), port);
	rc = system(cmd);
	ASSERT_EQ(0, set_fb_sysctl(1));
	EXPECT_EQ(0, rc);
	EXPECT_LE(before + 1, fb_count());
	hps_peer_kill(job);
}

/*
 * Connect after connect to a plain TCP server on the peer: every one falls
 * back as refused, at once. Over iWARP the port query's port unreachable
 * says so; the peer sends those to us at a limited rate (a burst of 6,
 * then one a second: net.ipv4.icmp_ratelimit), so the refusal is
 * remembered for 2 s, and no connect waits for its query to give up
 * (portq_timeouts) and sends its MPA request to the server (peer_error).
 */
TEST_F_TIMEOUT(slow, refused_again_and_again, 120)
{
	char job[64], cmd[PATH_MAX + 256], exe[PATH_MAX], buf[8];
	const char *peer = hps_env("HPS_PEER", "127.0.0.1");
	long lost, f0;
	struct hps_info hi;
	int port = hps_rand_port(), fd, i;
	double t0, worst = 0;

	ASSERT_EQ(0, hps_self_exe(exe));
	*strrchr(exe, '/') = 0;
	snprintf(cmd, sizeof(cmd),
		 "sh -c 'exec %s/../tools/hps_xfer --transport tcp -l $HPS_SELF %d --echo --count 0'",
		 exe, port);
	ASSERT_EQ(0, hps_peer_bg(job, sizeof(job), cmd));
	snprintf(cmd, sizeof(cmd),
		 "hps-vm-peer hps-vm-wait-listen --tcp %d 60", port);
	ASSERT_EQ(0, system(cmd));
	lost = hps_stat("portq_timeouts");
	f0 = hps_stat("fallback_refused");
	for (i = 0; i < 20; i++) {
		fd = fb_socket(1);
		ASSERT_LE(0, fd);
		t0 = hps_now();
		ASSERT_EQ(0, fb_connect(fd, peer, port)) {
			TH_LOG("connect %d: %s", i, strerror(errno));
		}
		if (hps_now() - t0 > worst)
			worst = hps_now() - t0;
		ASSERT_EQ(0, info(fd, &hi));
		EXPECT_EQ(HPS_TRANSPORT_TCP, hi.hpsi_transport);
		EXPECT_EQ(HPS_FB_REFUSED, hi.hpsi_fallback) {
			TH_LOG("connect %d: reason %u", i, hi.hpsi_fallback);
		}
		ASSERT_EQ(8, send(fd, MAGIC, 8, 0));
		ASSERT_EQ(8, recv(fd, buf, 8, MSG_WAITALL));
		EXPECT_EQ(0, memcmp(buf, MAGIC, 8));
		close(fd);
	}
	TH_LOG("20 connects, the slowest %.0f ms", worst * 1e3);
	EXPECT_EQ(lost, hps_stat("portq_timeouts"));
	EXPECT_EQ(f0 + 20, hps_stat("fallback_refused"));
	hps_peer_kill(job);
}

/*
 * The listener side: an AF_HPS listener that may fall back listens over TCP
 * on its port too and hands plain TCP clients out through accept(), as
 * sockets that fell back (HPS_FB_TCP_CLIENT). Over iWARP, whose driver
 * would hold the port in the TCP stack, the listener's RDMA side listens on
 * another port, and AF_HPS clients find it with the port query
 * (protocol.rst): getsockname() and the accepted sockets' local addresses
 * still say the listener's port.
 */
/* @on: HPS_TCP_FALLBACK's value, or -1 to leave the namespace's default */
static int fb_listener(int on, int *port, int backlog)
{
	int fd = on < 0 ? socket(AF_HPS, SOCK_STREAM, 0) : fb_socket(on);

	return listen_at_random_port(fd, self_addr(), port, backlog);
}

static int tcp_client(int port)
{
	struct sockaddr_in sin;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	hps_sin(&sin, self_addr(), port);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int transport_of(int fd)
{
	struct hps_info hi;

	return info(fd, &hi) ? -1 : hi.hpsi_transport;
}

TEST(tcp_client_to_listener)
{
	long tcpc = hps_stat("fallback_tcp_client");
	long errs = hps_stat("fallback_errors");
	struct sockaddr_in cname, aname;
	socklen_t clen = sizeof(cname), alen = sizeof(aname);
	socklen_t dlen = sizeof(int);
	struct hps_info hi;
	int port, l, cfd, afd, dom = 0;
	char buf[8];

	l = fb_listener(1, &port, 4);
	ASSERT_LE(0, l);
	EXPECT_EQ(HPS_TRANSPORT_RDMA_TCP, transport_of(l));
	EXPECT_EQ(errs, hps_stat("fallback_errors"));
	cfd = tcp_client(port);
	ASSERT_LE(0, cfd) TH_LOG("connect: %s", strerror(errno));
	afd = accept(l, (struct sockaddr *)&aname, &alen);
	ASSERT_LE(0, afd) TH_LOG("accept: %s", strerror(errno));
	ASSERT_EQ(0, getsockname(cfd, (struct sockaddr *)&cname, &clen));
	EXPECT_EQ(0, memcmp(&cname, &aname, sizeof(cname)));
	ASSERT_EQ(0, getsockopt(afd, SOL_SOCKET, SO_DOMAIN, &dom, &dlen));
	EXPECT_EQ(AF_HPS, dom);
	ASSERT_EQ(0, info(afd, &hi));
	EXPECT_EQ(HPS_TRANSPORT_TCP, hi.hpsi_transport);
	EXPECT_EQ(HPS_FB_TCP_CLIENT, hi.hpsi_fallback);
	EXPECT_EQ(1 /* TCP_ESTABLISHED */, hi.hpsi_state);
	EXPECT_EQ(tcpc + 1, hps_stat("fallback_tcp_client"));
	/* the client sends first here; the echo goes the other way too */
	ASSERT_EQ(8, send(cfd, MAGIC, 8, 0));
	ASSERT_EQ(8, recv(afd, buf, 8, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(buf, MAGIC, 8));
	EXPECT_EQ(0, echo_check(cfd, afd, 1 << 20));
	close(cfd);
	close(afd);
	close(l);
}

/*
 * The iWARP port query (protocol.rst): over iWARP a listener answers a
 * query of its port, over UDP on that port, with the port its RDMA side
 * listens on: another one for a listener with a TCP side, its own for an
 * RDMA-only one. What is not a well-formed query of that port gets no
 * answer. AF_HPS clients connect over RDMA all the same, and see the port
 * they asked for on both ends. Over RoCE nobody answers (port
 * unreachable).
 */
static int udp_to(int port)
{
	struct timeval tv = { .tv_usec = 300000 };
	struct sockaddr_in sin;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	hps_sin(&sin, self_addr(), port);
	if (fd >= 0 &&
	    (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	     connect(fd, (struct sockaddr *)&sin, sizeof(sin)))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Bind UDP socket @fd to @addr at a random free port. */
static int bind_udp(int fd, struct in_addr addr, int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = addr };
	int i;

	for (i = 0; i < 50; i++) {
		*port = hps_rand_port();
		sin.sin_port = htons(*port);
		if (!bind(fd, (struct sockaddr *)&sin, sizeof(sin)))
			return 0;
	}
	return -1;
}

/* struct hps_portq, in network order */
static void portq_fill(unsigned char *q, int version, int type, int port,
		       unsigned int nonce, int rdma_port)
{
	memset(q, 0, 16);
	memcpy(q, "HPPQ", 4);
	q[4] = version;
	q[5] = type;
	q[6] = port >> 8;
	q[7] = port & 0xff;
	q[8] = nonce >> 24;
	q[9] = nonce >> 16;
	q[10] = nonce >> 8;
	q[11] = nonce;
	q[12] = rdma_port >> 8;
	q[13] = rdma_port & 0xff;
}

TEST(port_query)
{
	long answers = hps_stat("portq_answers");
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	unsigned char q[40], a[40];
	struct hps_info hi;
	int port, l, u, cfd, afd, version, rport, i;

	l = fb_listener(1, &port, 4);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, getsockname(l, (struct sockaddr *)&sin, &slen));
	EXPECT_EQ(htons(port), sin.sin_port);
	/* an AF_HPS client: over RDMA, the listener's port on both ends */
	cfd = hps_connect_to(self_addr(), port);
	ASSERT_LE(0, cfd) TH_LOG("connect: %s", strerror(errno));
	afd = accept(l, NULL, NULL);
	ASSERT_LE(0, afd);
	EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(cfd));
	EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(afd));
	ASSERT_EQ(0, getsockname(afd, (struct sockaddr *)&sin, &slen));
	EXPECT_EQ(htons(port), sin.sin_port);
	ASSERT_EQ(0, getpeername(cfd, (struct sockaddr *)&sin, &slen));
	EXPECT_EQ(htons(port), sin.sin_port);
	EXPECT_EQ(0, echo_check(cfd, afd, 1 << 16));
	ASSERT_EQ(0, info(cfd, &hi));
	version = hi.hpsi_version;
	EXPECT_EQ(over_iwarp() ? answers + 1 : answers,
		  hps_stat("portq_answers"));
	close(afd);
	close(cfd);

	u = udp_to(port);
	ASSERT_LE(0, u);
	if (!over_iwarp()) {
		portq_fill(q, version, 1, port, 0x5a5a0001, 0);
		ASSERT_EQ(16, send(u, q, 16, 0));
		EXPECT_EQ(-1, recv(u, a, sizeof(a), 0));
		EXPECT_EQ(ECONNREFUSED, errno);
		close(u);
		close(l);
		return;
	}
	/* none of these is answered */
	portq_fill(q, version, 1, port, 7, 0);
	ASSERT_EQ(15, send(u, q, 15, 0));		/* short */
	ASSERT_EQ(17, send(u, q, 17, 0));		/* long */
	q[0] ^= 1;
	ASSERT_EQ(16, send(u, q, 16, 0));		/* magic */
	portq_fill(q, version + 1, 1, port, 7, 0);
	ASSERT_EQ(16, send(u, q, 16, 0));		/* version */
	portq_fill(q, version, 2, port, 7, 0);
	ASSERT_EQ(16, send(u, q, 16, 0));		/* an answer */
	portq_fill(q, version, 1, port ^ 1, 7, 0);
	ASSERT_EQ(16, send(u, q, 16, 0));		/* another port */
	portq_fill(q, version, 1, port, 7, 9);
	ASSERT_EQ(16, send(u, q, 16, 0));		/* rdma_port set */
	portq_fill(q, version, 1, port, 7, 0);
	q[15] = 1;
	ASSERT_EQ(16, send(u, q, 16, 0));		/* reserved set */
	/* this one is */
	portq_fill(q, version, 1, port, 0x5a5a0001, 0);
	ASSERT_EQ(16, send(u, q, 16, 0));
	ASSERT_EQ(16, recv(u, a, sizeof(a), 0));
	EXPECT_EQ(0, memcmp(a, q, 5));			/* magic, version */
	EXPECT_EQ(2, a[5]);				/* an answer */
	EXPECT_EQ(0, memcmp(a + 6, q + 6, 6));		/* port, nonce */
	rport = a[12] << 8 | a[13];
	EXPECT_NE(0, rport);
	EXPECT_NE(port, rport);				/* moved */
	EXPECT_EQ(0, a[14] | a[15]);
	EXPECT_EQ(-1, recv(u, a, sizeof(a), 0));	/* only that one */
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(answers + 2, hps_stat("portq_answers"));
	close(u);
	close(l);

	/* an RDMA-only listener answers its own port */
	l = fb_listener(0, &port, 4);
	ASSERT_LE(0, l);
	u = udp_to(port);
	ASSERT_LE(0, u);
	for (i = 0; i < 2; i++) {	/* the same nonce twice: two answers */
		portq_fill(q, version, 1, port, 0x5a5a0002, 0);
		ASSERT_EQ(16, send(u, q, 16, 0));
		ASSERT_EQ(16, recv(u, a, sizeof(a), 0));
		EXPECT_EQ(port, a[12] << 8 | a[13]);
	}
	/* a shut listener answers no more: port unreachable at once */
	ASSERT_EQ(0, shutdown(l, SHUT_RD));
	ASSERT_EQ(16, send(u, q, 16, 0));
	EXPECT_EQ(-1, recv(u, a, sizeof(a), 0));
	EXPECT_EQ(ECONNREFUSED, errno);
	close(u);
	close(l);
}

/*
 * One query, at most one answer on the network: a listener on every
 * address answers a query sent to its own address, not one sent to the
 * subnet's broadcast address. A plain UDP socket bound to that address,
 * which gets the broadcast, shows that it arrives. Over RoCE neither is
 * answered.
 */
static int subnet_broadcast(struct in_addr *brd)
{
	struct ifaddrs *ifa, *i;
	struct in_addr self;
	int ret = -1;

	if (inet_pton(AF_INET, self_addr(), &self) != 1 || getifaddrs(&ifa))
		return -1;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    !i->ifa_netmask ||
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr !=
		    self.s_addr)
			continue;
		/* the kernel's broadcast route, set or not as ifa_broadaddr */
		brd->s_addr = self.s_addr |
			~((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
		ret = brd->s_addr == self.s_addr ? -1 : 0;
		break;
	}
	freeifaddrs(ifa);
	return ret;
}

TEST(port_query_unicast_only)
{
	long answers = hps_stat("portq_answers");
	struct timeval tv = { .tv_usec = 300000 };
	struct sockaddr_in brd, self, from;
	socklen_t flen = sizeof(from);
	unsigned char q[16], a[40];
	int port, cport, l, u, c, cfd, afd, one = 1;
	struct hps_info hi;

	l = listen_at_random_port(fb_socket(1), "0.0.0.0", &port, 4);
	ASSERT_LE(0, l);
	/* the protocol version, from a connection to it */
	cfd = hps_connect_to(self_addr(), port);
	ASSERT_LE(0, cfd) TH_LOG("connect: %s", strerror(errno));
	afd = accept(l, NULL, NULL);
	ASSERT_LE(0, afd);
	EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(cfd));
	ASSERT_EQ(0, info(cfd, &hi));
	close(afd);
	close(cfd);
	answers = hps_stat("portq_answers");

	hps_sin(&brd, "0.0.0.0", port);
	ASSERT_EQ(0, subnet_broadcast(&brd.sin_addr));
	hps_sin(&self, self_addr(), port);
	u = socket(AF_INET, SOCK_DGRAM, 0);
	ASSERT_LE(0, u);
	ASSERT_EQ(0, setsockopt(u, SOL_SOCKET, SO_BROADCAST, &one,
				sizeof(one)));
	ASSERT_EQ(0, setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	/*
	 * The control: it arrives as a broadcast (a socket bound to the
	 * broadcast address gets it, one bound to ours would not).
	 */
	c = socket(AF_INET, SOCK_DGRAM, 0);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	ASSERT_LE(0, bind_udp(c, brd.sin_addr, &cport));
	brd.sin_port = htons(cport);
	portq_fill(q, hi.hpsi_version, 1, port, 0x5a5a0003, 0);
	ASSERT_EQ(16, sendto(u, q, 16, 0, (struct sockaddr *)&brd,
			     sizeof(brd)));
	EXPECT_EQ(16, recv(c, a, sizeof(a), 0));
	close(c);
	/* the query to the broadcast address, then to ours */
	brd.sin_port = htons(port);
	ASSERT_EQ(16, sendto(u, q, 16, 0, (struct sockaddr *)&brd,
			     sizeof(brd)));
	portq_fill(q, hi.hpsi_version, 1, port, 0x5a5a0004, 0);
	ASSERT_EQ(16, sendto(u, q, 16, 0, (struct sockaddr *)&self,
			     sizeof(self)));
	if (over_iwarp()) {
		ASSERT_EQ(16, recvfrom(u, a, sizeof(a), 0,
				       (struct sockaddr *)&from, &flen));
		EXPECT_EQ(self.sin_addr.s_addr, from.sin_addr.s_addr);
		EXPECT_EQ(self.sin_port, from.sin_port);
		EXPECT_EQ(0, memcmp(a + 6, q + 6, 6));	/* port, our nonce */
		EXPECT_EQ(answers + 1, hps_stat("portq_answers"));
	}
	EXPECT_EQ(-1, recv(u, a, sizeof(a), 0));	/* no other */
	EXPECT_EQ(EAGAIN, errno);
	close(u);
	close(l);
}

/*
 * Over iWARP a connect() waits for the port query's outcome before its
 * route. An answer that comes late (the test build's PORTQ_ANSWER point:
 * the listener answers 150 ms late, once, after the client's second try)
 * is taken: the client connects to the answer's port, over RDMA, with no
 * timeout. A client closed at any moment of its wait sends nothing to the
 * listener (neither over RDMA nor to its TCP side). Over RoCE nobody asks
 * (the point stays armed) and nobody waits.
 */
#define INJ_PORTQ_ANSWER	8	/* enum hps_inject_point */
#define INJ_CONNECT_DONE	9
#define INJ_RESTART		10
#define INJ_POINT	"/sys/module/af_hps/parameters/inject_point"

TEST(port_query_answer_late)
{
	static const int wait_us[] = { 0, 1000, 3000, 10000, 30000, 100000 };
	long lost = hps_stat("portq_timeouts");
	long tcpc = hps_stat("fallback_tcp_client");
	struct pollfd pfd;
	int port, l, cfd, afd, i;

	if (access(INJ_POINT, W_OK))
		SKIP(return, "not a test build of af_hps.ko (make vm-modules)");
	l = fb_listener(1, &port, 16);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, hps_inject_param("inject_ms", 150));
	ASSERT_EQ(0, hps_inject_param("inject_point", INJ_PORTQ_ANSWER));
	cfd = hps_connect_to(self_addr(), port);
	ASSERT_LE(0, cfd) {
		TH_LOG("connect: %s", strerror(errno));
		hps_inject_param("inject_point", 0);
	}
	afd = accept(l, NULL, NULL);
	ASSERT_LE(0, afd);
	EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(cfd));
	EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(afd));
	EXPECT_EQ(0, echo_check(cfd, afd, 1 << 16));
	/* the answer was late: reached over iWARP only */
	EXPECT_EQ(over_iwarp() ? 0 : INJ_PORTQ_ANSWER,
		  hps_read_long(INJ_POINT));
	EXPECT_EQ(lost, hps_stat("portq_timeouts"));
	close(afd);
	close(cfd);
	if (!over_iwarp()) {	/* no wait: the rest is iWARP's */
		hps_inject_param("inject_point", 0);
		close(l);
		return;
	}

	/*
	 * Closed while it waits, at several moments of its setup; bound, so
	 * that it asks, not taking the answer remembered above.
	 */
	for (i = 0; i < (int)ARRAY_SIZE(wait_us); i++) {
		struct sockaddr_in sin;

		ASSERT_EQ(0, hps_inject_param("inject_point",
					      INJ_PORTQ_ANSWER));
		cfd = fb_socket(1);
		ASSERT_LE(0, cfd);
		hps_sin(&sin, self_addr(), 0);
		ASSERT_EQ(0, bind(cfd, (struct sockaddr *)&sin, sizeof(sin)));
		ASSERT_EQ(0, fcntl(cfd, F_SETFL, O_NONBLOCK));
		EXPECT_EQ(-1, fb_connect(cfd, self_addr(), port));
		EXPECT_EQ(EINPROGRESS, errno);
		usleep(wait_us[i]);
		close(cfd);
	}
	usleep(500000);		/* the last late answer, and more */
	hps_inject_param("inject_point", 0);
	pfd = (struct pollfd){ .fd = l, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(tcpc, hps_stat("fallback_tcp_client"));
	EXPECT_EQ(lost, hps_stat("portq_timeouts"));
	close(l);
}

/* Bind AF_HPS socket @fd to our address at @port and listen; @fd or -1. */
static int listen_at(int fd, int port, int backlog)
{
	struct sockaddr_in sin;

	hps_sin(&sin, self_addr(), port);
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
			listen(fd, backlog))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Ask the listener on @port where its RDMA side is: its port, or -1. */
static int ask_rdma_port(int port, int version)
{
	unsigned char q[16], a[16];
	int u = udp_to(port), ret = -1;

	if (u < 0)
		return -1;
	portq_fill(q, version, 1, port, 0x5a5a0005, 0);
	if (send(u, q, 16, 0) == 16 && recv(u, a, 16, 0) == 16 && a[5] == 2)
		ret = a[12] << 8 | a[13];
	close(u);
	return ret;
}

/*
 * Connect @n clients at once (non-blocking) to @port, accept them, and
 * check each pair over RDMA with its own bytes. 0 if all went so.
 */
static int connect_many(int l, int port, int n)
{
	int cfd[8], afd, i, j, tag, bad = 0;
	struct pollfd pfd;

	for (i = 0; i < n; i++) {
		cfd[i] = socket(AF_HPS, SOCK_STREAM, 0);
		if (cfd[i] < 0 || fcntl(cfd[i], F_SETFL, O_NONBLOCK) ||
		    (fb_connect(cfd[i], self_addr(), port) &&
		     errno != EINPROGRESS))
			return -1;
	}
	for (i = 0; i < n; i++) {
		pfd = (struct pollfd){ .fd = cfd[i], .events = POLLOUT };
		if (poll(&pfd, 1, 10000) != 1 || pfd.revents != POLLOUT ||
		    fcntl(cfd[i], F_SETFL, 0) ||
		    send(cfd[i], &i, sizeof(i), 0) != sizeof(i)) {
			fprintf(stderr, "# client %d: revents %x, %s\n", i,
				pfd.revents, strerror(errno));
			bad++;
		}
	}
	for (j = 0; j < n - bad; j++) {
		afd = accept(l, NULL, NULL);
		if (afd < 0 || hps_read_all(afd, &tag, sizeof(tag)) !=
		    sizeof(tag) || tag < 0 || tag >= n ||
		    transport_of(afd) != HPS_TRANSPORT_RDMA ||
		    transport_of(cfd[tag]) != HPS_TRANSPORT_RDMA ||
		    echo_check(cfd[tag], afd, 1 << 14)) {
			fprintf(stderr, "# accepted %d: not the pair wanted\n",
				j);
			bad++;
		}
		if (afd >= 0)
			close(afd);
	}
	for (i = 0; i < n; i++)
		close(cfd[i]);
	return bad ? -1 : 0;
}

/*
 * The namespace remembers an answer (protocol.rst, "Remembered answers"):
 * clients after the first connect without asking, a bound one asks. The
 * listener replaced by another on its port, whose RDMA side is elsewhere:
 * the next clients, several at once, find nothing at the remembered port,
 * forget it, ask, and are connected over RDMA, each with its own bytes.
 * Over RoCE nothing is asked or remembered.
 */
TEST(port_query_remembered)
{
	long answers = hps_stat("portq_answers"), lost = hps_stat("portq_timeouts");
	long cached = hps_stat("portq_cached"), stale = hps_stat("portq_stale");
	long f0 = fb_count(), d;
	struct sockaddr_in sin;
	struct hps_info hi;
	int port, l, cfd, afd, i, q1, q2, iw = over_iwarp();

	l = fb_listener(1, &port, 16);
	ASSERT_LE(0, l);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, connect_many(l, port, 1));
	EXPECT_EQ(answers + iw, hps_stat("portq_answers"));
	EXPECT_EQ(cached + 2 * iw, hps_stat("portq_cached"));
	/* a bound client asks */
	cfd = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_LE(0, cfd);
	hps_sin(&sin, self_addr(), 0);
	ASSERT_EQ(0, bind(cfd, (struct sockaddr *)&sin, sizeof(sin)));
	ASSERT_EQ(0, fb_connect(cfd, self_addr(), port));
	afd = accept(l, NULL, NULL);
	ASSERT_LE(0, afd);
	EXPECT_EQ(0, echo_check(cfd, afd, 4096));
	ASSERT_EQ(0, info(cfd, &hi));
	close(afd);
	close(cfd);
	EXPECT_EQ(answers + 2 * iw, hps_stat("portq_answers"));
	EXPECT_EQ(cached + 2 * iw, hps_stat("portq_cached"));
	EXPECT_EQ(stale, hps_stat("portq_stale"));

	/* replaced: the same port, the RDMA side elsewhere */
	q1 = iw ? ask_rdma_port(port, hi.hpsi_version) : 0;
	close(l);
	l = listen_at(fb_socket(1), port, 16);
	ASSERT_LE(0, l) TH_LOG("listen again at %d: %s", port, strerror(errno));
	q2 = iw ? ask_rdma_port(port, hi.hpsi_version) : 0;
	if (iw) {
		ASSERT_LT(0, q1);
		ASSERT_LT(0, q2);
	}
	answers = hps_stat("portq_answers");
	cached = hps_stat("portq_cached");
	EXPECT_EQ(0, connect_many(l, port, 6));
	d = hps_stat("portq_stale") - stale;
	if (iw && q1 != q2) {
		/* at least the first; those after its forgetting asked */
		EXPECT_LE(1, d);
		EXPECT_GE(hps_stat("portq_cached") - cached, d);
		EXPECT_LE(answers + 1, hps_stat("portq_answers"));
	} else {
		EXPECT_EQ(0, d) TH_LOG("q1 %d q2 %d", q1, q2);
	}
	if (!iw) {
		EXPECT_EQ(answers, hps_stat("portq_answers"));
		EXPECT_EQ(cached, hps_stat("portq_cached"));
	}
	/* and remembered again */
	stale = hps_stat("portq_stale");
	cached = hps_stat("portq_cached");
	EXPECT_EQ(0, connect_many(l, port, 1));
	EXPECT_EQ(cached + iw, hps_stat("portq_cached"));
	EXPECT_EQ(stale, hps_stat("portq_stale"));
	EXPECT_EQ(lost, hps_stat("portq_timeouts"));
	EXPECT_EQ(f0, fb_count());
	close(l);
}

/*
 * The remembered port taken by another listener, one over RDMA only on
 * that port: it rejects the hello, which is for another port (protocol.rst,
 * "Hello"), and the client starts again, asking, and reaches the listener
 * it asked for. In a test build, the rejection comes while the client's
 * rdma_connect() has not returned yet (injection point 9), so that the
 * new start waits for it. The other listener still takes its own
 * clients. iWARP only: over RoCE no port is remembered, and the hello's
 * port is checked by hps_hostile's bad_hellos_rejected.
 */
TEST(port_query_remembered_port_taken)
{
	long stale = hps_stat("portq_stale"), perr = hps_stat("proto_errors");
	long cached, f0 = fb_count();
	bool inj = !access(INJ_POINT, W_OK);
	struct pollfd pfd;
	struct hps_info hi;
	int port, l, l3, cfd, afd, q;

	l = fb_listener(1, &port, 16);
	ASSERT_LE(0, l);
	cfd = hps_connect_to(self_addr(), port);
	ASSERT_LE(0, cfd) TH_LOG("connect: %s", strerror(errno));
	afd = accept(l, NULL, NULL);
	ASSERT_LE(0, afd);
	ASSERT_EQ(0, info(cfd, &hi));
	close(afd);
	close(cfd);
	if (!over_iwarp()) {
		EXPECT_EQ(stale, hps_stat("portq_stale"));
		close(l);
		return;
	}
	q = ask_rdma_port(port, hi.hpsi_version);
	ASSERT_LT(0, q);
	ASSERT_NE(port, q);
	close(l);
	/* RDMA only, not moved: at q itself */
	l3 = listen_at(fb_socket(0), q, 4);
	ASSERT_LE(0, l3) TH_LOG("listen at %d: %s", q, strerror(errno));
	l = listen_at(fb_socket(1), port, 16);
	ASSERT_LE(0, l) TH_LOG("listen again at %d: %s", port, strerror(errno));
	cached = hps_stat("portq_cached");
	if (inj) {
		ASSERT_EQ(0, hps_inject_param("inject_ms", 300));
		ASSERT_EQ(0, hps_inject_param("inject_point",
					      INJ_CONNECT_DONE));
	}
	cfd = hps_connect_to(self_addr(), port);
	EXPECT_LE(0, cfd) TH_LOG("connect: %s", strerror(errno));
	if (inj) {
		EXPECT_EQ(0, hps_read_long(INJ_POINT));
		hps_inject_param("inject_point", 0);
	}
	ASSERT_LE(0, cfd);
	afd = accept(l, NULL, NULL);
	ASSERT_LE(0, afd);
	EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(cfd));
	EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(afd));
	EXPECT_EQ(0, echo_check(cfd, afd, 1 << 16));
	close(afd);
	close(cfd);
	EXPECT_EQ(cached + 1, hps_stat("portq_cached"));
	EXPECT_EQ(stale + 1, hps_stat("portq_stale"));
	EXPECT_EQ(perr + 1, hps_stat("proto_errors"));
	EXPECT_EQ(f0, fb_count());
	/* nothing for the other listener, which still takes its own */
	pfd = (struct pollfd){ .fd = l3, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, connect_many(l3, q, 1));
	close(l3);
	close(l);
}

/*
 * A client closed while it starts again (its remembered port failed), in
 * a test build at a moment the socket has no id (injection point 10): it
 * goes, with nothing reaching the listener, over RDMA or TCP, and nothing
 * left behind. The next client is connected. Over RoCE nothing is
 * remembered: the point stays armed.
 */
TEST(port_query_restart_closed)
{
	long stale = hps_stat("portq_stale"), f0 = fb_count();
	long tcpc = hps_stat("fallback_tcp_client");
	int ref0, port, l, cfd, afd, i;
	struct pollfd pfd;

	if (access(INJ_POINT, W_OK))
		SKIP(return, "not a test build of af_hps.ko (make vm-modules)");
	/*
	 * sockets hold the module: an earlier test's may still be going
	 * (over two siw nodes on 6.12 one once went during this test)
	 */
	for (i = 0; i < 300 && hps_module_refcnt() > 0; i++)
		usleep(100000);
	ref0 = hps_module_refcnt();
	ASSERT_LE(0, ref0);
	l = fb_listener(1, &port, 16);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, connect_many(l, port, 1));	/* remembered */
	/* replaced: what the namespace remembers leads nowhere */
	close(l);
	l = listen_at(fb_socket(1), port, 16);
	ASSERT_LE(0, l) TH_LOG("listen again at %d: %s", port, strerror(errno));

	ASSERT_EQ(0, hps_inject_param("inject_ms", 300));
	ASSERT_EQ(0, hps_inject_param("inject_point", INJ_RESTART));
	cfd = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(0, fcntl(cfd, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-1, fb_connect(cfd, self_addr(), port));
	EXPECT_EQ(EINPROGRESS, errno);
	usleep(100000);
	close(cfd);
	usleep(500000);
	EXPECT_EQ(over_iwarp() ? 0 : INJ_RESTART, hps_read_long(INJ_POINT));
	hps_inject_param("inject_point", 0);
	EXPECT_EQ(stale + over_iwarp(), hps_stat("portq_stale"));
	pfd = (struct pollfd){ .fd = l, .events = POLLIN };
	if (over_iwarp()) {
		EXPECT_EQ(0, poll(&pfd, 1, 0));
	} else {	/* connected before it was closed, maybe: taken */
		while (poll(&pfd, 1, 0) == 1 &&
		       (afd = accept(l, NULL, NULL)) >= 0)
			close(afd);
	}
	EXPECT_EQ(tcpc, hps_stat("fallback_tcp_client"));
	EXPECT_EQ(f0, fb_count());
	/* the next one is connected */
	EXPECT_EQ(0, connect_many(l, port, 1));
	close(l);
	for (i = 0; i < 50 && hps_module_refcnt() > ref0; i++)
		usleep(100000);
	EXPECT_EQ(ref0, hps_module_refcnt());
}

/*
 * The answer comes from the address the query went to: a server under
 * hps_run on the peer, listening on every address, reached at an address
 * its replies to us would not come from (a second one, /32, on the
 * peer's interface). An answer from the other address would be dropped by
 * the client's connected UDP socket, the query would give up, and the
 * attempt would meet the server's TCP side with its MPA request.
 */
#define OTHER_ADDR	"198.18.0.211"
/* on the peer, its interface of HPS_SELF (its own address there) */
#define ON_PEER_IF	"hps-vm-peer sh -c 'ip addr %s " OTHER_ADDR \
	"/32 dev $(ip -o -4 addr show to $HPS_SELF | cut -d\" \" -f2)'"

static int peer_other_addr(const char *op)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), ON_PEER_IF, op);
	return system(cmd);
}

TEST_F_TIMEOUT(slow, port_query_other_address, 90)
{
	long lost = hps_stat("portq_timeouts"), f0 = fb_count();
	char job[64], cmd[PATH_MAX + 256], exe[PATH_MAX];
	int port = hps_rand_port(), fd;

	ASSERT_EQ(0, hps_self_exe(exe));
	*strrchr(exe, '/') = 0;
	ASSERT_EQ(0, peer_other_addr("add"));
	snprintf(cmd, sizeof(cmd),
		 "sh -c 'cd %s/.. && exec tools/preload/hps_run tools/hps_xfer --transport tcp -l 0.0.0.0 %d --echo --count 0'",
		 exe, port);
	ASSERT_EQ(0, hps_peer_bg(job, sizeof(job), cmd));
	snprintf(cmd, sizeof(cmd), "hps-vm-peer hps-vm-wait-listen %d 60",
		 port);
	EXPECT_EQ(0, system(cmd));
	lost = hps_stat("portq_timeouts");
	fd = hps_connect_to(OTHER_ADDR, port);
	EXPECT_LE(0, fd) TH_LOG("connect: %s", strerror(errno));
	if (fd >= 0) {
		unsigned char out[8192], in[sizeof(out) + 8];

		EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(fd));
		/* hps_xfer --echo: the bytes back, then its 8-byte checksum */
		hps_fill_random(out, sizeof(out));
		EXPECT_EQ((ssize_t)sizeof(out),
			  hps_write_all(fd, out, sizeof(out)));
		EXPECT_EQ(0, shutdown(fd, SHUT_WR));
		EXPECT_EQ((ssize_t)sizeof(in), hps_read_all(fd, in, sizeof(in)));
		EXPECT_EQ(0, memcmp(out, in, sizeof(out)));
		EXPECT_EQ(0, recv(fd, in, 1, 0));
		close(fd);
	}
	EXPECT_EQ(lost, hps_stat("portq_timeouts"));
	EXPECT_EQ(f0, fb_count());
	hps_peer_kill(job);
	EXPECT_EQ(0, peer_other_addr("del"));
}

/*
 * AF_HPS and TCP clients at once, taken by two threads sharing the
 * listener: each accepted socket's transport is the one its client used,
 * and each gets its own client's bytes.
 */
#define NCL	3

struct acc {
	int l, n;
	int tag[NCL], transport[NCL];
	int fd[NCL];
};

static void *acc_main(void *arg)
{
	struct acc *a = arg;
	char buf[8];
	int i;

	for (i = 0; i < a->n; i++) {
		a->fd[i] = accept(a->l, NULL, NULL);
		a->tag[i] = -1;
		if (a->fd[i] < 0)
			continue;
		a->transport[i] = transport_of(a->fd[i]);
		if (recv(a->fd[i], buf, 8, MSG_WAITALL) == 8 &&
		    !memcmp(buf, "HPSTAG", 6))
			a->tag[i] = (buf[6] - '0') * 10 + buf[7] - '0';
		send(a->fd[i], buf, 8, 0);	/* back to its client */
	}
	return NULL;
}

TEST(listener_serves_both)
{
	struct acc a[2];
	pthread_t t[2];
	int port, l, i, j, cfd[2 * NCL], seen[2 * NCL] = { 0 };
	char buf[8], tag[9];

	l = fb_listener(1, &port, 2 * NCL);
	ASSERT_LE(0, l);
	for (i = 0; i < 2; i++) {
		a[i] = (struct acc){ .l = l, .n = NCL };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, acc_main, &a[i]));
	}
	/* even tags over AF_HPS, odd ones over TCP */
	for (i = 0; i < 2 * NCL; i++) {
		cfd[i] = i % 2 ? tcp_client(port) :
			 hps_connect_to(self_addr(), port);
		ASSERT_LE(0, cfd[i]) TH_LOG("client %d: %s", i, strerror(errno));
		snprintf(tag, sizeof(tag), "HPSTAG%02d", i);
		ASSERT_EQ(8, send(cfd[i], tag, 8, 0));
	}
	for (i = 0; i < 2 * NCL; i++) {
		snprintf(tag, sizeof(tag), "HPSTAG%02d", i);
		ASSERT_EQ(8, recv(cfd[i], buf, 8, MSG_WAITALL));
		EXPECT_EQ(0, memcmp(buf, tag, 8));
	}
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		for (j = 0; j < NCL; j++) {
			int g = a[i].tag[j];

			ASSERT_LE(0, a[i].fd[j]);
			ASSERT_TRUE(g >= 0 && g < 2 * NCL);
			seen[g]++;
			EXPECT_EQ(g % 2 ? HPS_TRANSPORT_TCP :
				  HPS_TRANSPORT_RDMA, a[i].transport[j]) {
				TH_LOG("client %d", g);
			}
			close(a[i].fd[j]);
		}
	}
	for (i = 0; i < 2 * NCL; i++) {
		EXPECT_EQ(1, seen[i]);
		close(cfd[i]);
	}
	close(l);
}

/* poll() and a non-blocking accept() see TCP clients as they see ours. */
TEST(listener_poll_nonblocking)
{
	struct pollfd pfd;
	int port, l, cfd, afd;
	char c;

	l = fb_listener(1, &port, 4);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, fcntl(l, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-1, accept4(l, NULL, NULL, SOCK_NONBLOCK));
	EXPECT_EQ(EAGAIN, errno);
	pfd = (struct pollfd){ .fd = l, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	cfd = tcp_client(port);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	EXPECT_EQ(POLLIN, pfd.revents);
	afd = accept4(l, NULL, NULL, SOCK_NONBLOCK);
	ASSERT_LE(0, afd);
	EXPECT_EQ(HPS_TRANSPORT_TCP, transport_of(afd));
	EXPECT_EQ(-1, accept4(l, NULL, NULL, SOCK_NONBLOCK));
	EXPECT_EQ(EAGAIN, errno);
	/* the accepted socket is non-blocking, as TCP's would be */
	EXPECT_EQ(-1, recv(afd, &c, 1, 0));
	EXPECT_EQ(EAGAIN, errno);
	close(cfd);
	close(afd);
	close(l);
}

/*
 * A port where a connection with SO_REUSEADDR is in TIME_WAIT (siw's
 * sockets are such, and an earlier connection's ephemeral port can be
 * the one a server binds: the tests' random ports come from a range that
 * overlaps the ephemeral one): bind() takes it, as with SO_REUSEADDR,
 * and the listener has its TCP side there all the same, and over iWARP
 * its RDMA side elsewhere. Without the TCP side's SO_REUSEADDR, the
 * listener was left with neither, its RDMA side on the port over iWARP.
 * A TCP socket without SO_REUSEADDR cannot bind the port: the TIME_WAIT
 * is there.
 */
TEST(listener_port_in_time_wait)
{
	struct sockaddr_in sin;
	int port, tl, cfd, afd, l, fd, one = 1;

	tl = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, tl);
	ASSERT_EQ(0, setsockopt(tl, SOL_SOCKET, SO_REUSEADDR, &one,
				sizeof(one)));
	tl = listen_at_random_port(tl, self_addr(), &port, 4);
	ASSERT_LE(0, tl);
	cfd = tcp_client(port);
	ASSERT_LE(0, cfd);
	afd = accept(tl, NULL, NULL);
	ASSERT_LE(0, afd);
	close(afd);		/* the server's end closes first: TIME_WAIT */
	usleep(50000);
	close(cfd);
	close(tl);
	usleep(100000);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, fd);
	hps_sin(&sin, self_addr(), port);
	EXPECT_EQ(-1, bind(fd, (struct sockaddr *)&sin, sizeof(sin)));
	EXPECT_EQ(EADDRINUSE, errno);
	close(fd);

	l = listen_at(fb_socket(1), port, 4);
	ASSERT_LE(0, l) TH_LOG("listen at %d: %s", port, strerror(errno));
	EXPECT_EQ(HPS_TRANSPORT_RDMA_TCP, transport_of(l));
	cfd = tcp_client(port);
	ASSERT_LE(0, cfd) TH_LOG("TCP client: %s", strerror(errno));
	afd = accept(l, NULL, NULL);
	ASSERT_LE(0, afd);
	EXPECT_EQ(HPS_TRANSPORT_TCP, transport_of(afd));
	EXPECT_EQ(0, echo_check(cfd, afd, 1 << 14));
	close(afd);
	close(cfd);
	EXPECT_EQ(0, connect_many(l, port, 2));
	close(l);
}

/*
 * A TCP client not yet accepted is reset when the listener closes, as
 * TCP's listener resets it; after shutdown(SHUT_RD) or close() TCP
 * clients are refused.
 */
TEST(listener_close_and_shutdown)
{
	int port, l, cfd;
	char c;

	l = fb_listener(1, &port, 4);
	ASSERT_LE(0, l);
	/* (over iWARP: its RDMA side moved, the port is TCP's) */
	EXPECT_EQ(HPS_TRANSPORT_RDMA_TCP, transport_of(l));
	cfd = tcp_client(port);
	ASSERT_LE(0, cfd);
	close(l);
	EXPECT_EQ(-1, recv(cfd, &c, 1, 0));
	EXPECT_EQ(ECONNRESET, errno);
	close(cfd);
	EXPECT_EQ(-1, tcp_client(port));
	EXPECT_EQ(ECONNREFUSED, errno);

	l = fb_listener(1, &port, 4);
	ASSERT_LE(0, l);
	EXPECT_EQ(HPS_TRANSPORT_RDMA_TCP, transport_of(l));
	ASSERT_EQ(0, shutdown(l, SHUT_RD));
	EXPECT_EQ(-1, tcp_client(port));
	EXPECT_EQ(ECONNREFUSED, errno);
	EXPECT_EQ(-1, accept(l, NULL, NULL));
	EXPECT_EQ(EINVAL, errno);
	/* listen() again changes the backlog only: both stay shut */
	EXPECT_EQ(0, listen(l, 8));
	EXPECT_EQ(-1, tcp_client(port));
	EXPECT_EQ(ECONNREFUSED, errno);
	EXPECT_EQ(-1, accept(l, NULL, NULL));
	EXPECT_EQ(EINVAL, errno);
	close(l);
}

/*
 * A TCP client that resets its connection before it is accepted is
 * TCP's business: the listener gets no error, poll() no POLLERR, and the
 * next client is accepted (after the reset one, which TCP hands out too,
 * with its error).
 */
TEST(listener_survives_client_reset)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	int port, l, c1, c2, afd, i, err = -1, got = 0;
	char buf[8];

	l = fb_listener(1, &port, 4);
	ASSERT_LE(0, l);
	c1 = tcp_client(port);
	ASSERT_LE(0, c1);
	ASSERT_EQ(0, setsockopt(c1, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	close(c1);	/* RST */
	usleep(200000);
	pfd = (struct pollfd){ .fd = l, .events = POLLIN };
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN, pfd.revents);
	c2 = tcp_client(port);
	ASSERT_LE(0, c2);
	ASSERT_EQ(8, send(c2, MAGIC, 8, 0));
	for (i = 0; i < 2 && !got; i++) {
		afd = accept(l, NULL, NULL);
		ASSERT_LE(0, afd) TH_LOG("accept %d: %s", i, strerror(errno));
		got = recv(afd, buf, 8, MSG_WAITALL) == 8 &&
		      !memcmp(buf, MAGIC, 8);
		close(afd);
	}
	EXPECT_TRUE(got);
	EXPECT_EQ(0, getsockopt(l, SOL_SOCKET, SO_ERROR, &err, &len));
	EXPECT_EQ(0, err);
	close(c2);
	close(l);
}

/*
 * Without the option (and net.hps.tcp_fallback 1) a listener is RDMA
 * only; net.hps.tcp_fallback 2 gives every listener the TCP side, 0 none.
 * Over iWARP an RDMA-only listener's port is the driver's in the TCP stack
 * (a TCP client meets its MPA handshake), and the option set after
 * listen() cannot move it: af_hps.rst, Limitations.
 */
TEST(listener_option_and_sysctl)
{
	int port, l, cfd, afd, one = 1;
	int want = over_iwarp() ? HPS_TRANSPORT_RDMA : HPS_TRANSPORT_RDMA_TCP;

	l = fb_listener(0, &port, 4);
	ASSERT_LE(0, l);
	EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(l));
	if (!over_iwarp()) {
		EXPECT_EQ(-1, tcp_client(port));
		EXPECT_EQ(ECONNREFUSED, errno);
	}
	/* set after listen(): the next listen() call starts the TCP side */
	ASSERT_EQ(0, setsockopt(l, SOL_HPS, HPS_TCP_FALLBACK, &one,
				sizeof(one)));
	EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(l));
	ASSERT_EQ(0, listen(l, 4));
	EXPECT_EQ(want, transport_of(l));
	close(l);

	ASSERT_EQ(0, set_fb_sysctl(2));
	l = fb_listener(-1, &port, 4);
	EXPECT_EQ(0, set_fb_sysctl(1));
	ASSERT_LE(0, l);
	EXPECT_EQ(HPS_TRANSPORT_RDMA_TCP, transport_of(l));
	cfd = tcp_client(port);
	ASSERT_LE(0, cfd);
	afd = accept(l, NULL, NULL);
	ASSERT_LE(0, afd);
	EXPECT_EQ(HPS_TRANSPORT_TCP, transport_of(afd));
	close(afd);
	close(cfd);
	close(l);

	ASSERT_EQ(0, set_fb_sysctl(0));
	l = fb_listener(1, &port, 4);
	EXPECT_EQ(0, set_fb_sysctl(1));
	ASSERT_LE(0, l);
	EXPECT_EQ(HPS_TRANSPORT_RDMA, transport_of(l));
	close(l);
}

/*
 * The attempt over RDMA has a deadline (HPS_FB_DEADLINE, 3 s): a peer that
 * does not answer costs that, not rdma_cm's retries (about 100 s over RoCE
 * to a host without an RDMA device), and the socket falls back with the
 * reason unreachable. Not over iWARP, whose MPA exchange has its own
 * bound (siw: 10 s).
 *
 * Over rxe: an AF_HPS listener whose first child's setup sleeps 6 s (a
 * test build's injection point) does not answer in time; the client goes
 * on over TCP to the same listener, which takes it over TCP, and the RDMA
 * request, when its setup wakes, is refused (the client gave it up), so
 * accept() never sees it. Over siw: a host whose UDP port answers the
 * port query with nothing it can use (struct sink), and a TCP server there
 * that never reads: the query gives up (portq_timeouts), no wrong answer
 * is followed, the server gets the MPA request and no answer comes; the
 * fallback is its next connection.
 */
#define INJ_ACCEPT_SETUP	6	/* enum hps_inject_point */

/*
 * A UDP service on a TCP server's port that answers every datagram with
 * what an AF_HPS client must not take (protocol.rst, "iWARP port query"):
 * too short, a query, an answer to another nonce and one for another port
 * (both pointing at @xport), and one too long.
 */
struct sink {
	int fd, xport, queries;
	atomic_int stop;
	pthread_t t;
};

static void *sink_main(void *arg)
{
	struct sink *k = arg;
	unsigned char q[64], a[32];
	struct sockaddr_in from;
	socklen_t flen;
	ssize_t n;

	while (!atomic_load(&k->stop)) {
		flen = sizeof(from);
		n = recvfrom(k->fd, q, sizeof(q), 0, (struct sockaddr *)&from,
			     &flen);
		if (n != 16)
			continue;
		k->queries++;
		sendto(k->fd, "HPS", 3, 0, (struct sockaddr *)&from, flen);
		sendto(k->fd, q, 16, 0, (struct sockaddr *)&from, flen);
		memcpy(a, q, 16);
		a[5] = 2;				/* an answer */
		a[12] = k->xport >> 8;			/* the wrong port */
		a[13] = k->xport & 0xff;
		a[8] ^= 1;				/* another nonce */
		sendto(k->fd, a, 16, 0, (struct sockaddr *)&from, flen);
		a[8] ^= 1;
		a[6] ^= 1;				/* another port */
		sendto(k->fd, a, 16, 0, (struct sockaddr *)&from, flen);
		a[6] ^= 1;
		memset(a + 16, 0, 16);
		sendto(k->fd, a, 32, 0, (struct sockaddr *)&from, flen);
	}
	return NULL;
}

static int sink_start(struct sink *k, int port, int xport)
{
	struct timeval tv = { .tv_usec = 200000 };
	struct sockaddr_in sin;

	memset(k, 0, sizeof(*k));
	k->xport = xport;
	k->fd = socket(AF_INET, SOCK_DGRAM, 0);
	hps_sin(&sin, self_addr(), port);
	if (k->fd < 0 || bind(k->fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    setsockopt(k->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -1;
	return pthread_create(&k->t, NULL, sink_main, k);
}

static void sink_stop(struct sink *k)
{
	atomic_store(&k->stop, 1);
	pthread_join(k->t, NULL);
	close(k->fd);
}

TEST_F_TIMEOUT(slow, deadline_bounds_a_silent_peer, 60)
{
	long lost = hps_stat("portq_timeouts");
	struct pollfd pfd;
	struct hps_info hi;
	struct sink k;
	int port, l, cfd, afd = -1, a2, i, xport, xl = -1;
	double t0, dt;
	char buf[8];

	if (access("/sys/module/af_hps/parameters/inject_point", W_OK))
		SKIP(return, "not a test build of af_hps.ko (make vm-modules)");
	if (over_iwarp()) {
		l = tcp_listener(self_addr(), &port);	/* never accepts */
		ASSERT_LE(0, l);
		xl = tcp_listener(self_addr(), &xport);
		ASSERT_LE(0, xl);
		ASSERT_EQ(0, sink_start(&k, port, xport));
	} else {
		l = fb_listener(1, &port, 4);
		ASSERT_EQ(0, hps_inject_param("inject_ms", 6000));
		ASSERT_EQ(0, hps_inject_param("inject_point", INJ_ACCEPT_SETUP));
	}
	ASSERT_LE(0, l);
	cfd = fb_socket(1);
	ASSERT_LE(0, cfd);
	t0 = hps_now();
	ASSERT_EQ(0, fb_connect(cfd, self_addr(), port)) {
		TH_LOG("connect: %s", strerror(errno));
		hps_inject_param("inject_point", 0);
	}
	dt = hps_now() - t0;
	ASSERT_EQ(0, info(cfd, &hi));
	EXPECT_EQ(HPS_TRANSPORT_TCP, hi.hpsi_transport);
	if (over_iwarp()) {
		/* no deadline: siw's MPA timeout (10 s) bounds it */
		EXPECT_GT(14.0, dt);
		EXPECT_TRUE(hi.hpsi_fallback == HPS_FB_PEER_ERROR ||
			    hi.hpsi_fallback == HPS_FB_UNREACHABLE) {
			TH_LOG("reason %u after %.1f s", hi.hpsi_fallback, dt);
		}
		sink_stop(&k);
		/* three tries, each answered uselessly, then given up */
		EXPECT_EQ(3, k.queries);
		EXPECT_EQ(lost + 1, hps_stat("portq_timeouts"));
		/* the answers for another nonce or port were not followed */
		pfd = (struct pollfd){ .fd = xl, .events = POLLIN };
		EXPECT_EQ(0, poll(&pfd, 1, 0));
		close(xl);
	} else {
		EXPECT_LT(2.5, dt);
		EXPECT_GT(5.5, dt);
		EXPECT_EQ(HPS_FB_UNREACHABLE, hi.hpsi_fallback);
	}
	ASSERT_EQ(8, send(cfd, MAGIC, 8, 0));
	/* over siw the first connection is the MPA request's */
	for (i = 0; i < 2; i++) {
		afd = accept(l, NULL, NULL);
		ASSERT_LE(0, afd);
		if (recv(afd, buf, 8, MSG_WAITALL) == 8 &&
		    !memcmp(buf, MAGIC, 8))
			break;
		close(afd);
		afd = -1;
		ASSERT_TRUE(over_iwarp());
	}
	ASSERT_LE(0, afd);
	if (!over_iwarp()) {
		EXPECT_EQ(HPS_TRANSPORT_TCP, transport_of(afd));
		/* the injection point disarmed itself: the request was seen */
		EXPECT_EQ(0, hps_read_long("/sys/module/af_hps/parameters/inject_point"));
		/* past the child's 6 s: it was refused, never queued */
		while (hps_now() - t0 < 7.5)
			usleep(100000);
		ASSERT_EQ(0, fcntl(l, F_SETFL, O_NONBLOCK));
		a2 = accept(l, NULL, NULL);
		EXPECT_EQ(-1, a2);
		EXPECT_EQ(EAGAIN, errno);
		if (a2 >= 0)
			close(a2);
	}
	hps_inject_param("inject_point", 0);
	close(afd);
	close(cfd);
	close(l);
}

TEST_HARNESS_MAIN
