// SPDX-License-Identifier: GPL-2.0-only
/*
 * Test-bed check, never loaded outside the VM: a module whose init WARNs, so
 * that selftests/testbed_host.sh can prove tools/vm/hps-vm fails a run on a
 * kernel WARN even when the command itself succeeds.
 */
#include <linux/module.h>

static int __init hps_test_warn_init(void)
{
	WARN_ON(1);
	return 0;
}

static void __exit hps_test_warn_exit(void)
{
}

module_init(hps_test_warn_init);
module_exit(hps_test_warn_exit);

MODULE_DESCRIPTION("AF_HPS test bed: WARN on load");
MODULE_LICENSE("GPL");
