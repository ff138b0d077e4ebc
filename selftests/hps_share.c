// SPDX-License-Identifier: GPL-2.0
/*
 * Sockets shared by several threads and processes, as servers share them:
 * 2-4 writers and 2-4 readers on one connection, zero copy on and off,
 * small and large writes, readers that stall so the credits run out,
 * MSG_PEEK among readers, a forked child writing beside the parent, a
 * reader and a writer killed mid zero copy, a fatal QP event delivered in
 * hard-IRQ context. Every byte is accounted for (hps_words.h). Runs over
 * RDMA loopback on this node; hps_across runs the same stream between two.
 *
 * Some cases widen a race window with the test build's fault injection
 * (/sys/module/af_hps/parameters/inject_*, af_hps/hps_inject.c); each was
 * run against the code before the fix it proves, and failed there
 * (Documentation/reliability.rst, "Sharing a socket").
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <signal.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <linux/sockios.h>

#include "kselftest_harness.h"
#include "hps_words.h"

/* HPS_SHARE_ONLY="name ...": run only these cases (to chase one) */
#define ONLY(name) do {							\
	const char *o = getenv("HPS_SHARE_ONLY");			\
									\
	if (o && *o && !strstr(o, name))				\
		SKIP(return, "not in HPS_SHARE_ONLY");			\
} while (0)

FIXTURE(share)
{
	int cfd, afd;
	char credits[16];
};

FIXTURE_VARIANT(share)
{
	const char *name;
	int nw, nr;
	int zc;			/* zero-copy threshold, 0: off */
	size_t wmin, wmax, rmin, rmax;	/* in words */
	size_t mib;		/* per writer */
	int stall, peek, nodelay;
	int inj, inj_ms;	/* fault injection point and time */
	int credits;		/* net.hps.credits for the case (0: default) */
	int rcvbuf;		/* the reader's SO_RCVBUF (0: default) */
};

/* copy, small writes and reads, stalling readers: credits run out */
FIXTURE_VARIANT_ADD(share, w2_r1_small) {
	.name = "w2_r1_small",
	.nw = 2, .nr = 1, .wmin = 1, .wmax = KB(4), .rmin = 1, .rmax = KB(4),
	.mib = 4, .stall = 50,
};
FIXTURE_VARIANT_ADD(share, w1_r2_small) {
	.name = "w1_r2_small",
	.nw = 1, .nr = 2, .wmin = 1, .wmax = KB(4), .rmin = 1, .rmax = KB(4),
	.mib = 8, .stall = 50,
};
FIXTURE_VARIANT_ADD(share, w4_r4_mixed) {
	.name = "w4_r4_mixed",
	.nw = 4, .nr = 4, .wmin = 1, .wmax = KB(256), .rmin = 1,
	.rmax = KB(128), .mib = 4, .stall = 20,
};
FIXTURE_VARIANT_ADD(share, w2_r2_nodelay_peek) {
	.name = "w2_r2_nodelay_peek",
	.nw = 2, .nr = 2, .wmin = 1, .wmax = KB(2), .rmin = 1, .rmax = KB(8),
	.mib = 2, .stall = 30, .peek = 1, .nodelay = 1,
};
/* zero copy: large writes and reads, the reproduction */
FIXTURE_VARIANT_ADD(share, zc_w1_r2) {
	.name = "zc_w1_r2",
	.nw = 1, .nr = 2, .zc = 65536, .wmin = KB(64), .wmax = KB(1024),
	.rmin = KB(16), .rmax = KB(1024), .mib = 64, .stall = 8,
};
FIXTURE_VARIANT_ADD(share, zc_w2_r1) {
	.name = "zc_w2_r1",
	.nw = 2, .nr = 1, .zc = 65536, .wmin = KB(64), .wmax = KB(1024),
	.rmin = KB(16), .rmax = KB(1024), .mib = 32, .stall = 8,
};
FIXTURE_VARIANT_ADD(share, zc_w4_r4_mixed) {
	.name = "zc_w4_r4_mixed",
	.nw = 4, .nr = 4, .zc = 65536, .wmin = 1, .wmax = KB(1024),
	.rmin = 1, .rmax = KB(1024), .mib = 16, .stall = 10,
};
FIXTURE_VARIANT_ADD(share, zc_w2_r2_peek) {
	.name = "zc_w2_r2_peek",
	.nw = 2, .nr = 2, .zc = 65536, .wmin = KB(64), .wmax = KB(512),
	.rmin = KB(16), .rmax = KB(512), .mib = 16, .stall = 10, .peek = 1,
};
/* widened windows: each failed on the code before its fix */
FIXTURE_VARIANT_ADD(share, inj_tx_reserve) {
	.name = "inj_tx_reserve",
	/*
	 * A credit posts the open slot while the writer is about to fill
	 * it, and that fills the ring: send completions come late, and the
	 * reader's window (3 buffers, its SO_RCVBUF) is smaller than the
	 * writer's ring, so the writer runs out of credits with room left.
	 */
	.nw = 1, .nr = 1, .wmin = 1, .wmax = KB(4), .rmin = 1, .rmax = KB(64),
	.mib = 1, .stall = 1, .nodelay = 1, .rcvbuf = 3 * 65536,
	.inj = INJ_TX_RESERVE, .inj_ms = 5,
};
FIXTURE_VARIANT_ADD(share, inj_zc_rx_two_readers) {
	.name = "inj_zc_rx_two_readers",
	/* reader A away from its posted RDMA Read; reader B comes in */
	.nw = 1, .nr = 2, .zc = 65536, .wmin = KB(64), .wmax = KB(1024),
	.rmin = KB(64), .rmax = KB(1024), .mib = 16, .stall = 8,
	.inj = INJ_ZC_RX_WAIT, .inj_ms = 20,
};
FIXTURE_VARIANT_ADD(share, inj_zc_tx_two_writers) {
	.name = "inj_zc_tx_two_writers",
	/* writer A registered its pages, not yet advertised; B comes in */
	.nw = 2, .nr = 1, .zc = 65536, .wmin = KB(64), .wmax = KB(1024),
	.rmin = KB(16), .rmax = KB(1024), .mib = 8, .stall = 8,
	.inj = INJ_ZC_TX_POST, .inj_ms = 20,
};

FIXTURE_SETUP(share)
{
	int fd = socket(AF_HPS, SOCK_STREAM, 0);

	self->cfd = self->afd = -1;
	ONLY(variant->name);
	if (fd < 0 && errno == EAFNOSUPPORT)
		ASSERT_TRUE(0) TH_LOG("AF_HPS not available: is af_hps.ko loaded?");
	close(fd);
	signal(SIGPIPE, SIG_IGN);
	self->credits[0] = 0;
	if (variant->credits) {
		char c[16];

		snprintf(c, sizeof(c), "%d", variant->credits);
		ASSERT_EQ(0, hps_sysctl("credits", c, self->credits,
					sizeof(self->credits)));
	}
	ASSERT_EQ(0, zc_pair_rcvbuf(&self->cfd, &self->afd, variant->zc,
				    variant->rcvbuf));
	if (self->credits[0])
		hps_sysctl("credits", self->credits, NULL, 0);
	if (variant->inj)
		ASSERT_EQ(0, inject(variant->inj, variant->inj_ms))
			TH_LOG("no fault injection: not a test build of af_hps.ko?");
}

FIXTURE_TEARDOWN(share)
{
	if (self->cfd < 0)
		return;
	inject(INJ_NONE, 0);
	close(self->cfd);
	close(self->afd);
}

TEST_F_TIMEOUT(share, every_byte_once, 600)
{
	struct share s = {
		.wfd = self->cfd, .rfd = self->afd,
		.nw = variant->nw, .nr = variant->nr,
		.words = share_words(variant->mib),
		.wmin = variant->wmin, .wmax = variant->wmax,
		.rmin = variant->rmin, .rmax = variant->rmax,
		.stall = variant->stall, .peek = variant->peek,
	};
	long zrd0 = hps_stat("zcopy_rx_reads"), ztx0 = hps_stat("zcopy_tx");
	double t0 = hps_now();
	int i, outq = -1;

	if (_metadata->skip)
		return;	/* setup skipped (HPS_SHARE_ONLY) */
	if (variant->nodelay)
		ASSERT_EQ(0, set_int(self->cfd, SOL_TCP, TCP_NODELAY, 1));
	share_init(&s, s.nw);
	share_run(&s);
	share_complete(&s, s.nw);
	TH_LOG("%d writers, %d readers: %ld bytes in %ld reads (%ld peeks) in %.1f s; zero copy: %ld sends, %ld reads",
	       s.nw, s.nr, (long)s.bytes, (long)s.reads, (long)s.peeks,
	       hps_now() - t0, hps_stat("zcopy_tx") - ztx0,
	       hps_stat("zcopy_rx_reads") - zrd0);
	EXPECT_EQ(0, s.errors) TH_LOG("%s", s.first);
	EXPECT_EQ((long)(s.nw * s.words * WORD), (long)s.bytes);
	if (variant->zc && variant->wmin >= KB(64))
		EXPECT_LT(0, hps_stat("zcopy_tx") - ztx0);
	/*
	 * Every byte read, every send known complete soon after: those
	 * that did not ask for their completion too (af_hps.rst, "Send
	 * completions"; late ones of a test build within inject_ms * 100).
	 */
	for (i = 0; i < 300; i++) {
		ASSERT_EQ(0, ioctl(self->cfd, SIOCOUTQ, &outq));
		if (!outq)
			break;
		usleep(10000);
	}
	EXPECT_EQ(0, outq) TH_LOG("SIOCOUTQ %d after 3 s", outq);
	share_free(&s);
}

/* A forked child writes beside the parent's thread; two readers. */
FIXTURE(forked)
{
	int cfd, afd;
};

FIXTURE_VARIANT(forked)
{
	const char *name;
	int zc;
	size_t wmin, wmax;
};

FIXTURE_VARIANT_ADD(forked, copy) {
	.name = "forked_copy", .wmin = 1, .wmax = KB(64),
};
FIXTURE_VARIANT_ADD(forked, zc) {
	.name = "forked_zc", .zc = 65536, .wmin = KB(64), .wmax = KB(1024),
};

FIXTURE_SETUP(forked)
{
	self->cfd = self->afd = -1;
	ONLY(variant->name);
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, zc_pair(&self->cfd, &self->afd, variant->zc));
}

FIXTURE_TEARDOWN(forked)
{
	close(self->cfd);
	close(self->afd);
}

TEST_F_TIMEOUT(forked, child_and_threads, 300)
{
	struct share s = {
		.wfd = self->cfd, .rfd = self->afd, .nr = 2,
		.words = share_words(8),
		.wmin = variant->wmin, .wmax = variant->wmax,
		.rmin = 1, .rmax = KB(1024), .stall = 10,
	};
	struct worker ww = { .s = &s, .id = 1, .rng = 12345 };
	pthread_t wt;
	int status;
	pid_t pid;

	if (_metadata->skip)
		return;	/* setup skipped (HPS_SHARE_ONLY) */
	share_init(&s, 2);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct worker cw = { .s = &s, .id = 0, .rng = 777 };

		writer(&cw);
		_exit(atomic_load(&s.errors) ? 1 : 0);
	}
	/* writer 0 in the child, writer 1 and the two readers here */
	pthread_create(&wt, NULL, writer, &ww);
	{
		pthread_t rt[2];
		struct worker rw[2] = {
			{ .s = &s, .id = 0, .rng = 99 },
			{ .s = &s, .id = 1, .rng = 101 },
		};

		pthread_create(&rt[0], NULL, reader, &rw[0]);
		pthread_create(&rt[1], NULL, reader, &rw[1]);
		pthread_join(wt, NULL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_EQ(0, status);
		shutdown(self->cfd, SHUT_WR);
		pthread_join(rt[0], NULL);
		pthread_join(rt[1], NULL);
	}
	share_complete(&s, 2);
	EXPECT_EQ(0, s.errors) TH_LOG("%s", s.first);
	EXPECT_EQ((long)(2 * s.words * WORD), (long)s.bytes);
	share_free(&s);
}

/*
 * The send ring, deterministically: a writer has seen room in the ring, a
 * credit arrives and posts the open slot, which fills the ring, before the
 * writer takes its slot. Send completions are handled 4 s late (fault
 * injection) so that posted slots stay in flight, the reader's window (3
 * buffers) is smaller than the writer's ring (16), and the writer waits in
 * that window until the credit came. Before the fix the writer appended to
 * a slot in flight and its bytes vanished.
 */
struct one_reader {
	struct share *s;
	int fd;
	size_t got;
};

static void *read_to_eof(void *arg)
{
	struct one_reader *r = arg;
	struct worker w = { .s = r->s, .id = 1 };
	unsigned long long buf[1024];
	ssize_t n;

	usleep(10000);	/* the writer is in its window by now */
	while ((n = recv(r->fd, buf, sizeof(buf), 0)) > 0) {
		check_piece(&w, buf, n / WORD, 0);
		r->got += n;
	}
	return NULL;
}

TEST(ring_filled_under_the_writer)
{
	enum { MSG = 8, NMSG = 17 };	/* 8 words a message */
	struct share s = { .nw = 1, .words = MSG * NMSG };
	struct worker w = { .s = &s, .id = 0 };
	unsigned long long buf[MSG];
	struct one_reader r = { .s = &s };
	int cfd, afd, k, i;
	pthread_t t;

	ONLY("ring_filled_under_the_writer");
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, zc_pair_rcvbuf(&cfd, &afd, 0, 3 * 65536));
	ASSERT_EQ(0, set_int(cfd, SOL_TCP, TCP_NODELAY, 1));
	share_init(&s, 1);
	ASSERT_EQ(0, inject(INJ_TX_RESERVE, 40))
		TH_LOG("no fault injection: not a test build of af_hps.ko?");
	r.fd = afd;
	for (k = 0; k < NMSG; k++) {
		for (i = 0; i < MSG; i++)
			buf[i] = (unsigned long long)(k * MSG + i);
		if (k == NMSG - 1)	/* the race: a reader comes in */
			pthread_create(&t, NULL, read_to_eof, &r);
		ASSERT_EQ(sizeof(buf), send(cfd, buf, sizeof(buf), 0));
		/* 13 posted and read, 13 and 14 posted unread, 15 held */
		if (k < NMSG - 4) {
			usleep(20000);
			ASSERT_EQ(sizeof(buf), recv(afd, buf, sizeof(buf), 0));
			check_piece(&w, buf, MSG, 0);
			usleep(20000);	/* its credit comes back */
		}
	}
	inject(INJ_NONE, 0);
	shutdown(cfd, SHUT_WR);
	pthread_join(t, NULL);
	share_complete(&s, 1);
	EXPECT_EQ(0, s.errors) TH_LOG("%s", s.first);
	EXPECT_EQ((NMSG - (NMSG - 4)) * sizeof(buf), r.got);
	share_free(&s);
	close(cfd);
	close(afd);
}

/*
 * A thread asleep in recv() on a socket another thread writes to is woken
 * for what it waits for, not for every message the writer sends: each
 * send completion and each credit update of the peer used to wake it
 * (sock_def_write_space()), so that it ran, found nothing and slept again,
 * once per message (issue 21: 8 context switches per round trip of a
 * request and its answer, 4 with TCP). Counted in the reader's voluntary
 * context switches (/proc/self/task/TID/status) while the other thread
 * sends 300 messages; then the answer wakes it, checked by content.
 */
struct sleeper {
	int fd;
	pid_t tid;
	ssize_t got;
	char buf[64];
};

static void *sleep_in_recv(void *arg)
{
	struct sleeper *r = arg;

	r->tid = gettid();
	r->got = recv(r->fd, r->buf, sizeof(r->buf), MSG_WAITALL);
	return NULL;
}

/* the thread's voluntary context switches, -1 if unknown */
static long vol_switches(pid_t tid)
{
	char path[64], line[128];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* the thread sleeps (state S) */
static int sleeping(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

TEST(reader_sleeps_through_sends)
{
	enum { NMSG = 300 };
	struct sleeper r = { 0 };
	char msg[64], got[64];
	long before, after;
	int cfd, afd, i, k;
	pthread_t t;

	ONLY("reader_sleeps_through_sends");
	ASSERT_EQ(0, hps_pair(&cfd, &afd));
	ASSERT_EQ(0, set_int(cfd, SOL_TCP, TCP_NODELAY, 1));
	r.fd = cfd;
	ASSERT_EQ(0, pthread_create(&t, NULL, sleep_in_recv, &r));
	for (i = 0; i < 1000 && !(r.tid && sleeping(r.tid)); i++)
		usleep(1000);
	ASSERT_TRUE(r.tid && sleeping(r.tid));
	usleep(20000);		/* well asleep */
	before = vol_switches(r.tid);
	ASSERT_LE(0, before);
	for (k = 0; k < NMSG; k++) {
		for (i = 0; i < (int)sizeof(msg); i++)
			msg[i] = (char)(k * 7 + i);
		ASSERT_EQ(sizeof(msg), send(cfd, msg, sizeof(msg), 0));
		ASSERT_EQ(sizeof(got), hps_read_all(afd, got, sizeof(got)));
		ASSERT_EQ(0, memcmp(msg, got, sizeof(msg))) TH_LOG("message %d", k);
	}
	usleep(20000);		/* the last completions are in */
	after = vol_switches(r.tid);
	ASSERT_EQ(0, r.got) TH_LOG("the reader returned early");
	TH_LOG("reader woke %ld times for %d messages sent", after - before,
	       NMSG);
	/* a few are fine (a timer, the scheduler), one per message is not */
	EXPECT_LT(after - before, NMSG / 10);
	for (i = 0; i < (int)sizeof(msg); i++)
		msg[i] = (char)(0xa5 ^ i);
	ASSERT_EQ(sizeof(msg), send(afd, msg, sizeof(msg), 0));
	pthread_join(t, NULL);
	EXPECT_EQ(sizeof(msg), r.got);
	EXPECT_EQ(0, memcmp(msg, r.buf, sizeof(msg)));
	close(cfd);
	close(afd);
}

/*
 * The other way round: a thread asleep in send(), its peer not reading,
 * is woken for room, not for every message that arrives on its socket:
 * sock_def_readable() wakes every sleeper with read events, and the
 * credits those messages brought back used to wake it with write events
 * (sk_write_space()) though only a send completion makes room: 139
 * wakeups for 300 messages before. Counted in the writer's voluntary
 * context switches while the peer sends 300 messages on the same
 * connection; then both streams are read and checked by content, and
 * the writer's send() completes.
 */
struct blocked_writer {
	int fd;
	pid_t tid;
	ssize_t sent;
	unsigned char *buf;
	size_t len;
};

static void *sleep_in_send(void *arg)
{
	struct blocked_writer *w = arg;

	__atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
	w->sent = hps_write_all(w->fd, w->buf, w->len);
	return NULL;
}

TEST(writer_sleeps_through_reads)
{
	enum { NMSG = 300 };
	struct timeval tv = { .tv_sec = 20 };
	struct blocked_writer w = { .len = 4 << 20 };
	unsigned char *got;
	char msg[64], in[64];
	long before, after;
	int cfd, afd, i, k;
	pthread_t t;

	ONLY("writer_sleeps_through_reads");
	w.buf = malloc(w.len);
	got = malloc(w.len);
	ASSERT_TRUE(w.buf && got);
	hps_fill_random(w.buf, w.len);
	ASSERT_EQ(0, hps_pair(&cfd, &afd));
	ASSERT_EQ(0, set_int(afd, SOL_TCP, TCP_NODELAY, 1));
	ASSERT_EQ(0, setsockopt(afd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
	w.fd = cfd;
	ASSERT_EQ(0, pthread_create(&t, NULL, sleep_in_send, &w));
	/*
	 * Asleep for room, and staying so: the peer reads nothing, but its
	 * window grows and its unread bytes are collapsed for a while after
	 * the writer first blocks (protocol.rst, Grows, Collapses), each
	 * step letting the writer on; up to 20 s under a loaded host.
	 */
	for (i = 0; i < 100; i++) {
		pid_t tid = __atomic_load_n(&w.tid, __ATOMIC_ACQUIRE);
		long v;

		if (!tid || !sleeping(tid)) {
			usleep(200000);
			continue;
		}
		v = vol_switches(tid);
		usleep(200000);
		if (sleeping(tid) && vol_switches(tid) == v)
			break;
	}
	ASSERT_GT(100, i) TH_LOG("the writer never stayed asleep");
	before = vol_switches(w.tid);
	ASSERT_LE(0, before);
	for (k = 0; k < NMSG; k++) {
		for (i = 0; i < (int)sizeof(msg); i++)
			msg[i] = (char)(k * 11 + i);
		ASSERT_EQ(sizeof(msg), send(afd, msg, sizeof(msg), 0))
			TH_LOG("message %d: %s", k, strerror(errno));
	}
	usleep(50000);		/* the last ones are in */
	after = vol_switches(w.tid);
	TH_LOG("writer woke %ld times for %d messages received", after - before,
	       NMSG);
	/* a few are fine (a timer, a credit), one per message is not */
	EXPECT_LT(after - before, NMSG / 10);
	EXPECT_EQ(0, __atomic_load_n(&w.sent, __ATOMIC_RELAXED)); /* blocked */
	for (k = 0; k < NMSG; k++) {
		ASSERT_EQ(sizeof(in), hps_read_all(cfd, in, sizeof(in)));
		for (i = 0; i < (int)sizeof(msg); i++)
			msg[i] = (char)(k * 11 + i);
		ASSERT_EQ(0, memcmp(msg, in, sizeof(msg))) TH_LOG("message %d", k);
	}
	ASSERT_EQ((ssize_t)w.len, hps_read_all(afd, got, w.len));
	pthread_join(t, NULL);
	EXPECT_EQ((ssize_t)w.len, w.sent);
	EXPECT_EQ(0, memcmp(w.buf, got, w.len));
	free(w.buf);
	free(got);
	close(cfd);
	close(afd);
}

/*
 * How long a child of this process that blocks in nothing of ours takes
 * to die of SIGKILL (about 0.02 s, on the debug kernel too): the base of
 * the times below. -1 if it could not be measured.
 */
static double plain_death(void)
{
	int status;
	double t;
	pid_t pid = fork();

	if (!pid) {
		pause();
		_exit(0);
	}
	if (pid < 0)
		return -1;
	usleep(100000);
	t = hps_now();
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return hps_now() - t;
}

/* Does @pid sleep in a kernel function whose name starts with @prefix? */
static bool sleeps_in(pid_t pid, const char *prefix)
{
	char path[64], buf[128] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/wchan", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return !strncmp(buf, prefix, strlen(prefix));
}

/*
 * A reader killed while its zero-copy read is in flight: it dies at once
 * (within a second of a plain child's death, not when the read completes
 * 5 s later), and what it did not finish reading is still there for the
 * others.
 */
TEST(killed_reader_mid_zero_copy)
{
	struct share s = { .nw = 1, .words = share_words(8), .wmin = KB(1024),
			   .wmax = KB(1024), .rmin = KB(1024), .rmax = KB(1024) };
	unsigned long long *buf;
	int cfd, afd, status;
	struct worker w = { .s = &s, .id = 0, .rng = 5 }, r = { .s = &s, .id = 1, .rng = 7 };
	pthread_t wt, rt;
	double t, base, wait_ms;
	bool waited = false;
	pid_t pid;
	size_t i, first = 0, last = 0, missing = 0;

	ONLY("killed_reader_mid_zero_copy");

	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, zc_pair(&cfd, &afd, 65536));
	s.wfd = cfd;
	s.rfd = afd;
	share_init(&s, 1);
	base = plain_death();
	ASSERT_LE(0, base);
	ASSERT_GT(0.5, base);
	pthread_create(&wt, NULL, writer, &w);
	/* the child's RDMA Read completes 5 s late, as if the peer stalled */
	ASSERT_EQ(0, inject(INJ_ZC_RD_DONE, 5000));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* faulted in: the pin before the read is quick */
		buf = malloc(1 << 20);
		memset(buf, 0, 1 << 20);
		recv(afd, buf, 1 << 20, 0);
		_exit(0);
	}
	/*
	 * Killed once it waits for its read to complete (in hps_zc_recv(),
	 * killable), not before: on the debug kernel the writer's zero-copy
	 * setup and the reader's before its read is posted take about a
	 * second, and a kill 500 ms after the fork, as this test first did,
	 * took 1.4 s to end the reader there. Its wait wakes every 100 ms,
	 * and /proc/PID/wchan is empty while it runs: the first sight of it
	 * asleep there is the sign.
	 */
	t = hps_now();
	while (hps_now() - t < 10.0) {
		waited = sleeps_in(pid, "hps_zc_");
		if (waited || waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(2000);
	}
	wait_ms = (hps_now() - t) * 1000;
	/* if not, the writer cancelled before the read was posted */
	EXPECT_TRUE(waited) TH_LOG("the reader did not wait for a read");
	t = hps_now();
	kill(pid, SIGKILL);
	if (waited) {
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
	} else {
		waitpid(pid, &status, 0);	/* if not reaped above */
	}
	t = hps_now() - t;
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	inject(INJ_NONE, 0);
	EXPECT_LT(t, base + 1.0)
		TH_LOG("the killed reader took %.3f s to die, a plain child %.3f s",
		       t, base);
	/* this reader takes the rest */
	pthread_create(&rt, NULL, reader, &r);
	pthread_join(wt, NULL);
	shutdown(cfd, SHUT_WR);
	pthread_join(rt, NULL);
	EXPECT_EQ(0, s.errors) TH_LOG("%s", s.first);
	/* what is missing is at most the child's one read, in one piece */
	for (i = 0; i < s.words; i++) {
		if (s.seen[0][i])
			continue;
		if (!missing++)
			first = i;
		last = i;
	}
	TH_LOG("the killed reader took %zu bytes (%.3f s to die, a plain child %.3f s;",
	       missing * WORD, t, base);
	TH_LOG("it waited for its read %.0f ms after the fork)", wait_ms);
	if (missing)
		EXPECT_EQ(missing, last - first + 1);
	EXPECT_LE(missing, (size_t)KB(1024));
	share_free(&s);
	close(cfd);
	close(afd);
}

/*
 * A writer killed mid zero-copy send while the reader is not reading:
 * it dies within the zero-copy cancel time, and the stream after it is
 * intact: a prefix of its bytes, then the next writer's.
 */
TEST(killed_writer_mid_zero_copy)
{
	struct share s = { .nw = 2, .words = share_words(4), .wmin = KB(1024),
			   .wmax = KB(1024), .rmin = KB(64), .rmax = KB(1024) };
	struct worker w1 = { .s = &s, .id = 1, .rng = 3 }, r = { .s = &s, .id = 0, .rng = 9 };
	int cfd, afd, status;
	pthread_t rt;
	double t, base;
	pid_t pid;
	size_t i, prefix = 0;

	ONLY("killed_writer_mid_zero_copy");

	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, zc_pair(&cfd, &afd, 65536));
	s.wfd = cfd;
	s.rfd = afd;
	share_init(&s, 2);
	base = plain_death();
	ASSERT_LE(0, base);
	ASSERT_GT(0.5, base);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct worker w0 = { .s = &s, .id = 0, .rng = 1 };

		writer(&w0);	/* blocks: nobody reads yet */
		_exit(0);
	}
	usleep(300000);
	t = hps_now();
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	t = hps_now() - t;
	EXPECT_LT(t, base + 2.0)
		TH_LOG("the killed writer took %.3f s to die, a plain child %.3f s",
		       t, base);
	pthread_create(&rt, NULL, reader, &r);
	writer(&w1);
	shutdown(cfd, SHUT_WR);
	pthread_join(rt, NULL);
	EXPECT_EQ(0, s.errors) TH_LOG("%s", s.first);
	for (i = 0; i < s.words && s.seen[0][i]; i++)
		prefix++;
	for (; i < s.words; i++)
		EXPECT_EQ(0, s.seen[0][i]) TH_LOG("writer 0's word %zu after a gap", i);
	for (i = 0; i < s.words; i++)
		if (!s.seen[1][i]) {
			EXPECT_EQ(1, s.seen[1][i]) TH_LOG("writer 1's word %zu lost", i);
			break;
		}
	TH_LOG("the killed writer got %zu bytes out (%.3f s to die)", prefix * WORD, t);
	share_free(&s);
	close(cfd);
	close(afd);
}

/*
 * mlx4 and mlx5 deliver QP events in hard-IRQ context; the test build
 * delivers one that way (irq_work). The connection is reset, both ends
 * see it, and lockdep (on the debug kernel) has nothing to say.
 */
TEST(qp_event_in_hard_irq)
{
	int cfd, afd, one = 1;
	char c;

	ONLY("qp_event_in_hard_irq");

	ASSERT_EQ(0, zc_pair(&cfd, &afd, 0));
	ASSERT_EQ(1, send(cfd, "x", 1, 0));
	ASSERT_EQ(1, recv(afd, &c, 1, 0));
	ASSERT_EQ(0, setsockopt(cfd, SOL_HPS, HPS_INJECT_QP_EVENT, &one,
				sizeof(one)))
		TH_LOG("no fault injection: not a test build of af_hps.ko?");
	EXPECT_EQ(-1, recv(cfd, &c, 1, 0));
	EXPECT_EQ(ECONNRESET, errno);
	EXPECT_EQ(0, recv(afd, &c, 1, 0) > 0);
	close(cfd);
	close(afd);
}

TEST_HARNESS_MAIN
