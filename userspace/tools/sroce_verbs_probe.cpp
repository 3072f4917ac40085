// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-verbs-probe DEVICE [PORT]
 *
 * Checks which verbs a device's provider implements: the implemented ones must
 * succeed, the not-yet-implemented ones must fail cleanly (NULL or an error
 * code, errno EOPNOTSUPP) without crashing. One line per verb on stdout:
 *
 *   <verb>: ok
 *   <verb>: errno=<N> (<NAME>)
 *
 * followed by "  FAIL: ..." when the outcome is not the expected one, and a
 * final "RESULT: PASS" or "RESULT: FAIL". Exit status 0 only on PASS, 1 on
 * FAIL, 2 on bad usage or an unknown device.
 *
 * As verbs get implemented, move them from Expect::unsupported to
 * Expect::works in the tables below.
 */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fcntl.h>

#include <infiniband/verbs.h>

#include "verbs_harness.h"

namespace {

using sroce_tool::errno_text;

enum class Expect { works, unsupported };

/* Outcome of one verb: 0 for success, else the errno value it reported. */
struct Outcome {
	int err = 0;
};

struct Probe {
	const char *verb;
	Expect expect;
	std::function<Outcome()> run;
};

int failures = 0;

void report(const char *verb, Expect expect, Outcome out)
{
	if (out.err == 0)
		std::printf("%s: ok\n", verb);
	else
		std::printf("%s: %s\n", verb, errno_text(out.err).c_str());

	if (expect == Expect::works && out.err != 0) {
		std::printf("  FAIL: expected success\n");
		failures++;
	} else if (expect == Expect::unsupported && out.err != EOPNOTSUPP) {
		std::printf("  FAIL: expected %s\n", errno_text(EOPNOTSUPP).c_str());
		failures++;
	}
	std::fflush(stdout);
}

void run_all(const std::vector<Probe> &probes)
{
	for (const Probe &p : probes)
		report(p.verb, p.expect, p.run());
}

/*
 * A creating verb: returns an object or NULL with errno set. An object that
 * should not exist yet is destroyed again so the probe can continue.
 */
template <typename T, typename Create, typename Destroy>
Outcome creating(Create create, Destroy destroy)
{
	errno = 0;
	T *obj = create();
	if (!obj)
		return Outcome{errno ? errno : EINVAL};
	destroy(obj);
	return Outcome{0};
}

/* A receive WQ (for RSS) on a fresh CQ, destroyed again. */
Outcome rq_wq(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
	if (!cq)
		return Outcome{errno ? errno : EINVAL};
	Outcome out = creating<struct ibv_wq>(
		[&] {
			struct ibv_wq_init_attr a = {};
			a.wq_type = IBV_WQT_RQ;
			a.max_wr = 16;
			a.max_sge = 1;
			a.pd = pd;
			a.cq = cq;
			return ibv_create_wq(ctx, &a);
		},
		[](struct ibv_wq *wq) { ibv_destroy_wq(wq); });
	ibv_destroy_cq(cq);
	return out;
}

/* CQ moderation (ibv_modify_cq) on a fresh CQ. */
Outcome cq_moderation(struct ibv_context *ctx)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
	if (!cq)
		return Outcome{errno ? errno : EINVAL};
	struct ibv_modify_cq_attr a = {};
	a.attr_mask = IBV_CQ_ATTR_MODERATE;
	a.moderate.cq_count = 4;
	a.moderate.cq_period = 10;
	const int rc = ibv_modify_cq(cq, &a);
	ibv_destroy_cq(cq);
	return Outcome{rc};
}

/*
 * An RC QP (through ibv_create_qp, or ibv_create_qp_ex with the ibv_wr_* API)
 * on a fresh CQ, taken to INIT and queried there, then destroyed.
 */
Outcome rc_qp(struct ibv_context *ctx, struct ibv_pd *pd, uint8_t port, bool ex)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
	if (!cq)
		return Outcome{errno ? errno : EINVAL};

	struct ibv_qp_init_attr_ex a = {};
	a.send_cq = a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
	}
	errno = 0;
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &a);
	int err = qp ? 0 : (errno ? errno : EINVAL);
	if (qp && ex && !ibv_qp_to_qp_ex(qp)) {
		std::printf("  no ibv_qp_ex\n");
		err = EINVAL;
	}
	if (qp && !err) {
		std::printf("  qpn=0x%x max_send_wr=%u max_recv_wr=%u max_inline_data=%u\n",
			    qp->qp_num, a.cap.max_send_wr, a.cap.max_recv_wr,
			    a.cap.max_inline_data);
		sroce_tool::Path path;
		path.port = port;
		err = sroce_tool::qp_to_init(qp, path);
		if (err)
			std::printf("  modify_qp INIT: %s\n", errno_text(err).c_str());
	}
	if (qp && !err) {
		const int state = sroce_tool::qp_state(qp);
		if (state < 0) {
			err = errno;
			std::printf("  query_qp: %s\n", errno_text(err).c_str());
		} else if (state != IBV_QPS_INIT) {
			std::printf("  query_qp: state %d, not INIT\n", state);
			err = EINVAL;
		}
	}
	if (qp) {
		const int d = ibv_destroy_qp(qp);
		if (d && !err)
			err = d;
	}
	ibv_destroy_cq(cq);
	return Outcome{err};
}

} // namespace

int main(int argc, char **argv)
{
	const char *want;
	uint8_t port;
	if (!sroce_tool::parse_device_args(argc, argv, &want, &port))
		return 2;

	bool not_found;
	struct ibv_context *ctx = sroce_tool::open_device(want, &not_found);
	if (not_found)
		return 2;
	report("open_device", Expect::works, Outcome{ctx ? 0 : errno});
	if (!ctx) {
		std::printf("RESULT: FAIL\n");
		return 1;
	}

	struct ibv_pd *pd = nullptr;
	static char buf[4096] __attribute__((aligned(4096)));

	const std::vector<Probe> implemented = {
		{"query_device", Expect::works,
		 [&] {
			 struct ibv_device_attr a = {};
			 const int rc = ibv_query_device(ctx, &a);
			 if (rc == 0)
				 std::printf("  fw_ver=%s vendor_id=0x%x max_qp=%d max_cq=%d max_mr=%d max_pd=%d ports=%u\n",
					     a.fw_ver, a.vendor_id, a.max_qp,
					     a.max_cq, a.max_mr, a.max_pd,
					     a.phys_port_cnt);
			 return Outcome{rc};
		 }},
		{"query_device_ex", Expect::works,
		 [&] {
			 struct ibv_device_attr_ex a = {};
			 return Outcome{ibv_query_device_ex(ctx, nullptr, &a)};
		 }},
		{"query_port", Expect::works,
		 [&] {
			 struct ibv_port_attr a = {};
			 const int rc = ibv_query_port(ctx, port, &a);
			 if (rc == 0)
				 std::printf("  port %u: state=%s active_mtu=%d link_layer=%u gid_tbl_len=%d\n",
					     port, ibv_port_state_str(a.state),
					     a.active_mtu ? 128 << a.active_mtu : 0,
					     a.link_layer, a.gid_tbl_len);
			 return Outcome{rc};
		 }},
		{"alloc_pd", Expect::works,
		 [&] {
			 errno = 0;
			 pd = ibv_alloc_pd(ctx);
			 return Outcome{pd ? 0 : (errno ? errno : EINVAL)};
		 }},
	};
	run_all(implemented);

	if (pd) {
		const std::vector<Probe> objects = {
			{"create_cq", Expect::works,
			 [&] {
				 return creating<struct ibv_cq>(
					 [&] { return ibv_create_cq(ctx, 16, nullptr, nullptr, 0); },
					 [](struct ibv_cq *cq) { ibv_destroy_cq(cq); });
			 }},
			{"create_cq_ex", Expect::works,
			 [&] {
				 return creating<struct ibv_cq_ex>(
					 [&] {
						 struct ibv_cq_init_attr_ex a = {};
						 a.cqe = 16;
						 a.wc_flags = IBV_WC_STANDARD_FLAGS;
						 return ibv_create_cq_ex(ctx, &a);
					 },
					 [](struct ibv_cq_ex *cq) { ibv_destroy_cq(ibv_cq_ex_to_cq(cq)); });
			 }},
			{"reg_mr", Expect::works,
			 [&] {
				 return creating<struct ibv_mr>(
					 [&] {
						 /* int: verbs.h's ibv_reg_mr macro mixes enum types */
						 const int access = IBV_ACCESS_LOCAL_WRITE;
						 return ibv_reg_mr(pd, buf, sizeof(buf), access);
					 },
					 [](struct ibv_mr *mr) { ibv_dereg_mr(mr); });
			 }},
			{"alloc_mw", Expect::works,
			 [&] {
				 return creating<struct ibv_mw>(
					 [&] { return ibv_alloc_mw(pd, IBV_MW_TYPE_1); },
					 [](struct ibv_mw *mw) { ibv_dealloc_mw(mw); });
			 }},
			/* fd -1 with O_CREAT: a new, unshared XRC domain */
			{"open_xrcd", Expect::works,
			 [&] {
				 return creating<struct ibv_xrcd>(
					 [&] {
						 struct ibv_xrcd_init_attr a = {};
						 a.comp_mask = IBV_XRCD_INIT_ATTR_FD |
							       IBV_XRCD_INIT_ATTR_OFLAGS;
						 a.fd = -1;
						 a.oflags = O_CREAT;
						 return ibv_open_xrcd(ctx, &a);
					 },
					 [](struct ibv_xrcd *x) { ibv_close_xrcd(x); });
			 }},
			{"create_srq", Expect::works,
			 [&] {
				 return creating<struct ibv_srq>(
					 [&] {
						 struct ibv_srq_init_attr a = {};
						 a.attr.max_wr = 16;
						 a.attr.max_sge = 1;
						 return ibv_create_srq(pd, &a);
					 },
					 [](struct ibv_srq *srq) { ibv_destroy_srq(srq); });
			 }},
			{"create_qp", Expect::works, [&] { return rc_qp(ctx, pd, port, false); }},
			{"create_qp_ex", Expect::works, [&] { return rc_qp(ctx, pd, port, true); }},
			{"create_ah", Expect::works,
			 [&] {
				 return creating<struct ibv_ah>(
					 [&] {
						 /* Our own address: always resolvable. */
						 union ibv_gid gid = {};
						 if (ibv_query_gid(ctx, port, 0, &gid))
							 std::printf("  query_gid: %s, using ::\n",
								     errno_text(errno).c_str());
						 struct ibv_ah_attr a =
							 sroce_tool::ah_attr_to(port, 0, gid);
						 return ibv_create_ah(pd, &a);
					 },
					 [](struct ibv_ah *ah) { ibv_destroy_ah(ah); });
			 }},
			/* what sroce does not offer (Documentation/userguide.rst) */
			{"alloc_dm", Expect::unsupported,
			 [&] {
				 return creating<struct ibv_dm>(
					 [&] {
						 struct ibv_alloc_dm_attr a = {};
						 a.length = 4096;
						 return ibv_alloc_dm(ctx, &a);
					 },
					 [](struct ibv_dm *dm) { ibv_free_dm(dm); });
			 }},
			{"alloc_td", Expect::unsupported,
			 [&] {
				 return creating<struct ibv_td>(
					 [&] {
						 struct ibv_td_init_attr a = {};
						 return ibv_alloc_td(ctx, &a);
					 },
					 [](struct ibv_td *td) { ibv_dealloc_td(td); });
			 }},
			{"create_wq", Expect::unsupported, [&] { return rq_wq(ctx, pd); }},
			{"modify_cq", Expect::unsupported, [&] { return cq_moderation(ctx); }},
		};
		run_all(objects);

		report("dealloc_pd", Expect::works, Outcome{ibv_dealloc_pd(pd)});
	}

	report("close_device", Expect::works, Outcome{ibv_close_device(ctx)});

	std::printf("RESULT: %s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
