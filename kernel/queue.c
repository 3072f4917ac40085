// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - work queue rings, and memory shared with user space:
 * vmalloc areas offered to the process through ib_core's mmap entries.
 *
 * A ring (SQ, RQ, SRQ; layout in sroce-abi.h) of a user queue lives in such
 * an area; a kernel queue has the same layout in kernel memory, and the
 * verbs post_send / post_recv / post_srq_recv write WQEs into it the way the
 * provider does for user queues, so the transport has one code path.
 *
 * An area lives as long as its rdma_user_mmap_entry: the owning object
 * removes the entry when it is destroyed, and ib_core calls mmap_free once
 * no mmap() can find it any more. The area is freed there. Mappings that
 * still exist keep their pages (vm_insert_page() takes a reference on every
 * page it maps), so a process that unmaps late only ever sees memory nobody
 * else uses. Areas and kernel rings are charged to the memory cgroup of the
 * process (or kernel context) that creates the object.
 */

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "sroce.h"

/**
 * sroce_mmap_alloc - allocate a zeroed area user space can map
 * @ibuc: the user context the area belongs to
 * @size: bytes; rounded up to whole pages
 *
 * Return: the entry (vaddr is the kernel address), or an ERR_PTR().
 */
struct sroce_mmap_entry *sroce_mmap_alloc(struct ib_ucontext *ibuc,
					  size_t size)
{
	struct sroce_mmap_entry *entry;
	int err;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL_ACCOUNT);
	if (!entry)
		return ERR_PTR(-ENOMEM);

	entry->size = PAGE_ALIGN(size);
	/* Zeroed, charged to the memory cgroup of the process (sroce.h). */
	entry->vaddr = __vmalloc(entry->size, SROCE_GFP_RING | __GFP_ZERO);
	if (!entry->vaddr) {
		kfree(entry);
		return ERR_PTR(-ENOMEM);
	}

	err = rdma_user_mmap_entry_insert(ibuc, &entry->rdma, entry->size);
	if (err) {
		vfree(entry->vaddr);
		kfree(entry);
		return ERR_PTR(err);
	}
	return entry;
}

/* The offset user space passes to mmap() to map @entry. */
u64 sroce_mmap_offset(const struct sroce_mmap_entry *entry)
{
	return rdma_user_mmap_get_offset(&entry->rdma);
}

/* No new mappings of @entry; freed by sroce_mmap_free() when unused. */
void sroce_mmap_remove(struct sroce_mmap_entry *entry)
{
	rdma_user_mmap_entry_remove(&entry->rdma);
}

void sroce_mmap_free(struct rdma_user_mmap_entry *rentry)
{
	struct sroce_mmap_entry *entry =
		container_of(rentry, struct sroce_mmap_entry, rdma);

	vfree(entry->vaddr);
	kfree(entry);
}

/*
 * Map the area's pages one by one (vm_insert_page() takes a reference on
 * every page, so a mapping outlives the area's entry safely). The area is
 * plain vmalloc memory, not vmalloc_user(), so that it is accounted.
 */
static int sroce_mmap_pages(struct vm_area_struct *vma,
			    struct sroce_mmap_entry *entry)
{
	unsigned long off;
	int err;

	for (off = 0; off < entry->size; off += PAGE_SIZE) {
		err = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page((u8 *)entry->vaddr + off));
		if (err)
			return err;
	}
	return 0;
}

int sroce_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rentry;
	struct sroce_mmap_entry *entry;
	int err;

	/* Checks VM_SHARED and that the size is exactly the entry's. */
	rentry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rentry)
		return -EINVAL;
	entry = container_of(rentry, struct sroce_mmap_entry, rdma);

	if (vma->vm_flags & VM_EXEC) {
		err = -EPERM;
		goto out;
	}
	sroce_vm_flags_clear(vma, VM_MAYEXEC);
	err = sroce_mmap_pages(vma, entry);
out:
	rdma_user_mmap_entry_put(rentry);
	return err;
}

/* ------------------------------------------------------------------ rings */

/**
 * sroce_wq_alloc - allocate a work queue ring
 * @ibuc: user context for a user queue (mapped by the process), NULL for a
 *	kernel queue
 * @wq: the queue; entries, wqe_size and the ring pointers are set
 * @entries: slots, a power of two
 * @wqe_size: bytes per slot, a power of two
 *
 * Return: 0 or -ENOMEM.
 */
int sroce_wq_alloc(struct ib_ucontext *ibuc, struct sroce_wq *wq, u32 entries,
		   u32 wqe_size)
{
	size_t size = SROCE_WQ_SLOTS_OFF + (size_t)entries * wqe_size;
	void *ring;

	wq->entries = entries;
	wq->wqe_size = wqe_size;
	spin_lock_init(&wq->post_lock);
	if (ibuc) {
		wq->mentry = sroce_mmap_alloc(ibuc, size);
		if (IS_ERR(wq->mentry)) {
			int err = PTR_ERR(wq->mentry);

			wq->mentry = NULL;
			return err;
		}
		ring = wq->mentry->vaddr;
	} else {
		wq->kbuf = kvzalloc(size, SROCE_GFP_RING);
		if (!wq->kbuf)
			return -ENOMEM;
		ring = wq->kbuf;
	}
	wq->hdr = ring;
	wq->slots = (u8 *)ring + SROCE_WQ_SLOTS_OFF;
	return 0;
}

void sroce_wq_free(struct sroce_wq *wq)
{
	if (wq->mentry)
		sroce_mmap_remove(wq->mentry);
	kvfree(wq->kbuf);
	wq->mentry = NULL;
	wq->kbuf = NULL;
	wq->hdr = NULL;
	wq->slots = NULL;
}

/*
 * Read the producer index user space published, with acquire semantics so
 * that the WQEs before it are visible. @from is how far the kernel has read
 * the ring already (the SQ's req.fetched count, the consumer count of a receive
 * ring). A well-behaved process publishes a producer in [from, consumer +
 * entries]; anything else (a rewind below what was read, a jump past a full
 * ring) sets *broken and returns @from, so that no loop over the ring runs
 * past its size.
 */
u32 sroce_wq_ring_prod(struct sroce_wq *wq, u32 from, bool *broken)
{
	/* Acquire: the WQEs before the index, see sroce-abi.h. */
	u32 p = smp_load_acquire(&wq->hdr->producer);

	if (p - from > wq->entries - (from - wq->cons)) {
		*broken = true;
		return from;
	}
	wq->prod = p;
	return p;
}

void sroce_wq_publish_cons(struct sroce_wq *wq)
{
	/* Release: we are done with the slots before it (the producer reuses them). */
	smp_store_release(&wq->hdr->consumer, wq->cons);
}

/* Slot @idx (any counter value) of @wq's ring. */
void *sroce_wq_slot(struct sroce_wq *wq, u32 idx)
{
	return wq->slots + (size_t)(idx & (wq->entries - 1)) * wq->wqe_size;
}

static_assert(sizeof(struct ib_sge) == sizeof(struct sroce_sge));
static_assert(offsetof(struct ib_sge, addr) == offsetof(struct sroce_sge, addr));
static_assert(offsetof(struct ib_sge, length) ==
	      offsetof(struct sroce_sge, length));
static_assert(offsetof(struct ib_sge, lkey) == offsetof(struct sroce_sge, lkey));

/*
 * Kernel producers (post_send, post_recv, post_srq_recv) write WQEs between
 * these two: post_lock serialises them, and the producer index is
 * published with release semantics, so the transport's acquire load in
 * sroce_wq_ring_prod() sees the WQEs before it.
 */
static u32 sroce_wq_post_begin(struct sroce_wq *wq, unsigned long *flags)
{
	spin_lock_irqsave(&wq->post_lock, *flags);
	return wq->hdr->producer;
}

static void sroce_wq_post_end(struct sroce_wq *wq, u32 prod,
			      unsigned long flags)
{
	smp_store_release(&wq->hdr->producer, prod);	/* see above */
	spin_unlock_irqrestore(&wq->post_lock, flags);
}

/**
 * sroce_wq_post_recv - write receive work requests into a kernel ring
 * @wq: a kernel RQ or SRQ
 * @wr: the chain
 * @bad_wr: set to the first one not posted
 *
 * Any context. The responder sees the WQEs once producer moves.
 *
 * Return: 0, -ENOMEM if the ring is full, -EINVAL for too many SGEs.
 */
int sroce_wq_post_recv(struct sroce_wq *wq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	unsigned long flags;
	int err = 0;
	u32 prod = sroce_wq_post_begin(wq, &flags);

	for (; wr; wr = wr->next) {
		struct sroce_recv_wqe *w;

		if (prod - READ_ONCE(wq->hdr->consumer) >= wq->entries) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge > wq->max_sge) {
			err = -EINVAL;
			break;
		}
		w = sroce_wq_slot(wq, prod);
		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		w->reserved = 0;
		memcpy(w + 1, wr->sg_list, wr->num_sge * sizeof(struct ib_sge));
		prod++;
	}
	sroce_wq_post_end(wq, prod, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

/*
 * Write one kernel work request into slot @prod of @sq (not yet published).
 * Return 0, -ENOMEM (queue full) or -EINVAL.
 */
static int sroce_wq_write_send(struct sroce_wq *sq, bool ud,
			       const struct ib_send_wr *wr, u32 prod)
{
	struct sroce_send_wqe *w;
	struct sroce_reg_wqe *reg;
	u8 *data;
	int i;

	if (prod - READ_ONCE(sq->hdr->consumer) >= sq->entries)
		return -ENOMEM;
	w = sroce_wq_slot(sq, prod);
	data = (u8 *)(w + 1);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags & (IB_SEND_FENCE | IB_SEND_SIGNALED |
					  IB_SEND_SOLICITED | IB_SEND_INLINE);

	switch (wr->opcode) {
	case IB_WR_SEND:
		break;
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		memcpy(&w->imm_data, &wr->ex.imm_data, 4);
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		w->imm_data = wr->ex.invalidate_rkey;
		break;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_READ:
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		w->wr.atomic.remote_addr = atomic_wr(wr)->remote_addr;
		w->wr.atomic.compare_add = atomic_wr(wr)->compare_add;
		w->wr.atomic.swap = atomic_wr(wr)->swap;
		w->wr.atomic.rkey = atomic_wr(wr)->rkey;
		break;
	case IB_WR_REG_MR:
		reg = (struct sroce_reg_wqe *)w->wr.raw;
		if ((reg_wr(wr)->key >> 8) != (reg_wr(wr)->mr->lkey >> 8))
			return -EINVAL;
		reg->key = reg_wr(wr)->key;
		reg->access = reg_wr(wr)->access;
		w->send_flags &= ~IB_SEND_INLINE;
		return 0;
	default:
		return -EINVAL;
	}
	if (wr->opcode == IB_WR_RDMA_WRITE ||
	    wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
	    wr->opcode == IB_WR_RDMA_READ) {
		w->wr.rdma.remote_addr = rdma_wr(wr)->remote_addr;
		w->wr.rdma.rkey = rdma_wr(wr)->rkey;
	}
	if (ud) {
		if (!ud_wr(wr)->ah)
			return -EINVAL;
		w->wr.ud.ah_num = sroce_ah_num(ud_wr(wr)->ah);
		w->wr.ud.remote_qpn = ud_wr(wr)->remote_qpn;
		w->wr.ud.remote_qkey = ud_wr(wr)->remote_qkey;
	}
	if (wr->opcode == IB_WR_LOCAL_INV)
		return 0;

	if (wr->num_sge < 0)
		return -EINVAL;
	/* IB_SEND_INLINE means nothing to a READ or an atomic (as on mlx5) */
	if (sroce_op_is_rd(wr->opcode))
		w->send_flags &= ~IB_SEND_INLINE;
	if (w->send_flags & IB_SEND_INLINE) {
		u32 len = 0;

		for (i = 0; i < wr->num_sge; i++) {
			const struct ib_sge *sge = &wr->sg_list[i];

			if (sge->length > sq->max_inline - len)
				return -EINVAL;
			memcpy(data + len, (void *)(uintptr_t)sge->addr,
			       sge->length);
			len += sge->length;
		}
		w->inline_len = len;
	} else {
		if (wr->num_sge > sq->max_sge)
			return -EINVAL;
		w->num_sge = wr->num_sge;
		memcpy(data, wr->sg_list, wr->num_sge * sizeof(struct ib_sge));
	}
	return 0;
}

/**
 * sroce_wq_post_send - write send work requests into a kernel SQ ring
 * @sq: the send queue of a kernel QP
 * @ud: the QP is UD (work requests carry an AH)
 * @wr: the chain
 * @bad_wr: set to the first one not posted
 *
 * Any context. The requester sees the WQEs once producer moves.
 *
 * Return: 0, -ENOMEM if the ring is full, -EINVAL for a bad work request.
 */
int sroce_wq_post_send(struct sroce_wq *sq, bool ud,
		       const struct ib_send_wr *wr,
		       const struct ib_send_wr **bad_wr)
{
	unsigned long flags;
	int err = 0;
	u32 prod = sroce_wq_post_begin(sq, &flags);

	for (; wr; wr = wr->next) {
		err = sroce_wq_write_send(sq, ud, wr, prod);
		if (err) {
			*bad_wr = wr;
			break;
		}
		prod++;
	}
	sroce_wq_post_end(sq, prod, flags);
	return err;
}
