// SPDX-License-Identifier: GPL-2.0
/*
 * AF_HPS socket creation, identity and lifetime: what the family accepts and
 * rejects at socket(2), the generic SOL_SOCKET identity options, descriptor
 * flags, inheritance across fork(), and the module reference an open socket
 * holds.
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/af_hps.h>

#include "kselftest_harness.h"

static int getsockopt_int(int fd, int level, int name)
{
	socklen_t len = sizeof(int);
	int val = -1;

	if (getsockopt(fd, level, name, &val, &len) || len != sizeof(int))
		return -1;
	return val;
}

TEST(create_stream)
{
	int fd;

	fd = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0) TH_LOG("socket(AF_HPS): %s (is af_hps.ko loaded?)",
				strerror(errno));
	EXPECT_EQ(0, close(fd));

	/* IPPROTO_TCP means the same: hps_run maps TCP sockets onto AF_HPS. */
	fd = socket(AF_HPS, SOCK_STREAM, IPPROTO_TCP);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(0, close(fd));
}

TEST(reject_types)
{
	static const int types[] = { SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW,
				     SOCK_RDM, SOCK_PACKET };
	unsigned int i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		errno = 0;
		EXPECT_EQ(-1, socket(AF_HPS, types[i], 0))
			TH_LOG("type %d accepted", types[i]);
		EXPECT_EQ(ESOCKTNOSUPPORT, errno)
			TH_LOG("type %d: %s", types[i], strerror(errno));
	}
}

TEST(reject_protocols)
{
	static const int protos[] = { IPPROTO_UDP, IPPROTO_SCTP, IPPROTO_MPTCP,
				      1, 255, 256, -1 };
	unsigned int i;

	for (i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
		errno = 0;
		EXPECT_EQ(-1, socket(AF_HPS, SOCK_STREAM, protos[i]))
			TH_LOG("protocol %d accepted", protos[i]);
		EXPECT_EQ(EPROTONOSUPPORT, errno)
			TH_LOG("protocol %d: %s", protos[i], strerror(errno));
	}
}

TEST(identity_options)
{
	int fd = socket(AF_HPS, SOCK_STREAM, 0);

	ASSERT_GE(fd, 0);
	EXPECT_EQ(SOCK_STREAM, getsockopt_int(fd, SOL_SOCKET, SO_TYPE));
	EXPECT_EQ(AF_HPS, getsockopt_int(fd, SOL_SOCKET, SO_DOMAIN));
	EXPECT_EQ(IPPROTO_TCP, getsockopt_int(fd, SOL_SOCKET, SO_PROTOCOL));
	EXPECT_EQ(0, getsockopt_int(fd, SOL_SOCKET, SO_ACCEPTCONN));
	EXPECT_EQ(0, getsockopt_int(fd, SOL_SOCKET, SO_ERROR));
	close(fd);
}

TEST(descriptor_flags)
{
	int fd = socket(AF_HPS, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	ASSERT_GE(fd, 0);
	EXPECT_TRUE(fcntl(fd, F_GETFL) & O_NONBLOCK);
	EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);

	fd = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	EXPECT_FALSE(fcntl(fd, F_GETFL) & O_NONBLOCK);
	EXPECT_FALSE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
}

TEST(socketpair_unsupported)
{
	int sv[2];

	EXPECT_EQ(-1, socketpair(AF_HPS, SOCK_STREAM, 0, sv));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

/* Thousands of sockets opened at once and closed: no descriptor leaks. */
TEST(many_sockets)
{
	enum { N = 4000 };
	int *fds = calloc(N, sizeof(int));
	int i, probe;

	ASSERT_NE(NULL, fds);
	probe = dup(0);
	ASSERT_GE(probe, 0);
	close(probe);
	for (i = 0; i < N; i++) {
		fds[i] = socket(AF_HPS, SOCK_STREAM, 0);
		ASSERT_GE(fds[i], 0) TH_LOG("socket %d: %s", i, strerror(errno));
	}
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, close(fds[i]));
	/* The lowest free descriptor is where it was before. */
	EXPECT_EQ(probe, dup(0));
	close(probe);
	free(fds);
}

/* A child inherits the socket; its close leaves the parent's intact. */
TEST(fork_inherits)
{
	int fd = socket(AF_HPS, SOCK_STREAM, 0);
	int status;
	pid_t pid;

	ASSERT_GE(fd, 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0)
		_exit(getsockopt_int(fd, SOL_SOCKET, SO_DOMAIN) == AF_HPS &&
		      close(fd) == 0 ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(AF_HPS, getsockopt_int(fd, SOL_SOCKET, SO_DOMAIN));
	EXPECT_EQ(0, close(fd));
}

/* An open socket pins the module: unloading it is refused. */
TEST(module_pinned)
{
	int fd = socket(AF_HPS, SOCK_STREAM, 0);

	ASSERT_GE(fd, 0);
	errno = 0;
	EXPECT_EQ(-1, syscall(SYS_delete_module, "af_hps", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno) TH_LOG("%s", strerror(errno));
	close(fd);
}

TEST_HARNESS_MAIN
