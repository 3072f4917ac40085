// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - queue pairs: creation, the state machine, destruction, and the
 * work queue rings shared with user space.
 *
 * Types: RC, UC and UD, for user space and for kernel consumers, and the GSI
 * QP (QP1, a UD QP that ib_mad creates) for kernel consumers. A kernel QP
 * has the same rings as a user QP, in kernel memory; post_send and post_recv
 * write them. XRC: initiator QPs (user space: an SQ ring, no receive side)
 * and target QPs (always created by ib_core without udata, even for user
 * space: no rings; requests use the XRC SRQ they name, see resp.c).
 *
 * Locking
 * -------
 * sq_lock covers the send side (requester, completer, SQ ring, timers),
 * rq_lock the receive side (responder, RQ ring). Both are taken with BHs
 * disabled, sq_lock first when both are needed (state changes). The
 * responder never takes sq_lock: a fatal error it finds is handed to
 * err_work, which moves the QP to the error state in process context.
 *
 * Lifetime
 * --------
 * The receive path finds a QP by QPN in sdev->qp_xa under RCU and takes a
 * reference in its slot (struct sroce_qp_slot), as does the transmit
 * socket's write_space callback. destroy_qp marks the QP dead under both
 * locks (no timer or work item is armed after that), unpublishes the QPN and
 * the socket's pointer, drops the initial reference and waits for the last
 * one; then it stops timers and work items and frees what the QP owns.
 * ib_core frees the structure after we return; the slot goes a grace period
 * later, so destroy_qp itself never waits for one.
 */

#include <linux/cpumask.h>
#include <linux/jhash.h>
#include <linux/log2.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/wait_bit.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"

#define SROCE_QPN_MIN		16	/* 0 and 1 are special, keep a gap */
#define SROCE_QPN_LAST		(SROCE_QPN_MASK - 1)	/* 0xffffff: multicast */

static_assert(sizeof(struct sroce_wq_hdr) == SROCE_WQ_SLOTS_OFF);
static_assert(sizeof(struct sroce_send_wqe) == 64);
static_assert(sizeof(struct sroce_recv_wqe) == 16);
static_assert(sizeof(struct sroce_sge) == 16);
static_assert(sizeof(struct sroce_create_qp_resp) == 56);

void sroce_qp_init_dev(struct sroce_dev *sdev)
{
	xa_init_flags(&sdev->qp_xa, XA_FLAGS_ALLOC);
	atomic_set(&sdev->num_qp, 0);
	/*
	 * From a random point, so that a host off the path cannot take QPNs
	 * for the count of QPs created since the device came up (a forged
	 * packet must name a QP first).
	 */
	sdev->qp_next = SROCE_QPN_MIN +
			get_random_u32() % (SROCE_QPN_LAST - SROCE_QPN_MIN + 1);
}

void sroce_qp_fini_dev(struct sroce_dev *sdev)
{
	WARN_ON(!xa_empty(&sdev->qp_xa));
	xa_destroy(&sdev->qp_xa);
}

/* ------------------------------------------------------------- references */

struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_qp_slot *slot;
	struct sroce_qp *qp = NULL;

	rcu_read_lock();
	slot = xa_load(&sdev->qp_xa, qpn);
	if (slot && refcount_inc_not_zero(&slot->ref))
		qp = slot->qp;
	rcu_read_unlock();
	return qp;
}

void sroce_qp_put(struct sroce_qp *qp)
{
	if (refcount_dec_and_test(&qp->slot->ref))
		complete(&qp->done);
}

/* ------------------------------------------------------------------ events */

/* Raise the affiliated asynchronous event @type on @qp. */
void sroce_qp_event(struct sroce_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * The send queue is drained when every WQE the requester started has
 * completed (IBTA 10.3.1.4, SQD): the oldest WQE, if any, is not started.
 * Not req.next == sq.cons: a rewind to resend the oldest WQE sets that too.
 * The completer asks the same (is anything outstanding?). sq_lock held.
 */
bool sroce_sq_drained(struct sroce_qp *qp)
{
	return qp->sq.cons == qp->req.fetched ||
	       !sroce_swqe_at(qp, qp->sq.cons)->started;
}

/* In SQD, raise SQ_DRAINED once the send queue has drained. Both locks or sq_lock. */
void sroce_sqd_check_locked(struct sroce_qp *qp)
{
	if (qp->state == IB_QPS_SQD && qp->sqd_notify && sroce_sq_drained(qp)) {
		qp->sqd_notify = false;
		sroce_qp_event(qp, IB_EVENT_SQ_DRAINED);
	}
}

/* Receive WQE slot size for max_sge SGEs. */
static u32 sroce_recv_wqe_size(u32 max_sge)
{
	return roundup_pow_of_two(sizeof(struct sroce_recv_wqe) +
				  max_t(u32, max_sge, 1) *
				  sizeof(struct sroce_sge));
}

u32 sroce_srq_wqe_size(u32 max_sge)
{
	return sroce_recv_wqe_size(max_sge);
}

static void sroce_err_work(struct work_struct *work);

/* ------------------------------------------------------------------ create */

static int sroce_qp_check_send_cap(const struct ib_qp_cap *cap)
{
	if (cap->max_send_wr > SROCE_MAX_QP_WR ||
	    cap->max_send_sge > SROCE_MAX_SGE ||
	    cap->max_inline_data > SROCE_MAX_INLINE_DATA)
		return -EINVAL;
	return 0;
}

static int sroce_qp_check_init(struct sroce_dev *sdev,
			       const struct ib_qp_init_attr *init, bool is_user)
{
	const struct ib_qp_cap *cap = &init->cap;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_XRC_INI:
		/*
		 * The target SRQ of each WQE comes from user space's ring;
		 * struct ib_send_wr has no field for it.
		 */
		if (!is_user)
			return -EOPNOTSUPP;
		if (init->create_flags || !init->send_cq)
			return -EINVAL;
		return sroce_qp_check_send_cap(&init->cap);
	case IB_QPT_XRC_TGT:
		if (init->create_flags || !init->xrcd)
			return -EINVAL;
		return 0;
	case IB_QPT_GSI:
		if (init->port_num != SROCE_PORT)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	/* A QP on an SRQ still completes its receives on a CQ. */
	if (!init->send_cq || !init->recv_cq)
		return -EINVAL;
	if (sroce_qp_check_send_cap(cap))
		return -EINVAL;
	if (!init->srq && (cap->max_recv_wr > SROCE_MAX_QP_WR ||
			   cap->max_recv_sge > SROCE_MAX_SGE))
		return -EINVAL;
	return 0;
}

/* Fields, locks, timers and work items of a new QP; nothing allocated. */
static void sroce_qp_init(struct sroce_qp *qp, struct sroce_dev *sdev,
			  const struct ib_qp_init_attr *init, bool is_user)
{
	qp->sdev = sdev;
	qp->pd = qp->ibqp.pd ? to_spd(qp->ibqp.pd) : NULL;
	qp->scq = init->send_cq ? to_scq(init->send_cq) : NULL;
	qp->rcq = init->recv_cq ? to_scq(init->recv_cq) : NULL;
	qp->srq = init->srq ? to_ssrq(init->srq) : NULL;
	qp->is_user = is_user;
	qp->is_gsi = init->qp_type == IB_QPT_GSI;
	switch (init->qp_type) {
	case IB_QPT_GSI:
		qp->type = IB_QPT_UD;
		break;
	case IB_QPT_XRC_INI:
		qp->type = IB_QPT_RC;
		qp->xrc = SROCE_XRC_INI;
		break;
	case IB_QPT_XRC_TGT:
		qp->type = IB_QPT_RC;
		qp->xrc = SROCE_XRC_TGT;
		qp->xrcd = init->xrcd;
		qp->srq = NULL;	/* requests name their SRQs */
		break;
	default:
		qp->type = init->qp_type;
		break;
	}
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->state = IB_QPS_RESET;
	qp->path_mtu = IB_MTU_1024;
	qp->mtu = 1024;
	init_completion(&qp->done);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	timer_setup(&qp->comp.retry_timer, sroce_retry_timer, 0);
	timer_setup(&qp->comp.rnr_timer, sroce_rnr_timer, 0);
	timer_setup(&qp->req.fetch_timer, sroce_req_fetch_timer, 0);
	INIT_WORK(&qp->req.work, sroce_req_work);
	INIT_WORK(&qp->req.yield_work, sroce_req_yield_work);
	INIT_DELAYED_WORK(&qp->resp.work, sroce_resp_work);
	INIT_WORK(&qp->err_work, sroce_err_work);
	sroce_cc_init_qp(qp);
	mutex_init(&qp->mod_lock);
	skb_queue_head_init(&qp->resp.backlog);
	INIT_LIST_HEAD(&qp->resp.ack_node);
}

/*
 * The send queue: ring slots hold a 64-byte header plus SGEs or inline
 * data, and every slot has a kernel copy (swqes). @cap is updated. On
 * failure, sroce_qp_free_queues() frees what was allocated.
 */
static int sroce_qp_alloc_sq(struct sroce_qp *qp, struct ib_ucontext *ibuc,
			     struct ib_qp_cap *cap)
{
	u32 entries, wqe, room;
	int err;

	entries = roundup_pow_of_two(max_t(u32, cap->max_send_wr, 1));
	room = max_t(u32, max_t(u32, cap->max_send_sge, 1) *
			  sizeof(struct sroce_sge), cap->max_inline_data);
	wqe = roundup_pow_of_two(sizeof(struct sroce_send_wqe) + room);
	room = wqe - sizeof(struct sroce_send_wqe);
	qp->sq.max_sge = min_t(u32, room / sizeof(struct sroce_sge),
			       SROCE_MAX_SGE);
	qp->sq.max_inline = min_t(u32, room, SROCE_MAX_INLINE_DATA);
	err = sroce_wq_alloc(ibuc, &qp->sq, entries, wqe);
	if (err)
		return err;
	qp->swqe_size = ALIGN(sizeof(struct sroce_swqe) + room, 8);
	qp->swqes = kvcalloc(entries, qp->swqe_size, SROCE_GFP_RING);
	if (!qp->swqes)
		return -ENOMEM;
	cap->max_send_wr = entries;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_inline_data = qp->sq.max_inline;
	return 0;
}

/*
 * The receive side: the RQ ring (none on an SRQ), the responder's copy of
 * a receive WQE and its READ/atomic resources. @cap is updated. On
 * failure, sroce_qp_free_queues() frees what was allocated.
 */
static int sroce_qp_alloc_rq(struct sroce_qp *qp, struct ib_ucontext *ibuc,
			     struct ib_qp_cap *cap)
{
	struct sroce_resp_info *resp = &qp->resp;
	int err;

	if (qp->xrc) {
		/*
		 * No receive queue. A target takes receive WQEs from any XRC
		 * SRQ of its domain, up to the largest.
		 */
		resp->rwqe_size = sroce_srq_wqe_size(SROCE_MAX_SRQ_SGE);
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	} else if (!qp->srq) {
		u32 entries = roundup_pow_of_two(max_t(u32, cap->max_recv_wr, 1));

		err = sroce_wq_alloc(ibuc, &qp->rq, entries,
				     sroce_recv_wqe_size(cap->max_recv_sge));
		if (err)
			return err;
		qp->rq.max_sge = min_t(u32, (qp->rq.wqe_size -
					     sizeof(struct sroce_recv_wqe)) /
					    sizeof(struct sroce_sge),
				       SROCE_MAX_SGE);
		resp->rwqe_size = qp->rq.wqe_size;
		cap->max_recv_wr = qp->rq.entries;
		cap->max_recv_sge = qp->rq.max_sge;
	} else {
		resp->rwqe_size = qp->srq->wq.wqe_size;
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	resp->rwqe = kzalloc(resp->rwqe_size, GFP_KERNEL_ACCOUNT);
	resp->res = kcalloc(SROCE_MAX_QP_RD_ATOM, sizeof(*resp->res),
			    GFP_KERNEL_ACCOUNT);
	if (!resp->rwqe || !resp->res)
		return -ENOMEM;
	resp->nres = 1;
	return 0;
}

/* Free what sroce_qp_alloc_sq() and sroce_qp_alloc_rq() allocated, if anything. */
static void sroce_qp_free_queues(struct sroce_qp *qp)
{
	kfree(qp->resp.res);
	kfree(qp->resp.rwqe);
	sroce_wq_free(&qp->rq);
	kvfree(qp->swqes);
	sroce_wq_free(&qp->sq);
}

/* Reserve the QPN; the QP becomes visible once it is complete. */
static int sroce_qp_reserve_qpn(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = qp->sdev;
	u32 qpn = 1;
	int err;

	if (qp->is_gsi)
		err = xa_insert(&sdev->qp_xa, qpn, NULL, GFP_KERNEL);
	else
		err = xa_alloc_cyclic(&sdev->qp_xa, &qpn, NULL,
				      XA_LIMIT(SROCE_QPN_MIN, SROCE_QPN_LAST),
				      &sdev->qp_next, GFP_KERNEL);
	if (err < 0)
		return err;
	qp->ibqp.qp_num = qpn;
	qp->tx_hash = jhash_1word(qpn, 0);
	qp->tx_cpu = cpumask_local_spread(qpn, NUMA_NO_NODE);
	return 0;
}

/* Tell the provider where the rings are. */
static int sroce_qp_copy_resp(struct sroce_qp *qp, struct ib_udata *udata)
{
	struct sroce_create_qp_resp resp = {
		.sq_entries = qp->sq.entries,
		.sq_wqe_size = qp->sq.wqe_size,
		.qpn = qp->ibqp.qp_num,
	};

	if (qp->sq.mentry) {
		resp.sq_mmap_offset = sroce_mmap_offset(qp->sq.mentry);
		resp.sq_mmap_size = qp->sq.mentry->size;
	}
	if (qp->rq.mentry) {
		resp.rq_mmap_offset = sroce_mmap_offset(qp->rq.mentry);
		resp.rq_mmap_size = qp->rq.mentry->size;
		resp.rq_entries = qp->rq.entries;
		resp.rq_wqe_size = qp->rq.wqe_size;
	}
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	struct ib_ucontext *ibuc = NULL;
	int err;

	if (udata && udata->outlen < sizeof(struct sroce_create_qp_resp))
		return -EINVAL;
	if (udata && init->qp_type == IB_QPT_GSI)
		return -EINVAL;
	err = sroce_qp_check_init(sdev, init, !!udata);
	if (err)
		return err;
	/* ib_core makes a user's XRC target without udata. */
	if (atomic_inc_return(&sdev->num_qp) >
	    sroce_max_for(SROCE_MAX_QP, udata ||
			  init->qp_type == IB_QPT_XRC_TGT)) {
		err = -ENOMEM;
		goto err_count;
	}
	if (udata)
		ibuc = &rdma_udata_to_drv_context(udata, struct sroce_ucontext,
						  ibuc)->ibuc;
	/*
	 * A target has no queues to post to, whatever sizes it was asked for
	 * (ib_core passes user space's): an SQ of one slot that stays empty.
	 */
	if (init->qp_type == IB_QPT_XRC_TGT)
		memset(&init->cap, 0, sizeof(init->cap));
	sroce_qp_init(qp, sdev, init, !!udata);
	qp->slot = kmalloc(sizeof(*qp->slot), GFP_KERNEL_ACCOUNT);
	if (!qp->slot) {
		err = -ENOMEM;
		goto err_count;
	}
	refcount_set(&qp->slot->ref, 1);
	qp->slot->qp = qp;
	err = dst_cache_init(&qp->tx_dst, GFP_KERNEL);
	if (err)
		goto err_slot;
	err = sroce_tx_sock_create(qp);
	if (err)
		goto err_dst;

	err = sroce_qp_alloc_sq(qp, ibuc, &init->cap);
	if (!err)
		err = sroce_qp_alloc_rq(qp, ibuc, &init->cap);
	if (!err)
		err = sroce_qp_reserve_qpn(qp);
	if (err)
		goto err_queues;
	if (qp->xrc == SROCE_XRC_TGT)
		memset(&init->cap, 0, sizeof(init->cap));	/* as query_qp says */
	if (udata) {
		err = sroce_qp_copy_resp(qp, udata);
		if (err)
			goto err_qpn;
	}
	xa_store(&sdev->qp_xa, ibqp->qp_num, qp->slot, GFP_KERNEL);
	return 0;

err_qpn:
	xa_erase(&sdev->qp_xa, ibqp->qp_num);
err_queues:
	sroce_qp_free_queues(qp);
	sroce_tx_sock_release(qp);
err_dst:
	dst_cache_destroy(&qp->tx_dst);
err_slot:
	kfree(qp->slot);	/* never published */
err_count:
	atomic_dec(&sdev->num_qp);
	return err;
}

/* ------------------------------------------------------------ error state */

/*
 * Move to the error state with both locks held: flush both queues with
 * IB_WC_WR_FLUSH_ERR completions, stop the timers (not synchronously).
 */
void sroce_qp_error_locked(struct sroce_qp *qp)
{
	bool was_err = qp->state == IB_QPS_ERR;

	WRITE_ONCE(qp->state, IB_QPS_ERR);
	/*
	 * The state store before the flushes load the producers, pairing
	 * with the smp_mb() of a kernel post_recv between its producer store
	 * and its state load: either the flush sees the WQE or the poster
	 * sees ERR and flushes it.
	 */
	smp_mb();
	qp->resp.err_pending = false;
	del_timer(&qp->comp.retry_timer);
	del_timer(&qp->comp.rnr_timer);
	sroce_resp_stop_locked(qp);
	sroce_sq_flush_locked(qp);
	sroce_rq_flush_locked(qp);
	if (qp->resp.err_event) {
		qp->resp.err_event = false;
		sroce_qp_event(qp, qp->resp.err_event_type);
	}
	if (qp->req.cq_lost) {
		qp->req.cq_lost = false;
		sroce_qp_event(qp, IB_EVENT_QP_FATAL);
	}
	/* XRC targets too: their requests name their SRQs (as on mlx5). */
	if (!was_err && (qp->srq || qp->ibqp.qp_type == IB_QPT_XRC_TGT))
		sroce_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

void sroce_qp_error(struct sroce_qp *qp)
{
	spin_lock_bh(&qp->sq_lock);
	spin_lock(&qp->rq_lock);
	if (!qp->dead && qp->state != IB_QPS_RESET)
		sroce_qp_error_locked(qp);
	spin_unlock(&qp->rq_lock);
	spin_unlock_bh(&qp->sq_lock);
}

/*
 * Deferred work of the error state: a fatal error the responder found
 * (err_pending), a send completion the CQ could not take (req.cq_lost), or
 * receives posted to a kernel QP in ERR from a context that cannot flush.
 * A QP reset (and maybe re-connected) since the error was found has both
 * flags clear and is left alone.
 */
static void sroce_err_work(struct work_struct *work)
{
	struct sroce_qp *qp = container_of(work, struct sroce_qp, err_work);

	spin_lock_bh(&qp->sq_lock);
	spin_lock(&qp->rq_lock);
	if (!qp->dead && (qp->resp.err_pending || qp->req.cq_lost ||
			  qp->state == IB_QPS_ERR))
		sroce_qp_error_locked(qp);
	spin_unlock(&qp->rq_lock);
	spin_unlock_bh(&qp->sq_lock);
}

/*
 * Kernel QPs: receive work requests go into the ring. In ERR they complete
 * at once with IB_WC_WR_FLUSH_ERR (ib_drain_rq() waits for that).
 */
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	int err;

	if (qp->is_user || qp->srq || qp->xrc ||
	    READ_ONCE(qp->state) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}
	err = sroce_wq_post_recv(&qp->rq, wr, bad_wr);
	smp_mb();	/* producer store before state load: sroce_qp_error_locked() */
	if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		if (irqs_disabled() || in_hardirq()) {
			queue_work(sroce_wq, &qp->err_work);
		} else {
			spin_lock_bh(&qp->rq_lock);
			if (!qp->dead && qp->state == IB_QPS_ERR)
				sroce_rq_flush_locked(qp);
			spin_unlock_bh(&qp->rq_lock);
		}
	}
	return err;
}

/* ------------------------------------------------------------------ modify */

static int sroce_modify_check(struct sroce_qp *qp, const struct ib_qp_attr *attr,
			      int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != SROCE_PORT)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= SROCE_PKEY_TBL_LEN)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SROCE_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SROCE_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	/*
	 * Only the remote access bits mean something for a QP; the other
	 * defined access flags (ON_DEMAND, which pyverbs' ODP tests set,
	 * RELAXED_ORDERING of an application that passes its MR flags) are
	 * accepted and kept, as hardware RNICs accept them. Undefined bits
	 * are an error.
	 */
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~IB_ACCESS_SUPPORTED))
		return -EINVAL;
	/*
	 * No alternate path (APM): loading one, or arming migration, is not
	 * supported; "migrated" (no alternate path armed, what query_qp
	 * reports) is the state the QP is in anyway.
	 */
	if (mask & IB_QP_ALT_PATH)
		return -EOPNOTSUPP;
	if ((mask & IB_QP_PATH_MIG_STATE) &&
	    attr->path_mig_state != IB_MIG_MIGRATED)
		return -EOPNOTSUPP;
	return 0;
}

static u32 sroce_mtu_bytes(enum ib_mtu mtu)
{
	return 128u << mtu;	/* IB_MTU_256 == 1 */
}

/* Apply the attributes of a modify_qp; both locks held. */
static void sroce_modify_attrs_locked(struct sroce_qp *qp,
				      const struct ib_qp_attr *attr, int mask,
				      const struct sroce_av *av)
{
	if (mask & IB_QP_PKEY_INDEX)
		qp->pkey_index = attr->pkey_index;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_AV) {
		qp->av = *av;
		dst_cache_reset(&qp->tx_dst);
	}
	if (mask & IB_QP_PATH_MTU) {
		enum ib_mtu port = sroce_port_mtu(qp->sdev);

		qp->path_mtu = min(attr->path_mtu, port);
	}
	/* Not above what the source GID's netdev carries (sroce_av_from_attr()). */
	if ((mask & (IB_QP_AV | IB_QP_PATH_MTU)) && qp->av.max_mtu &&
	    qp->path_mtu > qp->av.max_mtu)
		qp->path_mtu = qp->av.max_mtu;
	if (mask & (IB_QP_AV | IB_QP_PATH_MTU))
		qp->mtu = sroce_mtu_bytes(qp->path_mtu);
	if (mask & IB_QP_TIMEOUT)
		qp->timeout = attr->timeout;
	/* New budgets count from now (also SQD to SQD, which may set them). */
	if (mask & IB_QP_RETRY_CNT) {
		qp->retry_cnt = attr->retry_cnt;
		qp->comp.retry_left = attr->retry_cnt;
	}
	if (mask & IB_QP_RNR_RETRY) {
		qp->rnr_retry = attr->rnr_retry;
		qp->comp.rnr_left = attr->rnr_retry;
	}
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
		qp->resp.nres = max_t(u32, attr->max_dest_rd_atomic, 1);
		memset(qp->resp.res, 0, SROCE_MAX_QP_RD_ATOM * sizeof(*qp->resp.res));
		qp->resp.res_next = 0;
	}
	if (mask & IB_QP_RQ_PSN) {
		qp->rq_psn = attr->rq_psn & SROCE_PSN_MASK;
		qp->resp.epsn = qp->rq_psn;
	}
	if (mask & IB_QP_SQ_PSN) {
		qp->sq_psn = attr->sq_psn & SROCE_PSN_MASK;
		qp->req.psn = qp->sq_psn;
		qp->comp.psn = qp->sq_psn;
		qp->req.psn_hi = qp->sq_psn;
	}
	if (mask & IB_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num & SROCE_QPN_MASK;
	if (mask & (IB_QP_DEST_QPN | IB_QP_AV))
		qp->sport = rdma_get_udp_sport(qp->av.flow_label,
					       qp->ibqp.qp_num, qp->dest_qpn);
	/*
	 * Each move into SQD asks anew (the attribute is only valid then);
	 * state is still the current one here.
	 */
	if ((mask & IB_QP_STATE) && attr->qp_state == IB_QPS_SQD &&
	    qp->state != IB_QPS_SQD)
		qp->sqd_notify = (mask & IB_QP_EN_SQD_ASYNC_NOTIFY) &&
				 attr->en_sqd_async_notify;
}

/*
 * Carry out the transition @cur -> @next (checked); both locks held. Return
 * true if the requester is to run once the locks are dropped.
 */
static bool sroce_modify_state_locked(struct sroce_qp *qp,
				      enum ib_qp_state cur,
				      enum ib_qp_state next)
{
	bool kick = false;

	switch (next) {
	case IB_QPS_RESET:
		sroce_req_reset_locked(qp);
		sroce_cc_reset_locked(qp);
		sroce_resp_reset_locked(qp);
		break;
	case IB_QPS_RTS:
		if (cur == IB_QPS_SQE)
			WRITE_ONCE(qp->sq.hdr->sq_idle, 1);
		if (cur == IB_QPS_RTR) {
			qp->comp.retry_left = qp->retry_cnt;
			qp->comp.rnr_left = qp->rnr_retry;
		}
		kick = true;
		break;
	case IB_QPS_ERR:
		sroce_qp_error_locked(qp);
		break;
	default:
		break;
	}
	if (next != IB_QPS_ERR)
		qp->state = next;
	sroce_sqd_check_locked(qp);
	return kick;
}

int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_dev *sdev = qp->sdev;
	enum ib_qp_state cur, next;
	struct sroce_av av = {};
	bool kick = false;
	int err;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	err = sroce_modify_check(qp, attr, mask);
	if (err)
		return err;
	mutex_lock(&qp->mod_lock);
	if (mask & IB_QP_AV) {
		err = sroce_av_from_attr(sdev, &av, &attr->ah_attr);
		if (err)
			goto out_unlocked;
	}

	spin_lock_bh(&qp->sq_lock);
	spin_lock(&qp->rq_lock);

	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (qp->dead || cur != qp->state ||
	    !ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		err = -EINVAL;
		goto out;
	}
	if (next == IB_QPS_SQD && cur == IB_QPS_SQD && !sroce_sq_drained(qp)) {
		err = -EBUSY;	/* IBTA: no modify of SQD while draining */
		goto out;
	}

	sroce_modify_attrs_locked(qp, attr, mask, &av);
	if (next != cur)
		kick = sroce_modify_state_locked(qp, cur, next);
	else if (next == IB_QPS_ERR)
		/* ERR again: flush what was posted since (as rdma_rxe does) */
		sroce_qp_error_locked(qp);
out:
	spin_unlock(&qp->rq_lock);
	spin_unlock_bh(&qp->sq_lock);
	/* What query_qp reports (under mod_lock): only an AV that was taken. */
	if (!err && (mask & IB_QP_AV))
		rdma_replace_ah_attr(&qp->ah_attr, &attr->ah_attr);
out_unlocked:
	mutex_unlock(&qp->mod_lock);
	if (kick)
		sroce_req_kick(qp);
	return err;
}

int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct sroce_qp *qp = to_sqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	mutex_lock(&qp->mod_lock);
	spin_lock_bh(&qp->sq_lock);
	spin_lock(&qp->rq_lock);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = qp->path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = qp->qkey;
	attr->rq_psn = qp->resp.epsn;
	attr->sq_psn = qp->req.psn;
	attr->dest_qp_num = qp->dest_qpn;
	attr->qp_access_flags = qp->access;
	attr->pkey_index = qp->pkey_index;
	attr->en_sqd_async_notify = qp->sqd_notify;
	attr->sq_draining = qp->state == IB_QPS_SQD && !sroce_sq_drained(qp);
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->port_num = SROCE_PORT;
	attr->timeout = qp->timeout;
	attr->retry_cnt = qp->retry_cnt;
	attr->rnr_retry = qp->rnr_retry;
	spin_unlock(&qp->rq_lock);
	spin_unlock_bh(&qp->sq_lock);

	/*
	 * By value, without a reference on the source GID entry: callers
	 * of query_qp (uverbs) never drop one.
	 */
	if (qp->type != IB_QPT_UD) {
		attr->ah_attr = qp->ah_attr;
		attr->ah_attr.grh.sgid_attr = NULL;
	}
	mutex_unlock(&qp->mod_lock);

	memset(&attr->cap, 0, sizeof(attr->cap));
	if (qp->xrc != SROCE_XRC_TGT) {	/* a target has no queues */
		attr->cap.max_send_wr = qp->sq.entries;
		attr->cap.max_send_sge = qp->sq.max_sge;
		attr->cap.max_inline_data = qp->sq.max_inline;
	}
	if (!qp->srq) {
		attr->cap.max_recv_wr = qp->rq.entries;
		attr->cap.max_recv_sge = qp->rq.max_sge;
	}

	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
					     IB_SIGNAL_REQ_WR;
	init->qp_type = ibqp->qp_type;
	init->port_num = SROCE_PORT;
	return 0;
}

/* ---------------------------------------------------------------- restrack */

/* The transport state of an RC or UC QP, as one lock pass sees it. */
struct sroce_res_qp {
	u32	sq_wqes;	/* fetched from the SQ ring, not completed */
	u32	sq_unsent;	/* of those, not started (or gone back to) */
	u32	comp_psn;	/* oldest PSN not acknowledged */
	u32	rd_out;		/* READs and atomics started, not done */
	u32	retry_left;
	u32	rnr_left;
	u32	paused;		/* waiting out an RNR NAK's delay */
	u32	ack_timer;	/* armed */
	u32	rnr_timer;	/* armed */
	u32	tx_stalled;	/* the transmit path's share is full */
	u32	nak_sent;	/* a NAK for the expected PSN is out */
	u32	in_msg;		/* inside a multi-packet message */
	u32	recv_held;	/* a receive WQE taken for it */
	u32	read_left;	/* READ being answered: bytes to send */
	u32	backlog;	/* requests queued behind that READ */
};

static void sroce_res_qp_read(struct sroce_qp *qp, struct sroce_res_qp *r)
{
	spin_lock_bh(&qp->sq_lock);
	r->sq_wqes = qp->req.fetched - qp->sq.cons;
	r->sq_unsent = qp->req.fetched - qp->req.next;
	r->comp_psn = qp->comp.psn;
	r->rd_out = qp->req.rd_out;
	r->retry_left = qp->comp.retry_left;
	r->rnr_left = qp->comp.rnr_left;
	r->paused = qp->req.paused;
	r->ack_timer = timer_pending(&qp->comp.retry_timer);
	r->rnr_timer = timer_pending(&qp->comp.rnr_timer);
	r->tx_stalled = test_bit(SROCE_TX_WAIT_REQ, &qp->tx_stalled);
	spin_unlock_bh(&qp->sq_lock);

	spin_lock_bh(&qp->rq_lock);
	r->nak_sent = qp->resp.nak_sent;
	r->in_msg = qp->resp.in_msg;
	r->recv_held = qp->resp.rwqe_valid;
	r->read_left = qp->resp.read.active ? qp->resp.read.left : 0;
	r->backlog = skb_queue_len(&qp->resp.backlog);
	spin_unlock_bh(&qp->rq_lock);
}

/*
 * Driver attributes of "rdma resource show qp -dd": for RC and UC where the
 * send and receive sides stand (ib_core gives the next PSNs, sq-psn and
 * rq-psn), so that a connection that stopped moving shows why; then
 * congestion control's state (cc.c).
 */
int sroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_res_qp r;
	struct nlattr *table;
	const struct {
		const char *name;
		const u32 *val;
	} attrs[] = {
		{ "sq_wqes", &r.sq_wqes },
		{ "sq_unsent", &r.sq_unsent },
		{ "comp_psn", &r.comp_psn },
		{ "rd_out", &r.rd_out },
		{ "retry_left", &r.retry_left },
		{ "rnr_retry_left", &r.rnr_left },
		{ "rnr_paused", &r.paused },
		{ "ack_timer", &r.ack_timer },
		{ "rnr_timer", &r.rnr_timer },
		{ "tx_stalled", &r.tx_stalled },
		{ "resp_nak_sent", &r.nak_sent },
		{ "resp_in_msg", &r.in_msg },
		{ "resp_recv_held", &r.recv_held },
		{ "resp_read_left", &r.read_left },
		{ "resp_backlog", &r.backlog },
	};
	bool transport = qp->type == IB_QPT_RC || qp->type == IB_QPT_UC;
	unsigned int i;

	if (transport)
		sroce_res_qp_read(qp, &r);
	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	for (i = 0; transport && i < ARRAY_SIZE(attrs); i++)
		if (rdma_nl_put_driver_u32(msg, attrs[i].name, *attrs[i].val))
			goto full;
	if (sroce_cc_fill_res(msg, qp))
		goto full;
	nla_nest_end(msg, table);
	return 0;
full:
	nla_nest_cancel(msg, table);
	return -EMSGSIZE;
}

/* ----------------------------------------------------------------- destroy */

int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_dev *sdev = qp->sdev;

	sroce_mcast_qp_gone(qp);
	spin_lock_bh(&qp->sq_lock);
	spin_lock(&qp->rq_lock);
	sroce_resp_ack_flush_locked(qp);	/* for requests executed */
	qp->dead = true;
	spin_unlock(&qp->rq_lock);
	spin_unlock_bh(&qp->sq_lock);

	/*
	 * No new lookup finds the slot; one that found it before either got
	 * its reference already or fails to once the count is zero, and the
	 * slot it reads stays allocated until a grace period after we are
	 * done. References are dropped when their packet is done.
	 */
	xa_erase(&sdev->qp_xa, ibqp->qp_num);
	sroce_tx_sock_detach(qp);	/* its callback: see net.c */
	sroce_qp_put(qp);
	wait_for_completion(&qp->done);

	/*
	 * The rate limiter's timer reads dead without a lock and may queue
	 * resp.work: stop it (nothing arms it once dead is set) before the
	 * work items are cancelled.
	 */
	sroce_cc_stop_qp(qp);
	del_timer_sync(&qp->comp.retry_timer);
	del_timer_sync(&qp->comp.rnr_timer);
	del_timer_sync(&qp->req.fetch_timer);
	cancel_work_sync(&qp->req.work);
	cancel_work_sync(&qp->req.yield_work);
	cancel_delayed_work_sync(&qp->resp.work);
	cancel_work_sync(&qp->err_work);
	del_timer_sync(&qp->comp.retry_timer);
	del_timer_sync(&qp->comp.rnr_timer);
	del_timer_sync(&qp->req.fetch_timer);

	/* The backlog of requests and the READ job go with the QP. */
	spin_lock_bh(&qp->rq_lock);
	sroce_resp_reset_locked(qp);
	spin_unlock_bh(&qp->rq_lock);

	/*
	 * Dead, the QP sends nothing new. Its packets in flight belong to its
	 * socket, which lives until the network stack has freed them all: a
	 * transmit queue that never drains does not hold us here.
	 */
	sroce_tx_sock_release(qp);

	rdma_destroy_ah_attr(&qp->ah_attr);

	sroce_qp_free_queues(qp);
	dst_cache_destroy(&qp->tx_dst);
	kfree_rcu(qp->slot, rcu);
	atomic_dec(&sdev->num_qp);
	return 0;
}
