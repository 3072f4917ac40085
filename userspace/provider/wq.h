/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Work queue rings (include/uapi/rdma/sroce-abi.h, "Work queues"): geometry
 * checks, slot reservation, producer publication, the send doorbell, and the
 * encoding of send and receive WQEs.
 *
 * Header-only. It uses libibverbs' public types but calls nothing in
 * libibverbs, so the unit tests drive it on plain memory. Nothing here locks:
 * the caller serialises the producers of one ring.
 */
#ifndef SROCE_PROVIDER_WQ_H
#define SROCE_PROVIDER_WQ_H

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/sroce-abi.h>

#include "ibverbs_private.h"

namespace sroce::wq {

/* ------------------------------------------------------------------------ */
/* The shared layout, pinned.                                                */

static_assert(sizeof(sroce_wq_hdr) == SROCE_WQ_SLOTS_OFF);
static_assert(offsetof(sroce_wq_hdr, producer) == 0);
static_assert(offsetof(sroce_wq_hdr, consumer) == SROCE_WQ_LINE);
static_assert(offsetof(sroce_wq_hdr, sq_idle) == 2 * SROCE_WQ_LINE);
static_assert(sizeof(sroce_send_wqe) == 64);
static_assert(offsetof(sroce_send_wqe, imm_data) == 24);
static_assert(offsetof(sroce_send_wqe, wr) == 32);
static_assert(sizeof(sroce_recv_wqe) == 16);

/* SGEs are copied from ibv_sge arrays as they are. */
static_assert(sizeof(sroce_sge) == sizeof(struct ibv_sge));
static_assert(offsetof(sroce_sge, addr) == offsetof(struct ibv_sge, addr));
static_assert(offsetof(sroce_sge, length) == offsetof(struct ibv_sge, length));
static_assert(offsetof(sroce_sge, lkey) == offsetof(struct ibv_sge, lkey));

/* WQE opcodes are enum ib_uverbs_wr_opcode, i.e. libibverbs' values. */
static_assert(int{IBV_WR_RDMA_WRITE} == int{IB_UVERBS_WR_RDMA_WRITE});
static_assert(int{IBV_WR_RDMA_WRITE_WITH_IMM} == int{IB_UVERBS_WR_RDMA_WRITE_WITH_IMM});
static_assert(int{IBV_WR_SEND} == int{IB_UVERBS_WR_SEND});
static_assert(int{IBV_WR_SEND_WITH_IMM} == int{IB_UVERBS_WR_SEND_WITH_IMM});
static_assert(int{IBV_WR_RDMA_READ} == int{IB_UVERBS_WR_RDMA_READ});
static_assert(int{IBV_WR_ATOMIC_CMP_AND_SWP} == int{IB_UVERBS_WR_ATOMIC_CMP_AND_SWP});
static_assert(int{IBV_WR_ATOMIC_FETCH_AND_ADD} == int{IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD});
static_assert(int{IBV_WR_SEND_WITH_INV} == int{IB_UVERBS_WR_SEND_WITH_INV});
static_assert(int{IBV_WR_BIND_MW} == int{IB_UVERBS_WR_BIND_MW});
static_assert(int{IBV_WR_LOCAL_INV} == int{IB_UVERBS_WR_LOCAL_INV});

/* WQE send_flags are libibverbs' IBV_SEND_* bits. */
static_assert(unsigned{IBV_SEND_FENCE} == SROCE_SEND_FENCE &&
	      unsigned{IBV_SEND_SIGNALED} == SROCE_SEND_SIGNALED &&
	      unsigned{IBV_SEND_SOLICITED} == SROCE_SEND_SOLICITED &&
	      unsigned{IBV_SEND_INLINE} == SROCE_SEND_INLINE);

inline constexpr uint32_t kSendHdr = sizeof(sroce_send_wqe);
inline constexpr uint32_t kRecvHdr = sizeof(sroce_recv_wqe);
inline constexpr uint32_t kSge = sizeof(sroce_sge);
inline constexpr unsigned int kSendFlags =
	SROCE_SEND_FENCE | SROCE_SEND_SIGNALED | SROCE_SEND_SOLICITED | SROCE_SEND_INLINE;

/* ------------------------------------------------------------------------ */
/* Geometry.                                                                 */

constexpr bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Largest mapping accepted from the kernel for one queue. */
inline constexpr uint64_t kMaxMapSize = uint64_t{1} << 32;

/*
 * A ring description from a create response. entries == 0 means "no ring"
 * and then requires map_size == 0. Otherwise entries and wqe_size must be
 * powers of two, a slot must hold at least min_wqe bytes, and the mapping
 * must cover the header and every slot.
 */
constexpr bool geometry_ok(uint64_t map_size, uint32_t entries,
			   uint32_t wqe_size, uint32_t min_wqe)
{
	if (!entries)
		return map_size == 0;
	if (!is_pow2(entries) || entries > (uint32_t{1} << 31) ||
	    !is_pow2(wqe_size) || wqe_size < min_wqe)
		return false;
	const uint64_t need = SROCE_WQ_SLOTS_OFF + uint64_t{entries} * wqe_size;
	return map_size >= need && map_size <= kMaxMapSize;
}

/* SGEs and inline bytes that fit in a send slot of wqe_size bytes. */
constexpr uint32_t send_slot_sges(uint32_t wqe_size)
{
	return wqe_size > kSendHdr ? (wqe_size - kSendHdr) / kSge : 0;
}

constexpr uint32_t send_slot_inline(uint32_t wqe_size)
{
	return wqe_size > kSendHdr ? wqe_size - kSendHdr : 0;
}

constexpr uint32_t recv_slot_sges(uint32_t wqe_size)
{
	return wqe_size > kRecvHdr ? (wqe_size - kRecvHdr) / kSge : 0;
}

/* ------------------------------------------------------------------------ */
/* The producer side of a ring.                                              */

/*
 * prod is the authoritative producer count (only user space writes the
 * shared word, and only from here). room counts slots known to be free
 * without looking at the kernel's consumer again; depth is how many WQEs may
 * be outstanding (the queue's max_wr, never more than entries).
 */
struct ring {
	sroce_wq_hdr *hdr = nullptr;
	unsigned char *slots = nullptr;
	uint32_t entries = 0;
	uint32_t depth = 0;
	uint32_t wqe_shift = 0;
	uint32_t prod = 0;
	uint32_t room = 0;
};

/* map may be NULL when entries is 0: the ring then always reads full. */
inline void attach(ring &r, void *map, uint32_t entries, uint32_t wqe_size,
		   uint32_t depth)
{
	r = ring{};
	if (!map || !entries)
		return;
	r.hdr = static_cast<sroce_wq_hdr *>(map);
	r.slots = static_cast<unsigned char *>(map) + SROCE_WQ_SLOTS_OFF;
	r.entries = entries;
	r.depth = depth < entries ? depth : entries;
	r.wqe_shift = static_cast<uint32_t>(std::countr_zero(wqe_size));
	r.prod = __atomic_load_n(&r.hdr->producer, __ATOMIC_RELAXED);
}

/*
 * Is there a free slot at prod? Reads the kernel's consumer (load-acquire,
 * so our writes to a slot cannot pass the kernel's reads of it) only when
 * the slots known to be free are used up. A consumer that is not within
 * depth behind prod reads as "full".
 */
inline bool reserve(ring &r)
{
	if (r.room)
		return true;
	if (!r.depth)
		return false;
	const uint32_t cons = __atomic_load_n(&r.hdr->consumer, __ATOMIC_ACQUIRE);
	const uint32_t used = r.prod - cons;
	r.room = used < r.depth ? r.depth - used : 0;
	return r.room != 0;
}

/* The slot of the next WQE (call reserve() first). */
inline void *slot(const ring &r)
{
	return r.slots + (static_cast<size_t>(r.prod & (r.entries - 1)) << r.wqe_shift);
}

/* The WQE in the slot returned by slot() is complete. */
inline void advance(ring &r)
{
	r.prod++;
	r.room--;
}

/* Forget the WQEs written since prod was start (not yet published). */
inline void rollback(ring &r, uint32_t start)
{
	r.room += r.prod - start;
	r.prod = start;
}

/* Hand every WQE written so far to the kernel. */
inline void publish(ring &r)
{
	__atomic_store_n(&r.hdr->producer, r.prod, __ATOMIC_RELEASE);
}

/*
 * After publish(): does the kernel's send engine need a doorbell? The full
 * barrier orders our producer store before the sq_idle load; it pairs with
 * the kernel's barrier between storing sq_idle = 1 and reading producer.
 */
inline bool need_doorbell(const ring &r)
{
	std::atomic_thread_fence(std::memory_order_seq_cst);
	return __atomic_load_n(&r.hdr->sq_idle, __ATOMIC_RELAXED) != 0;
}

/*
 * The send doorbell: the legacy POST_SEND command with no work requests,
 * written to the context's command fd. Returns 0 or an errno value.
 */
inline int ring_doorbell(int cmd_fd, uint32_t qp_handle)
{
	struct ib_uverbs_post_send_resp resp = {};
	abi::cmd_post_send cmd = {};

	cmd.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.response = reinterpret_cast<uintptr_t>(&resp);
	cmd.qp_handle = qp_handle;
	cmd.wr_count = 0;
	cmd.sge_count = 0;
	cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	for (;;) {
		const ssize_t n = write(cmd_fd, &cmd, sizeof(cmd));
		if (n == static_cast<ssize_t>(sizeof(cmd)))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? errno : EIO;
	}
}
static_assert(sizeof(abi::cmd_post_send) % 4 == 0 &&
	      sizeof(struct ib_uverbs_post_send_resp) % 4 == 0);

/* ------------------------------------------------------------------------ */
/* Send WQEs.                                                                */

/* What a QP's send queue accepts; max_sge and max_inline fit the slot. */
struct send_caps {
	uint32_t qp_type = 0;		/* IBV_QPT_RC, _UC, _UD or _XRC_SEND */
	uint32_t max_sge = 0;
	uint32_t max_inline = 0;
	bool sig_all = false;		/* every WQE is signaled */
};

/*
 * Opcodes each QP type can carry (IBTA: atomics, reads, invalidate on RC).
 * XRC is RC with a target SRQ number in every request: the same set.
 */
constexpr bool opcode_allowed(uint32_t qp_type, uint32_t opcode)
{
	const bool rc = qp_type == IBV_QPT_RC || qp_type == IBV_QPT_XRC_SEND;
	const bool uc = qp_type == IBV_QPT_UC;
	const bool ud = qp_type == IBV_QPT_UD;

	switch (opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return rc || uc || ud;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		return rc || uc;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_ATOMIC_WRITE:
		return rc;
	default:
		return false;
	}
}

/* Opcodes whose payload may be carried inline. */
constexpr bool opcode_takes_inline(uint32_t opcode)
{
	switch (opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return true;
	default:
		return false;
	}
}

inline unsigned char *send_payload(sroce_send_wqe *w)
{
	return reinterpret_cast<unsigned char *>(w) + kSendHdr;
}

/*
 * Starts a send WQE in a free slot: checks opcode and flags against the QP,
 * clears the header (xrc_srqn is 0 until put_xrc) and fills wr_id, opcode
 * and send_flags (plus SIGNALED on an sq_sig_all QP; INLINE only for an
 * opcode with a payload). No SGEs, no inline data. Returns 0 or EINVAL.
 */
inline int put_send_header(sroce_send_wqe *w, const send_caps &c, uint64_t wr_id,
			   uint32_t opcode, unsigned int flags)
{
	if (!opcode_allowed(c.qp_type, opcode) || (flags & ~kSendFlags))
		return EINVAL;
	/* As ConnectX NICs do: IBV_SEND_INLINE means nothing to an operation
	 * without a payload of its own, and is ignored there. */
	if (!opcode_takes_inline(opcode))
		flags &= ~unsigned{IBV_SEND_INLINE};
	std::memset(w, 0, kSendHdr);
	w->wr_id = wr_id;
	w->opcode = opcode;
	w->send_flags = flags | (c.sig_all ? unsigned{IBV_SEND_SIGNALED} : 0u);
	return 0;
}

/* SGE list (replaces any inline payload). Returns 0 or EINVAL. */
inline int put_sges(sroce_send_wqe *w, const send_caps &c,
		    const struct ibv_sge *sg, size_t n)
{
	if (n > c.max_sge)
		return EINVAL;
	if (n)
		std::memcpy(send_payload(w), sg, n * kSge);
	w->num_sge = static_cast<uint32_t>(n);
	w->inline_len = 0;
	w->send_flags &= ~static_cast<uint32_t>(IBV_SEND_INLINE);
	return 0;
}

inline const void *buf_addr(const struct ibv_sge &s)
{
	return reinterpret_cast<const void *>(static_cast<uintptr_t>(s.addr));
}

inline size_t buf_len(const struct ibv_sge &s)
{
	return s.length;
}

inline const void *buf_addr(const struct ibv_data_buf &b)
{
	return b.addr;
}

inline size_t buf_len(const struct ibv_data_buf &b)
{
	return b.length;
}

/*
 * Inline payload gathered from n buffers (ibv_sge or ibv_data_buf), copied
 * into the slot; replaces any SGE list. Returns 0 or EINVAL (opcode without
 * payload, or more than max_inline bytes in total).
 */
template <typename Buf>
inline int put_inline(sroce_send_wqe *w, const send_caps &c, const Buf *bufs,
		      size_t n)
{
	if (!opcode_takes_inline(w->opcode))
		return EINVAL;
	unsigned char *dst = send_payload(w);
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		const size_t len = buf_len(bufs[i]);
		if (len > c.max_inline - total)
			return EINVAL;
		if (len)
			std::memcpy(dst + total, buf_addr(bufs[i]), len);
		total += len;
	}
	w->num_sge = 0;
	w->inline_len = static_cast<uint32_t>(total);
	w->send_flags |= IBV_SEND_INLINE;
	return 0;
}

inline void put_rdma(sroce_send_wqe *w, uint32_t rkey, uint64_t remote_addr)
{
	w->wr.rdma.remote_addr = remote_addr;
	w->wr.rdma.rkey = rkey;
}

inline void put_atomic(sroce_send_wqe *w, uint32_t rkey, uint64_t remote_addr,
		       uint64_t compare_add, uint64_t swap)
{
	w->wr.atomic.remote_addr = remote_addr;
	w->wr.atomic.compare_add = compare_add;
	w->wr.atomic.swap = swap;
	w->wr.atomic.rkey = rkey;
}

inline void put_ud(sroce_send_wqe *w, uint32_t ah_num, uint32_t remote_qpn,
		   uint32_t remote_qkey)
{
	w->wr.ud.ah_num = ah_num;
	w->wr.ud.remote_qpn = remote_qpn;
	w->wr.ud.remote_qkey = remote_qkey;
}

/* XRC SRQ numbers are 24 bits, like QP numbers (the XRCETH's SRQ field). */
inline constexpr uint32_t kXrcSrqnMask = 0xffffff;

/*
 * The XRC SRQ at the target (XRC_SEND QPs only). Returns 0 or EINVAL (not
 * an XRC_SEND QP, or not a 24-bit number).
 */
inline int put_xrc(sroce_send_wqe *w, const send_caps &c, uint32_t remote_srqn)
{
	if (c.qp_type != IBV_QPT_XRC_SEND || (remote_srqn & ~kXrcSrqnMask))
		return EINVAL;
	w->xrc_srqn = remote_srqn;
	return 0;
}

/* Immediate data stays in network byte order, as libibverbs carries it. */
inline void put_imm(sroce_send_wqe *w, __be32 imm)
{
	uint32_t raw;
	std::memcpy(&raw, &imm, sizeof(raw));
	w->imm_data = raw;
}

/* The rkey to invalidate, host order, in the imm_data word. */
inline void put_invalidate(sroce_send_wqe *w, uint32_t rkey)
{
	w->imm_data = rkey;
}

/* Rights a window can grant; LOCAL_WRITE is accepted and means nothing. */
inline constexpr unsigned int kMwAccess = IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE |
					  IBV_ACCESS_REMOTE_READ |
					  IBV_ACCESS_REMOTE_ATOMIC;

/*
 * The body of a BIND_MW WQE (sroce-abi.h): the window's current rkey names
 * it, new_rkey may change the low 8 bits only. Without a region only a
 * type 1 window can be bound, with length 0 (unbound). Zero-based windows
 * are not supported. Returns 0, EINVAL or EOPNOTSUPP.
 */
inline int put_bind(sroce_send_wqe *w, const struct ibv_mw *mw,
		    uint32_t new_rkey, const struct ibv_mw_bind_info &b,
		    bool type1)
{
	if (!mw || (type1 != (mw->type == IBV_MW_TYPE_1)) ||
	    (new_rkey >> 8) != (mw->rkey >> 8))
		return EINVAL;
	if (b.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EOPNOTSUPP;
	if ((b.mw_access_flags & ~kMwAccess) ||
	    (!b.mr && (!type1 || b.addr || b.length)))
		return EINVAL;
	w->imm_data = mw->rkey;
	w->wr.bind.addr = b.addr;
	w->wr.bind.length = b.length;
	w->wr.bind.mr_lkey = b.mr ? b.mr->lkey : 0;
	w->wr.bind.new_rkey = new_rkey;
	w->wr.bind.access = b.mw_access_flags;
	w->wr.bind.flags = type1 ? SROCE_BIND_TYPE_1 : 0;
	return 0;
}

/*
 * A whole ibv_send_wr into a free slot. ah_num is the sroce AH number of
 * wr.wr.ud.ah (UD QPs only); an XRC_SEND QP's WQEs, local ones included,
 * carry wr.qp_type.xrc.remote_srqn, every other type's 0. Returns 0 or
 * EINVAL; on error the slot holds garbage and must not be published.
 */
inline int write_send_wqe(void *slot, const send_caps &c,
			  const struct ibv_send_wr &wr, uint32_t ah_num)
{
	auto *w = static_cast<sroce_send_wqe *>(slot);
	/* ibv_send_wr has no place for ATOMIC WRITE's 8 bytes: ibv_wr_* only */
	if (wr.num_sge < 0 || wr.opcode == IBV_WR_ATOMIC_WRITE)
		return EINVAL;
	int err = put_send_header(w, c, wr.wr_id, wr.opcode, wr.send_flags);
	if (err)
		return err;
	if (c.qp_type == IBV_QPT_XRC_SEND) {
		err = put_xrc(w, c, wr.qp_type.xrc.remote_srqn);
		if (err)
			return err;
	}

	/* Local operations: no SGEs, whatever sg_list holds. */
	if (wr.opcode == IBV_WR_BIND_MW)
		return put_bind(w, wr.bind_mw.mw, wr.bind_mw.rkey,
				wr.bind_mw.bind_info, false);
	if (wr.opcode == IBV_WR_LOCAL_INV) {
		put_invalidate(w, wr.invalidate_rkey);
		return 0;
	}

	const auto n = static_cast<size_t>(wr.num_sge);
	if (w->send_flags & IBV_SEND_INLINE)
		err = put_inline(w, c, wr.sg_list, n);
	else
		err = put_sges(w, c, wr.sg_list, n);
	if (err)
		return err;

	switch (wr.opcode) {
	case IBV_WR_SEND_WITH_IMM:
		put_imm(w, wr.imm_data);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		put_imm(w, wr.imm_data);
		put_rdma(w, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr);
		break;
	case IBV_WR_SEND_WITH_INV:
		put_invalidate(w, wr.invalidate_rkey);
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		put_rdma(w, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		put_atomic(w, wr.wr.atomic.rkey, wr.wr.atomic.remote_addr,
			   wr.wr.atomic.compare_add, wr.wr.atomic.swap);
		break;
	default:
		break;
	}
	if (c.qp_type == IBV_QPT_UD)
		put_ud(w, ah_num, wr.wr.ud.remote_qpn, wr.wr.ud.remote_qkey);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Receive WQEs (RQ and SRQ).                                                */

/* Returns 0 or EINVAL (more than max_sge SGEs). */
inline int write_recv_wqe(void *slot, uint32_t max_sge,
			  const struct ibv_recv_wr &wr)
{
	if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > max_sge)
		return EINVAL;
	auto *w = static_cast<sroce_recv_wqe *>(slot);
	w->wr_id = wr.wr_id;
	w->num_sge = static_cast<uint32_t>(wr.num_sge);
	w->reserved = 0;
	if (wr.num_sge)
		std::memcpy(reinterpret_cast<unsigned char *>(w) + kRecvHdr,
			    wr.sg_list, static_cast<size_t>(wr.num_sge) * kSge);
	return 0;
}

/*
 * Posts a chain of receive work requests on a ring (RQ or SRQ) and publishes
 * them. Returns 0, or ENOMEM (ring full) / EINVAL with *bad_wr set to the
 * first request not posted; the ones before it are posted.
 */
inline int post_recv_chain(ring &r, uint32_t max_sge, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	const uint32_t start = r.prod;
	int err = 0;

	for (; wr; wr = wr->next) {
		if (!reserve(r)) {
			err = ENOMEM;
			break;
		}
		err = write_recv_wqe(slot(r), max_sge, *wr);
		if (err)
			break;
		advance(r);
	}
	if (r.prod != start)
		publish(r);
	if (err)
		*bad_wr = wr;
	return err;
}

} // namespace sroce::wq

#endif /* SROCE_PROVIDER_WQ_H */
