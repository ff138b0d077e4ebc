// SPDX-License-Identifier: GPL-2.0
/*
 * hps_xfer: move random bytes over AF_HPS (or TCP) and check them.
 *
 *   hps_xfer [--transport hps|tcp] -l ADDR PORT [--echo] [--count N]
 *   hps_xfer [--transport hps|tcp] -c ADDR PORT -n BYTES [--echo]
 *            [--rate BYTES_PER_S]
 *
 * The client sends BYTES pseudo-random bytes, shuts down its sending side
 * and reads the server's 8-byte checksum of what it received; both ends
 * print bytes, seconds, MB/s and the checksum (64-bit FNV-1a), and the
 * client exits 1 if the checksums differ. With --echo the server sends
 * everything back and the client checks the returned stream as well: its
 * checksum and length must equal what was sent (exit 1 if not).
 * The server serves --count connections (default 1; 0: for ever, going on
 * after a connection that fails).
 * --rate paces the client: it sends no faster than that on average (1 MiB
 * at a time), so BYTES / BYTES_PER_S is the least a transfer lasts however
 * fast the path is (a test that must have something happen inside a
 * transfer).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <linux/af_hps.h>

#include "hps_addr.h"

#define CHUNK	(1 << 20)

static int family_sock = AF_HPS;

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ULL

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_addr(const char *a, const char *p, struct sockaddr_storage *ss,
		      socklen_t *len)
{
	if (!hps_parse_addr(a, atoi(p), ss, len))
		return 0;
	fprintf(stderr, "bad address %s\n", a);
	return -1;
}

static int new_socket(int fam)
{
	int fd = socket(family_sock == AF_HPS ? AF_HPS : fam, SOCK_STREAM, 0);

	if (fd < 0)
		perror("socket");
	return fd;
}

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += r;
		n -= r;
	}
	return 0;
}

struct echo_ctx {
	int fd;
	uint64_t total;		/* bytes sent, to come back */
	uint64_t got;		/* bytes of them that came back */
	uint64_t sum;		/* their checksum */
	uint64_t peer_sum;	/* the server's checksum, after them */
	int err;		/* errno of a failed recv(); -1: EOF too early */
};

static void report(const char *who, uint64_t bytes, double secs, uint64_t sum)
{
	printf("%s: %llu bytes in %.3f s, %.2f MB/s, fnv64 %016llx\n", who,
	       (unsigned long long)bytes, secs,
	       secs > 0 ? bytes / secs / 1e6 : 0.0, (unsigned long long)sum);
	fflush(stdout);
}

static int serve_one(int c, int echo)
{
	unsigned char *buf = malloc(CHUNK);
	uint64_t sum = FNV_INIT, got = 0, be;
	double t0 = now();
	ssize_t n;

	for (;;) {
		n = recv(c, buf, CHUNK, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("recv");
			free(buf);
			return 1;
		}
		if (!n)
			break;
		sum = fnv(sum, buf, n);
		got += n;
		if (echo && write_all(c, buf, n)) {
			perror("send");
			free(buf);
			return 1;
		}
	}
	report("server", got, now() - t0, sum);
	be = htobe64(sum);
	if (write_all(c, &be, sizeof(be)))
		perror("send checksum");
	free(buf);
	return 0;
}

/*
 * The echoed stream: the total bytes sent, then the server's 8-byte
 * checksum of what it received, then EOF.
 */
static void *echo_reader(void *arg)
{
	struct echo_ctx *e = arg;
	unsigned char *buf = malloc(CHUNK);
	uint64_t tail = 0, want = e->total + sizeof(e->peer_sum);
	ssize_t n;

	e->sum = FNV_INIT;
	e->got = 0;
	e->err = 0;
	while (e->got + tail < want) {
		n = recv(e->fd, buf, CHUNK, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e->err = n ? errno : -1;
			break;
		}
		if (e->got + n > e->total) {
			size_t data = e->total - e->got;
			size_t more = n - data;

			if (tail + more > sizeof(e->peer_sum)) {
				e->err = -2;	/* more than was sent */
				break;
			}
			memcpy((char *)&e->peer_sum + tail, buf + data, more);
			tail += more;
			n = data;
		}
		e->sum = fnv(e->sum, buf, n);
		e->got += n;
	}
	e->peer_sum = be64toh(e->peer_sum);
	free(buf);
	return NULL;
}

static uint64_t rng_state = 88172645463325252ULL;

static void fill(unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		rng_state ^= rng_state << 13;
		rng_state ^= rng_state >> 7;
		rng_state ^= rng_state << 17;
		p[i] = rng_state;
	}
}

static int client(struct sockaddr_storage *ss, socklen_t len, uint64_t total,
		  int echo, double rate)
{
	unsigned char *buf = malloc(CHUNK);
	uint64_t sum = FNV_INIT, sent = 0, peer_sum = 0;
	struct echo_ctx e;
	pthread_t t;
	double t0;
	int fd;

	fd = new_socket(ss->ss_family);
	if (fd < 0)
		return 2;
	if (connect(fd, (struct sockaddr *)ss, len)) {
		perror("connect");
		return 2;
	}
	rng_state ^= (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	e.fd = fd;
	e.total = total;
	if (echo)
		pthread_create(&t, NULL, echo_reader, &e);
	t0 = now();
	while (sent < total) {
		size_t n = total - sent > CHUNK ? CHUNK : total - sent;
		double ahead = rate > 0 ? sent / rate - (now() - t0) : 0;

		if (ahead > 0)
			usleep(ahead * 1e6);
		fill(buf, n);
		sum = fnv(sum, buf, n);
		if (write_all(fd, buf, n)) {
			perror("send");
			if (echo) {
				/* the reader may have seen why first */
				shutdown(fd, SHUT_RDWR);
				pthread_join(t, NULL);
				if (e.err > 0)
					fprintf(stderr, "echo: recv: %s\n",
						strerror(e.err));
			}
			return 2;
		}
		sent += n;
	}
	shutdown(fd, SHUT_WR);
	if (echo) {
		pthread_join(t, NULL);
		if (e.err) {
			fprintf(stderr, "echo: %llu of %llu bytes back, then %s\n",
				(unsigned long long)e.got,
				(unsigned long long)total,
				e.err == -1 ? "EOF" : e.err == -2 ?
				"more than was sent" : strerror(e.err));
			return e.err == -2 ? 1 : 2;
		}
		peer_sum = e.peer_sum;
		if (e.sum != sum) {
			fprintf(stderr, "echo: checksum mismatch: %016llx back\n",
				(unsigned long long)e.sum);
			return 1;
		}
	} else {
		size_t got = 0;

		while (got < sizeof(peer_sum)) {
			ssize_t r = recv(fd, (char *)&peer_sum + got,
					 sizeof(peer_sum) - got, 0);
			if (r <= 0) {
				fprintf(stderr, "no checksum from server: %s\n",
					r ? strerror(errno) : "EOF");
				return 2;
			}
			got += r;
		}
		peer_sum = be64toh(peer_sum);
	}
	report("client", sent, now() - t0, sum);
	close(fd);
	free(buf);
	if (peer_sum != sum) {
		fprintf(stderr, "checksum mismatch: server %016llx\n",
			(unsigned long long)peer_sum);
		return 1;
	}
	printf(echo ? "checksums match (server's and echo's)\n" :
	       "checksums match\n");
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: hps_xfer [--transport hps|tcp] -l ADDR PORT [--echo] [--count N]\n"
		"       hps_xfer [--transport hps|tcp] -c ADDR PORT -n BYTES [--echo]\n"
		"                [--rate BYTES_PER_S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = NULL;
	int listen_mode = -1, echo = 0, count = 1, i, one = 1;
	struct sockaddr_storage ss;
	uint64_t total = 1 << 20;
	double rate = 0;
	socklen_t len;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--transport") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "tcp"))
				family_sock = 0;
			else if (strcmp(argv[i], "hps"))
				usage();
		} else if ((!strcmp(argv[i], "-l") || !strcmp(argv[i], "-c")) &&
			   i + 2 < argc) {
			listen_mode = argv[i][1] == 'l';
			addr = argv[i + 1];
			port = argv[i + 2];
			i += 2;
		} else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			total = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--rate") && i + 1 < argc) {
			rate = strtod(argv[++i], NULL);
		} else if (!strcmp(argv[i], "--echo")) {
			echo = 1;
		} else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			count = atoi(argv[++i]);
		} else {
			usage();
		}
	}
	if (listen_mode < 0 || parse_addr(addr, port, &ss, &len))
		usage();

	if (!listen_mode)
		return client(&ss, len, total, echo, rate);

	int l = new_socket(ss.ss_family);

	if (l < 0)
		return 2;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&ss, len) || listen(l, 16)) {
		perror("bind/listen");
		return 2;
	}
	printf("listening\n");
	fflush(stdout);
	for (i = 0; !count || i < count; i++) {
		int c = accept(l, NULL, NULL);

		if (c < 0) {
			perror("accept");
			return 2;
		}
		/* one that serves for ever outlives a client gone wrong */
		if (serve_one(c, echo) && count)
			return 1;
		close(c);
	}
	close(l);
	return 0;
}
