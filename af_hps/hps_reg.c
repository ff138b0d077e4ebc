// SPDX-License-Identifier: GPL-2.0-only
/*
 * AF_HPS: stream sockets over RDMA reliable connections.
 *
 * Registration cache of zero-copy user buffers (Documentation/zcopy.rst).
 *
 * A zero-copy transfer pins the user pages it covers. With the cache on
 * (net.hps.zcopy_cache_bytes not 0) the pins outlive the transfer: the
 * entry stays in its namespace's cache, keyed by address space and first
 * page, and the next transfer from (or into) the same buffer takes it
 * again without pinning: lazy deregistration. A cache over its byte limit
 * drops its least recently used idle entries; so does a process over its
 * RLIMIT_MEMLOCK, which every pin made here is charged to (mm->pinned_vm,
 * as RDMA memory registrations are). When nothing can be dropped, the
 * transfer is made by copy instead.
 *
 * An MMU interval notifier watches each cached range. Any change to the
 * mapping (munmap, mremap, mprotect, the write protection fork() gives
 * copy-on-write pages, migration, process exit) marks the entry stale and
 * takes it out of the cache, so that the next transfer pins the pages the
 * address maps then. The pages of a stale entry stay pinned until its last
 * transfer is done: a transfer in flight never reaches freed memory.
 *
 * kmap-at-registration: a cached entry maps its pages into the kernel once
 * (vmap()) when it is made. Kernel copies from the buffer later (the rest
 * of a zero-copy send that the peer asked for by copy) go through that
 * mapping; without it (net.hps.zcopy_cache_kmap 0, or vmap() failed) they
 * map page by page as they copy.
 *
 * Locking: hps_reg_cache.lock (spin) protects a cache's hash, LRU and dead
 * lists, its byte count and the users, hashed and stale fields of its
 * entries. It is a leaf lock: the invalidation callback takes it in
 * whatever context the mm calls it (possibly under mmap_lock or i_mmap
 * locks), so nothing under it sleeps, allocates or touches an mm. It is
 * never taken in softirq.
 */

#define KMSG_COMPONENT "af_hps"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "hps.h"

static unsigned long hps_reg_key(struct mm_struct *mm, unsigned long start)
{
	return (unsigned long)mm ^ (start >> PAGE_SHIFT);
}

/* Take @r out of the cache. Context: cache lock held. */
static void hps_reg_unhash(struct hps_reg_cache *c, struct hps_reg *r)
{
	lockdep_assert_held(&c->lock);
	hash_del(&r->hnode);
	list_del_init(&r->lru);
	r->hashed = false;
	c->bytes -= (u64)r->npages << PAGE_SHIFT;
}

/* Unpin and free an entry nobody uses. Context: process, may sleep. */
static void hps_reg_free(struct hps_reg *r)
{
	might_sleep();
	if (r->watched)
		mmu_interval_notifier_remove(&r->notifier);
	if (r->vaddr)
		vunmap(r->vaddr);
	unpin_user_pages_dirty_lock(r->pages, r->npages, r->write);
	atomic64_sub(r->npages, &r->mm->pinned_vm);
	hps_net_stat_add(hps_reg_cache_net(r->cache), HPS_STAT_REG_PINNED,
			 -((long)r->npages << PAGE_SHIFT));
	mmdrop(r->mm);
	kvfree(r->pages);
	kfree(r);
}

static void hps_reg_free_list(struct list_head *list)
{
	struct hps_reg *r, *tmp;

	list_for_each_entry_safe(r, tmp, list, lru) {
		list_del(&r->lru);
		hps_reg_free(r);
	}
}

/* Free what invalidations took out of the cache. Context: workqueue. */
static void hps_reg_work(struct work_struct *work)
{
	struct hps_reg_cache *c = container_of(work, struct hps_reg_cache,
					       work);
	LIST_HEAD(dead);

	spin_lock(&c->lock);
	list_splice_init(&c->dead, &dead);
	spin_unlock(&c->lock);
	hps_reg_free_list(&dead);
}

/*
 * The mapping of a watched range changes. The pages stay pinned, so the
 * device may finish with them; the entry is only never used again.
 * Context: any the mm invalidates from; does not sleep.
 */
static bool hps_reg_invalidate(struct mmu_interval_notifier *mni,
			       const struct mmu_notifier_range *range,
			       unsigned long cur_seq)
{
	struct hps_reg *r = container_of(mni, struct hps_reg, notifier);
	struct hps_reg_cache *c = r->cache;

	spin_lock(&c->lock);
	mmu_interval_set_seq(mni, cur_seq);
	if (!r->stale) {
		r->stale = true;
		hps_net_stat_inc(hps_reg_cache_net(c),
				 HPS_STAT_REG_INVALIDATIONS);
	}
	if (r->hashed) {
		hps_reg_unhash(c, r);
		if (!r->users) {
			list_add_tail(&r->lru, &c->dead);
			queue_work(system_wq, &c->work);
		}
	}
	spin_unlock(&c->lock);
	return true;
}

static const struct mmu_interval_notifier_ops hps_reg_mni_ops = {
	.invalidate = hps_reg_invalidate,
};

/* A cached entry with at least @npages from @start. Context: process. */
static struct hps_reg *hps_reg_lookup(struct hps_reg_cache *c,
				      struct mm_struct *mm,
				      unsigned long start, u32 npages,
				      bool write)
{
	struct hps_reg *r;

	spin_lock(&c->lock);
	hash_for_each_possible(c->hash, r, hnode, hps_reg_key(mm, start)) {
		/* Cached entries are never stale: invalidation unhashes. */
		if (r->mm != mm || r->start != start || r->npages < npages ||
		    (write && !r->write))
			continue;
		r->users++;
		list_move_tail(&r->lru, &c->lru);
		spin_unlock(&c->lock);
		return r;
	}
	spin_unlock(&c->lock);
	return NULL;
}

/*
 * Take idle entries out of the cache, oldest first: those of @mm (if not
 * NULL) until none is left, or any until @need more bytes fit under
 * @limit. Context: cache lock held; the caller frees @evicted.
 */
static void hps_reg_evict(struct hps_reg_cache *c, struct mm_struct *mm,
			  u64 need, u64 limit, struct list_head *evicted)
{
	struct hps_reg *r, *tmp;

	lockdep_assert_held(&c->lock);
	list_for_each_entry_safe(r, tmp, &c->lru, lru) {
		if (!mm && c->bytes + need <= limit)
			break;
		if (r->users || (mm && r->mm != mm))
			continue;
		hps_reg_unhash(c, r);
		list_add_tail(&r->lru, evicted);
		hps_net_stat_inc(hps_reg_cache_net(c), HPS_STAT_REG_EVICTIONS);
	}
}

/* Charge @npages to @mm's pinned_vm if RLIMIT_MEMLOCK allows. */
static bool hps_reg_try_charge(struct mm_struct *mm, u32 npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;

	if (atomic64_add_return(npages, &mm->pinned_vm) <= limit ||
	    capable(CAP_IPC_LOCK))
		return true;
	atomic64_sub(npages, &mm->pinned_vm);
	return false;
}

/*
 * Charge @npages to @mm's pinned_vm; over RLIMIT_MEMLOCK without
 * CAP_IPC_LOCK, first drop the process's idle cached entries. Context:
 * process (current's mm), may sleep.
 */
static bool hps_reg_charge(struct hps_reg_cache *c, struct mm_struct *mm,
			   u32 npages)
{
	LIST_HEAD(evicted);

	if (hps_reg_try_charge(mm, npages))
		return true;
	spin_lock(&c->lock);
	hps_reg_evict(c, mm, 0, 0, &evicted);
	spin_unlock(&c->lock);
	if (list_empty(&evicted))
		return false;
	hps_reg_free_list(&evicted);
	return hps_reg_try_charge(mm, npages);
}

/* Cache a new entry if it is still current and fits. */
static void hps_reg_insert(struct hps_reg_cache *c, struct hps_reg *r,
			   unsigned long seq, u64 limit)
{
	u64 bytes = (u64)r->npages << PAGE_SHIFT;
	LIST_HEAD(evicted);

	spin_lock(&c->lock);
	if (mmu_interval_read_retry(&r->notifier, seq))
		r->stale = true;	/* changed while we pinned */
	if (!r->stale) {
		hps_reg_evict(c, NULL, bytes, limit, &evicted);
		if (c->bytes + bytes <= limit) {
			hash_add(c->hash, &r->hnode,
				 hps_reg_key(r->mm, r->start));
			list_add_tail(&r->lru, &c->lru);
			r->hashed = true;
			c->bytes += bytes;
		}
	}
	spin_unlock(&c->lock);
	hps_reg_free_list(&evicted);
}

/**
 * hps_reg_get() - pinned pages of a buffer of the current process
 * @hn: the socket's namespace, whose cache is used
 * @start: user address of the first page (page aligned)
 * @npages: pages wanted
 * @write: the device will write into them (a receive)
 *
 * Takes a cached entry if one covers the pages, else pins them and, if the
 * cache is on, caches the new entry (mapping it into the kernel first if
 * net.hps.zcopy_cache_kmap is set).
 *
 * Context: process, may sleep; the socket lock may be held.
 * Return: an entry whose first min(@npages, r->npages) pages are the
 * buffer's (fewer than @npages if only part could be pinned), to be given
 * back with hps_reg_put(); NULL if none could be pinned or the memory lock
 * limit is reached: the caller copies.
 */
struct hps_reg *hps_reg_get(struct hps_net *hn, unsigned long start,
			    u32 npages, bool write)
{
	struct hps_reg_cache *c = &hn->reg;
	struct mm_struct *mm = current->mm;
	u64 limit = READ_ONCE(hn->zcopy_cache_bytes);
	unsigned long seq = 0;
	struct hps_reg *r;
	int got;

	might_sleep();
	if (!mm || !npages)
		return NULL;
	if (limit) {
		r = hps_reg_lookup(c, mm, start, npages, write);
		if (r) {
			hps_net_stat_inc(hn, HPS_STAT_REG_HITS);
			return r;
		}
		hps_net_stat_inc(hn, HPS_STAT_REG_MISSES);
	}
	if (!hps_reg_charge(c, mm, npages)) {
		hps_net_stat_inc(hn, HPS_STAT_REG_LIMIT_COPIES);
		return NULL;
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		goto out_uncharge;
	r->pages = kvmalloc_array(npages, sizeof(*r->pages), GFP_KERNEL);
	if (!r->pages)
		goto out_free;
	r->cache = c;
	r->mm = mm;
	r->start = start;
	r->write = write;
	r->users = 1;
	INIT_LIST_HEAD(&r->lru);
	if (limit && ((u64)npages << PAGE_SHIFT) <= limit &&
	    !mmu_interval_notifier_insert(&r->notifier, mm, start,
					  (unsigned long)npages << PAGE_SHIFT,
					  &hps_reg_mni_ops)) {
		r->watched = true;
		seq = mmu_interval_read_begin(&r->notifier);
	}
	got = pin_user_pages_fast(start, npages,
				  (write ? FOLL_WRITE : 0) |
				  (r->watched ? FOLL_LONGTERM : 0), r->pages);
	if (got <= 0)
		goto out_unwatch;
	if (got < npages) {
		atomic64_sub(npages - got, &mm->pinned_vm);
		npages = got;
	}
	r->npages = npages;
	mmgrab(mm);
	hps_net_stat_add(hn, HPS_STAT_REG_PINNED, (long)npages << PAGE_SHIFT);
	if (!r->watched)
		return r;
	if (READ_ONCE(hn->zcopy_cache_kmap)) {
		r->vaddr = vmap(r->pages, npages, VM_MAP, PAGE_KERNEL);
		if (!r->vaddr)
			hps_net_stat_inc(hn, HPS_STAT_REG_KMAP_FAILS);
	}
	hps_reg_insert(c, r, seq, limit);
	return r;

out_unwatch:
	if (r->watched)
		mmu_interval_notifier_remove(&r->notifier);
	kvfree(r->pages);
out_free:
	kfree(r);
out_uncharge:
	atomic64_sub(npages, &mm->pinned_vm);
	return NULL;
}

/**
 * hps_reg_put() - a transfer is done with an entry
 * @r: from hps_reg_get()
 * @written: how many of its first pages the device wrote (marked dirty)
 *
 * The entry stays pinned while it is cached; it is freed when it is not
 * (any more) and this was its last user.
 *
 * Context: process, may sleep.
 */
void hps_reg_put(struct hps_reg *r, u32 written)
{
	struct hps_reg_cache *c = r->cache;
	bool last;
	u32 i;

	might_sleep();
	for (i = 0; i < min(written, r->npages); i++)
		set_page_dirty_lock(r->pages[i]);
	spin_lock(&c->lock);
	last = !--r->users && !r->hashed;
	spin_unlock(&c->lock);
	if (last)
		hps_reg_free(r);
}

/**
 * hps_reg_cache_init() - an empty cache
 * @c: the namespace's cache
 */
void hps_reg_cache_init(struct hps_reg_cache *c)
{
	spin_lock_init(&c->lock);
	hash_init(c->hash);
	INIT_LIST_HEAD(&c->lru);
	INIT_LIST_HEAD(&c->dead);
	INIT_WORK(&c->work, hps_reg_work);
	c->bytes = 0;
}

/**
 * hps_reg_cache_exit() - unpin everything a namespace's cache holds
 * @c: the cache; no socket of the namespace is left, so no entry is in use
 *
 * Context: process (namespace exit or module unload), may sleep.
 */
void hps_reg_cache_exit(struct hps_reg_cache *c)
{
	struct hps_reg *r, *tmp;
	LIST_HEAD(all);

	might_sleep();
	spin_lock(&c->lock);
	list_for_each_entry_safe(r, tmp, &c->lru, lru) {
		if (WARN_ON_ONCE(r->users))
			continue;
		hps_reg_unhash(c, r);
		list_add_tail(&r->lru, &all);
	}
	spin_unlock(&c->lock);
	hps_reg_free_list(&all);
	flush_work(&c->work);
}
