// SPDX-License-Identifier: GPL-2.0
/*
 * kfs-hangfs: a FUSE filesystem that hangs, for selftests/hps_kfs.sh.
 *
 *   kfs-hangfs DIR
 *
 * Mounts itself on DIR (as root, through /dev/fuse directly, no libfuse)
 * with one file, "f" (mode 0444, 100 bytes), and answers INIT, LOOKUP,
 * GETATTR and OPEN. After the first OPEN it stops reading /dev/fuse, so the
 * next request (the READ) waits in the kernel's queue for ever: the state
 * of a FUSE or network filesystem whose server went away. The caller kills
 * it and unmounts DIR. Prints "mounted" once the mount is up.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/fuse.h>

#define FILE_SIZE	100

static int fd;

static void reply(uint64_t unique, int err, const void *arg, size_t len)
{
	struct fuse_out_header out = {
		.len = sizeof(out) + (err ? 0 : len),
		.error = err,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ .iov_base = &out, .iov_len = sizeof(out) },
		{ .iov_base = (void *)arg, .iov_len = err ? 0 : len },
	};

	if (writev(fd, iov, 2) < 0)
		perror("kfs-hangfs: writev");
}

static void attr(struct fuse_attr *a, uint64_t node)
{
	memset(a, 0, sizeof(*a));
	a->ino = node;
	a->nlink = 1;
	a->blksize = 4096;
	if (node == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | 0444;
		a->size = FILE_SIZE;
		a->blocks = 1;
	}
}

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	char opts[128];

	if (argc != 2) {
		fprintf(stderr, "usage: kfs-hangfs DIR\n");
		return 2;
	}
	fd = open("/dev/fuse", O_RDWR);
	if (fd < 0) {
		perror("kfs-hangfs: /dev/fuse");
		return 1;
	}
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions",
		 fd);
	if (mount("kfs-hangfs", argv[1], "fuse.kfs-hangfs", MS_NODEV | MS_NOSUID,
		  opts)) {
		perror("kfs-hangfs: mount");
		return 1;
	}
	for (;;) {
		struct fuse_in_header *in = (struct fuse_in_header *)buf;
		void *arg = buf + sizeof(*in);
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(*in)) {
			perror("kfs-hangfs: read");
			return 1;
		}
		switch (in->opcode) {
		case FUSE_INIT: {
			const struct fuse_init_in *ii = arg;
			struct fuse_init_out io = {
				.major = FUSE_KERNEL_VERSION,
				.minor = 22,
				.max_readahead = ii->max_readahead,
				.max_write = 4096,
			};

			reply(in->unique, 0, &io, FUSE_COMPAT_22_INIT_OUT_SIZE);
			printf("mounted\n");
			fflush(stdout);
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out eo = { 0 };

			if (in->nodeid != FUSE_ROOT_ID || strcmp(arg, "f")) {
				reply(in->unique, -ENOENT, NULL, 0);
				break;
			}
			eo.nodeid = 2;
			eo.generation = 1;
			eo.entry_valid = 3600;
			eo.attr_valid = 3600;
			attr(&eo.attr, 2);
			reply(in->unique, 0, &eo, sizeof(eo));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out ao = { .attr_valid = 3600 };

			attr(&ao.attr, in->nodeid);
			reply(in->unique, 0, &ao, sizeof(ao));
			break;
		}
		case FUSE_OPEN: {
			struct fuse_open_out oo = { .fh = 1 };

			reply(in->unique, 0, &oo, sizeof(oo));
			/* Hang: nothing more is read from /dev/fuse. */
			printf("opened, hanging\n");
			fflush(stdout);
			for (;;)
				pause();
		}
		default:
			reply(in->unique, -ENOSYS, NULL, 0);
		}
	}
}
