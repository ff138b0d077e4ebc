// SPDX-License-Identifier: GPL-2.0
/*
 * hps-bench: latency, bandwidth, connection rate, memory per connection and
 * CPU cost of AF_HPS against TCP, rsockets and SMC.
 *
 *   hps-bench --server [--transport T] [--bind ADDR] [--port P] [--nports N]
 *   hps-bench --client ADDR [--transport T] [--port P] --test TEST
 *             [--size BYTES] [--iters N | --seconds S] [--streams N]
 *             [--conns N] [--busy M] [--local-ends E]
 *             [--no-nodelay] [--csv] [--csv-header]
 *
 * Transports: hps (AF_HPS, HPS_NODELAY on), tcp (AF_INET/AF_INET6,
 * TCP_NODELAY on), rsocket (librdmacm's rsockets, TCP_NODELAY on) and smc
 * (AF_SMC, which falls back to TCP when SMC-R cannot be used); hps-fb, a
 * client only, is AF_HPS with HPS_TCP_FALLBACK against a tcp server: what a
 * connection that falls back to TCP costs (connrate).
 * --no-nodelay leaves the client's NODELAY off, so small writes are
 * combined (Nagle for TCP).
 *
 * The server listens on ports P .. P+N-1 (--nports, 1 by default), accepts
 * in one thread polling them all, and serves every connection in a thread
 * of its own, so any number of clients can be served at once. Each connection starts with a 24-byte header from the
 * client (magic, version, test, size, count).
 *
 * Tests (client side; N is --streams, 4 by default):
 * pingpong: the client sends SIZE bytes, the server echoes them, until the
 *   client shuts down its sending side. After a warm-up (a tenth of the
 *   iterations, 10 to 1000) every round trip is timed; the client reports
 *   the median, 99th and 99.9th percentile and mean one-way latency (half
 *   the round trip) in microseconds. Every 16th echo (and the first and
 *   last) is compared with what was sent.
 * stream: the client writes SIZE bytes at a time, for --seconds or --iters
 *   writes, then shuts down its sending side; the server reads everything
 *   and replies with its byte count and a checksum of the stream, which the
 *   client verifies. Bandwidth is bytes over the time from the first write
 *   to the reply, in MB/s (10^6 bytes per second) and Gbit/s.
 * bidir: stream in both directions at once on one connection. The server
 *   writes SIZE-byte buffers (as many as the client with --iters, else until
 *   the client's stream ends), then sends its
 *   byte count and checksum of the client's stream as the last 16 bytes;
 *   the client checks those and the checksum of the server's stream (whose
 *   buffers it can regenerate). Bandwidth is both directions together.
 * streams: N connections from N threads of the client to one server, each
 *   a stream test, started together; aggregate bandwidth (bytes of all
 *   streams over the time from the first start to the last end). This is
 *   also the fan-in bandwidth test: N senders, one receiving process.
 * fanin (alias hotspot): N connections from N client threads to one server,
 *   all doing pingpong at once; latency percentiles over all round trips
 *   and the aggregate round trips per second.
 * fanout: one client process, N threads, connection i to port P+i (a server
 *   started with --nports N, i.e. N listening sockets, or N servers on
 *   consecutive ports), each a stream test; aggregate bandwidth.
 * connrate: connect, send SIZE bytes, receive their echo, close, again and
 *   again; connections per second, and the median and tail of the whole
 *   connect-exchange-close time (not halved).
 * conns: --conns N connections (1000 by default) opened one after another
 *   and all held open; each is open when the server has acknowledged its
 *   header (8 bytes back), so the server has accepted it. Then the first
 *   --busy M of them (2 by default) do pingpong at once, as fanin, while the
 *   others idle; then every connection echoes one SIZE-byte message, which
 *   is compared; then all are closed. Reported: the setup rate (connections
 *   over the time from the first socket() to the last acknowledgment), the
 *   memory per connection end (the drop of MemAvailable and the growth of
 *   Slab, SUnreclaim and VmallocUsed in /proc/meminfo from before the first
 *   connection to after the last, over the connection ends on this host:
 *   2 per connection when ADDR is an address of this host or loopback, else
 *   1; --local-ends overrides), the busy ones' latency, and the time to
 *   close them all. A connection that cannot be opened (ENOBUFS at 421)
 *   ends the opening, not the test: "421 of 1000 connections, then
 *   ENOBUFS", and the rest runs on the connections that were opened. The
 *   server holds the idle connections in one thread that polls them all
 *   and echoes what arrives; the busy ones get a thread each, as for
 *   pingpong.
 *
 * CPU cost: the client reads its own getrusage() (user, system; all its
 * threads) and the node's softirq time (/proc/stat) before and after the
 * test, and asks the server (a short extra connection before and after,
 * test "stats") for the same on its side. Reported as CPU seconds per GiB
 * moved (both directions counted for pingpong and bidir), and for pingpong
 * and fanin also as microseconds per message (of --size bytes, each way)
 * beside the latency. On one node the two softirq figures are the same
 * node's and must not be added up.
 *
 * A mismatch exits 1; so does any error. Sockets get SO_RCVTIMEO and
 * SO_SNDTIMEO of 30 s where the transport supports them, and a watchdog
 * thread ends the process when a connection makes no progress for 35 s
 * (rsockets have no socket timeouts).
 *
 * Output: one human-readable line; with --csv also a CSV line of the
 * columns below (--csv-header prints the header line first, --csv-columns
 * only the header line, and exits). Columns that
 * do not apply to a test are empty. New columns are only ever appended.
 * conns fills them so: iters the connections opened, streams the busy
 * ones, median_us to mean_us their one-way latency, rate_per_s and seconds
 * the setup rate and time, bytes all bytes moved; and its own columns
 * conns (asked for), conn_err (the errno name that ended the opening, or
 * empty), mem_kib_end, slab_kib_end, sunreclaim_kib_end and
 * vmalloc_kib_end (KiB per connection end) and close_s.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rsocket.h>
#include <linux/af_hps.h>

#include "../hps_addr.h"

#ifndef AF_SMC
#define AF_SMC 43
#endif

#define MAGIC		0x48505342u	/* "HPSB" */
#define VERSION		2
#define TEST_PINGPONG	1
#define TEST_STREAM	2
#define TEST_BIDIR	3
#define TEST_STATS	4
#define TEST_CONNS	5	/* count: index << 1 | busy; acknowledged */
#define TIMEOUT_S	30
#define WATCHDOG_S	35
#define MAX_SIZE	(64u << 20)
#define MAX_STREAMS	256
#define MAX_CONNS	(1 << 20)
#define HOLD_POLL_MS	100	/* the held connections' poll timeout */
#define HOLD_BUF	65536
#define NBUFS		16		/* distinct stream buffers */
#define HASH_K		0x9e3779b97f4a7c15ULL	/* odd multiplier */
#define SEED_CLIENT	0xabcdef
#define SEED_SERVER	0x5eed51
#define SEED_CHECK	0xc4ec0000

#define CSV_HEADER "transport,test,size,iters,median_us,p99_us,p999_us,mbps," \
	"streams,rate_per_s,bytes,seconds," \
	"cli_user_s_gib,cli_sys_s_gib,cli_softirq_s_gib," \
	"srv_user_s_gib,srv_sys_s_gib,srv_softirq_s_gib,mean_us," \
	"conns,conn_err,mem_kib_end,slab_kib_end,sunreclaim_kib_end," \
	"vmalloc_kib_end,close_s"

struct hdr {
	uint32_t magic;
	uint32_t version;
	uint32_t test;
	uint32_t size;
	uint64_t count;		/* informational: iterations or 0 */
};

struct reply {
	uint64_t bytes;
	uint64_t hash;
};

/* the server's answer to TEST_STATS: its process's and node's CPU time */
struct srvstat {
	uint64_t user_us;
	uint64_t sys_us;
	uint64_t softirq_us;
};

/* ---------------------------------------------------------------- ops */

enum transport { T_HPS, T_TCP, T_RSOCKET, T_SMC, T_HPS_FB };
static const char *const tnames[] = { "hps", "tcp", "rsocket", "smc",
				      "hps-fb" };
static enum transport tr = T_HPS;
static int nodelay = 1;	/* --no-nodelay: leave small-write combining on */

static int x_socket(int fam)
{
	switch (tr) {
	case T_HPS:
		return socket(AF_HPS, SOCK_STREAM, HPSPROTO_HPS);
	case T_TCP:
		return socket(fam, SOCK_STREAM, IPPROTO_TCP);
	case T_RSOCKET:
		return rsocket(fam, SOCK_STREAM, 0);
	case T_SMC:
		/* protocol 0: SMCPROTO_SMC (IPv4), 1: SMCPROTO_SMC6 */
		return socket(AF_SMC, SOCK_STREAM, fam == AF_INET6 ? 1 : 0);
	case T_HPS_FB: {
		/* AF_HPS that falls back to TCP: against a TCP server */
		int one = 1, fd = socket(AF_HPS, SOCK_STREAM, HPSPROTO_HPS);

		if (fd >= 0 && setsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &one,
					  sizeof(one))) {
			close(fd);
			return -1;	/* errno: a module without fallback */
		}
		return fd;
	}
	}
	return -1;
}

#define R(call, rcall) (tr == T_RSOCKET ? (rcall) : (call))

static int x_bind(int fd, const struct sockaddr *a, socklen_t l)
{ return R(bind(fd, a, l), rbind(fd, a, l)); }
static int x_listen(int fd, int n)
{ return R(listen(fd, n), rlisten(fd, n)); }
static int x_accept(int fd)
{ return R(accept(fd, NULL, NULL), raccept(fd, NULL, NULL)); }
static int x_connect(int fd, const struct sockaddr *a, socklen_t l)
{ return R(connect(fd, a, l), rconnect(fd, a, l)); }
static ssize_t x_send(int fd, const void *b, size_t n)
{ return R(send(fd, b, n, MSG_NOSIGNAL), rsend(fd, b, n, 0)); }
static ssize_t x_recv(int fd, void *b, size_t n)
{ return R(recv(fd, b, n, 0), rrecv(fd, b, n, 0)); }
static int x_shutdown(int fd, int how)
{ return R(shutdown(fd, how), rshutdown(fd, how)); }
static int x_close(int fd)
{ return R(close(fd), rclose(fd)); }
static int x_poll(struct pollfd *p, nfds_t n, int ms)
{ return R(poll(p, n, ms), rpoll(p, n, ms)); }
static int x_setsockopt(int fd, int lvl, int opt, const void *v, socklen_t l)
{ return R(setsockopt(fd, lvl, opt, v, l), rsetsockopt(fd, lvl, opt, v, l)); }

/* ----------------------------------------------------------- helpers */

static const char *prog = "hps-bench";
static atomic_ulong progress;
static atomic_int busy;	/* connections in progress */

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static void fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static void *watchdog(void *arg)
{
	unsigned long last = 0;
	int idle = 0;

	(void)arg;
	for (;;) {
		unsigned long p;

		sleep(1);
		p = atomic_load(&progress);
		if (!atomic_load(&busy) || p != last) {
			last = p;
			idle = 0;
			continue;
		}
		if (++idle >= WATCHDOG_S) {
			fprintf(stderr, "%s: timeout: no progress for %d s\n",
				prog, WATCHDOG_S);
			_exit(1);
		}
	}
	return NULL;
}

/*
 * RLIMIT_NOFILE's soft limit up to its hard one, and the hard one up to
 * want where that is allowed (CAP_SYS_RESOURCE); return the soft limit.
 */
static rlim_t raise_nofile(rlim_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_max < want) {
		struct rlimit up = { .rlim_cur = want, .rlim_max = want };

		if (!setrlimit(RLIMIT_NOFILE, &up))
			return want;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 0 on success, 1 on orderly EOF before n bytes (only if eof_ok), else -1 */
static int recv_all(int fd, void *buf, size_t n, int eof_ok)
{
	char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t r = x_recv(fd, p + got, n - got);

		if (r > 0) {
			got += r;
			atomic_fetch_add_explicit(&progress, 1,
						  memory_order_relaxed);
			continue;
		}
		if (r == 0) {
			if (eof_ok && got == 0)
				return 1;
			errno = ECONNRESET;
			fprintf(stderr, "%s: recv: unexpected EOF after %zu of %zu bytes\n",
				prog, got, n);
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			errno = ETIMEDOUT;
		fprintf(stderr, "%s: recv: %s\n", prog, strerror(errno));
		return -1;
	}
	return 0;
}

static int send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	size_t done = 0;

	while (done < n) {
		ssize_t r = x_send(fd, p + done, n - done);

		if (r > 0) {
			done += r;
			atomic_fetch_add_explicit(&progress, 1,
						  memory_order_relaxed);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			errno = ETIMEDOUT;
		fprintf(stderr, "%s: send: %s\n", prog,
			r == 0 ? "returned 0" : strerror(errno));
		return -1;
	}
	return 0;
}

static void set_opts(int fd)
{
	struct timeval tv = { .tv_sec = TIMEOUT_S };
	int one = 1;

	if (tr != T_RSOCKET) {
		if (x_setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
		    x_setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
			fprintf(stderr, "%s: warning: socket timeouts: %s\n",
				prog, strerror(errno));
	}
	if (!nodelay)
		return;
	if (tr == T_HPS || tr == T_HPS_FB) {
		if (x_setsockopt(fd, SOL_HPS, HPS_NODELAY, &one, sizeof(one)))
			fprintf(stderr, "%s: warning: HPS_NODELAY: %s\n",
				prog, strerror(errno));
	} else if (x_setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				sizeof(one))) {
		fprintf(stderr, "%s: warning: TCP_NODELAY: %s\n",
			prog, strerror(errno));
	}
}

/*
 * Stream checksum: a polynomial hash over the stream's 64-bit little-endian
 * words at 8-byte-aligned offsets, h = (h + w) * K, the last partial word
 * zero-padded, then the length mixed in. Independent of how the stream is
 * cut into reads; a word at a time, so the server keeps up.
 */
struct hash {
	uint64_t h;
	uint64_t part;
	unsigned int plen;
	uint64_t len;
};

static void hash_update(struct hash *s, const unsigned char *p, size_t n)
{
	uint64_t h = s->h;

	s->len += n;
	while (n && s->plen) {
		s->part |= (uint64_t)*p++ << (8 * s->plen);
		n--;
		if (++s->plen == 8) {
			h = (h + s->part) * HASH_K;
			s->part = 0;
			s->plen = 0;
		}
	}
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		h = (h + w) * HASH_K;
	}
	for (; n; n--) {
		s->part |= (uint64_t)*p++ << (8 * s->plen);
		s->plen++;
	}
	s->h = h;
}

static uint64_t hash_final(const struct hash *s)
{
	uint64_t h = s->h;

	if (s->plen)
		h = (h + s->part) * HASH_K;
	return (h ^ s->len) * HASH_K;
}

static void fill_random(unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = x >> 24;
	}
}

static uint64_t mulpow(uint64_t k, uint64_t e)
{
	uint64_t r = 1;

	for (; e; e >>= 1, k *= k)
		if (e & 1)
			r *= k;
	return r;
}

/*
 * NBUFS distinct buffers of one size, and what it takes to hash a stream
 * made of them in O(1) per buffer when the size is whole words: for m words,
 * (h + w) * K over a buffer started from h is h * K^m + hash-from-zero.
 */
struct bufset {
	unsigned char *buf[NBUFS];
	uint64_t bh[NBUFS];
	uint64_t kp;
	uint32_t size;
	int fast;
};

static void bufset_init(struct bufset *bs, uint32_t size, uint64_t seed)
{
	bs->size = size;
	bs->fast = size % 8 == 0;
	bs->kp = bs->fast ? mulpow(HASH_K, size / 8) : 0;
	for (int b = 0; b < NBUFS; b++) {
		bs->buf[b] = malloc(size);
		if (!bs->buf[b])
			fail("%s", "out of memory");
		fill_random(bs->buf[b], size, seed + b * 7919 + size);
		if (bs->fast) {
			struct hash one = { 0 };

			hash_update(&one, bs->buf[b], size);
			bs->bh[b] = one.h;
		}
	}
}

static void bufset_free(struct bufset *bs)
{
	for (int b = 0; b < NBUFS; b++)
		free(bs->buf[b]);
}

/* account buffer number n of the stream in s */
static void bufset_hash(const struct bufset *bs, struct hash *s, uint64_t n)
{
	int b = n % NBUFS;

	if (bs->fast) {
		s->h = s->h * bs->kp + bs->bh[b];
		s->len += bs->size;
	} else {
		hash_update(s, bs->buf[b], bs->size);
	}
}

/*
 * Write the buffers of bs round-robin until iters writes (iters > 0), the
 * time t_end (t_end > 0) or *stop; count them in *n and their hash in s.
 */
static int send_loop(int fd, const struct bufset *bs, uint64_t iters,
		     double t_end, atomic_int *stop, uint64_t *n,
		     struct hash *s)
{
	for (*n = 0;; ++*n) {
		if (iters ? *n >= iters :
		    t_end ? (*n % 16 == 0 && now() >= t_end) :
		    atomic_load_explicit(stop, memory_order_relaxed))
			break;
		if (send_all(fd, bs->buf[*n % NBUFS], bs->size))
			return -1;
		bufset_hash(bs, s, *n);
	}
	return 0;
}

/* read and hash until EOF */
static int recv_hash(int fd, unsigned char *buf, size_t size, struct hash *s)
{
	for (;;) {
		ssize_t r = x_recv(fd, buf, size);

		if (r > 0) {
			hash_update(s, buf, r);
			atomic_fetch_add_explicit(&progress, 1,
						  memory_order_relaxed);
			continue;
		}
		if (r == 0)
			return 0;
		if (errno == EINTR)
			continue;
		fprintf(stderr, "%s: recv: %s\n", prog,
			errno == EAGAIN ? "timed out" : strerror(errno));
		return -1;
	}
}

/* ---------------------------------------------------------- CPU time */

struct cpu {
	double user, sys, softirq;	/* seconds */
};

static double node_softirq(void)
{
	unsigned long long v[7];
	FILE *f = fopen("/proc/stat", "r");
	int got;

	if (!f)
		return 0;
	got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		     &v[2], &v[3], &v[4], &v[5], &v[6]);
	fclose(f);
	return got == 7 ? (double)v[6] / sysconf(_SC_CLK_TCK) : 0;
}

static void cpu_now(struct cpu *c)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	c->user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	c->sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	c->softirq = node_softirq();
}

/* ------------------------------------------------------------ server */

struct bidir_tx {
	int fd;
	struct bufset bs;
	uint64_t count;
	atomic_int stop;
	int rc;
};

/* count writes when the client asked for a count, else until its EOF */
static void *bidir_sender(void *arg)
{
	struct bidir_tx *tx = arg;
	struct hash s = { 0 };
	uint64_t n;

	tx->rc = send_loop(tx->fd, &tx->bs, tx->count, 0, &tx->stop, &n, &s);
	return NULL;
}

/*
 * The idle connections of the conns test: one thread polls them all and
 * echoes whatever arrives, until each one's EOF. An idle connection thus
 * costs the server no thread, whose stacks would count in the conns test's
 * memory per connection. serve_one() hands them over in held.fds; the
 * thread takes them in at its next wake-up (at most HOLD_POLL_MS later).
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t more;
	int *fds;
	int n, cap;
	int started;
} held = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.more = PTHREAD_COND_INITIALIZER,
};

static void *holder(void *arg)
{
	unsigned char *buf = malloc(HOLD_BUF);
	struct pollfd *pfd = NULL;
	int n = 0, cap = 0;

	(void)arg;
	if (!buf)
		fail("%s", "out of memory");
	for (;;) {
		int r;

		pthread_mutex_lock(&held.lock);
		while (!n && !held.n)
			pthread_cond_wait(&held.more, &held.lock);
		if (n + held.n > cap) {
			cap = 2 * (n + held.n);
			pfd = realloc(pfd, cap * sizeof(*pfd));
			if (!pfd)
				fail("%s", "out of memory");
		}
		for (int i = 0; i < held.n; i++)
			pfd[n++] = (struct pollfd){
				.fd = held.fds[i], .events = POLLIN,
			};
		held.n = 0;
		pthread_mutex_unlock(&held.lock);

		r = x_poll(pfd, n, HOLD_POLL_MS);
		if (r < 0 && errno != EINTR)
			die("poll (held connections)");
		for (int i = 0; r > 0 && i < n; i++) {
			ssize_t got = 0;

			if (!pfd[i].revents)
				continue;
			if (!(pfd[i].revents & POLLNVAL)) {
				got = x_recv(pfd[i].fd, buf, HOLD_BUF);
				if (got > 0 && !send_all(pfd[i].fd, buf, got))
					continue;
				if (got < 0 && errno == EINTR)
					continue;
				if (got < 0)
					fprintf(stderr, "%s: held connection: recv: %s\n",
						prog, strerror(errno));
				x_close(pfd[i].fd);
			}
			/* drop it: the last one moves here and is looked at */
			pfd[i--] = pfd[--n];
		}
	}
	return NULL;
}

/* hand a connection over to holder(); -1 if that cannot be done */
static int hold(int fd)
{
	int rc = 0;

	pthread_mutex_lock(&held.lock);
	if (!held.started) {
		pthread_t th;

		if (pthread_create(&th, NULL, holder, NULL)) {
			rc = -1;
			goto out;
		}
		pthread_detach(th);
		held.started = 1;
	}
	if (held.n == held.cap) {
		int cap = held.cap ? 2 * held.cap : 64;
		int *fds = realloc(held.fds, cap * sizeof(*fds));

		if (!fds) {
			rc = -1;
			goto out;
		}
		held.fds = fds;
		held.cap = cap;
	}
	held.fds[held.n++] = fd;
	pthread_cond_signal(&held.more);
out:
	pthread_mutex_unlock(&held.lock);
	if (rc)
		fprintf(stderr, "%s: cannot hold a connection\n", prog);
	return rc;
}

/* 0 when done, 1 when the connection is held open by holder(), -1 on error */
static int serve_one(int fd)
{
	struct hdr h;
	unsigned char *buf;
	int rc = -1;

	set_opts(fd);
	if (recv_all(fd, &h, sizeof(h), 0))
		return -1;
	if (h.magic != MAGIC || h.version != VERSION ||
	    (h.test != TEST_STATS && (!h.size || h.size > MAX_SIZE))) {
		fprintf(stderr, "%s: bad header\n", prog);
		return -1;
	}
	if (h.test == TEST_STATS) {
		struct srvstat st;
		struct cpu c;

		cpu_now(&c);
		st.user_us = c.user * 1e6;
		st.sys_us = c.sys * 1e6;
		st.softirq_us = c.softirq * 1e6;
		return send_all(fd, &st, sizeof(st));
	}
	if (h.test == TEST_CONNS) {
		/* the client counts the connection open when this is back */
		if (send_all(fd, &h.count, sizeof(h.count)))
			return -1;
		if (!(h.count & 1))
			return hold(fd) ? -1 : 1;
		/*
		 * A busy one, served as pingpong; its first round trip waits
		 * until all the others are open, which may take longer than
		 * the receive timeout: none (EOF still ends it).
		 */
		if (tr != T_RSOCKET) {
			struct timeval tv = { 0 };

			x_setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				     sizeof(tv));
		}
		h.test = TEST_PINGPONG;
	}
	buf = malloc(h.size);
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	if (h.test == TEST_PINGPONG) {
		for (;;) {
			int r = recv_all(fd, buf, h.size, 1);

			if (r == 1) {
				rc = 0;
				break;
			}
			if (r < 0 || send_all(fd, buf, h.size))
				break;
		}
	} else if (h.test == TEST_STREAM) {
		struct hash s = { 0 };
		struct reply rep;

		if (!recv_hash(fd, buf, h.size, &s)) {
			rep.bytes = s.len;
			rep.hash = hash_final(&s);
			rc = send_all(fd, &rep, sizeof(rep));
		}
	} else if (h.test == TEST_BIDIR) {
		struct bidir_tx tx = { .fd = fd, .count = h.count };
		struct hash s = { 0 };
		struct reply rep;
		pthread_t th;
		int r;

		bufset_init(&tx.bs, h.size, SEED_SERVER);
		if (pthread_create(&th, NULL, bidir_sender, &tx))
			fail("%s", "cannot start a thread");
		r = recv_hash(fd, buf, h.size, &s);
		atomic_store(&tx.stop, 1);
		if (r)
			shutdown(fd, SHUT_RDWR);	/* unblock the sender */
		pthread_join(th, NULL);
		if (!r && !tx.rc) {
			rep.bytes = s.len;
			rep.hash = hash_final(&s);
			rc = send_all(fd, &rep, sizeof(rep));
		}
		bufset_free(&tx.bs);
	} else {
		fprintf(stderr, "%s: unknown test %u\n", prog, h.test);
	}
	free(buf);
	return rc;
}

static void *conn_thread(void *arg)
{
	int fd = (int)(intptr_t)arg;
	int r = serve_one(fd);

	if (r < 0)
		fprintf(stderr, "%s: connection failed\n", prog);
	if (r <= 0)
		x_close(fd);
	atomic_fetch_sub(&busy, 1);
	return NULL;
}

/*
 * One thread accepts on all the listening sockets, polling them (rpoll for
 * rsockets: one thread blocked in raccept per listener stalled rsockets
 * with four listeners), and starts a thread per connection.
 */
static int server(const char *bind_addr, int port, int nports)
{
	struct pollfd pfd[MAX_STREAMS];
	pthread_attr_t attr;
	double warned = 0;

	/* for the conns test: as many as the kernel's default fs.nr_open */
	raise_nofile(MAX_CONNS);
	for (int i = 0; i < nports; i++) {
		struct sockaddr_storage ss;
		socklen_t len;
		int l, one = 1;

		if (hps_parse_addr(bind_addr, port + i, &ss, &len))
			fail("bad address %s", bind_addr);
		l = x_socket(ss.ss_family);
		if (l < 0)
			die("socket");
		x_setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (x_bind(l, (struct sockaddr *)&ss, len))
			die("bind");
		if (x_listen(l, 64))
			die("listen");
		pfd[i].fd = l;
		pfd[i].events = POLLIN;
	}
	fprintf(stderr, "%s: %s server listening on %s port %d%s\n", prog,
		tnames[tr], bind_addr, port, nports > 1 ? " and up" : "");
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		int n = nports == 1 ? 1 : x_poll(pfd, nports, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		for (int i = 0; i < nports; i++) {
			pthread_t th;
			int fd;

			if (nports > 1 && !(pfd[i].revents & POLLIN))
				continue;
			fd = x_accept(pfd[i].fd);
			if (fd < 0) {
				if (errno == EINTR || errno == ECONNABORTED ||
				    errno == EAGAIN)
					continue;
				if (errno != EMFILE && errno != ENFILE &&
				    errno != ENOBUFS && errno != ENOMEM)
					die("accept");
				/* out of descriptors or memory: wait, go on */
				if (now() >= warned + 1) {
					fprintf(stderr, "%s: accept: %s\n",
						prog, strerror(errno));
					warned = now();
				}
				usleep(100000);
				continue;
			}
			atomic_fetch_add(&busy, 1);
			if (pthread_create(&th, &attr, conn_thread,
					   (void *)(intptr_t)fd)) {
				fprintf(stderr, "%s: cannot start a connection thread\n",
					prog);
				x_close(fd);
				atomic_fetch_sub(&busy, 1);
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------ client */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

static int connect_to(const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	if (hps_parse_addr(addr, port, &ss, &len))
		fail("bad address %s", addr);
	fd = x_socket(ss.ss_family);
	if (fd < 0)
		die(tr == T_SMC ? "socket(AF_SMC)" : "socket");
	set_opts(fd);
	if (x_connect(fd, (struct sockaddr *)&ss, len))
		die("connect");
	return fd;
}

static int send_hdr(int fd, uint32_t test, uint32_t size, uint64_t count)
{
	struct hdr h = {
		.magic = MAGIC, .version = VERSION, .test = test,
		.size = size, .count = count,
	};

	return send_all(fd, &h, sizeof(h));
}

/* the server's CPU counters, over a connection of their own */
static int server_stats(const char *addr, int port, struct cpu *c)
{
	struct srvstat st;
	int fd = connect_to(addr, port), rc;

	rc = send_hdr(fd, TEST_STATS, 0, 0) ||
	     recv_all(fd, &st, sizeof(st), 0);
	x_close(fd);
	if (rc)
		return -1;
	c->user = st.user_us / 1e6;
	c->sys = st.sys_us / 1e6;
	c->softirq = st.softirq_us / 1e6;
	return 0;
}

/* one connection of a test, run by a thread of its own */
struct worker {
	pthread_t th;
	const char *addr;
	int port;
	int fd;			/* open and started already, or -1 */
	uint32_t test;		/* TEST_* */
	uint32_t size;
	uint64_t iters;
	double seconds;
	pthread_barrier_t *start;
	/* results */
	int rc;
	uint64_t bytes;		/* moved in the timed part, both ways */
	double t0, t1;		/* the timed part */
	double *rtt;		/* pingpong round trips, n of them */
	uint64_t n;
	double sum;
};

static int pingpong(int fd, struct worker *w)
{
	uint32_t size = w->size;
	uint64_t warm, cap, n = 0, i, iters = w->iters;
	size_t pool_len = size + 4096;
	unsigned char *pool = malloc(pool_len), *rbuf = malloc(size);
	double *rtt, t_end = 0, sum = 0;

	if (!pool || !rbuf)
		fail("%s", "out of memory");
	fill_random(pool, pool_len, 0x1234567 + size);
	warm = (iters ? iters : 2000) / 10;
	warm = warm < 10 ? 10 : warm > 1000 ? 1000 : warm;
	cap = iters ? iters : 1 << 20;
	rtt = malloc(cap * sizeof(*rtt));
	if (!rtt)
		fail("%s", "out of memory");

	for (i = 0;; i++) {
		const unsigned char *sbuf = pool + (i * 257) % 4096;
		int timed = i >= warm, check;
		double t0 = 0;

		if (timed) {
			uint64_t k = i - warm;

			if (iters ? k >= iters : k >= cap)
				break;
			if (!iters && k % 64 == 0 && now() >= t_end)
				break;
		} else if (i + 1 == warm) {
			t_end = now() + w->seconds;
		}
		check = i % 16 == 0 || (iters && i - warm + 1 == iters);
		if (timed)
			t0 = now();
		if (timed && !n)
			w->t0 = t0;
		if (send_all(fd, sbuf, size) || recv_all(fd, rbuf, size, 0))
			return 1;
		if (timed) {
			rtt[n] = now() - t0;
			sum += rtt[n++];
		}
		if (check && memcmp(sbuf, rbuf, size)) {
			fprintf(stderr, "%s: pingpong: echo %llu differs from what was sent\n",
				prog, (unsigned long long)i);
			return 1;
		}
	}
	w->t1 = now();
	if (w->fd < 0 && x_shutdown(fd, SHUT_WR))
		die("shutdown");
	if (!n)
		fail("%s", "pingpong: no timed iterations");
	w->rtt = rtt;
	w->n = n;
	w->sum = sum;
	w->bytes = 2 * (uint64_t)size * n;
	free(pool);
	free(rbuf);
	return 0;
}

static int check_reply(const struct reply *rep, const struct hash *s,
		       const char *what)
{
	if (rep->bytes == s->len && rep->hash == hash_final(s))
		return 0;
	fprintf(stderr, "%s: %s: server got %llu bytes, checksum %016llx; sent %llu bytes, checksum %016llx\n",
		prog, what, (unsigned long long)rep->bytes,
		(unsigned long long)rep->hash, (unsigned long long)s->len,
		(unsigned long long)hash_final(s));
	return 1;
}

static int stream(int fd, struct worker *w)
{
	struct bufset bs;
	struct hash s = { 0 };
	struct reply rep;
	uint64_t n;

	bufset_init(&bs, w->size, SEED_CLIENT);
	w->t0 = now();
	if (send_loop(fd, &bs, w->iters, w->iters ? 0 : w->t0 + w->seconds,
		      NULL, &n, &s))
		return 1;
	if (x_shutdown(fd, SHUT_WR))
		die("shutdown");
	if (recv_all(fd, &rep, sizeof(rep), 0))
		return 1;
	w->t1 = now();
	w->n = n;
	w->bytes = s.len;
	bufset_free(&bs);
	return check_reply(&rep, &s, "stream");
}

struct bidir_tx_c {
	int fd;
	struct worker *w;
	struct bufset bs;
	struct hash s;
	uint64_t n;
	int rc;
};

static void *bidir_client_sender(void *arg)
{
	struct bidir_tx_c *tx = arg;
	struct worker *w = tx->w;

	tx->rc = send_loop(tx->fd, &tx->bs, w->iters,
			   w->iters ? 0 : w->t0 + w->seconds, NULL, &tx->n,
			   &tx->s);
	if (!tx->rc && x_shutdown(tx->fd, SHUT_WR))
		tx->rc = -1;
	return NULL;
}

/*
 * Receive the server's stream, hashing all but the last 16 bytes seen so
 * far: at EOF those are the server's reply about our stream.
 */
static int bidir(int fd, struct worker *w)
{
	struct bidir_tx_c tx = { .fd = fd, .w = w };
	struct hash rs = { 0 }, want = { 0 };
	unsigned char tail[sizeof(struct reply)], *buf;
	size_t tlen = 0;
	struct bufset rbs;
	struct reply rep;
	pthread_t th;
	int rc = 1;

	bufset_init(&tx.bs, w->size, SEED_CLIENT);
	bufset_init(&rbs, w->size, SEED_SERVER);
	buf = malloc(w->size);
	if (!buf)
		fail("%s", "out of memory");
	w->t0 = now();
	if (pthread_create(&th, NULL, bidir_client_sender, &tx))
		fail("%s", "cannot start a thread");
	for (;;) {
		ssize_t r = x_recv(fd, buf, w->size);
		size_t emit, from_tail, from_buf;

		if (r > 0) {
			atomic_fetch_add_explicit(&progress, 1,
						  memory_order_relaxed);
			if (tlen + r <= sizeof(tail)) {
				memcpy(tail + tlen, buf, r);
				tlen += r;
				continue;
			}
			emit = tlen + r - sizeof(tail);
			from_tail = emit < tlen ? emit : tlen;
			from_buf = emit - from_tail;
			hash_update(&rs, tail, from_tail);
			hash_update(&rs, buf, from_buf);
			memmove(tail, tail + from_tail, tlen - from_tail);
			memcpy(tail + tlen - from_tail, buf + from_buf,
			       r - from_buf);
			tlen = sizeof(tail);
			continue;
		}
		if (r == 0)
			break;
		if (errno == EINTR)
			continue;
		fprintf(stderr, "%s: recv: %s\n", prog,
			errno == EAGAIN ? "timed out" : strerror(errno));
		x_shutdown(fd, SHUT_RDWR);
		pthread_join(th, NULL);
		goto out;
	}
	pthread_join(th, NULL);
	w->t1 = now();
	if (tx.rc)
		goto out;
	if (tlen != sizeof(tail)) {
		fprintf(stderr, "%s: bidir: the server's stream ended without its reply\n",
			prog);
		goto out;
	}
	memcpy(&rep, tail, sizeof(rep));
	if (check_reply(&rep, &tx.s, "bidir"))
		goto out;
	for (uint64_t i = 0; i < rs.len / w->size; i++)
		bufset_hash(&rbs, &want, i);
	if (rs.len % w->size || hash_final(&rs) != hash_final(&want)) {
		fprintf(stderr, "%s: bidir: got %llu bytes from the server, checksum %016llx; expected %llu bytes, checksum %016llx\n",
			prog, (unsigned long long)rs.len,
			(unsigned long long)hash_final(&rs),
			(unsigned long long)want.len,
			(unsigned long long)hash_final(&want));
		goto out;
	}
	w->n = tx.n;
	w->bytes = tx.s.len + rs.len;
	rc = 0;
out:
	bufset_free(&tx.bs);
	bufset_free(&rbs);
	free(buf);
	return rc;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	int fd = w->fd >= 0 ? w->fd : connect_to(w->addr, w->port);

	if (w->fd < 0 && send_hdr(fd, w->test, w->size, w->iters)) {
		w->rc = 1;
		pthread_barrier_wait(w->start);
		return NULL;
	}
	pthread_barrier_wait(w->start);
	switch (w->test) {
	case TEST_PINGPONG:
		w->rc = pingpong(fd, w);
		break;
	case TEST_STREAM:
		w->rc = stream(fd, w);
		break;
	case TEST_BIDIR:
		w->rc = bidir(fd, w);
		break;
	}
	if (w->fd < 0)
		x_close(fd);
	return NULL;
}

/* what a test measured; NAN where it does not apply */
struct result {
	const char *test;
	uint32_t size;
	uint64_t iters;
	double med, p99, p999, mean;	/* us */
	double mbps;
	int streams;
	double rate;			/* round trips or connections per s */
	uint64_t bytes;
	double secs;
	/* conns only (conns is 0 for the other tests) */
	int conns;			/* asked for */
	int conn_err;			/* the errno that ended the opening */
	int busy;			/* connections doing pingpong */
	int ends;			/* ends of a connection on this host */
	double setup_med, setup_p99;	/* us, one connection's opening */
	double busy_rate;		/* the busy ones' round trips per s */
	double check_secs, close_secs;
	double mem_kib, slab_kib, sunr_kib, vmalloc_kib; /* per end */
};

/*
 * run n workers at once; port_step 1 gives worker i port + i; with fds,
 * worker i runs on fds[i], whose header is sent, and leaves it open
 */
static int run_workers(struct result *res, const char *addr, int port,
		       int port_step, int n, uint32_t test, uint32_t size,
		       uint64_t iters, double seconds, const int *fds)
{
	struct worker *w = calloc(n, sizeof(*w));
	pthread_barrier_t start;
	double t0 = INFINITY, t1 = 0, *all = NULL, sum = 0;
	uint64_t nrtt = 0;
	int rc = 0;

	if (!w)
		fail("%s", "out of memory");
	pthread_barrier_init(&start, NULL, n);
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){
			.addr = addr, .port = port + i * port_step,
			.fd = fds ? fds[i] : -1, .test = test, .size = size,
			.iters = iters, .seconds = seconds, .start = &start,
		};
		if (pthread_create(&w[i].th, NULL, worker_run, &w[i]))
			fail("%s", "cannot start a thread");
	}
	for (int i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
	pthread_barrier_destroy(&start);

	res->med = res->p99 = res->p999 = res->mean = NAN;
	res->mbps = res->rate = NAN;
	res->bytes = 0;
	res->iters = 0;
	for (int i = 0; i < n; i++) {
		rc |= w[i].rc;
		if (w[i].rc)
			continue;
		t0 = w[i].t0 < t0 ? w[i].t0 : t0;
		t1 = w[i].t1 > t1 ? w[i].t1 : t1;
		res->bytes += w[i].bytes;
		res->iters += w[i].n;
		nrtt += w[i].rtt ? w[i].n : 0;
		sum += w[i].sum;
	}
	if (rc)
		goto out;
	res->secs = t1 - t0;
	if (test == TEST_PINGPONG) {
		uint64_t k = 0;

		all = malloc(nrtt * sizeof(*all));
		if (!all)
			fail("%s", "out of memory");
		for (int i = 0; i < n; i++) {
			memcpy(all + k, w[i].rtt, w[i].n * sizeof(*all));
			k += w[i].n;
		}
		qsort(all, nrtt, sizeof(*all), cmp_double);
		/* one-way latency = RTT / 2, in microseconds */
		res->med = pct(all, nrtt, 0.5) * 5e5;
		res->p99 = pct(all, nrtt, 0.99) * 5e5;
		res->p999 = pct(all, nrtt, 0.999) * 5e5;
		res->mean = sum / nrtt * 5e5;
		res->rate = nrtt / res->secs;
	} else {
		res->mbps = res->bytes / res->secs / 1e6;
	}
out:
	for (int i = 0; i < n; i++)
		free(w[i].rtt);
	free(all);
	free(w);
	return rc;
}

static int connrate(struct result *res, const char *addr, int port,
		    uint32_t size, uint64_t iters, double seconds)
{
	unsigned char *sbuf = malloc(size), *rbuf = malloc(size);
	uint64_t cap = iters ? iters : 1 << 20, n = 0;
	double *t = malloc(cap * sizeof(*t)), start, end, sum = 0;

	if (!sbuf || !rbuf || !t)
		fail("%s", "out of memory");
	fill_random(sbuf, size, 0x7654321 + size);
	start = now();
	end = start + seconds;
	while (iters ? n < iters : n < cap && now() < end) {
		double t0 = now();
		int fd = connect_to(addr, port);

		if (send_hdr(fd, TEST_PINGPONG, size, 1) ||
		    send_all(fd, sbuf, size) || recv_all(fd, rbuf, size, 0))
			return 1;
		if (memcmp(sbuf, rbuf, size)) {
			fprintf(stderr, "%s: connrate: echo %llu differs from what was sent\n",
				prog, (unsigned long long)n);
			return 1;
		}
		if (x_close(fd))
			die("close");
		t[n] = now() - t0;
		sum += t[n++];
	}
	res->secs = now() - start;
	qsort(t, n, sizeof(*t), cmp_double);
	res->med = pct(t, n, 0.5) * 1e6;
	res->p99 = pct(t, n, 0.99) * 1e6;
	res->p999 = pct(t, n, 0.999) * 1e6;
	res->mean = sum / n * 1e6;
	res->rate = n / res->secs;
	res->mbps = NAN;
	res->iters = n;
	res->bytes = 2 * (uint64_t)size * n;
	free(t);
	free(sbuf);
	free(rbuf);
	return 0;
}

/* the counters of /proc/meminfo that conns reads, in KiB; -1 if missing */
struct mem {
	long long avail, slab, sunreclaim, vmalloc;
};

static void mem_now(struct mem *m)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256], key[64];
	long long v;

	m->avail = m->slab = m->sunreclaim = m->vmalloc = -1;
	if (!f) {
		fprintf(stderr, "%s: warning: /proc/meminfo: %s\n", prog,
			strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63[^:]: %lld", key, &v) != 2)
			continue;
		if (!strcmp(key, "MemAvailable"))
			m->avail = v;
		else if (!strcmp(key, "Slab"))
			m->slab = v;
		else if (!strcmp(key, "SUnreclaim"))
			m->sunreclaim = v;
		else if (!strcmp(key, "VmallocUsed"))
			m->vmalloc = v;
	}
	fclose(f);
}

/* (after - before) / n, NAN when a counter is missing or n is 0 */
static double per(long long before, long long after, int n)
{
	if (before < 0 || after < 0 || !n)
		return NAN;
	return (double)(after - before) / n;
}

/*
 * Connection ends on this host, per connection: 2 when the server's
 * address is loopback, unspecified or one of this host's interface
 * addresses (getifaddrs), so that the server's end is here too; else 1.
 */
static int ends_here(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)ss;
	struct ifaddrs *ifa;
	int local = 0;

	if (ss->ss_family == AF_INET ?
	    (ntohl(a4->sin_addr.s_addr) >> 24 == 127 ||
	     a4->sin_addr.s_addr == htonl(INADDR_ANY)) :
	    (IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr) ||
	     IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr)))
		return 2;
	if (getifaddrs(&ifa)) {
		fprintf(stderr, "%s: warning: getifaddrs: %s; counting one end per connection here (see --local-ends)\n",
			prog, strerror(errno));
		return 1;
	}
	for (struct ifaddrs *i = ifa; i && !local; i = i->ifa_next) {
		const struct sockaddr_in *i4 = (void *)i->ifa_addr;
		const struct sockaddr_in6 *i6 = (void *)i->ifa_addr;

		if (!i->ifa_addr || i->ifa_addr->sa_family != ss->ss_family)
			continue;
		if (ss->ss_family == AF_INET)
			local = i4->sin_addr.s_addr == a4->sin_addr.s_addr;
		else
			local = IN6_ARE_ADDR_EQUAL(&i6->sin6_addr,
						   &a6->sin6_addr);
	}
	freeifaddrs(ifa);
	return local ? 2 : 1;
}

/*
 * One connection of conns, open when the server has echoed its tag (the
 * header's count); else -1 with errno set and *what the step that failed.
 */
static int conns_open(const struct sockaddr_storage *ss, socklen_t len,
		      uint32_t size, uint64_t tag, const char **what)
{
	uint64_t ack;
	int fd, e;

	*what = "socket";
	fd = x_socket(ss->ss_family);
	if (fd < 0)
		return -1;
	set_opts(fd);
	*what = "connect";
	if (x_connect(fd, (const struct sockaddr *)ss, len))
		goto fail;
	*what = "send";
	if (send_hdr(fd, TEST_CONNS, size, tag))
		goto fail;
	*what = "recv";
	if (recv_all(fd, &ack, sizeof(ack), 0))
		goto fail;
	if (ack != tag) {
		fprintf(stderr, "%s: conns: the server acknowledged %llx for %llx\n",
			prog, (unsigned long long)ack,
			(unsigned long long)tag);
		exit(1);
	}
	return fd;
fail:
	e = errno;
	x_close(fd);
	errno = e;
	return -1;
}

/* the name of an errno value, as in <errno.h> */
static const char *errname(int e)
{
	static char num[16];
	const char *name = strerrorname_np(e);

	if (name)
		return name;
	snprintf(num, sizeof(num), "errno %d", e);
	return num;
}

/*
 * conns: nconns connections opened one after another and held open, the
 * first nbusy of them then doing pingpong at once while the others idle,
 * then one checked echo on every connection, then all closed. A connection
 * that cannot be opened ends the opening (res->conn_err) and the rest runs
 * on those opened (none: res->iters is 0). 1 on any other error.
 */
static int conns(struct result *res, const char *addr, int port,
		 uint32_t size, uint64_t iters, double seconds, int nconns,
		 int nbusy, int ends)
{
	int *fds = malloc(nconns * sizeof(*fds));
	double *t = malloc(nconns * sizeof(*t)), start, last;
	unsigned char *sbuf = malloc(size), *rbuf = malloc(size);
	struct sockaddr_storage ss;
	struct mem m0, m1;
	socklen_t len;
	int n, nends, rc = 1;

	if (!fds || !t || !sbuf || !rbuf)
		fail("%s", "out of memory");
	/* touched now, so that their pages are not counted as connections' */
	memset(fds, 0xff, nconns * sizeof(*fds));
	memset(t, 0, nconns * sizeof(*t));
	memset(sbuf, 0, size);
	memset(rbuf, 0, size);
	if (hps_parse_addr(addr, port, &ss, &len))
		fail("bad address %s", addr);
	res->ends = ends ? ends : ends_here(&ss);
	res->conns = nconns;

	mem_now(&m0);
	start = last = now();
	for (n = 0; n < nconns; n++) {
		double t0 = now();
		const char *what;
		int fd = conns_open(&ss, len, size,
				    (uint64_t)n << 1 | (n < nbusy), &what);

		if (fd < 0) {
			res->conn_err = errno;
			fprintf(stderr, "%s: conns: connection %d of %d: %s: %s\n",
				prog, n + 1, nconns, what, strerror(errno));
			break;
		}
		fds[n] = fd;
		last = now();
		t[n] = last - t0;
	}
	mem_now(&m1);
	res->iters = n;
	res->secs = last - start;
	res->rate = n ? n / res->secs : NAN;
	nends = n * res->ends;
	res->mem_kib = per(m1.avail, m0.avail, nends);
	res->slab_kib = per(m0.slab, m1.slab, nends);
	res->sunr_kib = per(m0.sunreclaim, m1.sunreclaim, nends);
	res->vmalloc_kib = per(m0.vmalloc, m1.vmalloc, nends);
	res->med = res->p99 = res->p999 = res->mean = NAN;
	res->setup_med = res->setup_p99 = res->busy_rate = NAN;
	res->check_secs = res->close_secs = NAN;
	res->mbps = NAN;
	res->bytes = 0;
	res->busy = n < nbusy ? n : nbusy;
	res->streams = res->busy;
	if (!n) {
		rc = 0;
		goto out;
	}
	qsort(t, n, sizeof(*t), cmp_double);
	res->setup_med = pct(t, n, 0.5) * 1e6;
	res->setup_p99 = pct(t, n, 0.99) * 1e6;

	/* the busy ones, beside the idle ones */
	if (res->busy) {
		struct result b = { 0 };

		if (run_workers(&b, addr, port, 0, res->busy, TEST_PINGPONG,
				size, iters, seconds, fds))
			goto out;
		res->med = b.med;
		res->p99 = b.p99;
		res->p999 = b.p999;
		res->mean = b.mean;
		res->busy_rate = b.rate;
		res->bytes += b.bytes;
	}

	/* every connection works: one message each way, compared */
	res->check_secs = now();
	for (int i = 0; i < n; i++) {
		fill_random(sbuf, size, SEED_CHECK + 2 * (uint64_t)i);
		memcpy(sbuf, &i, size < sizeof(i) ? size : sizeof(i));
		if (send_all(fds[i], sbuf, size) ||
		    recv_all(fds[i], rbuf, size, 0)) {
			fprintf(stderr, "%s: conns: connection %d failed its echo\n",
				prog, i + 1);
			goto out;
		}
		if (memcmp(sbuf, rbuf, size)) {
			fprintf(stderr, "%s: conns: the echo on connection %d differs from what was sent\n",
				prog, i + 1);
			goto out;
		}
	}
	res->check_secs = now() - res->check_secs;
	res->bytes += 2 * (uint64_t)size * n;

	res->close_secs = now();
	for (int i = 0; i < n; i++) {
		if (x_close(fds[i]))
			fprintf(stderr, "%s: warning: conns: close: %s\n",
				prog, strerror(errno));
		atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
	}
	res->close_secs = now() - res->close_secs;
	rc = 0;
out:
	free(fds);
	free(t);
	free(sbuf);
	free(rbuf);
	return rc;
}

/* ------------------------------------------------------------ output */

static void col(double v, const char *fmt)
{
	putchar(',');
	if (!isnan(v))
		printf(fmt, v);
}

/* the human-readable line of conns */
static void report_conns(const struct result *r)
{
	printf("%s conns size %u busy %d count %llu of %d", tnames[tr],
	       r->size, r->busy, (unsigned long long)r->iters, r->conns);
	if (r->conn_err)
		printf(" connections, then %s", errname(r->conn_err));
	printf(":");
	if (!r->iters) {
		printf(" nothing measured\n");
		return;
	}
	printf(" opened in %.3f s, %.1f connections/s (each: median %.0f us, p99 %.0f us);",
	       r->secs, r->rate, r->setup_med, r->setup_p99);
	printf(" per connection end (%d per connection on this host): MemAvailable %.1f KiB, Slab %.1f KiB, SUnreclaim %.1f KiB, VmallocUsed %.1f KiB;",
	       r->ends, r->mem_kib, r->slab_kib, r->sunr_kib, r->vmalloc_kib);
	if (r->busy)
		printf(" busy: one-way latency median %.2f us, p99 %.2f us, p99.9 %.2f us, mean %.2f us, %.1f round trips/s;",
		       r->med, r->p99, r->p999, r->mean, r->busy_rate);
	printf(" %llu echoes of %u B checked in %.3f s; closed in %.3f s; data ok\n",
	       (unsigned long long)r->iters, r->size, r->check_secs,
	       r->close_secs);
}

static void report(const struct result *r, const struct cpu *c0,
		   const struct cpu *c1, const struct cpu *s0,
		   const struct cpu *s1, int csv, int csv_header)
{
	double gib = r->bytes / (double)(1ull << 30);
	double cu = NAN, cs = NAN, ci = NAN, su = NAN, ss = NAN, si = NAN;

	if (r->conns) {
		report_conns(r);
		goto csv;
	}
	if (gib > 0 && c0 && c1) {
		cu = (c1->user - c0->user) / gib;
		cs = (c1->sys - c0->sys) / gib;
		ci = (c1->softirq - c0->softirq) / gib;
		if (s0 && s1) {
			su = (s1->user - s0->user) / gib;
			ss = (s1->sys - s0->sys) / gib;
			si = (s1->softirq - s0->softirq) / gib;
		}
	}
	printf("%s %s size %u", tnames[tr], r->test, r->size);
	if (r->streams > 1)
		printf(" streams %d", r->streams);
	printf(" count %llu:", (unsigned long long)r->iters);
	if (!isnan(r->med))
		printf(" %s median %.2f us, p99 %.2f us, p99.9 %.2f us, mean %.2f us,",
		       strcmp(r->test, "connrate") ?
		       "one-way latency" : "connect+echo+close",
		       r->med, r->p99, r->p999, r->mean);
	if (!isnan(r->rate))
		printf(" %.1f %s/s,", r->rate,
		       strcmp(r->test, "connrate") ? "round trips" :
		       "connections");
	if (!isnan(r->mbps))
		printf(" %llu bytes in %.3f s, %.1f MB/s, %.3f Gbit/s,",
		       (unsigned long long)r->bytes, r->secs, r->mbps,
		       r->mbps * 8 / 1000);
	printf(" CPU s/GiB client usr %.3f sys %.3f softirq %.3f",
	       cu, cs, ci);
	if (!isnan(su))
		printf(", server usr %.3f sys %.3f softirq %.3f", su, ss, si);
	/* a message is r->size bytes: CPU per message, beside the latency */
	if (!isnan(r->med) && !isnan(cu) && r->size &&
	    (!strcmp(r->test, "pingpong") || !strcmp(r->test, "fanin"))) {
		double us = r->size / (double)(1ull << 30) * 1e6;

		printf("; CPU per message client %.1f us (usr+sys+softirq)",
		       (cu + cs + ci) * us);
		if (!isnan(su))
			printf(", server %.1f us", (su + ss + si) * us);
	}
	printf("; data ok\n");
csv:
	if (!csv)
		return;
	if (csv_header)
		printf("%s\n", CSV_HEADER);
	printf("%s,%s,%u,%llu", tnames[tr], r->test, r->size,
	       (unsigned long long)r->iters);
	col(r->med, "%.2f");
	col(r->p99, "%.2f");
	col(r->p999, "%.2f");
	col(r->mbps, "%.1f");
	printf(",%d", r->streams);
	col(r->rate, "%.1f");
	printf(",%llu,%.3f", (unsigned long long)r->bytes, r->secs);
	col(cu, "%.4f");
	col(cs, "%.4f");
	col(ci, "%.4f");
	col(su, "%.4f");
	col(ss, "%.4f");
	col(si, "%.4f");
	col(r->mean, "%.2f");
	if (r->conns) {
		printf(",%d,%s", r->conns,
		       r->conn_err ? errname(r->conn_err) : "");
		col(r->mem_kib, "%.2f");
		col(r->slab_kib, "%.2f");
		col(r->sunr_kib, "%.2f");
		col(r->vmalloc_kib, "%.2f");
		col(r->close_secs, "%.3f");
	} else {
		printf(",,,,,,,");
	}
	printf("\n");
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: %s --server [--transport T] [--bind ADDR] [--port P] [--nports N]\n"
		"       %s --client ADDR [--transport T] [--port P] --test TEST\n"
		"                 [--size BYTES] [--iters N | --seconds S] [--streams N]\n"
		"                 [--conns N] [--busy M] [--local-ends 1|2]\n"
		"                 [--no-nodelay] [--csv] [--csv-header]\n"
		"       %s --csv-columns\n"
		"tests: pingpong, stream, bidir, streams, fanin (hotspot), fanout, connrate,\n"
		"       conns\n"
		"transports: hps (default), tcp, rsocket, smc, hps-fb (a client of a tcp\n"
		"server); port 20000 by default\n",
		prog, prog, prog);
	exit(rc);
}

static const struct {
	const char *name;
	uint32_t wire;		/* what each connection runs */
	int multi;		/* --streams connections */
	int port_step;
} tests[] = {
	{ "pingpong", TEST_PINGPONG, 0, 0 },
	{ "stream", TEST_STREAM, 0, 0 },
	{ "bidir", TEST_BIDIR, 0, 0 },
	{ "streams", TEST_STREAM, 1, 0 },
	{ "fanin", TEST_PINGPONG, 1, 0 },
	{ "hotspot", TEST_PINGPONG, 1, 0 },
	{ "fanout", TEST_STREAM, 1, 1 },
	{ "connrate", TEST_PINGPONG, 0, 0 },
	{ "conns", TEST_CONNS, 0, 0 },
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server", no_argument, NULL, 'S' },
		{ "client", required_argument, NULL, 'c' },
		{ "transport", required_argument, NULL, 't' },
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "nports", required_argument, NULL, 'N' },
		{ "test", required_argument, NULL, 'T' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 'D' },
		{ "streams", required_argument, NULL, 'm' },
		{ "conns", required_argument, NULL, 'K' },
		{ "busy", required_argument, NULL, 'B' },
		{ "local-ends", required_argument, NULL, 'E' },
		{ "no-nodelay", no_argument, NULL, 'Y' },
		{ "csv", no_argument, NULL, 'C' },
		{ "csv-header", no_argument, NULL, 'H' },
		{ "csv-columns", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *client = NULL, *bind_addr = "0.0.0.0", *test = NULL;
	int is_server = 0, port = 20000, csv = 0, csv_header = 0, o, rc;
	int nports = 1, streams = 4, ti, have_srv;
	int nconns = 1000, nbusy = 2, ends = 0;
	unsigned long long size = 0, iters = 0;
	struct cpu c0, c1, s0, s1;
	struct result res = { 0 };
	double seconds = 0;
	pthread_t wd;
	char *end;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'S': is_server = 1; break;
		case 'c': client = optarg; break;
		case 't':
			for (tr = 0; tr <= T_HPS_FB; tr++)
				if (!strcmp(optarg, tnames[tr]))
					break;
			if (tr > T_HPS_FB)
				fail("unknown transport %s", optarg);
			break;
		case 'b': bind_addr = optarg; break;
		case 'Y': nodelay = 0; break;
		case 'p':
			port = strtol(optarg, &end, 10);
			if (*end || port <= 0 || port > 65535)
				fail("bad port %s", optarg);
			break;
		case 'N':
			nports = strtol(optarg, &end, 10);
			if (*end || nports <= 0 || nports > MAX_STREAMS)
				fail("bad port count %s", optarg);
			break;
		case 'T': test = optarg; break;
		case 's':
			size = strtoull(optarg, &end, 0);
			if (*end || !size || size > MAX_SIZE)
				fail("bad size %s", optarg);
			break;
		case 'n':
			iters = strtoull(optarg, &end, 0);
			if (*end || !iters)
				fail("bad iteration count %s", optarg);
			break;
		case 'D':
			seconds = strtod(optarg, &end);
			if (*end || seconds <= 0)
				fail("bad duration %s", optarg);
			break;
		case 'm':
			streams = strtol(optarg, &end, 10);
			if (*end || streams <= 0 || streams > MAX_STREAMS)
				fail("bad stream count %s", optarg);
			break;
		case 'K':
			nconns = strtol(optarg, &end, 10);
			if (*end || nconns <= 0 || nconns > MAX_CONNS)
				fail("bad connection count %s", optarg);
			break;
		case 'B':
			nbusy = strtol(optarg, &end, 10);
			if (*end || nbusy < 0 || nbusy > MAX_STREAMS)
				fail("bad busy connection count %s", optarg);
			break;
		case 'E':
			ends = strtol(optarg, &end, 10);
			if (*end || ends < 1 || ends > 2)
				fail("bad connection end count %s (1 or 2)",
				     optarg);
			break;
		case 'C': csv = 1; break;
		case 'H': csv = csv_header = 1; break;
		case 'L': printf("%s\n", CSV_HEADER); return 0;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc || is_server == !!client)
		usage(2);
	signal(SIGPIPE, SIG_IGN);
	if (pthread_create(&wd, NULL, watchdog, NULL))
		fail("%s", "cannot start the watchdog thread");
	pthread_detach(wd);

	if (is_server) {
		if (port + nports - 1 > 65535)
			fail("%s", "port range beyond 65535");
		return server(bind_addr, port, nports);
	}

	if (!test)
		usage(2);
	for (ti = 0; ti < (int)(sizeof(tests) / sizeof(tests[0])); ti++)
		if (!strcmp(test, tests[ti].name))
			break;
	if (ti == (int)(sizeof(tests) / sizeof(tests[0])))
		fail("unknown test %s", test);
	if (iters && seconds)
		fail("%s", "--iters and --seconds exclude each other");
	if (!size)
		size = tests[ti].wire == TEST_PINGPONG ||
		       tests[ti].wire == TEST_CONNS ? 64 : 65536;
	if (!iters && !seconds) {
		if (tests[ti].wire == TEST_CONNS)
			iters = 1000;
		else if (tests[ti].wire == TEST_PINGPONG &&
			 strcmp(test, "connrate"))
			iters = 10000;
		else
			seconds = 5;
	}
	if (!tests[ti].multi)
		streams = 1;
	if (tests[ti].port_step && port + streams - 1 > 65535)
		fail("%s", "port range beyond 65535");

	atomic_store(&busy, 1);
	res.test = test;
	res.size = size;
	res.streams = streams;
	if (tests[ti].wire == TEST_CONNS) {
		/* rsockets take more than one descriptor per connection */
		rlim_t want = (rlim_t)nconns * (tr == T_RSOCKET ? 3 : 1) + 64;
		rlim_t have;

		if (nbusy > nconns)
			fail("%s", "--busy exceeds --conns");
		have = raise_nofile(want);
		if (have < want) {
			fprintf(stderr, "%s: conns: %d connections need about %llu file descriptors, and RLIMIT_NOFILE allows %llu: raise its hard limit (ulimit -Hn, as root) or ask for fewer (--conns)\n",
				prog, nconns, (unsigned long long)want,
				(unsigned long long)have);
			return 1;
		}
		if (conns(&res, client, port, size, iters, seconds, nconns,
			  nbusy, ends))
			return 1;
		report(&res, NULL, NULL, NULL, NULL, csv, csv_header);
		return res.iters ? 0 : 1;
	}
	have_srv = !server_stats(client, port, &s0);
	cpu_now(&c0);
	if (!strcmp(test, "connrate"))
		rc = connrate(&res, client, port, size, iters, seconds);
	else
		rc = run_workers(&res, client, port, tests[ti].port_step,
				 streams, tests[ti].wire, size, iters,
				 seconds, NULL);
	cpu_now(&c1);
	if (rc)
		return 1;
	have_srv = have_srv && !server_stats(client, port, &s1);
	report(&res, &c0, &c1, have_srv ? &s0 : NULL, have_srv ? &s1 : NULL,
	       csv, csv_header);
	return 0;
}
