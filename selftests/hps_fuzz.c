// SPDX-License-Identifier: GPL-2.0
/*
 * A targeted fuzzer of the AF_HPS system call surface: random socket
 * options (levels, names, values, lengths, bad pointers), random address
 * structures (families, lengths, bad pointers) to bind/connect/sendto,
 * random msghdr/iov shapes to sendmsg/recvmsg, random ioctls, shutdowns
 * and backlogs, on a pool of sockets in every state (fresh, bound,
 * listening, connected, half-closed, peer closed, connecting).
 *
 * Every call must return (the sockets are non-blocking and a watchdog
 * alarm ends a stuck run), fail only with an errno TCP could give, and
 * leave nothing behind: once the pool is closed, no AF_HPS connection is
 * left and the module refcount is back. The kernel must stay clean (the
 * VM runner fails the run on any WARN, BUG, KASAN, lockdep or refcount
 * report). The run ends after HPS_FUZZ_ITERS calls (default 2,000,000) or
 * HPS_FUZZ_SECONDS seconds (default 10; 300 in make check-full), whichever
 * comes first; a longer run is e.g. HPS_FUZZ_SECONDS=3600
 * HPS_FUZZ_ITERS=1000000000 (Documentation/reliability.rst). HPS_FUZZ_SEED
 * replays a run: the seed is printed first (a replay is exact up to the
 * point where timing changes what a call finds). The harness timeout
 * (4 hours) only catches a runaway: the seconds bound the run.
 *
 * The concurrent mode (concurrent.*), as syzkaller's concurrent programs:
 * several threads and a forked child call into the same pool of sockets at
 * once, blocking sockets with short timeouts this time (so zero-copy sends
 * and reads wait, as a shared socket's callers do), large sends and reads
 * beside the random calls, slots closed and refilled under the other
 * threads' feet, and signals interrupting blocked calls; with zero copy
 * off and on, and once with the smallest windows (3 credits of 4 KiB).
 * HPS_FUZZ_MT_SECONDS (default 8; 120 in make check-full) bounds each; a watchdog fails the run
 * if any call does not return within 60 s.
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>

#include "kselftest_harness.h"
#include "hps_util.h"

#define POOL	24
#define BUFSZ	(1 << 20)

static __thread unsigned long long rng;
static int mt_mode;			/* the concurrent mode runs */

static unsigned int rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng >> 16;
}

static char *buf, *noaccess;
static int port;

/* A pointer that is valid, NULL, unmapped or kernel space. */
static void *rnd_ptr(void)
{
	switch (rnd() % 8) {
	case 0:
		return NULL;
	case 1:
		return noaccess;
	case 2:
		return (void *)0xffffffff81000000ul;
	case 3:
		return buf + BUFSZ - 1 - rnd() % 8;	/* runs off the end */
	default:
		return buf + rnd() % 4096;
	}
}

static socklen_t rnd_len(void)
{
	static const socklen_t l[] = { 0, 1, 2, 3, 4, 7, 8, 15, 16, 24, 27,
				       28, 64, 128, 4096, 65536, 0x7fffffff,
				       0x80000000u, 0xffffffffu };

	return rnd() % 3 ? l[rnd() % (sizeof(l) / sizeof(l[0]))] : rnd();
}

static void rnd_fill(void *p, size_t n)
{
	unsigned char *c = p;

	while (n--)
		*c++ = rnd();
}

/* A sockaddr of a random family and length; sometimes a sensible one. */
static socklen_t rnd_addr(void *a)
{
	struct sockaddr_in *sin = a;
	struct sockaddr_in6 *sin6 = a;
	static const int fam[] = { AF_INET, AF_INET6, AF_UNSPEC, AF_UNIX,
				   AF_HPS, 255, -1 };

	rnd_fill(a, 128);
	switch (rnd() % 4) {
	case 0:
		hps_sin(sin, hps_env("HPS_SELF", "127.0.0.1"),
			rnd() % 2 ? port : rnd() % 65536);
		return sizeof(*sin);
	case 1:
		memset(sin6, 0, sizeof(*sin6));
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(rnd() % 2 ? port : rnd() % 65536);
		if (rnd() % 2)
			sin6->sin6_addr.s6_addr[15] = 1;	/* ::1 */
		else
			sin6->sin6_addr.s6_addr32[3] = rnd();
		sin6->sin6_scope_id = rnd() % 4;
		return rnd() % 4 ? sizeof(*sin6) : 24;
	default:
		((struct sockaddr *)a)->sa_family = fam[rnd() % 7];
		return rnd_len() % 130;
	}
}

/* errnos a TCP socket can give for these calls */
static int errno_ok(int e)
{
	switch (e) {
	case EINVAL: case EFAULT: case ENOPROTOOPT: case EOPNOTSUPP:
	case ENOTCONN: case EAGAIN: case EADDRINUSE: case EADDRNOTAVAIL:
	case EAFNOSUPPORT: case EISCONN: case EALREADY: case EINPROGRESS:
	case ECONNREFUSED: case ECONNRESET: case ECONNABORTED: case EPIPE:
	case EMSGSIZE: case ENOBUFS: case ENOMEM: case ENETUNREACH:
	case EHOSTUNREACH: case ETIMEDOUT: case EDESTADDRREQ: case ENOTTY:
	case EPERM: case EACCES: case EPROTO: case EINTR: case ENODEV:
	case EBADF:
	/* the generic socket options' own: SO_DETACH_FILTER without a
	 * filter, SO_RCVTIMEO with tv_usec >= 10^6, SO_PEERGROUPS without
	 * peer credentials; TCP gives them too */
	case ENOENT: case EDOM: case ENODATA:
		return 1;
	/* concurrent mode: another thread closed the slot's descriptor */
	case ENOTSOCK:
		return mt_mode;
	}
	return 0;
}

static __thread volatile int cur_op = -1; /* for the watchdog's message */
static int fail_mode;			/* HPS_FUZZ_FAIL: see below */

static void on_alarm(int sig)
{
	char m[80];
	int n;

	n = snprintf(m, sizeof(m), "# a call did not return in 60 s (op %d)\n",
		     cur_op);
	write(2, m, n);
	_exit(3);
}

/* A crash of the fuzzer itself: say where, for the replay. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	ucontext_t *u = uc;
	char m[160];
	int n;

	n = snprintf(m, sizeof(m),
		     "# signal %d (code %d) at %p in op %d, rip %llx\n",
		     sig, si->si_code, si->si_addr, cur_op,
		     (unsigned long long)u->uc_mcontext.gregs[REG_RIP]);
	write(2, m, n);
	_exit(4);
}

static __thread int pool[POOL];	/* per thread: crefill() lends it */

static int nonblock(int fd)
{
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/*
 * Close without lingering: a random SO_LINGER would make close() wait
 * (as TCP's does, even on a non-blocking socket) for a peer that may never
 * read, which is not what this test is about.
 */
static void close_now(int fd)
{
	struct linger lg = { 0, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* Put a socket of a random state in slot @i. */
static void refill(int i, int l)
{
	struct pollfd p = { .fd = l, .events = POLLIN };
	int c, a;

	if (pool[i] >= 0)
		close_now(pool[i]);
	pool[i] = -1;
	switch (rnd() % 6) {
	case 0:		/* fresh */
		pool[i] = nonblock(socket(AF_HPS, SOCK_STREAM,
					  rnd() % 2 ? 0 : IPPROTO_TCP));
		break;
	case 1:		/* connecting, maybe to nothing */
		pool[i] = nonblock(socket(AF_HPS, SOCK_STREAM, 0));
		if (pool[i] >= 0) {
			struct sockaddr_in sin;

			hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"),
				rnd() % 2 ? port : 1 + rnd() % 1000);
			connect(pool[i], (struct sockaddr *)&sin, sizeof(sin));
		}
		break;
	default:	/* one end of a connected pair, the other end kept or not */
		c = hps_connect_to(hps_env("HPS_SELF", "127.0.0.1"), port);
		if (c < 0)
			break;
		/* the listener is non-blocking: never wait for ever here */
		a = poll(&p, 1, 10000) == 1 ? accept(l, NULL, NULL) : -1;
		if (a < 0) {
			close(c);
			break;
		}
		if (rnd() % 2) {
			int t = c;

			c = a;
			a = t;
		}
		pool[i] = nonblock(c);
		if (rnd() % 3 == 0)
			close_now(a);	/* peer gone */
		else if (i + 1 < POOL && pool[i + 1] < 0)
			pool[i + 1] = nonblock(a);
		else
			close_now(a);
		break;
	}
}

static int one_call(int fd, int *unexpected, int *ret_ok)
{
	static const int levels[] = { SOL_SOCKET, SOL_TCP, SOL_HPS, SOL_IP,
				      SOL_IPV6, 0, -1, 12345 };
	struct msghdr m = { 0 };
	static struct iovec iov[IOV_MAX];
	char addr[130];
	socklen_t len;
	int op = rnd() % 12, r = 0, v, i;

	cur_op = op;

	switch (op) {
	case 0:		/* setsockopt */
		v = rnd() % 2 ? (int)rnd() : (int)(rnd() % 4);
		memcpy(buf, &v, sizeof(v));
		if (rnd() % 3 == 0)
			rnd_fill(buf, 64);
		r = setsockopt(fd, levels[rnd() % 8], rnd() % 80,
			       rnd() % 4 ? buf : rnd_ptr(), rnd_len());
		break;
	case 1:		/* getsockopt */
		len = rnd_len();
		r = getsockopt(fd, levels[rnd() % 8], rnd() % 80,
			       rnd() % 4 ? buf : rnd_ptr(),
			       rnd() % 8 ? &len : rnd_ptr());
		break;
	case 2:
		len = rnd_addr(addr);
		r = bind(fd, rnd() % 8 ? (void *)addr : rnd_ptr(), len);
		break;
	case 3:
		len = rnd_addr(addr);
		r = connect(fd, rnd() % 8 ? (void *)addr : rnd_ptr(), len);
		break;
	case 4:
		r = listen(fd, rnd() % 2 ? (int)rnd() : (int)(rnd() % 8) - 1);
		break;
	case 5:
		len = rnd_len();
		r = accept4(fd, rnd() % 2 ? (void *)addr : rnd_ptr(),
			    rnd() % 2 ? &len : rnd_ptr(),
			    rnd() % 2 ? SOCK_NONBLOCK : rnd());
		if (r >= 0) {
			close_now(r);	/* nothing left closing for later tests */
			r = 0;
		}
		break;
	case 6:		/* sendmsg with random iov shapes */
	case 7:		/* recvmsg */
		/*
		 * Every entry the kernel may read is ours: with uninitialised
		 * ones a recvmsg() wrote the received bytes wherever stack
		 * garbage pointed (the fuzzer's own stack, libc's data), as it
		 * would on TCP, and the fuzzer died of SIGSEGV.
		 */
		m.msg_iovlen = rnd() % 10 ? rnd() % 9 :
			       rnd() % 2 ? rnd() % (IOV_MAX + 8) : rnd();
		for (i = 0; i < IOV_MAX && i < m.msg_iovlen; i++) {
			iov[i].iov_base = rnd() % 6 ? buf + rnd() % 4096 : rnd_ptr();
			iov[i].iov_len = rnd() % 5 ? rnd() % 70000 : rnd_len();
		}
		m.msg_iov = rnd() % 10 ? iov : rnd_ptr();
		if (rnd() % 4 == 0) {
			m.msg_name = rnd() % 2 ? (void *)addr : rnd_ptr();
			m.msg_namelen = rnd_addr(addr);
		}
		if (rnd() % 6 == 0) {
			m.msg_control = rnd() % 2 ? buf + 8192 : rnd_ptr();
			m.msg_controllen = rnd() % 256;
			rnd_fill(buf + 8192, 256);
		}
		v = rnd() % 3 ? MSG_DONTWAIT : rnd() | MSG_DONTWAIT;
		r = op == 6 ? sendmsg(fd, &m, v | MSG_NOSIGNAL) : recvmsg(fd, &m, v);
		if (r > 0)
			r = 0;
		break;
	case 8:		/* sendto/recvfrom with addresses */
		len = rnd_addr(addr);
		if (rnd() % 2)
			r = sendto(fd, buf, rnd() % 100000, MSG_DONTWAIT | MSG_NOSIGNAL,
				   rnd() % 2 ? (void *)addr : NULL, len);
		else
			r = recvfrom(fd, buf, rnd() % 100000, MSG_DONTWAIT |
				     (rnd() % 2 ? MSG_PEEK : 0),
				     rnd() % 2 ? (void *)addr : NULL,
				     rnd() % 2 ? &len : NULL);
		if (r > 0)
			r = 0;
		break;
	case 9: {
		static const unsigned long cmds[] = { SIOCINQ, SIOCOUTQ, FIONBIO,
						      SIOCATMARK, SIOCGIFADDR, 0 };
		unsigned long cmd = rnd() % 4 ? cmds[rnd() % 6] : rnd();

		if (cmd == FIONBIO)	/* keep the socket non-blocking */
			break;
		r = ioctl(fd, cmd, rnd() % 3 ? buf : rnd_ptr());
		break;
	}
	case 10:
		r = shutdown(fd, rnd() % 5 - 1);
		break;
	default:
		len = rnd_len();
		r = rnd() % 2 ? getsockname(fd, rnd() % 4 ? (void *)addr : rnd_ptr(), &len)
			      : getpeername(fd, (void *)addr, rnd() % 4 ? &len : rnd_ptr());
		break;
	}
	if (r < 0 && !errno_ok(errno)) {
		(*unexpected)++;
		if (!fail_mode)
			fprintf(stderr, "# op %d: unexpected errno %d (%s)\n", op, errno,
			strerror(errno));
	} else if (r >= 0) {
		(*ret_ok)++;
	}
	return r;
}

static char still_tx[300000];

static void *still_writer(void *arg)
{
	return (void *)(long)(hps_write_all(*(int *)arg, still_tx,
					    sizeof(still_tx)) != sizeof(still_tx));
}

/* A new connection carries 300,000 bytes intact (whatever the window). */
static int still_works(void)
{
	static char rx[sizeof(still_tx)];
	int c, a, ret = -1;
	pthread_t t;
	void *wret;

	hps_fill_random(still_tx, sizeof(still_tx));
	if (hps_pair(&c, &a))
		return -1;
	pthread_create(&t, NULL, still_writer, &c);
	if (recv(a, rx, sizeof(rx), MSG_WAITALL) == sizeof(rx) &&
	    !memcmp(still_tx, rx, sizeof(rx)))
		ret = 0;
	pthread_join(t, &wret);
	if (wret)
		ret = -1;
	close(c);
	close(a);
	return ret;
}

FIXTURE(fuzz) {};
FIXTURE_SETUP(fuzz) {}
FIXTURE_TEARDOWN(fuzz) {}

TEST_F_TIMEOUT(fuzz, random_calls_on_every_state, 14400)
{
	long iters = atol(hps_env("HPS_FUZZ_ITERS", "2000000"));
	double limit = atof(hps_env("HPS_FUZZ_SECONDS",
				    getenv("HPS_FULL") ? "300" : "10"));
	unsigned long long seed = strtoull(hps_env("HPS_FUZZ_SEED", "0"), NULL, 0);
	long ref0 = hps_module_refcnt();
	int unexpected = 0, ok = 0, l, i, failfd = -1;
	int fail = fail_mode = atoi(hps_env("HPS_FUZZ_FAIL", "0"));
	double t0 = hps_now();
	long n;

	ASSERT_GE(ref0, 0) TH_LOG("af_hps is not loaded");
	if (!seed)
		seed = (unsigned long long)time(NULL) * 2654435761u ^ getpid();
	rng = seed | 1;
	TH_LOG("seed 0x%llx (HPS_FUZZ_SEED replays it), up to %ld calls in %.0f s",
	       seed, iters, limit);
	/*
	 * A guard page after the buffer: a random iovec or option length
	 * runs into it (EFAULT) instead of into whatever is mapped next,
	 * which the kernel would overwrite as TCP's would.
	 */
	buf = mmap(NULL, BUFSZ + 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, mprotect(buf + BUFSZ, 4096, PROT_NONE));
	noaccess = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_NE(MAP_FAILED, noaccess);
	signal(SIGALRM, on_alarm);
	{
		struct sigaction sa = { .sa_sigaction = on_segv,
					.sa_flags = SA_SIGINFO };

		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
	}
	signal(SIGPIPE, SIG_IGN);

	l = nonblock(hps_listener(&port, 64));
	ASSERT_GE(l, 0);
	for (i = 0; i < POOL; i++)
		pool[i] = -1;
	for (i = 0; i < POOL; i++)
		refill(i, l);

	/*
	 * HPS_FUZZ_FAIL=1 (make check-debug's debug_failslab.sh): from here
	 * to the end of the calls this process's kernel allocations fail at
	 * random (failslab and fail_page_alloc with task-filter). Nothing in
	 * between touches a file system: the guest's root is 9p, which does
	 * not survive its own allocations failing.
	 */
	if (fail) {
		failfd = open("/proc/self/make-it-fail", O_WRONLY);
		ASSERT_GE(failfd, 0);
		ASSERT_EQ(1, write(failfd, "1", 1));
	}
	for (n = 0; n < iters && hps_now() - t0 < limit; n++) {
		i = rnd() % POOL;
		alarm(60);
		if (pool[i] < 0 || rnd() % 200 == 0) {
			cur_op = 100;	/* refill */
			refill(i, l);
		}
		if (pool[i] >= 0)
			one_call(pool[i], &unexpected, &ok);
		alarm(0);
		if (n % 100000 == 99999)
			fprintf(stderr, "# %ld calls, %.1f s\n", n + 1,
				hps_now() - t0);
		/* drain the listener's queue now and then */
		if (rnd() % 50 == 0) {
			int a = accept4(l, NULL, NULL, SOCK_NONBLOCK);

			if (a >= 0)
				close_now(a);
		}
	}
	while (fail && pwrite(failfd, "0", 1, 0) != 1)
		;
	TH_LOG("%ld calls in %.1f s, %d succeeded, %d unexpected errnos%s",
	       n, hps_now() - t0, ok, unexpected,
	       fail ? " (allocations failing: not counted)" : "");
	EXPECT_GE(n, 1000) TH_LOG("too few calls to mean anything");
	if (!fail)
		EXPECT_EQ(0, unexpected);

	for (i = 0; i < POOL; i++)
		if (pool[i] >= 0)
			close_now(pool[i]);
	close(l);
	/*
	 * Every connection goes away and the module is released: at once
	 * for most (closed with linger 0); a socket closed while siw's
	 * rdma_connect() runs waits for it, up to TCP's connect timeout
	 * (about 130 s: on one node the dummy link "resolves" any address,
	 * so a connect to a random one waits for SYN retries).
	 */
	/* (a socket an earlier test left closing may go meanwhile: <=) */
	for (i = 0; i < 1800 && hps_module_refcnt() > ref0; i++)
		usleep(100000);
	TH_LOG("sockets closed %.1f s after the run", i / 10.0);
	EXPECT_LE(hps_module_refcnt(), ref0) {
		TH_LOG("sockets left after %.1f s", i / 10.0);
		system("cat /proc/net/hps_stat >&2");
	}

	/* And AF_HPS still carries data intact. */
	EXPECT_EQ(0, still_works());
}

/* --- the concurrent mode --- */

#define POOLC		8
#define WORKERS		4
#define BIGBUF		(1 << 20)

static _Atomic int cpool[POOLC];
static atomic_bool cstop;

struct cworker {
	pthread_t t;
	int id;
	unsigned long long seed;
	char *big;
	_Atomic double busy_since;	/* 0 when not in a call */
	_Atomic int op;
	long calls, unexpected, ok;
};

static void on_usr1(int sig)
{
}

/* A blocking socket with short timeouts and the variant's zero copy. */
static int cblock(int fd, int zc)
{
	struct timeval tv = { 0, 100000 + rnd() % 300000 };

	if (fd < 0)
		return fd;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_HPS, HPS_ZCOPY_THRESH, &zc, sizeof(zc));
	return fd;
}

/*
 * Refill slot @i of the shared pool (the old socket is closed); the other
 * end of a new connection, if kept, goes into a random slot.
 */
static void crefill(int i, int l, int zc)
{
	int saved[2] = { pool[0], pool[1] }, old;

	/* refill() works on pool[0] (and pool[1] for a peer): lend them */
	pool[0] = pool[1] = -1;
	refill(0, l);
	old = atomic_exchange(&cpool[i], cblock(pool[0], zc));
	if (old >= 0)
		close_now(old);
	if (pool[1] >= 0) {
		old = atomic_exchange(&cpool[rnd() % POOLC], cblock(pool[1], zc));
		if (old >= 0)
			close_now(old);
	}
	pool[0] = saved[0];
	pool[1] = saved[1];
}

/* The large, blocking transfers a shared socket's callers make. */
static void big_call(struct cworker *w, int fd)
{
	size_t n = rnd() % 3 ? 65536 + rnd() % (BIGBUF - 65536) : 1 + rnd() % 8192;
	ssize_t r;

	switch (rnd() % 3) {
	case 0:
		r = send(fd, w->big, n, MSG_NOSIGNAL);
		break;
	case 1:
		r = recv(fd, w->big, n, 0);
		break;
	default:
		r = recv(fd, w->big, n, MSG_PEEK);
		break;
	}
	if (r < 0 && !errno_ok(errno)) {
		w->unexpected++;
		fprintf(stderr, "# big call: unexpected errno %d (%s)\n", errno,
			strerror(errno));
	} else if (r >= 0) {
		w->ok++;
	}
}

static int cl, czc;

static void *cworker_fn(void *arg)
{
	struct cworker *w = arg;
	int dummy_ok = 0;

	rng = w->seed | 1;
	w->big = malloc(BIGBUF);
	memset(w->big, w->id, BIGBUF);
	while (!atomic_load(&cstop)) {
		int i = rnd() % POOLC, fd;

		atomic_store(&w->busy_since, hps_now());
		if (rnd() % 300 == 0) {
			atomic_store(&w->op, 100);
			crefill(i, cl, czc);
		}
		fd = atomic_load(&cpool[i]);
		if (fd >= 0) {
			if (rnd() % 3 == 0) {
				atomic_store(&w->op, 200);
				big_call(w, fd);
			} else {
				int u = 0;

				one_call(fd, &u, &dummy_ok);
				atomic_store(&w->op, cur_op);
				w->unexpected += u;
			}
		}
		atomic_store(&w->busy_since, 0);
		w->calls++;
	}
	w->ok += dummy_ok;
	free(w->big);
	return NULL;
}

/* Several threads, each call bounded; returns the unexpected errnos. */
static long crun(double seconds, unsigned long long seed, long *calls)
{
	struct cworker w[WORKERS] = {};
	double t0 = hps_now();
	long unexpected = 0;
	int i;

	atomic_store(&cstop, false);
	for (i = 0; i < WORKERS; i++) {
		w[i].id = i;
		w[i].seed = seed + 0x9e3779b97f4a7c15ULL * (i + 1);
		pthread_create(&w[i].t, NULL, cworker_fn, &w[i]);
	}
	/* signals interrupt blocked calls; a call stuck for 60 s fails */
	while (hps_now() - t0 < seconds) {
		usleep(50000);
		pthread_kill(w[rnd() % WORKERS].t, SIGUSR1);
		for (i = 0; i < WORKERS; i++) {
			double b = atomic_load(&w[i].busy_since);

			if (b && hps_now() - b > 60) {
				fprintf(stderr, "# worker %d: a call did not return in 60 s (op %d)\n",
					i, atomic_load(&w[i].op));
				_exit(3);
			}
		}
	}
	atomic_store(&cstop, true);
	for (i = 0; i < WORKERS; i++) {
		pthread_join(w[i].t, NULL);
		*calls += w[i].calls;
		unexpected += w[i].unexpected;
	}
	return unexpected;
}

static int sysctl_set(const char *knob, const char *val, char *old, size_t n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/hps/%s", knob);
	if (old) {
		f = fopen(path, "r");
		if (!f || !fgets(old, n, f))
			return -1;
		fclose(f);
		old[strcspn(old, "\n")] = 0;
	}
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", val);
	return fclose(f);
}

FIXTURE(concurrent)
{
	char credits[32], buf_size[32];
};

FIXTURE_VARIANT(concurrent)
{
	int zc;
	int tiny;	/* 3 credits of 4 KiB: every window runs out */
};

FIXTURE_VARIANT_ADD(concurrent, copy) { .zc = 0, };
FIXTURE_VARIANT_ADD(concurrent, zero_copy) { .zc = 65536, };
FIXTURE_VARIANT_ADD(concurrent, zero_copy_tiny_windows) { .zc = 16384, .tiny = 1, };

FIXTURE_SETUP(concurrent)
{
	self->credits[0] = self->buf_size[0] = 0;
	if (variant->tiny) {
		ASSERT_EQ(0, sysctl_set("credits", "3", self->credits,
					sizeof(self->credits)));
		ASSERT_EQ(0, sysctl_set("buf_size", "4096", self->buf_size,
					sizeof(self->buf_size)));
	}
}

FIXTURE_TEARDOWN(concurrent)
{
	if (self->credits[0])
		sysctl_set("credits", self->credits, NULL, 0);
	if (self->buf_size[0])
		sysctl_set("buf_size", self->buf_size, NULL, 0);
}

TEST_F_TIMEOUT(concurrent, threads_and_a_child_share_sockets, 3600)
{
	double limit = atof(hps_env("HPS_FUZZ_MT_SECONDS",
				    getenv("HPS_FULL") ? "120" : "8"));
	unsigned long long seed = strtoull(hps_env("HPS_FUZZ_SEED", "0"), NULL, 0);
	long ref0 = hps_module_refcnt(), calls = 0, unexpected;
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	int i, status;
	pid_t child;

	ASSERT_GE(ref0, 0) TH_LOG("af_hps is not loaded");
	if (!seed)
		seed = (unsigned long long)time(NULL) * 2654435761u ^ getpid();
	rng = seed | 1;
	TH_LOG("seed 0x%llx, %d threads and a child for %.0f s", seed,
	       WORKERS, limit);
	mt_mode = 1;
	czc = variant->zc;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	buf = mmap(NULL, BUFSZ + 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, mprotect(buf + BUFSZ, 4096, PROT_NONE));
	noaccess = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, noaccess);

	cl = nonblock(hps_listener(&port, 64));
	{
		int zc = variant->zc;

		setsockopt(cl, SOL_HPS, HPS_ZCOPY_THRESH, &zc, sizeof(zc));
	}
	ASSERT_GE(cl, 0);
	for (i = 0; i < POOL; i++)
		pool[i] = -1;
	/* (all empty first: a refill puts a connection's peer in any slot) */
	for (i = 0; i < POOLC; i++)
		atomic_store(&cpool[i], -1);
	for (i = 0; i < POOLC; i++)
		crefill(i, cl, variant->zc);

	/* The child shares the sockets as they are now, with threads of its own. */
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		long c = 0, u = crun(limit, seed ^ 0xc0ffee, &c);

		fprintf(stderr, "# child: %ld calls, %ld unexpected errnos\n", c, u);
		for (i = 0; i < POOLC; i++)
			if (atomic_load(&cpool[i]) >= 0)
				close_now(atomic_load(&cpool[i]));
		_exit(u ? 1 : 0);
	}
	unexpected = crun(limit, seed, &calls);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	TH_LOG("%ld calls in the parent's threads, %ld unexpected errnos; the child %s",
	       calls, unexpected, WIFEXITED(status) && !WEXITSTATUS(status) ?
	       "too had none" : "failed");
	EXPECT_EQ(0, unexpected);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_GE(calls, 1000) TH_LOG("too few calls to mean anything");

	for (i = 0; i < POOLC; i++)
		if (atomic_load(&cpool[i]) >= 0)
			close_now(atomic_load(&cpool[i]));
	close(cl);
	for (i = 0; i < 10 * atoi(hps_env("HPS_FUZZ_LEAK_WAIT", "180")) &&
		    hps_module_refcnt() > ref0; i++)
		usleep(100000);
	TH_LOG("sockets closed %.1f s after the run", i / 10.0);
	EXPECT_LE(hps_module_refcnt(), ref0) {
		TH_LOG("sockets left after %.1f s", i / 10.0);
		system("cat /proc/net/hps_stat >&2");
		/* test builds: which ones, in what state */
		system("echo 1 >/sys/module/af_hps/parameters/dump_socks && "
		       "dmesg | grep 'af_hps: sock ' | tail -n 60 >&2");
		/* still open here? */
		for (i = 0; i < 4096; i++) {
			int dom;
			socklen_t dl = sizeof(dom);

			if (!getsockopt(i, SOL_SOCKET, SO_DOMAIN, &dom, &dl) &&
			    dom == AF_HPS) {
				struct hps_info hi = {};
				socklen_t hl = sizeof(hi);
				int acc = -1, fl = fcntl(i, F_GETFL);

				dl = sizeof(acc);
				getsockopt(i, SOL_SOCKET, SO_ACCEPTCONN, &acc, &dl);
				getsockopt(i, SOL_HPS, HPS_INFO, &hi, &hl);
				TH_LOG("fd %d is still an open AF_HPS socket: state %u, listening %d, flags %#x, cpool %d %d %d %d %d %d %d %d",
				       i, hi.hpsi_state, acc, fl, cpool[0], cpool[1],
				       cpool[2], cpool[3], cpool[4], cpool[5],
				       cpool[6], cpool[7]);
			}
		}
	}
	mt_mode = 0;
	EXPECT_EQ(0, still_works());
}

TEST_HARNESS_MAIN
