// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues: one receive ring mapped from the command fd
 * (include/uapi/rdma/sroce-abi.h, "Work queues"); post_srq_recv writes and
 * publishes WQEs without entering the kernel. Arming the limit (srq_limit)
 * is a modify_srq command; the kernel raises IBV_EVENT_SRQ_LIMIT_REACHED.
 *
 * Resizing (modify_srq with IBV_SRQ_MAX_WR) happens under the SRQ's lock:
 * the kernel moves the posted WQEs to a new ring and writes its layout to
 * the address passed in the command, and the new ring replaces the mapping.
 *
 * XRC SRQs (create_srq_ex with IBV_SRQT_XRC) are the same ring: the kernel
 * steers into one the receives that XRC_SEND QPs address to its XRC SRQ
 * number (ibv_get_srq_num()), through any XRC_RECV QP of its domain, and
 * completes them on the SRQ's own CQ. create_srq_ex takes basic SRQs too
 * (libibverbs sends those it can express with ibv_create_srq to
 * create_srq). Tag-matching SRQs are not implemented (EOPNOTSUPP).
 */
#include <cerrno>
#include <cstdlib>

#include <sys/mman.h>

#include "sroce.h"

namespace sroce {
namespace {

using create_srq_resp =
	abi::with_driver_data<abi::resp_create_srq_core, sroce_create_srq_resp>;
static_assert(abi::driver_data_is_adjacent<abi::resp_create_srq_core,
					   sroce_create_srq_resp>());
static_assert(sizeof(sroce_create_srq_resp) == 32);

using modify_srq_cmd =
	abi::with_driver_data<abi::cmd_modify_srq, sroce_modify_srq_cmd>;
static_assert(abi::driver_data_is_adjacent<abi::cmd_modify_srq,
					   sroce_modify_srq_cmd>());

/* create_srq_ex comp_mask bits we take (tag matching: EOPNOTSUPP). */
constexpr uint32_t kSrqInitAttrMask = IBV_SRQ_INIT_ATTR_TYPE |
				      IBV_SRQ_INIT_ATTR_PD |
				      IBV_SRQ_INIT_ATTR_XRCD |
				      IBV_SRQ_INIT_ATTR_CQ;

/*
 * After the kernel created the SRQ: maps its ring and attaches it. On error
 * the SRQ is destroyed in the kernel again (srq itself is the caller's to
 * free) and an errno value is returned.
 */
int map_srq(srq *srq, const sroce_create_srq_resp &drv,
	    const struct ibv_srq_attr &attr)
{
	struct ibv_context *ibctx = srq->ibv.context;
	int err;

	if (drv.mmap_size && drv.mmap_size <= wq::kMaxMapSize) {
		void *p = mmap(nullptr, drv.mmap_size, PROT_READ | PROT_WRITE,
			       MAP_SHARED, ibctx->cmd_fd,
			       static_cast<off_t>(drv.mmap_offset));
		if (p == MAP_FAILED) {
			err = errno;
			goto fail;
		}
		srq->map = p;
		srq->map_size = drv.mmap_size;
	}
	err = attach_srq_ring(srq, attr.max_wr, attr.max_sge, drv, srq->map);
	if (err) {
		sroce_log(verbs_get_ctx(ibctx), SROCE_VERBS_LOG_ERR,
			  "bad srq ring: %u x %u (%llu bytes), max_sge %u",
			  drv.entries, drv.wqe_size,
			  static_cast<unsigned long long>(drv.mmap_size),
			  attr.max_sge);
		goto fail;
	}
	return 0;

fail:
	if (srq->map)
		munmap(srq->map, srq->map_size);
	srq->map = nullptr;
	ibv_cmd_destroy_srq(&srq->ibv);
	return err;
}

} // namespace

int attach_srq_ring(srq *srq, uint32_t max_wr, uint32_t max_sge,
		    const sroce_create_srq_resp &drv, void *map)
{
	if (!drv.entries || !map ||
	    !wq::geometry_ok(drv.mmap_size, drv.entries, drv.wqe_size,
			     wq::kRecvHdr) ||
	    max_sge > wq::recv_slot_sges(drv.wqe_size))
		return EPROTO;
	srq->max_sge = max_sge;
	srq->srqn = drv.srqn;
	wq::attach(srq->rq, map, drv.entries, drv.wqe_size, max_wr);
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

} // namespace sroce

extern "C" {

/* ibv_create_srq(): a basic SRQ, through the one creation path below. */
struct ibv_srq *sroce_create_srq(struct ibv_pd *ibpd,
				 struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex = {};

	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	ex.pd = ibpd;

	struct ibv_srq *srq = sroce_create_srq_ex(ibpd->context, &ex);
	if (srq)
		attr->attr = ex.attr;
	return srq;
}

/*
 * The SRQ types sroce has: basic, and XRC (with its domain and the CQ its
 * completions go to). libibverbs has checked neither the pointers nor the
 * type, and dereferences them.
 */
struct ibv_srq *sroce_create_srq_ex(struct ibv_context *ibctx,
				    struct ibv_srq_init_attr_ex *attr)
{
	const enum ibv_srq_type type = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ?
					       attr->srq_type : IBV_SRQT_BASIC;

	if ((attr->comp_mask & ~sroce::kSrqInitAttrMask) ||
	    (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC)) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    (type == IBV_SRQT_XRC &&
	     (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
	      !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq))) {
		errno = EINVAL;
		return nullptr;
	}

	auto *srq = static_cast<sroce::srq *>(std::calloc(1, sizeof(sroce::srq)));
	if (!srq) {
		errno = ENOMEM;
		return nullptr;
	}

	/*
	 * libibverbs' write() fallback reads srq_type even without the TYPE
	 * bit: it gets the type meant.
	 */
	struct ibv_srq_init_attr_ex kattr = *attr;
	kattr.comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
	kattr.srq_type = type;

	sroce::abi::cmd_create_xsrq cmd{};
	sroce::create_srq_resp resp{};
	int err = ibv_cmd_create_srq_ex(ibctx, &srq->vsrq, &kattr, &cmd, sizeof(cmd),
					&resp.core, sizeof(resp));
	if (err) {
		std::free(srq);
		errno = err;
		return nullptr;
	}
	attr->attr.max_wr = kattr.attr.max_wr;
	attr->attr.max_sge = kattr.attr.max_sge;

	/* The core response and sroce's must name the same XRC SRQ. */
	if (type == IBV_SRQT_XRC && resp.drv.srqn != srq->vsrq.srq_num) {
		sroce_log(verbs_get_ctx(ibctx), SROCE_VERBS_LOG_ERR,
			  "xrc srq number %u, driver data says %u",
			  srq->vsrq.srq_num, resp.drv.srqn);
		ibv_cmd_destroy_srq(&srq->ibv);
		std::free(srq);
		errno = EPROTO;
		return nullptr;
	}
	err = sroce::map_srq(srq, resp.drv, attr->attr);
	if (err) {
		std::free(srq);
		errno = err;
		return nullptr;
	}
	srq->parent = sroce::parent_hold(attr->pd);
	sroce_log(verbs_get_ctx(ibctx), SROCE_VERBS_LOG_DEBUG,
		  "%s srq %u: %u x %u", type == IBV_SRQT_XRC ? "xrc" : "basic",
		  resp.drv.srqn, resp.drv.entries, resp.drv.wqe_size);
	return &srq->ibv;
}

/* Only an XRC SRQ has a number senders use (EOPNOTSUPP otherwise). */
int sroce_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	const sroce::srq *srq = sroce::get_srq(ibsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EOPNOTSUPP;
	*srq_num = srq->vsrq.srq_num;
	return 0;
}

/*
 * If the new ring cannot be mapped, the kernel already posts into it: the
 * SRQ is left without a ring (every post fails with ENOMEM) rather than
 * lose WQEs silently.
 */
int sroce_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		     int attr_mask)
{
	sroce::srq *srq = sroce::get_srq(ibsrq);
	sroce::modify_srq_cmd cmd{};
	sroce_create_srq_resp out{};

	if (!(attr_mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.core,
					  sizeof(cmd.core));

	cmd.drv.resp = reinterpret_cast<uintptr_t>(&out);
	pthread_spin_lock(&srq->lock);
	int err = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.core, sizeof(cmd));
	if (!err) {
		void *map = MAP_FAILED;
		if (out.entries && out.mmap_size <= sroce::wq::kMaxMapSize &&
		    sroce::wq::geometry_ok(out.mmap_size, out.entries, out.wqe_size,
					   sroce::wq::kRecvHdr) &&
		    srq->max_sge <= sroce::wq::recv_slot_sges(out.wqe_size))
			map = mmap(nullptr, out.mmap_size, PROT_READ | PROT_WRITE,
				   MAP_SHARED, ibsrq->context->cmd_fd,
				   static_cast<off_t>(out.mmap_offset));
		else
			errno = EPROTO;
		if (map == MAP_FAILED) {
			err = errno;
			sroce_log(verbs_get_ctx(ibsrq->context), SROCE_VERBS_LOG_ERR,
				  "modify_srq: cannot map the new ring (%d); the SRQ is lost",
				  err);
			sroce::wq::attach(srq->rq, nullptr, 0, 0, 0);
		} else {
			sroce::wq::attach(srq->rq, map, out.entries, out.wqe_size,
					  out.entries);
		}
		munmap(srq->map, srq->map_size);
		srq->map = map == MAP_FAILED ? nullptr : map;
		srq->map_size = map == MAP_FAILED ? 0 : out.mmap_size;
	}
	pthread_spin_unlock(&srq->lock);
	return err;
}

int sroce_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	sroce::abi::cmd_query_srq cmd{};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int sroce_destroy_srq(struct ibv_srq *ibsrq)
{
	sroce::srq *srq = sroce::get_srq(ibsrq);

	const int err = ibv_cmd_destroy_srq(ibsrq);
	if (err)
		return err;
	sroce::parent_release(srq->parent);
	munmap(srq->map, srq->map_size);
	pthread_spin_destroy(&srq->lock);
	std::free(srq);
	return 0;
}

int sroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	sroce::srq *srq = sroce::get_srq(ibsrq);

	pthread_spin_lock(&srq->lock);
	const int err = sroce::wq::post_recv_chain(srq->rq, srq->max_sge, wr,
						   bad_wr);
	pthread_spin_unlock(&srq->lock);
	return err;
}

} // extern "C"
