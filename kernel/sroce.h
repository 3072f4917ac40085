/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce - software RoCE v2 RDMA device: private declarations shared by the
 * files of the module.
 */
#ifndef SROCE_H
#define SROCE_H

#include <linux/idr.h>
#include <linux/list.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "compat.h"

/* The one and only port of every sroce device. */
#define SROCE_PORT			1

/* Reported as "fw_ver"; bumped with user-visible driver behaviour changes. */
#define SROCE_FW_MAJOR			0
#define SROCE_FW_MINOR			1
#define SROCE_FW_SUB			0
#define SROCE_FW_VER			((u64)SROCE_FW_MAJOR << 32 | \
					 (u64)SROCE_FW_MINOR << 16 | \
					 SROCE_FW_SUB)

/* No IEEE OUI of our own: vendor and part id stay 0. */
#define SROCE_VENDOR_ID			0
#define SROCE_VENDOR_PART_ID		0
#define SROCE_HW_VER			0

#define SROCE_NODE_DESC			"sroce"

/*
 * Device limits reported by query_device.
 *
 * Only protection domains exist in this version; the other numbers are the
 * limits the queue, completion, memory and shared receive queue code is
 * designed for, so that the device attributes do not change under
 * applications when those objects appear. Until then uverbs answers
 * EOPNOTSUPP for the verbs that would create them, and ib_core does not
 * offer the device to kernel ULPs (the kverbs mandatory ops are missing).
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
 *  max_fast_reg_page_list_len 512 pages per fast-registration WR
 *  max_pkeys     1        the default P_Key only
 *  max_mw / multicast     0: not planned for the first transport version
 */
#define SROCE_MAX_PD			0x7fff
#define SROCE_MAX_QP			0x10000
#define SROCE_MAX_QP_WR			0x4000
#define SROCE_MAX_SGE			32
#define SROCE_MAX_CQ			0x10000
#define SROCE_MAX_CQE			0x10000
#define SROCE_MAX_MR			0x40000
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
 * Bytes of a full-sized RoCE v2 packet that are not payload, for the largest
 * header set that can come with a full MTU of payload: IPv6 (40) + UDP (8) +
 * BTH (12) + XRCETH (4) + RETH (16) + ImmDt (4) + ICRC (4). Payloads of a
 * full path MTU are multiples of 4, so they carry no pad. The Ethernet
 * header is not part of the netdev MTU.
 */
#define SROCE_MAX_HDR_OVERHEAD		88

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
	bool			ndev_gone;	/* RTNL */
	enum ib_port_state	port_state;	/* RTNL, last state reported */

	struct ida		pd_ida;
};

struct sroce_ucontext {
	struct ib_ucontext	ibuc;
};

struct sroce_pd {
	struct ib_pd		ibpd;
	u32			pdn;
};

static inline struct sroce_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct sroce_dev, ibdev);
}

static inline struct sroce_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct sroce_pd, ibpd);
}

/* main.c */
void sroce_dealloc_driver(struct ib_device *ibdev);

/* verbs.c */
void sroce_setup_ibdev(struct sroce_dev *sdev);
enum ib_port_state sroce_port_state(const struct net_device *ndev);

/* pd.c */
int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

#endif /* SROCE_H */
