// SPDX-License-Identifier: GPL-2.0
/*
 * A crowd across two machines at the defaults: 2,000 connections from
 * this node to one server on the other, all open at once, each carrying
 * its own message both ways; then a few of them busy while many of the
 * others, one after another, ask and wait for their answers; then all
 * closed, in order, and every resource back. The server is this program
 * on node 2, started with --peer (peer_main()): one thread, one epoll
 * set, every connection non-blocking, as a server holding many mostly
 * idle clients is written. With one node (make check-full) the server is
 * on this node, and the crowd is 10,000 connections.
 *
 * hps-configs: 2:rxe 2:siw
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "hps_util.h"

enum { MSG = 8, BUSY = 4, QUIET_STEP = 4 };

/* Connections: 2,000 across two nodes; 10,000 on one in make check-full. */
static int crowd_size(void)
{
	if (hps_nodes() == 1 && getenv("HPS_FULL"))
		return 10000;
	return 2000;
}

/* Wait until @fd can take data, up to 10 s. Return: 0 or -1. */
static int wait_out(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	return poll(&p, 1, 10000) == 1 && !(p.revents & POLLERR) ? 0 : -1;
}

/*
 * node 2: hps_crowd --peer PORT N
 * Accept N connections and answer every MSG-byte message "toNNNNNN" with
 * "frNNNNNN" on the connection it came on; a connection the client shuts
 * down is closed. Prints one line and exits 0 once all N are closed, 1 at
 * the first wrong message or error, or after a minute with nothing to do.
 */
static int peer_main(int argc, char **argv)
{
	struct conn { int fd, have; char buf[MSG]; } *pc;
	struct epoll_event ev, evs[64];
	int port, n, l, ep, one = 1, accepted = 0, closed = 0, k, i;
	unsigned long msgs = 0;
	struct sockaddr_in sin;
	struct rlimit rl;

	if (argc != 4)
		return 2;
	port = atoi(argv[2]);
	n = atoi(argv[3]);
	rl.rlim_cur = rl.rlim_max = n + 64;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		perror("peer: setrlimit");
		return 1;
	}
	pc = calloc(n, sizeof(*pc));
	l = socket(AF_HPS, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ep = epoll_create1(0);
	if (!pc || l < 0 || ep < 0) {
		perror("peer: setup");
		return 1;
	}
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"), port);
	if (bind(l, (struct sockaddr *)&sin, sizeof(sin)) || listen(l, 512)) {
		perror("peer: listen");
		return 1;
	}
	ev.events = EPOLLIN;
	ev.data.u32 = UINT32_MAX;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev)) {
		perror("peer: epoll_ctl");
		return 1;
	}
	while (closed < n) {
		k = epoll_wait(ep, evs, 64, 60000);
		if (k <= 0) {
			fprintf(stderr, "peer: %s after %d accepted, %d closed, %lu messages\n",
				k ? strerror(errno) : "a minute idle", accepted,
				closed, msgs);
			return 1;
		}
		for (i = 0; i < k; i++) {
			uint32_t c = evs[i].data.u32;
			struct conn *p;
			ssize_t r;

			if (c == UINT32_MAX) {
				int fd;

				while ((fd = accept4(l, NULL, NULL,
						     SOCK_NONBLOCK)) >= 0) {
					if (accepted == n) {
						fprintf(stderr, "peer: connection %d of %d\n",
							accepted + 1, n);
						return 1;
					}
					pc[accepted].fd = fd;
					ev.events = EPOLLIN;
					ev.data.u32 = accepted++;
					if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
						perror("peer: epoll_ctl");
						return 1;
					}
				}
				if (errno != EAGAIN) {
					perror("peer: accept");
					return 1;
				}
				continue;
			}
			p = &pc[c];
			r = recv(p->fd, p->buf + p->have, MSG - p->have, 0);
			if (r < 0 && errno == EAGAIN)
				continue;
			if (r < 0) {
				fprintf(stderr, "peer: connection %u: %s\n", c,
					strerror(errno));
				return 1;
			}
			if (!r) {
				epoll_ctl(ep, EPOLL_CTL_DEL, p->fd, NULL);
				close(p->fd);
				p->fd = -1;
				closed++;
				continue;
			}
			p->have += r;
			if (p->have < MSG)
				continue;
			p->have = 0;
			if (memcmp(p->buf, "to", 2)) {
				fprintf(stderr, "peer: connection %u: message %.8s\n",
					c, p->buf);
				return 1;
			}
			memcpy(p->buf, "fr", 2);
			/* a few bytes into a window of three buffers: room */
			if (send(p->fd, p->buf, MSG, 0) != MSG &&
			    (wait_out(p->fd) || send(p->fd, p->buf, MSG, 0) != MSG)) {
				fprintf(stderr, "peer: connection %u: send: %s\n",
					c, strerror(errno));
				return 1;
			}
			msgs++;
		}
	}
	printf("peer: %d connections, %lu messages answered\n", n, msgs);
	return 0;
}

static int peer_start(char *job, size_t joblen, int port, int n)
{
	char cmd[PATH_MAX + 128], exe[PATH_MAX];

	if (hps_self_exe(exe))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s --peer %d %d", exe, port, n);
	return hps_peer_bg(job, joblen, cmd);
}

/* One round trip of connection @i's message. Return: 0, or -1 (errno). */
static int ask(int fd, int i)
{
	char m[16], want[16], got[MSG];

	snprintf(m, sizeof(m), "to%06d", i);
	snprintf(want, sizeof(want), "fr%06d", i);
	if (send(fd, m, MSG, 0) != MSG)
		return -1;
	if (recv(fd, got, MSG, MSG_WAITALL) != MSG)
		return -1;
	if (memcmp(got, want, MSG)) {
		errno = EBADMSG;
		return -1;
	}
	return 0;
}

struct busy {
	int fd, i;
	atomic_int *stop;
	long rounds;
	int err;
};

static void *busy_run(void *arg)
{
	struct busy *b = arg;

	while (!atomic_load(b->stop)) {
		if (ask(b->fd, b->i)) {
			b->err = errno;
			break;
		}
		b->rounds++;
	}
	return NULL;
}

FIXTURE(crowd)
{
	char job[64];
	int n, *c;
	long mem0;
};

FIXTURE_SETUP(crowd)
{
	struct rlimit rl = { 3 * 10000 + 64, 3 * 10000 + 64 };
	int i;

	self->job[0] = 0;
	self->n = crowd_size();
	self->c = malloc(self->n * sizeof(*self->c));
	ASSERT_NE(NULL, self->c);
	for (i = 0; i < self->n; i++)
		self->c[i] = -1;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	self->mem0 = hps_stat("mem_pages");
	ASSERT_LE(0, self->mem0) TH_LOG("is af_hps.ko loaded?");
}

FIXTURE_TEARDOWN(crowd)
{
	int i;

	for (i = 0; i < self->n; i++)
		if (self->c[i] >= 0)
			close(self->c[i]);
	free(self->c);
	if (self->job[0])
		hps_peer_kill(self->job);
}

/*
 * All open at once, each with its message both ways (by content); then
 * BUSY of them in round trips as fast as they go, each in its own
 * thread, while this thread has one in QUIET_STEP of the others, spread
 * over the whole crowd, ask in turn: an
 * epoll server holding thousands of connections answers the quiet ones
 * promptly however busy the few are, and the busy ones alike. Then each
 * is shut down and sees the server's close, the server exits having
 * closed all of them, and this node's buffer memory is back.
 */
TEST_F_TIMEOUT(crowd, one_epoll_server, 1500)
{
	const char *peer = hps_env("HPS_PEER", "127.0.0.1");
	struct busy b[BUSY];
	pthread_t th[BUSY];
	atomic_int stop = 0;
	int port = hps_rand_port(), n = self->n, nq, i;
	double t0 = hps_now(), t, worst = 0, sum = 0;
	long bmin = -1, bmax = 0, mem;

	ASSERT_EQ(0, peer_start(self->job, sizeof(self->job), port, n));
	for (i = 0; i < n; i++) {
		self->c[i] = i ? hps_connect_to(peer, port) :
				 hps_connect_peer(port);
		ASSERT_LE(0, self->c[i])
			TH_LOG("connection %d: %s", i, strerror(errno));
		if (i && !(i % 500))
			TH_LOG("%d connections up in %.1f s", i, hps_now() - t0);
	}
	TH_LOG("%d connections up in %.1f s", n, hps_now() - t0);
	/* every question out, then every answer in */
	for (i = 0; i < n; i++) {
		char m[16];

		snprintf(m, sizeof(m), "to%06d", i);
		ASSERT_EQ(MSG, send(self->c[i], m, MSG, 0))
			TH_LOG("connection %d: %s", i, strerror(errno));
	}
	for (i = 0; i < n; i++) {
		char want[16], got[MSG];

		snprintf(want, sizeof(want), "fr%06d", i);
		ASSERT_EQ(MSG, recv(self->c[i], got, MSG, MSG_WAITALL))
			TH_LOG("connection %d: %s", i, strerror(errno));
		ASSERT_EQ(0, memcmp(got, want, MSG)) TH_LOG("connection %d", i);
	}
	TH_LOG("every connection's message both ways, %.1f s", hps_now() - t0);

	for (i = 0; i < BUSY; i++) {
		b[i] = (struct busy){ .fd = self->c[i], .i = i, .stop = &stop };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, busy_run, &b[i]));
	}
	for (i = BUSY; i < n; i += QUIET_STEP) {
		t = hps_now();
		ASSERT_EQ(0, ask(self->c[i], i))
			TH_LOG("quiet connection %d: %s", i, strerror(errno));
		t = hps_now() - t;
		sum += t;
		if (t > worst)
			worst = t;
	}
	atomic_store(&stop, 1);
	for (i = 0; i < BUSY; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, b[i].err) TH_LOG("busy connection %d: %s", i,
					      strerror(b[i].err));
		if (bmin < 0 || b[i].rounds < bmin)
			bmin = b[i].rounds;
		if (b[i].rounds > bmax)
			bmax = b[i].rounds;
	}
	nq = (n - BUSY + QUIET_STEP - 1) / QUIET_STEP;
	TH_LOG("quiet ones: %d round trips, mean %.2f ms, worst %.1f ms; busy ones: %ld to %ld round trips meanwhile",
	       nq, sum / nq * 1e3, worst * 1e3, bmin, bmax);
	/*
	 * Served, and fairly: no quiet connection waited seconds behind the
	 * busy ones, each busy one got going, and none of them got less than
	 * a fifth of what the luckiest got.
	 */
	EXPECT_GT(2.0, worst);
	EXPECT_LE(10, bmin);
	EXPECT_LE(bmax, 5 * bmin);

	/* Orderly close: each sees the server's close after its own. */
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, shutdown(self->c[i], SHUT_WR))
			TH_LOG("connection %d: %s", i, strerror(errno));
	for (i = 0; i < n; i++) {
		char x;

		ASSERT_EQ(0, recv(self->c[i], &x, 1, 0))
			TH_LOG("connection %d: %s", i, strerror(errno));
		close(self->c[i]);
		self->c[i] = -1;
	}
	ASSERT_EQ(0, hps_peer_wait(self->job));
	self->job[0] = 0;
	/* This node's buffers all back (earlier tests' may go too: at most). */
	t = hps_now();
	while ((mem = hps_stat("mem_pages")) > self->mem0 && hps_now() < t + 20)
		usleep(100000);
	EXPECT_GE(self->mem0, mem);
	TH_LOG("all closed, %ld pages of buffers left of %ld before, in %.1f s",
	       mem, self->mem0, hps_now() - t0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--peer"))
		return peer_main(argc, argv);
	return test_harness_run(argc, argv);
}
