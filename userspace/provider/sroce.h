/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libsroce-rdmav34.so internals: the provider's objects and the callbacks
 * libibverbs invokes. One .cpp per object family (device, context, pd, xrcd,
 * mr, cq, qp, srq, ah), each adding its callbacks here and to the ops table
 * in context.cpp.
 */
#ifndef SROCE_PROVIDER_SROCE_H
#define SROCE_PROVIDER_SROCE_H

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <pthread.h>
#include <rdma/sroce-abi.h>

#include "ibverbs_private.h"
#include "wq.h"

namespace sroce {

/* One per matched uverbs device; freed by uninit_device. */
struct device {
	verbs_device vdev;		/* first: libibverbs hands back &vdev */
};

/* One per ibv_open_device(); freed by free_context. */
struct context {
	verbs_context vctx;
	uint32_t kernel_abi;		/* from sroce_alloc_ucontext_resp */
};

/*
 * A protection domain, or a parent domain (protection set): a user-space
 * object that stands for its protection domain in every command (its
 * ibv.handle is the protection domain's) and carries the allocators the
 * application gave. sroce keeps no queue memory in the process (rings are
 * kernel memory mapped in), so there is nothing to allocate with them.
 */
struct pd {
	struct ibv_pd ibv;
	uint32_t pdn;			/* kernel PD number, for diagnostics */
	pd *protection;			/* parent domains: their PD */
	std::atomic<uint32_t> parents;	/* PDs: parent domains on it */
	std::atomic<uint32_t> users;	/* parent domains: CQs, QPs, SRQs on it */
	void *(*alloc)(struct ibv_pd *, void *, size_t, size_t, uint64_t);
	void (*free)(struct ibv_pd *, void *, void *, uint64_t);
	void *pd_context;
};

/*
 * An XRC domain: nothing but its kernel handle. XRC SRQs and XRC_RECV QPs
 * name it; the kernel keeps what is shared in it.
 */
struct xrcd {
	verbs_xrcd vxrcd;		/* libibverbs sees &vxrcd.xrcd */
};

struct mr {
	verbs_mr vmr;			/* libibverbs sees &vmr.ibv_mr */
};

/*
 * A CQ: the ring the kernel produces into (layout in sroce-abi.h), mapped
 * from the context's command fd. lock serialises pollers of the same CQ.
 * A CQ from create_cq_ex is the same ring seen through ibv_cq_ex; its
 * start_poll/next_poll/end_poll hold lock from start to end.
 */
struct cq {
	union {
		struct ibv_cq ibv;
		struct ibv_cq_ex ibv_ex;	/* create_cq_ex only */
		verbs_cq vcq;
	};
	void *map;			/* whole mapping, map_size bytes */
	size_t map_size;
	sroce_cq_ring_hdr *hdr;
	const struct ib_uverbs_wc *ring;
	uint32_t entries;		/* power of two */
	uint32_t cons;			/* our copy of hdr->consumer */
	pthread_spinlock_t lock;	/* polling, cleaning, resize */
	/*
	 * The ring's place (hdr) for req_notify_cq, which must not wait for
	 * an extended-poll batch (start_poll holds lock until end_poll):
	 * resize takes it inside lock, req_notify_cq alone.
	 */
	pthread_spinlock_t ring_lock;
	pd *parent;			/* the parent domain it was created on */
	/* Extended polling: the entry start/next_poll returned, copied. */
	uint32_t avail;			/* entries known to be ready at cons */
	bool cur_valid;			/* cur is the entry at cons */
	struct ib_uverbs_wc cur;
	/* resize_cq could not map the new ring: polls fail (EIO). */
	bool lost;
};

/*
 * A QP. The send queue (SQ) and the receive queue (RQ) are rings mapped
 * from the command fd; each has its own lock for its producer side. There
 * is no RQ with an SRQ or on an XRC QP, and no queue at all on an XRC_RECV
 * QP (kernel-owned, or opened with ibv_open_qp()): its receives land in the
 * XRC SRQ the sender names. Between ibv_wr_start() and
 * ibv_wr_complete()/abort() the SQ lock is held and the batch fields
 * describe the WQEs written so far.
 */
struct qp {
	verbs_qp vqp;			/* libibverbs sees &vqp.qp / &vqp.qp_ex */
	pthread_spinlock_t sq_lock;
	wq::ring sq;
	wq::send_caps sq_caps;
	uint64_t send_ops;		/* IBV_QP_EX_WITH_* for the ibv_wr_* API */
	uint32_t batch_start;		/* sq.prod at ibv_wr_start() */
	int batch_err;			/* first error in the batch, or 0 */
	sroce_send_wqe *batch_cur;	/* WQE the ibv_wr_set_* calls fill */
	pthread_spinlock_t rq_lock;
	wq::ring rq;
	uint32_t max_recv_sge;
	void *sq_map;
	size_t sq_map_size;
	void *rq_map;
	size_t rq_map_size;
	pd *parent;			/* the parent domain it was created on */
};

/*
 * A shared receive queue, basic or XRC: one receive ring, mapped like a
 * QP's RQ. ibv_cmd_create_srq_ex fills vsrq (for XRC also the type, the
 * domain and the XRC SRQ number). srqn is the kernel's number for
 * either type, from the driver response. vsrq comes first in the union so
 * that srq{} zeroes all of it.
 */
struct srq {
	union {
		verbs_srq vsrq;
		struct ibv_srq ibv;	/* vsrq.srq */
	};
	pthread_spinlock_t lock;
	wq::ring rq;
	uint32_t max_sge;
	uint32_t srqn;
	void *map;
	size_t map_size;
	pd *parent;			/* the parent domain it was created on */
};

/* An address handle: the kernel's AH number goes into UD send WQEs. */
struct ah {
	struct ibv_ah ibv;
	uint32_t ah_num;
};

/* Pointer from an embedded libibverbs object back to the sroce object. */
template <typename Outer, typename Inner>
inline Outer *outer_of(Inner *inner, size_t member_offset)
{
	return reinterpret_cast<Outer *>(reinterpret_cast<char *>(inner) -
					 member_offset);
}

inline device *get_device(verbs_device *vdev)
{
	return outer_of<device>(vdev, offsetof(device, vdev));
}

inline context *get_context(struct ibv_context *ibctx)
{
	auto *vctx = outer_of<verbs_context>(ibctx, offsetof(verbs_context, context));
	return outer_of<context>(vctx, offsetof(context, vctx));
}

inline pd *get_pd(struct ibv_pd *ibpd)
{
	return outer_of<pd>(ibpd, offsetof(pd, ibv));
}

/*
 * A CQ, QP or SRQ created on ibpd holds it if it is a parent domain (whose
 * dealloc then fails with EBUSY, as mlx5's does); the parent domain, or
 * nullptr, for parent_release() when the object goes.
 */
inline pd *parent_hold(struct ibv_pd *ibpd)
{
	pd *p = ibpd ? get_pd(ibpd) : nullptr;
	if (!p || !p->protection)
		return nullptr;
	p->users.fetch_add(1, std::memory_order_relaxed);
	return p;
}

inline void parent_release(pd *parent)
{
	if (parent)
		parent->users.fetch_sub(1, std::memory_order_release);
}

inline xrcd *get_xrcd(struct ibv_xrcd *ibxrcd)
{
	auto *vx = outer_of<verbs_xrcd>(ibxrcd, offsetof(verbs_xrcd, xrcd));
	return outer_of<xrcd>(vx, offsetof(xrcd, vxrcd));
}

inline mr *get_mr(verbs_mr *vmr)
{
	return outer_of<mr>(vmr, offsetof(mr, vmr));
}

inline cq *get_cq(struct ibv_cq *ibcq)
{
	return outer_of<cq>(ibcq, offsetof(cq, ibv));
}

inline cq *get_cq(struct ibv_cq_ex *ibcq)
{
	return outer_of<cq>(ibcq, offsetof(cq, ibv_ex));
}

inline qp *get_qp(struct ibv_qp *ibqp)
{
	return outer_of<qp>(ibqp, offsetof(qp, vqp) + offsetof(verbs_qp, qp));
}

inline qp *get_qp(struct ibv_qp_ex *ibqp)
{
	return outer_of<qp>(ibqp, offsetof(qp, vqp) + offsetof(verbs_qp, qp_ex));
}

inline srq *get_srq(struct ibv_srq *ibsrq)
{
	return outer_of<srq>(ibsrq, offsetof(srq, ibv));
}

inline ah *get_ah(struct ibv_ah *ibah)
{
	return outer_of<ah>(ibah, offsetof(ah, ibv));
}

/*
 * Checks a create_qp answer against the capabilities the kernel reported,
 * and attaches the mapped rings (sq_map/rq_map may be NULL for a ring with
 * no entries). An XRC_SEND QP must come without an RQ, an XRC_RECV QP
 * without any ring (its capabilities are not looked at). Returns 0 or
 * EPROTO. Used by create_qp, open_qp and the unit tests, which hand it
 * plain memory. init_qp_ex sets up the ibv_wr_* API (send_ops are the
 * IBV_QP_EX_WITH_* flags).
 */
int attach_qp_queues(qp *qp, uint32_t qp_type, bool sig_all,
		     const struct ibv_qp_cap &cap,
		     const sroce_create_qp_resp &drv, void *sq_map,
		     void *rq_map);
void init_qp_ex(qp *qp, uint64_t send_ops);

/* The IBV_QP_EX_WITH_* operations sroce carries on a QP type. */
uint64_t supported_send_ops(uint32_t qp_type);

/* Same for an SRQ (max_sge as the kernel reported it). */
int attach_srq_ring(srq *srq, uint32_t max_wr, uint32_t max_sge,
		    const sroce_create_srq_resp &drv, void *map);

/* Drops a QP's unpolled completions (the QP went back to RESET). */
void cq_clean(struct ibv_cq *ibcq, uint32_t qpn, bool keep_recv);

/* Fills the ibv_cq_ex callbacks for the wc_flags asked for. */
void init_cq_ex(cq *cq, uint64_t wc_flags);

extern const verbs_device_ops device_ops;
extern const verbs_context_ops context_ops;

} // namespace sroce

/*
 * libibverbs logs only when VERBS_LOG_LEVEL >= level (and VERBS_LOG_FILE is
 * set, or libibverbs was built with VERBS_DEBUG). __verbs_log does not look at
 * its context argument, so NULL is fine before a context exists.
 */
#define sroce_log(vctx, level, fmt, ...)                                       \
	__verbs_log((vctx), (level), "sroce: %s: " fmt "\n",                   \
		    __func__ __VA_OPT__(, ) __VA_ARGS__)

/* Callbacks handed to libibverbs. Hidden: the .so exports nothing. */
extern "C" {
bool sroce_match_device(verbs_sysfs_dev *sysfs_dev);
verbs_device *sroce_alloc_device(verbs_sysfs_dev *sysfs_dev);
void sroce_uninit_device(verbs_device *vdev);

verbs_context *sroce_alloc_context(struct ibv_device *ibdev, int cmd_fd,
				   void *private_data);
void sroce_free_context(struct ibv_context *ibctx);
verbs_context *sroce_import_context(struct ibv_device *ibdev, int cmd_fd);
struct ibv_pd *sroce_import_pd(struct ibv_context *ibctx, uint32_t pd_handle);
void sroce_unimport_pd(struct ibv_pd *ibpd);
struct ibv_mr *sroce_import_mr(struct ibv_pd *ibpd, uint32_t mr_handle);
void sroce_unimport_mr(struct ibv_mr *ibmr);
int sroce_query_device_ex(struct ibv_context *ibctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int sroce_query_port(struct ibv_context *ibctx, uint8_t port_num,
		     struct ibv_port_attr *port_attr);

struct ibv_pd *sroce_alloc_pd(struct ibv_context *ibctx);
int sroce_dealloc_pd(struct ibv_pd *ibpd);
struct ibv_pd *sroce_alloc_parent_domain(struct ibv_context *ibctx,
					 struct ibv_parent_domain_init_attr *attr);

struct ibv_xrcd *sroce_open_xrcd(struct ibv_context *ibctx,
				 struct ibv_xrcd_init_attr *attr);
int sroce_close_xrcd(struct ibv_xrcd *ibxrcd);

struct ibv_mr *sroce_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int sroce_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges);
int sroce_rereg_mr(verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
		   size_t length, int access);
int sroce_dereg_mr(verbs_mr *vmr);
struct ibv_mw *sroce_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type);
int sroce_dealloc_mw(struct ibv_mw *mw);
int sroce_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);
int sroce_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
		       uint16_t lid);
int sroce_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
		       uint16_t lid);

struct ibv_cq *sroce_create_cq(struct ibv_context *ibctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
int sroce_destroy_cq(struct ibv_cq *ibcq);
int sroce_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int sroce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
int sroce_resize_cq(struct ibv_cq *ibcq, int cqe);
struct ibv_cq_ex *sroce_create_cq_ex(struct ibv_context *ibctx,
				     struct ibv_cq_init_attr_ex *attr);

struct ibv_qp *sroce_create_qp(struct ibv_pd *ibpd,
			       struct ibv_qp_init_attr *attr);
struct ibv_qp *sroce_create_qp_ex(struct ibv_context *ibctx,
				  struct ibv_qp_init_attr_ex *attr);
int sroce_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr);
int sroce_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		    int attr_mask);
int sroce_destroy_qp(struct ibv_qp *ibqp);
struct ibv_qp *sroce_open_qp(struct ibv_context *ibctx,
			     struct ibv_qp_open_attr *attr);
int sroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int sroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);

struct ibv_srq *sroce_create_srq(struct ibv_pd *ibpd,
				 struct ibv_srq_init_attr *attr);
struct ibv_srq *sroce_create_srq_ex(struct ibv_context *ibctx,
				    struct ibv_srq_init_attr_ex *attr);
int sroce_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num);
int sroce_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		     int attr_mask);
int sroce_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int sroce_destroy_srq(struct ibv_srq *ibsrq);
int sroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);

struct ibv_ah *sroce_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr);
int sroce_destroy_ah(struct ibv_ah *ibah);
}

#endif /* SROCE_PROVIDER_SROCE_H */
