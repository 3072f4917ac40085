/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Recognising sroce devices by their sysfs ABI attribute.
 *
 * Pure helpers with no libibverbs dependency, so the unit tests can drive
 * them directly.
 */
#ifndef SROCE_PROVIDER_ABI_ATTR_H
#define SROCE_PROVIDER_ABI_ATTR_H

#include <cstddef>
#include <cstdint>

#include <rdma/sroce-abi.h>

namespace sroce {

/* Kernel ABI versions (sroce-abi.h SROCE_UVERBS_ABI_VERSION) we can drive. */
inline constexpr uint32_t kMinKernelAbi = SROCE_UVERBS_ABI_VERSION;
inline constexpr uint32_t kMaxKernelAbi = SROCE_UVERBS_ABI_VERSION;
static_assert(kMinKernelAbi <= kMaxKernelAbi);

/*
 * Parse the content of the SROCE_SYSFS_ABI_ATTR file: one or more decimal
 * digits, optionally followed by a single '\n', nothing else (no sign, no
 * spaces, no NUL). Returns false on anything else or on overflow of 32 bits.
 */
bool parse_abi_attr(const char *text, size_t len, uint32_t *version);

constexpr bool abi_supported(uint32_t version)
{
	return version >= kMinKernelAbi && version <= kMaxKernelAbi;
}

enum class attr_verdict {
	accepted,	/* sroce device with an ABI we support */
	absent,		/* no attribute: not an sroce device */
	malformed,	/* attribute present but unparsable, or unreadable */
	unsupported,	/* sroce device, ABI outside [kMin, kMax] */
};

/*
 * Read <ibdev_dir>/SROCE_SYSFS_ABI_ATTR and classify the device. *version is
 * set when the verdict is accepted or unsupported.
 */
attr_verdict check_ibdev_dir(const char *ibdev_dir, uint32_t *version);

const char *attr_verdict_name(attr_verdict v);

} // namespace sroce

#endif /* SROCE_PROVIDER_ABI_ATTR_H */
