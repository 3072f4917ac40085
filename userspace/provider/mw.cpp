// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows, type 1 and type 2B. Allocation and deallocation are
 * uverbs commands; the kernel hands out the rkey. Binding is a work request
 * in the send queue (qp.cpp: IBV_WR_BIND_MW, ibv_wr_bind_mw(), and
 * ibv_bind_mw() for type 1), which the kernel checks and executes in order.
 */
#include <cerrno>
#include <cstdlib>

#include "sroce.h"

extern "C" {

struct ibv_mw *sroce_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	auto *mw = static_cast<struct ibv_mw *>(std::calloc(1, sizeof(struct ibv_mw)));
	if (!mw) {
		errno = ENOMEM;
		return nullptr;
	}

	/* The kernel refuses types other than 1 and 2 (EINVAL). */
	sroce::abi::cmd_alloc_mw cmd{};
	struct ib_uverbs_alloc_mw_resp resp{};
	const int err = ibv_cmd_alloc_mw(ibpd, type, mw, &cmd, sizeof(cmd),
					 &resp, sizeof(resp));
	if (err) {
		std::free(mw);
		errno = err;
		return nullptr;
	}
	return mw;
}

int sroce_dealloc_mw(struct ibv_mw *mw)
{
	const int err = ibv_cmd_dealloc_mw(mw);
	if (err)
		return err;
	std::free(mw);
	return 0;
}

} // extern "C"
