// SPDX-License-Identifier: GPL-2.0
/*
 * what: splice to a socket
 * have: up to 6.4, proto_ops.sendpage, which splice and sendfile call;
 *       since 6.5 they call proto_ops.sendmsg with MSG_SPLICE_PAGES.
 *       (Debian's 6.1 defines MSG_SPLICE_PAGES but still has sendpage.)
 */
#include <linux/net.h>
#include <linux/socket.h>
#include <net/sock.h>
#ifdef HPS_PROBE_HAVE
const struct proto_ops hps_probe = { .sendpage = sock_no_sendpage };
#else
int hps_probe = MSG_SPLICE_PAGES;
#endif
