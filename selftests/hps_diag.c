// SPDX-License-Identifier: GPL-2.0
/*
 * Operability: per-namespace counters (/proc/net/hps_stat in every network
 * namespace, counting that namespace's events only).
 *
 * A namespace of our own is made with unshare(CLONE_NEWNET) in a forked
 * child; it has a dummy interface with an address and no RDMA device, so
 * a connect() from it fails after its request left (rdma_cm finds no
 * device for the route): a connect_errors event of that namespace alone.
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "hps_util.h"

#define NSTAT_MAX	64

struct stats {
	int n;
	char name[NSTAT_MAX][48];
	long val[NSTAT_MAX];
};

/* /proc/net/hps_stat of the caller's namespace; -1 if unreadable. */
static int read_stats(struct stats *s)
{
	FILE *f = fopen("/proc/net/hps_stat", "r");

	memset(s, 0, sizeof(*s));
	if (!f)
		return -1;
	while (s->n < NSTAT_MAX &&
	       fscanf(f, "%47s %ld", s->name[s->n], &s->val[s->n]) == 2)
		s->n++;
	fclose(f);
	return s->n ? 0 : -1;
}

static long stat_of(const struct stats *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name))
			return s->val[i];
	return -1;
}

/* Run a shell command; 0 if it succeeded. */
static int sh(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * In a forked child: a network namespace of its own with a dummy
 * interface (198.18.77.1/24, no RDMA device). Returns 0 in the child,
 * else -1.
 */
static int enter_new_netns(void)
{
	if (unshare(CLONE_NEWNET))
		return -1;
	return sh("ip link add hpsd0 type dummy && "
		  "ip addr add 198.18.77.1/24 dev hpsd0 && "
		  "ip link set hpsd0 up && ip link set lo up") ? -1 : 0;
}

/* A connect() that fails after its request left; its errno. */
static int failing_connect(void)
{
	int fd = hps_connect_to("198.18.77.2", 5000);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

/*
 * Every namespace has its own /proc/net/hps_stat, with the same lines in
 * the same order, starting at zero; each counts its own events only.
 */
TEST(stats_per_namespace)
{
	struct stats a, b, c;
	int cfd, afd, st, i;
	pid_t pid;

	ASSERT_EQ(0, read_stats(&a)) TH_LOG("no /proc/net/hps_stat");
	ASSERT_EQ(0, hps_pair(&cfd, &afd));
	close(cfd);
	close(afd);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		int err, bad = 0;

		if (enter_new_netns())
			_exit(10);
		if (read_stats(&c))
			_exit(11);
		/* the same counters, in the same order, all zero */
		if (c.n != a.n)
			_exit(12);
		for (i = 0; i < c.n; i++) {
			if (strcmp(c.name[i], a.name[i]) || c.val[i]) {
				fprintf(stderr, "# new namespace: %s %ld\n",
					c.name[i], c.val[i]);
				bad = 1;
			}
		}
		if (bad)
			_exit(13);
		err = failing_connect();
		if (!err)
			_exit(14);
		fprintf(stderr, "# connect in the new namespace: %s\n",
			strerror(err));
		if (read_stats(&c) || stat_of(&c, "connect_errors") != 1 ||
		    stat_of(&c, "conn_active") != 0)
			_exit(15);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));

	/* ours: the pair counted, the other namespace's failure not */
	ASSERT_EQ(0, read_stats(&b));
	EXPECT_EQ(stat_of(&a, "conn_active") + 1, stat_of(&b, "conn_active"));
	EXPECT_EQ(stat_of(&a, "conn_passive") + 1,
		  stat_of(&b, "conn_passive"));
	EXPECT_EQ(stat_of(&a, "connect_errors"),
		  stat_of(&b, "connect_errors"));
}

TEST_HARNESS_MAIN
