// SPDX-License-Identifier: GPL-2.0
/*
 * what: sysctl proc_handler
 * have: 6.11, the handler takes a const struct ctl_table.
 */
#include <linux/sysctl.h>
#ifdef HPS_PROBE_HAVE
static int h(const struct ctl_table *t, int w, void *b, size_t *l, loff_t *p)
#else
static int h(struct ctl_table *t, int w, void *b, size_t *l, loff_t *p)
#endif
{
	return 0;
}

struct ctl_table hps_probe = { .proc_handler = h };
