// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - the receive side of a QP: the responder.
 *
 * Requests are processed in softirq as they arrive, under rq_lock: PSN check
 * (RC: NAK sequence error once per gap, duplicates re-ACKed, READs
 * re-executed, atomics replayed from the responder resources; UC: a gap
 * drops the message in progress), opcode sequence check, then placement of
 * the payload into the receive WQE (SEND) or the target region (WRITE),
 * READ responses and atomic ACKs, and ACKs for packets with AckReq.
 *
 * A READ whose responses exceed SROCE_RESP_BUDGET packets continues in
 * resp_work; requests that arrive meanwhile wait in qp->backlog (bounded) so
 * that responses leave in PSN order.
 *
 * Errors the requester must learn about become NAKs; errors that end the
 * connection (access or length violations) also complete the receive WQE in
 * use with an error and move the QP to ERR through err_work (the responder
 * does not take sq_lock).
 */

#include <linux/highmem.h>
#include <linux/slab.h>

#include "sroce.h"

#define SROCE_RESP_BUDGET	64
#define SROCE_BACKLOG_MAX	256

/* --------------------------------------------------------------- sending */

/* Return 0, or -ENOBUFS if the packet could not be queued (not sent). */
static int sroce_resp_send(struct sroce_qp *qp, u8 opcode, u32 psn, u8 syn,
			   const u8 *orig, struct sroce_mr *mr, u64 va,
			   u32 plen)
{
	const struct sroce_opcode_info *oi = sroce_opcode_lookup(opcode);
	struct sroce_txpkt tp;
	struct sroce_aeth aeth = { .syndrome = syn, .msn = qp->msn };

	if (sroce_tx_alloc(qp->sdev, &qp->av, oi->hdr_len, plen, &tp))
		return -ENOBUFS;
	tp.qp = qp;
	if (plen && sroce_mr_copy(mr, va, tp.payload, plen, SROCE_COPY_FROM_MR)) {
		kfree_skb(tp.skb);
		return 0;
	}
	sroce_bth_set_opcode(tp.bth, opcode);
	tp.bth[2] = 0xff;
	tp.bth[3] = 0xff;
	sroce_bth_set_dqpn(tp.bth, qp->dest_qpn);
	sroce_bth_set_psn(tp.bth, psn);
	if (sroce_opcode_has(oi, SROCE_HDR_AETH))
		sroce_aeth_encode(tp.bth + sroce_opcode_hdr_off(oi, SROCE_HDR_AETH),
				  &aeth);
	if (orig)
		memcpy(tp.bth + sroce_opcode_hdr_off(oi, SROCE_HDR_ATOMICACKETH),
		       orig, 8);
	return sroce_tx_send(qp->sdev, &qp->av, qp->sport, &tp) == -ENOBUFS ?
	       -ENOBUFS : 0;
}

static void sroce_send_ack(struct sroce_qp *qp, u32 psn, u8 syn)
{
	sroce_resp_send(qp, SROCE_OP_RC_ACKNOWLEDGE, psn, syn, NULL, NULL, 0, 0);
}

static void sroce_send_nak(struct sroce_qp *qp, u32 psn, enum sroce_nak_code c)
{
	if (c == SROCE_NAK_PSN_SEQ_ERROR)
		sroce_cnt_inc(qp->sdev, SROCE_CNT_SEQ_NAK_SENT);
	sroce_send_ack(qp, psn, sroce_aeth_syn_nak(c));
}

/* ---------------------------------------------------------- receive WQEs */

static u32 sroce_rwqe_max_sge(struct sroce_qp *qp)
{
	return qp->srq ? qp->srq->wq.max_sge : qp->rq.max_sge;
}

/* Take the next receive WQE into qp->rwqe: 0, -ENOSPC (none), -EIO (broken). */
static int sroce_rq_take(struct sroce_qp *qp)
{
	struct sroce_wq *rq = &qp->rq;
	bool broken = false;
	u32 prod;

	if (qp->srq)
		return sroce_srq_take(qp->srq, qp->rwqe, qp->rwqe_size);

	prod = sroce_wq_ring_prod(rq, &broken);
	if (broken)
		return -EIO;
	if (prod == rq->cons)
		return -ENOSPC;
	memcpy(qp->rwqe, rq->slots + (size_t)(rq->cons & (rq->entries - 1)) *
	       rq->wqe_size, rq->wqe_size);
	rq->cons++;
	sroce_wq_publish_cons(rq);
	return 0;
}

/*
 * User space broke the receive ring (or the SRQ's): tell it with an async
 * event, IB_EVENT_SRQ_ERR on the SRQ (once) and IB_EVENT_QP_FATAL on the QP;
 * the caller then moves the QP to ERR.
 */
static void sroce_rq_broken_event(struct sroce_qp *qp)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
	};

	if (qp->srq && !xchg(&qp->srq->broken, true) &&
	    qp->srq->ibsrq.event_handler) {
		ev.element.srq = &qp->srq->ibsrq;
		ev.event = IB_EVENT_SRQ_ERR;
		qp->srq->ibsrq.event_handler(&ev, qp->srq->ibsrq.srq_context);
	}
	if (!qp->resp_err && qp->ibqp.event_handler) {
		ev.element.qp = &qp->ibqp;
		ev.event = IB_EVENT_QP_FATAL;
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
}

/*
 * Post a receive completion. @imm is the ImmDt header (wire order) with
 * IB_WC_WITH_IMM; with IB_WC_WITH_INVALIDATE, @inv is the invalidated rkey.
 */
static void __sroce_recv_cqe(struct sroce_qp *qp, const struct sroce_recv_wqe *w,
			     enum ib_wc_status status, enum ib_wc_opcode opcode,
			     u32 byte_len, int flags, const u8 *imm, u32 inv,
			     u32 src_qp, u8 net_type, bool solicited)
{
	struct ib_wc wc = {
		.wr_id = w->wr_id,
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.qp = &qp->ibqp,
		.src_qp = src_qp,
		.wc_flags = flags,
		.port_num = SROCE_PORT,
		.network_hdr_type = net_type,
	};

	if (imm)
		memcpy(&wc.ex.imm_data, imm, 4);
	else if (flags & IB_WC_WITH_INVALIDATE)
		wc.ex.invalidate_rkey = inv;
	sroce_cq_post(qp->rcq, &wc, solicited);
}

static void sroce_recv_cqe(struct sroce_qp *qp, const struct sroce_recv_wqe *w,
			   enum ib_wc_status status, enum ib_wc_opcode opcode,
			   u32 byte_len, int flags, const u8 *imm, u32 src_qp,
			   bool solicited)
{
	__sroce_recv_cqe(qp, w, status, opcode, byte_len, flags, imm, 0,
			 src_qp, 0, solicited);
}

/* Complete every receive WQE with IB_WC_WR_FLUSH_ERR (QP in ERR). */
void sroce_rq_flush_locked(struct sroce_qp *qp)
{
	struct sroce_wq *rq = &qp->rq;
	bool broken = false;
	u32 prod;

	if (qp->rwqe_valid) {
		sroce_recv_cqe(qp, (void *)qp->rwqe, IB_WC_WR_FLUSH_ERR,
			       IB_WC_RECV, 0, 0, NULL, 0, false);
		qp->rwqe_valid = false;
	}
	if (qp->srq || !rq->hdr)
		return;
	prod = sroce_wq_ring_prod(rq, &broken);
	while (!broken && rq->cons != prod) {
		const struct sroce_recv_wqe *w = (const void *)(rq->slots +
			(size_t)(rq->cons & (rq->entries - 1)) * rq->wqe_size);
		struct sroce_recv_wqe copy;

		memcpy(&copy, w, sizeof(copy));
		sroce_recv_cqe(qp, &copy, IB_WC_WR_FLUSH_ERR, IB_WC_RECV, 0, 0,
			       NULL, 0, false);
		rq->cons++;
	}
	sroce_wq_publish_cons(rq);
}

static void sroce_resp_drop_write(struct sroce_qp *qp)
{
	if (qp->wr_mr)
		sroce_mr_put(qp->wr_mr);
	qp->wr_mr = NULL;
	qp->wr_left = 0;
}

static void sroce_read_job_end(struct sroce_qp *qp)
{
	if (qp->rj.mr)
		sroce_mr_put(qp->rj.mr);
	memset(&qp->rj, 0, sizeof(qp->rj));
}

void sroce_resp_reset_locked(struct sroce_qp *qp)
{
	struct sroce_wq *rq = &qp->rq;
	bool broken = false;
	u32 prod;

	sroce_resp_drop_write(qp);
	sroce_read_job_end(qp);
	skb_queue_purge(&qp->backlog);
	qp->rwqe_valid = false;
	qp->recv_off = 0;
	qp->in_msg = false;
	qp->nak_sent = false;
	qp->uc_drop = false;
	qp->resp_err = false;
	qp->epsn = 0;
	qp->msn = 0;
	if (qp->res)
		memset(qp->res, 0, SROCE_MAX_QP_RD_ATOM * sizeof(*qp->res));
	qp->res_next = 0;
	if (!qp->srq && rq->hdr) {
		prod = sroce_wq_ring_prod(rq, &broken);
		if (!broken)
			rq->cons = prod;
		sroce_wq_publish_cons(rq);
	}
}

/*
 * A fatal responder error: complete the receive WQE in use (if any) with
 * @status, NAK (RC), and have err_work move the QP to ERR.
 */
static void sroce_resp_fatal(struct sroce_qp *qp, u32 psn,
			     enum sroce_nak_code nak, enum ib_wc_status status)
{
	if (qp->rwqe_valid && status != IB_WC_SUCCESS) {
		sroce_recv_cqe(qp, (void *)qp->rwqe, status, IB_WC_RECV, 0, 0,
			       NULL, 0, false);
		qp->rwqe_valid = false;
	}
	if (qp->type == IB_QPT_RC)
		sroce_send_nak(qp, psn, nak);
	sroce_resp_drop_write(qp);
	qp->resp_err = true;
	if (!qp->dead)
		queue_work(system_highpri_wq, &qp->err_work);
}

/*
 * Place @len bytes at offset @off of the current receive WQE's buffers.
 * Return 0 or a completion status.
 */
static int sroce_rwqe_place(struct sroce_qp *qp, u32 off, const u8 *data,
			    u32 len)
{
	const struct sroce_recv_wqe *w = (const void *)qp->rwqe;

	return sroce_sge_copy(qp->sdev, qp->pd, (const void *)(w + 1),
			      min(w->num_sge, sroce_rwqe_max_sge(qp)), off,
			      (u8 *)data, len, SROCE_COPY_TO_MR);
}

/*
 * Make sure a receive WQE is at hand for the message @oi belongs to. Return
 * true if there is one; otherwise the packet has been dealt with (RC: RNR
 * NAK, UC: the message is dropped, a broken ring: fatal) and the caller
 * returns.
 */
static bool sroce_resp_get_rwqe(struct sroce_qp *qp, u32 psn,
				const struct sroce_opcode_info *oi)
{
	int err;

	if (qp->rwqe_valid)
		return true;
	err = sroce_rq_take(qp);
	if (!err) {
		qp->rwqe_valid = true;
		return true;
	}
	if (err != -ENOSPC) {
		sroce_rq_broken_event(qp);
		sroce_resp_fatal(qp, psn, SROCE_NAK_REMOTE_OP_ERROR, IB_WC_SUCCESS);
	} else if (qp->type == IB_QPT_RC) {
		sroce_cnt_inc(qp->sdev, SROCE_CNT_RNR_NAK_SENT);
		sroce_send_ack(qp, psn, sroce_aeth_syn_rnr(qp->min_rnr_timer));
		qp->nak_sent = true;
	} else {
		sroce_resp_drop_write(qp);
		qp->in_msg = false;
		qp->uc_drop = !(oi->flags & SROCE_OPF_END);
		qp->epsn = sroce_psn_inc(psn);
	}
	return false;
}

/* ------------------------------------------------------------------- UD */

static void sroce_resp_ud(struct sroce_qp *qp, const u8 *ip,
			  const struct sroce_pkt *pkt)
{
	const u8 *bth = ip + pkt->bth_off;
	struct sroce_deth deth;
	u8 grh[40] = {};
	const u8 *imm = NULL;
	int st, err;

	sroce_deth_decode(ip + pkt->hdr_off[SROCE_HDR_DETH], &deth);
	if (deth.qkey != qp->qkey) {
		sroce_cnt_inc(qp->sdev, SROCE_CNT_RX_STALE);
		return;
	}
	err = sroce_rq_take(qp);
	if (err) {
		if (err == -EIO) {
			sroce_rq_broken_event(qp);
			sroce_resp_fatal(qp, 0, SROCE_NAK_REMOTE_OP_ERROR,
					 IB_WC_SUCCESS);
		}
		return;		/* UD: no receive WQE, the message is lost */
	}
	/* The GRH slot: the IPv6 header, or the IPv4 header in its last 20 bytes. */
	if (pkt->ip_version == 6)
		memcpy(grh, ip, 40);
	else
		memcpy(grh + 20, ip, 20);
	qp->rwqe_valid = true;
	st = sroce_rwqe_place(qp, 0, grh, sizeof(grh));
	if (!st && pkt->payload_len)
		st = sroce_rwqe_place(qp, sizeof(grh), ip + pkt->payload_off,
				      pkt->payload_len);
	if (pkt->hdr_off[SROCE_HDR_IMMDT])
		imm = ip + pkt->hdr_off[SROCE_HDR_IMMDT];
	/*
	 * The network header type lets ib_core (ib_init_ah_attr_from_wc)
	 * read the GIDs out of the GRH slot: rdma_cm over QP1 needs it.
	 */
	__sroce_recv_cqe(qp, (void *)qp->rwqe, st ? st : IB_WC_SUCCESS,
			 IB_WC_RECV, sizeof(grh) + pkt->payload_len,
			 IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE |
			 (imm ? IB_WC_WITH_IMM : 0), imm, 0, deth.sqpn,
			 pkt->ip_version == 6 ? RDMA_NETWORK_IPV6 :
						RDMA_NETWORK_IPV4,
			 sroce_bth_se(bth));
	qp->rwqe_valid = false;
}

/* ------------------------------------------------------------ RC and UC */

static struct sroce_rd_res *sroce_res_find(struct sroce_qp *qp, u8 kind,
					   u32 psn)
{
	u32 i;

	for (i = 0; i < qp->nres; i++) {
		struct sroce_rd_res *r = &qp->res[i];

		if (r->kind == kind &&
		    sroce_psn_in_range(psn, r->first_psn, r->last_psn))
			return r;
	}
	return NULL;
}

static struct sroce_rd_res *sroce_res_new(struct sroce_qp *qp)
{
	struct sroce_rd_res *r = &qp->res[qp->res_next];

	qp->res_next = (qp->res_next + 1) % qp->nres;
	return r;
}

/* Send READ responses of the current job, up to @budget. Return true when done. */
static bool sroce_read_job_run(struct sroce_qp *qp, unsigned int budget)
{
	struct sroce_read_job *rj = &qp->rj;

	while (rj->active && budget--) {
		if (sroce_tx_full(qp)) {
			rj->tx_wait = true;	/* the skb destructor kicks us */
			return false;
		}
		bool first = rj->psn == rj->first_psn;
		bool last = rj->psn == rj->last_psn;
		u32 plen = min(qp->mtu, rj->left);
		u8 op;

		if (first && last)
			op = SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY;
		else if (first)
			op = SROCE_OP_RC_RDMA_READ_RESPONSE_FIRST;
		else if (last)
			op = SROCE_OP_RC_RDMA_READ_RESPONSE_LAST;
		else
			op = SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
		if (sroce_resp_send(qp, op, rj->psn,
				    sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID),
				    NULL, rj->mr, rj->va, plen)) {
			rj->stalled = true;	/* queue full: later */
			return false;
		}
		rj->va += plen;
		rj->left -= plen;
		if (last)
			sroce_read_job_end(qp);
		else
			rj->psn = sroce_psn_inc(rj->psn);
	}
	return !rj->active;
}

/* Start answering a READ request at @psn for @reth. Return a NAK code or -1. */
static int sroce_read_start(struct sroce_qp *qp, u32 psn,
			    const struct sroce_reth *reth)
{
	struct sroce_read_job *rj = &qp->rj;
	struct sroce_mr *mr = NULL;
	u32 npkts = max_t(u32, 1, DIV_ROUND_UP(reth->len, qp->mtu));

	if (!(qp->access & IB_ACCESS_REMOTE_READ))
		return SROCE_NAK_REMOTE_ACCESS_ERROR;
	if (reth->len > SROCE_MAX_MSG_SZ)
		return SROCE_NAK_INVALID_REQUEST;
	if (reth->len) {
		mr = sroce_mr_get(qp->sdev, qp->pd, reth->rkey, SROCE_KEY_REMOTE,
				  IB_ACCESS_REMOTE_READ, reth->va, reth->len);
		if (IS_ERR(mr))
			return SROCE_NAK_REMOTE_ACCESS_ERROR;
	}
	rj->active = true;
	rj->mr = mr;
	rj->va = reth->va;
	rj->left = reth->len;
	rj->psn = psn;
	rj->first_psn = psn;
	rj->last_psn = sroce_psn_add(psn, npkts - 1);
	return -1;
}

/* Continue later: right away, or after a tick if the queue was full. */
static void sroce_resp_defer(struct sroce_qp *qp)
{
	unsigned long delay = qp->rj.stalled ? 1 : 0;

	qp->rj.stalled = false;
	if (qp->rj.tx_wait) {
		qp->rj.tx_wait = false;
		return;
	}
	if (!qp->dead)
		queue_delayed_work(system_highpri_wq, &qp->resp_work, delay);
}

static void sroce_read_kick(struct sroce_qp *qp)
{
	if (!sroce_read_job_run(qp, SROCE_RESP_BUDGET))
		sroce_resp_defer(qp);
}

static int sroce_atomic_exec(struct sroce_qp *qp, const struct sroce_atomiceth *a,
			     u8 opcode, u64 *orig)
{
	struct sroce_mr *mr;
	struct page *page = NULL;
	unsigned int pgoff = 0;
	u64 *p;
	int err;

	if (!(qp->access & IB_ACCESS_REMOTE_ATOMIC))
		return SROCE_NAK_REMOTE_ACCESS_ERROR;
	if (a->va & 7)
		return SROCE_NAK_INVALID_REQUEST;
	mr = sroce_mr_get(qp->sdev, qp->pd, a->rkey, SROCE_KEY_REMOTE,
			  IB_ACCESS_REMOTE_ATOMIC, a->va, 8);
	if (IS_ERR(mr))
		return SROCE_NAK_REMOTE_ACCESS_ERROR;
	err = sroce_mr_page_at(mr, a->va, &page, &pgoff);
	if (err) {
		sroce_mr_put(mr);
		return SROCE_NAK_REMOTE_ACCESS_ERROR;
	}
	p = (u64 *)((u8 *)kmap_local_page(page) + pgoff);
	if (opcode == SROCE_OP_RC_COMPARE_SWAP)
		*orig = cmpxchg64(p, a->compare, a->swap_add);
	else
		*orig = atomic64_fetch_add(a->swap_add, (atomic64_t *)p);
	kunmap_local(p);
	sroce_mr_put(mr);
	return -1;
}

/* A request with a PSN before epsn. */
static void sroce_resp_dup(struct sroce_qp *qp, const u8 *ip,
			   const struct sroce_pkt *pkt, u32 psn)
{
	const u8 *bth = ip + pkt->bth_off;
	struct sroce_rd_res *r;

	sroce_cnt_inc(qp->sdev, SROCE_CNT_DUP_REQ);
	switch (pkt->info->kind) {
	case SROCE_KIND_READ_REQ: {
		struct sroce_reth reth;

		r = sroce_res_find(qp, SROCE_KIND_READ_REQ, psn);
		if (!r)
			return;
		sroce_reth_decode(ip + pkt->hdr_off[SROCE_HDR_RETH], &reth);
		if (sroce_read_start(qp, psn, &reth) < 0)
			sroce_read_kick(qp);
		return;
	}
	case SROCE_KIND_ATOMIC: {
		u8 orig[8];

		r = sroce_res_find(qp, SROCE_KIND_ATOMIC, psn);
		if (!r || r->first_psn != psn)
			return;
		sroce_put_be64(orig, r->orig);
		sroce_resp_send(qp, SROCE_OP_RC_ATOMIC_ACKNOWLEDGE, psn,
				sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID),
				orig, NULL, 0, 0);
		return;
	}
	default:
		/* SEND, WRITE: acknowledge everything received so far. */
		if (sroce_bth_ackreq(bth) || (pkt->info->flags & SROCE_OPF_END))
			sroce_send_ack(qp, sroce_psn_add(qp->epsn, SROCE_PSN_MAX),
				       sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID));
		return;
	}
}

/* Is @pos allowed after the previous packet of the connection? */
static bool sroce_seq_ok(struct sroce_qp *qp, const struct sroce_opcode_info *oi)
{
	if (!qp->in_msg)
		return oi->flags & SROCE_OPF_START;
	/* Continue the same kind of message. */
	return !(oi->flags & SROCE_OPF_START) && oi->kind == qp->msg_kind;
}

static void sroce_resp_exec(struct sroce_qp *qp, const u8 *ip,
			    const struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *oi = pkt->info;
	const u8 *bth = ip + pkt->bth_off;
	u32 psn = sroce_bth_psn(bth);
	bool rc = qp->type == IB_QPT_RC;
	u8 ack = sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID);
	const u8 *imm = pkt->hdr_off[SROCE_HDR_IMMDT] ?
			ip + pkt->hdr_off[SROCE_HDR_IMMDT] : NULL;
	int st, err;

	if (!sroce_seq_ok(qp, oi)) {
		if (rc) {
			sroce_resp_fatal(qp, psn, SROCE_NAK_INVALID_REQUEST,
					 IB_WC_REM_INV_REQ_ERR);
		} else {
			/* UC: drop the broken message, wait for a new one. */
			sroce_resp_drop_write(qp);
			qp->uc_drop = true;
			qp->in_msg = false;
			qp->epsn = sroce_psn_inc(psn);
		}
		return;
	}

	switch (oi->kind) {
	case SROCE_KIND_SEND:
		if ((oi->flags & SROCE_OPF_START) &&
		    !sroce_resp_get_rwqe(qp, psn, oi))
			return;
		if (oi->flags & SROCE_OPF_START)
			qp->recv_off = 0;
		st = sroce_rwqe_place(qp, qp->recv_off, ip + pkt->payload_off,
				      pkt->payload_len);
		if (st) {
			if (rc)
				sroce_resp_fatal(qp, psn,
						 st == IB_WC_LOC_LEN_ERR ?
						 SROCE_NAK_INVALID_REQUEST :
						 SROCE_NAK_REMOTE_OP_ERROR, st);
			else {
				/* UC: the message is lost, the WQE completes in error. */
				sroce_recv_cqe(qp, (void *)qp->rwqe, st, IB_WC_RECV,
					       0, 0, NULL, 0, false);
				qp->rwqe_valid = false;
				qp->uc_drop = !(oi->flags & SROCE_OPF_END);
				qp->in_msg = false;
				qp->epsn = sroce_psn_inc(psn);
			}
			return;
		}
		qp->recv_off += pkt->payload_len;
		if (oi->flags & SROCE_OPF_INV) {
			/*
			 * Remote invalidation: only a kernel consumer's
			 * fast-registration region of this PD qualifies.
			 */
			u32 rkey = sroce_ieth_rkey(ip + pkt->hdr_off[SROCE_HDR_IETH]);

			if (sroce_mr_invalidate(qp->sdev, qp->pd, rkey)) {
				sroce_resp_fatal(qp, psn, SROCE_NAK_INVALID_REQUEST,
						 IB_WC_REM_INV_REQ_ERR);
				return;
			}
			__sroce_recv_cqe(qp, (void *)qp->rwqe, IB_WC_SUCCESS,
					 IB_WC_RECV, qp->recv_off,
					 IB_WC_WITH_INVALIDATE, NULL, rkey,
					 qp->dest_qpn, 0, sroce_bth_se(bth));
			qp->rwqe_valid = false;
			qp->msn = (qp->msn + 1) & SROCE_MSN_MASK;
		} else if (oi->flags & SROCE_OPF_END) {
			sroce_recv_cqe(qp, (void *)qp->rwqe, IB_WC_SUCCESS,
				       IB_WC_RECV, qp->recv_off,
				       imm ? IB_WC_WITH_IMM : 0, imm,
				       qp->dest_qpn, sroce_bth_se(bth));
			qp->rwqe_valid = false;
			qp->msn = (qp->msn + 1) & SROCE_MSN_MASK;
		}
		break;

	case SROCE_KIND_WRITE:
		if (oi->flags & SROCE_OPF_START) {
			struct sroce_reth reth;

			sroce_reth_decode(ip + pkt->hdr_off[SROCE_HDR_RETH], &reth);
			if (!(qp->access & IB_ACCESS_REMOTE_WRITE)) {
				sroce_resp_fatal(qp, psn, SROCE_NAK_REMOTE_ACCESS_ERROR,
						 IB_WC_SUCCESS);
				return;
			}
			sroce_resp_drop_write(qp);
			if (reth.len) {
				struct sroce_mr *mr;

				mr = sroce_mr_get(qp->sdev, qp->pd, reth.rkey,
						  SROCE_KEY_REMOTE,
						  IB_ACCESS_REMOTE_WRITE,
						  reth.va, reth.len);
				if (IS_ERR(mr)) {
					sroce_resp_fatal(qp, psn,
							 SROCE_NAK_REMOTE_ACCESS_ERROR,
							 IB_WC_SUCCESS);
					return;
				}
				qp->wr_mr = mr;
			}
			qp->wr_va = reth.va;
			qp->wr_left = reth.len;
			qp->wr_len = reth.len;	/* byte_len of WRITE_IMM */
		}
		if (pkt->payload_len > qp->wr_left ||
		    ((oi->flags & SROCE_OPF_END) &&
		     pkt->payload_len != qp->wr_left)) {
			if (rc)
				sroce_resp_fatal(qp, psn, SROCE_NAK_INVALID_REQUEST,
						 IB_WC_SUCCESS);
			else {
				sroce_resp_drop_write(qp);
				qp->uc_drop = !(oi->flags & SROCE_OPF_END);
				qp->in_msg = false;
				qp->epsn = sroce_psn_inc(psn);
			}
			return;
		}
		/* The immediate data needs a receive WQE. */
		if (imm && !sroce_resp_get_rwqe(qp, psn, oi))
			return;
		if (pkt->payload_len) {
			if (sroce_mr_copy(qp->wr_mr, qp->wr_va,
					  (void *)(ip + pkt->payload_off),
					  pkt->payload_len, SROCE_COPY_TO_MR)) {
				sroce_resp_fatal(qp, psn, SROCE_NAK_REMOTE_ACCESS_ERROR,
						 IB_WC_SUCCESS);
				return;
			}
			qp->wr_va += pkt->payload_len;
			qp->wr_left -= pkt->payload_len;
		}
		if (oi->flags & SROCE_OPF_END) {
			sroce_resp_drop_write(qp);
			if (imm) {
				sroce_recv_cqe(qp, (void *)qp->rwqe, IB_WC_SUCCESS,
					       IB_WC_RECV_RDMA_WITH_IMM,
					       qp->wr_len, IB_WC_WITH_IMM, imm,
					       qp->dest_qpn, sroce_bth_se(bth));
				qp->rwqe_valid = false;
			}
			qp->msn = (qp->msn + 1) & SROCE_MSN_MASK;
		}
		break;

	case SROCE_KIND_READ_REQ: {
		struct sroce_reth reth;
		struct sroce_rd_res *r;

		sroce_reth_decode(ip + pkt->hdr_off[SROCE_HDR_RETH], &reth);
		err = sroce_read_start(qp, psn, &reth);
		if (err >= 0) {
			sroce_resp_fatal(qp, psn, err, IB_WC_SUCCESS);
			return;
		}
		r = sroce_res_new(qp);
		r->kind = SROCE_KIND_READ_REQ;
		r->first_psn = psn;
		r->last_psn = qp->rj.last_psn;
		qp->msn = (qp->msn + 1) & SROCE_MSN_MASK;
		qp->in_msg = false;
		qp->epsn = sroce_psn_inc(qp->rj.last_psn);
		sroce_read_kick(qp);
		return;
	}

	case SROCE_KIND_ATOMIC: {
		struct sroce_atomiceth a;
		struct sroce_rd_res *r;
		u8 orig[8];
		u64 val;

		sroce_atomiceth_decode(ip + pkt->hdr_off[SROCE_HDR_ATOMICETH], &a);
		err = sroce_atomic_exec(qp, &a, pkt->opcode, &val);
		if (err >= 0) {
			sroce_resp_fatal(qp, psn, err, IB_WC_SUCCESS);
			return;
		}
		r = sroce_res_new(qp);
		r->kind = SROCE_KIND_ATOMIC;
		r->first_psn = psn;
		r->last_psn = psn;
		r->orig = val;
		qp->msn = (qp->msn + 1) & SROCE_MSN_MASK;
		qp->in_msg = false;
		qp->epsn = sroce_psn_inc(psn);
		sroce_put_be64(orig, val);
		sroce_resp_send(qp, SROCE_OP_RC_ATOMIC_ACKNOWLEDGE, psn, ack,
				orig, NULL, 0, 0);
		return;
	}
	default:
		return;
	}

	qp->in_msg = !(oi->flags & SROCE_OPF_END);
	qp->msg_kind = oi->kind;
	qp->epsn = sroce_psn_inc(psn);
	if (rc && sroce_bth_ackreq(bth))
		sroce_send_ack(qp, psn, ack);
}

static void sroce_resp_process(struct sroce_qp *qp, struct sk_buff *skb,
			       const struct sroce_pkt *pkt)
{
	const u8 *ip = skb_network_header(skb);
	u32 psn = sroce_bth_psn(ip + pkt->bth_off);
	enum ib_qp_type type = qp->type;
	int d;

	if (type == IB_QPT_UD) {
		sroce_resp_ud(qp, ip, pkt);
		return;
	}

	d = sroce_psn_diff(psn, qp->epsn);
	if (type == IB_QPT_RC) {
		if (d > 0) {
			if (!qp->nak_sent) {
				sroce_send_nak(qp, qp->epsn, SROCE_NAK_PSN_SEQ_ERROR);
				qp->nak_sent = true;
			}
			return;
		}
		if (d < 0) {
			sroce_resp_dup(qp, ip, pkt, psn);
			return;
		}
		qp->nak_sent = false;
	} else {
		/*
		 * UC: a gap loses the message in progress. Its receive WQE,
		 * if it had one, is kept for the next message.
		 */
		if (d != 0) {
			sroce_resp_drop_write(qp);
			qp->in_msg = false;
			qp->uc_drop = true;
		}
		if (qp->uc_drop) {
			if (!(pkt->info->flags & SROCE_OPF_START)) {
				qp->epsn = sroce_psn_inc(psn);
				return;
			}
			qp->uc_drop = false;
		}
	}
	sroce_resp_exec(qp, ip, pkt);
}

/* A request arrived for @qp. Softirq. Consumes the skb. */
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    const struct sroce_pkt *pkt)
{
	enum sroce_transport want;

	switch (qp->type) {
	case IB_QPT_RC:
		want = SROCE_TRANSPORT_RC;
		break;
	case IB_QPT_UC:
		want = SROCE_TRANSPORT_UC;
		break;
	default:
		want = SROCE_TRANSPORT_UD;
		break;
	}

	spin_lock_bh(&qp->rq_lock);
	if (qp->dead || qp->resp_err || pkt->info->transport != want ||
	    (qp->state != IB_QPS_RTR && qp->state != IB_QPS_RTS &&
	     qp->state != IB_QPS_SQD && qp->state != IB_QPS_SQE)) {
		spin_unlock_bh(&qp->rq_lock);
		sroce_cnt_inc(qp->sdev, SROCE_CNT_RX_STALE);
		kfree_skb(skb);
		return;
	}
	if (qp->rj.active || !skb_queue_empty(&qp->backlog)) {
		if (skb_queue_len(&qp->backlog) < SROCE_BACKLOG_MAX) {
			__skb_queue_tail(&qp->backlog, skb);
			skb = NULL;
		}
		spin_unlock_bh(&qp->rq_lock);
		if (skb)
			kfree_skb(skb);	/* the requester will retry */
		return;
	}
	sroce_resp_process(qp, skb, pkt);
	spin_unlock_bh(&qp->rq_lock);
	consume_skb(skb);
}

/* Continue a long READ, then the requests that queued up behind it. */
void sroce_resp_work(struct work_struct *work)
{
	struct sroce_qp *qp = container_of(to_delayed_work(work),
					   struct sroce_qp, resp_work);
	unsigned int budget = SROCE_RESP_BUDGET * 4;
	struct sk_buff *skb;

	spin_lock_bh(&qp->rq_lock);
	while (!qp->dead && budget--) {
		struct sroce_pkt pkt;
		const u8 *ip;

		if (qp->rj.active) {
			if (!sroce_read_job_run(qp, SROCE_RESP_BUDGET)) {
				if (qp->rj.stalled || qp->rj.tx_wait)
					break;
				continue;
			}
		}
		skb = __skb_dequeue(&qp->backlog);
		if (!skb)
			break;
		ip = skb_network_header(skb);
		if (qp->resp_err ||
		    sroce_parse_ip(ip, skb_tail_pointer(skb) - ip,
				   SROCE_PARSE_NO_ICRC, &pkt) != SROCE_WIRE_OK) {
			kfree_skb(skb);
			continue;
		}
		sroce_resp_process(qp, skb, &pkt);
		consume_skb(skb);
	}
	if (qp->rj.active || !skb_queue_empty(&qp->backlog))
		sroce_resp_defer(qp);
	spin_unlock_bh(&qp->rq_lock);
}
