// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Event counters, per network namespace: each namespace's events are
 * counted in its own per-CPU array (struct hps_net.stats) and shown in its
 * own /proc/net/hps_stat, one "name value" line per counter in the order
 * of enum hps_stat. New counters are only ever appended, so readers that
 * go by line or by name keep working. The same counters go to tools over
 * sock_diag (hps_diag.c). One line is a level kept elsewhere: mem_pages,
 * the pages charged to the namespace (hps_mem.c), read from its
 * accounting rather than summed over the CPUs.
 */

#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>

#include "hps.h"

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
	[HPS_STAT_USER_TIMEOUTS] = "user_timeouts",
	[HPS_STAT_CREDIT_STALLS] = "credit_stalls",
	[HPS_STAT_MEM_PAGES]	= "mem_pages",
	[HPS_STAT_MEM_PRESSURE_ENTRIES] = "mem_pressure_entries",
	[HPS_STAT_MEM_LIMIT_FAILURES] = "mem_limit_failures",
	[HPS_STAT_CREDIT_RESERVE] = "credit_reserve",
	[HPS_STAT_RX_GROWS] = "window_grows",
	[HPS_STAT_RX_SHRINKS] = "window_shrinks",
	[HPS_STAT_BUSY_POLL_HITS] = "busy_poll_hits",
	[HPS_STAT_BUSY_POLL_MISSES] = "busy_poll_misses",
	[HPS_STAT_BUSY_POLL_CQES] = "busy_poll_completions",
	[HPS_STAT_TX_UNSIGNALED] = "tx_unsignaled",
	[HPS_STAT_TX_FENCES] = "tx_fences",
	[HPS_STAT_FB_NO_DEVICE] = "fallback_no_device",
	[HPS_STAT_FB_REFUSED] = "fallback_refused",
	[HPS_STAT_FB_REJECTED] = "fallback_rejected",
	[HPS_STAT_FB_UNREACHABLE] = "fallback_unreachable",
	[HPS_STAT_FB_PEER_ERROR] = "fallback_peer_error",
	[HPS_STAT_FB_RESOURCE] = "fallback_resource",
	[HPS_STAT_FB_TCP_CLIENT] = "fallback_tcp_client",
	[HPS_STAT_FB_ERRORS] = "fallback_errors",
	[HPS_STAT_PORTQ_ANSWERS] = "portq_answers",
	[HPS_STAT_PORTQ_TIMEOUTS] = "portq_timeouts",
	[HPS_STAT_PORTQ_CACHED] = "portq_cached",
	[HPS_STAT_PORTQ_STALE] = "portq_stale",
};

/**
 * hps_net_stat_add() - add to a counter of a namespace
 * @hn: the namespace's AF_HPS state
 * @s: the counter
 * @n: amount (negative for the levels, HPS_STAT_REG_PINNED)
 *
 * Context: any (this_cpu_add() is safe against interrupts).
 */
void hps_net_stat_add(struct hps_net *hn, enum hps_stat s, long n)
{
	this_cpu_add(hn->stats->v[s], n);
}

/**
 * hps_stat_add() - add to a counter of @net
 * @net: the namespace the event happened in (the socket's)
 * @s: the counter
 * @n: amount
 *
 * Context: any.
 */
void hps_stat_add(const struct net *net, enum hps_stat s, long n)
{
	hps_net_stat_add(hps_net(net), s, n);
}

/**
 * hps_stat_read() - the value of one counter of a namespace
 * @hn: the namespace's AF_HPS state
 * @s: the counter
 *
 * Context: any; the sum of the per-CPU values, as SNMP counters are read
 * (mem_pages: the namespace's accounting, hps_net.mem_allocated).
 * Return: the value.
 */
long hps_stat_read(struct hps_net *hn, enum hps_stat s)
{
	long sum = 0;
	int cpu;

	if (s == HPS_STAT_MEM_PAGES)
		return atomic_long_read(&hn->mem_allocated);
	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(hn->stats, cpu)->v[s];
	return sum;
}

/**
 * hps_stat_name() - the name of a counter in /proc/net/hps_stat
 * @s: the counter
 *
 * Return: its name.
 */
const char *hps_stat_name(enum hps_stat s)
{
	return hps_stat_names[s];
}

static int hps_stat_show(struct seq_file *seq, void *v)
{
	struct hps_net *hn = hps_net(seq_file_single_net(seq));
	int i;

	for (i = 0; i < HPS_STAT_MAX; i++)
		seq_printf(seq, "%s %ld\n", hps_stat_names[i],
			   hps_stat_read(hn, i));
	return 0;
}

/**
 * hps_stats_net_init() - a namespace's counters and /proc/net/hps_stat
 * @net: the new namespace
 * @hn: its AF_HPS state
 *
 * Context: pernet init; may sleep.
 * Return: 0 or -ENOMEM.
 */
int hps_stats_net_init(struct net *net, struct hps_net *hn)
{
	might_sleep();
	hn->stats = alloc_percpu(struct hps_stats);
	if (!hn->stats)
		return -ENOMEM;
	if (!proc_create_net_single("hps_stat", 0444, net->proc_net,
				    hps_stat_show, NULL)) {
		free_percpu(hn->stats);
		hn->stats = NULL;
		return -ENOMEM;
	}
	return 0;
}

/**
 * hps_stats_net_exit() - remove a namespace's counters
 * @net: the namespace, which has no AF_HPS socket left
 * @hn: its AF_HPS state
 *
 * Context: pernet exit, after everything that counts is gone.
 */
void hps_stats_net_exit(struct net *net, struct hps_net *hn)
{
	remove_proc_entry("hps_stat", net->proc_net);
	free_percpu(hn->stats);
	hn->stats = NULL;
}
