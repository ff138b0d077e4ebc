// SPDX-License-Identifier: GPL-2.0
/*
 * Operability: hps-ss (AF_HPS's sock_diag) and per-namespace counters.
 *
 *  - hps-ss lists known sockets over both transports: listening,
 *    established (with data queued both ways), half-closed (FIN-WAIT-2 and
 *    CLOSE-WAIT), zero copy in flight (an RDMA Read held in flight with the
 *    test build's fault injection), with their addresses, inode, uid and
 *    owning process, RDMA device, QP, credits, window, queues, counters,
 *    keepalive and busy-poll state, as the socket's own HPS_INFO and
 *    fstat() say; its filters (-l, -a, states, addresses, ports) and JSON;
 *  - a dump of hundreds of sockets spans several netlink buffers and lists
 *    each once; one paused while the sockets it has not reached are closed
 *    goes on and ends, one abandoned half-way keeps no socket alive;
 *  - a user without privileges sees every socket with its uid, and no
 *    process that is not his;
 *  - from another network namespace hps-ss sees that namespace's sockets
 *    only (also with -N);
 *  - the counters, per namespace: /proc/net/hps_stat in every namespace,
 *    counting that namespace's events only, and the same over netlink
 *    (hps-ss -S).
 *
 * A namespace of our own is made with unshare(CLONE_NEWNET) in a forked
 * child; it has a dummy interface with an address and no RDMA device, so
 * a connect() from it fails after its request left (rdma_cm finds no
 * device for the route): a connect_errors event of that namespace alone.
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

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

/* ---- hps-ss ---- */

#define OUT_MAX	(4 << 20)

/* tools/hps-ss beside this program's directory */
static const char *ss_path(void)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX - 32];
	ssize_t n;

	if (path[0])
		return path;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return "hps-ss";
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(path, sizeof(path), "%s/../tools/hps-ss", exe);
	return path;
}

/* Run hps-ss with @args; its output (malloc'ed), NULL if it failed. */
static char *ss(const char *args)
{
	char cmd[PATH_MAX + 512], *out = malloc(OUT_MAX);
	size_t len = 0, n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s %s", ss_path(), args);
	f = popen(cmd, "r");
	if (!f || !out) {
		free(out);
		return NULL;
	}
	while ((n = fread(out + len, 1, OUT_MAX - 1 - len, f)) > 0)
		len += n;
	out[len] = 0;
	if (pclose(f)) {
		fprintf(stderr, "# %s failed:\n%s", cmd, out);
		free(out);
		return NULL;
	}
	return out;
}

static long long json_num(const char *line, const char *key)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static int json_str(const char *line, const char *key, char *val, size_t len)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(line, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	snprintf(val, len, "%.*s", (int)strcspn(p, "\""), p);
	return 1;
}

static int count_lines(const char *out, const char *needle)
{
	int n = 0;

	while ((out = strstr(out, needle))) {
		n++;
		out++;
	}
	return n;
}

/* "ADDR:PORT" of a socket's end, as hps-ss prints it. */
static void name_of(int fd, int peer, char *buf, size_t len)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	char ip[32];

	memset(&sin, 0, sizeof(sin));
	if (peer ? getpeername(fd, (struct sockaddr *)&sin, &sl) :
		   getsockname(fd, (struct sockaddr *)&sin, &sl))
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%s:%d",
			 inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof(ip)),
			 ntohs(sin.sin_port));
}

static unsigned long inode_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

/*
 * The JSON line of socket @fd (by its inode), with the fields every socket
 * has checked against the socket itself. @moving: the socket's counters
 * moved since the listing (a transfer went on), so only what a connection
 * keeps is compared with HPS_INFO.
 */
static int check_sock(struct __test_metadata *_metadata, const char *out,
		      int fd, const char *state, int moving, char *line,
		      size_t len)
{
	char ino[32], pid[32], local[64], peer[64], v[64];
	struct hps_info info;
	socklen_t il = sizeof(info);

	snprintf(ino, sizeof(ino), "\"inode\":%lu,", inode_of(fd));
	{
		const char *p = strstr(out, ino);

		if (!p) {
			TH_LOG("socket %d (inode %lu) not listed", fd,
			       inode_of(fd));
			return 0;
		}
		while (p > out && p[-1] != '\n')
			p--;
		snprintf(line, len, "%.*s", (int)strcspn(p, "\n"), p);
	}
	TH_LOG("%s", line);
	EXPECT_TRUE(json_str(line, "state", v, sizeof(v)));
	EXPECT_STREQ(state, v);
	EXPECT_EQ(getuid(), json_num(line, "uid"));
	name_of(fd, 0, local, sizeof(local));
	EXPECT_TRUE(json_str(line, "local", v, sizeof(v)));
	EXPECT_STREQ(local, v);
	if (strcmp(state, "LISTEN")) {
		name_of(fd, 1, peer, sizeof(peer));
		EXPECT_TRUE(json_str(line, "peer", v, sizeof(v)));
		EXPECT_STREQ(peer, v);
	}
	/* the owning process: this one, with this descriptor */
	snprintf(pid, sizeof(pid), "pid=%d,fd=%d)", getpid(), fd);
	EXPECT_NE(NULL, strstr(line, pid));
	EXPECT_TRUE(json_str(line, "busypoll", v, sizeof(v)));
	EXPECT_STREQ("off", v);
	EXPECT_EQ(0, json_num(line, "busypoll_us"));
	if (!strcmp(state, "LISTEN") || !strcmp(state, "UNCONN"))
		return 1;
	/* a connection: its device and QP, and what HPS_INFO says */
	EXPECT_TRUE(json_str(line, "dev", v, sizeof(v)));
	EXPECT_STREQ(hps_env("HPS_IBDEV", "?"), v);
	EXPECT_EQ(1, json_num(line, "port"));
	EXPECT_GT(json_num(line, "qpn"), 0);
	EXPECT_EQ(0, getsockopt(fd, SOL_HPS, HPS_INFO, &info, &il));
	EXPECT_EQ(info.hpsi_version, json_num(line, "version"));
	EXPECT_EQ(info.hpsi_rx_bufs, json_num(line, "rx_bufs"));
	EXPECT_EQ(info.hpsi_buf_size, json_num(line, "buf_size"));
	EXPECT_EQ((long long)info.hpsi_rx_bufs * info.hpsi_buf_size,
		  json_num(line, "window_bytes"));
	if (!moving) {
		EXPECT_EQ(info.hpsi_credits, json_num(line, "credits"));
		EXPECT_EQ(info.hpsi_peer_credits,
			  json_num(line, "peer_credits"));
		EXPECT_EQ(info.hpsi_tx_bytes, json_num(line, "bytes_sent"));
		EXPECT_EQ(info.hpsi_rx_bytes, json_num(line, "bytes_received"));
	}
	EXPECT_GT(json_num(line, "msgs_sent"), 0);
	EXPECT_GT(json_num(line, "msgs_received"), 0);
	EXPECT_EQ(1, json_num(line, "keepalive"));
	EXPECT_EQ(10000, json_num(line, "keepidle_ms"));
	return 1;
}

static int inject(int point, int ms)
{
	return hps_inject_param("inject_ms", ms) ||
	       hps_inject_param("inject_point", point) ? -1 : 0;
}

#define INJ_ZC_RD_DONE	4	/* enum hps_inject_point */

struct io {
	int fd;
	char *buf;
	size_t len;
	ssize_t done;
};

static void *send_all(void *arg)
{
	struct io *w = arg;

	w->done = hps_write_all(w->fd, w->buf, w->len);
	return NULL;
}

static void *recv_all(void *arg)
{
	struct io *r = arg;

	r->done = hps_read_all(r->fd, r->buf, r->len);
	return NULL;
}

/*
 * Known sockets in every state hps-ss has to show, each checked against
 * the socket itself; then its text form and filters.
 */
TEST(hps_ss_lists_known_sockets)
{
	int lport, zport, l, lz, c1, a1, c2, a2, c3, a3, c4, thresh = 65536;
	char *out, line[4096], v[128], buf[1000], arg[1100];
	struct io w = { .len = 1 << 20 }, r = { .len = 1 << 20 };
	struct sockaddr_in sin;
	pthread_t wt, rt;

	signal(SIGPIPE, SIG_IGN);
	l = hps_listener(&lport, 8);
	ASSERT_GE(l, 0);
	/* established, 1000 bytes unread at a1 */
	c1 = hps_connect_to(hps_env("HPS_SELF", "?"), lport);
	ASSERT_GE(c1, 0);
	a1 = accept(l, NULL, NULL);
	ASSERT_GE(a1, 0);
	ASSERT_EQ(1000, send(c1, buf, sizeof(buf), 0));
	ASSERT_EQ(1000, send(a1, buf, sizeof(buf), 0));
	ASSERT_EQ(1000, recv(c1, buf, sizeof(buf), MSG_WAITALL));
	/* half-closed: c2 sent its FIN, a2 has it and keeps its side open */
	c2 = hps_connect_to(hps_env("HPS_SELF", "?"), lport);
	ASSERT_GE(c2, 0);
	a2 = accept(l, NULL, NULL);
	ASSERT_GE(a2, 0);
	ASSERT_EQ(0, shutdown(c2, SHUT_WR));
	ASSERT_EQ(0, recv(a2, buf, sizeof(buf), 0));
	/* one more connection, not accepted: the listener's queue */
	c4 = hps_connect_to(hps_env("HPS_SELF", "?"), lport);
	ASSERT_GE(c4, 0);
	usleep(300000);	/* the FIN's acknowledgment, completions */

	/* zero copy in flight: an RDMA Read held 3 s before it completes */
	lz = hps_listener(&zport, 4);
	ASSERT_GE(lz, 0);
	ASSERT_EQ(0, setsockopt(lz, SOL_HPS, HPS_ZCOPY_THRESH, &thresh,
				sizeof(thresh)));
	c3 = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_EQ(0, setsockopt(c3, SOL_HPS, HPS_ZCOPY_THRESH, &thresh,
				sizeof(thresh)));
	hps_sin(&sin, hps_env("HPS_SELF", "?"), zport);
	ASSERT_EQ(0, connect(c3, (struct sockaddr *)&sin, sizeof(sin)));
	a3 = accept(lz, NULL, NULL);
	ASSERT_GE(a3, 0);
	w.fd = c3;
	w.buf = malloc(w.len);
	r.fd = a3;
	r.buf = malloc(r.len);
	ASSERT_EQ(0, inject(INJ_ZC_RD_DONE, 3000))
		TH_LOG("no fault injection: not a test build of af_hps.ko?");
	ASSERT_EQ(0, pthread_create(&rt, NULL, recv_all, &r));
	ASSERT_EQ(0, pthread_create(&wt, NULL, send_all, &w));
	usleep(800000);

	out = ss("-a -e -i -p -j");
	inject(0, 0);
	ASSERT_NE(NULL, out);
	pthread_join(wt, NULL);
	pthread_join(rt, NULL);
	EXPECT_EQ((ssize_t)w.len, w.done);
	EXPECT_EQ((ssize_t)r.len, r.done);

	/* listening: 1 waiting for accept(), backlog 8 */
	if (check_sock(_metadata, out, l, "LISTEN", 0, line, sizeof(line))) {
		EXPECT_EQ(1, json_num(line, "recv_q"));
		EXPECT_EQ(8, json_num(line, "send_q"));
		EXPECT_TRUE(json_str(line, "peer", v, sizeof(v)));
		EXPECT_STREQ("0.0.0.0:*", v);
	}
	/* established, 1000 bytes queued at a1 */
	if (check_sock(_metadata, out, a1, "ESTAB", 0, line, sizeof(line))) {
		EXPECT_EQ(1000, json_num(line, "recv_q"));
		EXPECT_EQ(1000, json_num(line, "rx_queued"));
		EXPECT_EQ(0, json_num(line, "send_q"));
	}
	if (check_sock(_metadata, out, c1, "ESTAB", 0, line, sizeof(line)))
		EXPECT_EQ(0, json_num(line, "recv_q"));
	/* half-closed */
	if (check_sock(_metadata, out, c2, "FIN-WAIT-2", 0, line, sizeof(line)))
		EXPECT_EQ(2, json_num(line, "shutdown"));	/* SEND */
	if (check_sock(_metadata, out, a2, "CLOSE-WAIT", 0, line, sizeof(line)))
		EXPECT_EQ(1, json_num(line, "shutdown"));	/* RCV */
	/* zero copy in flight, both ends */
	if (check_sock(_metadata, out, c3, "ESTAB", 1, line, sizeof(line))) {
		EXPECT_EQ(thresh, json_num(line, "zcopy_thresh"));
		EXPECT_EQ(1, json_num(line, "zcopy_capable"));
		EXPECT_EQ(1, json_num(line, "zcopy_tx"));
		EXPECT_GT(json_num(line, "zcopy_tx_len"), 0);
	}
	if (check_sock(_metadata, out, a3, "ESTAB", 1, line, sizeof(line))) {
		EXPECT_EQ(1, json_num(line, "zcopy_rx"));
		EXPECT_EQ(1, json_num(line, "zcopy_reading"));
		EXPECT_GT(json_num(line, "zcopy_rx_len"), 0);
	}
	free(out);

	/* the text form and its filters */
	out = ss("-l -n");
	ASSERT_NE(NULL, out);
	EXPECT_NE(NULL, strstr(out, "State")) TH_LOG("%s", out);
	EXPECT_EQ(2, count_lines(out, "\nLISTEN ")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "ESTAB")) TH_LOG("%s", out);
	free(out);
	snprintf(arg, sizeof(arg), "-H -e --sport %d", lport);
	out = ss(arg);		/* connected only: a1, a2, c4's peer */
	ASSERT_NE(NULL, out);
	TH_LOG("hps-ss %s:\n%s", arg, out);
	EXPECT_EQ(NULL, strstr(out, "State"));
	EXPECT_EQ(NULL, strstr(out, "LISTEN"));
	EXPECT_EQ(1, count_lines(out, "CLOSE-WAIT"));
	EXPECT_GE(count_lines(out, "ESTAB"), 2);
	free(out);
	out = ss("-H -s fin-wait-2 -s close-wait");
	ASSERT_NE(NULL, out);
	EXPECT_EQ(1, count_lines(out, "FIN-WAIT-2"));
	EXPECT_EQ(1, count_lines(out, "CLOSE-WAIT"));
	EXPECT_EQ(NULL, strstr(out, "ESTAB"));
	free(out);
	/* a1's peer (c1's end) is unique; its local end is the listener's */
	name_of(a1, 1, buf, sizeof(buf));
	snprintf(arg, sizeof(arg), "-H -i --dst %s", buf);
	out = ss(arg);
	ASSERT_NE(NULL, out);
	TH_LOG("hps-ss %s:\n%s", arg, out);
	EXPECT_EQ(1, count_lines(out, "ESTAB"));
	EXPECT_EQ(1, count_lines(out, " qpn:"));
	EXPECT_EQ(1, count_lines(out, " busypoll:off"));
	free(out);

	close(c1); close(a1); close(c2); close(a2); close(c3); close(a3);
	close(c4);
	close(l);
	close(lz);
	free(w.buf);
	free(r.buf);
}

/* Hundreds of sockets: several netlink buffers, each socket once. */
TEST(hps_ss_lists_many_sockets_once)
{
	enum { N = 400 };
	int fds[N], i, seen = 0;
	char *out, ino[32];

	for (i = 0; i < N; i++) {
		fds[i] = socket(AF_HPS, SOCK_STREAM, 0);
		ASSERT_GE(fds[i], 0);
	}
	out = ss("-a -i -e -j");
	ASSERT_NE(NULL, out);
	for (i = 0; i < N; i++) {
		snprintf(ino, sizeof(ino), "\"inode\":%lu,", inode_of(fds[i]));
		if (count_lines(out, ino) == 1)
			seen++;
		else
			TH_LOG("inode %lu listed %d times", inode_of(fds[i]),
			       count_lines(out, ino));
	}
	EXPECT_EQ(N, seen);
	EXPECT_EQ(N, count_lines(out, "\"state\":\"UNCONN\""));
	free(out);
	for (i = 0; i < N; i++)
		close(fds[i]);
}

/* A raw SOCK_DIAG dump of the AF_HPS sockets, every attribute asked for. */
static int dump_start(void)
{
	struct {
		struct nlmsghdr nlh;
		struct hps_diag_req req;
	} msg = {
		.nlh = {
			.nlmsg_len = sizeof(msg),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = 1,
		},
		.req = {
			.sdiag_family = AF_HPS,
			.sdiag_protocol = HPS_DIAG_SOCKS,
			.hdiag_show = ~0u,
		},
	};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd < 0)
		return -1;
	if (send(fd, &msg, sizeof(msg), 0) != sizeof(msg)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * One buffer of a dump: its sockets' inodes appended to @inos (*n of
 * @max so far; a message past @max is counted, not kept). 1 at its
 * NLMSG_DONE, 0 if more is to come, -1 on an error.
 */
static int dump_read(int fd, unsigned int *inos, int max, int *n)
{
	static char buf[65536] __attribute__((aligned(8)));
	ssize_t len = recv(fd, buf, sizeof(buf), 0);
	struct nlmsghdr *h;
	int left = len;

	if (len <= 0)
		return -1;
	for (h = (void *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
		if (h->nlmsg_type == NLMSG_DONE)
			return 1;
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
			return -1;
		if (*n < max)
			inos[*n] = ((struct hps_diag_msg *)
				    NLMSG_DATA(h))->hdiag_inode;
		(*n)++;
	}
	return 0;
}

/* The number of AF_HPS sockets a whole dump lists; -1 on an error. */
static int dump_count(void)
{
	int fd = dump_start(), n = 0, r = 0;

	if (fd < 0)
		return -1;
	while (!r)
		r = dump_read(fd, NULL, 0, &n);
	close(fd);
	return r == 1 ? n : -1;
}

/* Wait up to 10 s for a dump to list at most @want sockets; the last count. */
static int dump_count_falls_to(int want)
{
	int i, n = -1;

	for (i = 0; i < 100; i++) {
		n = dump_count();
		if (n >= 0 && n <= want)
			break;
		usleep(100000);
	}
	return n;
}

/*
 * A dump whose reader pauses after its first buffer, while every socket
 * is closed, goes on after the last socket it sent and ends: each socket
 * listed at most once, those closed before it reached them not at all.
 * A dump abandoned after its first buffer (its netlink socket closed)
 * keeps no socket alive: the count falls back to where it started.
 */
TEST(dump_paused_while_sockets_close)
{
	enum { N = 900 };	/* more than two buffers' worth, under 1024 fds */
	static unsigned int ino[N], got[4 * N];
	int fds[N], i, j, n = 0, r, nl, base, mine = 0, twice = 0, left;

	base = dump_count();
	ASSERT_GE(base, 0);
	for (i = 0; i < N; i++) {
		fds[i] = socket(AF_HPS, SOCK_STREAM, 0);
		ASSERT_GE(fds[i], 0);
		ino[i] = inode_of(fds[i]);
	}
	nl = dump_start();
	ASSERT_GE(nl, 0);
	ASSERT_EQ(0, dump_read(nl, got, 4 * N, &n));
	for (i = 0; i < N; i++)
		close(fds[i]);
	do
		r = dump_read(nl, got, 4 * N, &n);
	while (!r);
	close(nl);
	EXPECT_EQ(1, r);
	ASSERT_LE(n, 4 * N);
	for (i = 0; i < N; i++) {
		int seen = 0;

		for (j = 0; j < n; j++)
			seen += got[j] == ino[i];
		mine += seen > 0;
		twice += seen > 1;
	}
	TH_LOG("listed %d of %d before they were closed, %d in all", mine, N,
	       n);
	EXPECT_EQ(0, twice);
	EXPECT_LT(0, mine);
	EXPECT_GT(N, mine);
	left = dump_count_falls_to(base);
	EXPECT_LE(0, left);
	EXPECT_GE(base, left);

	/* abandoned after its first buffer */
	for (i = 0; i < N; i++) {
		fds[i] = socket(AF_HPS, SOCK_STREAM, 0);
		ASSERT_GE(fds[i], 0);
	}
	nl = dump_start();
	ASSERT_GE(nl, 0);
	n = 0;
	ASSERT_EQ(0, dump_read(nl, got, 4 * N, &n));
	ASSERT_EQ(0, dump_read(nl, got, 4 * N, &n));
	for (i = 0; i < N; i++)
		close(fds[i]);
	close(nl);
	left = dump_count_falls_to(base);
	EXPECT_LE(0, left);
	EXPECT_GE(base, left);
}

/*
 * A user without privileges: every socket of the namespace with its
 * owner's uid, as ss; processes only where /proc lets him see them.
 */
TEST(hps_ss_unprivileged)
{
	int c, a, st;
	char ino[32], line[4096];
	pid_t pid;

	ASSERT_EQ(0, hps_pair(&c, &a));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		char *out, *p;

		snprintf(ino, sizeof(ino), "\"inode\":%lu,", inode_of(c));
		/* only root's process holds them then */
		close(c);
		close(a);
		if (setgid(65534) || setuid(65534))
			_exit(10);
		out = ss("-a -e -p -j");
		if (!out)
			_exit(11);
		/* root's socket, with root's uid */
		p = strstr(out, ino);
		if (!p)
			_exit(12);
		while (p > out && p[-1] != '\n')
			p--;
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
		if (!strstr(line, "\"uid\":0,"))
			_exit(13);
		/* root's process is not his to see */
		if (!strstr(line, "\"users\":\"\""))
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
	close(c);
	close(a);
}

/*
 * Another namespace sees its own sockets only (hps-ss inside it, and
 * hps-ss -N from outside); ours does not see its.
 */
TEST(hps_ss_per_namespace)
{
	int c, a, st, ready[2], done[2];
	char *out, ino[32], arg[64];
	unsigned long child_ino;
	pid_t pid;

	ASSERT_EQ(0, hps_pair(&c, &a));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		int fd, n;
		unsigned long me;
		char *o;

		close(ready[0]);
		close(done[1]);		/* its EOF is the parent's go */
		if (enter_new_netns())
			_exit(10);
		fd = socket(AF_HPS, SOCK_STREAM, 0);
		if (fd < 0)
			_exit(11);
		me = inode_of(fd);
		o = ss("-a -e -j");
		if (!o)
			_exit(12);
		snprintf(ino, sizeof(ino), "\"inode\":%lu,", me);
		n = count_lines(o, "\"state\":");
		if (n != 1 || !strstr(o, ino)) {
			fprintf(stderr, "# in the new namespace:\n%s", o);
			_exit(13);
		}
		snprintf(ino, sizeof(ino), "\"inode\":%lu,", inode_of(c));
		if (strstr(o, ino))
			_exit(14);
		if (write(ready[1], &me, sizeof(me)) != sizeof(me))
			_exit(15);
		if (read(done[0], &n, 1) < 0)
			_exit(16);
		_exit(0);
	}
	close(ready[1]);
	close(done[0]);
	ASSERT_EQ(sizeof(child_ino), read(ready[0], &child_ino,
					  sizeof(child_ino)));
	/* ours: not the child's socket */
	out = ss("-a -e -j");
	ASSERT_NE(NULL, out);
	snprintf(ino, sizeof(ino), "\"inode\":%lu,", child_ino);
	EXPECT_EQ(NULL, strstr(out, ino));
	snprintf(ino, sizeof(ino), "\"inode\":%lu,", inode_of(c));
	EXPECT_NE(NULL, strstr(out, ino));
	free(out);
	/* -N: the child's namespace from here */
	snprintf(arg, sizeof(arg), "-N /proc/%d/ns/net -a -e -j", pid);
	out = ss(arg);
	ASSERT_NE(NULL, out);
	snprintf(ino, sizeof(ino), "\"inode\":%lu,", child_ino);
	EXPECT_NE(NULL, strstr(out, ino)) TH_LOG("%s", out);
	EXPECT_EQ(1, count_lines(out, "\"state\":"));
	free(out);
	/* and its counters: all zero */
	snprintf(arg, sizeof(arg), "-N /proc/%d/ns/net -S", pid);
	out = ss(arg);
	ASSERT_NE(NULL, out);
	EXPECT_NE(NULL, strstr(out, "conn_active 0\n"));
	free(out);
	close(done[1]);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
	close(c);
	close(a);
}

/* hps-ss -S, over netlink, is /proc/net/hps_stat, line for line. */
TEST(stats_over_netlink)
{
	struct stats p;
	char *out, want[128];
	int i, try, ok = 0;

	for (try = 0; try < 3 && !ok; try++) {
		ASSERT_EQ(0, read_stats(&p));
		out = ss("-S");
		ASSERT_NE(NULL, out);
		ok = count_lines(out, "\n") == p.n;
		for (i = 0; ok && i < p.n; i++) {
			snprintf(want, sizeof(want), "%s %ld\n", p.name[i],
				 p.val[i]);
			ok = strstr(out, want) != NULL;
		}
		if (!ok)
			TH_LOG("differs (a counter moved?):\n%s", out);
		free(out);
	}
	EXPECT_TRUE(ok);
	out = ss("-S -j");
	ASSERT_NE(NULL, out);
	EXPECT_NE(NULL, strstr(out, "{\"conn_active\":"));
	EXPECT_NE(NULL, strstr(out, "\"credit_stalls\":"));
	free(out);
}

TEST_HARNESS_MAIN
