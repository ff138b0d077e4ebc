// SPDX-License-Identifier: GPL-2.0
/*
 * AF_HPS long transfer: 1 GiB of random bytes (make check-full; 256 MiB
 * in make check and make check-debug) from node 1 to tools/hps_xfer on
 * node 2 (on node 1 itself with one node), checked by a 64-bit FNV-1a
 * checksum computed on both ends. HPS_LONG_BYTES sets another size.
 *
 * hps-configs: 2:rxe 2:siw
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "hps_util.h"

FIXTURE(long_xfer)
{
	char job[64];
};

FIXTURE_SETUP(long_xfer)
{
	int fd = socket(AF_HPS, SOCK_STREAM, 0);

	if (fd < 0)
		ASSERT_TRUE(0) TH_LOG("AF_HPS not available: is af_hps.ko loaded?");
	close(fd);
}

FIXTURE_TEARDOWN(long_xfer)
{
}

TEST_F_TIMEOUT(long_xfer, gib_checksummed, 600)
{
	char cmd[PATH_MAX + 512], exe[PATH_MAX];
	unsigned long long bytes;
	ssize_t n;
	int port;

	/* make check: 256 MiB; make check-full (HPS_FULL): 1 GiB */
	bytes = strtoull(hps_env("HPS_LONG_BYTES", getenv("HPS_FULL") ?
				 "1073741824" : "268435456"), NULL, 0);
	ASSERT_GT(bytes, 0);
	TH_LOG("%llu bytes", bytes);

	port = hps_peer_server(self->job, sizeof(self->job), "");
	ASSERT_GT(port, 0);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_GT(n, 0);
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	usleep(500000);
	snprintf(cmd, sizeof(cmd),
		 "for i in 1 2 3 4 5 6 7 8 9 10; do %s/../tools/hps_xfer -c %s %d -n %llu && exit 0; [ $? = 1 ] && exit 1; sleep 0.5; done; exit 2",
		 exe, hps_env("HPS_PEER", "127.0.0.1"), port, bytes);
	EXPECT_EQ(0, system(cmd));
	EXPECT_EQ(0, hps_peer_wait(self->job));
}

TEST_HARNESS_MAIN
