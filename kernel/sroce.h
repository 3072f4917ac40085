/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce - software RoCE v2 RDMA device: private declarations shared by the
 * files of the module.
 */
#ifndef SROCE_H
#define SROCE_H

#include <linux/completion.h>
#include <linux/hrtimer.h>
#include <linux/idr.h>
#include <linux/in6.h>
#include <linux/interrupt.h>
#include <linux/list.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/netdevice.h>
#include <net/dst_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include <sroce/wire.h>

#include "compat.h"

/*
 * Rings, WQE copies and page arrays: charged to the memory cgroup of the
 * creating process, and when the cgroup is full the create fails with
 * ENOMEM instead of invoking its OOM killer. Their sizes come from the
 * caller, so a failure is the caller's (ENOMEM), not a kernel problem worth
 * an allocation-failure splat in the log (6.12 prints one for vmalloc).
 */
#define SROCE_GFP_RING \
	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

/* The one and only port of every sroce device. */
#define SROCE_PORT			1

/* Reported as "fw_ver"; bumped with user-visible driver behaviour changes. */
#define SROCE_FW_MAJOR			0
#define SROCE_FW_MINOR			1
#define SROCE_FW_SUB			0
#define SROCE_FW_VER			((u64)SROCE_FW_MAJOR << 32 | \
					 (u64)SROCE_FW_MINOR << 16 | \
					 SROCE_FW_SUB)

/*
 * No IEEE OUI of our own: vendor id 0xffffff (not an OUI, as rdma_rxe
 * reports; 0 reads as "unknown device" to some tools), part id 0.
 */
#define SROCE_VENDOR_ID			0xffffff
#define SROCE_VENDOR_PART_ID		0
#define SROCE_HW_VER			0

#define SROCE_NODE_DESC			"sroce"

/*
 * Device limits reported by query_device.
 *
 * The same limits apply to user space and to kernel consumers.
 *
 *  max_pd        0x7fff   PD numbers come from an IDA in [1, max_pd]
 *  max_qp        0x10000  64 Ki QPs, QPN space is 24 bits
 *  max_qp_wr     0x4000   16 Ki WQEs per send or receive queue
 *  max_sge       32       per WQE, send and receive; also max_sge_rd
 *  max_cq        0x10000
 *  max_cqe       0x10000  CQEs per CQ
 *  max_mr        0x40000  256 Ki memory regions (lkey/rkey index space)
 *  max_mr_size   ~0       no limit beyond what can be pinned
 *  max_srq       0x10000
 *  max_srq_wr    0x4000
 *  max_srq_sge   32
 *  max_ah        0x10000
 *  max_qp_rd_atom 128     outstanding RDMA READ / atomic per QP, both ways
 *  max_res_rd_atom        max_qp * max_qp_rd_atom
 *  max_fast_reg_page_list_len 512 pages per fast-registration MR
 *  max_pkeys     1        the default P_Key only
 *  max_mw        0x10000  memory windows, type 1 and 2B (user space only)
 *  max_mcast_grp 8192     UD multicast groups (mcast.c)
 *  max_mcast_qp_attach 64 QPs per group
 */
#define SROCE_MAX_PD			0x7fff
#define SROCE_MAX_QP			0x10000
#define SROCE_MAX_QP_WR			0x4000
#define SROCE_MAX_SGE			32
#define SROCE_MAX_CQ			0x10000
#define SROCE_MAX_CQE			0x10000
#define SROCE_MAX_MR			0x40000
#define SROCE_MAX_MW			0x10000
#define SROCE_MAX_MCAST_GRP		8192
#define SROCE_MAX_MCAST_QP_ATTACH	64
#define SROCE_MCG_BUCKETS		64
/* The destination QPN of every multicast packet (IBTA 10.5). */
#define SROCE_MCAST_QPN			0xffffff
#define SROCE_MAX_MR_SIZE		U64_MAX
#define SROCE_MAX_SRQ			0x10000
#define SROCE_MAX_SRQ_WR		0x4000
#define SROCE_MAX_SRQ_SGE		32
#define SROCE_MAX_AH			0x10000
#define SROCE_MAX_QP_RD_ATOM		128
#define SROCE_MAX_RES_RD_ATOM		(SROCE_MAX_QP * SROCE_MAX_QP_RD_ATOM)
#define SROCE_MAX_FRPL_LEN		512
#define SROCE_LOCAL_CA_ACK_DELAY	15

/* Port limits reported by query_port and get_port_immutable. */
#define SROCE_GID_TBL_LEN		128
#define SROCE_PKEY_TBL_LEN		1
#define SROCE_DEFAULT_PKEY		0xffff
#define SROCE_MAX_MSG_SZ		0x80000000U	/* 2 GiB, the IBTA limit */
/*
 * Packets of one message at most: a quarter of the PSN space. PSNs compare
 * within half of it, and a READ request moves the requester past all of its
 * response PSNs at once. It limits a message to 1 GiB at RoCE MTU 256; from
 * 512 on SROCE_MAX_MSG_SZ is the smaller limit.
 */
#define SROCE_MAX_MSG_PKTS		0x00400000U

/*
 * Bytes of a full-sized RoCE v2 packet that are not payload, for the largest
 * header set that can come with a full MTU of payload: IPv6 (40) + UDP (8) +
 * BTH (12) + XRCETH (4) + RETH (16) + ImmDt (4) + ICRC (4). Payloads of a
 * full path MTU are multiples of 4, so they carry no pad. The Ethernet
 * header is not part of the netdev MTU.
 */
#define SROCE_MAX_HDR_OVERHEAD		88

/*
 * Per-port receive counters (rdma statistic / hw_counters), in this order:
 * the fixed ones, then one drop counter per validator error (err 1 .. NR-1).
 */
enum sroce_cnt {
	SROCE_CNT_RX_PACKETS,	/* every packet the port 4791 socket got */
	SROCE_CNT_RX_BYTES,	/* their IP datagram bytes */
	SROCE_CNT_RX_CNP,	/* valid CNPs */
	SROCE_CNT_RX_NO_QP,	/* valid packets for a QP that does not exist */
	SROCE_CNT_RX_NOMEM,	/* dropped: no memory to pull the headers in */
	SROCE_CNT_RX_NONLINEAR,	/* of rx_packets: datagram in page fragments */
	SROCE_CNT_RX_DIRECT,	/* of rx_packets: taken at GRO (rx_direct) */
	SROCE_CNT_TX_PACKETS,	/* packets handed to the IP layer or looped */
	SROCE_CNT_TX_BYTES,	/* their IP datagram bytes */
	SROCE_CNT_TX_ERR,	/* not sent: no route, no memory */
	SROCE_CNT_RETRY,	/* requester: retransmissions after timeout */
	SROCE_CNT_SEQ_NAK_RCVD,	/* requester: NAK sequence errors received */
	SROCE_CNT_RNR_NAK_RCVD,	/* requester: RNR NAKs received */
	SROCE_CNT_SEQ_NAK_SENT,	/* responder: NAK sequence errors sent */
	SROCE_CNT_RNR_NAK_SENT,	/* responder: RNR NAKs sent */
	SROCE_CNT_DUP_REQ,	/* responder: duplicate requests */
	SROCE_CNT_OUT_OF_SEQ,	/* responder: packets off the expected PSN */
	SROCE_CNT_ACK_COALESCED, /* responder: ACKs a later one covered */
	SROCE_CNT_ACKREQ_SKIPPED, /* requester: message ends a WQE followed */
	SROCE_CNT_FETCH_BY_TIMER, /* requester: fetch_timer found posted WQEs */
	SROCE_CNT_RX_STALE,	/* valid but unexpected (stale, wrong state) */
	SROCE_CNT_DROP_PEER,	/* RC/UC: IP addresses are not the QP's path */
	SROCE_CNT_DROP_PKEY,	/* BTH P_Key does not match the QP's */
	SROCE_CNT_DROP_PSN,	/* response for no outstanding request */
	SROCE_CNT_DROP_UD_LEN,	/* UD message larger than the receive WQE */
	SROCE_CNT_DROP_MTU,	/* payload larger than the path MTU */
	SROCE_CNT_DROP_UC,	/* UC message dropped: access, length, order */
	SROCE_CNT_DROP_DUP_READ, /* duplicate READ not within the original */
	SROCE_CNT_DROP_QKEY,	/* UD: DETH Q_Key is not the QP's */
	SROCE_CNT_DROP_NO_RECV,	/* UD/UC: no receive WQE posted */
	SROCE_CNT_NP_ECN_MARKED, /* valid packets that arrived with CE */
	SROCE_CNT_NP_CNP_SENT,	/* CNPs sent (notification point) */
	SROCE_CNT_RP_CNP_HANDLED, /* CNPs a QP's rate limiter took */
	SROCE_CNT_RP_CNP_IGNORED, /* CNPs for no QP, or one that cannot take them */
	SROCE_CNT_RP_RATE_CUTS,	/* rate reductions (reaction point) */
	SROCE_CNT_ODP_WAIT,	/* accesses that found an ODP page unmapped */
	SROCE_CNT_ODP_FAULT,	/* ODP pages mapped by faults and prefetches */
	SROCE_CNT_ODP_INVAL,	/* ODP pages unmapped by invalidations */
	SROCE_CNT_DROP_BASE,	/* rx_drop_<validator error name> */
	SROCE_CNT_NR = SROCE_CNT_DROP_BASE + SROCE_WIRE_E_NR - 1
};

/*
 * Of each object count and number space, user processes (@user) may take
 * 15/16 of @max: the last sixteenth stays for kernel consumers (rdma_cm's AHs
 * and QPs, NVMe-oF, SMC-R ...), so that a process holding all it can get
 * does not stop them.
 */
static inline u32 sroce_max_for(u32 max, bool user)
{
	return user ? max - max / 16 : max;
}

static inline unsigned int sroce_cnt_drop(enum sroce_wire_err err)
{
	return SROCE_CNT_DROP_BASE + err - 1;
}

struct sroce_rx_stats {
	struct u64_stats_sync	syncp;
	u64_stats_t		cnt[SROCE_CNT_NR];
};

/*
 * Congestion control parameters of a device (cc.c), settable at run time in
 * /sys/class/infiniband/<dev>/ports/1/cc/. Read with READ_ONCE() where used.
 */
enum sroce_cc_param {
	SROCE_CC_ECN_ENABLE,			/* data packets leave ECT(0) */
	SROCE_CC_NP_ENABLE,			/* CE makes CNPs */
	SROCE_CC_NP_MIN_TIME_BETWEEN_CNPS,	/* us, per QP */
	SROCE_CC_NP_CNP_DSCP,
	SROCE_CC_NP_CNP_PRIO,			/* skb->priority of CNPs */
	SROCE_CC_RP_ENABLE,			/* CNPs cut the QP's rate */
	SROCE_CC_RP_INITIAL_ALPHA_VALUE,	/* 1/1024 */
	SROCE_CC_RP_DCE_TCP_G,			/* 1/1024 */
	SROCE_CC_RP_DCE_TCP_RTT,		/* us: alpha update period */
	SROCE_CC_RP_RATE_REDUCE_MONITOR_PERIOD,	/* us */
	SROCE_CC_RP_GD,				/* cut = rate * alpha >> gd */
	SROCE_CC_RP_MIN_DEC_FAC,		/* % of the rate a cut keeps */
	SROCE_CC_RP_MIN_RATE,			/* Mb/s */
	SROCE_CC_RP_MAX_RATE,			/* Mb/s, 0: link speed */
	SROCE_CC_RP_RATE_TO_SET_ON_FIRST_CNP,	/* Mb/s, 0: max rate */
	SROCE_CC_RP_TIME_RESET,			/* us: rate increase timer */
	SROCE_CC_RP_BYTE_RESET,			/* bytes: rate increase counter */
	SROCE_CC_RP_THRESHOLD,			/* F: events per stage */
	SROCE_CC_RP_AI_RATE,			/* Mb/s */
	SROCE_CC_RP_HAI_RATE,			/* Mb/s */
	SROCE_CC_NR
};

struct sroce_dev {
	struct ib_device	ibdev;		/* first: ib_alloc_device() */

	/*
	 * Our own reference on the parent netdev. Set before registration,
	 * dropped by dealloc_driver, so it is valid in every verb.
	 */
	struct net_device	*ndev;
	netdevice_tracker	ndev_tracker;

	/* Device list linkage and state; see main.c for the rules. */
	struct list_head	list;		/* sroce_devs_lock */
	bool			dead;		/* sroce_devs_lock */
	bool			released;	/* dealloc_driver done; same */
	bool			registered;	/* RTNL and sroce_devs_lock */
	bool			ndev_gone;	/* RTNL */
	enum ib_port_state	port_state;	/* RTNL, last state reported */

	/*
	 * Receive lookup by netdev: hashed while live (sroce_devs_lock for
	 * changes, RCU for readers). rx_ndev is the key, never dereferenced
	 * by the receive path and never changed.
	 */
	struct hlist_node	hnode;
	const struct net_device	*rx_ndev;
	/*
	 * The network namespace the device sends and receives in: its
	 * netdev's when it was created. Holds a sroce_net_get() on it once
	 * set; no reference on the namespace (see main.c).
	 */
	struct net		*net;
	struct sroce_rx_stats __percpu *stats;

	struct ida		pd_ida;

	/* Memory regions by key index (key >> SROCE_MR_KEY_SHIFT); see mr.c. */
	struct xarray		mr_xa;
	u32			mr_next;	/* cyclic index allocation */
	/* Memory windows by key index, which follows the MRs' (see mw.c). */
	struct xarray		mw_xa;
	u32			mw_next;
	/* UD multicast groups (RCU readers, see mcast.c). */
	struct mutex		mcg_lock;
	struct hlist_head	mcg_hash[SROCE_MCG_BUCKETS];
	u32			num_mcg;	/* mcg_lock */

	atomic_t		num_cq;		/* enforces max_cq */

	/* Queue pairs by QPN (RCU readers, see qp.c), SRQs and AHs. */
	struct xarray		qp_xa;
	u32			qp_next;	/* cyclic QPN allocation */
	atomic_t		num_qp;
	atomic_t		num_srq;
	/* truesize of the skbs in the QPs' responder backlogs (resp.c) */
	atomic_long_t		backlog_bytes;
	/* XRC SRQs by SRQ number (RCU readers, see srq.c). */
	struct xarray		srq_xa;
	u32			srq_next;
	u64			srq_gen;	/* last XRC SRQ's gen, srq_xa's lock */
	struct xarray		ah_xa;		/* user AHs by ah_num */
	u32			ah_next;

	/* Congestion control (cc.c): parameters, netdev speed in Mb/s. */
	u32			cc[SROCE_CC_NR];
	u32			speed_mbps;	/* RTNL writes, 0: unknown */

	/* Packets from this device to itself (net.c). */
	struct sk_buff_head	lo_queue;
	struct tasklet_struct	lo_tasklet;
};

struct sroce_ucontext {
	struct ib_ucontext	ibuc;
};

struct sroce_xrcd {
	struct ib_xrcd		ibxrcd;
};

struct sroce_pd {
	struct ib_pd		ibpd;
	u32			pdn;
	atomic_t		odp_mrs;	/* its ODP regions (odp.c) */
};

enum sroce_mr_type {
	SROCE_MR_USER,		/* reg_user_mr: pinned user pages */
	SROCE_MR_DMA,		/* get_dma_mr: kernel virtual addresses */
	SROCE_MR_FAST,		/* alloc_mr(MEM_REG): fast registration */
	SROCE_MR_ODP,		/* reg_user_mr(ON_DEMAND): pages mapped on use */
};

#define SROCE_ODP_QUEUE		8	/* fault requests a region queues */

/*
 * Pages [first, last] of the user address space; access: an access waits
 * for page first (marked failed if it cannot be mapped), not a prefetch.
 * Pages (last, ahead] are read ahead for an access, as a prefetch.
 */
struct sroce_odp_range {
	unsigned long		first;
	unsigned long		last;
	unsigned long		ahead;
	bool			access;
};

/*
 * On-demand paging state of an ODP region (odp.c): the table of mapped
 * pages, the fault queue and the notifier. pages, queue, nqueued and dead
 * change under the region's lock.
 */
struct sroce_odp {
	struct mmu_interval_notifier notifier;
	struct sroce_mr		*mr;
	struct sroce_dev	*sdev;
	struct xarray		pages;		/* page index -> page, or failed */
	struct work_struct	work;		/* faults the queued ranges */
	struct mem_cgroup	*memcg;		/* the registering process's */
	struct sroce_odp_range	queue[SROCE_ODP_QUEUE];
	unsigned int		nqueued;
	bool			dead;		/* deregistering: no more faults */
	bool			writable;	/* faulted for writing */
	u64			ustart;		/* user address of iova */
	unsigned long		last;		/* last page index covered */
};

/*
 * Memory region. An access by the transport (sroce_mr_access()) holds a
 * reference (ref) while it runs; dereg removes the key from mr_xa, drops the
 * initial reference and waits on done for the last one. The structure
 * itself is freed after an RCU grace period, since lookups find it under
 * rcu_read_lock().
 *
 * A fast-registration MR changes key, range, access and pages when a REG_MR
 * work request executes, and becomes invalid with LOCAL_INV or a remote
 * invalidation; those fields, pages and valid are then under lock, which
 * accesses hold while they copy. map_mr_sg fills the staging list fr_pages
 * and sets fr_fresh; REG_MR swaps a fresh list in as pages, and keeps pages
 * otherwise.
 *
 * A user MR counts the memory windows bound to it (num_mw); dereg and rereg
 * refuse with EBUSY while there are any, and set dying, after which no
 * window binds to it. Both under lock.
 */
struct sroce_mr {
	struct ib_mr		ibmr;
	struct sroce_pd		*pd;		/* ibmr.pd is set only after reg */
	enum sroce_mr_type	type;
	struct ib_umem		*umem;		/* user MRs */
	struct sroce_odp	*odp;		/* ODP MRs */
	struct page		**pages;	/* pinned or mapped pages, in order */
	unsigned long		npages;
	unsigned int		first_off;	/* offset of iova in pages[0] */
	u64			iova;
	u64			length;
	int			access;		/* IB_ACCESS_* */
	u32			key;		/* lkey == rkey */
	bool			valid;		/* fast MRs: registered */
	bool			dying;		/* user MRs: no new windows */
	u32			num_mw;		/* user MRs: windows bound */
	spinlock_t		lock;		/* fast MRs: the fields above */
	struct page		**fr_pages;	/* fast MRs: map_mr_sg's list */
	unsigned long		fr_npages;
	unsigned long		fr_max;		/* capacity of both lists */
	bool			fr_fresh;	/* fr_pages mapped since REG_MR */
	refcount_t		ref;
	struct completion	done;
	struct rcu_head		rcu;
};

/*
 * The state of a memory window, which the transport finds by key in
 * sdev->mw_xa. It lives apart from struct sroce_mw, which ib_core frees as
 * soon as dealloc_mw returns: lookups run under RCU and take a reference
 * (ref); dealloc erases the key, drops the initial reference, waits on done
 * for the last one, and frees the window after a grace period.
 *
 * Bind, invalidation and every access through the window hold lock; while
 * valid and length != 0, mr is a user MR that counts this binding in its
 * num_mw and so stays registered.
 */
struct sroce_window {
	struct sroce_pd		*pd;
	enum ib_mw_type		type;
	spinlock_t		lock;		/* the binding below */
	u32			key;		/* current rkey */
	bool			valid;		/* bound */
	struct sroce_mr		*mr;		/* bound to, NULL if length 0 */
	u64			va;		/* first byte, in mr's iova space */
	u64			length;
	int			access;		/* IB_ACCESS_REMOTE_* */
	u32			qpn;		/* type 2B: the QP it is bound to */
	refcount_t		ref;
	struct completion	done;
	struct rcu_head		rcu;
};

struct sroce_mw {
	struct ib_mw		ibmw;
	struct sroce_window	*win;
};

/*
 * The QPN argument of the key accesses for a local access (an lkey in an
 * SGE): memory window keys are rkeys only. QPNs have 24 bits.
 */
#define SROCE_KEY_LOCAL			U32_MAX

/* Direction of sroce_mr_copy(). */
enum sroce_copy_dir {
	SROCE_COPY_TO_MR,
	SROCE_COPY_FROM_MR,
};

/**
 * typedef sroce_mr_page_fn - callback of sroce_mr_walk_pages()
 * @priv: the caller's cookie
 * @page: a page of the region (not mapped; use kmap_local_page())
 * @offset: byte offset of the chunk in @page
 * @len: length of the chunk, never crossing the end of @page
 *
 * Return: 0 to continue, anything else stops the walk and is returned.
 */
typedef int (*sroce_mr_page_fn)(void *priv, struct page *page,
				unsigned int offset, unsigned int len);

struct sroce_cq {
	struct ib_cq		ibcq;
	spinlock_t		lock;		/* producer side and teardown */
	bool			dead;		/* destroy_cq started, lock */
	bool			overflowed;	/* CQ_ERR raised once, lock */
	u32			entries;	/* power of two */
	u32			prod;		/* kernel's own producer count */
	u32			cons;		/* kernel CQs: consumer count */
	u32			*arm;		/* shared word or kernel_arm */
	u32			kernel_arm;
	/* user CQs: the mapped ring */
	struct sroce_cq_ring_hdr *hdr;
	struct ib_uverbs_wc	*uwc;
	struct sroce_mmap_entry	*mentry;
	/* kernel CQs: a private ring */
	struct ib_wc		*kwc;
};

/*
 * Where a QP (RC, UC) or an AH (UD) sends to, resolved from an rdma_ah_attr:
 * IPv4 addresses are kept as IPv4-mapped IPv6 addresses.
 */
struct sroce_av {
	struct in6_addr		saddr;
	struct in6_addr		daddr;
	u8			ipver;		/* 4 or 6 */
	u8			tclass;		/* IPv4 TOS / IPv6 traffic class */
	u8			hop_limit;
	u8			sl;
	u32			flow_label;
	int			ifindex;	/* the source GID's netdev: ours or a VLAN on it */
	u8			max_mtu;	/* enum ib_mtu that netdev's MTU carried */
	bool			loopback;	/* daddr is our own address */
	bool			vlan;		/* that netdev lies on a VLAN: */
	u16			vlan_id;	/* its id (sroce_vlan_of_rcu()) */
};

/*
 * What a UD work request finds by ah_num: a copy of the AH's address vector
 * that lives until an RCU grace period after the AH is destroyed, whatever
 * the context of the destroy.
 */
struct sroce_ah_entry {
	struct sroce_pd		*pd;
	struct sroce_av		av;
	struct rcu_head		rcu;
};

struct sroce_ah {
	struct ib_ah		ibah;
	struct sroce_pd		*pd;
	struct sroce_av		av;
	u32			ah_num;
	struct sroce_ah_entry	*entry;
};

/*
 * A work queue ring (SQ, RQ, SRQ), layout in sroce-abi.h. hdr/slots point
 * into the mapped area (user queues). prod is the last producer count read
 * and validated, cons the kernel's consumer count (published to hdr).
 */
struct sroce_wq {
	struct sroce_wq_hdr	*hdr;
	u8			*slots;
	u32			entries;	/* power of two */
	u32			wqe_size;	/* slot bytes, power of two */
	u32			max_sge;
	u32			max_inline;
	u32			prod;
	u32			cons;
	struct sroce_mmap_entry	*mentry;	/* user queues */
	void			*kbuf;		/* kernel queues: the ring */
	spinlock_t		post_lock;	/* kernel queues: producers */
};

/*
 * A shared receive queue. An XRC SRQ also has a number (srqn) that XRC
 * requests name in their XRCETH, its XRC domain and the CQ its receives
 * complete on; the receive path finds it by number in sdev->srq_xa under
 * RCU and holds a reference (ref) while it executes one packet. destroy
 * unpublishes the number and waits on done for the last reference.
 */
struct sroce_srq {
	struct ib_srq		ibsrq;
	struct sroce_pd		*pd;
	spinlock_t		lock;		/* consumer side, limit */
	struct sroce_wq		wq;
	u32			limit;		/* 0: not armed */
	bool			dead;
	bool			broken;		/* SRQ_ERR raised */
	/* XRC SRQs */
	u32			srqn;
	u64			gen;		/* never reused, unlike srqn */
	struct ib_xrcd		*xrcd;
	struct sroce_cq		*cq;
	refcount_t		ref;
	struct completion	done;
};

/*
 * Send WQE opcodes only kernel post_send writes (the ring format is the one
 * of sroce-abi.h): REG_MR, with struct sroce_reg_wqe in wr.raw. LOCAL_INV
 * uses IB_UVERBS_WR_LOCAL_INV with the key in imm_data. Both are refused on
 * user QPs.
 */
#define SROCE_WR_REG_MR		IB_WR_REG_MR

struct sroce_reg_wqe {
	u32			key;		/* new key; index names the MR */
	u32			access;
};

/* Kernel copy of a send WQE and the requester's progress on it. */
struct sroce_swqe {
	struct sroce_send_wqe	wr;		/* validated copy */
	struct sroce_av		av;		/* UD: from the AH */
	u32			len;		/* message bytes */
	u32			first_psn;
	u32			last_psn;	/* READ: of the last response */
	u32			npkts;		/* PSNs used */
	u32			read_done;	/* READ: response bytes placed */
	u32			gap_psn;	/* READ: re-requested from here */
	bool			gap_asked;	/* gap_psn is valid */
	bool			resp_done;	/* READ, atomic: every response in */
	u8			status;		/* ib_wc_status if invalid, else 0 */
	bool			started;	/* PSNs assigned */
	bool			sent;		/* all packets sent (UC/UD: complete) */
	bool			is_rd;		/* READ or atomic */
	u8			data[];		/* SGEs or inline data */
};

/*
 * Responder resource: a READ or atomic executed, kept for duplicates. A
 * duplicate READ is answered from the original request's range, never from
 * the duplicate's RETH.
 */
struct sroce_rd_res {
	u8			kind;		/* SROCE_KIND_READ_REQ / ATOMIC, 0 free */
	u32			first_psn;
	u32			last_psn;
	u64			orig;		/* atomic: value returned */
	u64			va;		/* READ: the original RETH */
	u32			rkey;
	u32			len;
};

/*
 * A READ being answered, possibly over several runs. It holds no reference
 * on the region: every response looks rkey up again.
 */
struct sroce_read_job {
	bool			active;
	u32			srqn;		/* XRC target: the request's SRQ */
	u64			srq_gen;	/* and that SRQ's gen */
	bool			stalled;	/* transmit queue was full */
	bool			tx_wait;	/* at the in-flight limit */
	bool			paced;		/* the rate limiter's timer kicks us */
	u32			rkey;
	u64			va;
	u32			left;		/* bytes still to send */
	u32			psn;		/* of the next response */
	u32			first_psn;	/* of the request's first response */
	u32			last_psn;
};

/*
 * Requester state (req.c): which WQE and PSN go out next. Guarded by
 * sq_lock; the completer (comp.c, also under sq_lock) moves next/psn back
 * to resend.
 */
struct sroce_req_info {
	u32			fetched;	/* WQEs copied from the SQ ring */
	u32			next;		/* WQE the requester works on */
	u32			psn;		/* next PSN to send */
	u32			psn_hi;		/* next PSN never sent yet */
	u32			rd_out;		/* READs/atomics started, not done */
	bool			paused;		/* RNR NAK or full tx queue: wait for rnr_timer */
	bool			tx_holding;	/* transmit refused since tx_hold_since */
	bool			fetch_deferred;	/* idle, sq_idle 0: responses due */
	bool			no_defer;	/* fetch_timer, doorbell: go idle for real */
	bool			ack_owed;	/* no AckReq since a skipped one */
	bool			cq_lost;	/* send CQ overrun: err_work to ERR */
	unsigned long		tx_hold_since;	/* jiffies */
	struct work_struct	work;		/* runs beyond a context's budget */
	/*
	 * The same run, for a softirq that yields its CPU: on sroce_yield_wq
	 * (nice 0) where work is on sroce_wq (nice -20). A work item must stay on one
	 * workqueue: queued on another while it runs, it runs twice at once,
	 * and cancel_work_sync() waits for one of the two only.
	 */
	struct work_struct	yield_work;
	struct timer_list	fetch_timer;	/* bounds a deferred fetch */
};

/*
 * Congestion control state of a QP (cc.c). The reaction point (DCQCN rate
 * limiter) paces both senders of the QP, the requester (under sq_lock) and
 * the READ responses (under rq_lock): its state is guarded by its own lock,
 * taken inside either. The notification point runs in receive with
 * atomics. Rates in kbit/s, times in ns of ktime_get_ns().
 */
struct sroce_cc_qp {
	spinlock_t		lock;		/* the limiter: below, to min_rc */
	unsigned long		waiting;	/* SROCE_CC_WAIT_* the timer kicks */
	bool			limited;	/* paced at rc */
	u32			rc;		/* current rate */
	u32			rt;		/* target rate */
	u32			min_rc;		/* lowest rc since the QP was reset */
	u32			alpha;		/* 1/1024 */
	u32			t_cnt;		/* timer events since the last cut */
	u32			bc_cnt;		/* byte counter events, likewise */
	u32			bytes;		/* sent since the last byte event */
	u64			alpha_ts;	/* alpha decayed up to here */
	u64			cut_ts;		/* last cut */
	u64			inc_ts;		/* timer events counted up to here */
	u64			next_tx;	/* pacing: the next packet's time */
	struct hrtimer		timer;		/* resumes who is paced */
	atomic64_t		tx_bytes;	/* requests and READ responses */
	u64			cnp_handled;
	u64			cuts;
	/* notification point */
	atomic64_t		np_last;	/* when the last CNP left */
	atomic64_t		ce_rcvd;	/* packets that arrived with CE */
	atomic64_t		cnp_sent;
};

/*
 * Completer state (comp.c): acknowledgements and the retry budgets. Guarded
 * by sq_lock.
 */
struct sroce_comp_info {
	u32			psn;		/* oldest PSN not acknowledged */
	u8			retry_left;
	u8			retry_shift;	/* ACK timer backoff */
	u8			rnr_left;
	struct timer_list	retry_timer;	/* ACK timeout */
	struct timer_list	rnr_timer;	/* end of req.paused */
};

/* The target of the RDMA WRITE being received. */
struct sroce_write_target {
	u32			rkey;		/* looked up again for every packet */
	u64			va;		/* where the next payload goes */
	u32			left;		/* bytes still to come */
	u32			len;		/* RETH length: byte_len of WRITE_IMM */
};

/*
 * Responder state (resp.c): the receive side of RC, UC and UD. Guarded by
 * rq_lock.
 */
struct sroce_resp_info {
	u32			epsn;		/* next PSN expected */
	u32			msn;
	bool			nak_sent;	/* seq NAK or RNR NAK for epsn */
	bool			uc_drop;	/* UC: skip to the next message */
	bool			failed;		/* fatal responder error seen */
	bool			err_pending;	/* err_work is to move the QP to ERR */
	bool			err_event;	/* raise err_event_type entering ERR */
	u8			err_event_type;	/* QP_REQ_ERR, QP_ACCESS_ERR, QP_FATAL */
	bool			comm_est;	/* COMM_EST raised (RTR) */
	/* message being received (SEND / WRITE spanning packets) */
	bool			in_msg;		/* inside a multi-packet message */
	u8			msg_kind;	/* its SROCE_KIND_* */
	bool			rwqe_valid;	/* rwqe holds a receive WQE */
	u32			recv_off;	/* bytes placed into it */
	struct sroce_recv_wqe	*rwqe;		/* copy of the receive WQE + SGEs */
	u32			rwqe_size;
	/*
	 * XRC target: the SRQ the packet being executed names (a reference,
	 * NULL between packets), and the SRQ number of the message in
	 * progress or of the receive WQE held: every packet of a message
	 * must name the same SRQ.
	 */
	struct sroce_srq	*xsrq;
	u32			xsrqn;
	u64			xsrq_gen;	/* the gen of SRQ xsrqn */
	struct sroce_write_target write;
	/* READ and atomic */
	struct sroce_rd_res	*res;		/* max_dest_rd_atomic entries */
	u32			nres;
	u32			res_next;
	/*
	 * The run of READs and atomics executed last, [rd_run_start, epsn)
	 * while epsn is still rd_run_end: an ACK of a duplicate must not
	 * name their PSNs (sroce_resp_dup()).
	 */
	bool			rd_run;
	u32			rd_run_start;
	u32			rd_run_end;
	struct sroce_read_job	read;		/* READ being answered */
	struct sk_buff_head	backlog;	/* requests behind that READ */
	struct delayed_work	work;		/* continues READ, backlog */
	/*
	 * ACK coalescing (resp.c): an ACK owed for ack_psn, to go out when
	 * the receive batch ends; ack_node is on a CPU's list (with a QP
	 * reference) while ack_queued.
	 */
	bool			ack_pending;
	bool			ack_queued;
	u32			ack_psn;
	u32			ack_msn;
	struct list_head	ack_node;
};

/*
 * What qp_xa and the transmit socket point to: it outlives the QP by a
 * grace period (kfree_rcu), so a lookup that loaded it can still try for a
 * reference, and fails once the QP's destroy has dropped the last one. The
 * QP itself is freed by ib_core as soon as destroy_qp returns.
 */
struct sroce_qp_slot {
	refcount_t		ref;
	struct sroce_qp		*qp;
	struct rcu_head		rcu;
};

struct sroce_qp {
	struct ib_qp		ibqp;
	struct sroce_dev	*sdev;
	struct sroce_pd		*pd;
	struct sroce_cq		*scq;
	struct sroce_cq		*rcq;
	struct sroce_srq	*srq;
	bool			is_user;
	bool			is_gsi;		/* QP1 */
	/* RC, UC or UD: the transport rules (GSI is UD, XRC INI/TGT are RC) */
	enum ib_qp_type		type;
	u8			xrc;		/* SROCE_XRC_* */
	struct ib_xrcd		*xrcd;		/* XRC target: its domain */
	bool			sq_sig_all;
	struct mutex		mod_lock;	/* modify_qp / query_qp */
	u32			num_mcast;	/* groups attached, mcg_lock */

	/*
	 * Transmit accounting (net.c): the QP's packets are charged to a
	 * kernel socket of its own, which outlives the QP until its last
	 * packet is freed. Senders hold back while the packets in flight
	 * take SROCE_TX_HIGH times tx_unit (the largest truesize sent) and
	 * each sets its own bit in tx_stalled (SROCE_TX_WAIT_*: the requester
	 * and the READ responder share the socket, and one must not clear
	 * the other's wait); the socket's write_space callback kicks the
	 * waiting ones below SROCE_TX_LOW times tx_unit. destroy_qp waits
	 * for none of the packets.
	 */
	struct socket		*tx_sock;
	void			(*tx_write_space)(struct sock *sk);
	unsigned int		tx_unit;
	unsigned long		tx_stalled;
	/*
	 * The route to av (RC, UC; UD routes per packet): per CPU, checked
	 * against routing changes on every use, reset when av changes.
	 */
	struct dst_cache	tx_dst;
	/*
	 * Every packet of the QP takes one transmit queue (net.c,
	 * sroce_tx_pick_queue): its flow hash and the CPU XPS is told it
	 * comes from. Set once the QPN is known.
	 */
	u32			tx_hash;
	unsigned int		tx_cpu;

	/*
	 * Lookups by QPN (receive path) and the transmit socket's callback
	 * find the QP through its slot and take a reference there (qp.c);
	 * done completes when it hits zero.
	 */
	struct sroce_qp_slot	*slot;
	struct completion	done;

	/*
	 * state changes under both locks (sq_lock first); readers hold either.
	 * dead: destroy started, no timer or work may be armed any more.
	 */
	enum ib_qp_state	state;
	bool			dead;
	bool			sqd_notify;	/* SQ_DRAINED event wanted */
	struct work_struct	err_work;	/* moves the QP to ERR (qp.c) */

	/* attributes (modify_qp, under both locks) */
	u32			qkey;
	u32			dest_qpn;
	u32			mtu;		/* path MTU in bytes */
	enum ib_mtu		path_mtu;
	int			access;		/* qp_access_flags */
	u8			timeout;
	u8			retry_cnt;
	u8			rnr_retry;
	u8			min_rnr_timer;
	u8			max_rd_atomic;
	u8			max_dest_rd_atomic;
	u16			pkey_index;
	u32			sq_psn;
	u32			rq_psn;
	struct rdma_ah_attr	ah_attr;	/* for query_qp */
	struct sroce_av		av;
	u16			sport;		/* UDP source port */

	/* ---- send side: requester and completer, under sq_lock ---- */
	spinlock_t		sq_lock;
	struct sroce_wq		sq;
	u8			*swqes;		/* kernel copies, swqe_size each */
	u32			swqe_size;
	struct sroce_req_info	req;
	struct sroce_comp_info	comp;
	struct sroce_cc_qp	cc;

	/* ---- receive side: responder, under rq_lock ---- */
	spinlock_t		rq_lock;
	struct sroce_wq		rq;
	struct sroce_resp_info	resp;
};

/*
 * XRC QPs follow RC's rules (qp->type is IB_QPT_RC) with XRC opcodes. An
 * initiator (INI) is a send queue only: its requests carry the target SRQ
 * number of each WQE. A target (TGT) has no queues of its own: a request
 * names an XRC SRQ of its domain, which gives the receive WQE, the PD for
 * key checks and the CQ of the completion.
 */
enum {
	SROCE_XRC_NONE = 0,
	SROCE_XRC_INI,
	SROCE_XRC_TGT,
};

/* A vmalloc_user() area offered to user space through mmap. */
struct sroce_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void			*vaddr;
	size_t			size;
};

/*
 * Debug messages (dynamic debug) at the decisions that explain a stuck or
 * failed QP: why it went to ERR, NAKs sent and received, retries exhausted.
 */
#define sroce_qp_dbg(qp, fmt, ...)					\
	do {								\
		const struct sroce_qp *__qp = (qp);			\
									\
		ibdev_dbg(&__qp->sdev->ibdev, "qp %u: " fmt,		\
			  __qp->ibqp.qp_num, ##__VA_ARGS__);		\
	} while (0)

static inline struct sroce_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, ibqp);
}

static inline struct sroce_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct sroce_srq, ibsrq);
}

static inline struct sroce_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct sroce_ah, ibah);
}

static inline struct sroce_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct sroce_dev, ibdev);
}

static inline struct sroce_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct sroce_pd, ibpd);
}

static inline struct sroce_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct sroce_mr, ibmr);
}

static inline struct sroce_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct sroce_cq, ibcq);
}

/* The wire transport of a QP (GSI is UD). */
static inline enum sroce_transport sroce_qp_transport(const struct sroce_qp *qp)
{
	if (qp->xrc)
		return SROCE_TRANSPORT_XRC;
	switch (qp->type) {
	case IB_QPT_RC:
		return SROCE_TRANSPORT_RC;
	case IB_QPT_UC:
		return SROCE_TRANSPORT_UC;
	default:
		return SROCE_TRANSPORT_UD;
	}
}

/* main.c */
void sroce_dealloc_driver(struct ib_device *ibdev);

struct sroce_dev *sroce_dev_by_ndev_rcu(const struct net_device *ndev);
struct sroce_dev *sroce_any_dev_below_rcu(struct net_device *ndev);
#define SROCE_NO_VLAN	0xffff
u16 sroce_vlan_of_rcu(struct net_device *ndev);
void sroce_forget_devs(const struct net *net);

/*
 * main.c: the workqueues of every QP's work items. sroce_wq (high priority,
 * as system_highpri_wq) runs req.work, resp.work and err_work; sroce_yield_wq
 * (normal priority, as system_wq) runs req.yield_work. Both are
 * WQ_MEM_RECLAIM: storage consumers (NVMe-oF, iSER, SRP, NFS) write back
 * memory through these QPs, so their progress must not wait for a new worker
 * under memory pressure (each queue keeps a rescuer thread for that).
 */
extern struct workqueue_struct *sroce_wq;
extern struct workqueue_struct *sroce_yield_wq;

/* icrc.c: sroce_crc32_le() (include/sroce/icrc.h) picks its CRC-32 here */
void sroce_icrc_init(void);
void sroce_icrc_fini(void);

/* net.c */
void sroce_net_init_counters(void);
int sroce_net_register(void);
void sroce_net_unregister(void);
int sroce_net_get(struct net *net, const char *name);
void sroce_net_put(struct net *net);
int sroce_net_alloc_stats(struct sroce_dev *sdev);
void sroce_net_free_stats(struct sroce_dev *sdev);
struct rdma_hw_stats *sroce_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num);
int sroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index);

/* verbs.c */
void sroce_setup_ibdev(struct sroce_dev *sdev);
enum ib_port_state sroce_port_state(const struct net_device *ndev);
enum ib_mtu sroce_port_mtu(struct sroce_dev *sdev);
enum ib_mtu sroce_active_mtu(unsigned int ndev_mtu);

/* pd.c */
int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* mr.c: verbs */
void sroce_mr_init_dev(struct sroce_dev *sdev);
void sroce_mr_fini_dev(struct sroce_dev *sdev);
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int sroce_mr_fast_reg(struct sroce_dev *sdev, struct sroce_pd *pd, u32 key,
		      int access);
int sroce_mr_invalidate(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
			u32 key);

/* mr.c: for the transport and mw.c */
int sroce_mr_access(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
		    u32 key, int access, u64 va, u64 len, sroce_mr_page_fn fn,
		    void *priv);
int sroce_mr_copy(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
		  u32 key, int access, u64 va, void *buf, u32 len,
		  enum sroce_copy_dir dir);
struct sroce_mr *sroce_mr_lookup(struct sroce_dev *sdev, u32 key);
void sroce_mr_put(struct sroce_mr *mr);
bool sroce_mr_covers(const struct sroce_mr *mr, u64 va, u64 len);
int sroce_mr_walk_pages(struct sroce_mr *mr, u64 va, u64 len,
			sroce_mr_page_fn fn, void *priv);
void sroce_mr_unbind_mw(struct sroce_mr *mr);
int sroce_sge_prefault(struct sroce_dev *sdev, struct sroce_pd *pd,
		       const struct sroce_sge *sge, u32 nsge, int access);

/* odp.c */
int sroce_odp_init(struct sroce_mr *mr, u64 start, bool implicit);
void sroce_odp_stop(struct sroce_mr *mr);
void sroce_odp_fini(struct sroce_mr *mr);
int sroce_odp_walk(struct sroce_mr *mr, u64 va, u64 len, sroce_mr_page_fn fn,
		   void *priv);
int sroce_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);
int sroce_sge_copy(struct sroce_dev *sdev, struct sroce_pd *pd,
		   const struct sroce_sge *sge, u32 nsge, u32 off, u8 *buf,
		   u32 len, enum sroce_copy_dir dir);
int sroce_mr_copy_skb(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
		      u32 key, int access, u64 va, const struct sk_buff *skb,
		      int off, u32 len);
int sroce_sge_copy_skb(struct sroce_dev *sdev, struct sroce_pd *pd,
		       const struct sroce_sge *sge, u32 nsge, u32 off,
		       const struct sk_buff *skb, int skb_off, u32 len);

/* mw.c */
#define SROCE_MR_KEY_SHIFT		13
#define SROCE_MW_INDEX_BASE		(SROCE_MAX_MR + 1)
static inline bool sroce_key_is_mw(u32 key)
{
	return key >> SROCE_MR_KEY_SHIFT >= SROCE_MW_INDEX_BASE;
}

void sroce_mw_init_dev(struct sroce_dev *sdev);
void sroce_mw_fini_dev(struct sroce_dev *sdev);
int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int sroce_dealloc_mw(struct ib_mw *ibmw);
int sroce_mw_access(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
		    u32 key, int access, u64 va, u64 len, sroce_mr_page_fn fn,
		    void *priv);
int sroce_mw_invalidate(struct sroce_dev *sdev, struct sroce_pd *pd, u32 qpn,
			u32 key);
u8 sroce_mw_bind(struct sroce_qp *qp, const struct sroce_send_wqe *wr);

/* mcast.c */
void sroce_mcast_init_dev(struct sroce_dev *sdev);
void sroce_mcast_fini_dev(struct sroce_dev *sdev);
int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void sroce_mcast_qp_gone(struct sroce_qp *qp);
void sroce_mcast_rcv(struct sroce_dev *sdev, struct sk_buff *skb,
		     const struct sroce_pkt *pkt);

/* cc.c */
extern const struct attribute_group *sroce_port_groups[];
void sroce_cc_init(void);
void sroce_cc_init_dev(struct sroce_dev *sdev);
void sroce_cc_link_update(struct sroce_dev *sdev, struct net_device *ndev);
void sroce_cc_init_qp(struct sroce_qp *qp);
void sroce_cc_reset_locked(struct sroce_qp *qp);
void sroce_cc_stop_qp(struct sroce_qp *qp);
u8 sroce_cc_tos(struct sroce_dev *sdev, const struct sroce_av *av);
enum { SROCE_CC_WAIT_REQ, SROCE_CC_WAIT_RESP };

bool __sroce_cc_may_send(struct sroce_qp *qp, int who);
void __sroce_cc_sent(struct sroce_qp *qp, u32 bytes);
void sroce_cc_rcv_cnp(struct sroce_dev *sdev, const struct sk_buff *skb,
		      const struct sroce_pkt *pkt);
void sroce_cc_rcv_ce(struct sroce_qp *qp, const struct sk_buff *skb,
		     const struct sroce_pkt *pkt);
int sroce_cc_fill_res(struct sk_buff *msg, struct sroce_qp *qp);

/*
 * May @who (SROCE_CC_WAIT_REQ under sq_lock, SROCE_CC_WAIT_RESP under
 * rq_lock) send now? False: the limiter's timer resumes it.
 */
static inline bool sroce_cc_may_send(struct sroce_qp *qp, int who)
{
	return likely(!READ_ONCE(qp->cc.limited)) ||
	       __sroce_cc_may_send(qp, who);
}

/* A packet of @bytes on the wire left for @qp (under sq_lock or rq_lock). */
static inline void sroce_cc_sent(struct sroce_qp *qp, u32 bytes)
{
	atomic64_add(bytes, &qp->cc.tx_bytes);
	if (unlikely(READ_ONCE(qp->cc.limited)))
		__sroce_cc_sent(qp, bytes);
}

/* cq.c: verbs */
int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata);
int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int sroce_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);

/* cq.c: for the transport */
int sroce_cq_post(struct sroce_cq *cq, const struct ib_wc *wc, bool solicited);

/* ah.c */
void sroce_ah_init_dev(struct sroce_dev *sdev);
void sroce_ah_fini_dev(struct sroce_dev *sdev);
int sroce_av_from_attr(struct sroce_dev *sdev, struct sroce_av *av,
		       const struct rdma_ah_attr *attr);
int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata);
int sroce_destroy_ah(struct ib_ah *ibah, u32 flags);
u32 sroce_ah_num(struct ib_ah *ibah);
bool sroce_ah_lookup(struct sroce_dev *sdev, struct sroce_pd *pd, u32 ah_num,
		     struct sroce_av *av);

/* srq.c */
void sroce_srq_init_dev(struct sroce_dev *sdev);
void sroce_srq_fini_dev(struct sroce_dev *sdev);
int sroce_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int sroce_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
struct sroce_srq *sroce_xrc_srq_get(struct sroce_dev *sdev, u32 srqn,
				    const struct ib_xrcd *xrcd);
struct sroce_srq *sroce_xrc_srq_get_gen(struct sroce_dev *sdev, u32 srqn,
					const struct ib_xrcd *xrcd, u64 gen);
void sroce_srq_put(struct sroce_srq *srq);
int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
void sroce_srq_event(struct sroce_srq *srq, enum ib_event_type type);
int sroce_srq_take(struct sroce_srq *srq, void *buf, u32 bufsize);
u32 sroce_srq_wqe_size(u32 max_sge);

/* qp.c */
void sroce_qp_init_dev(struct sroce_dev *sdev);
void sroce_qp_fini_dev(struct sroce_dev *sdev);
int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int sroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn);
void sroce_qp_put(struct sroce_qp *qp);
void sroce_qp_event(struct sroce_qp *qp, enum ib_event_type type);
bool sroce_sq_drained(struct sroce_qp *qp);
void sroce_sqd_check_locked(struct sroce_qp *qp);
void sroce_qp_error(struct sroce_qp *qp);
void sroce_qp_error_locked(struct sroce_qp *qp);
void sroce_rq_flush_locked(struct sroce_qp *qp);
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);

/* req.c: requester */
#define SROCE_REQ_BUDGET	64	/* packets per run before deferring */

int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
void sroce_req_run(struct sroce_qp *qp, unsigned int budget);
void sroce_req_kick(struct sroce_qp *qp);
void sroce_req_pause_tick(struct sroce_qp *qp);
void sroce_req_work(struct work_struct *work);
void sroce_req_yield_work(struct work_struct *work);
void sroce_sq_flush_locked(struct sroce_qp *qp);
void sroce_req_reset_locked(struct sroce_qp *qp);

/* req.c: for the completer, sq_lock held */
static inline struct sroce_swqe *sroce_swqe_at(struct sroce_qp *qp, u32 idx)
{
	return (struct sroce_swqe *)(qp->swqes +
				     (size_t)(idx & (qp->sq.entries - 1)) *
				     qp->swqe_size);
}

static inline bool sroce_op_is_atomic(u32 op)
{
	return op == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
	       op == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD;
}

/* The PSN of the first READ response of @wqe that has not arrived. */
static inline u32 sroce_read_resume_psn(struct sroce_qp *qp,
					const struct sroce_swqe *wqe)
{
	return sroce_psn_add(wqe->first_psn, wqe->read_done / qp->mtu);
}

/*
 * READ and atomics: operations whose data comes back in responses (the
 * kernel's IB_WR_* values of these equal the IB_UVERBS_WR_* ones).
 */
static inline bool sroce_op_is_rd(u32 op)
{
	return op == IB_UVERBS_WR_RDMA_READ ||
	       op == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
	       op == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD;
}

void sroce_req_run_locked(struct sroce_qp *qp, unsigned int budget);
void sroce_req_run_acked_locked(struct sroce_qp *qp);
int sroce_req_send_pkt(struct sroce_qp *qp, struct sroce_swqe *wqe, u32 psn,
		       bool ackreq);
void sroce_complete_head(struct sroce_qp *qp, struct sroce_swqe *wqe,
			 enum ib_wc_status status);
void sroce_req_fail(struct sroce_qp *qp, struct sroce_swqe *wqe,
		    enum ib_wc_status status);
void sroce_wqe_fail(struct sroce_qp *qp, struct sroce_swqe *wqe,
		    enum ib_wc_status status);
int sroce_wqe_copy(struct sroce_qp *qp, struct sroce_swqe *wqe, u32 off,
		   u8 *buf, u32 len, enum sroce_copy_dir dir);
u32 sroce_req_base_psn(struct sroce_qp *qp);

/* comp.c: completer and timers, sq_lock held unless noted */
void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    const struct sroce_pkt *pkt);	/* takes sq_lock */
void sroce_retry_arm(struct sroce_qp *qp);
struct sroce_swqe *sroce_wqe_by_psn(struct sroce_qp *qp, u32 psn);
void sroce_retry_timer(struct timer_list *t);
void sroce_rnr_timer(struct timer_list *t);
void sroce_req_fetch_timer(struct timer_list *t);

/* resp.c: responder */
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    const struct sroce_pkt *pkt);
void sroce_resp_work(struct work_struct *work);
void sroce_resp_reset_locked(struct sroce_qp *qp);
void sroce_resp_stop_locked(struct sroce_qp *qp);
void sroce_resp_ack_flush_locked(struct sroce_qp *qp);
void sroce_resp_ack_flush(struct sroce_qp *qp);
void sroce_resp_ack_init(void);
void sroce_resp_ack_fini(void);

/* net.c: transmit */
#define SROCE_TX_HIGH		128
#define SROCE_TX_LOW		32

struct sroce_txpkt {
	struct sk_buff		*skb;
	struct sroce_qp		*qp;		/* accounted to this QP */
	struct dst_cache	*dst;		/* route cache for av, or NULL */
	u8			*bth;		/* start of the BTH in skb */
	u8			*payload;	/* where payload goes */
	u8			tos;		/* IP TOS / traffic class, ECN bits included */
	u32			prio;		/* skb->priority */
};

int sroce_tx_alloc(struct sroce_dev *sdev, const struct sroce_av *av,
		   unsigned int hdr_len, unsigned int payload_len,
		   struct sroce_txpkt *tp);
int sroce_tx_send(struct sroce_dev *sdev, const struct sroce_av *av, u16 sport,
		  struct sroce_txpkt *tp);
void sroce_net_init_dev(struct sroce_dev *sdev);
void sroce_net_fini_dev(struct sroce_dev *sdev);
void sroce_cnt_inc(struct sroce_dev *sdev, unsigned int idx);
void sroce_cnt_add_n(struct sroce_dev *sdev, unsigned int idx, u64 v);
u64 sroce_cnt_read(struct sroce_dev *sdev, unsigned int idx);
/*
 * Offset from skb->data of byte @off of a received IP datagram (struct
 * sroce_pkt's offsets count from the network header), for skb_copy_bits()
 * and friends: payload, pad and ICRC may lie in page fragments.
 */
static inline int sroce_skb_off(const struct sk_buff *skb, u32 off)
{
	return skb_network_offset(skb) + (int)off;
}

bool sroce_rx_from_peer(const struct sroce_av *av, const u8 *ip,
			const struct sroce_pkt *pkt);
bool sroce_rx_pkey_ok(const u8 *bth);
/* Who waits for room in a QP's transmit share (bits of qp->tx_stalled). */
enum sroce_tx_waiter {
	SROCE_TX_WAIT_REQ,	/* the requester: req.work resumes it */
	SROCE_TX_WAIT_RESP,	/* the READ responder: resp.work resumes it */
};

bool sroce_tx_full(struct sroce_qp *qp, enum sroce_tx_waiter who);
int sroce_tx_sock_create(struct sroce_qp *qp);
void sroce_tx_sock_detach(struct sroce_qp *qp);
void sroce_tx_sock_release(struct sroce_qp *qp);

/* queue.c: rings shared with user space */
struct sroce_mmap_entry *sroce_mmap_alloc(struct ib_ucontext *ibuc,
					  size_t size);
void sroce_mmap_remove(struct sroce_mmap_entry *entry);
u64 sroce_mmap_offset(const struct sroce_mmap_entry *entry);
int sroce_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void sroce_mmap_free(struct rdma_user_mmap_entry *rentry);
int sroce_wq_alloc(struct ib_ucontext *ibuc, struct sroce_wq *wq, u32 entries,
		   u32 wqe_size);
void sroce_wq_free(struct sroce_wq *wq);
u32 sroce_wq_ring_prod(struct sroce_wq *wq, u32 from, bool *broken);
void sroce_wq_publish_cons(struct sroce_wq *wq);
void *sroce_wq_slot(struct sroce_wq *wq, u32 idx);
int sroce_wq_post_recv(struct sroce_wq *wq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
int sroce_wq_post_send(struct sroce_wq *sq, bool ud,
		       const struct ib_send_wr *wr,
		       const struct ib_send_wr **bad_wr);

#endif /* SROCE_H */
