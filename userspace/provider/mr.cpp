// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions: registration is entirely the kernel's (it pins the pages,
 * or for IBV_ACCESS_ON_DEMAND maps them as they are used, and hands out the
 * keys); the provider only wraps the commands.
 *
 * Reregistration keeps the keys: the kernel registers the region anew with
 * the changes asked for, under the same keys, and then drops the old
 * registration. If the command fails (IBV_REREG_MR_ERR_CMD, which allows
 * the region to be unusable) the region is in fact as it was.
 */
#include <cerrno>
#include <cstdlib>

#include "sroce.h"

extern "C" {

struct ibv_mr *sroce_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			    uint64_t hca_va, int access)
{
	auto *mr = static_cast<sroce::mr *>(std::calloc(1, sizeof(sroce::mr)));
	if (!mr) {
		errno = ENOMEM;
		return nullptr;
	}

	sroce::abi::cmd_reg_mr cmd{};
	struct ib_uverbs_reg_mr_resp resp{};
	const int err = ibv_cmd_reg_mr(ibpd, addr, length, hca_va, access,
				       &mr->vmr, &cmd, sizeof(cmd), &resp,
				       sizeof(resp));
	if (err) {
		std::free(mr);
		errno = err;
		return nullptr;
	}
	return &mr->vmr.ibv_mr;
}

int sroce_rereg_mr(verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
		   size_t length, int access)
{
	sroce::abi::cmd_rereg_mr cmd{};
	struct ib_uverbs_rereg_mr_resp resp{};

	const int err = ibv_cmd_rereg_mr(vmr, flags, addr, length,
					 reinterpret_cast<uintptr_t>(addr), access,
					 pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		errno = err;
		return err;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	return 0;
}

/*
 * ibv_advise_mr(): prefetch ranges of on-demand paging regions (the kernel
 * checks the keys and ranges and maps the pages).
 */
int sroce_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges)
{
	return ibv_cmd_advise_mr(pd, advice, flags, sg_list, num_sges);
}

int sroce_dereg_mr(verbs_mr *vmr)
{
	const int err = ibv_cmd_dereg_mr(vmr);
	if (err)
		return err;
	std::free(sroce::get_mr(vmr));
	return 0;
}

/* ibv_import_mr(): the kernel tells keys and length (QUERY_MR). */
struct ibv_mr *sroce_import_mr(struct ibv_pd *ibpd, uint32_t mr_handle)
{
	auto *mr = static_cast<sroce::mr *>(std::calloc(1, sizeof(sroce::mr)));
	if (!mr) {
		errno = ENOMEM;
		return nullptr;
	}
	const int err = ibv_cmd_query_mr(ibpd, &mr->vmr, mr_handle);
	if (err) {
		std::free(mr);
		errno = err;
		return nullptr;
	}
	return &mr->vmr.ibv_mr;
}

void sroce_unimport_mr(struct ibv_mr *ibmr)
{
	std::free(sroce::get_mr(reinterpret_cast<verbs_mr *>(ibmr)));
}

} // extern "C"
