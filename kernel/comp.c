// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - the completer: ACKs, NAKs and responses for the send side of an
 * RC QP, and its retry and RNR timers. Everything here runs under sq_lock,
 * from softirq (responses, timers), together with the requester (req.c).
 *
 * RC reliability (IBTA vol. 1 ch. 9.7): every packet has a PSN. Since all
 * progress of a WQE is a function of its first PSN, retransmitting from any
 * PSN ("go back N") only needs the WQE that PSN belongs to: a NAK sequence
 * error, an ACK or response that shows a READ response was lost, and the
 * retry timer all rewind req.next/req.psn. RNR NAKs rewind and pause the
 * requester until the RNR timer. Retry and RNR budgets come from retry_cnt
 * and rnr_retry (7 = infinite for RNR) and are reset by any progress.
 *
 * comp.psn is the oldest PSN not acknowledged. It can pass a READ or atomic
 * whose response was lost, when later PSNs are acknowledged: such a WQE
 * stays the oldest one until its response is in, and the window of PSNs a
 * response may carry starts at its first PSN (sroce_req_base_psn()).
 */

#include "sroce.h"

/*
 * The WQE at index @i if the requester has started it, else NULL: started
 * WQEs are the ones from sq.cons on, up to the first one not started.
 */
static struct sroce_swqe *sroce_started_at(struct sroce_qp *qp, u32 i)
{
	struct sroce_swqe *wqe;

	if (i == qp->req.fetched)
		return NULL;
	wqe = sroce_swqe_at(qp, i);
	return wqe->started ? wqe : NULL;
}

/*
 * The ACK timer. Consecutive timeouts without progress double the wait (up
 * to 64 times the QP's timeout, and not past SROCE_RETRY_BACKOFF_MAX_NS
 * unless the timeout itself is longer): a software NIC's queues can hold
 * more than one timeout's worth of data, and resending a whole window into
 * them only makes the next timeout more likely. IBTA's timeout is a
 * minimum; but no queue holds half a second, and a long timeout (rdma_cm's
 * are seconds) must not grow into minutes before a dead peer is noticed.
 */
#define SROCE_RETRY_BACKOFF_MAX_NS	(500ULL * NSEC_PER_MSEC)

void sroce_retry_arm(struct sroce_qp *qp)
{
	u64 base = sroce_ack_timeout_ns(qp->timeout);
	u64 ns = base << qp->comp.retry_shift;
	unsigned long delay;

	if (!ns || qp->dead)
		return;
	if (ns > base)
		ns = min(ns, max_t(u64, base, SROCE_RETRY_BACKOFF_MAX_NS));
	/* At least a few ms: timer and scheduling granularity. */
	delay = max_t(unsigned long, nsecs_to_jiffies(ns), msecs_to_jiffies(4));
	mod_timer(&qp->comp.retry_timer, jiffies + delay);
}

/* ---------------------------------------------------------------- rewind */

/*
 * Resend from @psn (NAK sequence error, lost responses, timeout): move the
 * requester back to the WQE @psn belongs to (a READ resumes with what has
 * not arrived), unless it is behind that already and will get there.
 */
static void sroce_go_back(struct sroce_qp *qp, u32 psn)
{
	struct sroce_swqe *wqe;
	u32 i;

	for (i = qp->sq.cons; (wqe = sroce_started_at(qp, i)); i++) {
		if (!wqe->npkts)
			continue;	/* a local operation */
		if (!sroce_psn_in_range(psn, wqe->first_psn, wqe->last_psn))
			continue;
		if (wqe->wr.opcode == IB_UVERBS_WR_RDMA_READ)
			psn = sroce_read_resume_psn(qp, wqe);
		if (i - qp->sq.cons > qp->req.next - qp->sq.cons ||
		    (i == qp->req.next && sroce_psn_after_eq(psn, qp->req.psn)))
			return;
		qp->req.next = i;
		qp->req.psn = psn;
		return;
	}
}

/*
 * The requester is behind comp.psn: skip what that acknowledges, but stop
 * at a READ or atomic still waiting for its response (comp.psn passes it
 * when later PSNs are acknowledged).
 */
static void sroce_req_skip_acked(struct sroce_qp *qp)
{
	struct sroce_swqe *wqe;
	u32 i;

	for (i = qp->req.next; (wqe = sroce_started_at(qp, i)); i++) {
		if (wqe->is_rd && !wqe->resp_done) {
			if (i != qp->req.next) {
				qp->req.next = i;
				qp->req.psn = wqe->first_psn;
			}
			return;
		}
		if (wqe->npkts &&
		    sroce_psn_in_range(qp->comp.psn, wqe->first_psn,
				       wqe->last_psn)) {
			qp->req.next = i;
			qp->req.psn = qp->comp.psn;
			return;
		}
	}
}

/* Position of @wqe in the send queue, counted from the oldest WQE. */
static u32 sroce_swqe_pos(struct sroce_qp *qp, const struct sroce_swqe *wqe)
{
	u32 slot = ((const u8 *)wqe - qp->swqes) / qp->swqe_size;

	return (slot - qp->sq.cons) & (qp->sq.entries - 1);
}

/*
 * Responses of a READ (or the answer of an atomic) are missing from @expect
 * on: ask again for that part, once (later responses of the same burst
 * would ask again and again). If the requester is past the WQE, the request
 * for the missing part goes out alone and everything sent after it stays
 * as it is; otherwise, or if it cannot be sent now, the requester goes back.
 */
static void sroce_read_gap(struct sroce_qp *qp, struct sroce_swqe *wqe,
			   u32 expect)
{
	if (wqe->gap_asked && wqe->gap_psn == expect)
		return;
	wqe->gap_asked = true;
	wqe->gap_psn = expect;
	if (sroce_swqe_pos(qp, wqe) < qp->req.next - qp->sq.cons &&
	    !sroce_req_send_pkt(qp, wqe, expect, false))
		return;
	sroce_go_back(qp, expect);
}

/* ------------------------------------------------------------- completer */

/*
 * Complete the WQEs an ACK (or a response) for PSN @psn acknowledges. A
 * READ or atomic the ACK covers without its response having arrived had its
 * response lost: rewind to it. Return true if anything was acknowledged.
 */
static bool sroce_comp_ack_upto(struct sroce_qp *qp, u32 psn)
{
	bool progress = false;

	while (qp->sq.cons != qp->req.fetched) {
		struct sroce_swqe *wqe = sroce_swqe_at(qp, qp->sq.cons);

		if (!wqe->started)
			break;
		if (sroce_psn_before(psn, wqe->last_psn) && !wqe->is_rd)
			break;
		if (wqe->status) {
			/*
			 * A bad response that came while it was not the oldest,
			 * or a local operation that failed then: it fails now.
			 */
			sroce_req_fail(qp, wqe, wqe->status);
			break;
		}
		if (wqe->resp_done) {
			sroce_complete_head(qp, wqe, IB_WC_SUCCESS);
			progress = true;
			continue;
		}
		if (wqe->is_rd) {
			/*
			 * Acknowledged up to its last PSN or beyond, but no
			 * (complete) response: the responses were lost.
			 */
			if (sroce_psn_after_eq(psn, wqe->last_psn))
				sroce_read_gap(qp, wqe, sroce_read_resume_psn(qp, wqe));
			break;
		}
		sroce_complete_head(qp, wqe, IB_WC_SUCCESS);
		progress = true;
	}
	if (sroce_psn_after(sroce_psn_inc(psn), qp->comp.psn) &&
	    sroce_psn_before_eq(sroce_psn_inc(psn), qp->req.psn_hi)) {
		qp->comp.psn = sroce_psn_inc(psn);
		progress = true;
	}
	/* Resending what has just been acknowledged is pointless. */
	if (sroce_psn_before(qp->req.psn, qp->comp.psn))
		sroce_req_skip_acked(qp);
	return progress;
}

/*
 * Is anything sent and not yet complete? (comp.psn can pass a READ whose
 * responses were lost, when later PSNs are acknowledged.)
 */
static bool sroce_req_outstanding(struct sroce_qp *qp)
{
	return !sroce_sq_drained(qp);
}

/*
 * Is the requester waiting for something the ACK timer must watch: PSNs
 * sent and not acknowledged, or a fetched WQE held back because the QP's
 * packets in flight fill its share of the transmit path (sroce_tx_full())?
 * The second lasts while a device keeps packets it has sent or never will
 * send (a link that went down with the driver holding its transmit ring):
 * then nothing is outstanding, no ACK can come, and only the timer can end
 * the wait, with retry exceeded once the QP's retries are spent, as on a
 * NIC whose packets do not get out.
 */
static bool sroce_req_waiting(struct sroce_qp *qp)
{
	return sroce_req_outstanding(qp) ||
	       (test_bit(SROCE_TX_WAIT_REQ, &qp->tx_stalled) &&
		qp->state == IB_QPS_RTS &&
		qp->sq.cons != qp->req.fetched);
}

static void sroce_comp_progress(struct sroce_qp *qp)
{
	qp->comp.retry_left = qp->retry_cnt;
	qp->comp.rnr_left = qp->rnr_retry;
	qp->comp.retry_shift = 0;
	if (!sroce_req_outstanding(qp))
		del_timer(&qp->comp.retry_timer);
	else
		sroce_retry_arm(qp);
}

/* The started WQE with packets that a PSN belongs to, or NULL. */
struct sroce_swqe *sroce_wqe_by_psn(struct sroce_qp *qp, u32 psn)
{
	struct sroce_swqe *wqe;
	u32 i;

	for (i = qp->sq.cons; (wqe = sroce_started_at(qp, i)); i++) {
		if (wqe->npkts &&
		    sroce_psn_in_range(psn, wqe->first_psn, wqe->last_psn))
			return wqe;
	}
	return NULL;
}

/* A NAK other than sequence error: the WQE at @psn fails. */
static void sroce_comp_nak_fatal(struct sroce_qp *qp, u32 psn,
				 enum ib_wc_status status)
{
	struct sroce_swqe *wqe;

	sroce_comp_ack_upto(qp, sroce_psn_add(psn, SROCE_PSN_MAX));
	wqe = sroce_wqe_by_psn(qp, psn);
	if (!wqe || wqe != sroce_swqe_at(qp, qp->sq.cons))
		return;		/* not for the oldest WQE: stale */
	sroce_req_fail(qp, wqe, status);
}

/*
 * The response at @psn for @wqe (READ or atomic) has been placed; @last: it
 * was the last one. A WQE whose responses are all in completes when it is
 * the oldest; one behind a WQE with lost responses waits for it.
 */
static void sroce_comp_resp_in(struct sroce_qp *qp, struct sroce_swqe *wqe,
			       u32 psn, bool last)
{
	if (sroce_psn_after(sroce_psn_inc(psn), qp->comp.psn))
		qp->comp.psn = sroce_psn_inc(psn);
	if (last) {
		wqe->resp_done = true;
		if (wqe == sroce_swqe_at(qp, qp->sq.cons))
			sroce_complete_head(qp, wqe, IB_WC_SUCCESS);
	}
	sroce_comp_progress(qp);
}

/*
 * A response could not be placed: an ODP page of the local buffer was
 * invalidated after the request prefaulted it, and its fault is queued. Ask
 * again from @psn once the requester has waited a tick, as for its own
 * faults; that uses up no retry. A page that cannot be faulted fails the
 * WQE on the next attempt.
 */
static void sroce_comp_refault(struct sroce_qp *qp, u32 psn)
{
	sroce_go_back(qp, psn);
	sroce_req_pause_tick(qp);
}

/*
 * A READ response. Responses are placed in order within a READ, but a READ
 * behind one with lost responses still takes its own: it completes when
 * everything before it has, and only the missing part is asked for again.
 */
static void sroce_comp_read_resp(struct sroce_qp *qp, const struct sk_buff *skb,
				 const struct sroce_pkt *pkt, u32 psn)
{
	struct sroce_swqe *wqe;
	u32 expect, k, want;
	u8 pos = pkt->info->pos;
	bool last;
	int st;

	/* Implicitly acknowledges what came before the READ. */
	sroce_comp_ack_upto(qp, sroce_psn_add(psn, SROCE_PSN_MAX));
	wqe = sroce_wqe_by_psn(qp, psn);
	if (wqe && wqe->wr.opcode == SROCE_WR_ATOMIC_WRITE) {
		/*
		 * IBTA 1.5 answers an ATOMIC WRITE with an empty READ
		 * RESPONSE ONLY (rdma_rxe does); an ACK does as well.
		 */
		if (pos == SROCE_POS_ONLY && !pkt->payload_len &&
		    sroce_comp_ack_upto(qp, psn))
			sroce_comp_progress(qp);
		return;
	}
	if (!wqe || wqe->wr.opcode != IB_UVERBS_WR_RDMA_READ ||
	    wqe->resp_done)
		return;		/* stale or duplicate */
	expect = sroce_read_resume_psn(qp, wqe);
	if (psn != expect) {
		if (sroce_psn_after(psn, expect))
			sroce_read_gap(qp, wqe, expect);
		return;
	}
	/*
	 * Responses to a re-issued request start over with FIRST or ONLY,
	 * while those of the original one may still be arriving: accept
	 * either numbering, but the last response must say it is the last.
	 */
	k = sroce_psn_fwd(psn, wqe->first_psn);
	want = min(qp->mtu, wqe->len - wqe->read_done);
	last = k == wqe->npkts - 1;
	if (last != (pos == SROCE_POS_LAST || pos == SROCE_POS_ONLY) ||
	    pkt->payload_len != want) {
		sroce_wqe_fail(qp, wqe, IB_WC_BAD_RESP_ERR);
		return;
	}
	if (want) {
		/* READs carry no inline data: the SGE list takes it. */
		st = sroce_sge_copy_skb(qp->sdev, qp->pd,
					(const struct sroce_sge *)wqe->data,
					wqe->wr.num_sge, wqe->read_done, skb,
					sroce_skb_off(skb, pkt->payload_off),
					want);
		/*
		 * An ODP page invalidated since the READ started: the response
		 * is dropped (a fault is queued) and asked for again.
		 */
		if (st == -EAGAIN) {
			sroce_comp_refault(qp, expect);
			return;
		}
		if (st) {
			sroce_wqe_fail(qp, wqe, st);
			return;
		}
	}
	wqe->read_done += want;
	sroce_comp_resp_in(qp, wqe, psn, last);
}

static void sroce_comp_atomic_ack(struct sroce_qp *qp, const u8 *ip,
				  const struct sroce_pkt *pkt, u32 psn)
{
	struct sroce_swqe *wqe;
	u64 orig;
	int st;

	sroce_comp_ack_upto(qp, sroce_psn_add(psn, SROCE_PSN_MAX));
	wqe = sroce_wqe_by_psn(qp, psn);
	if (!wqe || !sroce_op_is_atomic(wqe->wr.opcode) || wqe->resp_done)
		return;		/* stale or duplicate */
	orig = sroce_atomicacketh_orig(ip + pkt->hdr_off[SROCE_HDR_ATOMICACKETH]);
	st = sroce_wqe_copy(qp, wqe, 0, (u8 *)&orig, sizeof(orig),
			    SROCE_COPY_TO_MR);
	if (st == -EAGAIN) {
		sroce_comp_refault(qp, psn);	/* as for a READ response */
		return;
	}
	if (st) {
		sroce_wqe_fail(qp, wqe, st);
		return;
	}
	/* Like READ responses, an answer behind a lost one is kept. */
	sroce_comp_resp_in(qp, wqe, psn, true);
}

static void sroce_rnr_arm(struct sroce_qp *qp, u32 us)
{
	qp->req.paused = true;
	if (!qp->dead)
		mod_timer(&qp->comp.rnr_timer,
			  jiffies + max_t(unsigned long, usecs_to_jiffies(us), 1));
}

/* An RNR NAK for @psn: resend it after the responder's delay. */
static void sroce_comp_rnr(struct sroce_qp *qp, u32 psn, u32 us)
{
	struct sroce_swqe *wqe;

	sroce_cnt_inc(qp->sdev, SROCE_CNT_RNR_NAK_RCVD);
	/* What it acknowledges before @psn is progress: fresh budgets. */
	if (sroce_comp_ack_upto(qp, sroce_psn_add(psn, SROCE_PSN_MAX)))
		sroce_comp_progress(qp);
	wqe = sroce_wqe_by_psn(qp, psn);
	if (!wqe)
		return;
	if (!qp->comp.rnr_left) {
		sroce_qp_dbg(qp, "RNR retries exhausted at PSN %u\n", psn);
		if (wqe == sroce_swqe_at(qp, qp->sq.cons))
			sroce_req_fail(qp, wqe, IB_WC_RNR_RETRY_EXC_ERR);
		return;
	}
	if (qp->rnr_retry != 7)
		qp->comp.rnr_left--;
	sroce_go_back(qp, psn);
	del_timer(&qp->comp.retry_timer);
	sroce_rnr_arm(qp, us);
}

/*
 * A NAK sequence error at @psn: resend from there. What it acknowledges
 * before @psn is progress, which renews the budgets; a NAK that acknowledges
 * nothing new uses up a retry.
 */
static void sroce_comp_nak_seq(struct sroce_qp *qp, u32 psn)
{
	struct sroce_swqe *wqe;

	sroce_cnt_inc(qp->sdev, SROCE_CNT_SEQ_NAK_RCVD);
	if (sroce_comp_ack_upto(qp, sroce_psn_add(psn, SROCE_PSN_MAX))) {
		sroce_comp_progress(qp);
	} else if (psn == qp->comp.psn) {
		if (!qp->comp.retry_left) {
			sroce_qp_dbg(qp, "sequence NAKs exhausted retries\n");
			wqe = sroce_wqe_by_psn(qp, psn);
			if (wqe && wqe == sroce_swqe_at(qp, qp->sq.cons))
				sroce_req_fail(qp, wqe, IB_WC_RETRY_EXC_ERR);
			return;
		}
		qp->comp.retry_left--;
	}
	sroce_go_back(qp, psn);
	sroce_retry_arm(qp);
}

/* An ACK or NAK (@a, decoded from the AETH) for PSN @psn. */
static void sroce_comp_aeth(struct sroce_qp *qp, const struct sroce_ack *a,
			    u32 psn)
{
	if (a->kind != SROCE_ACK_ACK && a->kind != SROCE_ACK_RESERVED)
		sroce_qp_dbg(qp, "NAK kind %u received for PSN %u\n", a->kind,
			     psn);
	switch (a->kind) {
	case SROCE_ACK_ACK:
		if (sroce_comp_ack_upto(qp, psn))
			sroce_comp_progress(qp);
		else if (!sroce_req_outstanding(qp))
			del_timer(&qp->comp.retry_timer);
		break;
	case SROCE_ACK_RNR:
		sroce_comp_rnr(qp, psn, a->rnr_us);
		break;
	case SROCE_ACK_NAK_SEQ:
		sroce_comp_nak_seq(qp, psn);
		break;
	case SROCE_ACK_NAK_INV_REQ:
		sroce_comp_nak_fatal(qp, psn, IB_WC_REM_INV_REQ_ERR);
		break;
	case SROCE_ACK_NAK_REM_ACCESS:
		sroce_comp_nak_fatal(qp, psn, IB_WC_REM_ACCESS_ERR);
		break;
	case SROCE_ACK_NAK_REM_OP:
		sroce_comp_nak_fatal(qp, psn, IB_WC_REM_OP_ERR);
		break;
	case SROCE_ACK_NAK_INV_RD_REQ:
		sroce_comp_nak_fatal(qp, psn, IB_WC_REM_INV_RD_REQ_ERR);
		break;
	case SROCE_ACK_NAK_RESERVED:	/* codes 5..31: a remote error */
		sroce_comp_nak_fatal(qp, psn, IB_WC_REM_OP_ERR);
		break;
	default:			/* reserved syndrome type: ignored */
		break;
	}
}

/*
 * Is @psn that of a request still outstanding: from the first PSN of the
 * oldest WQE not completed (a READ can be re-requested after later PSNs were
 * acknowledged) up to the last PSN sent? Anything else, an ACK for PSNs
 * never sent among them, can complete nothing.
 */
static bool sroce_comp_psn_ok(struct sroce_qp *qp, u32 psn)
{
	u32 lo = sroce_req_base_psn(qp);

	return sroce_psn_fwd(psn, lo) < sroce_psn_fwd(qp->req.psn_hi, lo);
}

/* A response (ACK, READ response, atomic ACK) arrived for @qp. Softirq. */
void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    const struct sroce_pkt *pkt)
{
	const u8 *ip = skb_network_header(skb);
	const u8 *bth = ip + pkt->bth_off;
	u32 psn = sroce_bth_psn(bth);
	struct sroce_ack ack = { .kind = SROCE_ACK_ACK };
	unsigned int drop = 0;

	spin_lock_bh(&qp->sq_lock);
	if (qp->type != IB_QPT_RC || qp->dead || qp->xrc == SROCE_XRC_TGT ||
	    pkt->info->transport != sroce_qp_transport(qp) ||
	    (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD))
		drop = SROCE_CNT_RX_STALE;
	else if (!sroce_rx_pkey_ok(bth))
		drop = SROCE_CNT_DROP_PKEY;
	else if (!sroce_rx_from_peer(&qp->av, ip, pkt))
		drop = SROCE_CNT_DROP_PEER;
	else if (!sroce_comp_psn_ok(qp, psn))
		drop = SROCE_CNT_DROP_PSN;
	if (drop) {
		spin_unlock_bh(&qp->sq_lock);
		sroce_cnt_inc(qp->sdev, drop);
		kfree_skb(skb);
		return;
	}
	if (pkt->hdr_off[SROCE_HDR_AETH])
		sroce_aeth_interpret(ip + pkt->hdr_off[SROCE_HDR_AETH], &ack);

	switch (pkt->info->kind) {
	case SROCE_KIND_ACK:
		sroce_comp_aeth(qp, &ack, psn);
		break;
	case SROCE_KIND_READ_RESP:
		if (ack.kind != SROCE_ACK_ACK)
			sroce_comp_aeth(qp, &ack, psn);
		else
			sroce_comp_read_resp(qp, skb, pkt, psn);
		break;
	case SROCE_KIND_ATOMIC_ACK:
		sroce_comp_atomic_ack(qp, ip, pkt, psn);
		break;
	default:
		break;
	}

	sroce_req_run_acked_locked(qp);	/* and SQD's check */
	spin_unlock_bh(&qp->sq_lock);
	consume_skb(skb);
}

/* ----------------------------------------------------------------- timers */

/*
 * Timeout: resend everything not acknowledged, from the oldest WQE; READs
 * ask again only for what has not arrived, and may report new gaps.
 */
static void sroce_retry_rewind(struct sroce_qp *qp)
{
	struct sroce_swqe *wqe;
	u32 i;

	for (i = qp->sq.cons; (wqe = sroce_started_at(qp, i)); i++)
		wqe->gap_asked = false;
	wqe = sroce_started_at(qp, qp->sq.cons);
	if (wqe && wqe->is_rd)
		sroce_go_back(qp, wqe->first_psn);
	sroce_go_back(qp, qp->comp.psn);
}

void sroce_retry_timer(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, comp.retry_timer);
	struct sroce_swqe *wqe;

	spin_lock_bh(&qp->sq_lock);
	/*
	 * Re-armed while this expiry waited for sq_lock (progress on another
	 * CPU): the new deadline decides, not this one.
	 */
	if (timer_pending(t))
		goto out;
	if (qp->dead || qp->type != IB_QPT_RC ||
	    (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD) ||
	    !sroce_req_waiting(qp) || qp->req.paused)
		goto out;
	sroce_cnt_inc(qp->sdev, SROCE_CNT_RETRY);
	if (!qp->comp.retry_left) {
		sroce_qp_dbg(qp, "ACK timeout, retries exhausted at PSN %u\n",
			     qp->comp.psn);
		if (qp->sq.cons != qp->req.fetched) {
			wqe = sroce_swqe_at(qp, qp->sq.cons);
			sroce_req_fail(qp, wqe, IB_WC_RETRY_EXC_ERR);
		}
		goto out;
	}
	qp->comp.retry_left--;
	if (qp->comp.retry_shift < 6)
		qp->comp.retry_shift++;
	sroce_retry_rewind(qp);
	sroce_retry_arm(qp);
	sroce_req_run_locked(qp, SROCE_REQ_BUDGET);
out:
	spin_unlock_bh(&qp->sq_lock);
}

void sroce_rnr_timer(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, comp.rnr_timer);

	spin_lock_bh(&qp->sq_lock);
	/* A newer RNR NAK re-armed it meanwhile: wait out its delay instead. */
	if (timer_pending(t) || !qp->req.paused)
		goto out;
	qp->req.paused = false;
	if (!qp->dead) {
		if (qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD)
			sroce_retry_arm(qp);
		sroce_req_run_locked(qp, SROCE_REQ_BUDGET);
	}
out:
	spin_unlock_bh(&qp->sq_lock);
}
