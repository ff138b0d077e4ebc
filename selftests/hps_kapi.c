// SPDX-License-Identifier: GPL-2.0
/*
 * AF_HPS kernel API: loads selftests/kapi/hps_kapi_test.ko, whose init
 * runs sock_create_kern() + kernel_bind/listen/connect/accept/sendmsg/
 * recvmsg over RDMA loopback and fails to load if anything goes wrong.
 * Build the module with
 *   make -C /usr/src/linux-headers-$(uname -r) M=$PWD/selftests/kapi
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "hps_util.h"

TEST(kernel_sockets)
{
	char cmd[PATH_MAX + 256], exe[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_GT(n, 0);
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(cmd, sizeof(cmd), "%s/kapi/hps_kapi_test.ko", exe);
	ASSERT_EQ(0, access(cmd, R_OK)) TH_LOG("%s not built", cmd);
	snprintf(cmd, sizeof(cmd), "insmod %s/kapi/hps_kapi_test.ko addr=%s port=%d",
		 exe, hps_env("HPS_SELF", "127.0.0.1"), hps_rand_port());
	EXPECT_EQ(0, system(cmd));
	if (system("rmmod hps_kapi_test 2>/dev/null"))
		TH_LOG("module was not loaded");
}

TEST_HARNESS_MAIN
