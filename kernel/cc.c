// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - congestion control as RoCE v2 NICs do it: ECN, CNPs and the DCQCN
 * rate limiter (Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM 2015), with the parameters and defaults of
 * ConnectX adapters.
 *
 * ECN
 * ---
 * With ecn_enable, every packet but a CNP leaves ECN-capable, ECT(0), in the
 * low two bits of the QP's traffic class (its DSCP is the upper six). A
 * switch queue that fills marks such packets CE instead of dropping them.
 * The ICRC does not cover the traffic class, so marking keeps it valid.
 *
 * Notification point (NP)
 * -----------------------
 * A valid packet that arrives with CE on an RC or UC QP, from the QP's peer,
 * makes the QP send a CNP to the peer QP: BTH opcode 0x81 with BECN set,
 * PSN 0, 16 reserved zero bytes, ICRC; not ECN-capable, with DSCP
 * np_cnp_dscp and skb->priority np_cnp_prio. A QP sends at most one CNP
 * every np_min_time_between_cnps microseconds. A UD QP answers the source
 * QP and address of a packet with its Q_Key (the GSI QP does not answer).
 *
 * Reaction point (RP)
 * -------------------
 * A CNP for one of our QPs (from its peer, for RC and UC) starts or feeds
 * that QP's rate limiter, which paces what the QP sends: its requester and
 * its RDMA READ responses (sroce_cc_may_send):
 *
 *  - the first CNP starts the limiter at rp_rate_to_set_on_first_cnp, or
 *    at the maximum rate (rp_max_rate, else the netdev's speed), with
 *    alpha = rp_initial_alpha_value;
 *  - alpha is updated every rp_dce_tcp_rtt microseconds: alpha = g *
 *    alpha + (1 - g) if a CNP arrived in the period, alpha = g * alpha if
 *    none did, g = rp_dce_tcp_g / 1024;
 *  - at most once every rp_rate_reduce_monitor_period microseconds a CNP
 *    cuts the rate: target = current, current = current * (1 - alpha /
 *    2^(rp_gd - 10)) (alpha / 2 with the default rp_gd 11), never below
 *    rp_min_dec_fac percent of what it was nor below rp_min_rate;
 *  - every rp_time_reset microseconds and every rp_byte_reset bytes sent
 *    an increase event brings the current rate halfway to the target:
 *    fast recovery while both event counts since the cut are below
 *    rp_threshold, additive increase of the target by rp_ai_rate once
 *    one of them reaches it, hyper increase by rp_hai_rate times the
 *    stage once both have passed it;
 *  - once the current rate is back at the maximum the limiter is off.
 *
 * Timer events and alpha decay are evaluated lazily, when the QP wants to
 * send or a CNP arrives: nothing runs for an idle QP, and a QP without
 * congestion pays one predictable branch per packet. Pacing keeps a time
 * for the next packet; a sender ahead of it stops and a high-resolution
 * timer (softirq) resumes it (the requester directly, READ responses
 * through resp_work), so pacing never spins. Up to SROCE_CC_BURST_NS of
 * credit is kept for timer slack. ACKs, NAKs and atomic responses are not
 * paced: they are small and hold up the peer's requester.
 */

#include <linux/ethtool.h>
#include <linux/kstrtox.h>
#include <linux/math64.h>
#include <net/inet_ecn.h>
#include <rdma/ib_sysfs.h>
#include <rdma/restrack.h>
#include <uapi/rdma/rdma_netlink.h>

#include "sroce.h"

#define SROCE_CC_BURST_NS		(2 * NSEC_PER_MSEC)
#define SROCE_CC_UNKNOWN_LINK_MBPS	100000	/* netdevs without a speed */
#define SROCE_CC_MAX_EVENTS		64	/* increases evaluated at once */
#define SROCE_BTH_BECN			0x40	/* BTH byte 4 */
#define SROCE_CC_RATE_MAX_MBPS		4000000	/* kbit/s fit in 32 bits */

struct sroce_cc_param_info {
	const char *name;
	u32 def, min, max;
};

#define SROCE_CC_P(p, n, d, lo, hi) \
	[SROCE_CC_##p] = { .name = n, .def = d, .min = lo, .max = hi }
#define SROCE_CC_MBPS	SROCE_CC_RATE_MAX_MBPS
#define SROCE_CC_US	10000000	/* 10 s */

/* Names, defaults (those of ConnectX adapters) and ranges. */
static const struct sroce_cc_param_info sroce_cc_info[SROCE_CC_NR] = {
	SROCE_CC_P(ECN_ENABLE, "ecn_enable", 1, 0, 1),
	SROCE_CC_P(NP_ENABLE, "np_enable", 1, 0, 1),
	SROCE_CC_P(NP_MIN_TIME_BETWEEN_CNPS, "np_min_time_between_cnps", 4, 0,
		   SROCE_CC_US),
	SROCE_CC_P(NP_CNP_DSCP, "np_cnp_dscp", 48, 0, 63),
	SROCE_CC_P(NP_CNP_PRIO, "np_cnp_prio", 6, 0, 7),
	SROCE_CC_P(RP_ENABLE, "rp_enable", 1, 0, 1),
	SROCE_CC_P(RP_INITIAL_ALPHA_VALUE, "rp_initial_alpha_value", 1023, 0,
		   1023),
	SROCE_CC_P(RP_DCE_TCP_G, "rp_dce_tcp_g", 1019, 0, 1023),
	SROCE_CC_P(RP_DCE_TCP_RTT, "rp_dce_tcp_rtt", 1, 1, SROCE_CC_US),
	SROCE_CC_P(RP_RATE_REDUCE_MONITOR_PERIOD,
		   "rp_rate_reduce_monitor_period", 4, 0, SROCE_CC_US),
	SROCE_CC_P(RP_GD, "rp_gd", 11, 10, 20),
	SROCE_CC_P(RP_MIN_DEC_FAC, "rp_min_dec_fac", 50, 0, 100),
	SROCE_CC_P(RP_MIN_RATE, "rp_min_rate", 1, 1, SROCE_CC_MBPS),
	SROCE_CC_P(RP_MAX_RATE, "rp_max_rate", 0, 0, SROCE_CC_MBPS),
	SROCE_CC_P(RP_RATE_TO_SET_ON_FIRST_CNP, "rp_rate_to_set_on_first_cnp",
		   0, 0, SROCE_CC_MBPS),
	SROCE_CC_P(RP_TIME_RESET, "rp_time_reset", 300, 1, SROCE_CC_US),
	SROCE_CC_P(RP_BYTE_RESET, "rp_byte_reset", 32767, 0, 1U << 30),
	SROCE_CC_P(RP_THRESHOLD, "rp_threshold", 1, 1, 31),
	SROCE_CC_P(RP_AI_RATE, "rp_ai_rate", 5, 0, SROCE_CC_MBPS),
	SROCE_CC_P(RP_HAI_RATE, "rp_hai_rate", 50, 0, SROCE_CC_MBPS),
};

static u32 sroce_cc(const struct sroce_dev *sdev, enum sroce_cc_param p)
{
	return READ_ONCE(sdev->cc[p]);
}

/* ------------------------------------------------------------------ sysfs */

struct sroce_cc_attr {
	struct ib_port_attribute attr;
	enum sroce_cc_param idx;
};

static ssize_t sroce_cc_show(struct ib_device *ibdev, u32 port,
			     struct ib_port_attribute *attr, char *buf)
{
	const struct sroce_cc_attr *a =
		container_of(attr, struct sroce_cc_attr, attr);

	return sysfs_emit(buf, "%u\n", sroce_cc(to_sdev(ibdev), a->idx));
}

static ssize_t sroce_cc_store(struct ib_device *ibdev, u32 port,
			      struct ib_port_attribute *attr, const char *buf,
			      size_t count)
{
	const struct sroce_cc_attr *a =
		container_of(attr, struct sroce_cc_attr, attr);
	const struct sroce_cc_param_info *info = &sroce_cc_info[a->idx];
	u32 v;
	int err;

	err = kstrtou32(buf, 0, &v);
	if (err)
		return err;
	if (v < info->min || v > info->max)
		return -ERANGE;
	WRITE_ONCE(to_sdev(ibdev)->cc[a->idx], v);
	return count;
}

static struct sroce_cc_attr sroce_cc_attrs[SROCE_CC_NR];
static struct attribute *sroce_cc_attr_ptrs[SROCE_CC_NR + 1];

static const struct attribute_group sroce_cc_group = {
	.name = "cc",
	.attrs = sroce_cc_attr_ptrs,
};

const struct attribute_group *sroce_port_groups[] = {
	&sroce_cc_group,
	NULL,
};

/* Module init, before any device registers. */
void sroce_cc_init(void)
{
	unsigned int i;

	for (i = 0; i < SROCE_CC_NR; i++) {
		struct sroce_cc_attr *a = &sroce_cc_attrs[i];

		a->idx = i;
		a->attr.attr.name = sroce_cc_info[i].name;
		a->attr.attr.mode = 0644;
		a->attr.show = sroce_cc_show;
		a->attr.store = sroce_cc_store;
		sroce_cc_attr_ptrs[i] = &a->attr.attr;
	}
}

void sroce_cc_init_dev(struct sroce_dev *sdev)
{
	unsigned int i;

	for (i = 0; i < SROCE_CC_NR; i++)
		sdev->cc[i] = sroce_cc_info[i].def;
}

/*
 * Under RTNL: the netdev's speed, the limiter's default maximum and what
 * query_port reports (which so takes no RTNL of its own).
 */
void sroce_cc_link_update(struct sroce_dev *sdev, struct net_device *ndev)
{
	struct ethtool_link_ksettings ks;
	u32 speed = 0;

	ASSERT_RTNL();
	if (!__ethtool_get_link_ksettings(ndev, &ks) &&
	    ks.base.speed && ks.base.speed != SPEED_UNKNOWN)
		speed = min_t(u32, ks.base.speed, SROCE_CC_RATE_MAX_MBPS);
	WRITE_ONCE(sdev->speed_mbps, speed);
}

/* ------------------------------------------------------------ ECN, priority */

/*
 * The traffic class of a packet to @av that is not a CNP. Its ECN field is
 * ours whatever the AH says: an AH made from a received packet's GRH
 * (ib_init_ah_attr_from_wc(), rdma-core's ibv_init_ah_from_wc()) carries the
 * codepoint that packet arrived with, and sending back its CE would be a
 * false congestion signal.
 */
u8 sroce_cc_tos(struct sroce_dev *sdev, const struct sroce_av *av)
{
	u8 tos = av->tclass & ~INET_ECN_MASK;

	if (!sroce_cc(sdev, SROCE_CC_ECN_ENABLE))
		return tos;
	return tos | INET_ECN_ECT_0;
}

/* ------------------------------------------------------- reaction point */

static u32 sroce_cc_max_kbps(const struct sroce_dev *sdev)
{
	u32 mbps = sroce_cc(sdev, SROCE_CC_RP_MAX_RATE);

	if (!mbps)
		mbps = READ_ONCE(sdev->speed_mbps) ?: SROCE_CC_UNKNOWN_LINK_MBPS;
	return mbps * 1000;
}

static u32 sroce_cc_min_kbps(const struct sroce_dev *sdev)
{
	return sroce_cc(sdev, SROCE_CC_RP_MIN_RATE) * 1000;
}

/* alpha * (g / 1024)^n, by squaring in 20-bit fixed point. */
static u32 sroce_cc_decay(u32 alpha, u32 g, u64 n)
{
	u64 f = (u64)g << 10, r = 1 << 20;

	while (n && f && r) {
		if (n & 1)
			r = (r * f) >> 20;
		f = (f * f) >> 20;
		n >>= 1;
	}
	if (n)
		r = 0;	/* f reached zero first */
	return (u32)(((u64)alpha * r) >> 20);
}

/* One rate increase event (the timer's or the byte counter's). */
static void sroce_cc_increase(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = qp->sdev;
	struct sroce_cc_qp *cc = &qp->cc;
	u32 f = sroce_cc(sdev, SROCE_CC_RP_THRESHOLD);
	u32 top = sroce_cc_max_kbps(sdev);
	u32 lo = min(cc->t_cnt, cc->bc_cnt), hi = max(cc->t_cnt, cc->bc_cnt);
	u64 rt = cc->rt;

	if (lo > f)		/* hyper increase */
		rt += (u64)(lo - f) * sroce_cc(sdev, SROCE_CC_RP_HAI_RATE) *
		      1000;
	else if (hi >= f)	/* additive increase */
		rt += (u64)sroce_cc(sdev, SROCE_CC_RP_AI_RATE) * 1000;
	/* else fast recovery: the target stays */
	cc->rt = min_t(u64, rt, top);
	cc->rc = (u32)(((u64)cc->rt + cc->rc + 1) / 2);
	/* Within 1 Mb/s of the maximum: the limiter is off. */
	if (cc->rc + 1000 >= top) {
		cc->rc = top;
		cc->rt = top;
		WRITE_ONCE(cc->limited, false);
	}
}

/* Count the rate increase timer's periods up to @now. */
static void sroce_cc_timer_events(struct sroce_qp *qp, u64 now)
{
	struct sroce_cc_qp *cc = &qp->cc;
	u64 period = (u64)sroce_cc(qp->sdev, SROCE_CC_RP_TIME_RESET) *
		     NSEC_PER_USEC;
	u64 n;

	if (now <= cc->inc_ts + period)
		return;
	n = div64_u64(now - cc->inc_ts, period);
	if (n > SROCE_CC_MAX_EVENTS) {
		n = SROCE_CC_MAX_EVENTS;
		cc->inc_ts = now;
	} else {
		cc->inc_ts += n * period;
	}
	while (n-- && cc->limited) {
		cc->t_cnt++;
		sroce_cc_increase(qp);
	}
}

/*
 * The caller holds sq_lock (requester) or rq_lock (READ responses), so the
 * QP is not dead yet if it was not when the caller looked: destroy_qp marks
 * it dead under both locks before it cancels the timer.
 */
bool __sroce_cc_may_send(struct sroce_qp *qp, int who)
{
	struct sroce_cc_qp *cc = &qp->cc;
	u64 now = ktime_get_ns();
	bool ok;

	spin_lock(&cc->lock);
	sroce_cc_timer_events(qp, now);
	ok = !cc->limited || cc->next_tx <= now;
	if (!ok && !qp->dead) {
		set_bit(who, &cc->waiting);
		hrtimer_start(&cc->timer, ns_to_ktime(cc->next_tx),
			      HRTIMER_MODE_ABS_SOFT);
	}
	spin_unlock(&cc->lock);
	return ok;
}

void __sroce_cc_sent(struct sroce_qp *qp, u32 bytes)
{
	struct sroce_cc_qp *cc = &qp->cc;
	u32 reset = sroce_cc(qp->sdev, SROCE_CC_RP_BYTE_RESET);
	u64 now = ktime_get_ns();

	spin_lock(&cc->lock);
	if (!cc->rc)
		goto out;
	if (cc->next_tx + SROCE_CC_BURST_NS < now)
		cc->next_tx = now - SROCE_CC_BURST_NS;
	cc->next_tx += div_u64((u64)bytes * 8 * USEC_PER_SEC, cc->rc);
	if (!reset)
		goto out;
	cc->bytes += bytes;
	if (cc->bytes >= reset) {
		cc->bytes = 0;
		cc->bc_cnt++;
		sroce_cc_increase(qp);
	}
out:
	spin_unlock(&cc->lock);
}

static enum hrtimer_restart sroce_cc_timer_fn(struct hrtimer *t)
{
	struct sroce_qp *qp = container_of(t, struct sroce_qp, cc.timer);
	struct sroce_cc_qp *cc = &qp->cc;

	/* destroy_qp cancels the timer after marking the QP dead */
	if (READ_ONCE(qp->dead))
		return HRTIMER_NORESTART;
	if (test_and_clear_bit(SROCE_CC_WAIT_RESP, &cc->waiting))
		queue_delayed_work(sroce_wq, &qp->resp.work, 0);
	if (test_and_clear_bit(SROCE_CC_WAIT_REQ, &cc->waiting))
		sroce_req_kick(qp);
	return HRTIMER_NORESTART;
}

void sroce_cc_init_qp(struct sroce_qp *qp)
{
	spin_lock_init(&qp->cc.lock);
	hrtimer_init(&qp->cc.timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	qp->cc.timer.function = sroce_cc_timer_fn;
}

/* RESET: the limiter starts over (a stray timer only kicks an idle QP). */
void sroce_cc_reset_locked(struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;

	spin_lock(&cc->lock);
	WRITE_ONCE(cc->limited, false);
	cc->rc = 0;
	cc->rt = 0;
	cc->min_rc = 0;
	cc->alpha = 0;
	cc->cnp_handled = 0;
	cc->cuts = 0;
	spin_unlock(&cc->lock);
	atomic64_set(&cc->tx_bytes, 0);
	atomic64_set(&cc->ce_rcvd, 0);
	atomic64_set(&cc->cnp_sent, 0);
}

/* destroy_qp, once the QP is dead: nothing arms the timer any more. */
void sroce_cc_stop_qp(struct sroce_qp *qp)
{
	hrtimer_cancel(&qp->cc.timer);
}

/* A CNP for @qp, under cc.lock. */
static void sroce_cc_cnp_locked(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = qp->sdev;
	struct sroce_cc_qp *cc = &qp->cc;
	u64 now = ktime_get_ns();
	u32 g = sroce_cc(sdev, SROCE_CC_RP_DCE_TCP_G);
	u32 top = sroce_cc_max_kbps(sdev), floor = sroce_cc_min_kbps(sdev);
	u64 keep, cut, rc, period;
	bool first = !cc->limited;

	cc->cnp_handled++;
	if (first) {
		u32 r = sroce_cc(sdev, SROCE_CC_RP_RATE_TO_SET_ON_FIRST_CNP);

		cc->rc = r ? min_t(u32, r * 1000, top) : top;
		cc->rt = cc->rc;
		cc->min_rc = cc->rc;
		cc->alpha = sroce_cc(sdev, SROCE_CC_RP_INITIAL_ALPHA_VALUE);
		cc->alpha_ts = now;
		cc->next_tx = now;
		WRITE_ONCE(cc->limited, true);
	} else {
		u64 n;

		/*
		 * alpha_ts starts the update period of the last rise: the
		 * periods since then but this one had no CNP. One rise per
		 * period, however many CNPs it has.
		 */
		period = (u64)sroce_cc(sdev, SROCE_CC_RP_DCE_TCP_RTT) *
			 NSEC_PER_USEC;
		n = div64_u64(now - cc->alpha_ts, period);
		sroce_cc_timer_events(qp, now);
		if (n) {
			cc->alpha = sroce_cc_decay(cc->alpha, g, n - 1);
			cc->alpha = min_t(u32, ((cc->alpha * g) >> 10) +
					       1024 - g, 1023);
			cc->alpha_ts += n * period;
		}
		period = (u64)sroce_cc(sdev,
				       SROCE_CC_RP_RATE_REDUCE_MONITOR_PERIOD) *
			 NSEC_PER_USEC;
		if (now - cc->cut_ts < period)
			return;
		if (!cc->limited) {
			/* the pending increases reached the maximum */
			WRITE_ONCE(cc->limited, true);
			cc->next_tx = now;
		}
	}

	rc = cc->rc;
	cut = (rc * cc->alpha) >> sroce_cc(sdev, SROCE_CC_RP_GD);
	keep = div_u64(rc * sroce_cc(sdev, SROCE_CC_RP_MIN_DEC_FAC), 100);
	rc = max(rc > cut ? rc - cut : 0, keep);
	rc = clamp_t(u64, rc, min_t(u32, floor, top), top);
	cc->rt = cc->rc;
	cc->rc = (u32)rc;
	cc->min_rc = min(cc->min_rc, cc->rc);
	cc->cuts++;
	cc->cut_ts = now;
	cc->inc_ts = now;
	cc->t_cnt = 0;
	cc->bc_cnt = 0;
	cc->bytes = 0;
	sroce_cnt_inc(sdev, SROCE_CNT_RP_RATE_CUTS);
}

/*
 * A valid CNP arrived (softirq). It counts as handled if it is for a QP
 * that sends and comes from that QP's peer (RC, UC; a UD QP takes CNPs
 * from anyone, as NICs do), and the reaction point is enabled.
 */
void sroce_cc_rcv_cnp(struct sroce_dev *sdev, const struct sk_buff *skb,
		      const struct sroce_pkt *pkt)
{
	const u8 *ip = skb_network_header(skb);
	const u8 *bth = ip + pkt->bth_off;
	struct sroce_qp *qp;
	bool handled = false;

	if (!sroce_cc(sdev, SROCE_CC_RP_ENABLE) || !sroce_rx_pkey_ok(bth))
		goto out;
	qp = sroce_qp_get(sdev, sroce_bth_dqpn(bth));
	if (!qp)
		goto out;
	spin_lock(&qp->sq_lock);
	/* RTR too: a responder sends READ responses before (or without) RTS */
	if (!qp->dead && !qp->is_gsi &&
	    (qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS ||
	     qp->state == IB_QPS_SQD || qp->state == IB_QPS_SQE) &&
	    (qp->type == IB_QPT_UD || sroce_rx_from_peer(&qp->av, ip, pkt))) {
		spin_lock(&qp->cc.lock);
		sroce_cc_cnp_locked(qp);
		spin_unlock(&qp->cc.lock);
		handled = true;
	}
	spin_unlock(&qp->sq_lock);
	sroce_qp_put(qp);
out:
	sroce_cnt_inc(sdev, handled ? SROCE_CNT_RP_CNP_HANDLED :
				      SROCE_CNT_RP_CNP_IGNORED);
}

/* --------------------------------------------------- notification point */

/*
 * Under rq_lock: a CNP from @qp to QP @dqpn at @av, routed through @dc if
 * given.
 */
static void sroce_cc_cnp_out(struct sroce_qp *qp, const struct sroce_av *av,
			     struct dst_cache *dc, u32 dqpn)
{
	struct sroce_dev *sdev = qp->sdev;
	struct sroce_txpkt tp;

	if (sroce_tx_alloc(sdev, av, SROCE_BTH_LEN + SROCE_CNP_RSVD_LEN, 0,
			   &tp))
		return;
	tp.qp = qp;
	tp.dst = dc;
	sroce_bth_init(tp.bth, SROCE_OP_CNP, SROCE_DEFAULT_PKEY, dqpn, 0);
	tp.bth[4] = SROCE_BTH_BECN;
	tp.tos = sroce_cc(sdev, SROCE_CC_NP_CNP_DSCP) << 2;	/* Not-ECT */
	tp.prio = sroce_cc(sdev, SROCE_CC_NP_CNP_PRIO);
	/* A UD QP has no sport of its own: per destination, as its sends. */
	if (sroce_tx_send(sdev, av, qp->sport ? qp->sport :
			  rdma_get_udp_sport(0, qp->ibqp.qp_num, dqpn), &tp))
		return;
	atomic64_inc(&qp->cc.cnp_sent);
	sroce_cnt_inc(sdev, SROCE_CNT_NP_CNP_SENT);
}

/*
 * A UD QP's CNP goes to the QP that sent the CE-marked packet (DETH source
 * QPN), at the address it came from, out of the netdev it came in on. No
 * route cache: at most one per interval.
 */
static void sroce_cc_cnp_ud(struct sroce_qp *qp, const struct sk_buff *skb,
			    const struct sroce_pkt *pkt, u32 sqpn)
{
	const u8 *ip = skb_network_header(skb);
	struct sroce_av av = {
		.ipver = pkt->ip_version,
		.hop_limit = 64,
		.ifindex = skb->dev ? skb->dev->ifindex : 0,
	};

	if (pkt->ip_version == 4) {
		const struct iphdr *h = (const struct iphdr *)ip;

		ipv6_addr_set_v4mapped(h->saddr, &av.daddr);
		ipv6_addr_set_v4mapped(h->daddr, &av.saddr);
	} else {
		const struct ipv6hdr *h = (const struct ipv6hdr *)ip;

		av.daddr = h->saddr;
		av.saddr = h->daddr;
	}
	sroce_cc_cnp_out(qp, &av, NULL, sqpn);
}

/*
 * A valid packet for @qp arrived with CE (softirq, before the transport
 * sees it): count it, and answer with a CNP unless one left recently.
 * RC and UC answer their peer; UD answers the sender of a packet it would
 * take (its Q_Key), the GSI QP nobody. A packet of another partition (its
 * BTH P_Key) is nobody's: the transport drops it, and it asks for nothing.
 */
void sroce_cc_rcv_ce(struct sroce_qp *qp, const struct sk_buff *skb,
		     const struct sroce_pkt *pkt)
{
	struct sroce_dev *sdev = qp->sdev;
	struct sroce_cc_qp *cc = &qp->cc;
	const u8 *ip = skb_network_header(skb);
	struct sroce_deth deth = {};
	bool ud = qp->type == IB_QPT_UD;
	u64 now, last, gap;

	if (!sroce_rx_pkey_ok(ip + pkt->bth_off))
		return;
	atomic64_inc(&cc->ce_rcvd);
	if (!sroce_cc(sdev, SROCE_CC_NP_ENABLE) || qp->is_gsi)
		return;
	if (ud) {
		if (!sroce_opcode_has(pkt->info, SROCE_HDR_DETH))
			return;
		sroce_deth_decode(ip + pkt->hdr_off[SROCE_HDR_DETH], &deth);
	} else if (qp->type != IB_QPT_RC && qp->type != IB_QPT_UC) {
		return;
	}
	now = ktime_get_ns();
	last = atomic64_read(&cc->np_last);
	gap = (u64)sroce_cc(sdev, SROCE_CC_NP_MIN_TIME_BETWEEN_CNPS) *
	      NSEC_PER_USEC;
	if (last && now - last < gap)
		return;
	spin_lock(&qp->rq_lock);
	if (!qp->dead && (qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS ||
			  qp->state == IB_QPS_SQD || qp->state == IB_QPS_SQE) &&
	    (ud ? deth.qkey == qp->qkey : sroce_rx_from_peer(&qp->av, ip, pkt)) &&
	    atomic64_cmpxchg(&cc->np_last, last, now) == last) {
		if (ud)
			sroce_cc_cnp_ud(qp, skb, pkt, deth.sqpn);
		else
			sroce_cc_cnp_out(qp, &qp->av, &qp->tx_dst,
					 qp->dest_qpn);
	}
	spin_unlock(&qp->rq_lock);
}

/* ------------------------------------------------------------ restrack */

/* Per-QP congestion state in "rdma resource show qp -dd" (qp.c's nest). */
int sroce_cc_fill_res(struct sk_buff *msg, struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;
	u64 tx_bytes, handled, cuts;
	u32 rate, target, min_rate, alpha;

	spin_lock_bh(&cc->lock);
	handled = cc->cnp_handled;
	cuts = cc->cuts;
	rate = cc->limited ? cc->rc / 1000 : 0;
	target = cc->limited ? cc->rt / 1000 : 0;
	min_rate = cc->min_rc / 1000;
	alpha = cc->alpha;
	spin_unlock_bh(&cc->lock);
	tx_bytes = atomic64_read(&cc->tx_bytes);

	if (rdma_nl_put_driver_u64(msg, "tx_bytes", tx_bytes) ||
	    rdma_nl_put_driver_u64(msg, "ecn_ce_rcvd",
				   atomic64_read(&cc->ce_rcvd)) ||
	    rdma_nl_put_driver_u64(msg, "cnp_sent",
				   atomic64_read(&cc->cnp_sent)) ||
	    rdma_nl_put_driver_u64(msg, "cnp_handled", handled) ||
	    rdma_nl_put_driver_u64(msg, "rate_cuts", cuts) ||
	    rdma_nl_put_driver_u32(msg, "rate_mbps", rate) ||
	    rdma_nl_put_driver_u32(msg, "target_mbps", target) ||
	    rdma_nl_put_driver_u32(msg, "min_rate_mbps", min_rate) ||
	    rdma_nl_put_driver_u32(msg, "alpha", alpha))
		return -EMSGSIZE;
	return 0;
}
