// SPDX-License-Identifier: GPL-2.0
// The provider's QP, SRQ and extended-CQ fast paths, driven without a
// kernel: the rings are plain memory set up the way create_qp would after
// mmap, and the command fd is one end of a socketpair so every doorbell
// (a write() of an empty POST_SEND command) can be counted and checked.
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "sroce.h"

namespace {

constexpr uint32_t kQpHandle = 0x51;

/* Zeroed, page-aligned memory standing in for a mapped ring. */
struct Mem {
	void *p = nullptr;
	size_t size = 0;
	explicit Mem(size_t n) : size(n)
	{
		p = std::aligned_alloc(4096, (n + 4095) & ~size_t{4095});
		std::memset(p, 0, n);
	}
	~Mem() { std::free(p); }
	Mem(const Mem &) = delete;
	Mem &operator=(const Mem &) = delete;
	sroce_wq_hdr *hdr() const { return static_cast<sroce_wq_hdr *>(p); }
};

/* The command fd: doorbells written to fd[0] are read back from fd[1]. */
struct CmdFd {
	int fd[2] = {-1, -1};
	CmdFd() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fd), 0); }
	~CmdFd()
	{
		close(fd[0]);
		close(fd[1]);
	}

	/* Doorbells written since the last call; each one checked. */
	int doorbells(uint32_t qp_handle = kQpHandle)
	{
		int n = 0;
		unsigned char buf[512];
		ssize_t len;
		while ((len = recv(fd[1], buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
			EXPECT_EQ(len, static_cast<ssize_t>(sizeof(sroce::abi::cmd_post_send)));
			sroce::abi::cmd_post_send c;
			std::memcpy(&c, buf, sizeof(c));
			EXPECT_EQ(c.hdr.command, static_cast<uint32_t>(IB_USER_VERBS_CMD_POST_SEND));
			EXPECT_EQ(c.qp_handle, qp_handle);
			EXPECT_EQ(c.wr_count, 0u);
			EXPECT_EQ(c.sge_count, 0u);
			n++;
		}
		return n;
	}
};

struct QpGeometry {
	uint32_t sq_entries = 8, sq_wqe = 256, rq_entries = 8, rq_wqe = 64;
	struct ibv_qp_cap cap = {.max_send_wr = 8, .max_recv_wr = 8,
				 .max_send_sge = 4, .max_recv_sge = 3,
				 .max_inline_data = 128};
};

/* A QP as create_qp leaves it, on plain memory. */
class FakeQp {
public:
	CmdFd cmd;
	struct ibv_context ctx = {};
	sroce::qp *qp;
	Mem sq, rq;
	sroce_create_qp_resp drv = {};
	int attach_err;

	/* XRC_SEND QPs get no RQ, XRC_RECV QPs no ring at all, as from sroce.ko. */
	FakeQp(ibv_qp_type type, QpGeometry g = {}, bool sig_all = false,
	       struct ibv_srq *srq = nullptr)
		: qp(static_cast<sroce::qp *>(std::calloc(1, sizeof(sroce::qp)))),
		  sq(SROCE_WQ_SLOTS_OFF + size_t{g.sq_entries} * g.sq_wqe),
		  rq(SROCE_WQ_SLOTS_OFF + size_t{g.rq_entries} * g.rq_wqe)
	{
		/* The inline ibv_post_* wrappers call through ibv_context.ops. */
		ctx.cmd_fd = cmd.fd[0];
		ctx.ops.post_send = sroce_post_send;
		ctx.ops.post_recv = sroce_post_recv;
		struct ibv_qp &q = qp->vqp.qp;
		q.context = &ctx;
		q.handle = kQpHandle;
		q.qp_num = 0x11;
		q.qp_type = type;
		q.state = IBV_QPS_RTS;
		q.srq = srq;
		const bool with_sq = type != IBV_QPT_XRC_RECV;
		const bool with_rq = !srq && type != IBV_QPT_XRC_SEND &&
				     type != IBV_QPT_XRC_RECV;
		if (with_sq) {
			drv.sq_mmap_size = sq.size;
			drv.sq_entries = g.sq_entries;
			drv.sq_wqe_size = g.sq_wqe;
		}
		if (with_rq) {
			drv.rq_mmap_size = rq.size;
			drv.rq_entries = g.rq_entries;
			drv.rq_wqe_size = g.rq_wqe;
		}
		sq.hdr()->sq_idle = 1;
		attach_err = sroce::attach_qp_queues(qp, type, sig_all, g.cap, drv,
						     with_sq ? sq.p : nullptr,
						     with_rq ? rq.p : nullptr);
	}
	~FakeQp() { std::free(qp); }

	struct ibv_qp *ibqp() { return &qp->vqp.qp; }
	const sroce_send_wqe &swqe(uint32_t i) const
	{
		return *reinterpret_cast<const sroce_send_wqe *>(
			static_cast<unsigned char *>(sq.p) + SROCE_WQ_SLOTS_OFF +
			size_t{i % drv.sq_entries} * drv.sq_wqe_size);
	}
	const sroce_recv_wqe &rwqe(uint32_t i) const
	{
		return *reinterpret_cast<const sroce_recv_wqe *>(
			static_cast<unsigned char *>(rq.p) + SROCE_WQ_SLOTS_OFF +
			size_t{i % drv.rq_entries} * drv.rq_wqe_size);
	}
	uint32_t sq_producer() const { return __atomic_load_n(&sq.hdr()->producer, __ATOMIC_ACQUIRE); }
	uint32_t rq_producer() const { return __atomic_load_n(&rq.hdr()->producer, __ATOMIC_ACQUIRE); }
	void kernel_busy(bool busy) { sq.hdr()->sq_idle = busy ? 0 : 1; }
	void kernel_consumes_sq(uint32_t upto) { __atomic_store_n(&sq.hdr()->consumer, upto, __ATOMIC_RELEASE); }
};

/* A chain of n send WRs with one SGE each. */
struct SendChain {
	struct ibv_sge sge = {.addr = 0x1000, .length = 32, .lkey = 7};
	std::vector<struct ibv_send_wr> wr;
	explicit SendChain(int n, ibv_wr_opcode op = IBV_WR_SEND) : wr(n)
	{
		for (int i = 0; i < n; i++) {
			wr[i] = {};
			wr[i].wr_id = 1000 + i;
			wr[i].sg_list = &sge;
			wr[i].num_sge = 1;
			wr[i].opcode = op;
			wr[i].send_flags = IBV_SEND_SIGNALED;
			wr[i].next = i + 1 < n ? &wr[i + 1] : nullptr;
		}
	}
	struct ibv_send_wr *head() { return wr.data(); }
};

struct RecvChain {
	struct ibv_sge sge = {.addr = 0x2000, .length = 64, .lkey = 9};
	std::vector<struct ibv_recv_wr> wr;
	explicit RecvChain(int n) : wr(n)
	{
		for (int i = 0; i < n; i++) {
			wr[i] = {};
			wr[i].wr_id = 2000 + i;
			wr[i].sg_list = &sge;
			wr[i].num_sge = 1;
			wr[i].next = i + 1 < n ? &wr[i + 1] : nullptr;
		}
	}
	struct ibv_recv_wr *head() { return wr.data(); }
};

/* ------------------------------------------------------------------------ */

TEST(QpAttach, AcceptsConsistentAnswers)
{
	FakeQp q(IBV_QPT_RC);
	EXPECT_EQ(q.attach_err, 0);
	EXPECT_EQ(q.qp->sq_caps.max_sge, 4u);
	EXPECT_EQ(q.qp->sq_caps.max_inline, 128u);
	EXPECT_EQ(q.qp->max_recv_sge, 3u);
}

TEST(QpAttach, RejectsCapsBeyondTheSlots)
{
	QpGeometry g;
	g.cap.max_send_sge = 13;	/* (256 - 64) / 16 = 12 */
	EXPECT_EQ(FakeQp(IBV_QPT_RC, g).attach_err, EPROTO);
	g = {};
	g.cap.max_inline_data = 193;	/* 256 - 64 = 192 */
	EXPECT_EQ(FakeQp(IBV_QPT_RC, g).attach_err, EPROTO);
	g = {};
	g.sq_wqe = 1024;
	g.cap.max_inline_data = SROCE_MAX_INLINE_DATA + 1;
	EXPECT_EQ(FakeQp(IBV_QPT_RC, g).attach_err, EPROTO);
	g = {};
	g.cap.max_recv_sge = 4;		/* (64 - 16) / 16 = 3 */
	EXPECT_EQ(FakeQp(IBV_QPT_RC, g).attach_err, EPROTO);
	g = {};
	g.sq_entries = 6;
	EXPECT_EQ(FakeQp(IBV_QPT_RC, g).attach_err, EPROTO);
}

TEST(QpPostSend, OneDoorbellPerCallWhenTheKernelIsIdle)
{
	FakeQp q(IBV_QPT_RC);
	ASSERT_EQ(q.attach_err, 0);
	SendChain c(3);
	struct ibv_send_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), 0);
	EXPECT_EQ(bad, nullptr);
	EXPECT_EQ(q.sq_producer(), 3u);
	EXPECT_EQ(q.cmd.doorbells(), 1);
	for (uint32_t i = 0; i < 3; i++) {
		EXPECT_EQ(q.swqe(i).wr_id, 1000u + i);
		EXPECT_EQ(q.swqe(i).opcode, static_cast<uint32_t>(IBV_WR_SEND));
		EXPECT_EQ(q.swqe(i).num_sge, 1u);
	}
}

TEST(QpPostSend, NoDoorbellWhileTheKernelIsBusy)
{
	FakeQp q(IBV_QPT_RC);
	q.kernel_busy(true);
	SendChain c(2);
	struct ibv_send_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), 0);
	ASSERT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), 0);
	EXPECT_EQ(q.sq_producer(), 4u);
	EXPECT_EQ(q.cmd.doorbells(), 0);
	q.kernel_busy(false);
	ASSERT_EQ(ibv_post_send(q.ibqp(), &c.wr[1], &bad), 0);
	EXPECT_EQ(q.sq_producer(), 5u);
	EXPECT_EQ(q.cmd.doorbells(), 1);
}

TEST(QpPostSend, FullQueueFailsWithEnomemAfterPostingWhatFits)
{
	FakeQp q(IBV_QPT_RC);
	SendChain c(10);
	struct ibv_send_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), ENOMEM);
	EXPECT_EQ(bad, &c.wr[8]);
	EXPECT_EQ(q.sq_producer(), 8u);
	EXPECT_EQ(q.cmd.doorbells(), 1);	/* for the 8 posted */

	bad = nullptr;
	EXPECT_EQ(ibv_post_send(q.ibqp(), &c.wr[9], &bad), ENOMEM);
	EXPECT_EQ(bad, &c.wr[9]);
	EXPECT_EQ(q.cmd.doorbells(), 0);	/* nothing posted, no doorbell */

	/* Completed WQEs free their slots. */
	q.kernel_consumes_sq(3);
	bad = nullptr;
	EXPECT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), ENOMEM);
	EXPECT_EQ(bad, &c.wr[3]);
	EXPECT_EQ(q.sq_producer(), 11u);
	EXPECT_EQ(q.swqe(8).wr_id, 1000u);	/* slot 0 reused */
	EXPECT_EQ(q.cmd.doorbells(), 1);
}

TEST(QpPostSend, InvalidRequestStopsTheChain)
{
	FakeQp q(IBV_QPT_RC);
	SendChain c(3);
	c.wr[1].num_sge = 5;	/* max_send_sge is 4 */
	struct ibv_send_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), EINVAL);
	EXPECT_EQ(bad, &c.wr[1]);
	EXPECT_EQ(q.sq_producer(), 1u);
	EXPECT_EQ(q.cmd.doorbells(), 1);

	bad = nullptr;
	EXPECT_EQ(ibv_post_send(q.ibqp(), &c.wr[1], &bad), EINVAL);
	EXPECT_EQ(bad, &c.wr[1]);
	EXPECT_EQ(q.sq_producer(), 1u);
	EXPECT_EQ(q.cmd.doorbells(), 0);
}

TEST(QpPostSend, InlineLimitIsTheQpCap)
{
	FakeQp q(IBV_QPT_RC);
	std::vector<char> data(129, 'x');
	struct ibv_sge sge = {.addr = reinterpret_cast<uintptr_t>(data.data()),
			      .length = 128, .lkey = 0};
	struct ibv_send_wr wr = {};
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_INLINE;
	struct ibv_send_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_send(q.ibqp(), &wr, &bad), 0);
	EXPECT_EQ(q.swqe(0).inline_len, 128u);
	EXPECT_EQ(std::memcmp(&q.swqe(0) + 1, data.data(), 128), 0);
	sge.length = 129;
	EXPECT_EQ(ibv_post_send(q.ibqp(), &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(q.sq_producer(), 1u);
}

TEST(QpPostSend, RefusedOutsideRts)
{
	FakeQp q(IBV_QPT_RC);
	SendChain c(1);
	for (auto s : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR}) {
		q.ibqp()->state = s;
		struct ibv_send_wr *bad = nullptr;
		EXPECT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), EINVAL) << s;
		EXPECT_EQ(bad, c.head());
	}
	/* In SQD and ERR the kernel takes (or flushes) them. */
	for (auto s : {IBV_QPS_SQD, IBV_QPS_ERR}) {
		q.ibqp()->state = s;
		struct ibv_send_wr *bad = nullptr;
		EXPECT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), 0) << s;
	}
	EXPECT_EQ(q.sq_producer(), 2u);
}

TEST(QpPostSend, SignalAllQp)
{
	FakeQp q(IBV_QPT_RC, {}, true);
	SendChain c(1);
	c.wr[0].send_flags = 0;
	struct ibv_send_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), 0);
	EXPECT_EQ(q.swqe(0).send_flags, static_cast<uint32_t>(IBV_SEND_SIGNALED));
}

TEST(QpPostSend, UdNeedsAnAddressHandle)
{
	FakeQp q(IBV_QPT_UD);
	sroce::ah ah = {};
	ah.ah_num = 77;
	SendChain c(2);
	c.wr[0].wr.ud.ah = &ah.ibv;
	c.wr[0].wr.ud.remote_qpn = 0x42;
	c.wr[0].wr.ud.remote_qkey = 0x1111;
	c.wr[1].wr.ud.ah = nullptr;
	struct ibv_send_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), EINVAL);
	EXPECT_EQ(bad, &c.wr[1]);
	EXPECT_EQ(q.swqe(0).wr.ud.ah_num, 77u);
	EXPECT_EQ(q.swqe(0).wr.ud.remote_qpn, 0x42u);
	EXPECT_EQ(q.swqe(0).wr.ud.remote_qkey, 0x1111u);

	c.wr[0].opcode = IBV_WR_RDMA_WRITE;
	EXPECT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), EINVAL);
	EXPECT_EQ(bad, &c.wr[0]);
	EXPECT_EQ(q.sq_producer(), 1u);
}

TEST(QpPostSend, DoorbellFailureIsReported)
{
	FakeQp q(IBV_QPT_RC);
	signal(SIGPIPE, SIG_IGN);
	shutdown(q.cmd.fd[1], SHUT_RDWR);
	SendChain c(2);
	struct ibv_send_wr *bad = nullptr;
	EXPECT_NE(ibv_post_send(q.ibqp(), c.head(), &bad), 0);
	EXPECT_EQ(bad, c.head());
}

/* ------------------------------------------------------------------------ */

TEST(QpPostRecv, WritesPublishesAndNeverEntersTheKernel)
{
	FakeQp q(IBV_QPT_RC);
	RecvChain c(5);
	struct ibv_recv_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_recv(q.ibqp(), c.head(), &bad), 0);
	EXPECT_EQ(q.rq_producer(), 5u);
	for (uint32_t i = 0; i < 5; i++) {
		EXPECT_EQ(q.rwqe(i).wr_id, 2000u + i);
		EXPECT_EQ(q.rwqe(i).num_sge, 1u);
		const auto *s = reinterpret_cast<const sroce_sge *>(&q.rwqe(i) + 1);
		EXPECT_EQ(s->addr, 0x2000u);
		EXPECT_EQ(s->length, 64u);
		EXPECT_EQ(s->lkey, 9u);
	}
	/* sq_idle is 1, yet receives ring nothing. */
	EXPECT_EQ(q.cmd.doorbells(), 0);
	EXPECT_EQ(q.sq_producer(), 0u);
}

TEST(QpPostRecv, FullAndTooManySges)
{
	FakeQp q(IBV_QPT_UD);
	RecvChain c(9);
	struct ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_recv(q.ibqp(), c.head(), &bad), ENOMEM);
	EXPECT_EQ(bad, &c.wr[8]);
	EXPECT_EQ(q.rq_producer(), 8u);

	__atomic_store_n(&q.rq.hdr()->consumer, 8u, __ATOMIC_RELEASE);
	c.wr[0].num_sge = 4;	/* max_recv_sge is 3 */
	EXPECT_EQ(ibv_post_recv(q.ibqp(), c.head(), &bad), EINVAL);
	EXPECT_EQ(bad, c.head());
	EXPECT_EQ(q.rq_producer(), 8u);
	EXPECT_EQ(q.cmd.doorbells(), 0);
}

TEST(QpPostRecv, RefusedInResetAndWithAnSrq)
{
	FakeQp q(IBV_QPT_RC);
	RecvChain c(1);
	struct ibv_recv_wr *bad = nullptr;
	q.ibqp()->state = IBV_QPS_RESET;
	EXPECT_EQ(ibv_post_recv(q.ibqp(), c.head(), &bad), EINVAL);
	for (auto s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_ERR}) {
		q.ibqp()->state = s;
		EXPECT_EQ(ibv_post_recv(q.ibqp(), c.head(), &bad), 0) << s;
	}

	struct ibv_srq srq = {};
	FakeQp with_srq(IBV_QPT_RC, {}, false, &srq);
	ASSERT_EQ(with_srq.attach_err, 0);
	bad = nullptr;
	EXPECT_EQ(ibv_post_recv(with_srq.ibqp(), c.head(), &bad), EINVAL);
	EXPECT_EQ(bad, c.head());
}

/* ------------------------------------------------------------------------ */
/* The ibv_wr_* API.                                                         */

class QpEx : public ::testing::Test {
protected:
	FakeQp q{IBV_QPT_RC};
	struct ibv_qp_ex *qpx = nullptr;

	void SetUp() override
	{
		ASSERT_EQ(q.attach_err, 0);
		sroce::init_qp_ex(q.qp, sroce::supported_send_ops(IBV_QPT_RC));
		qpx = ibv_qp_to_qp_ex(q.ibqp());
		ASSERT_EQ(qpx, &q.qp->vqp.qp_ex);
	}
};

TEST(QpExLookup, OnlyForQpsCreatedWithSendOps)
{
	FakeQp q(IBV_QPT_RC);
	EXPECT_EQ(ibv_qp_to_qp_ex(q.ibqp()), nullptr);
}

TEST_F(QpEx, BatchIsPublishedOnceWithOneDoorbell)
{
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 0x33, 0x4000, 100);
	qpx->wr_id = 2;
	qpx->wr_flags = 0;
	ibv_wr_rdma_write_imm(qpx, 0x55, 0x8000, htonl(0xa1b2c3d4));
	const struct ibv_sge list[2] = {{.addr = 0x1, .length = 2, .lkey = 3},
					{.addr = 0x4, .length = 5, .lkey = 6}};
	ibv_wr_set_sge_list(qpx, 2, list);
	qpx->wr_id = 3;
	ibv_wr_atomic_cmp_swp(qpx, 0x66, 0x9000, 10, 20);
	ibv_wr_set_sge(qpx, 0x77, 0xa000, 8);
	EXPECT_EQ(q.sq_producer(), 0u);	/* nothing visible before complete */
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(q.sq_producer(), 3u);
	EXPECT_EQ(q.cmd.doorbells(), 1);

	EXPECT_EQ(q.swqe(0).wr_id, 1u);
	EXPECT_EQ(q.swqe(0).opcode, static_cast<uint32_t>(IBV_WR_SEND));
	EXPECT_EQ(q.swqe(0).send_flags, static_cast<uint32_t>(IBV_SEND_SIGNALED));
	EXPECT_EQ(q.swqe(0).num_sge, 1u);
	const auto *s0 = reinterpret_cast<const sroce_sge *>(&q.swqe(0) + 1);
	EXPECT_EQ(s0->addr, 0x4000u);
	EXPECT_EQ(s0->length, 100u);
	EXPECT_EQ(s0->lkey, 0x33u);

	EXPECT_EQ(q.swqe(1).opcode, static_cast<uint32_t>(IBV_WR_RDMA_WRITE_WITH_IMM));
	EXPECT_EQ(q.swqe(1).wr.rdma.rkey, 0x55u);
	EXPECT_EQ(q.swqe(1).wr.rdma.remote_addr, 0x8000u);
	EXPECT_EQ(std::memcmp(&q.swqe(1).imm_data, "\xa1\xb2\xc3\xd4", 4), 0);
	EXPECT_EQ(q.swqe(1).num_sge, 2u);
	EXPECT_EQ(std::memcmp(&q.swqe(1) + 1, list, sizeof(list)), 0);

	EXPECT_EQ(q.swqe(2).opcode, static_cast<uint32_t>(IBV_WR_ATOMIC_CMP_AND_SWP));
	EXPECT_EQ(q.swqe(2).wr.atomic.compare_add, 10u);
	EXPECT_EQ(q.swqe(2).wr.atomic.swap, 20u);
}

TEST_F(QpEx, InlineDataAndReadAndFetchAdd)
{
	char a[5] = "abcd", b[3] = "xy";
	ibv_wr_start(qpx);
	qpx->wr_flags = 0;
	ibv_wr_send_inv(qpx, 0x1234);
	const struct ibv_data_buf bufs[2] = {{.addr = a, .length = 4}, {.addr = b, .length = 2}};
	ibv_wr_set_inline_data_list(qpx, 2, bufs);
	ibv_wr_rdma_write(qpx, 1, 2);
	ibv_wr_set_inline_data(qpx, a, 3);
	ibv_wr_rdma_read(qpx, 3, 4);
	ibv_wr_set_sge(qpx, 5, 6, 7);
	ibv_wr_atomic_fetch_add(qpx, 8, 9, 10);
	ibv_wr_set_sge(qpx, 11, 12, 8);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(q.sq_producer(), 4u);

	EXPECT_EQ(q.swqe(0).opcode, static_cast<uint32_t>(IBV_WR_SEND_WITH_INV));
	EXPECT_EQ(q.swqe(0).imm_data, 0x1234u);
	EXPECT_EQ(q.swqe(0).send_flags, static_cast<uint32_t>(IBV_SEND_INLINE));
	EXPECT_EQ(q.swqe(0).inline_len, 6u);
	EXPECT_EQ(q.swqe(0).num_sge, 0u);
	EXPECT_EQ(std::memcmp(&q.swqe(0) + 1, "abcdxy", 6), 0);
	EXPECT_EQ(q.swqe(1).inline_len, 3u);
	EXPECT_EQ(q.swqe(2).opcode, static_cast<uint32_t>(IBV_WR_RDMA_READ));
	EXPECT_EQ(q.swqe(2).wr.rdma.rkey, 3u);
	EXPECT_EQ(q.swqe(2).wr.rdma.remote_addr, 4u);
	EXPECT_EQ(q.swqe(3).opcode, static_cast<uint32_t>(IBV_WR_ATOMIC_FETCH_AND_ADD));
	EXPECT_EQ(q.swqe(3).wr.atomic.compare_add, 10u);
}

TEST_F(QpEx, InlineInWrFlagsIsIgnoredWithoutPayload)
{
	/* One wr_flags for a batch that mixes inline WRITEs with READs and
	 * atomics: the READ and the atomic keep their SGEs (as on ConnectX). */
	char a[5] = "abcd";
	ibv_wr_start(qpx);
	qpx->wr_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, 1, 2);
	ibv_wr_set_inline_data(qpx, a, 4);
	ibv_wr_rdma_read(qpx, 3, 4);
	ibv_wr_set_sge(qpx, 5, 6, 7);
	ibv_wr_atomic_cmp_swp(qpx, 8, 9, 10, 11);
	ibv_wr_set_sge(qpx, 12, 13, 8);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	ASSERT_EQ(q.sq_producer(), 3u);
	EXPECT_EQ(q.swqe(0).send_flags, static_cast<uint32_t>(IBV_SEND_INLINE | IBV_SEND_SIGNALED));
	EXPECT_EQ(q.swqe(0).inline_len, 4u);
	for (int i = 1; i < 3; i++) {
		EXPECT_EQ(q.swqe(i).send_flags, static_cast<uint32_t>(IBV_SEND_SIGNALED)) << i;
		EXPECT_EQ(q.swqe(i).num_sge, 1u) << i;
		EXPECT_EQ(q.swqe(i).inline_len, 0u) << i;
	}
}

TEST_F(QpEx, NoDoorbellWhileBusy)
{
	q.kernel_busy(true);
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(q.sq_producer(), 1u);
	EXPECT_EQ(q.cmd.doorbells(), 0);
	/* An empty batch publishes nothing and rings nothing. */
	q.kernel_busy(false);
	ibv_wr_start(qpx);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(q.cmd.doorbells(), 0);
}

TEST_F(QpEx, AbortDropsTheBatch)
{
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ibv_wr_abort(qpx);
	EXPECT_EQ(q.sq_producer(), 0u);
	EXPECT_EQ(q.cmd.doorbells(), 0);
	/* The lock was released and the slot is reused. */
	ibv_wr_start(qpx);
	qpx->wr_id = 9;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(q.sq_producer(), 1u);
	EXPECT_EQ(q.swqe(0).wr_id, 9u);
}

TEST_F(QpEx, FullQueueFailsTheWholeBatch)
{
	ibv_wr_start(qpx);
	for (int i = 0; i < 9; i++) {
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, 1, 2, 3);
	}
	EXPECT_EQ(ibv_wr_complete(qpx), ENOMEM);
	EXPECT_EQ(q.sq_producer(), 0u);
	EXPECT_EQ(q.cmd.doorbells(), 0);
	/* Room is back afterwards. */
	ibv_wr_start(qpx);
	for (int i = 0; i < 8; i++) {
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, 1, 2, 3);
	}
	EXPECT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(q.sq_producer(), 8u);
}

TEST_F(QpEx, ErrorsFailTheBatch)
{
	/* Too many SGEs. */
	struct ibv_sge list[5] = {};
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge_list(qpx, 5, list);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	/* Inline too long. */
	std::vector<char> big(129);
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, big.data(), big.size());
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	/* Inline on a read. */
	ibv_wr_start(qpx);
	ibv_wr_rdma_read(qpx, 1, 2);
	ibv_wr_set_inline_data(qpx, big.data(), 4);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	/* A setter without a builder. */
	ibv_wr_start(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	/* Unknown flags. */
	ibv_wr_start(qpx);
	qpx->wr_flags = 1u << 20;
	ibv_wr_send(qpx);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	qpx->wr_flags = 0;
	/* An operation sroce does not carry. */
	ibv_wr_start(qpx);
	ibv_wr_send_tso(qpx, big.data(), 4, 4);
	EXPECT_EQ(ibv_wr_complete(qpx), EOPNOTSUPP);
	/* A bind without a window or without bind info. */
	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, nullptr, 1, nullptr);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	/* UD address on an RC QP. */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, nullptr, 1, 2);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);

	EXPECT_EQ(q.sq_producer(), 0u);
	EXPECT_EQ(q.cmd.doorbells(), 0);
}

TEST_F(QpEx, BindMwAndLocalInv)
{
	struct ibv_mr mr = {};
	mr.lkey = 0x99;
	struct ibv_mw mw = {};
	mw.rkey = 0x500;
	mw.type = IBV_MW_TYPE_2;
	const struct ibv_mw_bind_info info = {&mr, 0x1000, 0x800, IBV_ACCESS_REMOTE_READ};
	ibv_wr_start(qpx);
	qpx->wr_id = 7;
	ibv_wr_bind_mw(qpx, &mw, 0x501, &info);
	qpx->wr_id = 8;
	ibv_wr_local_inv(qpx, 0x501);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(q.swqe(0).opcode, static_cast<uint32_t>(IBV_WR_BIND_MW));
	EXPECT_EQ(q.swqe(0).imm_data, 0x500u);
	EXPECT_EQ(q.swqe(0).wr.bind.new_rkey, 0x501u);
	EXPECT_EQ(q.swqe(0).wr.bind.mr_lkey, 0x99u);
	EXPECT_EQ(q.swqe(1).opcode, static_cast<uint32_t>(IBV_WR_LOCAL_INV));
	EXPECT_EQ(q.swqe(1).imm_data, 0x501u);
	EXPECT_EQ(q.swqe(1).wr_id, 8u);
	/* a type 1 window is not bound this way */
	mw.type = IBV_MW_TYPE_1;
	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, &mw, 0x501, &info);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	EXPECT_EQ(q.sq_producer(), 2u);
}

/* ibv_bind_mw(): one WQE with the next key, which the window then has. */
TEST(BindMw, Type1PostsAndTakesTheNextKey)
{
	FakeQp q(IBV_QPT_RC);
	ASSERT_EQ(q.attach_err, 0);
	struct ibv_mr mr = {};
	mr.lkey = 0x77;
	struct ibv_mw mw = {};
	mw.rkey = 0x123456ff;
	mw.type = IBV_MW_TYPE_1;
	struct ibv_mw_bind b = {};
	b.wr_id = 0x42;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info = {&mr, 0x2000, 0x100, IBV_ACCESS_REMOTE_WRITE};
	ASSERT_EQ(sroce_bind_mw(q.ibqp(), &mw, &b), 0);
	EXPECT_EQ(mw.rkey, 0x12345600u);
	EXPECT_EQ(q.sq_producer(), 1u);
	EXPECT_EQ(q.swqe(0).wr_id, 0x42u);
	EXPECT_EQ(q.swqe(0).imm_data, 0x123456ffu);
	EXPECT_EQ(q.swqe(0).wr.bind.new_rkey, 0x12345600u);
	EXPECT_EQ(q.swqe(0).wr.bind.flags, static_cast<uint32_t>(SROCE_BIND_TYPE_1));
	EXPECT_EQ(q.cmd.doorbells(), 1);
	/* unbind: no region, length 0 */
	b.bind_info = {nullptr, 0, 0, 0};
	ASSERT_EQ(sroce_bind_mw(q.ibqp(), &mw, &b), 0);
	EXPECT_EQ(q.swqe(1).wr.bind.mr_lkey, 0u);
	EXPECT_EQ(q.swqe(1).wr.bind.length, 0u);
	/* refused: nothing posted, the key stays */
	b.bind_info = {&mr, 0, 0x100, IBV_ACCESS_ZERO_BASED};
	EXPECT_EQ(sroce_bind_mw(q.ibqp(), &mw, &b), EOPNOTSUPP);
	EXPECT_EQ(mw.rkey, 0x12345601u);
	EXPECT_EQ(q.sq_producer(), 2u);
	q.ibqp()->state = IBV_QPS_INIT;
	b.bind_info = {&mr, 0, 0x100, 0};
	EXPECT_EQ(sroce_bind_mw(q.ibqp(), &mw, &b), EINVAL);
}

TEST_F(QpEx, OnlyTheOpsAskedFor)
{
	sroce::init_qp_ex(q.qp, IBV_QP_EX_WITH_SEND);
	ibv_wr_start(qpx);
	ibv_wr_rdma_write(qpx, 1, 2);
	EXPECT_EQ(ibv_wr_complete(qpx), EOPNOTSUPP);
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	EXPECT_EQ(ibv_wr_complete(qpx), 0);
}

TEST_F(QpEx, RefusedInReset)
{
	q.ibqp()->state = IBV_QPS_RESET;
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	EXPECT_EQ(q.sq_producer(), 0u);
}

TEST(QpExUd, SetUdAddr)
{
	FakeQp q(IBV_QPT_UD);
	sroce::init_qp_ex(q.qp, sroce::supported_send_ops(IBV_QPT_UD));
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(q.ibqp());
	ASSERT_NE(qpx, nullptr);
	sroce::ah ah = {};
	ah.ah_num = 5;
	ibv_wr_start(qpx);
	ibv_wr_send_imm(qpx, htonl(1));
	ibv_wr_set_ud_addr(qpx, &ah.ibv, 0x99, 0x77);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(q.swqe(0).opcode, static_cast<uint32_t>(IBV_WR_SEND_WITH_IMM));
	EXPECT_EQ(q.swqe(0).wr.ud.ah_num, 5u);
	EXPECT_EQ(q.swqe(0).wr.ud.remote_qpn, 0x99u);
	EXPECT_EQ(q.swqe(0).wr.ud.remote_qkey, 0x77u);
	EXPECT_EQ(q.cmd.doorbells(), 1);
}

TEST(QpExOps, PerQpType)
{
	EXPECT_EQ(sroce::supported_send_ops(IBV_QPT_UD),
		  uint64_t{IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM});
	EXPECT_FALSE(sroce::supported_send_ops(IBV_QPT_UC) & IBV_QP_EX_WITH_RDMA_READ);
	EXPECT_TRUE(sroce::supported_send_ops(IBV_QPT_UC) & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);
	const uint64_t rc = sroce::supported_send_ops(IBV_QPT_RC);
	EXPECT_TRUE(rc & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
	EXPECT_TRUE(rc & IBV_QP_EX_WITH_SEND_WITH_INV);
	EXPECT_TRUE(rc & IBV_QP_EX_WITH_BIND_MW);
	EXPECT_TRUE(rc & IBV_QP_EX_WITH_LOCAL_INV);
	EXPECT_TRUE(sroce::supported_send_ops(IBV_QPT_UC) & IBV_QP_EX_WITH_BIND_MW);
	EXPECT_FALSE(rc & IBV_QP_EX_WITH_TSO);
	EXPECT_TRUE(rc & IBV_QP_EX_WITH_ATOMIC_WRITE);
	EXPECT_FALSE(sroce::supported_send_ops(IBV_QPT_UC) & IBV_QP_EX_WITH_ATOMIC_WRITE);
	EXPECT_EQ(sroce::supported_send_ops(IBV_QPT_RAW_PACKET), 0u);
	/* XRC_SEND carries the RC set; XRC_RECV sends nothing */
	EXPECT_EQ(sroce::supported_send_ops(IBV_QPT_XRC_SEND), rc);
	EXPECT_EQ(sroce::supported_send_ops(IBV_QPT_XRC_RECV), 0u);
}

/* Requests refused before any command reaches the kernel. */
TEST(QpCreate, UnsupportedRequestsFailEarly)
{
	struct ibv_context ctx = {};
	ctx.cmd_fd = -1;
	struct ibv_pd pd = {};
	pd.context = &ctx;
	struct ibv_cq cq = {};
	auto attempt = [&](auto edit) {
		struct ibv_qp_init_attr_ex a = {};
		a.qp_type = IBV_QPT_RC;
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = &pd;
		a.send_cq = a.recv_cq = &cq;
		edit(a);
		errno = 0;
		EXPECT_EQ(sroce_create_qp_ex(&ctx, &a), nullptr);
		return errno;
	};
	EXPECT_EQ(attempt([](auto &a) { a.qp_type = IBV_QPT_RAW_PACKET; }), EOPNOTSUPP);
	EXPECT_EQ(attempt([](auto &a) { a.qp_type = IBV_QPT_DRIVER; }), EOPNOTSUPP);
	EXPECT_EQ(attempt([](auto &a) {
			  a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
			  a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
		  }),
		  EOPNOTSUPP);
	EXPECT_EQ(attempt([](auto &a) { a.comp_mask |= IBV_QP_INIT_ATTR_MAX_TSO_HEADER; }),
		  EOPNOTSUPP);
	EXPECT_EQ(attempt([](auto &a) { a.comp_mask |= IBV_QP_INIT_ATTR_IND_TABLE; }),
		  EOPNOTSUPP);
	EXPECT_EQ(attempt([](auto &a) {
			  a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			  a.send_ops_flags = IBV_QP_EX_WITH_TSO;
		  }),
		  EOPNOTSUPP);
	EXPECT_EQ(attempt([](auto &a) {
			  a.qp_type = IBV_QPT_UD;
			  a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			  a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
		  }),
		  EOPNOTSUPP);
	EXPECT_EQ(attempt([](auto &a) { a.send_cq = nullptr; }), EINVAL);
	EXPECT_EQ(attempt([](auto &a) { a.recv_cq = nullptr; }), EINVAL);
	EXPECT_EQ(attempt([](auto &a) { a.comp_mask = 0; }), EINVAL);
}

/* XRC requests refused before any command reaches the kernel. */
TEST(QpCreate, XrcRequestsMissingWhatTheTypeNeeds)
{
	struct ibv_context ctx = {};
	ctx.cmd_fd = -1;
	struct ibv_pd pd = {};
	pd.context = &ctx;
	struct ibv_cq cq = {};
	struct ibv_srq srq = {};
	struct ibv_xrcd xrcd = {};
	xrcd.context = &ctx;
	auto attempt = [&](ibv_qp_type type, auto edit) {
		struct ibv_qp_init_attr_ex a = {};
		a.qp_type = type;
		if (type == IBV_QPT_XRC_RECV) {
			a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
			a.xrcd = &xrcd;
		} else {
			a.comp_mask = IBV_QP_INIT_ATTR_PD;
			a.pd = &pd;
			a.send_cq = &cq;
		}
		edit(a);
		errno = 0;
		EXPECT_EQ(sroce_create_qp_ex(&ctx, &a), nullptr);
		return errno;
	};
	/* XRC_SEND: PD and send CQ, no SRQ; the RC operation set */
	EXPECT_EQ(attempt(IBV_QPT_XRC_SEND, [](auto &a) { a.send_cq = nullptr; }), EINVAL);
	EXPECT_EQ(attempt(IBV_QPT_XRC_SEND, [](auto &a) { a.comp_mask = 0; }), EINVAL);
	EXPECT_EQ(attempt(IBV_QPT_XRC_SEND, [&](auto &a) { a.srq = &srq; }), EINVAL);
	EXPECT_EQ(attempt(IBV_QPT_XRC_SEND, [](auto &a) {
			  a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			  a.send_ops_flags = IBV_QP_EX_WITH_TSO;
		  }),
		  EOPNOTSUPP);
	/* XRC_RECV: an XRC domain, no SRQ, no send queue */
	EXPECT_EQ(attempt(IBV_QPT_XRC_RECV, [](auto &a) { a.comp_mask = 0; }), EINVAL);
	EXPECT_EQ(attempt(IBV_QPT_XRC_RECV, [](auto &a) { a.xrcd = nullptr; }), EINVAL);
	/* an SRQ only if it is an XRC SRQ (as the kernel has it) */
	sroce::srq basic{};
	EXPECT_EQ(attempt(IBV_QPT_XRC_RECV, [&](auto &a) { a.srq = &basic.ibv; }), EINVAL);
	EXPECT_EQ(attempt(IBV_QPT_XRC_RECV, [](auto &a) {
			  a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		  }),
		  EINVAL);
	EXPECT_EQ(attempt(IBV_QPT_XRC_RECV, [](auto &a) {
			  a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			  a.send_ops_flags = IBV_QP_EX_WITH_SEND;
		  }),
		  EOPNOTSUPP);
	/* only XRC_RECV QPs are opened */
	struct ibv_qp_open_attr o = {};
	o.comp_mask = IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_TYPE;
	o.xrcd = &xrcd;
	o.qp_num = 0x123;
	o.qp_type = IBV_QPT_RC;
	errno = 0;
	EXPECT_EQ(sroce_open_qp(&ctx, &o), nullptr);
	EXPECT_EQ(errno, EINVAL);
}

/* ------------------------------------------------------------------------ */
/* XRC QPs.                                                                  */

TEST(XrcAttach, RingsAsTheTypeHasThem)
{
	FakeQp send(IBV_QPT_XRC_SEND);
	EXPECT_EQ(send.attach_err, 0);
	EXPECT_EQ(send.qp->max_recv_sge, 0u);
	EXPECT_EQ(send.qp->sq_caps.max_sge, 4u);
	FakeQp recv(IBV_QPT_XRC_RECV);
	EXPECT_EQ(recv.attach_err, 0);	/* capabilities not looked at */
	EXPECT_EQ(recv.qp->sq_caps.max_sge, 0u);
	EXPECT_EQ(recv.qp->max_recv_sge, 0u);

	/* a kernel answer with a ring the type does not have */
	auto *qp = static_cast<sroce::qp *>(std::calloc(1, sizeof(sroce::qp)));
	Mem ring(SROCE_WQ_SLOTS_OFF + 8 * 64);
	sroce_create_qp_resp drv = {};
	drv.rq_mmap_size = ring.size;
	drv.rq_entries = 8;
	drv.rq_wqe_size = 64;
	EXPECT_EQ(sroce::attach_qp_queues(qp, IBV_QPT_XRC_SEND, false, {}, drv,
					  nullptr, ring.p),
		  EPROTO);
	drv = {};
	drv.sq_mmap_size = ring.size;
	drv.sq_entries = 8;
	drv.sq_wqe_size = 64;
	EXPECT_EQ(sroce::attach_qp_queues(qp, IBV_QPT_XRC_RECV, false, {}, drv,
					  ring.p, nullptr),
		  EPROTO);
	EXPECT_EQ(sroce::attach_qp_queues(qp, IBV_QPT_RC, false, {}, drv, ring.p,
					  nullptr),
		  0);
	std::free(qp);
}

TEST(XrcPostSend, TargetSrqFromTheWorkRequest)
{
	FakeQp q(IBV_QPT_XRC_SEND);
	ASSERT_EQ(q.attach_err, 0);
	SendChain c(3);
	c.wr[0].qp_type.xrc.remote_srqn = 0x2001;
	c.wr[1].qp_type.xrc.remote_srqn = 0x2002;
	c.wr[1].opcode = IBV_WR_RDMA_READ;
	c.wr[1].wr.rdma.rkey = 0x99;
	c.wr[1].wr.rdma.remote_addr = 0x5000;
	c.wr[2].qp_type.xrc.remote_srqn = 0x2003;
	c.wr[2].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	c.wr[2].wr.atomic.rkey = 0x98;
	c.wr[2].wr.atomic.remote_addr = 0x6000;
	c.wr[2].wr.atomic.compare_add = 1;
	struct ibv_send_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), 0);
	EXPECT_EQ(q.sq_producer(), 3u);
	EXPECT_EQ(q.cmd.doorbells(), 1);
	EXPECT_EQ(q.swqe(0).xrc_srqn, 0x2001u);
	EXPECT_EQ(q.swqe(0).opcode, static_cast<uint32_t>(IBV_WR_SEND));
	EXPECT_EQ(q.swqe(1).xrc_srqn, 0x2002u);
	EXPECT_EQ(q.swqe(1).wr.rdma.rkey, 0x99u);
	EXPECT_EQ(q.swqe(2).xrc_srqn, 0x2003u);
	EXPECT_EQ(q.swqe(2).wr.atomic.rkey, 0x98u);

	/* not a 24-bit SRQ number: that request and the rest stay */
	c.wr[1].qp_type.xrc.remote_srqn = 0x1000000;
	EXPECT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), EINVAL);
	EXPECT_EQ(bad, &c.wr[1]);
	EXPECT_EQ(q.sq_producer(), 4u);
}

TEST(XrcPostSend, OtherQpTypesWriteZero)
{
	FakeQp q(IBV_QPT_RC);
	SendChain c(1);
	c.wr[0].qp_type.xrc.remote_srqn = 0x2001;
	struct ibv_send_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), 0);
	EXPECT_EQ(q.swqe(0).xrc_srqn, 0u);
}

TEST(XrcPostRecv, NoReceiveQueueOnEitherSide)
{
	RecvChain c(1);
	struct ibv_recv_wr *bad = nullptr;
	FakeQp send(IBV_QPT_XRC_SEND);
	EXPECT_EQ(ibv_post_recv(send.ibqp(), c.head(), &bad), EINVAL);
	EXPECT_EQ(bad, c.head());
	FakeQp recv(IBV_QPT_XRC_RECV);
	bad = nullptr;
	EXPECT_EQ(ibv_post_recv(recv.ibqp(), c.head(), &bad), EINVAL);
	EXPECT_EQ(bad, c.head());
	EXPECT_EQ(send.cmd.doorbells() + recv.cmd.doorbells(), 0);
}

TEST(XrcRecvQp, NothingToSendOn)
{
	FakeQp q(IBV_QPT_XRC_RECV);
	ASSERT_EQ(q.attach_err, 0);
	SendChain c(1);
	/* RTS, and also the UNKNOWN state of an ibv_open_qp() QP */
	for (auto s : {IBV_QPS_RTS, IBV_QPS_UNKNOWN}) {
		q.ibqp()->state = s;
		struct ibv_send_wr *bad = nullptr;
		EXPECT_EQ(ibv_post_send(q.ibqp(), c.head(), &bad), EINVAL) << s;
		EXPECT_EQ(bad, c.head());
	}
	struct ibv_mw mw = {};
	mw.type = IBV_MW_TYPE_1;
	struct ibv_mw_bind b = {};
	EXPECT_EQ(sroce_bind_mw(q.ibqp(), &mw, &b), EINVAL);
	EXPECT_EQ(q.cmd.doorbells(), 0);
}

class XrcQpEx : public ::testing::Test {
protected:
	FakeQp q{IBV_QPT_XRC_SEND};
	struct ibv_qp_ex *qpx = nullptr;

	void SetUp() override
	{
		ASSERT_EQ(q.attach_err, 0);
		sroce::init_qp_ex(q.qp, sroce::supported_send_ops(IBV_QPT_XRC_SEND));
		qpx = ibv_qp_to_qp_ex(q.ibqp());
		ASSERT_NE(qpx, nullptr);
	}
};

TEST_F(XrcQpEx, SetXrcSrqnGoesIntoTheWqe)
{
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, 0x1234);
	ibv_wr_set_sge(qpx, 0x33, 0x4000, 100);
	qpx->wr_id = 2;
	ibv_wr_rdma_write_imm(qpx, 0x55, 0x8000, htonl(7));
	ibv_wr_set_xrc_srqn(qpx, 0x5678);
	ibv_wr_set_sge(qpx, 0x33, 0x4000, 100);
	qpx->wr_id = 3;
	ibv_wr_atomic_cmp_swp(qpx, 0x66, 0x9000, 10, 20);
	ibv_wr_set_xrc_srqn(qpx, 0xffffff);
	ibv_wr_set_sge(qpx, 0x77, 0xa000, 8);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(q.sq_producer(), 3u);
	EXPECT_EQ(q.cmd.doorbells(), 1);
	EXPECT_EQ(q.swqe(0).xrc_srqn, 0x1234u);
	EXPECT_EQ(q.swqe(0).opcode, static_cast<uint32_t>(IBV_WR_SEND));
	EXPECT_EQ(q.swqe(0).num_sge, 1u);
	EXPECT_EQ(q.swqe(1).xrc_srqn, 0x5678u);
	EXPECT_EQ(q.swqe(1).opcode, static_cast<uint32_t>(IBV_WR_RDMA_WRITE_WITH_IMM));
	EXPECT_EQ(q.swqe(2).xrc_srqn, 0xffffffu);
	EXPECT_EQ(q.swqe(2).wr.atomic.swap, 20u);
}

TEST_F(XrcQpEx, BadSrqnFailsTheBatch)
{
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, 1);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, 0x1000000);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	EXPECT_EQ(q.sq_producer(), 0u);
	/* a setter before any builder */
	ibv_wr_start(qpx);
	ibv_wr_set_xrc_srqn(qpx, 1);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	EXPECT_EQ(q.cmd.doorbells(), 0);
}

TEST_F(QpEx, SetXrcSrqnOnANonXrcQpFailsTheBatch)
{
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, 0x1234);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	EXPECT_EQ(q.sq_producer(), 0u);
	EXPECT_EQ(q.cmd.doorbells(), 0);
	/* and the next batch works */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 2, 3);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);
	EXPECT_EQ(q.swqe(0).xrc_srqn, 0u);
}

/* ------------------------------------------------------------------------ */
/* SRQ.                                                                      */

TEST(Srq, PostSrqRecv)
{
	CmdFd cmd;
	struct ibv_context ctx = {};
	ctx.cmd_fd = cmd.fd[0];
	ctx.ops.post_srq_recv = sroce_post_srq_recv;
	Mem ring(SROCE_WQ_SLOTS_OFF + 4 * 64);
	auto *srq = static_cast<sroce::srq *>(std::calloc(1, sizeof(sroce::srq)));
	sroce_create_srq_resp drv = {};
	drv.mmap_size = ring.size;
	drv.entries = 4;
	drv.wqe_size = 64;
	drv.srqn = 3;
	EXPECT_EQ(sroce::attach_srq_ring(srq, 4, 4, drv, ring.p), EPROTO);	/* 3 fit */
	ASSERT_EQ(sroce::attach_srq_ring(srq, 4, 3, drv, ring.p), 0);
	srq->ibv.context = &ctx;

	RecvChain c(5);
	struct ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_srq_recv(&srq->ibv, c.head(), &bad), ENOMEM);
	EXPECT_EQ(bad, &c.wr[4]);
	EXPECT_EQ(ring.hdr()->producer, 4u);
	EXPECT_EQ(reinterpret_cast<sroce_recv_wqe *>(
			  static_cast<unsigned char *>(ring.p) + SROCE_WQ_SLOTS_OFF + 3 * 64)
			  ->wr_id,
		  2003u);
	__atomic_store_n(&ring.hdr()->consumer, 1u, __ATOMIC_RELEASE);
	EXPECT_EQ(ibv_post_srq_recv(&srq->ibv, &c.wr[4], &bad), 0);
	EXPECT_EQ(ring.hdr()->producer, 5u);
	char b;
	EXPECT_LT(recv(cmd.fd[1], &b, 1, MSG_DONTWAIT), 0);	/* nothing written */
	std::free(srq);
}

/* ibv_get_srq_num(): the XRC SRQ number libibverbs recorded at creation. */
TEST(Srq, SrqNumOfXrcSrqsOnly)
{
	sroce::srq srq{};
	srq.srqn = 0x300;
	uint32_t n = 0xdead;
	EXPECT_EQ(sroce_get_srq_num(&srq.ibv, &n), EOPNOTSUPP);	/* basic */
	EXPECT_EQ(n, 0xdeadu);
	srq.vsrq.srq_type = IBV_SRQT_XRC;
	srq.vsrq.srq_num = 0x301;
	EXPECT_EQ(sroce_get_srq_num(&srq.ibv, &n), 0);
	EXPECT_EQ(n, 0x301u);
}

/* Requests refused before any command reaches the kernel. */
TEST(Srq, CreateSrqExRefusesEarly)
{
	struct ibv_context ctx = {};
	ctx.cmd_fd = -1;
	struct ibv_pd pd = {};
	pd.context = &ctx;
	struct ibv_cq cq = {};
	struct ibv_xrcd xrcd = {};
	auto attempt = [&](auto edit) {
		struct ibv_srq_init_attr_ex a = {};
		a.attr.max_wr = 16;
		a.attr.max_sge = 1;
		a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
		a.srq_type = IBV_SRQT_XRC;
		a.pd = &pd;
		a.xrcd = &xrcd;
		a.cq = &cq;
		edit(a);
		errno = 0;
		EXPECT_EQ(sroce_create_srq_ex(&ctx, &a), nullptr);
		return errno;
	};
	EXPECT_EQ(attempt([](auto &a) { a.srq_type = IBV_SRQT_TM; }), EOPNOTSUPP);
	EXPECT_EQ(attempt([](auto &a) { a.srq_type = static_cast<ibv_srq_type>(7); }),
		  EOPNOTSUPP);
	EXPECT_EQ(attempt([](auto &a) {
			  a.comp_mask |= IBV_SRQ_INIT_ATTR_TM;
			  a.tm_cap.max_num_tags = 4;
		  }),
		  EOPNOTSUPP);
	EXPECT_EQ(attempt([](auto &a) { a.comp_mask &= ~IBV_SRQ_INIT_ATTR_PD; }), EINVAL);
	EXPECT_EQ(attempt([](auto &a) { a.pd = nullptr; }), EINVAL);
	EXPECT_EQ(attempt([](auto &a) { a.comp_mask &= ~IBV_SRQ_INIT_ATTR_XRCD; }), EINVAL);
	EXPECT_EQ(attempt([](auto &a) { a.xrcd = nullptr; }), EINVAL);
	EXPECT_EQ(attempt([](auto &a) { a.comp_mask &= ~IBV_SRQ_INIT_ATTR_CQ; }), EINVAL);
	EXPECT_EQ(attempt([](auto &a) { a.cq = nullptr; }), EINVAL);
	/* basic SRQs need only the PD */
	EXPECT_EQ(attempt([](auto &a) {
			  a.srq_type = IBV_SRQT_BASIC;
			  a.pd = nullptr;
		  }),
		  EINVAL);
}

/* ------------------------------------------------------------------------ */
/* Extended CQ polling over the ring.                                        */

class CqEx : public ::testing::Test {
protected:
	static constexpr uint32_t kEntries = 4;
	struct ibv_context ctx = {};
	Mem mem{SROCE_CQ_RING_ENTRIES_OFF + kEntries * sizeof(ib_uverbs_wc)};
	sroce::cq *cq = static_cast<sroce::cq *>(std::calloc(1, sizeof(sroce::cq)));
	struct ibv_cq_ex *cqx = &cq->ibv_ex;

	void SetUp() override
	{
		ctx.ops.poll_cq = sroce_poll_cq;
		cq->ibv.context = &ctx;
		cq->map = mem.p;
		cq->map_size = mem.size;
		cq->hdr = static_cast<sroce_cq_ring_hdr *>(mem.p);
		cq->ring = reinterpret_cast<const ib_uverbs_wc *>(
			static_cast<char *>(mem.p) + SROCE_CQ_RING_ENTRIES_OFF);
		cq->entries = kEntries;
		pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
		sroce::init_cq_ex(cq, IBV_WC_STANDARD_FLAGS);
	}
	void TearDown() override { std::free(cq); }

	/* The kernel's side: write completion n and publish it. */
	void produce(uint32_t n, uint64_t wr_id, ibv_wc_status status = IBV_WC_SUCCESS)
	{
		auto *ring = const_cast<ib_uverbs_wc *>(cq->ring);
		ib_uverbs_wc &e = ring[n % kEntries];
		e = {};
		e.wr_id = wr_id;
		e.status = status;
		e.opcode = IBV_WC_RECV;
		e.byte_len = 100 + n;
		e.ex.imm_data = htonl(0xabcd0000 + n);
		e.qp_num = 0x12;
		e.src_qp = 0x34;
		e.wc_flags = IBV_WC_WITH_IMM | IBV_WC_GRH;
		e.slid = 0x56;
		e.sl = 3;
		e.dlid_path_bits = 1;
		__atomic_store_n(&cq->hdr->producer, n + 1, __ATOMIC_RELEASE);
	}
	uint32_t consumer() const { return __atomic_load_n(&cq->hdr->consumer, __ATOMIC_ACQUIRE); }
};

TEST_F(CqEx, EmptyCqAndLockReleased)
{
	struct ibv_poll_cq_attr attr = {};
	EXPECT_EQ(ibv_start_poll(cqx, &attr), ENOENT);
	/* end_poll is not called after ENOENT; the next start must not hang. */
	EXPECT_EQ(ibv_start_poll(cqx, &attr), ENOENT);
	attr.comp_mask = 1;
	EXPECT_EQ(ibv_start_poll(cqx, &attr), EINVAL);
}

TEST_F(CqEx, PollsEveryEntryAndReleasesAtEnd)
{
	produce(0, 10);
	produce(1, 11, IBV_WC_REM_ACCESS_ERR);
	produce(2, 12);
	struct ibv_poll_cq_attr attr = {};
	ASSERT_EQ(ibv_start_poll(cqx, &attr), 0);
	EXPECT_EQ(cqx->wr_id, 10u);
	EXPECT_EQ(cqx->status, IBV_WC_SUCCESS);
	EXPECT_EQ(ibv_wc_read_opcode(cqx), IBV_WC_RECV);
	EXPECT_EQ(ibv_wc_read_byte_len(cqx), 100u);
	EXPECT_EQ(ibv_wc_read_imm_data(cqx), htonl(0xabcd0000));
	EXPECT_EQ(ibv_wc_read_qp_num(cqx), 0x12u);
	EXPECT_EQ(ibv_wc_read_src_qp(cqx), 0x34u);
	EXPECT_EQ(ibv_wc_read_wc_flags(cqx), static_cast<unsigned>(IBV_WC_WITH_IMM | IBV_WC_GRH));
	EXPECT_EQ(ibv_wc_read_slid(cqx), 0x56u);
	EXPECT_EQ(ibv_wc_read_sl(cqx), 3u);
	EXPECT_EQ(ibv_wc_read_dlid_path_bits(cqx), 1u);
	EXPECT_EQ(ibv_wc_read_vendor_err(cqx), 0u);
	EXPECT_EQ(consumer(), 0u);

	ASSERT_EQ(ibv_next_poll(cqx), 0);
	EXPECT_EQ(cqx->wr_id, 11u);
	EXPECT_EQ(cqx->status, IBV_WC_REM_ACCESS_ERR);
	ASSERT_EQ(ibv_next_poll(cqx), 0);
	EXPECT_EQ(cqx->wr_id, 12u);
	EXPECT_EQ(ibv_wc_read_byte_len(cqx), 102u);
	/* A completion arriving mid-poll is picked up. */
	produce(3, 13);
	ASSERT_EQ(ibv_next_poll(cqx), 0);
	EXPECT_EQ(cqx->wr_id, 13u);
	EXPECT_EQ(ibv_next_poll(cqx), ENOENT);
	ibv_end_poll(cqx);
	EXPECT_EQ(consumer(), 4u);

	/* The ring wraps. */
	produce(4, 14);
	ASSERT_EQ(ibv_start_poll(cqx, &attr), 0);
	EXPECT_EQ(cqx->wr_id, 14u);
	ibv_end_poll(cqx);
	EXPECT_EQ(consumer(), 5u);
}

TEST_F(CqEx, EndPollReleasesTheCurrentEntryOnly)
{
	produce(0, 10);
	produce(1, 11);
	struct ibv_poll_cq_attr attr = {};
	ASSERT_EQ(ibv_start_poll(cqx, &attr), 0);
	ibv_end_poll(cqx);
	EXPECT_EQ(consumer(), 1u);
	/* The old API sees the rest of the same ring. */
	struct ibv_wc wc[4];
	ASSERT_EQ(ibv_poll_cq(ibv_cq_ex_to_cq(cqx), 4, wc), 1);
	EXPECT_EQ(wc[0].wr_id, 11u);
	EXPECT_EQ(wc[0].imm_data, htonl(0xabcd0001));
	EXPECT_EQ(consumer(), 2u);
}

TEST_F(CqEx, OverwrittenRingIsAnError)
{
	__atomic_store_n(&cq->hdr->producer, kEntries + 1, __ATOMIC_RELEASE);
	struct ibv_poll_cq_attr attr = {};
	EXPECT_EQ(ibv_start_poll(cqx, &attr), EIO);
	EXPECT_EQ(ibv_start_poll(cqx, &attr), EIO);	/* lock not held */
}

TEST(CqExCreate, UnsupportedRequestsFailEarly)
{
	struct ibv_context ctx = {};
	ctx.cmd_fd = -1;
	auto attempt = [&](auto edit) {
		struct ibv_cq_init_attr_ex a = {};
		a.cqe = 16;
		a.wc_flags = IBV_WC_STANDARD_FLAGS;
		edit(a);
		errno = 0;
		EXPECT_EQ(sroce_create_cq_ex(&ctx, &a), nullptr);
		return errno;
	};
	for (uint64_t f : {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, IBV_WC_EX_WITH_CVLAN,
			   IBV_WC_EX_WITH_FLOW_TAG, IBV_WC_EX_WITH_TM_INFO,
			   IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK})
		EXPECT_EQ(attempt([f](auto &a) { a.wc_flags |= f; }), EOPNOTSUPP) << f;
	/* a parent domain is accepted, but it must be one */
	EXPECT_EQ(attempt([](auto &a) { a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD; }), EINVAL);
	sroce::pd plain{};
	plain.ibv.context = &ctx;
	EXPECT_EQ(attempt([&](auto &a) {
			  a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
			  a.parent_domain = &plain.ibv;
		  }),
		  EINVAL);
	EXPECT_EQ(attempt([](auto &a) {
			  a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
			  a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
		  }),
		  EOPNOTSUPP);
}

TEST(ParentDomain, StandsForItsProtectionDomain)
{
	struct ibv_context ctx = {}, other = {};
	ctx.cmd_fd = other.cmd_fd = -1;
	sroce::pd pd{};
	pd.ibv.context = &ctx;
	pd.ibv.handle = 7;
	pd.pdn = 3;
	struct ibv_parent_domain_init_attr a = {};
	auto refused = [&](auto edit) {
		struct ibv_parent_domain_init_attr b = a;
		edit(b);
		errno = 0;
		EXPECT_EQ(sroce_alloc_parent_domain(&ctx, &b), nullptr);
		return errno;
	};
	a.pd = &pd.ibv;
	EXPECT_EQ(refused([](auto &b) { b.pd = nullptr; }), EINVAL);
	EXPECT_EQ(refused([](auto &b) { b.td = reinterpret_cast<struct ibv_td *>(8); }), EINVAL);
	EXPECT_EQ(refused([](auto &b) { b.comp_mask = 1u << 2; }), EOPNOTSUPP);
	pd.ibv.context = &other;
	EXPECT_EQ(refused([](auto &) {}), EINVAL);	/* another context's PD */
	pd.ibv.context = &ctx;

	int cookie = 0;
	a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	a.pd_context = &cookie;
	struct ibv_pd *par = sroce_alloc_parent_domain(&ctx, &a);
	ASSERT_NE(par, nullptr);
	EXPECT_EQ(par->handle, 7u);	/* commands name the protection domain */
	EXPECT_EQ(par->context, &ctx);
	EXPECT_EQ(sroce::get_pd(par)->pd_context, &cookie);
	EXPECT_EQ(refused([&](auto &b) { b.pd = par; }), EINVAL);	/* no nesting */
	EXPECT_EQ(sroce_dealloc_pd(&pd.ibv), EBUSY);

	/* a CQ, QP or SRQ on the parent domain holds it, not a plain PD */
	EXPECT_EQ(sroce::parent_hold(&pd.ibv), nullptr);
	EXPECT_EQ(sroce::parent_hold(nullptr), nullptr);
	sroce::pd *held = sroce::parent_hold(par);
	ASSERT_EQ(held, sroce::get_pd(par));
	EXPECT_EQ(sroce_dealloc_pd(par), EBUSY);
	sroce::parent_release(held);
	sroce::parent_release(nullptr);

	EXPECT_EQ(sroce_dealloc_pd(par), 0);
	EXPECT_EQ(pd.parents.load(), 0u);
}

/* A fake ring: cons 1, producer 7 of 8 slots, completions of QPs 5 and 9. */
TEST(CqClean, DropsOneQpsCompletionsInOrder)
{
	alignas(64) static unsigned char ring[SROCE_CQ_RING_ENTRIES_OFF + 8 * sizeof(ib_uverbs_wc)];
	std::memset(ring, 0, sizeof(ring));
	auto *cq = static_cast<sroce::cq *>(std::calloc(1, sizeof(sroce::cq)));
	cq->map = ring;
	cq->hdr = reinterpret_cast<sroce_cq_ring_hdr *>(ring);
	auto *wc = reinterpret_cast<ib_uverbs_wc *>(ring + SROCE_CQ_RING_ENTRIES_OFF);
	cq->ring = wc;
	cq->entries = 8;
	cq->cons = 1;
	cq->hdr->consumer = 1;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	const uint32_t qpn[] = {0, 5, 9, 5, 9, 9, 5};	/* slots 1..6 */
	for (uint32_t i = 1; i < 7; i++) {
		wc[i].qp_num = qpn[i];
		wc[i].wr_id = 100 + i;
		wc[i].opcode = i == 3 ? IBV_WC_RECV : IBV_WC_SEND;
	}
	cq->hdr->producer = 7;

	/* QP 5 on an SRQ: its receive completion (slot 3) stays */
	sroce::cq_clean(&cq->ibv, 5, true);
	EXPECT_EQ(cq->cons, 3u);
	EXPECT_EQ(cq->hdr->consumer, 3u);
	struct ibv_wc out[8];
	ASSERT_EQ(sroce_poll_cq(&cq->ibv, 8, out), 4);
	const uint64_t want[] = {102, 103, 104, 105};
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(out[i].wr_id, want[i]) << i;
	/* nothing left to drop, nothing moves */
	sroce::cq_clean(&cq->ibv, 9, false);
	EXPECT_EQ(cq->cons, 7u);
	pthread_spin_destroy(&cq->lock);
	std::free(cq);
}

TEST(ObjectLayout, QpSrqAhCqBackPointers)
{
	auto *qp = static_cast<sroce::qp *>(std::calloc(1, sizeof(sroce::qp)));
	EXPECT_EQ(sroce::get_qp(&qp->vqp.qp), qp);
	EXPECT_EQ(sroce::get_qp(&qp->vqp.qp_ex), qp);
	std::free(qp);
	sroce::srq srq{};
	EXPECT_EQ(sroce::get_srq(&srq.ibv), &srq);
	EXPECT_EQ(sroce::get_srq(&srq.vsrq.srq), &srq);
	sroce::xrcd xrcd{};
	EXPECT_EQ(sroce::get_xrcd(&xrcd.vxrcd.xrcd), &xrcd);
	sroce::ah ah{};
	EXPECT_EQ(sroce::get_ah(&ah.ibv), &ah);
	auto *cq = static_cast<sroce::cq *>(std::calloc(1, sizeof(sroce::cq)));
	EXPECT_EQ(sroce::get_cq(&cq->ibv), cq);
	EXPECT_EQ(sroce::get_cq(&cq->ibv_ex), cq);
	EXPECT_EQ(ibv_cq_ex_to_cq(&cq->ibv_ex), &cq->ibv);
	std::free(cq);
}

} // namespace
