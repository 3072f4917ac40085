/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * sroce kernel <-> user-space provider ABI.
 *
 * Shared by sroce.ko and libsroce-rdmav34.so. Plain C, fixed-width types only,
 * every structure a multiple of 8 bytes. Any incompatible change bumps
 * SROCE_UVERBS_ABI_VERSION (reported to libibverbs as the uverbs ABI version
 * and in the sysfs attribute below).
 */
#ifndef SROCE_ABI_USER_H
#define SROCE_ABI_USER_H

#include <linux/types.h>

/*
 * Version of this ABI; ib_device_ops.uverbs_abi_ver, shown by ib_uverbs in
 * /sys/class/infiniband_verbs/uverbsN/abi_version. libibverbs offers a device
 * only to providers whose [min, max] ABI range contains this number. The high
 * byte ('S') keeps it outside every other provider's range (all are small
 * numbers), so a provider that matches devices by name prefix (rxe claims
 * "rxe*") can never bind to an sroce device whatever its name. The low byte
 * is the revision.
 */
#define SROCE_UVERBS_ABI_VERSION 0x5301

/*
 * Every sroce ib_device carries this sysfs attribute
 * (/sys/class/infiniband/<dev>/SROCE_SYSFS_ABI_ATTR), whose content is the
 * decimal SROCE_UVERBS_ABI_VERSION (21249) followed by a newline. The provider matches
 * devices on it, so matching survives renames of the device.
 */
#define SROCE_SYSFS_ABI_ATTR "sroce_abi_version"

/* Link type for "rdma link add NAME type sroce netdev IF". */
#define SROCE_LINK_TYPE "sroce"

/* Driver data returned by alloc_ucontext (after ib_uverbs_get_context_resp). */
struct sroce_alloc_ucontext_resp {
	__u32 abi_version;	/* SROCE_UVERBS_ABI_VERSION */
	__u32 reserved;
};

/* Driver data returned by alloc_pd (after ib_uverbs_alloc_pd_resp). */
struct sroce_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

#endif /* SROCE_ABI_USER_H */
