// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider registration and device matching.
 *
 * sroce.ko registers its devices with driver_id RDMA_DRIVER_UNKNOWN and the
 * user picks (and udev may change) their names, so neither the driver-id nor
 * the name can identify them. libibverbs (init.c, v44) tries every registered
 * provider on every device in registration order, and for providers with a
 * match_device callback calls it unconditionally after the table match; its
 * answer is final. So:
 *
 *  - the table holds one catch-all entry that matches every name libibverbs
 *    synthesises ("rdma_device:N<ibdev_name>"), purely so the table match
 *    never fails and libibverbs does not go on to read device/modalias;
 *  - sroce_match_device() accepts a device only if its sysfs directory has
 *    the SROCE_SYSFS_ABI_ATTR attribute with a version we support. Any other
 *    device (rxe0, mlx5_0, ...) lacks the attribute and is left to its own
 *    provider whatever order the providers were loaded in.
 */
#include <cstdio>
#include <cstdlib>

#include "abi_attr.h"
#include "sroce.h"

namespace sroce {
namespace {

const verbs_match_ent match_table[] = {
	{
		.driver_data = nullptr,
		.u = {.modalias = "rdma_device:N*"},
		.vendor = 0,
		.device = 0,
		.kind = SROCE_VERBS_MATCH_MODALIAS,
	},
	{},
};

} // namespace

const verbs_device_ops device_ops = {
	.name = "sroce",
	/* libibverbs compares these with the device's uverbs ABI version. */
	.match_min_abi_version = kMinKernelAbi,
	.match_max_abi_version = kMaxKernelAbi,
	.match_table = match_table,
	.static_providers = nullptr,
	.match_device = sroce_match_device,
	.alloc_context = sroce_alloc_context,
	.import_context = sroce_import_context,
	.alloc_device = sroce_alloc_device,
	.uninit_device = sroce_uninit_device,
};

} // namespace sroce

extern "C" {

bool sroce_match_device(verbs_sysfs_dev *sysfs_dev)
{
	uint32_t version = 0;
	const sroce::attr_verdict verdict =
		sroce::check_ibdev_dir(sysfs_dev->ibdev_path, &version);

	switch (verdict) {
	case sroce::attr_verdict::accepted:
		sroce_log(nullptr, SROCE_VERBS_LOG_DEBUG,
			  "%s: sroce device, kernel ABI %u",
			  sysfs_dev->ibdev_name, version);
		return true;
	case sroce::attr_verdict::absent:
		return false;
	case sroce::attr_verdict::unsupported:
		std::fprintf(stderr,
			     "libsroce: Warning: %s has kernel ABI %u, this provider supports %u to %u\n",
			     sysfs_dev->ibdev_name, version,
			     sroce::kMinKernelAbi, sroce::kMaxKernelAbi);
		return false;
	case sroce::attr_verdict::malformed:
		std::fprintf(stderr,
			     "libsroce: Warning: unreadable or malformed %s/%s\n",
			     sysfs_dev->ibdev_path, SROCE_SYSFS_ABI_ATTR);
		return false;
	}
	return false;
}

verbs_device *sroce_alloc_device(verbs_sysfs_dev *)
{
	/* Zeroed: libibverbs asserts the ibv_device's legacy ops are NULL. */
	auto *dev = static_cast<sroce::device *>(std::calloc(1, sizeof(sroce::device)));
	if (!dev)
		return nullptr;
	return &dev->vdev;
}

void sroce_uninit_device(verbs_device *vdev)
{
	std::free(sroce::get_device(vdev));
}

/*
 * Runs when libibverbs dlopen()s us. verbs_register_driver_34 is defined by
 * libibverbs (version node IBVERBS_PRIVATE_34); this library exports nothing.
 */
__attribute__((constructor)) static void sroce_register_provider(void)
{
	verbs_register_driver_34(&sroce::device_ops);
}

} // extern "C"
