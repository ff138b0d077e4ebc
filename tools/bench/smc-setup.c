// SPDX-License-Identifier: GPL-2.0
/*
 * smc-setup: the two SMC-R settings that SMC-Rv2 over Soft-RoCE needs, set
 * through SMC's generic netlink families with a raw netlink socket (Debian
 * has no smc-tools):
 *
 *   smc-setup ueid-add EID                     SMC_GEN_NETLINK ADD_UEID
 *   smc-setup ueid-flush                       SMC_GEN_NETLINK FLUSH_UEID
 *   smc-setup pnet-add PNETID ETH IBDEV [PORT] SMC_PNETID ADD
 *   smc-setup pnet-flush                       SMC_PNETID FLUSH
 *   smc-setup fallbacks                        SMC_GEN_NETLINK GET_FBACK_STATS
 *
 * A user EID is up to 32 characters (upper-case letters, digits, '.', '-');
 * the kernel wants exactly 32, padded with blanks, and a NUL. A pnet table
 * entry ties the network interface ETH and port PORT (1) of the RDMA device
 * IBDEV to one pnet id, which is what lets SMC find a device (rxe, which
 * has no get_netdev op in 6.1) for connections over ETH.
 *
 * fallbacks prints why AF_SMC connections fell back to TCP, one line per
 * reason the kernel has counted: "client|server REASON COUNT NAME", REASON
 * being an SMC_CLC_DECL_* code of net/smc/smc_clc.h.
 *
 * Layouts from include/uapi/linux/smc.h and net/smc/smc_pnet.c,
 * net/smc/smc_clc.c of Linux 6.1. Exit status 0 on success, 1 on an error
 * (printed with the kernel's errno), 2 on bad usage.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

/* from include/uapi/linux/smc.h (6.1), so that old headers do not matter */
#define SMCR_FAMILY		"SMC_PNETID"
#define SMC_GEN_FAMILY		"SMC_GEN_NETLINK"
#define PNETID_ADD		2	/* SMC_PNETID_ADD */
#define PNETID_FLUSH		4	/* SMC_PNETID_FLUSH */
#define PNETID_A_NAME		1	/* SMC_PNETID_NAME, NUL string */
#define PNETID_A_ETHNAME	2	/* SMC_PNETID_ETHNAME, NUL string */
#define PNETID_A_IBNAME		3	/* SMC_PNETID_IBNAME, NUL string */
#define PNETID_A_IBPORT		4	/* SMC_PNETID_IBPORT, u8 */
#define GEN_GET_FBACK_STATS	8	/* SMC_NETLINK_GET_FBACK_STATS */
#define GEN_ADD_UEID		10	/* SMC_NETLINK_ADD_UEID */
#define GEN_FLUSH_UEID		12	/* SMC_NETLINK_FLUSH_UEID */
#define EID_A_ENTRY		1	/* SMC_NLA_EID_TABLE_ENTRY */
#define GEN_A_FBACK_STATS	8	/* SMC_GEN_FBACK_STATS, nest */
#define FBACK_A_TYPE		1	/* SMC_NLA_FBACK_STATS_TYPE, u8 */
#define FBACK_A_RSN_CODE	4	/* SMC_NLA_FBACK_STATS_RSN_CODE, u32 */
#define FBACK_A_RSN_CNT		5	/* SMC_NLA_FBACK_STATS_RSN_CNT, u16 */
#define MAX_EID_LEN		32	/* SMC_MAX_EID_LEN */
#define MAX_PNETID_LEN		16	/* SMC_MAX_PNETID_LEN */

struct msg {
	struct nlmsghdr n;
	struct genlmsghdr g;
	char buf[1024];
};

static int fd;
static uint32_t seq;
/* called by talk() for each answer of the family asked (dumps) */
static void (*on_msg)(struct genlmsghdr *g, int len);

static void put_attr(struct msg *m, uint16_t type, const void *data,
		     size_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)m + NLMSG_ALIGN(m->n.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	m->n.nlmsg_len = NLMSG_ALIGN(m->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void init_msg(struct msg *m, uint16_t family, uint8_t cmd)
{
	memset(m, 0, sizeof(*m));
	m->n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m->n.nlmsg_type = family;
	m->n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	m->n.nlmsg_seq = ++seq;
	m->g.cmd = cmd;
	m->g.version = 1;
}

/*
 * Send m, read the answer; for CTRL_CMD_GETFAMILY return the family id
 * found in it. Return: >= 0 on success, -errno on failure.
 */
static int talk(struct msg *m)
{
	char rbuf[8192];
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int family = 0;

	if (sendto(fd, m, m->n.nlmsg_len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0)
		return -errno;
	for (;;) {
		ssize_t r = recv(fd, rbuf, sizeof(rbuf), 0);
		struct nlmsghdr *h;

		if (r < 0)
			return -errno;
		for (h = (struct nlmsghdr *)rbuf; NLMSG_OK(h, r);
		     h = NLMSG_NEXT(h, r)) {
			if (h->nlmsg_seq != m->n.nlmsg_seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : family;
			}
			if (h->nlmsg_type == GENL_ID_CTRL) {
				struct genlmsghdr *g = NLMSG_DATA(h);
				struct nlattr *a = (struct nlattr *)((char *)g + GENL_HDRLEN);
				int len = h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);

				while (len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
				       a->nla_len <= len) {
					if (a->nla_type == CTRL_ATTR_FAMILY_ID)
						family = *(uint16_t *)((char *)a + NLA_HDRLEN);
					len -= NLA_ALIGN(a->nla_len);
					a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
				}
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return family;
			if (on_msg && h->nlmsg_type == m->n.nlmsg_type)
				on_msg(NLMSG_DATA(h),
				       h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN));
		}
	}
}

static int family_id(const char *name)
{
	struct msg m;
	int id;

	init_msg(&m, GENL_ID_CTRL, CTRL_CMD_GETFAMILY);
	put_attr(&m, CTRL_ATTR_FAMILY_NAME, name, strlen(name) + 1);
	id = talk(&m);
	if (id <= 0) {
		fprintf(stderr, "smc-setup: generic netlink family %s: %s (is the smc module loaded?)\n",
			name, id ? strerror(-id) : "no id");
		exit(1);
	}
	return id;
}

#define for_each_attr(a, start, len) \
	for (a = (struct nlattr *)(start); \
	     (len) >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && \
	     a->nla_len <= (len); \
	     (len) -= NLA_ALIGN(a->nla_len), \
	     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))

static const struct {
	uint32_t code;
	const char *name;
} reasons[] = {
	{ 0x01010000, "DECL_MEM" },
	{ 0x02010000, "DECL_TIMEOUT_CL" },
	{ 0x02020000, "DECL_TIMEOUT_AL" },
	{ 0x03000000, "DECL_CNFERR" },
	{ 0x03010000, "DECL_PEERNOSMC" },
	{ 0x03020000, "DECL_IPSEC" },
	{ 0x03030000, "DECL_NOSMCDEV" },
	{ 0x03030001, "DECL_NOSMCDDEV" },
	{ 0x03030002, "DECL_NOSMCRDEV" },
	{ 0x03030004, "DECL_NOV2EXT" },
	{ 0x03030006, "DECL_NOSEID" },
	{ 0x03030007, "DECL_NOSMCD2DEV" },
	{ 0x03030008, "DECL_NOUEID" },
	{ 0x03040000, "DECL_MODEUNSUPP" },
	{ 0x03070000, "DECL_DIFFPREFIX" },
	{ 0x030a0000, "DECL_NOACTLINK" },
	{ 0x030b0000, "DECL_NOSRVLINK" },
	{ 0x030c0000, "DECL_VERSMISMAT" },
	{ 0x030e0000, "DECL_NOROUTE" },
	{ 0x030f0000, "DECL_NOINDIRECT" },
	{ 0x04000000, "DECL_SYNCERR" },
	{ 0x05000000, "DECL_PEERDECL" },
	{ 0x09990000, "DECL_INTERR" },
	{ 0x09990001, "DECL_ERR_RTOK" },
	{ 0x09990002, "DECL_ERR_RDYLNK" },
	{ 0x09990003, "DECL_ERR_REGBUF" },
};

/* one SMC_GEN_FBACK_STATS answer: a reason and its count */
static void print_fallback(struct genlmsghdr *g, int len)
{
	struct nlattr *a, *b;

	for_each_attr(a, (char *)g + GENL_HDRLEN, len) {
		int blen = a->nla_len - NLA_HDRLEN, server = 0;
		uint32_t code = 0;
		uint16_t count = 0;
		const char *name = "?";

		if ((a->nla_type & NLA_TYPE_MASK) != GEN_A_FBACK_STATS)
			continue;
		for_each_attr(b, (char *)a + NLA_HDRLEN, blen) {
			void *d = (char *)b + NLA_HDRLEN;

			if (b->nla_type == FBACK_A_TYPE)
				server = *(uint8_t *)d;
			else if (b->nla_type == FBACK_A_RSN_CODE)
				memcpy(&code, d, sizeof(code));
			else if (b->nla_type == FBACK_A_RSN_CNT)
				memcpy(&count, d, sizeof(count));
		}
		if (!code)
			continue;
		for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
			if (reasons[i].code == code)
				name = reasons[i].name;
		printf("%s 0x%08x %u SMC_CLC_%s\n", server ? "server" : "client",
		       code, count, name);
	}
}

static int done(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "smc-setup: %s: %s\n", what, strerror(-rc));
		return 1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: smc-setup ueid-add EID | ueid-flush |\n"
		"                 pnet-add PNETID ETHNAME IBDEV [IBPORT] | pnet-flush |\n"
		"                 fallbacks\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	const char *cmd = argc > 1 ? argv[1] : "";
	struct msg m;

	fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("smc-setup: netlink socket");
		return 1;
	}
	if (!strcmp(cmd, "ueid-add") && argc == 3) {
		char eid[MAX_EID_LEN + 1];
		size_t len = strlen(argv[2]);

		if (!len || len > MAX_EID_LEN) {
			fprintf(stderr, "smc-setup: an EID has 1 to %d characters\n",
				MAX_EID_LEN);
			return 2;
		}
		memset(eid, ' ', MAX_EID_LEN);
		for (size_t i = 0; i < len; i++)
			eid[i] = toupper((unsigned char)argv[2][i]);
		eid[MAX_EID_LEN] = 0;
		init_msg(&m, family_id(SMC_GEN_FAMILY), GEN_ADD_UEID);
		put_attr(&m, EID_A_ENTRY, eid, sizeof(eid));
		return done(talk(&m), "add user EID");
	}
	if (!strcmp(cmd, "ueid-flush") && argc == 2) {
		init_msg(&m, family_id(SMC_GEN_FAMILY), GEN_FLUSH_UEID);
		return done(talk(&m), "flush user EIDs");
	}
	if (!strcmp(cmd, "pnet-add") && (argc == 5 || argc == 6)) {
		uint8_t port = argc == 6 ? atoi(argv[5]) : 1;

		if (strlen(argv[2]) > MAX_PNETID_LEN) {
			fprintf(stderr, "smc-setup: a pnet id has at most %d characters\n",
				MAX_PNETID_LEN);
			return 2;
		}
		init_msg(&m, family_id(SMCR_FAMILY), PNETID_ADD);
		put_attr(&m, PNETID_A_NAME, argv[2], strlen(argv[2]) + 1);
		put_attr(&m, PNETID_A_ETHNAME, argv[3], strlen(argv[3]) + 1);
		put_attr(&m, PNETID_A_IBNAME, argv[4], strlen(argv[4]) + 1);
		put_attr(&m, PNETID_A_IBPORT, &port, 1);
		return done(talk(&m), "add pnet table entry");
	}
	if (!strcmp(cmd, "pnet-flush") && argc == 2) {
		init_msg(&m, family_id(SMCR_FAMILY), PNETID_FLUSH);
		return done(talk(&m), "flush the pnet table");
	}
	if (!strcmp(cmd, "fallbacks") && argc == 2) {
		init_msg(&m, family_id(SMC_GEN_FAMILY), GEN_GET_FBACK_STATS);
		m.n.nlmsg_flags |= NLM_F_DUMP;
		on_msg = print_fallback;
		return done(talk(&m), "fallback statistics");
	}
	usage();
	return 2;
}
