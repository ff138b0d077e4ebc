// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Memory accounting, per network namespace, after TCP's tcp_mem: pages are
 * charged to a namespace before they are allocated for it and uncharged
 * when they are freed. Today that is each connection's receive and send
 * bounce buffers (hps_wr.c). net.hps.mem (Documentation/sysctl.rst) gives
 * three thresholds in pages, low <= pressure <= high:
 *
 *  - above pressure the namespace enters memory pressure, and stays in it
 *    until its total falls below low: meanwhile new connections get the
 *    smallest window the protocol allows (HPS_CREDITS_MIN buffers each
 *    way; hps_conn_params() in hps_cm.c), but for buffer sizes the
 *    application set itself (SO_RCVBUF, SO_SNDBUF);
 *  - a charge that would take the total above high fails with -ENOBUFS:
 *    that connection is not set up, the others go on.
 *
 * The total is one atomic_long_t per namespace (hps_net.mem_allocated),
 * which no charge takes above high (a write of net.hps.mem may lower high
 * below it): a charge is a compare-and-exchange loop, so two
 * charges racing for the last pages cannot both succeed, and a failed one
 * leaves no trace in the total. Nothing here takes a lock or sleeps; the
 * helpers may be called in any context.
 *
 * The pressure flag (hps_net.mem_flags) is a hint: it is set or cleared
 * after the total changed, each change looking at its own new total, so
 * a connection set up at the same moment may see the state just before,
 * and two changes racing may leave it wrong until the next one (a charge
 * that took the total above pressure sets it, an uncharge racing with it
 * that saw a total below low clears it, in either order). The next
 * charge, uncharge or write of net.hps.mem sets it right again.
 *
 * With low 0 pressure never ends once entered: the total is never below
 * 0. Only a write of net.hps.mem with a low above the total ends it.
 */

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/mm.h>

#include "hps.h"

/* Enter or leave pressure after the total changed to @allocated. */
static void hps_mem_update_pressure(struct hps_net *hn,
				    unsigned long allocated)
{
	if (allocated > READ_ONCE(hn->mem[HPS_MEM_PRESSURE])) {
		if (!test_and_set_bit(HPS_MEM_F_PRESSURE, &hn->mem_flags))
			hps_net_stat_inc(hn, HPS_STAT_MEM_PRESSURE_ENTRIES);
	} else if (allocated < READ_ONCE(hn->mem[HPS_MEM_LOW]) &&
		   test_bit(HPS_MEM_F_PRESSURE, &hn->mem_flags)) {
		clear_bit(HPS_MEM_F_PRESSURE, &hn->mem_flags);
	}
}

/**
 * hps_mem_charge() - charge pages to a namespace before allocating them
 * @hn: the namespace's AF_HPS state
 * @pages: how many
 *
 * Fails, charging nothing, if the namespace's total would go above the
 * high threshold of net.hps.mem (counted in mem_limit_failures); may make
 * it enter memory pressure. Undo with hps_mem_uncharge() of as many pages.
 *
 * Context: any; takes no lock.
 * Return: 0, or -ENOBUFS at the limit.
 */
int hps_mem_charge(struct hps_net *hn, unsigned long pages)
{
	unsigned long high = READ_ONCE(hn->mem[HPS_MEM_HIGH]);
	long old = atomic_long_read(&hn->mem_allocated);
	unsigned long new;

	do {
		/* old is never negative; high at most LONG_MAX */
		if (pages > high || (unsigned long)old > high - pages) {
			hps_net_stat_inc(hn, HPS_STAT_MEM_LIMIT_FAILURES);
			return -ENOBUFS;
		}
		new = (unsigned long)old + pages;
	} while (!atomic_long_try_cmpxchg(&hn->mem_allocated, &old,
					  (long)new));
	hps_mem_update_pressure(hn, new);
	return 0;
}

/**
 * hps_mem_uncharge() - give back pages charged with hps_mem_charge()
 * @hn: the namespace they were charged to
 * @pages: how many; 0 does nothing
 *
 * May end the namespace's memory pressure.
 *
 * Context: any; takes no lock.
 */
void hps_mem_uncharge(struct hps_net *hn, unsigned long pages)
{
	long old = atomic_long_read(&hn->mem_allocated), new;

	if (!pages)
		return;
	/*
	 * One compare-and-exchange, as a charge: an uncharge of more than
	 * is charged (twice: a bug, reported once) leaves the total at 0,
	 * never negative, which every later charge would read as far above
	 * high (ENOBUFS for good), and two of them racing cannot add back
	 * what the other took.
	 */
	do {
		new = old - (long)pages;
		if (new < 0)
			new = 0;
	} while (!atomic_long_try_cmpxchg(&hn->mem_allocated, &old, new));
	WARN_ON_ONCE(old < (long)pages);
	hps_mem_update_pressure(hn, new);
}

/**
 * hps_mem_pressure() - is a namespace under memory pressure?
 * @hn: the namespace's AF_HPS state
 *
 * Context: any.
 * Return: true from when its total went above net.hps.mem's pressure
 * threshold until it fell below the low one.
 */
bool hps_mem_pressure(struct hps_net *hn)
{
	return test_bit(HPS_MEM_F_PRESSURE, &hn->mem_flags);
}

/**
 * hps_mem_recheck() - enter or leave pressure after net.hps.mem changed
 * @hn: the namespace's AF_HPS state
 *
 * New thresholds take effect at once, not at the next charge.
 *
 * Context: any.
 */
void hps_mem_recheck(struct hps_net *hn)
{
	long allocated = atomic_long_read(&hn->mem_allocated);

	if (allocated >= 0)
		hps_mem_update_pressure(hn, allocated);
}

/**
 * hps_mem_net_init() - a new namespace's accounting and net.hps.mem
 * @hn: its AF_HPS state, not yet published
 * @from: the thresholds to start from (init_net's, for any other
 *	  namespace), read under hps_mem_mutex by the caller; or NULL for
 *	  the computed defaults (init_net itself)
 *
 * The computed defaults, from the memory the kernel could give out
 * (nr_free_buffer_pages(): the managed pages of the lowmem zones above
 * their high watermarks): low 1/16 of it, pressure 1/8, high 1/4, at
 * least 128 pages each: above TCP's tcp_mem (3/64, 1/16 and 3/32 of it),
 * since AF_HPS takes a connection's buffers whole when it is set up, not
 * as data arrives. Documentation/sysctl.rst has the test bed's figures.
 *
 * Context: pernet init.
 */
void hps_mem_net_init(struct hps_net *hn, const unsigned long *from)
{
	unsigned long limit;
	int i;

	if (from) {
		for (i = 0; i < HPS_MEM_NR; i++)
			hn->mem[i] = from[i];
	} else {
		limit = max(nr_free_buffer_pages() / 16, 128UL);
		hn->mem[HPS_MEM_LOW] = limit;
		hn->mem[HPS_MEM_PRESSURE] = limit * 2;
		hn->mem[HPS_MEM_HIGH] = limit * 4;
	}
	atomic_long_set(&hn->mem_allocated, 0);
	hn->mem_flags = 0;
}

/**
 * hps_mem_net_exit() - check a namespace's accounting as it goes
 * @hn: its AF_HPS state; the namespace has no AF_HPS socket left
 *
 * Every charge must have been given back by then: warns once if not.
 *
 * Context: pernet exit.
 */
void hps_mem_net_exit(struct hps_net *hn)
{
	WARN_ONCE(atomic_long_read(&hn->mem_allocated),
		  "af_hps: %ld pages still charged to a namespace at its exit\n",
		  atomic_long_read(&hn->mem_allocated));
}
