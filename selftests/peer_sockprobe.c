// SPDX-License-Identifier: GPL-2.0
/*
 * peer_sockprobe: helper of hps_preload (not a test itself). Creates the
 * sockets named on its command line, optionally sets an option, binds,
 * listens or connects them, and prints one line per socket with the family
 * the kernel reports (SO_DOMAIN) and the descriptor flags, so that a test
 * can run it under hps_run and see what the preload library did.
 *
 *   peer_sockprobe [-p LABEL] SPEC|OP... [fork-exec|fork-exec-clean SPEC...]
 *
 * SPEC is KIND[,OPT]... with KIND one of tcp4, tcp6, tcp4p, tcp6p (protocol
 * IPPROTO_TCP), udp4, udp6, unix, seqpacket (AF_UNIX), raw (AF_INET
 * SOCK_RAW, needs CAP_NET_RAW), and OPT one of nb (SOCK_NONBLOCK), ce
 * (SOCK_CLOEXEC), opt (SO_REUSEADDR before anything else, reported back),
 * bind=ADDR, listen, connect=ADDR; ADDR is a.b.c.d:PORT or [v6]:PORT.
 * Output, one line per socket:
 *
 *   LABEL KIND domain=N nonblock=0|1 cloexec=0|1 [reuseaddr=N] [bind=ok|ERR]
 *         [listen=ok|ERR] [connect=ok|ERR]      (one line)
 *
 * More OPTs, in the order given, each adding its result to the line:
 * keepalive, nodelay, rcvbuf=N, linger (on, 7 s), tos=N (IP_TOS), freebind,
 * transparent (IP_TRANSPARENT), v6only, nport (IP_BIND_ADDRESS_NO_PORT):
 * set the option (" NAME=ERR" if that failed); filter: attach a classic BPF
 * filter (accept all) and then overwrite the program in memory with one
 * that drops all, as a program may reuse the memory; bpf: attach an eBPF
 * socket filter and then close its descriptor and open /dev/null on the
 * number; addr: " addr=ADDR" (getsockname); selfconnect: connect a new
 * socket to the listening one's address (loopback for a wildcard) and
 * accept it, " selfconnect=ok|ERR"; report: " keepalive=N nodelay=N
 * rcvbuf=N linger=ON:SECS filter=N|ERR v6only=N|ERR tos=N|ERR
 * reuseaddr=N" as the socket has them now (filter: the attached classic
 * filter's length, 0 for none); md5: a TCP_MD5SIG key for 127.0.0.1 (an
 * option larger than the preload library keeps).
 *
 * or "LABEL KIND socket=ERR" when socket() failed. The domain is read after
 * every action, so it is the final one even if bind/connect failed.
 * fork-exec runs this program again (with LABEL "child") on the remaining
 * specs and waits for it; fork-exec-clean does the same with an empty
 * environment.
 *
 * OP cancel-connect=ADDR: a thread is cancelled in connect() on a new tcp4
 * socket, then the program forks and sets an option on another new tcp4
 * socket, all under a 5 s alarm (a lock left held would hang either):
 *
 *   LABEL cancel joined=canceled|ERR fork=ok|ERR setsockopt=ok|ERR
 *
 * OP fd2=socket|file puts a socket (one end of a socketpair) or a new file
 * on fd 2, as a daemon that closed its standard descriptors may have;
 * fd2-check then prints how many bytes were written there since:
 *
 *   LABEL fd2 bytes=N
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *errname(int err)
{
	const char *s = strerrorname_np(err);

	return s ? s : "E?";
}

static int parse_addr(const char *s, struct sockaddr_storage *ss,
		      socklen_t *len)
{
	char buf[128], *colon;
	struct sockaddr_in *sin = (void *)ss;
	struct sockaddr_in6 *sin6 = (void *)ss;

	memset(ss, 0, sizeof(*ss));
	snprintf(buf, sizeof(buf), "%s", s);
	colon = strrchr(buf, ':');
	if (!colon)
		return -1;
	*colon = '\0';
	if (buf[0] == '[') {
		char *end = strchr(buf, ']');

		if (!end)
			return -1;
		*end = '\0';
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(atoi(colon + 1));
		*len = sizeof(*sin6);
		return inet_pton(AF_INET6, buf + 1, &sin6->sin6_addr) == 1 ? 0 : -1;
	}
	sin->sin_family = AF_INET;
	sin->sin_port = htons(atoi(colon + 1));
	*len = sizeof(*sin);
	return inet_pton(AF_INET, buf, &sin->sin_addr) == 1 ? 0 : -1;
}

static int fd2_peer = -1;	/* the other end of fd 2's socketpair */

static int fd2_op(const char *label, const char *op)
{
	struct stat st;
	char buf[4096];
	int sv[2], fd;
	ssize_t n;

	if (!strcmp(op, "fd2=socket")) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ||
		    dup2(sv[0], STDERR_FILENO) < 0)
			return -1;
		close(sv[0]);
		fd2_peer = sv[1];
		return 0;
	}
	if (!strcmp(op, "fd2=file")) {
		char path[] = "/tmp/peer_sockprobe.XXXXXX";

		/* Not O_TMPFILE: the guests' /tmp (overlayfs) has none. */
		fd = mkstemp(path);
		if (fd < 0 || unlink(path) || dup2(fd, STDERR_FILENO) < 0)
			return -1;
		close(fd);
		fd2_peer = -1;
		return 0;
	}
	if (strcmp(op, "fd2-check"))
		return -1;
	if (fd2_peer >= 0) {
		n = recv(fd2_peer, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0)
			n = errno == EAGAIN ? 0 : -errno;
	} else {
		n = fstat(STDERR_FILENO, &st) ? -errno : st.st_size;
	}
	printf("%s fd2 bytes=%zd\n", label, n);
	return 0;
}

struct cancel_arg {
	int fd;
	struct sockaddr_storage ss;
	socklen_t len;
	sem_t go;
};

static void *cancel_thread(void *arg)
{
	struct cancel_arg *a = arg;

	/* Off until the request is in, so that connect() is where it acts. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	while (sem_wait(&a->go))
		;
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	connect(a->fd, (void *)&a->ss, a->len);
	return NULL;
}

static int cancel_connect(const char *label, const char *addr)
{
	struct cancel_arg a;
	const char *joined, *forked = "ok", *opt = "ok";
	pthread_t t;
	void *ret;
	int status, fd, one = 1;
	pid_t pid;

	if (parse_addr(addr, &a.ss, &a.len))
		return -1;
	a.fd = socket(AF_INET, SOCK_STREAM, 0);
	if (a.fd < 0 || sem_init(&a.go, 0, 0) ||
	    pthread_create(&t, NULL, cancel_thread, &a))
		return -1;
	alarm(5);
	pthread_cancel(t);
	sem_post(&a.go);
	if (pthread_join(t, &ret))
		joined = errname(errno);
	else
		joined = ret == PTHREAD_CANCELED ? "canceled" : "returned";
	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(0);
	if (pid < 0)
		forked = errname(errno);
	else if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		forked = "EWAIT";
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)))
		opt = errname(errno);
	alarm(0);
	printf("%s cancel joined=%s fork=%s setsockopt=%s\n", label, joined,
	       forked, opt);
	return 0;
}

static int setint(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val));
}

/* getsockopt() of an int, as text: the value or the errno's name. */
static const char *getint(int fd, int level, int name, char *buf)
{
	socklen_t len = sizeof(int);
	int val;

	if (getsockopt(fd, level, name, &val, &len))
		return errname(errno);
	sprintf(buf, "%d", val);
	return buf;
}

static int set_md5(int fd)
{
	struct tcp_md5sig md5 = { .tcpm_keylen = 4 };
	struct sockaddr_in *sin = (void *)&md5.tcpm_addr;

	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(md5.tcpm_key, "key!", 4);
	return setsockopt(fd, IPPROTO_TCP, TCP_MD5SIG, &md5, sizeof(md5));
}

/* The program's memory for its filter, overwritten after the attach. */
static struct sock_filter filter_mem[1];

static int attach_filter(int fd)
{
	struct sock_fprog prog = { .len = 1, .filter = filter_mem };
	int ret;

	filter_mem[0] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffff);
	ret = setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			 sizeof(prog));
	filter_mem[0] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
	return ret;
}

/* An eBPF socket filter (accept all), attached, its descriptor reused. */
static int attach_bpf(int fd)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = 0xffff },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;
	int prog, ret, err;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insns = (unsigned long)insns;
	attr.insn_cnt = 2;
	attr.license = (unsigned long)"GPL";
	prog = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (prog < 0)
		return -1;
	ret = setsockopt(fd, SOL_SOCKET, SO_ATTACH_BPF, &prog, sizeof(prog));
	err = errno;
	close(prog);
	if (open("/dev/null", O_RDONLY) < 0)
		return -1;
	errno = err;
	return ret;
}

static const char *fmt_sockaddr(const struct sockaddr_storage *ss, char *buf,
				size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(sin6->sin6_port));
	} else {
		const struct sockaddr_in *sin = (const void *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(sin->sin_port));
	}
	return buf;
}

/* Connect to listening socket fd over its own address, and accept. */
static const char *selfconnect(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int c, a;

	if (getsockname(fd, (void *)&ss, &len))
		return errname(errno);
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (void *)&ss;

		if (IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr))
			sin6->sin6_addr = in6addr_loopback;
	} else {
		struct sockaddr_in *sin = (void *)&ss;

		if (sin->sin_addr.s_addr == htonl(INADDR_ANY))
			sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	c = socket(ss.ss_family, SOCK_STREAM, 0);
	if (c < 0)
		return errname(errno);
	if (connect(c, (void *)&ss, len) || poll(&pfd, 1, 5000) != 1) {
		close(c);
		return errno ? errname(errno) : "ETIMEDOUT";
	}
	a = accept(fd, NULL, NULL);
	close(c);
	if (a < 0)
		return errname(errno);
	close(a);
	return "ok";
}

/* The options and state "report" prints. */
static int report(int fd, char *out, size_t size)
{
	struct linger lg = { 0 };
	socklen_t len = sizeof(lg);
	char b[7][16];
	const char *filter = b[5];

	if (getsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, &len))
		lg.l_onoff = -1;
	/* With no room for it, the filter's length (in instructions). */
	len = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_GET_FILTER, NULL, &len))
		filter = errname(errno);
	else
		sprintf(b[5], "%u", (unsigned int)len);
	return snprintf(out, size,
			" keepalive=%s nodelay=%s rcvbuf=%s linger=%d:%d filter=%s v6only=%s tos=%s reuseaddr=%s",
			getint(fd, SOL_SOCKET, SO_KEEPALIVE, b[0]),
			getint(fd, IPPROTO_TCP, TCP_NODELAY, b[1]),
			getint(fd, SOL_SOCKET, SO_RCVBUF, b[2]), lg.l_onoff,
			lg.l_linger, filter,
			getint(fd, IPPROTO_IPV6, IPV6_V6ONLY, b[3]),
			getint(fd, IPPROTO_IP, IP_TOS, b[4]),
			getint(fd, SOL_SOCKET, SO_REUSEADDR, b[6]));
}

/*
 * The option-setting OPTs: 1 if opt is one, with *res NULL when it was
 * set, its errno's name when not.
 */
static int set_opt(int fd, const char *opt, const char **res)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 7 };
	int ret;

	if (!strcmp(opt, "keepalive"))
		ret = setint(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
	else if (!strcmp(opt, "nodelay"))
		ret = setint(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	else if (!strncmp(opt, "rcvbuf=", 7))
		ret = setint(fd, SOL_SOCKET, SO_RCVBUF, atoi(opt + 7));
	else if (!strcmp(opt, "linger"))
		ret = setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	else if (!strncmp(opt, "tos=", 4))
		ret = setint(fd, IPPROTO_IP, IP_TOS, atoi(opt + 4));
	else if (!strcmp(opt, "freebind"))
		ret = setint(fd, IPPROTO_IP, IP_FREEBIND, 1);
	else if (!strcmp(opt, "transparent"))
		ret = setint(fd, IPPROTO_IP, IP_TRANSPARENT, 1);
	else if (!strcmp(opt, "v6only"))
		ret = setint(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
	else if (!strcmp(opt, "nport"))
		ret = setint(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1);
	else if (!strcmp(opt, "md5"))
		ret = set_md5(fd);
	else if (!strcmp(opt, "filter"))
		ret = attach_filter(fd);
	else if (!strcmp(opt, "bpf"))
		ret = attach_bpf(fd);
	else
		return 0;
	*res = ret ? errname(errno) : NULL;
	return 1;
}

static int probe(const char *label, const char *spec)
{
	char buf[256], *kind, *opt, *save = NULL, out[512];
	int domain, type = 0, proto = 0, fd, n, val;
	socklen_t len = sizeof(val);

	snprintf(buf, sizeof(buf), "%s", spec);
	kind = strtok_r(buf, ",", &save);
	if (!kind)
		return -1;
	if (!strcmp(kind, "tcp4") || !strcmp(kind, "tcp4p"))
		domain = AF_INET, type = SOCK_STREAM;
	else if (!strcmp(kind, "tcp6") || !strcmp(kind, "tcp6p"))
		domain = AF_INET6, type = SOCK_STREAM;
	else if (!strcmp(kind, "udp4"))
		domain = AF_INET, type = SOCK_DGRAM;
	else if (!strcmp(kind, "udp6"))
		domain = AF_INET6, type = SOCK_DGRAM;
	else if (!strcmp(kind, "unix"))
		domain = AF_UNIX, type = SOCK_STREAM;
	else if (!strcmp(kind, "seqpacket"))
		domain = AF_UNIX, type = SOCK_SEQPACKET;
	else if (!strcmp(kind, "raw"))
		domain = AF_INET, type = SOCK_RAW, proto = IPPROTO_ICMP;
	else
		return -1;
	if (kind[strlen(kind) - 1] == 'p')
		proto = IPPROTO_TCP;

	/* First pass: the socket() flags. */
	{
		char tmp[256], *o, *s2 = NULL;

		snprintf(tmp, sizeof(tmp), "%s", spec);
		for (o = strtok_r(tmp, ",", &s2); o; o = strtok_r(NULL, ",", &s2)) {
			if (!strcmp(o, "nb"))
				type |= SOCK_NONBLOCK;
			else if (!strcmp(o, "ce"))
				type |= SOCK_CLOEXEC;
		}
	}
	fd = socket(domain, type, proto);
	if (fd < 0) {
		printf("%s %s socket=%s\n", label, kind, errname(errno));
		return 0;
	}
	n = 0;
	out[0] = '\0';
	while ((opt = strtok_r(NULL, ",", &save))) {
		struct sockaddr_storage ss;
		socklen_t alen;
		const char *res;

		if (!strcmp(opt, "nb") || !strcmp(opt, "ce"))
			continue;
		if (!strcmp(opt, "opt")) {
			val = 1;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &val,
				   sizeof(val));
			continue;
		}
		if (!strcmp(opt, "report")) {
			n += report(fd, out + n, sizeof(out) - n);
			continue;
		}
		if (!strcmp(opt, "addr")) {
			struct sockaddr_storage la;
			socklen_t llen = sizeof(la);
			char abuf[64];

			memset(&la, 0, sizeof(la));
			res = getsockname(fd, (void *)&la, &llen) ?
			      errname(errno) :
			      fmt_sockaddr(&la, abuf, sizeof(abuf));
			n += snprintf(out + n, sizeof(out) - n, " addr=%s",
				      res);
			continue;
		}
		if (!strcmp(opt, "selfconnect")) {
			n += snprintf(out + n, sizeof(out) - n,
				      " selfconnect=%s", selfconnect(fd));
			continue;
		}
		if (set_opt(fd, opt, &res)) {
			if (res)
				n += snprintf(out + n, sizeof(out) - n,
					      " %s=%s", opt, res);
			continue;
		}
		if (!strcmp(opt, "listen")) {
			res = listen(fd, 8) ? errname(errno) : "ok";
			n += snprintf(out + n, sizeof(out) - n, " listen=%s",
				      res);
			continue;
		}
		if (!strncmp(opt, "bind=", 5) || !strncmp(opt, "connect=", 8)) {
			int is_bind = opt[0] == 'b';

			if (parse_addr(strchr(opt, '=') + 1, &ss, &alen))
				return -1;
			if (is_bind)
				res = bind(fd, (void *)&ss, alen) ?
				      errname(errno) : "ok";
			else
				res = connect(fd, (void *)&ss, alen) ?
				      errname(errno) : "ok";
			n += snprintf(out + n, sizeof(out) - n, " %s=%s",
				      is_bind ? "bind" : "connect", res);
			continue;
		}
		return -1;
	}
	val = -1;
	len = sizeof(val);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &val, &len))
		val = -errno;
	printf("%s %s domain=%d nonblock=%d cloexec=%d", label, kind, val,
	       !!(fcntl(fd, F_GETFL) & O_NONBLOCK),
	       !!(fcntl(fd, F_GETFD) & FD_CLOEXEC));
	if (strstr(spec, ",opt")) {
		val = -1;
		len = sizeof(val);
		getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &val, &len);
		printf(" reuseaddr=%d", val);
	}
	printf("%s\n", out);
	/* Kept open: later sockets get other numbers, like a real program. */
	return 0;
}

int main(int argc, char **argv)
{
	const char *label = "sock";
	int i = 1;

	if (argc > 2 && !strcmp(argv[1], "-p")) {
		label = argv[2];
		i = 3;
	}
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "fork-exec") ||
		    !strcmp(argv[i], "fork-exec-clean")) {
			char *empty[] = { NULL };
			int clean = !strcmp(argv[i], "fork-exec-clean");
			int status;
			pid_t pid;

			fflush(stdout);
			pid = fork();
			if (pid < 0)
				return 1;
			if (!pid) {
				char *nargv[argc + 3];
				int j, k = 0;

				nargv[k++] = "peer_sockprobe";
				nargv[k++] = "-p";
				nargv[k++] = "child";
				for (j = i + 1; j < argc; j++)
					nargv[k++] = argv[j];
				nargv[k] = NULL;
				if (clean)
					execve("/proc/self/exe", nargv, empty);
				else
					execv("/proc/self/exe", nargv);
				_exit(127);
			}
			if (waitpid(pid, &status, 0) != pid ||
			    !WIFEXITED(status) || WEXITSTATUS(status))
				return 1;
			return 0;
		}
		if (!strncmp(argv[i], "fd2", 3)) {
			if (fd2_op(label, argv[i]))
				return 2;
			fflush(stdout);
			continue;
		}
		if (!strncmp(argv[i], "cancel-connect=", 15)) {
			if (cancel_connect(label, argv[i] + 15))
				return 2;
			fflush(stdout);
			continue;
		}
		if (probe(label, argv[i])) {
			fprintf(stderr, "peer_sockprobe: bad spec '%s'\n",
				argv[i]);
			return 2;
		}
		fflush(stdout);
	}
	return 0;
}
