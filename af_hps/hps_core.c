// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Socket state and the connection work.
 *
 * Lifetime: a struct hps_sock is freed when its sk_refcnt drops to zero.
 * References are held by the struct socket (until release), by the cm_id
 * (from hps_cm_create_id() until connd destroys the id), by its queued
 * or running connection work and by a listener's pending and
 * accept-queued children (through the child's parent pointer the other way
 * round). A QP only exists while its cm_id does, and the QP is drained
 * before it is destroyed, so completion handlers, which find the socket
 * through wc->qp->qp_context, always see a live socket.
 *
 * Locking order: socket lock -> hps_sock.lock (BH) -> hps_dev.lock (BH);
 * hps_connd_lock is a leaf, taken with interrupts off: QP events, which
 * hand work to the connection work, come in hard-IRQ context from some
 * drivers. See hps.h for what each lock protects.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/tcp_states.h>

#include <linux/memcontrol.h>

#include "hps.h"

#define CREATE_TRACE_POINTS
#include "hps_trace.h"

/**
 * struct hps_cm_ev - an rdma_cm event copied for a socket's connection work
 * @list: entry in hps_sock.connd_events
 * @id: the cm_id of the event (for CONNECT_REQUEST the new id)
 * @event: enum rdma_cm_event_type
 * @status: event status
 * @pdata_len: bytes in @pdata
 * @pdata: copy of the private data (hello)
 */
struct hps_cm_ev {
	struct list_head	list;
	struct rdma_cm_id	*id;
	int			event;
	int			status;
	u8			pdata_len;
	u8			pdata[sizeof(struct hps_hello)];
};

/*
 * Connection work: rdma_cm handlers, CQ handlers, timers and system calls
 * hand a socket work through hps_sock.connd_events and .connd_work; the
 * socket's own work item (hps_sock.connd_wi) runs it on this workqueue in
 * process context, where it may sleep, take the socket lock and destroy
 * cm_ids. One socket's work runs on one CPU at a time, in the order it
 * was handed over; different sockets' run in parallel, so that a slow
 * setup (siw connects a TCP socket; a namespace's device going away)
 * holds up nobody else. WQ_MEM_RECLAIM: teardown frees memory.
 */
static struct workqueue_struct *hps_connd_wq;
static DEFINE_SPINLOCK(hps_connd_lock);	/* see hps.h */
static u64 hps_estab_seq;		/* hps_connd_lock */

/*
 * rdma_connect() of the active side (hps_cm_connect_work()), which over
 * iWARP connects a TCP socket and may block that long, on a workqueue of
 * its own: a blocked connect never holds up another socket's connection
 * work, teardown (which frees memory) above all.
 */
static struct workqueue_struct *hps_connect_wq;

static void hps_connd_work(struct work_struct *work);

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
	WARN_ON_ONCE(hs->cm_id || hs->qp || hs->dev || hs->port_hold ||
		     hs->portq);
	__hps_wr_free_bufs(hs);
	hps_inject_free(hs);
	mem_cgroup_put(hs->memcg);
}

/**
 * hps_sock_memcg_from() - charge a socket's buffers where another's go
 * @hs: a new socket (an accepted connection, made by the connection work)
 * @from: the socket whose memory cgroup it takes (its listener)
 *
 * Context: process.
 */
void hps_sock_memcg_from(struct hps_sock *hs, struct hps_sock *from)
{
	mem_cgroup_put(hs->memcg);
	hs->memcg = from->memcg;
#ifdef CONFIG_MEMCG
	if (hs->memcg)
		css_get(&hs->memcg->css);
#endif
}

/**
 * hps_sock_inherit() - what an accepted socket takes from its listener
 * @hs: the new socket, not yet visible to anybody
 * @lhs: its listener
 *
 * Buffer sizes, timeouts, owner, busy polling, TCP-level and keepalive
 * options, as TCP's children inherit them, and the memory cgroup of the
 * listener's creator. Context: process, the listener's socket lock held.
 */
void hps_sock_inherit(struct hps_sock *hs, struct hps_sock *lhs)
{
	struct sock *sk = &hs->sk, *lsk = &lhs->sk;

	sock_owned_by_me(lsk);
	hps_sock_memcg_from(hs, lhs);
	sk->sk_rcvbuf = lsk->sk_rcvbuf;
	sk->sk_sndbuf = lsk->sk_sndbuf;
	sk->sk_userlocks = lsk->sk_userlocks;
	sk->sk_rcvtimeo = lsk->sk_rcvtimeo;
	sk->sk_sndtimeo = lsk->sk_sndtimeo;
	sk->sk_uid = lsk->sk_uid;
#ifdef CONFIG_NET_RX_BUSY_POLL
	WRITE_ONCE(sk->sk_ll_usec, READ_ONCE(lsk->sk_ll_usec));
	WRITE_ONCE(sk->sk_busy_poll_budget,
		   READ_ONCE(lsk->sk_busy_poll_budget));
	WRITE_ONCE(sk->sk_prefer_busy_poll,
		   READ_ONCE(lsk->sk_prefer_busy_poll));
#endif
	hs->zc_thresh = lhs->zc_thresh;
	hs->flags = lhs->flags & (BIT(HPS_F_NODELAY) | BIT(HPS_F_CORK));
	WRITE_ONCE(hs->ka_on, READ_ONCE(lhs->ka_on));
	WRITE_ONCE(hs->ka_user, READ_ONCE(lhs->ka_user));
	WRITE_ONCE(hs->ka_idle, READ_ONCE(lhs->ka_idle));
	WRITE_ONCE(hs->ka_intvl, READ_ONCE(lhs->ka_intvl));
	WRITE_ONCE(hs->ka_cnt, READ_ONCE(lhs->ka_cnt));
	WRITE_ONCE(hs->user_timeout, READ_ONCE(lhs->user_timeout));
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
	hs->fb_on = READ_ONCE(hn->tcp_fallback) == HPS_FB_SYSCTL_DEFAULT;
	/* the creator's (a reference): its buffers are charged there */
	hs->memcg = get_mem_cgroup_from_mm(current->mm);
	INIT_LIST_HEAD(&hs->dev_node);
	INIT_LIST_HEAD(&hs->accept_list);
	INIT_LIST_HEAD(&hs->accept_node);
	INIT_WORK(&hs->connd_wi, hps_connd_work);
	INIT_LIST_HEAD(&hs->connd_events);
	INIT_LIST_HEAD(&hs->rx_ready);
	INIT_LIST_HEAD(&hs->rx_wait);
	INIT_LIST_HEAD(&hs->rx_park);
	INIT_WORK(&hs->connect_work, hps_cm_connect_work);
	sk->sk_destruct = hps_sock_destruct;
	timer_setup(&sk->sk_timer, hps_fin_timer, 0);
	timer_setup(&hs->nudge_timer, hps_tx_nudge, 0);
	timer_setup(&hs->ka_timer, hps_tx_keepalive, 0);
	timer_setup(&hs->zc_timer, hps_zc_rd_timeout, 0);
	timer_setup(&hs->idle_timer, hps_rx_idle, 0);
	timer_setup(&hs->fb_timer, hps_fb_deadline, 0);
	timer_setup(&hs->portq_timer, hps_portq_timer, 0);
	hs->ka_cqe.done = hps_tx_ka_done;
	hs->fence_cqe.done = hps_tx_fence_done;
	timer_setup(&hs->cover_timer, hps_tx_cover_timer, 0);
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
 * Context: process (connection work for accepted children); may sleep.
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

/*
 * Queue the socket's connection work unless it is queued or running and
 * will look again. Context: any, hps_connd_lock held.
 */
static void hps_connd_queue(struct hps_sock *hs)
{
	lockdep_assert_held(&hps_connd_lock);
	if (hs->connd_queued)
		return;
	hs->connd_queued = true;
	sock_hold(&hs->sk);	/* put by hps_connd_work() */
	/* not pending: connd_queued was clear, so it is running or done */
	WARN_ON_ONCE(!queue_work(hps_connd_wq, &hs->connd_wi));
}

/**
 * hps_connd_kick() - hand socket work to its connection work
 * @hs: the socket
 * @work: HPS_W_* bit
 *
 * Context: any, hard IRQ included.
 */
void hps_connd_kick(struct hps_sock *hs, int work)
{
	unsigned long flags;

	spin_lock_irqsave(&hps_connd_lock, flags);
	set_bit(work, &hs->connd_work);
	hps_connd_queue(hs);
	spin_unlock_irqrestore(&hps_connd_lock, flags);
}

/**
 * hps_connd_events_pending() - rdma_cm events wait for the socket's work
 * @hs: the socket
 *
 * Context: any; with the id's handler mutex held no new one comes.
 * Return: true if its connection work has events still to handle.
 */
bool hps_connd_events_pending(struct hps_sock *hs)
{
	unsigned long flags;
	bool pending;

	spin_lock_irqsave(&hps_connd_lock, flags);
	pending = !list_empty(&hs->connd_events);
	spin_unlock_irqrestore(&hps_connd_lock, flags);
	return pending;
}

/**
 * hps_connd_queue_event() - copy an rdma_cm event for a socket's work
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
	struct hps_sock *hs = hps_sk(sk);
	struct hps_cm_ev *e;

	might_sleep();

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->id = id;
	e->event = ev->event;
	e->status = ev->status;
	if (ev->param.conn.private_data) {
		e->pdata_len = min_t(u8, ev->param.conn.private_data_len,
				     sizeof(e->pdata));
		memcpy(e->pdata, ev->param.conn.private_data, e->pdata_len);
	}
	spin_lock_irq(&hps_connd_lock);
	/*
	 * The accept queue keeps the order in which rdma_cm reported the
	 * connections up, whichever child's work gets there first.
	 */
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED && !hs->estab_seq)
		WRITE_ONCE(hs->estab_seq, ++hps_estab_seq);
	list_add_tail(&e->list, &hs->connd_events);
	hps_connd_queue(hs);
	spin_unlock_irq(&hps_connd_lock);
	return 0;
}

/**
 * hps_connect_queue() - run hps_cm_connect_work() for a socket
 * @hs: the socket; the caller gave the work a socket reference
 *
 * On the module's own workqueue, which module exit drains: the work's
 * last sock_put() may free the socket and, with it, the module's last
 * user.
 *
 * Context: any.
 */
void hps_connect_queue(struct hps_sock *hs)
{
	queue_work(hps_connect_wq, &hs->connect_work);
}

/*
 * A socket's connection work: an accepted child's setup first (its
 * events, if any came yet, are about the connection that sets up), then
 * the rdma_cm events in the order they came, then the other work bits,
 * until there is none left. Context: hps_connd workqueue.
 */
static void hps_connd_work(struct work_struct *work)
{
	struct hps_sock *hs = container_of(work, struct hps_sock, connd_wi);
	struct hps_cm_ev *e;
	unsigned long bits;

	hps_inject_connd(true);
	for (;;) {
		spin_lock_irq(&hps_connd_lock);
		if (test_and_clear_bit(HPS_W_ACCEPT, &hs->connd_work)) {
			spin_unlock_irq(&hps_connd_lock);
			hps_cm_accept_work(hs);
			continue;
		}
		e = list_first_entry_or_null(&hs->connd_events,
					     struct hps_cm_ev, list);
		if (e) {
			list_del(&e->list);
			spin_unlock_irq(&hps_connd_lock);
			hps_cm_process(e->id, e->event, e->status, e->pdata,
				       e->pdata_len, &hs->sk);
			kfree(e);
			cond_resched();
			continue;
		}
		bits = xchg(&hs->connd_work, 0);
		if (!bits)
			hs->connd_queued = false;
		spin_unlock_irq(&hps_connd_lock);
		if (!bits)
			break;
		hps_teardown(hs, bits);
		cond_resched();
	}
	hps_inject_connd(false);
	sock_put(&hs->sk);	/* from hps_connd_queue() */
}

/**
 * hps_connd_start() - create the connection and connect workqueues
 *
 * Context: module init; may sleep.
 * Return: 0 or -ENOMEM.
 */
int hps_connd_start(void)
{
	might_sleep();
	hps_connd_wq = alloc_workqueue("hps_connd", WQ_UNBOUND | WQ_MEM_RECLAIM,
				       WQ_UNBOUND_MAX_ACTIVE);
	if (!hps_connd_wq)
		return -ENOMEM;
	hps_connect_wq = alloc_workqueue("hps_connect", WQ_UNBOUND,
					 WQ_UNBOUND_MAX_ACTIVE);
	if (!hps_connect_wq) {
		destroy_workqueue(hps_connd_wq);
		return -ENOMEM;
	}
	return 0;
}

/**
 * hps_connd_stop() - run what is queued, then destroy the workqueues
 *
 * The connects first: their work may hand a socket's its connection work.
 *
 * Context: module exit (no socket is left); sleeps until the last work,
 * which may have dropped the last socket's last reference, has returned.
 */
void hps_connd_stop(void)
{
	might_sleep();
	destroy_workqueue(hps_connect_wq);
	destroy_workqueue(hps_connd_wq);
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
