// SPDX-License-Identifier: GPL-2.0
/*
 * Busy polling, set as a TCP user sets it (SO_BUSY_POLL, SO_BUSY_POLL_BUDGET,
 * SO_PREFER_BUSY_POLL, net.core.busy_read and net.core.busy_poll): the
 * options' values and errnos beside TCP's, with and without CAP_NET_ADMIN;
 * an accepted socket inheriting its listener's; round trips checked by
 * content with busy polling off, on one side and on both (with two nodes
 * the other side is node 2, this program run with --peer); several writers
 * and readers on busy-polling sockets (hps_words.h); connections sharing
 * the device's CQ while one reader busy-polls it for a second at a time
 * and the others block (none may wait for it); a signal ending a long busy
 * poll, SO_RCVTIMEO and MSG_DONTWAIT with busy polling; poll() busy
 * polling; epoll_wait() on busy-polling sockets. The busy_poll_* counters
 * of /proc/net/hps_stat show the polling took place, or did not.
 *
 * hps-configs: 1:rxe 1:siw 2:rxe 2:siw
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "hps_words.h"

#define BUSY_READ	"/proc/sys/net/core/busy_read"
#define BUSY_POLL	"/proc/sys/net/core/busy_poll"
#define MSG		64		/* bytes of a round trip's message */

/*
 * Whether busy polling can take completions from the softirq poller over
 * RDMA loopback: not on one CPU, where the busy poller gives the CPU (and
 * the CQ) to the peer thread it waits for, whose completions are then
 * handled in softirq before it runs again (two-node guests have one vCPU
 * each). NAPI busy polling is the same.
 */
static int loopback_can_busy_poll(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN) > 1;
}

/*
 * Whether the device can add completions while a busy poller spins on the
 * only CPU (two-node guests). rxe did up to Linux 6.8 (6.1): its
 * requester, responder and completer were tasklets, which run in softirq
 * at the end of the interrupt that brought the packet. Since 6.9 (6.12)
 * they are work items on rxe's own workqueue (rxe_alloc_wq()), which run only once
 * the poller has given the CPU back, and the softirq poller then handles
 * what they complete before the busy poller runs again. siw completes
 * from its socket's softirq callbacks. A hardware device writes
 * completions whatever the CPU runs.
 */
static int device_completes_under_spin(void)
{
	char line[256];
	FILE *f;
	int wq = 0;

	if (sysconf(_SC_NPROCESSORS_ONLN) > 1 ||
	    strcmp(hps_env("HPS_RDMA", "rxe"), "rxe"))
		return 1;
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return 1;
	while (!wq && fgets(line, sizeof(line), f))
		wq = strstr(line, " rxe_alloc_wq\t") != NULL;
	fclose(f);
	return !wq;
}

static int write_num(const char *path, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld\n", v);
	return hps_write_file(path, buf);
}

static int get_int(int fd, int opt)
{
	int v = -12345;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, opt, &v, &len))
		return -errno;
	return v;
}

/* setsockopt(SOL_SOCKET, @opt, @v): 0 or the errno */
static int set_opt(int fd, int opt, int v)
{
	return setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v)) ? errno : 0;
}

/* Message @i of a round trip: its number and bytes that depend on it. */
static void fill_msg(unsigned char *m, unsigned int i)
{
	int k;

	memcpy(m, &i, sizeof(i));
	for (k = sizeof(i); k < MSG; k++)
		m[k] = (unsigned char)(i * 131 + k * 7);
}

/* Echo @n messages on @fd; 0, or -1 on an error or a short stream. */
static int echo(int fd, int n)
{
	unsigned char m[MSG];
	int i;

	for (i = 0; i < n; i++) {
		if (hps_read_all(fd, m, MSG) != MSG)
			return -1;
		if (hps_write_all(fd, m, MSG) != MSG)
			return -1;
	}
	return 0;
}

/*
 * @n round trips on @fd, each message checked by content; with @use_poll
 * each answer is waited for with poll() first. Writes the slowest round
 * trip (seconds) to *@worst if not NULL. 0, or the message that failed + 1.
 */
static int pingpong(int fd, int n, int use_poll, double *worst)
{
	unsigned char m[MSG], r[MSG];
	int i;

	if (worst)
		*worst = 0;
	for (i = 0; i < n; i++) {
		double t = hps_now();

		fill_msg(m, i);
		if (hps_write_all(fd, m, MSG) != MSG)
			return i + 1;
		if (use_poll) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, 10000) != 1)
				return i + 1;
		}
		if (hps_read_all(fd, r, MSG) != MSG || memcmp(m, r, MSG))
			return i + 1;
		if (worst && hps_now() - t > *worst)
			*worst = hps_now() - t;
	}
	return 0;
}

struct echo_arg {
	int fd, n, ret;
};

static void *echo_thread(void *p)
{
	struct echo_arg *a = p;

	a->ret = echo(a->fd, a->n);
	return NULL;
}

/*
 * --peer PORT USECS N: on node 2 (or here), listen on HPS_SELF:PORT with
 * SO_BUSY_POLL USECS, check that the accepted socket inherited it, echo N
 * messages, and, if USECS, check that this node's busy polling counted.
 * Exit status 0 on success.
 */
static int peer_main(int argc, char **argv)
{
	long usecs, before = hps_stat("busy_poll_completions");
	struct sockaddr_in sin;
	int l, fd, n, one = 1;

	if (argc < 5)
		return 2;
	usecs = atol(argv[3]);
	n = atoi(argv[4]);
	l = socket(AF_HPS, SOCK_STREAM, 0);
	hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"), atoi(argv[2]));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(l, 1) || set_opt(l, SO_BUSY_POLL, usecs))
		return 3;
	fd = accept(l, NULL, NULL);
	if (fd < 0 || get_int(fd, SO_BUSY_POLL) != usecs)
		return 4;
	if (echo(fd, n))
		return 5;
	close(fd);
	close(l);
	if (usecs && device_completes_under_spin() &&
	    hps_stat("busy_poll_completions") <= before)
		return 6;
	return 0;
}

FIXTURE(bp)
{
	long busy_read, busy_poll;
};

FIXTURE_SETUP(bp)
{
	self->busy_read = hps_read_long(BUSY_READ);
	self->busy_poll = hps_read_long(BUSY_POLL);
	ASSERT_LE(0, self->busy_read);
	ASSERT_LE(0, self->busy_poll);
}

FIXTURE_TEARDOWN(bp)
{
	write_num(BUSY_READ, self->busy_read);
	write_num(BUSY_POLL, self->busy_poll);
}

/*
 * Whether raising SO_BUSY_POLL needs CAP_NET_ADMIN, as a TCP socket of the
 * caller finds it: it did up to Linux 6.8 (6.1), and anyone may since 6.9
 * (6.12), where a negative value is EINVAL for everyone. AF_HPS leaves the
 * option to the socket core, so it answers as TCP does on each kernel.
 */
static int busy_poll_capped(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), capped;

	if (fd < 0 || set_opt(fd, SO_BUSY_POLL, 0))
		return -1;
	capped = set_opt(fd, SO_BUSY_POLL, 1) == EPERM;
	close(fd);
	return capped;
}

/* The options' values and errnos on an AF_HPS socket and a TCP one. */
static void sockopts(struct __test_metadata *_metadata, int fam, int priv)
{
	int fd = socket(fam, SOCK_STREAM, 0);
	int capped = priv ? 0 : busy_poll_capped();

	ASSERT_LE(0, fd);
	ASSERT_LE(0, capped);
	/* a new socket starts at net.core.busy_read; its budget at 0 */
	EXPECT_EQ(23, get_int(fd, SO_BUSY_POLL));
	EXPECT_EQ(0, get_int(fd, SO_PREFER_BUSY_POLL));
	/* -1 is above any value (sk_ll_usec is unsigned): EPERM if capped */
	EXPECT_EQ(capped ? EPERM : EINVAL, set_opt(fd, SO_BUSY_POLL, -1));
	EXPECT_EQ(EINVAL, set_opt(fd, SO_BUSY_POLL_BUDGET, -1));
	EXPECT_EQ(0, set_opt(fd, SO_BUSY_POLL, 10));	/* lower: anyone */
	EXPECT_EQ(10, get_int(fd, SO_BUSY_POLL));
	EXPECT_EQ(0, set_opt(fd, SO_BUSY_POLL, 0));
	EXPECT_EQ(0, get_int(fd, SO_BUSY_POLL));
	if (priv) {
		EXPECT_EQ(0, set_opt(fd, SO_BUSY_POLL, 1000));
		EXPECT_EQ(1000, get_int(fd, SO_BUSY_POLL));
		EXPECT_EQ(EINVAL, set_opt(fd, SO_BUSY_POLL_BUDGET, 65536));
		EXPECT_EQ(0, set_opt(fd, SO_BUSY_POLL_BUDGET, 64));
		EXPECT_EQ(0, set_opt(fd, SO_PREFER_BUSY_POLL, 1));
		EXPECT_EQ(1, get_int(fd, SO_PREFER_BUSY_POLL));
	} else {
		/* above the socket's value needs CAP_NET_ADMIN, if capped */
		EXPECT_EQ(capped ? EPERM : 0, set_opt(fd, SO_BUSY_POLL, 1));
		EXPECT_EQ(capped ? 0 : 1, get_int(fd, SO_BUSY_POLL));
		EXPECT_EQ(EPERM, set_opt(fd, SO_BUSY_POLL_BUDGET, 16));
		EXPECT_EQ(EPERM, set_opt(fd, SO_PREFER_BUSY_POLL, 1));
		EXPECT_EQ(0, set_opt(fd, SO_PREFER_BUSY_POLL, 0));
	}
	close(fd);
}

TEST_F(bp, sockopts_like_tcp)
{
	int l, c, a, port, status;
	pid_t pid;

	ASSERT_EQ(0, write_num(BUSY_READ, 23));
	sockopts(_metadata, AF_HPS, 1);
	sockopts(_metadata, AF_INET, 1);

	/* without CAP_NET_ADMIN (nobody's uid drops every capability) */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(2);
		sockopts(_metadata, AF_HPS, 0);
		sockopts(_metadata, AF_INET, 0);
		_exit(_metadata->passed ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	/* an accepted socket has its listener's settings, as TCP's */
	ASSERT_EQ(0, write_num(BUSY_READ, 0));
	l = hps_listener(&port, 4);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, set_opt(l, SO_BUSY_POLL, 77));
	ASSERT_EQ(0, set_opt(l, SO_BUSY_POLL_BUDGET, 32));
	c = hps_connect_to(hps_env("HPS_SELF", "127.0.0.1"), port);
	ASSERT_LE(0, c);
	a = accept(l, NULL, NULL);
	ASSERT_LE(0, a);
	EXPECT_EQ(77, get_int(a, SO_BUSY_POLL));
	EXPECT_EQ(0, get_int(c, SO_BUSY_POLL));
	close(a);
	close(c);
	close(l);
}

FIXTURE(rt)
{
	long busy_read;
};

FIXTURE_VARIANT(rt)
{
	int client_us, server_us;	/* SO_BUSY_POLL of each side */
	int use_poll;			/* poll() before each read */
};

FIXTURE_VARIANT_ADD(rt, off) {
	.client_us = 0, .server_us = 0,
};
/* 500 µs: longer than a round trip over rxe and siw in these guests */
FIXTURE_VARIANT_ADD(rt, client) {
	.client_us = 500, .server_us = 0,
};
FIXTURE_VARIANT_ADD(rt, both) {
	.client_us = 500, .server_us = 500,
};
FIXTURE_VARIANT_ADD(rt, poll_client) {
	.client_us = 500, .server_us = 0, .use_poll = 1,
};

FIXTURE_SETUP(rt)
{
	self->busy_read = hps_read_long(BUSY_READ);
}

FIXTURE_TEARDOWN(rt)
{
	write_num(BUSY_POLL, 0);
}

/*
 * 2,000 round trips of 64 bytes, by content, with busy polling as the
 * variant says; on two nodes against node 2. The counters move if and
 * only if this side busy-polls.
 */
TEST_F(rt, round_trips)
{
	long cq0 = hps_stat("busy_poll_completions");
	long hit0 = hps_stat("busy_poll_hits");
	long miss0 = hps_stat("busy_poll_misses");
	long cqes, reads;
	int n = getenv("HPS_DEBUG_KERNEL") ? 300 : 2000;
	struct echo_arg ea = { .n = n };
	pthread_t t;
	char job[64], cmd[PATH_MAX + 128], exe[PATH_MAX];
	double worst;
	int fd, l = -1, port;

	ASSERT_EQ(0, self->busy_read);	/* the default: off */
	ASSERT_LE(0, cq0);
	if (variant->use_poll)
		ASSERT_EQ(0, write_num(BUSY_POLL, 500));
	if (hps_nodes() == 2) {
		port = hps_rand_port();
		ASSERT_EQ(0, hps_self_exe(exe));
		snprintf(cmd, sizeof(cmd), "%s --peer %d %d %d", exe, port,
			 variant->server_us, n);
		ASSERT_EQ(0, hps_peer_bg(job, sizeof(job), cmd));
		fd = hps_connect_peer(port);
		ASSERT_LE(0, fd);
	} else {
		l = hps_listener(&port, 4);
		ASSERT_LE(0, l);
		ASSERT_EQ(0, set_opt(l, SO_BUSY_POLL, variant->server_us));
		fd = hps_connect_to(hps_env("HPS_SELF", "127.0.0.1"), port);
		ASSERT_LE(0, fd);
		ea.fd = accept(l, NULL, NULL);
		ASSERT_LE(0, ea.fd);
		ASSERT_EQ(variant->server_us, get_int(ea.fd, SO_BUSY_POLL));
		ASSERT_EQ(0, pthread_create(&t, NULL, echo_thread, &ea));
	}
	ASSERT_EQ(0, set_opt(fd, SO_BUSY_POLL, variant->client_us));

	EXPECT_EQ(0, pingpong(fd, n, variant->use_poll, &worst));
	close(fd);
	if (hps_nodes() == 2) {
		EXPECT_EQ(0, hps_peer_wait(job));
	} else {
		pthread_join(t, NULL);
		EXPECT_EQ(0, ea.ret);
		close(ea.fd);
		close(l);
	}
	cqes = hps_stat("busy_poll_completions") - cq0;
	reads = hps_stat("busy_poll_hits") - hit0 +
		hps_stat("busy_poll_misses") - miss0;
	TH_LOG("%d round trips: %ld completions handled by busy polling, %ld busy-polling reads (%ld found data), slowest %.1f ms",
	       n, cqes, reads, hps_stat("busy_poll_hits") - hit0,
	       worst * 1e3);
	if (!variant->client_us && !variant->server_us) {
		EXPECT_EQ(0, cqes);
		EXPECT_EQ(0, reads);
	} else {
		/*
		 * poll() makes one pass per call: on one CPU (two-node
		 * guests) the device's softirq mostly gets there first
		 * (5 to 26 completions in 2,000 round trips), so it is
		 * only required with two. Its passes are not reads.
		 */
		if (!variant->use_poll) {
			if (device_completes_under_spin()) {
				EXPECT_LT(0, cqes);
			} else {
				TH_LOG("one CPU, rxe completes from a work item: no completion can come while this side spins");
			}
			EXPECT_LT(0, reads);
		} else if (loopback_can_busy_poll()) {
			EXPECT_LT(0, cqes);
		}
	}
}

/*
 * Two writers and two readers on each end of a connection whose sockets
 * both busy-poll; and four of each, with writes up to 256 KiB (zero copy
 * too). Every byte accounted for (hps_words.h).
 */
static void share_busy(struct __test_metadata *_metadata, int nw, int nr,
		       size_t wmax, size_t rmax, size_t mib)
{
	struct share s = {
		.nw = nw, .nr = nr, .wmin = 1, .wmax = wmax, .rmin = 1,
		.rmax = rmax, .stall = 50,
		.lock = PTHREAD_MUTEX_INITIALIZER,
	};
	long cq0 = hps_stat("busy_poll_completions");
	int cfd, afd;

	ASSERT_EQ(0, hps_pair(&cfd, &afd));
	ASSERT_EQ(0, set_opt(cfd, SO_BUSY_POLL, 50));
	ASSERT_EQ(0, set_opt(afd, SO_BUSY_POLL, 50));
	s.wfd = cfd;
	s.rfd = afd;
	s.words = share_words(mib);
	share_init(&s, nw);
	share_run(&s);
	EXPECT_EQ(0, atomic_load(&s.errors));
	if (atomic_load(&s.errors))
		TH_LOG("%s", s.first);
	EXPECT_TRUE(share_complete(&s, nw));
	/*
	 * Not checked: with eight threads on two CPUs the readers mostly
	 * find data, or the softirq poller holds the CQ whenever they look
	 * (0 completions in one make check). The round-trip and shared-CQ
	 * cases check that busy polling handles completions.
	 */
	TH_LOG("busy polling handled %ld completions",
	       hps_stat("busy_poll_completions") - cq0);
	share_free(&s);
	close(cfd);
	close(afd);
}

TEST(share_w2_r2_small)
{
	share_busy(_metadata, 2, 2, KB(4), KB(4), 4);
}

TEST(share_w4_r4_mixed)
{
	share_busy(_metadata, 4, 4, KB(256), KB(128), 4);
}

struct spin_arg {
	int fd;
	_Atomic int stop;
	_Atomic long reads;
};

/* Read a connection that says nothing, busy-polling a second each read. */
static void *spinner(void *p)
{
	struct spin_arg *a = p;
	char c;

	while (!atomic_load(&a->stop)) {
		if (recv(a->fd, &c, 1, 0) >= 0)
			break;
		atomic_fetch_add(&a->reads, 1);
	}
	return NULL;
}

struct rt_arg {
	int fd, n, ret;
	double worst;
};

static void *rt_thread(void *p)
{
	struct rt_arg *a = p;

	a->ret = pingpong(a->fd, a->n, 0, &a->worst);
	return NULL;
}

#define OTHERS	3

/*
 * One reader busy-polls the device's shared CQ for a second at a time
 * (SO_BUSY_POLL 1,000,000 µs; each read times out after 1.1 s) on a
 * connection that stays silent, while three other connections on the
 * same CQ, blocking, each make 300 round trips. The busy poller handles
 * their completions as it finds them: none may wait for its second to
 * end (their slowest round trip stays under half of it).
 */
TEST(shared_cq_others_served)
{
	struct timeval tv = { .tv_sec = 1, .tv_usec = 100000 };
	struct spin_arg sa = { 0 };
	struct rt_arg ra[OTHERS];
	struct echo_arg ea[OTHERS];
	pthread_t st, rt[OTHERS], et[OTHERS];
	long cq0 = hps_stat("busy_poll_completions");
	int sc, i, n = getenv("HPS_DEBUG_KERNEL") ? 50 : 300;
	double worst = 0;

	ASSERT_EQ(0, hps_pair(&sc, &sa.fd));
	ASSERT_EQ(0, set_opt(sa.fd, SO_BUSY_POLL, 1000000));
	ASSERT_EQ(0, setsockopt(sa.fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				sizeof(tv)));
	for (i = 0; i < OTHERS; i++) {
		ASSERT_EQ(0, hps_pair(&ra[i].fd, &ea[i].fd));
		ra[i].n = ea[i].n = n;
	}
	ASSERT_EQ(0, pthread_create(&st, NULL, spinner, &sa));
	usleep(100000);		/* the spinner is polling */
	for (i = 0; i < OTHERS; i++) {
		ASSERT_EQ(0, pthread_create(&et[i], NULL, echo_thread, &ea[i]));
		ASSERT_EQ(0, pthread_create(&rt[i], NULL, rt_thread, &ra[i]));
	}
	for (i = 0; i < OTHERS; i++) {
		pthread_join(rt[i], NULL);
		pthread_join(et[i], NULL);
		EXPECT_EQ(0, ra[i].ret);
		EXPECT_EQ(0, ea[i].ret);
		if (ra[i].worst > worst)
			worst = ra[i].worst;
	}
	atomic_store(&sa.stop, 1);
	pthread_join(st, NULL);
	TH_LOG("%d x %d round trips beside a busy poller (%ld reads): slowest %.1f ms; busy polling handled %ld completions",
	       OTHERS, n, atomic_load(&sa.reads), worst * 1e3,
	       hps_stat("busy_poll_completions") - cq0);
	EXPECT_LT(worst, 0.5);
	if (loopback_can_busy_poll())
		EXPECT_LT(cq0, hps_stat("busy_poll_completions"));
	for (i = 0; i < OTHERS; i++) {
		close(ra[i].fd);
		close(ea[i].fd);
	}
	close(sc);
	close(sa.fd);
}

static void on_usr1(int sig)
{
}

struct sig_arg {
	int fd, ret, err;
	double took;
};

static void *sig_reader(void *p)
{
	struct sig_arg *a = p;
	double t = hps_now();
	char c;

	a->ret = recv(a->fd, &c, 1, 0);
	a->err = errno;
	a->took = hps_now() - t;
	return NULL;
}

/*
 * A read busy-polling for 5 s ends at a signal (EINTR, as TCP's), not
 * 5 s later; with SO_RCVTIMEO it ends in EAGAIN at the timeout; with
 * MSG_DONTWAIT it polls once and returns EAGAIN at once. The connection
 * still carries data afterwards.
 */
TEST(signal_timeout_dontwait)
{
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	struct timeval tv = { .tv_sec = 0, .tv_usec = 300000 };
	struct sig_arg a = { 0 };
	pthread_t t;
	double t0;
	int c, ret;
	char b;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, hps_pair(&c, &a.fd));
	ASSERT_EQ(0, set_opt(a.fd, SO_BUSY_POLL, 5000000));
	ASSERT_EQ(0, pthread_create(&t, NULL, sig_reader, &a));
	usleep(300000);
	pthread_kill(t, SIGUSR1);
	pthread_join(t, NULL);
	EXPECT_EQ(-1, a.ret);
	EXPECT_EQ(EINTR, a.err);
	TH_LOG("signal: recv returned after %.3f s", a.took);
	EXPECT_LT(a.took, 2.0);

	t0 = hps_now();
	ret = recv(a.fd, &b, 1, MSG_DONTWAIT);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_LT(hps_now() - t0, 1.0);

	ASSERT_EQ(0, set_opt(a.fd, SO_BUSY_POLL, 100000));
	ASSERT_EQ(0, setsockopt(a.fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				sizeof(tv)));
	t0 = hps_now();
	ret = recv(a.fd, &b, 1, 0);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_LE(0.29, hps_now() - t0);
	EXPECT_LT(hps_now() - t0, 2.0);

	ASSERT_EQ(1, write(c, "x", 1));
	EXPECT_EQ(1, recv(a.fd, &b, 1, 0));
	EXPECT_EQ('x', b);
	close(c);
	close(a.fd);
}

/*
 * epoll_wait() on busy-polling sockets: 1,000 round trips driven by
 * epoll on both ends, by content (epoll does not busy-poll AF_HPS
 * sockets: they have no NAPI ID; af_hps.rst).
 */
TEST(epoll_round_trips)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	unsigned char m[MSG], r[MSG];
	int c, a, ep, i, n = 1000;

	ASSERT_EQ(0, hps_pair(&c, &a));
	ASSERT_EQ(0, set_opt(c, SO_BUSY_POLL, 50));
	ASSERT_EQ(0, set_opt(a, SO_BUSY_POLL, 50));
	ep = epoll_create1(0);
	ASSERT_LE(0, ep);
	ev.data.fd = c;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	ev.data.fd = a;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev));
	for (i = 0; i < n; i++) {
		fill_msg(m, i);
		ASSERT_EQ(MSG, hps_write_all(c, m, MSG));
		ASSERT_EQ(1, epoll_wait(ep, &out, 1, 10000));
		ASSERT_EQ(a, out.data.fd);
		ASSERT_EQ(MSG, hps_read_all(a, r, MSG));
		ASSERT_EQ(0, memcmp(m, r, MSG));
		ASSERT_EQ(MSG, hps_write_all(a, r, MSG));
		ASSERT_EQ(1, epoll_wait(ep, &out, 1, 10000));
		ASSERT_EQ(c, out.data.fd);
		ASSERT_EQ(MSG, hps_read_all(c, r, MSG));
		ASSERT_EQ(0, memcmp(m, r, MSG));
	}
	close(ep);
	close(c);
	close(a);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--peer"))
		return peer_main(argc, argv);
	return test_harness_run(argc, argv);
}
