// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - the requester: send WQEs become packets.
 *
 * The requester runs to completion in the context that has work for it,
 * under sq_lock, up to a budget of packets: the doorbell system call
 * (post_send), the completer when ACKs open the window (softirq; a task
 * waiting for the CPU sends it to req.yield_work instead), the retry and RNR
 * timers (softirq). Work beyond the budget goes to req.work.
 * Packets are built and handed to the IP layer under sq_lock, so they leave
 * in PSN order.
 *
 * WQEs are copied out of the mapped ring into kernel memory (qp->swqes, same
 * index) when the requester first sees them and are validated there; the
 * ring slot is not read again. The ring's consumer index moves when a WQE
 * completes, which for RC is when it is acknowledged (comp.c). The
 * requester keeps at most SROCE_MAX_UNACKED PSNs unacknowledged and asks for
 * an ACK (AckReq) every SROCE_ACKREQ_EVERY packets, at the window's edge and
 * at the end of each message that the next WQE does not follow at once
 * (sroce_req_next_follows()): a train of small messages gets one ACK, as a
 * train of packets does. Should that next WQE then not go out after all, the
 * newest packet is sent again asking for the ACK (sroce_req_solicit_ack()).
 */

#include <linux/highmem.h>
#include <linux/slab.h>

#include "sroce.h"

#define SROCE_MAX_UNACKED	512	/* RC PSNs in flight */
#define SROCE_MAX_READ_PSNS	128	/* READ response PSNs in flight */
#define SROCE_ACKREQ_EVERY	32

static enum ib_wc_opcode sroce_wc_opcode(u32 op)
{
	switch (op) {
	case IB_UVERBS_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case SROCE_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_UVERBS_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_UVERBS_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case SROCE_WR_ATOMIC_WRITE:
		/* user QPs only: the ring value, which ib_core may not know */
		return (enum ib_wc_opcode)SROCE_WC_ATOMIC_WRITE;
	default:
		return IB_WC_SEND;
	}
}

/* Work requests executed locally, without packets. */
static bool sroce_op_is_local(u32 op)
{
	return op == IB_UVERBS_WR_LOCAL_INV || op == SROCE_WR_REG_MR ||
	       op == IB_UVERBS_WR_BIND_MW;
}

/* ---------------------------------------------------------- completions */

static void sroce_send_cqe(struct sroce_qp *qp, struct sroce_swqe *wqe,
			   enum ib_wc_status status)
{
	struct ib_wc wc = {
		.wr_id = wqe->wr.wr_id,
		.status = status,
		.opcode = sroce_wc_opcode(wqe->wr.opcode),
		.byte_len = wqe->len,
		.qp = &qp->ibqp,
		.port_num = SROCE_PORT,
	};

	/*
	 * A full or overrun CQ (IBTA C9-218, C11-37): the QP goes to ERR with
	 * a fatal event and sends no more; err_work moves it (the callers
	 * walk the send queue). Flushes happen in ERR already.
	 */
	if (sroce_cq_post(qp->scq, &wc, false) && status != IB_WC_WR_FLUSH_ERR &&
	    !qp->req.cq_lost) {
		sroce_qp_dbg(qp, "send CQ overrun, QP to ERR\n");
		qp->req.cq_lost = true;
		if (!qp->dead)
			queue_work(sroce_wq, &qp->err_work);
	}
}

/*
 * Complete the oldest WQE (index sq.cons). Its ring slot is released before
 * its completion is posted: a process that polls the completion may post
 * into that slot at once (perftest's latency tests do, with one slot), so
 * the slot must not look taken then. The completion is built from @wqe, the
 * kernel's copy, which only a fetch under sq_lock (held) could overwrite.
 */
static void __sroce_complete_head(struct sroce_qp *qp, struct sroce_swqe *wqe,
				  enum ib_wc_status status)
{
	if (wqe->is_rd && wqe->started)
		qp->req.rd_out--;
	if (qp->req.next == qp->sq.cons) {
		/* Completed while the requester was about to resend it. */
		qp->req.next++;
		if (wqe->started &&
		    sroce_psn_before_eq(qp->req.psn, wqe->last_psn))
			qp->req.psn = sroce_psn_inc(wqe->last_psn);
	}
	qp->sq.cons++;
	sroce_wq_publish_cons(&qp->sq);
	if (status != IB_WC_SUCCESS || qp->sq_sig_all ||
	    (wqe->wr.send_flags & SROCE_SEND_SIGNALED))
		sroce_send_cqe(qp, wqe, status);
}

/*
 * A SEND or WRITE whose PSNs comp.psn has passed: acknowledged while a READ
 * or atomic before it waited for its lost response.
 */
static bool sroce_wqe_acked(struct sroce_qp *qp, const struct sroce_swqe *wqe)
{
	return wqe->npkts && !wqe->is_rd && !wqe->status &&
	       sroce_psn_before(wqe->last_psn, qp->comp.psn);
}

/*
 * Complete the oldest WQE, then, if it succeeded, what behind it only
 * waited for its predecessors: the local operations (REG_MR, LOCAL_INV,
 * BIND_MW) that have executed, the READs and atomics whose responses have
 * all arrived, the SENDs and WRITEs already acknowledged. One that failed
 * while it was not the oldest (a bad READ response) fails now. After an
 * error the rest are flushed.
 */
void sroce_complete_head(struct sroce_qp *qp, struct sroce_swqe *wqe,
			 enum ib_wc_status status)
{
	__sroce_complete_head(qp, wqe, status);
	if (status != IB_WC_SUCCESS)
		return;
	while (qp->sq.cons != qp->req.fetched) {
		wqe = sroce_swqe_at(qp, qp->sq.cons);
		if (!wqe->started)
			break;
		if (sroce_wqe_acked(qp, wqe)) {
			__sroce_complete_head(qp, wqe, IB_WC_SUCCESS);
			continue;
		}
		/* The requester is at it: it resends, executes or fails it. */
		if (qp->sq.cons == qp->req.next)
			break;
		if (wqe->status) {
			sroce_req_fail(qp, wqe, wqe->status);
			break;
		}
		if (!sroce_op_is_local(wqe->wr.opcode) && !wqe->resp_done)
			break;
		__sroce_complete_head(qp, wqe, IB_WC_SUCCESS);
	}
}

/* A WQE failed: complete it with @status, then the QP enters ERR (RC) or SQE. */
void sroce_req_fail(struct sroce_qp *qp, struct sroce_swqe *wqe,
		    enum ib_wc_status status)
{
	sroce_qp_dbg(qp, "send WQE at PSN %u failed: %s, QP to %s\n",
		     wqe->first_psn, ib_wc_status_msg(status),
		     qp->type == IB_QPT_RC ? "ERR" : "SQE");
	/* Everything before it has completed already: it is the head. */
	sroce_complete_head(qp, wqe, status);
	spin_lock(&qp->rq_lock);
	if (qp->type == IB_QPT_RC) {
		sroce_qp_error_locked(qp);
	} else {
		/*
		 * IBTA 10.3.1: a UC or UD QP goes to Send Queue Error; the
		 * receive side goes on, modify_qp(RTS) resumes sending.
		 */
		qp->state = IB_QPS_SQE;
		sroce_sq_flush_locked(qp);
	}
	spin_unlock(&qp->rq_lock);
}

/*
 * The newest packet went without AckReq because the next WQE was to follow
 * it, and now that WQE will not go out (it failed, or the QP entered SQD):
 * no ACK would come for what was sent since the last AckReq, so the WQEs
 * before the failed one would complete only after an ACK timeout (never,
 * with timeout 0), and SQD would not drain. Send that packet again with
 * AckReq: the responder takes it as a duplicate and acknowledges everything
 * it has received (or executes it, if it was lost). If it cannot be sent
 * now, the ACK timeout sends it again.
 */
static void sroce_req_solicit_ack(struct sroce_qp *qp)
{
	u32 psn = sroce_psn_add(qp->req.psn, SROCE_PSN_MAX);	/* req.psn - 1 */
	struct sroce_swqe *wqe;

	if (!qp->req.ack_owed)
		return;
	qp->req.ack_owed = false;
	wqe = sroce_wqe_by_psn(qp, psn);	/* NULL: acknowledged meanwhile */
	if (wqe && !wqe->is_rd)
		sroce_req_send_pkt(qp, wqe, psn, true);
}

/*
 * @wqe fails with @status: at once if it is the oldest WQE, otherwise once
 * everything before it has completed (the requester or the completer gets
 * to it as the head).
 */
void sroce_wqe_fail(struct sroce_qp *qp, struct sroce_swqe *wqe,
		    enum ib_wc_status status)
{
	if (wqe == sroce_swqe_at(qp, qp->sq.cons)) {
		sroce_req_fail(qp, wqe, status);
	} else {
		wqe->status = status;
		sroce_req_solicit_ack(qp);
	}
}

/* ----------------------------------------------------------------- fetch */

static u8 sroce_swqe_check(struct sroce_qp *qp, struct sroce_swqe *wqe)
{
	struct sroce_send_wqe *wr = &wqe->wr;
	enum ib_qp_type type = qp->type;
	const struct sroce_sge *sge = (const struct sroce_sge *)wqe->data;
	u64 len = 0;
	u32 i;

	switch (wr->opcode) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
		break;
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		if (type == IB_QPT_UD)
			return IB_WC_LOC_QP_OP_ERR;
		break;
	case SROCE_WR_ATOMIC_WRITE:
		/* 8 bytes from the WQE itself, no SGEs (sroce-abi.h) */
		if (type != IB_QPT_RC || wr->num_sge ||
		    (wr->send_flags & SROCE_SEND_INLINE))
			return IB_WC_LOC_QP_OP_ERR;
		wqe->is_rd = false;
		wqe->len = 8;
		return 0;
	case SROCE_WR_REG_MR:
		/* Only kernel consumers own fast-registration regions. */
		if (qp->is_user)
			return IB_WC_LOC_QP_OP_ERR;
		wqe->len = 0;
		return 0;
	case IB_UVERBS_WR_LOCAL_INV:
		/* fast regions (kernel), type 2B windows (user) */
		wqe->len = 0;
		return 0;
	case IB_UVERBS_WR_BIND_MW:
		/* Windows are user space's; IBTA: not on UD. */
		if (!qp->is_user || type == IB_QPT_UD || wr->num_sge ||
		    (wr->send_flags & SROCE_SEND_INLINE))
			return IB_WC_LOC_QP_OP_ERR;
		wqe->len = 0;
		return 0;
	case IB_UVERBS_WR_SEND_WITH_INV:
	case IB_UVERBS_WR_RDMA_READ:
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		if (type != IB_QPT_RC)
			return IB_WC_LOC_QP_OP_ERR;
		break;
	default:
		return IB_WC_LOC_QP_OP_ERR;
	}
	wqe->is_rd = sroce_op_is_rd(wr->opcode);

	if (wr->send_flags & SROCE_SEND_INLINE) {
		if (wqe->is_rd || wr->inline_len > qp->sq.max_inline)
			return IB_WC_LOC_QP_OP_ERR;
		len = wr->inline_len;
	} else {
		if (wr->num_sge > qp->sq.max_sge)
			return IB_WC_LOC_QP_OP_ERR;
		for (i = 0; i < wr->num_sge; i++)
			len += sge[i].length;
	}
	if (len > SROCE_MAX_MSG_SZ ||
	    sroce_msg_npkts(len, qp->mtu) > SROCE_MAX_MSG_PKTS)
		return IB_WC_LOC_LEN_ERR;
	if (sroce_op_is_atomic(wr->opcode) && len != 8)
		return IB_WC_LOC_LEN_ERR;
	wqe->len = len;

	if (type == IB_QPT_UD) {
		if (!sroce_ah_lookup(qp->sdev, qp->pd, wr->wr.ud.ah_num,
				     &wqe->av))
			return IB_WC_LOC_QP_OP_ERR;
		/* One packet, as large as the AH's netdev carries. */
		if (len > (128u << min_t(u32, sroce_port_mtu(qp->sdev),
					 wqe->av.max_mtu)))
			return IB_WC_LOC_LEN_ERR;
	}
	return 0;
}

/*
 * Copy the WQEs user space has published since the last look into kernel
 * memory. Return false if user space broke the ring.
 */
static bool sroce_sq_fetch(struct sroce_qp *qp)
{
	struct sroce_wq *sq = &qp->sq;
	bool broken = false;
	u32 prod = sroce_wq_ring_prod(sq, qp->req.fetched, &broken);

	if (broken)
		return false;
	while (qp->req.fetched != prod) {
		const u8 *slot = sroce_wq_slot(sq, qp->req.fetched);
		struct sroce_swqe *wqe = sroce_swqe_at(qp, qp->req.fetched);
		u32 room = sq->wqe_size - sizeof(wqe->wr), n;

		memcpy(&wqe->wr, slot, sizeof(wqe->wr));
		memset((u8 *)wqe + offsetof(struct sroce_swqe, av), 0,
		       offsetof(struct sroce_swqe, data) -
		       offsetof(struct sroce_swqe, av));
		if (wqe->wr.send_flags & SROCE_SEND_INLINE)
			n = min(wqe->wr.inline_len, room);
		else
			n = min_t(u32, wqe->wr.num_sge, room / sizeof(struct sroce_sge)) *
			    sizeof(struct sroce_sge);
		memcpy(wqe->data, slot + sizeof(wqe->wr), n);
		wqe->status = sroce_swqe_check(qp, wqe);
		qp->req.fetched++;
	}
	return true;
}

/* The ring is unusable: the QP goes to ERR with a fatal event. */
static void sroce_sq_broken(struct sroce_qp *qp)
{
	sroce_qp_dbg(qp, "send ring broken by its producer, QP to ERR\n");
	spin_lock(&qp->rq_lock);
	sroce_qp_error_locked(qp);
	spin_unlock(&qp->rq_lock);
	sroce_qp_event(qp, IB_EVENT_QP_FATAL);
}

/* Flush the whole send queue with IB_WC_WR_FLUSH_ERR (QP in ERR). */
void sroce_sq_flush_locked(struct sroce_qp *qp)
{
	struct sroce_wq *sq = &qp->sq;
	bool broken = false;
	u32 prod;

	if (!sq->hdr)
		return;
	/* Each slot is released before its completion, as above. */
	while (sq->cons != qp->req.fetched) {
		struct sroce_swqe *wqe = sroce_swqe_at(qp, sq->cons);

		sq->cons++;
		sroce_wq_publish_cons(sq);
		sroce_send_cqe(qp, wqe, IB_WC_WR_FLUSH_ERR);
	}
	/*
	 * Idle before the producer load, as an idle requester does (below):
	 * a poster either has its WQE flushed here or sees sq_idle and rings,
	 * and the requester flushes it then.
	 */
	WRITE_ONCE(sq->hdr->sq_idle, 1);
	smp_mb();	/* sq_idle store before producer load */
	prod = sroce_wq_ring_prod(sq, qp->req.fetched, &broken);
	while (!broken && sq->cons != prod) {
		struct sroce_swqe *wqe = sroce_swqe_at(qp, sq->cons);

		memcpy(&wqe->wr, sroce_wq_slot(sq, sq->cons), sizeof(wqe->wr));
		wqe->len = 0;
		sq->cons++;
		sroce_wq_publish_cons(sq);
		sroce_send_cqe(qp, wqe, IB_WC_WR_FLUSH_ERR);
	}
	qp->req.fetched = sq->cons;
	qp->req.next = sq->cons;
	qp->req.rd_out = 0;
	qp->req.paused = false;
}

/* RESET: forget every WQE, posted or in progress; no completions. */
void sroce_req_reset_locked(struct sroce_qp *qp)
{
	struct sroce_wq *sq = &qp->sq;
	bool broken = false;
	u32 prod;

	del_timer(&qp->comp.retry_timer);
	del_timer(&qp->comp.rnr_timer);
	del_timer(&qp->req.fetch_timer);
	qp->req.fetch_deferred = false;
	qp->req.ack_owed = false;
	qp->req.cq_lost = false;
	qp->comp.retry_shift = 0;	/* a new connection's timer starts unbacked-off */
	if (!sq->hdr)
		return;
	prod = sroce_wq_ring_prod(sq, qp->req.fetched, &broken);
	sq->cons = broken ? qp->req.fetched : prod;
	qp->req.fetched = sq->cons;
	qp->req.next = sq->cons;
	qp->req.rd_out = 0;
	qp->req.paused = false;
	qp->req.tx_holding = false;
	qp->req.psn = 0;
	qp->comp.psn = 0;
	qp->req.psn_hi = 0;
	sroce_wq_publish_cons(sq);
	WRITE_ONCE(sq->hdr->sq_idle, 1);
}

/* --------------------------------------------------------------- gather */

/*
 * Copy @len bytes at message offset @off between the WQE's local buffers
 * (SGE list or inline data) and @buf. Return 0 or a completion status.
 */
int sroce_wqe_copy(struct sroce_qp *qp, struct sroce_swqe *wqe, u32 off,
		   u8 *buf, u32 len, enum sroce_copy_dir dir)
{
	if (wqe->wr.send_flags & SROCE_SEND_INLINE) {
		memcpy(buf, wqe->data + off, len);
		return 0;
	}
	return sroce_sge_copy(qp->sdev, qp->pd, (const struct sroce_sge *)wqe->data,
			      wqe->wr.num_sge, off, buf, len, dir);
}

/* ---------------------------------------------------------------- build */

/* The message a work request sends: its kind and opcode variant. */
static enum sroce_op_kind sroce_wr_kind(u32 op, unsigned int *variant)
{
	*variant = 0;
	switch (op) {
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		*variant = SROCE_OPF_IMM;
		fallthrough;
	case IB_UVERBS_WR_RDMA_WRITE:
		return SROCE_KIND_WRITE;
	case IB_UVERBS_WR_RDMA_READ:
		return SROCE_KIND_READ_REQ;
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		*variant = SROCE_OPF_FETCH_ADD;
		fallthrough;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
		return SROCE_KIND_ATOMIC;
	case SROCE_WR_ATOMIC_WRITE:
		return SROCE_KIND_ATOMIC_WRITE;
	case IB_UVERBS_WR_SEND_WITH_IMM:
		*variant = SROCE_OPF_IMM;
		return SROCE_KIND_SEND;
	case IB_UVERBS_WR_SEND_WITH_INV:
		*variant = SROCE_OPF_INV;
		return SROCE_KIND_SEND;
	default:
		return SROCE_KIND_SEND;
	}
}

/* Opcode of packet @k of @wqe (sroce_swqe_check() let only valid ones in). */
static u8 sroce_req_opcode(struct sroce_qp *qp, struct sroce_swqe *wqe, u32 k)
{
	unsigned int variant;
	enum sroce_op_kind kind = sroce_wr_kind(wqe->wr.opcode, &variant);
	enum sroce_pos pos = SROCE_POS_ONLY;

	if (kind == SROCE_KIND_SEND || kind == SROCE_KIND_WRITE)
		pos = sroce_msg_pos(k, wqe->npkts);
	return sroce_opcode_find(sroce_qp_transport(qp), kind, pos, variant);
}

/*
 * The extension headers of packet @k of @wqe after the BTH at @bth; UD
 * returns the destination QPN and UDP source port through @dqpn, @sport.
 */
static void sroce_req_encode_ext(struct sroce_qp *qp, struct sroce_swqe *wqe,
				 const struct sroce_opcode_info *oi, u32 k,
				 u8 *bth, u32 *dqpn, u16 *sport)
{
	const struct sroce_send_wqe *wr = &wqe->wr;

	if (sroce_opcode_has(oi, SROCE_HDR_XRCETH))
		sroce_xrceth_set_srqn(bth + oi->hdr_off[SROCE_HDR_XRCETH],
				      wr->xrc_srqn);
	if (qp->type == IB_QPT_UD) {
		struct sroce_deth deth = {
			.qkey = (wr->wr.ud.remote_qkey & 0x80000000u) ?
				qp->qkey : wr->wr.ud.remote_qkey,
			.sqpn = qp->ibqp.qp_num,
		};

		*dqpn = wr->wr.ud.remote_qpn & SROCE_QPN_MASK;
		*sport = rdma_get_udp_sport(wqe->av.flow_label,
					    qp->ibqp.qp_num, *dqpn);
		sroce_deth_encode(bth + oi->hdr_off[SROCE_HDR_DETH],
				  &deth);
	}
	if (sroce_opcode_has(oi, SROCE_HDR_RETH)) {
		struct sroce_reth reth = {
			.va = wr->wr.rdma.remote_addr,
			.rkey = wr->wr.rdma.rkey,
			.len = wqe->len,
		};

		if (oi->kind == SROCE_KIND_ATOMIC_WRITE)
			reth.rkey = wr->wr.atomic.rkey;

		if (oi->kind == SROCE_KIND_READ_REQ) {
			/* Possibly resumed after lost responses. */
			u32 done = k * qp->mtu;

			reth.va += done;
			reth.len -= done;
		}
		sroce_reth_encode(bth + oi->hdr_off[SROCE_HDR_RETH],
				  &reth);
	}
	if (sroce_opcode_has(oi, SROCE_HDR_ATOMICETH)) {
		struct sroce_atomiceth a = {
			.va = wr->wr.atomic.remote_addr,
			.rkey = wr->wr.atomic.rkey,
			.swap_add = wr->opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ?
				    wr->wr.atomic.swap : wr->wr.atomic.compare_add,
			.compare = wr->wr.atomic.compare_add,
		};

		sroce_atomiceth_encode(bth + oi->hdr_off[SROCE_HDR_ATOMICETH],
				       &a);
	}
	if (sroce_opcode_has(oi, SROCE_HDR_IMMDT))
		memcpy(bth + oi->hdr_off[SROCE_HDR_IMMDT],
		       &wr->imm_data, 4);	/* already in wire order */
	if (sroce_opcode_has(oi, SROCE_HDR_IETH))
		sroce_ieth_set_rkey(bth + oi->hdr_off[SROCE_HDR_IETH],
				    wr->imm_data);
}

/*
 * @wqe, the WQE at req.next, ends its message: does the next WQE go out right
 * behind it? Only then may its last packet go without AckReq. The next one
 * must be fetched and valid already, a SEND or WRITE without fence (nothing
 * that could hold it back: READ and atomic limits, local operations that
 * complete only after their predecessors), on a QP in RTS; and @wqe must be
 * unsignaled, so that no completion the consumer waits for depends on a
 * later packet. The window's edge and SROCE_ACKREQ_EVERY ask for an ACK
 * regardless. What can still stop the next WQE (its payload fails, the QP
 * enters SQD) calls sroce_req_solicit_ack(); a full transmit queue, a
 * paced or paused requester and the budget only delay it.
 */
static bool sroce_req_next_follows(struct sroce_qp *qp,
				   const struct sroce_swqe *wqe)
{
	u32 i = qp->req.next + 1;
	const struct sroce_swqe *nx;

	if (wqe != sroce_swqe_at(qp, qp->req.next) || i == qp->req.fetched ||
	    qp->state != IB_QPS_RTS || qp->sq_sig_all ||
	    (wqe->wr.send_flags & SROCE_SEND_SIGNALED))
		return false;
	nx = sroce_swqe_at(qp, i);
	if (nx->status || (nx->wr.send_flags & SROCE_SEND_FENCE))
		return false;
	switch (nx->wr.opcode) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
	case IB_UVERBS_WR_SEND_WITH_INV:
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		return true;
	default:
		return false;
	}
}

/*
 * Build and send the packet of @wqe at PSN @psn, with AckReq if @ackreq (or
 * at the end of a message the next WQE does not follow, and every
 * SROCE_ACKREQ_EVERY PSNs). Return 0 (also when the
 * network layer could not route it: that is a lost packet), -ENOBUFS when
 * the transmit queue is full (not sent), -EAGAIN when the payload is in an
 * ODP page not mapped yet (not sent), or a completion status for a local
 * error.
 */
int sroce_req_send_pkt(struct sroce_qp *qp, struct sroce_swqe *wqe, u32 psn,
		       bool ackreq)
{
	const struct sroce_av *av = qp->type == IB_QPT_UD ? &wqe->av : &qp->av;
	u32 k = sroce_psn_fwd(psn, wqe->first_psn);
	u8 opcode = sroce_req_opcode(qp, wqe, k);
	const struct sroce_opcode_info *oi = sroce_opcode_lookup(opcode);
	u32 off = 0, plen = 0, dqpn = qp->dest_qpn;
	u16 sport = qp->sport;
	struct sroce_txpkt tp;
	bool skipped = false;
	u32 wire;
	int st;

	if (oi->kind == SROCE_KIND_SEND || oi->kind == SROCE_KIND_WRITE) {
		off = k * qp->mtu;
		plen = qp->type == IB_QPT_UD ? wqe->len :
		       min(qp->mtu, wqe->len - off);
	} else if (oi->kind == SROCE_KIND_ATOMIC_WRITE) {
		plen = sizeof(wqe->wr.wr.atomic.compare_add);
	}
	/*
	 * An ACK this QP's responder owes goes out before the request: a
	 * receive that woke a process can leave the ACK tasklet to ksoftirqd,
	 * and the reply the process posts must not overtake the ACK.
	 */
	if (qp->type == IB_QPT_RC && READ_ONCE(qp->resp.ack_pending))
		sroce_resp_ack_flush(qp);
	if (sroce_tx_alloc(qp->sdev, av, oi->hdr_len, plen, &tp))
		return -ENOBUFS;	/* no memory: hold back, try again */
	tp.qp = qp;
	if (av == &qp->av)
		tp.dst = &qp->tx_dst;
	if (oi->kind == SROCE_KIND_ATOMIC_WRITE) {
		memcpy(tp.payload, &wqe->wr.wr.atomic.compare_add, plen);
	} else if (plen) {
		st = sroce_wqe_copy(qp, wqe, off, tp.payload, plen,
				    SROCE_COPY_FROM_MR);
		if (st) {
			kfree_skb(tp.skb);
			return st;
		}
	}
	sroce_req_encode_ext(qp, wqe, oi, k, tp.bth, &dqpn, &sport);

	sroce_bth_init(tp.bth, opcode, SROCE_DEFAULT_PKEY, dqpn, psn);
	if ((oi->flags & SROCE_OPF_END) &&
	    (wqe->wr.send_flags & SROCE_SEND_SOLICITED))
		sroce_bth_set_se(tp.bth, true);
	if (qp->type == IB_QPT_RC) {
		ackreq = ackreq || ((psn + 1) % SROCE_ACKREQ_EVERY) == 0;
		if (!ackreq && (oi->flags & SROCE_OPF_END)) {
			skipped = sroce_req_next_follows(qp, wqe);
			ackreq = !skipped;
		}
		sroce_bth_set_ackreq(tp.bth, ackreq);
	}

	wire = tp.skb->len + ETH_HLEN;
	if (sroce_tx_send(qp->sdev, av, sport, &tp) == -ENOBUFS)
		return -ENOBUFS;
	sroce_cc_sent(qp, wire);
	/* sent, or unroutable: a lost packet */
	if (skipped) {
		qp->req.ack_owed = true;
		sroce_cnt_inc(qp->sdev, SROCE_CNT_ACKREQ_SKIPPED);
	} else if (ackreq) {
		qp->req.ack_owed = false;
	}
	return 0;
}

/* -------------------------------------------------------------- requester */

static void sroce_req_defer(struct sroce_qp *qp)
{
	if (!qp->dead)
		queue_work(sroce_wq, &qp->req.work);
}

/*
 * Execute a local operation (REG_MR, LOCAL_INV, BIND_MW) at req.next, in send queue
 * order: everything posted before it has been sent, nothing after it has.
 * It uses no PSN; it completes once everything before it has. Return false
 * if the requester has to stop here.
 */
static bool sroce_req_local(struct sroce_qp *qp, struct sroce_swqe *wqe)
{
	const struct sroce_reg_wqe *reg = (const void *)wqe->wr.wr.raw;
	int st = 0;

	if (!wqe->started) {
		if (qp->state == IB_QPS_SQD) {
			sroce_req_solicit_ack(qp);
			return false;
		}
		if ((wqe->wr.send_flags & SROCE_SEND_FENCE) && qp->req.rd_out)
			return false;
		if (wqe->wr.opcode == SROCE_WR_REG_MR)
			st = sroce_mr_fast_reg(qp->sdev, qp->pd, reg->key,
					       reg->access);
		else if (wqe->wr.opcode == IB_UVERBS_WR_BIND_MW)
			st = sroce_mw_bind(qp, &wqe->wr);
		else if (sroce_mr_invalidate(qp->sdev, qp->pd, SROCE_KEY_LOCAL,
					     wqe->wr.imm_data))
			st = IB_WC_LOC_PROT_ERR;
		wqe->npkts = 0;
		wqe->first_psn = qp->req.psn;
		wqe->last_psn = sroce_psn_add(qp->req.psn, SROCE_PSN_MAX);
		wqe->started = true;
		if (st) {
			sroce_wqe_fail(qp, wqe, st);
			return false;
		}
	} else if (wqe->status) {
		/* It failed behind older WQEs: it fails once it is the oldest. */
		if (qp->req.next == qp->sq.cons)
			sroce_req_fail(qp, wqe, wqe->status);
		return false;
	}
	if (qp->req.next == qp->sq.cons)
		sroce_complete_head(qp, wqe, IB_WC_SUCCESS);	/* moves req.next */
	else
		qp->req.next++;
	return true;
}

/*
 * The oldest PSN the requester still needs an answer for: comp.psn, or the
 * first PSN of the oldest WQE if that is a READ or atomic comp.psn has
 * passed (later PSNs acknowledged, its response lost).
 */
u32 sroce_req_base_psn(struct sroce_qp *qp)
{
	u32 lo = qp->comp.psn;

	if (qp->sq.cons != qp->req.fetched) {
		struct sroce_swqe *wqe = sroce_swqe_at(qp, qp->sq.cons);

		if (wqe->started && wqe->is_rd &&
		    sroce_psn_before(wqe->first_psn, lo))
			lo = wqe->first_psn;
	}
	return lo;
}

/* PSNs sent and not answered yet: the in-flight window. */
static u32 sroce_req_unacked(struct sroce_qp *qp)
{
	return sroce_psn_fwd(qp->req.psn, sroce_req_base_psn(qp));
}

/*
 * Before (re)sending the request of a started READ or atomic: ask only for
 * what has not arrived. One whose responses are all in is skipped (and
 * completed if it is the oldest WQE). Return true if a request is to be
 * sent.
 */
static bool sroce_req_rd_resume(struct sroce_qp *qp, struct sroce_swqe *wqe)
{
	u32 from;

	if (!wqe->started)
		return true;
	if (wqe->resp_done) {
		if (qp->req.next == qp->sq.cons) {
			sroce_complete_head(qp, wqe, IB_WC_SUCCESS);
		} else {
			qp->req.next++;
			qp->req.psn = sroce_psn_inc(wqe->last_psn);
		}
		return false;
	}
	if (wqe->wr.opcode != IB_UVERBS_WR_RDMA_READ)
		return true;
	from = sroce_read_resume_psn(qp, wqe);
	if (sroce_psn_before(qp->req.psn, from))
		qp->req.psn = from;
	return true;
}

#define SROCE_TX_HOLD_MIN_MS	1000
#define SROCE_TX_HOLD_MAX_MS	30000	/* QPs without an ACK timeout */

/*
 * The transmit path has refused our packets (queue full, no memory) since
 * tx_hold_since. That lasts only while the link is stuck; once it has lasted
 * as long as the QP's whole retry budget would, the WQE fails with retry
 * exceeded, as on a NIC whose packets never get out, instead of the QP
 * trying forever.
 */
static bool sroce_tx_hold_expired(struct sroce_qp *qp)
{
	u64 ns = sroce_ack_timeout_ns(qp->timeout) * (qp->retry_cnt + 1u);
	unsigned long limit = ns ? nsecs_to_jiffies(ns) :
			      msecs_to_jiffies(SROCE_TX_HOLD_MAX_MS);

	if (!qp->req.tx_holding) {
		qp->req.tx_holding = true;
		qp->req.tx_hold_since = jiffies;
		return false;
	}
	limit = clamp_t(unsigned long, limit,
			msecs_to_jiffies(SROCE_TX_HOLD_MIN_MS),
			msecs_to_jiffies(SROCE_TX_HOLD_MAX_MS));
	return time_after(jiffies, qp->req.tx_hold_since + limit);
}

/*
 * May the requester start @wqe now? If so, give it its PSNs. The limits:
 * SQD starts nothing new, max_rd_atomic READs/atomics outstanding, a fence
 * waits for them, and the RC window of unacknowledged PSNs.
 */
static bool sroce_req_start(struct sroce_qp *qp, struct sroce_swqe *wqe)
{
	u32 op = wqe->wr.opcode;

	if (qp->state == IB_QPS_SQD) {
		sroce_req_solicit_ack(qp);
		return false;
	}
	if (wqe->is_rd && qp->req.rd_out >= max_t(u32, qp->max_rd_atomic, 1))
		return false;
	if ((wqe->wr.send_flags & SROCE_SEND_FENCE) && qp->req.rd_out)
		return false;
	if (qp->type == IB_QPT_RC && sroce_req_unacked(qp) >= SROCE_MAX_UNACKED)
		return false;
	/*
	 * READ responses come back as fast as the responder can send them:
	 * keep at most SROCE_MAX_READ_PSNS of them (or one READ) outstanding,
	 * so that the last of them arrives within an ACK timeout.
	 */
	if (op == IB_UVERBS_WR_RDMA_READ && qp->req.rd_out &&
	    sroce_req_unacked(qp) + sroce_msg_npkts(wqe->len, qp->mtu) >
	    SROCE_MAX_READ_PSNS)
		return false;
	if (qp->type == IB_QPT_UD || sroce_op_is_atomic(op) ||
	    op == SROCE_WR_ATOMIC_WRITE)
		wqe->npkts = 1;
	else
		wqe->npkts = sroce_msg_npkts(wqe->len, qp->mtu);
	wqe->first_psn = qp->req.psn;
	wqe->last_psn = sroce_psn_add(wqe->first_psn, wqe->npkts - 1);
	wqe->started = true;
	if (wqe->is_rd)
		qp->req.rd_out++;
	return true;
}

/* Wait a tick, then go on from the same PSN (rnr_timer). */
void sroce_req_pause_tick(struct sroce_qp *qp)
{
	if (!qp->req.paused && !qp->dead) {
		qp->req.paused = true;
		mod_timer(&qp->comp.rnr_timer, jiffies + 1);
	}
}

/*
 * A READ or atomic places its responses in softirq, where ODP pages cannot
 * be faulted in: before it starts, its local buffers must be mapped.
 * Return true to go on; false to wait (faults queued, the requester looks
 * again after a tick) or if the WQE failed (a page cannot be mapped).
 */
static bool sroce_req_rd_prefault(struct sroce_qp *qp, struct sroce_swqe *wqe)
{
	int err;

	if (wqe->wr.send_flags & SROCE_SEND_INLINE)
		return true;
	err = sroce_sge_prefault(qp->sdev, qp->pd,
				 (const struct sroce_sge *)wqe->data,
				 wqe->wr.num_sge, IB_ACCESS_LOCAL_WRITE);
	if (err == -EAGAIN) {
		sroce_req_pause_tick(qp);
		return false;
	}
	if (err) {
		sroce_wqe_fail(qp, wqe, IB_WC_LOC_PROT_ERR);
		return false;
	}
	return true;
}

/*
 * The transmit path refused a packet: wait a tick and go on from the same
 * PSN, unless it has refused for too long.
 */
static void sroce_req_tx_refused(struct sroce_qp *qp)
{
	if (sroce_tx_hold_expired(qp)) {
		sroce_qp_dbg(qp, "transmit path refused packets too long\n");
		/*
		 * A UD QP goes on after SQE -> RTS without a reset: a refusal
		 * then starts a hold of its own.
		 */
		qp->req.tx_holding = false;
		sroce_req_fail(qp, sroce_swqe_at(qp, qp->sq.cons),
			       IB_WC_RETRY_EXC_ERR);
		return;
	}
	sroce_req_pause_tick(qp);
}

/* The packet of @wqe at req.psn went out: move on. */
static void sroce_req_sent(struct sroce_qp *qp, struct sroce_swqe *wqe)
{
	bool last;

	if (wqe->wr.opcode == IB_UVERBS_WR_RDMA_READ) {
		/* One request packet asks for every response PSN. */
		qp->req.psn = sroce_psn_inc(wqe->last_psn);
		last = true;
	} else {
		last = qp->req.psn == wqe->last_psn;
		qp->req.psn = sroce_psn_inc(qp->req.psn);
	}
	if (sroce_psn_after(qp->req.psn, qp->req.psn_hi))
		qp->req.psn_hi = qp->req.psn;
	if (qp->type == IB_QPT_RC && !timer_pending(&qp->comp.retry_timer))
		sroce_retry_arm(qp);
	if (!last)
		return;
	qp->req.next++;
	if (qp->type != IB_QPT_RC) {
		/* UC, UD: done once sent. */
		qp->comp.psn = qp->req.psn;
		sroce_complete_head(qp, wqe, IB_WC_SUCCESS);
	}
}

/*
 * Send the next packet of @wqe, a SEND, WRITE, READ or atomic. Return false
 * if the requester has to stop (window, transmit queue, error).
 */
static bool sroce_req_packet(struct sroce_qp *qp, struct sroce_swqe *wqe)
{
	bool rc = qp->type == IB_QPT_RC, ackreq;
	int st;

	if (qp->req.paused)
		return false;
	if (sroce_tx_full(qp, SROCE_TX_WAIT_REQ)) {
		/* The ACK timer bounds the wait (sroce_retry_timer()). */
		if (rc && !timer_pending(&qp->comp.retry_timer))
			sroce_retry_arm(qp);
		return false;
	}
	if (!sroce_cc_may_send(qp, SROCE_CC_WAIT_REQ))
		return false;
	if (!wqe->started) {
		if (wqe->is_rd && !sroce_req_rd_prefault(qp, wqe))
			return false;
		if (!sroce_req_start(qp, wqe))
			return false;
	} else if (rc && sroce_req_unacked(qp) >= SROCE_MAX_UNACKED &&
		   wqe->wr.opcode != IB_UVERBS_WR_RDMA_READ) {
		return false;
	}
	if (wqe->is_rd && !sroce_req_rd_resume(qp, wqe))
		return true;	/* nothing to ask for: skipped */

	ackreq = rc && sroce_req_unacked(qp) + 1 >= SROCE_MAX_UNACKED;
	st = sroce_req_send_pkt(qp, wqe, qp->req.psn, ackreq);
	if (st == -ENOBUFS) {
		sroce_req_tx_refused(qp);
		return false;
	}
	if (st == -EAGAIN) {
		/* An ODP page of the payload is being faulted in. */
		sroce_req_pause_tick(qp);
		return false;
	}
	qp->req.tx_holding = false;
	if (st) {
		sroce_wqe_fail(qp, wqe, st);
		return false;
	}
	sroce_req_sent(qp, wqe);
	return true;
}

/*
 * A user RC QP with nothing left to send but responses due need not ask
 * for the doorbell: the completer runs the requester on each response, and
 * it fetches what was posted since. Keeping sq_idle at 0 spares the poster
 * a system call per work request whenever it posts faster than messages
 * go out (one 4 KiB WRITE per doorbell otherwise). fetch_timer bounds the
 * wait when no response comes (a lost ACK, or no ACK timeout at all): its
 * run goes idle for real. So does a doorbell's run (sroce_post_send()):
 * the requester was idle, so the responses due, if any, are those of what
 * this run sent, a round trip away, and the poster is likely to post more
 * right behind; it rings for each until responses flow. Kernel QPs post
 * without a system call and go idle at once.
 */
static bool sroce_req_defer_fetch(struct sroce_qp *qp)
{
	if (!qp->is_user || qp->type != IB_QPT_RC || qp->dead ||
	    qp->req.no_defer || qp->state != IB_QPS_RTS ||
	    qp->sq.cons == qp->req.next)
		return false;
	qp->req.fetch_deferred = true;
	if (!timer_pending(&qp->req.fetch_timer))
		mod_timer(&qp->req.fetch_timer, jiffies + 1);
	return true;
}

/* Run the requester (sq_lock held); out of WQEs, it goes idle for real. */
static void sroce_req_run_no_defer_locked(struct sroce_qp *qp)
{
	qp->req.no_defer = true;
	sroce_req_run_locked(qp, SROCE_REQ_BUDGET);
	qp->req.no_defer = false;
}

void sroce_req_fetch_timer(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, req.fetch_timer);

	spin_lock_bh(&qp->sq_lock);
	if (qp->req.fetch_deferred && !qp->dead) {
		u32 fetched = qp->req.fetched;

		sroce_req_run_no_defer_locked(qp);
		if (qp->req.fetched != fetched)
			sroce_cnt_inc(qp->sdev, SROCE_CNT_FETCH_BY_TIMER);
	}
	spin_unlock_bh(&qp->sq_lock);
}

/*
 * Nothing left to send: fetch what user space has posted since. Return
 * true if there is a WQE at req.next, false when the requester goes idle,
 * or defers its next look (sroce_req_defer_fetch()), or the ring is broken
 * and the QP went to ERR.
 */
static bool sroce_req_fetch_more(struct sroce_qp *qp)
{
	struct sroce_wq *sq = &qp->sq;

	for (;;) {
		if (!sroce_sq_fetch(qp)) {
			sroce_sq_broken(qp);
			return false;
		}
		if (qp->req.next != qp->req.fetched)
			return true;
		if (sroce_req_defer_fetch(qp))
			return false;
		/*
		 * Idle. sq_idle before the producer load, pairing with the
		 * smp_mb() of a poster between its producer store and its
		 * sq_idle load (the provider, sroce_post_send_kernel()):
		 * either we see its WQE or it sees us idle and rings.
		 */
		WRITE_ONCE(sq->hdr->sq_idle, 1);
		smp_mb();	/* sq_idle store before producer load, see above */
		if (READ_ONCE(sq->hdr->producer) == qp->req.fetched)
			return false;
		WRITE_ONCE(sq->hdr->sq_idle, 0);
	}
}

static void __sroce_req_run_locked(struct sroce_qp *qp, unsigned int budget)
{
	struct sroce_wq *sq = &qp->sq;

	if (qp->dead || !sq->hdr)
		return;
	if (qp->state == IB_QPS_ERR || qp->state == IB_QPS_SQE) {
		sroce_sq_flush_locked(qp);
		return;
	}
	if (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD) {
		WRITE_ONCE(sq->hdr->sq_idle, 1);
		return;
	}
	WRITE_ONCE(sq->hdr->sq_idle, 0);
	qp->req.fetch_deferred = false;

	for (;;) {
		struct sroce_swqe *wqe;

		/* A completion on the way can have failed a later WQE. */
		if ((qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD) ||
		    qp->req.cq_lost)
			return;
		if (qp->req.next == qp->req.fetched && !sroce_req_fetch_more(qp))
			return;
		wqe = sroce_swqe_at(qp, qp->req.next);
		/* SQD starts nothing new, not even a WQE that is to fail. */
		if (qp->state == IB_QPS_SQD && !wqe->started) {
			sroce_req_solicit_ack(qp);
			return;
		}
		if (wqe->status) {
			/* Fails once everything before it has completed. */
			if (qp->req.next == sq->cons)
				sroce_req_fail(qp, wqe, wqe->status);
			return;
		}
		if (sroce_op_is_local(wqe->wr.opcode)) {
			if (!sroce_req_local(qp, wqe))
				return;
		} else if (!sroce_req_packet(qp, wqe)) {
			return;
		}
		if (!--budget) {
			sroce_req_defer(qp);
			return;
		}
	}
}

/*
 * Run the requester with sq_lock held, for up to @budget packets. In SQD it
 * finishes the WQEs it had started; when it completes the last of them (UC,
 * a local operation) the send queue has drained.
 */
void sroce_req_run_locked(struct sroce_qp *qp, unsigned int budget)
{
	__sroce_req_run_locked(qp, budget);
	sroce_sqd_check_locked(qp);
}

/*
 * The completer's run, in the NET_RX softirq when an ACK opens the window:
 * there unless a task is waiting for this CPU. Since Linux 6.5 softirqs run
 * at every interrupt exit even while ksoftirqd is busy, so a sender its ACKs
 * keep busy would leave the processes of its CPU next to nothing (qperf's
 * 5 s control timeouts expired on a one-CPU guest). Then the requester goes
 * on from req.yield_work on a normal-priority worker, which the scheduler
 * shares out like any task.
 */
void sroce_req_run_acked_locked(struct sroce_qp *qp)
{
	if (in_serving_softirq() && need_resched()) {
		if (!qp->dead)
			queue_work(sroce_yield_wq, &qp->req.yield_work);
		return;
	}
	sroce_req_run_locked(qp, SROCE_REQ_BUDGET);
}

void sroce_req_run(struct sroce_qp *qp, unsigned int budget)
{
	spin_lock_bh(&qp->sq_lock);
	sroce_req_run_locked(qp, budget);
	spin_unlock_bh(&qp->sq_lock);
}

void sroce_req_kick(struct sroce_qp *qp)
{
	sroce_req_run(qp, SROCE_REQ_BUDGET);
}

/* A worker's run, for req.work and req.yield_work alike. */
static void sroce_req_work_run(struct sroce_qp *qp)
{
	sroce_req_run(qp, SROCE_REQ_BUDGET * 4);
	cond_resched();
}

void sroce_req_work(struct work_struct *work)
{
	sroce_req_work_run(container_of(work, struct sroce_qp, req.work));
}

void sroce_req_yield_work(struct work_struct *work)
{
	sroce_req_work_run(container_of(work, struct sroce_qp, req.yield_work));
}

/* Run the requester, or leave it to req_work where sq_lock cannot be taken. */
static void sroce_req_kick_any(struct sroce_qp *qp)
{
	if (irqs_disabled() || in_hardirq())
		sroce_req_defer(qp);
	else
		sroce_req_kick(qp);
}

/* Kernel consumers: convert the chain into ring WQEs, then kick. */
static int sroce_post_send_kernel(struct sroce_qp *qp,
				  const struct ib_send_wr *wr,
				  const struct ib_send_wr **bad_wr)
{
	struct sroce_wq *sq = &qp->sq;
	enum ib_qp_state state = READ_ONCE(qp->state);
	int err;

	/* IBTA 10.8.2: posting to a send queue before RTS is an error. */
	if (state == IB_QPS_RESET || state == IB_QPS_INIT ||
	    state == IB_QPS_RTR) {
		*bad_wr = wr;
		return -EINVAL;
	}

	err = sroce_wq_post_send(sq, qp->type == IB_QPT_UD, wr, bad_wr);

	/*
	 * As the provider does: the producer store before the sq_idle load,
	 * pairing with the smp_mb() of an idle requester between its sq_idle
	 * store and its producer load. Either it sees the new WQEs, or we
	 * see it idle and run it.
	 */
	smp_mb();
	if (READ_ONCE(sq->hdr->sq_idle))
		sroce_req_kick_any(qp);
	return err;
}

/*
 * Kernel QPs: the work requests. User QPs: the doorbell, the uverbs
 * POST_SEND command with no work requests.
 */
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);

	if (qp->xrc == SROCE_XRC_TGT) {
		*bad_wr = wr;
		return -EINVAL;	/* a target has no send queue */
	}
	if (!qp->is_user)
		return sroce_post_send_kernel(qp, wr, bad_wr);
	if (wr) {
		*bad_wr = wr;
		return -EOPNOTSUPP;	/* user QPs post through the ring */
	}
	if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		/* Flush both queues, receives posted since included. */
		sroce_qp_error(qp);
		return 0;
	}
	/* Idle for real when this run is out of WQEs: sroce_req_defer_fetch() */
	spin_lock_bh(&qp->sq_lock);
	sroce_req_run_no_defer_locked(qp);
	spin_unlock_bh(&qp->sq_lock);
	return 0;
}
