// SPDX-License-Identifier: GPL-2.0
/*
 * what: register_net_sysctl
 * have: 6.6, register_net_sysctl_sz() takes the table's size and
 *       register_net_sysctl() is a macro over it, for arrays only.
 */
#include <net/net_namespace.h>
#ifdef HPS_PROBE_HAVE
void *hps_probe = register_net_sysctl_sz;
#else
void *hps_probe = register_net_sysctl;
#endif
