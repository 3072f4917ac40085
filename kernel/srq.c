// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - shared receive queues.
 *
 * An SRQ is a receive ring (layout in sroce-abi.h) shared by the QPs created
 * on it. User space posts into it without system calls; responders of any of
 * those QPs take WQEs under srq->lock. The limit event (IB_EVENT_SRQ_LIMIT_REACHED)
 * fires once when, after a WQE was taken, fewer than srq_limit WQEs are left;
 * modify_srq with IB_SRQ_LIMIT arms it (create ignores srq_limit). Resizing (IB_SRQ_MAX_WR)
 * moves the SRQ to a new ring with the posted WQEs. Kernel SRQs have the
 * same ring in kernel memory, written by post_srq_recv.
 *
 * XRC: an XRC SRQ is the same ring with a number, a domain and a CQ. XRC
 * requests name it in their XRCETH; the receive path of an XRC target QP
 * finds it by number (sroce_xrc_srq_get()) and uses it for one packet.
 * An XRC domain holds nothing of its own: ib_core keeps its QPs and users.
 */

#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"

static_assert(sizeof(struct sroce_create_srq_resp) == 32);

/* XRC SRQ numbers: 24 bits, like QPNs; 0 is never used. */
#define SROCE_SRQN_MIN		1

void sroce_srq_init_dev(struct sroce_dev *sdev)
{
	xa_init_flags(&sdev->srq_xa, XA_FLAGS_ALLOC);
	atomic_set(&sdev->num_srq, 0);
	sdev->srq_next = SROCE_SRQN_MIN;
}

void sroce_srq_fini_dev(struct sroce_dev *sdev)
{
	WARN_ON(!xa_empty(&sdev->srq_xa));
	xa_destroy(&sdev->srq_xa);
}

int sroce_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}

int sroce_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}

/**
 * sroce_xrc_srq_get - find an XRC SRQ by number for a request
 * @sdev: the device
 * @srqn: the number the request's XRCETH carries
 * @xrcd: the XRC domain of the target QP the request arrived on
 *
 * Callable from softirq. Release with sroce_srq_put().
 *
 * Return: the SRQ with a reference, or NULL if there is no XRC SRQ @srqn
 * in domain @xrcd.
 */
struct sroce_srq *sroce_xrc_srq_get(struct sroce_dev *sdev, u32 srqn,
				    const struct ib_xrcd *xrcd)
{
	struct sroce_srq *srq;

	rcu_read_lock();
	srq = xa_load(&sdev->srq_xa, srqn);
	if (srq && (srq->xrcd != xrcd || !refcount_inc_not_zero(&srq->ref)))
		srq = NULL;
	rcu_read_unlock();
	return srq;
}

/*
 * sroce_xrc_srq_get_gen - sroce_xrc_srq_get() for the SRQ a message or a
 * receive WQE started with: NULL if @srqn now names another SRQ (numbers
 * come round again after 2^24 SRQs; @gen never does).
 */
struct sroce_srq *sroce_xrc_srq_get_gen(struct sroce_dev *sdev, u32 srqn,
					const struct ib_xrcd *xrcd, u64 gen)
{
	struct sroce_srq *srq = sroce_xrc_srq_get(sdev, srqn, xrcd);

	if (srq && srq->gen != gen) {
		sroce_srq_put(srq);
		srq = NULL;
	}
	return srq;
}

void sroce_srq_put(struct sroce_srq *srq)
{
	if (refcount_dec_and_test(&srq->ref))
		complete(&srq->done);
}

int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibsrq->device);
	struct sroce_srq *srq = to_ssrq(ibsrq);
	struct sroce_create_srq_resp resp = {};
	struct ib_srq_attr *attr = &init->attr;
	struct ib_ucontext *ibuc = NULL;
	struct sroce_wq *wq = &srq->wq;
	u32 entries;
	int err;

	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (init->srq_type != IB_SRQT_BASIC && init->srq_type != IB_SRQT_XRC)
		return -EOPNOTSUPP;
	if (init->srq_type == IB_SRQT_XRC &&
	    (!init->ext.xrc.xrcd || !init->ext.cq))
		return -EINVAL;
	if (!attr->max_wr || attr->max_wr > SROCE_MAX_SRQ_WR ||
	    attr->max_sge > SROCE_MAX_SRQ_SGE)
		return -EINVAL;
	entries = roundup_pow_of_two(attr->max_wr);
	if (atomic_inc_return(&sdev->num_srq) >
	    sroce_max_for(SROCE_MAX_SRQ, udata)) {
		err = -ENOMEM;
		goto err_count;
	}

	if (udata)
		ibuc = &rdma_udata_to_drv_context(udata, struct sroce_ucontext,
						  ibuc)->ibuc;
	srq->pd = to_spd(ibsrq->pd);
	spin_lock_init(&srq->lock);
	/*
	 * srq_limit means nothing at create (ibv_create_srq(3)): the limit is
	 * armed by modify_srq only, as on hardware RNICs.
	 */
	srq->limit = 0;
	refcount_set(&srq->ref, 1);
	init_completion(&srq->done);

	err = sroce_wq_alloc(ibuc, wq, entries,
			     sroce_srq_wqe_size(attr->max_sge));
	if (err)
		goto err_count;
	wq->max_sge = min_t(u32, (wq->wqe_size - sizeof(struct sroce_recv_wqe)) /
				 sizeof(struct sroce_sge), SROCE_MAX_SRQ_SGE);

	attr->max_wr = entries;
	attr->max_sge = wq->max_sge;

	if (init->srq_type == IB_SRQT_XRC) {
		/* Reserved now, found by requests once complete. */
		err = xa_alloc_cyclic(&sdev->srq_xa, &srq->srqn, NULL,
				      XA_LIMIT(SROCE_SRQN_MIN, SROCE_QPN_MASK),
				      &sdev->srq_next, GFP_KERNEL);
		if (err < 0)
			goto err_ring;
		xa_lock(&sdev->srq_xa);
		srq->gen = ++sdev->srq_gen;
		xa_unlock(&sdev->srq_xa);
		srq->xrcd = init->ext.xrc.xrcd;
		srq->cq = to_scq(init->ext.cq);
		ibsrq->ext.xrc.srq_num = srq->srqn;
	}
	if (udata) {
		resp.mmap_offset = sroce_mmap_offset(wq->mentry);
		resp.mmap_size = wq->mentry->size;
		resp.entries = entries;
		resp.wqe_size = wq->wqe_size;
		resp.srqn = srq->srqn;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_srqn;
	}
	if (srq->srqn)
		xa_store(&sdev->srq_xa, srq->srqn, srq, GFP_KERNEL);
	return 0;

err_srqn:
	if (srq->srqn)
		xa_erase(&sdev->srq_xa, srq->srqn);
err_ring:
	sroce_wq_free(wq);
err_count:
	atomic_dec(&sdev->num_srq);
	return err;
}

/*
 * Move the WQEs posted and not yet taken to @nwq, at the same counts, and
 * make @nwq's ring the SRQ's; @nwq gets the old ring (to be freed). Both
 * locks held. Return 0, -EINVAL if they do not fit, -EIO for a broken ring.
 */
static int sroce_srq_move(struct sroce_srq *srq, struct sroce_wq *nwq)
{
	struct sroce_wq *wq = &srq->wq;
	bool broken = false;
	u32 prod, i;

	prod = sroce_wq_ring_prod(wq, wq->cons, &broken);
	if (broken)
		return -EIO;
	if (prod - wq->cons > nwq->entries)
		return -EINVAL;
	for (i = wq->cons; i != prod; i++)
		memcpy(sroce_wq_slot(nwq, i), sroce_wq_slot(wq, i), wq->wqe_size);
	nwq->hdr->consumer = wq->cons;
	/* The slots before the index, as user space publishes them. */
	smp_store_release(&nwq->hdr->producer, prod);

	swap(wq->hdr, nwq->hdr);
	swap(wq->slots, nwq->slots);
	swap(wq->entries, nwq->entries);
	swap(wq->mentry, nwq->mentry);
	swap(wq->kbuf, nwq->kbuf);
	wq->prod = prod;
	return 0;
}

static int sroce_srq_resize(struct sroce_srq *srq, u32 max_wr,
			    struct ib_udata *udata, u64 resp_addr)
{
	struct sroce_create_srq_resp resp = {};
	struct ib_ucontext *ibuc = NULL;
	struct sroce_wq nwq = {};
	unsigned long flags;
	int err;

	if (!max_wr || max_wr > SROCE_MAX_SRQ_WR)
		return -EINVAL;
	if (udata) {
		if (!resp_addr)
			return -EINVAL;
		ibuc = &rdma_udata_to_drv_context(udata, struct sroce_ucontext,
						  ibuc)->ibuc;
	}
	err = sroce_wq_alloc(ibuc, &nwq, roundup_pow_of_two(max_wr),
			     srq->wq.wqe_size);
	if (err)
		return err;
	if (udata) {
		resp.mmap_offset = sroce_mmap_offset(nwq.mentry);
		resp.mmap_size = nwq.mentry->size;
		resp.entries = nwq.entries;
		resp.wqe_size = nwq.wqe_size;
		/* Before the switch: a failed copy leaves the SRQ as it was. */
		if (copy_to_user(u64_to_user_ptr(resp_addr), &resp,
				 sizeof(resp))) {
			err = -EFAULT;
			goto out;
		}
	}

	spin_lock_irqsave(&srq->wq.post_lock, flags);
	spin_lock(&srq->lock);
	err = sroce_srq_move(srq, &nwq);
	spin_unlock(&srq->lock);
	spin_unlock_irqrestore(&srq->wq.post_lock, flags);
out:
	sroce_wq_free(&nwq);	/* the new ring on failure, the old one on success */
	return err;
}

int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	struct sroce_modify_srq_cmd cmd = {};
	u32 entries = srq->wq.entries;
	int err;

	if (udata && udata->inlen) {
		if (udata->inlen > sizeof(cmd) &&
		    !ib_is_udata_cleared(udata, sizeof(cmd),
					 udata->inlen - sizeof(cmd)))
			return -EOPNOTSUPP;
		err = ib_copy_from_udata(&cmd, udata,
					 min(udata->inlen, sizeof(cmd)));
		if (err)
			return err;
	}
	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR) {
		if (!attr->max_wr || attr->max_wr > SROCE_MAX_SRQ_WR)
			return -EINVAL;
		entries = roundup_pow_of_two(attr->max_wr);
	}
	/*
	 * Both or neither: the limit is checked against the new size first;
	 * an armed limit is never left above the size.
	 */
	if ((mask & IB_SRQ_LIMIT) && attr->srq_limit > entries)
		return -EINVAL;
	if ((mask & IB_SRQ_MAX_WR) && !(mask & IB_SRQ_LIMIT) &&
	    READ_ONCE(srq->limit) > entries)
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR) {
		err = sroce_srq_resize(srq, attr->max_wr, udata, cmd.resp);
		if (err)
			return err;
	}
	if (mask & IB_SRQ_LIMIT) {
		spin_lock_bh(&srq->lock);
		srq->limit = attr->srq_limit;
		spin_unlock_bh(&srq->lock);
	}
	return 0;
}

int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	spin_lock_bh(&srq->lock);
	attr->max_wr = srq->wq.entries;
	attr->max_sge = srq->wq.max_sge;
	attr->srq_limit = srq->limit;
	spin_unlock_bh(&srq->lock);
	return 0;
}

int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	/*
	 * ib_core destroys the QPs on an SRQ first. XRC target QPs may live
	 * on: no new request finds the SRQ, and those that found it before
	 * drop their reference when their packet is done.
	 */
	if (srq->srqn) {
		xa_erase(&to_sdev(ibsrq->device)->srq_xa, srq->srqn);
		synchronize_rcu();
	}
	sroce_srq_put(srq);
	wait_for_completion(&srq->done);
	sroce_wq_free(&srq->wq);
	atomic_dec(&to_sdev(ibsrq->device)->num_srq);
	return 0;
}

/* Kernel SRQs: write receive WQEs into the ring. */
int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	if (!srq->wq.kbuf) {
		*bad_wr = wr;
		return -EINVAL;	/* user SRQs post through the mapped ring */
	}
	return sroce_wq_post_recv(&srq->wq, wr, bad_wr);
}

/* Raise the affiliated asynchronous event @type on @srq. */
void sroce_srq_event(struct sroce_srq *srq, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
		.event = type,
	};

	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

/**
 * sroce_srq_take - take the next receive WQE of an SRQ
 * @srq: the SRQ
 * @buf: receives a copy of the WQE slot
 * @bufsize: bytes of @buf, at least the SRQ's WQE size
 *
 * Callable from softirq.
 *
 * Return: 0, -ENOSPC if the SRQ is empty, -EIO if user space broke the ring.
 */
int sroce_srq_take(struct sroce_srq *srq, void *buf, u32 bufsize)
{
	struct sroce_wq *wq = &srq->wq;
	bool broken = false, event = false;
	unsigned long flags;
	u32 prod;
	int err = 0;

	spin_lock_irqsave(&srq->lock, flags);
	prod = sroce_wq_ring_prod(wq, wq->cons, &broken);
	if (broken) {
		err = -EIO;
	} else if (prod == wq->cons) {
		err = -ENOSPC;
	} else {
		memcpy(buf, sroce_wq_slot(wq, wq->cons),
		       min(bufsize, wq->wqe_size));
		wq->cons++;
		sroce_wq_publish_cons(wq);
		if (srq->limit && prod - wq->cons < srq->limit) {
			srq->limit = 0;
			event = true;
		}
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (event)
		sroce_srq_event(srq, IB_EVENT_SRQ_LIMIT_REACHED);
	return err;
}
