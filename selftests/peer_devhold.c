// SPDX-License-Identifier: GPL-2.0
/*
 * peer_devhold: helper of final_device_removal.sh (not a test itself).
 * Holds AF_HPS sockets on the RDMA device that have no connection, the
 * kind the removal must not wait for:
 *
 *   peer_devhold SELF UNREACHABLE PORT
 *
 * a socket only bound to SELF:PORT, and a socket bound to SELF whose
 * non-blocking connect() to UNREACHABLE:PORT is still resolving the
 * address (no neighbour answers, so that takes 2 s, or as long as the
 * test build's HPS_INJ_RESOLVE says: 10 s in final_device_removal.sh).
 * It prints "ready",
 * then waits for a line on standard input (sent once the device is gone)
 * and checks what became of them: the connect failed with ENETUNREACH
 * (EHOSTUNREACH or ETIMEDOUT would mean the removal waited for the
 * resolution), and the bound socket keeps its address but can no longer
 * listen on it (EADDRNOTAVAIL), as a TCP socket bound to an address that
 * is gone. Prints one line per check, exits 0 if all passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hps_util.h"

int main(int argc, char **argv)
{
	struct sockaddr_in self, any, dst, got;
	socklen_t len = sizeof(got);
	int bound, conn, err = 0, fail = 0;
	char line[16];
	struct pollfd p;

	if (argc != 4) {
		fprintf(stderr, "usage: peer_devhold SELF UNREACHABLE PORT\n");
		return 2;
	}
	hps_sin(&self, argv[1], atoi(argv[3]));
	hps_sin(&any, argv[1], 0);
	hps_sin(&dst, argv[2], atoi(argv[3]));

	bound = socket(AF_HPS, SOCK_STREAM, 0);
	conn = socket(AF_HPS, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (bound < 0 || conn < 0 ||
	    bind(bound, (struct sockaddr *)&self, sizeof(self)) ||
	    bind(conn, (struct sockaddr *)&any, sizeof(any))) {
		perror("peer_devhold: socket/bind");
		return 1;
	}
	if (!connect(conn, (struct sockaddr *)&dst, sizeof(dst)) ||
	    errno != EINPROGRESS) {
		perror("peer_devhold: connect did not start");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	p.fd = conn;
	p.events = POLLOUT;
	if (poll(&p, 1, 10000) != 1) {
		printf("FAIL: the connect is still pending after the removal\n");
		fail = 1;
	} else {
		len = sizeof(err);
		getsockopt(conn, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err != ENETUNREACH) {
			printf("FAIL: the connect ended with %s, not ENETUNREACH\n",
			       strerror(err));
			fail = 1;
		} else {
			printf("ok: the connect failed with ENETUNREACH\n");
		}
	}
	len = sizeof(got);
	if (getsockname(bound, (struct sockaddr *)&got, &len) ||
	    got.sin_port != self.sin_port) {
		printf("FAIL: the bound socket lost its address\n");
		fail = 1;
	}
	if (!listen(bound, 1)) {
		printf("FAIL: listen() on an address without a device succeeded\n");
		fail = 1;
	} else if (errno != EADDRNOTAVAIL) {
		printf("FAIL: listen() on an address without a device: %s, not EADDRNOTAVAIL\n",
		       strerror(errno));
		fail = 1;
	} else {
		printf("ok: the bound socket kept its address, listen() says EADDRNOTAVAIL\n");
	}
	close(conn);
	close(bound);
	return fail;
}
