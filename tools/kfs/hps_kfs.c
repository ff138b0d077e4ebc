// SPDX-License-Identifier: GPL-2.0-only
/*
 * hps_kfs: a kernel-resident file server over AF_HPS (or TCP), and an
 * example of the AF_HPS kernel API.
 *
 * A listener thread accepts connections on a kernel socket; each connection
 * is served by a work item on an unbound workqueue. A client sends lines
 * "GET <name>\n"; the server answers "OK <size>\n" and the file's bytes, or
 * "ERR <ERRNO> <text>\n" and closes. Names are resolved beneath root=, and
 * only regular files readable by everyone are served. Documentation/kfs.rst
 * describes the protocol and the parameters.
 *
 * Locking: kfs_lock (a mutex) protects kfs_conns, kfs_nconns and
 * kfs_stopping. It is taken in process context only, and never while a
 * socket lock is held; module exit holds it around kernel_sock_shutdown(),
 * so the order is kfs_lock, then a socket's lock. A connection's socket is
 * used by its worker alone, which unlinks the connection under kfs_lock
 * before it releases the socket: a socket on kfs_conns is always alive.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/kthread.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/namei.h>
#include <linux/net.h>
#include <linux/path.h>
#include <linux/slab.h>
#include <linux/socket.h>
#include <linux/string.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <linux/af_hps.h>

#define KFS_NAME_MAX	1024			/* longest name served */
#define KFS_LINE_MAX	(4 + KFS_NAME_MAX + 2)	/* "GET " name "\r\n" */
#define KFS_CHUNK	(256 * 1024)		/* file bytes per sendmsg */
#define KFS_REPLY_MAX	128

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

static int max_conns = 32;
module_param(max_conns, int, 0444);
MODULE_PARM_DESC(max_conns, "connections served at once (default 32)");

static int timeout = 30;
module_param(timeout, int, 0444);
MODULE_PARM_DESC(timeout,
		 "seconds a request or a send may stall (default 30)");

struct kfs_conn {
	struct list_head node;		/* on kfs_conns, under kfs_lock */
	struct work_struct work;
	struct socket *sock;
	void *buf;			/* KFS_CHUNK bytes of file data */
	size_t req_len;			/* bytes in req */
	char req[KFS_LINE_MAX];		/* request bytes not yet handled */
};

static struct path kfs_root;
static struct socket *kfs_listener;
static struct task_struct *kfs_thread;
static struct workqueue_struct *kfs_wq;

static DEFINE_MUTEX(kfs_lock);
static LIST_HEAD(kfs_conns);
static int kfs_nconns;
static bool kfs_stopping;

static const struct {
	int err;
	const char *name;
} kfs_errnames[] = {
	{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EIO, "EIO" },
	{ ENOMEM, "ENOMEM" }, { EACCES, "EACCES" }, { EBUSY, "EBUSY" },
	{ ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" }, { EINVAL, "EINVAL" },
	{ EFBIG, "EFBIG" }, { ENAMETOOLONG, "ENAMETOOLONG" },
	{ ELOOP, "ELOOP" }, { EOVERFLOW, "EOVERFLOW" }, { EPROTO, "EPROTO" },
	{ EXDEV, "EXDEV" }, { ESTALE, "ESTALE" },
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
 * -ECONNRESET.
 *
 * Context: process; may sleep.
 * Return: 0 or -errno.
 */
static int kfs_send_all(struct socket *sock, const void *buf, size_t len)
{
	might_sleep();
	while (len) {
		struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
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
 * Context: process; may sleep.
 */
static void kfs_send_err(struct socket *sock, int err, const char *text)
{
	char reply[KFS_REPLY_MAX];
	int len;

	len = scnprintf(reply, sizeof(reply), "ERR %s %s\n",
			kfs_errname(err), text);
	if (!kfs_send_all(sock, reply, len))
		kernel_sock_shutdown(sock, SHUT_WR);
}

/*
 * A name is a relative path of non-empty components, none of them "." or
 * "..", with no NUL byte in it.
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
 * Open @name (checked by kfs_check_name()) beneath the served root. It is
 * first opened O_PATH, which neither calls into a driver nor blocks on a
 * FIFO, and only a regular file beneath the root, readable by everyone, is
 * then opened for reading.
 *
 * Context: process; may sleep.
 * Return: the file, or an ERR_PTR() with @text saying why.
 */
static struct file *kfs_open(const char *name, const char **text)
{
	struct file *pf, *f;
	struct inode *inode;

	might_sleep();
	pf = file_open_root(&kfs_root, name,
			    O_PATH | O_NOFOLLOW | O_LARGEFILE, 0);
	if (IS_ERR(pf)) {
		switch (PTR_ERR(pf)) {
		case -ENOENT:
			*text = "no such file";
			break;
		case -ENOTDIR:
			*text = "a component is not a directory";
			break;
		default:
			*text = "cannot look up the name";
		}
		return pf;
	}
	inode = file_inode(pf);
	if (!path_is_under(&pf->f_path, &kfs_root)) {
		*text = "name leaves the served root";
		f = ERR_PTR(-EACCES);
	} else if (S_ISDIR(inode->i_mode)) {
		*text = "is a directory";
		f = ERR_PTR(-EISDIR);
	} else if (S_ISLNK(inode->i_mode)) {
		*text = "symbolic links are not served";
		f = ERR_PTR(-ELOOP);
	} else if (!S_ISREG(inode->i_mode)) {
		*text = "not a regular file";
		f = ERR_PTR(-EACCES);
	} else if (!(inode->i_mode & 0004)) {
		*text = "not readable by everyone";
		f = ERR_PTR(-EACCES);
	} else {
		f = dentry_open(&pf->f_path, O_RDONLY | O_LARGEFILE,
				current_cred());
		if (IS_ERR(f))
			*text = "cannot open";
	}
	fput(pf);
	return f;
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
		err = kfs_send_all(c->sock, c->buf, n);
		if (err)
			return err;
		if (READ_ONCE(kfs_stopping))
			return -ESHUTDOWN;
	}
	return 0;
}

/*
 * Read until c->req holds a whole line. A connection that is idle for the
 * receive timeout fails with -EAGAIN.
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
 * Serve one request.
 *
 * Context: process (the connection's worker); may sleep.
 * Return: 0 to go on with the next request, or -errno to close.
 */
static int kfs_serve_one(struct kfs_conn *c)
{
	char reply[KFS_REPLY_MAX];
	const char *text = NULL;
	struct file *file;
	size_t name_len;
	char *name;
	int len, err;
	loff_t size;

	might_sleep();
	len = kfs_read_line(c);
	if (len <= 0) {
		if (len == -ENAMETOOLONG)
			kfs_send_err(c->sock, len, "request line too long");
		else if (len == -EPROTO)
			kfs_send_err(c->sock, len, "request without a newline");
		return len ? len : -ESHUTDOWN;
	}

	/* The line without "\n" or "\r\n", NUL-terminated in place. */
	name_len = len - 1;
	if (name_len && c->req[name_len - 1] == '\r')
		name_len--;
	c->req[name_len] = '\0';
	if (name_len < 4 || memcmp(c->req, "GET ", 4)) {
		kfs_send_err(c->sock, -EPROTO, "expected GET <name>");
		return -EPROTO;
	}
	name = c->req + 4;
	name_len -= 4;
	pr_debug("conn %p: GET %.64s\n", c, name);

	err = kfs_check_name(name, name_len, &text);
	file = err ? ERR_PTR(err) : kfs_open(name, &text);
	if (IS_ERR(file)) {
		kfs_send_err(c->sock, PTR_ERR(file), text);
		return PTR_ERR(file);
	}

	/* The request is taken; keep what the client sent after it. */
	c->req_len -= len;
	memmove(c->req, c->req + len, c->req_len);

	size = i_size_read(file_inode(file));
	len = scnprintf(reply, sizeof(reply), "OK %lld\n", size);
	err = kfs_send_all(c->sock, reply, len);
	if (!err)
		err = kfs_send_file(c, file, size);
	fput(file);
	pr_debug("conn %p: sent %lld bytes (%d)\n", c, size, err);
	return err;
}

/*
 * A connection's worker: serve requests until the client closes, an error
 * or module exit, then unlink the connection and release its socket.
 *
 * Context: process (an unbound kworker); takes kfs_lock.
 */
static void kfs_conn_work(struct work_struct *work)
{
	struct kfs_conn *c = container_of(work, struct kfs_conn, work);

	int err;

	do {
		err = READ_ONCE(kfs_stopping) ? -ESHUTDOWN : kfs_serve_one(c);
	} while (!err);
	pr_debug("conn %p: closing (%d)\n", c, err);

	mutex_lock(&kfs_lock);
	list_del(&c->node);
	kfs_nconns--;
	mutex_unlock(&kfs_lock);

	sock_release(c->sock);
	kvfree(c->buf);
	kfree(c);
}

/* Bound how long a request or a send may stall. Context: process. */
static void kfs_set_timeouts(struct socket *sock)
{
	struct sock *sk = sock->sk;

	sock_set_sndtimeo(sk, timeout);
	lock_sock(sk);
	WRITE_ONCE(sk->sk_rcvtimeo, (long)timeout * HZ);
	release_sock(sk);
}

/*
 * Hand a new connection to a worker, or turn it away when max_conns are
 * being served. Consumes @sock.
 *
 * Context: the listener thread; takes kfs_lock.
 */
static void kfs_conn_start(struct socket *sock)
{
	struct kfs_conn *c;
	bool busy = false;

	kfs_set_timeouts(sock);
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (c)
		c->buf = kvmalloc(KFS_CHUNK, GFP_KERNEL);
	if (!c || !c->buf) {
		kfs_send_err(sock, -ENOMEM, "out of memory");
		goto drop;
	}
	c->sock = sock;
	INIT_WORK(&c->work, kfs_conn_work);

	mutex_lock(&kfs_lock);
	if (kfs_stopping || kfs_nconns >= max_conns) {
		busy = true;
	} else {
		list_add_tail(&c->node, &kfs_conns);
		kfs_nconns++;
	}
	mutex_unlock(&kfs_lock);
	if (!busy) {
		pr_debug("conn %p: accepted\n", c);
		queue_work(kfs_wq, &c->work);
		return;
	}
	kfs_send_err(sock, -EBUSY, "too many connections");
drop:
	sock_release(sock);
	if (c)
		kvfree(c->buf);
	kfree(c);
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
	    timeout < 1 || timeout > 3600) {
		pr_err("port must be 1-65535, max_conns 1-512, timeout 1-3600\n");
		return -EINVAL;
	}
	err = kern_path(root, LOOKUP_FOLLOW | LOOKUP_DIRECTORY, &kfs_root);
	if (err) {
		pr_err("root=%s: not a directory (%d)\n", root, err);
		return -EINVAL;
	}

	err = kfs_listen(tcp);
	if (err) {
		pr_err("cannot listen on port %d: %d\n", port, err);
		goto out_path;
	}

	kfs_wq = alloc_workqueue("hps_kfs", WQ_UNBOUND, max_conns);
	if (!kfs_wq) {
		err = -ENOMEM;
		goto out_sock;
	}
	kfs_thread = kthread_run(kfs_listen_fn, NULL, "hps_kfs");
	if (IS_ERR(kfs_thread)) {
		err = PTR_ERR(kfs_thread);
		goto out_wq;
	}
	pr_info("serving %s on port %d over %s\n", root, port,
		tcp ? "TCP" : "AF_HPS");
	return 0;

out_wq:
	destroy_workqueue(kfs_wq);
out_sock:
	sock_release(kfs_listener);
out_path:
	path_put(&kfs_root);
	return err;
}

/*
 * Stop accepting, shut every connection down and wait for the workers:
 * a worker blocked in a receive or a send fails at once.
 */
static void __exit kfs_exit(void)
{
	struct kfs_conn *c;

	kernel_sock_shutdown(kfs_listener, SHUT_RDWR);
	kthread_stop(kfs_thread);
	sock_release(kfs_listener);

	mutex_lock(&kfs_lock);
	WRITE_ONCE(kfs_stopping, true);
	list_for_each_entry(c, &kfs_conns, node)
		kernel_sock_shutdown(c->sock, SHUT_RDWR);
	mutex_unlock(&kfs_lock);

	destroy_workqueue(kfs_wq);	/* waits for every worker */
	WARN_ON_ONCE(kfs_nconns);
	path_put(&kfs_root);
	pr_info("stopped\n");
}

module_init(kfs_init);
module_exit(kfs_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Kernel file server over AF_HPS or TCP");
