// SPDX-License-Identifier: GPL-2.0
/*
 * The peer node dies under live connections. Run last (run_guest.sh runs
 * final_* after every hps_* test): it reboots node 2 without warning
 * (sysrq 'b': no shutdown, no disconnect on the wire), as a killed guest
 * or a power cut would.
 *
 * Node 1 has three connections to a server on node 2, each with a thread
 * blocked in it when node 2 dies:
 *
 *   writer   streaming into a server that reads (blocked in send(), with
 *            data in flight);
 *   stalled  writing into a server that never reads (blocked in send()
 *            waiting for credits, nothing in flight);
 *   reader   waiting in recv() for data that never comes (idle).
 *
 * Each call must return ETIMEDOUT or ECONNRESET within a bounded time
 * (keepalive_ms, 1 s here, plus the transport's retries: RC retries over
 * RoCE, 8 tries of rdma_cm's 2.1 s ack timeout with rxe; TCP
 * retransmissions over iWARP, bounded here by net.ipv4.tcp_retries2 = 5)
 * and the sockets must close. Documentation/reliability.rst has the
 * numbers.
 *
 * With one node there is no peer node to kill: the runner never starts it
 * there (hps-nodes), and run by hand it is skipped.
 *
 *   final_peer_death --serve PORT    the server (on node 2)
 *
 * hps-configs: 2:rxe 2:siw
 * hps-nodes: 2 (not even in make check-full: it kills node 2)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#include "kselftest_harness.h"
#include "hps_util.h"

#define BOUND_S	60	/* every blocked call must return within this */

static void *serve_conn(void *arg)
{
	int fd = (int)(long)arg;
	static char sink[1 << 16];
	char kind;

	if (recv(fd, &kind, 1, MSG_WAITALL) != 1)
		return NULL;
	if (kind == 'S')
		while (recv(fd, sink, sizeof(sink), 0) > 0)
			;
	else
		pause();	/* hold the connection, read nothing */
	return NULL;
}

static int serve(int port)
{
	struct sockaddr_in sin;
	int l = socket(AF_HPS, SOCK_STREAM, 0), one = 1;

	hps_sin(&sin, hps_env("HPS_SELF", "0.0.0.0"), port);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(l, 8)) {
		perror("final_peer_death --serve");
		return 1;
	}
	for (;;) {
		int fd = accept(l, NULL, NULL);
		pthread_t t;

		if (fd >= 0)
			pthread_create(&t, NULL, serve_conn, (void *)(long)fd);
	}
	return 0;
}

struct blocked {
	const char *name;
	int fd;
	char kind;	/* 'S' sink, 'I' idle server */
	int recv;	/* block in recv() instead of send() */
	double t_end;
	int err;
	long long bytes;
};

static void *run_blocked(void *arg)
{
	struct blocked *b = arg;
	static char buf[1 << 16];
	ssize_t r;

	for (;;) {
		r = b->recv ? recv(b->fd, buf, sizeof(buf), 0)
			    : send(b->fd, buf, sizeof(buf), MSG_NOSIGNAL);
		if (r <= 0)
			break;
		b->bytes += r;
	}
	b->err = r < 0 ? errno : 0;
	b->t_end = hps_now();
	return NULL;
}

static void write_file(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(val, f);
		fclose(f);
	}
}

FIXTURE(peer) {};
FIXTURE_SETUP(peer) {}
FIXTURE_TEARDOWN(peer) {}

TEST_F_TIMEOUT(peer, blocked_calls_return_when_the_peer_node_dies, 180)
{
	struct blocked b[3] = {
		{ .name = "writer", .fd = -1, .kind = 'S' },
		{ .name = "stalled", .fd = -1, .kind = 'I' },
		{ .name = "reader", .fd = -1, .kind = 'I', .recv = 1 },
	};
	pthread_t th[3];
	char cmd[PATH_MAX + 128], exe[PATH_MAX], job[64];
	int port = hps_rand_port(), i;
	double t_kill;
	ssize_t n;
	FILE *f;

	if (strcmp(hps_env("HPS_NODES", "1"), "2"))
		SKIP(return, "one node: there is no peer node to kill");

	write_file("/proc/sys/net/hps/keepalive_ms", "1000");
	write_file("/proc/sys/net/ipv4/tcp_retries2", "5");
	signal(SIGPIPE, SIG_IGN);

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_GT(n, 0);
	exe[n] = 0;
	snprintf(cmd, sizeof(cmd), "hps-vm-peer --bg %s --serve %d", exe, port);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(job, sizeof(job), f));
	pclose(f);

	for (i = 0; i < 3; i++) {
		b[i].fd = hps_connect_peer(port);
		ASSERT_GE(b[i].fd, 0) TH_LOG("connect: %s", strerror(errno));
		ASSERT_EQ(1, send(b[i].fd, &b[i].kind, 1, 0));
	}
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, run_blocked, &b[i]));
	sleep(3);	/* streaming, stalled on credits, waiting */
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, b[i].t_end) TH_LOG("%s returned early: %s",
						b[i].name, strerror(b[i].err));
	}
	ASSERT_GT(b[0].bytes, 0);

	/* Node 2 reboots at once: no shutdown, nothing more on the wire. */
	t_kill = hps_now();
	ASSERT_EQ(0, system("hps-vm-peer --bg sh -c 'echo b >/proc/sysrq-trigger' >/dev/null"));

	for (i = 0; i < 3; i++) {
		while (!b[i].t_end && hps_now() - t_kill < BOUND_S + 5)
			usleep(100000);
		EXPECT_NE(0, b[i].t_end) TH_LOG("%s still blocked after %d s",
						b[i].name, BOUND_S + 5);
	}
	for (i = 0; i < 3; i++) {
		if (!b[i].t_end)
			continue;
		TH_LOG("%s: %s after %.1f s (%lld bytes moved)", b[i].name,
		       strerror(b[i].err), b[i].t_end - t_kill, b[i].bytes);
		EXPECT_TRUE(b[i].err == ETIMEDOUT || b[i].err == ECONNRESET);
		EXPECT_LT(b[i].t_end - t_kill, BOUND_S);
		pthread_join(th[i], NULL);
		close(b[i].fd);
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--serve"))
		return serve(atoi(argv[2]));
	return test_harness_run(argc, argv);
}
