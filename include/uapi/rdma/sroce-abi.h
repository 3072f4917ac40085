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
 * read-modify-write followed by a full fence. After publishing a completion the
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

/*
 * Work queues
 * ===========
 * A QP's send queue (SQ), its receive queue (RQ, absent with an SRQ) and an
 * SRQ are rings of fixed-size slots in memory shared with the kernel, mapped
 * like the CQ ring: mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
 * cmd_fd, offset) with the numbers from the create response. Each mapping
 * starts with a struct sroce_wq_hdr; slot i (i in [0, entries)) lives at byte
 * SROCE_WQ_SLOTS_OFF + i * wqe_size. entries and wqe_size are powers of two.
 *
 * producer and consumer are free-running 32-bit counters; the slot of count n
 * is n & (entries - 1). User space writes a WQE into the slot of its producer
 * count, then publishes it with a store-release of producer. The kernel reads
 * producer with a load-acquire, copies the WQE into kernel memory and
 * validates only the copy; it never reads a slot twice and keeps all its
 * state (progress, PSNs, keys) in kernel memory. It advances consumer (a
 * store-release) when a slot may be reused: for the SQ when the work request
 * has completed (successfully or not, signaled or not), for the RQ and SRQ
 * when the WQE has been taken for an incoming message. The queue is full when
 * producer - consumer == entries; the kernel treats a producer more than
 * entries ahead of its own consumer count as a broken queue (the QP goes to
 * the error state, with IB_EVENT_QP_FATAL).
 *
 * Send doorbell. The SQ header's sq_idle word is 1 while the kernel's send
 * engine for the QP is idle, i.e. will not look at producer again without
 * being told to. After publishing producer user space issues a full barrier
 * and reads sq_idle; if it is non-zero it rings the doorbell: the uverbs
 * POST_SEND command with wr_count 0 (a plain write() of struct
 * ib_uverbs_cmd_hdr + struct ib_uverbs_post_send on cmd_fd; ib_uverbs
 * insists on wqe_size >= sizeof(struct ib_uverbs_send_wr), 56, even then). The kernel clears sq_idle before it
 * starts working and, when it runs out of work, stores 1, issues a full
 * barrier and reads producer once more (and resumes if it moved). Either the
 * kernel sees the new producer or user space sees sq_idle == 1, so no posted
 * WQE waits for a doorbell that never comes. Receive queues need no doorbell:
 * the kernel looks at producer when a message arrives; except in the error
 * state, when nothing arrives any more: the kernel then stores 1 in the RQ
 * header's sq_idle word (before it flushes the ring, with a full barrier in
 * between), and user space that finds it non-zero after publishing receives
 * (same barrier) rings the QP's send doorbell, which flushes them with
 * IBV_WC_WR_FLUSH_ERR completions. Back in RESET the word is 0 again.
 */
#define SROCE_WQ_LINE			64
struct sroce_wq_hdr {
	__u32 producer;			/* written by user space only */
	__u32 pad0[SROCE_WQ_LINE / 4 - 1];
	__u32 consumer;			/* written by the kernel only */
	__u32 pad1[SROCE_WQ_LINE / 4 - 1];
	__u32 sq_idle;			/* SQ: engine idle; RQ: QP in ERR; kernel-written */
	__u32 pad2[SROCE_WQ_LINE / 4 - 1];
	__u32 pad3[SROCE_WQ_LINE / 4];
};

#define SROCE_WQ_SLOTS_OFF		256	/* sizeof(struct sroce_wq_hdr) */

/* A scatter/gather element; the layout of struct ibv_sge. */
struct sroce_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * Send WQE: this 64-byte header followed by num_sge struct sroce_sge or, with
 * SROCE_SEND_INLINE (IBV_SEND_INLINE) in send_flags, by inline_len bytes
 * of data (at most the QP's max_inline_data; num_sge is then ignored). opcode is enum
 * ib_uverbs_wr_opcode (the values of enum ibv_wr_opcode), send_flags are
 * IBV_SEND_* bits (FENCE 1, SIGNALED 2, SOLICITED 4, INLINE 8).
 * imm_data (SEND/WRITE with immediate) is in network byte order, as
 * struct ibv_send_wr carries it; for SEND_WITH_INV the same word holds the
 * rkey to invalidate in host order, and so does it for LOCAL_INV (user QPs
 * invalidate type 2B memory windows with it).
 *
 * BIND_MW (IBV_WR_BIND_MW): imm_data holds the window's current rkey,
 * wr.bind the binding; no SGEs, no inline data. ibv_bind_mw() (type 1)
 * posts the same WQE with SROCE_BIND_TYPE_1 in wr.bind.flags; a type 2
 * window is bound only without it. new_rkey differs from the current rkey
 * in its low 8 bits at most.
 *
 * XRC (an XRC_SEND QP, IBV_QPT_XRC_SEND): xrc_srqn is the number of the XRC
 * SRQ at the target the message is for (ibv_send_wr's
 * qp_type.xrc.remote_srqn, ibv_wr_set_xrc_srqn()); 24 bits. Other QP types
 * leave it 0.
 */
struct sroce_send_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;
	__u32 send_flags;
	__u32 num_sge;
	__u32 inline_len;
	__u32 imm_data;			/* or invalidate_rkey */
	__u32 xrc_srqn;			/* XRC_SEND QPs: the target SRQ */
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 reserved;
		} atomic;
		struct {
			__aligned_u64 addr;	/* first byte, MR's iova space */
			__aligned_u64 length;	/* 0: type 1 unbind */
			__u32 mr_lkey;
			__u32 new_rkey;		/* low 8 bits are the consumer's */
			__u32 access;		/* IBV_ACCESS_REMOTE_* */
			__u32 flags;		/* SROCE_BIND_TYPE_1 */
		} bind;
		struct {
			__u32 ah_num;		/* from sroce_create_ah_resp */
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 reserved;
		} ud;
		__u8 raw[32];
	} wr;
	/* followed by struct sroce_sge sge[num_sge] or inline data */
};

/*
 * ATOMIC WRITE (IBTA 1.5, RC only): opcode SROCE_WR_ATOMIC_WRITE
 * (IBV_WR_ATOMIC_WRITE), the 8 bytes to write in wr.atomic.compare_add as
 * they are to land in memory, remote_addr (8-byte aligned) and rkey in
 * wr.atomic; no SGEs, no inline data. Its completion has opcode
 * SROCE_WC_ATOMIC_WRITE (IBV_WC_ATOMIC_WRITE).
 */
#define SROCE_WR_ATOMIC_WRITE		15
#define SROCE_WC_ATOMIC_WRITE		9

#define SROCE_BIND_TYPE_1		(1u << 0)

/* send_flags bits (the values of IBV_SEND_*). */
#define SROCE_SEND_FENCE		(1u << 0)
#define SROCE_SEND_SIGNALED		(1u << 1)
#define SROCE_SEND_SOLICITED		(1u << 2)
#define SROCE_SEND_INLINE		(1u << 3)

/* Receive WQE (RQ and SRQ): this header followed by num_sge SGEs. */
struct sroce_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
	/* followed by struct sroce_sge sge[num_sge] */
};

/* The largest inline payload a QP can be created with. */
#define SROCE_MAX_INLINE_DATA		512

/* Driver data returned by create_qp (after ib_uverbs_create_qp_resp). */
struct sroce_create_qp_resp {
	__aligned_u64 sq_mmap_offset;
	__aligned_u64 sq_mmap_size;
	__aligned_u64 rq_mmap_offset;	/* 0 and size 0 with an SRQ */
	__aligned_u64 rq_mmap_size;
	__u32 sq_entries;
	__u32 sq_wqe_size;
	__u32 rq_entries;
	__u32 rq_wqe_size;
	__u32 qpn;
	__u32 reserved;
};

/* Driver data returned by create_srq (after ib_uverbs_create_srq_resp). */
struct sroce_create_srq_resp {
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_size;
	__u32 entries;
	__u32 wqe_size;
	__u32 srqn;
	__u32 reserved;
};

/*
 * Driver data of modify_srq (after struct ib_uverbs_modify_srq). With
 * IB_SRQ_MAX_WR the SRQ moves to a new ring, and since the command has no
 * response, the kernel writes the new ring's struct sroce_create_srq_resp
 * (srqn 0) to the user address resp. The WQEs posted and not yet taken
 * move along, at the same producer and consumer counts; the old mapping is
 * not read any more. Without IB_SRQ_MAX_WR, resp is ignored.
 */
struct sroce_modify_srq_cmd {
	__aligned_u64 resp;
};

/* Driver data returned by create_ah (after ib_uverbs_create_ah_resp). */
struct sroce_create_ah_resp {
	__u32 ah_num;			/* goes into sroce_send_wqe.wr.ud.ah_num */
	__u32 reserved;
};

#endif /* SROCE_ABI_USER_H */
