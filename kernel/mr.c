// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - memory regions.
 *
 * Keys
 * ----
 * An lkey (equal to the rkey) is index << SROCE_MR_KEY_SHIFT | variant. The
 * index, in [1, SROCE_MAX_MR], selects the slot of sdev->mr_xa and is what
 * enforces max_mr; the variant is drawn at random for every registration,
 * so keys cannot be predicted from earlier ones and a stale key whose index
 * has been reused by a later registration does not match it (except once in
 * 8192 reuses). Kernel consumers re-key fast-registration regions by
 * changing the low 8 bits, which stay inside the variant. Key 0 is never
 * valid.
 *
 * Lifetime
 * --------
 * Registration reserves the index, fills in the MR completely and only then
 * stores the pointer, so a lookup never sees a half-built MR. Lookups run
 * under rcu_read_lock() and take a reference with refcount_inc_not_zero().
 * Deregistration erases the index (no new lookups; unless a reregistration
 * has put the region's successor there, under the same key), drops the initial
 * reference and waits for the in-flight users to drop theirs; the pinned
 * pages are released only then, and the structure itself after an RCU grace
 * period.
 *
 * On-demand paging
 * ----------------
 * An IB_ACCESS_ON_DEMAND region pins nothing: odp.c maps its pages as the
 * transport touches them and drops them when the process's mappings change.
 * Its accesses hold the region's lock like those of a fast-registration
 * region, and may fail with -EAGAIN (page not mapped yet, fault queued),
 * which the transport turns into "try again later".
 *
 * Accesses
 * --------
 * The transport never keeps a reference across packets: every packet of a
 * message looks its key up again and performs its access inside one call of
 * sroce_mr_access(). So deregistration only ever waits for accesses that are
 * running (each at most one packet), never for a peer, and once a key is
 * invalid (dereg, LOCAL_INV, remote invalidation) no later packet touches the
 * region's pages. A fast-registration region's key, range, access and page
 * array change under its lock (REG_MR, invalidation); an access to such a
 * region holds the lock from the check to the last byte copied, so it sees
 * one registration whole.
 */

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <rdma/ib_umem.h>

#include "sroce.h"

#include <linux/random.h>

#define SROCE_MR_VARIANT_MASK	((1u << SROCE_MR_KEY_SHIFT) - 1)
static_assert((u64)SROCE_MAX_MR << SROCE_MR_KEY_SHIFT <= U32_MAX);

/* Permissions an MR can carry; the optional range is silently ignored. */
#define SROCE_MR_ACCESS		(IB_ACCESS_LOCAL_WRITE | \
				 IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC | \
				 IB_ACCESS_MW_BIND | \
				 IB_ACCESS_HUGETLB | \
				 IB_ACCESS_ON_DEMAND)

void sroce_mr_init_dev(struct sroce_dev *sdev)
{
	xa_init_flags(&sdev->mr_xa, XA_FLAGS_ALLOC1);
	/* Indexes are not predictable from the device's history either. */
	sdev->mr_next = 1 + get_random_u32() % SROCE_MAX_MR;
}

void sroce_mr_fini_dev(struct sroce_dev *sdev)
{
	/* ib_core has deregistered every MR before dealloc_driver. */
	WARN_ON(!xa_empty(&sdev->mr_xa));
	xa_destroy(&sdev->mr_xa);
}

/*
 * IBTA 10.6.3.1 / 11.2.8.2: remote write and remote atomic need local write.
 * Unknown bits are invalid; zero-based regions are a valid request this
 * device does not implement. On-demand paging is for user regions only
 * (sroce_reg_user()).
 */
static int sroce_check_access(int access)
{
	if (access & ~IB_ACCESS_SUPPORTED)
		return -EINVAL;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (access & IB_ZERO_BASED)
		return -EOPNOTSUPP;
	return 0;
}

static struct sroce_mr *sroce_mr_alloc(struct sroce_pd *pd, int access)
{
	struct sroce_mr *mr;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr)
		return NULL;
	mr->pd = pd;
	mr->access = access & SROCE_MR_ACCESS;
	spin_lock_init(&mr->lock);
	refcount_set(&mr->ref, 1);
	init_completion(&mr->done);
	return mr;
}

/* Drop a reference; the last one lets a waiting deregistration continue. */
void sroce_mr_put(struct sroce_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->done);
}

/* Reserve an index, then publish the fully initialised MR under its key. */
static int sroce_mr_publish(struct sroce_dev *sdev, struct sroce_mr *mr,
			    bool user)
{
	u32 index, variant;
	int err;

	err = xa_alloc_cyclic(&sdev->mr_xa, &index, NULL,
			      XA_LIMIT(1, sroce_max_for(SROCE_MAX_MR, user)),
			      &sdev->mr_next, GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;

	variant = get_random_u32() & SROCE_MR_VARIANT_MASK;
	mr->key = index << SROCE_MR_KEY_SHIFT | variant;
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;

	/* The slot exists already: this store allocates nothing. */
	xa_store(&sdev->mr_xa, index, mr, GFP_KERNEL);
	return 0;
}

/*
 * Put @mr in @old's slot under @old's key (reregistration). @old stays
 * usable by the accesses that hold it; its own deregistration then leaves
 * the slot alone (sroce_mr_unpublish()).
 */
static int sroce_mr_republish(struct sroce_dev *sdev, struct sroce_mr *mr,
			      struct sroce_mr *old)
{
	u32 index = old->key >> SROCE_MR_KEY_SHIFT;
	void *cur;

	mr->key = old->key;
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	xa_lock(&sdev->mr_xa);
	cur = xa_load(&sdev->mr_xa, index);
	if (cur == old)
		/* The slot exists already: this store allocates nothing. */
		__xa_store(&sdev->mr_xa, index, mr, GFP_ATOMIC);
	xa_unlock(&sdev->mr_xa);
	return cur == old ? 0 : -EINVAL;
}

/* No new lookups of @mr: free its slot, unless a reregistration took it. */
static void sroce_mr_unpublish(struct sroce_dev *sdev, struct sroce_mr *mr)
{
	u32 index = mr->key >> SROCE_MR_KEY_SHIFT;

	xa_lock(&sdev->mr_xa);
	if (xa_load(&sdev->mr_xa, index) == mr)
		__xa_erase(&sdev->mr_xa, index);
	xa_unlock(&sdev->mr_xa);
}

struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_mr *mr;
	int err;

	err = sroce_check_access(access);
	if (err)
		return ERR_PTR(err);
	if (access & IB_ACCESS_ON_DEMAND)
		return ERR_PTR(-EOPNOTSUPP);

	mr = sroce_mr_alloc(to_spd(ibpd), access);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	/* Virtual DMA: a DMA address is a kernel virtual address. */
	mr->type = SROCE_MR_DMA;
	mr->iova = 0;
	mr->length = U64_MAX;

	err = sroce_mr_publish(sdev, mr, false);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

/* Record the pinned pages in order, for O(1) lookup by offset. */
static int sroce_mr_collect_pages(struct sroce_mr *mr)
{
	struct ib_umem *umem = mr->umem;
	struct sg_page_iter piter;
	unsigned long i = 0;

	mr->npages = ib_umem_num_pages(umem);
	mr->first_off = ib_umem_offset(umem);
	mr->pages = kvmalloc_array(mr->npages, sizeof(*mr->pages), SROCE_GFP_RING);
	if (!mr->pages)
		return -ENOMEM;

	for_each_sgtable_page(&umem->sgt_append.sgt, &piter, 0) {
		if (i == mr->npages)
			break;
		mr->pages[i++] = sg_page_iter_page(&piter);
	}
	if (i != mr->npages)
		return -EFAULT;
	return 0;
}

/* Publish a user region, under @old's key for a rereg, with its range. */
static int sroce_mr_install(struct sroce_dev *sdev, struct sroce_mr *mr,
			    struct sroce_mr *old)
{
	int err = old ? sroce_mr_republish(sdev, mr, old) :
			sroce_mr_publish(sdev, mr, true);

	if (err)
		return err;
	mr->ibmr.iova = mr->iova;
	mr->ibmr.length = mr->length;
	return 0;
}

/* Pin the pages of a user region and record them in order. */
static int sroce_mr_pin(struct sroce_mr *mr, u64 start)
{
	struct ib_umem *umem = ib_umem_get(mr->ibmr.device, start, mr->length,
					   mr->access);
	int err;

	if (IS_ERR(umem))
		return PTR_ERR(umem);
	mr->umem = umem;
	err = sroce_mr_collect_pages(mr);
	if (err) {
		kvfree(mr->pages);
		ib_umem_release(umem);
	}
	return err;
}

/*
 * Register a user region; under @old's key if @old is given (rereg). Its
 * pages are pinned, or with IB_ACCESS_ON_DEMAND mapped on access (odp.c);
 * an implicit ODP region (start 0, length U64_MAX, iova 0) covers the whole
 * address space with iova == address.
 */
static struct ib_mr *sroce_reg_user(struct ib_pd *ibpd, u64 start, u64 length,
				    u64 iova, int access, struct ib_udata *udata,
				    struct sroce_mr *old)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	bool odp = access & IB_ACCESS_ON_DEMAND;
	bool implicit = odp && !start && length == U64_MAX;
	struct sroce_mr *mr;
	int err;

	err = sroce_check_access(access);
	if (err)
		return ERR_PTR(err);
	if (udata && (udata->inlen || udata->outlen))
		return ERR_PTR(-EINVAL);
	if (implicit ? iova != 0 :
	    (!length || length > SROCE_MAX_MR_SIZE ||
	     start + length < start || iova + length < iova ||
	     length > SIZE_MAX))
		return ERR_PTR(-EINVAL);

	mr = sroce_mr_alloc(to_spd(ibpd), access);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->type = odp ? SROCE_MR_ODP : SROCE_MR_USER;
	mr->iova = iova;
	mr->length = length;
	mr->ibmr.device = ibpd->device;
	err = odp ? sroce_odp_init(mr, start, implicit) : sroce_mr_pin(mr, start);
	if (err)
		goto err_free;
	err = sroce_mr_install(sdev, mr, old);
	if (err)
		goto err_undo;
	return &mr->ibmr;

err_undo:
	if (odp) {
		sroce_odp_fini(mr);
	} else {
		kvfree(mr->pages);
		ib_umem_release(mr->umem);
	}
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	return sroce_reg_user(ibpd, start, length, iova, access, udata, NULL);
}

/*
 * No window binds to @mr from now on; false (and nothing changes) if some
 * are bound to it. IBTA 10.6.7.2.6: a region with bound windows cannot be
 * deregistered.
 */
static bool sroce_mr_stop_binds(struct sroce_mr *mr)
{
	bool busy;

	spin_lock_irq(&mr->lock);
	busy = mr->num_mw;
	if (!busy)
		mr->dying = true;
	spin_unlock_irq(&mr->lock);
	return !busy;
}

/* A window bound to @mr was unbound or invalidated. */
void sroce_mr_unbind_mw(struct sroce_mr *mr)
{
	unsigned long flags;

	spin_lock_irqsave(&mr->lock, flags);
	mr->num_mw--;
	spin_unlock_irqrestore(&mr->lock, flags);
}

/*
 * Reregistration builds a new region from the old one's settings and the
 * changes asked for (without IB_MR_REREG_TRANS the old range is pinned
 * again, with the new access rights) and puts it under the old one's keys,
 * which do not change. ib_core then deregisters the old region, which waits
 * for the accesses still using it, as dereg does; the pages it pinned are
 * released only then. Every access sees one registration whole, the old or
 * the new. If anything fails the old region is untouched.
 */
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_mr *old = to_smr(ibmr);
	struct ib_mr *mr;

	if (!old->umem && !old->odp)
		return ERR_PTR(-EINVAL);
	/* Windows bound to the region name it, not its successor. */
	if (!sroce_mr_stop_binds(old))
		return ERR_PTR(-EBUSY);
	if (!(flags & IB_MR_REREG_PD))
		ibpd = ibmr->pd;
	if (!(flags & IB_MR_REREG_ACCESS))
		access = old->access;
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = old->odp ? old->odp->ustart : old->umem->address;
		length = old->odp ? old->length : old->umem->length;
		iova = old->iova;
	}
	mr = sroce_reg_user(ibpd, start, length, iova, access, udata, old);
	if (IS_ERR(mr)) {
		spin_lock_irq(&old->lock);
		old->dying = false;
		spin_unlock_irq(&old->lock);
	}
	return mr;
}

int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmr->device);
	struct sroce_mr *mr = to_smr(ibmr);

	if (!sroce_mr_stop_binds(mr))
		return -EBUSY;
	sroce_mr_unpublish(sdev, mr);
	if (mr->odp)
		sroce_odp_stop(mr);
	sroce_mr_put(mr);
	wait_for_completion(&mr->done);

	if (mr->umem)
		ib_umem_release(mr->umem);
	if (mr->odp)
		sroce_odp_fini(mr);
	kvfree(mr->pages);
	kvfree(mr->fr_pages);
	kfree_rcu(mr, rcu);
	return 0;
}

/* [va, va + len) inside the region? A zero length is always inside. */
bool sroce_mr_covers(const struct sroce_mr *mr, u64 va, u64 len)
{
	u64 off;

	if (!len)
		return true;
	if (va < mr->iova)
		return false;
	off = va - mr->iova;
	return off < mr->length && len <= mr->length - off;
}

/*
 * The checks of an access. The DMA MR of a kernel PD (get_dma_mr) is remotely
 * usable only when the PD asked for it (IB_PD_UNSAFE_GLOBAL_RKEY gives it
 * remote access flags).
 */
static int sroce_mr_check(const struct sroce_mr *mr, const struct sroce_pd *pd,
			  u32 key, int access, u64 va, u64 len)
{
	if (mr->key != key || (mr->type == SROCE_MR_FAST && !mr->valid))
		return -ENOENT;
	if (mr->pd != pd)
		return -EPERM;
	if ((mr->access & access) != access)
		return -EACCES;
	if (!sroce_mr_covers(mr, va, len))
		return -ERANGE;
	return 0;
}

/* The region whose index @key names, referenced; NULL if there is none. */
struct sroce_mr *sroce_mr_lookup(struct sroce_dev *sdev, u32 key)
{
	struct sroce_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, key >> SROCE_MR_KEY_SHIFT);
	if (mr && !refcount_inc_not_zero(&mr->ref))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/*
 * Walk [va, va + len) of a region page by page, calling @fn for every chunk
 * in order; no chunk crosses a page. The caller holds a reference, and the
 * region's lock if it is a fast-registration region; not for ODP regions
 * (sroce_odp_walk()). For the DMA region,
 * @va is a kernel virtual address in the linear map. Return 0, -ERANGE,
 * -EFAULT for a DMA-region address outside the linear map, or the first
 * non-zero value of @fn.
 */
int sroce_mr_walk_pages(struct sroce_mr *mr, u64 va, u64 len,
			sroce_mr_page_fn fn, void *priv)
{
	unsigned long idx;
	unsigned int pgoff, chunk;
	u64 off;
	int err;

	if (!sroce_mr_covers(mr, va, len))
		return -ERANGE;

	if (mr->type == SROCE_MR_DMA) {
		while (len) {
			void *addr = (void *)(uintptr_t)va;

			if (!virt_addr_valid(addr))
				return -EFAULT;
			pgoff = offset_in_page(addr);
			chunk = min_t(u64, len, PAGE_SIZE - pgoff);
			err = fn(priv, virt_to_page(addr), pgoff, chunk);
			if (err)
				return err;
			va += chunk;
			len -= chunk;
		}
		return 0;
	}

	off = va - mr->iova + mr->first_off;
	idx = off >> PAGE_SHIFT;
	pgoff = off & ~PAGE_MASK;
	while (len) {
		chunk = min_t(u64, len, PAGE_SIZE - pgoff);
		if (idx >= mr->npages)
			return -ERANGE;
		err = fn(priv, mr->pages[idx], pgoff, chunk);
		if (err)
			return err;
		len -= chunk;
		idx++;
		pgoff = 0;
	}
	return 0;
}

/*
 * Where the bytes of a copy come from or go to: a kernel buffer, or (into a
 * region only) a received packet from byte @skb_off on, which may lie in the
 * skb's page fragments.
 */
struct sroce_copy_state {
	u8			*buf;
	const struct sk_buff	*skb;
	int			skb_off;
	enum sroce_copy_dir	dir;
};

static int sroce_copy_chunk(void *priv, struct page *page, unsigned int offset,
			    unsigned int len)
{
	struct sroce_copy_state *st = priv;
	u8 *addr = kmap_local_page(page);
	int err = 0;

	if (st->skb) {
		err = skb_copy_bits(st->skb, st->skb_off, addr + offset, len);
		st->skb_off += len;
	} else {
		if (st->dir == SROCE_COPY_TO_MR)
			memcpy(addr + offset, st->buf, len);
		else
			memcpy(st->buf, addr + offset, len);
		st->buf += len;
	}
	kunmap_local(addr);
	return err;
}

/**
 * sroce_mr_access - check an access to a region by key and perform it
 * @sdev: the device
 * @pd: protection domain of the QP making the access
 * @qpn: the QP making a remote access, SROCE_KEY_LOCAL for a local one
 * @key: lkey or rkey from a WQE or a packet (untrusted); an rkey may name
 *	a memory window (mw.c)
 * @access: IB_ACCESS_* bits the access needs (0 for a local read)
 * @va: first byte of the access, in the region's iova space
 * @len: length of the access (0: the key is checked, nothing is touched)
 * @fn: called for every chunk of the range, in order; NULL only checks
 * @priv: passed to @fn
 *
 * The whole access happens inside this call: no reference outlives it, so
 * a region that is deregistered or invalidated afterwards is never touched
 * again through @key. For a fast-registration region the region's lock is
 * held from the check to the last chunk, for an ODP region too: @fn must
 * not sleep. Callable in any context but hard IRQ.
 *
 * Return: 0; -ENOENT for an unknown, stale or invalidated key, -EPERM for a
 * region of another PD, -EACCES for missing permissions, -ERANGE for a range
 * outside the region, -EFAULT for a DMA-region address outside the linear
 * map or an ODP page that could not be faulted in, -EAGAIN for an ODP page
 * not mapped yet (a fault is queued: try again later); or the first
 * non-zero value returned by @fn.
 */
int sroce_mr_access(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
		    u32 key, int access, u64 va, u64 len, sroce_mr_page_fn fn,
		    void *priv)
{
	struct sroce_mr *mr;
	unsigned long flags = 0;
	int err;

	if (sroce_key_is_mw(key))
		return qpn == SROCE_KEY_LOCAL ? -ENOENT :
		       sroce_mw_access(sdev, pd, qpn, key, access, va, len,
				       fn, priv);
	mr = sroce_mr_lookup(sdev, key);
	if (!mr)
		return -ENOENT;
	if (mr->type == SROCE_MR_FAST || mr->type == SROCE_MR_ODP)
		spin_lock_irqsave(&mr->lock, flags);
	err = sroce_mr_check(mr, pd, key, access, va, len);
	if (!err && len && fn)
		err = mr->type == SROCE_MR_ODP ?
		      sroce_odp_walk(mr, va, len, fn, priv) :
		      sroce_mr_walk_pages(mr, va, len, fn, priv);
	if (mr->type == SROCE_MR_FAST || mr->type == SROCE_MR_ODP)
		spin_unlock_irqrestore(&mr->lock, flags);
	sroce_mr_put(mr);
	return err;
}

static int sroce_mr_copy_st(struct sroce_dev *sdev, struct sroce_pd *pd,
			    u32 qpn, u32 key, int access, u64 va, u32 len,
			    struct sroce_copy_state *st)
{
	return sroce_mr_access(sdev, pd, qpn, key, access, va, len,
			       sroce_copy_chunk, st);
}

/**
 * sroce_mr_copy - copy between a region, named by key, and a kernel buffer
 * @sdev: the device
 * @pd: protection domain of the QP making the access
 * @qpn: the QP making a remote access, SROCE_KEY_LOCAL for a local one
 * @key: lkey or rkey (untrusted)
 * @access: IB_ACCESS_* the access needs (e.g. IB_ACCESS_REMOTE_WRITE)
 * @va: first byte in the region, in its iova space
 * @buf: kernel buffer of at least @len bytes
 * @len: number of bytes
 * @dir: SROCE_COPY_TO_MR or SROCE_COPY_FROM_MR
 *
 * Return: 0 or an error of sroce_mr_access().
 */
int sroce_mr_copy(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
		  u32 key, int access, u64 va, void *buf, u32 len,
		  enum sroce_copy_dir dir)
{
	struct sroce_copy_state st = { .buf = buf, .dir = dir };

	return sroce_mr_copy_st(sdev, pd, qpn, key, access, va, len, &st);
}

/**
 * sroce_mr_copy_skb - copy part of a received packet into a region
 * @sdev, @pd, @qpn, @key, @access, @va: as for sroce_mr_copy()
 * @skb: the packet; its bytes may lie in page fragments
 * @off: offset of the first byte to copy, from skb->data
 * @len: number of bytes (the caller has checked that @skb holds them)
 *
 * Return: 0 or an error of sroce_mr_access().
 */
int sroce_mr_copy_skb(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
		      u32 key, int access, u64 va, const struct sk_buff *skb,
		      int off, u32 len)
{
	struct sroce_copy_state st = {
		.skb = skb, .skb_off = off, .dir = SROCE_COPY_TO_MR,
	};

	return sroce_mr_copy_st(sdev, pd, qpn, key, access, va, len, &st);
}

static int sroce_sge_copy_st(struct sroce_dev *sdev, struct sroce_pd *pd,
			     const struct sroce_sge *sge, u32 nsge, u32 off,
			     u32 len, struct sroce_copy_state *st)
{
	int access = st->dir == SROCE_COPY_TO_MR ? IB_ACCESS_LOCAL_WRITE : 0;
	u32 i;
	int err;

	for (i = 0; i < nsge && len; i++) {
		u32 n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - off);
		/* each chunk copied moves st on */
		err = sroce_mr_copy_st(sdev, pd, SROCE_KEY_LOCAL, sge[i].lkey,
				       access, sge[i].addr + off, n, st);
		if (err)
			return err == -EAGAIN ? -EAGAIN : IB_WC_LOC_PROT_ERR;
		len -= n;
		off = 0;
	}
	return len ? IB_WC_LOC_LEN_ERR : 0;
}

/**
 * sroce_sge_copy - copy between a scatter/gather list and a kernel buffer
 * @sdev: the device
 * @pd: the PD of the QP whose list it is
 * @sge: the list (a kernel copy: lkeys, addresses and lengths are untrusted)
 * @nsge: entries in @sge
 * @off: byte offset into the list's concatenated buffers
 * @buf: kernel buffer of @len bytes
 * @len: bytes to copy
 * @dir: SROCE_COPY_TO_MR (needs local write access) or SROCE_COPY_FROM_MR
 *
 * Callable from softirq.
 *
 * Return: 0, IB_WC_LOC_PROT_ERR for a bad lkey, permission or range,
 * IB_WC_LOC_LEN_ERR if the list is shorter than @off + @len, or -EAGAIN if
 * an ODP page is not mapped yet (nothing or part copied; try again later).
 */
int sroce_sge_copy(struct sroce_dev *sdev, struct sroce_pd *pd,
		   const struct sroce_sge *sge, u32 nsge, u32 off, u8 *buf,
		   u32 len, enum sroce_copy_dir dir)
{
	struct sroce_copy_state st = { .buf = buf, .dir = dir };

	return sroce_sge_copy_st(sdev, pd, sge, nsge, off, len, &st);
}

/**
 * sroce_sge_copy_skb - copy part of a received packet into a list's buffers
 * @sdev, @pd, @sge, @nsge, @off: as for sroce_sge_copy()
 * @skb: the packet; its bytes may lie in page fragments
 * @skb_off: offset of the first byte to copy, from skb->data
 * @len: bytes to copy (the caller has checked that @skb holds them)
 *
 * Return: as sroce_sge_copy() with SROCE_COPY_TO_MR.
 */
int sroce_sge_copy_skb(struct sroce_dev *sdev, struct sroce_pd *pd,
		       const struct sroce_sge *sge, u32 nsge, u32 off,
		       const struct sk_buff *skb, int skb_off, u32 len)
{
	struct sroce_copy_state st = {
		.skb = skb, .skb_off = skb_off, .dir = SROCE_COPY_TO_MR,
	};

	return sroce_sge_copy_st(sdev, pd, sge, nsge, off, len, &st);
}

static int sroce_touch_chunk(void *priv, struct page *page,
			     unsigned int offset, unsigned int len)
{
	return 0;
}

/**
 * sroce_sge_prefault - have the ODP pages of a scatter/gather list mapped
 * @sdev: the device
 * @pd: the PD of the QP whose list it is
 * @sge: the list (a kernel copy, untrusted)
 * @nsge: entries in @sge
 * @access: IB_ACCESS_LOCAL_WRITE if the list is to be written, else 0
 *
 * For a READ or atomic, whose responses are placed in softirq: the requester
 * waits before it sends the request until the pages are there. Entries that
 * are not ODP regions, or are invalid, are left to the access itself.
 *
 * Return: 0, -EAGAIN (faults queued: try again later), or -EFAULT if a page
 * could not be faulted in.
 */
int sroce_sge_prefault(struct sroce_dev *sdev, struct sroce_pd *pd,
		       const struct sroce_sge *sge, u32 nsge, int access)
{
	int ret = 0;
	u32 i;

	if (!atomic_read(&pd->odp_mrs))
		return 0;	/* the common case: no lookups */
	for (i = 0; i < nsge; i++) {
		struct sroce_mr *mr;
		int err;

		if (!sge[i].length || sroce_key_is_mw(sge[i].lkey))
			continue;
		mr = sroce_mr_lookup(sdev, sge[i].lkey);
		if (!mr)
			continue;
		if (mr->type == SROCE_MR_ODP) {
			err = sroce_mr_access(sdev, pd, SROCE_KEY_LOCAL,
					      sge[i].lkey, access, sge[i].addr,
					      sge[i].length, sroce_touch_chunk,
					      NULL);
			if (err == -EFAULT)
				ret = -EFAULT;
			else if (err == -EAGAIN && !ret)
				ret = -EAGAIN;
		}
		sroce_mr_put(mr);
	}
	return ret;
}

/* ------------------------------------------------------ fast registration */

/*
 * alloc_mr(IB_MR_TYPE_MEM_REG): a region without pages and without a valid
 * key until a REG_MR work request registers the list map_mr_sg built.
 */
struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > SROCE_MAX_FRPL_LEN)
		return ERR_PTR(-EINVAL);

	mr = sroce_mr_alloc(to_spd(ibpd), 0);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->type = SROCE_MR_FAST;
	mr->fr_max = max_num_sg;
	mr->pages = kvcalloc(max_num_sg, sizeof(*mr->pages), GFP_KERNEL_ACCOUNT);
	mr->fr_pages = kvcalloc(max_num_sg, sizeof(*mr->fr_pages), GFP_KERNEL_ACCOUNT);
	if (!mr->pages || !mr->fr_pages) {
		err = -ENOMEM;
		goto err_free;
	}
	err = sroce_mr_publish(sdev, mr, false);
	if (err)
		goto err_free;
	return &mr->ibmr;

err_free:
	kvfree(mr->pages);
	kvfree(mr->fr_pages);
	kfree(mr);
	return ERR_PTR(err);
}

static int sroce_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct sroce_mr *mr = to_smr(ibmr);
	void *va = (void *)(uintptr_t)addr;

	if (mr->fr_npages >= mr->fr_max || !virt_addr_valid(va))
		return -EINVAL;
	mr->fr_pages[mr->fr_npages++] = virt_to_page(va);
	return 0;
}

/*
 * Build the page list of the next registration. With virtual DMA, the DMA
 * addresses in @sg are kernel virtual addresses of the linear map. Only
 * PAGE_SIZE pages (what every in-tree consumer asks for) are supported.
 */
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct sroce_mr *mr = to_smr(ibmr);

	if (mr->type != SROCE_MR_FAST || ibmr->page_size != PAGE_SIZE)
		return -EINVAL;
	mr->fr_npages = 0;
	mr->fr_fresh = true;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, sroce_set_page);
}

/* A fast MR of @pd by the index of @key, referenced; NULL if there is none. */
static struct sroce_mr *sroce_fast_mr_get(struct sroce_dev *sdev,
					  struct sroce_pd *pd, u32 key)
{
	struct sroce_mr *mr = sroce_mr_lookup(sdev, key);

	if (mr && (mr->type != SROCE_MR_FAST || mr->pd != pd)) {
		sroce_mr_put(mr);
		mr = NULL;
	}
	return mr;
}

/**
 * sroce_mr_fast_reg - execute a REG_MR work request
 * @sdev: the device
 * @pd: PD of the QP that posted it
 * @key: the new key (its index part names the region)
 * @access: IB_ACCESS_* for the registration
 *
 * The range is the one map_mr_sg computed (ibmr.iova, ibmr.length), the
 * pages the list it built; without a map_mr_sg since the last REG_MR, the
 * pages registered then (a ULP may register the same buffer again under a
 * new key). Re-registering a valid region replaces it.
 *
 * Return: 0, or a completion status (IB_WC_LOC_PROT_ERR for an unknown
 * region or a bad range, IB_WC_LOC_QP_OP_ERR for bad access flags).
 */
int sroce_mr_fast_reg(struct sroce_dev *sdev, struct sroce_pd *pd, u32 key,
		      int access)
{
	unsigned long flags, npages;
	struct sroce_mr *mr;
	struct page **tmp;
	u64 iova, len;
	int st = 0;

	if (sroce_check_access(access) || (access & IB_ACCESS_ON_DEMAND))
		return IB_WC_LOC_QP_OP_ERR;
	mr = sroce_fast_mr_get(sdev, pd, key);
	if (!mr)
		return IB_WC_LOC_PROT_ERR;

	iova = mr->ibmr.iova;
	len = mr->ibmr.length;
	spin_lock_irqsave(&mr->lock, flags);
	npages = mr->fr_fresh ? mr->fr_npages : mr->npages;
	if (!len || iova + len < iova ||
	    offset_in_page(iova) + len > (u64)npages << PAGE_SHIFT) {
		st = IB_WC_LOC_PROT_ERR;
	} else {
		if (mr->fr_fresh) {
			tmp = mr->pages;
			mr->pages = mr->fr_pages;
			mr->fr_pages = tmp;
			mr->npages = mr->fr_npages;
			mr->fr_fresh = false;
		}
		mr->first_off = offset_in_page(iova);
		mr->iova = iova;
		mr->length = len;
		mr->access = access & SROCE_MR_ACCESS;
		mr->key = key;
		mr->valid = true;
	}
	spin_unlock_irqrestore(&mr->lock, flags);
	sroce_mr_put(mr);
	return st;
}

/**
 * sroce_mr_invalidate - LOCAL_INV, or a remote invalidation (SEND_WITH_INV)
 * @sdev: the device
 * @pd: PD of the QP
 * @qpn: the QP a SEND_WITH_INV arrived on, SROCE_KEY_LOCAL for LOCAL_INV
 * @key: the key to invalidate
 *
 * Only fast-registration regions and type 2B memory windows can be
 * invalidated.
 *
 * Return: 0, or -EINVAL if @key is not the current key of a fast region of
 * @pd or of a window sroce_mw_invalidate() accepts.
 */
int sroce_mr_invalidate(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
			u32 key)
{
	struct sroce_mr *mr;
	unsigned long flags;
	int err = 0;

	if (sroce_key_is_mw(key))
		return sroce_mw_invalidate(sdev, pd, qpn, key);
	mr = sroce_fast_mr_get(sdev, pd, key);
	if (!mr)
		return -EINVAL;
	/*
	 * Invalidating a region that is already invalid is no error (a ULP
	 * may post LOCAL_INV after a remote invalidation it did not check
	 * for), but the key must be the current one.
	 */
	spin_lock_irqsave(&mr->lock, flags);
	if (mr->key != key)
		err = -EINVAL;
	else
		mr->valid = false;
	spin_unlock_irqrestore(&mr->lock, flags);
	sroce_mr_put(mr);
	return err;
}
