// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Module-wide event counters, shown in /proc/net/hps_stat of the initial
 * network namespace.
 */

#include <linux/atomic.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>

#include "hps.h"

static atomic_long_t hps_stats[HPS_STAT_MAX];

static const char * const hps_stat_names[HPS_STAT_MAX] = {
	[HPS_STAT_CONN_ACTIVE]	= "conn_active",
	[HPS_STAT_CONN_PASSIVE]	= "conn_passive",
	[HPS_STAT_ABORTS]	= "aborts",
	[HPS_STAT_PROTO_ERRORS]	= "proto_errors",
	[HPS_STAT_CREDIT_MSGS]	= "credit_msgs",
	[HPS_STAT_LISTEN_DROPS]	= "listen_drops",
	[HPS_STAT_ACCEPT_ERRORS] = "accept_errors",
	[HPS_STAT_CONNECT_ERRORS] = "connect_errors",
	[HPS_STAT_ZC_TX]	= "zcopy_tx",
	[HPS_STAT_ZC_TX_BYTES]	= "zcopy_tx_bytes",
	[HPS_STAT_ZC_RX_READS]	= "zcopy_rx_reads",
	[HPS_STAT_ZC_RX_BYTES]	= "zcopy_rx_bytes",
	[HPS_STAT_ZC_FALLBACKS]	= "zcopy_fallbacks",
	[HPS_STAT_ZC_CANCELS]	= "zcopy_cancels",
	[HPS_STAT_REG_HITS]	= "zcopy_cache_hits",
	[HPS_STAT_REG_MISSES]	= "zcopy_cache_misses",
	[HPS_STAT_REG_EVICTIONS] = "zcopy_cache_evictions",
	[HPS_STAT_REG_INVALIDATIONS] = "zcopy_cache_invalidations",
	[HPS_STAT_REG_PINNED]	= "zcopy_pinned_bytes",
	[HPS_STAT_REG_LIMIT_COPIES] = "zcopy_memlock_copies",
	[HPS_STAT_REG_KMAP_COPIES] = "zcopy_kmap_copies",
	[HPS_STAT_REG_KMAP_FAILS] = "zcopy_kmap_fails",
	[HPS_STAT_KA_PROBES]	= "keepalive_probes",
	[HPS_STAT_PEER_TIMEOUTS] = "peer_timeouts",
};

/**
 * hps_stat_inc() - count an event
 * @s: the counter
 *
 * Context: any.
 */
void hps_stat_inc(enum hps_stat s)
{
	atomic_long_inc(&hps_stats[s]);
}

/**
 * hps_stat_add() - add to a counter
 * @s: the counter
 * @n: amount
 *
 * Context: any.
 */
void hps_stat_add(enum hps_stat s, long n)
{
	atomic_long_add(n, &hps_stats[s]);
}

static int hps_stat_show(struct seq_file *seq, void *v)
{
	int i;

	for (i = 0; i < HPS_STAT_MAX; i++)
		seq_printf(seq, "%s %ld\n", hps_stat_names[i],
			   atomic_long_read(&hps_stats[i]));
	return 0;
}

/**
 * hps_stats_init() - create /proc/net/hps_stat
 *
 * Return: 0 or -ENOMEM.
 */
int hps_stats_init(void)
{
	if (!proc_create_single("hps_stat", 0444, init_net.proc_net,
				hps_stat_show))
		return -ENOMEM;
	return 0;
}

/**
 * hps_stats_exit() - remove /proc/net/hps_stat
 */
void hps_stats_exit(void)
{
	remove_proc_entry("hps_stat", init_net.proc_net);
}
