/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The part of libibverbs' private provider interface (symbol version
 * IBVERBS_PRIVATE_34, rdma-core 44) that sroce uses.
 *
 * Debian ships no <infiniband/driver.h> or <infiniband/kern-abi.h>, so this
 * header declares, from the documented ABI, exactly the structures and
 * functions the provider touches. Nothing in libibverbs checks these layouts at
 * run time: a mismatch silently corrupts memory. Every size and offset the
 * provider relies on is therefore pinned below with static_assert. The numbers
 * were read from rdma-core tag v44.0 (libibverbs/driver.h, kern-abi.h) and
 * cross-checked against the machine code of Debian's libibverbs1 44.0-2.
 *
 * Only x86-64 (LP64) is supported; the asserts encode LP64 offsets.
 *
 * When a new op or structure is needed, add it here together with its
 * assertions, never in the .cpp files.
 */
#ifndef SROCE_IBVERBS_PRIVATE_H
#define SROCE_IBVERBS_PRIVATE_H

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

static_assert(sizeof(void *) == 8 && sizeof(long) == 8,
	      "ibverbs_private.h encodes the LP64 layout of libibverbs 44");

/*
 * Everything libibverbs sees (structures holding function pointers, and the
 * functions themselves) has C language linkage.
 */
extern "C" {

/* ------------------------------------------------------------------------ */
/* Public structures we embed: pin what we assume about them.                */
/* (Debian's verbs.h is byte-identical to rdma-core v44.0 libibverbs/verbs.h) */

static_assert(sizeof(struct ibv_device) == 664, "ibv_device size (verbs.h v44)");
static_assert(sizeof(struct ibv_context) == 328, "ibv_context size (verbs.h v44)");
static_assert(sizeof(struct verbs_context) == 648,
	      "verbs_context size (verbs.h v44)");
static_assert(offsetof(struct verbs_context, context) == 320,
	      "verbs_context.context offset (verbs.h v44)");
static_assert(IBV_SYSFS_NAME_MAX == 64 && IBV_SYSFS_PATH_MAX == 256,
	      "sysfs name/path buffer sizes (verbs.h v44)");

/* ------------------------------------------------------------------------ */
/* Log levels understood by __verbs_log (driver.h v44 lines 52-58).          */

enum : uint32_t {
	SROCE_VERBS_LOG_NONE = 0,
	SROCE_VERBS_LOG_ERR = 1,
	SROCE_VERBS_LOG_WARN = 2,
	SROCE_VERBS_LOG_INFO = 3,
	SROCE_VERBS_LOG_DEBUG = 4,
};

/* ------------------------------------------------------------------------ */
/* Device matching (driver.h v44 lines 192-266).                              */

/* verbs_match_ent.kind values */
enum : uint8_t {
	SROCE_VERBS_MATCH_SENTINEL = 0,
	SROCE_VERBS_MATCH_PCI = 1,
	SROCE_VERBS_MATCH_MODALIAS = 2,
	SROCE_VERBS_MATCH_DRIVER_ID = 3,
};

/* verbs_sysfs_dev.flags bits */
enum : unsigned int {
	SROCE_VSYSFS_READ_MODALIAS = 1u << 0,
	SROCE_VSYSFS_READ_NODE_GUID = 1u << 1,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;	/* fnmatch() pattern */
		uint64_t driver_id;	/* enum rdma_driver_id */
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};
static_assert(sizeof(verbs_match_ent) == 24);
static_assert(offsetof(verbs_match_ent, driver_data) == 0);
static_assert(offsetof(verbs_match_ent, u) == 8);
static_assert(offsetof(verbs_match_ent, vendor) == 16);
static_assert(offsetof(verbs_match_ent, device) == 18);
static_assert(offsetof(verbs_match_ent, kind) == 20);

/* ccan/list.h struct list_node: two pointers. Owned by libibverbs. */
struct sroce_ccan_list_node {
	sroce_ccan_list_node *next;
	sroce_ccan_list_node *prev;
};
static_assert(sizeof(sroce_ccan_list_node) == 16);

/*
 * One uverbs device found by libibverbs (netlink or sysfs scan). ibdev_path is
 * "<sysfs root>/class/infiniband/<ibdev_name>" in both scan modes, so it is
 * the directory holding the device's own attributes.
 */
struct verbs_sysfs_dev {
	sroce_ccan_list_node entry;
	void *provider_data;
	const verbs_match_ent *match;	/* set by the table match, per provider */
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];	/* "uverbsN" */
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];	/* current (maybe renamed) name */
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;		/* from netlink; 0 (UNKNOWN) in sysfs mode */
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;		/* the device's uverbs ABI version */
	struct timespec time_created;
};
static_assert(sizeof(dev_t) == 8 && sizeof(struct timespec) == 16);
static_assert(sizeof(enum ibv_node_type) == 4);
static_assert(offsetof(verbs_sysfs_dev, provider_data) == 16);
static_assert(offsetof(verbs_sysfs_dev, match) == 24);
static_assert(offsetof(verbs_sysfs_dev, flags) == 32);
static_assert(offsetof(verbs_sysfs_dev, sysfs_name) == 36);
static_assert(offsetof(verbs_sysfs_dev, sysfs_cdev) == 104);
static_assert(offsetof(verbs_sysfs_dev, ibdev_name) == 112);
static_assert(offsetof(verbs_sysfs_dev, ibdev_path) == 176);
static_assert(offsetof(verbs_sysfs_dev, modalias) == 432);
static_assert(offsetof(verbs_sysfs_dev, node_guid) == 944);
static_assert(offsetof(verbs_sysfs_dev, driver_id) == 952);
static_assert(offsetof(verbs_sysfs_dev, node_type) == 956);
static_assert(offsetof(verbs_sysfs_dev, ibdev_idx) == 960);
static_assert(offsetof(verbs_sysfs_dev, num_ports) == 964);
static_assert(offsetof(verbs_sysfs_dev, abi_ver) == 968);
static_assert(offsetof(verbs_sysfs_dev, time_created) == 976);
static_assert(sizeof(verbs_sysfs_dev) == 992);

/* ------------------------------------------------------------------------ */
/* Provider and device descriptors (driver.h v44 lines 268-297).             */

struct verbs_device;

struct verbs_device_ops {
	const char *name;
	/* Accepted range of the device's uverbs ABI (verbs_sysfs_dev.abi_ver). */
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const verbs_match_ent *match_table;	/* sentinel-terminated */
	const verbs_device_ops **static_providers;
	/* Called for every device after the table match; final say. */
	bool (*match_device)(verbs_sysfs_dev *sysfs_dev);
	verbs_context *(*alloc_context)(struct ibv_device *device, int cmd_fd,
					void *private_data);
	verbs_context *(*import_context)(struct ibv_device *device, int cmd_fd);
	verbs_device *(*alloc_device)(verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(verbs_device *device);
};
static_assert(offsetof(verbs_device_ops, name) == 0);
static_assert(offsetof(verbs_device_ops, match_min_abi_version) == 8);
static_assert(offsetof(verbs_device_ops, match_max_abi_version) == 12);
static_assert(offsetof(verbs_device_ops, match_table) == 16);
static_assert(offsetof(verbs_device_ops, static_providers) == 24);
static_assert(offsetof(verbs_device_ops, match_device) == 32);
static_assert(offsetof(verbs_device_ops, alloc_context) == 40);
static_assert(offsetof(verbs_device_ops, import_context) == 48);
static_assert(offsetof(verbs_device_ops, alloc_device) == 56);
static_assert(offsetof(verbs_device_ops, uninit_device) == 64);
static_assert(sizeof(verbs_device_ops) == 72);

/*
 * The provider allocates this (embedded at offset 0 of its own device struct,
 * zero-filled); libibverbs fills in everything after alloc_device returns.
 */
struct verbs_device {
	struct ibv_device device;	/* must stay first */
	const verbs_device_ops *ops;
	int refcount;			/* C11 atomic_int, libibverbs-owned */
	sroce_ccan_list_node entry;
	verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};
static_assert(offsetof(verbs_device, device) == 0);
static_assert(offsetof(verbs_device, ops) == 664);
static_assert(offsetof(verbs_device, refcount) == 672);
static_assert(offsetof(verbs_device, entry) == 680);
static_assert(offsetof(verbs_device, sysfs) == 696);
static_assert(offsetof(verbs_device, core_support) == 704);
static_assert(sizeof(verbs_device) == 712);

/* driver.h's verbs_get_device(): the ibv_device is the first member. */
inline verbs_device *verbs_get_device(struct ibv_device *dev)
{
	return reinterpret_cast<verbs_device *>(dev);
}

/* ------------------------------------------------------------------------ */
/* Context ops (driver.h v44 lines 311-448): 76 pointers, sorted by name.    */
/*
 * verbs_set_ops() copies every non-NULL member; members left NULL keep the
 * library's defaults (dummy_ops.c), which fail with EOPNOTSUPP. Ops the
 * provider does not implement yet are declared as untyped slots; give a slot
 * its real prototype (from driver.h v44) when implementing it.
 */
using sroce_op_slot = void (*)(void);

/* ------------------------------------------------------------------------ */
/* Memory regions (driver.h v44 lines 141-157).                              */

enum sroce_ibv_mr_type : int {
	SROCE_IBV_MR_TYPE_MR = 0,
	SROCE_IBV_MR_TYPE_NULL_MR = 1,
	SROCE_IBV_MR_TYPE_IMPORTED_MR = 2,
	SROCE_IBV_MR_TYPE_DMABUF_MR = 3,
};

/* The provider allocates it; libibverbs hands &ibv_mr to the application. */
struct verbs_mr {
	struct ibv_mr ibv_mr;		/* must stay first */
	sroce_ibv_mr_type mr_type;	/* enum ibv_mr_type, an int */
	int access;
};
static_assert(sizeof(struct ibv_mr) == 48, "ibv_mr size (verbs.h v44)");
static_assert(offsetof(struct ibv_mr, handle) == 32 &&
	      offsetof(struct ibv_mr, lkey) == 36 &&
	      offsetof(struct ibv_mr, rkey) == 40);
static_assert(offsetof(verbs_mr, ibv_mr) == 0);
static_assert(offsetof(verbs_mr, mr_type) == 48);
static_assert(offsetof(verbs_mr, access) == 52);
static_assert(sizeof(verbs_mr) == 56);

/* Public CQ and WC layouts the provider relies on (verbs.h v44). */
static_assert(sizeof(struct ibv_cq) == 128, "ibv_cq size (verbs.h v44)");
static_assert(offsetof(struct ibv_cq, handle) == 24 &&
	      offsetof(struct ibv_cq, cqe) == 28);
static_assert(sizeof(struct ibv_wc) == 48 &&
	      sizeof(struct ibv_wc) == sizeof(struct ib_uverbs_wc));
static_assert(offsetof(struct ibv_wc, status) == offsetof(ib_uverbs_wc, status));
static_assert(offsetof(struct ibv_wc, opcode) == offsetof(ib_uverbs_wc, opcode));
static_assert(offsetof(struct ibv_wc, vendor_err) ==
	      offsetof(ib_uverbs_wc, vendor_err));
static_assert(offsetof(struct ibv_wc, byte_len) ==
	      offsetof(ib_uverbs_wc, byte_len));
static_assert(offsetof(struct ibv_wc, imm_data) == offsetof(ib_uverbs_wc, ex));
static_assert(offsetof(struct ibv_wc, qp_num) == offsetof(ib_uverbs_wc, qp_num));
static_assert(offsetof(struct ibv_wc, src_qp) == offsetof(ib_uverbs_wc, src_qp));
static_assert(offsetof(struct ibv_wc, wc_flags) ==
	      offsetof(ib_uverbs_wc, wc_flags));
static_assert(offsetof(struct ibv_wc, pkey_index) ==
	      offsetof(ib_uverbs_wc, pkey_index));
static_assert(offsetof(struct ibv_wc, slid) == offsetof(ib_uverbs_wc, slid));
static_assert(offsetof(struct ibv_wc, sl) == offsetof(ib_uverbs_wc, sl));
static_assert(offsetof(struct ibv_wc, dlid_path_bits) ==
	      offsetof(ib_uverbs_wc, dlid_path_bits));
static_assert(sizeof(enum ibv_wc_status) == 4 && sizeof(enum ibv_wc_opcode) == 4);

/* ------------------------------------------------------------------------ */
/* Queue pairs, SRQs, AHs and extended CQs (driver.h v44 lines 108-191).     */

/* Public layouts the provider embeds or reads (verbs.h v44). */
static_assert(sizeof(struct ibv_qp) == 160, "ibv_qp size (verbs.h v44)");
static_assert(offsetof(struct ibv_qp, context) == 0 &&
	      offsetof(struct ibv_qp, handle) == 48 &&
	      offsetof(struct ibv_qp, qp_num) == 52 &&
	      offsetof(struct ibv_qp, state) == 56 &&
	      offsetof(struct ibv_qp, qp_type) == 60);
static_assert(sizeof(struct ibv_qp_ex) == 352, "ibv_qp_ex size (verbs.h v44)");
static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0 &&
	      offsetof(struct ibv_qp_ex, comp_mask) == 160 &&
	      offsetof(struct ibv_qp_ex, wr_id) == 168 &&
	      offsetof(struct ibv_qp_ex, wr_flags) == 176 &&
	      offsetof(struct ibv_qp_ex, wr_atomic_cmp_swp) == 184 &&
	      offsetof(struct ibv_qp_ex, wr_start) == 320 &&
	      offsetof(struct ibv_qp_ex, wr_atomic_write) == 344);
static_assert(sizeof(struct ibv_srq) == 128 &&
	      offsetof(struct ibv_srq, handle) == 24, "ibv_srq (verbs.h v44)");
static_assert(sizeof(struct ibv_ah) == 24 && offsetof(struct ibv_ah, handle) == 16,
	      "ibv_ah (verbs.h v44)");
static_assert(sizeof(struct ibv_cq_ex) == 288, "ibv_cq_ex size (verbs.h v44)");
/* ibv_cq_ex starts with the members of ibv_cq, at the same offsets. */
static_assert(offsetof(struct ibv_cq_ex, context) == offsetof(struct ibv_cq, context) &&
	      offsetof(struct ibv_cq_ex, channel) == offsetof(struct ibv_cq, channel) &&
	      offsetof(struct ibv_cq_ex, cq_context) ==
		      offsetof(struct ibv_cq, cq_context) &&
	      offsetof(struct ibv_cq_ex, handle) == offsetof(struct ibv_cq, handle) &&
	      offsetof(struct ibv_cq_ex, cqe) == offsetof(struct ibv_cq, cqe) &&
	      offsetof(struct ibv_cq_ex, mutex) == offsetof(struct ibv_cq, mutex) &&
	      offsetof(struct ibv_cq_ex, cond) == offsetof(struct ibv_cq, cond) &&
	      offsetof(struct ibv_cq_ex, comp_events_completed) ==
		      offsetof(struct ibv_cq, comp_events_completed) &&
	      offsetof(struct ibv_cq_ex, async_events_completed) ==
		      offsetof(struct ibv_cq, async_events_completed));
static_assert(offsetof(struct ibv_cq_ex, comp_mask) == 128 &&
	      offsetof(struct ibv_cq_ex, status) == 132 &&
	      offsetof(struct ibv_cq_ex, wr_id) == 136 &&
	      offsetof(struct ibv_cq_ex, start_poll) == 144 &&
	      offsetof(struct ibv_cq_ex, read_completion_wallclock_ns) == 280);
static_assert(sizeof(struct ibv_sge) == 16 && sizeof(struct ibv_send_wr) == 128 &&
	      sizeof(struct ibv_recv_wr) == 32);

/* verbs_qp.comp_mask bits */
enum : uint32_t {
	SROCE_VERBS_QP_XRCD = 1u << 0,
	SROCE_VERBS_QP_EX = 1u << 1,	/* ibv_qp_to_qp_ex() answers qp_ex */
};

/* verbs_xrcd.comp_mask bits */
enum : uint32_t {
	SROCE_VERBS_XRCD_HANDLE = 1u << 0,	/* handle is valid */
};

/*
 * An XRC domain. The provider allocates it; ibv_cmd_open_xrcd fills
 * xrcd.context, and comp_mask and handle when the size it is given covers
 * handle (it always does here).
 */
struct verbs_xrcd {
	struct ibv_xrcd xrcd;		/* must stay first */
	uint32_t comp_mask;
	uint32_t handle;
};
static_assert(sizeof(struct ibv_xrcd) == 8, "ibv_xrcd (verbs.h v44)");
static_assert(offsetof(verbs_xrcd, xrcd) == 0);
static_assert(offsetof(verbs_xrcd, comp_mask) == 8);
static_assert(offsetof(verbs_xrcd, handle) == 12);
static_assert(sizeof(verbs_xrcd) == 16);

/*
 * An SRQ as ibv_cmd_create_srq_ex sees it. The provider allocates it
 * (zeroed: srq_type 0 is IBV_SRQT_BASIC); the command fills srq (context,
 * handle, mutex/cond), and for an XRC SRQ srq_type, xrcd and srq_num (the
 * kernel's XRC SRQ number); the ioctl path also srq_type of a basic SRQ,
 * and cq when IBV_SRQ_INIT_ATTR_CQ was given.
 */
struct verbs_srq {
	struct ibv_srq srq;		/* must stay first */
	enum ibv_srq_type srq_type;
	verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};
static_assert(sizeof(enum ibv_srq_type) == 4);
static_assert(offsetof(verbs_srq, srq) == 0);
static_assert(offsetof(verbs_srq, srq_type) == 128);
static_assert(offsetof(verbs_srq, xrcd) == 136);
static_assert(offsetof(verbs_srq, cq) == 144);
static_assert(offsetof(verbs_srq, srq_num) == 152);
static_assert(sizeof(verbs_srq) == 160);

/*
 * The provider allocates it. libibverbs' set_qp() (cmd_qp.c v44) zeroes
 * comp_mask during create; ibv_qp_to_qp_ex() returns &qp_ex only when the
 * provider has set SROCE_VERBS_QP_EX afterwards.
 */
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	verbs_xrcd *xrcd;
};
static_assert(offsetof(verbs_qp, qp) == 0 && offsetof(verbs_qp, qp_ex) == 0);
static_assert(offsetof(verbs_qp, comp_mask) == 352);
static_assert(offsetof(verbs_qp, xrcd) == 360);
static_assert(sizeof(verbs_qp) == 368);

/* What ibv_cmd_create_cq_ex fills (its cq->cq members). */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};
static_assert(sizeof(verbs_cq) == 288 && offsetof(verbs_cq, cq) == 0 &&
	      offsetof(verbs_cq, cq_ex) == 0);

struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	sroce_op_slot alloc_dm;
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	sroce_op_slot alloc_null_mr;
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	sroce_op_slot alloc_td;
	sroce_op_slot async_event;
	sroce_op_slot attach_counters_point_flow;
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	sroce_op_slot cq_event;
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	sroce_op_slot create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	sroce_op_slot create_flow;
	sroce_op_slot create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	sroce_op_slot create_rwq_ind_table;
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	sroce_op_slot create_wq;
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	sroce_op_slot dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	sroce_op_slot destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	sroce_op_slot destroy_flow;
	sroce_op_slot destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	sroce_op_slot destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	sroce_op_slot destroy_wq;
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	sroce_op_slot free_dm;
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	sroce_op_slot import_dm;
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	sroce_op_slot modify_cq;
	sroce_op_slot modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	sroce_op_slot modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			  int attr_mask);
	sroce_op_slot modify_wq;
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	sroce_op_slot post_srq_ops;
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size);
	sroce_op_slot query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	sroce_op_slot query_qp_data_in_order;
	sroce_op_slot query_rt_values;
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
	sroce_op_slot read_counters;
	sroce_op_slot reg_dm_mr;
	sroce_op_slot reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	sroce_op_slot set_ece;
	sroce_op_slot unimport_dm;
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};
static_assert(sizeof(verbs_context_ops) == 76 * sizeof(void *),
	      "verbs_context_ops has 76 members in v44");

/* Slot index of every member, as in driver.h v44 (alphabetical order). */
#define SROCE_ASSERT_OP_SLOT(member, index)                                    \
	static_assert(offsetof(verbs_context_ops, member) ==                   \
			      (index) * sizeof(void *),                        \
		      "verbs_context_ops." #member " slot")
SROCE_ASSERT_OP_SLOT(advise_mr, 0);
SROCE_ASSERT_OP_SLOT(alloc_dm, 1);
SROCE_ASSERT_OP_SLOT(alloc_mw, 2);
SROCE_ASSERT_OP_SLOT(alloc_null_mr, 3);
SROCE_ASSERT_OP_SLOT(alloc_parent_domain, 4);
SROCE_ASSERT_OP_SLOT(alloc_pd, 5);
SROCE_ASSERT_OP_SLOT(alloc_td, 6);
SROCE_ASSERT_OP_SLOT(async_event, 7);
SROCE_ASSERT_OP_SLOT(attach_counters_point_flow, 8);
SROCE_ASSERT_OP_SLOT(attach_mcast, 9);
SROCE_ASSERT_OP_SLOT(bind_mw, 10);
SROCE_ASSERT_OP_SLOT(close_xrcd, 11);
SROCE_ASSERT_OP_SLOT(cq_event, 12);
SROCE_ASSERT_OP_SLOT(create_ah, 13);
SROCE_ASSERT_OP_SLOT(create_counters, 14);
SROCE_ASSERT_OP_SLOT(create_cq, 15);
SROCE_ASSERT_OP_SLOT(create_cq_ex, 16);
SROCE_ASSERT_OP_SLOT(create_flow, 17);
SROCE_ASSERT_OP_SLOT(create_flow_action_esp, 18);
SROCE_ASSERT_OP_SLOT(create_qp, 19);
SROCE_ASSERT_OP_SLOT(create_qp_ex, 20);
SROCE_ASSERT_OP_SLOT(create_rwq_ind_table, 21);
SROCE_ASSERT_OP_SLOT(create_srq, 22);
SROCE_ASSERT_OP_SLOT(create_srq_ex, 23);
SROCE_ASSERT_OP_SLOT(create_wq, 24);
SROCE_ASSERT_OP_SLOT(dealloc_mw, 25);
SROCE_ASSERT_OP_SLOT(dealloc_pd, 26);
SROCE_ASSERT_OP_SLOT(dealloc_td, 27);
SROCE_ASSERT_OP_SLOT(dereg_mr, 28);
SROCE_ASSERT_OP_SLOT(destroy_ah, 29);
SROCE_ASSERT_OP_SLOT(destroy_counters, 30);
SROCE_ASSERT_OP_SLOT(destroy_cq, 31);
SROCE_ASSERT_OP_SLOT(destroy_flow, 32);
SROCE_ASSERT_OP_SLOT(destroy_flow_action, 33);
SROCE_ASSERT_OP_SLOT(destroy_qp, 34);
SROCE_ASSERT_OP_SLOT(destroy_rwq_ind_table, 35);
SROCE_ASSERT_OP_SLOT(destroy_srq, 36);
SROCE_ASSERT_OP_SLOT(destroy_wq, 37);
SROCE_ASSERT_OP_SLOT(detach_mcast, 38);
SROCE_ASSERT_OP_SLOT(free_context, 39);
SROCE_ASSERT_OP_SLOT(free_dm, 40);
SROCE_ASSERT_OP_SLOT(get_srq_num, 41);
SROCE_ASSERT_OP_SLOT(import_dm, 42);
SROCE_ASSERT_OP_SLOT(import_mr, 43);
SROCE_ASSERT_OP_SLOT(import_pd, 44);
SROCE_ASSERT_OP_SLOT(modify_cq, 45);
SROCE_ASSERT_OP_SLOT(modify_flow_action_esp, 46);
SROCE_ASSERT_OP_SLOT(modify_qp, 47);
SROCE_ASSERT_OP_SLOT(modify_qp_rate_limit, 48);
SROCE_ASSERT_OP_SLOT(modify_srq, 49);
SROCE_ASSERT_OP_SLOT(modify_wq, 50);
SROCE_ASSERT_OP_SLOT(open_qp, 51);
SROCE_ASSERT_OP_SLOT(open_xrcd, 52);
SROCE_ASSERT_OP_SLOT(poll_cq, 53);
SROCE_ASSERT_OP_SLOT(post_recv, 54);
SROCE_ASSERT_OP_SLOT(post_send, 55);
SROCE_ASSERT_OP_SLOT(post_srq_ops, 56);
SROCE_ASSERT_OP_SLOT(post_srq_recv, 57);
SROCE_ASSERT_OP_SLOT(query_device_ex, 58);
SROCE_ASSERT_OP_SLOT(query_ece, 59);
SROCE_ASSERT_OP_SLOT(query_port, 60);
SROCE_ASSERT_OP_SLOT(query_qp, 61);
SROCE_ASSERT_OP_SLOT(query_qp_data_in_order, 62);
SROCE_ASSERT_OP_SLOT(query_rt_values, 63);
SROCE_ASSERT_OP_SLOT(query_srq, 64);
SROCE_ASSERT_OP_SLOT(read_counters, 65);
SROCE_ASSERT_OP_SLOT(reg_dm_mr, 66);
SROCE_ASSERT_OP_SLOT(reg_dmabuf_mr, 67);
SROCE_ASSERT_OP_SLOT(reg_mr, 68);
SROCE_ASSERT_OP_SLOT(req_notify_cq, 69);
SROCE_ASSERT_OP_SLOT(rereg_mr, 70);
SROCE_ASSERT_OP_SLOT(resize_cq, 71);
SROCE_ASSERT_OP_SLOT(set_ece, 72);
SROCE_ASSERT_OP_SLOT(unimport_dm, 73);
SROCE_ASSERT_OP_SLOT(unimport_mr, 74);
SROCE_ASSERT_OP_SLOT(unimport_pd, 75);
#undef SROCE_ASSERT_OP_SLOT

/* ------------------------------------------------------------------------ */
/* Legacy write() command layouts (kern-abi.h v44 lines 76-97, 176-203).     */
/*
 * A legacy command buffer is the 8-byte ib_uverbs_cmd_hdr followed by the
 * core request; a response buffer starts with the core response. libibverbs
 * computes the core sizes from its own compiled structs and treats every byte
 * after them as driver data (UHW), so our buffers must start with exactly the
 * core layout and the driver part must follow with no padding. The core
 * structs of <rdma/ib_user_verbs.h> end in flexible arrays and cannot be
 * embedded, hence the fixed-size twins below, each pinned to the uapi header.
 */
namespace sroce::abi {

static_assert(sizeof(ib_uverbs_cmd_hdr) == 8);

/* IB_USER_VERBS_CMD_GET_CONTEXT: libibverbs' struct ibv_get_context */
struct cmd_get_context {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;		/* filled in by libibverbs */
};
static_assert(sizeof(ib_uverbs_get_context) == 8);
static_assert(offsetof(cmd_get_context, response) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_get_context, response));
static_assert(sizeof(cmd_get_context) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_get_context));

struct resp_get_context_core {
	uint32_t async_fd;
	uint32_t num_comp_vectors;
};
static_assert(sizeof(resp_get_context_core) == sizeof(ib_uverbs_get_context_resp));
static_assert(offsetof(resp_get_context_core, async_fd) ==
	      offsetof(ib_uverbs_get_context_resp, async_fd));
static_assert(offsetof(resp_get_context_core, num_comp_vectors) ==
	      offsetof(ib_uverbs_get_context_resp, num_comp_vectors));

/* IB_USER_VERBS_CMD_QUERY_PORT: libibverbs' struct ibv_query_port */
struct cmd_query_port {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint8_t port_num;
	uint8_t reserved[7];
};
static_assert(sizeof(ib_uverbs_query_port) == 16);
static_assert(offsetof(cmd_query_port, port_num) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_query_port, port_num));
static_assert(sizeof(cmd_query_port) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_query_port));

/* IB_USER_VERBS_CMD_ALLOC_PD: libibverbs' struct ibv_alloc_pd */
struct cmd_alloc_pd {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
};
static_assert(sizeof(ib_uverbs_alloc_pd) == 8);
static_assert(sizeof(cmd_alloc_pd) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_alloc_pd));

/* Note: 4 bytes, so driver data follows at offset 4. */
struct resp_alloc_pd_core {
	uint32_t pd_handle;
};
static_assert(sizeof(resp_alloc_pd_core) == sizeof(ib_uverbs_alloc_pd_resp));
static_assert(sizeof(ib_uverbs_alloc_pd_resp) == 4);

/*
 * IB_USER_VERBS_CMD_OPEN_XRCD: libibverbs' struct ibv_open_xrcd. fd is the
 * file naming a shared domain, or -1 (an unshared one, with O_CREAT).
 */
struct cmd_open_xrcd {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint32_t fd;
	uint32_t oflags;
};
static_assert(sizeof(ib_uverbs_open_xrcd) == 16);
static_assert(offsetof(cmd_open_xrcd, fd) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_open_xrcd, fd));
static_assert(offsetof(cmd_open_xrcd, oflags) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_open_xrcd, oflags));
static_assert(sizeof(cmd_open_xrcd) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_open_xrcd));

/* 4 bytes; sroce adds no driver data. */
struct resp_open_xrcd_core {
	uint32_t xrcd_handle;
};
static_assert(sizeof(resp_open_xrcd_core) == sizeof(ib_uverbs_open_xrcd_resp));
static_assert(sizeof(ib_uverbs_open_xrcd_resp) == 4);

/* IB_USER_VERBS_CMD_ALLOC_MW: libibverbs' struct ibv_alloc_mw */
struct cmd_alloc_mw {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint32_t pd_handle;
	uint8_t mw_type;
	uint8_t reserved[3];
};
static_assert(sizeof(ib_uverbs_alloc_mw) == 16);
static_assert(offsetof(cmd_alloc_mw, mw_type) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_alloc_mw, mw_type));
static_assert(sizeof(cmd_alloc_mw) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_alloc_mw));
/* 8 bytes, no driver data: the uapi struct itself is passed. */
static_assert(sizeof(ib_uverbs_alloc_mw_resp) == 8);

/* IB_USER_VERBS_CMD_REG_MR: libibverbs' struct ibv_reg_mr */
struct cmd_reg_mr {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint64_t start;
	uint64_t length;
	uint64_t hca_va;
	uint32_t pd_handle;
	uint32_t access_flags;
};
static_assert(sizeof(ib_uverbs_reg_mr) == 40);
static_assert(offsetof(cmd_reg_mr, pd_handle) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_reg_mr, pd_handle));
static_assert(sizeof(cmd_reg_mr) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_reg_mr));
/* 12 bytes, no driver data: the uapi struct itself is passed. */
static_assert(sizeof(ib_uverbs_reg_mr_resp) == 12);

/* IB_USER_VERBS_CMD_REREG_MR: libibverbs' struct ibv_rereg_mr */
struct cmd_rereg_mr {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint32_t mr_handle;
	uint32_t flags;
	uint64_t start;
	uint64_t length;
	uint64_t hca_va;
	uint32_t pd_handle;
	uint32_t access_flags;
};
static_assert(sizeof(ib_uverbs_rereg_mr) == 48);
static_assert(offsetof(cmd_rereg_mr, access_flags) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_rereg_mr, access_flags));
static_assert(sizeof(cmd_rereg_mr) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_rereg_mr));
/* 8 bytes, no driver data: the uapi struct itself is passed. */
static_assert(sizeof(ib_uverbs_rereg_mr_resp) == 8);

/* IB_USER_VERBS_CMD_CREATE_CQ: libibverbs' struct ibv_create_cq */
struct cmd_create_cq {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint64_t user_handle;
	uint32_t cqe;
	uint32_t comp_vector;
	int32_t comp_channel;
	uint32_t reserved;
};
static_assert(sizeof(ib_uverbs_create_cq) == 32);
static_assert(offsetof(cmd_create_cq, comp_channel) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_create_cq, comp_channel));
static_assert(sizeof(cmd_create_cq) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_create_cq));

struct resp_create_cq_core {
	uint32_t cq_handle;
	uint32_t cqe;
};
static_assert(sizeof(resp_create_cq_core) == sizeof(ib_uverbs_create_cq_resp));
static_assert(sizeof(ib_uverbs_create_cq_resp) == 8);

/* IB_USER_VERBS_CMD_RESIZE_CQ: libibverbs' struct ibv_resize_cq */
struct cmd_resize_cq {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint32_t cq_handle;
	uint32_t cqe;
};
static_assert(sizeof(ib_uverbs_resize_cq) == 16);
static_assert(offsetof(cmd_resize_cq, cqe) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_resize_cq, cqe));
static_assert(sizeof(cmd_resize_cq) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_resize_cq));

struct resp_resize_cq_core {
	uint32_t cqe;
	uint32_t reserved;
};
static_assert(sizeof(resp_resize_cq_core) == sizeof(ib_uverbs_resize_cq_resp));
static_assert(sizeof(ib_uverbs_resize_cq_resp) == 8);

/*
 * Extended commands start with a second header (libibverbs' struct ex_hdr,
 * kern-abi.h v44 lines 50-53).
 */
struct cmd_ex_hdr {
	ib_uverbs_cmd_hdr hdr;
	ib_uverbs_ex_cmd_hdr ex_hdr;
};
static_assert(sizeof(ib_uverbs_ex_cmd_hdr) == 16);
static_assert(sizeof(cmd_ex_hdr) == 24);

/* IB_USER_VERBS_EX_CMD_CREATE_CQ: libibverbs' struct ibv_create_cq_ex */
struct cmd_create_cq_ex {
	cmd_ex_hdr hdr;
	uint64_t user_handle;
	uint32_t cqe;
	uint32_t comp_vector;
	int32_t comp_channel;
	uint32_t comp_mask;
	uint32_t flags;
	uint32_t reserved;
};
static_assert(sizeof(ib_uverbs_ex_create_cq) == 32);
static_assert(offsetof(cmd_create_cq_ex, flags) ==
	      sizeof(cmd_ex_hdr) + offsetof(ib_uverbs_ex_create_cq, flags));
static_assert(sizeof(cmd_create_cq_ex) ==
	      sizeof(cmd_ex_hdr) + sizeof(ib_uverbs_ex_create_cq));

struct resp_create_cq_ex_core {
	resp_create_cq_core base;
	uint32_t comp_mask;
	uint32_t response_length;
};
static_assert(sizeof(resp_create_cq_ex_core) == sizeof(ib_uverbs_ex_create_cq_resp));
static_assert(sizeof(ib_uverbs_ex_create_cq_resp) == 16);
static_assert(offsetof(resp_create_cq_ex_core, comp_mask) ==
	      offsetof(ib_uverbs_ex_create_cq_resp, comp_mask));

/*
 * IB_USER_VERBS_CMD_CREATE_QP: libibverbs' struct ibv_create_qp. libibverbs
 * fills the core part entirely and the provider never reads it, so it is
 * declared as opaque bytes of the uapi struct's size and alignment.
 */
struct cmd_create_qp {
	ib_uverbs_cmd_hdr hdr;
	alignas(8) unsigned char core[56];
};
static_assert(sizeof(ib_uverbs_create_qp) == 56 && alignof(ib_uverbs_create_qp) == 8);
static_assert(sizeof(cmd_create_qp) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_create_qp));

struct resp_create_qp_core {
	uint32_t qp_handle;
	uint32_t qpn;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t reserved;
};
static_assert(sizeof(resp_create_qp_core) == sizeof(ib_uverbs_create_qp_resp));
static_assert(sizeof(ib_uverbs_create_qp_resp) == 32);
static_assert(offsetof(resp_create_qp_core, max_inline_data) ==
	      offsetof(ib_uverbs_create_qp_resp, max_inline_data));

/*
 * IB_USER_VERBS_CMD_OPEN_QP: libibverbs' struct ibv_open_qp. pd_handle
 * carries the XRC domain's handle; the answer is a resp_create_qp_core of
 * which libibverbs reads qp_handle only.
 */
struct cmd_open_qp {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint64_t user_handle;
	uint32_t pd_handle;
	uint32_t qpn;
	uint8_t qp_type;
	uint8_t reserved[7];
};
static_assert(sizeof(ib_uverbs_open_qp) == 32);
static_assert(offsetof(cmd_open_qp, user_handle) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_open_qp, user_handle));
static_assert(offsetof(cmd_open_qp, pd_handle) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_open_qp, pd_handle));
static_assert(offsetof(cmd_open_qp, qpn) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_open_qp, qpn));
static_assert(offsetof(cmd_open_qp, qp_type) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_open_qp, qp_type));
static_assert(sizeof(cmd_open_qp) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_open_qp));

/* IB_USER_VERBS_CMD_QUERY_QP: libibverbs' struct ibv_query_qp */
struct cmd_query_qp {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint32_t qp_handle;
	uint32_t attr_mask;
};
static_assert(sizeof(ib_uverbs_query_qp) == 16);
static_assert(offsetof(cmd_query_qp, attr_mask) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_query_qp, attr_mask));
static_assert(sizeof(cmd_query_qp) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_query_qp));

/* IB_USER_VERBS_CMD_MODIFY_QP: libibverbs' struct ibv_modify_qp (opaque) */
struct cmd_modify_qp {
	ib_uverbs_cmd_hdr hdr;
	alignas(8) unsigned char core[112];
};
static_assert(sizeof(ib_uverbs_modify_qp) == 112 && alignof(ib_uverbs_modify_qp) == 8);
static_assert(sizeof(cmd_modify_qp) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_modify_qp));

struct resp_create_srq_core {
	uint32_t srq_handle;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srqn;
};
static_assert(sizeof(resp_create_srq_core) == sizeof(ib_uverbs_create_srq_resp));
static_assert(sizeof(ib_uverbs_create_srq_resp) == 16);
static_assert(offsetof(resp_create_srq_core, srqn) ==
	      offsetof(ib_uverbs_create_srq_resp, srqn));

/*
 * IB_USER_VERBS_CMD_CREATE_XSRQ: libibverbs' struct ibv_create_xsrq, the
 * command buffer of ibv_cmd_create_srq_ex (libibverbs fills the core; the
 * write() fallback sends CREATE_SRQ instead for a basic SRQ). The answer is
 * resp_create_srq_core, as for CREATE_SRQ.
 */
struct cmd_create_xsrq {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint64_t user_handle;
	uint32_t srq_type;
	uint32_t pd_handle;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
	uint32_t max_num_tags;
	uint32_t xrcd_handle;
	uint32_t cq_handle;
};
static_assert(sizeof(ib_uverbs_create_xsrq) == 48);
static_assert(offsetof(cmd_create_xsrq, srq_type) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_create_xsrq, srq_type));
static_assert(offsetof(cmd_create_xsrq, max_num_tags) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_create_xsrq, max_num_tags));
static_assert(offsetof(cmd_create_xsrq, xrcd_handle) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_create_xsrq, xrcd_handle));
static_assert(offsetof(cmd_create_xsrq, cq_handle) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_create_xsrq, cq_handle));
static_assert(sizeof(cmd_create_xsrq) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_create_xsrq));

/* IB_USER_VERBS_CMD_MODIFY_SRQ: libibverbs' struct ibv_modify_srq */
struct cmd_modify_srq {
	ib_uverbs_cmd_hdr hdr;
	uint32_t srq_handle;
	uint32_t attr_mask;
	uint32_t max_wr;
	uint32_t srq_limit;
};
static_assert(sizeof(ib_uverbs_modify_srq) == 16 && alignof(ib_uverbs_modify_srq) == 8);
static_assert(offsetof(cmd_modify_srq, srq_limit) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_modify_srq, srq_limit));
static_assert(sizeof(cmd_modify_srq) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_modify_srq));

/* IB_USER_VERBS_CMD_QUERY_SRQ: libibverbs' struct ibv_query_srq */
struct cmd_query_srq {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint32_t srq_handle;
	uint32_t reserved;
};
static_assert(sizeof(ib_uverbs_query_srq) == 16);
static_assert(offsetof(cmd_query_srq, srq_handle) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_query_srq, srq_handle));
static_assert(sizeof(cmd_query_srq) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_query_srq));

/* IB_USER_VERBS_CMD_CREATE_AH: libibverbs builds the command itself. */
struct resp_create_ah_core {
	uint32_t ah_handle;
};
static_assert(sizeof(resp_create_ah_core) == sizeof(ib_uverbs_create_ah_resp));
static_assert(sizeof(ib_uverbs_create_ah_resp) == 4);

/*
 * IB_USER_VERBS_CMD_POST_SEND, written to the command fd by the provider
 * itself (not through libibverbs) as the send doorbell: no work requests,
 * just the QP handle. The kernel (uverbs_cmd.c, 6.1) rejects a wqe_size
 * below sizeof(struct ib_uverbs_send_wr) even when wr_count is 0.
 */
struct cmd_post_send {
	ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint32_t qp_handle;
	uint32_t wr_count;
	uint32_t sge_count;
	uint32_t wqe_size;
};
static_assert(sizeof(ib_uverbs_post_send) == 24);
static_assert(offsetof(cmd_post_send, response) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_post_send, response));
static_assert(offsetof(cmd_post_send, qp_handle) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_post_send, qp_handle));
static_assert(offsetof(cmd_post_send, wr_count) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_post_send, wr_count));
static_assert(offsetof(cmd_post_send, sge_count) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_post_send, sge_count));
static_assert(offsetof(cmd_post_send, wqe_size) ==
	      sizeof(ib_uverbs_cmd_hdr) + offsetof(ib_uverbs_post_send, wqe_size));
static_assert(sizeof(cmd_post_send) ==
	      sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_send));
static_assert(sizeof(ib_uverbs_post_send_resp) == 4);
static_assert(sizeof(ib_uverbs_send_wr) == 56);

} // namespace sroce::abi

/* ------------------------------------------------------------------------ */
/* Functions exported by libibverbs.so.1 at IBVERBS_PRIVATE_34.             */
/* (prototypes as in driver.h v44; command structs use the twins above)     */

/* Name carries the private ABI number (driver.h v44 lines 464-468). */
void verbs_register_driver_34(const verbs_device_ops *ops);

void __verbs_log(verbs_context *ctx, uint32_t level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * calloc(alloc_size), put the verbs_context at byte offset
 * (uintptr_t)context_offset, initialise it with every op set to the
 * EOPNOTSUPP defaults. Owns cmd_fd: closes it on failure.
 * driver_id goes into every ioctl header; it must equal the kernel's.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(verbs_context *context);
void verbs_set_ops(verbs_context *vctx, const verbs_context_ops *ops);

/* All ibv_cmd_* return 0 or a positive errno value. */
int ibv_cmd_get_context(verbs_context *context,
			sroce::abi::cmd_get_context *cmd, size_t cmd_size,
			sroce::abi::resp_get_context_core *resp,
			size_t resp_size);
struct ibv_command_buffer;		/* never built by sroce: NULL */
/* UVERBS_METHOD_QUERY_CONTEXT: num_comp_vectors and the core's support bits. */
int ibv_cmd_query_context(struct ibv_context *context,
			  struct ibv_command_buffer *driver);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       sroce::abi::cmd_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     sroce::abi::cmd_alloc_pd *cmd, size_t cmd_size,
		     sroce::abi::resp_alloc_pd_core *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
/*
 * Needs IBV_XRCD_INIT_ATTR_FD and _OFLAGS in attr->comp_mask (EINVAL), no
 * bit from IBV_XRCD_INIT_ATTR_RESERVED up (EOPNOTSUPP). Sets xrcd->xrcd.context
 * and, as vxrcd_size covers it, handle with SROCE_VERBS_XRCD_HANDLE.
 */
int ibv_cmd_open_xrcd(struct ibv_context *context, verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      sroce::abi::cmd_open_xrcd *cmd, size_t cmd_size,
		      sroce::abi::resp_open_xrcd_core *resp, size_t resp_size);
int ibv_cmd_close_xrcd(verbs_xrcd *xrcd);
/* Fills vmr->ibv_mr handle, lkey, rkey, context, and mr_type, access. */
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, verbs_mr *vmr,
		   sroce::abi::cmd_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(verbs_mr *vmr);
/* UVERBS_METHOD_ADVISE_MR: the list goes to the kernel as it is. */
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list,
		      uint32_t num_sge);
/* UVERBS_METHOD_QUERY_MR: lkey, rkey, length; type IBV_MR_TYPE_IMPORTED_MR. */
int ibv_cmd_query_mr(struct ibv_pd *pd, verbs_mr *vmr, uint32_t mr_handle);
/* Fills mw's context, pd, rkey, handle and type. */
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, sroce::abi::cmd_alloc_mw *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
		     size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
/*
 * Sets vmr->ibv_mr's lkey and rkey from the reply (and context with
 * IBV_REREG_MR_CHANGE_PD); ibv_rereg_mr() updates pd, addr and length.
 */
int ibv_cmd_rereg_mr(verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, sroce::abi::cmd_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
/* Sets cq->context, cq->handle and cq->cqe; the rest is ibv_create_cq's. */
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, sroce::abi::cmd_create_cq *cmd,
		      size_t cmd_size, sroce::abi::resp_create_cq_core *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
/* Sets cq->cqe from the reply. */
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe,
		      sroce::abi::cmd_resize_cq *cmd, size_t cmd_size,
		      sroce::abi::resp_resize_cq_core *resp, size_t resp_size);
/*
 * Sets the ibv_cq_ex members shared with ibv_cq (context, handle, cqe);
 * libibverbs' create_cq_ex wrapper does the rest (verbs_init_cq).
 * cmd_flags: 0 (no CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX).
 */
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 verbs_cq *cq, sroce::abi::cmd_create_cq_ex *cmd,
			 size_t cmd_size,
			 sroce::abi::resp_create_cq_ex_core *resp,
			 size_t resp_size, uint32_t cmd_flags);

/*
 * Accepts comp_mask PD, XRCD and SEND_OPS_FLAGS (EINVAL otherwise). Fills
 * the ibv_qp members (context, handle, qp_num, pd, cqs, srq, qp_type,
 * state RESET, mutex/cond), zeroes qp->comp_mask, and writes the kernel's
 * capabilities back into attr->cap.
 */
int ibv_cmd_create_qp_ex(struct ibv_context *context, verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr,
			 sroce::abi::cmd_create_qp *cmd, size_t cmd_size,
			 sroce::abi::resp_create_qp_core *resp, size_t resp_size);
/*
 * Needs comp_mask XRCD, NUM and TYPE (EINVAL; EOPNOTSUPP from
 * IBV_QP_OPEN_ATTR_RESERVED up). Fills the ibv_qp members (context, handle,
 * qp_num, qp_type, qp_context, state IBV_QPS_UNKNOWN, mutex/cond; pd, CQs and
 * srq NULL) and, as vqp_sz covers them, comp_mask SROCE_VERBS_QP_XRCD and
 * xrcd.
 */
int ibv_cmd_open_qp(struct ibv_context *context, verbs_qp *qp, int vqp_sz,
		    struct ibv_qp_open_attr *attr, sroce::abi::cmd_open_qp *cmd,
		    size_t cmd_size, sroce::abi::resp_create_qp_core *resp,
		    size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *init_attr,
		     sroce::abi::cmd_query_qp *cmd, size_t cmd_size);
/* Attribute bits from IBV_QP_RATE_LIMIT up: EOPNOTSUPP. */
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, sroce::abi::cmd_modify_qp *cmd,
		      size_t cmd_size);
/* Waits for the QP's outstanding async events to be acknowledged. */
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);

/*
 * Needs IBV_SRQ_INIT_ATTR_PD (EINVAL; EOPNOTSUPP from
 * IBV_SRQ_INIT_ATTR_RESERVED up); an XRC SRQ also XRCD and CQ, a
 * tag-matching one CQ and TM. Fills srq->srq (context, handle,
 * mutex/cond), and srq_type, xrcd and srq_num (XRC), cq (with IBV_SRQ_INIT_ATTR_CQ); writes
 * max_wr/max_sge back into attr->attr. Its write() fallback picks the
 * command from attr->srq_type without looking at the TYPE bit.
 */
int ibv_cmd_create_srq_ex(struct ibv_context *context, verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr,
			  sroce::abi::cmd_create_xsrq *cmd, size_t cmd_size,
			  sroce::abi::resp_create_srq_core *resp,
			  size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		       int attr_mask, sroce::abi::cmd_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		      sroce::abi::cmd_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

/* Sets ah->handle and ah->context. */
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      sroce::abi::resp_create_ah_core *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);

} // extern "C"

namespace sroce::abi {

/*
 * A core command or response struct followed by the sroce driver payload.
 * Use driver_data_is_adjacent() in a static_assert for every instantiation:
 * the driver part must start exactly where libibverbs' core struct ends.
 */
template <typename CoreT, typename DrvT>
struct with_driver_data {
	CoreT core;
	DrvT drv;
};

template <typename CoreT, typename DrvT>
constexpr bool driver_data_is_adjacent()
{
	using whole = with_driver_data<CoreT, DrvT>;
	return offsetof(whole, drv) == sizeof(CoreT) &&
	       sizeof(whole) == sizeof(CoreT) + sizeof(DrvT);
}

} // namespace sroce::abi

#endif /* SROCE_IBVERBS_PRIVATE_H */
