// SPDX-License-Identifier: GPL-2.0
/*
 * AF_HPS with sendfile(2) and splice(2): file to socket, pipe to socket,
 * socket to pipe (and on to a file), non-blocking and end-of-stream rules,
 * and 32 MiB each way. Every transfer is checked by content against the
 * random source. Runs over RDMA loopback on this node.
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "hps_util.h"

/* A temporary file of @len random bytes; its content in *@data. */
static int hps_tmpfile(size_t len, char **data)
{
	char name[] = "/tmp/hps_splice.XXXXXX";
	int fd = mkstemp(name);

	*data = NULL;
	if (fd < 0)
		return -1;
	unlink(name);
	if (!len)
		return fd;
	*data = malloc(len);
	if (!*data) {
		close(fd);
		return -1;
	}
	hps_fill_random(*data, len);
	if (write(fd, *data, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Read back all of @fd and compare it with @want. */
static int hps_file_equals(int fd, const char *want, size_t len)
{
	struct stat st;
	char *got;
	int ret;

	if (fstat(fd, &st) || st.st_size != (off_t)len)
		return -1;
	got = malloc(len + 1);
	ret = pread(fd, got, len + 1, 0) == (ssize_t)len &&
	      !memcmp(got, want, len) ? 0 : -1;
	free(got);
	return ret;
}

struct reader {
	int fd;
	size_t want;
	char *buf;
	ssize_t got;
};

/* Read exactly @want bytes (or to EOF) into a fresh buffer. */
static void *read_thread(void *arg)
{
	struct reader *r = arg;

	r->buf = malloc(r->want + 1);
	r->got = hps_read_all(r->fd, r->buf, r->want);
	return NULL;
}

struct writer {
	int fd;
	const char *buf;
	size_t len;
	ssize_t ret;
	int close_after;
};

static void *write_thread(void *arg)
{
	struct writer *w = arg;

	w->ret = hps_write_all(w->fd, w->buf, w->len);
	if (w->close_after)
		shutdown(w->fd, SHUT_WR);
	return NULL;
}

/* Move @len bytes from socket @sfd to file @ffd through a pipe. */
static ssize_t splice_sock_to_file(int sfd, int ffd, size_t len, int pipesz)
{
	size_t done = 0;
	int p[2];

	if (pipe(p))
		return -1;
	if (pipesz && fcntl(p[1], F_SETPIPE_SZ, pipesz) < 0)
		return -1;
	while (done < len) {
		ssize_t n = splice(sfd, NULL, p[1], NULL, len - done,
				   SPLICE_F_MOVE), m;

		if (n <= 0)
			break;
		while (n) {
			m = splice(p[0], NULL, ffd, NULL, n, SPLICE_F_MOVE);
			if (m <= 0)
				goto out;
			n -= m;
			done += m;
		}
	}
out:
	close(p[0]);
	close(p[1]);
	return done;
}

/* Move @len bytes from file @ffd at *@off to socket @sfd through a pipe. */
static ssize_t splice_file_to_sock(int ffd, loff_t *off, int sfd, size_t len)
{
	size_t done = 0;
	int p[2];

	if (pipe(p))
		return -1;
	while (done < len) {
		ssize_t n = splice(ffd, off, p[1], NULL, len - done,
				   SPLICE_F_MORE), m;

		if (n <= 0)
			break;
		while (n) {
			m = splice(p[0], NULL, sfd, NULL, n,
				   done + n < len ? SPLICE_F_MORE : 0);
			if (m <= 0)
				goto out;
			n -= m;
			done += m;
		}
	}
out:
	close(p[0]);
	close(p[1]);
	return done;
}

FIXTURE(conn)
{
	int cfd, afd;
};

FIXTURE_SETUP(conn)
{
	int fd = socket(AF_HPS, SOCK_STREAM, 0);

	self->cfd = self->afd = -1;
	if (fd < 0 && errno == EAFNOSUPPORT)
		ASSERT_TRUE(0) TH_LOG("AF_HPS not available: is af_hps.ko loaded?");
	close(fd);
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, hps_pair(&self->cfd, &self->afd));
}

FIXTURE_TEARDOWN(conn)
{
	if (self->cfd >= 0)
		close(self->cfd);
	if (self->afd >= 0)
		close(self->afd);
}

/* sendfile at offsets, from the file position and past the end of file. */
TEST_F(conn, sendfile_offsets_counts)
{
	static const struct { off_t off; size_t count; } c[] = {
		{ 0, 3 << 20 }, { 1, 1 }, { 4095, 4097 }, { 123457, 1000003 },
		{ (3 << 20) - 10, 10 },
	};
	size_t len = 3 << 20;
	struct reader r;
	pthread_t t;
	char *data;
	off_t off;
	int fd, i;

	fd = hps_tmpfile(len, &data);
	ASSERT_GE(fd, 0);
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		r = (struct reader){ .fd = self->afd, .want = c[i].count };
		pthread_create(&t, NULL, read_thread, &r);
		off = c[i].off;
		EXPECT_EQ((ssize_t)c[i].count,
			  sendfile(self->cfd, fd, &off, c[i].count));
		EXPECT_EQ(c[i].off + (off_t)c[i].count, off);
		pthread_join(t, NULL);
		EXPECT_EQ((ssize_t)c[i].count, r.got);
		EXPECT_EQ(0, memcmp(r.buf, data + c[i].off, c[i].count))
			TH_LOG("case %d: content differs", i);
		free(r.buf);
	}

	/* NULL offset: from the file position, which moves. */
	ASSERT_EQ(1000, lseek(fd, 1000, SEEK_SET));
	r = (struct reader){ .fd = self->afd, .want = 70000 };
	pthread_create(&t, NULL, read_thread, &r);
	EXPECT_EQ(70000, sendfile(self->cfd, fd, NULL, 70000));
	pthread_join(t, NULL);
	EXPECT_EQ(71000, lseek(fd, 0, SEEK_CUR));
	EXPECT_EQ(70000, r.got);
	EXPECT_EQ(0, memcmp(r.buf, data + 1000, 70000));
	free(r.buf);

	/*
	 * A count past the end of file: sendfile stops at EOF, and the tail
	 * it held back with MSG_MORE must still arrive (splice_eof) while
	 * the socket stays open.
	 */
	off = len - 5000;
	r = (struct reader){ .fd = self->afd, .want = 5000 };
	pthread_create(&t, NULL, read_thread, &r);
	EXPECT_EQ(5000, sendfile(self->cfd, fd, &off, 1 << 20));
	pthread_join(t, NULL);
	EXPECT_EQ(5000, r.got);
	EXPECT_EQ(0, memcmp(r.buf, data + len - 5000, 5000));
	free(r.buf);

	close(fd);
	free(data);
}

/* file -> pipe -> socket with splice, checked by content. */
TEST_F(conn, splice_file_pipe_socket)
{
	size_t len = (5 << 20) + 777;
	loff_t off = 333;
	struct reader r = { .fd = self->afd, .want = len - 333 };
	pthread_t t;
	char *data;
	int fd;

	fd = hps_tmpfile(len, &data);
	ASSERT_GE(fd, 0);
	pthread_create(&t, NULL, read_thread, &r);
	EXPECT_EQ((ssize_t)(len - 333),
		  splice_file_to_sock(fd, &off, self->cfd, len - 333));
	EXPECT_EQ((loff_t)len, off);
	pthread_join(t, NULL);
	EXPECT_EQ((ssize_t)(len - 333), r.got);
	EXPECT_EQ(0, memcmp(r.buf, data + 333, len - 333));
	free(r.buf);
	close(fd);
	free(data);
}

/* socket -> pipe -> file with splice, checked by content. */
TEST_F(conn, splice_socket_pipe_file)
{
	size_t len = (5 << 20) + 4321;
	struct writer w = { .fd = self->cfd, .len = len, .close_after = 1 };
	char *data, *none;
	pthread_t t;
	int fd;

	data = malloc(len);
	hps_fill_random(data, len);
	w.buf = data;
	fd = hps_tmpfile(0, &none);
	ASSERT_GE(fd, 0);
	pthread_create(&t, NULL, write_thread, &w);
	/* Ask for more than comes: the writer's shutdown ends it. */
	EXPECT_EQ((ssize_t)len, splice_sock_to_file(self->afd, fd, len + 1, 0));
	pthread_join(t, NULL);
	EXPECT_EQ((ssize_t)len, w.ret);
	EXPECT_EQ(0, hps_file_equals(fd, data, len));
	close(fd);
	free(data);
}

/* Nothing queued: SPLICE_F_NONBLOCK or O_NONBLOCK gives EAGAIN. */
TEST_F(conn, splice_nonblock_empty)
{
	char buf[100], tx[100];
	int p[2];

	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-1, splice(self->afd, NULL, p[1], NULL, 4096,
			     SPLICE_F_NONBLOCK));
	EXPECT_EQ(EAGAIN, errno);

	ASSERT_EQ(0, fcntl(self->afd, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-1, splice(self->afd, NULL, p[1], NULL, 4096, 0));
	EXPECT_EQ(EAGAIN, errno);

	/* Once data is queued it comes through, exactly. */
	hps_fill_random(tx, sizeof(tx));
	ASSERT_EQ(100, send(self->cfd, tx, 100, 0));
	usleep(200000);
	EXPECT_EQ(100, splice(self->afd, NULL, p[1], NULL, 4096,
			      SPLICE_F_NONBLOCK));
	EXPECT_EQ(100, read(p[0], buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(tx, buf, 100));
	EXPECT_EQ(-1, splice(self->afd, NULL, p[1], NULL, 4096,
			     SPLICE_F_NONBLOCK));
	EXPECT_EQ(EAGAIN, errno);
	close(p[0]);
	close(p[1]);
}

/* Data queued before the peer's close comes first, then 0 (EOF). */
TEST_F(conn, splice_after_peer_close)
{
	char tx[10000], rx[10000];
	size_t got = 0;
	ssize_t n;
	int p[2];

	ASSERT_EQ(0, pipe(p));
	hps_fill_random(tx, sizeof(tx));
	ASSERT_EQ(10000, hps_write_all(self->cfd, tx, sizeof(tx)));
	close(self->cfd);
	self->cfd = -1;
	usleep(200000);
	while ((n = splice(self->afd, NULL, p[1], NULL, 65536, 0)) > 0) {
		ASSERT_EQ(n, read(p[0], rx + got, n));
		got += n;
	}
	EXPECT_EQ(0, n);
	EXPECT_EQ(sizeof(tx), got);
	EXPECT_EQ(0, memcmp(tx, rx, sizeof(tx)));
	EXPECT_EQ(0, splice(self->afd, NULL, p[1], NULL, 65536,
			    SPLICE_F_NONBLOCK));
	close(p[0]);
	close(p[1]);
}

/* A pipe whose reader is gone: EPIPE, and the stream keeps its bytes. */
TEST_F(conn, splice_to_closed_pipe)
{
	char tx[3000], rx[3000];
	int p[2];

	ASSERT_EQ(0, pipe(p));
	close(p[0]);
	hps_fill_random(tx, sizeof(tx));
	ASSERT_EQ(3000, send(self->cfd, tx, sizeof(tx), 0));
	usleep(200000);
	EXPECT_EQ(-1, splice(self->afd, NULL, p[1], NULL, 4096, 0));
	EXPECT_EQ(EPIPE, errno);
	EXPECT_EQ(3000, recv(self->afd, rx, sizeof(rx), MSG_WAITALL));
	EXPECT_EQ(0, memcmp(tx, rx, sizeof(tx)));
	close(p[1]);
}

struct sendfiler {
	int out, in;
	size_t len;
	ssize_t ret;
};

/* sendfile() all of @len, looping over short counts. */
static void *sendfile_thread(void *arg)
{
	struct sendfiler *s = arg;
	off_t off = 0;
	ssize_t n = 0;

	while ((size_t)off < s->len) {
		n = sendfile(s->out, s->in, &off, s->len - off);
		if (n <= 0)
			break;
	}
	s->ret = n < 0 ? n : off;
	return NULL;
}

/*
 * 32 MiB each way: sendfile from a file into one end, splice out of the
 * other into a file through a 1 MiB pipe (more slots than one call
 * fills); then back the other way through a default 64 KiB pipe. (As for
 * TCP, sendfile cannot read from a socket: its source must be seekable.)
 */
TEST_F(conn, large_both_ways)
{
	size_t len = 32 << 20;
	struct sendfiler s;
	char *data, *none;
	int src, dst, dst2;
	pthread_t t;
	double t0;
	ssize_t n;

	src = hps_tmpfile(len, &data);
	ASSERT_GE(src, 0);
	dst = hps_tmpfile(0, &none);
	dst2 = hps_tmpfile(0, &none);
	ASSERT_GE(dst, 0);
	ASSERT_GE(dst2, 0);

	t0 = hps_now();
	s = (struct sendfiler){ .out = self->cfd, .in = src, .len = len };
	pthread_create(&t, NULL, sendfile_thread, &s);
	n = splice_sock_to_file(self->afd, dst, len, 1 << 20);
	if (n != (ssize_t)len)
		shutdown(self->cfd, SHUT_RDWR);	/* free the sender */
	pthread_join(t, NULL);
	EXPECT_EQ((ssize_t)len, n);
	EXPECT_EQ((ssize_t)len, s.ret);
	EXPECT_EQ(0, hps_file_equals(dst, data, len));
	TH_LOG("sendfile -> splice: %.0f MB/s", len / (hps_now() - t0) / 1e6);

	t0 = hps_now();
	s = (struct sendfiler){ .out = self->afd, .in = src, .len = len };
	pthread_create(&t, NULL, sendfile_thread, &s);
	n = splice_sock_to_file(self->cfd, dst2, len, 0);
	if (n != (ssize_t)len)
		shutdown(self->afd, SHUT_RDWR);	/* free the sender */
	pthread_join(t, NULL);
	EXPECT_EQ((ssize_t)len, n);
	EXPECT_EQ((ssize_t)len, s.ret);
	EXPECT_EQ(0, hps_file_equals(dst2, data, len));
	TH_LOG("back, 64 KiB pipe: %.0f MB/s", len / (hps_now() - t0) / 1e6);

	close(src);
	close(dst);
	close(dst2);
	free(data);
}

TEST_HARNESS_MAIN
