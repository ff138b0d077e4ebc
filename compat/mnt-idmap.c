// SPDX-License-Identifier: GPL-2.0
/*
 * what: mount ID mapping
 * have: 6.3, struct mnt_idmap replaces the mount's user namespace in
 *       inode_permission() and lookup_one_positive_unlocked().
 */
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/namei.h>
static int f(struct vfsmount *mnt, struct inode *inode, struct dentry *d)
{
#ifdef HPS_PROBE_HAVE
	struct mnt_idmap *m = mnt_idmap(mnt);
#else
	struct user_namespace *m = mnt_user_ns(mnt);
#endif
	return inode_permission(m, inode, MAY_READ) +
	       !!lookup_one_positive_unlocked(m, "x", d, 1);
}

int (*hps_probe)(struct vfsmount *, struct inode *, struct dentry *) = f;
