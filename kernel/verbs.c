// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - ib_device_ops glue: device and port queries, user contexts, sysfs
 * attributes and the ops table itself.
 */

#include <linux/etherdevice.h>
#include <linux/rtnetlink.h>
#include <linux/sysfs.h>
#include <rdma/ib_mad.h>

#include "sroce.h"

enum ib_port_state sroce_port_state(const struct net_device *ndev)
{
	if (netif_running(ndev) && netif_carrier_ok(ndev) &&
	    netif_oper_up(ndev))
		return IB_PORT_ACTIVE;
	return IB_PORT_DOWN;
}

/* Largest IB MTU whose full-sized packets fit into the netdev MTU. */
enum ib_mtu sroce_active_mtu(unsigned int ndev_mtu)
{
	unsigned int payload;

	if (ndev_mtu <= SROCE_MAX_HDR_OVERHEAD)
		return IB_MTU_256;
	payload = ndev_mtu - SROCE_MAX_HDR_OVERHEAD;

	if (payload >= 4096)
		return IB_MTU_4096;
	if (payload >= 2048)
		return IB_MTU_2048;
	if (payload >= 1024)
		return IB_MTU_1024;
	if (payload >= 512)
		return IB_MTU_512;
	return IB_MTU_256;
}

enum ib_mtu sroce_port_mtu(struct sroce_dev *sdev)
{
	return sroce_active_mtu(READ_ONCE(sdev->ndev->mtu));
}

static int sroce_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));

	attr->fw_ver = SROCE_FW_VER;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = SROCE_MAX_MR_SIZE;
	attr->page_size_cap = GENMASK_ULL(31, PAGE_SHIFT);
	attr->vendor_id = SROCE_VENDOR_ID;
	attr->vendor_part_id = SROCE_VENDOR_PART_ID;
	attr->hw_ver = SROCE_HW_VER;
	attr->max_qp = SROCE_MAX_QP;
	attr->max_qp_wr = SROCE_MAX_QP_WR;
	/*
	 * RNR NAKs, SRQ resize (modify_srq with IB_SRQ_MAX_WR), XRC (srq.c,
	 * resp.c), memory windows of type 1 and 2B (user space; mw.c), and
	 * for kernel consumers fast
	 * registration (alloc_mr, map_mr_sg, REG_MR, LOCAL_INV, remote
	 * invalidation). No IB_DEVICE_LOCAL_DMA_LKEY: kernel PDs get
	 * their local_dma_lkey from get_dma_mr.
	 */
	attr->device_cap_flags = IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SRQ_RESIZE |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_XRC;
	/*
	 * ib_core clears the attributes before asking for them at
	 * registration, so the flag that lets "rdma link del" remove the
	 * device has to be reported here.
	 */
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG | IBK_ON_DEMAND_PAGING;
	/*
	 * On-demand paging (odp.c), implicit regions included. RC takes a page
	 * fault anywhere (the responder answers with an RNR NAK meanwhile), and
	 * so does XRC;
	 * UC and UD only on the sending side, since a fault on their receiving
	 * side loses the message.
	 */
	attr->odp_caps.general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
	attr->odp_caps.per_transport_caps.rc_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
		IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;
	attr->odp_caps.per_transport_caps.xrc_odp_caps =
		attr->odp_caps.per_transport_caps.rc_odp_caps;
	attr->odp_caps.per_transport_caps.uc_odp_caps = IB_ODP_SUPPORT_SEND;
	attr->odp_caps.per_transport_caps.ud_odp_caps = IB_ODP_SUPPORT_SEND;
	attr->max_send_sge = SROCE_MAX_SGE;
	attr->max_recv_sge = SROCE_MAX_SGE;
	attr->max_sge_rd = SROCE_MAX_SGE;
	attr->max_cq = SROCE_MAX_CQ;
	attr->max_cqe = SROCE_MAX_CQE;
	attr->max_mr = SROCE_MAX_MR;
	attr->max_mw = SROCE_MAX_MW;
	attr->max_mcast_grp = SROCE_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = SROCE_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = SROCE_MAX_MCAST_GRP *
					  SROCE_MAX_MCAST_QP_ATTACH;
	attr->max_pd = SROCE_MAX_PD;
	attr->max_qp_rd_atom = SROCE_MAX_QP_RD_ATOM;
	attr->max_qp_init_rd_atom = SROCE_MAX_QP_RD_ATOM;
	attr->max_res_rd_atom = SROCE_MAX_RES_RD_ATOM;
	/* Responders use CPU atomics on the target page: atomic for all. */
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->masked_atomic_cap = IB_ATOMIC_NONE;
	attr->max_ah = SROCE_MAX_AH;
	attr->max_srq = SROCE_MAX_SRQ;
	attr->max_srq_wr = SROCE_MAX_SRQ_WR;
	attr->max_srq_sge = SROCE_MAX_SRQ_SGE;
	attr->max_fast_reg_page_list_len = SROCE_MAX_FRPL_LEN;
	attr->max_pkeys = SROCE_PKEY_TBL_LEN;
	attr->local_ca_ack_delay = SROCE_LOCAL_CA_ACK_DELAY;

	return 0;
}

/*
 * The smallest IB rate (width x lane speed) not below an Ethernet speed, as
 * ib_get_eth_speed() maps a speed without a lane count; a netdev without a
 * speed (dummy, virtio-net without speed=) gets the slowest, 1X SDR.
 */
static const struct {
	u32 max_mbps;
	u8 width;
	u16 speed;
} sroce_port_rates[] = {
	{ 1000, IB_WIDTH_1X, IB_SPEED_SDR },		/* 2.5 Gb/s */
	{ 10000, IB_WIDTH_1X, IB_SPEED_FDR10 },		/* 10 */
	{ 20000, IB_WIDTH_4X, IB_SPEED_DDR },		/* 20 */
	{ 25000, IB_WIDTH_1X, IB_SPEED_EDR },		/* 25 */
	{ 40000, IB_WIDTH_4X, IB_SPEED_FDR10 },		/* 40 */
	{ 100000, IB_WIDTH_4X, IB_SPEED_EDR },		/* 100 */
	{ 200000, IB_WIDTH_4X, IB_SPEED_HDR },		/* 200 */
	{ U32_MAX, IB_WIDTH_4X, IB_SPEED_NDR },		/* 400 */
};

static void sroce_port_rate(u32 mbps, struct ib_port_attr *attr)
{
	unsigned int i = 0;

	while (mbps > sroce_port_rates[i].max_mbps)
		i++;
	attr->active_width = sroce_port_rates[i].width;
	attr->active_speed = sroce_port_rates[i].speed;
}

static int sroce_query_port(struct ib_device *ibdev, u32 port,
			    struct ib_port_attr *attr)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	struct net_device *ndev = sdev->ndev;

	if (port != SROCE_PORT)
		return -EINVAL;

	/* ib_query_port() has zeroed *attr. */
	attr->state = sroce_port_state(ndev);
	attr->phys_state = attr->state == IB_PORT_ACTIVE ?
			   IB_PORT_PHYS_STATE_LINK_UP :
			   IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = sroce_active_mtu(READ_ONCE(ndev->mtu));
	attr->gid_tbl_len = SROCE_GID_TBL_LEN;
	attr->ip_gids = 1;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = SROCE_MAX_MSG_SZ;
	attr->pkey_tbl_len = SROCE_PKEY_TBL_LEN;
	attr->max_vl_num = 1;
	/* PortInfo's P_Key and Q_Key violation counters: 16 bits, saturating. */
	attr->bad_pkey_cntr = min_t(u64, sroce_cnt_read(sdev, SROCE_CNT_DROP_PKEY),
				    U16_MAX);
	attr->qkey_viol_cntr = min_t(u64, sroce_cnt_read(sdev, SROCE_CNT_DROP_QKEY),
				     U16_MAX);

	/*
	 * The netdev's speed as of its last state change (ib_get_eth_speed()
	 * would take RTNL, and on 6.1 log a line, at every query).
	 */
	sroce_port_rate(READ_ONCE(sdev->speed_mbps), attr);

	return 0;
}

static int sroce_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	if (port != SROCE_PORT)
		return -EINVAL;

	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->gid_tbl_len = SROCE_GID_TBL_LEN;
	immutable->pkey_tbl_len = SROCE_PKEY_TBL_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;

	return 0;
}

static int sroce_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			    u16 *pkey)
{
	if (port != SROCE_PORT || index >= SROCE_PKEY_TBL_LEN)
		return -EINVAL;

	*pkey = SROCE_DEFAULT_PKEY;
	return 0;
}

static enum rdma_link_layer sroce_get_link_layer(struct ib_device *ibdev,
						 u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

/*
 * ib_core offers the addresses of every upper device of our netdev as GIDs,
 * whatever namespace the upper device is in (a macvlan moved into a
 * container). The device's routes and UDP socket are those of sdev->net:
 * packets from such a GID could not be routed, nor answers received, and
 * rdma_cm in the container would pick us for its address. Refuse them; the
 * sroce device on that upper netdev, if there is one, has the GID. So it
 * has when it is in our namespace: packets to the GID arrive on its netdev.
 */
static int sroce_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct sroce_dev *sdev = to_sdev(attr->device);
	struct net_device *ndev;
	int err = 0;

	rcu_read_lock();
	ndev = rcu_dereference(attr->ndev);
	if (ndev && !net_eq(dev_net(ndev), sdev->net))
		err = -EXDEV;
	/* An upper netdev with an sroce device of its own: that one's GID. */
	else if (ndev && ndev != sdev->rx_ndev && sroce_dev_by_ndev_rcu(ndev))
		err = -EXDEV;
	rcu_read_unlock();
	return err;
}

static int sroce_del_gid(const struct ib_gid_attr *attr, void **context)
{
	return 0;
}

static void sroce_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u", SROCE_FW_MAJOR,
		 SROCE_FW_MINOR, SROCE_FW_SUB);
}

static int sroce_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	struct sroce_alloc_ucontext_resp resp = {
		.abi_version = SROCE_UVERBS_ABI_VERSION,
	};

	if (!udata || !udata->outlen)
		return 0;

	return ib_copy_to_udata(udata, &resp,
				min_t(size_t, sizeof(resp), udata->outlen));
}

/*
 * QUERY_CONTEXT, which ibv_import_device() issues on an imported command FD:
 * ib_core answers the generic attributes, and sroce has none of its own
 * (the provider takes the ABI version from sysfs).
 */
static int sroce_query_ucontext(struct ib_ucontext *ibuc,
				struct uverbs_attr_bundle *attrs)
{
	return 0;
}

static void sroce_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * Called when the device goes away while a process still has it open. ib_core
 * destroys the context's objects right after; the CQ rings it has mapped keep
 * their pages until the process unmaps them (see queue.c) and no longer
 * change, so nothing needs revoking here. The op must exist: without it
 * uverbs pins the module for every open file and unregistration waits for
 * user space to close it.
 */
static void sroce_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * The netdev of the port, held. ib_core keeps the one ib_device_set_netdev()
 * gave it and asks this op first; the op is for the kernel's users that ask
 * only the op: SMC-R in Linux 6.1 (before its move to ib_device_get_netdev()
 * in late 2024) finds its RDMA device through it and silently stays on TCP
 * without it. sdev->ndev is set before registration and cleared only by
 * dealloc_driver, after every caller has let go of the device.
 */
static struct net_device *sroce_get_netdev(struct ib_device *ibdev, u32 port)
{
	struct net_device *ndev = READ_ONCE(to_sdev(ibdev)->ndev);

	if (port != SROCE_PORT || !ndev)
		return NULL;
	dev_hold(ndev);
	return ndev;
}

static ssize_t sroce_abi_version_show(struct device *device,
				      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", SROCE_UVERBS_ABI_VERSION);
}

/*
 * The netdev name can change under us; RTNL serialises against renames.
 * Nobody removes this attribute while holding RTNL, so waiting for it here
 * cannot deadlock against device removal.
 */
static ssize_t parent_show(struct device *device,
			   struct device_attribute *attr, char *buf)
{
	struct sroce_dev *sdev =
		rdma_device_to_drv_device(device, struct sroce_dev, ibdev);
	ssize_t len;

	rtnl_lock();
	len = sysfs_emit(buf, "%s\n", netdev_name(sdev->ndev));
	rtnl_unlock();

	return len;
}

/* Named by the ABI header so the provider and the module cannot disagree. */
static struct device_attribute sroce_dev_attr_abi_version = {
	.attr = { .name = SROCE_SYSFS_ABI_ATTR, .mode = 0444 },
	.show = sroce_abi_version_show,
};
static DEVICE_ATTR_RO(parent);

static struct attribute *sroce_dev_attrs[] = {
	&sroce_dev_attr_abi_version.attr,
	&dev_attr_parent.attr,
	NULL,
};

static const struct attribute_group sroce_attr_group = {
	.attrs = sroce_dev_attrs,
};

static const struct ib_device_ops sroce_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = SROCE_UVERBS_ABI_VERSION,
	.device_group = &sroce_attr_group,
	.port_groups = sroce_port_groups,

	.add_gid = sroce_add_gid,
	.advise_mr = sroce_advise_mr,
	.alloc_hw_port_stats = sroce_alloc_hw_port_stats,
	.alloc_mr = sroce_alloc_mr,
	.alloc_mw = sroce_alloc_mw,
	.alloc_pd = sroce_alloc_pd,
	.alloc_ucontext = sroce_alloc_ucontext,
	.alloc_xrcd = sroce_alloc_xrcd,
	.attach_mcast = sroce_attach_mcast,
	.create_ah = sroce_create_ah,
	.create_cq = SROCE_CREATE_CQ_OP,
	.create_qp = sroce_create_qp,
	.create_srq = sroce_create_srq,
	.create_user_ah = sroce_create_ah,
	.dealloc_driver = sroce_dealloc_driver,
	.dealloc_mw = sroce_dealloc_mw,
	.dealloc_pd = sroce_dealloc_pd,
	.dealloc_ucontext = sroce_dealloc_ucontext,
	.dealloc_xrcd = sroce_dealloc_xrcd,
	.del_gid = sroce_del_gid,
	.dereg_mr = sroce_dereg_mr,
	.detach_mcast = sroce_detach_mcast,
	.destroy_ah = sroce_destroy_ah,
	.destroy_cq = sroce_destroy_cq,
	.destroy_qp = sroce_destroy_qp,
	.destroy_srq = sroce_destroy_srq,
	.disassociate_ucontext = sroce_disassociate_ucontext,
	.fill_res_qp_entry = sroce_fill_res_qp_entry,
	.get_dev_fw_str = sroce_get_dev_fw_str,
	.get_dma_mr = sroce_get_dma_mr,
	.get_hw_stats = sroce_get_hw_stats,
	.get_link_layer = sroce_get_link_layer,
	.get_netdev = sroce_get_netdev,
	.get_port_immutable = sroce_get_port_immutable,
	.map_mr_sg = sroce_map_mr_sg,
	.mmap = sroce_mmap,
	.mmap_free = sroce_mmap_free,
	.modify_qp = sroce_modify_qp,
	.modify_srq = sroce_modify_srq,
	.poll_cq = sroce_poll_cq,
	.post_recv = sroce_post_recv,
	.post_send = sroce_post_send,
	.post_srq_recv = sroce_post_srq_recv,
	.query_device = sroce_query_device,
	.query_pkey = sroce_query_pkey,
	.query_port = sroce_query_port,
	.query_qp = sroce_query_qp,
	.query_srq = sroce_query_srq,
	.query_ucontext = sroce_query_ucontext,
	.reg_user_mr = sroce_reg_user_mr,
	.req_notify_cq = sroce_req_notify_cq,
	.rereg_user_mr = sroce_rereg_user_mr,
	.resize_cq = sroce_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, sroce_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, sroce_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, sroce_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, sroce_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, sroce_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, sroce_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, sroce_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, sroce_xrcd, ibxrcd),
};

/* Modified EUI-64 from a MAC: flip the universal/local bit, insert ff:fe. */
static __be64 sroce_guid_from_mac(const u8 *mac)
{
	u8 eui[8];
	__be64 guid;

	eui[0] = mac[0] ^ 0x02;
	eui[1] = mac[1];
	eui[2] = mac[2];
	eui[3] = 0xff;
	eui[4] = 0xfe;
	eui[5] = mac[3];
	eui[6] = mac[4];
	eui[7] = mac[5];
	memcpy(&guid, eui, sizeof(guid));

	return guid;
}

/* Fill in the ib_device of a freshly allocated sroce_dev (sdev->ndev set). */
void sroce_setup_ibdev(struct sroce_dev *sdev)
{
	struct ib_device *ibdev = &sdev->ibdev;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	/*
	 * Completions are delivered in the context that produces them, so a
	 * vector is only a hint; one per CPU lets ULPs that size their queue
	 * count by it (nvme-rdma) use every CPU.
	 */
	ibdev->num_comp_vectors = max_t(int, num_online_cpus(), 1);
	ibdev->node_guid = sroce_guid_from_mac(sdev->ndev->dev_addr);
	strscpy(ibdev->node_desc, SROCE_NODE_DESC, sizeof(ibdev->node_desc));

	/* The send doorbell is the legacy POST_SEND command (see sroce-abi.h). */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND);

	ib_set_device_ops(ibdev, &sroce_dev_ops);
}
