// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - UD multicast: attach_mcast/detach_mcast and delivery.
 *
 * A RoCE v2 multicast group is an IP multicast address: its GID is an
 * IPv4-mapped address in 224.0.0.0/4 or an IPv6 address in ff00::/8, and a
 * packet for the group goes to that address with destination QPN 0xffffff.
 *
 * The first QP attached to a group joins the netdev to it at the IP level
 * (ip_mc_inc_group(), ipv6_dev_mc_inc(): IGMP and MLD reports go out, the
 * netdev's filter takes the group's MAC, and the IP layer accepts the
 * group's datagrams, which reach the port 4791 socket); the last one to
 * leave drops the membership. rdma_cm joins the same group once more for
 * itself, which the IP layer counts.
 *
 * Groups live in a small hash table per device. Readers (the receive path,
 * softirq) walk it under RCU; attach and detach change it under mcg_lock
 * (after RTNL, which the IP layer's membership calls need), and replace a
 * group's entry as a whole when its list of QPs changes, so a reader sees
 * one list or the other. Delivery looks each QP up by number, as unicast
 * delivery does, and gives it its own reference on the packet.
 */

#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/jhash.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>

#include "sroce.h"

struct sroce_mcg {
	struct hlist_node	node;
	union ib_gid		mgid;
	struct rcu_head		rcu;
	u32			nqp;
	u32			qpn[];		/* nqp of them */
};

static u32 sroce_mcg_bucket(const union ib_gid *mgid)
{
	return jhash(mgid->raw, sizeof(mgid->raw), 0) % SROCE_MCG_BUCKETS;
}

/* IPv4-mapped 224.0.0.0/4, or IPv6 ff00::/8. */
static bool sroce_gid_is_mcast(const union ib_gid *gid)
{
	if (ipv6_addr_v4mapped((const struct in6_addr *)gid->raw))
		return ipv4_is_multicast(((const struct in6_addr *)gid->raw)->s6_addr32[3]);
	return gid->raw[0] == 0xff;
}

void sroce_mcast_init_dev(struct sroce_dev *sdev)
{
	u32 i;

	mutex_init(&sdev->mcg_lock);
	for (i = 0; i < SROCE_MCG_BUCKETS; i++)
		INIT_HLIST_HEAD(&sdev->mcg_hash[i]);
}

void sroce_mcast_fini_dev(struct sroce_dev *sdev)
{
	u32 i;

	/* Every QP is gone, and with it every attachment. */
	for (i = 0; i < SROCE_MCG_BUCKETS; i++)
		WARN_ON(!hlist_empty(&sdev->mcg_hash[i]));
	mutex_destroy(&sdev->mcg_lock);
}

static struct sroce_mcg *sroce_mcg_find(struct sroce_dev *sdev,
					const union ib_gid *mgid)
{
	struct sroce_mcg *g;

	hlist_for_each_entry_rcu(g, &sdev->mcg_hash[sroce_mcg_bucket(mgid)],
				 node, lockdep_is_held(&sdev->mcg_lock))
		if (!memcmp(g->mgid.raw, mgid->raw, sizeof(mgid->raw)))
			return g;
	return NULL;
}

/* Join or leave the group on the netdev. RTNL held. */
static int sroce_mcg_membership(struct sroce_dev *sdev,
				const union ib_gid *mgid, bool join)
{
	const struct in6_addr *a = (const struct in6_addr *)mgid->raw;
	struct in_device *in_dev;

	ASSERT_RTNL();
	if (ipv6_addr_v4mapped(a)) {
		in_dev = __in_dev_get_rtnl(sdev->ndev);
		if (!in_dev)
			return join ? -ENODEV : 0;
		if (join)
			ip_mc_inc_group(in_dev, a->s6_addr32[3]);
		else
			ip_mc_dec_group(in_dev, a->s6_addr32[3]);
		return 0;
	}
	if (join)
		return ipv6_dev_mc_inc(sdev->ndev, a);
	ipv6_dev_mc_dec(sdev->ndev, a);	/* ENODEV once IPv6 is gone */
	return 0;
}

/* A copy of @g with @qpn added (@add) or removed; NULL without memory. */
static struct sroce_mcg *sroce_mcg_copy(const struct sroce_mcg *g,
					const union ib_gid *mgid, u32 qpn,
					bool add, gfp_t gfp)
{
	u32 n = g ? g->nqp : 0, i, j = 0;
	struct sroce_mcg *c;

	c = kzalloc(struct_size(c, qpn, n + add), gfp);
	if (!c)
		return NULL;
	c->mgid = *mgid;
	for (i = 0; i < n; i++)
		if (g->qpn[i] != qpn)
			c->qpn[j++] = g->qpn[i];
	if (add)
		c->qpn[j++] = qpn;
	c->nqp = j;
	return c;
}

static bool sroce_mcg_has(const struct sroce_mcg *g, u32 qpn)
{
	u32 i;

	for (i = 0; i < g->nqp; i++)
		if (g->qpn[i] == qpn)
			return true;
	return false;
}

/* Put @c in @g's place (either may be NULL). mcg_lock held. */
static void sroce_mcg_replace(struct sroce_dev *sdev, struct sroce_mcg *g,
			      struct sroce_mcg *c)
{
	if (g && c)
		hlist_replace_rcu(&g->node, &c->node);
	else if (c)
		hlist_add_head_rcu(&c->node,
				   &sdev->mcg_hash[sroce_mcg_bucket(&c->mgid)]);
	else if (g)
		hlist_del_rcu(&g->node);
	if (g)
		kfree_rcu(g, rcu);
}

int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_dev *sdev = qp->sdev;
	struct sroce_mcg *g, *c;
	int err = 0;

	/* IBTA 10.5: UD QPs only; the LID means nothing on Ethernet. */
	if (qp->type != IB_QPT_UD || qp->is_gsi || !sroce_gid_is_mcast(gid))
		return -EINVAL;

	rtnl_lock();
	mutex_lock(&sdev->mcg_lock);
	g = sroce_mcg_find(sdev, gid);
	if (g && sroce_mcg_has(g, qp->ibqp.qp_num))
		goto out;	/* attached already */
	if (g ? g->nqp >= SROCE_MAX_MCAST_QP_ATTACH :
		sdev->num_mcg >= SROCE_MAX_MCAST_GRP) {
		err = -ENOMEM;
		goto out;
	}
	c = sroce_mcg_copy(g, gid, qp->ibqp.qp_num, true, GFP_KERNEL);
	if (!c) {
		err = -ENOMEM;
		goto out;
	}
	if (!g) {
		err = sroce_mcg_membership(sdev, gid, true);
		if (err) {
			kfree(c);
			goto out;
		}
		sdev->num_mcg++;
	}
	sroce_mcg_replace(sdev, g, c);
	qp->num_mcast++;
out:
	mutex_unlock(&sdev->mcg_lock);
	rtnl_unlock();
	return err;
}

/*
 * Take @qpn out of @g (mcg_lock held); leave the group with its last QP.
 * @gfp: __GFP_NOFAIL where the QP goes away (its number must not stay in
 * the group for the next QP to get it; the copy is at most 64 numbers).
 */
static int sroce_mcg_detach(struct sroce_dev *sdev, struct sroce_mcg *g,
			    u32 qpn, gfp_t gfp)
{
	struct sroce_mcg *c = NULL;

	if (g->nqp > 1) {
		c = sroce_mcg_copy(g, &g->mgid, qpn, false, gfp);
		if (!c)
			return -ENOMEM;
	} else {
		sroce_mcg_membership(sdev, &g->mgid, false);
		sdev->num_mcg--;
	}
	sroce_mcg_replace(sdev, g, c);
	return 0;
}

int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_dev *sdev = qp->sdev;
	struct sroce_mcg *g;
	int err = -EINVAL;

	rtnl_lock();
	mutex_lock(&sdev->mcg_lock);
	g = sroce_mcg_find(sdev, gid);
	if (g && sroce_mcg_has(g, qp->ibqp.qp_num)) {
		err = sroce_mcg_detach(sdev, g, qp->ibqp.qp_num, GFP_KERNEL);
		if (!err)
			qp->num_mcast--;
	}
	mutex_unlock(&sdev->mcg_lock);
	rtnl_unlock();
	return err;
}

/*
 * destroy_qp: leave every group the QP is still attached to (uverbs
 * detaches user QPs itself; a kernel consumer may not have). Process
 * context, never under RTNL (main.c).
 */
void sroce_mcast_qp_gone(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = qp->sdev;
	struct sroce_mcg *g;
	struct hlist_node *tmp;
	u32 i;

	if (!READ_ONCE(qp->num_mcast))
		return;
	rtnl_lock();
	mutex_lock(&sdev->mcg_lock);
	for (i = 0; i < SROCE_MCG_BUCKETS && qp->num_mcast; i++)
		hlist_for_each_entry_safe(g, tmp, &sdev->mcg_hash[i], node)
			if (sroce_mcg_has(g, qp->ibqp.qp_num)) {
				sroce_mcg_detach(sdev, g, qp->ibqp.qp_num,
						 GFP_KERNEL | __GFP_NOFAIL);
				qp->num_mcast--;
			}
	mutex_unlock(&sdev->mcg_lock);
	rtnl_unlock();
}

/**
 * sroce_mcast_rcv - deliver a packet for QPN 0xffffff
 * @sdev: the device
 * @skb: the packet (consumed)
 * @pkt: the validator's view of it
 *
 * Every QP attached to the group named by the packet's destination address
 * gets the packet, as unicast UD delivery would give it (Q_Key and receive
 * WQE checks are the QP's). Only UD SENDs are multicast. Softirq, under
 * rcu_read_lock().
 */
void sroce_mcast_rcv(struct sroce_dev *sdev, struct sk_buff *skb,
		     const struct sroce_pkt *pkt)
{
	const u8 *ip = skb_network_header(skb);
	const struct sroce_mcg *g;
	union ib_gid mgid;
	u32 i;

	if (pkt->ip_version == 4)
		ipv6_addr_set_v4mapped(*(const __be32 *)(ip + 16),
				       (struct in6_addr *)mgid.raw);
	else
		memcpy(mgid.raw, ip + 24, sizeof(mgid.raw));
	g = pkt->info->transport == SROCE_TRANSPORT_UD &&
	    sroce_gid_is_mcast(&mgid) ? sroce_mcg_find(sdev, &mgid) : NULL;
	if (!g) {
		sroce_cnt_inc(sdev, SROCE_CNT_RX_NO_QP);
		kfree_skb(skb);
		return;
	}
	for (i = 0; i < g->nqp; i++) {
		struct sroce_qp *qp = sroce_qp_get(sdev, g->qpn[i]);

		if (!qp)
			continue;
		sroce_resp_rcv(qp, skb_get(skb), pkt);
		sroce_qp_put(qp);
	}
	consume_skb(skb);
}
