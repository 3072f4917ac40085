// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Protection domains.
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
	const int err = ibv_cmd_dealloc_pd(ibpd);
	if (err)
		return err;
	std::free(sroce::get_pd(ibpd));
	return 0;
}

} // extern "C"
