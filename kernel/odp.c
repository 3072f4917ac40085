// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - on-demand paging (IB_ACCESS_ON_DEMAND regions).
 *
 * An ODP region pins nothing when it is registered. Its pages are found
 * when the transport first touches them, and forgotten when the process's
 * mappings change under them:
 *
 * - Table. odp->pages maps a page index of the user address space to the
 *   struct page that backs it, with a page reference, or to a "failed"
 *   marker. It changes only under mr->lock; an access holds mr->lock from
 *   the lookup to the last byte copied, like an access to a fast-registration
 *   region, so it never touches a page that an invalidation has dropped.
 *
 * - Faults. The transport runs in softirq or under spinlocks and cannot
 *   fault. An access that finds a page missing queues its range (up to
 *   SROCE_ODP_QUEUE ranges per region) and returns -EAGAIN; the caller
 *   retries later (the requester after a tick, the responder with an RNR
 *   NAK that makes the peer send the packet again, the READ responder after
 *   a tick). The region's work item faults the ranges in with
 *   hmm_range_fault() on the registering process's mm and enters the pages
 *   only if no invalidation ran meanwhile (mmu_interval_read_retry() under
 *   mr->lock); what it allocates is charged to the memory cgroup of the
 *   process that registered the region. The page an access waits for
 *   becomes a "failed" entry if it cannot be faulted (no mapping, no
 *   permission): the next access to it fails (a protection or remote access
 *   error, as for a pinned region's range error) and removes the entry, so
 *   a later mapping at that address is faulted in again. Other pages that
 *   cannot be faulted (the rest of a request's range, a prefetch) leave no
 *   entry: a failed fault costs no memory beyond the page an access waits
 *   for.
 *
 * - Invalidation. The mmu interval notifier covers the region's range (all
 *   of user space for an implicit region). Its callback bumps the sequence
 *   and removes every entry in the invalidated range under mr->lock, then
 *   marks writable pages dirty and drops the references. It takes only
 *   spinlocks, so it never blocks.
 *
 * - Writable regions (local write) are always faulted for writing, which
 *   breaks copy-on-write sharing as pinning does.
 *
 * - Prefetch: advise_mr faults in (PREFETCH, PREFETCH_WRITE) or enters the
 *   pages already present (PREFETCH_NO_FAULT), in the caller's context with
 *   IB_UVERBS_ADVISE_MR_FLAG_FLUSH, through the work item otherwise.
 */

#include <linux/hmm.h>
#include <linux/highmem.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "sroce.h"

#define SROCE_ODP_CHUNK		256	/* pages per hmm_range_fault() */
#define SROCE_ODP_BATCH		32	/* pages released per lock hold */
#define SROCE_ODP_FAILED	xa_mk_value(1)
#define SROCE_ODP_MAX_REQ	512	/* pages an access asks to fault */
/*
 * The pages an access that misses asks for, counted from the one it waits
 * for: the transport touches a packet's page or two at a time, and a message
 * that waited a tick or an RNR round trip for each would crawl through a
 * fresh region (a 1 GiB WRITE took minutes). The pages past the access are
 * read ahead, within the region and the mapping the access touched, as a
 * prefetch: a page that cannot be mapped stops them. A pinned registration
 * would have populated the region's pages at once.
 */
#define SROCE_ODP_AHEAD		512
/*
 * A synchronous prefetch runs inside ib_core's uverbs SRCU read section,
 * which device removal (rdma link del, rmmod) waits for: it gets this long,
 * then fails with -EAGAIN (what it mapped stays mapped).
 */
#define SROCE_ODP_SYNC_MS	10000

/* The user page index of iova @va of @mr. */
static unsigned long sroce_odp_index(const struct sroce_mr *mr, u64 va)
{
	return (va - mr->iova + mr->odp->ustart) >> PAGE_SHIFT;
}

/* Dirty (if written through) and release pages taken out of the table. */
static void sroce_odp_release_pages(struct sroce_odp *odp,
				    struct page **pages, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (odp->writable)
			set_page_dirty(pages[i]);
		put_page(pages[i]);
	}
	if (n)
		sroce_cnt_add_n(odp->sdev, SROCE_CNT_ODP_INVAL, n);
}

/*
 * Remove the entries of pages [first, last]. With @seq, also publish the
 * invalidation's sequence number under the lock first (notifier callback).
 */
static void sroce_odp_drop(struct sroce_mr *mr, unsigned long first,
			   unsigned long last, bool set_seq, unsigned long seq)
{
	struct sroce_odp *odp = mr->odp;
	struct page *batch[SROCE_ODP_BATCH];
	unsigned long flags, idx;
	unsigned int n;
	void *entry;

	spin_lock_irqsave(&mr->lock, flags);
	if (set_seq)
		mmu_interval_set_seq(&odp->notifier, seq);
	for (;;) {
		n = 0;
		xa_for_each_range(&odp->pages, idx, entry, first, last) {
			xa_erase(&odp->pages, idx);
			if (xa_is_value(entry))
				continue;
			batch[n++] = entry;
			if (n == SROCE_ODP_BATCH)
				break;
		}
		spin_unlock_irqrestore(&mr->lock, flags);
		/*
		 * The pages stay mapped until the invalidation returns, and
		 * our references keep them anyway.
		 */
		sroce_odp_release_pages(odp, batch, n);
		if (n < SROCE_ODP_BATCH || idx == last)
			return;
		first = idx + 1;
		spin_lock_irqsave(&mr->lock, flags);
	}
}

static bool sroce_odp_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct sroce_odp *odp = container_of(mni, struct sroce_odp, notifier);

	sroce_odp_drop(odp->mr, range->start >> PAGE_SHIFT,
		       (range->end - 1) >> PAGE_SHIFT, true, cur_seq);
	return true;	/* spinlocks only: fine for non-blockable ranges too */
}

static const struct mmu_interval_notifier_ops sroce_odp_ops = {
	.invalidate = sroce_odp_invalidate,
};

/*
 * Enter the pages of [first, first + n) that hmm found in @pfns. mr->lock
 * held, the notifier sequence checked. Return the number entered.
 */
static unsigned long sroce_odp_enter(struct sroce_odp *odp, unsigned long first,
				     unsigned long n, const unsigned long *pfns)
{
	unsigned long i, entered = 0;

	for (i = 0; i < n; i++) {
		unsigned long pfn = pfns[i];
		struct page *page;
		void *old;

		if (!(pfn & HMM_PFN_VALID) || (pfn & HMM_PFN_ERROR) ||
		    (odp->writable && !(pfn & HMM_PFN_WRITE)))
			continue;	/* not present (no-fault prefetch) */
		page = hmm_pfn_to_page(pfn);
		old = xa_load(&odp->pages, first + i);
		if (old == page)
			continue;
		if (old && !xa_is_value(old))
			continue;	/* cannot happen: invalidated first */
		get_page(page);
		/* The slot was reserved: this store allocates nothing. */
		if (xa_is_err(xa_store(&odp->pages, first + i, page,
				       GFP_NOWAIT))) {
			put_page(page);
			continue;
		}
		entered++;
	}
	return entered;
}

/* Mark page @idx failed: its next access fails. mr->lock held. */
static void sroce_odp_mark_failed(struct sroce_odp *odp, unsigned long idx)
{
	if (!xa_load(&odp->pages, idx))
		xa_store(&odp->pages, idx, SROCE_ODP_FAILED, GFP_NOWAIT);
}

/*
 * Map pages [first, first + n) (n <= SROCE_ODP_CHUNK), faulting them in if
 * @fault. Sleeps. Return 0 or -errno (-EFAULT, -EPERM: some page cannot be
 * mapped; nothing was entered then, and with @mark a single page that
 * cannot be faulted in is marked failed).
 */
static int sroce_odp_map_chunk(struct sroce_mr *mr, unsigned long first,
			       unsigned long n, bool fault, bool mark)
{
	struct sroce_odp *odp = mr->odp;
	struct mm_struct *mm = odp->notifier.mm;
	unsigned long timeout, i, entered;
	struct hmm_range range = {
		.notifier = &odp->notifier,
		.start = first << PAGE_SHIFT,
		.end = (first + n) << PAGE_SHIFT,
	};
	int err;

	if (fault)
		range.default_flags = HMM_PFN_REQ_FAULT |
				      (odp->writable ? HMM_PFN_REQ_WRITE : 0);
	range.hmm_pfns = kmalloc_array(n, sizeof(*range.hmm_pfns), GFP_KERNEL);
	if (!range.hmm_pfns)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		err = xa_reserve_irq(&odp->pages, first + i,
				     GFP_KERNEL_ACCOUNT);
		if (err)
			goto out_release;
	}
	err = -EFAULT;
	if (!mmget_not_zero(mm))
		goto out_release;

	timeout = jiffies + msecs_to_jiffies(HMM_RANGE_DEFAULT_TIMEOUT);
	for (;;) {
		range.notifier_seq = mmu_interval_read_begin(&odp->notifier);
		mmap_read_lock(mm);
		err = hmm_range_fault(&range);
		mmap_read_unlock(mm);
		if (err == -EBUSY && !time_after(jiffies, timeout))
			continue;
		if (err)
			break;
		spin_lock_irq(&mr->lock);
		if (mmu_interval_read_retry(&odp->notifier, range.notifier_seq)) {
			spin_unlock_irq(&mr->lock);
			/*
			 * Invalidated meanwhile: try again, for as long as
			 * hmm_range_fault() may stay busy. An implicit region
			 * hears of every change to the address space, which a
			 * busy process may make without pause.
			 */
			if (time_after(jiffies, timeout)) {
				err = -EBUSY;
				break;
			}
			continue;
		}
		entered = sroce_odp_enter(odp, first, n, range.hmm_pfns);
		spin_unlock_irq(&mr->lock);
		if (entered)
			sroce_cnt_add_n(odp->sdev, SROCE_CNT_ODP_FAULT, entered);
		break;
	}
	mmput(mm);

out_release:
	spin_lock_irq(&mr->lock);
	/* Into its reserved slot: this store allocates nothing. */
	if (mark && fault && n == 1 && (err == -EFAULT || err == -EPERM))
		sroce_odp_mark_failed(odp, first);
	/* Reservations that did not become entries (only reserved slots go). */
	for (i = 0; i < n; i++)
		xa_release(&odp->pages, first + i);
	spin_unlock_irq(&mr->lock);
	kfree(range.hmm_pfns);
	return err;
}

/*
 * Map pages [first, last] of @mr, in chunks, faulting them in if @fault.
 * For an access (@access: it waits for page @first) the pages that can be
 * mapped are, and page @first, if it cannot be, is marked failed. A
 * prefetch stops at the first chunk that cannot be mapped, as hardware
 * ODP's does. Sleeps; stops early when the region is being deregistered
 * (-ENOENT), the calling process is killed (-EINTR) or jiffies pass
 * @deadline (non-zero: -EAGAIN). Return 0, or the first error.
 */
static int sroce_odp_map(struct sroce_mr *mr, unsigned long first,
			 unsigned long last, bool fault, bool access,
			 unsigned long deadline)
{
	bool prefetch = !access;
	int ret = 0;

	while (first <= last) {
		unsigned long n = min(last - first + 1,
				      (unsigned long)SROCE_ODP_CHUNK);
		int err;

		if (READ_ONCE(mr->odp->dead))
			return ret ?: -ENOENT;
		if (fatal_signal_pending(current))
			return ret ?: -EINTR;
		if (deadline && time_after(jiffies, deadline))
			return ret ?: -EAGAIN;
		err = sroce_odp_map_chunk(mr, first, n, fault, access);

		if ((err == -EFAULT || err == -EPERM) && prefetch)
			return err;
		if ((err == -EFAULT || err == -EPERM) && fault && n > 1) {
			/* Map the others one by one; the awaited page gets marked. */
			unsigned long i;

			for (i = 0; i < n; i++)
				sroce_odp_map_chunk(mr, first + i, 1, true,
						    access && !i);
		}
		access = false;		/* only the first chunk holds that page */
		if (err && !ret)
			ret = err;
		if (err == -ENOMEM)
			return ret;
		if (last - first + 1 == n)
			break;
		first += n;
		cond_resched();
	}
	return ret;
}

/*
 * Page @ahead, or the last page before it of the mapping that holds page
 * @last: a read-ahead stays within the object the access touched (for an
 * implicit region, one mapping of the address space). Sleeps.
 */
static unsigned long sroce_odp_vma_last(struct sroce_odp *odp,
					unsigned long last, unsigned long ahead)
{
	struct mm_struct *mm = odp->notifier.mm;
	struct vm_area_struct *vma;

	if (!mmget_not_zero(mm))
		return last;
	mmap_read_lock(mm);
	vma = vma_lookup(mm, last << PAGE_SHIFT);
	if (!vma)
		ahead = last;
	else
		ahead = min(ahead, (vma->vm_end >> PAGE_SHIFT) - 1);
	mmap_read_unlock(mm);
	mmput(mm);
	return ahead;
}

static void sroce_odp_work(struct work_struct *work)
{
	struct sroce_odp *odp = container_of(work, struct sroce_odp, work);
	struct sroce_mr *mr = odp->mr;
	/* A worker of no process's: charge the table to the region's owner. */
	struct mem_cgroup *old = set_active_memcg(odp->memcg);

	for (;;) {
		struct sroce_odp_range r;

		spin_lock_irq(&mr->lock);
		if (odp->dead || !odp->nqueued) {
			spin_unlock_irq(&mr->lock);
			break;
		}
		r = odp->queue[0];
		odp->nqueued--;
		memmove(&odp->queue[0], &odp->queue[1],
			odp->nqueued * sizeof(odp->queue[0]));
		spin_unlock_irq(&mr->lock);

		if (!sroce_odp_map(mr, r.first, r.last, true, r.access, 0) &&
		    r.ahead > r.last) {
			r.ahead = sroce_odp_vma_last(odp, r.last, r.ahead);
			if (r.ahead > r.last)
				sroce_odp_map(mr, r.last + 1, r.ahead, true,
					      false, 0);
		}
		cond_resched();
	}
	set_active_memcg(old);
}

/*
 * Ask the work item to fault in pages [first, last], for an access that
 * waits for page @first if @access (then reading ahead up to page @ahead),
 * else for a prefetch. mr->lock held.
 */
static void sroce_odp_queue_locked(struct sroce_mr *mr, unsigned long first,
				   unsigned long last, unsigned long ahead,
				   bool access)
{
	struct sroce_odp *odp = mr->odp;
	unsigned int i;

	if (odp->dead)
		return;
	for (i = 0; i < odp->nqueued; i++) {
		const struct sroce_odp_range *q = &odp->queue[i];

		if (q->first <= first && last <= q->last &&
		    (!access || (q->access && q->first == first)))
			return;		/* asked already */
		/*
		 * Read ahead by a queued access: if a hole stops that, the
		 * access asks again, for itself.
		 */
		if (q->last < first && last <= q->ahead)
			return;
	}
	/* A full queue drops the request: the access asks again. */
	if (odp->nqueued < SROCE_ODP_QUEUE)
		odp->queue[odp->nqueued++] = (struct sroce_odp_range) {
			.first = first, .last = last,
			.ahead = max(ahead, last), .access = access,
		};
	queue_work(system_unbound_wq, &odp->work);
}

/**
 * sroce_odp_walk - sroce_mr_walk_pages() for an ODP region
 * @mr: the region, referenced, range checked; mr->lock held
 * @va: first byte, in the region's iova space
 * @len: bytes
 * @fn: called for every chunk (NULL: only check that the pages are there)
 * @priv: passed to @fn
 *
 * Return: 0; -EAGAIN if a page is not mapped yet (a fault has been queued
 * for the rest of the range: try again later); -EFAULT if a page could not
 * be faulted in; or the first non-zero value of @fn.
 */
int sroce_odp_walk(struct sroce_mr *mr, u64 va, u64 len, sroce_mr_page_fn fn,
		   void *priv)
{
	struct sroce_odp *odp = mr->odp;
	unsigned long idx = sroce_odp_index(mr, va);
	unsigned long last = sroce_odp_index(mr, va + len - 1);
	unsigned int pgoff = (va - mr->iova + odp->ustart) & ~PAGE_MASK;
	int err;

	if (last > odp->last)
		return -ERANGE;	/* implicit region: beyond user space */
	while (len) {
		unsigned int chunk = min_t(u64, len, PAGE_SIZE - pgoff);
		void *entry = xa_load(&odp->pages, idx);

		if (!entry) {
			sroce_odp_queue_locked(mr, idx,
					       min(last, idx + SROCE_ODP_MAX_REQ - 1),
					       min(odp->last,
						   idx + SROCE_ODP_AHEAD - 1),
					       true);
			sroce_cnt_inc(odp->sdev, SROCE_CNT_ODP_WAIT);
			return -EAGAIN;
		}
		if (xa_is_value(entry)) {
			xa_erase(&odp->pages, idx);	/* fault again next time */
			return -EFAULT;
		}
		if (fn) {
			err = fn(priv, entry, pgoff, chunk);
			if (err)
				return err;
		}
		len -= chunk;
		idx++;
		pgoff = 0;
	}
	return 0;
}

/**
 * sroce_odp_init - set up on-demand paging for a region being registered
 * @mr: the region: iova, length, access set; not published yet
 * @start: user address of the region; with @implicit, 0
 * @implicit: the region covers the whole address space (iova == address)
 *
 * Return: 0 or -errno.
 */
int sroce_odp_init(struct sroce_mr *mr, u64 start, bool implicit)
{
	struct sroce_odp *odp;
	unsigned long first, end;
	int err;

	if (!current->mm)
		return -EINVAL;
	if (implicit) {
		first = 0;
		end = TASK_SIZE;
	} else {
		if (start + mr->length > TASK_SIZE)
			return -EFAULT;
		first = ALIGN_DOWN(start, PAGE_SIZE);
		end = ALIGN(start + mr->length, PAGE_SIZE);
	}
	odp = kzalloc(sizeof(*odp), GFP_KERNEL_ACCOUNT);
	if (!odp)
		return -ENOMEM;
	odp->mr = mr;
	odp->sdev = to_sdev(mr->pd->ibpd.device);
	odp->ustart = start;
	odp->last = (end >> PAGE_SHIFT) - 1;
	odp->writable = mr->access & IB_ACCESS_LOCAL_WRITE;
	xa_init_flags(&odp->pages, XA_FLAGS_LOCK_IRQ);
	INIT_WORK(&odp->work, sroce_odp_work);
	mr->odp = odp;
	err = mmu_interval_notifier_insert(&odp->notifier, current->mm, first,
					   end - first, &sroce_odp_ops);
	if (err) {
		mr->odp = NULL;
		kfree(odp);
		return err;
	}
	odp->memcg = get_mem_cgroup_from_mm(current->mm);
	atomic_inc(&mr->pd->odp_mrs);
	return 0;
}

/*
 * Deregistration begins: the region is unpublished, but a prefetch or the
 * work item may still hold a reference while it faults in a long range.
 * Both stop at their next chunk, so the wait for the last reference is
 * short; what an access then finds missing is not faulted in any more.
 */
void sroce_odp_stop(struct sroce_mr *mr)
{
	struct sroce_odp *odp = mr->odp;

	spin_lock_irq(&mr->lock);
	WRITE_ONCE(odp->dead, true);
	odp->nqueued = 0;
	spin_unlock_irq(&mr->lock);
}

/* Deregistration: no access runs any more (the region's last reference is gone). */
void sroce_odp_fini(struct sroce_mr *mr)
{
	struct sroce_odp *odp = mr->odp;

	sroce_odp_stop(mr);
	cancel_work_sync(&odp->work);
	/* Still registered: a concurrent invalidation takes what it finds. */
	sroce_odp_drop(mr, 0, odp->last, false, 0);
	mmu_interval_notifier_remove(&odp->notifier);
	xa_destroy(&odp->pages);
	mem_cgroup_put(odp->memcg);
	kfree(odp);
	mr->odp = NULL;
	atomic_dec(&mr->pd->odp_mrs);
}

/* One SGE of advise_mr. */
static int sroce_odp_advise_sge(struct sroce_dev *sdev, struct sroce_pd *pd,
				enum ib_uverbs_advise_mr_advice advice,
				bool sync, unsigned long deadline,
				const struct ib_sge *sge)
{
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	unsigned long first, last, flags;
	struct sroce_mr *mr;
	int err = 0;

	if (sroce_key_is_mw(sge->lkey))
		return -EINVAL;
	mr = sroce_mr_lookup(sdev, sge->lkey);
	if (!mr)
		return -ENOENT;
	if (mr->key != sge->lkey || mr->pd != pd || mr->type != SROCE_MR_ODP) {
		err = -EINVAL;
		goto out;
	}
	if (advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    !(mr->access & IB_ACCESS_LOCAL_WRITE)) {
		err = -EPERM;
		goto out;
	}
	if (!sge->length)
		goto out;
	if (!sroce_mr_covers(mr, sge->addr, sge->length)) {
		err = -EINVAL;
		goto out;
	}
	first = sroce_odp_index(mr, sge->addr);
	last = sroce_odp_index(mr, sge->addr + sge->length - 1);
	if (last > mr->odp->last) {
		err = -EFAULT;
		goto out;
	}
	if (sync || !fault) {
		err = sroce_odp_map(mr, first, last, fault, false, deadline);
	} else {
		spin_lock_irqsave(&mr->lock, flags);
		sroce_odp_queue_locked(mr, first, last, last, false);
		spin_unlock_irqrestore(&mr->lock, flags);
	}
out:
	sroce_mr_put(mr);
	return err;
}

/*
 * advise_mr: prefetch ranges of ODP regions. With FLUSH the pages are
 * mapped when the call returns (within SROCE_ODP_SYNC_MS for the whole
 * list, else -EAGAIN); without it the work item maps them (a no-fault
 * prefetch, which never waits for I/O, runs in the call, within the same
 * time).
 */
int sroce_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	bool sync = flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH;
	/* never 0, which would mean no deadline */
	unsigned long deadline = (jiffies +
				  msecs_to_jiffies(SROCE_ODP_SYNC_MS)) ?: 1;
	u32 i;
	int err;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	if (flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH)
		return -EOPNOTSUPP;
	for (i = 0; i < num_sge; i++) {
		err = sroce_odp_advise_sge(to_sdev(ibpd->device), to_spd(ibpd),
					   advice, sync, deadline, &sg_list[i]);
		if (err)
			return err;
	}
	return 0;
}
