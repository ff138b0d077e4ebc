// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * RDMA device layer: an ib_client that gives every device one protection
 * domain and one completion queue, polled in softirq and shared by all
 * AF_HPS connections on the device. Connections reserve CQ entries for
 * their QP's send and receive queues (drain WRs included); a connection
 * that does not fit fails with ENOBUFS.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/mutex.h>
#include <linux/slab.h>

#include "hps.h"

static struct ib_client hps_ib_client;
static LIST_HEAD(hps_dev_list);		/* protected by hps_dev_mutex */
static DEFINE_MUTEX(hps_dev_mutex);

static void hps_dev_release(struct kref *ref)
{
	struct hps_dev *dev = container_of(ref, struct hps_dev, ref);
	struct completion *released = dev->released;

	ib_free_cq(dev->cq);
	ib_dealloc_pd(dev->pd);
	kfree(dev);
	if (released)
		complete(released);
}

/**
 * hps_dev_put() - drop a device reference
 * @dev: the device
 *
 * The last one frees its CQ and PD: see hps_ib_remove_one().
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

/**
 * hps_dev_reserve() - reserve CQ entries for a connection
 * @dev: the device, referenced by the caller; the reference moves to @hs
 * @hs: the connection
 * @ncqe: entries needed
 *
 * Return: 0, -ENOBUFS if the CQ is full or -ENODEV if @dev is being removed.
 */
int hps_dev_reserve(struct hps_dev *dev, struct hps_sock *hs, int ncqe)
{
	int err = 0;

	spin_lock_bh(&dev->lock);
	if (dev->dead)
		err = -ENODEV;
	else if (dev->cq_used + ncqe > dev->cq_size)
		err = -ENOBUFS;
	if (!err) {
		dev->cq_used += ncqe;
		list_add_tail(&hs->dev_node, &dev->conns);
		hs->cq_reserved = ncqe;
		hs->dev = dev;
	}
	spin_unlock_bh(&dev->lock);
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
	dev->cq_used -= hs->cq_reserved;
	list_del_init(&hs->dev_node);
	spin_unlock_bh(&dev->lock);
	hs->cq_reserved = 0;
	hs->dev = NULL;
	hps_dev_put(dev);
}

static int hps_ib_add_one(struct ib_device *ibdev)
{
	struct hps_dev *dev;
	int err;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->ibdev = ibdev;
	spin_lock_init(&dev->lock);
	INIT_LIST_HEAD(&dev->conns);
	kref_init(&dev->ref);

	dev->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(dev->pd)) {
		err = PTR_ERR(dev->pd);
		goto out_free;
	}
	dev->cq_size = min(ibdev->attrs.max_cqe, HPS_CQ_MAX);
	dev->cq = ib_alloc_cq(ibdev, dev, dev->cq_size, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(dev->cq)) {
		err = PTR_ERR(dev->cq);
		goto out_dealloc_pd;
	}

	mutex_lock(&hps_dev_mutex);
	list_add_tail(&dev->list, &hps_dev_list);
	mutex_unlock(&hps_dev_mutex);
	ib_set_client_data(ibdev, &hps_ib_client, dev);
	pr_info("using %s (%d CQ entries)\n", dev_name(&ibdev->dev),
		dev->cq_size);
	return 0;

out_dealloc_pd:
	ib_dealloc_pd(dev->pd);
out_free:
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
