// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Per network namespace state: the sysctls under net.hps
 * (Documentation/sysctl.rst), the socket list, the registration cache and
 * the event counters (hps_stats.c).
 * Values are read with READ_ONCE() when a connection is set up; a change
 * affects new connections only. The registration cache's (zcopy_cache_*)
 * are read at each registration, net.hps.mem's thresholds at each charge
 * (hps_mem.c).
 */

#include <linux/mutex.h>
#include <linux/sysctl.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "hps.h"

static unsigned int hps_net_id __read_mostly;

static unsigned int hps_credits_min = HPS_CREDITS_MIN;
static unsigned int hps_credits_max = HPS_CREDITS_MAX;
static unsigned int hps_buf_min = HPS_BUF_MIN;
static unsigned int hps_buf_max = HPS_BUF_MAX;
static unsigned int hps_pct_min = 1;
static unsigned int hps_pct_max = 100;
static unsigned int hps_inline_max = HPS_INLINE_MAX;
static unsigned int hps_zc_thresh_max = HPS_ZC_THRESH_MAX;
static unsigned int hps_reg_cache_max = HPS_REG_CACHE_MAX;
static unsigned int hps_ka_max = HPS_KA_MAX_MS;
static unsigned int hps_ka_probes_max = HPS_KA_PROBES_MAX;
static int hps_mem_min = 4096;
static int hps_mem_max = 64 << 20;
static unsigned long hps_mem_pages_max = HPS_MEM_MAX;

/*
 * Serialises writers of net.hps.mem (hps_proc_doulongvec_mem()), and
 * those of init_net's with the namespaces that copy or check against it
 * (hps_mem_net_defaults()).
 */
static DEFINE_MUTEX(hps_mem_mutex);

/*
 * net.hps.mem: three unsigned longs, low <= pressure <= high, each at most
 * HPS_MEM_MAX (table->extra2) and, in a namespace other than init_net, at
 * most init_net's value of the moment: a namespace's root (the root of a
 * user namespace too) cannot make its limit more lenient than the host's.
 * The values are parsed into a copy and stored only if the whole triple
 * passes, else -EINVAL and the old values stay; a write of fewer than
 * three values keeps the others, and the triple they make is checked.
 * New values take effect at once (hps_mem_recheck()). Readers take the
 * values one by one, without the mutex.
 * Context: process (a sysctl read or write).
 */
static int hps_proc_doulongvec_mem(hps_ctl_table_t *table, int write,
				   void *buffer, size_t *lenp, loff_t *ppos)
{
	unsigned long *mem = table->data;
	struct hps_net *hn = container_of(mem, struct hps_net, mem[0]);
	struct hps_net *init_hn = hps_net(&init_net);
	unsigned long v[HPS_MEM_NR];
	struct ctl_table tmp = {
		.data	= v,
		.maxlen	= sizeof(v),
		.mode	= table->mode,
		.extra1	= table->extra1,
		.extra2	= table->extra2,
	};
	int err, i;

	might_sleep();
	mutex_lock(&hps_mem_mutex);
	for (i = 0; i < HPS_MEM_NR; i++)
		v[i] = READ_ONCE(mem[i]);
	err = proc_doulongvec_minmax(&tmp, write, buffer, lenp, ppos);
	if (!err && write) {
		if (v[HPS_MEM_LOW] > v[HPS_MEM_PRESSURE] ||
		    v[HPS_MEM_PRESSURE] > v[HPS_MEM_HIGH])
			err = -EINVAL;
		/* init_net's values cannot change meanwhile: the mutex */
		for (i = 0; !err && hn != init_hn && i < HPS_MEM_NR; i++)
			if (v[i] > init_hn->mem[i])
				err = -EINVAL;
		for (i = 0; !err && i < HPS_MEM_NR; i++)
			WRITE_ONCE(mem[i], v[i]);
		if (!err)
			hps_mem_recheck(hn);
	}
	mutex_unlock(&hps_mem_mutex);
	return err;
}

/*
 * A new namespace's net.hps.mem: init_net's computed defaults
 * (hps_mem_net_init()), and for any other namespace init_net's values of
 * the moment, the most it may have (hps_proc_doulongvec_mem()). init_net's
 * state is set up first: it is the first namespace of the list
 * register_pernet_subsys() goes through, and a namespace created later
 * waits for the registration (pernet_ops_rwsem).
 * Context: pernet init (process).
 */
static void hps_mem_net_defaults(struct net *net, struct hps_net *hn)
{
	might_sleep();
	if (net_eq(net, &init_net)) {
		hps_mem_net_init(hn, NULL);
		return;
	}
	mutex_lock(&hps_mem_mutex);
	hps_mem_net_init(hn, hps_net(&init_net)->mem);
	mutex_unlock(&hps_mem_mutex);
}

static const struct ctl_table hps_sysctl_template[] = {
	{
		.procname	= "credits",
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= &hps_credits_min,
		.extra2		= &hps_credits_max,
	},
	{
		.procname	= "buf_size",
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= &hps_buf_min,
		.extra2		= &hps_buf_max,
	},
	{
		.procname	= "ack_thresh",
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= &hps_pct_min,
		.extra2		= &hps_pct_max,
	},
	{
		.procname	= "inline_max",
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &hps_inline_max,
	},
	{
		.procname	= "zcopy_thresh",
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &hps_zc_thresh_max,
	},
	{
		.procname	= "rmem_default",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &hps_mem_min,
		.extra2		= &hps_mem_max,
	},
	{
		.procname	= "wmem_default",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= &hps_mem_min,
		.extra2		= &hps_mem_max,
	},
	{
		.procname	= "zcopy_cache_bytes",
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &hps_reg_cache_max,
	},
	{
		.procname	= "zcopy_cache_kmap",
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{
		.procname	= "keepalive_ms",
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &hps_ka_max,
	},
	{
		.procname	= "keepalive_probes",
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= &hps_ka_probes_max,
	},
	{
		.procname	= "tcp_fallback",
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_TWO,
	},
	{
		.procname	= "mem",
		.maxlen		= sizeof_field(struct hps_net, mem),
		.mode		= 0644,
		.proc_handler	= hps_proc_doulongvec_mem,
		.extra2		= &hps_mem_pages_max,
	},
	{ }	/* sentinel */
};

/**
 * hps_net() - the AF_HPS state of a network namespace
 * @net: the namespace
 *
 * Return: its struct hps_net.
 */
struct hps_net *hps_net(const struct net *net)
{
	return net_generic(net, hps_net_id);
}

static int __net_init hps_net_init(struct net *net)
{
	struct hps_net *hn = hps_net(net);
	struct ctl_table *table;
	int err;

	/* Defaults before the table is published. */
	hn->credits = 16;
	hn->buf_size = 65536;
	hn->ack_thresh = 25;	/* the sweep in performance.rst */
	hn->inline_max = 128;
	hn->zcopy_thresh = HPS_ZC_THRESH_DEFAULT;
	hn->rmem_default = 1 << 20;
	hn->wmem_default = 1 << 20;
	hn->zcopy_cache_bytes = HPS_REG_CACHE_DEFAULT;
	hn->zcopy_cache_kmap = 1;
	hn->keepalive_ms = HPS_KA_DEFAULT_MS;
	hn->keepalive_probes = HPS_KA_PROBES_DEFAULT;
	hn->tcp_fallback = HPS_FB_SYSCTL_ASKED;
	spin_lock_init(&hn->socks_lock);
	spin_lock_init(&hn->portq_lock);
	INIT_HLIST_HEAD(&hn->socks);
	hps_reg_cache_init(&hn->reg);
	hps_mem_net_defaults(net, hn);
	err = hps_stats_net_init(net, hn);
	if (err)
		return err;

	table = kmemdup(hps_sysctl_template, sizeof(hps_sysctl_template),
			GFP_KERNEL);
	if (!table)
		goto out_stats;
	table[0].data = &hn->credits;
	table[1].data = &hn->buf_size;
	table[2].data = &hn->ack_thresh;
	table[3].data = &hn->inline_max;
	table[4].data = &hn->zcopy_thresh;
	table[5].data = &hn->rmem_default;
	table[6].data = &hn->wmem_default;
	table[7].data = &hn->zcopy_cache_bytes;
	table[8].data = &hn->zcopy_cache_kmap;
	table[9].data = &hn->keepalive_ms;
	table[10].data = &hn->keepalive_probes;
	table[11].data = &hn->tcp_fallback;
	table[12].data = hn->mem;

	hn->hdr = hps_register_net_sysctl(net, "net/hps", table,
					  ARRAY_SIZE(hps_sysctl_template) - 1);
	if (!hn->hdr)
		goto out_table;
	return 0;

out_table:
	kfree(table);
out_stats:
	hps_stats_net_exit(net, hn);
	return -ENOMEM;
}

static void __net_exit hps_net_exit(struct net *net)
{
	struct hps_net *hn = hps_net(net);
	const struct ctl_table *table = hn->hdr->ctl_table_arg;

	unregister_net_sysctl_table(hn->hdr);
	kfree(table);
	hps_reg_cache_exit(&hn->reg);
	hps_mem_net_exit(hn);
	hps_stats_net_exit(net, hn);	/* last: the cache counts */
}

static struct pernet_operations hps_net_ops = {
	.init	= hps_net_init,
	.exit	= hps_net_exit,
	.id	= &hps_net_id,
	.size	= sizeof(struct hps_net),
};

/**
 * hps_sysctl_register() - register the per-namespace state and sysctls
 *
 * Return: 0 or -errno.
 */
int hps_sysctl_register(void)
{
	return register_pernet_subsys(&hps_net_ops);
}

/**
 * hps_sysctl_unregister() - undo hps_sysctl_register()
 */
void hps_sysctl_unregister(void)
{
	unregister_pernet_subsys(&hps_net_ops);
}
