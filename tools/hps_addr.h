/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the user-space tools: an IPv4 or IPv6 literal and a port into
 * the struct sockaddr_in(6) that AF_HPS, like TCP, takes.
 */
#ifndef HPS_ADDR_H
#define HPS_ADDR_H

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

/* Return: 0, or -1 when @a is not an address literal. */
static inline int hps_parse_addr(const char *a, int port,
				 struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, a, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, a, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*len = sizeof(*sin6);
		return 0;
	}
	return -1;
}

#endif /* HPS_ADDR_H */
