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
 * and is about to act on it, or has dropped a lock other tasks may take,
 * or stands for a slow peer (PORTQ_ANSWER); see
 * Documentation/reliability.rst for which test uses which.
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

/*
 * Writing anything to /sys/module/af_hps/parameters/dump_socks logs every
 * AF_HPS socket of the initial namespace: what a test that found sockets
 * left behind shows. A second line per socket gives its credit state, read
 * without hs->lock: a snapshot that may be torn, for a socket that waits
 * for credits (a stuck FIN), not for one in the middle of a transfer.
 */
static int hps_inject_dump(const char *val, const struct kernel_param *kp)
{
	struct hps_net *hn = hps_net(&init_net);
	struct hps_sock *hs;

	spin_lock_bh(&hn->socks_lock);
	hlist_for_each_entry(hs, &hn->socks, net_node)
		pr_info("sock %p: state %d refs %d flags %#lx work %#lx cm_id %p qp %p dev %p parent %p dead %d sock %p pending %d\n",
			hs, READ_ONCE(hs->sk.sk_state),
			refcount_read(&hs->sk.sk_refcnt), READ_ONCE(hs->flags),
			READ_ONCE(hs->connd_work), hs->cm_id, hs->qp, hs->dev,
			hs->parent, sock_flag(&hs->sk, SOCK_DEAD),
			hs->sk.sk_socket, hs->npending);
	hlist_for_each_entry(hs, &hn->socks, net_node)
		pr_info("sock %p: credits %u of %u reserve %d, rx ready %u (%u bytes) pending %u, tx posted %u done %u queued %u, ctrl %u/%u, shutdown %d\n",
			hs, READ_ONCE(hs->tx_credits),
			READ_ONCE(hs->peer_credits_max),
			READ_ONCE(hs->peer_reserve),
			READ_ONCE(hs->rx_nready),
			READ_ONCE(hs->rx_queued), READ_ONCE(hs->rx_pending),
			READ_ONCE(hs->tx_posted), READ_ONCE(hs->tx_done),
			READ_ONCE(hs->tx_queued), READ_ONCE(hs->ctrl_head),
			READ_ONCE(hs->ctrl_done), READ_ONCE(hs->sk.sk_shutdown));
	spin_unlock_bh(&hn->socks_lock);
	return 0;
}

static const struct kernel_param_ops hps_inject_dump_ops = {
	.set	= hps_inject_dump,
};
module_param_cb(dump_socks, &hps_inject_dump_ops, NULL, 0200);
MODULE_PARM_DESC(dump_socks, "test builds: write to log every socket");
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
 * A signal ends the sleep early, as it would end the wait it stands for.
 *
 * Context: process, may sleep; no spinlock held.
 */
void hps_inject_sleep(enum hps_inject_point point)
{
	unsigned int ms = hps_inject_ms(point);

	might_sleep();
	if (ms)
		msleep_interruptible(ms);
}

/**
 * hps_inject_sleep_once() - sleep at @point if it is armed, and disarm it
 * @point: the injection point the caller has reached
 *
 * For a point only the first task to pass should stop at (one slow
 * connection setup among many): the task that disarms it sleeps.
 *
 * Context: process, may sleep; no spinlock held.
 */
void hps_inject_sleep_once(enum hps_inject_point point)
{
	unsigned int ms = hps_inject_ms(point);

	might_sleep();
	if (ms && cmpxchg(&hps_inject_point, point, HPS_INJ_NONE) == point)
		msleep_interruptible(ms);
}

/*
 * connd_make_it_fail: while it is 1, the connection work runs with
 * make_it_fail set, so that failslab and fail_page_alloc with task-filter
 * fail its allocations (and those of the RDMA core it calls) and nobody
 * else's: debug_failslab.sh. Per task, as /proc/PID/make-it-fail is; the
 * worker thread is back to 0 when the work ends.
 */
static bool hps_inject_connd_fail;
module_param_named(connd_make_it_fail, hps_inject_connd_fail, bool, 0600);
MODULE_PARM_DESC(connd_make_it_fail, "test builds: fault injection fails the connection work's allocations");

/**
 * hps_inject_connd() - the connection work starts or ends
 * @start: true when it starts, false when it ends
 *
 * Context: the connection work (hps_connd_work()).
 */
void hps_inject_connd(bool start)
{
#ifdef CONFIG_FAULT_INJECTION
	if (start)
		current->make_it_fail = READ_ONCE(hps_inject_connd_fail);
	else
		current->make_it_fail = 0;
#endif
}

/*
 * Deferred completions: handled in the order they came, from a timer, in
 * softirq as from the CQ. While any is queued, or the queue is being
 * replayed, later ones of the socket queue up behind it, so that the
 * handlers see the QP's completions in order, one at a time, as from the
 * CQ. The queue holds every completion that can be outstanding at once
 * (hps_wr_setup()'s send queue); it is allocated on first use.
 */
struct hps_inject_wc {
	struct ib_wc		wc;
	struct ib_cq		*cq;
	void			(*done)(struct ib_cq *cq, struct ib_wc *wc);
};

static void hps_inject_replay(struct hps_sock *hs)
{
	struct hps_inject_wc e;
	bool more;

	for (;;) {
		spin_lock(&hs->inj_lock);
		more = hs->inj_head != hs->inj_tail;
		if (more)
			e = hs->inj_q[hs->inj_head++ % hs->inj_qlen];
		else
			hs->inj_busy = false;
		spin_unlock(&hs->inj_lock);
		if (!more)
			break;
		e.done(e.cq, &e.wc);
	}
}

static void hps_inject_wc_timer(struct timer_list *t)
{
	struct hps_sock *hs = from_timer(hs, t, inj_timer);

	spin_lock(&hs->inj_lock);
	hs->inj_busy = true;
	hs->inj_cpu = smp_processor_id();
	spin_unlock(&hs->inj_lock);
	hps_inject_replay(hs);
}

/**
 * hps_inject_init() - the injection state of a new socket
 * @hs: the socket
 */
void hps_inject_init(struct hps_sock *hs)
{
	spin_lock_init(&hs->inj_lock);
	timer_setup(&hs->inj_timer, hps_inject_wc_timer, 0);
}

/**
 * hps_inject_defer_wc() - handle a completion late
 * @hs: the connection
 * @cq: the CQ of the completion
 * @wc: the completion; copied
 * @point: %HPS_INJ_ZC_RD_DONE (an RDMA Read) or %HPS_INJ_TX_RESERVE (a
 *	   DATA send: handled a hundred times inject_ms late), or
 *	   %HPS_INJ_NONE: a send queue completion that is late only behind
 *	   others that are (a control message's, a fence's: each completes
 *	   the DATA before it, hps_tx_retire())
 * @done: its handler, called again with the copy later
 *
 * As if the peer, or the device, took that much longer. The handler runs
 * from a timer; hps_inject_flush() runs what is left at once when the
 * connection is torn down, before the QP goes.
 *
 * Context: softirq (CQ polling, or the replay itself).
 * Return: true if the completion was deferred: the handler returns.
 */
bool hps_inject_defer_wc(struct hps_sock *hs, struct ib_cq *cq,
			 struct ib_wc *wc, enum hps_inject_point point,
			 void (*done)(struct ib_cq *cq, struct ib_wc *wc))
{
	unsigned int ms = point == HPS_INJ_NONE ? 0 : hps_inject_ms(point);
	bool queued = false;

	if (point == HPS_INJ_TX_RESERVE)
		ms *= 100;
	spin_lock(&hs->inj_lock);
	if (!hs->inj_q && ms) {
		u32 n = roundup_pow_of_two(hs->ntx + HPS_NCTRL + 4);

		hs->inj_q = kcalloc(n, sizeof(*hs->inj_q), GFP_ATOMIC);
		if (hs->inj_q)
			hs->inj_qlen = n;
	}
	/* the replay's own calls go through; anything else waits its turn */
	if (hs->inj_q &&
	    !(hs->inj_busy && hs->inj_cpu == smp_processor_id()) &&
	    (ms || hs->inj_busy || hs->inj_head != hs->inj_tail) &&
	    !WARN_ON_ONCE(hs->inj_tail - hs->inj_head >= hs->inj_qlen)) {
		hs->inj_q[hs->inj_tail++ % hs->inj_qlen] =
			(struct hps_inject_wc){ *wc, cq, done };
		queued = true;
	}
	spin_unlock(&hs->inj_lock);
	if (queued && !timer_pending(&hs->inj_timer))
		mod_timer(&hs->inj_timer, jiffies + msecs_to_jiffies(ms) + 1);
	return queued;
}

/**
 * hps_inject_flush() - run the deferred completions now
 * @hs: the connection, whose QP was drained and is about to go
 *
 * Context: process.
 */
void hps_inject_flush(struct hps_sock *hs)
{
	del_timer_sync(&hs->inj_timer);
	local_bh_disable();
	hps_inject_wc_timer(&hs->inj_timer);
	local_bh_enable();
}

/**
 * hps_inject_free() - free the deferred completions' queue
 * @hs: the socket, being destroyed
 */
void hps_inject_free(struct hps_sock *hs)
{
	kfree(hs->inj_q);
	hs->inj_q = NULL;
}

/**
 * hps_inject_wait_change() - wait at @point for another context to move
 * @point: the injection point the caller has reached
 * @val: a value that context changes (read locklessly)
 *
 * Forces the interleaving a race needs: the caller, which has looked at
 * some state, waits there (up to inject_ms) until a completion handler or
 * timer has changed it under its feet.
 *
 * Context: process, may sleep; no spinlock held.
 */
void hps_inject_wait_change(enum hps_inject_point point, const u32 *val)
{
	unsigned int ms = hps_inject_ms(point);
	u32 old = READ_ONCE(*val);

	might_sleep();
	while (ms-- && READ_ONCE(*val) == old && !signal_pending(current))
		usleep_range(900, 1100);
}

static void hps_inject_qp_fatal(struct irq_work *w)
{
	struct hps_sock *hs = container_of(w, struct hps_sock, inj_irq);
	struct ib_event ev = {
		.event		= IB_EVENT_QP_FATAL,
		.element.qp	= hs->qp,
	};

	/* PREEMPT_RT runs irq_work, like drivers' interrupts, in a thread */
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		WARN_ON_ONCE(in_hardirq());
	else
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
 * interrupt on x86; a thread on PREEMPT_RT, where drivers' interrupt
 * handlers are threads too), and waits until it has run.
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
