// SPDX-License-Identifier: GPL-2.0
/*
 * hps-bench: latency and bandwidth of AF_HPS against TCP, rsockets and SMC.
 *
 *   hps-bench --server [--transport T] [--bind ADDR] [--port P]
 *   hps-bench --client ADDR [--transport T] [--port P] --test pingpong|stream
 *             [--size BYTES] [--iters N | --seconds S] [--csv]
 *
 * Transports: hps (AF_HPS, HPS_NODELAY on), tcp (AF_INET/AF_INET6,
 * TCP_NODELAY on), rsocket (librdmacm's rsockets, TCP_NODELAY on) and smc
 * (AF_SMC, which falls back to TCP when SMC-R cannot be used).
 *
 * The server serves one connection at a time, for ever. Each connection
 * starts with a 24-byte header from the client (magic, version, test, size,
 * count).
 *
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
 *
 * A mismatch exits 1; so does any error. Sockets get SO_RCVTIMEO and
 * SO_SNDTIMEO of 30 s where the transport supports them, and a watchdog
 * thread ends the process when a connection makes no progress for 35 s
 * (rsockets have no socket timeouts).
 *
 * Output: one human-readable line; with --csv also
 *   transport,test,size,iters,median_us,p99_us,p999_us,mbps
 * (latency columns empty for stream, mbps empty for pingpong).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#define VERSION		1
#define TEST_PINGPONG	1
#define TEST_STREAM	2
#define TIMEOUT_S	30
#define WATCHDOG_S	35
#define MAX_SIZE	(64u << 20)
#define NBUFS		16		/* distinct stream buffers */
#define HASH_K		0x9e3779b97f4a7c15ULL	/* odd multiplier */

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

/* ---------------------------------------------------------------- ops */

enum transport { T_HPS, T_TCP, T_RSOCKET, T_SMC };
static const char *const tnames[] = { "hps", "tcp", "rsocket", "smc" };
static enum transport tr = T_HPS;

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
static int x_setsockopt(int fd, int lvl, int opt, const void *v, socklen_t l)
{ return R(setsockopt(fd, lvl, opt, v, l), rsetsockopt(fd, lvl, opt, v, l)); }

/* ----------------------------------------------------------- helpers */

static const char *prog = "hps-bench";
static atomic_ulong progress;
static atomic_int busy;

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
	if (tr == T_HPS) {
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

/* ------------------------------------------------------------ server */

static int serve_one(int fd)
{
	struct hdr h;
	unsigned char *buf;
	int rc = -1;

	set_opts(fd);
	if (recv_all(fd, &h, sizeof(h), 0))
		return -1;
	if (h.magic != MAGIC || h.version != VERSION || !h.size ||
	    h.size > MAX_SIZE) {
		fprintf(stderr, "%s: bad header\n", prog);
		return -1;
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

		for (;;) {
			ssize_t r = x_recv(fd, buf, h.size);

			if (r > 0) {
				hash_update(&s, buf, r);
				atomic_fetch_add_explicit(&progress, 1,
							  memory_order_relaxed);
				continue;
			}
			if (r == 0)
				break;
			if (errno == EINTR)
				continue;
			fprintf(stderr, "%s: recv: %s\n", prog,
				errno == EAGAIN ? "timed out" : strerror(errno));
			goto out;
		}
		rep.bytes = s.len;
		rep.hash = hash_final(&s);
		rc = send_all(fd, &rep, sizeof(rep));
	} else {
		fprintf(stderr, "%s: unknown test %u\n", prog, h.test);
	}
out:
	free(buf);
	return rc;
}

static int server(const char *bind_addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int l, one = 1;

	if (hps_parse_addr(bind_addr, port, &ss, &len))
		fail("bad address %s", bind_addr);
	l = x_socket(ss.ss_family);
	if (l < 0)
		die("socket");
	x_setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (x_bind(l, (struct sockaddr *)&ss, len))
		die("bind");
	if (x_listen(l, 8))
		die("listen");
	fprintf(stderr, "%s: %s server listening on %s port %d\n", prog,
		tnames[tr], bind_addr, port);
	for (;;) {
		int fd = x_accept(l);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		atomic_store(&busy, 1);
		if (serve_one(fd))
			fprintf(stderr, "%s: connection failed\n", prog);
		x_close(fd);
		atomic_store(&busy, 0);
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

static int pingpong(int fd, uint32_t size, uint64_t iters, double seconds,
		    int csv)
{
	uint64_t warm, cap, n = 0, i;
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
		} else if (i + 1 == warm && !iters) {
			t_end = now() + seconds;
		}
		check = i % 16 == 0 || (iters && i - warm + 1 == iters);
		if (timed)
			t0 = now();
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
	if (x_shutdown(fd, SHUT_WR))
		die("shutdown");
	if (!n)
		fail("%s", "pingpong: no timed iterations");
	qsort(rtt, n, sizeof(*rtt), cmp_double);
	/* one-way latency = RTT / 2, in microseconds */
	double med = pct(rtt, n, 0.5) * 5e5, p99 = pct(rtt, n, 0.99) * 5e5;
	double p999 = pct(rtt, n, 0.999) * 5e5, mean = sum / n * 5e5;

	printf("%s pingpong size %u iters %llu: one-way latency median %.2f us, p99 %.2f us, p99.9 %.2f us, mean %.2f us\n",
	       tnames[tr], size, (unsigned long long)n, med, p99, p999, mean);
	if (csv)
		printf("%s,pingpong,%u,%llu,%.2f,%.2f,%.2f,\n", tnames[tr],
		       size, (unsigned long long)n, med, p99, p999);
	free(rtt);
	free(pool);
	free(rbuf);
	return 0;
}

static uint64_t mulpow(uint64_t k, uint64_t e)
{
	uint64_t r = 1;

	for (; e; e >>= 1, k *= k)
		if (e & 1)
			r *= k;
	return r;
}

static int stream(int fd, uint32_t size, uint64_t iters, double seconds,
		  int csv)
{
	unsigned char *bufs[NBUFS];
	uint64_t bh[NBUFS], kp = 0, n = 0, bytes;
	struct hash s = { 0 };
	struct reply rep;
	double t0, t1, t_end;
	int fast = size % 8 == 0;

	for (int b = 0; b < NBUFS; b++) {
		bufs[b] = malloc(size);
		if (!bufs[b])
			fail("%s", "out of memory");
		fill_random(bufs[b], size, 0xabcdef + b * 7919 + size);
		if (fast) {
			/* hash of the buffer alone, from h = 0 */
			struct hash one = { 0 };

			hash_update(&one, bufs[b], size);
			bh[b] = one.h;
		}
	}
	/*
	 * For whole words, (h + w) * K over a buffer of m words started
	 * from h is h * K^m + hash-from-zero: O(1) per write.
	 */
	if (fast)
		kp = mulpow(HASH_K, size / 8);

	t0 = now();
	t_end = t0 + seconds;
	for (;;) {
		int b = n % NBUFS;

		if (iters ? n >= iters : (n % 16 == 0 && now() >= t_end))
			break;
		if (send_all(fd, bufs[b], size))
			return 1;
		if (fast)
			s.h = s.h * kp + bh[b];
		else
			hash_update(&s, bufs[b], size);
		n++;
	}
	bytes = n * size;
	s.len = bytes;
	if (x_shutdown(fd, SHUT_WR))
		die("shutdown");
	if (recv_all(fd, &rep, sizeof(rep), 0))
		return 1;
	t1 = now();
	if (rep.bytes != bytes || rep.hash != hash_final(&s)) {
		fprintf(stderr, "%s: stream: server got %llu bytes, checksum %016llx; sent %llu bytes, checksum %016llx\n",
			prog, (unsigned long long)rep.bytes,
			(unsigned long long)rep.hash,
			(unsigned long long)bytes,
			(unsigned long long)hash_final(&s));
		return 1;
	}
	double mbps = bytes / (t1 - t0) / 1e6;

	printf("%s stream size %u writes %llu: %llu bytes in %.3f s, %.1f MB/s, %.3f Gbit/s, checksum ok\n",
	       tnames[tr], size, (unsigned long long)n,
	       (unsigned long long)bytes, t1 - t0, mbps, mbps * 8 / 1000);
	if (csv)
		printf("%s,stream,%u,%llu,,,,%.1f\n", tnames[tr], size,
		       (unsigned long long)n, mbps);
	for (int b = 0; b < NBUFS; b++)
		free(bufs[b]);
	return 0;
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: %s --server [--transport T] [--bind ADDR] [--port P]\n"
		"       %s --client ADDR [--transport T] [--port P] --test pingpong|stream\n"
		"                 [--size BYTES] [--iters N | --seconds S] [--csv]\n"
		"transports: hps (default), tcp, rsocket, smc; port 20000 by default\n",
		prog, prog);
	exit(rc);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server", no_argument, NULL, 'S' },
		{ "client", required_argument, NULL, 'c' },
		{ "transport", required_argument, NULL, 't' },
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "test", required_argument, NULL, 'T' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 'D' },
		{ "csv", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *client = NULL, *bind_addr = "0.0.0.0", *test = NULL;
	int is_server = 0, port = 20000, csv = 0, o, rc, test_id;
	unsigned long long size = 0, iters = 0;
	double seconds = 0;
	pthread_t wd;
	char *end;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'S': is_server = 1; break;
		case 'c': client = optarg; break;
		case 't':
			for (tr = 0; tr <= T_SMC; tr++)
				if (!strcmp(optarg, tnames[tr]))
					break;
			if (tr > T_SMC)
				fail("unknown transport %s", optarg);
			break;
		case 'b': bind_addr = optarg; break;
		case 'p':
			port = strtol(optarg, &end, 10);
			if (*end || port <= 0 || port > 65535)
				fail("bad port %s", optarg);
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
		case 'C': csv = 1; break;
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

	if (is_server)
		return server(bind_addr, port);

	if (!test)
		usage(2);
	if (!strcmp(test, "pingpong"))
		test_id = TEST_PINGPONG;
	else if (!strcmp(test, "stream"))
		test_id = TEST_STREAM;
	else
		fail("unknown test %s", test);
	if (iters && seconds)
		fail("%s", "--iters and --seconds exclude each other");
	if (!size)
		size = test_id == TEST_PINGPONG ? 64 : 65536;
	if (!iters && !seconds) {
		if (test_id == TEST_PINGPONG)
			iters = 10000;
		else
			seconds = 5;
	}

	atomic_store(&busy, 1);
	int fd = connect_to(client, port);
	struct hdr h = {
		.magic = MAGIC, .version = VERSION, .test = test_id,
		.size = size, .count = iters,
	};

	if (send_all(fd, &h, sizeof(h)))
		return 1;
	if (test_id == TEST_PINGPONG)
		rc = pingpong(fd, size, iters, seconds, csv);
	else
		rc = stream(fd, size, iters, seconds, csv);
	x_close(fd);
	return rc;
}
