/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the AF_HPS selftests: addresses from the hps-vm
 * environment, random ports, connected pairs over RDMA loopback, random
 * payloads and the peer-side server (tools/hps_xfer on node 2).
 */
#ifndef HPS_UTIL_H
#define HPS_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <linux/af_hps.h>

static inline const char *hps_env(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

static inline int hps_nodes(void)
{
	return atoi(hps_env("HPS_NODES", "1"));
}

static inline int hps_rand_port(void)
{
	static int seeded;

	if (!seeded) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		srandom(ts.tv_nsec ^ getpid() << 8);
		seeded = 1;
	}
	return 20000 + random() % 30000;
}

static inline void hps_sin(struct sockaddr_in *sin, const char *addr, int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	inet_pton(AF_INET, addr, &sin->sin_addr);
}

/* A listener on HPS_SELF at a random free port; returns fd, sets *port. */
static inline int hps_listener(int *port, int backlog)
{
	struct sockaddr_in sin;
	int i, fd;

	fd = socket(AF_HPS, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	for (i = 0; i < 50; i++) {
		*port = hps_rand_port();
		hps_sin(&sin, hps_env("HPS_SELF", "127.0.0.1"), *port);
		if (!bind(fd, (struct sockaddr *)&sin, sizeof(sin)))
			break;
		if (errno != EADDRINUSE) {
			close(fd);
			return -1;
		}
	}
	if (listen(fd, backlog)) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline int hps_connect_to(const char *addr, int port)
{
	struct sockaddr_in sin;
	int fd = socket(AF_HPS, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	hps_sin(&sin, addr, port);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* A connected pair over RDMA loopback on this node. */
static inline int hps_pair(int *cfd, int *afd)
{
	int port, l = hps_listener(&port, 4);

	*cfd = *afd = -1;
	if (l < 0)
		return -1;
	*cfd = hps_connect_to(hps_env("HPS_SELF", "127.0.0.1"), port);
	if (*cfd >= 0)
		*afd = accept(l, NULL, NULL);
	close(l);
	return *cfd >= 0 && *afd >= 0 ? 0 : -1;
}

static inline void hps_fill_random(void *buf, size_t n)
{
	static uint64_t s = 0x9e3779b97f4a7c15ULL;
	unsigned char *p = buf;
	size_t i;

	s ^= (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
	for (i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		p[i] = s >> 24;
	}
}

static inline ssize_t hps_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	size_t done = 0;

	while (done < n) {
		ssize_t r = send(fd, p + done, n - done, MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		done += r;
	}
	return done;
}

static inline ssize_t hps_read_all(int fd, void *buf, size_t n)
{
	char *p = buf;
	size_t done = 0;

	while (done < n) {
		ssize_t r = recv(fd, p + done, n - done, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (!r)
			break;
		done += r;
	}
	return done;
}

/* /sys/module/af_hps/refcnt: one per socket (and dependent module); -1 */
/* A counter of /proc/net/hps_stat ("name value" lines); -1 if missing. */
static inline long hps_stat(const char *name)
{
	FILE *f = fopen("/proc/net/hps_stat", "r");
	char key[64];
	long v, ret = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", key, &v) == 2)
		if (!strcmp(key, name))
			ret = v;
	fclose(f);
	return ret;
}

/* The number the file @path starts with (a sysctl, a sysfs file); -1 */
static inline long hps_read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static inline long hps_module_refcnt(void)
{
	return hps_read_long("/sys/module/af_hps/refcnt");
}

/* Write @val to the file @path in one write(); 0 or its errno. */
static inline int hps_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = errno;
	close(fd);
	return ret;
}

/*
 * Set a fault injection parameter of a test build of af_hps.ko
 * (inject_point, inject_ms: af_hps/hps_inject.c); 0 or an errno.
 */
static inline int hps_inject_param(const char *name, int val)
{
	char path[128], buf[16];

	snprintf(path, sizeof(path), "/sys/module/af_hps/parameters/%s", name);
	snprintf(buf, sizeof(buf), "%d", val);
	return hps_write_file(path, buf);
}

static inline double hps_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* This program's path into @exe (PATH_MAX bytes); 0 or -1. */
static inline int hps_self_exe(char *exe)
{
	ssize_t n = readlink("/proc/self/exe", exe, PATH_MAX - 1);

	if (n <= 0)
		return -1;
	exe[n] = 0;
	return 0;
}

/*
 * Run the shell command @cmd in the background on node 2 (or on this node
 * with one node) with hps-vm-peer --bg; its job id goes to @job. 0 or -1.
 */
static inline int hps_peer_bg(char *job, size_t joblen, const char *cmd)
{
	char line[PATH_MAX + 512];
	FILE *f;

	snprintf(line, sizeof(line), "hps-vm-peer --bg %s", cmd);
	f = popen(line, "r");
	if (!f)
		return -1;
	if (!fgets(job, joblen, f)) {
		pclose(f);
		return -1;
	}
	pclose(f);
	job[strcspn(job, "\n")] = 0;
	return 0;
}

/*
 * Start tools/hps_xfer as a server on node 2 (or on this node with one
 * node). Returns the port, writes the job id to @job.
 */
static inline int hps_peer_server(char *job, size_t joblen, const char *args)
{
	char cmd[PATH_MAX + 256], exe[PATH_MAX];
	int port = hps_rand_port();

	/* tools/hps_xfer, found next to the test binary's directory */
	if (hps_self_exe(exe))
		return -1;
	*strrchr(exe, '/') = 0;
	snprintf(cmd, sizeof(cmd),
		 "sh -c 'exec %s/../tools/hps_xfer -l $HPS_SELF %d %s'",
		 exe, port, args);
	return hps_peer_bg(job, joblen, cmd) ? -1 : port;
}

static inline int hps_peer_wait(const char *job)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "hps-vm-peer --wait %s 120 >&2", job);
	return system(cmd);
}

static inline void hps_peer_kill(const char *job)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "hps-vm-peer --kill %s >/dev/null 2>&1",
		 job);
	if (system(cmd))
		return;
}

/* Connect to the peer server, retrying while it starts up. */
static inline int hps_connect_peer(int port)
{
	int i, fd = -1;

	for (i = 0; i < 100; i++) {
		fd = hps_connect_to(hps_env("HPS_PEER", "127.0.0.1"), port);
		if (fd >= 0 || errno != ECONNREFUSED)
			break;
		usleep(100000);
	}
	return fd;
}

#endif /* HPS_UTIL_H */
