// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - address vectors and address handles.
 *
 * An address vector (struct sroce_av) is what a QP or a UD work request needs
 * to build the IP and UDP headers: source and destination address, traffic
 * class, hop limit, flow label. It is resolved once from an rdma_ah_attr
 * (modify_qp for RC/UC, create_ah for UD) whose source GID entry ib_core has
 * looked up; only RoCE v2 GIDs exist on sroce ports.
 *
 * Every AH gets a number (ah_num) that goes into UD send WQEs (user space
 * writes it, kernel post_send converts ud_wr.ah into it); the requester looks
 * it up under RCU and copies the address vector into its own copy of the WQE,
 * after checking that the AH belongs to the QP's PD. An AH destroyed while
 * WQEs naming it are queued therefore never leaves a dangling pointer: later
 * lookups fail and the WQE completes with an error.
 */

#include <linux/slab.h>
#include <net/addrconf.h>
#include <rdma/ib_cache.h>

#include "sroce.h"

void sroce_ah_init_dev(struct sroce_dev *sdev)
{
	/* Kernel AHs come and go in any context, interrupts off included. */
	xa_init_flags(&sdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
}

void sroce_ah_fini_dev(struct sroce_dev *sdev)
{
	WARN_ON(!xa_empty(&sdev->ah_xa));
	xa_destroy(&sdev->ah_xa);
}

/* Is @gid one of this device's own GIDs? Then packets to it loop back. */
static bool sroce_gid_is_local(struct sroce_dev *sdev, const union ib_gid *gid)
{
	const struct ib_gid_attr *attr;

	attr = rdma_find_gid_by_port(&sdev->ibdev, gid,
				     IB_GID_TYPE_ROCE_UDP_ENCAP, SROCE_PORT,
				     NULL);
	if (IS_ERR(attr))
		return false;
	rdma_put_gid_attr(attr);
	return true;
}

/**
 * sroce_av_from_attr - resolve an address vector
 * @sdev: the device
 * @av: filled in
 * @attr: the attributes; the GRH and its sgid_attr must be present
 *
 * Return: 0, or -EINVAL for attributes RoCE v2 cannot use (no GRH, a GID of
 * another type, source and destination of different address families).
 */
int sroce_av_from_attr(struct sroce_dev *sdev, struct sroce_av *av,
		       const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;
	struct net_device *ndev;
	u16 vid;
	bool s4, d4;

	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr || sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	memcpy(&av->saddr, sgid_attr->gid.raw, sizeof(av->saddr));
	memcpy(&av->daddr, grh->dgid.raw, sizeof(av->daddr));
	s4 = ipv6_addr_v4mapped(&av->saddr);
	d4 = ipv6_addr_v4mapped(&av->daddr);
	if (s4 != d4)
		return -EINVAL;
	av->ipver = s4 ? 4 : 6;
	av->tclass = grh->traffic_class;
	av->hop_limit = grh->hop_limit ? grh->hop_limit : 64;
	av->flow_label = grh->flow_label & 0xfffff;
	av->sl = rdma_ah_get_sl(attr);
	/*
	 * GIDs of a VLAN netdev on ours leave through it, which tags them
	 * (its egress QoS map turns skb->priority, the SL, into the PCP).
	 */
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(sgid_attr);
	av->ifindex = IS_ERR(ndev) ? 0 : ndev->ifindex;
	/*
	 * Packets leave through that netdev (with DF): an upper device with
	 * a smaller MTU than ours (a VLAN, macvlan) bounds the path MTU.
	 */
	av->max_mtu = IS_ERR(ndev) ? sroce_port_mtu(sdev) :
		      min(sroce_active_mtu(READ_ONCE(ndev->mtu)),
			  sroce_port_mtu(sdev));
	vid = IS_ERR(ndev) ? SROCE_NO_VLAN : sroce_vlan_of_rcu(ndev);
	rcu_read_unlock();
	av->vlan = vid != SROCE_NO_VLAN;
	av->vlan_id = av->vlan ? vid : 0;
	av->loopback = sroce_gid_is_local(sdev, &grh->dgid);
	return 0;
}

int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);
	struct sroce_ah *ah = to_sah(ibah);
	struct sroce_create_ah_resp resp = {};
	/* Kernel AHs may be created under a spinlock (ib_cm). */
	gfp_t gfp = (init_attr->flags & RDMA_CREATE_AH_SLEEPABLE) ?
		    GFP_KERNEL : GFP_ATOMIC;
	unsigned long irqflags;
	int err;

	if (udata && udata->outlen && udata->outlen < sizeof(resp))
		return -EINVAL;

	ah->pd = to_spd(ibah->pd);
	err = sroce_av_from_attr(sdev, &ah->av, init_attr->ah_attr);
	if (err)
		return err;

	ah->entry = kmalloc(sizeof(*ah->entry), gfp);
	if (!ah->entry)
		return -ENOMEM;
	ah->entry->pd = ah->pd;
	ah->entry->av = ah->av;

	xa_lock_irqsave(&sdev->ah_xa, irqflags);
	err = __xa_alloc_cyclic(&sdev->ah_xa, &ah->ah_num, ah->entry,
				XA_LIMIT(1, sroce_max_for(SROCE_MAX_AH, udata)),
				&sdev->ah_next,
				gfp);
	xa_unlock_irqrestore(&sdev->ah_xa, irqflags);
	if (err < 0) {
		kfree(ah->entry);
		return err == -EBUSY ? -ENOMEM : err;
	}

	resp.ah_num = ah->ah_num;
	if (udata && udata->outlen) {
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err) {
			/* Published already: a requester may be reading it. */
			xa_erase_irq(&sdev->ah_xa, ah->ah_num);
			kfree_rcu(ah->entry, rcu);
			return err;
		}
	}
	return 0;
}

/*
 * Kernel AHs may be destroyed in atomic context: the entry requesters copy
 * from goes after an RCU grace period, not synchronously.
 */
int sroce_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct sroce_ah *ah = to_sah(ibah);
	unsigned long irqflags;

	xa_lock_irqsave(&to_sdev(ibah->device)->ah_xa, irqflags);
	__xa_erase(&to_sdev(ibah->device)->ah_xa, ah->ah_num);
	xa_unlock_irqrestore(&to_sdev(ibah->device)->ah_xa, irqflags);
	kfree_rcu(ah->entry, rcu);
	return 0;
}

/** Number of the AH for UD work requests of kernel QPs. */
u32 sroce_ah_num(struct ib_ah *ibah)
{
	return to_sah(ibah)->ah_num;
}

/**
 * sroce_ah_lookup - copy the address vector of an AH
 * @sdev: the device
 * @pd: the PD of the QP the AH is used on
 * @ah_num: from a UD send WQE (untrusted)
 * @av: filled in on success
 *
 * Return: true if @ah_num names a live AH of @pd.
 */
bool sroce_ah_lookup(struct sroce_dev *sdev, struct sroce_pd *pd, u32 ah_num,
		     struct sroce_av *av)
{
	struct sroce_ah_entry *ah;
	bool ok = false;

	rcu_read_lock();
	ah = xa_load(&sdev->ah_xa, ah_num);
	if (ah && ah->pd == pd) {
		*av = ah->av;
		ok = true;
	}
	rcu_read_unlock();
	return ok;
}
