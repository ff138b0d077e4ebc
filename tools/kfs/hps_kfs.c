// SPDX-License-Identifier: GPL-2.0-only
/*
 * hps_kfs: a kernel-resident file server over AF_HPS (or TCP), and an
 * example of the AF_HPS kernel API.
 *
 * A listener thread accepts connections on a kernel socket; each connection
 * is served by a kernel thread of its own. A client sends lines
 * "GET <name>\n"; the server answers "OK <size>\n" and the file's bytes, or
 * "ERR <ERRNO> <text>\n" and closes. Documentation/kfs.rst describes the
 * protocol, the parameters and the security model.
 *
 * Security model, in short: only clients whose address is in clients= (by
 * default: the host's own addresses) are served, at most max_per_peer
 * connections each. Names are looked up one component at a time beneath
 * root=, without following symbolic links or entering anything mounted,
 * and files are opened with a credential of the server's own (uid=, gid=,
 * no supplementary groups, no capabilities), so the host's permission
 * checks and LSM hooks decide what is served, as for a local user of that
 * identity. Every failure to find or open a name gets the same reply.
 * Each request has a deadline (deadline= plus the reply's size at
 * min_rate=): at the deadline the worker is sent SIGKILL, which ends any
 * socket wait and any killable filesystem wait.
 *
 * Locking: kfs_lock (a mutex) protects kfs_conns, kfs_nconns,
 * kfs_refusals, kfs_nrefusals and kfs_stopping. It is taken in process
 * context only, and never while a socket lock is held; module exit holds
 * it around kernel_sock_shutdown(), so the order is kfs_lock, then a
 * socket's lock. A connection's socket is used by its worker alone, which
 * unlinks the connection under kfs_lock before it releases the socket and
 * exits: a socket and a task on kfs_conns are always alive. A refused
 * socket is likewise released only after its entry left kfs_refusals.
 * kfs_nthreads is used by the listener thread and, once that has stopped,
 * by module exit only.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/completion.h>
#include <linux/cred.h>
#include <linux/dcache.h>
#include <linux/fs.h>
#include <linux/fs_struct.h>
#include <linux/highuid.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/kthread.h>
#include <linux/list.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/mutex.h>
#include <linux/namei.h>
#include <linux/net.h>
#include <linux/path.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/socket.h>
#include <linux/string.h>
#include <linux/timer.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include <net/addrconf.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <net/sock.h>
#include <linux/af_hps.h>

#include "hps_kfs_compat_gen.h"

/* The mount's ID mapping: a struct mnt_idmap since 6.3 (compat/mnt-idmap.c). */
#ifdef HPS_HAVE_MNT_IDMAP
#define kfs_mnt_idmap(mnt)	mnt_idmap(mnt)
#define kfs_idmap_t		struct mnt_idmap
#else
#define kfs_mnt_idmap(mnt)	mnt_user_ns(mnt)
#define kfs_idmap_t		struct user_namespace
#endif

#define KFS_NAME_MAX	1024			/* longest name served */
#define KFS_LINE_MAX	(4 + KFS_NAME_MAX + 2)	/* "GET " name "\r\n" */
#define KFS_CHUNK	(256 * 1024)		/* file bytes per sendmsg */
#define KFS_REPLY_MAX	128
#define KFS_CLIENTS_MAX	16			/* prefixes in clients= */
#define KFS_SECS_MAX	(100 * 24 * 3600)	/* longest deadline, s */
#define KFS_LINGER	HZ			/* a refused socket's last second */

static char *root;
module_param(root, charp, 0444);
MODULE_PARM_DESC(root, "directory to serve (required)");

static char *transport = "hps";
module_param(transport, charp, 0444);
MODULE_PARM_DESC(transport, "hps (AF_HPS, default) or tcp");

static char *addr;
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "IPv4 or IPv6 address to bind (default: 0.0.0.0)");

static int port = 7070;
module_param(port, int, 0444);
MODULE_PARM_DESC(port, "port to listen on (default 7070)");

static char *clients;
module_param(clients, charp, 0444);
MODULE_PARM_DESC(clients,
		 "client prefixes served, ADDR[/BITS],... (default: this host's own addresses)");

static int max_conns = 32;
module_param(max_conns, int, 0444);
MODULE_PARM_DESC(max_conns, "connections served at once (default 32)");

static int max_per_peer = 4;
module_param(max_per_peer, int, 0444);
MODULE_PARM_DESC(max_per_peer,
		 "connections served at once from one address (default 4)");

static int timeout = 30;
module_param(timeout, int, 0444);
MODULE_PARM_DESC(timeout,
		 "seconds one receive or send may stall (default 30)");

static int deadline = 60;
module_param(deadline, int, 0444);
MODULE_PARM_DESC(deadline,
		 "seconds a request may take, plus its reply's size at min_rate (default 60)");

static int min_rate = 64;
module_param(min_rate, int, 0444);
MODULE_PARM_DESC(min_rate,
		 "KiB/s a reply may not fall below on average (default 64)");

static unsigned int uid = DEFAULT_OVERFLOWUID;
module_param(uid, uint, 0444);
MODULE_PARM_DESC(uid, "user id files are opened as (default 65534, nobody)");

static unsigned int gid = DEFAULT_OVERFLOWGID;
module_param(gid, uint, 0444);
MODULE_PARM_DESC(gid, "group id files are opened as (default 65534)");

/* An IPv4 address (4 bytes of @a) or an IPv6 one; IPv4-mapped is IPv4. */
struct kfs_addr {
	sa_family_t family;
	u8 a[16];
};

struct kfs_prefix {
	struct kfs_addr addr;
	unsigned int bits;
};

struct kfs_conn {
	struct list_head node;		/* on kfs_conns, under kfs_lock */
	struct task_struct *task;	/* the worker */
	struct socket *sock;
	struct kfs_addr peer;
	struct timer_list timer;	/* the request's deadline */
	void *buf;			/* KFS_CHUNK bytes of file data */
	size_t req_len;			/* bytes in req */
	char req[KFS_LINE_MAX];		/* request bytes not yet handled */
};

/*
 * A refused connection, answered and shut for sending, kept KFS_LINGER
 * before it is released: what the client sent meanwhile (its request) is
 * read and dropped, so that the close is not a reset that would take the
 * answer with it.
 */
struct kfs_refused {
	struct list_head node;		/* on kfs_refusals, under kfs_lock */
	struct delayed_work dwork;
	struct socket *sock;
};

static struct path kfs_root;
static const struct cred *kfs_cred;
static struct kfs_prefix kfs_prefixes[KFS_CLIENTS_MAX];
static int kfs_nprefixes;
static struct socket *kfs_listener;
static struct task_struct *kfs_thread;

static DEFINE_MUTEX(kfs_lock);
static LIST_HEAD(kfs_conns);
static int kfs_nconns;
static bool kfs_stopping;
static LIST_HEAD(kfs_refusals);
static int kfs_nrefusals;
static struct workqueue_struct *kfs_refuse_wq;

/* Workers started and not yet seen to exit; kfs_exited counts exits. */
static unsigned int kfs_nthreads;
static DECLARE_COMPLETION(kfs_exited);

static const struct {
	int err;
	const char *name;
} kfs_errnames[] = {
	{ ENOENT, "ENOENT" }, { EIO, "EIO" }, { ENOMEM, "ENOMEM" },
	{ EACCES, "EACCES" }, { EBUSY, "EBUSY" }, { EINVAL, "EINVAL" },
	{ ENAMETOOLONG, "ENAMETOOLONG" }, { EPROTO, "EPROTO" },
};

static const char *kfs_errname(int err)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(kfs_errnames); i++)
		if (kfs_errnames[i].err == -err)
			return kfs_errnames[i].name;
	return "EIO";
}

/*
 * Send all of @len bytes, or fail. A send that stalls for the socket's send
 * timeout fails with -EAGAIN; a peer that went away with -EPIPE or
 * -ECONNRESET; a worker sent SIGKILL with -EINTR or -ERESTARTSYS.
 *
 * Context: process; may sleep unless @flags has MSG_DONTWAIT.
 * Return: 0 or -errno.
 */
static int kfs_send_all(struct socket *sock, const void *buf, size_t len,
			int flags)
{
	while (len) {
		struct msghdr msg = { .msg_flags = MSG_NOSIGNAL | flags };
		struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
		int n;

		n = kernel_sendmsg(sock, &msg, &iov, 1, len);
		if (n <= 0)
			return n ? n : -EPIPE;
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * Answer a request with an error and stop reading: the caller closes the
 * connection next.
 *
 * Context: process; may sleep unless @flags has MSG_DONTWAIT.
 */
static void kfs_send_err(struct socket *sock, int err, const char *text,
			 int flags)
{
	char reply[KFS_REPLY_MAX];
	int len;

	len = scnprintf(reply, sizeof(reply), "ERR %s %s\n",
			kfs_errname(err), text);
	if (!kfs_send_all(sock, reply, len, flags))
		kernel_sock_shutdown(sock, SHUT_WR);
}

/*
 * A name is a relative path of non-empty components, none of them "." or
 * "..", with no NUL byte in it. These replies depend on the name alone,
 * never on the files.
 *
 * Return: 0 or -errno, with @text saying why.
 */
static int kfs_check_name(const char *name, size_t len, const char **text)
{
	const char *p = name, *end = name + len;

	if (!len) {
		*text = "empty name";
		return -EINVAL;
	}
	if (len > KFS_NAME_MAX) {
		*text = "name too long";
		return -ENAMETOOLONG;
	}
	if (memchr(name, '\0', len)) {
		*text = "NUL byte in name";
		return -EINVAL;
	}
	if (*name == '/') {
		*text = "absolute names are not served";
		return -EACCES;
	}
	while (p < end) {
		const char *slash = memchr(p, '/', end - p);
		size_t n = (slash ? slash : end) - p;

		if (!n) {
			*text = "empty path component";
			return -EINVAL;
		}
		if ((n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.')) {
			*text = "'.' and '..' components are not served";
			return -EACCES;
		}
		if (!slash)
			break;
		p = slash + 1;
		if (p == end) {
			*text = "empty path component";
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Open @name (@len bytes, checked by kfs_check_name()) beneath the served
 * root, with the caller's credential (the server's own, kfs_cred). Each
 * component is looked up on its own, which checks search permission on
 * the directory it is in; a symbolic link, a mount point (or an automount
 * point) on the way or at the end ends the walk, so it never leaves the
 * root's mount. Only a regular file the credential may read is opened.
 *
 * Context: process (a worker, under override_creds(kfs_cred)); may sleep.
 * Return: the file, or an ERR_PTR(): the reason, for the log only.
 */
static struct file *kfs_open(const char *name, size_t len)
{
	kfs_idmap_t *idmap = kfs_mnt_idmap(kfs_root.mnt);
	struct dentry *dir = dget(kfs_root.dentry), *d;
	const char *p = name, *end = name + len;
	struct path path;
	struct file *f;
	int err;

	might_sleep();
	for (;;) {
		const char *slash = memchr(p, '/', end - p);

		d = lookup_one_positive_unlocked(idmap, p, dir,
						 (slash ? slash : end) - p);
		dput(dir);
		if (IS_ERR(d))
			return ERR_CAST(d);
		if (d_managed(d)) {
			err = -EXDEV;	/* mounted on, or an automount */
			goto out;
		}
		if (!slash)
			break;
		if (!d_can_lookup(d)) {
			err = d_is_symlink(d) ? -ELOOP : -ENOTDIR;
			goto out;
		}
		dir = d;
		p = slash + 1;
	}
	path.mnt = kfs_root.mnt;
	path.dentry = d;
	if (!d_is_reg(d)) {
		err = d_is_symlink(d) ? -ELOOP : -EISDIR;
	} else if (!path_is_under(&path, &kfs_root)) {
		err = -EXDEV;	/* moved out of the root meanwhile */
	} else {
		err = inode_permission(idmap, d_inode(d), MAY_READ);
		if (!err) {
			f = dentry_open(&path, O_RDONLY | O_LARGEFILE,
					current_cred());
			dput(d);
			return f;
		}
	}
out:
	dput(d);
	return ERR_PTR(err);
}

/*
 * Send @size bytes of @file, read at offset 0 onwards. A file that shrinks
 * under us fails the connection: the client sees it close early.
 *
 * Context: process; may sleep.
 * Return: 0 or -errno.
 */
static int kfs_send_file(struct kfs_conn *c, struct file *file, loff_t size)
{
	loff_t pos = 0;
	int err;

	might_sleep();
	while (pos < size) {
		size_t want = min_t(loff_t, size - pos, KFS_CHUNK);
		ssize_t n;

		n = kernel_read(file, c->buf, want, &pos);
		if (n <= 0)
			return n ? n : -EIO;
		err = kfs_send_all(c->sock, c->buf, n, 0);
		if (err)
			return err;
		if (READ_ONCE(kfs_stopping) || fatal_signal_pending(current))
			return -ESHUTDOWN;
	}
	return 0;
}

/*
 * Read until c->req holds a whole line. A connection that is idle for the
 * receive timeout fails with -EAGAIN; one past its deadline is killed.
 *
 * Context: process; may sleep.
 * Return: the line's length with its '\n', 0 at a clean end of stream, or
 * -errno (-ENAMETOOLONG for a line too long).
 */
static int kfs_read_line(struct kfs_conn *c)
{
	might_sleep();
	for (;;) {
		struct msghdr msg = { };
		struct kvec iov;
		char *nl;
		int n;

		nl = memchr(c->req, '\n', c->req_len);
		if (nl)
			return nl - c->req + 1;
		if (c->req_len >= sizeof(c->req))
			return -ENAMETOOLONG;
		iov.iov_base = c->req + c->req_len;
		iov.iov_len = sizeof(c->req) - c->req_len;
		n = kernel_recvmsg(c->sock, &msg, &iov, 1, iov.iov_len, 0);
		if (n < 0)
			return n;
		if (!n)
			return c->req_len ? -EPROTO : 0;
		c->req_len += n;
	}
}

/*
 * A request's deadline passed: SIGKILL ends the worker's socket waits and
 * its killable filesystem waits, and it closes the connection.
 *
 * Context: timer (softirq).
 */
static void kfs_deadline_fn(struct timer_list *t)
{
	struct kfs_conn *c = from_timer(c, t, timer);

	send_sig(SIGKILL, c->task, 1);
}

/*
 * Serve one request: it must be over by deadline seconds after the server
 * starts to wait for it, plus its reply's size at min_rate.
 *
 * Context: process (the connection's worker); may sleep.
 * Return: 0 to go on with the next request, or -errno to close.
 */
static int kfs_serve_one(struct kfs_conn *c)
{
	unsigned long start = jiffies;
	char reply[KFS_REPLY_MAX];
	const char *text = NULL;
	struct file *file;
	size_t name_len;
	u64 secs;
	char *name;
	int len, err;
	loff_t size;

	might_sleep();
	mod_timer(&c->timer, start + (unsigned long)deadline * HZ);
	len = kfs_read_line(c);
	if (len <= 0) {
		if (len == -ENAMETOOLONG)
			kfs_send_err(c->sock, len, "request line too long", 0);
		else if (len == -EPROTO)
			kfs_send_err(c->sock, len, "request without a newline",
				     0);
		return len ? len : -ESHUTDOWN;
	}

	/* The line without "\n" or "\r\n", NUL-terminated in place. */
	name_len = len - 1;
	if (name_len && c->req[name_len - 1] == '\r')
		name_len--;
	c->req[name_len] = '\0';
	if (name_len < 4 || memcmp(c->req, "GET ", 4)) {
		kfs_send_err(c->sock, -EPROTO, "expected GET <name>", 0);
		return -EPROTO;
	}
	name = c->req + 4;
	name_len -= 4;
	pr_debug("conn %p: GET %.64s\n", c, name);

	err = kfs_check_name(name, name_len, &text);
	if (err) {
		kfs_send_err(c->sock, err, text, 0);
		return err;
	}
	file = kfs_open(name, name_len);
	if (IS_ERR(file)) {
		/*
		 * Missing, not the identity's to read, a symbolic link, a
		 * directory, a device, another mount: one reply for all, so
		 * that a peer learns nothing of what it may not read.
		 */
		err = PTR_ERR(file);
		pr_debug("conn %p: GET %.64s: %d\n", c, name, err);
		if (fatal_signal_pending(current))
			return -ETIMEDOUT;
		if (err == -ENOMEM)
			kfs_send_err(c->sock, err, "out of memory", 0);
		else
			kfs_send_err(c->sock, -ENOENT, "not found", 0);
		return err == -ENOMEM ? err : -ENOENT;
	}

	/* The request is taken; keep what the client sent after it. */
	c->req_len -= len;
	memmove(c->req, c->req + len, c->req_len);

	size = i_size_read(file_inode(file));
	secs = div_u64(size, (u32)min_rate * 1024);
	secs = min_t(u64, secs + deadline, KFS_SECS_MAX);
	mod_timer(&c->timer, start + (unsigned long)secs * HZ);
	len = scnprintf(reply, sizeof(reply), "OK %lld\n", size);
	err = kfs_send_all(c->sock, reply, len, 0);
	if (!err)
		err = kfs_send_file(c, file, size);
	fput(file);
	pr_debug("conn %p: sent %lld bytes (%d)\n", c, size, err);
	return err;
}

/*
 * A connection's worker: serve requests with the server's credential until
 * the client closes, an error, the deadline or module exit; then unlink the
 * connection, release its socket and exit, counted by kfs_exited.
 *
 * Context: process (a kernel thread of its own); takes kfs_lock.
 */
static int kfs_conn_fn(void *data)
{
	struct kfs_conn *c = data;
	const struct cred *old;
	int err;

	/*
	 * SIGKILL with its default action, as for a user task: it is then
	 * fatal_signal_pending(), which ends killable waits too.
	 */
	kernel_sigaction(SIGKILL, SIG_DFL);
	old = override_creds(kfs_cred);
	do {
		err = READ_ONCE(kfs_stopping) ? -ESHUTDOWN : kfs_serve_one(c);
	} while (!err);
	revert_creds(old);
	del_timer_sync(&c->timer);
	pr_debug("conn %p: closing (%d%s)\n", c, err,
		 fatal_signal_pending(current) ? ", killed" : "");

	mutex_lock(&kfs_lock);
	list_del(&c->node);
	kfs_nconns--;
	mutex_unlock(&kfs_lock);

	sock_release(c->sock);
	kvfree(c->buf);
	kfree(c);
	/* complete() and exit in the kernel proper: module exit may go on. */
	kthread_complete_and_exit(&kfs_exited, 0);
}

/* Bound how long one receive or send may stall. Context: process. */
static void kfs_set_timeouts(struct socket *sock)
{
	struct sock *sk = sock->sk;

	sock_set_sndtimeo(sk, timeout);
	lock_sock(sk);
	WRITE_ONCE(sk->sk_rcvtimeo, (long)timeout * HZ);
	release_sock(sk);
}

/* The peer's address, IPv4-mapped IPv6 as IPv4. Return: 0 or -errno. */
static int kfs_peer_addr(struct socket *sock, struct kfs_addr *a)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	int len;

	len = kernel_getpeername(sock, (struct sockaddr *)&ss);
	if (len < 0)
		return len;
	memset(a, 0, sizeof(*a));
	if (ss.ss_family == AF_INET) {
		a->family = AF_INET;
		memcpy(a->a, &sin->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6 &&
		   ipv6_addr_v4mapped(&sin6->sin6_addr)) {
		a->family = AF_INET;
		memcpy(a->a, &sin6->sin6_addr.s6_addr32[3], 4);
	} else if (ss.ss_family == AF_INET6) {
		a->family = AF_INET6;
		memcpy(a->a, &sin6->sin6_addr, 16);
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

/* Is @a in clients=, or without it, one of this host's own addresses? */
static bool kfs_allowed(const struct kfs_addr *a)
{
	struct in6_addr v6;
	int i;

	if (!kfs_nprefixes) {
		if (a->family == AF_INET) {
			__be32 v4;

			memcpy(&v4, a->a, 4);
			return inet_addr_type(&init_net, v4) == RTN_LOCAL;
		}
		memcpy(&v6, a->a, sizeof(v6));
		return ipv6_chk_addr(&init_net, &v6, NULL, 0);
	}
	for (i = 0; i < kfs_nprefixes; i++) {
		const struct kfs_prefix *p = &kfs_prefixes[i];
		unsigned int bytes = p->bits / 8, rest = p->bits % 8;

		if (p->addr.family != a->family ||
		    memcmp(p->addr.a, a->a, bytes))
			continue;
		if (!rest || !((p->addr.a[bytes] ^ a->a[bytes]) &
			       (0xff00 >> rest)))
			return true;
	}
	return false;
}

/*
 * Admit @c: none when stopping, at most max_conns in all and
 * max_per_peer from one address.
 *
 * Context: under kfs_lock.
 * Return: NULL and @c on kfs_conns, or why not.
 */
static const char *kfs_admit(struct kfs_conn *c)
{
	struct kfs_conn *o;
	int same = 0;

	lockdep_assert_held(&kfs_lock);
	if (kfs_stopping || kfs_nconns >= max_conns)
		return "too many connections";
	list_for_each_entry(o, &kfs_conns, node)
		if (!memcmp(&o->peer, &c->peer, sizeof(c->peer)))
			same++;
	if (same >= max_per_peer)
		return "too many connections from your address";
	list_add_tail(&c->node, &kfs_conns);
	kfs_nconns++;
	return NULL;
}

/*
 * The end of a refused connection: drop what the client sent (at most a
 * request line's worth; more is its problem) and release the socket.
 *
 * Context: process (kfs_refuse_wq); takes kfs_lock.
 */
static void kfs_refused_fn(struct work_struct *work)
{
	struct kfs_refused *r = container_of(to_delayed_work(work),
					     struct kfs_refused, dwork);
	char junk[256];
	int i;

	for (i = 0; i < DIV_ROUND_UP(KFS_LINE_MAX, sizeof(junk)); i++) {
		struct msghdr msg = { };
		struct kvec iov = { .iov_base = junk, .iov_len = sizeof(junk) };

		if (kernel_recvmsg(r->sock, &msg, &iov, 1, sizeof(junk),
				   MSG_DONTWAIT) <= 0)
			break;
	}
	mutex_lock(&kfs_lock);
	list_del(&r->node);
	kfs_nrefusals--;
	mutex_unlock(&kfs_lock);
	sock_release(r->sock);
	kfree(r);
}

/*
 * Answer a connection that is not served with "ERR <err> <why>", without
 * waiting, and release it KFS_LINGER later (kfs_refused_fn()); at once
 * when max_conns refusals are lingering already, or on module exit.
 * Consumes @sock.
 *
 * Context: the listener thread; takes kfs_lock.
 */
static void kfs_refuse(struct socket *sock, int err, const char *why)
{
	struct kfs_refused *r;

	kfs_send_err(sock, err, why, MSG_DONTWAIT);
	r = kmalloc(sizeof(*r), GFP_KERNEL);
	if (r) {
		r->sock = sock;
		INIT_DELAYED_WORK(&r->dwork, kfs_refused_fn);
		mutex_lock(&kfs_lock);
		if (!kfs_stopping && kfs_nrefusals < max_conns) {
			list_add_tail(&r->node, &kfs_refusals);
			kfs_nrefusals++;
			queue_delayed_work(kfs_refuse_wq, &r->dwork,
					   KFS_LINGER);
			sock = NULL;
		}
		mutex_unlock(&kfs_lock);
		if (sock)
			kfree(r);
	}
	if (sock)
		sock_release(sock);
}

/*
 * Hand a new connection to a worker of its own, or turn it away: a peer
 * not in clients=, or over max_conns or max_per_peer. A refusal is sent
 * without waiting, so a peer cannot stall the listener. Consumes @sock.
 *
 * Context: the listener thread; takes kfs_lock.
 */
static void kfs_conn_start(struct socket *sock)
{
	struct task_struct *task;
	struct kfs_conn *c;
	const char *why;
	int err = -EBUSY;

	kfs_set_timeouts(sock);
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (c)
		c->buf = kvmalloc(KFS_CHUNK, GFP_KERNEL);
	if (!c || !c->buf) {
		kfs_send_err(sock, -ENOMEM, "out of memory", MSG_DONTWAIT);
		goto drop;
	}
	if (kfs_peer_addr(sock, &c->peer))
		goto drop;
	if (!kfs_allowed(&c->peer)) {
		pr_debug("refused a client not in clients=\n");
		err = -EACCES;
		why = "not an allowed client";
		goto busy;
	}
	c->sock = sock;
	timer_setup(&c->timer, kfs_deadline_fn, 0);

	mutex_lock(&kfs_lock);
	why = kfs_admit(c);
	mutex_unlock(&kfs_lock);
	if (why)
		goto busy;

	task = kthread_create(kfs_conn_fn, c, "hps_kfs_conn");
	if (IS_ERR(task)) {
		mutex_lock(&kfs_lock);
		list_del(&c->node);
		kfs_nconns--;
		mutex_unlock(&kfs_lock);
		err = PTR_ERR(task);
		why = "cannot start a worker";
		goto busy;
	}
	/* Module exit reads c->task only after kthread_stop(kfs_thread). */
	c->task = task;
	kfs_nthreads++;
	pr_debug("conn %p: accepted\n", c);
	wake_up_process(task);
	return;

busy:
	kfs_refuse(sock, err, why);
	sock = NULL;
drop:
	if (sock)
		sock_release(sock);
	if (c)
		kvfree(c->buf);
	kfree(c);
}

/* Count the workers that have exited. Context: the listener, or exit. */
static void kfs_reap(void)
{
	while (kfs_nthreads && try_wait_for_completion(&kfs_exited))
		kfs_nthreads--;
}

/*
 * The listener thread. It runs until kthread_stop(); module exit first
 * shuts the listening socket down, which fails a blocked accept.
 *
 * Context: process (kthread).
 */
static int kfs_listen_fn(void *unused)
{
	while (!kthread_should_stop()) {
		struct socket *sock;
		int err;

		err = kernel_accept(kfs_listener, &sock, 0);
		kfs_reap();
		if (!err) {
			kfs_conn_start(sock);
			continue;
		}
		/* Shut down, or a transient failure: do not spin on it. */
		if (!kthread_should_stop())
			schedule_timeout_interruptible(HZ / 10);
	}
	return 0;
}

/*
 * Parse addr= into @ss; without it, the IPv4 wildcard. (An IPv6 wildcard
 * takes IPv4 connections too over TCP and rxe, but over siw it refused
 * them in the test bed: IPv4 is the default that works everywhere.)
 *
 * Return: the address length, or -EINVAL.
 */
static int kfs_parse_addr(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!addr || !*addr ||
	    in4_pton(addr, -1, (u8 *)&sin->sin_addr, -1, NULL)) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return sizeof(*sin);
	}
	if (!in6_pton(addr, -1, sin6->sin6_addr.s6_addr, -1, NULL))
		return -EINVAL;
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	return sizeof(*sin6);
}

/*
 * Parse clients=, a comma-separated list of ADDR or ADDR/BITS, IPv4 or
 * IPv6, into kfs_prefixes.
 *
 * Context: module init.
 * Return: 0 or -EINVAL.
 */
static int kfs_parse_clients(void)
{
	const char *p = clients;

	while (p && *p) {
		const char *comma = strchrnul(p, ','), *end;
		struct kfs_prefix *pf = &kfs_prefixes[kfs_nprefixes];
		size_t n = comma - p;
		unsigned int max;
		char tok[64];

		if (!n || n >= sizeof(tok) || kfs_nprefixes >= KFS_CLIENTS_MAX)
			goto bad;
		memcpy(tok, p, n);
		tok[n] = '\0';
		memset(pf, 0, sizeof(*pf));
		if (in4_pton(tok, -1, pf->addr.a, '/', &end)) {
			pf->addr.family = AF_INET;
			max = 32;
		} else if (in6_pton(tok, -1, pf->addr.a, '/', &end)) {
			pf->addr.family = AF_INET6;
			max = 128;
		} else {
			goto bad;
		}
		if (*end == '/') {
			if (kstrtouint(end + 1, 10, &pf->bits) || pf->bits > max)
				goto bad;
		} else if (*end) {
			goto bad;
		} else {
			pf->bits = max;
		}
		kfs_nprefixes++;
		p = *comma ? comma + 1 : comma;
	}
	return 0;
bad:
	pr_err("clients=%s: want ADDR[/BITS],... (at most %d, IPv4 or IPv6)\n",
	       clients, KFS_CLIENTS_MAX);
	return -EINVAL;
}

/*
 * The server's credential: uid=, gid=, no supplementary groups and no
 * capabilities, on the kernel's own security label (as knfsd's). Neither
 * id may be 0: root's files are not the server's.
 *
 * Context: module init.
 * Return: 0 or -errno.
 */
static int kfs_make_cred(void)
{
	kuid_t kuid = make_kuid(&init_user_ns, uid);
	kgid_t kgid = make_kgid(&init_user_ns, gid);
	struct group_info *groups;
	struct cred *cred;

	if (!uid_valid(kuid) || !gid_valid(kgid) ||
	    uid_eq(kuid, GLOBAL_ROOT_UID) || gid_eq(kgid, GLOBAL_ROOT_GID)) {
		pr_err("uid=%u gid=%u: want ids other than 0 and -1\n",
		       uid, gid);
		return -EINVAL;
	}
	cred = prepare_kernel_cred(&init_task);	/* init_cred's copy */
	if (!cred)
		return -ENOMEM;
	groups = groups_alloc(0);
	if (!groups) {
		put_cred(cred);
		return -ENOMEM;
	}
	set_groups(cred, groups);
	put_group_info(groups);
	cred->uid = kuid;
	cred->euid = kuid;
	cred->suid = kuid;
	cred->fsuid = kuid;
	cred->gid = kgid;
	cred->egid = kgid;
	cred->sgid = kgid;
	cred->fsgid = kgid;
	cap_clear(cred->cap_inheritable);
	cap_clear(cred->cap_permitted);
	cap_clear(cred->cap_effective);
	cap_clear(cred->cap_bset);
	cap_clear(cred->cap_ambient);
	kfs_cred = cred;
	return 0;
}

/* Filesystems whose files are not files: a root on one is refused. */
static const char *const kfs_pseudo_fs[] = {
	"autofs", "binfmt_misc", "bpf", "cgroup", "cgroup2", "configfs",
	"debugfs", "devpts", "efivarfs", "fusectl", "mqueue", "nfsd", "nsfs",
	"proc", "pstore", "resctrl", "rpc_pipefs", "securityfs", "selinuxfs",
	"smackfs", "sysfs", "tracefs",
};

/*
 * Resolve root= (with insmod's credential) into kfs_root and check it: a
 * directory, not insmod's own root ("/"), not on a pseudo filesystem.
 *
 * Context: module init.
 * Return: 0 or -EINVAL.
 */
static int kfs_get_root(void)
{
	const char *fs;
	struct path top;
	bool whole;
	int err, i;

	err = kern_path(root, LOOKUP_FOLLOW | LOOKUP_DIRECTORY, &kfs_root);
	if (err) {
		pr_err("root=%s: not a directory (%d)\n", root, err);
		return -EINVAL;
	}
	get_fs_root(current->fs, &top);
	whole = path_equal(&top, &kfs_root);
	path_put(&top);
	if (whole) {
		pr_err("root=%s is the root of the filesystem tree: refused\n",
		       root);
		goto bad;
	}
	fs = kfs_root.mnt->mnt_sb->s_type->name;
	for (i = 0; i < ARRAY_SIZE(kfs_pseudo_fs); i++) {
		if (!strcmp(fs, kfs_pseudo_fs[i])) {
			pr_err("root=%s is on %s, a pseudo filesystem: refused\n",
			       root, fs);
			goto bad;
		}
	}
	return 0;
bad:
	path_put(&kfs_root);
	return -EINVAL;
}

/*
 * Create, bind and listen on kfs_listener.
 *
 * Context: process (module init).
 * Return: 0 or -errno.
 */
static int kfs_listen(bool tcp)
{
	struct sockaddr_storage ss;
	struct socket *sock;
	int len, err;

	len = kfs_parse_addr(&ss);
	if (len < 0) {
		pr_err("addr=%s is not an IPv4 or IPv6 address\n", addr);
		return len;
	}
	err = sock_create_kern(&init_net, tcp ? ss.ss_family : AF_HPS,
			       SOCK_STREAM, tcp ? IPPROTO_TCP : 0, &sock);
	if (err) {
		if (err == -EAFNOSUPPORT && !tcp)
			pr_err("AF_HPS (family %d) is not registered: load af_hps.ko first\n",
			       AF_HPS);
		return err;
	}
	sock_set_reuseaddr(sock->sk);
	err = kernel_bind(sock, (struct sockaddr *)&ss, len);
	if (!err)
		err = kernel_listen(sock, max_conns);
	if (err) {
		sock_release(sock);
		return err;
	}
	kfs_listener = sock;
	return 0;
}

static int __init kfs_init(void)
{
	bool tcp;
	int err;

	if (!root || !*root) {
		pr_err("root= is required: the directory to serve\n");
		return -EINVAL;
	}
	if (!strcmp(transport, "tcp")) {
		tcp = true;
	} else if (!strcmp(transport, "hps")) {
		tcp = false;
	} else {
		pr_err("transport=%s: must be hps or tcp\n", transport);
		return -EINVAL;
	}
	if (port < 1 || port > 65535 || max_conns < 1 || max_conns > 512 ||
	    max_per_peer < 1 || max_per_peer > 512 ||
	    timeout < 1 || timeout > 3600 || deadline < 1 || deadline > 3600 ||
	    min_rate < 1 || min_rate > 1048576) {
		pr_err("port must be 1-65535, max_conns and max_per_peer 1-512, timeout and deadline 1-3600, min_rate 1-1048576\n");
		return -EINVAL;
	}
	err = kfs_parse_clients();
	if (err)
		return err;
	err = kfs_make_cred();
	if (err)
		return err;
	err = kfs_get_root();
	if (err)
		goto out_cred;

	kfs_refuse_wq = alloc_workqueue("hps_kfs_refuse", 0, 0);
	if (!kfs_refuse_wq) {
		err = -ENOMEM;
		goto out_path;
	}
	err = kfs_listen(tcp);
	if (err) {
		pr_err("cannot listen on port %d: %d\n", port, err);
		goto out_wq;
	}
	kfs_thread = kthread_run(kfs_listen_fn, NULL, "hps_kfs");
	if (IS_ERR(kfs_thread)) {
		err = PTR_ERR(kfs_thread);
		goto out_sock;
	}
	pr_info("serving %s on port %d over %s as uid %u gid %u to %s\n",
		root, port, tcp ? "TCP" : "AF_HPS", uid, gid,
		clients ? clients : "this host");
	return 0;

out_sock:
	sock_release(kfs_listener);
out_wq:
	destroy_workqueue(kfs_refuse_wq);
out_path:
	path_put(&kfs_root);
out_cred:
	put_cred(kfs_cred);
	return err;
}

/*
 * Stop accepting, release the refused connections, shut every connection
 * down, send every worker SIGKILL and wait for them: a worker in a socket
 * wait or a killable filesystem wait ends at once. One in an
 * uninterruptible wait (a filesystem that does not answer, see kfs.rst)
 * holds the unload until it returns, since its code is in this module; it
 * is reported every 10 s.
 */
static void __exit kfs_exit(void)
{
	struct kfs_refused *r, *rn;
	struct kfs_conn *c;
	LIST_HEAD(gone);

	kernel_sock_shutdown(kfs_listener, SHUT_RDWR);
	kthread_stop(kfs_thread);
	sock_release(kfs_listener);

	mutex_lock(&kfs_lock);
	WRITE_ONCE(kfs_stopping, true);
	list_for_each_entry(c, &kfs_conns, node) {
		kernel_sock_shutdown(c->sock, SHUT_RDWR);
		send_sig(SIGKILL, c->task, 1);
	}
	/*
	 * Refusals still lingering are released now; one whose work runs
	 * already releases itself, and destroy_workqueue() waits for it.
	 */
	list_for_each_entry_safe(r, rn, &kfs_refusals, node) {
		if (!cancel_delayed_work(&r->dwork))
			continue;
		list_move(&r->node, &gone);
		kfs_nrefusals--;
	}
	mutex_unlock(&kfs_lock);
	list_for_each_entry_safe(r, rn, &gone, node) {
		sock_release(r->sock);
		kfree(r);
	}
	destroy_workqueue(kfs_refuse_wq);

	kfs_reap();
	while (kfs_nthreads) {
		if (wait_for_completion_timeout(&kfs_exited, 10 * HZ)) {
			kfs_nthreads--;
			continue;
		}
		pr_warn("unload waits for %u worker(s) in an uninterruptible wait, likely a filesystem that does not answer\n",
			kfs_nthreads);
	}
	WARN_ON_ONCE(kfs_nconns || kfs_nrefusals);
	path_put(&kfs_root);
	put_cred(kfs_cred);
	pr_info("stopped\n");
}

module_init(kfs_init);
module_exit(kfs_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Kernel file server over AF_HPS or TCP");
