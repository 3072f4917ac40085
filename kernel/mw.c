// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - memory windows (IBTA 10.6.7), type 1 and type 2B, for user space.
 *
 * Keys
 * ----
 * A window's rkey is built as a region's (mr.c): index << SROCE_MR_KEY_SHIFT
 * | a random variant, with the index in [SROCE_MW_INDEX_BASE,
 * SROCE_MW_INDEX_BASE + SROCE_MAX_MW), above every region index, so the
 * key alone says which table to look in. Every bind takes the rkey the
 * consumer gives in the work request, which may differ from the current one
 * in its low 8 bits only (ibv_inc_rkey()); a key from an earlier binding
 * then no longer matches.
 *
 * Binding
 * -------
 * Binds run in the requester, in send queue order, as local operations
 * (req.c). The checks are IBTA's (C10-72 .. C10-79): the window and the
 * region belong to the QP's PD, the region allows MW_BIND, remote write
 * or atomic rights need local write on the region, the range lies inside
 * the region; a type 2B window must be free (unbound or invalidated) and
 * is then usable on the binding QP only; a type 1 window is bound with
 * ibv_bind_mw() only, and rebinding it replaces its binding (length 0:
 * unbound). A failed bind completes with IB_WC_MW_BIND_ERR, and the QP goes
 * to the error state (UC: Send Queue Error, as after other send errors).
 *
 * A window grants its own rights: a region with local write only can be
 * written remotely through a window that allows remote write. Zero-based
 * windows (IBV_ACCESS_ZERO_BASED) are not supported: such a bind fails.
 *
 * While bound, a window counts itself in its region's num_mw, which keeps
 * the region from being deregistered or reregistered (EBUSY), so the
 * window can point at the region and its pinned pages. Deallocating a
 * window unbinds it.
 *
 * Invalidation
 * ------------
 * Type 2B windows only: LOCAL_INV from any QP of the window's PD, or a
 * SEND_WITH_INV that arrives on the QP the window is bound to. Type 1
 * windows are unbound by a zero-length bind.
 */

#include <linux/random.h>
#include <linux/slab.h>

#include "sroce.h"

#define SROCE_MW_VARIANT_MASK	((1u << SROCE_MR_KEY_SHIFT) - 1)
#define SROCE_MW_INDEX_LAST	(SROCE_MW_INDEX_BASE + SROCE_MAX_MW - 1)
static_assert((u64)(SROCE_MW_INDEX_LAST + 1) << SROCE_MR_KEY_SHIFT <= U32_MAX);

/* The rights a window can grant; LOCAL_WRITE is accepted and means nothing. */
#define SROCE_MW_REMOTE		(IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_ATOMIC)

static inline struct sroce_mw *to_smw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct sroce_mw, ibmw);
}

void sroce_mw_init_dev(struct sroce_dev *sdev)
{
	xa_init_flags(&sdev->mw_xa, XA_FLAGS_ALLOC);
	sdev->mw_next = SROCE_MW_INDEX_BASE + get_random_u32() % SROCE_MAX_MW;
}

void sroce_mw_fini_dev(struct sroce_dev *sdev)
{
	/* ib_core has deallocated every window before dealloc_driver. */
	WARN_ON(!xa_empty(&sdev->mw_xa));
	xa_destroy(&sdev->mw_xa);
}

static void sroce_win_put(struct sroce_window *win)
{
	if (refcount_dec_and_test(&win->ref))
		complete(&win->done);
}

/* The window @key's index names, referenced; NULL if there is none. */
static struct sroce_window *sroce_win_lookup(struct sroce_dev *sdev, u32 key)
{
	struct sroce_window *win;

	rcu_read_lock();
	win = xa_load(&sdev->mw_xa, key >> SROCE_MR_KEY_SHIFT);
	if (win && !refcount_inc_not_zero(&win->ref))
		win = NULL;
	rcu_read_unlock();
	return win;
}

/* Forget the binding; the caller holds win->lock. Return the region. */
static struct sroce_mr *sroce_win_clear(struct sroce_window *win)
{
	struct sroce_mr *mr = win->mr;

	win->valid = false;
	win->mr = NULL;
	win->va = 0;
	win->length = 0;
	win->access = 0;
	return mr;
}

int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_mw *mw = to_smw(ibmw);
	struct sroce_window *win;
	u32 index;
	int err;

	/* ib_core accepts types 1 and 2 only; type 2 is 2B here. */
	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	if (udata && udata->outlen)
		return -EINVAL;

	win = kzalloc(sizeof(*win), GFP_KERNEL_ACCOUNT);
	if (!win)
		return -ENOMEM;
	win->pd = to_spd(ibmw->pd);
	win->type = ibmw->type;
	spin_lock_init(&win->lock);
	refcount_set(&win->ref, 1);
	init_completion(&win->done);

	err = xa_alloc_cyclic(&sdev->mw_xa, &index, NULL,
			      XA_LIMIT(SROCE_MW_INDEX_BASE, SROCE_MW_INDEX_LAST),
			      &sdev->mw_next, GFP_KERNEL);
	if (err < 0) {
		kfree(win);
		return err == -EBUSY ? -ENOMEM : err;
	}
	win->key = index << SROCE_MR_KEY_SHIFT |
		   (get_random_u32() & SROCE_MW_VARIANT_MASK);
	ibmw->rkey = win->key;
	mw->win = win;
	/* The slot exists already: this store allocates nothing. */
	xa_store(&sdev->mw_xa, index, win, GFP_KERNEL);
	return 0;
}

int sroce_dealloc_mw(struct ib_mw *ibmw)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_window *win = to_smw(ibmw)->win;
	struct sroce_mr *mr;

	xa_erase(&sdev->mw_xa, win->key >> SROCE_MR_KEY_SHIFT);
	sroce_win_put(win);
	wait_for_completion(&win->done);

	/* No access and no bind can reach the window any more. */
	spin_lock_irq(&win->lock);
	mr = sroce_win_clear(win);
	spin_unlock_irq(&win->lock);
	if (mr)
		sroce_mr_unbind_mw(mr);
	kfree_rcu(win, rcu);
	return 0;
}

/*
 * The checks of an access through a window, under its lock: the current
 * key, bound, the PD's, the bound QP's for type 2B, the rights and the range.
 */
static int sroce_win_check(const struct sroce_window *win,
			   const struct sroce_pd *pd, u32 qpn, u32 key,
			   int access, u64 va, u64 len)
{
	u64 off;

	if (win->key != key || !win->valid)
		return -ENOENT;
	if (win->pd != pd || (win->type == IB_MW_TYPE_2 && win->qpn != qpn))
		return -EPERM;
	if ((win->access & access) != access)
		return -EACCES;
	if (!len)
		return 0;
	if (va < win->va)
		return -ERANGE;
	off = va - win->va;
	if (off >= win->length || len > win->length - off)
		return -ERANGE;
	return 0;
}

/**
 * sroce_mw_access - a remote access through a memory window
 * @sdev: the device
 * @pd: PD of the QP the request arrived on
 * @qpn: that QP
 * @key: the rkey of the request (untrusted), a window key
 * @access: IB_ACCESS_REMOTE_* the access needs
 * @va: first byte, in the bound region's iova space
 * @len: bytes (0: only the key and rights are checked)
 * @fn: called for every chunk, in order, under the window's lock (must not
 *	sleep); NULL only checks
 * @priv: passed to @fn
 *
 * As sroce_mr_access(): the whole access happens inside this call, and
 * none starts after the window is unbound, invalidated or deallocated.
 *
 * Return: 0, an error of sroce_mr_access() or the first non-zero value of
 * @fn.
 */
int sroce_mw_access(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
		    u32 key, int access, u64 va, u64 len, sroce_mr_page_fn fn,
		    void *priv)
{
	struct sroce_window *win = sroce_win_lookup(sdev, key);
	unsigned long flags;
	int err;

	if (!win)
		return -ENOENT;
	spin_lock_irqsave(&win->lock, flags);
	err = sroce_win_check(win, pd, qpn, key, access, va, len);
	if (!err && len && fn)
		err = sroce_mr_walk_pages(win->mr, va, len, fn, priv);
	spin_unlock_irqrestore(&win->lock, flags);
	sroce_win_put(win);
	return err;
}

/**
 * sroce_mw_invalidate - LOCAL_INV or SEND_WITH_INV of a window key
 * @sdev: the device
 * @pd: PD of the QP
 * @qpn: the QP a SEND_WITH_INV arrived on, SROCE_KEY_LOCAL for LOCAL_INV
 * @key: the key to invalidate (untrusted)
 *
 * Return: 0, or -EINVAL unless @key is the current key of a bound type 2B
 * window of @pd (and, remotely, bound to @qpn).
 */
int sroce_mw_invalidate(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
			u32 key)
{
	struct sroce_window *win = sroce_win_lookup(sdev, key);
	struct sroce_mr *mr = NULL;
	unsigned long flags;
	int err = -EINVAL;

	if (!win)
		return -EINVAL;
	spin_lock_irqsave(&win->lock, flags);
	if (win->key == key && win->valid && win->pd == pd &&
	    win->type == IB_MW_TYPE_2 &&
	    (qpn == SROCE_KEY_LOCAL || qpn == win->qpn)) {
		mr = sroce_win_clear(win);
		err = 0;
	}
	spin_unlock_irqrestore(&win->lock, flags);
	if (mr)
		sroce_mr_unbind_mw(mr);
	sroce_win_put(win);
	return err;
}

/*
 * The region of a bind, referenced and counting one more window, or NULL
 * if the bind may not use it.
 */
static struct sroce_mr *sroce_bind_mr(struct sroce_qp *qp, u32 lkey,
				      int access, u64 va, u64 len)
{
	struct sroce_mr *mr = sroce_mr_lookup(qp->sdev, lkey);
	unsigned long flags;
	bool ok;

	if (!mr)
		return NULL;
	ok = mr->key == lkey && mr->type == SROCE_MR_USER && mr->pd == qp->pd &&
	     (mr->access & IB_ACCESS_MW_BIND) &&
	     (!(access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) ||
	      (mr->access & IB_ACCESS_LOCAL_WRITE)) &&
	     sroce_mr_covers(mr, va, len);
	if (ok) {
		spin_lock_irqsave(&mr->lock, flags);
		ok = !mr->dying;
		if (ok)
			mr->num_mw++;
		spin_unlock_irqrestore(&mr->lock, flags);
	}
	if (!ok) {
		sroce_mr_put(mr);
		return NULL;
	}
	return mr;
}

/**
 * sroce_mw_bind - execute a BIND_MW work request
 * @qp: the QP that posted it
 * @wr: the validated kernel copy of the WQE (sroce-abi.h, BIND_MW)
 *
 * Called by the requester in send queue order.
 *
 * Return: 0, or IB_WC_MW_BIND_ERR.
 */
u8 sroce_mw_bind(struct sroce_qp *qp, const struct sroce_send_wqe *wr)
{
	const bool type1 = wr->wr.bind.flags & SROCE_BIND_TYPE_1;
	u32 new_key = wr->wr.bind.new_rkey;
	u64 va = wr->wr.bind.addr, len = wr->wr.bind.length;
	int access = wr->wr.bind.access;
	struct sroce_window *win;
	struct sroce_mr *mr = NULL, *old = NULL, *drop = NULL;
	unsigned long flags;
	u8 st = IB_WC_MW_BIND_ERR;

	if ((wr->wr.bind.flags & ~SROCE_BIND_TYPE_1) ||
	    (access & ~(SROCE_MW_REMOTE | IB_ACCESS_LOCAL_WRITE)) ||
	    (new_key >> 8) != (wr->imm_data >> 8))
		return IB_WC_MW_BIND_ERR;
	access &= SROCE_MW_REMOTE;

	win = sroce_win_lookup(qp->sdev, wr->imm_data);
	if (!win)
		return IB_WC_MW_BIND_ERR;
	/* type 1 windows with ibv_bind_mw() only, type 2B never */
	if (win->pd != qp->pd || win->type != (type1 ? IB_MW_TYPE_1 : IB_MW_TYPE_2))
		goto out;
	/* A type 1 window bound with length 0 is unbound. */
	if (len || !type1) {
		mr = sroce_bind_mr(qp, wr->wr.bind.mr_lkey, access, va, len);
		if (!mr)
			goto out;
	}

	spin_lock_irqsave(&win->lock, flags);
	if (!type1 && win->valid) {
		/* C10-79: a bound type 2B window is invalidated first. */
		drop = mr;
	} else {
		old = sroce_win_clear(win);
		win->key = new_key;
		if (mr) {
			win->valid = true;
			win->va = va;
			win->length = len;
			win->access = access;
			win->qpn = qp->ibqp.qp_num;
			/* A zero-length type 2B window reaches no region. */
			if (len)
				win->mr = mr;
			else
				drop = mr;
		}
		st = 0;
	}
	spin_unlock_irqrestore(&win->lock, flags);
	if (old)
		sroce_mr_unbind_mw(old);
	if (drop)
		sroce_mr_unbind_mw(drop);
	if (mr)
		sroce_mr_put(mr);
out:
	sroce_win_put(win);
	return st;
}
