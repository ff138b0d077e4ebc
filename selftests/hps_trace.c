// SPDX-License-Identifier: GPL-2.0
/*
 * The af_hps tracepoints fire, with their fields, in the tests that
 * exercise their events (through tracefs): state changes; connect and
 * accept outcomes with the rdma_cm event and status (established,
 * refused, backlog full); credit stalls and resumes (a reset ends a
 * stall too); aborts with their reason (local, peer, user timeout);
 * keepalive probes and the user timeout; zero-copy decisions and
 * fallbacks (zero copy, copy for a small send, a non-blocking or peeking
 * reader, a sender's cancel); every message sent and received. The
 * keepalive timeout of a silent peer is checked in hps_ka_peer (two
 * nodes).
 *
 * hps-configs: 1:rxe
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>

#include "kselftest_harness.h"
#include "hps_util.h"
#include "hps_tracefs.h"

#define LINE	1024

static int seti(int fd, int level, int opt, int v)
{
	return setsockopt(fd, level, opt, &v, sizeof(v)) ? errno : 0;
}

FIXTURE(tr) {
	char *trace;
	char port[32];		/* ":PORT", the listener's */
	char line[LINE];
	int l, lport;
};

FIXTURE_SETUP(tr)
{
	int err = hps_tracefs_init();

	ASSERT_EQ(0, err) TH_LOG("tracefs or af_hps events missing: %s",
				 strerror(-err));
	signal(SIGPIPE, SIG_IGN);
	self->trace = NULL;
	self->l = -1;
	ASSERT_EQ(0, hps_trace_start());	/* the listen() too */
	self->l = hps_listener(&self->lport, 0);
	ASSERT_GE(self->l, 0);
	snprintf(self->port, sizeof(self->port), ":%d ", self->lport);
}

FIXTURE_TEARDOWN(tr)
{
	hps_trace_stop();
	free(self->trace);
	if (self->l >= 0)
		close(self->l);
}

/* Stop tracing and read the buffer. */
static void collect(struct __test_metadata *_metadata,
		    FIXTURE_DATA(tr) *self)
{
	hps_trace_stop();
	free(self->trace);
	self->trace = hps_trace_read();
	ASSERT_NE(NULL, self->trace);
}

/* Find an event line, log it. */
#define FOUND(ev, ...)							\
	({								\
		int __f = hps_trace_find(self->trace, self->line, LINE,	\
					 ev, __VA_ARGS__, NULL);	\
		if (__f)						\
			TH_LOG("%s", self->line);			\
		__f;							\
	})

static int connect_port(int port)
{
	return hps_connect_to(hps_env("HPS_SELF", "127.0.0.1"), port);
}

TEST_F(tr, states_connect_and_accept_outcomes)
{
	int c = connect_port(self->lport), a, i;
	struct hps_info ainfo;
	socklen_t al = sizeof(ainfo);
	char dst[64];

	ASSERT_GE(c, 0);
	a = accept(self->l, NULL, NULL);
	ASSERT_GE(a, 0);
	/*
	 * half-closed first: a in CLOSE_WAIT as soon as its recv() has
	 * returned the end of the stream, as on TCP (recvmsg() moves the
	 * state itself); c in FIN_WAIT2 once the connection work has seen
	 * the FIN's send complete, waited for (with one CPU, two-node
	 * guests, the test closed a before that thread ran)
	 */
	ASSERT_EQ(0, shutdown(c, SHUT_WR));
	ASSERT_EQ(0, recv(a, dst, sizeof(dst), 0));
	ASSERT_EQ(0, getsockopt(a, SOL_HPS, HPS_INFO, &ainfo, &al));
	EXPECT_EQ(TCP_CLOSE_WAIT, ainfo.hpsi_state)
		TH_LOG("recv() returned 0 in state %d", ainfo.hpsi_state);
	for (i = 0; i < 100; i++) {
		struct hps_info info;
		socklen_t il = sizeof(info);

		ASSERT_EQ(0, getsockopt(c, SOL_HPS, HPS_INFO, &info, &il));
		ASSERT_EQ(0, getsockopt(a, SOL_HPS, HPS_INFO, &ainfo, &al));
		if (info.hpsi_state == TCP_FIN_WAIT2 &&
		    ainfo.hpsi_state == TCP_CLOSE_WAIT)
			break;
		usleep(50000);
	}
	EXPECT_LT(i, 100) TH_LOG("not in FIN_WAIT2 and CLOSE_WAIT after 5 s");
	close(c);
	close(a);
	usleep(300000);
	collect(_metadata, self);
	snprintf(dst, sizeof(dst), "dst=%s:%d ", hps_env("HPS_SELF", "?"),
		 self->lport);
	EXPECT_TRUE(FOUND("hps_sock_state", self->port, "oldstate=TCP_CLOSE newstate=TCP_LISTEN"));
	EXPECT_TRUE(FOUND("hps_sock_state", dst, "oldstate=TCP_CLOSE newstate=TCP_SYN_SENT"));
	EXPECT_TRUE(FOUND("hps_sock_state", dst, "oldstate=TCP_SYN_SENT newstate=TCP_ESTABLISHED"));
	EXPECT_TRUE(FOUND("hps_conn_connect", dst, "event=ESTABLISHED status=0 err=0"));
	EXPECT_TRUE(FOUND("hps_conn_accept", self->port, "outcome=accepted event=CONNECT_REQUEST"));
	EXPECT_TRUE(FOUND("hps_conn_accept", self->port, "outcome=established event=ESTABLISHED"));
	EXPECT_TRUE(FOUND("hps_sock_state", self->port, "newstate=TCP_SYN_RECV"));
	/* the close */
	/* (through FIN_WAIT1 or not: the FIN's send may complete at once) */
	EXPECT_TRUE(FOUND("hps_sock_state", dst, "newstate=TCP_FIN_WAIT2"));
	EXPECT_TRUE(FOUND("hps_sock_state", self->port, "oldstate=TCP_ESTABLISHED newstate=TCP_CLOSE_WAIT"));
	EXPECT_TRUE(FOUND("hps_sock_state", dst, "newstate=TCP_CLOSE"));
}

/* A port nobody listens on: the rdma_cm event and status, ECONNREFUSED. */
TEST_F(tr, failed_connect_outcome)
{
	int port = self->lport;
	char dst[64], err[32];
	int c;

	close(self->l);
	self->l = -1;
	c = connect_port(port);
	ASSERT_EQ(-1, c);
	ASSERT_EQ(ECONNREFUSED, errno);
	collect(_metadata, self);
	snprintf(dst, sizeof(dst), "dst=%s:%d ", hps_env("HPS_SELF", "?"),
		 port);
	snprintf(err, sizeof(err), "err=%d", ECONNREFUSED);
	EXPECT_TRUE(FOUND("hps_conn_connect", dst, err));
	EXPECT_TRUE(FOUND("hps_sock_state", dst, "newstate=TCP_CLOSE"));
}

/* backlog 0: one connection waits, the next is refused (backlog_full) */
TEST_F(tr, backlog_full_outcome)
{
	int c1 = connect_port(self->lport), c2;

	ASSERT_GE(c1, 0);
	c2 = connect_port(self->lport);
	EXPECT_EQ(-1, c2);
	EXPECT_EQ(ECONNREFUSED, errno);
	collect(_metadata, self);
	EXPECT_TRUE(FOUND("hps_conn_accept", self->port, "outcome=backlog_full event=CONNECT_REQUEST"));
	close(c1);
}

static char buf[1 << 16];

/*
 * A connection to listener @l on @port whose writer (*c, non-blocking) has
 * filled the window of a reader (*a) that does not read: the writer stalls
 * for credits. Returns the bytes sent, or -1.
 */
static long long stalled_pair(int port, int l, int *c, int *a)
{
	long long sent = 0;
	ssize_t r;

	*c = connect_port(port);
	*a = *c < 0 ? -1 : accept(l, NULL, NULL);
	if (*c < 0 || *a < 0)
		return -1;
	fcntl(*c, F_SETFL, fcntl(*c, F_GETFL) | O_NONBLOCK);
	while ((r = send(*c, buf, sizeof(buf), 0)) > 0)
		sent += r;
	if (errno != EAGAIN)
		return -1;
	usleep(200000);
	return sent;
}

/*
 * Every message of the protocol, posted and received, with its type,
 * flags, length and credits: the active side's first CREDIT, 64 bytes
 * each way (a DATA returns the credit of the one it answers), the FIN
 * and its acknowledgement.
 */
/* the credits= field of an hps_msg_* line, -1 if none */
static int credits_of(const char *line)
{
	const char *p = strstr(line, " credits=");

	return p ? atoi(p + 9) : -1;
}

TEST_F(tr, messages_both_ways)
{
	int c = connect_port(self->lport), a, one = 1, sent;
	char b[64], got[64], dst[64], src[64];

	ASSERT_GE(c, 0);
	a = accept(self->l, NULL, NULL);
	ASSERT_GE(a, 0);
	ASSERT_EQ(0, setsockopt(c, SOL_TCP, TCP_NODELAY, &one, sizeof(one)));
	ASSERT_EQ(0, setsockopt(a, SOL_TCP, TCP_NODELAY, &one, sizeof(one)));
	memset(b, 'q', sizeof(b));
	ASSERT_EQ(sizeof(b), send(c, b, sizeof(b), 0));
	ASSERT_EQ(sizeof(got), recv(a, got, sizeof(got), MSG_WAITALL));
	ASSERT_EQ(0, memcmp(b, got, sizeof(b)));
	memset(b, 'r', sizeof(b));
	ASSERT_EQ(sizeof(b), send(a, b, sizeof(b), 0));
	ASSERT_EQ(sizeof(got), recv(c, got, sizeof(got), MSG_WAITALL));
	ASSERT_EQ(0, memcmp(b, got, sizeof(b)));
	ASSERT_EQ(0, shutdown(c, SHUT_WR));
	ASSERT_EQ(0, recv(a, got, sizeof(got), 0));
	close(a);
	close(c);
	usleep(300000);
	collect(_metadata, self);
	snprintf(dst, sizeof(dst), "dst=%s:%d ", hps_env("HPS_SELF", "?"),
		 self->lport);
	snprintf(src, sizeof(src), "src=%s:%d ", hps_env("HPS_SELF", "?"),
		 self->lport);
	/* the client's messages */
	EXPECT_TRUE(FOUND("hps_msg_send", dst, "type=CREDIT len=0 "));
	EXPECT_TRUE(FOUND("hps_msg_send", dst, "type=DATA len=64 "));
	EXPECT_TRUE(FOUND("hps_msg_send", dst, "type=FIN len=0 "));
	/*
	 * the server's answer returns the credit of the client's DATA (and
	 * one more if the client repeated its first CREDIT, hps_tx_nudge()):
	 * the same count sent and received, one at least
	 */
	ASSERT_TRUE(FOUND("hps_msg_recv", dst, "type=DATA len=64 credits="));
	sent = credits_of(self->line);
	/* the server's */
	EXPECT_TRUE(FOUND("hps_msg_recv", src, "type=CREDIT len=0 "));
	EXPECT_TRUE(FOUND("hps_msg_recv", src, "type=DATA len=64 "));
	ASSERT_TRUE(FOUND("hps_msg_send", src, "type=DATA len=64 credits="));
	EXPECT_EQ(sent, credits_of(self->line));
	EXPECT_LE(1, sent);
	EXPECT_TRUE(FOUND("hps_msg_recv", src, "type=FIN len=0 "));
	EXPECT_TRUE(FOUND("hps_msg_send", src, "|FIN_ACK len=0 "));
	EXPECT_TRUE(FOUND("hps_msg_recv", dst, "|FIN_ACK len=0 "));
}

/* a writer fills the window of a reader that waits, then reads */
TEST_F(tr, credit_stall_and_resume)
{
	long long sent, got = 0;
	int c, a;
	ssize_t r;

	sent = stalled_pair(self->lport, self->l, &c, &a);
	ASSERT_LT(0, sent);
	while (got < sent && (r = recv(a, buf, sizeof(buf), 0)) > 0)
		got += r;
	EXPECT_EQ(sent, got);
	usleep(200000);
	collect(_metadata, self);
	EXPECT_TRUE(FOUND("hps_tx_credit_stall", self->port, "credits="));
	EXPECT_TRUE(FOUND("hps_tx_credit_resume", self->port, "stalled_us="));
	close(c);
	close(a);
}

/*
 * A stall that a reset ends: the writer's ring full, no credits, then the
 * reader closes with the bytes unread. The stall ends with the connection
 * (its resume is traced; it stuck before, shown as stalled for ever).
 */
TEST_F(tr, credit_stall_ends_with_a_reset)
{
	int c, a;

	ASSERT_LT(0, stalled_pair(self->lport, self->l, &c, &a));
	close(a);			/* unread: a reset */
	usleep(500000);
	close(c);
	usleep(200000);
	collect(_metadata, self);
	EXPECT_TRUE(FOUND("hps_tx_credit_stall", self->port, "credits="));
	EXPECT_TRUE(FOUND("hps_tx_credit_resume", self->port, "stalled_us="));
}

/* close() with unread data resets: local on one end, peer_abort there */
TEST_F(tr, abort_reasons)
{
	int c = connect_port(self->lport), a;
	char b[8];

	ASSERT_GE(c, 0);
	a = accept(self->l, NULL, NULL);
	ASSERT_GE(a, 0);
	ASSERT_EQ(5, send(c, "hello", 5, 0));
	usleep(200000);
	close(a);			/* with 5 bytes unread */
	EXPECT_EQ(-1, recv(c, b, sizeof(b), 0));
	EXPECT_EQ(ECONNRESET, errno);
	close(c);
	collect(_metadata, self);
	EXPECT_TRUE(FOUND("hps_conn_abort", self->port, "reason=local", "caller="));
	EXPECT_TRUE(FOUND("hps_conn_abort", self->port, "err=104 reason=peer_abort"));
}

/* TCP_KEEPIDLE 1 on an idle connection: probes; TCP_USER_TIMEOUT */
TEST_F(tr, keepalive_probe_and_user_timeout)
{
	static char buf[1 << 16];
	int c = connect_port(self->lport), a;
	char err[32];
	ssize_t r;

	ASSERT_GE(c, 0);
	a = accept(self->l, NULL, NULL);
	ASSERT_GE(a, 0);
	ASSERT_EQ(0, seti(c, SOL_TCP, TCP_KEEPIDLE, 1));
	usleep(1500000);
	ASSERT_EQ(0, seti(c, SOL_TCP, TCP_USER_TIMEOUT, 500));
	while ((r = send(c, buf, sizeof(buf), MSG_NOSIGNAL)) > 0)
		;
	EXPECT_EQ(ETIMEDOUT, errno);
	close(c);
	close(a);
	collect(_metadata, self);
	snprintf(err, sizeof(err), "err=%d reason=user_timeout", ETIMEDOUT);
	EXPECT_TRUE(FOUND("hps_ka_probe", self->port, "silence_ms="));
	EXPECT_TRUE(FOUND("hps_ka_timeout", self->port, "kind=user_timeout", "limit_ms=500"));
	EXPECT_TRUE(FOUND("hps_conn_abort", self->port, err));
}

struct io {
	int fd;
	char *buf;
	size_t len;
	ssize_t done;
};

static void *recv_all(void *arg)
{
	struct io *r = arg;
	ssize_t n;

	r->done = 0;
	while (r->done < (ssize_t)r->len &&
	       (n = recv(r->fd, r->buf + r->done, r->len - r->done, 0)) > 0)
		r->done += n;
	return NULL;
}

static void *send_all(void *arg)
{
	struct io *w = arg;

	w->done = hps_write_all(w->fd, w->buf, w->len);
	return NULL;
}

/* Read @len bytes, the first ones as @flags says; 0 if all came. */
static int drain(int fd, char *buf, size_t len, int flags)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = recv(fd, buf + got, len - got, flags);
		if (n < 0 && errno == EAGAIN) {
			usleep(10000);
			continue;
		}
		if (n <= 0)
			return -1;
		if (!(flags & MSG_PEEK))
			got += n;
		flags = 0;
	}
	return 0;
}

/* zero copy on both ends: decisions and fallbacks */
TEST_F(tr, zero_copy_decisions_and_fallbacks)
{
	size_t len = 1 << 20;
	char *buf = malloc(len), *sink = malloc(len);
	struct io w = { .buf = buf, .len = len };
	struct io r = { .buf = sink, .len = len };
	struct sockaddr_in sin;
	pthread_t th;
	int c, a;

	ASSERT_EQ(0, seti(self->l, SOL_HPS, HPS_ZCOPY_THRESH, 65536));
	c = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_EQ(0, seti(c, SOL_HPS, HPS_ZCOPY_THRESH, 65536));
	hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"), self->lport);
	ASSERT_EQ(0, connect(c, (struct sockaddr *)&sin, sizeof(sin)));
	a = accept(self->l, NULL, NULL);
	ASSERT_GE(a, 0);
	hps_fill_random(buf, len);

	/* a blocking reader of the whole: zero copy both ways */
	r.fd = a;
	ASSERT_EQ(0, pthread_create(&th, NULL, recv_all, &r));
	usleep(100000);
	ASSERT_EQ((ssize_t)len, send(c, buf, len, 0));
	pthread_join(th, NULL);
	ASSERT_EQ((ssize_t)len, r.done);

	/* a small send goes by copy */
	ASSERT_EQ(1000, send(c, buf, 1000, 0));
	ASSERT_EQ(1000, recv(a, sink, 1000, MSG_WAITALL));

	/* nobody reads for a second: the sender cancels (SENDSM back) */
	w.fd = c;
	ASSERT_EQ(0, pthread_create(&th, NULL, send_all, &w));
	sleep(1);
	EXPECT_EQ(0, drain(a, sink, len, 0));
	pthread_join(th, NULL);
	EXPECT_EQ((ssize_t)len, w.done);

	/* a non-blocking reader: by copy */
	ASSERT_EQ(0, pthread_create(&th, NULL, send_all, &w));
	usleep(200000);
	EXPECT_EQ(0, drain(a, sink, len, MSG_DONTWAIT));
	pthread_join(th, NULL);

	/* a peeking reader: by copy */
	ASSERT_EQ(0, pthread_create(&th, NULL, send_all, &w));
	usleep(200000);
	EXPECT_EQ(0, drain(a, sink, len, MSG_PEEK));
	pthread_join(th, NULL);
	EXPECT_EQ(0, memcmp(buf, sink, len));

	collect(_metadata, self);
	EXPECT_TRUE(FOUND("hps_zc_tx", self->port, "decision=zcopy"));
	EXPECT_TRUE(FOUND("hps_zc_rx", self->port, "decision=zcopy"));
	EXPECT_TRUE(FOUND("hps_zc_tx", self->port, "len=1000 decision=copy_small"));
	EXPECT_TRUE(FOUND("hps_zc_cancel", self->port, "decision=peer_not_reading"));
	EXPECT_TRUE(FOUND("hps_zc_sendsm", self->port, "read=0 len="));
	EXPECT_TRUE(FOUND("hps_zc_rx", self->port, "decision=copy_nonblocking"));
	EXPECT_TRUE(FOUND("hps_zc_rx", self->port, "decision=copy_peek"));
	free(buf);
	free(sink);
	close(c);
	close(a);
}

TEST_HARNESS_MAIN
