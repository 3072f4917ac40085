// SPDX-License-Identifier: GPL-2.0
// Work queue rings and WQE encoding (userspace/provider/wq.h) on plain
// memory: geometry checks, reservation and the full condition, producer
// publication, the doorbell decision and command, and the byte layout of
// send and receive WQEs.
#include <arpa/inet.h>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "wq.h"

namespace {

using namespace sroce;

/* A ring's memory: header plus entries slots of wqe_size bytes. */
struct RingMem {
	std::vector<unsigned char> bytes;
	uint32_t entries, wqe_size;

	RingMem(uint32_t n, uint32_t size)
		: bytes(SROCE_WQ_SLOTS_OFF + size_t{n} * size, 0), entries(n), wqe_size(size)
	{
	}
	void *map() { return bytes.data(); }
	sroce_wq_hdr *hdr() { return reinterpret_cast<sroce_wq_hdr *>(bytes.data()); }
	unsigned char *slot(uint32_t i)
	{
		return bytes.data() + SROCE_WQ_SLOTS_OFF + size_t{i % entries} * wqe_size;
	}
};

TEST(WqGeometry, AcceptsWellFormedRings)
{
	EXPECT_TRUE(wq::geometry_ok(4096, 16, 128, wq::kSendHdr));
	EXPECT_TRUE(wq::geometry_ok(SROCE_WQ_SLOTS_OFF + 16 * 128, 16, 128, wq::kSendHdr));
	EXPECT_TRUE(wq::geometry_ok(0, 0, 0, wq::kSendHdr));	/* no ring */
	EXPECT_TRUE(wq::geometry_ok(4096, 1, 16, wq::kRecvHdr));
}

TEST(WqGeometry, RejectsMalformedRings)
{
	EXPECT_FALSE(wq::geometry_ok(4096, 0, 128, wq::kSendHdr));	/* size without ring */
	EXPECT_FALSE(wq::geometry_ok(4096, 12, 128, wq::kSendHdr));	/* entries */
	EXPECT_FALSE(wq::geometry_ok(4096, 16, 96, wq::kSendHdr));	/* wqe_size */
	EXPECT_FALSE(wq::geometry_ok(4096, 16, 32, wq::kSendHdr));	/* below header */
	EXPECT_FALSE(wq::geometry_ok(SROCE_WQ_SLOTS_OFF + 16 * 128 - 1, 16, 128,
				     wq::kSendHdr));			/* too short */
	EXPECT_FALSE(wq::geometry_ok(uint64_t{1} << 33, 16, 128, wq::kSendHdr));
	EXPECT_FALSE(wq::geometry_ok(uint64_t{1} << 32, uint32_t{1} << 31, 64,
				     wq::kSendHdr));			/* beyond 4 GiB */
}

TEST(WqGeometry, SlotCapacity)
{
	EXPECT_EQ(wq::send_slot_sges(64), 0u);
	EXPECT_EQ(wq::send_slot_sges(128), 4u);
	EXPECT_EQ(wq::send_slot_inline(128), 64u);
	EXPECT_EQ(wq::send_slot_inline(1024), 960u);
	EXPECT_EQ(wq::recv_slot_sges(64), 3u);
	EXPECT_EQ(wq::recv_slot_sges(16), 0u);
}

TEST(WqRing, FullAtDepthAndFreedByConsumer)
{
	RingMem m(8, 64);
	wq::ring r;
	wq::attach(r, m.map(), 8, 64, 8);

	for (int i = 0; i < 8; i++) {
		ASSERT_TRUE(wq::reserve(r)) << i;
		wq::advance(r);
	}
	EXPECT_FALSE(wq::reserve(r));
	/* The kernel releases two slots. */
	__atomic_store_n(&m.hdr()->consumer, 2u, __ATOMIC_RELEASE);
	EXPECT_TRUE(wq::reserve(r));
	wq::advance(r);
	EXPECT_TRUE(wq::reserve(r));
	wq::advance(r);
	EXPECT_FALSE(wq::reserve(r));
	EXPECT_EQ(r.prod, 10u);
}

TEST(WqRing, DepthBelowEntriesIsHonoured)
{
	RingMem m(8, 64);
	wq::ring r;
	wq::attach(r, m.map(), 8, 64, 5);	/* max_wr 5 in an 8-slot ring */
	int n = 0;
	while (wq::reserve(r)) {
		wq::advance(r);
		n++;
	}
	EXPECT_EQ(n, 5);
}

TEST(WqRing, ConsumerAheadOfProducerReadsFull)
{
	RingMem m(8, 64);
	wq::ring r;
	wq::attach(r, m.map(), 8, 64, 8);
	m.hdr()->consumer = 5;	/* the kernel claims WQEs never posted */
	EXPECT_FALSE(wq::reserve(r));
}

TEST(WqRing, NoRingIsAlwaysFull)
{
	wq::ring r;
	wq::attach(r, nullptr, 0, 0, 16);
	EXPECT_FALSE(wq::reserve(r));
}

TEST(WqRing, PublishIsTheOnlyProducerStore)
{
	RingMem m(8, 64);
	wq::ring r;
	wq::attach(r, m.map(), 8, 64, 8);
	for (int i = 0; i < 3; i++) {
		ASSERT_TRUE(wq::reserve(r));
		wq::advance(r);
	}
	EXPECT_EQ(m.hdr()->producer, 0u);
	wq::publish(r);
	EXPECT_EQ(m.hdr()->producer, 3u);

	/* Rolled-back WQEs are never published and their slots come back. */
	const uint32_t start = r.prod;
	for (int i = 0; i < 5; i++) {
		ASSERT_TRUE(wq::reserve(r));
		wq::advance(r);
	}
	EXPECT_FALSE(wq::reserve(r));
	wq::rollback(r, start);
	EXPECT_EQ(r.prod, 3u);
	EXPECT_EQ(m.hdr()->producer, 3u);
	int n = 0;
	while (wq::reserve(r)) {
		wq::advance(r);
		n++;
	}
	EXPECT_EQ(n, 5);
}

TEST(WqRing, SlotsWrapAroundTheCounter)
{
	RingMem m(4, 64);
	m.hdr()->producer = 0xfffffffeu;
	m.hdr()->consumer = 0xfffffffeu;
	wq::ring r;
	wq::attach(r, m.map(), 4, 64, 4);
	EXPECT_EQ(r.prod, 0xfffffffeu);
	std::vector<unsigned char *> seen;
	for (int i = 0; i < 4; i++) {
		ASSERT_TRUE(wq::reserve(r));
		seen.push_back(static_cast<unsigned char *>(wq::slot(r)));
		wq::advance(r);
	}
	EXPECT_FALSE(wq::reserve(r));
	/* 0xfffffffe & 3 = 2, then 3, 0, 1. */
	EXPECT_EQ(seen[0], m.slot(2));
	EXPECT_EQ(seen[1], m.slot(3));
	EXPECT_EQ(seen[2], m.slot(0));
	EXPECT_EQ(seen[3], m.slot(1));
	wq::publish(r);
	EXPECT_EQ(m.hdr()->producer, 2u);
	m.hdr()->consumer = 1u;
	EXPECT_TRUE(wq::reserve(r));
}

TEST(WqDoorbell, DecisionFollowsSqIdle)
{
	RingMem m(4, 64);
	wq::ring r;
	wq::attach(r, m.map(), 4, 64, 4);
	m.hdr()->sq_idle = 0;
	EXPECT_FALSE(wq::need_doorbell(r));
	m.hdr()->sq_idle = 1;
	EXPECT_TRUE(wq::need_doorbell(r));
}

TEST(WqDoorbell, WritesAnEmptyPostSend)
{
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	ASSERT_EQ(wq::ring_doorbell(sv[0], 0x1234), 0);

	unsigned char buf[256];
	const ssize_t n = recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT);
	ASSERT_EQ(n, static_cast<ssize_t>(sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_send)));
	ib_uverbs_cmd_hdr h;
	std::memcpy(&h, buf, sizeof(h));
	EXPECT_EQ(h.command, static_cast<uint32_t>(IB_USER_VERBS_CMD_POST_SEND));
	EXPECT_EQ(h.in_words * 4u, n);
	EXPECT_EQ(h.out_words * 4u, sizeof(ib_uverbs_post_send_resp));
	ib_uverbs_post_send c;
	std::memcpy(&c, buf + sizeof(h), sizeof(c));
	EXPECT_NE(c.response, 0u);
	EXPECT_EQ(c.qp_handle, 0x1234u);
	EXPECT_EQ(c.wr_count, 0u);
	EXPECT_EQ(c.sge_count, 0u);
	EXPECT_GE(c.wqe_size, sizeof(ib_uverbs_send_wr));
	EXPECT_LT(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), 0);

	/* A closed peer is reported, not ignored. */
	signal(SIGPIPE, SIG_IGN);
	close(sv[1]);
	EXPECT_EQ(wq::ring_doorbell(sv[0], 1), EPIPE);
	close(sv[0]);
}

/* ------------------------------------------------------------------------ */
/* Send WQEs.                                                                */

class SendWqe : public ::testing::Test {
protected:
	alignas(64) unsigned char slot[256];
	wq::send_caps caps;
	char data[128];
	struct ibv_sge sge[4];
	struct ibv_send_wr wr = {};

	void SetUp() override
	{
		std::memset(slot, 0xa5, sizeof(slot));	/* stale contents */
		caps.qp_type = IBV_QPT_RC;
		caps.max_sge = 4;
		caps.max_inline = 64;
		for (size_t i = 0; i < sizeof(data); i++)
			data[i] = static_cast<char>(i);
		for (uint32_t i = 0; i < 4; i++)
			sge[i] = {.addr = 0x10000u * (i + 1), .length = 100 + i,
				  .lkey = 0x40 + i};
		wr.wr_id = 0xfeedfacecafebeefull;
		wr.sg_list = sge;
		wr.num_sge = 2;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
	}

	const sroce_send_wqe &wqe() const
	{
		return *reinterpret_cast<const sroce_send_wqe *>(slot);
	}
	int write(uint32_t ah_num = 0) { return wq::write_send_wqe(slot, caps, wr, ah_num); }
};

TEST_F(SendWqe, SendWithSgeList)
{
	wr.qp_type.xrc.remote_srqn = 0x42;	/* not an XRC QP: ignored */
	ASSERT_EQ(write(), 0);
	const sroce_send_wqe &w = wqe();
	EXPECT_EQ(w.wr_id, 0xfeedfacecafebeefull);
	EXPECT_EQ(w.opcode, static_cast<uint32_t>(IB_UVERBS_WR_SEND));
	EXPECT_EQ(w.send_flags, static_cast<uint32_t>(IBV_SEND_SIGNALED));
	EXPECT_EQ(w.num_sge, 2u);
	EXPECT_EQ(w.inline_len, 0u);
	EXPECT_EQ(w.imm_data, 0u);
	EXPECT_EQ(w.xrc_srqn, 0u);
	for (unsigned char b : w.wr.raw)
		EXPECT_EQ(b, 0);
	const auto *s = reinterpret_cast<const sroce_sge *>(slot + sizeof(sroce_send_wqe));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(s[i].addr, sge[i].addr);
		EXPECT_EQ(s[i].length, sge[i].length);
		EXPECT_EQ(s[i].lkey, sge[i].lkey);
	}
}

TEST_F(SendWqe, ImmediateDataKeepsNetworkOrder)
{
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(0x11223344);
	ASSERT_EQ(write(), 0);
	const unsigned char *imm = slot + offsetof(sroce_send_wqe, imm_data);
	EXPECT_EQ(imm[0], 0x11);
	EXPECT_EQ(imm[1], 0x22);
	EXPECT_EQ(imm[2], 0x33);
	EXPECT_EQ(imm[3], 0x44);

	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.rdma.remote_addr = 0x7f0000001000ull;
	wr.wr.rdma.rkey = 0xabcd;
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().opcode, static_cast<uint32_t>(IB_UVERBS_WR_RDMA_WRITE_WITH_IMM));
	EXPECT_EQ(std::memcmp(slot + offsetof(sroce_send_wqe, imm_data), "\x11\x22\x33\x44", 4), 0);
	EXPECT_EQ(wqe().wr.rdma.remote_addr, 0x7f0000001000ull);
	EXPECT_EQ(wqe().wr.rdma.rkey, 0xabcdu);
}

TEST_F(SendWqe, SendWithInvalidateCarriesRkeyInHostOrder)
{
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = 0x01020304;
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().opcode, static_cast<uint32_t>(IB_UVERBS_WR_SEND_WITH_INV));
	EXPECT_EQ(wqe().imm_data, 0x01020304u);
}

TEST_F(SendWqe, RdmaReadAndWrite)
{
	for (auto op : {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ}) {
		wr.opcode = op;
		wr.wr.rdma.remote_addr = 0x123456789abcull;
		wr.wr.rdma.rkey = 0x77;
		ASSERT_EQ(write(), 0) << op;
		EXPECT_EQ(wqe().opcode, static_cast<uint32_t>(op));
		EXPECT_EQ(wqe().wr.rdma.remote_addr, 0x123456789abcull);
		EXPECT_EQ(wqe().wr.rdma.rkey, 0x77u);
		EXPECT_EQ(wqe().wr.rdma.reserved, 0u);
	}
}

TEST_F(SendWqe, Atomics)
{
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = 0x1000;
	wr.wr.atomic.compare_add = 0x1111222233334444ull;
	wr.wr.atomic.swap = 0x5555666677778888ull;
	wr.wr.atomic.rkey = 0x99;
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().opcode, static_cast<uint32_t>(IB_UVERBS_WR_ATOMIC_CMP_AND_SWP));
	EXPECT_EQ(wqe().wr.atomic.remote_addr, 0x1000u);
	EXPECT_EQ(wqe().wr.atomic.compare_add, 0x1111222233334444ull);
	EXPECT_EQ(wqe().wr.atomic.swap, 0x5555666677778888ull);
	EXPECT_EQ(wqe().wr.atomic.rkey, 0x99u);
	EXPECT_EQ(wqe().num_sge, 1u);

	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 5;
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().opcode, static_cast<uint32_t>(IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD));
	EXPECT_EQ(wqe().wr.atomic.compare_add, 5u);
}

TEST_F(SendWqe, UdAddress)
{
	caps.qp_type = IBV_QPT_UD;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(7);
	wr.wr.ud.remote_qpn = 0x12345;
	wr.wr.ud.remote_qkey = 0x80010000;
	ASSERT_EQ(write(42), 0);
	EXPECT_EQ(wqe().wr.ud.ah_num, 42u);
	EXPECT_EQ(wqe().wr.ud.remote_qpn, 0x12345u);
	EXPECT_EQ(wqe().wr.ud.remote_qkey, 0x80010000u);
	EXPECT_EQ(wqe().wr.ud.reserved, 0u);
	EXPECT_EQ(std::memcmp(slot + offsetof(sroce_send_wqe, imm_data), "\0\0\0\7", 4), 0);
}

TEST_F(SendWqe, InlineDataIsCopiedIntoTheSlot)
{
	sge[0] = {.addr = reinterpret_cast<uintptr_t>(data), .length = 10, .lkey = 0};
	sge[1] = {.addr = reinterpret_cast<uintptr_t>(data + 50), .length = 20, .lkey = 0xdead};
	wr.send_flags = IBV_SEND_INLINE;
	ASSERT_EQ(write(), 0);
	const sroce_send_wqe &w = wqe();
	EXPECT_EQ(w.send_flags, static_cast<uint32_t>(IBV_SEND_INLINE));
	EXPECT_EQ(w.num_sge, 0u);
	EXPECT_EQ(w.inline_len, 30u);
	const unsigned char *p = slot + sizeof(sroce_send_wqe);
	EXPECT_EQ(std::memcmp(p, data, 10), 0);
	EXPECT_EQ(std::memcmp(p + 10, data + 50, 20), 0);

	/* The caller's buffers may be reused at once. */
	std::memset(data, 0, sizeof(data));
	EXPECT_EQ(p[5], 5);
}

TEST_F(SendWqe, InlineLengthLimit)
{
	sge[0] = {.addr = reinterpret_cast<uintptr_t>(data), .length = 60, .lkey = 0};
	sge[1] = {.addr = reinterpret_cast<uintptr_t>(data), .length = 4, .lkey = 0};
	wr.send_flags = IBV_SEND_INLINE;
	EXPECT_EQ(write(), 0);	/* exactly max_inline */
	EXPECT_EQ(wqe().inline_len, 64u);
	sge[1].length = 5;
	EXPECT_EQ(write(), EINVAL);
	/* Huge lengths do not wrap the check. */
	sge[1].length = 0xffffffffu;
	EXPECT_EQ(write(), EINVAL);
	/* Inline has no SGE limit of its own, only the byte count. */
	caps.max_sge = 1;
	sge[1].length = 4;
	EXPECT_EQ(write(), 0);
}

TEST_F(SendWqe, InlineOnlyForOpcodesWithPayload)
{
	/* Ignored (as ConnectX does) where the operation has no payload of its
	 * own: the SGEs stay SGEs, the flag does not reach the slot. */
	sge[0] = {.addr = 0x1000, .length = 8, .lkey = 0x77};
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	wr.num_sge = 1;
	for (auto op : {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD}) {
		wr.opcode = op;
		ASSERT_EQ(write(), 0) << op;
		EXPECT_EQ(wqe().send_flags, static_cast<uint32_t>(IBV_SEND_SIGNALED)) << op;
		EXPECT_EQ(wqe().num_sge, 1u) << op;
		EXPECT_EQ(wqe().inline_len, 0u) << op;
	}
	wr.send_flags = IBV_SEND_INLINE;
	wr.num_sge = 0;
	for (auto op : {IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_INV,
			IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM}) {
		wr.opcode = op;
		EXPECT_EQ(write(), 0) << op;
		EXPECT_EQ(wqe().inline_len, 0u);
	}
}

TEST_F(SendWqe, SgeCountLimit)
{
	wr.num_sge = 4;
	EXPECT_EQ(write(), 0);
	EXPECT_EQ(wqe().num_sge, 4u);
	wr.num_sge = 5;
	EXPECT_EQ(write(), EINVAL);
	wr.num_sge = -1;
	EXPECT_EQ(write(), EINVAL);
	wr.num_sge = 0;
	wr.sg_list = nullptr;
	EXPECT_EQ(write(), 0);
	EXPECT_EQ(wqe().num_sge, 0u);
}

TEST_F(SendWqe, OpcodesPerQpType)
{
	struct Case {
		ibv_qp_type type;
		ibv_wr_opcode op;
		bool ok;
	} cases[] = {
		{IBV_QPT_RC, IBV_WR_SEND, true},
		{IBV_QPT_RC, IBV_WR_RDMA_READ, true},
		{IBV_QPT_RC, IBV_WR_ATOMIC_FETCH_AND_ADD, true},
		{IBV_QPT_RC, IBV_WR_SEND_WITH_INV, true},
		{IBV_QPT_RC, IBV_WR_LOCAL_INV, true},
		{IBV_QPT_UC, IBV_WR_LOCAL_INV, true},
		{IBV_QPT_UD, IBV_WR_LOCAL_INV, false},
		{IBV_QPT_UD, IBV_WR_BIND_MW, false},
		{IBV_QPT_RC, IBV_WR_TSO, false},
		{IBV_QPT_RC, IBV_WR_DRIVER1, false},
		{IBV_QPT_RC, static_cast<ibv_wr_opcode>(99), false},
		{IBV_QPT_UC, IBV_WR_SEND_WITH_IMM, true},
		{IBV_QPT_UC, IBV_WR_RDMA_WRITE, true},
		{IBV_QPT_UC, IBV_WR_RDMA_WRITE_WITH_IMM, true},
		{IBV_QPT_UC, IBV_WR_RDMA_READ, false},
		{IBV_QPT_UC, IBV_WR_ATOMIC_CMP_AND_SWP, false},
		{IBV_QPT_UC, IBV_WR_SEND_WITH_INV, false},
		{IBV_QPT_UD, IBV_WR_SEND, true},
		{IBV_QPT_UD, IBV_WR_SEND_WITH_IMM, true},
		{IBV_QPT_UD, IBV_WR_RDMA_WRITE, false},
		{IBV_QPT_UD, IBV_WR_RDMA_READ, false},
		{IBV_QPT_UD, IBV_WR_ATOMIC_CMP_AND_SWP, false},
		/* XRC_SEND: RC's set */
		{IBV_QPT_XRC_SEND, IBV_WR_SEND, true},
		{IBV_QPT_XRC_SEND, IBV_WR_SEND_WITH_IMM, true},
		{IBV_QPT_XRC_SEND, IBV_WR_SEND_WITH_INV, true},
		{IBV_QPT_XRC_SEND, IBV_WR_RDMA_WRITE, true},
		{IBV_QPT_XRC_SEND, IBV_WR_RDMA_WRITE_WITH_IMM, true},
		{IBV_QPT_XRC_SEND, IBV_WR_RDMA_READ, true},
		{IBV_QPT_XRC_SEND, IBV_WR_ATOMIC_CMP_AND_SWP, true},
		{IBV_QPT_XRC_SEND, IBV_WR_ATOMIC_FETCH_AND_ADD, true},
		{IBV_QPT_XRC_SEND, IBV_WR_LOCAL_INV, true},
		{IBV_QPT_XRC_SEND, IBV_WR_TSO, false},
		/* XRC_RECV: no send queue */
		{IBV_QPT_XRC_RECV, IBV_WR_SEND, false},
		{IBV_QPT_XRC_RECV, IBV_WR_RDMA_WRITE, false},
	};
	wr.num_sge = 1;
	for (const Case &c : cases) {
		caps.qp_type = c.type;
		wr.opcode = c.op;
		EXPECT_EQ(write(), c.ok ? 0 : EINVAL) << c.type << " " << c.op;
	}
}

TEST_F(SendWqe, FlagsAndSignalAll)
{
	wr.send_flags = IBV_SEND_FENCE | IBV_SEND_SOLICITED;
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().send_flags, static_cast<uint32_t>(IBV_SEND_FENCE | IBV_SEND_SOLICITED));
	caps.sig_all = true;
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().send_flags,
		  static_cast<uint32_t>(IBV_SEND_FENCE | IBV_SEND_SOLICITED | IBV_SEND_SIGNALED));
	wr.send_flags = IBV_SEND_IP_CSUM;	/* raw packet QPs only */
	EXPECT_EQ(write(), EINVAL);
	wr.send_flags = 1u << 20;
	EXPECT_EQ(write(), EINVAL);
}

/* XRC_SEND: every WQE names the XRC SRQ at the target, 24 bits. */
TEST_F(SendWqe, XrcSrqnFromTheWorkRequest)
{
	caps.qp_type = IBV_QPT_XRC_SEND;
	wr.qp_type.xrc.remote_srqn = 0xabcdef;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.rkey = 0x77;
	wr.wr.rdma.remote_addr = 0x9000;
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().xrc_srqn, 0xabcdefu);
	EXPECT_EQ(wqe().wr.rdma.rkey, 0x77u);
	EXPECT_EQ(wqe().num_sge, 2u);
	/* local operations too */
	wr.qp_type.xrc.remote_srqn = 5;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = 0x1234;
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().xrc_srqn, 5u);
	EXPECT_EQ(wqe().imm_data, 0x1234u);
	/* more than 24 bits */
	wr.opcode = IBV_WR_SEND;
	wr.qp_type.xrc.remote_srqn = 0x1000000;
	EXPECT_EQ(write(), EINVAL);
	wr.qp_type.xrc.remote_srqn = 0xffffff;
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().xrc_srqn, 0xffffffu);
}

TEST_F(SendWqe, PutXrcOnXrcSendQpsOnly)
{
	auto *w = reinterpret_cast<sroce_send_wqe *>(slot);
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wq::put_xrc(w, caps, 7), EINVAL);	/* RC */
	EXPECT_EQ(w->xrc_srqn, 0u);
	caps.qp_type = IBV_QPT_XRC_SEND;
	EXPECT_EQ(wq::put_xrc(w, caps, 7), 0);
	EXPECT_EQ(w->xrc_srqn, 7u);
	EXPECT_EQ(wq::put_xrc(w, caps, 1u << 24), EINVAL);
	EXPECT_EQ(w->xrc_srqn, 7u);
}

/* ------------------------------------------------------------------------ */
/* Receive WQEs.                                                             */

TEST(RecvWqe, Layout)
{
	alignas(64) unsigned char slot[128];
	std::memset(slot, 0xa5, sizeof(slot));
	struct ibv_sge sge[3] = {
		{.addr = 0x1000, .length = 64, .lkey = 1},
		{.addr = 0x2000, .length = 128, .lkey = 2},
		{.addr = 0x3000, .length = 4096, .lkey = 3},
	};
	struct ibv_recv_wr wr = {};
	wr.wr_id = 99;
	wr.sg_list = sge;
	wr.num_sge = 3;
	ASSERT_EQ(wq::write_recv_wqe(slot, 3, wr), 0);
	const auto *w = reinterpret_cast<const sroce_recv_wqe *>(slot);
	EXPECT_EQ(w->wr_id, 99u);
	EXPECT_EQ(w->num_sge, 3u);
	EXPECT_EQ(w->reserved, 0u);
	EXPECT_EQ(std::memcmp(slot + sizeof(sroce_recv_wqe), sge, sizeof(sge)), 0);

	wr.num_sge = 4;
	EXPECT_EQ(wq::write_recv_wqe(slot, 3, wr), EINVAL);
	wr.num_sge = -2;
	EXPECT_EQ(wq::write_recv_wqe(slot, 3, wr), EINVAL);
}

TEST(RecvWqe, ChainStopsAtFullRingAndPublishesTheRest)
{
	RingMem m(4, 32);
	wq::ring r;
	wq::attach(r, m.map(), 4, 32, 4);
	struct ibv_sge sge = {.addr = 0x1000, .length = 8, .lkey = 5};
	struct ibv_recv_wr wrs[6] = {};
	for (int i = 0; i < 6; i++) {
		wrs[i].wr_id = 100 + i;
		wrs[i].sg_list = &sge;
		wrs[i].num_sge = 1;
		wrs[i].next = i < 5 ? &wrs[i + 1] : nullptr;
	}
	struct ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(wq::post_recv_chain(r, 1, wrs, &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[4]);
	EXPECT_EQ(m.hdr()->producer, 4u);
	for (uint32_t i = 0; i < 4; i++)
		EXPECT_EQ(reinterpret_cast<sroce_recv_wqe *>(m.slot(i))->wr_id, 100u + i);

	/* An invalid request in the middle: the ones before it are posted. */
	m.hdr()->consumer = 4;
	wrs[1].num_sge = 2;
	bad = nullptr;
	EXPECT_EQ(wq::post_recv_chain(r, 1, wrs, &bad), EINVAL);
	EXPECT_EQ(bad, &wrs[1]);
	EXPECT_EQ(m.hdr()->producer, 5u);
}

} // namespace

/* BIND_MW and LOCAL_INV carry no SGEs, whatever sg_list holds (sroce-abi.h). */
TEST_F(SendWqe, BindMwLayoutAndChecks)
{
	struct ibv_mr mr = {};
	mr.lkey = 0x4321;
	struct ibv_mw mw = {};
	mw.rkey = 0x12345607;
	mw.type = IBV_MW_TYPE_2;
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = &mw;
	wr.bind_mw.rkey = 0x12345608;
	wr.bind_mw.bind_info = {&mr, 0x7000, 0x2000, IBV_ACCESS_REMOTE_WRITE};
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().opcode, static_cast<uint32_t>(IBV_WR_BIND_MW));
	EXPECT_EQ(wqe().num_sge, 0u);
	EXPECT_EQ(wqe().imm_data, 0x12345607u);
	EXPECT_EQ(wqe().wr.bind.addr, 0x7000u);
	EXPECT_EQ(wqe().wr.bind.length, 0x2000u);
	EXPECT_EQ(wqe().wr.bind.mr_lkey, 0x4321u);
	EXPECT_EQ(wqe().wr.bind.new_rkey, 0x12345608u);
	EXPECT_EQ(wqe().wr.bind.access, static_cast<uint32_t>(IBV_ACCESS_REMOTE_WRITE));
	EXPECT_EQ(wqe().wr.bind.flags, 0u);

	/* the new key may change the low 8 bits only */
	wr.bind_mw.rkey = 0x12345708;
	EXPECT_EQ(write(), EINVAL);
	wr.bind_mw.rkey = 0x12345608;
	/* type 1 windows are bound with ibv_bind_mw() */
	mw.type = IBV_MW_TYPE_1;
	EXPECT_EQ(write(), EINVAL);
	mw.type = IBV_MW_TYPE_2;
	wr.bind_mw.bind_info.mr = nullptr;
	EXPECT_EQ(write(), EINVAL);
	wr.bind_mw.bind_info.mr = &mr;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_ZERO_BASED;
	EXPECT_EQ(write(), EOPNOTSUPP);
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_MW_BIND;
	EXPECT_EQ(write(), EINVAL);
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	wr.bind_mw.mw = nullptr;
	EXPECT_EQ(write(), EINVAL);
	wr.bind_mw.mw = &mw;
	wr.send_flags |= IBV_SEND_INLINE;	/* ignored: a bind has no payload */
	EXPECT_EQ(write(), 0);
	EXPECT_EQ(wqe().send_flags & IBV_SEND_INLINE, 0u);
	wr.send_flags &= ~IBV_SEND_INLINE;
	EXPECT_EQ(write(), 0);

	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = 0xabcdef01;
	ASSERT_EQ(write(), 0);
	EXPECT_EQ(wqe().imm_data, 0xabcdef01u);
	EXPECT_EQ(wqe().num_sge, 0u);
}
