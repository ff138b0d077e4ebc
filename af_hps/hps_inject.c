// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Fault injection for the selftests, in test builds only: 'make
 * vm-modules' (what make check, make run and the benchmarks load) builds
 * af_hps.ko with CONFIG_AF_HPS_INJECT=y; plain 'make', 'make install' and
 * DKMS do not, and then none of this exists.
 *
 * A race window too narrow to hit under emulation is still a bug, so the
 * selftests widen it deterministically, as the kernel's own fault
 * injection does: a task that passes the injection point named in
 * /sys/module/af_hps/parameters/inject_point sleeps there for inject_ms
 * milliseconds (enum hps_inject_point in hps.h; 0 turns it off). Only
 * root can set them. The points are where a task has checked some state
 * and is about to act on it, or has dropped a lock other tasks may take;
 * see Documentation/reliability.rst for which test uses which.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/delay.h>
#include <linux/moduleparam.h>

#include "hps.h"

static int hps_inject_point;
module_param_named(inject_point, hps_inject_point, int, 0600);
MODULE_PARM_DESC(inject_point, "test builds: where to sleep (enum hps_inject_point)");

static unsigned int hps_inject_ms_param;
module_param_named(inject_ms, hps_inject_ms_param, uint, 0600);
MODULE_PARM_DESC(inject_ms, "test builds: how long to sleep there (ms)");

/**
 * hps_inject_ms() - is @point armed?
 * @point: the injection point the caller has reached
 *
 * Context: any.
 * Return: milliseconds to sleep there, 0 if the point is not armed.
 */
unsigned int hps_inject_ms(enum hps_inject_point point)
{
	if (READ_ONCE(hps_inject_point) != point)
		return 0;
	return min(READ_ONCE(hps_inject_ms_param), 10000U);
}

/**
 * hps_inject_sleep() - sleep at @point if it is armed
 * @point: the injection point the caller has reached
 *
 * Context: process, may sleep; no spinlock held.
 */
void hps_inject_sleep(enum hps_inject_point point)
{
	unsigned int ms = hps_inject_ms(point);

	might_sleep();
	if (ms)
		msleep(ms);
}

static void hps_inject_wc_timer(struct timer_list *t)
{
	struct hps_sock *hs = from_timer(hs, t, inj_timer);

	hs->inj_replay = true;
	hs->inj_done(hs->inj_cq, &hs->inj_wc);
	hs->inj_replay = false;
}

/**
 * hps_inject_init() - the injection state of a new socket
 * @hs: the socket
 */
void hps_inject_init(struct hps_sock *hs)
{
	timer_setup(&hs->inj_timer, hps_inject_wc_timer, 0);
}

/**
 * hps_inject_defer_wc() - handle a completion late (%HPS_INJ_ZC_RD_DONE)
 * @hs: the connection
 * @cq: the CQ of the completion
 * @wc: the completion; copied
 * @done: its handler, called again with the copy after inject_ms
 *
 * As if the peer took that much longer to answer. The handler runs from a
 * timer, in softirq as from the CQ; hps_inject_flush() runs it at once
 * when the connection is torn down, before the QP goes.
 *
 * Context: softirq (CQ polling).
 * Return: true if the completion was deferred: the handler returns.
 */
bool hps_inject_defer_wc(struct hps_sock *hs, struct ib_cq *cq,
			 struct ib_wc *wc,
			 void (*done)(struct ib_cq *cq, struct ib_wc *wc))
{
	unsigned int ms = hps_inject_ms(HPS_INJ_ZC_RD_DONE);

	if (!ms || hs->inj_replay || timer_pending(&hs->inj_timer))
		return false;
	hs->inj_wc = *wc;
	hs->inj_cq = cq;
	hs->inj_done = done;
	mod_timer(&hs->inj_timer, jiffies + msecs_to_jiffies(ms));
	return true;
}

/**
 * hps_inject_flush() - run a deferred completion now
 * @hs: the connection, whose QP was drained and is about to go
 *
 * Context: process.
 */
void hps_inject_flush(struct hps_sock *hs)
{
	if (del_timer_sync(&hs->inj_timer)) {
		local_bh_disable();
		hps_inject_wc_timer(&hs->inj_timer);
		local_bh_enable();
	}
}

static void hps_inject_qp_fatal(struct irq_work *w)
{
	struct hps_sock *hs = container_of(w, struct hps_sock, inj_irq);
	struct ib_event ev = {
		.event		= IB_EVENT_QP_FATAL,
		.element.qp	= hs->qp,
	};

	lockdep_assert_in_irq();
	hps_wr_qp_event(&ev, hs);
}

/**
 * hps_inject_qp_event() - deliver a fatal QP event from hard-IRQ context
 * @hs: the connection, socket lock held
 *
 * Hardware drivers (mlx4, mlx5) call QP event handlers from their
 * interrupt handlers; the software devices of the test bed do not. This
 * calls the handler the way those drivers do, from an irq_work (a hard
 * interrupt on x86), and waits until it has run.
 *
 * Context: process, socket lock held.
 * Return: 0, or -ENOTCONN without a QP.
 */
int hps_inject_qp_event(struct hps_sock *hs)
{
	sock_owned_by_me(&hs->sk);
	if (!hs->qp)
		return -ENOTCONN;
	init_irq_work(&hs->inj_irq, hps_inject_qp_fatal);
	irq_work_queue(&hs->inj_irq);
	irq_work_sync(&hs->inj_irq);
	return 0;
}
