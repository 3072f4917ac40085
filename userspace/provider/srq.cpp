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
 * Not implemented: create_srq_ex for XRC and tag-matching SRQs (libibverbs
 * answers EOPNOTSUPP; basic SRQs asked for through ibv_create_srq_ex come
 * here).
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

struct ibv_srq *sroce_create_srq(struct ibv_pd *ibpd,
				 struct ibv_srq_init_attr *attr)
{
	auto *srq = static_cast<sroce::srq *>(std::calloc(1, sizeof(sroce::srq)));
	if (!srq) {
		errno = ENOMEM;
		return nullptr;
	}

	sroce::abi::cmd_create_srq cmd{};
	sroce::create_srq_resp resp{};
	int err = ibv_cmd_create_srq(ibpd, &srq->ibv, attr, &cmd, sizeof(cmd),
				     &resp.core, sizeof(resp));
	if (err) {
		std::free(srq);
		errno = err;
		return nullptr;
	}

	const sroce_create_srq_resp &drv = resp.drv;
	if (drv.mmap_size && drv.mmap_size <= sroce::wq::kMaxMapSize) {
		void *p = mmap(nullptr, drv.mmap_size, PROT_READ | PROT_WRITE,
			       MAP_SHARED, ibpd->context->cmd_fd,
			       static_cast<off_t>(drv.mmap_offset));
		if (p == MAP_FAILED) {
			err = errno;
			goto fail;
		}
		srq->map = p;
		srq->map_size = drv.mmap_size;
	}
	err = sroce::attach_srq_ring(srq, attr->attr.max_wr, attr->attr.max_sge,
				     drv, srq->map);
	if (err) {
		sroce_log(verbs_get_ctx(ibpd->context), SROCE_VERBS_LOG_ERR,
			  "bad srq ring: %u x %u (%llu bytes), max_sge %u",
			  drv.entries, drv.wqe_size,
			  static_cast<unsigned long long>(drv.mmap_size),
			  attr->attr.max_sge);
		goto fail;
	}
	return &srq->ibv;

fail:
	if (srq->map)
		munmap(srq->map, srq->map_size);
	ibv_cmd_destroy_srq(&srq->ibv);
	std::free(srq);
	errno = err;
	return nullptr;
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
