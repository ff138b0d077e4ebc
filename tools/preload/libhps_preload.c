// SPDX-License-Identifier: GPL-2.0
/*
 * libhps-preload.so: LD_PRELOAD library behind hps_run(1). It makes an
 * unmodified program's TCP stream sockets AF_HPS sockets; see
 * Documentation/preload.rst.
 *
 * Only socket() decides. When the configuration alone settles the fate of
 * a new TCP socket (mode all or none, or rules that all give the same
 * answer whatever address the socket is later used with), socket() creates
 * the final socket at once and the library never sees it again. Only when
 * the answer depends on an address (a "listen" rule on a port, a "connect"
 * rule on a subnet) is the socket created as TCP and remembered as pending;
 * listen() and connect() then decide with the address in hand and, if the
 * socket must move, re-create it as AF_HPS on the same descriptor number,
 * carrying over O_NONBLOCK, FD_CLOEXEC, the options the program set with
 * setsockopt() and the local address it bound. The AF_HPS socket is made
 * ready on a descriptor of its own and put on the program's by dup3() only
 * once nothing can fail any more, so a move that fails leaves the program
 * its TCP socket as it was (pending_move()). That is why listen(),
 * connect() and setsockopt() are interposed too; for every other descriptor
 * they are a single relaxed load and a call through.
 *
 * Nothing is allocated after start-up: the rules live in a static table,
 * the pending sockets in a static array indexed by descriptor number.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <linux/af_hps.h>

#define HPS_EXPORT	__attribute__((visibility("default")))

#define HPS_MAX_RULES	256
#define HPS_MAX_FD	4096	/* pending sockets above this stay TCP */
#define HPS_MAX_OPTS	16	/* setsockopt() calls remembered per socket */
#define HPS_OPT_LEN	64	/* largest option value remembered (an ifreq) */
#define HPS_MAX_SAID	64	/* distinct warnings said once per process */
#define HPS_RULES_MAX	65536	/* largest rules file accepted */
#define HPS_DEFAULT_RULES "/etc/hps_run.conf"
#define HPS_SYSLOG_PATH	"/dev/log"

enum hps_mode { MODE_ALL, MODE_NONE, MODE_RULES };
enum hps_action { ACT_TCP, ACT_HPS };
enum hps_dir { DIR_LISTEN = 1, DIR_CONNECT = 2, DIR_ANY = 3 };
enum hps_log { OUT_AUTO, OUT_STDERR, OUT_SYSLOG };

struct hps_rule {
	int action;
	int dir;
	int af;			/* 0: any address; AF_INET or AF_INET6 */
	unsigned char addr[16];
	int prefix;		/* bits of addr that must match */
	unsigned int port_lo, port_hi;
	int line;
};

static struct {
	int mode;
	int fallback_error;
	int debug;
	int dryrun;
	int af;			/* family to move sockets to (AF_HPS) */
	int default_action;
	int nrules;
	int rules_refused;	/* unreadable or bad: mode none */
	struct hps_rule rules[HPS_MAX_RULES];
	const char *rules_path;
	int log;		/* enum hps_log */
	int err_open;		/* fd 2 at start-up: open, and which file */
	dev_t err_dev;
	ino_t err_ino;
	struct sockaddr_un log_addr;
} cfg;

struct hps_opt {
	int level, name;
	socklen_t len;
	int noreplay;		/* a pointer or a descriptor: value not kept */
	unsigned char val[HPS_OPT_LEN];
};

struct hps_pending {
	atomic_int live;	/* read without the lock: the fast path */
	dev_t dev;		/* identify the socket, not just the number: */
	ino_t ino;		/* close() is not interposed */
	int type;		/* without SOCK_NONBLOCK / SOCK_CLOEXEC */
	int protocol;
	int nopts;
	struct hps_opt opts[HPS_MAX_OPTS];
	struct hps_opt lost;	/* the first option that could not be kept */
	int nlost;
};

static struct hps_pending pending[HPS_MAX_FD];
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { int kind, level, name; } said[HPS_MAX_SAID];	/* locked */
static int nsaid;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static atomic_int init_done;
static atomic_int fallback_said;

static int (*real_socket)(int, int, int);
static int (*real_connect)(int, const struct sockaddr *, socklen_t);
static int (*real_listen)(int, int);
static int (*real_setsockopt)(int, int, int, const void *, socklen_t);

/* + 1 to see that a file is longer than the limit, + 1 for the NUL */
static char rules_buf[HPS_RULES_MAX + 2];

static int sys_socket(int domain, int type, int protocol);
static int sys_connect(int fd, const struct sockaddr *sa, socklen_t len);

/*
 * May a message go to fd 2? A program's fd 2 is not always its error
 * output: a daemon that closed its standard descriptors may have a socket
 * or a data file there, and inetd's children have the connection. So a
 * terminal always, and otherwise only when asked (-d, HPS_RUN_LOG=stderr)
 * and fd 2 is still the file it was at start-up and not a socket.
 */
static int stderr_ok(void)
{
	struct stat st;

	if (cfg.log == OUT_SYSLOG)
		return 0;
	if (isatty(STDERR_FILENO))
		return 1;
	if (cfg.log != OUT_STDERR && !cfg.debug)
		return 0;
	return cfg.err_open && !fstat(STDERR_FILENO, &st) &&
	       !S_ISSOCK(st.st_mode) && st.st_dev == cfg.err_dev &&
	       st.st_ino == cfg.err_ino;
}

/*
 * The syslog socket, opened for each message and closed after it: a
 * descriptor kept open could be closed by the program and its number
 * reused for something else. Raw system calls: connect() here must not
 * come back into this library. Never blocks: a message lost is better
 * than a program stuck behind a busy syslog daemon.
 */
static void to_syslog(const char *msg, int len)
{
	static const int types[] = { SOCK_DGRAM, SOCK_STREAM };
	unsigned int i;
	int fd, err;

	if (!cfg.log_addr.sun_path[0])
		return;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		fd = sys_socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return;
		if (!sys_connect(fd, (struct sockaddr *)&cfg.log_addr,
				 sizeof(cfg.log_addr))) {
			/* A stream syslog socket takes NUL-ended messages. */
			send(fd, msg, len + (types[i] == SOCK_STREAM),
			     MSG_DONTWAIT | MSG_NOSIGNAL);
			close(fd);
			return;
		}
		err = errno;
		close(fd);
		if (err != EPROTOTYPE)
			return;
	}
}

/*
 * One message: to fd 2 with one write() when stderr_ok(), else to syslog
 * (LOG_USER, at pri). No stdio, no malloc.
 */
static void say_pri(int pri, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n, m, head, cancel;
	int saved = errno;

	/* write() is a cancellation point; a message is never cut short. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	head = snprintf(buf, sizeof(buf), "<%d>", LOG_USER | pri);
	n = head + snprintf(buf + head, sizeof(buf) - head, "hps_run[%d]: ",
			    (int)getpid());
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	if (stderr_ok()) {
		buf[n++] = '\n';
		/* A failed write has nowhere else to be reported. */
		if (write(STDERR_FILENO, buf + head, n - head) < 0)
			errno = saved;
	} else {
		buf[n] = '\0';
		to_syslog(buf, n);
	}
	pthread_setcancelstate(cancel, NULL);
	errno = saved;
}

#define say(...) say_pri(LOG_WARNING, __VA_ARGS__)
#define dbg(...) do {						\
	if (cfg.debug)							\
		say_pri(LOG_DEBUG, __VA_ARGS__);			\
} while (0)

/* The one message the brief promises, once per process. */
static void say_fallback(int err)
{
	if (atomic_exchange(&fallback_said, 1))
		return;
	if (err == EAFNOSUPPORT)
		say("AF_HPS not available (is af_hps.ko loaded?): %s",
		    cfg.fallback_error ? "failing the call" :
					 "falling back to TCP");
	else
		say("cannot create an AF_HPS socket (%s): %s", strerror(err),
		    cfg.fallback_error ? "failing the call" :
					 "falling back to TCP");
}

static int sys_socket(int domain, int type, int protocol)
{
	return syscall(SYS_socket, domain, type, protocol);
}

static int sys_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	return syscall(SYS_connect, fd, sa, len);
}

static int sys_listen(int fd, int backlog)
{
	return syscall(SYS_listen, fd, backlog);
}

static int sys_setsockopt(int fd, int level, int name, const void *val,
			  socklen_t len)
{
	return syscall(SYS_setsockopt, fd, level, name, val, len);
}

static void *next_sym(const char *name, void *fallback)
{
	void *p = dlsym(RTLD_NEXT, name);

	return p ? p : fallback;
}

/* ---- rules file -------------------------------------------------------- */

static int parse_ports(const char *s, struct hps_rule *r)
{
	char *end;
	unsigned long lo, hi;

	if (!strcmp(s, "*")) {
		r->port_lo = 0;
		r->port_hi = 65535;
		return 0;
	}
	errno = 0;
	lo = strtoul(s, &end, 10);
	if (end == s || errno || lo > 65535)
		return -1;
	hi = lo;
	if (*end == '-') {
		s = end + 1;
		hi = strtoul(s, &end, 10);
		if (end == s || errno || hi > 65535 || hi < lo)
			return -1;
	}
	if (*end)
		return -1;
	r->port_lo = lo;
	r->port_hi = hi;
	return 0;
}

static int parse_prefix(const char *s, int max)
{
	char *end;
	long v;

	if (!*s)
		return max;
	if (*s != '/')
		return -1;
	v = strtol(s + 1, &end, 10);
	if (end == s + 1 || *end || v < 0 || v > max)
		return -1;
	return v;
}

/* ADDR:PORTS with ADDR one of *, a.b.c.d[/n], [v6][/n]; or a lone "*". */
static int parse_spec(char *s, struct hps_rule *r)
{
	char *colon, *close;
	int max;

	if (!strcmp(s, "*")) {
		r->af = 0;
		return parse_ports("*", r);
	}
	if (*s == '[') {
		close = strchr(s, ']');
		if (!close)
			return -1;
		*close = '\0';
		colon = strrchr(close + 1, ':');
		if (!colon)
			return -1;
		*colon = '\0';
		if (inet_pton(AF_INET6, s + 1, r->addr) != 1)
			return -1;
		r->af = AF_INET6;
		max = 128;
		r->prefix = parse_prefix(close + 1, max);
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -1;
		*colon = '\0';
		if (!strcmp(s, "*")) {
			r->af = 0;
			r->prefix = 0;
		} else {
			char *slash = strchr(s, '/');
			char pfx[8] = "";

			if (slash) {
				if (strlen(slash) >= sizeof(pfx))
					return -1;
				strcpy(pfx, slash);
				*slash = '\0';
			}
			if (inet_pton(AF_INET, s, r->addr) != 1)
				return -1;
			r->af = AF_INET;
			r->prefix = parse_prefix(pfx, 32);
		}
	}
	if (r->prefix < 0)
		return -1;
	return parse_ports(colon + 1, r);
}

static int parse_action(const char *s)
{
	if (!strcmp(s, "hps"))
		return ACT_HPS;
	if (!strcmp(s, "tcp"))
		return ACT_TCP;
	return -1;
}

/*
 * One line; 0 if it is a rule, a default, a comment or blank, else -1,
 * said unless quiet.
 */
static int parse_line(char *line, int lineno, int quiet)
{
	char *tok[6];
	int n = 0, act;
	char *save = NULL, *p;
	struct hps_rule r;

	p = strchr(line, '#');
	if (p)
		*p = '\0';
	for (p = strtok_r(line, " \t\r", &save); p && n < 6;
	     p = strtok_r(NULL, " \t\r", &save))
		tok[n++] = p;
	if (!n)
		return 0;

	if (!strcmp(tok[0], "default") && n == 2) {
		act = parse_action(tok[1]);
		if (act < 0)
			goto bad;
		cfg.default_action = act;
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.line = lineno;
	if (strcmp(tok[0], "use") || n != 4)
		goto bad;
	r.action = parse_action(tok[1]);
	if (r.action < 0)
		goto bad;
	if (!strcmp(tok[2], "listen"))
		r.dir = DIR_LISTEN;
	else if (!strcmp(tok[2], "connect"))
		r.dir = DIR_CONNECT;
	else if (!strcmp(tok[2], "any"))
		r.dir = DIR_ANY;
	else
		goto bad;
	if (parse_spec(tok[3], &r))
		goto bad;
	if (cfg.nrules == HPS_MAX_RULES) {
		if (!quiet)
			say("%s:%d: more than %d rules", cfg.rules_path,
			    lineno, HPS_MAX_RULES);
		return -1;
	}
	cfg.rules[cfg.nrules++] = r;
	return 0;
bad:
	if (!quiet)
		say("%s:%d: cannot parse rule (want 'use hps|tcp listen|connect|any ADDR:PORTS' or 'default hps|tcp')",
		    cfg.rules_path, lineno);
	return -1;
}

/*
 * Read and parse the whole rules file, or refuse it: a file cut at a size
 * limit may end in a line cut mid-token ("*:22" of "*:2222"), and one bad
 * line may be the "use tcp" that kept a service off RDMA, so a file that
 * is too long, holds a NUL byte or has a line that does not parse is not
 * used at all. Returns 0, or -1 after saying why.
 */
static int load_rules(const char *path)
{
	ssize_t n, got = 0;
	char *line, *nl, *nul;
	int fd, err, lineno = 0, bad = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		goto unreadable;
	}
	/* One byte past the limit: a file that reaches it is too long. */
	do {
		n = read(fd, rules_buf + got, HPS_RULES_MAX + 1 - got);
		if (n > 0)
			got += n;
	} while ((n > 0 && got <= HPS_RULES_MAX) || (n < 0 && errno == EINTR));
	err = errno;
	close(fd);
	if (n < 0)
		goto unreadable;
	if (got > HPS_RULES_MAX) {
		say("rules file %s is larger than %d bytes: refused, leaving all sockets TCP",
		    path, HPS_RULES_MAX);
		return -1;
	}
	nul = memchr(rules_buf, '\0', got);
	if (nul) {
		for (line = rules_buf, lineno = 1; line < nul; line++)
			lineno += *line == '\n';
		say("rules file %s: line %d holds a NUL byte: refused, leaving all sockets TCP",
		    path, lineno);
		return -1;
	}
	rules_buf[got] = '\0';
	for (line = rules_buf; line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		/* The first few: a binary file would say every line. */
		if (parse_line(line, ++lineno, bad >= 10))
			bad++;
	}
	if (bad) {
		say("rules file %s: %d bad line(s): refused, leaving all sockets TCP",
		    path, bad);
		cfg.nrules = 0;
		return -1;
	}
	return 0;
unreadable:
	say("cannot read rules file %s (%s): leaving all sockets TCP", path,
	    strerror(err));
	return -1;
}

/* ---- configuration ------------------------------------------------------ */

static const char *act_name(int act);

static void atfork_prepare(void)
{
	pthread_mutex_lock(&pending_lock);
}

static void atfork_release(void)
{
	pthread_mutex_unlock(&pending_lock);
}

static void hps_init(void)
{
	const char *mode, *fb, *v;
	struct stat st;

	real_socket = next_sym("socket", sys_socket);
	real_connect = next_sym("connect", sys_connect);
	real_listen = next_sym("listen", sys_listen);
	real_setsockopt = next_sym("setsockopt", sys_setsockopt);
	pthread_atfork(atfork_prepare, atfork_release, atfork_release);

	v = getenv("HPS_RUN_DEBUG");
	cfg.debug = v && *v && strcmp(v, "0");
	v = getenv("HPS_RUN_DRYRUN");
	cfg.dryrun = v && *v && strcmp(v, "0");
	if (cfg.dryrun)
		cfg.debug = 1;
	/* Where messages go; first, so that the ones below go there. */
	if (!fstat(STDERR_FILENO, &st)) {
		cfg.err_open = 1;
		cfg.err_dev = st.st_dev;
		cfg.err_ino = st.st_ino;
	}
	/* Testing hook: the syslog socket. */
	v = getenv("HPS_RUN_LOG_SOCKET");
	if (!v || !*v)
		v = HPS_SYSLOG_PATH;
	cfg.log_addr.sun_family = AF_UNIX;
	if (strlen(v) < sizeof(cfg.log_addr.sun_path))
		strcpy(cfg.log_addr.sun_path, v);
	v = getenv("HPS_RUN_LOG");
	if (v && !strcmp(v, "stderr"))
		cfg.log = OUT_STDERR;
	else if (v && !strcmp(v, "syslog"))
		cfg.log = OUT_SYSLOG;
	else if (v && *v && strcmp(v, "auto"))
		say("HPS_RUN_LOG=%s is not auto, stderr or syslog: using auto",
		    v);
	/* Testing hook: the family number to move sockets to. */
	v = getenv("HPS_RUN_AF");
	cfg.af = v && *v ? atoi(v) : AF_HPS;
	cfg.default_action = ACT_HPS;

	fb = getenv("HPS_RUN_FALLBACK");
	if (fb && !strcmp(fb, "error"))
		cfg.fallback_error = 1;
	else if (fb && *fb && strcmp(fb, "tcp"))
		say("HPS_RUN_FALLBACK=%s is neither tcp nor error: using tcp",
		    fb);

	cfg.rules_path = getenv("HPS_RUN_RULES");
	if (cfg.rules_path && !*cfg.rules_path)
		cfg.rules_path = NULL;
	mode = getenv("HPS_RUN_MODE");
	if (mode && !*mode)
		mode = NULL;
	if (!mode) {
		if (cfg.rules_path || !access(HPS_DEFAULT_RULES, R_OK))
			mode = "rules";
		else
			mode = "all";
	}
	if (!strcmp(mode, "all")) {
		cfg.mode = MODE_ALL;
	} else if (!strcmp(mode, "none")) {
		cfg.mode = MODE_NONE;
	} else if (!strcmp(mode, "rules")) {
		cfg.mode = MODE_RULES;
		if (!cfg.rules_path)
			cfg.rules_path = HPS_DEFAULT_RULES;
		if (load_rules(cfg.rules_path)) {
			cfg.mode = MODE_NONE;
			cfg.rules_refused = 1;
		}
	} else {
		say("HPS_RUN_MODE=%s is not all, none or rules: leaving all sockets TCP",
		    mode);
		cfg.mode = MODE_NONE;
	}
	dbg("mode %s%s%s, %d rule(s), default %s, fallback %s%s",
	    cfg.mode == MODE_ALL ? "all" : cfg.mode == MODE_NONE ? "none" :
	    "rules", cfg.mode == MODE_RULES ? " from " : "",
	    cfg.mode == MODE_RULES ? cfg.rules_path : "", cfg.nrules,
	    act_name(cfg.default_action), cfg.fallback_error ? "error" : "tcp",
	    cfg.dryrun ? ", dry run" : "");
}

static void hps_init_mark(void)
{
	hps_init();
	atomic_store_explicit(&init_done, 1, memory_order_release);
}

/*
 * Initialisation (dlsym(), getenv(), pthread_atfork(), reading the rules)
 * is neither async-signal-safe nor cancellation-safe, so it runs in the
 * library's constructor, before the program's main() and before any
 * thread or signal handler of its own. A constructor of another library
 * that runs before ours and makes a socket gets it done on the spot, in
 * the single-threaded start-up.
 */
__attribute__((constructor)) static void hps_ctor(void)
{
	pthread_once(&init_once, hps_init_mark);
}

static inline void hps_init_once(void)
{
	if (!atomic_load_explicit(&init_done, memory_order_acquire))
		pthread_once(&init_once, hps_init_mark);
}

/* ---- decisions ---------------------------------------------------------- */

static const char *act_name(int act)
{
	return act == ACT_HPS ? "hps" : "tcp";
}

/* Could a rule ever match a socket of this family? */
static int rule_fits_family(const struct hps_rule *r, int family)
{
	/* An IPv4 rule also matches v4-mapped addresses on IPv6 sockets. */
	return !r->af || r->af == AF_INET || family == AF_INET6;
}

static int rule_is_wildcard(const struct hps_rule *r)
{
	return !r->af && r->port_lo == 0 && r->port_hi == 65535;
}

/*
 * At socket() time: the action if every rule that might match (and the
 * default, unless wildcard rules cover both directions first) agrees, else
 * -1 (pending). *why gets the deciding rule's line, 0 for the default.
 */
static int decide_at_create(int family, int *why)
{
	int seen = 0, covered = 0, i, line = 0;

	for (i = 0; i < cfg.nrules && covered != DIR_ANY; i++) {
		const struct hps_rule *r = &cfg.rules[i];

		if (!rule_fits_family(r, family))
			continue;
		if (!seen)
			line = r->line;
		seen |= 1 << r->action;
		if (rule_is_wildcard(r))
			covered |= r->dir;
	}
	if (covered != DIR_ANY)
		seen |= 1 << cfg.default_action;
	*why = line;
	if (seen == 1 << ACT_HPS)
		return ACT_HPS;
	if (seen == 1 << ACT_TCP)
		return ACT_TCP;
	return -1;
}

static int rule_matches(const struct hps_rule *r, int dir,
			const struct sockaddr *sa)
{
	const unsigned char *a;
	unsigned int port;
	int af, bytes, bits;
	static const unsigned char mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	if (!(r->dir & dir))
		return 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		a = (const unsigned char *)&sin->sin_addr;
		port = ntohs(sin->sin_port);
		af = AF_INET;
	} else {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		a = sin6->sin6_addr.s6_addr;
		port = ntohs(sin6->sin6_port);
		af = AF_INET6;
		if (r->af == AF_INET && !memcmp(a, mapped, sizeof(mapped))) {
			a += 12;
			af = AF_INET;
		}
	}
	if (port < r->port_lo || port > r->port_hi)
		return 0;
	if (!r->af)
		return 1;
	if (r->af != af)
		return 0;
	bytes = r->prefix / 8;
	bits = r->prefix % 8;
	if (memcmp(a, r->addr, bytes))
		return 0;
	if (bits && ((a[bytes] ^ r->addr[bytes]) & (0xff00 >> bits) & 0xff))
		return 0;
	return 1;
}

static int decide_with_addr(int dir, const struct sockaddr *sa, int *why)
{
	int i;

	for (i = 0; i < cfg.nrules; i++) {
		if (rule_matches(&cfg.rules[i], dir, sa)) {
			*why = cfg.rules[i].line;
			return cfg.rules[i].action;
		}
	}
	*why = 0;
	return cfg.default_action;
}

static void fmt_addr(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(sin->sin_port));
	} else {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(sin6->sin6_port));
	}
}

static void fmt_why(int line, char *buf, size_t len)
{
	if (cfg.mode == MODE_ALL)
		snprintf(buf, len, "mode all");
	else if (cfg.mode == MODE_NONE)
		snprintf(buf, len, cfg.rules_refused ? "rules file refused" :
			 "mode none");
	else if (line)
		snprintf(buf, len, "%s:%d", cfg.rules_path, line);
	else
		snprintf(buf, len, "default");
}

static int eligible(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) &&
	       type == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP);
}

static const char *fam_name(int domain)
{
	return domain == AF_INET ? "tcp4" : "tcp6";
}

/* ---- pending sockets ---------------------------------------------------- */

/*
 * What the thread had before it took pending_lock. Inside, the library
 * calls close() and write(), which are cancellation points: a thread
 * cancelled there would exit holding the lock, and every later call on a
 * pending socket, and every fork() (whose handler takes the lock), would
 * wait for ever. So cancellation is off while the lock is held, and a
 * cancel request is acted on at the program's next cancellation point
 * (the real connect(), say). Signals are blocked too: a handler that
 * called connect() on a pending socket, or fork(), in the thread that was
 * interrupted holding the lock would deadlock on it.
 */
struct hps_locked {
	sigset_t sigs;
	int cancel;
};

static void pending_lock_take(struct hps_locked *l)
{
	sigset_t all;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &l->cancel);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &l->sigs);
	pthread_mutex_lock(&pending_lock);
}

static void pending_lock_drop(struct hps_locked *l)
{
	pthread_mutex_unlock(&pending_lock);
	pthread_sigmask(SIG_SETMASK, &l->sigs, NULL);
	pthread_setcancelstate(l->cancel, NULL);
}

/* Called with pending_lock held: is fd still the socket we remembered? */
static int pending_same(int fd, const struct hps_pending *p)
{
	struct stat st;

	return !fstat(fd, &st) && st.st_dev == p->dev && st.st_ino == p->ino;
}

static struct hps_pending *pending_get(int fd)
{
	struct hps_pending *p = &pending[fd];

	if (!atomic_load_explicit(&p->live, memory_order_relaxed))
		return NULL;
	if (!pending_same(fd, p)) {
		atomic_store(&p->live, 0);	/* closed and reused */
		return NULL;
	}
	return p;
}

static int pending_maybe(int fd)
{
	return fd >= 0 && fd < HPS_MAX_FD &&
	       atomic_load_explicit(&pending[fd].live, memory_order_relaxed);
}

static int pending_add(int fd, int type, int protocol)
{
	struct hps_pending *p;
	struct hps_locked l;
	struct stat st;

	if (fd >= HPS_MAX_FD || fstat(fd, &st))
		return -1;
	pending_lock_take(&l);
	p = &pending[fd];
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	p->type = type;
	p->protocol = protocol;
	p->nopts = 0;
	p->nlost = 0;
	atomic_store(&p->live, 1);
	pending_lock_drop(&l);
	return 0;
}

/* ---- options ------------------------------------------------------------ */

static const struct hps_optname {
	int level, name;
	const char *s;
} optnames[] = {
#define N(level, name) { level, name, #name }
	N(SOL_SOCKET, SO_REUSEADDR), N(SOL_SOCKET, SO_REUSEPORT),
	N(SOL_SOCKET, SO_KEEPALIVE), N(SOL_SOCKET, SO_LINGER),
	N(SOL_SOCKET, SO_RCVBUF), N(SOL_SOCKET, SO_SNDBUF),
	N(SOL_SOCKET, SO_RCVLOWAT), N(SOL_SOCKET, SO_RCVTIMEO),
	N(SOL_SOCKET, SO_SNDTIMEO), N(SOL_SOCKET, SO_PRIORITY),
	N(SOL_SOCKET, SO_MARK), N(SOL_SOCKET, SO_BINDTODEVICE),
	N(SOL_SOCKET, SO_OOBINLINE), N(SOL_SOCKET, SO_ATTACH_FILTER),
	N(SOL_SOCKET, SO_ATTACH_BPF), N(SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF),
	N(SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF),
	N(IPPROTO_TCP, TCP_NODELAY), N(IPPROTO_TCP, TCP_CORK),
	N(IPPROTO_TCP, TCP_KEEPIDLE), N(IPPROTO_TCP, TCP_KEEPINTVL),
	N(IPPROTO_TCP, TCP_KEEPCNT), N(IPPROTO_TCP, TCP_DEFER_ACCEPT),
	N(IPPROTO_TCP, TCP_FASTOPEN), N(IPPROTO_TCP, TCP_USER_TIMEOUT),
	N(IPPROTO_TCP, TCP_CONGESTION), N(IPPROTO_TCP, TCP_MAXSEG),
	N(IPPROTO_TCP, TCP_QUICKACK), N(IPPROTO_TCP, TCP_NOTSENT_LOWAT),
	N(IPPROTO_TCP, TCP_MD5SIG),
	N(IPPROTO_IP, IP_TOS), N(IPPROTO_IP, IP_TTL),
	N(IPPROTO_IP, IP_FREEBIND), N(IPPROTO_IP, IP_TRANSPARENT),
	N(IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT),
	N(IPPROTO_IPV6, IPV6_V6ONLY), N(IPPROTO_IPV6, IPV6_TCLASS),
	N(IPPROTO_IPV6, IPV6_FREEBIND), N(IPPROTO_IPV6, IPV6_TRANSPARENT),
#undef N
};

static const char *opt_name(int level, int name, char *buf, size_t len)
{
	unsigned int i;

	for (i = 0; i < sizeof(optnames) / sizeof(optnames[0]); i++)
		if (optnames[i].level == level && optnames[i].name == name)
			return optnames[i].s;
	snprintf(buf, len, "option %d of level %d", name, level);
	return buf;
}

/*
 * Options whose value is a pointer into the program's memory (a classic
 * BPF program) or a descriptor number (an eBPF program): by the time of
 * the move the memory may be freed or reused and the number may name
 * another file. Their values are never kept nor replayed; a socket filter
 * has nothing to filter on AF_HPS anyway (no packets reach its socket).
 * Returns why, or NULL for an option that can be replayed.
 */
static const char *opt_noreplay(int level, int name)
{
	if (level != SOL_SOCKET)
		return NULL;
	if (name == SO_ATTACH_FILTER || name == SO_ATTACH_REUSEPORT_CBPF)
		return "its value points into the program's memory, which may have changed since";
	if (name == SO_ATTACH_BPF || name == SO_ATTACH_REUSEPORT_EBPF)
		return "its value is a descriptor number, which may name another file by now";
	return NULL;
}

/*
 * Options that decide which connections the socket takes: AF_HPS cannot
 * honour them, and a socket moved without them would take others (an
 * IPv6 listener meant to be IPv6-only would claim IPv4 too, and fail the
 * program's own IPv4 listener on that port; a transparent proxy would get
 * none of its traffic). Set to non-zero, they keep the socket TCP.
 */
static const char *opt_blocks(const struct hps_opt *o)
{
	int v;

	if (o->noreplay || o->len < sizeof(int))
		return NULL;
	memcpy(&v, o->val, sizeof(v));
	if (!v)
		return NULL;
	if (o->level == IPPROTO_IPV6 && o->name == IPV6_V6ONLY)
		return "AF_HPS cannot make an IPv6 socket IPv6-only";
	if ((o->level == IPPROTO_IP && o->name == IP_TRANSPARENT) ||
	    (o->level == IPPROTO_IPV6 && o->name == IPV6_TRANSPARENT))
		return "AF_HPS takes no connections for addresses not its own";
	return NULL;
}

/* Why AF_HPS's refusal of an option leaves the socket as good. */
static const char *opt_hint(int level, int name)
{
	if (level == IPPROTO_IP && name == IP_BIND_ADDRESS_NO_PORT)
		return "; the bound address is kept, its port chosen now";
	if ((level == IPPROTO_IP && name == IP_FREEBIND) ||
	    (level == IPPROTO_IPV6 && name == IPV6_FREEBIND))
		return "; the AF_HPS socket was bound to the address as it is";
	return "";
}

/*
 * Say a warning of this kind about this option once per process (every
 * time with -d): a server moving a socket per connection would repeat it
 * for each. Called with pending_lock held.
 */
static int say_first(int kind, int level, int name)
{
	int i;

	for (i = 0; i < nsaid; i++)
		if (said[i].kind == kind && said[i].level == level &&
		    said[i].name == name)
			return 0;
	if (nsaid < HPS_MAX_SAID) {
		said[nsaid].kind = kind;
		said[nsaid].level = level;
		said[nsaid].name = name;
		nsaid++;
	}
	return 1;
}

enum { SAID_OPT_DROPPED = 1, SAID_MOVE_FAILED };

static void opt_forget(struct hps_pending *p, int level, int name)
{
	int i;

	for (i = 0; i < p->nopts; i++) {
		if (p->opts[i].level == level && p->opts[i].name == name) {
			p->opts[i] = p->opts[--p->nopts];
			return;
		}
	}
}

/* A setsockopt() that succeeded on pending socket p. Lock held. */
static void pending_record_opt(struct hps_pending *p, int level, int name,
			       const void *val, socklen_t len)
{
	int noreplay = !!opt_noreplay(level, name);
	struct hps_opt *o;
	int i;

	/* A filter detached is one no longer to be reported. */
	if (level == SOL_SOCKET && name == SO_DETACH_FILTER) {
		opt_forget(p, SOL_SOCKET, SO_ATTACH_FILTER);
		opt_forget(p, SOL_SOCKET, SO_ATTACH_BPF);
		return;
	}
	if (level == SOL_SOCKET && name == SO_DETACH_REUSEPORT_BPF) {
		opt_forget(p, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF);
		opt_forget(p, SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF);
		return;
	}
	for (i = 0; i < p->nopts; i++)
		if (p->opts[i].level == level && p->opts[i].name == name)
			break;
	if (i == HPS_MAX_OPTS || (!noreplay && (len > HPS_OPT_LEN ||
						 (len && !val)))) {
		/* Cannot be carried: the move will be refused. */
		if (!p->nlost++) {
			p->lost.level = level;
			p->lost.name = name;
			p->lost.len = len;
		}
		return;
	}
	if (i == p->nopts)
		p->nopts++;
	o = &p->opts[i];
	o->level = level;
	o->name = name;
	o->noreplay = noreplay;
	o->len = noreplay ? 0 : len;
	if (o->len)
		memcpy(o->val, val, len);
}

/*
 * A connect() on an AF_HPS socket made here goes on over TCP when the peer
 * cannot do AF_HPS (HPS_TCP_FALLBACK), unless HPS_RUN_FALLBACK=error. A
 * module without the option answers ENOPROTOOPT: the errors stay, as
 * before it.
 */
static void connect_fallback_on(int fd)
{
	int one = 1;

	if (!cfg.fallback_error && cfg.af == AF_HPS)
		real_setsockopt(fd, SOL_HPS, HPS_TCP_FALLBACK, &one,
				sizeof(one));
}

/* ---- moving a pending socket -------------------------------------------- */

static int addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

/*
 * Was the socket bound? A port, or an address without one (bind() with
 * IP_BIND_ADDRESS_NO_PORT, the port left to connect()).
 */
static int addr_bound(const struct sockaddr_storage *ss)
{
	if (addr_port(ss))
		return 1;
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr !=
		       htonl(INADDR_ANY);
	return !IN6_IS_ADDR_UNSPECIFIED(
		&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/*
 * An option the moved socket does not have: err is setsockopt()'s errno on
 * the AF_HPS socket, or -1 for one never replayed. Lock held.
 */
static void say_refused(int fd, const struct hps_opt *o, int err)
{
	char nbuf[48];
	const char *n = opt_name(o->level, o->name, nbuf, sizeof(nbuf));

	if (!say_first(SAID_OPT_DROPPED, o->level, o->name))
		dbg("fd %d: %s not carried to AF_HPS (%s)", fd, n,
		    err < 0 ? "never replayed" : strerror(err));
	else if (err < 0)
		say("fd %d: %s not carried to AF_HPS: %s (and socket filters have no packets to filter there)",
		    fd, n, opt_noreplay(o->level, o->name));
	else
		say("fd %d: %s not carried to AF_HPS, which refuses it (%s)%s",
		    fd, n, strerror(err), opt_hint(o->level, o->name));
}

enum { MOVE_DONE, MOVE_TCP, MOVE_FAIL };
/* Where a move failed: failures of one kind are said once a process. */
enum {
	STEP_STATE, STEP_LOST, STEP_BLOCKED, STEP_NONBLOCK, STEP_BIND,
	STEP_LISTEN, STEP_DUP
};

/*
 * Move pending socket fd (p) to cfg.af, for listen() (with backlog) or
 * connect(). Called with pending_lock held; what describes the decision
 * for messages.
 *
 * The program's descriptor is touched once, last: the AF_HPS socket is
 * made on a descriptor of its own (close-on-exec, and no fork() can copy
 * it while the lock is held), given the TCP socket's O_NONBLOCK and
 * options, bound to its local address, and for listen() made to listen;
 * only then does dup3() put it on fd, which closes the TCP socket. Any
 * step that fails leaves fd the TCP socket it was, bound as it was, so a
 * move that cannot be completed is a move that did not happen.
 *
 * Returns MOVE_DONE (fd is AF_HPS, and listening for listen()), MOVE_TCP
 * (fd is the TCP socket: go on with the real call) or MOVE_FAIL with errno
 * (the same, but HPS_RUN_FALLBACK=error: fail the call).
 */
static int pending_move(int fd, struct hps_pending *p, int dir, int backlog,
			const char *what)
{
	struct sockaddr_storage local;
	socklen_t llen = sizeof(local);
	char why[300], a[INET6_ADDRSTRLEN + 16], nbuf[48];
	int fl, fdfl, nfd = -1, i, err, reuse = 0, reuse_set = 0;
	int one = 1, zero = 0, step = STEP_STATE, level, name = 0;
	int refused[HPS_MAX_OPTS];
	const char *n, *b;

	fl = fcntl(fd, F_GETFL);
	fdfl = fcntl(fd, F_GETFD);
	if (fl < 0 || fdfl < 0 ||
	    getsockname(fd, (struct sockaddr *)&local, &llen)) {
		err = errno;
		snprintf(why, sizeof(why), "cannot read the TCP socket's state (%s)",
			 strerror(err));
		goto keep_tcp;
	}
	if (p->nlost) {
		step = STEP_LOST;
		level = p->lost.level;
		name = p->lost.name;
		n = opt_name(level, name, nbuf, sizeof(nbuf));
		err = ENOBUFS;
		if (p->nopts == HPS_MAX_OPTS)
			snprintf(why, sizeof(why), "more than %d options were set (%s and %d more cannot be carried)",
				 HPS_MAX_OPTS, n, p->nlost - 1);
		else
			snprintf(why, sizeof(why), "%s cannot be carried (%u bytes; the library keeps %d)",
				 n, (unsigned int)p->lost.len, HPS_OPT_LEN);
		goto keep_tcp;
	}
	for (i = 0; i < p->nopts; i++) {
		b = opt_blocks(&p->opts[i]);
		if (b) {
			step = STEP_BLOCKED;
			level = p->opts[i].level;
			name = p->opts[i].name;
			err = ENOPROTOOPT;
			snprintf(why, sizeof(why), "%s is set, and %s",
				 opt_name(level, name, nbuf, sizeof(nbuf)), b);
			goto keep_tcp;
		}
	}

	nfd = real_socket(cfg.af, p->type | SOCK_CLOEXEC, p->protocol);
	if (nfd < 0) {
		err = errno;
		say_fallback(err);
		goto fallback;
	}
	connect_fallback_on(nfd);
	if ((fl & O_NONBLOCK) && fcntl(nfd, F_SETFL, O_NONBLOCK)) {
		err = errno;
		step = STEP_NONBLOCK;
		snprintf(why, sizeof(why), "cannot make the AF_HPS socket non-blocking (%s)",
			 strerror(err));
		goto keep_tcp;
	}
	/* Refusals are said once the move is made: until then, no loss. */
	for (i = 0; i < p->nopts; i++) {
		struct hps_opt *o = &p->opts[i];

		refused[i] = 0;
		if (o->noreplay)
			refused[i] = -1;
		else if (real_setsockopt(nfd, o->level, o->name, o->val,
					 o->len))
			refused[i] = errno;
	}

	if (addr_bound(&local)) {
		/*
		 * The TCP socket holds its port until dup3(), and AF_HPS
		 * binds the port in the TCP stack too (for iWARP): both need
		 * SO_REUSEADDR for that, while neither listens. The TCP
		 * socket gets it back as it was, whatever happens next.
		 */
		socklen_t rlen = sizeof(reuse);

		if (addr_port(&local) &&
		    !getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, &rlen) &&
		    !reuse &&
		    !real_setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				     sizeof(one)))
			reuse_set = 1;
		if (bind(nfd, (struct sockaddr *)&local, llen)) {
			err = errno;
			fmt_addr((struct sockaddr *)&local, a, sizeof(a));
			snprintf(why, sizeof(why), "cannot bind the AF_HPS socket to %s (%s)",
				 a, strerror(err));
			step = STEP_BIND;
			goto keep_tcp;
		}
	}
	if (dir == DIR_LISTEN && real_listen(nfd, backlog)) {
		err = errno;
		snprintf(why, sizeof(why), "the AF_HPS socket cannot listen (%s)",
			 strerror(err));
		step = STEP_LISTEN;
		goto keep_tcp;
	}
	if (reuse_set)
		real_setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &zero,
				sizeof(zero));
	reuse_set = 0;
	/* Closed by another thread meanwhile: nothing of ours to replace. */
	if (!pending_same(fd, p)) {
		close(nfd);
		return MOVE_TCP;
	}
	if (dup3(nfd, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		err = errno;
		snprintf(why, sizeof(why), "cannot put the AF_HPS socket on descriptor %d (%s)",
			 fd, strerror(err));
		step = STEP_DUP;
		goto keep_tcp;
	}
	close(nfd);
	for (i = 0; i < p->nopts; i++)
		if (refused[i])
			say_refused(fd, &p->opts[i], refused[i]);
	return MOVE_DONE;

keep_tcp:
	if (reuse_set)
		real_setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &zero,
				sizeof(zero));
	if (nfd >= 0)
		close(nfd);
	if (say_first(SAID_MOVE_FAILED, step, name))
		say("fd %d: %s, but %s: %s", fd, what, why,
		    cfg.fallback_error ? "failing the call" : "kept TCP");
	else
		dbg("fd %d: %s, but %s: %s", fd, what, why,
		    cfg.fallback_error ? "failing the call" : "kept TCP");
fallback:
	if (cfg.fallback_error) {
		errno = err;
		return MOVE_FAIL;
	}
	return MOVE_TCP;
}

enum { RES_CALL, RES_DONE, RES_FAIL };

/*
 * listen()/connect() on a pending socket: decide with the address and move
 * the socket if the rules say so. Returns RES_CALL to go on with the real
 * call, RES_DONE when listen() was made (on the moved socket), RES_FAIL
 * with errno to fail the call.
 */
static int pending_resolve(int fd, int dir, const struct sockaddr *sa,
			   socklen_t salen, int backlog)
{
	struct sockaddr_storage ss;
	struct hps_pending *p;
	char a[INET6_ADDRSTRLEN + 16], why[300], what[400];
	const char *verb = dir == DIR_LISTEN ? "listen" : "connect";
	struct hps_locked l;
	int act, line, ret = RES_CALL;

	pending_lock_take(&l);
	p = pending_get(fd);
	if (!p)
		goto out;
	if (dir == DIR_LISTEN) {
		socklen_t len = sizeof(ss);

		if (getsockname(fd, (struct sockaddr *)&ss, &len))
			goto out;
		sa = (struct sockaddr *)&ss;
	} else if (!sa || salen < sizeof(struct sockaddr_in) ||
		   (sa->sa_family != AF_INET &&
		    (sa->sa_family != AF_INET6 ||
		     salen < sizeof(struct sockaddr_in6)))) {
		goto out;	/* AF_UNSPEC disconnect, bad address: kernel's */
	}
	atomic_store(&p->live, 0);
	act = decide_with_addr(dir, sa, &line);
	fmt_addr(sa, a, sizeof(a));
	fmt_why(line, why, sizeof(why));
	if (act == ACT_TCP) {
		dbg("fd %d: %s %s -> tcp (%s)", fd, verb, a, why);
		goto out;
	}
	if (cfg.dryrun) {
		dbg("fd %d: %s %s -> hps (%s; dry run: kept tcp)", fd, verb, a,
		    why);
		goto out;
	}
	snprintf(what, sizeof(what), "%s %s -> hps (%s)", verb, a, why);
	switch (pending_move(fd, p, dir, backlog, what)) {
	case MOVE_DONE:
		dbg("fd %d: %s", fd, what);
		ret = dir == DIR_LISTEN ? RES_DONE : RES_CALL;
		break;
	case MOVE_TCP:
		dbg("fd %d: %s %s -> tcp: fallback (%s)", fd, verb, a, why);
		break;
	default:
		/* Still pending: a retry decides again, and fails again. */
		atomic_store(&p->live, 1);
		ret = RES_FAIL;
		break;
	}
out:
	pending_lock_drop(&l);
	return ret;
}

/* ---- the interposed calls ----------------------------------------------- */

HPS_EXPORT int socket(int domain, int type, int protocol)
{
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	int act, line, fd, err;
	char why[300];

	hps_init_once();
	if (!eligible(domain, base, protocol))
		return real_socket(domain, type, protocol);

	if (cfg.mode == MODE_ALL)
		act = ACT_HPS, line = 0;
	else if (cfg.mode == MODE_NONE)
		act = ACT_TCP, line = 0;
	else
		act = decide_at_create(domain, &line);
	fmt_why(line, why, sizeof(why));

	if (act == ACT_TCP) {
		fd = real_socket(domain, type, protocol);
		dbg("fd %d: %s socket -> tcp (%s)", fd, fam_name(domain), why);
		return fd;
	}
	if (act < 0) {
		fd = real_socket(domain, type, protocol);
		if (fd < 0)
			return fd;
		if (pending_add(fd, base, protocol))
			dbg("fd %d: %s socket -> tcp (cannot track descriptor %d for the rules)",
			    fd, fam_name(domain), fd);
		else
			dbg("fd %d: %s socket -> tcp for now, pending (rules depend on the address)",
			    fd, fam_name(domain));
		return fd;
	}
	if (cfg.dryrun) {
		fd = real_socket(domain, type, protocol);
		dbg("fd %d: %s socket -> hps (%s; dry run: kept tcp)", fd,
		    fam_name(domain), why);
		return fd;
	}
	fd = real_socket(cfg.af, type, protocol);
	if (fd >= 0) {
		dbg("fd %d: %s socket -> hps (%s)", fd, fam_name(domain), why);
		connect_fallback_on(fd);
		return fd;
	}
	err = errno;
	say_fallback(err);
	if (cfg.fallback_error) {
		errno = err;
		return -1;
	}
	fd = real_socket(domain, type, protocol);
	dbg("fd %d: %s socket -> tcp (fallback)", fd, fam_name(domain));
	return fd;
}

HPS_EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	hps_init_once();
	if (pending_maybe(fd) &&
	    pending_resolve(fd, DIR_CONNECT, sa, len, 0) == RES_FAIL)
		return -1;
	return real_connect(fd, sa, len);
}

HPS_EXPORT int listen(int fd, int backlog)
{
	hps_init_once();
	if (pending_maybe(fd)) {
		switch (pending_resolve(fd, DIR_LISTEN, NULL, 0, backlog)) {
		case RES_DONE:
			return 0;
		case RES_FAIL:
			return -1;
		}
	}
	return real_listen(fd, backlog);
}

/*
 * On a pending socket the option is set and remembered under the lock, so
 * that a move in another thread cannot come between the two and leave it
 * set on the TCP socket only.
 */
HPS_EXPORT int setsockopt(int fd, int level, int name, const void *val,
			  socklen_t len)
{
	struct hps_pending *p;
	struct hps_locked l;
	int ret, err;

	hps_init_once();
	if (!pending_maybe(fd))
		return real_setsockopt(fd, level, name, val, len);
	pending_lock_take(&l);
	ret = real_setsockopt(fd, level, name, val, len);
	err = errno;
	if (!ret) {
		p = pending_get(fd);
		if (p)
			pending_record_opt(p, level, name, val, len);
	}
	pending_lock_drop(&l);
	errno = err;
	return ret;
}
