/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Tracepoints, in the trace system "af_hps" (Documentation/af_hps.rst,
 * "Tracepoints"). Disabled, each costs a static branch.
 *
 * Naming: hps_<area>_<event>, the area one of
 *
 *   sock   the socket itself (state changes)
 *   conn   connection setup and end (connect and accept outcomes, aborts)
 *   tx     the sending side (credit stalls and resumes)
 *   rx     the receiving side
 *   ka     keepalive and user timeout (probes, timeouts)
 *   zc     zero copy (decisions, fallbacks)
 *   msg    every message of the protocol, posted and received
 *
 * Every event starts with the same three fields, so that one filter
 * follows one connection through all of them: skaddr (the struct sock,
 * printed hashed as sk=), src and dst (the local and peer address and
 * port, struct sockaddr_in or sockaddr_in6, all zero while unknown).
 * Events of the message path (sendmsg, completions, wakeups, recvmsg)
 * belong in tx, rx and msg with the same first fields (hps_tp_sock(),
 * HPS_TP_SOCK_FMT below).
 *
 * The header is read several times (TRACE_HEADER_MULTI_READ); the one .c
 * file that defines CREATE_TRACE_POINTS (hps_core.c) makes the events.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM af_hps

#if !defined(_HPS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _HPS_TRACE_H

#include <linux/in6.h>
#include <linux/tracepoint.h>
#include <net/tcp_states.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>
#include <trace/misc/rdma.h>

#include "hps.h"

/*
 * The socket, the first fields of every event: skaddr, src and dst, filled
 * by hps_tp_sock() and printed with HPS_TP_SOCK_FMT. An end without an
 * address yet is shown as 0.0.0.0:0 (%pIS would print "(einval)").
 */
#ifndef _HPS_TRACE_ONCE
#define _HPS_TRACE_ONCE
static inline void hps_tp_addr(u8 *to, const struct sockaddr_storage *ss)
{
	static const sa_family_t inet = AF_INET;

	memcpy(to, ss, sizeof(struct sockaddr_in6));
	if (!ss->ss_family)
		memcpy(to, &inet, sizeof(inet));
}

static inline void hps_tp_sock(const void **skaddr, u8 *src, u8 *dst,
			       const struct hps_sock *hs)
{
	*skaddr = hs;
	hps_tp_addr(src, &hs->local);
	hps_tp_addr(dst, &hs->peer);
}
#endif

#define HPS_TP_SOCK_FMT		"sk=%p src=%pISpc dst=%pISpc "

TRACE_DEFINE_ENUM(TCP_ESTABLISHED);
TRACE_DEFINE_ENUM(TCP_SYN_SENT);
TRACE_DEFINE_ENUM(TCP_SYN_RECV);
TRACE_DEFINE_ENUM(TCP_FIN_WAIT1);
TRACE_DEFINE_ENUM(TCP_FIN_WAIT2);
TRACE_DEFINE_ENUM(TCP_TIME_WAIT);
TRACE_DEFINE_ENUM(TCP_CLOSE);
TRACE_DEFINE_ENUM(TCP_CLOSE_WAIT);
TRACE_DEFINE_ENUM(TCP_LAST_ACK);
TRACE_DEFINE_ENUM(TCP_LISTEN);
TRACE_DEFINE_ENUM(TCP_CLOSING);

/* TCP_* state names, as the tcp trace system shows them */
#define hps_show_state(state)						\
	__print_symbolic(state,						\
			 { TCP_ESTABLISHED, "TCP_ESTABLISHED" },	\
			 { TCP_SYN_SENT, "TCP_SYN_SENT" },		\
			 { TCP_SYN_RECV, "TCP_SYN_RECV" },		\
			 { TCP_FIN_WAIT1, "TCP_FIN_WAIT1" },		\
			 { TCP_FIN_WAIT2, "TCP_FIN_WAIT2" },		\
			 { TCP_TIME_WAIT, "TCP_TIME_WAIT" },		\
			 { TCP_CLOSE, "TCP_CLOSE" },			\
			 { TCP_CLOSE_WAIT, "TCP_CLOSE_WAIT" },		\
			 { TCP_LAST_ACK, "TCP_LAST_ACK" },		\
			 { TCP_LISTEN, "TCP_LISTEN" },			\
			 { TCP_CLOSING, "TCP_CLOSING" })

/* rdma_cm events (trace/misc/rdma.h), NONE for AF_HPS's own failures */
#define hps_show_cm_event(ev)						\
	__print_symbolic(ev, { HPS_TP_NO_EVENT, "NONE" }, RDMA_CM_EVENT_LIST)

TRACE_DEFINE_ENUM(HPS_ACC_ACCEPTED);
TRACE_DEFINE_ENUM(HPS_ACC_ESTABLISHED);
TRACE_DEFINE_ENUM(HPS_ACC_BACKLOG);
TRACE_DEFINE_ENUM(HPS_ACC_BAD_HELLO);
TRACE_DEFINE_ENUM(HPS_ACC_SETUP);
TRACE_DEFINE_ENUM(HPS_ACC_FAILED);

#define hps_show_accept(o)						\
	__print_symbolic(o,						\
			 { HPS_ACC_ACCEPTED, "accepted" },		\
			 { HPS_ACC_ESTABLISHED, "established" },	\
			 { HPS_ACC_BACKLOG, "backlog_full" },		\
			 { HPS_ACC_BAD_HELLO, "bad_hello" },		\
			 { HPS_ACC_SETUP, "setup_failed" },		\
			 { HPS_ACC_FAILED, "failed" })

TRACE_DEFINE_ENUM(HPS_AB_ERROR);
TRACE_DEFINE_ENUM(HPS_AB_LOCAL);
TRACE_DEFINE_ENUM(HPS_AB_PROTO);
TRACE_DEFINE_ENUM(HPS_AB_PEER);
TRACE_DEFINE_ENUM(HPS_AB_PEER_GONE);
TRACE_DEFINE_ENUM(HPS_AB_TRANSPORT);
TRACE_DEFINE_ENUM(HPS_AB_KEEPALIVE);
TRACE_DEFINE_ENUM(HPS_AB_USER_TIMEOUT);
TRACE_DEFINE_ENUM(HPS_AB_DEVICE);
TRACE_DEFINE_ENUM(HPS_AB_FIN_TIMEOUT);

#define hps_show_abort(r)						\
	__print_symbolic(r,						\
			 { HPS_AB_ERROR, "error" },			\
			 { HPS_AB_LOCAL, "local" },			\
			 { HPS_AB_PROTO, "protocol" },			\
			 { HPS_AB_PEER, "peer_abort" },			\
			 { HPS_AB_PEER_GONE, "peer_disconnect" },	\
			 { HPS_AB_TRANSPORT, "transport" },		\
			 { HPS_AB_KEEPALIVE, "keepalive" },		\
			 { HPS_AB_USER_TIMEOUT, "user_timeout" },	\
			 { HPS_AB_DEVICE, "device_removed" },		\
			 { HPS_AB_FIN_TIMEOUT, "fin_timeout" })

TRACE_DEFINE_ENUM(HPS_ZCW_ZCOPY);
TRACE_DEFINE_ENUM(HPS_ZCW_SMALL);
TRACE_DEFINE_ENUM(HPS_ZCW_NONBLOCK);
TRACE_DEFINE_ENUM(HPS_ZCW_KERNEL);
TRACE_DEFINE_ENUM(HPS_ZCW_NOT_SET_UP);
TRACE_DEFINE_ENUM(HPS_ZCW_NO_DEVICE);
TRACE_DEFINE_ENUM(HPS_ZCW_NOT_CONNECTED);
TRACE_DEFINE_ENUM(HPS_ZCW_NO_MR);
TRACE_DEFINE_ENUM(HPS_ZCW_NOT_PINNED);
TRACE_DEFINE_ENUM(HPS_ZCW_PEEK);
TRACE_DEFINE_ENUM(HPS_ZCW_TIMEOUT);
TRACE_DEFINE_ENUM(HPS_ZCW_SIGNAL);
TRACE_DEFINE_ENUM(HPS_ZCW_SNDTIMEO);

/* the message types by name for perf and trace-cmd, not only tracefs */
TRACE_DEFINE_ENUM(HPS_MSG_DATA);
TRACE_DEFINE_ENUM(HPS_MSG_CREDIT);
TRACE_DEFINE_ENUM(HPS_MSG_FIN);
TRACE_DEFINE_ENUM(HPS_MSG_ABORT);
TRACE_DEFINE_ENUM(HPS_MSG_SRCAVAIL);
TRACE_DEFINE_ENUM(HPS_MSG_RDMA_DONE);
TRACE_DEFINE_ENUM(HPS_MSG_SENDSM);
TRACE_DEFINE_ENUM(HPS_MSG_CANCEL);
TRACE_DEFINE_ENUM(HPS_MSG_SHRINK);
TRACE_DEFINE_ENUM(HPS_MSG_PAD);

#define hps_show_zc(r)							\
	__print_symbolic(r,						\
			 { HPS_ZCW_ZCOPY, "zcopy" },			\
			 { HPS_ZCW_SMALL, "copy_small" },		\
			 { HPS_ZCW_NONBLOCK, "copy_nonblocking" },	\
			 { HPS_ZCW_KERNEL, "copy_not_user_memory" },	\
			 { HPS_ZCW_NOT_SET_UP, "copy_not_set_up" },	\
			 { HPS_ZCW_NO_DEVICE, "copy_device" },		\
			 { HPS_ZCW_NOT_CONNECTED, "copy_not_connected" }, \
			 { HPS_ZCW_NO_MR, "copy_no_mr" },		\
			 { HPS_ZCW_NOT_PINNED, "copy_not_pinned" },	\
			 { HPS_ZCW_PEEK, "copy_peek" },			\
			 { HPS_ZCW_TIMEOUT, "peer_not_reading" },	\
			 { HPS_ZCW_SIGNAL, "signal" },			\
			 { HPS_ZCW_SNDTIMEO, "sndtimeo" })

/* hps_sock_state: the socket moved from @oldstate to @newstate */
TRACE_EVENT(hps_sock_state,
	    TP_PROTO(const struct hps_sock *hs, int oldstate, int newstate),
	    TP_ARGS(hs, oldstate, newstate),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(int, oldstate)
			     __field(int, newstate)),
	    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
				       __entry->dst, hs);
			   __entry->oldstate = oldstate;
			   __entry->newstate = newstate;),
	    TP_printk(HPS_TP_SOCK_FMT "oldstate=%s newstate=%s",
		      __entry->skaddr, __entry->src, __entry->dst,
		      hps_show_state(__entry->oldstate),
		      hps_show_state(__entry->newstate))
);

/*
 * hps_conn_connect: the outcome of a connect(): @err 0 (established) or
 * the errno it reports, with the rdma_cm event that decided it (NONE when
 * AF_HPS's own step failed) and that event's status.
 */
TRACE_EVENT(hps_conn_connect,
	    TP_PROTO(const struct hps_sock *hs, int event, int status, int err),
	    TP_ARGS(hs, event, status, err),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(int, event)
			     __field(int, status)
			     __field(int, err)),
	    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
				       __entry->dst, hs);
			   __entry->event = event;
			   __entry->status = status;
			   __entry->err = err;),
	    TP_printk(HPS_TP_SOCK_FMT "event=%s status=%d err=%d",
		      __entry->skaddr, __entry->src, __entry->dst,
		      hps_show_cm_event(__entry->event),
		      __entry->status,
		      __entry->err)
);

/*
 * hps_conn_fallback: a connect() whose attempt over RDMA failed goes on
 * over TCP (err 0), or would have but TCP could not start (err, -errno);
 * @reason is HPS_FB_*. HPS_FB_TCP_CLIENT: a listener accepted a plain TCP
 * client (err 0), or could not listen over TCP too (err).
 */
TRACE_DEFINE_ENUM(HPS_FB_NO_DEVICE);
TRACE_DEFINE_ENUM(HPS_FB_REFUSED);
TRACE_DEFINE_ENUM(HPS_FB_REJECTED);
TRACE_DEFINE_ENUM(HPS_FB_UNREACHABLE);
TRACE_DEFINE_ENUM(HPS_FB_PEER_ERROR);
TRACE_DEFINE_ENUM(HPS_FB_RESOURCE);
TRACE_DEFINE_ENUM(HPS_FB_TCP_CLIENT);

TRACE_EVENT(hps_conn_fallback,
	    TP_PROTO(const struct hps_sock *hs, int reason, int err),
	    TP_ARGS(hs, reason, err),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(int, reason)
			     __field(int, err)),
	    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
				       __entry->dst, hs);
			   __entry->reason = reason;
			   __entry->err = err;),
	    TP_printk(HPS_TP_SOCK_FMT "reason=%s err=%d",
		      __entry->skaddr, __entry->src, __entry->dst,
		      __print_symbolic(__entry->reason,
				       { HPS_FB_NO_DEVICE, "no_device" },
				       { HPS_FB_REFUSED, "refused" },
				       { HPS_FB_REJECTED, "rejected" },
				       { HPS_FB_UNREACHABLE, "unreachable" },
				       { HPS_FB_PEER_ERROR, "peer_error" },
				       { HPS_FB_RESOURCE, "resource" },
				       { HPS_FB_TCP_CLIENT, "tcp_client" }),
		      __entry->err)
);

/*
 * hps_conn_portq: the outcome of a connect()'s iWARP port query
 * (hps_portq.c): @result is the RDMA port the peer's listener answered,
 * -ECONNREFUSED (no listener there) or -ETIMEDOUT (no answer).
 */
TRACE_EVENT(hps_conn_portq,
	    TP_PROTO(const struct hps_sock *hs, int result),
	    TP_ARGS(hs, result),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(int, result)),
	    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
				       __entry->dst, hs);
			   __entry->result = result;),
	    TP_printk(HPS_TP_SOCK_FMT "result=%d",
		      __entry->skaddr, __entry->src, __entry->dst,
		      __entry->result)
);

/*
 * hps_conn_accept: a listener's connection request, accepted or refused
 * (@outcome, enum hps_accept_outcome), and later the new connection's
 * outcome (established, or failed with @err); @hs is the new socket, or
 * the listener when none was made, @id the request's cm_id (its
 * addresses are the connection's).
 */
TRACE_EVENT(hps_conn_accept,
	    TP_PROTO(const struct hps_sock *hs, const struct rdma_cm_id *id,
		     int outcome, int event, int status, int err),
	    TP_ARGS(hs, id, outcome, event, status, err),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(int, outcome)
			     __field(int, event)
			     __field(int, status)
			     __field(int, err)),
	    TP_fast_assign(__entry->skaddr = hs;
			   hps_tp_addr(__entry->src, &id->route.addr.src_addr);
			   hps_tp_addr(__entry->dst, &id->route.addr.dst_addr);
			   __entry->outcome = outcome;
			   __entry->event = event;
			   __entry->status = status;
			   __entry->err = err;),
	    TP_printk(HPS_TP_SOCK_FMT "outcome=%s event=%s status=%d err=%d",
		      __entry->skaddr, __entry->src, __entry->dst,
		      hps_show_accept(__entry->outcome),
		      hps_show_cm_event(__entry->event),
		      __entry->status,
		      __entry->err)
);

/*
 * hps_conn_abort: a connection is reset (once per connection): the errno
 * the socket reports (0: none), why (enum hps_abort_why) and where it was
 * decided.
 */
TRACE_EVENT(hps_conn_abort,
	    TP_PROTO(const struct hps_sock *hs, int err, int why,
		     unsigned long caller),
	    TP_ARGS(hs, err, why, caller),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(int, err)
			     __field(int, why)
			     __field(unsigned long, caller)),
	    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
				       __entry->dst, hs);
			   __entry->err = err;
			   __entry->why = why;
			   __entry->caller = caller;),
	    TP_printk(HPS_TP_SOCK_FMT "err=%d reason=%s caller=%pS",
		      __entry->skaddr, __entry->src, __entry->dst,
		      __entry->err,
		      hps_show_abort(__entry->why),
		      (void *)__entry->caller)
);

/*
 * hps_tx_credit_stall: data waits to be posted and fewer than the two
 * credits a data message needs are left; @queued bytes are not yet sent
 * or not yet completed.
 */
TRACE_EVENT(hps_tx_credit_stall,
	    TP_PROTO(const struct hps_sock *hs, u32 credits, u32 queued),
	    TP_ARGS(hs, credits, queued),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(u32, credits)
			     __field(u32, queued)),
	    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
				       __entry->dst, hs);
			   __entry->credits = credits;
			   __entry->queued = queued;),
	    TP_printk(HPS_TP_SOCK_FMT "credits=%u queued=%u",
		      __entry->skaddr, __entry->src, __entry->dst,
		      __entry->credits,
		      __entry->queued)
);

/* hps_tx_credit_resume: credits came back after a stall of @stalled_us */
TRACE_EVENT(hps_tx_credit_resume,
	    TP_PROTO(const struct hps_sock *hs, u32 credits, u64 stalled_us),
	    TP_ARGS(hs, credits, stalled_us),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(u32, credits)
			     __field(u64, stalled_us)),
	    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
				       __entry->dst, hs);
			   __entry->credits = credits;
			   __entry->stalled_us = stalled_us;),
	    TP_printk(HPS_TP_SOCK_FMT "credits=%u stalled_us=%llu",
		      __entry->skaddr, __entry->src, __entry->dst,
		      __entry->credits,
		      __entry->stalled_us)
);

/* hps_ka_probe: a keepalive probe went out after @silence_ms */
TRACE_EVENT(hps_ka_probe,
	    TP_PROTO(const struct hps_sock *hs, u32 silence_ms),
	    TP_ARGS(hs, silence_ms),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(u32, silence_ms)),
	    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
				       __entry->dst, hs);
			   __entry->silence_ms = silence_ms;),
	    TP_printk(HPS_TP_SOCK_FMT "silence_ms=%u",
		      __entry->skaddr, __entry->src, __entry->dst,
		      __entry->silence_ms)
);

/*
 * hps_ka_timeout: the connection is given up (ETIMEDOUT): the peer was
 * silent (keepalive) or the sending side made no progress
 * (user_timeout: TCP_USER_TIMEOUT) for @silence_ms, the limit being
 * @limit_ms.
 */
TRACE_EVENT(hps_ka_timeout,
	    TP_PROTO(const struct hps_sock *hs, bool user_timeout,
		     u32 silence_ms, u32 limit_ms),
	    TP_ARGS(hs, user_timeout, silence_ms, limit_ms),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(bool, user_timeout)
			     __field(u32, silence_ms)
			     __field(u32, limit_ms)),
	    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
				       __entry->dst, hs);
			   __entry->user_timeout = user_timeout;
			   __entry->silence_ms = silence_ms;
			   __entry->limit_ms = limit_ms;),
	    TP_printk(HPS_TP_SOCK_FMT "kind=%s silence_ms=%u limit_ms=%u",
		      __entry->skaddr, __entry->src, __entry->dst,
		      __entry->user_timeout ? "user_timeout" : "keepalive",
		      __entry->silence_ms,
		      __entry->limit_ms)
);

/*
 * hps_zc_tx, hps_zc_rx: how a send of @len bytes on a socket with zero
 * copy on (HPS_ZCOPY_THRESH not 0), or a read of @len bytes that meets
 * the peer's advertised buffer, goes: zero copy, or by copy and why
 * (enum hps_zc_why). hps_zc_cancel: the sender stops waiting for the
 * answer to its @len advertised bytes (the peer did not read them within
 * 500 ms, a signal, SO_SNDTIMEO) and has them taken by copy.
 */
DECLARE_EVENT_CLASS(hps_zc_class,
		    TP_PROTO(const struct hps_sock *hs, u64 len, int why),
		    TP_ARGS(hs, len, why),
		    TP_STRUCT__entry(__field(const void *, skaddr)
				     __array(__u8, src, sizeof(struct sockaddr_in6))
				     __array(__u8, dst, sizeof(struct sockaddr_in6))
				     __field(u64, len)
				     __field(int, why)),
		    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
					       __entry->dst, hs);
				   __entry->len = len;
				   __entry->why = why;),
		    TP_printk(HPS_TP_SOCK_FMT "len=%llu decision=%s",
			      __entry->skaddr, __entry->src, __entry->dst,
			      __entry->len,
			      hps_show_zc(__entry->why))
);

DEFINE_EVENT(hps_zc_class, hps_zc_tx,
	     TP_PROTO(const struct hps_sock *hs, u64 len, int why),
	     TP_ARGS(hs, len, why));

DEFINE_EVENT(hps_zc_class, hps_zc_rx,
	     TP_PROTO(const struct hps_sock *hs, u64 len, int why),
	     TP_ARGS(hs, len, why));

DEFINE_EVENT(hps_zc_class, hps_zc_cancel,
	     TP_PROTO(const struct hps_sock *hs, u64 len, int why),
	     TP_ARGS(hs, len, why));

/*
 * hps_msg_send, hps_msg_recv: a message of the protocol (protocol.rst,
 * "Message header") posted, or taken from a receive completion: its type
 * and flags, payload bytes, and the credits its header returns with their
 * class. With sched_wakeup and the syscalls' events, where a message's
 * time goes: sendmsg, post, the peer's receive completion, the reader's
 * wakeup, recvmsg's return.
 */
DECLARE_EVENT_CLASS(hps_msg_class,
		    TP_PROTO(const struct hps_sock *hs, u8 type, u32 len,
			     u32 credits, u8 cls),
		    TP_ARGS(hs, type, len, credits, cls),
		    TP_STRUCT__entry(__field(const void *, skaddr)
				     __array(__u8, src, sizeof(struct sockaddr_in6))
				     __array(__u8, dst, sizeof(struct sockaddr_in6))
				     __field(u8, type)
				     __field(u8, cls)
				     __field(u32, len)
				     __field(u32, credits)),
		    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
					       __entry->dst, hs);
				   __entry->type = type;
				   __entry->cls = cls;
				   __entry->len = len;
				   __entry->credits = credits;),
		    TP_printk(HPS_TP_SOCK_FMT "type=%s%s len=%u credits=%u cls=%u",
			      __entry->skaddr, __entry->src, __entry->dst,
			      __print_symbolic(__entry->type & HPS_MSG_TYPE_MASK,
					       { HPS_MSG_DATA, "DATA" },
					       { HPS_MSG_CREDIT, "CREDIT" },
					       { HPS_MSG_FIN, "FIN" },
					       { HPS_MSG_ABORT, "ABORT" },
					       { HPS_MSG_SRCAVAIL, "SRCAVAIL" },
					       { HPS_MSG_RDMA_DONE, "RDMA_DONE" },
					       { HPS_MSG_SENDSM, "SENDSM" },
					       { HPS_MSG_CANCEL, "CANCEL" },
					       { HPS_MSG_SHRINK, "SHRINK" },
					       { HPS_MSG_PAD, "PAD" }),
			      __print_flags(__entry->type & ~HPS_MSG_TYPE_MASK, "",
					    { HPS_MSG_F_FIN_ACK, "|FIN_ACK" },
					    { HPS_MSG_F_RESERVE, "|RESERVE" },
					    { HPS_MSG_F_RESERVE_BACK, "|RESERVE_BACK" },
					    { HPS_MSG_F_MORE, "|MORE" }),
			      __entry->len, __entry->credits, __entry->cls)
);

DEFINE_EVENT(hps_msg_class, hps_msg_send,
	     TP_PROTO(const struct hps_sock *hs, u8 type, u32 len, u32 credits,
		      u8 cls),
	     TP_ARGS(hs, type, len, credits, cls));

DEFINE_EVENT(hps_msg_class, hps_msg_recv,
	     TP_PROTO(const struct hps_sock *hs, u8 type, u32 len, u32 credits,
		      u8 cls),
	     TP_ARGS(hs, type, len, credits, cls));

/*
 * hps_zc_sendsm: the receiver takes the rest of the peer's advertised
 * bytes by copy (SENDSM): @read bytes of @len were read zero copy.
 */
TRACE_EVENT(hps_zc_sendsm,
	    TP_PROTO(const struct hps_sock *hs, u32 read, u32 len),
	    TP_ARGS(hs, read, len),
	    TP_STRUCT__entry(__field(const void *, skaddr)
			     __array(__u8, src, sizeof(struct sockaddr_in6))
			     __array(__u8, dst, sizeof(struct sockaddr_in6))
			     __field(u32, read)
			     __field(u32, len)),
	    TP_fast_assign(hps_tp_sock(&__entry->skaddr, __entry->src,
				       __entry->dst, hs);
			   __entry->read = read;
			   __entry->len = len;),
	    TP_printk(HPS_TP_SOCK_FMT "read=%u len=%u",
		      __entry->skaddr, __entry->src, __entry->dst,
		      __entry->read,
		      __entry->len)
);

#endif /* _HPS_TRACE_H */

/* kbuild: af_hps/ is in the include path (Kbuild) */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE hps_trace
#include <trace/define_trace.h>
