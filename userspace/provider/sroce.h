/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libsroce-rdmav34.so internals: the provider's objects and the callbacks
 * libibverbs invokes. One .cpp per object family (device, context, pd, mr, cq;
 * later qp, srq, ah), each adding its callbacks here and to the ops table in
 * context.cpp.
 */
#ifndef SROCE_PROVIDER_SROCE_H
#define SROCE_PROVIDER_SROCE_H

#include <cstddef>
#include <cstdint>

#include <pthread.h>
#include <rdma/sroce-abi.h>

#include "ibverbs_private.h"

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

struct pd {
	struct ibv_pd ibv;
	uint32_t pdn;			/* kernel PD number, for diagnostics */
};

struct mr {
	verbs_mr vmr;			/* libibverbs sees &vmr.ibv_mr */
};

/*
 * A CQ: the ring the kernel produces into (layout in sroce-abi.h), mapped
 * from the context's command fd. lock serialises pollers of the same CQ.
 */
struct cq {
	struct ibv_cq ibv;
	void *map;			/* whole mapping, map_size bytes */
	size_t map_size;
	sroce_cq_ring_hdr *hdr;
	const struct ib_uverbs_wc *ring;
	uint32_t entries;		/* power of two */
	uint32_t cons;			/* our copy of hdr->consumer */
	pthread_spinlock_t lock;
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

inline mr *get_mr(verbs_mr *vmr)
{
	return outer_of<mr>(vmr, offsetof(mr, vmr));
}

inline cq *get_cq(struct ibv_cq *ibcq)
{
	return outer_of<cq>(ibcq, offsetof(cq, ibv));
}

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
int sroce_query_device_ex(struct ibv_context *ibctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int sroce_query_port(struct ibv_context *ibctx, uint8_t port_num,
		     struct ibv_port_attr *port_attr);

struct ibv_pd *sroce_alloc_pd(struct ibv_context *ibctx);
int sroce_dealloc_pd(struct ibv_pd *ibpd);

struct ibv_mr *sroce_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int sroce_dereg_mr(verbs_mr *vmr);

struct ibv_cq *sroce_create_cq(struct ibv_context *ibctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
int sroce_destroy_cq(struct ibv_cq *ibcq);
int sroce_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int sroce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
}

#endif /* SROCE_PROVIDER_SROCE_H */
