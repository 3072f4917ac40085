// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address handles. The kernel keeps the address (and resolves the
 * destination MAC for RoCE); the provider keeps the AH number the kernel
 * returns and puts it into UD send WQEs.
 */
#include <cerrno>
#include <cstdlib>

#include "sroce.h"

namespace sroce {
namespace {

using create_ah_resp =
	abi::with_driver_data<abi::resp_create_ah_core, sroce_create_ah_resp>;
/* The core response is 4 bytes; sroce_create_ah_resp must start right there. */
static_assert(abi::driver_data_is_adjacent<abi::resp_create_ah_core,
					   sroce_create_ah_resp>());
static_assert(sizeof(sroce_create_ah_resp) == 8);

} // namespace
} // namespace sroce

extern "C" {

struct ibv_ah *sroce_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	auto *ah = static_cast<sroce::ah *>(std::calloc(1, sizeof(sroce::ah)));
	if (!ah) {
		errno = ENOMEM;
		return nullptr;
	}

	sroce::create_ah_resp resp{};
	const int err = ibv_cmd_create_ah(ibpd, &ah->ibv, attr, &resp.core,
					  sizeof(resp));
	if (err) {
		std::free(ah);
		errno = err;
		return nullptr;
	}
	ah->ah_num = resp.drv.ah_num;
	return &ah->ibv;
}

int sroce_destroy_ah(struct ibv_ah *ibah)
{
	const int err = ibv_cmd_destroy_ah(ibah);
	if (err)
		return err;
	std::free(sroce::get_ah(ibah));
	return 0;
}

} // extern "C"
