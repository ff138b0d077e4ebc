// SPDX-License-Identifier: GPL-2.0
/*
 * kfs-get: fetch a file from hps_kfs, the kernel file server.
 *
 *   kfs-get [--transport hps|tcp] HOST PORT PATH [OUT]
 *
 * Sends "GET PATH\n", writes the file to OUT (default: standard output)
 * and prints the byte count and rate on standard error. Exit status: 0 on
 * success, 1 on an ERR reply (printed), 2 on a usage error, 3 on a
 * connection or I/O error or a short transfer.
 *
 * Test modes (used by selftests/hps_kfs.sh):
 *   --request STR HOST PORT [OUT]   send STR as it is, shut down the sending
 *                                   side and copy every reply byte to OUT
 *   --abort-after N ...             read the reply header and N bytes of
 *                                   data, then vanish (close with the rest
 *                                   unread)
 *   --stall-after N ...             read the reply header and N bytes of
 *                                   data, stop reading for 10 s, then
 *                                   read on
 *   --idle SECS HOST PORT           connect, print "connected", send
 *                                   nothing, and wait up to SECS for the
 *                                   server to close (exit 0 if it did, 1
 *                                   if not)
 *   --trickle MS ...                send the request one byte every MS
 *                                   milliseconds; if the server closes
 *                                   before the line is whole, say after
 *                                   how many bytes and seconds (exit 3)
 *   --rate BYTES ...                read the reply's data at no more than
 *                                   BYTES per second; a short transfer
 *                                   says after how many seconds (exit 3)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/af_hps.h>

#include "hps_addr.h"

#define BUF_SIZE	0x100000	/* 1 MiB */
#define HDR_MAX		128

/*
 * What we are doing, for a report when timeout(1) kills us: the phase and,
 * on AF_HPS, the connection's state (HPS_INFO). Not async-signal-safe
 * (snprintf), which is good enough for a last word before _exit().
 */
enum { PH_START, PH_CONNECTING, PH_CONNECTED, PH_READING, PH_REPLY_LINE, PH_DATA, PH_CLOSING };

static const char *const phase_names[] = {
	"starting",
	"connecting",
	"connected",
	"reading the reply",
	"waiting for the reply line",
	"receiving the data",
	"closing",
};

static atomic_int phase = PH_START;	/* lock-free: safe in a handler */
static atomic_int sock_fd = -1;

static void on_term(int sig)
{
	struct hps_info hi;
	socklen_t len = sizeof(hi);
	char msg[256];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg), "kfs-get: killed while %s",
		     phase_names[phase]);
	if (sock_fd >= 0 && !getsockopt(sock_fd, SOL_HPS, HPS_INFO, &hi, &len))
		n += snprintf(msg + n, sizeof(msg) - n,
			      " (state %u credits %u peer_credits %u tx %llu rx %llu)",
			      hi.hpsi_state, hi.hpsi_credits,
			      hi.hpsi_peer_credits,
			      (unsigned long long)hi.hpsi_tx_bytes,
			      (unsigned long long)hi.hpsi_rx_bytes);
	msg[n++] = '\n';
	if (write(2, msg, n) < 0)
		_exit(3);
	_exit(3);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: kfs-get [--transport hps|tcp] HOST PORT PATH [OUT]\n"
		"       kfs-get [--transport hps|tcp] --request STR HOST PORT [OUT]\n"
		"       kfs-get [--transport hps|tcp] --abort-after|--stall-after N HOST PORT PATH [OUT]\n"
		"       kfs-get [--transport hps|tcp] --idle SECS HOST PORT\n"
		"       kfs-get [--transport hps|tcp] --trickle MS|--rate BYTES HOST PORT PATH [OUT]\n");
	exit(2);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == ENOTSOCK)
			w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= w;
	}
	return 0;
}

static int dial(int hps, const char *host, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	if (hps_parse_addr(host, atoi(port), &ss, &len)) {
		fprintf(stderr, "kfs-get: bad address %s\n", host);
		exit(2);
	}
	fd = socket(hps ? AF_HPS : ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0) {
		perror("kfs-get: socket");
		exit(3);
	}
	phase = PH_CONNECTING;
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		perror("kfs-get: connect");
		exit(3);
	}
	phase = PH_CONNECTED;
	sock_fd = fd;
	return fd;
}

/* --idle: wait for the server to close an idle connection. */
static int wait_idle_close(int fd, int secs)
{
	double t0 = now();
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;
	int r;

	fprintf(stderr, "kfs-get: connected\n");
	r = poll(&p, 1, secs * 1000);
	if (r < 0) {
		perror("kfs-get: poll");
		return 3;
	}
	if (r == 0) {
		fprintf(stderr, "kfs-get: still open after %d s\n", secs);
		return 1;
	}
	r = recv(fd, &c, 1, 0);
	fprintf(stderr, "kfs-get: server closed the idle connection after %.1f s (%s)\n",
		now() - t0, r == 0 ? "end of stream" :
		r < 0 ? strerror(errno) : "data");
	return r == 1 ? 1 : 0;
}

/*
 * --trickle: send @len bytes of @req one every @ms milliseconds, watching
 * for the server to close meanwhile.
 * Return: 0 when all were sent, 3 when the server closed first.
 */
static int trickle(int fd, const char *req, size_t len, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	double t0 = now();
	size_t i;
	char c;

	for (i = 0; i < len; i++) {
		const char *why = NULL;
		ssize_t r;

		if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1) {
			why = strerror(errno);
		} else if (i + 1 < len && poll(&p, 1, ms) > 0) {
			r = recv(fd, &c, 1, 0);
			why = r == 0 ? "end of stream" :
			      r < 0 ? strerror(errno) : "a reply";
		}
		if (why) {
			fprintf(stderr,
				"kfs-get: server closed the request (%s) after %zu of %zu bytes in %.1f s\n",
				why, i, len, now() - t0);
			return 3;
		}
	}
	return 0;
}

/* --request: send @req verbatim, copy every reply byte to @out. */
static int raw(int fd, const char *req, int out, char *buf)
{
	ssize_t n;

	if (write_all(fd, req, strlen(req))) {
		perror("kfs-get: send");
		return 3;
	}
	shutdown(fd, SHUT_WR);
	phase = PH_READING;
	while ((n = recv(fd, buf, BUF_SIZE, 0)) > 0)
		if (write_all(out, buf, n)) {
			perror("kfs-get: write");
			return 3;
		}
	if (n < 0) {
		perror("kfs-get: recv");
		return 3;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *request = NULL, *path = NULL, *outname = NULL;
	long long size, got = 0, abort_after = -1, stall_after = -1, rate = 0;
	int hps = 1, idle_secs = 0, trickle_ms = 0, fd, out = 1, rc;
	int send_err = 0;
	size_t have = 0;
	char *buf, *nl;
	double t0, t, td;
	ssize_t n;

	while (argc > 1 && !strncmp(argv[1], "--", 2)) {
		if (argc < 3)
			print_usage();
		if (!strcmp(argv[1], "--transport")) {
			if (!strcmp(argv[2], "tcp"))
				hps = 0;
			else if (strcmp(argv[2], "hps"))
				print_usage();
		} else if (!strcmp(argv[1], "--request")) {
			request = argv[2];
		} else if (!strcmp(argv[1], "--abort-after")) {
			abort_after = atoll(argv[2]);
		} else if (!strcmp(argv[1], "--stall-after")) {
			stall_after = atoll(argv[2]);
		} else if (!strcmp(argv[1], "--trickle")) {
			trickle_ms = atoi(argv[2]);
		} else if (!strcmp(argv[1], "--rate")) {
			rate = atoll(argv[2]);
		} else if (!strcmp(argv[1], "--idle")) {
			idle_secs = atoi(argv[2]);
		} else {
			print_usage();
		}
		argc -= 2;
		argv += 2;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	if (idle_secs) {
		if (argc != 3)
			print_usage();
		return wait_idle_close(dial(hps, argv[1], argv[2]), idle_secs);
	}
	if (request) {
		if (argc < 3 || argc > 4)
			print_usage();
		outname = argv[3];
	} else {
		if (argc < 4 || argc > 5)
			print_usage();
		path = argv[3];
		outname = argv[4];
	}
	buf = malloc(BUF_SIZE);
	if (!buf) {
		perror("kfs-get: malloc");
		return 3;
	}
	if (outname && strcmp(outname, "-")) {
		out = open(outname, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (out < 0) {
			perror(outname);
			return 3;
		}
	}

	fd = dial(hps, argv[1], argv[2]);
	if (request)
		return raw(fd, request, out, buf);

	t0 = now();
	n = snprintf(buf, BUF_SIZE, "GET %s\n", path);
	if (trickle_ms) {
		if (trickle(fd, buf, n, trickle_ms))
			return 3;
	} else if (write_all(fd, buf, n)) {
		/*
		 * A server that refuses the connection (EACCES, EBUSY) answers
		 * and closes before it reads anything: its reply may be here.
		 */
		send_err = errno;
	}

	/* The reply line, then (after OK) exactly size bytes. */
	phase = PH_REPLY_LINE;
	for (;;) {
		nl = memchr(buf, '\n', have);
		if (nl || have >= HDR_MAX)
			break;
		n = recv(fd, buf + have, BUF_SIZE - have, 0);
		if (n <= 0) {
			if (send_err)
				fprintf(stderr, "kfs-get: send: %s\n",
					strerror(send_err));
			fprintf(stderr, "kfs-get: %s before a reply\n",
				n ? strerror(errno) : "end of stream");
			return 3;
		}
		have += n;
	}
	if (!nl) {
		fprintf(stderr, "kfs-get: reply line too long\n");
		return 3;
	}
	*nl = '\0';
	if (!strncmp(buf, "ERR ", 4)) {
		fprintf(stderr, "kfs-get: %s: %s\n", path, buf + 4);
		return 1;
	}
	if (sscanf(buf, "OK %lld", &size) != 1 || size < 0) {
		fprintf(stderr, "kfs-get: bad reply '%s'\n", buf);
		return 3;
	}
	have -= nl + 1 - buf;
	memmove(buf, nl + 1, have);

	rc = 0;
	phase = PH_DATA;
	td = now();
	while (got < size) {
		if (!have) {
			size_t want = BUF_SIZE;

			if (rate) {
				double ok = (now() - td) * rate - got;

				if (ok < 1) {
					usleep(10000);
					continue;
				}
				want = fmin(ok, BUF_SIZE);
			}
			n = recv(fd, buf, want, 0);
			if (n <= 0) {
				fprintf(stderr, "kfs-get: %s after %lld of %lld bytes in %.1f s\n",
					n ? strerror(errno) : "end of stream",
					got, size, now() - td);
				rc = 3;
				break;
			}
			have = n;
		}
		if (have > (size_t)(size - got))
			have = size - got;	/* more would be a protocol error */
		if (abort_after >= 0 && got + (long long)have >= abort_after) {
			fprintf(stderr, "kfs-get: vanishing after %lld bytes\n",
				got + (long long)have);
			return 0;	/* exit with the rest unread */
		}
		if (stall_after >= 0 && got + (long long)have >= stall_after) {
			fprintf(stderr, "kfs-get: stalling after %lld bytes\n",
				got + (long long)have);
			stall_after = -1;
			sleep(10);
		}
		if (write_all(out, buf, have)) {
			perror("kfs-get: write");
			return 3;
		}
		got += have;
		have = 0;
	}
	phase = PH_CLOSING;
	t = now() - t0;
	if (!rc)
		fprintf(stderr, "kfs-get: %s: %lld bytes in %.3f s, %.1f MB/s over %s\n",
			path, got, t, t > 0 ? got / t / 1e6 : 0.0,
			hps ? "AF_HPS" : "TCP");
	close(fd);
	if (out != 1 && close(out)) {
		perror(outname);
		return 3;
	}
	return rc;
}
