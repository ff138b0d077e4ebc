// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Socket state and the connection thread.
 *
 * Lifetime: a struct hps_sock is freed when its sk_refcnt drops to zero.
 * References are held by the struct socket (until release), by the cm_id
 * (from hps_cm_create_id() until connd destroys the id), by every event
 * queued for the connection thread and by a listener's pending and
 * accept-queued children (through the child's parent pointer the other way
 * round). A QP only exists while its cm_id does, and the QP is drained
 * before it is destroyed, so completion handlers, which find the socket
 * through wc->qp->qp_context, always see a live socket.
 *
 * Locking order: socket lock -> hps_sock.lock (BH) -> hps_dev.lock (BH);
 * hps_connd.lock is a leaf, taken with interrupts off: QP events, which
 * hand work to the connection thread, come in hard-IRQ context from some
 * drivers. See hps.h for what each lock protects.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/kthread.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <net/tcp_states.h>

#include "hps.h"

#define CREATE_TRACE_POINTS
#include "hps_trace.h"

/**
 * struct hps_cm_ev - an rdma_cm event copied for the connection thread
 * @list: entry in hps_connd.events
 * @id: the cm_id of the event (for CONNECT_REQUEST the new id)
 * @sk: the socket of @id->context; holds a reference
 * @event: enum rdma_cm_event_type
 * @status: event status
 * @pdata_len: bytes in @pdata
 * @pdata: copy of the private data (hello)
 */
struct hps_cm_ev {
	struct list_head	list;
	struct rdma_cm_id	*id;
	struct sock		*sk;
	int			event;
	int			status;
	u8			pdata_len;
	u8			pdata[sizeof(struct hps_hello)];
};

/*
 * The connection thread: rdma_cm handlers and CQ handlers hand it work
 * through these lists; it runs it in process context where it may sleep,
 * take socket locks and destroy cm_ids.
 */
static struct {
	struct task_struct	*task;
	spinlock_t		lock;		/* both lists; IRQ-safe */
	struct list_head	events;		/* struct hps_cm_ev */
	struct list_head	socks;		/* hps_sock.connd_node */
	wait_queue_head_t	wq;
} hps_connd;

/*
 * A closed socket whose FIN the peer does not take (it never returns
 * credits, or never acknowledges the FIN) is aborted after HPS_FIN_TIMEOUT,
 * as TCP gives up on FIN_WAIT. Context: timer (softirq).
 */
static void hps_fin_timer(struct timer_list *t)
{
	struct sock *sk = from_timer(sk, t, sk_timer);
	struct hps_sock *hs = hps_sk(sk);

	if (!test_bit(HPS_F_FIN_DONE, &hs->flags))
		hps_abort_why(hs, ETIMEDOUT, true, HPS_AB_FIN_TIMEOUT);
	sock_put(sk);	/* from sk_reset_timer() */
}

static void hps_sock_destruct(struct sock *sk)
{
	struct hps_sock *hs = hps_sk(sk);
	struct hps_net *hn = hps_net(sock_net(sk));

	spin_lock_bh(&hn->socks_lock);
	hlist_del(&hs->net_node);
	spin_unlock_bh(&hn->socks_lock);
	WARN_ON_ONCE(hs->cm_id || hs->qp || hs->dev || hs->port_hold);
	__hps_wr_free_bufs(hs);
	hps_inject_free(hs);
}

/**
 * hps_sock_init() - initialise the AF_HPS part of a new socket
 * @hs: the socket, fresh from sk_alloc() and sock_init_data()
 */
void hps_sock_init(struct hps_sock *hs)
{
	struct sock *sk = &hs->sk;
	struct hps_net *hn = hps_net(sock_net(sk));

	spin_lock_init(&hs->lock);
	INIT_LIST_HEAD(&hs->dev_node);
	INIT_LIST_HEAD(&hs->accept_list);
	INIT_LIST_HEAD(&hs->accept_node);
	INIT_LIST_HEAD(&hs->connd_node);
	INIT_LIST_HEAD(&hs->rx_ready);
	INIT_WORK(&hs->connect_work, hps_cm_connect_work);
	sk->sk_destruct = hps_sock_destruct;
	timer_setup(&sk->sk_timer, hps_fin_timer, 0);
	timer_setup(&hs->nudge_timer, hps_tx_nudge, 0);
	timer_setup(&hs->ka_timer, hps_tx_keepalive, 0);
	timer_setup(&hs->zc_timer, hps_zc_rd_timeout, 0);
	hs->ka_cqe.done = hps_tx_ka_done;
	hps_inject_init(hs);
	sk->sk_protocol = IPPROTO_TCP;
	sk->sk_state = TCP_CLOSE;
	sk->sk_rcvbuf = READ_ONCE(hn->rmem_default);
	sk->sk_sndbuf = READ_ONCE(hn->wmem_default);
	hs->zc_thresh = READ_ONCE(hn->zcopy_thresh);
	/* SO_KEEPALIVE starts on where the namespace probes (af_hps.rst) */
	hs->ka_on = READ_ONCE(hn->keepalive_ms) != 0;
	sock_valbool_flag(sk, SOCK_KEEPOPEN, hs->ka_on);
	spin_lock_bh(&hn->socks_lock);
	hlist_add_head(&hs->net_node, &hn->socks);
	spin_unlock_bh(&hn->socks_lock);
}

/**
 * hps_sock_alloc() - allocate and initialise an AF_HPS socket
 * @net: network namespace
 * @sock: the struct socket to attach, or NULL for an accepted child
 * @kern: kernel socket (no netns reference), as for sk_alloc()
 *
 * Context: process (connection thread for accepted children); may sleep.
 * Return: the socket or NULL.
 */
struct sock *hps_sock_alloc(struct net *net, struct socket *sock, int kern)
{
	struct sock *sk;

	might_sleep();

	sk = sk_alloc(net, PF_HPS, GFP_KERNEL, &hps_proto, kern);
	if (!sk)
		return NULL;
	sock_init_data(sock, sk);
	hps_sock_init(hps_sk(sk));
	return sk;
}

/**
 * hps_set_state() - change the TCP-style state and wake everybody up
 * @sk: the socket
 * @state: TCP_* state
 *
 * Context: any; the state is read locklessly by poll (READ_ONCE).
 */
void hps_set_state(struct sock *sk, int state)
{
	if (sk->sk_state != state)
		trace_hps_sock_state(hps_sk(sk), sk->sk_state, state);
	WRITE_ONCE(sk->sk_state, state);	/* paired with READ_ONCE in poll */
	sk->sk_state_change(sk);
}

/**
 * hps_connd_kick() - hand socket work to the connection thread
 * @hs: the socket
 * @work: HPS_W_* bit
 *
 * Context: any, hard IRQ included.
 */
void hps_connd_kick(struct hps_sock *hs, int work)
{
	unsigned long flags;

	spin_lock_irqsave(&hps_connd.lock, flags);
	set_bit(work, &hs->connd_work);
	if (list_empty(&hs->connd_node)) {
		sock_hold(&hs->sk);	/* put by hps_connd_run() */
		list_add_tail(&hs->connd_node, &hps_connd.socks);
	}
	spin_unlock_irqrestore(&hps_connd.lock, flags);
	wake_up(&hps_connd.wq);
}

/**
 * hps_connd_queue_event() - copy an rdma_cm event for the connection thread
 * @id: the event's cm_id
 * @ev: the event
 * @sk: the socket the id belongs to (the listener for CONNECT_REQUEST)
 *
 * Context: rdma_cm event handler (process context, may not take the
 * socket lock); may sleep.
 * Return: 0 or -ENOMEM.
 */
int hps_connd_queue_event(struct rdma_cm_id *id, struct rdma_cm_event *ev,
			  struct sock *sk)
{
	struct hps_cm_ev *e;

	might_sleep();

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->id = id;
	e->sk = sk;
	e->event = ev->event;
	e->status = ev->status;
	if (ev->param.conn.private_data) {
		e->pdata_len = min_t(u8, ev->param.conn.private_data_len,
				     sizeof(e->pdata));
		memcpy(e->pdata, ev->param.conn.private_data, e->pdata_len);
	}
	sock_hold(sk);		/* put by hps_connd_run() */
	spin_lock_irq(&hps_connd.lock);
	list_add_tail(&e->list, &hps_connd.events);
	spin_unlock_irq(&hps_connd.lock);
	wake_up(&hps_connd.wq);
	return 0;
}

static bool hps_connd_has_work(void)
{
	bool ret;

	spin_lock_irq(&hps_connd.lock);
	ret = !list_empty(&hps_connd.events) || !list_empty(&hps_connd.socks);
	spin_unlock_irq(&hps_connd.lock);
	return ret;
}

/* Everything queued for the connection thread. Context: that thread. */
static void hps_connd_run(void)
{
	struct hps_sock *hs;
	struct hps_cm_ev *e;
	unsigned long work;

	WARN_ON_ONCE(current != hps_connd.task);

	for (;;) {
		spin_lock_irq(&hps_connd.lock);
		e = list_first_entry_or_null(&hps_connd.events,
					     struct hps_cm_ev, list);
		if (e) {
			list_del(&e->list);
			spin_unlock_irq(&hps_connd.lock);
			hps_cm_process(e->id, e->event, e->status, e->pdata,
				       e->pdata_len, e->sk);
			sock_put(e->sk);	/* from hps_connd_queue_event() */
			kfree(e);
			continue;
		}
		hs = list_first_entry_or_null(&hps_connd.socks,
					      struct hps_sock, connd_node);
		if (!hs) {
			spin_unlock_irq(&hps_connd.lock);
			return;
		}
		list_del_init(&hs->connd_node);
		work = xchg(&hs->connd_work, 0);
		spin_unlock_irq(&hps_connd.lock);

		hps_teardown(hs, work);
		sock_put(&hs->sk);		/* from hps_connd_kick() */
		cond_resched();
	}
}

static int hps_connd_fn(void *unused)
{
	while (!kthread_should_stop()) {
		wait_event_interruptible(hps_connd.wq,
					 kthread_should_stop() ||
					 hps_connd_has_work());
		hps_connd_run();
	}
	hps_connd_run();
	return 0;
}

/**
 * hps_connd_start() - start the connection thread
 *
 * Context: module init; may sleep.
 * Return: 0 or -errno.
 */
int hps_connd_start(void)
{
	struct task_struct *t;

	spin_lock_init(&hps_connd.lock);
	INIT_LIST_HEAD(&hps_connd.events);
	INIT_LIST_HEAD(&hps_connd.socks);
	init_waitqueue_head(&hps_connd.wq);
	t = kthread_run(hps_connd_fn, NULL, "hps_connd");
	if (IS_ERR(t))
		return PTR_ERR(t);
	hps_connd.task = t;
	return 0;
}

/**
 * hps_connd_stop() - stop the connection thread after its last work
 *
 * Context: module exit; sleeps until the thread is gone.
 */
void hps_connd_stop(void)
{
	might_sleep();
	kthread_stop(hps_connd.task);
}

/**
 * hps_flags_reset() - clear every connection flag of a socket
 * @hs: the socket, locked, with no connection (no QP, no timer armed)
 *
 * Only the user's options (HPS_F_NODELAY, HPS_F_CORK) stay. Bit by bit,
 * with atomic bitops like every other change of the flags word: a plain
 * "&=" could undo a bit set meanwhile from another context.
 */
void hps_flags_reset(struct hps_sock *hs)
{
	unsigned long keep = BIT(HPS_F_NODELAY) | BIT(HPS_F_CORK);
	unsigned long old = READ_ONCE(hs->flags) & ~keep;
	int bit;

	BUILD_BUG_ON(HPS_F_NBITS > BITS_PER_LONG);
	sock_owned_by_me(&hs->sk);
	for_each_set_bit(bit, &old, BITS_PER_LONG)
		clear_bit(bit, &hs->flags);
}
