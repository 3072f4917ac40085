// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - the RoCE v2 network layer: the UDP port 4791 tunnel sockets,
 * receive (validation, dispatch to the transport), transmit (routing, IP
 * and UDP headers, ICRC, back-pressure) and the per-port counters.
 *
 * Sockets
 * -------
 * Every network namespace that has sroce devices gets its own IPv4 and IPv6
 * (v6only) UDP tunnel socket on port 4791, kept in the namespace's
 * net_generic() slot (struct sroce_net). A device belongs to the namespace
 * its netdev was in when it was created (sdev->net): it receives on that
 * namespace's sockets and routes its packets there. sroce_net_get() opens
 * the sockets for the first device of a namespace, sroce_net_put() closes
 * them after the last one is gone; a counter per namespace under
 * sroce_net_lock tracks the users. If the port is taken in the namespace
 * (rdma_rxe binds it in init_net when it loads) the first get fails with
 * -EADDRINUSE and nothing is left open. After closing, a grace period
 * passes before put returns: the UDP stack looks sockets up under RCU, so a
 * receive may still be running in sroce_udp_encap_rcv() until then, and
 * module exit must not overtake it.
 *
 * A device holds no reference on its namespace (that would keep a deleted
 * namespace alive forever, and its netdevs with it). Instead, the
 * namespace's exit method (sroce_net_exit) unregisters the devices that
 * still belong to it and waits for them, after the netdevs have left (they
 * are unregistered, or moved back to init_net, before our exit runs); only
 * then does the namespace go. A netdev that moves to another namespace is
 * unregistered in the old one first, which unregisters its device (main.c);
 * until that has happened the device sends nothing (sroce_tx_send checks
 * that the netdev is still in sdev->net).
 *
 * Receive
 * -------
 * sroce_udp_encap_rcv() runs in softirq (BH disabled) with skb->data at the
 * UDP header and the IP header in the linear area. It maps skb->dev to the
 * sroce device with an RCU lookup (main.c; for an upper device of ours, the
 * one sroce device among its lower devices), makes the headers linear, runs
 * the wire validator over them, checks the ICRC over the whole datagram and
 * hands good packets to sroce_rcv_pkt(), which finds the QP and calls the
 * responder (requests) or the completer (responses). Every skb is freed
 * exactly once: kfree_skb() for drops, consume_skb() for packets the
 * transport has used. The payload stays where the driver put it: drivers
 * (virtio-net among them) hand a frame larger than one receive buffer over
 * as a head plus page fragments, as they do at RoCE MTU 4096, and the ICRC
 * and the copy into the memory region read the fragments in place
 * (skb_seq_read(), skb_copy_bits()) instead of linearizing, which would
 * allocate and fill a new head for every such packet.
 *
 * Transmit
 * --------
 * sroce_tx_alloc() builds an skb with room for IP/UDP and the transport
 * headers, sroce_tx_send() routes it, fills in IP, UDP and ICRC and hands
 * it to the IP layer (or loops it back to a device on this host through a
 * tasklet). Every QP limits its packets in flight (sroce_tx_full()).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/skbuff.h>
#include <linux/u64_stats_sync.h>
#include <linux/udp.h>
#include <net/addrconf.h>
#include <net/gro.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/raw.h>
#include <net/rawv6.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/route.h>
#include <net/udp_tunnel.h>
#include <net/xfrm.h>

#include "sroce.h"

/* ---------------------------------------------------------------- counters */

static const char *const sroce_cnt_fixed_names[SROCE_CNT_DROP_BASE] = {
	[SROCE_CNT_RX_PACKETS]	= "rx_packets",
	[SROCE_CNT_RX_BYTES]	= "rx_bytes",
	[SROCE_CNT_RX_CNP]	= "rx_cnp",
	[SROCE_CNT_RX_NO_QP]	= "rx_no_qp",
	[SROCE_CNT_RX_NOMEM]	= "rx_drop_nomem",
	[SROCE_CNT_RX_NONLINEAR] = "rx_nonlinear",
	[SROCE_CNT_RX_DIRECT]	= "rx_direct",
	[SROCE_CNT_TX_PACKETS]	= "tx_packets",
	[SROCE_CNT_TX_BYTES]	= "tx_bytes",
	[SROCE_CNT_TX_ERR]	= "tx_err",
	[SROCE_CNT_RETRY]	= "retry",
	[SROCE_CNT_SEQ_NAK_RCVD] = "seq_nak_rcvd",
	[SROCE_CNT_RNR_NAK_RCVD] = "rnr_nak_rcvd",
	[SROCE_CNT_SEQ_NAK_SENT] = "seq_nak_sent",
	[SROCE_CNT_RNR_NAK_SENT] = "rnr_nak_sent",
	[SROCE_CNT_DUP_REQ]	= "dup_req",
	[SROCE_CNT_OUT_OF_SEQ]	= "out_of_sequence",
	[SROCE_CNT_ACK_COALESCED] = "ack_coalesced",
	[SROCE_CNT_ACKREQ_SKIPPED] = "ackreq_skipped",
	[SROCE_CNT_FETCH_BY_TIMER] = "fetch_by_timer",
	[SROCE_CNT_RX_STALE]	= "rx_stale",
	[SROCE_CNT_DROP_PEER]	= "rx_drop_peer",
	[SROCE_CNT_DROP_PKEY]	= "rx_drop_pkey",
	[SROCE_CNT_DROP_PSN]	= "rx_drop_psn",
	[SROCE_CNT_DROP_UD_LEN]	= "rx_drop_ud_len",
	[SROCE_CNT_DROP_MTU]	= "rx_drop_mtu",
	[SROCE_CNT_DROP_UC]	= "rx_drop_uc",
	[SROCE_CNT_DROP_DUP_READ] = "rx_drop_dup_read",
	[SROCE_CNT_DROP_QKEY]	= "rx_drop_qkey",
	[SROCE_CNT_DROP_NO_RECV] = "rx_drop_no_recv",
	/* the names mlx5 gives them, where it has them */
	[SROCE_CNT_NP_ECN_MARKED] = "np_ecn_marked_roce_packets",
	[SROCE_CNT_NP_CNP_SENT]	= "np_cnp_sent",
	[SROCE_CNT_RP_CNP_HANDLED] = "rp_cnp_handled",
	[SROCE_CNT_RP_CNP_IGNORED] = "rp_cnp_ignored",
	[SROCE_CNT_RP_RATE_CUTS] = "rp_rate_reductions",
	[SROCE_CNT_ODP_WAIT]	= "odp_waits",
	[SROCE_CNT_ODP_FAULT]	= "odp_fault_pages",
	[SROCE_CNT_ODP_INVAL]	= "odp_invalidated_pages",
};

#define SROCE_CNT_NAME_LEN	32
static char sroce_drop_names[SROCE_WIRE_E_NR][SROCE_CNT_NAME_LEN];
static struct rdma_stat_desc sroce_stat_descs[SROCE_CNT_NR];

/* Fills in the counter descriptors: "rx_drop_" + the validator's name. */
void sroce_net_init_counters(void)
{
	unsigned int i;

	for (i = 0; i < SROCE_CNT_DROP_BASE; i++)
		sroce_stat_descs[i].name = sroce_cnt_fixed_names[i];
	for (i = 1; i < SROCE_WIRE_E_NR; i++) {
		snprintf(sroce_drop_names[i], SROCE_CNT_NAME_LEN, "rx_drop_%s",
			 sroce_wire_err_name(i));
		sroce_stat_descs[sroce_cnt_drop(i)].name = sroce_drop_names[i];
	}
}

static void sroce_cnt_add(struct sroce_dev *sdev, unsigned int idx, u64 val)
{
	struct sroce_rx_stats *s = this_cpu_ptr(sdev->stats);

	u64_stats_update_begin(&s->syncp);
	u64_stats_add(&s->cnt[idx], val);
	u64_stats_update_end(&s->syncp);
}

static void sroce_cnt_add_bh(struct sroce_dev *sdev, unsigned int idx, u64 v)
{
	unsigned long flags;

	local_irq_save(flags);
	sroce_cnt_add(sdev, idx, v);
	local_irq_restore(flags);
}

/* Any context but hard IRQ. */
void sroce_cnt_add_n(struct sroce_dev *sdev, unsigned int idx, u64 v)
{
	sroce_cnt_add_bh(sdev, idx, v);
}

void sroce_cnt_inc(struct sroce_dev *sdev, unsigned int idx)
{
	unsigned long flags;

	/* Also called from process context with BH enabled. */
	local_irq_save(flags);
	sroce_cnt_add(sdev, idx, 1);
	local_irq_restore(flags);
}

/* One counter's total over all CPUs (process context; 0 once freed). */
u64 sroce_cnt_read(struct sroce_dev *sdev, unsigned int idx)
{
	unsigned int start;
	u64 sum = 0, v;
	int cpu;

	if (!sdev->stats)
		return 0;
	for_each_possible_cpu(cpu) {
		const struct sroce_rx_stats *s = per_cpu_ptr(sdev->stats, cpu);

		do {
			start = u64_stats_fetch_begin(&s->syncp);
			v = u64_stats_read(&s->cnt[idx]);
		} while (u64_stats_fetch_retry(&s->syncp, start));
		sum += v;
	}
	return sum;
}

int sroce_net_alloc_stats(struct sroce_dev *sdev)
{
	int cpu;

	sdev->stats = alloc_percpu(struct sroce_rx_stats);
	if (!sdev->stats)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		u64_stats_init(&per_cpu_ptr(sdev->stats, cpu)->syncp);
	return 0;
}

/* Only once no receive can see the device any more (see main.c). */
void sroce_net_free_stats(struct sroce_dev *sdev)
{
	free_percpu(sdev->stats);
	sdev->stats = NULL;
}

struct rdma_hw_stats *sroce_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num)
{
	return rdma_alloc_hw_stats_struct(sroce_stat_descs, SROCE_CNT_NR,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int sroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	unsigned int i;

	if (!sdev->stats || stats->num_counters != SROCE_CNT_NR)
		return -EINVAL;

	for (i = 0; i < SROCE_CNT_NR; i++)
		stats->value[i] = sroce_cnt_read(sdev, i);
	return SROCE_CNT_NR;
}

/* ----------------------------------------------------------------- receive */

/* The ECN field of a packet's IP header. */
static u8 sroce_ip_ecn(const u8 *ip, const struct sroce_pkt *pkt)
{
	if (pkt->ip_version == 4)
		return ip[1] & INET_ECN_MASK;
	return (ip[1] >> 4) & INET_ECN_MASK;
}

/*
 * The transport's entry point: a packet that passed the validator, its IP
 * datagram at skb_network_header(skb) and pkt's offsets relative to it. The
 * headers (up to pkt->payload_off) are linear; payload, pad and ICRC may be
 * in page fragments: they are read with sroce_skb_off() offsets. Owns the
 * skb. Requests go to the responder of the destination QP, responses to its
 * completer.
 */
static void sroce_rcv_pkt(struct sroce_dev *sdev, struct sk_buff *skb,
			  const struct sroce_pkt *pkt)
{
	const u8 *ip = skb_network_header(skb);
	const u8 *bth = ip + pkt->bth_off;
	bool ce = sroce_ip_ecn(ip, pkt) == INET_ECN_CE;
	struct sroce_qp *qp;

	if (unlikely(ce))
		sroce_cnt_add(sdev, SROCE_CNT_NP_ECN_MARKED, 1);
	if (pkt->opcode == SROCE_OP_CNP) {
		sroce_cnt_add(sdev, SROCE_CNT_RX_CNP, 1);
		sroce_cc_rcv_cnp(sdev, skb, pkt);
		consume_skb(skb);
		return;
	}

	if (sroce_bth_dqpn(bth) == SROCE_MCAST_QPN) {
		sroce_mcast_rcv(sdev, skb, pkt);
		return;
	}
	qp = sroce_qp_get(sdev, sroce_bth_dqpn(bth));
	if (!qp) {
		sroce_cnt_add(sdev, SROCE_CNT_RX_NO_QP, 1);
		kfree_skb(skb);
		return;
	}
	if (unlikely(ce))
		sroce_cc_rcv_ce(qp, skb, pkt);
	if (pkt->info->flags & SROCE_OPF_REQUEST)
		sroce_resp_rcv(qp, skb, pkt);
	else
		sroce_comp_rcv(qp, skb, pkt);
	sroce_qp_put(qp);
}

/**
 * sroce_rx_from_peer - is a packet from the peer of a connected QP?
 * @av: the QP's path (daddr is the peer, saddr our address)
 * @ip: the packet's IP header
 * @pkt: the validator's view of it
 *
 * RC and UC QPs take packets only from the address their path names, sent
 * to the address it leaves from; anything else is another host's (or
 * another address's) attempt to speak on the connection.
 */
bool sroce_rx_from_peer(const struct sroce_av *av, const u8 *ip,
			const struct sroce_pkt *pkt)
{
	if (pkt->ip_version == 4)
		return av->ipver == 4 &&
		       !memcmp(ip + 12, &av->daddr.s6_addr32[3], 4) &&
		       !memcmp(ip + 16, &av->saddr.s6_addr32[3], 4);
	return av->ipver == 6 &&
	       !memcmp(ip + 8, &av->daddr, sizeof(av->daddr)) &&
	       !memcmp(ip + 24, &av->saddr, sizeof(av->saddr));
}

/*
 * Does the BTH P_Key match the port's only P_Key (the default, 0xffff)?
 * IBTA 10.9.3: the 15-bit keys are equal and not both are limited members.
 */
bool sroce_rx_pkey_ok(const u8 *bth)
{
	return sroce_pkey_match(sroce_bth_pkey(bth), SROCE_DEFAULT_PKEY);
}

/*
 * The ICRC of a validated packet, over the datagram wherever its bytes lie:
 * the masked headers from the linear part, the rest (extension headers,
 * payload, pad) chunk by chunk.
 */
static bool sroce_rx_icrc_ok(struct sk_buff *skb, const u8 *ip,
			     const struct sroce_pkt *pkt)
{
	unsigned int from = pkt->bth_off + SROCE_BTH_LEN;
	unsigned int left = pkt->icrc_off - from;
	u32 crc = sroce_icrc_begin(ip, pkt->ip_version);
	struct skb_seq_state seq;
	unsigned int consumed = 0, n;
	const u8 *data;
	u8 buf[SROCE_ICRC_LEN];
	const u8 *wire;

	skb_prepare_seq_read(skb, sroce_skb_off(skb, from),
			     sroce_skb_off(skb, pkt->icrc_off), &seq);
	/* A chunk may run on past the upper offset: to the end of its block. */
	while (left && (n = skb_seq_read(consumed, &data, &seq)) != 0) {
		n = min(n, left);
		crc = sroce_icrc_update(crc, data, n);
		consumed += n;
		left -= n;
	}
	skb_abort_seq_read(&seq);	/* unmaps the last fragment */
	if (left)	/* cannot happen: the validator saw these bytes */
		return false;
	wire = skb_header_pointer(skb, sroce_skb_off(skb, pkt->icrc_off),
				  SROCE_ICRC_LEN, buf);
	return wire && sroce_icrc_final(crc) == sroce_icrc_get(wire);
}

static void sroce_rx(struct sroce_dev *sdev, struct sk_buff *skb)
{
	enum sroce_wire_err err;
	struct sroce_pkt pkt;
	const u8 *ip;
	unsigned int len = skb->len - skb_network_offset(skb);
	unsigned int hdrs;

	sroce_cnt_add(sdev, SROCE_CNT_RX_PACKETS, 1);
	sroce_cnt_add(sdev, SROCE_CNT_RX_BYTES, len);
	if (skb_is_nonlinear(skb))
		sroce_cnt_add(sdev, SROCE_CNT_RX_NONLINEAR, 1);

	/* What the validator reads: IP, UDP and BTH headers. */
	hdrs = min_t(unsigned int, len, SROCE_PARSE_HDRS_LEN);
	if (!pskb_may_pull(skb, sroce_skb_off(skb, hdrs)))
		goto nomem;
	/* The UDP layer trims datagrams to their UDP length: say so. */
	err = sroce_parse_ip(skb_network_header(skb), len,
			     SROCE_PARSE_UDP_TRIMMED | SROCE_PARSE_HDRS_ONLY,
			     &pkt);
	if (err != SROCE_WIRE_OK)
		goto drop;
	/* The extension headers too; pkt's offsets survive a new head. */
	if (!pskb_may_pull(skb, sroce_skb_off(skb, pkt.payload_off)))
		goto nomem;
	ip = skb_network_header(skb);
	if (!sroce_rx_icrc_ok(skb, ip, &pkt)) {
		err = SROCE_WIRE_E_ICRC;
		goto drop;
	}
	sroce_rcv_pkt(sdev, skb, &pkt);
	return;

nomem:
	sroce_cnt_add(sdev, SROCE_CNT_RX_NOMEM, 1);
	kfree_skb(skb);
	return;
drop:
	sroce_cnt_add(sdev, sroce_cnt_drop(err), 1);
	kfree_skb(skb);
}

struct sroce_lower_walk {
	struct sroce_dev	*sdev;
	unsigned int		found;
};

static int sroce_lower_dev(struct net_device *lower,
			   struct netdev_nested_priv *priv)
{
	struct sroce_lower_walk *w = priv->data;
	struct sroce_dev *sdev = sroce_dev_by_ndev_rcu(lower);

	if (sdev && sdev != w->sdev) {
		w->sdev = sdev;
		w->found++;
	}
	return w->found > 1;	/* a second one: stop */
}

/*
 * An sroce device on one of @ndev's lower netdevs (any depth), or NULL.
 * RCU; the result is valid until rcu_read_unlock().
 */
struct sroce_dev *sroce_any_dev_below_rcu(struct net_device *ndev)
{
	struct sroce_lower_walk w = {};
	struct netdev_nested_priv priv = { .data = &w };

	netdev_walk_all_lower_dev_rcu(ndev, sroce_lower_dev, &priv);
	return w.sdev;
}

static int sroce_lower_vlan(struct net_device *lower,
			    struct netdev_nested_priv *priv)
{
	u16 *vid = priv->data;

	if (!is_vlan_dev(lower))
		return 0;
	*vid = vlan_dev_vlan_id(lower);
	return 1;
}

/*
 * The VLAN of a packet that arrived on @ndev (or that leaves through it):
 * @ndev's own VLAN id, or that of the first VLAN netdev below it (a macvlan
 * on a VLAN), as ib_core finds a GID's (rdma_read_gid_l2_fields());
 * SROCE_NO_VLAN for none. RCU.
 */
u16 sroce_vlan_of_rcu(struct net_device *ndev)
{
	struct netdev_nested_priv priv;
	u16 vid = SROCE_NO_VLAN;

	if (is_vlan_dev(ndev))
		return vlan_dev_vlan_id(ndev);
	priv.data = &vid;
	netdev_walk_all_lower_dev_rcu(ndev, sroce_lower_vlan, &priv);
	return vid;
}

/*
 * The sroce device of a packet that arrived on @ndev, one of our netdevs'
 * upper devices (a VLAN, a macvlan or ipvlan, a bridge, a bond): ib_core
 * puts the addresses of an upper device into the GID table of every RoCE
 * device below it, so a QP may use such a GID. If more than one sroce
 * device lies below @ndev (a bridge over two of our netdevs), the packet
 * cannot be told apart and is dropped.
 */
static struct sroce_dev *sroce_dev_below_rcu(struct net_device *ndev)
{
	struct sroce_lower_walk w = {};
	struct netdev_nested_priv priv = { .data = &w };

	/* A VLAN netdev on ours, the common case: no walk. */
	if (is_vlan_dev(ndev)) {
		w.sdev = sroce_dev_by_ndev_rcu(vlan_dev_real_dev(ndev));
		if (w.sdev)
			return w.sdev;
	}
	netdev_walk_all_lower_dev_rcu(ndev, sroce_lower_dev, &priv);
	return w.found == 1 ? w.sdev : NULL;
}

static int sroce_udp_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct sroce_dev *sdev;

	rcu_read_lock();
	sdev = sroce_dev_by_ndev_rcu(skb->dev);
	if (!sdev)
		sdev = sroce_dev_below_rcu(skb->dev);
	/* A device whose netdev has just left its namespace takes nothing. */
	if (sdev && net_eq(sock_net(sk), sdev->net))
		sroce_rx(sdev, skb);
	else
		kfree_skb(skb);	/* no sroce device on this netdev */
	rcu_read_unlock();

	return 0;	/* consumed */
}

/*
 * Direct receive. The port 4791 sockets' GRO hook (udp_gro_receive() calls
 * it for datagrams to that port) takes a plain RoCE v2 packet for one of
 * the netdev's own addresses there and then, instead of letting it go on
 * through the generic receive path: the taps, tc ingress, the IP input
 * (netfilter, route lookup, local delivery, raw sockets) and the UDP input
 * (a second socket lookup) to sroce_udp_encap_rcv(). It returns
 * -EINPROGRESS, the way GRO lets a layer keep a packet (GRO_CONSUMED), and
 * processes it as the encapsulation path would. Only when none of what it
 * skips could act on the packet: no packet taps (tcpdump, or a packet
 * socket bound to the netdev for one protocol; one for IPv4 or IPv6 on
 * every netdev sits in a list modules cannot see and misses these
 * packets), no tc or netfilter ingress hooks on the netdev, no netfilter
 * PRE_ROUTING or LOCAL_IN hooks of the packet's family, no raw socket for
 * UDP and no inbound IPsec policy in the namespace, no generic XDP
 * program, no rx_handler (bridge, bond or macvlan port) and no VRF on the
 * netdev, no VLAN tag; a unicast frame to the netdev's MAC address for
 * one of its addresses (IPv6: not tentative) from a source the IP input
 * would keep (not multicast or loopback; for IPv4 not broadcast or zero
 * either), no IP options or IPv6 extension headers, no encapsulation
 * around it, UDP checksum zero (as RoCE v2 senders send it) and a UDP
 * length that fills the IP datagram. Anything else goes the generic way,
 * as before. Skipped as well: RPS steering and the IP and UDP MIB
 * counters (rx_direct counts these packets), and the reverse path filter
 * (RC and UC QPs accept only their path's addresses). The rx_direct
 * module parameter turns it off.
 */
static bool sroce_rx_direct = true;
module_param_named(rx_direct, sroce_rx_direct, bool, 0644);
MODULE_PARM_DESC(rx_direct,
		 "take plain RoCE v2 packets at GRO, past the IP and UDP input (default: on)");

static bool sroce_rx_direct_hooks(struct net_device *ndev, bool v6)
{
	struct net *net = dev_net(ndev);
	struct nf_hook_entries __rcu **nf = NULL;
	struct raw_hashinfo *raw = &raw_v4_hashinfo;

	/* taps for every protocol, or for one protocol bound to the netdev */
	if (dev_nit_active(ndev) || !list_empty(&ndev->ptype_specific) ||
	    rcu_access_pointer(ndev->rx_handler) ||
	    rcu_access_pointer(ndev->xdp_prog) || sroce_tc_ingress(ndev) ||
	    netif_is_l3_slave(ndev))
		return true;
#ifdef CONFIG_NETFILTER_INGRESS
	if (rcu_access_pointer(ndev->nf_hooks_ingress))
		return true;
#endif
#ifdef CONFIG_NETFILTER
	nf = net->nf.hooks_ipv4;
#endif
#if IS_ENABLED(CONFIG_IPV6)
	if (v6) {
#ifdef CONFIG_NETFILTER
		nf = net->nf.hooks_ipv6;
#endif
		raw = &raw_v6_hashinfo;
	}
#endif
	if (nf && (rcu_access_pointer(nf[NF_INET_PRE_ROUTING]) ||
		   rcu_access_pointer(nf[NF_INET_LOCAL_IN])))
		return true;
	/* a raw socket for UDP would get a copy at local delivery */
	if (!hlist_empty(&raw->ht[raw_hashfunc(net, IPPROTO_UDP)]))
		return true;
#ifdef CONFIG_XFRM
	if (READ_ONCE(net->xfrm.policy_count[XFRM_POLICY_IN]))
		return true;
#endif
	return false;
}

/*
 * The length of a plain IPv4 RoCE v2 datagram at @skb's data for one of
 * @ndev's addresses, as the IP input would deliver it locally; 0 if it is
 * not one.
 */
static unsigned int sroce_rx_direct_ipv4(struct net_device *ndev,
					 struct sk_buff *skb)
{
	const struct in_device *in_dev = __in_dev_get_rcu(ndev);
	const struct in_ifaddr *ifa;
	const struct iphdr *iph;
	const struct udphdr *uh;
	unsigned int len;

	/* inet_gro_receive() checked version, length, checksum, no fragment */
	iph = skb_gro_header(skb, SROCE_IPV4_HLEN + SROCE_UDP_HLEN, 0);
	if (!iph || !in_dev)
		return 0;
	uh = (const struct udphdr *)(iph + 1);
	len = ntohs(iph->tot_len);
	if (len < SROCE_IPV4_HLEN + SROCE_UDP_HLEN || len > skb->len ||
	    uh->check || ntohs(uh->len) != len - SROCE_IPV4_HLEN)
		return 0;
	/* Sources the route input drops as martians: left to it. */
	if (ipv4_is_multicast(iph->saddr) || ipv4_is_lbcast(iph->saddr) ||
	    ipv4_is_zeronet(iph->saddr) || ipv4_is_loopback(iph->saddr))
		return 0;
	in_dev_for_each_ifa_rcu(ifa, in_dev)
		if (ifa->ifa_local == iph->daddr)
			return len;
	return 0;
}

/* The same for IPv6: no extension headers, no jumbogram. */
static unsigned int sroce_rx_direct_ipv6(struct net_device *ndev,
					 struct sk_buff *skb)
{
#if IS_ENABLED(CONFIG_IPV6)
	const struct ipv6hdr *ip6h;
	const struct udphdr *uh;
	unsigned int len;

	/* ipv6_gro_receive() checked nothing of these */
	ip6h = skb_gro_header(skb, SROCE_IPV6_HLEN + SROCE_UDP_HLEN, 0);
	if (!ip6h || ip6h->version != 6 || ip6h->nexthdr != IPPROTO_UDP)
		return 0;
	uh = (const struct udphdr *)(ip6h + 1);
	len = ntohs(ip6h->payload_len);
	if (len < SROCE_UDP_HLEN || SROCE_IPV6_HLEN + len > skb->len ||
	    uh->check || ntohs(uh->len) != len)
		return 0;
	/* Sources the IPv6 input drops (RFC 4291 2.5.3, 2.7): left to it. */
	if (ipv6_addr_is_multicast(&ip6h->saddr) ||
	    ipv6_addr_loopback(&ip6h->saddr))
		return 0;
	/* An address of @ndev itself, its duplicate detection done */
	if (!ipv6_chk_addr_and_flags(dev_net(ndev), &ip6h->daddr, ndev, false,
				     1, IFA_F_TENTATIVE))
		return 0;
	return SROCE_IPV6_HLEN + len;
#else
	return 0;
#endif
}

static struct sk_buff *sroce_udp_gro_receive(struct sock *sk,
					     struct list_head *head,
					     struct sk_buff *skb)
{
	struct net_device *ndev = skb->dev;
	bool v6 = sk->sk_family == AF_INET6;
	struct sroce_dev *sdev;
	unsigned int len;

	/* udp_gro_receive() made sure that no tunnel is around it */
	if (!READ_ONCE(sroce_rx_direct) ||
	    skb->protocol != htons(v6 ? ETH_P_IPV6 : ETH_P_IP) ||
	    skb_network_offset(skb) || !skb_mac_header_was_set(skb) ||
	    skb->pkt_type != PACKET_HOST || skb_vlan_tag_present(skb) ||
	    secpath_exists(skb) ||
	    !ether_addr_equal(eth_hdr(skb)->h_dest, ndev->dev_addr))
		goto generic;
	/* GRO found @sk in @ndev's namespace, as the socket path checks it */
	sdev = sroce_dev_by_ndev_rcu(ndev);
	if (!sdev || !net_eq(sock_net(sk), sdev->net) ||
	    sroce_rx_direct_hooks(ndev, v6))
		goto generic;
	len = v6 ? sroce_rx_direct_ipv6(ndev, skb) :
		   sroce_rx_direct_ipv4(ndev, skb);
	if (!len)
		goto generic;

	/* Ours from here: GRO does not touch a packet it calls consumed. */
	if (pskb_trim_rcsum(skb, len)) {
		sroce_cnt_add(sdev, SROCE_CNT_RX_NOMEM, 1);
		kfree_skb(skb);
		return ERR_PTR(-EINPROGRESS);
	}
	skb_reset_network_header(skb);
	skb_set_transport_header(skb, v6 ? SROCE_IPV6_HLEN : SROCE_IPV4_HLEN);
	skb_orphan(skb);
	nf_reset_ct(skb);
	sroce_cnt_add(sdev, SROCE_CNT_RX_DIRECT, 1);
	sroce_rx(sdev, skb);
	return ERR_PTR(-EINPROGRESS);

generic:
	NAPI_GRO_CB(skb)->flush = 1;	/* no GRO, as without this hook */
	return NULL;
}

/* ---------------------------------------------------------------- transmit */

#define SROCE_LO_QUEUE_MAX	2048	/* looped-back packets not yet received */

/*
 * Packets are built linear: headroom for the link layer, IP and UDP headers,
 * BTH and extension headers, payload, pad and ICRC. The caller fills in the
 * transport headers and the payload between sroce_tx_alloc() and
 * sroce_tx_send(); sroce_tx_send() writes the IP and UDP headers and the
 * ICRC, then hands the packet to the IP layer (or, for our own addresses,
 * to the loopback queue).
 */
int sroce_tx_alloc(struct sroce_dev *sdev, const struct sroce_av *av,
		   unsigned int hdr_len, unsigned int payload_len,
		   struct sroce_txpkt *tp)
{
	unsigned int iph = av->ipver == 4 ? SROCE_IPV4_HLEN : SROCE_IPV6_HLEN;
	unsigned int pad = sroce_pad_len(payload_len);
	unsigned int room = LL_RESERVED_SPACE(sdev->ndev);
	struct sk_buff *skb;

	skb = alloc_skb(room + iph + SROCE_UDP_HLEN + hdr_len + payload_len +
			pad + SROCE_ICRC_LEN, GFP_ATOMIC);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, room);
	skb_reset_network_header(skb);
	skb_put(skb, iph + SROCE_UDP_HLEN);
	skb_set_transport_header(skb, iph);
	tp->bth = skb_put_zero(skb, hdr_len);
	tp->payload = skb_put(skb, payload_len);
	skb_put_zero(skb, pad + SROCE_ICRC_LEN);
	sroce_bth_set_pad(tp->bth, pad);
	tp->skb = skb;
	tp->qp = NULL;
	tp->dst = NULL;
	tp->tos = sroce_cc_tos(sdev, av);
	tp->prio = av->sl;
	return 0;
}

/*
 * Transmit accounting. A QP's packets are charged to a kernel UDP socket of
 * its own, never bound (it receives nothing), the way any socket's packets
 * are: skb_set_owner_w() adds the skb's truesize to sk_wmem_alloc, and the
 * stack's sock_wfree() takes it off when the packet is freed or orphaned
 * (veth on forwarding, netem on enqueue). The packets point at the socket,
 * not at the QP, and the socket holds no code or data of sroce's once
 * destroy_qp has given its callback back: sock_release() leaves it alive
 * until its last packet is gone. So neither destroy_qp nor module unload
 * waits for packets that a stalled transmit queue may hold for ever (a
 * virtio-net ring the host stopped reading, a qdisc shaping to nothing).
 *
 * Back-pressure. Queues between us and the wire drop when they overflow,
 * and fq_codel does so without telling the sender, so a QP holds back
 * while its packets in flight take SROCE_TX_HIGH times its largest packet
 * (tx_unit, a truesize) and is kicked again by the socket's write_space
 * callback, which sock_wfree() calls for every packet freed, below
 * SROCE_TX_LOW times. A packet orphaned without sock_wfree() (netem's
 * skb_orphan_partial()) leaves the count without a callback; that happens
 * when it is queued, in the sender's own call, so no stalled sender waits
 * for it.
 */
static void sroce_tx_write_space(struct sock *sk)
{
	struct sroce_qp_slot *slot;
	struct sroce_qp *qp;

	smp_mb();	/* sk_wmem_alloc down before tx_stalled is read */
	rcu_read_lock();
	slot = rcu_dereference_sk_user_data(sk);
	if (!slot || !refcount_inc_not_zero(&slot->ref)) {
		rcu_read_unlock();	/* destroy_qp is past its wait */
		return;
	}
	rcu_read_unlock();
	qp = slot->qp;
	if (READ_ONCE(qp->tx_stalled) && !READ_ONCE(qp->dead) &&
	    sk_wmem_alloc_get(sk) <= SROCE_TX_LOW * READ_ONCE(qp->tx_unit)) {
		if (test_and_clear_bit(SROCE_TX_WAIT_REQ, &qp->tx_stalled))
			queue_work(sroce_wq, &qp->req.work);
		if (test_and_clear_bit(SROCE_TX_WAIT_RESP, &qp->tx_stalled))
			queue_delayed_work(sroce_wq, &qp->resp.work, 0);
	}
	sroce_qp_put(qp);
}

/*
 * Has @qp reached its limit of packets in flight? If so, @who is marked
 * stalled and will be kicked when enough of them are gone. Only @who's own
 * mark is taken back: the other sender of the QP may be waiting too.
 */
bool sroce_tx_full(struct sroce_qp *qp, enum sroce_tx_waiter who)
{
	struct sock *sk = qp->tx_sock->sk;
	int high = SROCE_TX_HIGH * READ_ONCE(qp->tx_unit);

	if (sk_wmem_alloc_get(sk) < high)
		return false;
	set_bit(who, &qp->tx_stalled);
	smp_mb__after_atomic();	/* pairs with sroce_tx_write_space() */
	if (sk_wmem_alloc_get(sk) < high) {
		clear_bit(who, &qp->tx_stalled);
		return false;
	}
	return true;
}

static void sroce_tx_account(struct sroce_txpkt *tp)
{
	struct sroce_qp *qp = tp->qp;

	if (!qp)
		return;
	if (unlikely(tp->skb->truesize > READ_ONCE(qp->tx_unit)))
		WRITE_ONCE(qp->tx_unit, tp->skb->truesize);
	skb_set_owner_w(tp->skb, qp->tx_sock->sk);
}

/* At create_qp, in process context. */
int sroce_tx_sock_create(struct sroce_qp *qp)
{
	struct sock *sk;
	int err;

	err = sock_create_kern(qp->sdev->net, AF_INET, SOCK_DGRAM, IPPROTO_UDP,
			       &qp->tx_sock);
	if (err)
		return err;
	/* Any positive value: the first packet sets the real one. */
	qp->tx_unit = 1;
	qp->tx_stalled = 0;
	sk = qp->tx_sock->sk;
	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, qp->slot);
	qp->tx_write_space = sk->sk_write_space;
	WRITE_ONCE(sk->sk_write_space, sroce_tx_write_space);
	write_unlock_bh(&sk->sk_callback_lock);
	return 0;
}

/*
 * At destroy_qp, before it drops the QP's own reference: packets freed
 * later call the socket's own callback, and one of ours already running
 * holds a reference (or fails to take one) through the QP's slot.
 */
void sroce_tx_sock_detach(struct sroce_qp *qp)
{
	struct sock *sk = qp->tx_sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, NULL);
	WRITE_ONCE(sk->sk_write_space, qp->tx_write_space);
	write_unlock_bh(&sk->sk_callback_lock);
}

/* Once the QP sends nothing more: its packets in flight keep the socket. */
void sroce_tx_sock_release(struct sroce_qp *qp)
{
	sock_release(qp->tx_sock);
	qp->tx_sock = NULL;
}

static int sroce_tx_route4(struct sroce_dev *sdev, const struct sroce_av *av,
			   struct dst_cache *dc, struct sk_buff *skb)
{
	struct flowi4 fl4 = {
		.flowi4_oif = av->ifindex ?: sdev->ndev->ifindex,
		.flowi4_tos = RT_TOS(av->tclass),
		.flowi4_proto = IPPROTO_UDP,
		.daddr = av->daddr.s6_addr32[3],
		.saddr = av->saddr.s6_addr32[3],
	};
	struct rtable *rt;
	__be32 saddr;

	if (dc) {
		rt = dst_cache_get_ip4(dc, &saddr);
		if (rt) {
			skb_dst_set(skb, &rt->dst);
			return 0;
		}
	}
	rt = ip_route_output_key(sdev->net, &fl4);
	if (IS_ERR(rt))
		return PTR_ERR(rt);
	if (dc)
		dst_cache_set_ip4(dc, &rt->dst, fl4.saddr);
	skb_dst_set(skb, &rt->dst);
	return 0;
}

static int sroce_tx_route6(struct sroce_dev *sdev, const struct sroce_av *av,
			   struct dst_cache *dc, struct sk_buff *skb)
{
	struct flowi6 fl6 = {
		.flowi6_oif = av->ifindex ?: sdev->ndev->ifindex,
		.flowi6_proto = IPPROTO_UDP,
		.daddr = av->daddr,
		.saddr = av->saddr,
	};
	struct dst_entry *dst;
	struct in6_addr saddr;

	if (!IS_ENABLED(CONFIG_IPV6))
		return -EAFNOSUPPORT;
	if (dc) {
		dst = dst_cache_get_ip6(dc, &saddr);
		if (dst) {
			skb_dst_set(skb, dst);
			return 0;
		}
	}
	dst = ip6_route_output(sdev->net, NULL, &fl6);
	if (dst->error) {
		int err = dst->error;

		dst_release(dst);
		return err;
	}
	if (dc)
		dst_cache_set_ip6(dc, dst, &fl6.saddr);
	skb_dst_set(skb, dst);
	return 0;
}

/*
 * Route @skb to @av, through @dc when the caller has one. The cache is per
 * CPU: bottom halves stay off while it is used.
 */
static int sroce_tx_route(struct sroce_dev *sdev, const struct sroce_av *av,
			  struct dst_cache *dc, struct sk_buff *skb)
{
	int err;

	local_bh_disable();
	if (av->ipver == 4)
		err = sroce_tx_route4(sdev, av, dc, skb);
	else
		err = sroce_tx_route6(sdev, av, dc, skb);
	local_bh_enable();
	return err;
}

/*
 * One transmit queue per QP. Our packets have no socket, so the stack picks
 * a queue for each: by the sending CPU where the device has an XPS map, else
 * by the flow hash. A QP sends from the process that rang its doorbell and
 * from softirq on whichever CPU a response or request came in, so on a
 * multi-queue NIC its packets would take several queues and could overtake
 * each other on the wire (a sequence NAK and a resend at the receiver). Its
 * own hash, and a CPU of its own for XPS, give every packet of the QP the
 * same queue; different QPs still spread over the queues.
 */
static void sroce_tx_pick_queue(struct sk_buff *skb, const struct sroce_qp *qp)
{
	skb_set_hash(skb, qp->tx_hash, PKT_HASH_TYPE_L4);
#ifdef CONFIG_XPS
	/* netdev_core_pick_tx() keeps a sender_cpu that is set */
	skb->sender_cpu = qp->tx_cpu + 1;
#endif
}

/**
 * sroce_tx_send - finish a packet and send it
 * @sdev: the device
 * @av: where to
 * @sport: UDP source port
 * @tp: from sroce_tx_alloc(), transport headers and payload filled in
 *
 * Consumes the skb in every case. Callable in any context but hard IRQ.
 *
 * Return: 0 if the packet was handed on (not a promise of delivery),
 * -ENOBUFS if the transmit queue was full (the packet is gone: send it
 * again later), or another negative error if it could not be routed or
 * can never pass (larger than the route's MTU, refused by netfilter):
 * a lost packet, as on a wire that drops it.
 */
int sroce_tx_send(struct sroce_dev *sdev, const struct sroce_av *av, u16 sport,
		  struct sroce_txpkt *tp)
{
	struct sk_buff *skb = tp->skb;
	u8 *ip = skb_network_header(skb);
	unsigned int len = skb->len;
	unsigned int iph = av->ipver == 4 ? SROCE_IPV4_HLEN : SROCE_IPV6_HLEN;
	struct udphdr *uh = (struct udphdr *)(ip + iph);
	u32 icrc;
	int err;

	uh->source = htons(sport);
	uh->dest = htons(SROCE_UDP_PORT);
	uh->len = htons(len - iph);
	uh->check = 0;

	if (av->ipver == 4) {
		struct iphdr *h = (struct iphdr *)ip;

		h->version = 4;
		h->ihl = 5;
		h->tos = tp->tos;
		h->tot_len = htons(len);
		h->id = 0;
		h->frag_off = htons(IP_DF);
		h->ttl = av->hop_limit;
		h->protocol = IPPROTO_UDP;
		h->check = 0;
		h->saddr = av->saddr.s6_addr32[3];
		h->daddr = av->daddr.s6_addr32[3];
		skb->protocol = htons(ETH_P_IP);
	} else {
		struct ipv6hdr *h = (struct ipv6hdr *)ip;

		ip6_flow_hdr(h, tp->tos, htonl(av->flow_label));
		h->payload_len = htons(len - iph);
		h->nexthdr = IPPROTO_UDP;
		h->hop_limit = av->hop_limit;
		h->saddr = av->saddr;
		h->daddr = av->daddr;
		skb->protocol = htons(ETH_P_IPV6);
	}

	icrc = sroce_icrc_compute(ip, av->ipver, len - SROCE_ICRC_LEN);
	sroce_icrc_put(ip + len - SROCE_ICRC_LEN, icrc);

	if (av->loopback) {
		if (skb_queue_len(&sdev->lo_queue) >= SROCE_LO_QUEUE_MAX) {
			sroce_cnt_inc(sdev, SROCE_CNT_TX_ERR);
			kfree_skb(skb);
			return -ENOBUFS;
		}
		if (av->ipver == 4)
			ip_send_check((struct iphdr *)ip);
		skb->dev = sdev->ndev;
		/*
		 * A GID of a VLAN: the receiving end reports the VLAN in UD
		 * completions, as for a packet that came in through it.
		 */
		if (av->vlan)
			__vlan_hwaccel_put_tag(skb, htons(ETH_P_8021Q),
					       av->vlan_id);
		sroce_tx_account(tp);
		skb_queue_tail(&sdev->lo_queue, skb);
		tasklet_schedule(&sdev->lo_tasklet);
		sroce_cnt_inc(sdev, SROCE_CNT_TX_PACKETS);
		sroce_cnt_add_bh(sdev, SROCE_CNT_TX_BYTES, len);
		return 0;
	}

	/*
	 * A netdev moving to another namespace unregisters the device, but
	 * not at once: until then it has no route, not even one of the new
	 * namespace.
	 */
	if (!net_eq(dev_net(sdev->ndev), sdev->net))
		err = -ENETUNREACH;
	else
		err = sroce_tx_route(sdev, av, tp->dst, skb);
	if (err) {
		sroce_cnt_inc(sdev, SROCE_CNT_TX_ERR);
		kfree_skb(skb);
		return err;
	}
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	skb->ip_summed = CHECKSUM_NONE;
	/* The egress QoS map of a VLAN netdev makes this the PCP. */
	skb->priority = tp->prio;
	if (tp->qp)
		sroce_tx_pick_queue(skb, tp->qp);
	sroce_tx_account(tp);
	if (av->ipver == 4)
		err = ip_local_out(sdev->net, NULL, skb);
	else
		err = ip6_local_out(sdev->net, NULL, skb);
	/*
	 * A full queue (qdisc or device) drops the packet and says so: tell
	 * the caller, who holds back and tries again a little later rather
	 * than losing a whole window to retransmission. A packet larger than
	 * the route's MTU (the netdev's or a route's shrunk under the QP; the
	 * DF bit is set and IPv6 does not fragment) or one netfilter drops
	 * would fail the same way every time: that one is lost, so that the
	 * transport's timers and limits end the wait instead of a hold.
	 */
	if (net_xmit_eval(err)) {
		sroce_cnt_inc(sdev, SROCE_CNT_TX_ERR);
		return err == -EMSGSIZE || err == -EPERM ? err : -ENOBUFS;
	}
	sroce_cnt_inc(sdev, SROCE_CNT_TX_PACKETS);
	sroce_cnt_add_bh(sdev, SROCE_CNT_TX_BYTES, len);
	return 0;
}

/* Our own packets, received in softirq like any other. */
static void sroce_lo_tasklet(struct tasklet_struct *t)
{
	struct sroce_dev *sdev = from_tasklet(sdev, t, lo_tasklet);
	struct sk_buff *skb;
	unsigned int budget = 64;

	rcu_read_lock();
	while (budget-- && (skb = skb_dequeue(&sdev->lo_queue))) {
		/*
		 * On the wire now: the sender's transmit accounting ends
		 * here, not when a receiver that queues the packet frees it
		 * (destroy_qp of the sender must not wait for that).
		 */
		skb_orphan(skb);
		skb->dev = sdev->ndev;
		sroce_rx(sdev, skb);
	}
	rcu_read_unlock();
	if (!skb_queue_empty(&sdev->lo_queue))
		tasklet_schedule(&sdev->lo_tasklet);
}

void sroce_net_init_dev(struct sroce_dev *sdev)
{
	skb_queue_head_init(&sdev->lo_queue);
	tasklet_setup(&sdev->lo_tasklet, sroce_lo_tasklet);
}

/* After the last QP is gone: nothing queues loopback packets any more. */
void sroce_net_fini_dev(struct sroce_dev *sdev)
{
	tasklet_kill(&sdev->lo_tasklet);
	skb_queue_purge(&sdev->lo_queue);
}

/* ----------------------------------------------------------------- sockets */

/* A namespace's port 4791 sockets and their users, in its net_generic(). */
struct sroce_net {
	struct socket		*sock4;		/* sroce_net_lock */
	struct socket		*sock6;		/* sroce_net_lock */
	unsigned int		users;		/* sroce_net_lock */
};

static unsigned int sroce_net_id __read_mostly;
static DEFINE_MUTEX(sroce_net_lock);

static int sroce_udp_open(struct net *net, int family, struct socket **sockp)
{
	struct udp_tunnel_sock_cfg tcfg = {
		.encap_type = 1,
		.encap_rcv = sroce_udp_encap_rcv,
		.gro_receive = sroce_udp_gro_receive,
	};
	struct udp_port_cfg cfg = {
		.family = family,
		.local_udp_port = htons(SROCE_UDP_PORT),
	};
	struct socket *sock;
	int err;

	if (family == AF_INET6) {
		cfg.local_ip6 = in6addr_any;
		cfg.ipv6_v6only = 1;
		/*
		 * RoCE v2 senders commonly leave the UDP checksum zero, also
		 * over IPv6; the ICRC protects the packet.
		 */
		cfg.use_udp6_rx_checksums = 0;
	} else {
		cfg.local_ip.s_addr = htonl(INADDR_ANY);
	}

	err = udp_sock_create(net, &cfg, &sock);
	if (err)
		return err;
	setup_udp_tunnel_sock(net, sock, &tcfg);
	*sockp = sock;
	return 0;
}

static void sroce_udp_close_all(struct sroce_net *sn)
{
	if (sn->sock6)
		udp_tunnel_sock_release(sn->sock6);
	if (sn->sock4)
		udp_tunnel_sock_release(sn->sock4);
	sn->sock6 = NULL;
	sn->sock4 = NULL;
	/* Receives that found a socket before it was unhashed are done. */
	synchronize_rcu();
}

/**
 * sroce_net_get - take a reference on a namespace's port 4791 sockets
 * @net: the namespace, alive (the caller holds a reference on it)
 * @name: the device being created, for the log
 *
 * Opens the sockets for the first user in @net.
 *
 * Return: 0, -EADDRINUSE if another RoCE v2 device has the port in @net,
 * or another negative error.
 */
int sroce_net_get(struct net *net, const char *name)
{
	struct sroce_net *sn = net_generic(net, sroce_net_id);
	int err = 0;

	mutex_lock(&sroce_net_lock);
	if (sn->users) {
		sn->users++;
		goto out;
	}

	err = sroce_udp_open(net, AF_INET, &sn->sock4);
	if (!err && IS_ENABLED(CONFIG_IPV6)) {
		err = sroce_udp_open(net, AF_INET6, &sn->sock6);
		/* IPv6 disabled at boot: IPv4 only. */
		if (err == -EAFNOSUPPORT)
			err = 0;
	}
	if (err) {
		if (err == -EADDRINUSE)
			pr_info("cannot create %s: UDP port %u is in use (another RoCE v2 device, e.g. rdma_rxe, is loaded)\n",
				name, SROCE_UDP_PORT);
		else
			pr_info("cannot create %s: UDP port %u socket: error %d\n",
				name, SROCE_UDP_PORT, err);
		sroce_udp_close_all(sn);
		goto out;
	}
	sn->users = 1;
out:
	mutex_unlock(&sroce_net_lock);
	return err;
}

/* Drop a reference taken by sroce_net_get(); the last one closes. */
void sroce_net_put(struct net *net)
{
	struct sroce_net *sn = net_generic(net, sroce_net_id);

	mutex_lock(&sroce_net_lock);
	if (!--sn->users)
		sroce_udp_close_all(sn);
	mutex_unlock(&sroce_net_lock);
}

/*
 * A namespace goes away (or the module does). Its netdevs are gone from it
 * already; the devices that belonged to it are unregistered, and their
 * last put closes the sockets.
 */
static void __net_exit sroce_net_exit(struct net *net)
{
	sroce_forget_devs(net);
}

static struct pernet_operations sroce_net_ops = {
	.exit = sroce_net_exit,
	.id = &sroce_net_id,
	.size = sizeof(struct sroce_net),
};

int sroce_net_register(void)
{
	return register_pernet_subsys(&sroce_net_ops);
}

void sroce_net_unregister(void)
{
	unregister_pernet_subsys(&sroce_net_ops);
}
