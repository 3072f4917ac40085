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
 * ACKs are coalesced: a request that asks for one notes its PSN, and the QP
 * joins a list of this CPU whose tasklet runs when the softirq that
 * received the request has finished its batch (a NAPI poll, a loopback
 * run); it then sends one ACK per QP, for the newest PSN noted. Requests
 * that arrive together (a train of small messages, the data and response
 * of an NVMe-oF read) are acknowledged by one frame. Any other packet the
 * responder sends (NAK, READ response, atomic ACK) and every end of the
 * responder (ERR, reset, destroy) sends the ACK still owed first, so the
 * peer sees the same packets in the same PSN order as without coalescing,
 * only fewer ACKs.
 *
 * A READ whose responses exceed SROCE_RESP_BUDGET packets continues in
 * resp_work; requests that arrive meanwhile wait in qp->resp.backlog (bounded) so
 * that responses leave in PSN order.
 *
 * Errors the requester must learn about become NAKs; errors that end the
 * connection (access or length violations) also complete the receive WQE in
 * use with an error and move the QP to ERR through err_work (the responder
 * does not take sq_lock). On a UC QP the same errors drop the message and
 * the QP stays in RTS (IBTA 9.4.x: UC has no NAKs).
 *
 * Trust: a request is accepted only from the QP's peer (IP source and
 * destination of its path, RC and UC) with the QP's P_Key. Regions are
 * looked up by key for every packet (sroce_mr_access()): the responder
 * keeps no reference on a region between packets, so an invalidation or a
 * deregistration stops a message half way (NAK remote access error) and a
 * peer that goes silent mid-message holds nothing up. In ERR the responder
 * executes nothing: the backlog is dropped and the READ job ended.
 *
 * On-demand paging: a request that needs a page of an ODP region that is
 * not mapped yet is not executed at all; the region queues a fault and the
 * responder answers with an RNR NAK (RC; the requester sends the packet
 * again after the delay, as with hardware ODP) or loses the message (UC,
 * UD). A READ job waits a tick and goes on.
 *
 * XRC: a target QP follows RC's rules, but every request names an XRC SRQ
 * of the QP's domain in its XRCETH. That SRQ, looked up again for every
 * packet (a reference held while it executes, qp->resp.xsrq), gives the
 * receive WQE, the PD that keys must belong to and the CQ of the
 * completion; all packets of a message must name the same SRQ. A request
 * that names no SRQ of the domain is an invalid request (NAK, QP to ERR).
 */

#include <linux/highmem.h>
#include <linux/if_vlan.h>
#include <linux/slab.h>

#include "sroce.h"

/*
 * The PD the keys of requests to @qp belong to: the QP's, or for an XRC
 * target the PD of the SRQ the packet names (none between packets).
 */
static struct sroce_pd *sroce_resp_pd(const struct sroce_qp *qp)
{
	return qp->xrc ? (qp->resp.xsrq ? qp->resp.xsrq->pd : NULL) : qp->pd;
}

/* Where receive WQEs come from, if not the QP's own RQ. */
static struct sroce_srq *sroce_resp_srq(const struct sroce_qp *qp)
{
	return qp->xrc ? qp->resp.xsrq : qp->srq;
}

/* The CQ of receive completions (NULL: an XRC target between packets). */
static struct sroce_cq *sroce_resp_cq(const struct sroce_qp *qp)
{
	return qp->xrc ? (qp->resp.xsrq ? qp->resp.xsrq->cq : NULL) : qp->rcq;
}

/*
 * An access by the peer of @qp through @rkey, which names a region or a
 * memory window (type 2B windows check the QP).
 */
static int sroce_rkey_access(struct sroce_qp *qp, u32 rkey, int access,
			     u64 va, u64 len, sroce_mr_page_fn fn, void *priv)
{
	return sroce_mr_access(qp->sdev, sroce_resp_pd(qp), qp->ibqp.qp_num,
			       rkey, access, va, len, fn, priv);
}

static int sroce_rkey_copy(struct sroce_qp *qp, u32 rkey, int access, u64 va,
			   void *buf, u32 len, enum sroce_copy_dir dir)
{
	return sroce_mr_copy(qp->sdev, sroce_resp_pd(qp), qp->ibqp.qp_num,
			     rkey, access, va, buf, len, dir);
}

/* The payload of request @skb (parsed as @pkt) into region @rkey at @va. */
static int sroce_rkey_put_payload(struct sroce_qp *qp, u32 rkey, u64 va,
				  const struct sk_buff *skb,
				  const struct sroce_pkt *pkt)
{
	return sroce_mr_copy_skb(qp->sdev, sroce_resp_pd(qp), qp->ibqp.qp_num,
				 rkey, IB_ACCESS_REMOTE_WRITE, va, skb,
				 sroce_skb_off(skb, pkt->payload_off),
				 pkt->payload_len);
}

/* The response opcode for RC opcode @rc_op on @qp's transport. */
static u8 sroce_resp_opcode(const struct sroce_qp *qp, u8 rc_op)
{
	return rc_op | (u8)(sroce_qp_transport(qp) << 5);
}

#define SROCE_RESP_BUDGET	64
/*
 * Requests waiting behind a READ: per QP, and in bytes for the whole device,
 * whose QPs may all be answering READs (the skbs are charged to no socket
 * once looped back or received). Past either, a request is dropped and the
 * requester retransmits it.
 */
#define SROCE_BACKLOG_MAX	256
#define SROCE_BACKLOG_DEV_BYTES	(32L << 20)

/* --------------------------------------------------------------- sending */

/*
 * A response the responder sends: ACK/NAK (syndrome), atomic ACK (the
 * original value) or READ response (@plen bytes at @va of region @rkey).
 */
struct sroce_resp_pkt {
	u8			opcode;
	u32			psn;
	u32			msn;
	u8			syn;
	u64			orig;
	u32			rkey;
	u64			va;
	u32			plen;
};

/*
 * Return 0, -ENOBUFS if the packet could not be queued (not sent), -EAGAIN
 * if its payload is in an ODP page not mapped yet (not sent), or -EACCES if
 * it could not be read from region @rkey any more.
 */
static int sroce_resp_xmit(struct sroce_qp *qp, const struct sroce_resp_pkt *p)
{
	const struct sroce_opcode_info *oi = sroce_opcode_lookup(p->opcode);
	struct sroce_aeth aeth = { .syndrome = p->syn, .msn = p->msn };
	struct sroce_txpkt tp;
	unsigned int wire;

	if (sroce_tx_alloc(qp->sdev, &qp->av, oi->hdr_len, p->plen, &tp))
		return -ENOBUFS;
	tp.qp = qp;
	tp.dst = &qp->tx_dst;
	if (p->plen) {
		int err = sroce_rkey_copy(qp, p->rkey, IB_ACCESS_REMOTE_READ,
					  p->va, tp.payload, p->plen,
					  SROCE_COPY_FROM_MR);

		if (err) {
			kfree_skb(tp.skb);
			return err == -EAGAIN ? -EAGAIN : -EACCES;
		}
	}
	sroce_bth_init(tp.bth, p->opcode, SROCE_DEFAULT_PKEY, qp->dest_qpn,
		       p->psn);
	if (sroce_opcode_has(oi, SROCE_HDR_AETH))
		sroce_aeth_encode(tp.bth + oi->hdr_off[SROCE_HDR_AETH], &aeth);
	if (sroce_opcode_has(oi, SROCE_HDR_ATOMICACKETH))
		sroce_put_be64(tp.bth + oi->hdr_off[SROCE_HDR_ATOMICACKETH],
			       p->orig);
	wire = tp.skb->len + ETH_HLEN;
	if (sroce_tx_send(qp->sdev, &qp->av, qp->sport, &tp) == -ENOBUFS)
		return -ENOBUFS;
	if (p->plen)
		sroce_cc_sent(qp, wire);	/* READ responses are paced */
	return 0;
}

/* --------------------------------------------------------- ACK coalescing */

struct sroce_ack_cpu {
	struct list_head	qps;	/* resp.ack_node, ack_queued */
	struct tasklet_struct	tasklet;
};

static DEFINE_PER_CPU(struct sroce_ack_cpu, sroce_ack_cpu);

/* Send the ACK @qp owes, if any. rq_lock held. */
void sroce_resp_ack_flush_locked(struct sroce_qp *qp)
{
	struct sroce_resp_pkt p;

	if (!qp->resp.ack_pending)
		return;
	p = (struct sroce_resp_pkt) {
		.opcode = sroce_resp_opcode(qp, SROCE_OP_RC_ACKNOWLEDGE),
		.psn = qp->resp.ack_psn,
		.msn = qp->resp.ack_msn,
		.syn = sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID),
	};
	qp->resp.ack_pending = false;
	sroce_resp_xmit(qp, &p);	/* if lost, the requester's timer resends */
}

/* The same, from the requester (sq_lock held, BHs off; sq_lock before rq_lock). */
void sroce_resp_ack_flush(struct sroce_qp *qp)
{
	spin_lock(&qp->rq_lock);
	sroce_resp_ack_flush_locked(qp);
	spin_unlock(&qp->rq_lock);
}

/*
 * The request at @psn asked for an ACK: owe it, and send it at the end of
 * the receive batch. rq_lock held (BHs off: this CPU's list is ours).
 */
static void sroce_resp_ack_later(struct sroce_qp *qp, u32 psn)
{
	struct sroce_ack_cpu *ac;

	if (qp->resp.ack_pending)
		sroce_cnt_inc(qp->sdev, SROCE_CNT_ACK_COALESCED);
	qp->resp.ack_pending = true;
	qp->resp.ack_psn = psn;
	qp->resp.ack_msn = qp->resp.msn;
	if (qp->resp.ack_queued)
		return;		/* on a list already, maybe another CPU's */
	if (!refcount_inc_not_zero(&qp->slot->ref)) {
		sroce_resp_ack_flush_locked(qp);	/* being destroyed */
		return;
	}
	ac = this_cpu_ptr(&sroce_ack_cpu);
	qp->resp.ack_queued = true;
	list_add_tail(&qp->resp.ack_node, &ac->qps);
	tasklet_schedule(&ac->tasklet);
}

/* After a receive batch: the ACKs the QPs that joined this CPU's list owe. */
static void sroce_ack_tasklet(struct tasklet_struct *t)
{
	struct sroce_ack_cpu *ac = from_tasklet(ac, t, tasklet);
	struct sroce_qp *qp, *next;
	LIST_HEAD(qps);

	list_splice_init(&ac->qps, &qps);
	list_for_each_entry_safe(qp, next, &qps, resp.ack_node) {
		/* Off the list before another CPU may queue it again. */
		list_del_init(&qp->resp.ack_node);
		spin_lock(&qp->rq_lock);
		qp->resp.ack_queued = false;
		sroce_resp_ack_flush_locked(qp);
		spin_unlock(&qp->rq_lock);
		sroce_qp_put(qp);
	}
}

void sroce_resp_ack_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct sroce_ack_cpu *ac = per_cpu_ptr(&sroce_ack_cpu, cpu);

		INIT_LIST_HEAD(&ac->qps);
		tasklet_setup(&ac->tasklet, sroce_ack_tasklet);
	}
}

/* Module exit: every QP is gone, and with them the references queued. */
void sroce_resp_ack_fini(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		tasklet_kill(&per_cpu_ptr(&sroce_ack_cpu, cpu)->tasklet);
}

/*
 * Send a response. An ACK still owed goes first: it covers PSNs before
 * this packet's.
 */
static int sroce_resp_send(struct sroce_qp *qp, const struct sroce_resp_pkt *p)
{
	sroce_resp_ack_flush_locked(qp);
	return sroce_resp_xmit(qp, p);
}

static void sroce_send_ack(struct sroce_qp *qp, u32 psn, u8 syn)
{
	struct sroce_resp_pkt p = {
		.opcode = sroce_resp_opcode(qp, SROCE_OP_RC_ACKNOWLEDGE),
		.psn = psn,
		.msn = qp->resp.msn,
		.syn = syn,
	};

	sroce_resp_send(qp, &p);
}

/* The answer to the atomic at @psn: @orig, the value it found. */
static void sroce_send_atomic_ack(struct sroce_qp *qp, u32 psn, u64 orig)
{
	struct sroce_resp_pkt p = {
		.opcode = sroce_resp_opcode(qp, SROCE_OP_RC_ATOMIC_ACKNOWLEDGE),
		.psn = psn,
		.msn = qp->resp.msn,
		.syn = sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID),
		.orig = orig,
	};

	sroce_resp_send(qp, &p);
}

/*
 * The answer to the ATOMIC WRITE at @psn: an RDMA READ RESPONSE ONLY without
 * payload (IBTA 1.5; rdma_rxe answers so too, and takes either this or an
 * ACK).
 */
static void sroce_send_atomic_write_ack(struct sroce_qp *qp, u32 psn)
{
	struct sroce_resp_pkt p = {
		.opcode = sroce_resp_opcode(qp, SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY),
		.psn = psn,
		.msn = qp->resp.msn,
		.syn = sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID),
	};

	sroce_resp_send(qp, &p);
}

static void sroce_send_nak(struct sroce_qp *qp, u32 psn, enum sroce_nak_code c)
{
	sroce_qp_dbg(qp, "NAK %d sent for PSN %u\n", c, psn);
	if (c == SROCE_NAK_PSN_SEQ_ERROR)
		sroce_cnt_inc(qp->sdev, SROCE_CNT_SEQ_NAK_SENT);
	sroce_send_ack(qp, psn, sroce_aeth_syn_nak(c));
}

/* ---------------------------------------------------------- receive WQEs */

static u32 sroce_rwqe_max_sge(struct sroce_qp *qp)
{
	struct sroce_srq *srq = sroce_resp_srq(qp);

	return srq ? srq->wq.max_sge : qp->rq.max_sge;
}

/* Take the next receive WQE into qp->resp.rwqe: 0, -ENOSPC (none), -EIO (broken). */
static int sroce_rq_take(struct sroce_qp *qp)
{
	struct sroce_srq *srq = sroce_resp_srq(qp);
	struct sroce_wq *rq = &qp->rq;
	bool broken = false;
	u32 prod;

	if (srq)
		return sroce_srq_take(srq, qp->resp.rwqe, qp->resp.rwqe_size);
	if (!rq->hdr)
		return -ENOSPC;	/* an XRC target between packets: never */

	prod = sroce_wq_ring_prod(rq, rq->cons, &broken);
	if (broken)
		return -EIO;
	if (prod == rq->cons)
		return -ENOSPC;
	memcpy(qp->resp.rwqe, sroce_wq_slot(rq, rq->cons), rq->wqe_size);
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
	struct sroce_srq *srq = sroce_resp_srq(qp);

	sroce_qp_dbg(qp, "receive ring broken by its producer\n");
	if (srq && !xchg(&srq->broken, true))
		sroce_srq_event(srq, IB_EVENT_SRQ_ERR);
	if (!qp->resp.failed)
		sroce_qp_event(qp, IB_EVENT_QP_FATAL);
}

/*
 * Complete the receive WQE in use (qp->resp.rwqe) with @wc, which names the
 * status, opcode, length and flags; wr_id, QP and port are filled in here.
 * The WQE is used up. Return false if the CQ could not take the completion
 * (full or overrun): the caller ends the QP (sroce_resp_cq_lost()).
 */
static bool sroce_rwqe_complete(struct sroce_qp *qp, struct ib_wc *wc,
				bool solicited)
{
	struct sroce_cq *cq = sroce_resp_cq(qp);
	int err = 0;

	wc->wr_id = qp->resp.rwqe->wr_id;
	wc->qp = &qp->ibqp;
	wc->port_num = SROCE_PORT;
	if (cq)
		err = sroce_cq_post(cq, wc, solicited);
	qp->resp.rwqe_valid = false;
	return !err;
}

/* Complete the receive WQE @wr_id with IB_WC_WR_FLUSH_ERR. */
static void sroce_recv_flush_cqe(struct sroce_qp *qp, u64 wr_id)
{
	struct sroce_cq *cq = sroce_resp_cq(qp);
	struct ib_wc wc = {
		.wr_id = wr_id,
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = IB_WC_RECV,
		.qp = &qp->ibqp,
		.port_num = SROCE_PORT,
	};

	if (cq)
		sroce_cq_post(cq, &wc, false);
}

/* The immediate data of a request: ImmDt as it is on the wire. */
static __be32 sroce_imm(const u8 *immdt)
{
	__be32 imm;

	memcpy(&imm, immdt, sizeof(imm));
	return imm;
}

/*
 * Complete every receive WQE with IB_WC_WR_FLUSH_ERR (QP in ERR). A user RQ
 * says so in its header, so that the provider rings the doorbell after
 * posting further receives and they are flushed too (sroce-abi.h).
 */
void sroce_rq_flush_locked(struct sroce_qp *qp)
{
	struct sroce_wq *rq = &qp->rq;
	bool broken = false;
	u32 prod;

	if (qp->resp.rwqe_valid) {
		struct sroce_srq *xsrq = NULL;

		/* XRC target: the WQE's SRQ, unless it is gone (and its CQ). */
		if (qp->xrc && !qp->resp.xsrq) {
			xsrq = sroce_xrc_srq_get_gen(qp->sdev, qp->resp.xsrqn,
						     qp->xrcd, qp->resp.xsrq_gen);
			qp->resp.xsrq = xsrq;
		}
		sroce_recv_flush_cqe(qp, qp->resp.rwqe->wr_id);
		qp->resp.rwqe_valid = false;
		if (xsrq) {
			qp->resp.xsrq = NULL;
			sroce_srq_put(xsrq);
		}
	}
	if (qp->srq || !rq->hdr)
		return;
	if (rq->mentry) {
		WRITE_ONCE(rq->hdr->sq_idle, 1);
		smp_mb();	/* pairs with the provider's post_recv */
	}
	prod = sroce_wq_ring_prod(rq, rq->cons, &broken);
	while (rq->cons != prod) {
		const struct sroce_recv_wqe *w = sroce_wq_slot(rq, rq->cons);
		/* One read of the user-writable slot. */
		u64 wr_id = READ_ONCE(w->wr_id);

		/* The slot is free before its completion can be polled. */
		rq->cons++;
		sroce_wq_publish_cons(rq);
		sroce_recv_flush_cqe(qp, wr_id);
	}
}

static void sroce_resp_drop_write(struct sroce_qp *qp)
{
	qp->resp.write.rkey = 0;
	qp->resp.write.left = 0;
}

static void sroce_read_job_end(struct sroce_qp *qp)
{
	memset(&qp->resp.read, 0, sizeof(qp->resp.read));
}

/* The backlog (under rq_lock): its skbs count against the device's limit. */
static bool sroce_resp_backlog_charge(struct sroce_qp *qp, struct sk_buff *skb)
{
	atomic_long_t *bytes = &qp->sdev->backlog_bytes;

	if (atomic_long_add_return(skb->truesize, bytes) <=
	    SROCE_BACKLOG_DEV_BYTES)
		return true;
	atomic_long_sub(skb->truesize, bytes);
	return false;
}

static struct sk_buff *sroce_resp_backlog_pop(struct sroce_qp *qp)
{
	struct sk_buff *skb = __skb_dequeue(&qp->resp.backlog);

	if (skb)
		atomic_long_sub(skb->truesize, &qp->sdev->backlog_bytes);
	return skb;
}

static void sroce_resp_backlog_purge(struct sroce_qp *qp)
{
	struct sk_buff *skb;

	while ((skb = sroce_resp_backlog_pop(qp)))
		kfree_skb(skb);
}

/*
 * The responder stops: no message in progress, no READ being answered,
 * nothing queued behind it. For ERR, reset and destroy; frees skbs that may
 * be this QP's own looped-back packets (whose destructor destroy_qp waits
 * for).
 */
void sroce_resp_stop_locked(struct sroce_qp *qp)
{
	/* What was executed is acknowledged, even on the way to ERR. */
	sroce_resp_ack_flush_locked(qp);
	sroce_resp_drop_write(qp);
	sroce_read_job_end(qp);
	qp->resp.in_msg = false;
	sroce_resp_backlog_purge(qp);
}

void sroce_resp_reset_locked(struct sroce_qp *qp)
{
	struct sroce_wq *rq = &qp->rq;
	bool broken = false;
	u32 prod;

	sroce_resp_stop_locked(qp);
	qp->resp.rwqe_valid = false;
	qp->resp.recv_off = 0;
	qp->resp.nak_sent = false;
	qp->resp.uc_drop = false;
	qp->resp.failed = false;
	qp->resp.err_pending = false;
	qp->resp.err_event = false;
	qp->resp.comm_est = false;
	qp->resp.epsn = 0;
	qp->resp.rd_run = false;
	qp->resp.msn = 0;
	qp->resp.xsrqn = 0;
	qp->resp.xsrq_gen = 0;
	if (qp->resp.res)
		memset(qp->resp.res, 0, SROCE_MAX_QP_RD_ATOM * sizeof(*qp->resp.res));
	qp->resp.res_next = 0;
	if (!qp->srq && rq->hdr) {
		prod = sroce_wq_ring_prod(rq, rq->cons, &broken);
		rq->cons = prod;
		sroce_wq_publish_cons(rq);
		if (rq->mentry)
			WRITE_ONCE(rq->hdr->sq_idle, 0);
	}
}

/*
 * A fatal responder error: complete the receive WQE in use (if any) with
 * @status, NAK (RC), and have err_work move the QP to ERR. An invalid
 * request or an access error that no receive completion reports raises
 * IB_EVENT_QP_REQ_ERR or IB_EVENT_QP_ACCESS_ERR once the QP is in ERR
 * (IBTA's local work queue errors), as hardware RNICs do.
 */
static void sroce_resp_fatal(struct sroce_qp *qp, u32 psn,
			     enum sroce_nak_code nak, enum ib_wc_status status)
{
	bool reported = false;

	sroce_qp_dbg(qp, "responder error at PSN %u (NAK %d, %s), QP to ERR\n",
		     psn, nak, ib_wc_status_msg(status));
	if (qp->resp.rwqe_valid && status != IB_WC_SUCCESS) {
		struct ib_wc wc = { .status = status, .opcode = IB_WC_RECV };

		sroce_rwqe_complete(qp, &wc, false);
		reported = true;
	}
	if (!reported && !qp->resp.failed &&
	    (nak == SROCE_NAK_INVALID_REQUEST ||
	     nak == SROCE_NAK_REMOTE_ACCESS_ERROR)) {
		qp->resp.err_event = true;
		qp->resp.err_event_type = nak == SROCE_NAK_INVALID_REQUEST ?
					  IB_EVENT_QP_REQ_ERR :
					  IB_EVENT_QP_ACCESS_ERR;
	}
	if (qp->type == IB_QPT_RC)
		sroce_send_nak(qp, psn, nak);
	sroce_resp_stop_locked(qp);
	qp->resp.failed = true;
	qp->resp.err_pending = true;
	if (!qp->dead)
		queue_work(sroce_wq, &qp->err_work);
}

/*
 * The receive CQ could not take the completion of the message ending at
 * @psn (full or overrun, IBTA C9-218 and C11-37): the QP goes to ERR with
 * IB_EVENT_QP_FATAL. The message is not acknowledged: an RC peer gets a NAK
 * (remote operational error) for it, after the ACK still owed for the
 * messages before it.
 */
static void sroce_resp_cq_lost(struct sroce_qp *qp, u32 psn)
{
	sroce_qp_dbg(qp, "receive CQ overrun at PSN %u\n", psn);
	if (!qp->resp.failed) {
		qp->resp.err_event = true;
		qp->resp.err_event_type = IB_EVENT_QP_FATAL;
	}
	sroce_resp_fatal(qp, psn, SROCE_NAK_REMOTE_OP_ERROR, IB_WC_SUCCESS);
}

/*
 * UC: the message at @psn is dropped (an error, a gap or a broken sequence):
 * skip to the start of the next one. The receive WQE, if one was taken, is
 * kept for the next message. The QP stays in RTS.
 */
static void sroce_uc_drop(struct sroce_qp *qp, u32 psn,
			  const struct sroce_opcode_info *oi)
{
	sroce_resp_drop_write(qp);
	qp->resp.in_msg = false;
	qp->resp.uc_drop = !(oi->flags & SROCE_OPF_END);
	qp->resp.epsn = sroce_psn_inc(psn);
}

/*
 * An error in the request at @psn: RC ends the connection (NAK @nak, the
 * receive WQE in use completes with @status); UC drops the message and
 * counts it.
 */
static void sroce_resp_error(struct sroce_qp *qp, u32 psn,
			     const struct sroce_opcode_info *oi,
			     enum sroce_nak_code nak, enum ib_wc_status status)
{
	if (qp->type == IB_QPT_RC) {
		sroce_resp_fatal(qp, psn, nak, status);
		return;
	}
	sroce_cnt_inc(qp->sdev, SROCE_CNT_DROP_UC);
	sroce_uc_drop(qp, psn, oi);
}

static void sroce_msn_bump(struct sroce_qp *qp)
{
	qp->resp.msn = (qp->resp.msn + 1) & SROCE_MSN_MASK;
}

/* Bytes the receive WQE in qp->resp.rwqe can take. */
static u64 sroce_rwqe_room(struct sroce_qp *qp)
{
	const struct sroce_recv_wqe *w = (const void *)qp->resp.rwqe;
	const struct sroce_sge *sge = (const void *)(w + 1);
	u32 i, n = min(w->num_sge, sroce_rwqe_max_sge(qp));
	u64 room = 0;

	for (i = 0; i < n; i++)
		room += sge[i].length;
	return room;
}

/*
 * Place @len bytes at offset @off of the current receive WQE's buffers. The
 * lkeys belong to the PD of the receive queue: the SRQ's for a QP on an SRQ.
 * Return 0 or a completion status.
 */
static int sroce_rwqe_place(struct sroce_qp *qp, u32 off, const u8 *data,
			    u32 len)
{
	const struct sroce_recv_wqe *w = (const void *)qp->resp.rwqe;
	struct sroce_srq *srq = sroce_resp_srq(qp);

	return sroce_sge_copy(qp->sdev, srq ? srq->pd : qp->pd,
			      (const void *)(w + 1),
			      min(w->num_sge, sroce_rwqe_max_sge(qp)), off,
			      (u8 *)data, len, SROCE_COPY_TO_MR);
}

/* Place the payload of @skb (parsed as @pkt) as sroce_rwqe_place() does. */
static int sroce_rwqe_place_payload(struct sroce_qp *qp, u32 off,
				    const struct sk_buff *skb,
				    const struct sroce_pkt *pkt)
{
	const struct sroce_recv_wqe *w = (const void *)qp->resp.rwqe;
	struct sroce_srq *srq = sroce_resp_srq(qp);

	return sroce_sge_copy_skb(qp->sdev, srq ? srq->pd : qp->pd,
				  (const void *)(w + 1),
				  min(w->num_sge, sroce_rwqe_max_sge(qp)), off,
				  skb, sroce_skb_off(skb, pkt->payload_off),
				  pkt->payload_len);
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

	if (qp->resp.rwqe_valid)
		return true;
	err = sroce_rq_take(qp);
	if (!err) {
		qp->resp.rwqe_valid = true;
		return true;
	}
	if (err != -ENOSPC) {
		sroce_rq_broken_event(qp);
		sroce_resp_fatal(qp, psn, SROCE_NAK_REMOTE_OP_ERROR, IB_WC_SUCCESS);
	} else if (qp->type == IB_QPT_RC) {
		sroce_cnt_inc(qp->sdev, SROCE_CNT_RNR_NAK_SENT);
		sroce_send_ack(qp, psn, sroce_aeth_syn_rnr(qp->min_rnr_timer));
		qp->resp.nak_sent = true;
	} else {	/* UC: no RNR NAK, the message is lost */
		sroce_cnt_inc(qp->sdev, SROCE_CNT_DROP_NO_RECV);
		sroce_uc_drop(qp, psn, oi);
	}
	return false;
}

/* RNR NAK delay for a page fault: the QP's, but not 0 (655 ms) or above 5 ms. */
static u8 sroce_odp_rnr_timer(const struct sroce_qp *qp)
{
	return qp->min_rnr_timer && qp->min_rnr_timer <= 18 ?
	       qp->min_rnr_timer : 18;
}

/*
 * The request at @psn needs an ODP page that is being faulted in; nothing
 * of it was executed. RC: RNR NAK, the requester sends it again. UC: the
 * message is lost, as any damaged UC message is.
 */
static void sroce_resp_odp_wait(struct sroce_qp *qp, u32 psn,
				const struct sroce_opcode_info *oi)
{
	if (qp->type == IB_QPT_RC) {
		sroce_cnt_inc(qp->sdev, SROCE_CNT_RNR_NAK_SENT);
		sroce_send_ack(qp, psn, sroce_aeth_syn_rnr(sroce_odp_rnr_timer(qp)));
		qp->resp.nak_sent = true;
	} else {
		sroce_cnt_inc(qp->sdev, SROCE_CNT_DROP_UC);
		sroce_uc_drop(qp, psn, oi);
	}
}

/* ------------------------------------------------------------------- UD */

/*
 * A UD message is placed whole or not at all: one that does not fit the
 * receive WQE is dropped and counted, and the WQE waits for the next
 * message. Completing it in error would let any host use up the receive
 * queue, and ib_mad does not repost failed receives of the GSI QP.
 */
static void sroce_resp_ud(struct sroce_qp *qp, const struct sk_buff *skb,
			  const struct sroce_pkt *pkt)
{
	const u8 *ip = skb_network_header(skb);
	const u8 *bth = ip + pkt->bth_off;
	struct sroce_deth deth;
	struct ib_wc wc;
	u8 grh[40] = {};
	int st, err;
	u16 vid;

	sroce_deth_decode(ip + pkt->hdr_off[SROCE_HDR_DETH], &deth);
	if (deth.qkey != qp->qkey) {
		sroce_cnt_inc(qp->sdev, SROCE_CNT_DROP_QKEY);
		return;
	}
	if (pkt->payload_len > (128u << sroce_port_mtu(qp->sdev))) {
		sroce_cnt_inc(qp->sdev, SROCE_CNT_DROP_MTU);
		return;
	}
	if (!qp->resp.rwqe_valid) {
		err = sroce_rq_take(qp);
		if (err == -EIO) {
			sroce_rq_broken_event(qp);
			sroce_resp_fatal(qp, 0, SROCE_NAK_REMOTE_OP_ERROR,
					 IB_WC_SUCCESS);
		}
		if (err == -ENOSPC)	/* UD: no receive WQE, the message is lost */
			sroce_cnt_inc(qp->sdev, SROCE_CNT_DROP_NO_RECV);
		if (err)
			return;
		qp->resp.rwqe_valid = true;
	}
	if (sizeof(grh) + pkt->payload_len > sroce_rwqe_room(qp)) {
		sroce_cnt_inc(qp->sdev, SROCE_CNT_DROP_UD_LEN);
		return;
	}
	/* The GRH slot: the IPv6 header, or the IPv4 header in its last 20 bytes. */
	if (pkt->ip_version == 6)
		memcpy(grh, ip, 40);
	else
		memcpy(grh + 20, ip, 20);
	st = sroce_rwqe_place(qp, 0, grh, sizeof(grh));
	if (!st && pkt->payload_len)
		st = sroce_rwqe_place_payload(qp, sizeof(grh), skb, pkt);
	if (st == -EAGAIN)
		return;	/* ODP page being faulted in: lost, the WQE kept */
	/*
	 * The network header type lets ib_core (ib_init_ah_attr_from_wc)
	 * read the GIDs out of the GRH slot: rdma_cm over QP1 needs it.
	 */
	wc = (struct ib_wc) {
		.status = st ? st : IB_WC_SUCCESS,
		.opcode = IB_WC_RECV,
		.byte_len = sizeof(grh) + pkt->payload_len,
		.src_qp = deth.sqpn,
		.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE,
		.network_hdr_type = pkt->ip_version == 6 ? RDMA_NETWORK_IPV6 :
							   RDMA_NETWORK_IPV4,
	};
	if (pkt->hdr_off[SROCE_HDR_IMMDT]) {
		wc.wc_flags |= IB_WC_WITH_IMM;
		wc.ex.imm_data = sroce_imm(ip + pkt->hdr_off[SROCE_HDR_IMMDT]);
	}
	/*
	 * The VLAN it came through: ib_core matches it against the GID's
	 * (ib_init_ah_attr_from_wc()), so rdma_cm's answers to a request on
	 * a VLAN address need it. Loopback packets carry it as a tag.
	 */
	rcu_read_lock();
	vid = skb_vlan_tag_present(skb) ? skb_vlan_tag_get_id(skb) :
	      skb->dev ? sroce_vlan_of_rcu(skb->dev) : SROCE_NO_VLAN;
	rcu_read_unlock();
	if (vid != SROCE_NO_VLAN) {
		wc.wc_flags |= IB_WC_WITH_VLAN;
		wc.vlan_id = vid;
	}
	if (!sroce_rwqe_complete(qp, &wc, sroce_bth_se(bth)))
		sroce_resp_cq_lost(qp, sroce_bth_psn(bth));
}

/* ------------------------------------------------------------ RC and UC */

static struct sroce_rd_res *sroce_res_find(struct sroce_qp *qp, u8 kind,
					   u32 psn)
{
	u32 i;

	for (i = 0; i < qp->resp.nres; i++) {
		struct sroce_rd_res *r = &qp->resp.res[i];

		if (r->kind == kind &&
		    sroce_psn_in_range(psn, r->first_psn, r->last_psn))
			return r;
	}
	return NULL;
}

static struct sroce_rd_res *sroce_res_new(struct sroce_qp *qp)
{
	struct sroce_rd_res *r = &qp->resp.res[qp->resp.res_next];

	qp->resp.res_next = (qp->resp.res_next + 1) % qp->resp.nres;
	return r;
}

/* Send READ responses of the current job, up to @budget. Return true when done. */
static bool sroce_read_job_run(struct sroce_qp *qp, unsigned int budget)
{
	struct sroce_read_job *rj = &qp->resp.read;

	rj->paced = false;
	while (rj->active && budget--) {
		if (sroce_tx_full(qp, SROCE_TX_WAIT_RESP)) {
			rj->tx_wait = true;	/* the skb destructor kicks us */
			return false;
		}
		if (!sroce_cc_may_send(qp, SROCE_CC_WAIT_RESP)) {
			rj->paced = true;	/* the limiter's timer kicks us */
			return false;
		}
		bool last = rj->psn == rj->last_psn;
		enum sroce_pos pos = sroce_pos_from(rj->psn == rj->first_psn, last);
		struct sroce_resp_pkt p = {
			.opcode = sroce_opcode_find(sroce_qp_transport(qp),
						    SROCE_KIND_READ_RESP, pos, 0),
			.psn = rj->psn,
			.msn = qp->resp.msn,
			.syn = sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID),
			.rkey = rj->rkey,
			.va = rj->va,
			.plen = min(qp->mtu, rj->left),
		};
		int err;

		err = sroce_resp_send(qp, &p);
		if (err == -ENOBUFS || err == -EAGAIN) {
			/* queue full, or an ODP page being faulted in: later */
			rj->stalled = true;
			return false;
		}
		if (err) {
			/* Invalidated or deregistered under the READ. */
			sroce_resp_fatal(qp, rj->psn,
					 SROCE_NAK_REMOTE_ACCESS_ERROR,
					 IB_WC_SUCCESS);
			return true;
		}
		rj->va += p.plen;
		rj->left -= p.plen;
		if (last)
			sroce_read_job_end(qp);
		else
			rj->psn = sroce_psn_inc(rj->psn);
	}
	return !rj->active;
}

/*
 * Start answering a READ of @len bytes at @va of region @rkey with responses
 * from @psn, numbered (FIRST, MIDDLE, LAST, ONLY) as the responses of the
 * request whose first response is @first: a READ asked for again from its
 * middle goes on with MIDDLE and LAST, which rdma_rxe's requester insists
 * on. Return a NAK code, or -1 when the job is set up.
 */
static int sroce_read_start(struct sroce_qp *qp, u32 first, u32 psn, u64 va,
			    u32 rkey, u64 len)
{
	struct sroce_read_job *rj = &qp->resp.read;
	u32 npkts;

	if (!(qp->access & IB_ACCESS_REMOTE_READ))
		return SROCE_NAK_REMOTE_ACCESS_ERROR;
	if (len > SROCE_MAX_MSG_SZ ||
	    sroce_msg_npkts(len, qp->mtu) > SROCE_MAX_MSG_PKTS)
		return SROCE_NAK_INVALID_REQUEST;
	if (len && sroce_rkey_access(qp, rkey, IB_ACCESS_REMOTE_READ,
				     va, len, NULL, NULL))
		return SROCE_NAK_REMOTE_ACCESS_ERROR;
	npkts = sroce_msg_npkts(len, qp->mtu);
	rj->active = true;
	rj->srqn = qp->resp.xsrq ? qp->resp.xsrq->srqn : 0;
	rj->srq_gen = qp->resp.xsrq ? qp->resp.xsrq->gen : 0;
	rj->rkey = rkey;
	rj->va = va;
	rj->left = len;
	rj->psn = psn;
	rj->first_psn = first;
	rj->last_psn = sroce_psn_add(psn, npkts - 1);
	return -1;
}

/* Continue later: right away, or after a tick if the queue was full. */
static void sroce_resp_defer(struct sroce_qp *qp)
{
	unsigned long delay = qp->resp.read.stalled ? 1 : 0;

	qp->resp.read.stalled = false;
	if (qp->resp.read.tx_wait || qp->resp.read.paced) {
		qp->resp.read.tx_wait = false;
		qp->resp.read.paced = false;
		return;
	}
	if (!qp->dead)
		queue_delayed_work(sroce_wq, &qp->resp.work, delay);
}

static void sroce_read_kick(struct sroce_qp *qp)
{
	if (!sroce_read_job_run(qp, SROCE_RESP_BUDGET))
		sroce_resp_defer(qp);
}

struct sroce_atomic_op {
	bool			cmp_swap;
	u64			compare;
	u64			swap_add;
	u64			orig;
};

/* sroce_mr_page_fn: the 8 aligned bytes never cross a page. */
static int sroce_atomic_chunk(void *priv, struct page *page,
			      unsigned int offset, unsigned int len)
{
	struct sroce_atomic_op *op = priv;
	u64 *p = (u64 *)((u8 *)kmap_local_page(page) + offset);

	if (op->cmp_swap)
		op->orig = cmpxchg64(p, op->compare, op->swap_add);
	else
		op->orig = atomic64_fetch_add(op->swap_add, (atomic64_t *)p);
	kunmap_local(p);
	return 0;
}

/* sroce_atomic_exec(): not executed, an ODP page is being faulted in. */
#define SROCE_ATOMIC_ODP_WAIT	-2

static int sroce_atomic_exec(struct sroce_qp *qp, const struct sroce_atomiceth *a,
			     const struct sroce_opcode_info *oi, u64 *orig)
{
	int err;

	struct sroce_atomic_op op = {
		.cmp_swap = !(oi->flags & SROCE_OPF_FETCH_ADD),
		.compare = a->compare,
		.swap_add = a->swap_add,
	};

	if (!(qp->access & IB_ACCESS_REMOTE_ATOMIC))
		return SROCE_NAK_REMOTE_ACCESS_ERROR;
	if (a->va & 7)
		return SROCE_NAK_INVALID_REQUEST;
	err = sroce_rkey_access(qp, a->rkey, IB_ACCESS_REMOTE_ATOMIC,
				a->va, 8, sroce_atomic_chunk, &op);
	if (err == -EAGAIN)
		return SROCE_ATOMIC_ODP_WAIT;
	if (err)
		return SROCE_NAK_REMOTE_ACCESS_ERROR;
	*orig = op.orig;
	return -1;
}

/*
 * A duplicate READ at @psn: answered again from the range the original
 * request asked for, starting at @psn's offset in it. Its RETH must name
 * the original's key and lie within the original's range (a requester that
 * retries from the middle moves va and length up, or repeats the original),
 * else it is dropped: a forged duplicate with a guessed PSN alone does not
 * make the QP send a whole READ again. The region is checked again.
 */
static void sroce_resp_dup_read(struct sroce_qp *qp, const u8 *ip,
				const struct sroce_pkt *pkt, u32 psn)
{
	struct sroce_rd_res *r = sroce_res_find(qp, SROCE_KIND_READ_REQ, psn);
	struct sroce_reth reth;
	u64 off;

	if (!r)
		return;
	sroce_reth_decode(ip + pkt->hdr_off[SROCE_HDR_RETH], &reth);
	if (reth.rkey != r->rkey || reth.va < r->va ||
	    reth.va - r->va > r->len || reth.len > r->len - (reth.va - r->va)) {
		sroce_cnt_inc(qp->sdev, SROCE_CNT_DROP_DUP_READ);
		return;
	}
	off = (u64)sroce_psn_fwd(psn, r->first_psn) * qp->mtu;
	if (off > r->len || (off == r->len && r->len))
		return;
	if (sroce_read_start(qp, r->first_psn, psn, r->va + off, r->rkey,
			     r->len - off) < 0)
		sroce_read_kick(qp);
}

/*
 * A READ or atomic from @first to @last has executed: epsn moves past it,
 * and the run of them executed last grows or starts anew.
 */
static void sroce_resp_rd_done(struct sroce_qp *qp, u32 first, u32 last)
{
	if (!qp->resp.rd_run || qp->resp.rd_run_end != qp->resp.epsn)
		qp->resp.rd_run_start = first;
	qp->resp.rd_run = true;
	qp->resp.epsn = sroce_psn_inc(last);
	qp->resp.rd_run_end = qp->resp.epsn;
}

/* The PSN after the last one a duplicate SEND or WRITE's ACK may name. */
static u32 sroce_resp_dup_ack_end(const struct sroce_qp *qp)
{
	if (qp->resp.rd_run && qp->resp.rd_run_end == qp->resp.epsn)
		return qp->resp.rd_run_start;
	return qp->resp.epsn;
}

/* A request with a PSN before epsn. */
static void sroce_resp_dup(struct sroce_qp *qp, const u8 *ip,
			   const struct sroce_pkt *pkt, u32 psn)
{
	const u8 *bth = ip + pkt->bth_off;
	struct sroce_rd_res *r;

	sroce_cnt_inc(qp->sdev, SROCE_CNT_DUP_REQ);
	switch (pkt->info->kind) {
	case SROCE_KIND_READ_REQ:
		sroce_resp_dup_read(qp, ip, pkt, psn);
		return;
	case SROCE_KIND_ATOMIC:
		r = sroce_res_find(qp, SROCE_KIND_ATOMIC, psn);
		if (r && r->first_psn == psn)
			sroce_send_atomic_ack(qp, psn, r->orig);
		return;
	case SROCE_KIND_ATOMIC_WRITE:
		/* Executed once: answered again, not executed again. */
		sroce_send_atomic_write_ack(qp, psn);
		return;
	default:
		/*
		 * SEND, WRITE: acknowledge everything received so far, up to
		 * before the READs and atomics executed last: an ACK naming
		 * one of their PSNs completes it, without its data, at an
		 * rdma_rxe requester whose response was lost.
		 */
		if (sroce_bth_ackreq(bth) || (pkt->info->flags & SROCE_OPF_END))
			sroce_send_ack(qp, sroce_psn_add(sroce_resp_dup_ack_end(qp),
							 SROCE_PSN_MAX),
				       sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID));
		return;
	}
}

/* What a request asks for, decoded once. */
struct sroce_req_ctx {
	const struct sk_buff		*skb;	/* payload: sroce_skb_off() */
	const u8			*ip;	/* headers */
	const struct sroce_pkt		*pkt;
	const struct sroce_opcode_info	*oi;
	const u8			*bth;
	const u8			*imm;	/* ImmDt, wire order, or NULL */
	u32				psn;
};

/* SEND: place into the receive WQE. Return true if the packet was executed. */
static bool sroce_resp_send_op(struct sroce_qp *qp, const struct sroce_req_ctx *c)
{
	const struct sroce_opcode_info *oi = c->oi;
	struct ib_wc wc;
	int st;

	if ((oi->flags & SROCE_OPF_START) && !sroce_resp_get_rwqe(qp, c->psn, oi))
		return false;
	if (oi->flags & SROCE_OPF_START)
		qp->resp.recv_off = 0;
	if (qp->resp.recv_off + (u64)c->pkt->payload_len > SROCE_MAX_MSG_SZ) {
		sroce_resp_error(qp, c->psn, oi, SROCE_NAK_INVALID_REQUEST,
				 IB_WC_LOC_LEN_ERR);
		return false;
	}
	st = sroce_rwqe_place_payload(qp, qp->resp.recv_off, c->skb, c->pkt);
	if (st == -EAGAIN) {
		sroce_resp_odp_wait(qp, c->psn, oi);
		return false;
	}
	if (st) {
		if (qp->type == IB_QPT_RC) {
			sroce_resp_fatal(qp, c->psn, st == IB_WC_LOC_LEN_ERR ?
					 SROCE_NAK_INVALID_REQUEST :
					 SROCE_NAK_REMOTE_OP_ERROR, st);
		} else {
			/* UC: the message is lost, the WQE completes in error. */
			wc = (struct ib_wc) { .status = st, .opcode = IB_WC_RECV };
			sroce_rwqe_complete(qp, &wc, false);
			sroce_uc_drop(qp, c->psn, oi);
		}
		return false;
	}
	qp->resp.recv_off += c->pkt->payload_len;
	if (oi->flags & SROCE_OPF_INV) {
		/*
		 * Remote invalidation: only a kernel consumer's
		 * fast-registration region of this PD qualifies.
		 */
		u32 rkey = sroce_ieth_rkey(c->ip + c->pkt->hdr_off[SROCE_HDR_IETH]);

		if (sroce_mr_invalidate(qp->sdev, sroce_resp_pd(qp),
					qp->ibqp.qp_num, rkey)) {
			sroce_resp_error(qp, c->psn, oi,
					 SROCE_NAK_INVALID_REQUEST,
					 IB_WC_REM_INV_REQ_ERR);
			return false;
		}
		wc = (struct ib_wc) {
			.opcode = IB_WC_RECV,
			.byte_len = qp->resp.recv_off,
			.src_qp = qp->dest_qpn,
			.wc_flags = IB_WC_WITH_INVALIDATE,
			.ex.invalidate_rkey = rkey,
		};
		if (!sroce_rwqe_complete(qp, &wc, sroce_bth_se(c->bth))) {
			sroce_resp_cq_lost(qp, c->psn);
			return false;
		}
		sroce_msn_bump(qp);
	} else if (oi->flags & SROCE_OPF_END) {
		wc = (struct ib_wc) {
			.opcode = IB_WC_RECV,
			.byte_len = qp->resp.recv_off,
			.src_qp = qp->dest_qpn,
		};
		if (c->imm) {
			wc.wc_flags = IB_WC_WITH_IMM;
			wc.ex.imm_data = sroce_imm(c->imm);
		}
		if (!sroce_rwqe_complete(qp, &wc, sroce_bth_se(c->bth))) {
			sroce_resp_cq_lost(qp, c->psn);
			return false;
		}
		sroce_msn_bump(qp);
	}
	return true;
}

/*
 * RDMA WRITE: every packet is checked against the region again (key still
 * valid, range inside) as it is placed.
 */
static bool sroce_resp_write_op(struct sroce_qp *qp, const struct sroce_req_ctx *c)
{
	const struct sroce_opcode_info *oi = c->oi;
	u32 plen = c->pkt->payload_len;

	if (oi->flags & SROCE_OPF_START) {
		struct sroce_reth reth;

		sroce_reth_decode(c->ip + c->pkt->hdr_off[SROCE_HDR_RETH], &reth);
		if (reth.len > SROCE_MAX_MSG_SZ) {
			sroce_resp_error(qp, c->psn, oi, SROCE_NAK_INVALID_REQUEST,
					 IB_WC_SUCCESS);
			return false;
		}
		if (!(qp->access & IB_ACCESS_REMOTE_WRITE) ||
		    (reth.len && sroce_rkey_access(qp, reth.rkey,
						   IB_ACCESS_REMOTE_WRITE, reth.va,
						   reth.len, NULL, NULL))) {
			sroce_resp_error(qp, c->psn, oi,
					 SROCE_NAK_REMOTE_ACCESS_ERROR,
					 IB_WC_SUCCESS);
			return false;
		}
		qp->resp.write.rkey = reth.rkey;
		qp->resp.write.va = reth.va;
		qp->resp.write.left = reth.len;
		qp->resp.write.len = reth.len;	/* byte_len of WRITE_IMM */
	}
	if (plen > qp->resp.write.left ||
	    ((oi->flags & SROCE_OPF_END) && plen != qp->resp.write.left)) {
		sroce_resp_error(qp, c->psn, oi, SROCE_NAK_INVALID_REQUEST,
				 IB_WC_SUCCESS);
		return false;
	}
	/* The immediate data needs a receive WQE. */
	if (c->imm && !sroce_resp_get_rwqe(qp, c->psn, oi))
		return false;
	if (plen) {
		int err = sroce_rkey_put_payload(qp, qp->resp.write.rkey,
						 qp->resp.write.va, c->skb,
						 c->pkt);

		if (err == -EAGAIN) {
			sroce_resp_odp_wait(qp, c->psn, oi);
			return false;
		}
		if (err) {
			sroce_resp_error(qp, c->psn, oi,
					 SROCE_NAK_REMOTE_ACCESS_ERROR,
					 IB_WC_SUCCESS);
			return false;
		}
		qp->resp.write.va += plen;
		qp->resp.write.left -= plen;
	}
	if (oi->flags & SROCE_OPF_END) {
		sroce_resp_drop_write(qp);
		if (c->imm) {
			struct ib_wc wc = {
				.opcode = IB_WC_RECV_RDMA_WITH_IMM,
				.byte_len = qp->resp.write.len,
				.src_qp = qp->dest_qpn,
				.wc_flags = IB_WC_WITH_IMM,
				.ex.imm_data = sroce_imm(c->imm),
			};

			if (!sroce_rwqe_complete(qp, &wc, sroce_bth_se(c->bth))) {
				sroce_resp_cq_lost(qp, c->psn);
				return false;
			}
		}
		sroce_msn_bump(qp);
	}
	return true;
}

static void sroce_resp_read_op(struct sroce_qp *qp, const struct sroce_req_ctx *c)
{
	struct sroce_reth reth;
	struct sroce_rd_res *r;
	int nak;

	sroce_reth_decode(c->ip + c->pkt->hdr_off[SROCE_HDR_RETH], &reth);
	nak = sroce_read_start(qp, c->psn, c->psn, reth.va, reth.rkey, reth.len);
	if (nak >= 0) {
		sroce_resp_fatal(qp, c->psn, nak, IB_WC_SUCCESS);
		return;
	}
	r = sroce_res_new(qp);
	*r = (struct sroce_rd_res) {
		.kind = SROCE_KIND_READ_REQ,
		.first_psn = c->psn,
		.last_psn = qp->resp.read.last_psn,
		.va = reth.va,
		.rkey = reth.rkey,
		.len = reth.len,
	};
	sroce_msn_bump(qp);
	qp->resp.in_msg = false;
	sroce_resp_rd_done(qp, c->psn, qp->resp.read.last_psn);
	sroce_read_kick(qp);
}

/* sroce_mr_page_fn: the 8 aligned bytes never cross a page. */
static int sroce_atomic_write_chunk(void *priv, struct page *page,
				    unsigned int offset, unsigned int len)
{
	u64 *p = (u64 *)((u8 *)kmap_local_page(page) + offset);

	/* One store of all 8 bytes, after everything executed before it. */
	smp_store_release(p, *(const u64 *)priv);
	kunmap_local(p);
	return 0;
}

/*
 * ATOMIC WRITE (IBTA 1.5): the 8 payload bytes land in one store at an
 * 8-byte aligned address of a region with remote write access. Executed
 * once, at epsn; a duplicate is only answered again.
 */
static void sroce_resp_atomic_write_op(struct sroce_qp *qp,
				       const struct sroce_req_ctx *c)
{
	struct sroce_reth reth;
	u64 val;
	int err;

	sroce_reth_decode(c->ip + c->pkt->hdr_off[SROCE_HDR_RETH], &reth);
	if (c->pkt->payload_len != sizeof(val) || reth.len != sizeof(val) ||
	    (reth.va & 7) ||
	    skb_copy_bits(c->skb, sroce_skb_off(c->skb, c->pkt->payload_off),
			  &val, sizeof(val))) {
		sroce_resp_fatal(qp, c->psn, SROCE_NAK_INVALID_REQUEST,
				 IB_WC_SUCCESS);
		return;
	}
	err = qp->access & IB_ACCESS_REMOTE_WRITE ?
	      sroce_rkey_access(qp, reth.rkey, IB_ACCESS_REMOTE_WRITE, reth.va,
				sizeof(val), sroce_atomic_write_chunk, &val) :
	      -EACCES;
	if (err == -EAGAIN) {
		sroce_resp_odp_wait(qp, c->psn, c->oi);
		return;
	}
	if (err) {
		sroce_resp_fatal(qp, c->psn, SROCE_NAK_REMOTE_ACCESS_ERROR,
				 IB_WC_SUCCESS);
		return;
	}
	sroce_msn_bump(qp);
	qp->resp.in_msg = false;
	qp->resp.epsn = sroce_psn_inc(c->psn);
	sroce_send_atomic_write_ack(qp, c->psn);
}

static void sroce_resp_atomic_op(struct sroce_qp *qp, const struct sroce_req_ctx *c)
{
	struct sroce_atomiceth a;
	struct sroce_rd_res *r;
	u64 val;
	int nak;

	sroce_atomiceth_decode(c->ip + c->pkt->hdr_off[SROCE_HDR_ATOMICETH], &a);
	nak = sroce_atomic_exec(qp, &a, c->oi, &val);
	if (nak == SROCE_ATOMIC_ODP_WAIT) {
		sroce_resp_odp_wait(qp, c->psn, c->oi);
		return;
	}
	if (nak >= 0) {
		sroce_resp_fatal(qp, c->psn, nak, IB_WC_SUCCESS);
		return;
	}
	r = sroce_res_new(qp);
	*r = (struct sroce_rd_res) {
		.kind = SROCE_KIND_ATOMIC,
		.first_psn = c->psn,
		.last_psn = c->psn,
		.orig = val,
	};
	sroce_msn_bump(qp);
	qp->resp.in_msg = false;
	sroce_resp_rd_done(qp, c->psn, c->psn);
	sroce_send_atomic_ack(qp, c->psn, val);
}

/*
 * Is the request at epsn well-formed where it stands: payload length for
 * its place in the message, opcode allowed after the previous one? If not,
 * it has been dealt with (RC: fatal, UC: dropped). Return true to execute.
 */
static bool sroce_resp_check(struct sroce_qp *qp, const struct sroce_req_ctx *c)
{
	const struct sroce_opcode_info *oi = c->oi;

	if (!sroce_payload_mtu_ok(oi, qp->mtu, c->pkt->payload_len)) {
		/* One bad packet, one count: UC's drop is not rx_drop_uc too. */
		sroce_cnt_inc(qp->sdev, SROCE_CNT_DROP_MTU);
		if (qp->type == IB_QPT_RC)
			sroce_resp_fatal(qp, c->psn, SROCE_NAK_INVALID_REQUEST,
					 IB_WC_SUCCESS);
		else
			sroce_uc_drop(qp, c->psn, oi);
		return false;
	}
	/*
	 * No responder resources (max_dest_rd_atomic 0): a READ, an atomic
	 * or an ATOMIC WRITE is one too many, an invalid request (rdma_rxe
	 * NAKs it so too; mlx5 turns remote READ and atomics off).
	 */
	if (!qp->max_dest_rd_atomic &&
	    (oi->kind == SROCE_KIND_READ_REQ || oi->kind == SROCE_KIND_ATOMIC ||
	     oi->kind == SROCE_KIND_ATOMIC_WRITE)) {
		sroce_resp_error(qp, c->psn, oi, SROCE_NAK_INVALID_REQUEST,
				 IB_WC_SUCCESS);
		return false;
	}
	switch (sroce_resp_seq_check(sroce_qp_transport(qp), qp->resp.in_msg,
				     qp->resp.msg_kind, oi)) {
	case SROCE_SEQ_OK:
		return true;
	case SROCE_SEQ_RC_INVALID:
		sroce_resp_fatal(qp, c->psn, SROCE_NAK_INVALID_REQUEST,
				 IB_WC_REM_INV_REQ_ERR);
		return false;
	case SROCE_SEQ_UC_DROP:
		/* A MIDDLE or LAST without its FIRST, or of another kind. */
		sroce_cnt_inc(qp->sdev, SROCE_CNT_DROP_UC);
		sroce_uc_drop(qp, c->psn, oi);
		return false;
	case SROCE_SEQ_UC_RESTART:
		/* UC: a new message ends the one in progress. */
		sroce_resp_drop_write(qp);
		qp->resp.in_msg = false;
		return true;
	}
	return false;
}

/* Execute the request at epsn. */
static void sroce_resp_exec(struct sroce_qp *qp, const struct sk_buff *skb,
			    const struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *oi = pkt->info;
	const u8 *ip = skb_network_header(skb);
	struct sroce_req_ctx c = {
		.skb = skb,
		.ip = ip,
		.pkt = pkt,
		.oi = oi,
		.bth = ip + pkt->bth_off,
		.imm = pkt->hdr_off[SROCE_HDR_IMMDT] ?
		       ip + pkt->hdr_off[SROCE_HDR_IMMDT] : NULL,
		.psn = sroce_bth_psn(ip + pkt->bth_off),
	};
	bool done;

	if (!sroce_resp_check(qp, &c))
		return;

	switch (oi->kind) {
	case SROCE_KIND_SEND:
		done = sroce_resp_send_op(qp, &c);
		break;
	case SROCE_KIND_WRITE:
		done = sroce_resp_write_op(qp, &c);
		break;
	case SROCE_KIND_READ_REQ:
		sroce_resp_read_op(qp, &c);
		return;
	case SROCE_KIND_ATOMIC:
		sroce_resp_atomic_op(qp, &c);
		return;
	case SROCE_KIND_ATOMIC_WRITE:
		sroce_resp_atomic_write_op(qp, &c);
		return;
	default:
		return;
	}
	if (!done)
		return;
	qp->resp.in_msg = !(oi->flags & SROCE_OPF_END);
	qp->resp.msg_kind = oi->kind;
	qp->resp.epsn = sroce_psn_inc(c.psn);
	if (qp->type == IB_QPT_RC && sroce_bth_ackreq(c.bth))
		sroce_resp_ack_later(qp, c.psn);
}

/*
 * XRC target, a new request at epsn: may it use the SRQ it names
 * (qp->resp.xsrq, NULL if the domain has no such SRQ)? A message and the
 * receive WQE taken for it stay with the SRQ they started with. If not, the
 * request is invalid: the WQE held completes in error on its own SRQ's CQ
 * and the QP goes to ERR. Return true to execute.
 */
static bool sroce_resp_xrc_check(struct sroce_qp *qp, const u8 *ip,
				 const struct sroce_pkt *pkt, u32 psn)
{
	u32 srqn = sroce_xrceth_srqn(ip + pkt->hdr_off[SROCE_HDR_XRCETH]);
	bool held = qp->resp.in_msg || qp->resp.rwqe_valid;

	/* The same SRQ, not only its number: an SRQ destroyed under a
	 * message can have its number given to a new one.
	 */
	if (qp->resp.xsrq &&
	    (!held || (srqn == qp->resp.xsrqn &&
		       qp->resp.xsrq->gen == qp->resp.xsrq_gen))) {
		qp->resp.xsrqn = srqn;
		qp->resp.xsrq_gen = qp->resp.xsrq->gen;
		return true;
	}
	sroce_qp_dbg(qp, "XRC request for SRQ %u (message on SRQ %u)\n",
		     srqn, held ? qp->resp.xsrqn : 0);
	if (qp->resp.xsrq)
		sroce_srq_put(qp->resp.xsrq);
	qp->resp.xsrq = held ? sroce_xrc_srq_get_gen(qp->sdev, qp->resp.xsrqn,
						     qp->xrcd,
						     qp->resp.xsrq_gen) : NULL;
	sroce_resp_fatal(qp, psn, SROCE_NAK_INVALID_REQUEST,
			 IB_WC_REM_INV_REQ_ERR);
	return false;
}

static void sroce_resp_process_one(struct sroce_qp *qp, struct sk_buff *skb,
				   const struct sroce_pkt *pkt)
{
	const u8 *ip = skb_network_header(skb);
	u32 psn = sroce_bth_psn(ip + pkt->bth_off);
	struct sroce_resp_psn_state st = {
		.epsn = qp->resp.epsn,
		.nak_sent = qp->resp.nak_sent,
		.uc_drop = qp->resp.uc_drop,
	};

	if (qp->type == IB_QPT_UD) {
		sroce_resp_ud(qp, skb, pkt);
		return;
	}
	switch (sroce_resp_psn_classify(sroce_qp_transport(qp), &st, psn,
					pkt->info)) {
	case SROCE_PSN_NEW:
		break;
	case SROCE_PSN_DUP:
		sroce_resp_dup(qp, ip, pkt, psn);
		return;
	case SROCE_PSN_SEQ_NAK:
		sroce_cnt_inc(qp->sdev, SROCE_CNT_OUT_OF_SEQ);
		sroce_send_nak(qp, qp->resp.epsn, SROCE_NAK_PSN_SEQ_ERROR);
		qp->resp.nak_sent = true;
		return;
	case SROCE_PSN_SEQ_DROP:
		sroce_cnt_inc(qp->sdev, SROCE_CNT_OUT_OF_SEQ);
		return;
	case SROCE_PSN_UC_RESYNC:
		/* UC: a gap loses the message in progress, not its WQE. */
		sroce_cnt_inc(qp->sdev, SROCE_CNT_OUT_OF_SEQ);
		sroce_resp_drop_write(qp);
		qp->resp.in_msg = false;
		break;
	case SROCE_PSN_UC_LOST:
		sroce_cnt_inc(qp->sdev, SROCE_CNT_OUT_OF_SEQ);
		sroce_resp_drop_write(qp);
		qp->resp.in_msg = false;
		qp->resp.uc_drop = true;
		qp->resp.epsn = sroce_psn_inc(psn);
		return;
	case SROCE_PSN_UC_SKIP:
		qp->resp.epsn = sroce_psn_inc(psn);
		return;
	}
	if (qp->xrc && !sroce_resp_xrc_check(qp, ip, pkt, psn))
		return;
	qp->resp.nak_sent = false;
	qp->resp.uc_drop = false;
	sroce_resp_exec(qp, skb, pkt);
}

/*
 * Look up the XRC SRQ @srqn of @qp's domain for what the responder does
 * next (qp->resp.xsrq, NULL if there is none); sroce_resp_xrc_put() after.
 */
static void sroce_resp_xrc_get(struct sroce_qp *qp, u32 srqn)
{
	qp->resp.xsrq = sroce_xrc_srq_get(qp->sdev, srqn, qp->xrcd);
}

static void sroce_resp_xrc_put(struct sroce_qp *qp)
{
	if (qp->resp.xsrq) {
		sroce_srq_put(qp->resp.xsrq);
		qp->resp.xsrq = NULL;
	}
}

/* Execute (or answer, or drop) one request. rq_lock held. */
static void sroce_resp_process(struct sroce_qp *qp, struct sk_buff *skb,
			       const struct sroce_pkt *pkt)
{
	const u8 *ip = skb_network_header(skb);

	if (!qp->xrc) {
		sroce_resp_process_one(qp, skb, pkt);
		return;
	}
	sroce_resp_xrc_get(qp, sroce_xrceth_srqn(ip + pkt->hdr_off[SROCE_HDR_XRCETH]));
	sroce_resp_process_one(qp, skb, pkt);
	sroce_resp_xrc_put(qp);
}

/* Does the responder execute requests in this state? rq_lock held. */
static bool sroce_resp_active(struct sroce_qp *qp)
{
	return !qp->dead && !qp->resp.failed &&
	       (qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS ||
		qp->state == IB_QPS_SQD || qp->state == IB_QPS_SQE);
}

/* A request arrived for @qp. Softirq. Consumes the skb. */
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    const struct sroce_pkt *pkt)
{
	const u8 *ip = skb_network_header(skb);
	unsigned int drop = 0;
	bool comm_est;

	spin_lock_bh(&qp->rq_lock);
	if (!sroce_resp_active(qp) || qp->xrc == SROCE_XRC_INI ||
	    pkt->info->transport != sroce_qp_transport(qp))
		drop = SROCE_CNT_RX_STALE;
	else if (!sroce_rx_pkey_ok(ip + pkt->bth_off))
		drop = SROCE_CNT_DROP_PKEY;
	else if (qp->type != IB_QPT_UD && !sroce_rx_from_peer(&qp->av, ip, pkt))
		drop = SROCE_CNT_DROP_PEER;
	if (drop) {
		spin_unlock_bh(&qp->rq_lock);
		sroce_cnt_inc(qp->sdev, drop);
		kfree_skb(skb);
		return;
	}
	/*
	 * The peer's first request on a connected QP still in RTR raises
	 * Communication Established, once: a passive side whose CM has not
	 * seen the RTU yet learns from it that the connection is up
	 * (rdma_notify(), ib_cm_notify()).
	 */
	comm_est = qp->state == IB_QPS_RTR && !qp->resp.comm_est &&
		   sroce_qp_transport(qp) != SROCE_TRANSPORT_UD;
	if (comm_est)
		qp->resp.comm_est = true;
	if (qp->resp.read.active || !skb_queue_empty(&qp->resp.backlog)) {
		if (skb_queue_len(&qp->resp.backlog) < SROCE_BACKLOG_MAX &&
		    sroce_resp_backlog_charge(qp, skb)) {
			/* The input route is not held: valid only in this RCU section. */
			skb_dst_drop(skb);
			__skb_queue_tail(&qp->resp.backlog, skb);
			skb = NULL;
		}
		spin_unlock_bh(&qp->rq_lock);
		if (skb)
			kfree_skb(skb);	/* the requester will retry */
	} else {
		sroce_resp_process(qp, skb, pkt);
		spin_unlock_bh(&qp->rq_lock);
		consume_skb(skb);
	}
	if (comm_est)
		sroce_qp_event(qp, IB_EVENT_COMM_EST);
}

/* Continue a long READ, then the requests that queued up behind it. */
void sroce_resp_work(struct work_struct *work)
{
	struct sroce_qp *qp = container_of(to_delayed_work(work),
					   struct sroce_qp, resp.work);
	unsigned int budget = SROCE_RESP_BUDGET * 4;
	struct sk_buff *skb;

	spin_lock_bh(&qp->rq_lock);
	while (budget--) {
		struct sroce_pkt pkt;
		const u8 *ip;

		if (!sroce_resp_active(qp)) {
			/* ERR, reset or destroy: nothing more is executed. */
			sroce_resp_stop_locked(qp);
			break;
		}
		if (qp->resp.read.active) {
			struct sroce_read_job *rj = &qp->resp.read;
			bool done;

			/* XRC: the keys are the PD's of the READ's SRQ. */
			if (qp->xrc)
				qp->resp.xsrq = sroce_xrc_srq_get_gen(qp->sdev,
								      rj->srqn,
								      qp->xrcd,
								      rj->srq_gen);
			done = sroce_read_job_run(qp, SROCE_RESP_BUDGET);
			sroce_resp_xrc_put(qp);
			if (!done && (qp->resp.read.stalled ||
				      qp->resp.read.tx_wait ||
				      qp->resp.read.paced))
				break;
			/* The budget counts packets; a run may have sent that many. */
			budget -= min(budget, SROCE_RESP_BUDGET - 1);
			continue;	/* the job may also have ended in error */
		}
		skb = sroce_resp_backlog_pop(qp);
		if (!skb)
			break;
		ip = skb_network_header(skb);
		if (sroce_parse_ip(ip, skb->len - skb_network_offset(skb),
				   SROCE_PARSE_HDRS_ONLY, &pkt) != SROCE_WIRE_OK) {
			kfree_skb(skb);
			continue;
		}
		sroce_resp_process(qp, skb, &pkt);
		consume_skb(skb);
	}
	if (qp->resp.read.active || !skb_queue_empty(&qp->resp.backlog))
		sroce_resp_defer(qp);
	spin_unlock_bh(&qp->rq_lock);
}
