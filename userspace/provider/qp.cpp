// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs (RC, UC, UD, XRC_SEND, XRC_RECV). The kernel creates the QP
 * and describes its send and receive rings (include/uapi/rdma/sroce-abi.h,
 * "Work queues"); the provider maps them and posts work requests by writing
 * WQEs into them:
 *
 *  - post_recv only writes and publishes WQEs; it never enters the kernel;
 *  - post_send writes and publishes WQEs, then rings the doorbell (one
 *    write() of an empty POST_SEND command) only if the kernel's send engine
 *    says it is idle, at most once per call;
 *  - the ibv_wr_* API (create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
 *    writes into the same ring and publishes at ibv_wr_complete().
 *
 * State changes, queries and destruction are plain uverbs commands.
 *
 * XRC: an XRC_SEND QP is an RC send queue without a receive side; each of
 * its WQEs names the XRC SRQ at the target (xrc_srqn). An XRC_RECV QP
 * (create_qp_ex with IBV_QP_INIT_ATTR_XRCD, or open_qp) is owned by the
 * kernel and has no queue in the process: what arrives on it goes to the
 * XRC SRQ of its domain the sender named, so posting on it is EINVAL.
 */
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "sroce.h"

namespace sroce {
namespace {

using create_qp_resp =
	abi::with_driver_data<abi::resp_create_qp_core, sroce_create_qp_resp>;
static_assert(abi::driver_data_is_adjacent<abi::resp_create_qp_core,
					   sroce_create_qp_resp>());
static_assert(sizeof(sroce_create_qp_resp) == 56);

/* create_qp_ex comp_mask bits we take (CREATE_FLAGS only with no flags). */
constexpr uint64_t kInitAttrMask = IBV_QP_INIT_ATTR_PD |
				   IBV_QP_INIT_ATTR_XRCD |
				   IBV_QP_INIT_ATTR_CREATE_FLAGS |
				   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;

bool qp_type_supported(uint32_t qp_type)
{
	return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_UC ||
	       qp_type == IBV_QPT_UD || qp_type == IBV_QPT_XRC_SEND ||
	       qp_type == IBV_QPT_XRC_RECV;
}

/* An XRC_RECV QP has no send queue in the process. */
bool has_sq(uint32_t qp_type)
{
	return qp_type != IBV_QPT_XRC_RECV;
}

/* Nor does it, an XRC_SEND QP, or a QP on an SRQ, have a receive queue. */
bool has_rq(uint32_t qp_type, const struct ibv_srq *srq)
{
	return !srq && qp_type != IBV_QPT_XRC_SEND && qp_type != IBV_QPT_XRC_RECV;
}

/*
 * What each QP type needs, checked before libibverbs dereferences it. The
 * PD and CQs an XRC type does not use may be given (librdmacm passes them)
 * and are ignored, as libibverbs and the kernel ignore them. An XRC_SEND QP
 * takes no SRQ (the kernel's ioctl path refuses one); an XRC_RECV QP only
 * an XRC SRQ, like the kernel; and it has no send queue to ask ibv_wr_*
 * ops for.
 */
bool init_attr_ok(const struct ibv_qp_init_attr_ex &a)
{
	const bool pd = (a.comp_mask & IBV_QP_INIT_ATTR_PD) && a.pd;

	switch (a.qp_type) {
	case IBV_QPT_XRC_RECV:
		return (a.comp_mask & IBV_QP_INIT_ATTR_XRCD) && a.xrcd &&
		       (!a.srq || get_srq(a.srq)->vsrq.srq_type == IBV_SRQT_XRC) &&
		       !(a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	case IBV_QPT_XRC_SEND:
		return pd && a.send_cq && !a.srq;
	default:
		return pd && a.send_cq && a.recv_cq;
	}
}

/* IBTA 10.8.2: the send queue takes work requests from RTS on. */
bool send_state_ok(enum ibv_qp_state s)
{
	return s != IBV_QPS_RESET && s != IBV_QPS_INIT && s != IBV_QPS_RTR;
}

bool recv_state_ok(enum ibv_qp_state s)
{
	return s != IBV_QPS_RESET;
}

void *map_queue(struct ibv_context *ibctx, uint64_t offset, uint64_t size)
{
	if (!size)
		return nullptr;
	void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       ibctx->cmd_fd, static_cast<off_t>(offset));
	return p == MAP_FAILED ? nullptr : p;
}

void unmap_queues(qp *qp)
{
	if (qp->sq_map)
		munmap(qp->sq_map, qp->sq_map_size);
	if (qp->rq_map)
		munmap(qp->rq_map, qp->rq_map_size);
	qp->sq_map = qp->rq_map = nullptr;
}

int doorbell(qp *qp)
{
	const struct ibv_qp &q = qp->vqp.qp;
	return wq::ring_doorbell(q.context->cmd_fd, q.handle);
}

/* ------------------------------------------------------------------------ */
/* The ibv_wr_* API. Between wr_start and wr_complete/wr_abort the SQ lock   */
/* is held; nothing is published before wr_complete. The first error ends   */
/* the batch: later calls do nothing and wr_complete returns it, having      */
/* dropped every WQE of the batch.                                           */

sroce_send_wqe *begin_wqe(struct ibv_qp_ex *qpx, uint32_t opcode,
			  uint64_t op_flag)
{
	qp *qp = get_qp(qpx);

	qp->batch_cur = nullptr;
	if (qp->batch_err)
		return nullptr;
	if (!(qp->send_ops & op_flag)) {
		qp->batch_err = EOPNOTSUPP;
		return nullptr;
	}
	if (!wq::reserve(qp->sq)) {
		qp->batch_err = ENOMEM;
		return nullptr;
	}
	auto *w = static_cast<sroce_send_wqe *>(wq::slot(qp->sq));
	const int err = wq::put_send_header(w, qp->sq_caps, qpx->wr_id, opcode,
					    qpx->wr_flags);
	if (err) {
		qp->batch_err = err;
		return nullptr;
	}
	wq::advance(qp->sq);
	qp->batch_cur = w;
	return w;
}

/* The WQE the ibv_wr_set_* calls apply to, or NULL after an error. */
sroce_send_wqe *current_wqe(struct ibv_qp_ex *qpx)
{
	qp *qp = get_qp(qpx);

	if (qp->batch_err)
		return nullptr;
	if (!qp->batch_cur) {
		qp->batch_err = EINVAL;	/* a setter without a builder */
		return nullptr;
	}
	return qp->batch_cur;
}

void fail_batch(struct ibv_qp_ex *qpx, int err)
{
	qp *qp = get_qp(qpx);

	if (!qp->batch_err)
		qp->batch_err = err;
}

void wr_start(struct ibv_qp_ex *qpx)
{
	qp *qp = get_qp(qpx);

	pthread_spin_lock(&qp->sq_lock);
	qp->batch_start = qp->sq.prod;
	qp->batch_cur = nullptr;
	qp->batch_err = send_state_ok(qp->vqp.qp.state) ? 0 : EINVAL;
}

int wr_complete(struct ibv_qp_ex *qpx)
{
	qp *qp = get_qp(qpx);
	int err = qp->batch_err;
	bool posted = false;

	if (err) {
		wq::rollback(qp->sq, qp->batch_start);
	} else if (qp->sq.prod != qp->batch_start) {
		wq::publish(qp->sq);
		posted = true;
	}
	qp->batch_cur = nullptr;
	pthread_spin_unlock(&qp->sq_lock);

	if (posted && wq::need_doorbell(qp->sq))
		err = doorbell(qp);
	return err;
}

void wr_abort(struct ibv_qp_ex *qpx)
{
	qp *qp = get_qp(qpx);

	wq::rollback(qp->sq, qp->batch_start);
	qp->batch_cur = nullptr;
	pthread_spin_unlock(&qp->sq_lock);
}

void wr_send(struct ibv_qp_ex *qpx)
{
	begin_wqe(qpx, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	if (auto *w = begin_wqe(qpx, IBV_WR_SEND_WITH_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM))
		wq::put_imm(w, imm);
}

void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	if (auto *w = begin_wqe(qpx, IBV_WR_SEND_WITH_INV, IBV_QP_EX_WITH_SEND_WITH_INV))
		wq::put_invalidate(w, invalidate_rkey);
}

void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	if (auto *w = begin_wqe(qpx, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE))
		wq::put_rdma(w, rkey, remote_addr);
}

void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
		       uint64_t remote_addr, __be32 imm)
{
	if (auto *w = begin_wqe(qpx, IBV_WR_RDMA_WRITE_WITH_IMM,
				IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)) {
		wq::put_rdma(w, rkey, remote_addr);
		wq::put_imm(w, imm);
	}
}

void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	if (auto *w = begin_wqe(qpx, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ))
		wq::put_rdma(w, rkey, remote_addr);
}

void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
		       uint64_t remote_addr, uint64_t compare, uint64_t swap)
{
	if (auto *w = begin_wqe(qpx, IBV_WR_ATOMIC_CMP_AND_SWP,
				IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP))
		wq::put_atomic(w, rkey, remote_addr, compare, swap);
}

void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
			 uint64_t remote_addr, uint64_t add)
{
	if (auto *w = begin_wqe(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD,
				IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
		wq::put_atomic(w, rkey, remote_addr, add, 0);
}

static_assert(IBV_WR_ATOMIC_WRITE == SROCE_WR_ATOMIC_WRITE);
static_assert(IBV_WC_ATOMIC_WRITE == SROCE_WC_ATOMIC_WRITE);

/* The 8 bytes go into the WQE as they are to land (sroce-abi.h). */
void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
		     const void *atomic_wr)
{
	if (auto *w = begin_wqe(qpx, IBV_WR_ATOMIC_WRITE, IBV_QP_EX_WITH_ATOMIC_WRITE)) {
		w->wr.atomic.remote_addr = remote_addr;
		w->wr.atomic.rkey = rkey;
		std::memcpy(&w->wr.atomic.compare_add, atomic_wr,
			    sizeof(w->wr.atomic.compare_add));
	}
}

/* Type 2B windows only: type 1 windows are bound with ibv_bind_mw(). */
void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		const struct ibv_mw_bind_info *bind_info)
{
	auto *w = begin_wqe(qpx, IBV_WR_BIND_MW, IBV_QP_EX_WITH_BIND_MW);
	if (!w)
		return;
	if (!bind_info) {
		fail_batch(qpx, EINVAL);
		return;
	}
	if (const int err = wq::put_bind(w, mw, rkey, *bind_info, false))
		fail_batch(qpx, err);
}

void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	if (auto *w = begin_wqe(qpx, IBV_WR_LOCAL_INV, IBV_QP_EX_WITH_LOCAL_INV))
		wq::put_invalidate(w, invalidate_rkey);
}

/* Builders for operations sroce does not carry: the batch fails. */
void wr_send_tso(struct ibv_qp_ex *qpx, void *, uint16_t, uint16_t)
{
	fail_batch(qpx, EOPNOTSUPP);
}

/* XRC_SEND QPs only: the XRC SRQ at the target (EINVAL elsewhere). */
void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	auto *w = current_wqe(qpx);
	if (!w)
		return;
	if (const int err = wq::put_xrc(w, get_qp(qpx)->sq_caps, remote_srqn))
		fail_batch(qpx, err);
}

void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
		    uint32_t remote_qpn, uint32_t remote_qkey)
{
	auto *w = current_wqe(qpx);
	if (!w)
		return;
	if (get_qp(qpx)->sq_caps.qp_type != IBV_QPT_UD || !ah) {
		fail_batch(qpx, EINVAL);
		return;
	}
	wq::put_ud(w, get_ah(ah)->ah_num, remote_qpn, remote_qkey);
}

void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		uint32_t length)
{
	auto *w = current_wqe(qpx);
	if (!w)
		return;
	const struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};
	if (const int err = wq::put_sges(w, get_qp(qpx)->sq_caps, &sge, 1))
		fail_batch(qpx, err);
}

void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
		     const struct ibv_sge *sg_list)
{
	auto *w = current_wqe(qpx);
	if (!w)
		return;
	if (const int err = wq::put_sges(w, get_qp(qpx)->sq_caps, sg_list, num_sge))
		fail_batch(qpx, err);
}

void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	auto *w = current_wqe(qpx);
	if (!w)
		return;
	const struct ibv_data_buf buf = {.addr = addr, .length = length};
	if (const int err = wq::put_inline(w, get_qp(qpx)->sq_caps, &buf, 1))
		fail_batch(qpx, err);
}

void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
			     const struct ibv_data_buf *buf_list)
{
	auto *w = current_wqe(qpx);
	if (!w)
		return;
	if (const int err = wq::put_inline(w, get_qp(qpx)->sq_caps, buf_list, num_buf))
		fail_batch(qpx, err);
}

/* ------------------------------------------------------------------------ */
/* Creation.                                                                 */

struct ibv_qp *create_qp(struct ibv_context *ibctx,
			 struct ibv_qp_init_attr_ex *attr)
{
	const bool with_ops = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;

	if ((attr->comp_mask & ~kInitAttrMask) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) ||
	    !qp_type_supported(attr->qp_type) ||
	    (with_ops && (attr->send_ops_flags & ~supported_send_ops(attr->qp_type)))) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	/* libibverbs dereferences the CQs before the kernel can refuse. */
	if (!init_attr_ok(*attr)) {
		errno = EINVAL;
		return nullptr;
	}

	auto *qp = static_cast<sroce::qp *>(std::calloc(1, sizeof(sroce::qp)));
	if (!qp) {
		errno = ENOMEM;
		return nullptr;
	}

	/* What ibv_cmd_create_qp_ex accepts: no CREATE_FLAGS bit. */
	struct ibv_qp_init_attr_ex kattr = *attr;
	kattr.comp_mask &= ~static_cast<uint32_t>(IBV_QP_INIT_ATTR_CREATE_FLAGS);
	kattr.create_flags = 0;

	abi::cmd_create_qp cmd{};
	create_qp_resp resp{};
	int err = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, &kattr, &cmd, sizeof(cmd),
				       &resp.core, sizeof(resp));
	if (err) {
		std::free(qp);
		errno = err;
		return nullptr;
	}
	attr->cap = kattr.cap;

	const sroce_create_qp_resp &drv = resp.drv;
	qp->sq_map_size = drv.sq_mmap_size;
	qp->rq_map_size = drv.rq_mmap_size;
	if ((drv.sq_mmap_size && drv.sq_mmap_size <= wq::kMaxMapSize &&
	     !(qp->sq_map = map_queue(ibctx, drv.sq_mmap_offset, drv.sq_mmap_size))) ||
	    (drv.rq_mmap_size && drv.rq_mmap_size <= wq::kMaxMapSize &&
	     !(qp->rq_map = map_queue(ibctx, drv.rq_mmap_offset, drv.rq_mmap_size)))) {
		err = errno;
		goto fail;
	}
	err = attach_qp_queues(qp, attr->qp_type, attr->sq_sig_all, attr->cap,
			       drv, qp->sq_map, qp->rq_map);
	if (err) {
		sroce_log(verbs_get_ctx(ibctx), SROCE_VERBS_LOG_ERR,
			  "bad queues for qpn %u: sq %u x %u (%llu bytes), rq %u x %u (%llu bytes)",
			  qp->vqp.qp.qp_num, drv.sq_entries, drv.sq_wqe_size,
			  static_cast<unsigned long long>(drv.sq_mmap_size),
			  drv.rq_entries, drv.rq_wqe_size,
			  static_cast<unsigned long long>(drv.rq_mmap_size));
		goto fail;
	}
	if (with_ops)
		init_qp_ex(qp, attr->send_ops_flags);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_PD)
		qp->parent = parent_hold(attr->pd);
	sroce_log(verbs_get_ctx(ibctx), SROCE_VERBS_LOG_DEBUG,
		  "qpn %u: sq %u x %u, rq %u x %u", qp->vqp.qp.qp_num,
		  drv.sq_entries, drv.sq_wqe_size, drv.rq_entries, drv.rq_wqe_size);
	return &qp->vqp.qp;

fail:
	unmap_queues(qp);
	ibv_cmd_destroy_qp(&qp->vqp.qp);
	std::free(qp);
	errno = err ? err : EPROTO;
	return nullptr;
}

} // namespace

uint64_t supported_send_ops(uint32_t qp_type)
{
	constexpr uint64_t send = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	/* RC and UC: writes, and windows (bind, local invalidation) */
	constexpr uint64_t rc_uc = IBV_QP_EX_WITH_RDMA_WRITE |
				   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				   IBV_QP_EX_WITH_BIND_MW |
				   IBV_QP_EX_WITH_LOCAL_INV;
	constexpr uint64_t rc_only = IBV_QP_EX_WITH_RDMA_READ |
				     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				     IBV_QP_EX_WITH_SEND_WITH_INV |
				     IBV_QP_EX_WITH_ATOMIC_WRITE;

	switch (qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_XRC_SEND:
		return send | rc_uc | rc_only;
	case IBV_QPT_UC:
		return send | rc_uc;
	case IBV_QPT_UD:
		return send;
	default:
		return 0;
	}
}

int attach_qp_queues(qp *qp, uint32_t qp_type, bool sig_all,
		     const struct ibv_qp_cap &cap,
		     const sroce_create_qp_resp &drv, void *sq_map, void *rq_map)
{
	const bool sq = has_sq(qp_type);
	const bool rq = has_rq(qp_type, qp->vqp.qp.srq);

	if (!wq::geometry_ok(drv.sq_mmap_size, drv.sq_entries, drv.sq_wqe_size,
			     wq::kSendHdr) ||
	    !wq::geometry_ok(drv.rq_mmap_size, drv.rq_entries, drv.rq_wqe_size,
			     wq::kRecvHdr) ||
	    (!sq && drv.sq_entries) || (!rq && drv.rq_entries) ||
	    (drv.sq_entries && !sq_map) || (drv.rq_entries && !rq_map))
		return EPROTO;
	/* Whatever the kernel promised must fit in its slots. */
	if (sq && (cap.max_send_sge > wq::send_slot_sges(drv.sq_wqe_size) ||
		   cap.max_inline_data > wq::send_slot_inline(drv.sq_wqe_size) ||
		   cap.max_inline_data > SROCE_MAX_INLINE_DATA))
		return EPROTO;
	if (rq && cap.max_recv_sge > wq::recv_slot_sges(drv.rq_wqe_size))
		return EPROTO;

	qp->sq_caps.qp_type = qp_type;
	qp->sq_caps.max_sge = sq ? cap.max_send_sge : 0;
	qp->sq_caps.max_inline = sq ? cap.max_inline_data : 0;
	qp->sq_caps.sig_all = sig_all;
	qp->max_recv_sge = rq ? cap.max_recv_sge : 0;
	wq::attach(qp->sq, sq ? sq_map : nullptr, drv.sq_entries, drv.sq_wqe_size,
		   cap.max_send_wr);
	wq::attach(qp->rq, rq ? rq_map : nullptr, drv.rq_entries,
		   drv.rq_wqe_size, cap.max_recv_wr);
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

void init_qp_ex(qp *qp, uint64_t send_ops)
{
	struct ibv_qp_ex &x = qp->vqp.qp_ex;

	qp->send_ops = send_ops;
	x.wr_start = wr_start;
	x.wr_complete = wr_complete;
	x.wr_abort = wr_abort;
	x.wr_send = wr_send;
	x.wr_send_imm = wr_send_imm;
	x.wr_send_inv = wr_send_inv;
	x.wr_rdma_write = wr_rdma_write;
	x.wr_rdma_write_imm = wr_rdma_write_imm;
	x.wr_rdma_read = wr_rdma_read;
	x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x.wr_atomic_fetch_add = wr_atomic_fetch_add;
	x.wr_bind_mw = wr_bind_mw;
	x.wr_local_inv = wr_local_inv;
	x.wr_send_tso = wr_send_tso;
	x.wr_atomic_write = wr_atomic_write;
	x.wr_set_xrc_srqn = wr_set_xrc_srqn;
	x.wr_set_ud_addr = wr_set_ud_addr;
	x.wr_set_sge = wr_set_sge;
	x.wr_set_sge_list = wr_set_sge_list;
	x.wr_set_inline_data = wr_set_inline_data;
	x.wr_set_inline_data_list = wr_set_inline_data_list;
	qp->vqp.comp_mask |= SROCE_VERBS_QP_EX;
}

/*
 * A QP went to RESET or was destroyed: its completions nobody has polled
 * go with it (cq_clean), as hardware providers drop them, so that neither
 * a QP brought up again nor the other QPs of a shared CQ see completions
 * of the old one, whose wr_ids may name freed contexts by now. Not an
 * XRC_RECV QP's: there are none, its receives are the XRC SRQ's (any CQ it
 * was given means nothing); and an XRC_SEND QP has its send CQ only.
 */
static void clean_cqs(struct ibv_qp *ibqp)
{
	switch (ibqp->qp_type) {
	case IBV_QPT_XRC_RECV:
		break;
	case IBV_QPT_XRC_SEND:
		if (ibqp->send_cq)
			cq_clean(ibqp->send_cq, ibqp->qp_num, false);
		break;
	default:
		if (ibqp->recv_cq)
			cq_clean(ibqp->recv_cq, ibqp->qp_num, ibqp->srq != nullptr);
		if (ibqp->send_cq && ibqp->send_cq != ibqp->recv_cq)
			cq_clean(ibqp->send_cq, ibqp->qp_num, false);
		break;
	}
}

} // namespace sroce

extern "C" {

struct ibv_qp *sroce_create_qp(struct ibv_pd *ibpd,
			       struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {};

	ex.qp_context = attr->qp_context;
	ex.send_cq = attr->send_cq;
	ex.recv_cq = attr->recv_cq;
	ex.srq = attr->srq;
	ex.cap = attr->cap;
	ex.qp_type = attr->qp_type;
	ex.sq_sig_all = attr->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = ibpd;

	struct ibv_qp *qp = sroce::create_qp(ibpd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

struct ibv_qp *sroce_create_qp_ex(struct ibv_context *ibctx,
				  struct ibv_qp_init_attr_ex *attr)
{
	return sroce::create_qp(ibctx, attr);
}

int sroce_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	sroce::abi::cmd_query_qp cmd{};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int sroce_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		    int attr_mask)
{
	sroce::abi::cmd_modify_qp cmd{};

	const int err = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (!err && (attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET)
		sroce::clean_cqs(ibqp);
	return err;
}

/*
 * ibv_open_qp(): an XRC_RECV QP, created in this process or another one,
 * found by number in an XRC domain both have opened. Like a created one it
 * has no queue here. Modify, query and destroy are the usual commands;
 * destroying it drops this handle only.
 */
struct ibv_qp *sroce_open_qp(struct ibv_context *ibctx,
			     struct ibv_qp_open_attr *attr)
{
	/* The kernel opens nothing else (EINVAL); libibverbs checks comp_mask. */
	if ((attr->comp_mask & IBV_QP_OPEN_ATTR_TYPE) &&
	    attr->qp_type != IBV_QPT_XRC_RECV) {
		errno = EINVAL;
		return nullptr;
	}

	auto *qp = static_cast<sroce::qp *>(std::calloc(1, sizeof(sroce::qp)));
	if (!qp) {
		errno = ENOMEM;
		return nullptr;
	}

	sroce::abi::cmd_open_qp cmd{};
	sroce::abi::resp_create_qp_core resp{};
	const int err = ibv_cmd_open_qp(ibctx, &qp->vqp, sizeof(qp->vqp), attr,
					&cmd, sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		std::free(qp);
		errno = err;
		return nullptr;
	}
	/* No rings: this only sets the QP type and the locks destroy_qp frees. */
	(void)sroce::attach_qp_queues(qp, IBV_QPT_XRC_RECV, false, {}, {},
				      nullptr, nullptr);
	return &qp->vqp.qp;
}

int sroce_destroy_qp(struct ibv_qp *ibqp)
{
	sroce::qp *qp = sroce::get_qp(ibqp);

	const int err = ibv_cmd_destroy_qp(ibqp);
	if (err)
		return err;
	sroce::clean_cqs(ibqp);	/* the kernel adds nothing for it any more */
	sroce::parent_release(qp->parent);
	sroce::unmap_queues(qp);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	std::free(qp);
	return 0;
}

/*
 * Validation the provider can do (opcode for the QP type, flags, SGE count,
 * inline length, AH present) happens here; the kernel validates its own copy
 * of every WQE again. The WQEs before a failing one are posted.
 */
int sroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	sroce::qp *qp = sroce::get_qp(ibqp);
	struct ibv_send_wr *const first = wr;
	int err = 0;

	/* An opened XRC_RECV QP's state is IBV_QPS_UNKNOWN: check the type. */
	if (!sroce::send_state_ok(ibqp->state) || !sroce::has_sq(ibqp->qp_type)) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&qp->sq_lock);
	const uint32_t start = qp->sq.prod;
	for (; wr; wr = wr->next) {
		if (!sroce::wq::reserve(qp->sq)) {
			err = ENOMEM;
			break;
		}
		uint32_t ah_num = 0;
		if (qp->sq_caps.qp_type == IBV_QPT_UD) {
			if (!wr->wr.ud.ah) {
				err = EINVAL;
				break;
			}
			ah_num = sroce::get_ah(wr->wr.ud.ah)->ah_num;
		}
		err = sroce::wq::write_send_wqe(sroce::wq::slot(qp->sq),
						qp->sq_caps, *wr, ah_num);
		if (err)
			break;
		sroce::wq::advance(qp->sq);
	}
	const bool posted = qp->sq.prod != start;
	if (posted)
		sroce::wq::publish(qp->sq);
	pthread_spin_unlock(&qp->sq_lock);

	if (posted && sroce::wq::need_doorbell(qp->sq)) {
		const int db_err = sroce::doorbell(qp);
		/*
		 * The WQEs are in the ring, but the kernel was not told: report
		 * the whole call as failed (the device is most likely gone).
		 */
		if (db_err && !err) {
			err = db_err;
			wr = first;
		}
	}
	if (err)
		*bad_wr = wr;
	return err;
}

/*
 * ibv_bind_mw(): a type 1 window is bound by a BIND_MW work request with
 * the next rkey (ibv_inc_rkey()), which mw->rkey takes once it is posted.
 * libibverbs has checked the type, the PD and a range without region.
 */
int sroce_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	sroce::qp *qp = sroce::get_qp(ibqp);
	int err;

	if (!sroce::send_state_ok(ibqp->state) || !sroce::has_sq(ibqp->qp_type))
		return EINVAL;
	pthread_spin_lock(&qp->sq_lock);
	/*
	 * The window's next key, taken under the lock that also sets it: two
	 * threads binding the window through this QP get two keys.
	 */
	const uint32_t new_rkey = ibv_inc_rkey(mw->rkey);
	if (!sroce::wq::reserve(qp->sq)) {
		pthread_spin_unlock(&qp->sq_lock);
		return ENOMEM;
	}
	auto *w = static_cast<sroce_send_wqe *>(sroce::wq::slot(qp->sq));
	err = sroce::wq::put_send_header(w, qp->sq_caps, mw_bind->wr_id,
					 IBV_WR_BIND_MW, mw_bind->send_flags);
	if (!err)
		err = sroce::wq::put_bind(w, mw, new_rkey, mw_bind->bind_info, true);
	if (!err) {
		sroce::wq::advance(qp->sq);
		sroce::wq::publish(qp->sq);
		mw->rkey = new_rkey;
	}
	pthread_spin_unlock(&qp->sq_lock);

	if (!err && sroce::wq::need_doorbell(qp->sq))
		err = sroce::doorbell(qp);
	return err;
}

/*
 * UD multicast: the kernel keeps the groups, joins the netdev to them and
 * delivers to every attached QP.
 */
int sroce_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
		       uint16_t lid)
{
	return ibv_cmd_attach_mcast(ibqp, gid, lid);
}

int sroce_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
		       uint16_t lid)
{
	return ibv_cmd_detach_mcast(ibqp, gid, lid);
}

int sroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	sroce::qp *qp = sroce::get_qp(ibqp);

	/* In RESET, or without an RQ of its own (on an SRQ, or XRC). */
	if (!sroce::recv_state_ok(ibqp->state) ||
	    !sroce::has_rq(ibqp->qp_type, ibqp->srq)) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq_lock);
	const int err = sroce::wq::post_recv_chain(qp->rq, qp->max_recv_sge, wr,
						   bad_wr);
	pthread_spin_unlock(&qp->rq_lock);
	/*
	 * In ERR the kernel asks for the doorbell after receives are posted,
	 * so that it flushes them (sroce-abi.h); otherwise none is needed.
	 */
	if (sroce::wq::need_doorbell(qp->rq))
		(void)sroce::doorbell(qp);
	return err;
}

} // extern "C"
