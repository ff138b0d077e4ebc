// SPDX-License-Identifier: GPL-2.0
/*
 * hps_run and libhps-preload.so (tools/preload/): which sockets an
 * unmodified program gets when run under hps_run, in each mode, with rules,
 * with and without the module, and across fork+exec. The program under test
 * is peer_sockprobe, which prints SO_DOMAIN and the descriptor flags of the
 * sockets it creates.
 *
 * Tests that need real AF_HPS sockets skip where socket(AF_HPS) fails (a
 * host without af_hps.ko); each rules case is also checked in dry-run mode,
 * whose decisions are logged without the module. Where the module is
 * loaded, its absence is simulated with the library's testing hook
 * HPS_RUN_AF (a family number the kernel does not know).
 *
 * Nothing here depends on what bind/listen/connect on an AF_HPS socket
 * return: only the family each socket ends up with is checked.
 *
 * hps-configs: 1:rxe 1:siw
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/af_hps.h>

#include "hps_util.h"
#include "kselftest_harness.h"

#define MISSING_MSG \
	"AF_HPS not available (is af_hps.ko loaded?): falling back to TCP"
/* A family number socket(2) rejects with EAFNOSUPPORT (>= AF_MAX). */
#define NO_SUCH_AF	"46"

struct run {
	char out[16384];
	char err[16384];
	int status;		/* exit status, or 128 + signal */
};

/* run(): the child's stderr is a pseudo-terminal, not a file. */
static int run_pty;

static char top_dir[PATH_MAX];
static char probe_path[PATH_MAX + 32];
static char hps_run_path[PATH_MAX + 32];

static void find_paths(void)
{
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (top_dir[0])
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	*slash = '\0';			/* .../selftests */
	snprintf(probe_path, sizeof(probe_path), "%s/peer_sockprobe", exe);
	slash = strrchr(exe, '/');
	*slash = '\0';			/* the tree */
	snprintf(top_dir, sizeof(top_dir), "%s", exe);
	snprintf(hps_run_path, sizeof(hps_run_path),
		 "%s/tools/preload/hps_run", top_dir);
}

static int hps_available(void)
{
	int fd = socket(AF_HPS, SOCK_STREAM, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* The environment that simulates a missing module where it is loaded. */
static const char *missing_env(void)
{
	return hps_available() ? "HPS_RUN_AF=" NO_SUCH_AF : "";
}

static void slurp(int fd, char *buf, size_t len)
{
	ssize_t n, got = 0;

	lseek(fd, 0, SEEK_SET);
	while ((size_t)got < len - 1 &&
	       (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += n;
	buf[got] = '\0';
	close(fd);
}

/*
 * Run a command (NULL-terminated arguments; "@run" stands for hps_run,
 * "@probe" for peer_sockprobe) with the HPS_RUN_* and LD_PRELOAD variables
 * of this process cleared and those in env ("K=V K=V ...") set. The
 * library's messages are on stderr (HPS_RUN_LOG=stderr) unless env says
 * otherwise: where they go by default is log_destination's business.
 */
static int run(struct run *r, const char *env, ...)
{
	char *argv[64], envbuf[1024], *save = NULL, *kv;
	char tmpl_o[] = "/tmp/hps_preload.XXXXXX";
	char tmpl_e[] = "/tmp/hps_preload.XXXXXX";
	int argc = 0, fo, fe, status, pty = -1;
	va_list ap;
	pid_t pid;

	find_paths();
	va_start(ap, env);
	while (argc < 63 && (argv[argc] = va_arg(ap, char *))) {
		if (!strcmp(argv[argc], "@run"))
			argv[argc] = hps_run_path;
		else if (!strcmp(argv[argc], "@probe"))
			argv[argc] = probe_path;
		argc++;
	}
	argv[argc] = NULL;
	va_end(ap);

	fo = mkstemp(tmpl_o);
	fe = mkstemp(tmpl_e);
	if (fo < 0 || fe < 0)
		return -1;
	unlink(tmpl_o);
	unlink(tmpl_e);
	if (run_pty) {
		pty = posix_openpt(O_RDWR | O_NOCTTY);
		if (pty < 0 || grantpt(pty) || unlockpt(pty))
			return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		static const char *const clear[] = {
			"HPS_RUN_MODE", "HPS_RUN_RULES", "HPS_RUN_FALLBACK",
			"HPS_RUN_DEBUG", "HPS_RUN_DRYRUN", "HPS_RUN_AF",
			"HPS_RUN_LOG_SOCKET", "LD_PRELOAD",
		};
		unsigned int i;

		for (i = 0; i < sizeof(clear) / sizeof(clear[0]); i++)
			unsetenv(clear[i]);
		setenv("HPS_RUN_LOG", "stderr", 1);
		snprintf(envbuf, sizeof(envbuf), "%s", env);
		for (kv = strtok_r(envbuf, " ", &save); kv;
		     kv = strtok_r(NULL, " ", &save)) {
			char *eq = strchr(kv, '=');

			if (eq) {
				*eq = '\0';
				setenv(kv, eq + 1, 1);
			}
		}
		dup2(fo, STDOUT_FILENO);
		if (pty >= 0) {
			int slave = open(ptsname(pty), O_RDWR | O_NOCTTY);

			if (slave < 0)
				_exit(126);
			dup2(slave, STDERR_FILENO);
		} else {
			dup2(fe, STDERR_FILENO);
		}
		execv(argv[0], argv);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) :
		    128 + WTERMSIG(status);
	slurp(fo, r->out, sizeof(r->out));
	if (pty >= 0) {
		/* Read what the terminal holds; EIO once it is empty. */
		ssize_t n, got = 0;

		close(fe);
		fcntl(pty, F_SETFL, O_NONBLOCK);
		while ((size_t)got < sizeof(r->err) - 1 &&
		       (n = read(pty, r->err + got,
				 sizeof(r->err) - 1 - got)) > 0)
			got += n;
		r->err[got] = '\0';
		close(pty);
	} else {
		slurp(fe, r->err, sizeof(r->err));
	}
	return 0;
}

/* A syslog socket of our own for the library (HPS_RUN_LOG_SOCKET). */
struct logsink {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char env[200];
};

static int logsink_open(struct logsink *l)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	snprintf(l->path, sizeof(l->path), "/tmp/hps_preload.log.%d",
		 (int)getpid());
	unlink(l->path);
	strcpy(sun.sun_path, l->path);
	l->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0 || bind(l->fd, (void *)&sun, sizeof(sun)))
		return -1;
	snprintf(l->env, sizeof(l->env), "HPS_RUN_LOG_SOCKET=%s", l->path);
	return 0;
}

/* The messages received since the last call, one a line. */
static void logsink_read(struct logsink *l, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len - 2 &&
	       (n = recv(l->fd, buf + got, len - 2 - got, MSG_DONTWAIT)) > 0) {
		got += n;
		buf[got++] = '\n';
	}
	buf[got] = '\0';
}

static void logsink_close(struct logsink *l)
{
	close(l->fd);
	unlink(l->path);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* A rules file in /tmp of len bytes; the name goes to path (PATH_MAX). */
static int write_rules_len(char *path, const char *text, size_t len)
{
	int fd;

	strcpy(path, "/tmp/hps_run_rules.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int write_rules(char *path, const char *text)
{
	return write_rules_len(path, text, strlen(text));
}

/* An unused TCP port on the loopback, for a rule to name. */
static int free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd, port = -1;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (!bind(fd, (void *)&sin, sizeof(sin)) &&
	    !getsockname(fd, (void *)&sin, &len))
		port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

#define NEED_HPS() do {							\
	if (!hps_available())						\
		ASSERT_TRUE(0) TH_LOG("AF_HPS not available: is af_hps.ko loaded?"); \
} while (0)

#define EXPECT_LINE(r, line)						\
	EXPECT_NE(NULL, strstr((r)->out, line))			\
		TH_LOG("want '%s' in:\n%s\nstderr:\n%s", line, (r)->out, (r)->err)

#define EXPECT_LOG(r, text)						\
	EXPECT_NE(NULL, strstr((r)->err, text))			\
		TH_LOG("want '%s' in stderr:\n%s", text, (r)->err)

TEST(usage)
{
	struct run r;

	ASSERT_EQ(0, run(&r, "", "@run", "-h", NULL));
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, "usage: hps_run"));

	ASSERT_EQ(0, run(&r, "", "@run", NULL));
	EXPECT_EQ(2, r.status);
	EXPECT_NE(NULL, strstr(r.err, "usage: hps_run"));

	ASSERT_EQ(0, run(&r, "", "@run", "-r", "/nonexistent/rules", "true",
			 NULL));
	EXPECT_NE(0, r.status);
	EXPECT_LOG(&r, "cannot read rules file");
}

/* hps_run appends to an existing LD_PRELOAD instead of replacing it. */
TEST(ld_preload_appended)
{
	char want[PATH_MAX + 64];
	struct run r;

	ASSERT_EQ(0, run(&r, "LD_PRELOAD=libc.so.6", "@run", "/bin/sh", "-c",
			 "echo \"$LD_PRELOAD\"", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	snprintf(want, sizeof(want),
		 "libc.so.6 %s/tools/preload/libhps-preload.so\n", top_dir);
	EXPECT_STREQ(want, r.out);
}

TEST(all_mode_moves_tcp_only)
{
	struct run r;

	NEED_HPS();
	ASSERT_EQ(0, run(&r, "", "@run", "@probe", "tcp4", "tcp6", "tcp4p",
			 "tcp6p", "udp4", "udp6", "unix", "seqpacket", "raw",
			 NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=22 ");
	EXPECT_LINE(&r, "sock tcp6 domain=22 ");
	EXPECT_LINE(&r, "sock tcp4p domain=22 ");
	EXPECT_LINE(&r, "sock tcp6p domain=22 ");
	EXPECT_LINE(&r, "sock udp4 domain=2 ");
	EXPECT_LINE(&r, "sock udp6 domain=10 ");
	EXPECT_LINE(&r, "sock unix domain=1 ");
	EXPECT_LINE(&r, "sock seqpacket domain=1 ");
	/* Raw needs CAP_NET_RAW; if it was created it must stay AF_INET. */
	EXPECT_EQ(NULL, strstr(r.out, "sock raw domain=22"));
	EXPECT_EQ(NULL, strstr(r.err, "not available"));
}

/* Dry run: decisions logged, nothing moved; works without the module. */
TEST(dry_run_logs_decisions)
{
	struct run r;

	ASSERT_EQ(0, run(&r, "", "@run", "-n", "@probe", "tcp4", "tcp6",
			 "udp4", "unix", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=2 ");
	EXPECT_LINE(&r, "sock tcp6 domain=10 ");
	EXPECT_LINE(&r, "sock udp4 domain=2 ");
	EXPECT_LOG(&r, "tcp4 socket -> hps (mode all; dry run: kept tcp)");
	EXPECT_LOG(&r, "tcp6 socket -> hps (mode all; dry run: kept tcp)");
	EXPECT_EQ(2, count(r.err, "socket -> ")) TH_LOG("%s", r.err);
	EXPECT_EQ(NULL, strstr(r.err, "not available"));
}

TEST(socket_flags_preserved)
{
	struct run r;

	NEED_HPS();
	ASSERT_EQ(0, run(&r, "", "@run", "@probe", "tcp4,nb,ce", "tcp6,nb",
			 "tcp4,ce", "tcp6", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=22 nonblock=1 cloexec=1");
	EXPECT_LINE(&r, "sock tcp6 domain=22 nonblock=1 cloexec=0");
	EXPECT_LINE(&r, "sock tcp4 domain=22 nonblock=0 cloexec=1");
	EXPECT_LINE(&r, "sock tcp6 domain=22 nonblock=0 cloexec=0");
}

TEST(socket_flags_preserved_on_fallback)
{
	struct run r;

	ASSERT_EQ(0, run(&r, missing_env(), "@run", "@probe", "tcp4,nb,ce",
			 "tcp6,nb", "tcp4,ce", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=1 cloexec=1");
	EXPECT_LINE(&r, "sock tcp6 domain=10 nonblock=1 cloexec=0");
	EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=0 cloexec=1");
}

TEST(mode_none)
{
	struct run r;

	ASSERT_EQ(0, run(&r, "HPS_RUN_MODE=none HPS_RUN_DEBUG=1", "@run",
			 "@probe", "tcp4", "tcp6", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=2 ");
	EXPECT_LINE(&r, "sock tcp6 domain=10 ");
	EXPECT_LOG(&r, "tcp4 socket -> tcp (mode none)");

	ASSERT_EQ(0, run(&r, "", "@run", "-m", "none", "@probe", "tcp4",
			 NULL));
	EXPECT_LINE(&r, "sock tcp4 domain=2 ");
	EXPECT_EQ(NULL, strstr(r.err, "not available"));
}

/* Missing module: one message, TCP sockets, everything else untouched. */
TEST(missing_module_falls_back)
{
	struct run r;

	ASSERT_EQ(0, run(&r, missing_env(), "@run", "@probe", "tcp4", "tcp6",
			 "tcp4", "udp4", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=2 ");
	EXPECT_LINE(&r, "sock tcp6 domain=10 ");
	EXPECT_LINE(&r, "sock udp4 domain=2 ");
	EXPECT_EQ(1, count(r.err, MISSING_MSG)) TH_LOG("stderr:\n%s", r.err);
	EXPECT_EQ(1, count(r.err, "\n")) TH_LOG("stderr:\n%s", r.err);
}

TEST(missing_module_error)
{
	char env[128];
	struct run r;

	snprintf(env, sizeof(env), "HPS_RUN_FALLBACK=error %s", missing_env());
	ASSERT_EQ(0, run(&r, env, "@run", "@probe", "tcp4", "udp4", "unix",
			 NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 socket=EAFNOSUPPORT");
	EXPECT_LINE(&r, "sock udp4 domain=2 ");
	EXPECT_LINE(&r, "sock unix domain=1 ");
	EXPECT_LOG(&r, "AF_HPS not available (is af_hps.ko loaded?)");

	ASSERT_EQ(0, run(&r, missing_env(), "@run", "-f", "error", "@probe",
			 "tcp6", NULL));
	EXPECT_LINE(&r, "sock tcp6 socket=EAFNOSUPPORT");
}

/* Rules that settle a socket's fate without an address act in socket(). */
TEST(rules_decided_at_socket)
{
	char rules[PATH_MAX];
	struct run r;

	ASSERT_EQ(0, write_rules(rules,
		"# every TCP socket, both directions\n"
		"use hps listen *:*\n"
		"use hps connect *\n"));
	ASSERT_EQ(0, run(&r, "", "@run", "-n", "-r", rules, "@probe", "tcp4",
			 "tcp6", NULL));
	EXPECT_LOG(&r, "tcp4 socket -> hps (");
	EXPECT_LOG(&r, ":2; dry run: kept tcp)");
	EXPECT_EQ(NULL, strstr(r.err, "pending"));
	if (hps_available()) {
		ASSERT_EQ(0, run(&r, "", "@run", "-r", rules, "@probe", "tcp4",
				 "tcp6", NULL));
		EXPECT_LINE(&r, "sock tcp4 domain=22 ");
		EXPECT_LINE(&r, "sock tcp6 domain=22 ");
	}
	unlink(rules);

	/* An IPv6 rule cannot match an IPv4 socket: only tcp6 waits. */
	ASSERT_EQ(0, write_rules(rules,
		"use tcp connect [fd00::]/8:*\n"
		"default hps\n"));
	ASSERT_EQ(0, run(&r, "", "@run", "-n", "-r", rules, "@probe", "tcp4",
			 "tcp6", NULL));
	EXPECT_LOG(&r, "tcp4 socket -> hps (default; dry run");
	EXPECT_LOG(&r, "tcp6 socket -> tcp for now, pending");
	unlink(rules);

	ASSERT_EQ(0, write_rules(rules, "default tcp\n"));
	ASSERT_EQ(0, run(&r, "HPS_RUN_DEBUG=1", "@run", "-r", rules, "@probe",
			 "tcp4", NULL));
	EXPECT_LINE(&r, "sock tcp4 domain=2 ");
	EXPECT_LOG(&r, "tcp4 socket -> tcp (default)");
	unlink(rules);
}

static const char connect_rules[] =
	"use hps connect 127.0.0.0/8:5000-6000\n"
	"use tcp connect *:*\n"
	"use hps listen *:*\n";

/* Connect rules by address and port: decided at connect(). */
TEST(rules_connect_by_address_and_port)
{
	char rules[PATH_MAX];
	struct run r;

	ASSERT_EQ(0, write_rules(rules, connect_rules));
	ASSERT_EQ(0, run(&r, "", "@run", "-n", "-r", rules, "@probe",
			 "tcp4,nb,connect=127.0.0.1:5555",
			 "tcp4,nb,connect=127.0.0.1:7000",
			 "tcp6,nb,connect=[::ffff:127.0.0.1]:5001",
			 "tcp6,nb,connect=[::1]:5555", "tcp4", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LOG(&r, "connect 127.0.0.1:5555 -> hps (");
	EXPECT_LOG(&r, "connect 127.0.0.1:7000 -> tcp (");
	EXPECT_LOG(&r, "connect [::ffff:127.0.0.1]:5001 -> hps (");
	EXPECT_LOG(&r, "connect [::1]:5555 -> tcp (");
	EXPECT_EQ(5, count(r.err, "pending")) TH_LOG("%s", r.err);

	if (hps_available()) {
		ASSERT_EQ(0, run(&r, "", "@run", "-r", rules, "@probe",
				 "tcp4,nb,ce,connect=127.0.0.1:5555",
				 "tcp4,nb,connect=127.0.0.1:7000",
				 "tcp6,nb,connect=[::ffff:127.0.0.1]:5001",
				 "tcp6,nb,connect=[::1]:5555", "tcp4", NULL));
		ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
		/* Re-created on the same descriptor, flags kept. */
		EXPECT_LINE(&r, "sock tcp4 domain=22 nonblock=1 cloexec=1");
		EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=1 cloexec=0");
		EXPECT_LINE(&r, "sock tcp6 domain=22 nonblock=1");
		EXPECT_LINE(&r, "sock tcp6 domain=10 nonblock=1");
		/* Never connected: pending sockets stay what they were. */
		EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=0 cloexec=0\n");
	}
	unlink(rules);
}

/* Listen rules by port: decided at listen(), options carried over. */
TEST(rules_listen_by_port)
{
	char rules[PATH_MAX], text[256], bind_tcp[64];
	struct run r;
	int port = free_port();

	ASSERT_LT(0, port);
	snprintf(text, sizeof(text),
		 "use tcp listen *:%d\nuse hps listen *:*\nuse tcp connect *:*\n",
		 port);
	ASSERT_EQ(0, write_rules(rules, text));
	snprintf(bind_tcp, sizeof(bind_tcp), "tcp4,opt,bind=127.0.0.1:%d,listen",
		 port);

	ASSERT_EQ(0, run(&r, "", "@run", "-n", "-r", rules, "@probe", bind_tcp,
			 "tcp4,bind=127.0.0.1:0,listen", "tcp6,listen",
			 "tcp4,nb,connect=127.0.0.1:5555", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=0 cloexec=0 reuseaddr=1 bind=ok listen=ok");
	snprintf(text, sizeof(text), "listen 127.0.0.1:%d -> tcp (", port);
	EXPECT_LOG(&r, text);
	EXPECT_LOG(&r, "listen [::]:0 -> hps (");
	EXPECT_LOG(&r, "connect 127.0.0.1:5555 -> tcp (");

	if (hps_available()) {
		ASSERT_EQ(0, run(&r, "", "@run", "-r", rules, "@probe",
				 bind_tcp, "tcp4,opt,bind=127.0.0.1:0,listen",
				 "tcp6,nb,listen",
				 "tcp4,nb,connect=127.0.0.1:5555", NULL));
		ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
		EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=0 cloexec=0 reuseaddr=1 bind=ok listen=ok");
		/* Moved at listen(), SO_REUSEADDR carried over. */
		EXPECT_LINE(&r, "sock tcp4 domain=22 nonblock=0 cloexec=0 reuseaddr=1");
		EXPECT_LINE(&r, "sock tcp6 domain=22 nonblock=1");
		EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=1");
	}
	unlink(rules);
}

/*
 * The value after the nth (from 0) occurrence of key (" addr=") in hay, up
 * to a space or the end of the line; "" if there is none.
 */
static const char *field(const char *hay, const char *key, int nth,
			 char *buf, size_t len)
{
	const char *p = hay;
	size_t n;

	buf[0] = '\0';
	while ((p = strstr(p, key)) && nth--)
		p += strlen(key);
	if (!p)
		return buf;
	p += strlen(key);
	n = strcspn(p, " \n");
	if (n >= len)
		n = len - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

/* A plain TCP listener on addr (this process is not under hps_run). */
static int tcp_listener(const char *addr, int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd;

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (void *)&sin, sizeof(sin)) || listen(fd, 16) ||
	    getsockname(fd, (void *)&sin, &len))
		return -1;
	*port = ntohs(sin.sin_port);
	return fd;
}

/*
 * An address of this host that no RDMA device has, for a re-bind that
 * must fail: on a dummy interface of its own. Not 127.0.0.1: rdma_cm
 * binds loopback addresses to an RDMA device (over rxe, AF_HPS binds and
 * listens on 127.0.0.1).
 */
#define NORDMA_DEV	"hps_nordma"
#define NORDMA_ADDR	"192.0.2.1"	/* TEST-NET-1 */

static void nordma_down(void)
{
	system("ip link del " NORDMA_DEV " 2>/dev/null");
}

static int nordma_up(void)
{
	struct sockaddr_in sin;
	int fd, ret;

	nordma_down();
	if (system("ip link add " NORDMA_DEV " type dummy && "
		   "ip addr add " NORDMA_ADDR "/24 dev " NORDMA_DEV " && "
		   "ip link set " NORDMA_DEV " up"))
		return -1;
	/* The premise: AF_HPS cannot bind there. */
	fd = socket(AF_HPS, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	hps_sin(&sin, NORDMA_ADDR, 0);
	ret = bind(fd, (void *)&sin, sizeof(sin));
	close(fd);
	return ret ? 0 : -1;
}

static const char listen_rules[] =
	"use hps listen *:*\n"
	"use tcp connect *:*\n";

static const char connect_all_rules[] =
	"use hps connect *:*\n"
	"use tcp listen *:*\n";

/*
 * A move whose re-bind fails (an address no RDMA device has) is no move:
 * the program's descriptor is the TCP socket it was, bound to the same
 * address and port, with its options, and listens, connects and accepts
 * over TCP. With HPS_RUN_FALLBACK=error listen() fails, and fails again
 * when retried, on that same TCP socket. An address bound without a port
 * (IP_BIND_ADDRESS_NO_PORT) counts as bound: it used to be dropped, and
 * the socket moved and connected from any address.
 */
TEST(rebind_failure_keeps_tcp)
{
	char rules[PATH_MAX], a1[64], a2[64], spec[2][96];
	struct run r;
	int l, port;

	NEED_HPS();
	ASSERT_EQ(0, nordma_up())
		TH_LOG("cannot set up %s on %s, or AF_HPS binds it",
		       NORDMA_ADDR, NORDMA_DEV);
	ASSERT_EQ(0, write_rules(rules, listen_rules));
	ASSERT_EQ(0, run(&r, "", "@run", "-r", rules, "@probe",
			 "tcp4,bind=" NORDMA_ADDR ":0,addr,listen,addr,report,selfconnect",
			 "tcp4,opt,keepalive,bind=" NORDMA_ADDR ":0,listen,report",
			 NULL));
	EXPECT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=0 cloexec=0 bind=ok addr=" NORDMA_ADDR ":");
	field(r.out, " addr=", 0, a1, sizeof(a1));
	field(r.out, " addr=", 1, a2, sizeof(a2));
	EXPECT_STREQ(a1, a2) TH_LOG("%s", r.out);
	EXPECT_STRNE(NORDMA_ADDR ":0", a1);
	EXPECT_LINE(&r, " listen=ok addr=" NORDMA_ADDR ":");
	/* SO_REUSEADDR, set for the attempt, is back to the program's 0. */
	EXPECT_LINE(&r, " reuseaddr=0 selfconnect=ok\n");
	EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=0 cloexec=0 reuseaddr=1 bind=ok listen=ok keepalive=1 ");
	EXPECT_LOG(&r, "but cannot bind the AF_HPS socket to " NORDMA_ADDR ":");
	EXPECT_LOG(&r, ": kept TCP");

	ASSERT_EQ(0, run(&r, "HPS_RUN_FALLBACK=error", "@run", "-r", rules,
			 "@probe",
			 "tcp4,bind=" NORDMA_ADDR ":0,addr,listen,listen,addr,selfconnect",
			 NULL));
	EXPECT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=0 cloexec=0 bind=ok addr=" NORDMA_ADDR ":");
	EXPECT_LINE(&r, " listen=EADDRNOTAVAIL listen=EADDRNOTAVAIL addr=" NORDMA_ADDR ":");
	field(r.out, " addr=", 0, a1, sizeof(a1));
	field(r.out, " addr=", 1, a2, sizeof(a2));
	EXPECT_STREQ(a1, a2) TH_LOG("%s", r.out);
	/* Not listening: the TCP socket was never told to. */
	EXPECT_LINE(&r, " selfconnect=ECONNREFUSED\n");
	EXPECT_LOG(&r, "but cannot bind the AF_HPS socket to " NORDMA_ADDR ":");
	EXPECT_LOG(&r, ": failing the call");
	unlink(rules);

	l = tcp_listener(NORDMA_ADDR, &port);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, write_rules(rules, connect_all_rules));
	snprintf(spec[0], sizeof(spec[0]),
		 "tcp4,bind=" NORDMA_ADDR ":0,addr,connect=" NORDMA_ADDR ":%d,addr",
		 port);
	snprintf(spec[1], sizeof(spec[1]),
		 "tcp4,nport,bind=" NORDMA_ADDR ":0,connect=" NORDMA_ADDR ":%d,addr",
		 port);
	/* -d: the second failure of a kind is said only there. */
	ASSERT_EQ(0, run(&r, "", "@run", "-d", "-r", rules, "@probe", spec[0],
			 spec[1], NULL));
	EXPECT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=0 cloexec=0 bind=ok addr=" NORDMA_ADDR ":");
	field(r.out, " addr=", 0, a1, sizeof(a1));
	field(r.out, " addr=", 1, a2, sizeof(a2));
	EXPECT_STREQ(a1, a2) TH_LOG("%s", r.out);
	EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=0 cloexec=0 bind=ok connect=ok addr=" NORDMA_ADDR ":");
	EXPECT_LOG(&r, "but cannot bind the AF_HPS socket to " NORDMA_ADDR ":0 ");
	close(l);
	unlink(rules);
	nordma_down();
}

/*
 * Bound sockets that can move do, to the same address and port, whether
 * the program set SO_REUSEADDR or not (the TCP socket holds the port until
 * the AF_HPS one has it). A connecting socket bound without a port keeps
 * its address.
 */
TEST(bound_sockets_move)
{
	const char *self = getenv("HPS_SELF");
	char rules[PATH_MAX], a1[64], a2[64], spec[3][128], want[96];
	struct run r;
	int l, port;

	NEED_HPS();
	ASSERT_NE(NULL, self) TH_LOG("HPS_SELF unset: run in the test VM");
	ASSERT_EQ(0, write_rules(rules, listen_rules));
	snprintf(spec[0], sizeof(spec[0]), "tcp4,bind=%s:0,addr,listen,addr",
		 self);
	ASSERT_EQ(0, run(&r, "", "@run", "-r", rules, "@probe", spec[0],
			 "tcp4,opt,bind=0.0.0.0:0,addr,listen,addr", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	snprintf(want, sizeof(want),
		 "sock tcp4 domain=22 nonblock=0 cloexec=0 bind=ok addr=%s:",
		 self);
	EXPECT_LINE(&r, want);
	EXPECT_LINE(&r, "sock tcp4 domain=22 nonblock=0 cloexec=0 reuseaddr=1 bind=ok addr=0.0.0.0:");
	EXPECT_EQ(2, count(r.out, " listen=ok addr=")) TH_LOG("%s", r.out);
	field(r.out, " addr=", 0, a1, sizeof(a1));
	field(r.out, " addr=", 1, a2, sizeof(a2));
	EXPECT_STREQ(a1, a2) TH_LOG("%s", r.out);
	field(r.out, " addr=", 2, a1, sizeof(a1));
	field(r.out, " addr=", 3, a2, sizeof(a2));
	EXPECT_STREQ(a1, a2) TH_LOG("%s", r.out);
	EXPECT_EQ(NULL, strstr(r.err, "kept TCP"));
	unlink(rules);

	l = hps_listener(&port, 8);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, write_rules(rules, connect_all_rules));
	snprintf(spec[1], sizeof(spec[1]),
		 "tcp4,nport,bind=%s:0,connect=%s:%d,addr", self, self, port);
	snprintf(spec[2], sizeof(spec[2]),
		 "tcp4,bind=%s:0,addr,connect=%s:%d,addr", self, self, port);
	ASSERT_EQ(0, run(&r, "", "@run", "-r", rules, "@probe", spec[1],
			 spec[2], NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	snprintf(want, sizeof(want),
		 "sock tcp4 domain=22 nonblock=0 cloexec=0 bind=ok connect=ok addr=%s:",
		 self);
	EXPECT_LINE(&r, want);
	EXPECT_EQ(2, count(r.out, "domain=22 ")) TH_LOG("%s", r.out);
	EXPECT_EQ(2, count(r.out, " connect=ok ")) TH_LOG("%s", r.out);
	field(r.out, " addr=", 1, a1, sizeof(a1));
	field(r.out, " addr=", 2, a2, sizeof(a2));
	EXPECT_STREQ(a1, a2) TH_LOG("%s", r.out);
	/* IP_BIND_ADDRESS_NO_PORT itself is refused, and said so. */
	EXPECT_LOG(&r, "IP_BIND_ADDRESS_NO_PORT not carried to AF_HPS");
	close(l);
	unlink(rules);
}

/*
 * Every option set on a pending socket is on the moved socket, or its
 * absence is said with a reason, or the socket stays TCP with the reason
 * (options that decide which connections a socket takes, and options too
 * large to keep). Filters are never replayed: their value is a pointer
 * (here to memory the program overwrote after attaching) or a descriptor
 * number (here closed and reused after attaching).
 */
TEST(options_carried_or_refused)
{
	char rules[PATH_MAX];
	struct run r;

	NEED_HPS();
	ASSERT_EQ(0, write_rules(rules, listen_rules));
	ASSERT_EQ(0, run(&r, "", "@run", "-r", rules, "@probe",
			 "tcp4,keepalive,nodelay,rcvbuf=65536,linger,tos=16,freebind,filter,listen,report",
			 "tcp4,bpf,listen,report", "tcp6,v6only,listen,report",
			 "tcp4,transparent,listen,report",
			 "tcp4,md5,listen,report", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	/* TCP's values for comparison: SO_RCVBUF doubled by the kernel. */
	EXPECT_LINE(&r, "sock tcp4 domain=22 nonblock=0 cloexec=0 listen=ok keepalive=1 nodelay=1 rcvbuf=131072 linger=1:7 filter=0 v6only=ENOPROTOOPT tos=ENOPROTOOPT reuseaddr=0\n");
	EXPECT_LOG(&r, "IP_TOS not carried to AF_HPS, which refuses it (");
	EXPECT_LOG(&r, "IP_FREEBIND not carried to AF_HPS, which refuses it (");
	EXPECT_LOG(&r, "SO_ATTACH_FILTER not carried to AF_HPS: its value points into the program's memory");
	/* AF_HPS's SO_KEEPALIVE starts on (net.hps.keepalive_ms, af_hps.rst) */
	EXPECT_LINE(&r, "sock tcp4 domain=22 nonblock=0 cloexec=0 listen=ok keepalive=1 nodelay=0 ");
	EXPECT_LOG(&r, "SO_ATTACH_BPF not carried to AF_HPS: its value is a descriptor number");
	EXPECT_LINE(&r, "sock tcp6 domain=10 nonblock=0 cloexec=0 listen=ok ");
	EXPECT_LINE(&r, " v6only=1 ");
	EXPECT_LOG(&r, "but IPV6_V6ONLY is set, and AF_HPS cannot make an IPv6 socket IPv6-only: kept TCP");
	EXPECT_EQ(2, count(r.out, "sock tcp4 domain=2 ")) TH_LOG("%s", r.out);
	EXPECT_LOG(&r, "but IP_TRANSPARENT is set, and AF_HPS takes no connections for addresses not its own: kept TCP");
	EXPECT_LOG(&r, "but TCP_MD5SIG cannot be carried (216 bytes; the library keeps 64): kept TCP");
	unlink(rules);
}

/* Pending sockets whose rule says hps, with the module missing. */
TEST(rules_fallback_at_connect)
{
	char rules[PATH_MAX], env[128];
	struct run r;

	ASSERT_EQ(0, write_rules(rules, connect_rules));
	ASSERT_EQ(0, run(&r, missing_env(), "@run", "-r", rules, "@probe",
			 "tcp4,nb,connect=127.0.0.1:5555",
			 "tcp4,nb,connect=127.0.0.1:5556", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_EQ(2, count(r.out, "sock tcp4 domain=2 nonblock=1"))
		TH_LOG("%s", r.out);
	EXPECT_EQ(1, count(r.err, MISSING_MSG)) TH_LOG("%s", r.err);

	snprintf(env, sizeof(env), "HPS_RUN_FALLBACK=error %s", missing_env());
	ASSERT_EQ(0, run(&r, env, "@run", "-r", rules, "@probe",
			 "tcp4,nb,connect=127.0.0.1:5555", NULL));
	EXPECT_LINE(&r, "sock tcp4 domain=2 nonblock=1 cloexec=0 connect=EAFNOSUPPORT");
	unlink(rules);
}

/*
 * A thread cancelled in connect() on a pending socket must not leave the
 * library's lock held: fork() (whose handler takes it) and later calls on
 * pending sockets would hang (the probe's alarm would kill it). Cancelled
 * while the move fails (no module) and while it succeeds, with and
 * without the debug log, whose write() is a cancellation point.
 */
TEST(cancelled_connect_leaves_fork_working)
{
	static const char *const envs[] = {
		"", "HPS_RUN_DEBUG=1", "HPS_RUN_AF=" NO_SUCH_AF,
		"HPS_RUN_DEBUG=1 HPS_RUN_AF=" NO_SUCH_AF,
	};
	char rules[PATH_MAX];
	unsigned int i;
	struct run r;

	ASSERT_EQ(0, write_rules(rules, connect_rules));
	for (i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
		ASSERT_EQ(0, run(&r, envs[i], "@run", "-r", rules, "@probe",
				 "cancel-connect=127.0.0.1:5555", NULL));
		EXPECT_EQ(0, r.status) TH_LOG("%s: status %d\n%s", envs[i],
					      r.status, r.err);
		EXPECT_LINE(&r, "sock cancel joined=canceled fork=ok setsockopt=ok\n");
	}
	unlink(rules);
}

/*
 * Messages go to fd 2 only when it is a terminal, or when asked (-d,
 * HPS_RUN_LOG=stderr) and fd 2 is still the file it was at start-up and
 * not a socket; otherwise to syslog (here a socket of the test's own).
 */
TEST(log_destination)
{
	char env[512], log[4096];
	struct logsink ls;
	struct run r;

	ASSERT_EQ(0, logsink_open(&ls));

	/* The default, stderr a file: syslog, at LOG_USER|LOG_WARNING. */
	snprintf(env, sizeof(env), "HPS_RUN_LOG= %s HPS_RUN_AF=" NO_SUCH_AF,
		 ls.env);
	ASSERT_EQ(0, run(&r, env, "@run", "@probe", "tcp4", "tcp4", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_EQ(2, count(r.out, "sock tcp4 domain=2 ")) TH_LOG("%s", r.out);
	EXPECT_STREQ("", r.err);
	logsink_read(&ls, log, sizeof(log));
	EXPECT_EQ(1, count(log, "<12>hps_run[")) TH_LOG("syslog:\n%s", log);
	EXPECT_EQ(1, count(log, "]: " MISSING_MSG "\n")) TH_LOG("syslog:\n%s", log);

	/* The default, stderr a terminal: there. */
	run_pty = 1;
	ASSERT_EQ(0, run(&r, env, "@run", "@probe", "tcp4", NULL));
	run_pty = 0;
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LOG(&r, MISSING_MSG);
	logsink_read(&ls, log, sizeof(log));
	EXPECT_STREQ("", log);

	/* -d, stderr a file: there, decisions included. */
	ASSERT_EQ(0, run(&r, env, "@run", "-d", "@probe", "tcp4", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LOG(&r, MISSING_MSG);
	EXPECT_LOG(&r, "tcp4 socket -> tcp (fallback)");
	logsink_read(&ls, log, sizeof(log));
	EXPECT_STREQ("", log);

	/* -d, then the program puts a socket or a new file on fd 2. */
	ASSERT_EQ(0, run(&r, env, "@run", "-d", "@probe", "fd2=socket",
			 "tcp4", "fd2-check", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock fd2 bytes=0\n");
	logsink_read(&ls, log, sizeof(log));
	EXPECT_EQ(1, count(log, "<12>hps_run[")) TH_LOG("syslog:\n%s", log);
	EXPECT_NE(NULL, strstr(log, MISSING_MSG)) TH_LOG("syslog:\n%s", log);
	EXPECT_NE(NULL, strstr(log, "<15>hps_run[")) TH_LOG("syslog:\n%s", log);
	EXPECT_NE(NULL, strstr(log, "tcp4 socket -> tcp (fallback)"))
		TH_LOG("syslog:\n%s", log);
	ASSERT_EQ(0, run(&r, env, "@run", "-d", "@probe", "fd2=file", "tcp4",
			 "fd2-check", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock fd2 bytes=0\n");
	logsink_read(&ls, log, sizeof(log));
	EXPECT_NE(NULL, strstr(log, MISSING_MSG)) TH_LOG("syslog:\n%s", log);

	/* HPS_RUN_LOG=syslog: even with -d. */
	snprintf(env, sizeof(env), "HPS_RUN_LOG=syslog %s HPS_RUN_AF=" NO_SUCH_AF,
		 ls.env);
	ASSERT_EQ(0, run(&r, env, "@run", "-d", "@probe", "tcp4", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_STREQ("", r.err);
	logsink_read(&ls, log, sizeof(log));
	EXPECT_NE(NULL, strstr(log, "]: mode all, 0 rule(s)")) TH_LOG("syslog:\n%s", log);
	EXPECT_NE(NULL, strstr(log, MISSING_MSG)) TH_LOG("syslog:\n%s", log);
	logsink_close(&ls);
}

/* A line that does not parse is reported, and the file is not used. */
TEST(rules_bad_line_reported)
{
	char rules[PATH_MAX];
	struct run r;

	ASSERT_EQ(0, write_rules(rules,
		"use hps sideways *:*\n"
		"use tcp connect 300.1.1.1:80\n"
		"use tcp any *:1-\n"
		"default tcp\n"));
	ASSERT_EQ(0, run(&r, "HPS_RUN_DEBUG=1", "@run", "-r", rules,
			 "@probe", "tcp4", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_EQ(3, count(r.err, "cannot parse rule")) TH_LOG("%s", r.err);
	EXPECT_LOG(&r, ":1: cannot parse rule");
	EXPECT_LOG(&r, ":3: cannot parse rule");
	EXPECT_LOG(&r, ": 3 bad line(s): refused, leaving all sockets TCP");
	EXPECT_LOG(&r, "tcp4 socket -> tcp (rules file refused)");
	EXPECT_LINE(&r, "sock tcp4 domain=2 ");
	unlink(rules);
}

#define RULES_MAX 65536		/* the library's limit */

/*
 * A rules file over the limit is refused whole, never cut: its first
 * 64 KiB say "default hps", and the line across the limit would read
 * "use tcp connect *:22" if cut there.
 */
TEST(rules_file_too_long_refused)
{
	static const char head[] = "default hps\n";
	static const char cut[] = "use tcp connect *:2222\n";
	static char text[RULES_MAX + 64];
	char rules[PATH_MAX];
	size_t len;
	struct run r;

	/* Exactly the limit: used. */
	memset(text, '#', RULES_MAX);
	memcpy(text, head, strlen(head));
	text[RULES_MAX - 1] = '\n';
	ASSERT_EQ(0, write_rules_len(rules, text, RULES_MAX));
	ASSERT_EQ(0, run(&r, "", "@run", "-n", "-r", rules, "@probe", "tcp4",
			 NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LOG(&r, "tcp4 socket -> hps (default; dry run: kept tcp)");
	EXPECT_EQ(NULL, strstr(r.err, "refused"));
	unlink(rules);

	/* Over it: refused, whatever its first 64 KiB say. */
	len = RULES_MAX - 20;
	text[len - 1] = '\n';
	memcpy(text + len, cut, strlen(cut));
	len += strlen(cut);
	ASSERT_LT(RULES_MAX, len);
	ASSERT_EQ(0, write_rules_len(rules, text, len));
	ASSERT_EQ(0, run(&r, "", "@run", "-n", "-r", rules, "@probe", "tcp4",
			 "tcp4,nb,connect=127.0.0.1:22", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LOG(&r, " is larger than 65536 bytes: refused, leaving all sockets TCP");
	EXPECT_LOG(&r, "tcp4 socket -> tcp (rules file refused)");
	EXPECT_EQ(2, count(r.err, "socket -> tcp (rules file refused)"));
	EXPECT_EQ(NULL, strstr(r.err, "-> hps"));

	/* And the sockets really stay TCP. */
	ASSERT_EQ(0, run(&r, "", "@run", "-r", rules, "@probe", "tcp4", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "sock tcp4 domain=2 ");
	EXPECT_LOG(&r, "refused, leaving all sockets TCP");
	unlink(rules);
}

/*
 * Malformed files are refused whole: a NUL byte (which used to end the
 * file there), a line that does not parse, more rules than the table
 * holds. Each says why; every socket stays TCP.
 */
TEST(rules_file_malformed_refused)
{
	static const char nul[] = "default hps\n\0use tcp any *:*\n";
	static char many[300 * 20];
	char rules[PATH_MAX];
	struct run r;
	int i, n = 0;

	ASSERT_EQ(0, write_rules_len(rules, nul, sizeof(nul) - 1));
	ASSERT_EQ(0, run(&r, "", "@run", "-n", "-r", rules, "@probe", "tcp4",
			 NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LOG(&r, ": line 2 holds a NUL byte: refused, leaving all sockets TCP");
	EXPECT_LOG(&r, "tcp4 socket -> tcp (rules file refused)");
	ASSERT_EQ(0, run(&r, "", "@run", "-r", rules, "@probe", "tcp4", NULL));
	EXPECT_LINE(&r, "sock tcp4 domain=2 ");
	unlink(rules);

	ASSERT_EQ(0, write_rules(rules,
		"default hps\n"
		"use tcp listen *:22 # ssh stays\n"
		"use tpc listen *:2222\n"));
	ASSERT_EQ(0, run(&r, "", "@run", "-n", "-r", rules, "@probe", "tcp4",
			 NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LOG(&r, ":3: cannot parse rule");
	EXPECT_LOG(&r, ": 1 bad line(s): refused, leaving all sockets TCP");
	EXPECT_LOG(&r, "tcp4 socket -> tcp (rules file refused)");
	ASSERT_EQ(0, run(&r, "", "@run", "-r", rules, "@probe", "tcp4", NULL));
	EXPECT_LINE(&r, "sock tcp4 domain=2 ");
	unlink(rules);

	for (i = 0; i < 257; i++)
		n += snprintf(many + n, sizeof(many) - n,
			      "use hps connect *:%d\n", 1000 + i);
	ASSERT_EQ(0, write_rules(rules, many));
	ASSERT_EQ(0, run(&r, "", "@run", "-n", "-r", rules, "@probe", "tcp4",
			 NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LOG(&r, ":257: more than 256 rules");
	EXPECT_LOG(&r, ": 1 bad line(s): refused, leaving all sockets TCP");
	EXPECT_LOG(&r, "tcp4 socket -> tcp (rules file refused)");
	unlink(rules);
}

/* LD_PRELOAD travels through exec; a cleared environment drops it. */
TEST(exec_inherits_preload)
{
	struct run r;

	ASSERT_EQ(0, run(&r, "", "@run", "-n", "@probe", "tcp4", "fork-exec",
			 "tcp6", "fork-exec-clean", "tcp4", NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_LINE(&r, "child tcp6 domain=10 ");
	EXPECT_LINE(&r, "child tcp4 domain=2 ");
	/* Parent and child decided; the clean grandchild did not. */
	EXPECT_EQ(2, count(r.err, "socket -> hps")) TH_LOG("%s", r.err);

	if (hps_available()) {
		ASSERT_EQ(0, run(&r, "", "@run", "@probe", "tcp4",
				 "fork-exec", "tcp6", "fork-exec-clean",
				 "tcp4", NULL));
		ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
		EXPECT_LINE(&r, "sock tcp4 domain=22 ");
		EXPECT_LINE(&r, "child tcp6 domain=22 ");
		EXPECT_LINE(&r, "child tcp4 domain=2 ");
	}
}

/*
 * A real program: Python's socket module. socket.socket().family is the
 * family Python asked for (it caches its argument), so it stays AF_INET;
 * the kernel's answer is SO_DOMAIN.
 */
TEST(python_socket)
{
	static const char prog[] =
		"import socket\n"
		"s = socket.socket()\n"
		"d = s.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN)\n"
		"print(d, int(s.family))\n";
	struct run r;

	ASSERT_EQ(0, access("/usr/bin/python3", X_OK)) TH_LOG("python3 missing");
	ASSERT_EQ(0, run(&r, missing_env(), "@run", "/usr/bin/python3", "-c",
			 prog, NULL));
	ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
	EXPECT_STREQ("2 2\n", r.out);
	EXPECT_LOG(&r, MISSING_MSG);
	if (hps_available()) {
		ASSERT_EQ(0, run(&r, "", "@run", "/usr/bin/python3", "-c",
				 prog, NULL));
		ASSERT_EQ(0, r.status) TH_LOG("%s", r.err);
		EXPECT_STREQ("22 2\n", r.out);
	}
}

/* A real program (socat, installed by tools/deps.sh): dry-run decision. */
TEST(socat_dry_run)
{
	char dst[64];
	struct run r;
	int port = free_port();

	ASSERT_LT(0, port);
	ASSERT_EQ(0, access("/usr/bin/socat", X_OK)) TH_LOG("socat missing: make deps");
	snprintf(dst, sizeof(dst), "TCP4:127.0.0.1:%d", port);
	ASSERT_EQ(0, run(&r, "", "@run", "-n", "/usr/bin/socat", "-u",
			 "OPEN:/dev/null", dst, NULL));
	EXPECT_LOG(&r, "socket -> hps (mode all; dry run");
}

TEST_HARNESS_MAIN
