// SPDX-License-Identifier: GPL-2.0
/*
 * The foundation's skeleton family: operations that do not exist yet fail
 * with a clear errno (EOPNOTSUPP) and never crash or WARN. The core issue
 * replaces this file with the real semantics tests.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/af_hps.h>

#include "kselftest_harness.h"

FIXTURE(skel)
{
	int fd;
	struct sockaddr_in sin;
};

FIXTURE_SETUP(skel)
{
	self->fd = socket(AF_HPS, SOCK_STREAM, 0);
	ASSERT_GE(self->fd, 0);
	memset(&self->sin, 0, sizeof(self->sin));
	self->sin.sin_family = AF_INET;
	self->sin.sin_port = htons(4242);
	self->sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

FIXTURE_TEARDOWN(skel)
{
	close(self->fd);
}

TEST_F(skel, not_yet_implemented)
{
	char buf[16] = "x";

	EXPECT_EQ(-1, bind(self->fd, (void *)&self->sin, sizeof(self->sin)));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, connect(self->fd, (void *)&self->sin, sizeof(self->sin)));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, listen(self->fd, 5));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, accept(self->fd, NULL, NULL));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, send(self->fd, buf, 1, MSG_NOSIGNAL));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, recv(self->fd, buf, sizeof(buf), MSG_DONTWAIT));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, shutdown(self->fd, SHUT_RDWR));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

TEST_HARNESS_MAIN
