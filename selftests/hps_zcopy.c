// SPDX-License-Identifier: GPL-2.0
/*
 * AF_HPS zero-copy sends (SRCAVAIL + RDMA Read): every transfer is checked
 * by content, and /proc/net/hps_stat proves which path carried it. Large
 * and unaligned buffers; buffers changed right after send() returns; small,
 * non-blocking and peeking readers (copy fallback); writes of both sizes
 * mixed; two writers facing each other (cancel); several threads on one
 * socket; fork() with the buffer shared copy-on-write; munmap and a new
 * mapping at the same address; read-only, MAP_SHARED file and huge-page
 * buffers; a writer killed mid-transfer; the sysctl and the socket option.
 * The registration cache (on by default): repeated buffers hit it, and
 * munmap, mprotect, mremap, fork and exit invalidate or free its entries;
 * the memory lock limit makes transfers copy; the kernel mapping made at
 * registration (or page by page) carries the rest of a send by copy.
 * Runs over RDMA loopback on this node; hps_peer runs zero copy between
 * two.
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "hps_util.h"

#define MB (1 << 20)

static int sysctl_knob(const char *knob, const char *val, char *old,
		       size_t oldlen)
{
	char path[128];
	int fd, ret = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/sys/net/hps/%s", knob);
	fd = open(path, O_RDWR);
	if (fd < 0)
		return -1;
	if (old) {
		n = read(fd, old, oldlen - 1);
		old[n > 0 ? n : 0] = 0;
	}
	/* a sysctl takes a write at offset 0 only */
	if (val && pwrite(fd, val, strlen(val), 0) < 0)
		ret = -1;
	close(fd);
	return ret;
}

static int sysctl_rw(const char *val, char *old, size_t oldlen)
{
	return sysctl_knob("zcopy_thresh", val, old, oldlen);
}

/* Wait up to 5 s for zcopy_pinned_bytes to fall to @max. */
static long pinned_settles(long max)
{
	long v = hps_stat("zcopy_pinned_bytes");
	int i;

	for (i = 0; i < 50 && v > max; i++) {
		usleep(100 * 1000);
		v = hps_stat("zcopy_pinned_bytes");
	}
	return v;
}

/* Drop CAP_IPC_LOCK from the effective set: RLIMIT_MEMLOCK applies. */
static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	return syscall(SYS_capset, &h, d);
}

struct reader {
	int fd;
	size_t want;
	size_t chunk;		/* bytes per recv(); 0: all at once */
	int flags;		/* recv() flags */
	int peek;		/* MSG_PEEK each chunk first */
	char *fixed;		/* read into this buffer, not a new one */
	char *buf;
	ssize_t got;
};

static void *read_thread(void *arg)
{
	struct reader *r = arg;
	size_t done = 0;

	r->buf = r->fixed ? r->fixed : malloc(r->want + 1);
	while (done < r->want) {
		size_t n = r->want - done;
		ssize_t m;

		if (r->chunk && n > r->chunk)
			n = r->chunk;
		if (r->flags & MSG_DONTWAIT) {
			struct pollfd p = { .fd = r->fd, .events = POLLIN };

			poll(&p, 1, 5000);
		}
		if (r->peek) {
			char *tmp = malloc(n);
			ssize_t p = recv(r->fd, tmp, n, MSG_PEEK);

			m = p > 0 ? recv(r->fd, r->buf + done, p, r->flags) : p;
			/* what a peek saw is what the read then takes */
			if (m > 0 && memcmp(tmp, r->buf + done, m))
				m = -1;
			free(tmp);
		} else {
			m = recv(r->fd, r->buf + done, n, r->flags);
		}
		if (m < 0 && errno == EAGAIN)
			continue;
		if (m <= 0)
			break;
		done += m;
	}
	r->got = done;
	return NULL;
}

/* Send @len bytes of @buf on cfd while a reader takes them from afd. */
static int xfer(int cfd, int afd, const char *buf, size_t len,
		struct reader *r)
{
	pthread_t t;
	ssize_t w;
	int ok;

	r->fd = afd;
	r->want = len;
	pthread_create(&t, NULL, read_thread, r);
	w = hps_write_all(cfd, buf, len);
	pthread_join(t, NULL);
	ok = w == (ssize_t)len && r->got == (ssize_t)len &&
	     !memcmp(r->buf, buf, len);
	if (!ok) {
		size_t i = 0;

		while (i < len && i < (size_t)r->got && r->buf[i] == buf[i])
			i++;
		fprintf(stderr, "# xfer of %zu: wrote %zd (%m), read %zd, first difference at %zu\n",
			len, w, r->got, i);
	}
	if (!r->fixed)
		free(r->buf);
	return ok ? 0 : -1;
}

FIXTURE(zc)
{
	int cfd, afd;
	long tx0, rd0, fb0;
};

FIXTURE_SETUP(zc)
{
	int fd = socket(AF_HPS, SOCK_STREAM, 0), thresh = 65536, ok;
	char old[32];

	self->cfd = self->afd = -1;
	if (fd < 0 && errno == EAFNOSUPPORT)
		ASSERT_TRUE(0) TH_LOG("AF_HPS not available: is af_hps.ko loaded?");
	close(fd);
	signal(SIGPIPE, SIG_IGN);
	/*
	 * Zero copy from 64 KiB on. It is off by default, and a connection
	 * gets its resources only if it is on when the connection is set up.
	 */
	ASSERT_EQ(0, sysctl_rw("65536", old, sizeof(old)));
	ok = hps_pair(&self->cfd, &self->afd);
	sysctl_rw(old, NULL, 0);
	ASSERT_EQ(0, ok);
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_HPS, HPS_ZCOPY_THRESH, &thresh,
				sizeof(thresh)));
	self->tx0 = hps_stat("zcopy_tx");
	self->rd0 = hps_stat("zcopy_rx_reads");
	self->fb0 = hps_stat("zcopy_fallbacks");
	ASSERT_GE(self->tx0, 0) TH_LOG("no zcopy_tx in /proc/net/hps_stat");
}

FIXTURE_TEARDOWN(zc)
{
	if (self->cfd >= 0)
		close(self->cfd);
	if (self->afd >= 0)
		close(self->afd);
}

/* 16 MiB in one send, read in 1 MiB pieces: all zero copy. */
TEST_F(zc, large_send_is_zero_copy)
{
	struct reader r = { .chunk = MB };
	size_t len = 16 * MB;
	char *buf = malloc(len);

	hps_fill_random(buf, len);
	ASSERT_EQ(0, xfer(self->cfd, self->afd, buf, len, &r));
	EXPECT_GE(hps_stat("zcopy_tx") - self->tx0, 16);
	EXPECT_GE(hps_stat("zcopy_rx_reads") - self->rd0, 16);
	EXPECT_EQ(self->fb0, hps_stat("zcopy_fallbacks"));
	free(buf);
}

/* Odd offsets and lengths, many pages: the bytes at the edges survive. */
TEST_F(zc, unaligned_buffers)
{
	static const struct { size_t off, len; } c[] = {
		{ 1, 65536 }, { 4095, 65537 }, { 123, 300001 },
		{ 4097, 2 * MB + 3 }, { 0, 1048576 + 4096 },
	};
	char *base = malloc(4 * MB);
	int i;

	hps_fill_random(base, 4 * MB);
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		struct reader r = { .chunk = 256 << 10 };

		EXPECT_EQ(0, xfer(self->cfd, self->afd, base + c[i].off,
				  c[i].len, &r)) TH_LOG("case %d", i);
	}
	EXPECT_GT(hps_stat("zcopy_tx"), self->tx0);
	free(base);
}

/* send() returned: the buffer is the caller's again, the peer has it. */
TEST_F(zc, buffer_changed_after_send)
{
	size_t len = 2 * MB;
	char *buf = malloc(len), *want = malloc(2 * len);
	struct reader r = { .fd = self->afd, .want = 2 * len, .chunk = MB };
	pthread_t t;

	hps_fill_random(buf, len);
	memcpy(want, buf, len);
	pthread_create(&t, NULL, read_thread, &r);
	ASSERT_EQ((ssize_t)len, hps_write_all(self->cfd, buf, len));
	memset(buf, 0xa5, len);
	memcpy(want + len, buf, len);
	ASSERT_EQ((ssize_t)len, hps_write_all(self->cfd, buf, len));
	memset(buf, 0, len);
	pthread_join(t, NULL);
	ASSERT_EQ((ssize_t)(2 * len), r.got);
	EXPECT_EQ(0, memcmp(r.buf, want, 2 * len));
	free(r.buf);
	free(buf);
	free(want);
}

/* Readers that cannot take the bytes zero copy get them by copy. */
TEST_F(zc, small_reads_fall_back)
{
	struct reader r = { .chunk = 1000 };
	size_t len = 3 * MB;
	char *buf = malloc(len);

	hps_fill_random(buf, len);
	ASSERT_EQ(0, xfer(self->cfd, self->afd, buf, len, &r));
	EXPECT_GT(hps_stat("zcopy_fallbacks"), self->fb0);
	free(buf);
}

TEST_F(zc, nonblocking_reader_falls_back)
{
	struct reader r = { .chunk = MB, .flags = MSG_DONTWAIT };
	size_t len = 3 * MB;
	char *buf = malloc(len);

	hps_fill_random(buf, len);
	ASSERT_EQ(0, xfer(self->cfd, self->afd, buf, len, &r));
	EXPECT_GT(hps_stat("zcopy_fallbacks"), self->fb0);
	free(buf);
}

TEST_F(zc, peeking_reader)
{
	struct reader r = { .chunk = 100000, .peek = 1 };
	size_t len = 3 * MB;
	char *buf = malloc(len);

	hps_fill_random(buf, len);
	ASSERT_EQ(0, xfer(self->cfd, self->afd, buf, len, &r));
	free(buf);
}

/* Small and large writes mixed, with and without HPS_NODELAY. */
TEST_F(zc, mixed_sizes_keep_the_stream)
{
	static const size_t sz[] = { 10, 100000, 3, 70000, 65536, 1, 65535,
				     2 * MB, 7, 1 << 17 };
	size_t total = 0, off = 0;
	struct reader r = { .fd = self->afd, .chunk = 200000 };
	int i, round, one = 1;
	pthread_t t;
	char *buf;

	for (i = 0; i < ARRAY_SIZE(sz); i++)
		total += sz[i];
	buf = malloc(2 * total);
	hps_fill_random(buf, 2 * total);
	r.want = 2 * total;
	pthread_create(&t, NULL, read_thread, &r);
	for (round = 0; round < 2; round++) {
		if (round)
			setsockopt(self->cfd, SOL_HPS, HPS_NODELAY, &one,
				   sizeof(one));
		for (i = 0; i < ARRAY_SIZE(sz); i++) {
			EXPECT_EQ((ssize_t)sz[i],
				  hps_write_all(self->cfd, buf + off, sz[i]));
			off += sz[i];
		}
	}
	pthread_join(t, NULL);
	ASSERT_EQ((ssize_t)(2 * total), r.got);
	EXPECT_EQ(0, memcmp(r.buf, buf, 2 * total));
	EXPECT_GT(hps_stat("zcopy_tx"), self->tx0);
	free(r.buf);
	free(buf);
}

struct writer {
	int fd;
	size_t len;	/* thread number */
	ssize_t ret;
};

struct facing {
	int fd;
	const char *out;
	char *in;
	size_t len;
	ssize_t wrote, got;
};

/* Write all, then read all: what a TCP program may do with 512 KiB. */
static void *facing_thread(void *arg)
{
	struct facing *f = arg;

	f->wrote = hps_write_all(f->fd, f->out, f->len);
	f->got = hps_read_all(f->fd, f->in, f->len);
	return NULL;
}

/*
 * Both ends write 512 KiB before either reads. Zero copy alone would wait
 * forever (each SRCAVAIL waits for a reader); the SRCAVAILs are cancelled
 * and the bytes buffered, as TCP would buffer them.
 */
TEST_F(zc, facing_writers_do_not_deadlock)
{
	size_t len = 512 << 10;
	struct facing a = { .fd = self->cfd, .len = len },
		      b = { .fd = self->afd, .len = len };
	long c0 = hps_stat("zcopy_cancels");
	char *da = malloc(len), *db = malloc(len);
	pthread_t ta, tb;

	a.out = da;
	b.out = db;
	a.in = malloc(len);
	b.in = malloc(len);
	hps_fill_random(da, len);
	hps_fill_random(db, len);
	pthread_create(&ta, NULL, facing_thread, &a);
	pthread_create(&tb, NULL, facing_thread, &b);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	EXPECT_EQ((ssize_t)len, a.wrote);
	EXPECT_EQ((ssize_t)len, b.wrote);
	ASSERT_EQ((ssize_t)len, a.got);
	ASSERT_EQ((ssize_t)len, b.got);
	EXPECT_EQ(0, memcmp(a.in, db, len));
	EXPECT_EQ(0, memcmp(b.in, da, len));
	EXPECT_GE(hps_stat("zcopy_cancels") - c0, 2);
	free(a.in);
	free(b.in);
	free(da);
	free(db);
}

/*
 * The smallest window, 3 credits: what every connection gets under memory
 * pressure (net.hps.mem), at the default buf_size and at 4 KiB. A
 * zero-copy send answered with SENDSM leaves its SRCAVAIL's buffer empty
 * in the receive queue; with a window of 3 the peer then had too few
 * credits to send the rest (protocol 3 stopped there for good). The
 * buffer now goes back at once, and an end with no credit left returns
 * credits through the peer's reserve buffer (protocol 4).
 */
FIXTURE(tiny)
{
	int cfd, afd;
	long fb0, rs0;
};

FIXTURE_VARIANT(tiny)
{
	const char *buf_size;	/* NULL: the default */
};

FIXTURE_VARIANT_ADD(tiny, pressure_window) { NULL };
FIXTURE_VARIANT_ADD(tiny, smallest) { "4096" };

FIXTURE_SETUP(tiny)
{
	char oc[32], ob[32], oz[32];
	struct timeval tv = { 20, 0 };
	int thresh = 65536, ok;

	self->cfd = self->afd = -1;
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, sysctl_knob("credits", "3", oc, sizeof(oc)))
		TH_LOG("AF_HPS not available: is af_hps.ko loaded?");
	ASSERT_EQ(0, sysctl_knob("buf_size", variant->buf_size, ob,
				 sizeof(ob)));
	ASSERT_EQ(0, sysctl_rw("65536", oz, sizeof(oz)));
	ok = hps_pair(&self->cfd, &self->afd);
	sysctl_knob("credits", oc, NULL, 0);
	sysctl_knob("buf_size", ob, NULL, 0);
	sysctl_rw(oz, NULL, 0);
	ASSERT_EQ(0, ok);
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_HPS, HPS_ZCOPY_THRESH, &thresh,
				sizeof(thresh)));
	ASSERT_EQ(0, setsockopt(self->afd, SOL_HPS, HPS_ZCOPY_THRESH, &thresh,
				sizeof(thresh)));
	/* A connection that stops moving fails the test instead of hanging. */
	setsockopt(self->cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(self->afd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(self->cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(self->afd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	self->fb0 = hps_stat("zcopy_fallbacks");
	self->rs0 = hps_stat("credit_reserve");
}

FIXTURE_TEARDOWN(tiny)
{
	fprintf(stderr, "# zero-copy fallbacks %ld, credit updates through the reserve %ld\n",
		hps_stat("zcopy_fallbacks") - self->fb0,
		hps_stat("credit_reserve") - self->rs0);
	if (self->cfd >= 0)
		close(self->cfd);
	if (self->afd >= 0)
		close(self->afd);
}

/* A reader of 4 KiB at a time: every SRCAVAIL is answered with SENDSM. */
TEST_F_TIMEOUT(tiny, small_reader, 120)
{
	struct reader r = { .fd = self->afd, .chunk = 4096 };
	size_t len = 2 * MB;
	char *buf = malloc(len);

	hps_fill_random(buf, len);
	EXPECT_EQ(0, xfer(self->cfd, self->afd, buf, len, &r));
	EXPECT_GT(hps_stat("zcopy_fallbacks") - self->fb0, 0);
	free(buf);
}

struct late {
	int fd;
	const char *out;
	char *in;
	size_t len;
	ssize_t got;
};

/* Read all, from 700 ms on: after both ends' SRCAVAILs are cancelled. */
static void *late_reader(void *arg)
{
	struct late *l = arg;

	usleep(700000);
	l->got = hps_read_all(l->fd, l->in, l->len);
	return NULL;
}

/*
 * Both ends write at once, and read only after their zero-copy sends were
 * cancelled (500 ms), in rounds of several sizes. Each direction's data
 * is checked.
 */
TEST_F_TIMEOUT(tiny, facing_writers_late_readers, 120)
{
	static const size_t lens[] = { 512 << 10, 300000, 1 << 20, 65536,
				       200000, 777777 };
	size_t i, max = 1 << 20;
	char *da = malloc(max), *db = malloc(max);
	char *ia = malloc(max), *ib = malloc(max);

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct late a = { .fd = self->cfd, .in = ia, .len = lens[i] },
			    b = { .fd = self->afd, .in = ib, .len = lens[i] };
		pthread_t ra, rb;
		ssize_t wa, wb;
		double t0 = hps_now();
		pid_t pid;
		int st;

		hps_fill_random(da, lens[i]);
		hps_fill_random(db, lens[i]);
		pthread_create(&ra, NULL, late_reader, &a);
		pthread_create(&rb, NULL, late_reader, &b);
		/* the other end's writer in a child, this one's here */
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(hps_write_all(self->afd, db, lens[i]) ==
			      (ssize_t)lens[i] ? 0 : 1);
		wa = hps_write_all(self->cfd, da, lens[i]);
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		wb = WIFEXITED(st) && !WEXITSTATUS(st) ? (ssize_t)lens[i] : -1;
		pthread_join(ra, NULL);
		pthread_join(rb, NULL);
		fprintf(stderr, "# %zu bytes each way: %.2f s\n", lens[i],
			hps_now() - t0);
		ASSERT_EQ((ssize_t)lens[i], wa) TH_LOG("%m");
		ASSERT_EQ((ssize_t)lens[i], wb);
		ASSERT_EQ((ssize_t)lens[i], a.got) TH_LOG("%m");
		ASSERT_EQ((ssize_t)lens[i], b.got) TH_LOG("%m");
		ASSERT_EQ(0, memcmp(ia, db, lens[i]));
		ASSERT_EQ(0, memcmp(ib, da, lens[i]));
	}
	free(da);
	free(db);
	free(ia);
	free(ib);
}

/* Each 8-byte word: thread, record and word number. */
#define NTHREADS 4
#define NRECS 16
#define RECLEN (128 << 10)

static uint64_t word(int th, int rec, size_t i)
{
	return (uint64_t)th << 56 | (uint64_t)rec << 40 | i;
}

static void *record_writer(void *arg)
{
	struct writer *w = arg;
	int th = w->len, rec;
	uint64_t *p = malloc(RECLEN);
	size_t i;

	w->ret = 0;
	for (rec = 0; rec < NRECS; rec++) {
		for (i = 0; i < RECLEN / 8; i++)
			p[i] = word(th, rec, i);
		if (send(w->fd, p, RECLEN, MSG_NOSIGNAL) != RECLEN)
			w->ret = -1;
	}
	free(p);
	return NULL;
}

/* Threads sharing a socket: every send() arrives whole and in order. */
TEST_F(zc, threads_share_a_socket)
{
	struct writer w[NTHREADS];
	struct reader r = { .fd = self->afd, .chunk = MB,
			    .want = (size_t)NTHREADS * NRECS * RECLEN };
	int next[NTHREADS] = {}, i, bad = 0;
	pthread_t t[NTHREADS], rt;
	uint64_t *p;
	size_t k;

	pthread_create(&rt, NULL, read_thread, &r);
	for (i = 0; i < NTHREADS; i++) {
		w[i] = (struct writer){ .fd = self->cfd, .len = i };
		pthread_create(&t[i], NULL, record_writer, &w[i]);
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].ret);
	}
	pthread_join(rt, NULL);
	ASSERT_EQ((ssize_t)r.want, r.got);
	p = (uint64_t *)r.buf;
	for (k = 0; k < r.want / 8 && !bad; k += RECLEN / 8) {
		int th = p[k] >> 56, rec = p[k] >> 40 & 0xffff;
		size_t j;

		if (th >= NTHREADS || rec != next[th]) {
			bad = 1;
			break;
		}
		for (j = 0; j < RECLEN / 8; j++)
			if (p[k + j] != word(th, rec, j))
				bad = 1;
		next[th]++;
	}
	EXPECT_EQ(0, bad) TH_LOG("record at word %zu is torn or out of order",
				 k);
	free(r.buf);
}

/* fork(): the child's writes to its copy never reach the parent's send. */
TEST_F(zc, fork_copy_on_write)
{
	size_t len = 2 * MB;
	char *buf = malloc(len), *want = malloc(len);
	struct reader r = { .chunk = MB };
	int status, i;
	pid_t pid;

	hps_fill_random(buf, len);
	for (i = 0; i < 2; i++) {
		memcpy(want, buf, len);
		pid = fork();
		ASSERT_GE(pid, 0);
		if (!pid) {
			memset(buf, 0x11, len);
			_exit(0);
		}
		ASSERT_EQ(0, xfer(self->cfd, self->afd, buf, len, &r));
		waitpid(pid, &status, 0);
		EXPECT_EQ(0, memcmp(buf, want, len));
		buf[i] ^= 0xff;	/* the parent writes after the send */
	}
	free(buf);
	free(want);
}

/* munmap and a new mapping at the same address: the new bytes are sent. */
TEST_F(zc, remap_same_address)
{
	size_t len = 2 * MB;
	struct reader r = { .chunk = MB };
	long inv0 = hps_stat("zcopy_cache_invalidations");
	char *p, *q;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	hps_fill_random(p, len);
	ASSERT_EQ(0, xfer(self->cfd, self->afd, p, len, &r));
	ASSERT_EQ(0, munmap(p, len));
	q = mmap(p, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(p, q);
	hps_fill_random(q, len);
	ASSERT_EQ(0, xfer(self->cfd, self->afd, q, len, &r));
	munmap(q, len);
	EXPECT_GT(hps_stat("zcopy_cache_invalidations"), inv0);
}

/* Read-only and MAP_SHARED file mappings, and a huge-page buffer. */
TEST_F(zc, readonly_shared_and_huge_buffers)
{
	char name[] = "/tmp/hps_zcopy.XXXXXX";
	size_t len = 4 * MB;
	struct reader r = { .chunk = MB };
	char *data = malloc(len), *ro, *sh, *huge;
	int fd = mkstemp(name);

	ASSERT_GE(fd, 0);
	unlink(name);
	hps_fill_random(data, len);
	ASSERT_EQ((ssize_t)len, write(fd, data, len));

	ro = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(0, xfer(self->cfd, self->afd, ro, len, &r));
	munmap(ro, len);

	sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, sh);
	sh[5] ^= 1;
	EXPECT_EQ(0, xfer(self->cfd, self->afd, sh, len, &r));
	munmap(sh, len);

	huge = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, huge);
	/* 2 MiB aligned, transparent huge pages if the kernel gives them */
	huge = (char *)(((uintptr_t)huge + 2 * MB - 1) & ~(uintptr_t)(2 * MB - 1));
	madvise(huge, 4 * MB, MADV_HUGEPAGE);
	memcpy(huge, data, 4 * MB);
	EXPECT_EQ(0, xfer(self->cfd, self->afd, huge + 77, 4 * MB - 77, &r));
	close(fd);
	free(data);
	EXPECT_GT(hps_stat("zcopy_tx"), self->tx0);
}

/*
 * A writer killed while its SRCAVAIL waits (nobody reads): it dies
 * promptly, the connection stays usable by the other end's owner, and the
 * bytes that arrive are a prefix of what was written.
 */
TEST_F(zc, writer_killed_mid_transfer)
{
	size_t len = 8 * MB;
	char *buf = malloc(len), *got = malloc(len);
	struct timespec t0, t1;
	int status;
	ssize_t n, done = 0;
	long pinned0 = hps_stat("zcopy_pinned_bytes");
	pid_t pid;

	hps_fill_random(buf, len);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		hps_write_all(self->cfd, buf, len);
		_exit(0);
	}
	usleep(300 * 1000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_LT(t1.tv_sec - t0.tv_sec, 5);
	shutdown(self->cfd, SHUT_WR);
	while ((n = recv(self->afd, got + done, len - done, 0)) > 0)
		done += n;
	EXPECT_EQ(0, n);
	EXPECT_EQ(0, memcmp(got, buf, done)) TH_LOG("%zd bytes arrived", done);
	/* The dead writer's pins, cached or not, are gone. */
	EXPECT_LE(pinned_settles(pinned0), pinned0);
	free(buf);
	free(got);
}

/*
 * Run @len bytes through the pair in a child without CAP_IPC_LOCK whose
 * RLIMIT_MEMLOCK is @limit, from @nbufs buffers in turn. Exit status 0:
 * every byte arrived intact.
 */
static int memlock_child(int cfd, int afd, rlim_t limit, int nbufs)
{
	struct rlimit rl = { limit, limit };
	size_t len = MB;
	int i, bad = 0;
	char *bufs;
	pid_t pid;

	pid = fork();
	if (pid)
		return pid;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || drop_ipc_lock())
		_exit(2);
	bufs = mmap(NULL, nbufs * len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < 2 * nbufs; i++) {
		struct reader r = { .chunk = MB };
		char *b = bufs + (i % nbufs) * len;

		hps_fill_random(b, len);
		bad |= xfer(cfd, afd, b, len, &r);
	}
	_exit(bad ? 1 : 0);
}

/*
 * Memory lock limit 0, without CAP_IPC_LOCK: every transfer is made by
 * copy, with no error for the application.
 */
TEST_F(zc, memlock_limit_zero_copies)
{
	long copies0 = hps_stat("zcopy_memlock_copies");
	int status;
	pid_t pid;

	pid = memlock_child(self->cfd, self->afd, 0, 2);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(self->tx0, hps_stat("zcopy_tx"));
	EXPECT_GE(hps_stat("zcopy_memlock_copies") - copies0, 4);
}

/*
 * A limit of 2 MiB, four 1 MiB buffers in turn: the process's idle cached
 * entries are dropped to make room (or a transfer copies), nothing fails.
 */
TEST_F(zc, memlock_limit_evicts)
{
	long ev0 = hps_stat("zcopy_cache_evictions");
	long copies0 = hps_stat("zcopy_memlock_copies");
	long pinned0 = hps_stat("zcopy_pinned_bytes");
	int status;
	pid_t pid;

	pid = memlock_child(self->cfd, self->afd, 2 * MB, 4);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_GT(hps_stat("zcopy_tx"), self->tx0);
	EXPECT_GT(hps_stat("zcopy_cache_evictions") - ev0 +
		  hps_stat("zcopy_memlock_copies") - copies0, 0);
	/* The child exited: its cached pins were released. */
	EXPECT_LE(pinned_settles(pinned0), pinned0);
}

/*
 * The same buffers sent and received again and again hit the cache, and
 * what is written into them between transfers is what travels.
 */
TEST_F(zc, repeated_buffers_hit_the_cache)
{
	size_t len = MB;
	char *src = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *dst = mmap(NULL, len + 1, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long hits0, miss0, miss1;
	int i;

	ASSERT_NE(MAP_FAILED, src);
	ASSERT_NE(MAP_FAILED, dst);
	/* khugepaged collapsing them would (rightly) invalidate entries */
	madvise(src, len, MADV_NOHUGEPAGE);
	madvise(dst, len + 1, MADV_NOHUGEPAGE);
	hits0 = hps_stat("zcopy_cache_hits");
	miss0 = hps_stat("zcopy_cache_misses");
	miss1 = miss0;
	for (i = 0; i < 8; i++) {
		struct reader r = { .chunk = MB, .fixed = dst };

		hps_fill_random(src, len);
		ASSERT_EQ(0, xfer(self->cfd, self->afd, src, len, &r))
			TH_LOG("round %d", i);
		if (!i)
			miss1 = hps_stat("zcopy_cache_misses");
	}
	/* every registration of the first round is a hit in the 7 others */
	EXPECT_GE(miss1 - miss0, 2);
	EXPECT_EQ(miss1, hps_stat("zcopy_cache_misses"));
	EXPECT_GE(hps_stat("zcopy_cache_hits") - hits0, 7 * (miss1 - miss0));
	EXPECT_GE(hps_stat("zcopy_pinned_bytes"), 2 * MB);
	EXPECT_GE(hps_stat("zcopy_rx_reads") - self->rd0, 8);
	munmap(src, len);
	munmap(dst, len + 1);
}

/*
 * mprotect() and mremap() change a cached buffer's mapping: the entry is
 * dropped, and the bytes the address maps now are sent.
 */
TEST_F(zc, mprotect_and_mremap_invalidate)
{
	size_t len = MB;
	struct reader r = { .chunk = MB };
	long inv0 = hps_stat("zcopy_cache_invalidations");
	char *p, *q, *moved;

	p = mmap(NULL, 4 * len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	moved = p + 2 * len;
	munmap(moved, 2 * len);
	hps_fill_random(p, len);
	ASSERT_EQ(0, xfer(self->cfd, self->afd, p, len, &r));

	ASSERT_EQ(0, mprotect(p, len, PROT_READ));
	ASSERT_EQ(0, mprotect(p, len, PROT_READ | PROT_WRITE));
	hps_fill_random(p, len);
	ASSERT_EQ(0, xfer(self->cfd, self->afd, p, len, &r));

	q = mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, moved);
	ASSERT_EQ(moved, q);
	p = mmap(p, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	hps_fill_random(p, len);
	ASSERT_EQ(0, xfer(self->cfd, self->afd, p, len, &r));
	ASSERT_EQ(0, xfer(self->cfd, self->afd, moved, len, &r));
	EXPECT_GE(hps_stat("zcopy_cache_invalidations") - inv0, 2);
	munmap(p, len);
	munmap(moved, len);
}

/*
 * fork() while a buffer is cached: the child writes its copy and sends it
 * on the shared socket, then the parent writes its own and sends it. Each
 * side's bytes are its own.
 */
TEST_F(zc, fork_with_cached_buffer)
{
	size_t len = 2 * MB;
	char *buf = malloc(len), *got = malloc(len);
	struct reader r = { .chunk = MB };
	int status;
	pid_t pid;

	hps_fill_random(buf, len);
	ASSERT_EQ(0, xfer(self->cfd, self->afd, buf, len, &r));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		memset(buf, 0x5a, len);
		_exit(hps_write_all(self->cfd, buf, len) == (ssize_t)len ?
		      0 : 1);
	}
	ASSERT_EQ((ssize_t)len, hps_read_all(self->afd, got, len));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	memset(buf, 0x5a, len);
	EXPECT_EQ(0, memcmp(got, buf, len));
	hps_fill_random(buf, len);
	EXPECT_EQ(0, xfer(self->cfd, self->afd, buf, len, &r));
	free(buf);
	free(got);
}

/* A process that exits leaves nothing pinned behind in the cache. */
TEST_F(zc, exit_releases_cached_pins)
{
	long pinned0 = hps_stat("zcopy_pinned_bytes");
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct reader r = { .chunk = MB };
		char *buf = malloc(4 * MB);

		hps_fill_random(buf, 4 * MB);
		_exit(xfer(self->cfd, self->afd, buf, 4 * MB, &r) ? 1 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_LE(pinned_settles(pinned0), pinned0);
}

/*
 * A non-blocking reader makes the peer send the rest by copy: from the
 * registration's kernel mapping, or page by page without one.
 */
TEST_F(zc, rest_copied_from_registration)
{
	static const char * const kmap[] = { "1", "0" };
	size_t len = 2 * MB, step = len + 4096 + 7;
	char *buf = malloc(2 * step), old[32];
	long k0 = hps_stat("zcopy_kmap_copies");
	int i;

	ASSERT_EQ(0, sysctl_knob("zcopy_cache_kmap", NULL, old, sizeof(old)));
	for (i = 0; i < 2; i++) {
		struct reader r = { .flags = MSG_DONTWAIT };
		char *b = buf + i * step;	/* a buffer not cached yet */

		ASSERT_EQ(0, sysctl_knob("zcopy_cache_kmap", kmap[i], NULL, 0));
		hps_fill_random(b, len);
		EXPECT_EQ(0, xfer(self->cfd, self->afd, b, len, &r))
			TH_LOG("zcopy_cache_kmap %s", kmap[i]);
	}
	sysctl_knob("zcopy_cache_kmap", old, NULL, 0);
	EXPECT_GT(hps_stat("zcopy_fallbacks"), self->fb0);
	EXPECT_GE(hps_stat("zcopy_kmap_copies") - k0, 2);
	free(buf);
}

/* Cache off: every transfer pins and unpins its own pages. */
TEST_F(zc, cache_off)
{
	struct reader r = { .chunk = MB };
	long hits0 = hps_stat("zcopy_cache_hits");
	long pinned0 = hps_stat("zcopy_pinned_bytes");
	size_t len = 2 * MB;
	char *buf = malloc(len), old[32];
	int i;

	ASSERT_EQ(0, sysctl_knob("zcopy_cache_bytes", "0", old, sizeof(old)));
	for (i = 0; i < 3; i++) {
		hps_fill_random(buf, len);
		EXPECT_EQ(0, xfer(self->cfd, self->afd, buf, len, &r));
	}
	/* nothing stays pinned (earlier tests' pins may still go away) */
	EXPECT_LE(hps_stat("zcopy_pinned_bytes"), pinned0);
	sysctl_knob("zcopy_cache_bytes", old, NULL, 0);
	EXPECT_EQ(hits0, hps_stat("zcopy_cache_hits"));
	EXPECT_GT(hps_stat("zcopy_tx"), self->tx0);
	free(buf);
}

/*
 * A new socket starts at net.hps.zcopy_thresh (0); HPS_ZCOPY_THRESH 0 is
 * the copy path only; bad values are refused.
 */
TEST_F(zc, socket_option)
{
	int v = -1, off = 0, big = (1 << 30) + 1;
	socklen_t sl = sizeof(v);
	struct reader r = { .chunk = MB };
	size_t len = 2 * MB;
	char *buf = malloc(len);
	int fd = socket(AF_HPS, SOCK_STREAM, 0);
	long tx;

	ASSERT_EQ(0, getsockopt(fd, SOL_HPS, HPS_ZCOPY_THRESH, &v, &sl));
	EXPECT_EQ(0, v);
	close(fd);
	ASSERT_EQ(0, getsockopt(self->cfd, SOL_HPS, HPS_ZCOPY_THRESH, &v, &sl));
	EXPECT_EQ(65536, v);
	v = -1;
	EXPECT_EQ(-1, setsockopt(self->cfd, SOL_HPS, HPS_ZCOPY_THRESH, &v,
				 sizeof(v)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, setsockopt(self->cfd, SOL_HPS, HPS_ZCOPY_THRESH, &big,
				 sizeof(big)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, setsockopt(self->cfd, SOL_HPS, HPS_ZCOPY_THRESH, &off,
				 2));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, setsockopt(self->cfd, SOL_HPS, HPS_ZCOPY_THRESH, &off,
				sizeof(off)));
	hps_fill_random(buf, len);
	tx = hps_stat("zcopy_tx");
	EXPECT_EQ(0, xfer(self->cfd, self->afd, buf, len, &r));
	EXPECT_EQ(tx, hps_stat("zcopy_tx"));
	free(buf);
}

/* Turned on after the connection was set up: the copy path, exact. */
TEST_F(zc, enabled_too_late_copies)
{
	struct reader r = { .chunk = MB };
	size_t len = 2 * MB;
	char *buf = malloc(len);
	int c, a, l, port, thresh = 65536;
	long tx;

	l = hps_listener(&port, 4);
	ASSERT_GE(l, 0);
	c = hps_connect_to(hps_env("HPS_SELF", "127.0.0.1"), port);
	ASSERT_GE(c, 0);
	a = accept(l, NULL, NULL);
	ASSERT_GE(a, 0);
	ASSERT_EQ(0, setsockopt(c, SOL_HPS, HPS_ZCOPY_THRESH, &thresh,
				sizeof(thresh)));
	hps_fill_random(buf, len);
	tx = hps_stat("zcopy_tx");
	EXPECT_EQ(0, xfer(c, a, buf, len, &r));
	EXPECT_EQ(tx, hps_stat("zcopy_tx"));
	close(a);
	close(c);
	close(l);
	free(buf);
}

/* A receiver set up without zero copy answers SENDSM: bytes by copy. */
TEST_F(zc, receiver_without_zero_copy)
{
	struct reader r = { .chunk = MB };
	size_t len = 2 * MB;
	char *buf = malloc(len), old[32];
	int c, a, l;
	static int port;

	ASSERT_EQ(0, sysctl_rw("0", old, sizeof(old)));
	l = hps_listener(&port, 4);
	sysctl_rw("65536", NULL, 0);
	c = hps_connect_to(hps_env("HPS_SELF", "127.0.0.1"), port);
	sysctl_rw(old, NULL, 0);
	ASSERT_GE(l, 0);
	ASSERT_GE(c, 0);
	a = accept(l, NULL, NULL);
	ASSERT_GE(a, 0);
	hps_fill_random(buf, len);
	EXPECT_EQ(0, xfer(c, a, buf, len, &r));
	EXPECT_GT(hps_stat("zcopy_tx"), self->tx0);
	EXPECT_GT(hps_stat("zcopy_fallbacks"), self->fb0);
	EXPECT_EQ(self->rd0, hps_stat("zcopy_rx_reads"));
	close(a);
	close(c);
	close(l);
	free(buf);
}

struct many {
	int cfd, afd, ok;
	const char *buf;
	size_t len;
};

static void *many_thread(void *arg)
{
	struct many *m = arg;
	int i;

	m->ok = 1;
	for (i = 0; i < 3; i++) {
		struct reader r = { .chunk = MB };

		if (xfer(m->cfd, m->afd, m->buf, m->len, &r))
			m->ok = 0;
	}
	return NULL;
}

/*
 * Four connections send the same buffer at once, three times each: they
 * share its cache entries, and every byte arrives on every connection.
 */
TEST_F(zc, many_sockets_share_a_buffer)
{
	int thresh = 65536, i;
	struct many m[4];
	pthread_t t[4];
	size_t len = 2 * MB;
	char *buf = malloc(len), old[32];
	long hits0 = hps_stat("zcopy_cache_hits");

	hps_fill_random(buf, len);
	ASSERT_EQ(0, sysctl_rw("65536", old, sizeof(old)));
	for (i = 0; i < 4; i++) {
		m[i].buf = buf;
		m[i].len = len;
		ASSERT_EQ(0, hps_pair(&m[i].cfd, &m[i].afd));
		ASSERT_EQ(0, setsockopt(m[i].cfd, SOL_HPS, HPS_ZCOPY_THRESH,
					&thresh, sizeof(thresh)));
	}
	sysctl_rw(old, NULL, 0);
	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, many_thread, &m[i]);
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_TRUE(m[i].ok) TH_LOG("connection %d", i);
		close(m[i].cfd);
		close(m[i].afd);
	}
	EXPECT_GT(hps_stat("zcopy_tx"), self->tx0);
	EXPECT_GT(hps_stat("zcopy_cache_hits"), hits0);
	free(buf);
}

TEST(sysctl_zcopy_thresh)
{
	char old[32], now[32];

	ASSERT_EQ(0, sysctl_rw(NULL, old, sizeof(old)));
	EXPECT_EQ(0, atoi(old));
	EXPECT_EQ(0, sysctl_rw("1048576", NULL, 0));
	ASSERT_EQ(0, sysctl_rw(NULL, now, sizeof(now)));
	EXPECT_EQ(1048576, atoi(now));
	EXPECT_EQ(-1, sysctl_rw("-1", NULL, 0));
	EXPECT_EQ(-1, sysctl_rw("1073741825", NULL, 0));
	EXPECT_EQ(0, sysctl_rw("0", NULL, 0));
	ASSERT_EQ(0, sysctl_rw(NULL, now, sizeof(now)));
	EXPECT_EQ(0, atoi(now));
	EXPECT_EQ(0, sysctl_rw(old, NULL, 0));
}

TEST_HARNESS_MAIN
