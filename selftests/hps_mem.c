// SPDX-License-Identifier: GPL-2.0
/*
 * net.hps.mem, the namespace's memory limit (Documentation/sysctl.rst):
 *
 *  - in a network namespace of its own (unshare(CLONE_NEWNET) in a forked
 *    child): it starts from the initial namespace's values (set one below
 *    what they were for the case, and put back), the counters start at
 *    zero, what is written is read back, and triples above the initial
 *    namespace's (any of the three), out of order, negative or too large,
 *    or not numbers fail with EINVAL and change nothing; the caller's
 *    namespace keeps its own values;
 *  - with a limit a few connections fit: connect() fails with ENOBUFS
 *    once the next connection's first buffers would go above it, the
 *    connections already up carry checked data both ways at the limit
 *    (their windows cannot grow), mem_pages is what their buffers take
 *    and the counters moved; once all are closed mem_pages falls back to
 *    0;
 *  - a limit only the active end fits under: the listener refuses the
 *    request (ECONNREFUSED at the client, accept_errors) and nothing
 *    stays charged;
 *  - above the pressure threshold a new connection gets the smallest
 *    window (3 buffers), but for a receive side sized with SO_RCVBUF on
 *    the socket or its listener; below the low one it gets the full one
 *    again;
 *  - a write of net.hps.mem enters and leaves pressure at once;
 *  - memory follows use: a connection starts with 5 pages an end, its
 *    receive window grows while the peer streams (to buffers of 12288
 *    bytes here, 4 pages each, as HPS_INFO shows) and everything goes
 *    back to 5 pages an end once it is idle;
 *  - a connect() refused for want of memory gives its charge back while
 *    its socket stays open, and that socket can listen or connect again
 *    without anything left charged twice.
 *  - a memory cgroup limit on the connecting process: connect() fails
 *    with ENOBUFS once its cgroup is full, nothing is OOM-killed, the
 *    connections up carry checked data both ways, and once they are
 *    closed as many fit again.
 *
 * The connections are made in the test's own namespace: a new one has no
 * RDMA-capable interface (see hps_diag.c), at its credits and buf_size as
 * found (the defaults) unless they are what a case tests. Each case first
 * waits up to 70 s for mem_pages to be 0 (the sockets of earlier tests
 * freed) and fails if it is not; it changes the sysctls only in a forked
 * worker under a deadline, and its own process puts them back whatever
 * the worker did (see "connections against the limit" below).
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "hps_util.h"

#define NMAX		16	/* connections a case opens at most */
#define XFER		(64 * 1024 + 123)	/* bytes each way, checked */
#define CREDITS_MIN	3	/* HPS_CREDITS_MIN: the window under pressure */
#define RX_RESERVE	1	/* receive buffers beyond the window (protocol.rst) */
/*
 * Pages an end is charged when it is set up (4 KiB pages): its first
 * window and the reserve, one page each, and one send buffer of a page.
 */
#define END_PAGES	(CREDITS_MIN + RX_RESERVE + 1)
#define IDLE_SECS	1	/* HPS_RX_IDLE: an idle end gives memory back */

/* Read /proc/sys/net/hps/@name into @buf; 0 or -1. */
static int rd_str(const char *name, char *buf, size_t len)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/proc/sys/net/hps/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ret = fgets(buf, len, f) ? 0 : -1;
	fclose(f);
	return ret;
}

static long rd(const char *name)
{
	char buf[64];

	return rd_str(name, buf, sizeof(buf)) ? -1 : strtol(buf, NULL, 10);
}

/* net.hps.mem into v[3]; 0 or -1. */
static int rd_mem(unsigned long long v[3])
{
	char buf[128];

	if (rd_str("mem", buf, sizeof(buf)))
		return -1;
	return sscanf(buf, "%llu %llu %llu", &v[0], &v[1], &v[2]) == 3 ? 0 : -1;
}

/* Write @val to /proc/sys/net/hps/@name in one write(); 0 or its errno. */
static int wr(const char *name, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), "/proc/sys/net/hps/%s", name);
	return hps_write_file(path, val);
}

static int wr_mem(long long low, long long pressure, long long high)
{
	char buf[96];

	snprintf(buf, sizeof(buf), "%lld %lld %lld", low, pressure, high);
	return wr("mem", buf);
}

static int wr_long(const char *name, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", v);
	return wr(name, buf);
}

/* A line of /proc/net/hps_stat of the caller's namespace; -1 if absent. */
static long stat_of(const char *name)
{
	FILE *f = fopen("/proc/net/hps_stat", "r");
	char n[64];
	long v, ret = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", n, &v) == 2) {
		if (!strcmp(n, name)) {
			ret = v;
			break;
		}
	}
	fclose(f);
	return ret;
}

/*
 * Wait up to @secs for mem_pages to be at most @want; its last value.
 * Sockets are freed, and their buffers uncharged, a little after close():
 * the connection work tears the connection down first.
 */
static long wait_mem_pages(long want, double secs)
{
	double end = hps_now() + secs;
	long v;

	for (;;) {
		v = stat_of("mem_pages");
		if ((v >= 0 && v <= want) || hps_now() > end)
			return v;
		usleep(50000);
	}
}

/*
 * Wait up to @secs for mem_pages to be @want on two readings 100 ms
 * apart (a buffer resized in between may be charged before the old one
 * is given back); its last value.
 */
static long wait_mem_pages_eq(long want, double secs)
{
	double end = hps_now() + secs;
	long v;

	for (;;) {
		v = stat_of("mem_pages");
		if (v == want) {
			usleep(100000);
			v = stat_of("mem_pages");
			if (v == want)
				return v;
		}
		if (hps_now() > end)
			return v;
		usleep(50000);
	}
}

static void set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = 20 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/*
 * XFER random bytes from @c to @a and others from @a to @c, written by a
 * child while this process reads; 0 if both arrived intact. Timeouts keep
 * either side from waiting for ever if the other gives up.
 */
static int exchange(int c, int a)
{
	char *t1 = malloc(XFER), *t2 = malloc(XFER), *r = malloc(XFER);
	int ok, st = 0;
	pid_t pid;

	if (!t1 || !t2 || !r)
		return -1;
	set_timeouts(c);
	set_timeouts(a);
	hps_fill_random(t1, XFER);
	hps_fill_random(t2, XFER);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		_exit(hps_write_all(c, t1, XFER) == XFER &&
		      hps_write_all(a, t2, XFER) == XFER ? 0 : 1);
	ok = hps_read_all(a, r, XFER) == XFER && !memcmp(r, t1, XFER);
	/* the second read even after a failed first: the child may wait */
	ok = hps_read_all(c, r, XFER) == XFER && !memcmp(r, t2, XFER) && ok;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		ok = 0;
	free(t1);
	free(t2);
	free(r);
	return ok ? 0 : -1;
}

/* The receive buffers (window) of a connected socket; -1 on error. */
static long rx_bufs(int fd)
{
	struct hps_info info;
	socklen_t len = sizeof(info);

	if (getsockopt(fd, SOL_HPS, HPS_INFO, &info, &len))
		return -1;
	return info.hpsi_rx_bufs;
}

/* ---- the sysctl, in a namespace of its own ---- */

/* Is this process in the initial network namespace (pid 1's)? */
static int in_init_netns(void)
{
	struct stat self, init;

	if (stat("/proc/self/ns/net", &self) || stat("/proc/1/ns/net", &init))
		return 0;
	return self.st_dev == init.st_dev && self.st_ino == init.st_ino;
}

/*
 * Wait up to @secs for the child @pid; kill it then. Its exit status, or
 * -1 if it was killed or did not exit normally.
 */
static int wait_child(pid_t pid, double secs)
{
	double end = hps_now() + secs;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (hps_now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(20000);
	}
}

/* net.hps.mem is @a @b @c; 0 or -1. */
static int mem_is(unsigned long long a, unsigned long long b,
		  unsigned long long c)
{
	unsigned long long v[3];

	return !rd_mem(v) && v[0] == a && v[1] == b && v[2] == c ? 0 : -1;
}

/*
 * In a forked child, in a new namespace, with the initial namespace's
 * net.hps.mem at @init (each at least 3, in order): 0, or which check
 * failed.
 */
static int mem_sysctl_checks(const unsigned long long init[3])
{
	static const char * const bad[] = {
		"3 2 1",			/* pressure < low */
		"1 3 2",			/* high < pressure */
		"2 1 3",			/* pressure < low */
		"-1 2 3",			/* negative */
		"1 -2 3",
		"1 2 9223372036854775808",	/* above LONG_MAX */
		"abc",
	};
	unsigned long long v[3];
	char buf[96];
	size_t i;

	if (unshare(CLONE_NEWNET))
		return 1;
	/* a new namespace starts from the initial namespace's values */
	if (rd_mem(v))
		return 2;
	if (v[0] != init[0] || v[1] != init[1] || v[2] != init[2]) {
		fprintf(stderr, "# defaults %llu %llu %llu, not %llu %llu %llu\n",
			v[0], v[1], v[2], init[0], init[1], init[2]);
		return 3;
	}
	/* a new namespace's counters start at zero */
	if (stat_of("mem_pages") != 0 || stat_of("mem_pressure_entries") != 0 ||
	    stat_of("mem_limit_failures") != 0)
		return 4;
	/* what is written is read back, up to the initial namespace's */
	if (wr("mem", "1 2 3") || mem_is(1, 2, 3))
		return 5;
	if (wr("mem", "3 3 3") || mem_is(3, 3, 3))
		return 6;
	snprintf(buf, sizeof(buf), "%llu %llu %llu", init[0], init[1], init[2]);
	if (wr("mem", buf) || mem_is(init[0], init[1], init[2]))
		return 7;
	/* above the initial namespace's, any of the three: EINVAL */
	for (i = 0; i < 3; i++) {
		unsigned long long w[3] = { init[0], init[1], init[2] };
		int err;

		w[i]++;
		if (w[0] > w[1] || w[1] > w[2])
			continue;	/* out of order anyway: not this check */
		snprintf(buf, sizeof(buf), "%llu %llu %llu", w[0], w[1], w[2]);
		err = wr("mem", buf);
		if (err != EINVAL) {
			fprintf(stderr, "# \"%s\" above %llu %llu %llu: %s\n",
				buf, init[0], init[1], init[2],
				err ? strerror(err) : "accepted");
			return 60 + i;
		}
		if (mem_is(init[0], init[1], init[2]))
			return 70 + i;
	}
	if (wr("mem", "1 2 3"))
		return 8;
	/* bad triples: EINVAL, nothing changed */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = wr("mem", bad[i]);

		if (err != EINVAL) {
			fprintf(stderr, "# \"%s\": %s\n", bad[i],
				err ? strerror(err) : "accepted");
			return 20 + i;
		}
		if (rd_mem(v) || v[0] != 1 || v[1] != 2 || v[2] != 3) {
			fprintf(stderr, "# \"%s\" changed it: %llu %llu %llu\n",
				bad[i], v[0], v[1], v[2]);
			return 40 + i;
		}
	}
	/* fewer values keep the others, and the triple is still checked */
	if (wr("mem", "3 4") != EINVAL || mem_is(1, 2, 3))	/* 3 4 3 */
		return 9;
	if (wr("mem", "0 0 3") || wr("mem", "2 3") || mem_is(2, 3, 3))
		return 10;
	return 0;
}

/*
 * net.hps.mem in a namespace of its own starts from the initial
 * namespace's values and cannot go above them. The initial namespace's
 * are first set one below what they were, so that the copy is told from
 * the computed defaults, and put back whatever happens: the child runs
 * under a deadline well inside the case's timeout, and nothing between
 * the change and its undoing can end the case.
 */
TEST(mem_sysctl_per_namespace)
{
	unsigned long long before[3], set[3], mid[3];
	int err, rc, mid_err, i;
	pid_t pid;

	ASSERT_EQ(0, rd_mem(before)) TH_LOG("no net.hps.mem: is af_hps.ko loaded?");
	if (!in_init_netns())
		SKIP(return, "not in the initial network namespace, whose net.hps.mem a new one copies");
	/* room for the checks: each value at least 4 */
	ASSERT_LE(4, before[0]) TH_LOG("net.hps.mem is %llu %llu %llu",
				       before[0], before[1], before[2]);
	for (i = 0; i < 3; i++)
		set[i] = before[i] - 1;

	/* from here to the restore: no ASSERT */
	err = wr_mem(set[0], set[1], set[2]);
	rc = -1;
	if (!err) {
		fflush(stderr);
		pid = fork();
		if (!pid)
			_exit(mem_sysctl_checks(set));
		if (pid > 0)
			rc = wait_child(pid, 15);
	}
	mid_err = rd_mem(mid);
	wr_mem(before[0], before[1], before[2]);

	EXPECT_EQ(0, err) TH_LOG("setting net.hps.mem: %s", strerror(err));
	EXPECT_EQ(0, rc) TH_LOG("the check in the new namespace failed (see above)");
	/* the child's writes did not reach ours */
	ASSERT_EQ(0, mid_err);
	EXPECT_EQ(set[0], mid[0]);
	EXPECT_EQ(set[1], mid[1]);
	EXPECT_EQ(set[2], mid[2]);
	EXPECT_EQ(0, mem_is(before[0], before[1], before[2]));
}

/* ---- connections against the limit, in the test's namespace ---- */

/*
 * Every case of the fixture below runs at the namespace's settings as
 * found (the defaults in the test bed) but for what it tests. Setup only
 * reads: it checks everything first and changes nothing, so that a
 * failed setup, after which the harness skips the teardown, leaves
 * nothing to put back. The case's body then runs in a forked worker
 * with a deadline of its own (WORKER_SECS), well inside the case's
 * timeout, while the case's process waits for it and puts the settings
 * back whatever became of it: a failed ASSERT, a crash or a hang of the
 * worker (killed at its deadline). The harness kills the whole process
 * group at the case's timeout, restore and all, so the worker's own waits
 * are bounded to fit in the deadline.
 */
#define SETTLE_SECS	70	/* > HPS_FIN_TIMEOUT (60 s): see setup */
#define WORKER_SECS	150	/* a case's body, waits included */
#define CASE_TIMEOUT	(SETTLE_SECS + WORKER_SECS + 40)

FIXTURE(limit)
{
	char mem[128];		/* net.hps.mem as found, put back */
	long credits, buf_size;	/* as found, put back */
	long end;		/* pages one end is charged at first */
	int l, port, n;
	int c[NMAX], a[NMAX];
};

FIXTURE_SETUP(limit)
{
	long pages;
	int i;

	self->l = -1;
	for (i = 0; i < NMAX; i++)
		self->c[i] = self->a[i] = -1;
	ASSERT_EQ(0, rd_str("mem", self->mem, sizeof(self->mem)))
		TH_LOG("no net.hps.mem: is af_hps.ko loaded?");
	self->credits = rd("credits");
	self->buf_size = rd("buf_size");
	ASSERT_GE(self->credits, CREDITS_MIN);
	ASSERT_GE(self->buf_size, 4096);
	if (sysconf(_SC_PAGESIZE) != 4096)
		SKIP(return, "the page counts here are for 4 KiB pages");
	self->end = END_PAGES;
	/*
	 * The sockets of earlier tests going. A closed socket whose peer
	 * does not take its FIN stays charged up to HPS_FIN_TIMEOUT (60 s),
	 * and one freed in the middle of a case would break its exact
	 * counts; one still charged after that is a leak, not to be hidden.
	 */
	pages = wait_mem_pages(0, SETTLE_SECS);
	ASSERT_EQ(0, pages) {
		TH_LOG("%ld pages still charged %d s on: leaked by an earlier test?",
		       pages, SETTLE_SECS);
		/* which sockets, in what state (dump_socks: test builds) */
		system("../tools/hps-ss -a -i -p >&2; "
		       "echo 1 >/sys/module/af_hps/parameters/dump_socks && "
		       "dmesg | grep 'af_hps: sock ' | tail -n 60 >&2");
	}
	self->l = hps_listener(&self->port, NMAX);
	ASSERT_GE(self->l, 0) TH_LOG("AF_HPS not available: is af_hps.ko loaded?");
}

/* Put back what a case may have changed; 0 or the first errno. */
static int restore_settings(FIXTURE_DATA(limit) *self)
{
	int e1 = wr("mem", self->mem);
	int e2 = wr_long("credits", self->credits);
	int e3 = wr_long("buf_size", self->buf_size);

	return e1 ? e1 : e2 ? e2 : e3;
}

FIXTURE_TEARDOWN(limit)
{
	int i;

	for (i = 0; i < NMAX; i++) {
		if (self->c[i] >= 0)
			close(self->c[i]);
		if (self->a[i] >= 0)
			close(self->a[i]);
	}
	if (self->l >= 0)
		close(self->l);
	restore_settings(self);
}

typedef void (*limit_body)(struct __test_metadata *_metadata,
			   FIXTURE_DATA(limit) *self);

/*
 * Run @body in a forked worker under a deadline, then put the settings
 * back, whatever became of it (see above). The worker's ASSERTs end the
 * worker only: it has a jump buffer of its own.
 */
static void run_case(struct __test_metadata *_metadata,
		     FIXTURE_DATA(limit) *self, limit_body body)
{
	int rc, err;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_GE(pid, 0);	/* nothing changed yet */
	if (!pid) {
		if (!setjmp(_metadata->env))
			body(_metadata, self);
		_exit(_metadata->passed ? 0 : 1);
	}
	rc = wait_child(pid, WORKER_SECS);
	err = restore_settings(self);
	EXPECT_EQ(0, rc) TH_LOG("the case failed (see above) or ran out of time");
	EXPECT_EQ(0, err) TH_LOG("putting the settings back: %s",
				 strerror(err));
}

/*
 * Connect and accept until connect() fails: the number of connections
 * made (self->n), the errno of the failure (0 if NMAX were made).
 */
static int open_until_failure(FIXTURE_DATA(limit) *self)
{
	const char *addr = hps_env("HPS_SELF", "127.0.0.1");
	int err = 0;

	for (self->n = 0; self->n < NMAX; self->n++) {
		int i = self->n;

		self->c[i] = hps_connect_to(addr, self->port);
		if (self->c[i] < 0) {
			err = errno;
			break;
		}
		self->a[i] = accept(self->l, NULL, NULL);
		if (self->a[i] < 0) {
			err = errno;
			close(self->c[i]);
			self->c[i] = -1;
			break;
		}
	}
	return err;
}

static void close_all(FIXTURE_DATA(limit) *self)
{
	int i;

	for (i = 0; i < NMAX; i++) {
		if (self->c[i] >= 0)
			close(self->c[i]);
		if (self->a[i] >= 0)
			close(self->a[i]);
		self->c[i] = self->a[i] = -1;
	}
}

/*
 * Room for three connections (both ends on this node) and half an end:
 * the fourth connect() fails with ENOBUFS before its request leaves. The
 * pressure threshold is the limit itself, so the windows stay whole.
 */
static void enobufs_body(struct __test_metadata *_metadata,
			 FIXTURE_DATA(limit) *self)
{
	long high = 6 * self->end + self->end / 2;
	long fails0 = stat_of("mem_limit_failures");
	long errs0 = stat_of("connect_errors");
	int fd, err, i;

	ASSERT_EQ(0, wr_mem(high, high, high));
	err = open_until_failure(self);
	TH_LOG("%d connections, then %s", self->n, strerror(err));
	ASSERT_EQ(ENOBUFS, err);
	EXPECT_EQ(3, self->n);
	ASSERT_GE(self->n, 1);
	EXPECT_EQ(2 * self->n * self->end, stat_of("mem_pages"));
	EXPECT_EQ(fails0 + 1, stat_of("mem_limit_failures"));
	EXPECT_EQ(errs0 + 1, stat_of("connect_errors"));

	/* the connections that fit work as before, both ways */
	for (i = 0; i < self->n; i++) {
		EXPECT_EQ(self->credits, rx_bufs(self->c[i]));
		EXPECT_EQ(self->credits, rx_bufs(self->a[i]));
		EXPECT_EQ(0, exchange(self->c[i], self->a[i]))
			TH_LOG("connection %d", i);
	}
	/* still at the limit: one more fails the same way */
	fails0 = stat_of("mem_limit_failures");
	errno = 0;
	fd = hps_connect_to(hps_env("HPS_SELF", "127.0.0.1"), self->port);
	err = errno;
	if (fd >= 0)
		close(fd);
	EXPECT_GT(0, fd);
	EXPECT_EQ(ENOBUFS, err) TH_LOG("%s", strerror(err));
	/* (at least: a window that tried to grow meanwhile counts too) */
	EXPECT_LE(fails0 + 1, stat_of("mem_limit_failures"));

	/* closed, everything comes back */
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
	/* and as many connections fit again */
	err = open_until_failure(self);
	EXPECT_EQ(ENOBUFS, err);
	EXPECT_EQ(3, self->n);
	if (self->n >= 1)
		EXPECT_EQ(0, exchange(self->c[0], self->a[0]));
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
}

TEST_F_TIMEOUT(limit, connect_fails_with_enobufs, CASE_TIMEOUT)
{
	run_case(_metadata, self, enobufs_body);
}

/*
 * Room for one end and a half: connect() charges its end, the listener
 * cannot, refuses the request, and the client sees ECONNREFUSED.
 */
static void refuses_body(struct __test_metadata *_metadata,
			 FIXTURE_DATA(limit) *self)
{
	long high = self->end + self->end / 2;
	long fails0 = stat_of("mem_limit_failures");
	long acc0 = stat_of("accept_errors");
	int fd, err;

	ASSERT_EQ(0, wr_mem(high, high, high));
	errno = 0;
	fd = hps_connect_to(hps_env("HPS_SELF", "127.0.0.1"), self->port);
	err = errno;
	if (fd >= 0)
		close(fd);
	ASSERT_GT(0, fd) TH_LOG("connected beyond the limit");
	EXPECT_EQ(ECONNREFUSED, err) TH_LOG("%s", strerror(err));
	EXPECT_EQ(fails0 + 1, stat_of("mem_limit_failures"));
	EXPECT_EQ(acc0 + 1, stat_of("accept_errors"));
	/* nothing was queued for accept() */
	ASSERT_EQ(0, fcntl(self->l, F_SETFL, O_NONBLOCK));
	EXPECT_GT(0, accept(self->l, NULL, NULL));
	EXPECT_EQ(EAGAIN, errno);
	/* the client's end gave its charge back */
	EXPECT_EQ(0, wait_mem_pages(0, 30));

	/* with room for both ends it connects */
	ASSERT_EQ(0, wr_mem(high + self->end, high + self->end,
			    high + self->end));
	ASSERT_EQ(0, fcntl(self->l, F_SETFL, 0));
	err = open_until_failure(self);
	EXPECT_EQ(1, self->n) TH_LOG("then %s", strerror(err));
	if (self->n >= 1)
		EXPECT_EQ(0, exchange(self->c[0], self->a[0]));
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
}

TEST_F_TIMEOUT(limit, passive_side_refuses, CASE_TIMEOUT)
{
	run_case(_metadata, self, refuses_body);
}

/* A connection to @port whose ends are self->c[@i] and self->a[@i]. */
static int connect_accept(FIXTURE_DATA(limit) *self, int i, int l, int port,
			  int rcvbuf)
{
	struct sockaddr_in sin;

	self->c[i] = socket(AF_HPS, SOCK_STREAM, 0);
	if (self->c[i] < 0)
		return -1;
	if (rcvbuf && setsockopt(self->c[i], SOL_SOCKET, SO_RCVBUFFORCE,
				 &rcvbuf, sizeof(rcvbuf)))
		return -1;
	hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"), port);
	if (connect(self->c[i], (struct sockaddr *)&sin, sizeof(sin)))
		return -1;
	self->a[i] = accept(l, NULL, NULL);
	return self->a[i] < 0 ? -1 : 0;
}

/*
 * Pressure from the second end on: the first connection has its full
 * window, the second the smallest; both carry data. A window the
 * application sized itself (SO_RCVBUF, here SO_RCVBUFFORCE, so as not to
 * depend on net.core.rmem_max) stays under pressure, set on the socket or
 * on the listener it is accepted from. Once all is closed the total is
 * below low and a new connection has the full window.
 */
static void pressure_body(struct __test_metadata *_metadata,
			  FIXTURE_DATA(limit) *self)
{
	long entries0 = stat_of("mem_pressure_entries");
	long fails0 = stat_of("mem_limit_failures");
	const char *addr = hps_env("HPS_SELF", "127.0.0.1");
	long small = self->end;	/* the smallest window: as much at first */
	int rcvbuf = 8 * self->buf_size;	/* 8 receive buffers */
	int i, l2, port2;

	/* low: any page; pressure: under two ends */
	ASSERT_EQ(0, wr_mem(1, 2 * self->end - 1, 10 * self->end));
	for (i = 0; i < 2; i++) {
		self->c[i] = hps_connect_to(addr, self->port);
		ASSERT_GE(self->c[i], 0) TH_LOG("connect %d: %s", i,
						 strerror(errno));
		self->a[i] = accept(self->l, NULL, NULL);
		ASSERT_GE(self->a[i], 0) TH_LOG("accept %d: %s", i,
						 strerror(errno));
	}
	/* the first was set up before the pressure, the second under it */
	EXPECT_EQ(self->credits, rx_bufs(self->c[0]));
	EXPECT_EQ(self->credits, rx_bufs(self->a[0]));
	EXPECT_EQ(CREDITS_MIN, rx_bufs(self->c[1]));
	EXPECT_EQ(CREDITS_MIN, rx_bufs(self->a[1]));
	EXPECT_EQ(entries0 + 1, stat_of("mem_pressure_entries"));
	EXPECT_EQ(fails0, stat_of("mem_limit_failures"));
	EXPECT_EQ(2 * self->end + 2 * small, stat_of("mem_pages"));

	/* SO_RCVBUF on the connecting socket: its receive side stays */
	ASSERT_EQ(0, connect_accept(self, 2, self->l, self->port, rcvbuf))
		TH_LOG("%s", strerror(errno));
	EXPECT_EQ(8, rx_bufs(self->c[2]));
	EXPECT_EQ(CREDITS_MIN, rx_bufs(self->a[2]));
	/* SO_RCVBUF on a listener: its connections' receive side stays */
	l2 = hps_listener(&port2, 4);
	ASSERT_GE(l2, 0);
	ASSERT_EQ(0, setsockopt(l2, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
				sizeof(rcvbuf)));
	ASSERT_EQ(0, connect_accept(self, 3, l2, port2, 0))
		TH_LOG("%s", strerror(errno));
	close(l2);
	EXPECT_EQ(CREDITS_MIN, rx_bufs(self->c[3]));
	EXPECT_EQ(8, rx_bufs(self->a[3]));
	/* every end starts as small, whatever its largest window */
	EXPECT_EQ(2 * self->end + 2 * small + 4 * self->end,
		  stat_of("mem_pages"));
	EXPECT_EQ(entries0 + 1, stat_of("mem_pressure_entries"));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, exchange(self->c[i], self->a[i]))
			TH_LOG("connection %d", i);

	/* all closed: below low, so no pressure; the full window again */
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
	self->c[0] = hps_connect_to(addr, self->port);
	ASSERT_GE(self->c[0], 0) TH_LOG("connect: %s", strerror(errno));
	self->a[0] = accept(self->l, NULL, NULL);
	ASSERT_GE(self->a[0], 0);
	EXPECT_EQ(self->credits, rx_bufs(self->c[0]));
	EXPECT_EQ(self->credits, rx_bufs(self->a[0]));
	EXPECT_EQ(0, exchange(self->c[0], self->a[0]));
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
}

TEST_F_TIMEOUT(limit, pressure_shrinks_window, CASE_TIMEOUT)
{
	run_case(_metadata, self, pressure_body);
}

/*
 * A write of net.hps.mem enters or leaves pressure at once, without a
 * connection's charge to notice it (hps_mem_recheck()): a pressure
 * threshold below the total counts an entry as it is written, and a new
 * connection, whose window is chosen before anything is charged for it,
 * gets the smallest; a low threshold above the total ends it, and the
 * next connection gets the full window again.
 */
static void recheck_body(struct __test_metadata *_metadata,
			 FIXTURE_DATA(limit) *self)
{
	long entries0 = stat_of("mem_pressure_entries");
	long small = self->end;
	long high = 10 * self->end, total;
	int i;

	ASSERT_EQ(0, wr_mem(1, high, high));
	ASSERT_EQ(0, connect_accept(self, 0, self->l, self->port, 0))
		TH_LOG("%s", strerror(errno));
	EXPECT_EQ(self->credits, rx_bufs(self->c[0]));
	EXPECT_EQ(self->credits, rx_bufs(self->a[0]));
	total = 2 * self->end;
	EXPECT_EQ(total, stat_of("mem_pages"));
	EXPECT_EQ(entries0, stat_of("mem_pressure_entries"));

	/* pressure below the total: entered by the write itself */
	ASSERT_EQ(0, wr_mem(1, total - 1, high));
	EXPECT_EQ(entries0 + 1, stat_of("mem_pressure_entries"));
	ASSERT_EQ(0, connect_accept(self, 1, self->l, self->port, 0))
		TH_LOG("%s", strerror(errno));
	EXPECT_EQ(CREDITS_MIN, rx_bufs(self->c[1]));
	EXPECT_EQ(CREDITS_MIN, rx_bufs(self->a[1]));
	total += 2 * small;
	EXPECT_EQ(total, stat_of("mem_pages"));

	/* low above the total: left by the write itself */
	ASSERT_EQ(0, wr_mem(total + 1, high, high));
	ASSERT_EQ(0, connect_accept(self, 2, self->l, self->port, 0))
		TH_LOG("%s", strerror(errno));
	EXPECT_EQ(self->credits, rx_bufs(self->c[2]));
	EXPECT_EQ(self->credits, rx_bufs(self->a[2]));
	EXPECT_EQ(total + 2 * self->end, stat_of("mem_pages"));
	EXPECT_EQ(entries0 + 1, stat_of("mem_pressure_entries"));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, exchange(self->c[i], self->a[i]))
			TH_LOG("connection %d", i);
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
}

TEST_F_TIMEOUT(limit, sysctl_write_enters_and_leaves_pressure, CASE_TIMEOUT)
{
	run_case(_metadata, self, recheck_body);
}

/* FIONREAD of @fd once nothing more came for @quiet s, or all @want did. */
static int fionread_settled(int fd, int want, double quiet)
{
	double end = hps_now() + quiet;
	int n = 0, last;

	do {
		last = n;
		if (ioctl(fd, FIONREAD, &n))
			return -1;
		if (n > last)
			end = hps_now() + quiet;
	} while (n < want && hps_now() < end && !usleep(10000));
	return n;
}

/*
 * Growth refused under pressure is looked at again: a reader that waits
 * (FIONREAD) for more than the smallest window holds stays short while
 * the namespace is under pressure, and gets it all once the pressure
 * ends, although nothing arrives or is read meanwhile to make the window
 * look again.
 */
static void regrow_body(struct __test_metadata *_metadata,
			FIXTURE_DATA(limit) *self)
{
	const int total = 40000;
	long high = 100 * self->end, pages;
	char *t = malloc(total), *r = malloc(total);
	int n, st = 0;
	pid_t pid;

	ASSERT_NE(NULL, t);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, wr_mem(1, high, high));
	ASSERT_EQ(0, connect_accept(self, 0, self->l, self->port, 0))
		TH_LOG("%s", strerror(errno));
	/* pressure below what the two ends hold: entered by the write */
	pages = stat_of("mem_pages");
	ASSERT_EQ(0, wr_mem(1, pages - 1, high));
	hps_fill_random(t, total);
	set_timeouts(self->c[0]);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(hps_write_all(self->c[0], t, total) == total ? 0 : 1);
	n = fionread_settled(self->a[0], total, 2 * IDLE_SECS + 1);
	TH_LOG("under pressure: %d bytes unread", n);
	EXPECT_LT(0, n);
	EXPECT_GT(total, n);
	/* pressure over (low above the total): it all comes */
	ASSERT_EQ(0, wr_mem(stat_of("mem_pages") + 1, high, high));
	n = fionread_settled(self->a[0], total, 2 * IDLE_SECS + 2);
	EXPECT_EQ(total, n);
	ASSERT_EQ(total, hps_read_all(self->a[0], r, total));
	EXPECT_EQ(0, memcmp(t, r, total));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
	free(t);
	free(r);
}

TEST_F_TIMEOUT(limit, refused_growth_is_retried, CASE_TIMEOUT)
{
	run_case(_metadata, self, regrow_body);
}

/* HPS_INFO of @fd into @info; 0 or -1. */
static int info_of(int fd, struct hps_info *info)
{
	socklen_t len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	return getsockopt(fd, SOL_HPS, HPS_INFO, info, &len);
}

/*
 * Memory follows use, at a buf_size of 12288 bytes (classes of 4096, 8192
 * and 12288 bytes: 1, 2 and 4 pages): a new connection is charged 5 pages
 * an end; while a writer streams 4 MiB, the reader's window grows to
 * buffers of 12288 bytes, and what each end says it holds (hpsi_mem) adds
 * up to what the namespace is charged; once the connection is idle both
 * ends are back to 5 pages, the data intact.
 */
static void grows_shrinks_body(struct __test_metadata *_metadata,
			       FIXTURE_DATA(limit) *self)
{
	const size_t total = 4 << 20;
	long grows0 = stat_of("window_grows");
	long shrinks0 = stat_of("window_shrinks");
	struct hps_info ic, ia;
	char *t = malloc(total), *r = malloc(total);
	int i, st = 0;
	pid_t pid;

	ASSERT_NE(NULL, t);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, wr_long("buf_size", 12288));
	ASSERT_EQ(0, connect_accept(self, 0, self->l, self->port, 0))
		TH_LOG("%s", strerror(errno));
	EXPECT_EQ(2 * self->end, stat_of("mem_pages"));
	ASSERT_EQ(0, info_of(self->a[0], &ia));
	EXPECT_EQ(12288, ia.hpsi_buf_size);
	EXPECT_EQ(CREDITS_MIN, ia.hpsi_rx_win);
	EXPECT_EQ(4096, ia.hpsi_rx_buf);
	EXPECT_EQ(self->end * 4096, ia.hpsi_mem);

	hps_fill_random(t, total);
	set_timeouts(self->c[0]);
	set_timeouts(self->a[0]);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(hps_write_all(self->c[0], t, total) == (ssize_t)total ?
		      0 : 1);
	/* half of it, then look at the reader's window, still streaming */
	ASSERT_EQ(total / 2, hps_read_all(self->a[0], r, total / 2));
	ASSERT_EQ(0, info_of(self->a[0], &ia));
	EXPECT_EQ(12288, ia.hpsi_rx_buf) TH_LOG("window %u x %u",
						ia.hpsi_rx_win,
						ia.hpsi_rx_buf);
	EXPECT_LT(self->end * 4096, ia.hpsi_mem);
	ASSERT_EQ(total - total / 2, hps_read_all(self->a[0], r + total / 2,
						  total - total / 2));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
	EXPECT_EQ(0, memcmp(t, r, total));
	EXPECT_LT(grows0, stat_of("window_grows"));
	/*
	 * What the ends hold is what is charged, once the connection work
	 * has resized the last buffers that came back (before they go idle).
	 */
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(0, info_of(self->c[0], &ic));
		ASSERT_EQ(0, info_of(self->a[0], &ia));
		if (ic.hpsi_mem + ia.hpsi_mem == stat_of("mem_pages") * 4096)
			break;
		usleep(20000);
	}
	EXPECT_EQ(ic.hpsi_mem + ia.hpsi_mem, stat_of("mem_pages") * 4096);

	/* idle: back to where they started (and staying there) */
	EXPECT_EQ(2 * self->end, wait_mem_pages_eq(2 * self->end,
						    4 * IDLE_SECS + 2));
	EXPECT_LT(shrinks0, stat_of("window_shrinks"));
	ASSERT_EQ(0, info_of(self->a[0], &ia));
	EXPECT_EQ(CREDITS_MIN, ia.hpsi_rx_win);
	EXPECT_EQ(4096, ia.hpsi_rx_buf);
	EXPECT_EQ(self->end * 4096, ia.hpsi_mem);
	/* and it still carries data both ways */
	EXPECT_EQ(0, exchange(self->c[0], self->a[0]));
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
	free(t);
	free(r);
}

TEST_F_TIMEOUT(limit, memory_follows_use, CASE_TIMEOUT)
{
	run_case(_metadata, self, grows_shrinks_body);
}

/*
 * A connection that never came up gives its charge back as it is torn
 * down, while its socket stays open: a connect() refused at the listener
 * (room for one end only) leaves nothing charged, nor does the listener
 * the same socket then becomes, which takes a connection carrying data;
 * and a second connect() on a socket whose first was refused is charged
 * once.
 */
static void failed_connect_body(struct __test_metadata *_metadata,
				FIXTURE_DATA(limit) *self)
{
	const char *addr = hps_env("HPS_SELF", "127.0.0.1");
	long high = self->end + self->end / 2;
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd, port;

	ASSERT_EQ(0, wr_mem(high, high, high));
	fd = self->c[0] = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	hps_sin(&sin, addr, self->port);
	errno = 0;
	ASSERT_NE(0, connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		TH_LOG("connected beyond the limit");
	EXPECT_EQ(ECONNREFUSED, errno) TH_LOG("%s", strerror(errno));
	/* given back by the teardown of the attempt, not by close() */
	EXPECT_EQ(0, wait_mem_pages(0, 10));

	/*
	 * The same socket listens (bound first, as hps_listener() does:
	 * bind() holds the port in the TCP stack, which siw's listener
	 * needs) and holds nothing.
	 */
	hps_sin(&sin, addr, 0);
	ASSERT_EQ(0, bind(fd, (struct sockaddr *)&sin, sizeof(sin)))
		TH_LOG("bind after a failed connect: %s", strerror(errno));
	ASSERT_EQ(0, listen(fd, 4))
		TH_LOG("listen after a failed connect: %s", strerror(errno));
	EXPECT_EQ(0, stat_of("mem_pages"));
	ASSERT_EQ(0, getsockname(fd, (struct sockaddr *)&sin, &len));
	port = ntohs(sin.sin_port);
	ASSERT_EQ(0, wr_mem(2 * self->end, 2 * self->end, 2 * self->end));
	ASSERT_EQ(0, connect_accept(self, 1, fd, port, 0))
		TH_LOG("%s", strerror(errno));
	EXPECT_EQ(2 * self->end, stat_of("mem_pages"));
	EXPECT_EQ(0, exchange(self->c[1], self->a[1]));
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));

	/* a second connect() after a refused one */
	ASSERT_EQ(0, wr_mem(high, high, high));
	fd = self->c[0] = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	hps_sin(&sin, addr, self->port);
	errno = 0;
	ASSERT_NE(0, connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		TH_LOG("connected beyond the limit");
	EXPECT_EQ(ECONNREFUSED, errno) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0, wait_mem_pages(0, 10));
	ASSERT_EQ(0, wr_mem(2 * self->end, 2 * self->end, 2 * self->end));
	ASSERT_EQ(0, connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		TH_LOG("connect again: %s", strerror(errno));
	self->a[0] = accept(self->l, NULL, NULL);
	ASSERT_GE(self->a[0], 0);
	EXPECT_EQ(2 * self->end, stat_of("mem_pages"));
	EXPECT_EQ(0, exchange(self->c[0], self->a[0]));
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
}

TEST_F_TIMEOUT(limit, failed_connect_gives_charge_back, CASE_TIMEOUT)
{
	run_case(_metadata, self, failed_connect_body);
}

/*
 * A memory cgroup limit on the process that makes the connections: its
 * sockets' buffers are charged to its cgroup (as TCP's socket memory is),
 * so once the cgroup is full connect() fails with ENOBUFS, and nothing is
 * killed for it; the connections already up carry checked data both ways
 * (their windows cannot grow at the client), and once they are closed
 * the charge is gone and as many fit again.
 *
 * The cgroup v2 hierarchy is the one mounted, else one mounted for the
 * case. The connecting process is a child of its own in the cgroup, which
 * does nothing but connect until connect() fails; the test takes its
 * sockets from it: a process that touched new memory at its cgroup's
 * limit would be reclaimed from or killed for it, whatever AF_HPS did.
 */
#define CG_MAX		(240 * 1024)	/* the cgroup's memory.max, bytes */

static int cg_write(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return hps_write_file(path, val);
}

/* "key value" of a flat-keyed cgroup file (memory.events); -1 if absent */
static long long cg_key(const char *dir, const char *file, const char *key)
{
	char path[PATH_MAX], k[64];
	long long v, ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", k, &v) == 2)
		if (!strcmp(k, key))
			ret = v;
	fclose(f);
	return ret;
}

/* The cgroup2 mount point into @root; 1 if mounted here, 0 if found. */
static int cg2_root(char *root, size_t len)
{
	char dev[64], dir[PATH_MAX], type[64];
	FILE *f = fopen("/proc/mounts", "r");

	while (f && fscanf(f, "%63s %4095s %63s %*[^\n]", dev, dir, type) == 3) {
		if (!strcmp(type, "cgroup2")) {
			fclose(f);
			snprintf(root, len, "%s", dir);
			return 0;
		}
	}
	if (f)
		fclose(f);
	snprintf(root, len, "/tmp/hps-mem-cg2.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	if (mount("none", root, "cgroup2", 0, NULL)) {
		rmdir(root);
		return -1;
	}
	return 1;
}

/* What the connecting child did, in a page it shares with the test. */
struct cg_result {
	volatile int n, err, done, go;
	int fd[NMAX];
};

/*
 * In the cgroup @cg: NMAX sockets, then connect them to @port one by one
 * until connect() fails; the sockets and the errno go into @res, and the
 * child waits there until the test has taken its sockets (pidfd_getfd()).
 * The sockets are made first, so that what connect() charges, the
 * connection's buffers, is what meets the limit (a socket() at the limit
 * may have the cgroup's OOM killer look for a victim, as for TCP); its
 * stack is touched before it moves in and it reports through memory
 * charged already, so that nothing else of it is charged at the limit.
 */
static void cg_connector(const char *cg, struct cg_result *res, int port)
{
	const char *addr = hps_env("HPS_SELF", "127.0.0.1");
	struct sockaddr_in sin, any;
	char stack[64 * 1024];
	int i;

	memset(stack, 1, sizeof(stack));
	errno = 0;
	hps_sin(&sin, addr, port);
	hps_sin(&any, addr, 0);
	if (cg_write(cg, "cgroup.procs", "0"))
		_exit(2);
	/*
	 * Bound too: over iWARP the bind takes a kernel TCP socket, charged
	 * to the caller as a TCP socket is, which connect() would otherwise
	 * take then.
	 */
	for (i = 0; i < NMAX; i++) {
		res->fd[i] = socket(AF_HPS, SOCK_STREAM, 0);
		if (res->fd[i] < 0 ||
		    bind(res->fd[i], (struct sockaddr *)&any, sizeof(any)))
			_exit(5);
	}
	for (i = 0; i < NMAX; i++) {
		if (connect(res->fd[i], (struct sockaddr *)&sin, sizeof(sin))) {
			res->err = errno;
			break;
		}
		res->n = i + 1;
	}
	res->done = 1;
	while (!res->go)
		usleep(10000);
	_exit(stack[sizeof(stack) - 1] == 1 ? 0 : 6);
}

/*
 * A new cgroup @cg limited to CG_MAX, and cg_connector() in it; take its
 * connected sockets into self->c[] and accept their other ends into
 * self->a[] (self->n of them). A limit below the charge batch (64 pages)
 * keeps the cgroup from charging ahead of use. Return: connect()'s
 * errno, or -1.
 */
static int cg_open(struct __test_metadata *_metadata,
		   FIXTURE_DATA(limit) *self, const char *cg)
{
	struct cg_result *res;
	int st, i, pidfd, err = -1;
	char val[32];
	pid_t pid;

	self->n = 0;
	if (mkdir(cg, 0755)) {
		TH_LOG("%s: %s", cg, strerror(errno));
		return -1;
	}
	snprintf(val, sizeof(val), "%d", CG_MAX);
	if (cg_write(cg, "memory.max", val)) {
		TH_LOG("%s/memory.max: no memory controller?", cg);
		return -1;
	}
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		return -1;
	memset(res, 0, sizeof(*res));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		munmap(res, sizeof(*res));
		return -1;
	}
	if (!pid)
		cg_connector(cg, res, self->port);
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	for (i = 0; i < 3000 && !res->done; i++)
		usleep(10000);
	if (res->done && pidfd >= 0) {
		err = res->err;
		for (i = 0; i < res->n; i++) {
			self->c[i] = syscall(SYS_pidfd_getfd, pidfd,
					     res->fd[i], 0);
			self->a[i] = accept(self->l, NULL, NULL);
			if (self->c[i] < 0 || self->a[i] < 0) {
				TH_LOG("connection %d: %s", i, strerror(errno));
				err = -1;
				break;
			}
			self->n++;
		}
	}
	res->go = 1;
	if (pidfd >= 0)
		close(pidfd);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		TH_LOG("the connecting child: status %#x", st);
		err = -1;
	}
	munmap(res, sizeof(*res));
	return err;
}

static void memcg_body(struct __test_metadata *_metadata,
		       FIXTURE_DATA(limit) *self)
{
	char root[PATH_MAX], cg[2][PATH_MAX + 32];
	long errs0 = stat_of("connect_errors");
	int mounted, err, n, i;

	mounted = cg2_root(root, sizeof(root));
	ASSERT_LE(0, mounted) TH_LOG("no cgroup2: %s", strerror(errno));
	for (i = 0; i < 2; i++)
		snprintf(cg[i], sizeof(cg[i]), "%s/hps-mem-%d-%d", root,
			 getpid(), i);
	/* (the root's controllers may be enabled already: EBUSY is fine) */
	cg_write(root, "cgroup.subtree_control", "+memory");

	err = cg_open(_metadata, self, cg[0]);
	TH_LOG("%d connections in a cgroup of %d KiB, then %s", self->n,
	       CG_MAX / 1024, err > 0 ? strerror(err) : "no failure");
	EXPECT_EQ(ENOBUFS, err);
	EXPECT_LE(1, self->n);
	EXPECT_GT(NMAX, self->n);
	/*
	 * The cgroup's limit is what stopped it, and the OOM killer was not
	 * even asked (an unkillable process would leave oom_kill at 0).
	 */
	EXPECT_LT(0, cg_key(cg[0], "memory.events", "max"));
	EXPECT_EQ(0, cg_key(cg[0], "memory.events", "oom"));
	EXPECT_EQ(0, cg_key(cg[0], "memory.events", "oom_kill"));
	EXPECT_LE(errs0 + 1, stat_of("connect_errors"));
	/* those up work as before, both ways, with the cgroup full */
	for (i = 0; i < self->n; i++)
		EXPECT_EQ(0, exchange(self->c[i], self->a[i]))
			TH_LOG("connection %d", i);
	EXPECT_EQ(0, cg_key(cg[0], "memory.events", "oom"));

	/* closed, the charge goes */
	n = self->n;
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
	/* and in a cgroup of the same size as many fit */
	err = cg_open(_metadata, self, cg[1]);
	TH_LOG("again: %d connections, then %s", self->n,
	       err > 0 ? strerror(err) : "no failure");
	EXPECT_EQ(ENOBUFS, err);
	EXPECT_LE(n - 1, self->n);
	close_all(self);
	EXPECT_EQ(0, wait_mem_pages(0, 30));
	EXPECT_EQ(0, cg_key(cg[1], "memory.events", "oom"));

	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, rmdir(cg[i]))
			TH_LOG("rmdir %s: %s", cg[i], strerror(errno));
	if (mounted == 1) {
		umount2(root, MNT_DETACH);
		rmdir(root);
	}
}

TEST_F_TIMEOUT(limit, memory_cgroup_limit, CASE_TIMEOUT)
{
	run_case(_metadata, self, memcg_body);
}

TEST_HARNESS_MAIN
