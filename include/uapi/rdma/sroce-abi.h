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

/* Driver data returned by create_cq (after ib_uverbs_create_cq_resp). */
struct sroce_create_cq_resp {
	__aligned_u64 mmap_offset;	/* pass to mmap() on the context's fd */
	__aligned_u64 mmap_size;	/* bytes to map, a multiple of the page size */
	__u32 entries;			/* ring slots, a power of two */
	__u32 reserved;
};

/*
 * Completion queue ring
 * ---------------------
 * create_cq maps a ring of struct ib_uverbs_wc (48 bytes, the layout of
 * struct ibv_wc) into the process: mmap(NULL, mmap_size, PROT_READ |
 * PROT_WRITE, MAP_SHARED, cmd_fd, mmap_offset). The mapping starts with a
 * struct sroce_cq_ring_hdr; entry i lives at byte SROCE_CQ_RING_ENTRIES_OFF +
 * i * sizeof(struct ib_uverbs_wc), i in [0, entries).
 *
 * producer and consumer are free-running 32-bit counters; the slot of count n
 * is n & (entries - 1). The kernel writes an entry, then publishes it with a
 * store-release of producer. User space reads producer with a load-acquire,
 * copies the entries, then releases the slots with a store-release of
 * consumer. The ring is full when producer - consumer == entries; the kernel
 * then drops the completion and raises IB_EVENT_CQ_ERR (CQ overrun). The
 * kernel keeps its own copy of producer and only ever reads consumer, which it
 * masks and checks (a distance beyond entries also counts as an overrun).
 *
 * wc_flags in ring entries use libibverbs' enum ibv_wc_flags bit values
 * (IBV_WC_GRH, IBV_WC_WITH_IMM, IBV_WC_IP_CSUM_OK, IBV_WC_WITH_INV), so an
 * entry can be copied into a struct ibv_wc as is.
 *
 * Notification (ibv_req_notify_cq) without a system call: user space ORs
 * SROCE_CQ_ARM_NEXT or SROCE_CQ_ARM_SOLICITED into arm with an atomic
 * read-modify-write that is a full barrier. After publishing a completion the
 * kernel issues a full barrier and reads arm; if it asks for this completion
 * (NEXT, or SOLICITED and the completion is solicited) the kernel clears arm
 * and raises the completion event (ibv_get_cq_event). The two barriers pair:
 * either the kernel sees the arm and raises an event, or a poll issued after
 * req_notify_cq returns sees the completion. Consumers therefore follow the
 * usual verbs pattern (arm, poll again, then wait), and no completion can be
 * left behind without either an event or a poll that finds it.
 */
#define SROCE_WC_FLAG_GRH		(1u << 0)	/* IBV_WC_GRH */
#define SROCE_WC_FLAG_WITH_IMM		(1u << 1)	/* IBV_WC_WITH_IMM */
#define SROCE_WC_FLAG_IP_CSUM_OK	(1u << 2)	/* IBV_WC_IP_CSUM_OK */
#define SROCE_WC_FLAG_WITH_INV		(1u << 3)	/* IBV_WC_WITH_INV */

#define SROCE_CQ_ARM_NEXT		1u
#define SROCE_CQ_ARM_SOLICITED		2u

#define SROCE_CQ_RING_LINE		64
struct sroce_cq_ring_hdr {
	__u32 producer;			/* written by the kernel only */
	__u32 pad0[SROCE_CQ_RING_LINE / 4 - 1];
	__u32 consumer;			/* written by user space only */
	__u32 pad1[SROCE_CQ_RING_LINE / 4 - 1];
	__u32 arm;			/* set by user space, cleared by the kernel */
	__u32 pad2[SROCE_CQ_RING_LINE / 4 - 1];
};

/* Entries start right after the header; 192 is a multiple of 48. */
#define SROCE_CQ_RING_ENTRIES_OFF	(3 * SROCE_CQ_RING_LINE)
#define SROCE_CQ_RING_WC_SIZE		48

#endif /* SROCE_ABI_USER_H */
