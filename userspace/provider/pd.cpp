// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Protection domains and parent domains.
 *
 * A parent domain (ibv_alloc_parent_domain) exists in the process only: it
 * takes its protection domain's command handle, so every object created on
 * it (QP, SRQ, MR, AH, and a CQ created with IBV_CQ_INIT_ATTR_MASK_PD)
 * belongs to that protection domain in the kernel. A protection domain with
 * parent domains on it cannot be deallocated (EBUSY), nor a parent domain
 * with CQs, QPs or SRQs on it (EBUSY, as on mlx5). Thread domains are not
 * implemented (alloc_td: EOPNOTSUPP), so a parent domain has none.
 */
#include <cerrno>
#include <cstdlib>

#include "sroce.h"

namespace sroce {
namespace {

using alloc_pd_resp =
	abi::with_driver_data<abi::resp_alloc_pd_core, sroce_alloc_pd_resp>;
/* The core response is 4 bytes; sroce_alloc_pd_resp must start right there. */
static_assert(abi::driver_data_is_adjacent<abi::resp_alloc_pd_core,
					   sroce_alloc_pd_resp>());

} // namespace
} // namespace sroce

extern "C" {

struct ibv_pd *sroce_alloc_pd(struct ibv_context *ibctx)
{
	auto *pd = static_cast<sroce::pd *>(std::calloc(1, sizeof(sroce::pd)));
	if (!pd) {
		errno = ENOMEM;
		return nullptr;
	}

	sroce::abi::cmd_alloc_pd cmd{};
	sroce::alloc_pd_resp resp{};
	const int err = ibv_cmd_alloc_pd(ibctx, &pd->ibv, &cmd, sizeof(cmd),
					 &resp.core, sizeof(resp));
	if (err) {
		std::free(pd);
		errno = err;
		return nullptr;
	}
	pd->pdn = resp.drv.pdn;
	sroce_log(verbs_get_ctx(ibctx), SROCE_VERBS_LOG_DEBUG,
		  "pd handle %u pdn %u", pd->ibv.handle, pd->pdn);
	return &pd->ibv;
}

int sroce_dealloc_pd(struct ibv_pd *ibpd)
{
	sroce::pd *pd = sroce::get_pd(ibpd);

	if (pd->protection) {
		if (pd->users.load(std::memory_order_acquire))
			return EBUSY;
		pd->protection->parents.fetch_sub(1, std::memory_order_release);
		std::free(pd);
		return 0;
	}
	if (pd->parents.load(std::memory_order_acquire))
		return EBUSY;
	const int err = ibv_cmd_dealloc_pd(ibpd);
	if (err)
		return err;
	std::free(pd);
	return 0;
}

struct ibv_pd *sroce_alloc_parent_domain(struct ibv_context *ibctx,
					 struct ibv_parent_domain_init_attr *attr)
{
	constexpr uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				   IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;

	if (attr->comp_mask & ~known) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	/* No thread domain can come from this context (alloc_td fails). */
	if (!attr->pd || attr->pd->context != ibctx || attr->td) {
		errno = EINVAL;
		return nullptr;
	}
	sroce::pd *protection = sroce::get_pd(attr->pd);
	if (protection->protection) {
		errno = EINVAL;	/* a parent domain on a parent domain */
		return nullptr;
	}

	auto *pd = static_cast<sroce::pd *>(std::calloc(1, sizeof(sroce::pd)));
	if (!pd) {
		errno = ENOMEM;
		return nullptr;
	}
	pd->ibv.context = ibctx;
	pd->ibv.handle = attr->pd->handle;
	pd->pdn = protection->pdn;
	pd->protection = protection;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	protection->parents.fetch_add(1, std::memory_order_relaxed);
	return &pd->ibv;
}

/*
 * ibv_import_pd(): the PD behind a handle of the imported context's kernel
 * user context. There is no generic command to check the handle with; a
 * wrong one makes every command that uses the PD fail (EINVAL).
 */
struct ibv_pd *sroce_import_pd(struct ibv_context *ibctx, uint32_t pd_handle)
{
	auto *pd = static_cast<sroce::pd *>(std::calloc(1, sizeof(sroce::pd)));
	if (!pd) {
		errno = ENOMEM;
		return nullptr;
	}
	pd->ibv.context = ibctx;
	pd->ibv.handle = pd_handle;
	return &pd->ibv;
}

/* Forget an imported PD; the kernel's stays with its owner. */
void sroce_unimport_pd(struct ibv_pd *ibpd)
{
	std::free(sroce::get_pd(ibpd));
}

} // extern "C"
