// SPDX-License-Identifier: GPL-2.0
/*
 * AF_HPS against a hostile peer: a user-space rdma_cm/verbs peer (librdmacm)
 * sends bad hellos and bad messages. Every case must end in a rejected or
 * reset connection on the AF_HPS side, never in a crash, WARN or hang (the
 * hps-vm runner fails the run on any kernel report). A well-formed message
 * from the same peer is delivered, which shows the peer speaks the
 * protocol. Link with -lrdmacm -libverbs.
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/ioctl.h>
#include <endian.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "kselftest_harness.h"
#include "hps_util.h"

/* The protocol version (Documentation/protocol.rst). */
#define PV 7
/* A kernel end's first window: 3 buffers of class 0, 4 KiB (and the reserve) */
#define FIRST_WINDOW	3
#define MSG_SHRINK	9
#define MSG_PAD		10
#define F_MORE		0x10
#define CR_CLS(c)	((uint16_t)(c) >> 12)	/* the class of credits */
#define CR_N(c)		((c) & 0xfff)		/* how many */

struct hdr {
	uint8_t version, type;
	uint16_t credits;
	uint32_t len;
} __attribute__((packed));

/* @port: the port connected to, the listener's (protocol.rst) */
static void mk_hello(unsigned char *h, uint32_t magic, uint8_t ver,
		     uint32_t credits, uint32_t buf, int port)
{
	memset(h, 0, 16);
	*(uint32_t *)h = htobe32(magic);
	h[4] = ver;
	*(uint16_t *)(h + 6) = htobe16(port);
	*(uint32_t *)(h + 8) = htobe32(credits);
	*(uint32_t *)(h + 12) = htobe32(buf);
}

struct peer {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	char buf[8192];
	char rbuf[5][65536];	/* a window of 4 and the reserve */
	struct ibv_mr *rmr;
	int connected;
	int reposted;	/* receive buffers reposted, credits not returned */
	int kcredits;	/* buffers of the kernel end this peer may fill */
	unsigned char body[8];	/* the payload of the last message received */
};

static int peer_connect(struct peer *p, int port, const void *pd, int pdlen)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param cp = {
		.private_data = pd, .private_data_len = pdlen,
		.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 7, .rnr_retry_count = 7,
	};
	char ps[16];
	int i;

	memset(p, 0, sizeof(*p));
	snprintf(ps, sizeof(ps), "%d", port);
	if (rdma_getaddrinfo(hps_env("HPS_SELF", "127.0.0.1"), ps, &hints, &res))
		return -1;
	if (rdma_create_ep(&p->id, res, NULL, &attr)) {
		rdma_freeaddrinfo(res);
		return -1;
	}
	rdma_freeaddrinfo(res);
	p->mr = rdma_reg_msgs(p->id, p->buf, sizeof(p->buf));
	p->rmr = rdma_reg_msgs(p->id, p->rbuf, sizeof(p->rbuf));
	for (i = 0; i < 5; i++)
		rdma_post_recv(p->id, p->rbuf[i], p->rbuf[i],
			       sizeof(p->rbuf[i]), p->rmr);
	if (getenv("HPS_DEBUG"))
		fprintf(stderr, "# connecting\n");
	i = rdma_connect(p->id, &cp);
	if (getenv("HPS_DEBUG"))
		fprintf(stderr, "# connect: %d %s\n", i, strerror(errno));
	p->connected = !i;
	return i;
}

static void peer_close(struct peer *p)
{
	if (!p->id)
		return;
	/* sync ids wait for the DISCONNECTED event: only when connected */
	if (p->connected)
		rdma_disconnect(p->id);
	if (p->mr)
		rdma_dereg_mr(p->mr);
	if (p->rmr)
		rdma_dereg_mr(p->rmr);
	rdma_destroy_ep(p->id);
	p->id = NULL;
}

/*
 * Poll @cq for one completion for up to @ms, a millisecond apart.
 * Return: 1 with *@wc filled, 0 at the deadline (errno ETIMEDOUT), -1 on
 * error.
 */
static int peer_poll(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	double end = hps_now() + ms / 1000.0;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n < 0 ? -1 : 1;
		usleep(1000);
	} while (hps_now() < end);
	errno = ETIMEDOUT;
	return 0;
}

/*
 * Wait up to 10 s for the completion of the send just posted: a peer the
 * kernel has just aborted may never see its send complete (its QP is not
 * moved to error), and rdma_get_send_comp() would wait for ever in the
 * completion channel.
 */
static int peer_send_done(struct peer *p)
{
	struct ibv_wc wc;

	if (peer_poll(p->id->send_cq, &wc, 10000) != 1)
		return -1;
	return wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

static int peer_send(struct peer *p, uint8_t ver, uint8_t type,
		     uint16_t credits, uint32_t len, size_t bytes)
{
	struct hdr *h = (struct hdr *)p->buf;

	h->version = ver;
	h->type = type;
	h->credits = htobe16(credits);
	h->len = htobe32(len);
	memset(p->buf + sizeof(*h), 'A', sizeof(p->buf) - sizeof(*h));
	if (!(type & 0x40))
		p->kcredits--;	/* RESERVE (0x40) goes into the kernel's reserve */
	if (rdma_post_send(p->id, NULL, p->buf, bytes, p->mr, IBV_SEND_SIGNALED))
		return -1;
	return peer_send_done(p);
}

/*
 * DATA carrying @len bytes of @data, returning the credits of the buffers
 * peer_recv() reposted.
 */
static int peer_send_bytes(struct peer *p, const void *data, uint32_t len)
{
	struct hdr *h = (struct hdr *)p->buf;

	h->version = PV;
	h->type = 1;
	h->credits = htobe16(p->reposted);
	h->len = htobe32(len);
	memcpy(p->buf + sizeof(*h), data, len);
	p->reposted = 0;
	p->kcredits--;
	if (rdma_post_send(p->id, NULL, p->buf, sizeof(*h) + len, p->mr,
			   IBV_SEND_SIGNALED))
		return -1;
	return peer_send_done(p);
}

/* Wait up to @ms for the next message from the kernel; copy its header. */
static int peer_recv(struct peer *p, struct hdr *out, int ms)
{
	struct ibv_wc wc;

	if (peer_poll(p->id->recv_cq, &wc, ms) != 1)
		return -1;
	if (wc.status != IBV_WC_SUCCESS || wc.byte_len < sizeof(*out))
		return -1;
	memcpy(out, (void *)(uintptr_t)wc.wr_id, sizeof(*out));
	memcpy(p->body, (char *)(uintptr_t)wc.wr_id + sizeof(*out),
	       sizeof(p->body));
	/* credits of the kernel's buffers (a reserve is not one) */
	p->kcredits += CR_N(be16toh(out->credits));
	/* Give the buffer back; returned by peer_credit(). */
	if (rdma_post_recv(p->id, (void *)(uintptr_t)wc.wr_id,
			   (void *)(uintptr_t)wc.wr_id, sizeof(p->rbuf[0]),
			   p->rmr))
		return -1;
	p->reposted++;
	return 0;
}

/* Return the credits of the buffers peer_recv() reposted. */
static int peer_credit(struct peer *p)
{
	int n = p->reposted;

	p->reposted = 0;
	return peer_send(p, PV, 2, n, 0, 8);
}

/* Connect with a good hello, send the first (credit) message. */
static int peer_up_rcvbuf(struct __test_metadata *_metadata,
			  struct peer *p, int *l, int *a, int rcvbuf)
{
	unsigned char h[16];
	struct timeval tv = { 3, 0 };
	struct hdr ans;
	int port;

	*l = hps_listener(&port, 2);
	if (*l < 0)
		return -1;
	/* the accepted end's largest window (Documentation/sysctl.rst) */
	if (rcvbuf && setsockopt(*l, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
				 sizeof(rcvbuf)))
		return -1;
	mk_hello(h, 0x48505331, PV, 4, 65536, port);
	if (peer_connect(p, port, h, sizeof(h)))
		return -1;
	p->kcredits = FIRST_WINDOW;
	*a = accept(*l, NULL, NULL);
	if (*a < 0)
		return -1;
	setsockopt(*a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (peer_send(p, PV, 2, 0, 0, 8))
		return -1;
	/* The kernel's passive side answers the first message at once. */
	if (peer_recv(p, &ans, 5000) || ans.version != PV || ans.type != 2 ||
	    ans.len) {
		TH_LOG("no answer to the first message");
		return -1;
	}
	return 0;
}

static int peer_up(struct __test_metadata *_metadata, struct peer *p,
		   int *l, int *a)
{
	return peer_up_rcvbuf(_metadata, p, l, a, 0);
}

struct conn {
	struct peer p;
	int l, a;
};

static void conn_setup(struct __test_metadata *_metadata, struct conn *c)
{
	int fd = socket(AF_HPS, SOCK_STREAM, 0);

	c->l = c->a = -1;
	if (fd < 0)
		ASSERT_TRUE(0) TH_LOG("AF_HPS not available: is af_hps.ko loaded?");
	close(fd);
	memset(&c->p, 0, sizeof(c->p));
}

static void conn_teardown(struct conn *c)
{
	peer_close(&c->p);
	if (c->a >= 0)
		close(c->a);
	if (c->l >= 0)
		close(c->l);
}

/* One message of each kind from the peer (variants below). */
FIXTURE(hostile)
{
	struct conn c;
};

FIXTURE_SETUP(hostile)
{
	conn_setup(_metadata, &self->c);
}

FIXTURE_TEARDOWN(hostile)
{
	conn_teardown(&self->c);
}

/* One connection with the peer: the close handshake, the reserve. */
FIXTURE(peer)
{
	struct conn c;
};

FIXTURE_SETUP(peer)
{
	conn_setup(_metadata, &self->c);
}

FIXTURE_TEARDOWN(peer)
{
	conn_teardown(&self->c);
}

FIXTURE_VARIANT(hostile)
{
	uint8_t ver, type;
	uint16_t credits;
	uint32_t len;
	size_t bytes;
	int ok;		/* well-formed: expect the data */
};

FIXTURE_VARIANT_ADD(hostile, good_data) { PV, 1, 0, 100, 108, 1 };
FIXTURE_VARIANT_ADD(hostile, bad_version) { 9, 1, 0, 100, 108, 0 };
FIXTURE_VARIANT_ADD(hostile, bad_type) { PV, 77, 0, 0, 8, 0 };
FIXTURE_VARIANT_ADD(hostile, len_mismatch) { PV, 1, 0, 5000, 108, 0 };
FIXTURE_VARIANT_ADD(hostile, len_huge) { PV, 1, 0, 0xffffffff, 108, 0 };
FIXTURE_VARIANT_ADD(hostile, empty_data) { PV, 1, 0, 0, 8, 0 };
FIXTURE_VARIANT_ADD(hostile, short_msg) { PV, 1, 0, 0, 3, 0 };
FIXTURE_VARIANT_ADD(hostile, credit_overflow) { PV, 2, 60000, 0, 8, 0 };
FIXTURE_VARIANT_ADD(hostile, credit_with_payload) { PV, 2, 0, 10, 18, 0 };
FIXTURE_VARIANT_ADD(hostile, abort_msg) { PV, 4, 0, 0, 8, 0 };
/* FIN_ACK (0x80) although the kernel sent no FIN */
FIXTURE_VARIANT_ADD(hostile, fin_ack_unsolicited) { PV, 0x82, 0, 0, 8, 0 };
FIXTURE_VARIANT_ADD(hostile, fin_ack_on_data) { PV, 0x81, 0, 100, 108, 0 };
/* RESERVE_BACK (0x20) although the kernel used no reserve */
FIXTURE_VARIANT_ADD(hostile, reserve_back_unsolicited) { PV, 0x22, 0, 0, 8, 0 };
/* RESERVE (0x40) only for a CREDIT returning credits, or an ABORT */
FIXTURE_VARIANT_ADD(hostile, reserve_on_data) { PV, 0x41, 0, 100, 108, 0 };
FIXTURE_VARIANT_ADD(hostile, reserve_credit_returns_none) { PV, 0x42, 0, 0, 8, 0 };
FIXTURE_VARIANT_ADD(hostile, reserve_abort) { PV, 0x44, 0, 0, 8, 0 };
/* the old protocol's messages */
FIXTURE_VARIANT_ADD(hostile, version_4_data) { 4, 1, 0, 100, 108, 0 };
/* credits for buffers of a class above the peer's buf_size's (65536: 4) */
FIXTURE_VARIANT_ADD(hostile, credit_class_too_big) { PV, 2, 1 | 5 << 12, 0, 8, 0 };
/* MORE (0x10) only on DATA */
FIXTURE_VARIANT_ADD(hostile, more_on_credit) { PV, 0x12, 0, 0, 8, 0 };
FIXTURE_VARIANT_ADD(hostile, pad_with_payload) { PV, MSG_PAD, 0, 10, 18, 0 };
FIXTURE_VARIANT_ADD(hostile, shrink_without_payload) { PV, MSG_SHRINK, 0, 0, 8, 0 };
FIXTURE_VARIANT_ADD(hostile, shrink_short) { PV, MSG_SHRINK, 0, 4, 12, 0 };
FIXTURE_VARIANT_ADD(hostile, data_with_more) { PV, 0x11, 0, 100, 108, 1 };

TEST_F(hostile, message)
{
	char b[200];
	ssize_t r;
	int sent;

	ASSERT_EQ(0, peer_up(_metadata, &self->c.p, &self->c.l, &self->c.a));
	sent = peer_send(&self->c.p, variant->ver, variant->type,
			 variant->credits, variant->len, variant->bytes);
	/* a bad message's send may not complete: the kernel aborts */
	if (variant->ok)
		ASSERT_EQ(0, sent);
	r = recv(self->c.a, b, sizeof(b), 0);
	if (variant->ok) {
		EXPECT_EQ(100, r);
		EXPECT_EQ('A', b[0]);
		EXPECT_EQ('A', b[99]);
	} else {
		EXPECT_EQ(-1, r);
		EXPECT_TRUE(errno == EPROTO || errno == ECONNRESET)
			TH_LOG("errno %d", errno);
	}
}

TEST_F(peer, fin_then_data)
{
	char b[200];

	ASSERT_EQ(0, peer_up(_metadata, &self->c.p, &self->c.l, &self->c.a));
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 3, 0, 0, 8));
	EXPECT_EQ(0, recv(self->c.a, b, sizeof(b), 0));
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 1, 0, 10, 18));
	usleep(300000);
	EXPECT_EQ(-1, send(self->c.a, b, 1, MSG_NOSIGNAL));
}

/* The kernel acknowledges a FIN at once, with a CREDIT flagged FIN_ACK. */
TEST_F(peer, fin_is_acknowledged)
{
	struct hdr h;
	char b[8];

	ASSERT_EQ(0, peer_up(_metadata, &self->c.p, &self->c.l, &self->c.a));
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 3, 0, 0, 8));
	EXPECT_EQ(0, recv(self->c.a, b, sizeof(b), 0));
	ASSERT_EQ(0, peer_recv(&self->c.p, &h, 5000)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(PV, h.version);
	EXPECT_EQ(0x82, h.type);
	EXPECT_LE(1, be16toh(h.credits));	/* at least the FIN's buffer */
	EXPECT_EQ(0, be32toh(h.len));
	/*
	 * Half-closed: the kernel end may still send, and then its FIN. It
	 * has one credit left of its first three (the answer and the FIN_ACK
	 * took two): give back what it used, for the two DATA needs.
	 */
	ASSERT_EQ(0, peer_credit(&self->c.p));
	ASSERT_EQ(3, send(self->c.a, "abc", 3, 0));
	ASSERT_EQ(0, peer_recv(&self->c.p, &h, 5000));
	EXPECT_EQ(1, h.type);
	EXPECT_EQ(3, be32toh(h.len));
	ASSERT_EQ(0, shutdown(self->c.a, SHUT_WR));	/* 2 credits left */
	ASSERT_EQ(0, peer_recv(&self->c.p, &h, 5000));
	EXPECT_EQ(3, h.type);
	/* Our FIN_ACK makes the kernel end done: FIN_WAIT2 to TIME_WAIT. */
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 0x82, 0, 0, 8));
}

/* A second FIN_ACK is a protocol violation. */
TEST_F(peer, fin_ack_twice)
{
	struct hdr h;
	char b[8];

	ASSERT_EQ(0, peer_up(_metadata, &self->c.p, &self->c.l, &self->c.a));
	ASSERT_EQ(0, shutdown(self->c.a, SHUT_WR));
	ASSERT_EQ(0, peer_recv(&self->c.p, &h, 5000));
	ASSERT_EQ(3, h.type);
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 0x82, 0, 0, 8));
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 0x82, 0, 0, 8));
	EXPECT_EQ(-1, recv(self->c.a, b, sizeof(b), 0));
	EXPECT_TRUE(errno == EPROTO || errno == ECONNRESET)
		TH_LOG("errno %d", errno);
}

/* The reserve buffer (protocol.rst, "Credits"). */

/*
 * Send CREDITs that return nothing, one at a time, until the kernel sends
 * a message (its credit update): into @h. Return how many were sent, or -1
 * if nothing came after @max of them.
 */
static int credits_until_update(struct peer *p, struct hdr *h, int max)
{
	int n;

	for (n = 1; n <= max; n++) {
		if (peer_send(p, PV, 2, 0, 0, 8))
			return -1;
		if (!peer_recv(p, h, 1000))
			return n;
	}
	return -1;
}

/*
 * A kernel end with no credit left returns credits through the peer's
 * reserve buffer, once, and again only after the peer gave it back.
 */
TEST_F(peer, kernel_uses_and_waits_for_the_reserve)
{
	struct hdr h;
	char b[8];
	int n;

	ASSERT_EQ(0, peer_up(_metadata, &self->c.p, &self->c.l, &self->c.a));
	/* The kernel had 3 credits; the answer took one, a DATA one more. */
	ASSERT_EQ(1, send(self->c.a, "a", 1, 0));
	ASSERT_EQ(0, peer_recv(&self->c.p, &h, 5000));
	ASSERT_EQ(1, h.type);
	/* Its last credit goes to an update once enough is pending. */
	n = credits_until_update(&self->c.p, &h, 16);
	ASSERT_LT(0, n) TH_LOG("no credit update");
	EXPECT_EQ(2, h.type);
	EXPECT_EQ(n, be16toh(h.credits));	/* class 0: 4 KiB buffers */
	/* With none left, the next update goes into the reserve. */
	n = credits_until_update(&self->c.p, &h, 8);
	ASSERT_LT(0, n) TH_LOG("no credit update through the reserve");
	EXPECT_EQ(0x42, h.type);
	EXPECT_EQ(n, be16toh(h.credits));
	/*
	 * Not given back yet: the kernel has nothing to send with, for as
	 * many messages as the peer's window allows.
	 */
	ASSERT_EQ(FIRST_WINDOW, self->c.p.kcredits);
	EXPECT_EQ(-1, credits_until_update(&self->c.p, &h, FIRST_WINDOW))
		TH_LOG("type %#x: the reserve was used twice", h.type);
	/*
	 * Given back (RESERVE_BACK) with a credit, from the kernel's reserve
	 * since the peer has no credit left: with that credit the kernel
	 * returns its credits at once, and gives its own reserve back.
	 */
	ASSERT_EQ(0, self->c.p.kcredits);
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 0x62, 1, 0, 8));
	ASSERT_EQ(0, peer_recv(&self->c.p, &h, 5000));
	EXPECT_EQ(0x22, h.type);
	EXPECT_EQ(FIRST_WINDOW, be16toh(h.credits));
	/*
	 * The connection still carries data both ways once the peer returns
	 * the buffers of its window the kernel filled since (its answer, the
	 * DATA, the first update and the last; one came back already).
	 */
	self->c.p.reposted = 0;
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 2, 3, 0, 8));
	ASSERT_EQ(1, send(self->c.a, "c", 1, 0));
	ASSERT_EQ(0, peer_recv(&self->c.p, &h, 5000));
	EXPECT_EQ(1, h.type);
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 1, 0, 3, 11));
	ASSERT_EQ(3, recv(self->c.a, b, sizeof(b), 0));
	EXPECT_EQ(0, memcmp(b, "AAA", 3));
}

/*
 * The peer may use the kernel's reserve for a CREDIT: the kernel gives it
 * back at once, with a CREDIT flagged RESERVE_BACK that returns nothing
 * (the reserve is not a credit), as often as the peer uses it.
 */
TEST_F(peer, kernel_gives_the_reserve_back)
{
	struct hdr h;
	char b[8];
	int i;

	ASSERT_EQ(0, peer_up(_metadata, &self->c.p, &self->c.l, &self->c.a));
	for (i = 0; i < 3; i++) {
		int k = self->c.p.kcredits;

		/* the kernel's last message's buffer, reposted */
		ASSERT_EQ(1, self->c.p.reposted);
		self->c.p.reposted = 0;
		ASSERT_EQ(0, peer_send(&self->c.p, PV, 0x42, 1, 0, 8));
		ASSERT_EQ(0, peer_recv(&self->c.p, &h, 5000));
		EXPECT_EQ(0x22, h.type);
		EXPECT_EQ(0, be16toh(h.credits));
		EXPECT_EQ(k, self->c.p.kcredits);
	}
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 1, 0, 3, 11));
	ASSERT_EQ(3, recv(self->c.a, b, sizeof(b), 0));
	EXPECT_EQ(0, memcmp(b, "AAA", 3));
}

/*
 * More messages than the kernel end gave credits for: the first beyond
 * them is a protocol violation. The data before it is still read.
 */
TEST_F(peer, overrun_is_a_violation)
{
	long e0 = hps_stat("proto_errors");
	int i, got = 0, bs = 0, up;
	char b[64];
	double end;
	ssize_t r;
	FILE *f;

	/*
	 * A window that cannot grow (SO_RCVBUF: three buffers at most; a
	 * buf_size of one page: no larger class, to which the connection
	 * work would collapse the unread messages and give their buffers
	 * back), else the kernel may grow it (and announce the new buffers)
	 * before the excess message comes, when the first two leave the
	 * peer one credit. buf_size is the connection's from its setup on.
	 */
	f = fopen("/proc/sys/net/hps/buf_size", "r+");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fscanf(f, "%d", &bs));
	rewind(f);
	fprintf(f, "4096\n");
	fflush(f);
	up = peer_up_rcvbuf(_metadata, &self->c.p, &self->c.l, &self->c.a, 1);
	rewind(f);
	fprintf(f, "%d\n", bs);
	ASSERT_EQ(0, fclose(f));
	ASSERT_EQ(0, up);
	/*
	 * nobody reads: the kernel returns no credit (two of these messages
	 * do not fit in one 4 KiB buffer, so none is copied behind another
	 * and its buffer given back)
	 */
	for (i = 0; i < FIRST_WINDOW + 1; i++)
		ASSERT_EQ(0, peer_send(&self->c.p, PV, 1, 0, 2100, 2108));
	/* all four in (over siw a send completes when it leaves): reset */
	end = hps_now() + 5;
	while (hps_stat("proto_errors") == e0 && hps_now() < end)
		usleep(10000);
	while ((r = recv(self->c.a, b, sizeof(b), 0)) > 0)
		got += r;
	EXPECT_EQ(-1, r);
	EXPECT_TRUE(errno == EPROTO || errno == ECONNRESET)
		TH_LOG("errno %d", errno);
	EXPECT_GE(2100 * FIRST_WINDOW, got);
	EXPECT_EQ(e0 + 1, hps_stat("proto_errors"));
}

/* PAD and SHRINK are part of the protocol: the connection goes on. */
TEST_F(peer, pad_and_shrink_are_harmless)
{
	char b[8];

	ASSERT_EQ(0, peer_up(_metadata, &self->c.p, &self->c.l, &self->c.a));
	ASSERT_EQ(0, peer_send(&self->c.p, PV, MSG_PAD, 0, 0, 8));
	/*
	 * SHRINK of class and window 0x41414141: none of our buffers is
	 * above it, and we hold fewer
	 */
	ASSERT_EQ(0, peer_send(&self->c.p, PV, MSG_SHRINK, 0, 8, 16));
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 1, 0, 3, 11));
	ASSERT_EQ(3, recv(self->c.a, b, sizeof(b), 0));
	EXPECT_EQ(0, memcmp(b, "AAA", 3));
}

/* The kernel end's window as HPS_INFO says; 0 or -1. */
static int window_of(int fd, struct hps_info *info)
{
	socklen_t len = sizeof(*info);

	return getsockopt(fd, SOL_HPS, HPS_INFO, info, &len);
}

/*
 * DATA flagged MORE that fills its buffer (4 KiB, class 0) makes the
 * kernel end grow its window a step: the buffers it gives back next are
 * of class 1 (8 KiB), as their credits say. A second later, idle, it
 * shrinks it back and asks for its buffers back (SHRINK: class 0, window
 * 3); once the peer filled them (PAD), it holds what it held at first.
 */
TEST_F(peer, window_grows_on_more_and_shrinks_when_idle)
{
	long grows0 = hps_stat("window_grows");
	long shrinks0 = hps_stat("window_shrinks");
	struct hps_info info0, info;
	static char b[8192];
	double end;
	struct hdr h;
	int n, shrink = 0;

	ASSERT_EQ(0, peer_up(_metadata, &self->c.p, &self->c.l, &self->c.a));
	ASSERT_EQ(0, window_of(self->c.a, &info0));
	EXPECT_EQ(4096, info0.hpsi_rx_buf);
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 0x11, 0, 4096 - 8, 4096));
	ASSERT_EQ(4096 - 8, recv(self->c.a, b, 4096 - 8, MSG_WAITALL));
	EXPECT_EQ('A', b[4096 - 9]);
	EXPECT_EQ(grows0 + 1, hps_stat("window_grows"));
	ASSERT_EQ(0, window_of(self->c.a, &info));
	EXPECT_EQ(8192, info.hpsi_rx_buf);
	/* the buffers that come back are announced as class 1 */
	n = credits_until_update(&self->c.p, &h, 4);
	ASSERT_LT(0, n) TH_LOG("no credit update");
	EXPECT_EQ(1, CR_CLS(be16toh(h.credits)));
	EXPECT_LE(1, CR_N(be16toh(h.credits)));
	ASSERT_EQ(0, peer_credit(&self->c.p));

	/* idle: SHRINK within a second or two */
	end = hps_now() + 3;
	while (!shrink && hps_now() < end) {
		if (peer_recv(&self->c.p, &h, 500))
			continue;
		if ((h.type & 0x0f) == MSG_SHRINK) {
			shrink = 1;
			EXPECT_EQ(8, be32toh(h.len));
			EXPECT_EQ(0, be32toh(*(uint32_t *)self->c.p.body));
			EXPECT_EQ(3, be32toh(*(uint32_t *)(self->c.p.body + 4)));
		}
	}
	ASSERT_TRUE(shrink) TH_LOG("no SHRINK from the idle kernel end");
	EXPECT_EQ(shrinks0 + 1, hps_stat("window_shrinks"));
	ASSERT_EQ(0, window_of(self->c.a, &info));
	EXPECT_EQ(4096, info.hpsi_rx_buf);
	EXPECT_EQ(3, info.hpsi_rx_win);

	/* fill the kernel's buffers with PADs until it holds what it did */
	end = hps_now() + 5;
	while (hps_now() < end) {
		ASSERT_EQ(0, window_of(self->c.a, &info));
		if (info.hpsi_mem == info0.hpsi_mem)
			break;
		if (self->c.p.kcredits > 0)
			ASSERT_EQ(0, peer_send(&self->c.p, PV, MSG_PAD, 0, 0,
					       8));
		if (!peer_recv(&self->c.p, &h, 100) && self->c.p.kcredits > 0)
			ASSERT_EQ(0, peer_credit(&self->c.p));
	}
	EXPECT_EQ(info0.hpsi_mem, info.hpsi_mem);
	/* and the connection carries data */
	ASSERT_LT(0, self->c.p.kcredits);
	ASSERT_EQ(0, peer_send(&self->c.p, PV, 1, 0, 3, 11));
	ASSERT_EQ(3, recv(self->c.a, b, sizeof(b), 0));
	EXPECT_EQ(0, memcmp(b, "AAA", 3));
}

/*
 * Short DATA arriving while earlier bytes wait unread is copied behind
 * them and its buffer given back: a peer keeps sending small messages to
 * a reader that does not read, far beyond the window of three, and the
 * bytes come out whole and in order, to a peek and to a read.
 */
TEST_F(peer, short_data_is_copied_behind_unread_bytes)
{
	static char tx[60 * 100], rx[sizeof(tx) + 1], pk[sizeof(tx) + 1];
	struct hps_info info;
	struct hdr h;
	double end;
	int i, q;

	ASSERT_EQ(0, peer_up(_metadata, &self->c.p, &self->c.l, &self->c.a));
	hps_fill_random(tx, sizeof(tx));
	for (i = 0; i < 60; i++) {
		end = hps_now() + 3;
		while (self->c.p.kcredits < 2 && hps_now() < end)
			peer_recv(&self->c.p, &h, 100);
		ASSERT_LE(2, self->c.p.kcredits)
			TH_LOG("no credit back after %d messages", i);
		ASSERT_EQ(0, peer_send_bytes(&self->c.p, tx + i * 100, 100));
	}
	end = hps_now() + 3;
	do {
		ASSERT_EQ(0, ioctl(self->c.a, FIONREAD, &q));
	} while (q < (int)sizeof(tx) && hps_now() < end && !usleep(10000));
	ASSERT_EQ((int)sizeof(tx), q);
	/*
	 * in two buffers of 4 KiB; the window doubled once, when the second
	 * left the peer with one credit
	 */
	ASSERT_EQ(0, window_of(self->c.a, &info));
	EXPECT_GE(6, info.hpsi_rx_win);
	EXPECT_EQ(4096, info.hpsi_rx_buf);
	ASSERT_EQ((ssize_t)sizeof(tx), recv(self->c.a, pk, sizeof(pk), MSG_PEEK));
	EXPECT_EQ(0, memcmp(tx, pk, sizeof(tx)));
	ASSERT_EQ((ssize_t)sizeof(tx), recv(self->c.a, rx, sizeof(rx), 0));
	EXPECT_EQ(0, memcmp(tx, rx, sizeof(tx)));
}

struct bad_hello {
	const char *name;
	uint32_t magic;
	uint8_t ver;
	uint32_t credits, buf;
	int len;
	int port_off;	/* from the listener's port; < 0: port 0 */
};

TEST(bad_hellos_rejected)
{
	static const struct bad_hello cases[] = {
		{ "no private data", 0, 0, 0, 0, 0, 0 },
		{ "short", 0x48505331, PV, 4, 65536, 8, 0 },
		{ "magic", 0x12345678, PV, 4, 65536, 16, 0 },
		{ "version", 0x48505331, 9, 4, 65536, 16, 0 },
		{ "version 6, the previous protocol", 0x48505331, 6, 4, 65536, 16, 0 },
		{ "credits 0", 0x48505331, PV, 0, 65536, 16, 0 },
		{ "credits 2, below the minimum window", 0x48505331, PV, 2, 65536, 16, 0 },
		{ "credits huge", 0x48505331, PV, 100000, 65536, 16, 0 },
		{ "buf tiny", 0x48505331, PV, 4, 16, 16, 0 },
		{ "buf huge", 0x48505331, PV, 4, 0x7fffffff, 16, 0 },
		/* for another listener's port (a stale iWARP port query) */
		{ "port: another", 0x48505331, PV, 4, 65536, 16, 1 },
		{ "port: none", 0x48505331, PV, 4, 65536, 16, -1 },
	};
	unsigned char h[16];
	struct peer p;
	size_t i;
	int port, l, a;

	l = hps_listener(&port, 4);
	if (l < 0)
		ASSERT_TRUE(0) TH_LOG("AF_HPS not available: is af_hps.ko loaded?");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double t0 = hps_now();

		mk_hello(h, cases[i].magic, cases[i].ver, cases[i].credits,
			 cases[i].buf,
			 cases[i].port_off < 0 ? 0 : port + cases[i].port_off);
		EXPECT_NE(0, peer_connect(&p, port, cases[i].len ? h : NULL,
					  cases[i].len))
			TH_LOG("hello '%s' accepted", cases[i].name);
		peer_close(&p);
		fprintf(stderr, "# %s: %.2f s (%s)\n", cases[i].name,
			hps_now() - t0, strerror(errno));
	}
	fcntl(l, F_SETFL, O_NONBLOCK);
	a = accept(l, NULL, NULL);
	EXPECT_EQ(-1, a);
	close(l);
}

struct conn_arg {
	int port, err;
};

static void *hps_connect_thread(void *arg)
{
	struct conn_arg *c = arg;
	int fd = hps_connect_to(hps_env("HPS_SELF", "127.0.0.1"), c->port);

	c->err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* A peer of protocol version 6, the previous, is refused, and counted. */
TEST(old_version_refused_and_counted)
{
	long e0 = hps_stat("proto_errors");
	unsigned char h[16];
	struct peer p;
	int port, l, a;

	l = hps_listener(&port, 4);
	if (l < 0)
		ASSERT_TRUE(0) TH_LOG("AF_HPS not available: is af_hps.ko loaded?");
	ASSERT_LE(0, e0) TH_LOG("no proto_errors in /proc/net/hps_stat");
	mk_hello(h, 0x48505331, 6, 16, 65536, port);
	EXPECT_NE(0, peer_connect(&p, port, h, sizeof(h)));
	peer_close(&p);
	EXPECT_EQ(e0 + 1, hps_stat("proto_errors"));
	/* The same hello with this version is accepted. */
	mk_hello(h, 0x48505331, PV, 16, 65536, port);
	EXPECT_EQ(0, peer_connect(&p, port, h, sizeof(h)));
	a = accept(l, NULL, NULL);
	EXPECT_LE(0, a);
	peer_close(&p);
	if (a >= 0)
		close(a);
	close(l);
}

TEST(bad_hello_in_accept)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_cm_id *lid, *id;
	struct conn_arg c = { hps_rand_port(), -1 };
	unsigned char h[16];
	struct rdma_conn_param cp = { .private_data = h,
				      .private_data_len = sizeof(h),
				      .responder_resources = 1,
				      .initiator_depth = 1 };
	pthread_t t;
	char ps[16];

	snprintf(ps, sizeof(ps), "%d", c.port);
	ASSERT_EQ(0, rdma_getaddrinfo(hps_env("HPS_SELF", "127.0.0.1"), ps,
				      &hints, &res));
	ASSERT_EQ(0, rdma_create_ep(&lid, res, NULL, &attr));
	rdma_freeaddrinfo(res);
	ASSERT_EQ(0, rdma_listen(lid, 1));
	pthread_create(&t, NULL, hps_connect_thread, &c);
	ASSERT_EQ(0, rdma_get_request(lid, &id));
	mk_hello(h, 0x48505331, PV, 0, 65536, c.port);	/* zero credits */
	rdma_accept(id, &cp);
	pthread_join(t, NULL);
	EXPECT_TRUE(c.err == EPROTO || c.err == ECONNRESET ||
		    c.err == ECONNREFUSED) TH_LOG("connect: %d", c.err);
	rdma_disconnect(id);
	rdma_destroy_ep(id);
	rdma_destroy_ep(lid);
}

TEST_HARNESS_MAIN
