// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - completion queues.
 *
 * A user CQ is a ring shared with the process (layout and protocol in
 * include/uapi/rdma/sroce-abi.h): the kernel produces, the provider polls and
 * arms it without system calls. A kernel CQ keeps struct ib_wc entries in a
 * private ring and is polled and armed through the ib_device ops.
 *
 * cq->lock serialises producers (sroce_cq_post) against each other, against
 * kernel pollers and against destroy_cq. The only shared words the kernel
 * reads are consumer and arm; consumer is only used as a distance to the
 * kernel's own producer count, and any distance above the ring size counts
 * as an overrun, so a process scribbling on its ring hurts nobody else.
 *
 * resize_cq swaps in a new ring with the unpolled completions moved over.
 * CQ moderation and completion timestamps are not implemented (EOPNOTSUPP).
 */

#include <linux/log2.h>
#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"

static_assert(sizeof(struct sroce_cq_ring_hdr) == SROCE_CQ_RING_ENTRIES_OFF);
static_assert(sizeof(struct ib_uverbs_wc) == SROCE_CQ_RING_WC_SIZE);
static_assert(SROCE_CQ_RING_ENTRIES_OFF % SROCE_CQ_RING_WC_SIZE == 0);
static_assert(sizeof(struct sroce_create_cq_resp) == 24);
static_assert(IB_WC_GRH == 1 && IB_WC_WITH_IMM == 2);

static u32 sroce_ring_wc_flags(int flags)
{
	u32 out = 0;

	if (flags & IB_WC_GRH)
		out |= SROCE_WC_FLAG_GRH;
	if (flags & IB_WC_WITH_IMM)
		out |= SROCE_WC_FLAG_WITH_IMM;
	if (flags & IB_WC_IP_CSUM_OK)
		out |= SROCE_WC_FLAG_IP_CSUM_OK;
	if (flags & IB_WC_WITH_INVALIDATE)
		out |= SROCE_WC_FLAG_WITH_INV;
	return out;
}

/*
 * RoCE has no service level on the wire. For a UD receive, the sl of a user
 * completion says what carried the packet, as ConnectX NICs report it: bit 3
 * for a UDP header (RoCE v2), bits 2:0 the network header (1 IPv6, 2 IPv4).
 * UCX 1.13's ud_verbs reads it to find the destination address in the GRH
 * slot, and drops every packet whose address it then does not recognise.
 */
#define SROCE_WC_SL_ROCE_V2	0x8
#define SROCE_WC_SL_IPV6	0x1
#define SROCE_WC_SL_IPV4	0x2

static u8 sroce_ring_wc_sl(const struct ib_wc *wc)
{
	if (!(wc->wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE))
		return wc->sl;
	return SROCE_WC_SL_ROCE_V2 |
	       (wc->network_hdr_type == RDMA_NETWORK_IPV6 ? SROCE_WC_SL_IPV6 :
							     SROCE_WC_SL_IPV4);
}

static void sroce_wc_to_ring(struct ib_uverbs_wc *dst, const struct ib_wc *wc)
{
	struct ib_uverbs_wc uwc = {
		.wr_id = wc->wr_id,
		.status = wc->status,
		.opcode = wc->opcode,
		.vendor_err = wc->vendor_err,
		.byte_len = wc->byte_len,
		.ex.imm_data = wc->ex.imm_data,
		.qp_num = wc->qp ? wc->qp->qp_num : 0,
		.src_qp = wc->src_qp,
		.wc_flags = sroce_ring_wc_flags(wc->wc_flags),
		.pkey_index = wc->pkey_index,
		.slid = (u16)wc->slid,
		.sl = sroce_ring_wc_sl(wc),
		.dlid_path_bits = wc->dlid_path_bits,
		.port_num = wc->port_num,
	};

	memcpy(dst, &uwc, sizeof(uwc));
}

/* Arm bits for a request; NEXT also covers solicited completions. */
static u32 sroce_arm_bits(enum ib_cq_notify_flags flags)
{
	return (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	       SROCE_CQ_ARM_SOLICITED : SROCE_CQ_ARM_NEXT;
}

/*
 * Bounded compare-and-exchange loops: for a user CQ the word is shared, and
 * a process that keeps changing it must not keep the kernel spinning.
 */
#define SROCE_ARM_TRIES		8

static void sroce_cq_set_arm(struct sroce_cq *cq, u32 bits)
{
	u32 old;
	int i;

	for (i = 0; i < SROCE_ARM_TRIES; i++) {
		old = READ_ONCE(*cq->arm);
		if ((old & bits) == bits || cmpxchg(cq->arm, old, old | bits) == old)
			return;
	}
	WRITE_ONCE(*cq->arm, old | bits);
}

/* Does the arm word ask for an event for this completion? Then disarm. */
static bool sroce_cq_take_arm(struct sroce_cq *cq, bool solicited)
{
	u32 old;
	int i;

	for (i = 0; i < SROCE_ARM_TRIES; i++) {
		old = READ_ONCE(*cq->arm);
		if (!(old & SROCE_CQ_ARM_NEXT) &&
		    !(solicited && (old & SROCE_CQ_ARM_SOLICITED)))
			return false;
		if (cmpxchg(cq->arm, old, 0) == old)
			return true;
	}
	WRITE_ONCE(*cq->arm, 0);
	return true;
}

static u32 sroce_cq_consumer(struct sroce_cq *cq)
{
	return cq->hdr ? READ_ONCE(cq->hdr->consumer) : cq->cons;
}

/*
 * A user ring of @entries slots, and its mapping described to the process
 * (struct sroce_create_cq_resp, also resize_cq's reply). Return the entry
 * or an ERR_PTR().
 */
static struct sroce_mmap_entry *sroce_cq_user_ring(struct ib_udata *udata,
						   u32 entries)
{
	struct sroce_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct sroce_ucontext, ibuc);
	struct sroce_create_cq_resp resp = {};
	struct sroce_mmap_entry *mentry;
	int err;

	mentry = sroce_mmap_alloc(&uctx->ibuc, SROCE_CQ_RING_ENTRIES_OFF +
				  (size_t)entries * sizeof(struct ib_uverbs_wc));
	if (IS_ERR(mentry))
		return mentry;
	resp.mmap_offset = sroce_mmap_offset(mentry);
	resp.mmap_size = mentry->size;
	resp.entries = entries;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err) {
		sroce_mmap_remove(mentry);
		return ERR_PTR(err);
	}
	return mentry;
}

int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);
	u32 entries;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > SROCE_MAX_CQE)
		return -EINVAL;
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(struct sroce_create_cq_resp))
		return -EINVAL;

	if (atomic_inc_return(&sdev->num_cq) >
	    sroce_max_for(SROCE_MAX_CQ, udata)) {
		err = -ENOMEM;
		goto err_count;
	}

	entries = roundup_pow_of_two(attr->cqe);
	spin_lock_init(&cq->lock);
	cq->entries = entries;

	if (udata) {
		cq->mentry = sroce_cq_user_ring(udata, entries);
		if (IS_ERR(cq->mentry)) {
			err = PTR_ERR(cq->mentry);
			cq->mentry = NULL;
			goto err_count;
		}
		cq->hdr = cq->mentry->vaddr;
		cq->uwc = cq->mentry->vaddr + SROCE_CQ_RING_ENTRIES_OFF;
		cq->arm = &cq->hdr->arm;
	} else {
		cq->kwc = kvcalloc(entries, sizeof(*cq->kwc), SROCE_GFP_RING);
		if (!cq->kwc) {
			err = -ENOMEM;
			goto err_count;
		}
		cq->arm = &cq->kernel_arm;
	}

	ibcq->cqe = entries;
	return 0;

err_count:
	atomic_dec(&sdev->num_cq);
	return err;
}

/*
 * ib_core refuses to destroy a CQ that QPs still use, so once the transport
 * keeps its QPs' CQ pointers only while the QPs exist, no producer can reach
 * the CQ after this. The lock and the dead flag cover a producer that is
 * still finishing when the last QP went away.
 */
int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	cq->dead = true;
	spin_unlock_irqrestore(&cq->lock, flags);

	if (cq->mentry)
		sroce_mmap_remove(cq->mentry);	/* freed when unmapped */
	kvfree(cq->kwc);
	atomic_dec(&to_sdev(ibcq->device)->num_cq);
	return 0;
}

/* CQ overrun: the CQ is in error from now on (IBTA 11.4.2.1). */
static void sroce_cq_overrun(struct sroce_cq *cq)
{
	struct ib_event ev = {
		.device = cq->ibcq.device,
		.element.cq = &cq->ibcq,
		.event = IB_EVENT_CQ_ERR,
	};

	if (cq->overflowed)
		return;
	cq->overflowed = true;
	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

/**
 * sroce_cq_post - add a completion to a CQ
 * @cq: the completion queue
 * @wc: the completion; wc->qp must be set (its qp_num is reported)
 * @solicited: the completion is for a message with the solicited event bit
 *
 * Writes the entry, publishes it to the consumer (user space: store-release
 * of the ring's producer index) and raises the completion event if the CQ is
 * armed for it (the comp_handler runs under the CQ lock, interrupts off).
 * Callable from any context, including hard and soft interrupts.
 *
 * Return: 0; -ENOSPC if the CQ is full or was overrun before (the completion
 * is dropped, IB_EVENT_CQ_ERR is raised once); -EINVAL if the CQ is being
 * destroyed.
 */
int sroce_cq_post(struct sroce_cq *cq, const struct ib_wc *wc, bool solicited)
{
	unsigned long flags;
	u32 slot;
	int err = 0;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->dead) {
		err = -EINVAL;
		goto unlock;
	}
	if (cq->overflowed || cq->prod - sroce_cq_consumer(cq) >= cq->entries) {
		sroce_cq_overrun(cq);
		err = -ENOSPC;
		goto unlock;
	}

	slot = cq->prod & (cq->entries - 1);
	cq->prod++;
	if (cq->hdr) {
		sroce_wc_to_ring(&cq->uwc[slot], wc);
		/* Entry before index: pairs with the provider's load-acquire. */
		smp_store_release(&cq->hdr->producer, cq->prod);
	} else {
		cq->kwc[slot] = *wc;
	}

	/*
	 * Pairs with the full barrier of the consumer's arm operation. An
	 * unsuccessful completion counts as solicited (IBA 11.4.2.2).
	 */
	smp_mb();
	if (sroce_cq_take_arm(cq, solicited || wc->status != IB_WC_SUCCESS) &&
	    cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
unlock:
	spin_unlock_irqrestore(&cq->lock, flags);
	return err;
}

/* Kernel CQs only: user CQs are polled in user space. */
int sroce_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int n = 0;

	if (!cq->kwc)
		return -EOPNOTSUPP;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num && cq->cons != cq->prod) {
		wc[n++] = cq->kwc[cq->cons & (cq->entries - 1)];
		cq->cons++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/*
 * Also reached for user CQs through uverbs' REQ_NOTIFY_CQ command; the arm
 * word is the same one the provider sets directly.
 */
int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	sroce_cq_set_arm(cq, sroce_arm_bits(flags));
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    cq->prod != sroce_cq_consumer(cq))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/*
 * Move the outstanding completions of @cq into a ring of @entries slots.
 * Counters keep their values (slot = count & (entries - 1) in either ring),
 * so neither the kernel's producer count nor the consumer's count changes.
 * The new ring (*@mentryp for a user CQ, *@kwcp for a kernel CQ) replaces
 * the old one, which is handed back through the same pointer. Called with
 * cq->lock held. Return: 0, or -EINVAL if the completions do not fit (or a
 * user consumer count is further behind than the ring holds).
 */
static int sroce_cq_move(struct sroce_cq *cq, u32 entries,
			 struct sroce_mmap_entry **mentryp, struct ib_wc **kwcp)
{
	struct sroce_mmap_entry *mentry = *mentryp;
	struct ib_wc *kwc = *kwcp;
	u32 cons = sroce_cq_consumer(cq);
	u32 n = cq->prod - cons;
	u32 i;

	if (n > cq->entries || n > entries)
		return -EINVAL;

	for (i = 0; i < n; i++) {
		u32 from = (cons + i) & (cq->entries - 1);
		u32 to = (cons + i) & (entries - 1);

		if (kwc)
			kwc[to] = cq->kwc[from];
		else
			memcpy(mentry->vaddr + SROCE_CQ_RING_ENTRIES_OFF +
			       (size_t)to * sizeof(struct ib_uverbs_wc),
			       &cq->uwc[from], sizeof(struct ib_uverbs_wc));
	}

	if (kwc) {
		swap(cq->kwc, *kwcp);
	} else {
		struct sroce_cq_ring_hdr *hdr = mentry->vaddr;

		hdr->consumer = cons;
		hdr->arm = READ_ONCE(cq->hdr->arm);
		/* Entries before index, as in sroce_cq_post(). */
		smp_store_release(&hdr->producer, cq->prod);
		cq->hdr = hdr;
		cq->uwc = mentry->vaddr + SROCE_CQ_RING_ENTRIES_OFF;
		cq->arm = &hdr->arm;
		swap(cq->mentry, *mentryp);
	}
	cq->entries = entries;
	return 0;
}

/*
 * Grow or shrink a CQ. A user CQ gets a new ring to map (the reply is the
 * create reply's layout); the old one stops receiving entries at once, and
 * the process must not poll it any more (the provider holds the CQ's lock
 * across the call, so its pollers wait and then continue on the new ring).
 * The completions not yet polled move along with their counts.
 */
int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_mmap_entry *mentry = NULL;
	struct ib_wc *kwc = NULL;
	unsigned long flags;
	u32 entries;
	int err;

	if (cqe < 1 || cqe > SROCE_MAX_CQE)
		return -EINVAL;
	if (!udata != !cq->hdr)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(struct sroce_create_cq_resp))
		return -EINVAL;
	entries = roundup_pow_of_two(cqe);

	if (udata) {
		/* Replied before the switch: a failed copy changes nothing. */
		mentry = sroce_cq_user_ring(udata, entries);
		if (IS_ERR(mentry))
			return PTR_ERR(mentry);
	} else {
		kwc = kvcalloc(entries, sizeof(*kwc), SROCE_GFP_RING);
		if (!kwc)
			return -ENOMEM;
	}

	spin_lock_irqsave(&cq->lock, flags);
	err = cq->dead ? -EINVAL : sroce_cq_move(cq, entries, &mentry, &kwc);
	spin_unlock_irqrestore(&cq->lock, flags);
	if (!err)
		ibcq->cqe = entries;

	/* The new ring on failure, the old one on success. */
	if (mentry)
		sroce_mmap_remove(mentry);
	kvfree(kwc);
	return err;
}
