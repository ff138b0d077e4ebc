// SPDX-License-Identifier: GPL-2.0
/*
 * hps-ss: list the AF_HPS sockets of the caller's network namespace, as
 * ss(8) lists TCP's, from AF_HPS's sock_diag (<linux/af_hps.h>,
 * Documentation/af_hps.rst "Socket statistics: hps-ss").
 *
 *   hps-ss [-a|-l] [-e] [-i] [-p] [-n] [-H] [-j] [-4|-6] [-N NETNS]
 *          [-s STATE]... [--src ADDR[:PORT]] [--dst ADDR[:PORT]]
 *          [--sport PORT] [--dport PORT]
 *   hps-ss -S [-j] [-N NETNS]        the namespace's counters
 *
 * Without -a or -l it shows connected sockets (every state but LISTEN,
 * UNCONN, SYN-RECV and TIME-WAIT, as ss does).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/af_hps.h>

/* TCP_* states (include/net/tcp_states.h) and ss's names for them */
static const char *const state_name[] = {
	[1] = "ESTAB", [2] = "SYN-SENT", [3] = "SYN-RECV", [4] = "FIN-WAIT-1",
	[5] = "FIN-WAIT-2", [6] = "TIME-WAIT", [7] = "UNCONN",
	[8] = "CLOSE-WAIT", [9] = "LAST-ACK", [10] = "LISTEN", [11] = "CLOSING",
};

/* A state's name; "?" for one this program does not know. */
static const char *state_str(unsigned int state)
{
	if (state >= sizeof(state_name) / sizeof(state_name[0]) ||
	    !state_name[state])
		return "?";
	return state_name[state];
}

static const struct {
	const char *name;
	unsigned int mask;
} state_arg[] = {
	{ "established", 1 << 1 }, { "syn-sent", 1 << 2 },
	{ "syn-recv", 1 << 3 }, { "fin-wait-1", 1 << 4 },
	{ "fin-wait-2", 1 << 5 }, { "time-wait", 1 << 6 },
	{ "closed", 1 << 7 }, { "unconn", 1 << 7 }, { "close-wait", 1 << 8 },
	{ "last-ack", 1 << 9 }, { "listening", 1 << 10 },
	{ "listen", 1 << 10 }, { "closing", 1 << 11 },
	{ "all", 0xffe },
	/* ss's groups */
	{ "connected", 0xffe & ~(1 << 10 | 1 << 7) },
	{ "synchronized", 0xffe & ~(1 << 10 | 1 << 7 | 1 << 2) },
	{ "bucket", 1 << 3 | 1 << 6 },
	{ "big", 0xffe & ~(1 << 3 | 1 << 6) },
};

#define SS_CONN	(0xffe & ~(1 << 10 | 1 << 7 | 1 << 3 | 1 << 6))

struct addr_filter {
	int set;
	int family;		/* 0: any */
	unsigned char addr[16];	/* all zero: any */
	int port;		/* -1: any */
};

static struct {
	unsigned int states;
	int extended, info, procs, header, json, family, stats;
	struct addr_filter src, dst;
} opt = { .header = 1 };

/* inode -> "("comm",pid=N,fd=M)" list, from /proc/PID/fd (-p) */
struct owner {
	unsigned int ino;
	char *users;
};

static struct owner *owners;
static size_t nowners;

static void add_owner(unsigned int ino, const char *comm, int pid, int fd)
{
	char one[128];
	size_t i;

	snprintf(one, sizeof(one), "(\"%s\",pid=%d,fd=%d)", comm, pid, fd);
	for (i = 0; i < nowners; i++) {
		if (owners[i].ino == ino) {
			char *n;

			if (asprintf(&n, "%s,%s", owners[i].users, one) < 0)
				return;
			free(owners[i].users);
			owners[i].users = n;
			return;
		}
	}
	owners = realloc(owners, (nowners + 1) * sizeof(*owners));
	if (!owners)
		exit(1);
	owners[nowners].ino = ino;
	owners[nowners].users = strdup(one);
	nowners++;
}

/* Every socket descriptor this user may see, as ss -p finds them. */
static void scan_procs(void)
{
	DIR *proc = opendir("/proc"), *fds;
	struct dirent *p, *f;
	char path[300], link[64], comm[64];

	if (!proc)
		return;
	while ((p = readdir(proc))) {
		FILE *cf;
		int pid;

		if (!isdigit((unsigned char)p->d_name[0]))
			continue;
		pid = atoi(p->d_name);
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		cf = fopen(path, "r");
		comm[0] = 0;
		if (cf) {
			if (fgets(comm, sizeof(comm), cf))
				comm[strcspn(comm, "\n")] = 0;
			fclose(cf);
		}
		snprintf(path, sizeof(path), "/proc/%d/fd", pid);
		fds = opendir(path);
		if (!fds)
			continue;	/* not ours to see */
		while ((f = readdir(fds))) {
			unsigned int ino;
			ssize_t n;

			if (!isdigit((unsigned char)f->d_name[0]))
				continue;
			snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid,
				 f->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = 0;
			if (sscanf(link, "socket:[%u]", &ino) == 1)
				add_owner(ino, comm, pid, atoi(f->d_name));
		}
		closedir(fds);
	}
	closedir(proc);
}

static const char *users_of(unsigned int ino)
{
	size_t i;

	for (i = 0; ino && i < nowners; i++)
		if (owners[i].ino == ino)
			return owners[i].users;
	return NULL;
}

/* "ADDR:PORT" of one end; "*:*" for none. */
static void fmt_addr(char *out, size_t len, int family, const __be32 *a,
		     __be16 port)
{
	char ip[INET6_ADDRSTRLEN], p[8];
	static const __be32 zero[4];

	if (port)
		snprintf(p, sizeof(p), "%u", ntohs(port));
	else
		snprintf(p, sizeof(p), "*");
	if (family == AF_INET6) {
		if (!memcmp(a, zero, 16))
			snprintf(out, len, "[::]:%s", p);
		else
			snprintf(out, len, "[%s]:%s",
				 inet_ntop(AF_INET6, a, ip, sizeof(ip)), p);
	} else if (family == AF_INET) {
		if (!a[0])
			snprintf(out, len, "0.0.0.0:%s", p);
		else
			snprintf(out, len, "%s:%s",
				 inet_ntop(AF_INET, a, ip, sizeof(ip)), p);
	} else {
		snprintf(out, len, "*:%s", p);
	}
}

/* ADDR, ADDR:PORT, [ADDR6]:PORT, :PORT or *:PORT */
static int parse_filter(const char *s, struct addr_filter *f)
{
	char buf[128], *port = NULL, *a = buf;

	snprintf(buf, sizeof(buf), "%s", s);
	memset(f, 0, sizeof(*f));
	f->set = 1;
	f->port = -1;
	if (buf[0] == '[') {
		char *e = strchr(buf, ']');

		if (!e)
			return -1;
		*e = 0;
		a = buf + 1;
		if (e[1] == ':')
			port = e + 2;
	} else if (strchr(buf, '.') || !strchr(buf, ':') ||
		   strchr(buf, ':') == strrchr(buf, ':')) {
		port = strrchr(buf, ':');
		if (port)
			*port++ = 0;
	}
	if (port && *port && strcmp(port, "*"))
		f->port = atoi(port);
	if (!*a || !strcmp(a, "*"))
		return 0;
	if (inet_pton(AF_INET, a, f->addr) == 1)
		f->family = AF_INET;
	else if (inet_pton(AF_INET6, a, f->addr) == 1)
		f->family = AF_INET6;
	else
		return -1;
	return 0;
}

static int filter_ok(const struct addr_filter *f, int family,
		     const __be32 *a, __be16 port)
{
	if (!f->set)
		return 1;
	if (f->port >= 0 && ntohs(port) != f->port)
		return 0;
	if (!f->family)
		return 1;
	if (f->family != family)
		return 0;
	return !memcmp(f->addr, a, family == AF_INET ? 4 : 16);
}

/* The attributes of one message, by type; NULL where absent. */
static void parse_attrs(struct nlattr **tb, int max, void *data, int len)
{
	struct nlattr *a = data;

	memset(tb, 0, sizeof(*tb) * (max + 1));
	while (len >= (int)sizeof(*a) && a->nla_len >= sizeof(*a) &&
	       a->nla_len <= len) {
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type <= max)
			tb[type] = a;
		len -= NLA_ALIGN(a->nla_len);
		a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
	}
}

/* Copy an attribute into a structure: shorter ones leave zeros. */
static void attr_copy(void *dst, size_t size, const struct nlattr *a)
{
	size_t n;

	memset(dst, 0, size);
	if (!a)
		return;
	n = a->nla_len - NLA_HDRLEN;
	memcpy(dst, (const char *)a + NLA_HDRLEN, n < size ? n : size);
}

static int first = 1;

static const char *busypoll_state(const struct hps_diag_busypoll *b)
{
	switch (b->hdb_state) {
	case HPS_BUSYPOLL_ABSENT:
		return "absent";
	case HPS_BUSYPOLL_OFF:
		return "off";
	default:
		return "on";
	}
}

/* struct hps_diag_rdma's transport, and why it fell back */
static const char *fallback_str(const struct hps_diag_rdma *rd)
{
	static const char * const names[] = {
		[HPS_FB_NONE] = "none",
		[HPS_FB_NO_DEVICE] = "no_device",
		[HPS_FB_REFUSED] = "refused",
		[HPS_FB_REJECTED] = "rejected",
		[HPS_FB_UNREACHABLE] = "unreachable",
		[HPS_FB_PEER_ERROR] = "peer_error",
		[HPS_FB_RESOURCE] = "resource",
		[HPS_FB_TCP_CLIENT] = "tcp_client",
	};

	if (rd->hdr_fallback < sizeof(names) / sizeof(names[0]))
		return names[rd->hdr_fallback];
	return "?";
}

static void show_json(const struct hps_diag_msg *r, struct nlattr **tb,
		      const char *src, const char *dst)
{
	struct hps_diag_rdma rd;
	struct hps_diag_flow fl;
	struct hps_diag_counters c;
	struct hps_diag_zcopy z;
	struct hps_diag_keepalive k;
	struct hps_diag_busypoll b;
	const char *users = users_of(r->hdiag_inode);

	attr_copy(&rd, sizeof(rd), tb[HPS_DIAG_RDMA]);
	attr_copy(&fl, sizeof(fl), tb[HPS_DIAG_FLOW]);
	attr_copy(&c, sizeof(c), tb[HPS_DIAG_COUNTERS]);
	attr_copy(&z, sizeof(z), tb[HPS_DIAG_ZCOPY]);
	attr_copy(&k, sizeof(k), tb[HPS_DIAG_KEEPALIVE]);
	attr_copy(&b, sizeof(b), tb[HPS_DIAG_BUSYPOLL]);
	rd.hdr_dev[sizeof(rd.hdr_dev) - 1] = 0;
	printf("%s{\"state\":\"%s\",\"recv_q\":%u,\"send_q\":%u,"
	       "\"local\":\"%s\",\"peer\":\"%s\",\"shutdown\":%u,"
	       "\"uid\":%u,\"inode\":%u,\"cookie\":%llu,",
	       first ? "" : ",\n", state_str(r->hdiag_state),
	       r->hdiag_rqueue, r->hdiag_wqueue, src, dst,
	       r->hdiag_shutdown, r->hdiag_uid, r->hdiag_inode,
	       (unsigned long long)r->hdiag_cookie[1] << 32 |
	       r->hdiag_cookie[0]);
	printf("\"users\":\"");
	for (; users && *users; users++)
		printf(*users == '"' ? "\\\"" : "%c", *users);
	printf("\",\"dev\":\"%s\",\"port\":%u,\"qpn\":%u,", rd.hdr_dev,
	       rd.hdr_port, rd.hdr_qpn);
	printf("\"transport\":\"%s\",\"fallback\":\"%s\",",
	       rd.hdr_transport == HPS_TRANSPORT_TCP ? "tcp" :
	       rd.hdr_transport == HPS_TRANSPORT_RDMA_TCP ? "rdma+tcp" :
	       "rdma",
	       fallback_str(&rd));
	printf("\"version\":%u,\"credits\":%u,\"peer_credits\":%u,"
	       "\"rx_bufs\":%u,\"tx_bufs\":%u,\"peer_window\":%u,"
	       "\"buf_size\":%u,\"window_bytes\":%llu,\"rx_queued\":%u,"
	       "\"tx_queued\":%u,\"stalls\":%u,\"stalled\":%u,",
	       fl.hdf_version, fl.hdf_credits, fl.hdf_peer_credits,
	       fl.hdf_rx_bufs, fl.hdf_tx_bufs, fl.hdf_peer_window,
	       fl.hdf_buf_size,
	       (unsigned long long)fl.hdf_rx_bufs * fl.hdf_buf_size,
	       fl.hdf_rx_queued, fl.hdf_tx_queued, fl.hdf_stalls,
	       fl.hdf_stalled);
	printf("\"rx_win\":%u,\"rx_buf\":%u,\"mem_kib\":%u,",
	       fl.hdf_rx_win, fl.hdf_rx_buf, fl.hdf_mem_kib);
	printf("\"bytes_sent\":%llu,\"bytes_received\":%llu,"
	       "\"msgs_sent\":%llu,\"msgs_received\":%llu,",
	       (unsigned long long)c.hdc_tx_bytes,
	       (unsigned long long)c.hdc_rx_bytes,
	       (unsigned long long)c.hdc_tx_msgs,
	       (unsigned long long)c.hdc_rx_msgs);
	printf("\"zcopy_thresh\":%u,\"zcopy_capable\":%d,\"zcopy_tx\":%d,"
	       "\"zcopy_tx_len\":%u,\"zcopy_rx\":%d,\"zcopy_rx_len\":%u,"
	       "\"zcopy_reading\":%d,",
	       z.hdz_thresh, !!(z.hdz_flags & HPS_DIAG_ZC_CAPABLE),
	       !!(z.hdz_flags & HPS_DIAG_ZC_TX), z.hdz_tx_len,
	       !!(z.hdz_flags & HPS_DIAG_ZC_RX), z.hdz_rx_len,
	       !!(z.hdz_flags & HPS_DIAG_ZC_READING));
	printf("\"keepalive\":%u,\"keepidle_ms\":%u,\"keepintvl_ms\":%u,"
	       "\"keepcnt\":%u,\"user_timeout_ms\":%u,\"keepalive_probes\":%u,"
	       "\"busypoll\":\"%s\",\"busypoll_us\":%u}",
	       k.hdk_on, k.hdk_idle_ms, k.hdk_intvl_ms, k.hdk_cnt,
	       k.hdk_user_timeout_ms, k.hdk_probes,
	       busypoll_state(&b), b.hdb_usecs);
	first = 0;
}

static void show_text(const struct hps_diag_msg *r, struct nlattr **tb,
		      const char *src, const char *dst)
{
	const char *users = users_of(r->hdiag_inode);

	printf("%-10s %-6u %-6u %25s %25s", state_str(r->hdiag_state),
	       r->hdiag_rqueue, r->hdiag_wqueue, src, dst);
	if (opt.procs && users)
		printf(" users:(%s)", users);
	if (opt.extended)
		printf(" uid:%u ino:%u sk:%llx", r->hdiag_uid, r->hdiag_inode,
		       (unsigned long long)r->hdiag_cookie[1] << 32 |
		       r->hdiag_cookie[0]);
	printf("\n");
	if (opt.info) {
		struct hps_diag_rdma rd;
		struct hps_diag_flow fl;
		struct hps_diag_counters c;
		struct hps_diag_zcopy z;
		struct hps_diag_keepalive k;
		struct hps_diag_busypoll b;

		attr_copy(&rd, sizeof(rd), tb[HPS_DIAG_RDMA]);
		attr_copy(&fl, sizeof(fl), tb[HPS_DIAG_FLOW]);
		attr_copy(&c, sizeof(c), tb[HPS_DIAG_COUNTERS]);
		attr_copy(&z, sizeof(z), tb[HPS_DIAG_ZCOPY]);
		attr_copy(&k, sizeof(k), tb[HPS_DIAG_KEEPALIVE]);
		attr_copy(&b, sizeof(b), tb[HPS_DIAG_BUSYPOLL]);
		rd.hdr_dev[sizeof(rd.hdr_dev) - 1] = 0;
		if (rd.hdr_transport == HPS_TRANSPORT_TCP)
			printf("\t tcp fallback:%s", fallback_str(&rd));
		else
			printf("\t %s/%u qpn:%u%s",
			       rd.hdr_dev[0] ? rd.hdr_dev : "-",
			       rd.hdr_port, rd.hdr_qpn,
			       rd.hdr_transport == HPS_TRANSPORT_RDMA_TCP ?
			       " +tcp" : "");
		if (fl.hdf_version)
			printf(" v%u credits:%u/%u peer_credits:%u/%u window:%ux%u/%ux%u tx_bufs:%u",
			       fl.hdf_version, fl.hdf_credits,
			       fl.hdf_peer_window, fl.hdf_peer_credits,
			       fl.hdf_rx_bufs, fl.hdf_rx_win, fl.hdf_rx_buf,
			       fl.hdf_rx_bufs, fl.hdf_buf_size, fl.hdf_tx_bufs);
		printf(" mem:%uK", fl.hdf_mem_kib);
		printf(" rx_queued:%u tx_queued:%u stalls:%u%s",
		       fl.hdf_rx_queued, fl.hdf_tx_queued, fl.hdf_stalls,
		       fl.hdf_stalled ? " stalled" : "");
		printf(" bytes_sent:%llu bytes_received:%llu msgs_sent:%llu msgs_received:%llu",
		       (unsigned long long)c.hdc_tx_bytes,
		       (unsigned long long)c.hdc_rx_bytes,
		       (unsigned long long)c.hdc_tx_msgs,
		       (unsigned long long)c.hdc_rx_msgs);
		if (z.hdz_thresh || z.hdz_flags)
			printf(" zcopy:%u%s", z.hdz_thresh,
			       z.hdz_flags & HPS_DIAG_ZC_CAPABLE ? "" :
			       ",not-set-up");
		else
			printf(" zcopy:off");
		if (z.hdz_flags & HPS_DIAG_ZC_TX)
			printf(" zcopy_tx:%u", z.hdz_tx_len);
		if (z.hdz_flags & HPS_DIAG_ZC_RX)
			printf(" zcopy_rx:%u%s", z.hdz_rx_len,
			       z.hdz_flags & HPS_DIAG_ZC_READING ?
			       ",reading" : "");
		printf(" keepalive:%s,%u/%u/%u probes:%u user_timeout:%u",
		       k.hdk_on ? "on" : "off", k.hdk_idle_ms, k.hdk_intvl_ms,
		       k.hdk_cnt, k.hdk_probes, k.hdk_user_timeout_ms);
		if (b.hdb_state == HPS_BUSYPOLL_ON)
			printf(" busypoll:%uus\n", b.hdb_usecs);
		else
			printf(" busypoll:%s\n", busypoll_state(&b));
	}
}

static void show_sock(struct nlmsghdr *h)
{
	struct hps_diag_msg *r = NLMSG_DATA(h);
	struct nlattr *tb[HPS_DIAG_MAX + 1];
	char src[64], dst[64];
	int fam = r->hdiag_addr_family;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*r)))
		return;
	if (opt.family && fam != opt.family)
		return;
	if (!filter_ok(&opt.src, fam, r->hdiag_src, r->hdiag_sport) ||
	    !filter_ok(&opt.dst, fam, r->hdiag_dst, r->hdiag_dport))
		return;
	parse_attrs(tb, HPS_DIAG_MAX, (char *)r + NLMSG_ALIGN(sizeof(*r)),
		    h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(*r))));
	fmt_addr(src, sizeof(src), fam, r->hdiag_src, r->hdiag_sport);
	fmt_addr(dst, sizeof(dst), fam, r->hdiag_dst, r->hdiag_dport);
	if (opt.json)
		show_json(r, tb, src, dst);
	else
		show_text(r, tb, src, dst);
}

static void show_stats(struct nlmsghdr *h)
{
	struct hps_diag_stats *r = NLMSG_DATA(h);
	int len = h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(*r)));
	struct nlattr *a = (void *)((char *)r + NLMSG_ALIGN(sizeof(*r)));

	if (opt.json)
		printf("{");
	while (len >= (int)sizeof(*a) && a->nla_len >= sizeof(*a) &&
	       a->nla_len <= len) {
		struct nlattr *tb[HPS_DIAG_STAT_MAX + 1];
		long long v = 0;

		if ((a->nla_type & NLA_TYPE_MASK) == HPS_DIAG_STAT) {
			parse_attrs(tb, HPS_DIAG_STAT_MAX,
				    (char *)a + NLA_HDRLEN,
				    a->nla_len - NLA_HDRLEN);
			if (tb[HPS_DIAG_STAT_NAME] && tb[HPS_DIAG_STAT_VALUE]) {
				memcpy(&v, (char *)tb[HPS_DIAG_STAT_VALUE] +
				       NLA_HDRLEN, sizeof(v));
				printf(opt.json ? "%s\"%s\":%lld" : "%s%s %lld\n",
				       opt.json && !first ? "," : "",
				       (char *)tb[HPS_DIAG_STAT_NAME] + NLA_HDRLEN,
				       v);
				first = 0;
			}
		}
		len -= NLA_ALIGN(a->nla_len);
		a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
	}
	if (opt.json)
		printf("}\n");
}

/* One dump; 0, or an errno. */
static int dump(int what)
{
	struct {
		struct nlmsghdr nlh;
		struct hps_diag_req req;
	} msg = {
		.nlh = {
			.nlmsg_len = sizeof(msg),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = 1,
		},
		.req = {
			.sdiag_family = AF_HPS,
			.sdiag_protocol = what,
			.hdiag_states = opt.states,
			.hdiag_show = HPS_SHOW_RDMA | HPS_SHOW_FLOW |
				      HPS_SHOW_COUNTERS | HPS_SHOW_ZCOPY |
				      HPS_SHOW_KEEPALIVE | HPS_SHOW_BUSYPOLL,
		},
	};
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	static char buf[65536] __attribute__((aligned(8)));
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
			NETLINK_SOCK_DIAG);
	int done = 0, err = 0;

	if (fd < 0)
		return errno;
	if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&nl,
		   sizeof(nl)) < 0) {
		err = errno;
		close(fd);
		return err;
	}
	while (!done) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			break;
		}
		if (!n)
			break;
		for (h = (void *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				err = -e->error;
				done = 1;
				break;
			}
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
				continue;
			if (what == HPS_DIAG_STATS)
				show_stats(h);
			else
				show_sock(h);
		}
	}
	close(fd);
	return err;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: hps-ss [-a|-l] [-e] [-i] [-p] [-n] [-H] [-j] [-4|-6] [-N NETNS]\n"
"              [-s STATE]... [--src ADDR[:PORT]] [--dst ADDR[:PORT]]\n"
"              [--sport PORT] [--dport PORT]\n"
"       hps-ss -S [-j] [-N NETNS]\n"
"AF_HPS sockets of this network namespace, as ss(8) shows TCP's.\n"
"  -a, --all          every socket     -l, --listening  listening ones\n"
"  -e, --extended     uid, inode, cookie\n"
"  -i, --info         RDMA device/port and QP (or \"tcp fallback:WHY\"),\n"
"                     credits, window, queues, counters, zero copy,\n"
"                     keepalive, busy polling\n"
"  -p, --processes    owning processes (those this user may see)\n"
"  -j, --json         JSON: every field, one socket per line\n"
"  -s, --state STATE  established, syn-sent, syn-recv, fin-wait-1,\n"
"                     fin-wait-2, time-wait, closed, close-wait, last-ack,\n"
"                     listening, closing, all, connected, synchronized,\n"
"                     bucket, big (repeatable)\n"
"  -4, -6             IPv4 or IPv6 only; -n: numeric (always)\n"
"  -H, --no-header    -N, --net NETNS: in /var/run/netns/NETNS (or a path)\n"
"  -S, --stats        the namespace's counters (/proc/net/hps_stat)\n");
}

static int enter_netns(const char *name)
{
	char path[512];
	int fd;

	if (strchr(name, '/'))
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "hps-ss: network namespace %s: %s\n", name,
			strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "listening", no_argument, NULL, 'l' },
		{ "extended", no_argument, NULL, 'e' },
		{ "info", no_argument, NULL, 'i' },
		{ "processes", no_argument, NULL, 'p' },
		{ "numeric", no_argument, NULL, 'n' },
		{ "no-header", no_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "state", required_argument, NULL, 's' },
		{ "net", required_argument, NULL, 'N' },
		{ "stats", no_argument, NULL, 'S' },
		{ "src", required_argument, NULL, 1 },
		{ "dst", required_argument, NULL, 2 },
		{ "sport", required_argument, NULL, 3 },
		{ "dport", required_argument, NULL, 4 },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	unsigned int states = 0;
	int c, all = 0, listening = 0, err;
	size_t i;

	while ((c = getopt_long(argc, argv, "aleipnHjs:N:S46h", lo,
				NULL)) != -1) {
		switch (c) {
		case 'a': all = 1; break;
		case 'l': listening = 1; break;
		case 'e': opt.extended = 1; break;
		case 'i': opt.info = 1; break;
		case 'p': opt.procs = 1; break;
		case 'n': break;
		case 'H': opt.header = 0; break;
		case 'j': opt.json = 1; break;
		case 'S': opt.stats = 1; break;
		case '4': opt.family = AF_INET; break;
		case '6': opt.family = AF_INET6; break;
		case 'N':
			if (enter_netns(optarg))
				return 1;
			break;
		case 's':
			for (i = 0; i < sizeof(state_arg) / sizeof(state_arg[0]); i++)
				if (!strcmp(optarg, state_arg[i].name))
					break;
			if (i == sizeof(state_arg) / sizeof(state_arg[0])) {
				fprintf(stderr, "hps-ss: unknown state %s\n",
					optarg);
				return 2;
			}
			states |= state_arg[i].mask;
			break;
		case 1: case 2:
			if (parse_filter(optarg, c == 1 ? &opt.src : &opt.dst)) {
				fprintf(stderr, "hps-ss: bad address %s\n",
					optarg);
				return 2;
			}
			break;
		case 3: case 4: {
			struct addr_filter *f = c == 3 ? &opt.src : &opt.dst;

			f->set = 1;
			f->port = atoi(optarg);
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	if (opt.stats) {
		err = dump(HPS_DIAG_STATS);
	} else {
		if (states)
			opt.states = states;
		else if (all)
			opt.states = 0xffe;
		else if (listening)
			opt.states = 1 << 10;
		else
			opt.states = SS_CONN;
		if (opt.procs)
			scan_procs();
		if (opt.json)
			printf("[\n");
		else if (opt.header)
			printf("%-10s %-6s %-6s %25s %25s%s\n", "State",
			       "Recv-Q", "Send-Q", "Local Address:Port",
			       "Peer Address:Port", opt.procs ? " Process" : "");
		err = dump(HPS_DIAG_SOCKS);
		if (opt.json)
			printf("%s]\n", first ? "" : "\n");
	}
	if (err) {
		fprintf(stderr, "hps-ss: %s%s\n", strerror(err),
			err == ENOENT ? " (is af_hps.ko loaded?)" : "");
		return 1;
	}
	return 0;
}
