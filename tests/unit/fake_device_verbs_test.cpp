// SPDX-License-Identifier: GPL-2.0
// QPs, SRQs, AHs, extended CQs and XRC through Debian's real libibverbs and the
// provider, against the fake sroce device (fake_uverbs.cpp). Run by
// provider_fake_device_test.sh with the fake sysfs tree and LD_PRELOAD set;
// the fake's command log (SROCE_FAKE_UVERBS_LOG) shows which commands
// reached "the kernel" and with which sizes.
#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

namespace {

/* Lines of the fake's command log, e.g. "cmd=28 in=32 out=4". */
std::vector<std::string> log_lines()
{
	std::vector<std::string> lines;
	const char *path = std::getenv("SROCE_FAKE_UVERBS_LOG");
	if (!path)
		return lines;
	std::ifstream in(path);
	for (std::string l; std::getline(in, l);)
		lines.push_back(l);
	return lines;
}

int count_cmd(const std::vector<std::string> &lines, unsigned cmd, size_t from = 0)
{
	const std::string prefix = "cmd=" + std::to_string(cmd) + " ";
	int n = 0;
	for (size_t i = from; i < lines.size(); i++)
		n += lines[i].rfind(prefix, 0) == 0;
	return n;
}

bool logged(const std::string &line)
{
	for (const std::string &l : log_lines())
		if (l == line)
			return true;
	return false;
}

class FakeDevice : public ::testing::Test {
protected:
	struct ibv_device **list = nullptr;
	struct ibv_context *ctx = nullptr;
	struct ibv_pd *pd = nullptr;
	struct ibv_cq *cq = nullptr;
	std::vector<char> buf = std::vector<char>(4096, 'b');

	/* SROCE_FAKE_UVERBS_BUSY: the fake's send engine never reports idle. */
	const bool busy = std::getenv("SROCE_FAKE_UVERBS_BUSY") != nullptr;

	void SetUp() override
	{
		const char *name = std::getenv("SROCE_FAKE_DEVICE");
		if (!std::getenv("SROCE_FAKE_UVERBS_LOG") || !name)
			GTEST_SKIP() << "run by provider_fake_device_test.sh";
		if (busy != is_busy_test())
			GTEST_SKIP() << (busy ? "needs an idle engine" : "needs a busy engine");
		int n = 0;
		list = ibv_get_device_list(&n);
		ASSERT_NE(list, nullptr);
		for (int i = 0; i < n && !ctx; i++)
			if (std::strcmp(ibv_get_device_name(list[i]), name) == 0)
				ctx = ibv_open_device(list[i]);
		ASSERT_NE(ctx, nullptr) << name;
		pd = ibv_alloc_pd(ctx);
		ASSERT_NE(pd, nullptr);
		cq = ibv_create_cq(ctx, 32, nullptr, nullptr, 0);
		ASSERT_NE(cq, nullptr) << errno;
	}

	static bool is_busy_test()
	{
		const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
		return std::strstr(info->name(), "Busy") != nullptr;
	}

	void TearDown() override
	{
		if (cq) {
			EXPECT_EQ(ibv_destroy_cq(cq), 0);
		}
		if (pd) {
			EXPECT_EQ(ibv_dealloc_pd(pd), 0);
		}
		if (ctx) {
			EXPECT_EQ(ibv_close_device(ctx), 0);
		}
		if (list)
			ibv_free_device_list(list);
	}

	struct ibv_qp *create_qp(ibv_qp_type type, struct ibv_srq *srq = nullptr,
				 int sig_all = 0)
	{
		struct ibv_qp_init_attr a = {};
		a.send_cq = a.recv_cq = cq;
		a.srq = srq;
		a.qp_type = type;
		a.sq_sig_all = sig_all;
		a.cap.max_send_wr = 10;
		a.cap.max_recv_wr = srq ? 0 : 6;
		a.cap.max_send_sge = 2;
		a.cap.max_recv_sge = 2;
		a.cap.max_inline_data = 100;
		struct ibv_qp *qp = ibv_create_qp(pd, &a);
		if (qp) {
			/* The kernel's rounded-up capabilities come back. */
			EXPECT_EQ(a.cap.max_send_wr, 16u);
			EXPECT_GE(a.cap.max_send_sge, 2u);
			EXPECT_GE(a.cap.max_inline_data, 100u);
			if (!srq) {
				EXPECT_EQ(a.cap.max_recv_wr, 8u);
			}
		}
		return qp;
	}

	void to_rts(struct ibv_qp *qp)
	{
		struct ibv_qp_attr a = {};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
		ASSERT_EQ(ibv_modify_qp(qp, &a, mask), 0);
		a.qp_state = IBV_QPS_RTR;
		ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
		a.qp_state = IBV_QPS_RTS;
		ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
		EXPECT_EQ(qp->state, IBV_QPS_RTS);
	}

	/* Polls exactly n completions (the fake completes at the doorbell). */
	std::vector<struct ibv_wc> poll(int n)
	{
		std::vector<struct ibv_wc> wc(n + 1);
		const int got = ibv_poll_cq(cq, n + 1, wc.data());
		EXPECT_EQ(got, n);
		wc.resize(got > 0 ? got : 0);
		return wc;
	}
};

TEST_F(FakeDevice, RcQpLifecycleAndOneDoorbellPerPost)
{
	struct ibv_qp *qp = create_qp(IBV_QPT_RC);
	ASSERT_NE(qp, nullptr) << errno;
	EXPECT_EQ(qp->state, IBV_QPS_RESET);
	EXPECT_EQ(ibv_qp_to_qp_ex(qp), nullptr);
	/* CREATE_QP: 8 + 56 in, 32 core + 56 driver bytes out, no driver input. */
	EXPECT_TRUE(logged("cmd=24 in=64 out=88"));

	struct ibv_sge sge = {.addr = reinterpret_cast<uintptr_t>(buf.data()),
			      .length = 64, .lkey = 1};
	struct ibv_send_wr swr = {};
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	struct ibv_send_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_send(qp, &swr, &bad), EINVAL);	/* still in RESET */

	to_rts(qp);
	struct ibv_qp_attr qa = {};
	struct ibv_qp_init_attr qia = {};
	ASSERT_EQ(ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qia), 0);
	EXPECT_EQ(qa.qp_state, IBV_QPS_RTS);
	EXPECT_EQ(qa.cap.max_send_wr, 16u);
	EXPECT_EQ(qia.send_cq, cq);

	/* Receives never enter the kernel. */
	const size_t before_recv = log_lines().size();
	struct ibv_recv_wr rwr[3] = {};
	for (int i = 0; i < 3; i++) {
		rwr[i].wr_id = 50 + i;
		rwr[i].sg_list = &sge;
		rwr[i].num_sge = 1;
		rwr[i].next = i < 2 ? &rwr[i + 1] : nullptr;
	}
	struct ibv_recv_wr *rbad = nullptr;
	ASSERT_EQ(ibv_post_recv(qp, rwr, &rbad), 0);
	EXPECT_EQ(log_lines().size(), before_recv);

	/* Three sends in one call: one doorbell, three completions. */
	struct ibv_send_wr chain[3];
	for (int i = 0; i < 3; i++) {
		chain[i] = swr;
		chain[i].wr_id = 100 + i;
		chain[i].next = i < 2 ? &chain[i + 1] : nullptr;
	}
	const size_t before = log_lines().size();
	ASSERT_EQ(ibv_post_send(qp, chain, &bad), 0);
	const auto lines = log_lines();
	EXPECT_EQ(count_cmd(lines, IB_USER_VERBS_CMD_POST_SEND, before), 1);
	EXPECT_EQ(lines.size(), before + 1);
	EXPECT_TRUE(logged("cmd=28 in=32 out=4"));
	const auto wc = poll(3);
	for (size_t i = 0; i < wc.size(); i++) {
		EXPECT_EQ(wc[i].wr_id, 100 + i);
		EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS);
		EXPECT_EQ(wc[i].opcode, IBV_WC_SEND);
		EXPECT_EQ(wc[i].byte_len, 64u);
		EXPECT_EQ(wc[i].qp_num, qp->qp_num);
	}

	/* Inline data travels in the slot. */
	swr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	swr.opcode = IBV_WR_RDMA_WRITE;
	sge.length = 100;
	ASSERT_EQ(ibv_post_send(qp, &swr, &bad), 0);
	const auto wc2 = poll(1);
	if (!wc2.empty()) {
		EXPECT_EQ(wc2[0].status, IBV_WC_SUCCESS);
		EXPECT_EQ(wc2[0].opcode, IBV_WC_RDMA_WRITE);
		EXPECT_EQ(wc2[0].byte_len, 100u);
	}

	/* Unsignaled work completes silently but frees its slots. */
	swr.send_flags = 0;
	swr.opcode = IBV_WR_SEND;
	for (int i = 0; i < 40; i++)
		ASSERT_EQ(ibv_post_send(qp, &swr, &bad), 0) << i;
	poll(0);

	EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

/* Run with SROCE_FAKE_UVERBS_BUSY set: the WQEs are published, no doorbell. */
TEST_F(FakeDevice, BusyEngineGetsNoDoorbell)
{
	struct ibv_qp *qp = create_qp(IBV_QPT_RC);
	ASSERT_NE(qp, nullptr) << errno;
	to_rts(qp);
	struct ibv_send_wr swr = {};
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	struct ibv_send_wr *bad = nullptr;
	const size_t before = log_lines().size();
	for (int i = 0; i < 16; i++)
		ASSERT_EQ(ibv_post_send(qp, &swr, &bad), 0) << i;
	/* Nobody consumed them: the queue is full now. */
	EXPECT_EQ(ibv_post_send(qp, &swr, &bad), ENOMEM);
	EXPECT_EQ(log_lines().size(), before);
	poll(0);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST_F(FakeDevice, SignalAllQp)
{
	struct ibv_qp *qp = create_qp(IBV_QPT_UC, nullptr, 1);
	ASSERT_NE(qp, nullptr) << errno;
	to_rts(qp);
	struct ibv_send_wr swr = {};
	swr.wr_id = 7;
	swr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	swr.imm_data = htonl(1);
	struct ibv_send_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_send(qp, &swr, &bad), 0);
	const auto wc = poll(1);
	if (!wc.empty()) {
		EXPECT_EQ(wc[0].wr_id, 7u);
	}
	swr.opcode = IBV_WR_RDMA_READ;		/* not on UC */
	EXPECT_EQ(ibv_post_send(qp, &swr, &bad), EINVAL);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST_F(FakeDevice, UdQpWithAddressHandle)
{
	struct ibv_ah_attr aa = {};
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.hop_limit = 64;
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);
	ASSERT_NE(ah, nullptr) << errno;
	/* CREATE_AH: 4 core + 8 driver bytes out. */
	EXPECT_TRUE(logged("cmd=5 in=64 out=12"));

	struct ibv_qp *qp = create_qp(IBV_QPT_UD);
	ASSERT_NE(qp, nullptr) << errno;
	to_rts(qp);
	struct ibv_sge sge = {.addr = reinterpret_cast<uintptr_t>(buf.data()),
			      .length = 16, .lkey = 1};
	struct ibv_send_wr swr = {};
	swr.wr_id = 9;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND_WITH_IMM;
	swr.send_flags = IBV_SEND_SIGNALED;
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = 0x1234;
	swr.wr.ud.remote_qkey = 0x11111111;
	struct ibv_send_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_send(qp, &swr, &bad), 0);
	const auto wc = poll(1);
	if (!wc.empty()) {
		EXPECT_EQ(wc[0].wr_id, 9u);
		/* The fake fails UD WQEs whose ah_num is not a live AH's. */
		EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
	}
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	EXPECT_EQ(ibv_destroy_ah(ah), 0);

	aa.is_global = 0;	/* the fake, like ib_core for RoCE, wants a GRH */
	errno = 0;
	EXPECT_EQ(ibv_create_ah(pd, &aa), nullptr);
	EXPECT_EQ(errno, EINVAL);
}

TEST_F(FakeDevice, SrqSharedByAQp)
{
	struct ibv_srq_init_attr sa = {};
	sa.attr.max_wr = 5;
	sa.attr.max_sge = 2;
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	ASSERT_NE(srq, nullptr) << errno;
	EXPECT_EQ(sa.attr.max_wr, 8u);
	/* CREATE_SRQ: 16 core + 32 driver bytes out. */
	EXPECT_TRUE(logged("cmd=32 in=40 out=48"));

	struct ibv_srq_attr q = {};
	ASSERT_EQ(ibv_query_srq(srq, &q), 0);
	EXPECT_EQ(q.max_wr, 8u);
	q.srq_limit = 2;
	EXPECT_EQ(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT), 0);
	ASSERT_EQ(ibv_query_srq(srq, &q), 0);
	EXPECT_EQ(q.srq_limit, 2u);
	/* A resize carries the address for the new ring's layout (8 driver
	 * bytes); the fake refuses it and the SRQ keeps its ring. */
	q.max_wr = 64;
	EXPECT_EQ(ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR), EINVAL);
	EXPECT_TRUE(logged("cmd=33 in=32 out=0"));

	struct ibv_qp *qp = create_qp(IBV_QPT_RC, srq);
	ASSERT_NE(qp, nullptr) << errno;

	const size_t before = log_lines().size();
	struct ibv_sge sge = {.addr = reinterpret_cast<uintptr_t>(buf.data()),
			      .length = 16, .lkey = 1};
	struct ibv_recv_wr rwr = {};
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	struct ibv_recv_wr *bad = nullptr;
	int posted = 0;
	while (ibv_post_srq_recv(srq, &rwr, &bad) == 0)
		posted++;
	EXPECT_EQ(posted, 8);
	EXPECT_EQ(bad, &rwr);
	EXPECT_EQ(ibv_post_recv(qp, &rwr, &bad), EINVAL);	/* no RQ of its own */
	EXPECT_EQ(log_lines().size(), before);

	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

TEST_F(FakeDevice, ExtendedQpAndCq)
{
	struct ibv_cq_init_attr_ex ca = {};
	ca.cqe = 16;
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(ctx, &ca);
	ASSERT_NE(cqx, nullptr) << errno;

	struct ibv_qp_init_attr_ex a = {};
	a.send_cq = a.recv_cq = ibv_cq_ex_to_cq(cqx);
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 4;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
		      IBV_QP_INIT_ATTR_CREATE_FLAGS;	/* with no flags: accepted */
	a.pd = pd;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &a);
	ASSERT_NE(qp, nullptr) << errno;
	EXPECT_EQ(a.cap.max_send_wr, 4u);
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
	ASSERT_NE(qpx, nullptr);

	to_rts(qp);

	const size_t before = log_lines().size();
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, reinterpret_cast<uintptr_t>(buf.data()), 10);
	qpx->wr_id = 2;
	ibv_wr_rdma_write(qpx, 5, 0x1000);
	ibv_wr_set_inline_data(qpx, buf.data(), 20);
	qpx->wr_id = 3;
	ibv_wr_atomic_fetch_add(qpx, 5, 0x2000, 1);
	ibv_wr_set_sge(qpx, 1, reinterpret_cast<uintptr_t>(buf.data()), 8);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(count_cmd(log_lines(), IB_USER_VERBS_CMD_POST_SEND, before), 1);

	struct ibv_poll_cq_attr pa = {};
	ASSERT_EQ(ibv_start_poll(cqx, &pa), 0);
	/* Arming inside a poll batch (mlx5 and rxe allow it) must not wait for the batch. */
	EXPECT_EQ(ibv_req_notify_cq(ibv_cq_ex_to_cq(cqx), 0), 0);
	const uint32_t lens[] = {10, 20, 8};
	const ibv_wc_opcode ops[] = {IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_FETCH_ADD};
	for (int i = 0; i < 3; i++) {
		if (i) {
			ASSERT_EQ(ibv_next_poll(cqx), 0) << i;
		}
		EXPECT_EQ(cqx->wr_id, uint64_t(i + 1));
		EXPECT_EQ(cqx->status, IBV_WC_SUCCESS);
		EXPECT_EQ(ibv_wc_read_opcode(cqx), ops[i]);
		EXPECT_EQ(ibv_wc_read_byte_len(cqx), lens[i]);
		EXPECT_EQ(ibv_wc_read_qp_num(cqx), qp->qp_num);
	}
	EXPECT_EQ(ibv_next_poll(cqx), ENOENT);
	ibv_end_poll(cqx);
	EXPECT_EQ(ibv_start_poll(cqx, &pa), ENOENT);

	/* A failed batch posts nothing: 5 WQEs do not fit in 4 slots. */
	ibv_wr_start(qpx);
	for (int i = 0; i < 5; i++) {
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, 1, reinterpret_cast<uintptr_t>(buf.data()), 1);
	}
	EXPECT_EQ(ibv_wr_complete(qpx), ENOMEM);
	EXPECT_EQ(ibv_start_poll(cqx, &pa), ENOENT);

	EXPECT_EQ(ibv_destroy_qp(qp), 0);
	EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);

	/* Unsupported extended requests. */
	a.send_ops_flags = IBV_QP_EX_WITH_TSO;
	errno = 0;
	EXPECT_EQ(ibv_create_qp_ex(ctx, &a), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
	ca.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	EXPECT_EQ(ibv_create_cq_ex(ctx, &ca), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
}

/*
 * XRC through libibverbs: a domain, an XRC SRQ (CREATE_XSRQ), a basic SRQ
 * from create_srq_ex, an XRC_RECV QP (no driver data, no rings) and a
 * second handle on it (OPEN_QP), and an XRC_SEND QP whose WQEs carry the
 * SRQ number (the fake fails those naming no XRC SRQ).
 */
TEST_F(FakeDevice, XrcDomainSrqAndQps)
{
	struct ibv_xrcd_init_attr xa = {};
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	struct ibv_xrcd *xrcd = ibv_open_xrcd(ctx, &xa);
	ASSERT_NE(xrcd, nullptr) << errno;
	EXPECT_EQ(xrcd->context, ctx);
	/* OPEN_XRCD: 8 + 16 in, 4 out; no driver data either way. */
	EXPECT_TRUE(logged("cmd=37 in=24 out=4"));

	struct ibv_srq_init_attr_ex sa = {};
	sa.attr.max_wr = 5;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = pd;
	sa.xrcd = xrcd;
	sa.cq = cq;
	struct ibv_srq *srq = ibv_create_srq_ex(ctx, &sa);
	ASSERT_NE(srq, nullptr) << errno;
	EXPECT_EQ(sa.attr.max_wr, 8u);
	/* CREATE_XSRQ: 8 + 48 in, 16 core + 32 driver bytes out. */
	EXPECT_TRUE(logged("cmd=39 in=56 out=48"));
	uint32_t srqn = 0;
	ASSERT_EQ(ibv_get_srq_num(srq, &srqn), 0);
	EXPECT_GE(srqn, 0x200u);
	struct ibv_sge sge = {.addr = reinterpret_cast<uintptr_t>(buf.data()),
			      .length = 16, .lkey = 1};
	struct ibv_recv_wr rwr = {};
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	struct ibv_recv_wr *rbad = nullptr;
	EXPECT_EQ(ibv_post_srq_recv(srq, &rwr, &rbad), 0);
	EXPECT_EQ(ibv_close_xrcd(xrcd), EBUSY);	/* the SRQ is in it */

	/* A basic SRQ the long way (the CQ bit keeps it off create_srq). */
	struct ibv_srq_init_attr_ex ba = {};
	ba.attr.max_wr = 4;
	ba.attr.max_sge = 1;
	ba.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
	ba.pd = pd;
	ba.cq = cq;
	struct ibv_srq *bsrq = ibv_create_srq_ex(ctx, &ba);
	ASSERT_NE(bsrq, nullptr) << errno;
	uint32_t n = 0;
	EXPECT_EQ(ibv_get_srq_num(bsrq, &n), EOPNOTSUPP);
	EXPECT_EQ(ibv_post_srq_recv(bsrq, &rwr, &rbad), 0);
	EXPECT_EQ(ibv_destroy_srq(bsrq), 0);
	ba.comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
	ba.srq_type = IBV_SRQT_TM;
	errno = 0;
	EXPECT_EQ(ibv_create_srq_ex(ctx, &ba), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);

	/* XRC_RECV: kernel-owned; no CQs, no PD, no queue, no capabilities. */
	struct ibv_qp_init_attr_ex ra = {};
	ra.qp_type = IBV_QPT_XRC_RECV;
	ra.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ra.xrcd = xrcd;
	ra.cap.max_recv_wr = 10;
	const size_t before_tgt = log_lines().size();
	struct ibv_qp *rqp = ibv_create_qp_ex(ctx, &ra);
	ASSERT_NE(rqp, nullptr) << errno;
	EXPECT_EQ(count_cmd(log_lines(), IB_USER_VERBS_CMD_CREATE_QP, before_tgt), 1);
	EXPECT_EQ(ra.cap.max_send_wr, 0u);
	EXPECT_EQ(ra.cap.max_recv_wr, 0u);
	EXPECT_EQ(rqp->pd, nullptr);
	EXPECT_EQ(rqp->send_cq, nullptr);
	EXPECT_EQ(rqp->recv_cq, nullptr);
	EXPECT_EQ(ibv_qp_to_qp_ex(rqp), nullptr);
	to_rts(rqp);
	struct ibv_send_wr swr = {};
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	struct ibv_send_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_send(rqp, &swr, &bad), EINVAL);
	EXPECT_EQ(ibv_post_recv(rqp, &rwr, &rbad), EINVAL);
	struct ibv_qp_attr reset = {};
	reset.qp_state = IBV_QPS_RESET;

	/*
	 * The way librdmacm asks (PD, CQs, and the XRC SRQ as the ID's SRQ):
	 * what the type does not use is ignored, and the PD is kept in the
	 * ibv_qp (librdmacm takes the ID's PD from it).
	 */
	struct ibv_qp_init_attr_ex la = ra;
	la.comp_mask |= IBV_QP_INIT_ATTR_PD;
	la.pd = pd;
	la.send_cq = la.recv_cq = cq;
	la.srq = srq;
	struct ibv_qp *lqp = ibv_create_qp_ex(ctx, &la);
	ASSERT_NE(lqp, nullptr) << errno;
	EXPECT_EQ(lqp->pd, pd);
	to_rts(lqp);
	EXPECT_EQ(ibv_modify_qp(lqp, &reset, IBV_QP_STATE), 0);
	EXPECT_EQ(ibv_destroy_qp(lqp), 0);

	/* Another handle on it, by number. */
	struct ibv_qp_open_attr oa = {};
	oa.comp_mask = IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_NUM |
		       IBV_QP_OPEN_ATTR_TYPE;
	oa.xrcd = xrcd;
	oa.qp_num = rqp->qp_num;
	oa.qp_type = IBV_QPT_XRC_RECV;
	struct ibv_qp *oqp = ibv_open_qp(ctx, &oa);
	ASSERT_NE(oqp, nullptr) << errno;
	/* OPEN_QP: 8 + 32 in, the 32-byte create_qp answer out. */
	EXPECT_TRUE(logged("cmd=40 in=40 out=32"));
	EXPECT_EQ(oqp->qp_num, rqp->qp_num);
	EXPECT_EQ(oqp->qp_type, IBV_QPT_XRC_RECV);
	EXPECT_EQ(oqp->state, IBV_QPS_UNKNOWN);
	EXPECT_EQ(ibv_post_send(oqp, &swr, &bad), EINVAL);
	EXPECT_EQ(ibv_post_recv(oqp, &rwr, &rbad), EINVAL);
	/* Back to RESET: no CQ to clean. */
	EXPECT_EQ(ibv_modify_qp(oqp, &reset, IBV_QP_STATE), 0);
	EXPECT_EQ(ibv_modify_qp(rqp, &reset, IBV_QP_STATE), 0);
	EXPECT_EQ(ibv_destroy_qp(oqp), 0);
	oa.qp_num = rqp->qp_num + 1000;
	EXPECT_EQ(ibv_open_qp(ctx, &oa), nullptr);

	/* XRC_SEND, asked for the way pyverbs does: a receive CQ it ignores. */
	struct ibv_qp_init_attr_ex qa = {};
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = pd;
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_wr = 4;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ;
	struct ibv_qp *sqp = ibv_create_qp_ex(ctx, &qa);
	ASSERT_NE(sqp, nullptr) << errno;
	EXPECT_EQ(qa.cap.max_send_wr, 4u);
	EXPECT_EQ(qa.cap.max_recv_wr, 0u);
	EXPECT_EQ(sqp->send_cq, cq);
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(sqp);
	ASSERT_NE(qpx, nullptr);
	to_rts(sqp);
	EXPECT_EQ(ibv_post_recv(sqp, &rwr, &rbad), EINVAL);

	/* The fake completes WQEs naming a live XRC SRQ, fails the others. */
	struct ibv_send_wr two[2] = {swr, swr};
	two[0].wr_id = 1;
	two[0].qp_type.xrc.remote_srqn = srqn;
	two[0].next = &two[1];
	two[1].wr_id = 2;
	two[1].qp_type.xrc.remote_srqn = srqn + 1;
	ASSERT_EQ(ibv_post_send(sqp, two, &bad), 0);
	const auto wc = poll(2);
	ASSERT_EQ(wc.size(), 2u);
	EXPECT_EQ(wc[0].wr_id, 1u);
	EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc[0].qp_num, sqp->qp_num);
	EXPECT_EQ(wc[1].wr_id, 2u);
	EXPECT_EQ(wc[1].status, IBV_WC_REM_INV_REQ_ERR);

	ibv_wr_start(qpx);
	qpx->wr_id = 3;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, srqn);
	ibv_wr_set_sge(qpx, 1, reinterpret_cast<uintptr_t>(buf.data()), 10);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	const auto wc2 = poll(1);
	ASSERT_EQ(wc2.size(), 1u);
	EXPECT_EQ(wc2[0].wr_id, 3u);
	EXPECT_EQ(wc2[0].status, IBV_WC_SUCCESS);
	EXPECT_EQ(ibv_modify_qp(sqp, &reset, IBV_QP_STATE), 0);

	EXPECT_EQ(ibv_destroy_qp(sqp), 0);
	EXPECT_EQ(ibv_destroy_qp(rqp), 0);
	EXPECT_EQ(ibv_destroy_srq(srq), 0);
	EXPECT_EQ(ibv_close_xrcd(xrcd), 0);
	EXPECT_TRUE(logged("cmd=38 in=12 out=0"));
}

} // namespace
