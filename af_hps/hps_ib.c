// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * RDMA device layer: an ib_client that gives every device one protection
 * domain and a completion queue, polled in softirq and shared by all
 * AF_HPS connections on the device. Connections reserve CQ entries for
 * their QP's send and receive queues (drain WRs included). When every
 * entry of the device's CQs is reserved, the next connection gets a new
 * shared CQ, up to max_cqs of them (a device's CQs are bounded: rxe's hold
 * 32,767 entries, some 800 connection ends' worth); never one per
 * connection, which is what sank SDP. A connection that does not fit
 * then fails with ENOBUFS.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>

#include "hps.h"

static struct ib_client hps_ib_client;
static LIST_HEAD(hps_dev_list);		/* protected by hps_dev_mutex */
static DEFINE_MUTEX(hps_dev_mutex);
/* iWARP devices among them: see hps_ib_have_iwarp() */
static atomic_t hps_iwarp_devs = ATOMIC_INIT(0);

static unsigned int hps_max_cqs = 32;

static int hps_max_cqs_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int err = kstrtouint(val, 0, &n);

	if (err)
		return err;
	if (n < 1 || n > HPS_DEV_CQS_MAX)
		return -EINVAL;
	WRITE_ONCE(hps_max_cqs, n);
	return 0;
}

static const struct kernel_param_ops hps_max_cqs_ops = {
	.set	= hps_max_cqs_set,
	.get	= param_get_uint,
};
module_param_cb(max_cqs, &hps_max_cqs_ops, &hps_max_cqs, 0644);
MODULE_PARM_DESC(max_cqs, "completion queues a device may get, 1-64 (32)");

static void hps_dev_release(struct kref *ref)
{
	struct hps_dev *dev = container_of(ref, struct hps_dev, ref);
	struct completion *released = dev->released;
	int i;

	for (i = 0; i < dev->ncqs; i++)
		ib_free_cq(dev->cqs[i].cq);
	ib_dealloc_pd(dev->pd);
	mutex_destroy(&dev->cq_mutex);
	kfree(dev);
	if (released)
		complete(released);
}

/**
 * hps_dev_put() - drop a device reference
 * @dev: the device
 *
 * The last one frees its CQs and PD: see hps_ib_remove_one().
 *
 * Context: process, may sleep.
 */
void hps_dev_put(struct hps_dev *dev)
{
	kref_put(&dev->ref, hps_dev_release);
}

/**
 * hps_dev_get() - find the AF_HPS state of an RDMA device
 * @ibdev: the device
 *
 * Context: process, may sleep.
 * Return: a referenced device, or NULL if AF_HPS does not use @ibdev or it
 * is going away.
 */
struct hps_dev *hps_dev_get(struct ib_device *ibdev)
{
	struct hps_dev *dev, *found = NULL;

	might_sleep();
	mutex_lock(&hps_dev_mutex);
	list_for_each_entry(dev, &hps_dev_list, list) {
		if (dev->ibdev == ibdev && !READ_ONCE(dev->dead)) {
			kref_get(&dev->ref);
			found = dev;
			break;
		}
	}
	mutex_unlock(&hps_dev_mutex);
	return found;
}

/*
 * Reserve @ncqe entries for @hs on the first of @dev's first @limit CQs
 * with room for them, and put @hs on the device's list, in one go: a
 * device that is being removed aborts every connection on its list, so
 * none may join it after its removal looked.
 * Context: dev->lock held.
 * Return: 0, -ENODEV if @dev is being removed, or -ENOSPC if no CQ has
 * room.
 */
static int hps_dev_cq_take(struct hps_dev *dev, struct hps_sock *hs,
			   int ncqe, int limit)
{
	int i;

	lockdep_assert_held(&dev->lock);
	if (dev->dead)
		return -ENODEV;
	for (i = 0; i < min(dev->ncqs, limit); i++) {
		struct hps_cq *c = &dev->cqs[i];

		if (c->size - c->used >= ncqe) {
			c->used += ncqe;
			list_add_tail(&hs->dev_node, &dev->conns);
			hs->cq = c;
			hs->cq_reserved = ncqe;
			hs->dev = dev;
			return 0;
		}
	}
	return -ENOSPC;
}

/* Entries of a new CQ of the device: as many as it allows, up to ours. */
static int hps_dev_cq_size(struct hps_dev *dev)
{
	return min(dev->ibdev->attrs.max_cqe, HPS_CQ_MAX);
}

/*
 * A new CQ for the device's @n-th, on its completion vector (n modulo
 * the device's vectors: on hardware they interrupt different CPUs).
 * Context: process.
 * Return: the CQ or an ERR_PTR().
 */
static struct ib_cq *hps_dev_cq_alloc(struct hps_dev *dev, int n)
{
	struct ib_device *ibdev = dev->ibdev;

	return ib_alloc_cq(ibdev, dev, hps_dev_cq_size(dev),
			   n % max(ibdev->num_comp_vectors, 1),
			   IB_POLL_SOFTIRQ);
}

/* The CQs a device may use now: max_cqs, and the device's own limit. */
static int hps_dev_cq_limit(struct hps_dev *dev)
{
	return min_t(int, READ_ONCE(hps_max_cqs), dev->ibdev->attrs.max_cq);
}

/* @cq, of @size entries, becomes the device's next CQ. dev->lock held. */
static void hps_dev_cq_add(struct hps_dev *dev, struct ib_cq *cq, int size)
{
	struct hps_cq *c = &dev->cqs[dev->ncqs];

	lockdep_assert_held(&dev->lock);
	c->cq = cq;
	c->size = size;
	c->used = 0;
	dev->ncqs++;
}

/*
 * hps_dev_cq_take() under the device's lock: -ENOSPC if a new CQ may
 * still be made, -ENOBUFS if not.
 */
static int hps_dev_cq_try(struct hps_dev *dev, struct hps_sock *hs,
			  int ncqe, int limit)
{
	int err;

	spin_lock_bh(&dev->lock);
	err = hps_dev_cq_take(dev, hs, ncqe, limit);
	if (err == -ENOSPC && dev->ncqs >= limit)
		err = -ENOBUFS;
	spin_unlock_bh(&dev->lock);
	return err;
}

/**
 * hps_dev_reserve() - reserve CQ entries for a connection
 * @dev: the device, referenced by the caller; the reference moves to @hs
 * @hs: the connection
 * @ncqe: entries needed
 *
 * On the first of the device's CQs with room (of the first max_cqs: a
 * lower max_cqs leaves the others to the connections on them); with none,
 * on a new one, while the device has fewer than max_cqs.
 *
 * Context: process, may sleep (making a CQ); the socket lock held.
 * Return: 0, -ENOBUFS if no CQ has room and no more may be made (or the
 * device could not make one), or -ENODEV if @dev is being removed.
 */
int hps_dev_reserve(struct hps_dev *dev, struct hps_sock *hs, int ncqe)
{
	int limit = hps_dev_cq_limit(dev), size = hps_dev_cq_size(dev);
	struct ib_cq *cq;
	int err;

	might_sleep();
	if (ncqe > size)
		return -ENOBUFS;	/* more than a whole CQ: never fits */
	err = hps_dev_cq_try(dev, hs, ncqe, limit);
	if (err != -ENOSPC)
		return err;

	mutex_lock(&dev->cq_mutex);
	err = hps_dev_cq_try(dev, hs, ncqe, limit);	/* made meanwhile? */
	if (err != -ENOSPC)
		goto out_unlock;
	cq = hps_dev_cq_alloc(dev, dev->ncqs);
	if (IS_ERR(cq)) {
		pr_warn_ratelimited("%s: no completion queue %d: %ld\n",
				    dev_name(&dev->ibdev->dev), dev->ncqs + 1,
				    PTR_ERR(cq));
		err = -ENOBUFS;
		goto out_unlock;
	}
	spin_lock_bh(&dev->lock);
	hps_dev_cq_add(dev, cq, size);	/* freed with the device, even dead */
	err = hps_dev_cq_take(dev, hs, ncqe, dev->ncqs);
	spin_unlock_bh(&dev->lock);
	if (!err)
		pr_info("%s: completion queue %d (%d entries)\n",
			dev_name(&dev->ibdev->dev), dev->ncqs, size);
out_unlock:
	mutex_unlock(&dev->cq_mutex);
	return err;
}

/**
 * hps_dev_unreserve() - give back a connection's CQ entries and device
 * @hs: the connection; its QP must be destroyed
 *
 * Context: process.
 */
void hps_dev_unreserve(struct hps_sock *hs)
{
	struct hps_dev *dev = hs->dev;

	might_sleep();
	if (!dev)
		return;
	spin_lock_bh(&dev->lock);
	hs->cq->used -= hs->cq_reserved;
	list_del_init(&hs->dev_node);
	spin_unlock_bh(&dev->lock);
	hs->cq = NULL;
	hs->cq_reserved = 0;
	hs->dev = NULL;
	hps_dev_put(dev);
}

/**
 * hps_dev_hold() - another reference to a device a connection uses
 * @dev: the device, referenced by the caller
 *
 * Context: any.
 */
void hps_dev_hold(struct hps_dev *dev)
{
	kref_get(&dev->ref);
}

/*
 * Busy polling (hps_rx_busy_poll()) takes a shared CQ from its softirq
 * poller as NAPI busy polling takes a device queue from NAPI: only while
 * the softirq poller does not have it, and by the same mark. The softirq
 * poller has the CQ from the completion event that schedules it
 * (irq_poll_sched() sets IRQ_POLL_F_SCHED) until it has handled what was
 * there (irq_poll_complete() clears the bit, then ib_poll_handler()
 * re-arms the CQ); a busy poller sets that bit itself. So a CQ's
 * completions are never handled on two CPUs at once: their order is each
 * connection's byte order, which ib_process_cq_direct() on a softirq CQ
 * alone would not keep ("may trigger concurrent processing"). While a busy
 * poller has the CQ, its completion events do not schedule the softirq
 * poller (irq_poll_sched() finds the bit set) and nothing re-arms it: the
 * busy poller handles every connection's completions, in their order.
 * That relies on irq_poll's invariant that a struct irq_poll is on a CPU's
 * list only while its IRQ_POLL_F_SCHED bit is set (irq_poll_sched() adds
 * it after setting the bit, __irq_poll_complete() removes it before
 * clearing it): a busy poller that set the bit has an iop on no list.
 * ib_free_cq() waits for the bit to clear (irq_poll_disable()); a busy
 * poller holds a device reference, without which its hps_cq_busy_put()
 * could touch a freed CQ, and the CQs are freed with the last one.
 */

/**
 * hps_cq_busy_get() - take a shared CQ from its softirq poller
 * @c: the CQ
 *
 * Context: preemption disabled until hps_cq_busy_put() (hps_busy_hold()):
 * a busy poller that slept with the CQ would stall every connection on
 * it. On PREEMPT_RT the holder stays preemptible, as a NAPI busy poller
 * does there, since the completion handlers' spinlocks sleep.
 * Return: true if the caller has the CQ now, false if the softirq poller
 * (or another busy poller) has it.
 */
bool hps_cq_busy_get(struct hps_cq *c)
{
	struct irq_poll *iop = &c->cq->iop;

	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		lockdep_assert_preemption_disabled();
	if (WARN_ON_ONCE(c->cq->poll_ctx != IB_POLL_SOFTIRQ))
		return false;
	/* look first, as napi_busy_loop(): spinners share the line */
	if (READ_ONCE(iop->state) & (BIT(IRQ_POLL_F_SCHED) |
				     BIT(IRQ_POLL_F_DISABLE)))
		return false;
	return !test_and_set_bit_lock(IRQ_POLL_F_SCHED, &iop->state);
}

/**
 * hps_cq_busy_poll() - handle completions of a CQ the caller has
 * @c: the CQ, taken with hps_cq_busy_get()
 * @budget: completions to handle at most
 *
 * The completion handlers run with BHs disabled, as they do in softirq.
 *
 * Context: process, under hps_busy_hold().
 * Return: completions handled.
 */
int hps_cq_busy_poll(struct hps_cq *c, int budget)
{
	int n;

	local_bh_disable();
	n = ib_process_cq_direct(c->cq, budget);
	local_bh_enable();
	return n;
}

/**
 * hps_cq_busy_put() - give a CQ back to its softirq poller
 * @c: the CQ, taken with hps_cq_busy_get()
 *
 * As ib_poll_handler() ends: re-arm the CQ, and schedule the softirq
 * poller for completions that came since the last poll (the completion
 * events they raised found the CQ taken, or none was armed).
 *
 * Context: process, under hps_busy_hold().
 */
void hps_cq_busy_put(struct hps_cq *c)
{
	struct ib_cq *cq = c->cq;

	/* BHs off from here, as ib_poll_handler() runs: not preempted on RT */
	local_bh_disable();
	clear_bit_unlock(IRQ_POLL_F_SCHED, &cq->iop.state);
	if (ib_req_notify_cq(cq, IB_CQ_NEXT_COMP |
			     IB_CQ_REPORT_MISSED_EVENTS) > 0)
		irq_poll_sched(&cq->iop);
	local_bh_enable();
}

static int hps_ib_add_one(struct ib_device *ibdev)
{
	struct hps_dev *dev;
	struct ib_cq *cq;
	int err, size;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->ibdev = ibdev;
	dev->sig_large = ibdev->ops.driver_id == RDMA_DRIVER_SIW;
	spin_lock_init(&dev->lock);
	mutex_init(&dev->cq_mutex);
	INIT_LIST_HEAD(&dev->conns);
	kref_init(&dev->ref);

	dev->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(dev->pd)) {
		err = PTR_ERR(dev->pd);
		goto out_free;
	}
	cq = hps_dev_cq_alloc(dev, 0);
	if (IS_ERR(cq)) {
		err = PTR_ERR(cq);
		goto out_dealloc_pd;
	}
	size = hps_dev_cq_size(dev);
	spin_lock_bh(&dev->lock);
	hps_dev_cq_add(dev, cq, size);
	spin_unlock_bh(&dev->lock);

	dev->iwarp = rdma_protocol_iwarp(ibdev, rdma_start_port(ibdev));
	if (dev->iwarp)
		atomic_inc(&hps_iwarp_devs);
	mutex_lock(&hps_dev_mutex);
	list_add_tail(&dev->list, &hps_dev_list);
	mutex_unlock(&hps_dev_mutex);
	ib_set_client_data(ibdev, &hps_ib_client, dev);
	pr_info("using %s (%d CQ entries)\n", dev_name(&ibdev->dev), size);
	return 0;

out_dealloc_pd:
	ib_dealloc_pd(dev->pd);
out_free:
	mutex_destroy(&dev->cq_mutex);
	kfree(dev);
	return err;
}

/*
 * The device goes: abort every connection on it, then wait until the last
 * reference is dropped (connd destroyed their QPs, and a zero-copy writer
 * unmapped its pages) and the CQ and PD are freed, all before this
 * returns and the core frees the device. Sockets on it without a QP
 * (listeners, sockets only bound, connects still resolving) are rdma_cm's
 * DEVICE_REMOVAL business (hps_cm_dev_gone()), which comes after this.
 */
static void hps_ib_remove_one(struct ib_device *ibdev, void *client_data)
{
	DECLARE_COMPLETION_ONSTACK(released);
	struct hps_dev *dev = client_data;
	struct hps_sock *hs;

	mutex_lock(&hps_dev_mutex);
	list_del(&dev->list);
	mutex_unlock(&hps_dev_mutex);
	if (dev->iwarp)
		atomic_dec(&hps_iwarp_devs);

	spin_lock_bh(&dev->lock);
	dev->dead = true;
	dev->released = &released;
	list_for_each_entry(hs, &dev->conns, dev_node)
		hps_conn_error_why(hs, ECONNABORTED, HPS_AB_DEVICE);
	spin_unlock_bh(&dev->lock);
	hps_dev_put(dev);	/* the device list's */
	wait_for_completion(&released);
}

static struct ib_client hps_ib_client = {
	.name	= "af_hps",
	.add	= hps_ib_add_one,
	.remove	= hps_ib_remove_one,
};

/**
 * hps_ib_have_iwarp() - is an iWARP device in use?
 *
 * Their drivers bind TCP sockets to the ports rdma_cm chose, which must
 * then be free in the TCP stack as well (hps_cm_bind_held()). A device
 * added between a connect()'s bind and its address resolution is not
 * known to the bind: then the driver's own bind may fail, and with it
 * the connect() (EADDRINUSE), once in a while.
 *
 * Context: any.
 * Return: true if one is.
 */
bool hps_ib_have_iwarp(void)
{
	return atomic_read(&hps_iwarp_devs) > 0;
}

/**
 * hps_ib_register() - start using RDMA devices
 *
 * Return: 0 or -errno.
 */
int hps_ib_register(void)
{
	return ib_register_client(&hps_ib_client);
}

/**
 * hps_ib_unregister() - stop using RDMA devices
 */
void hps_ib_unregister(void)
{
	ib_unregister_client(&hps_ib_client);
}
