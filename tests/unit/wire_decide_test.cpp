// SPDX-License-Identifier: GPL-2.0
// Transport decisions (decide.h): the responder's PSN classification and
// opcode order, the requester's reading of an AETH. The responder's rules
// are also checked against a transcription of kernel/resp.c as it decided
// before these functions existed, over random packet sequences.
#include "wire_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

const sroce_opcode_info *op(uint8_t code)
{
	return sroce_opcode_lookup(code);
}

sroce_psn_class classify(sroce_transport t, uint32_t epsn, uint32_t psn, uint8_t code,
			 bool nak_sent = false, bool uc_drop = false)
{
	sroce_resp_psn_state s{epsn, nak_sent, uc_drop};
	return sroce_resp_psn_classify(t, &s, psn, op(code));
}

TEST(WireDecide, RcPsn)
{
	const auto RC = SROCE_TRANSPORT_RC;
	EXPECT_EQ(classify(RC, 100, 100, SROCE_OP_RC_SEND_MIDDLE), SROCE_PSN_NEW);
	EXPECT_EQ(classify(RC, 100, 100, SROCE_OP_RC_SEND_ONLY, true), SROCE_PSN_NEW);
	EXPECT_EQ(classify(RC, 100, 99, SROCE_OP_RC_SEND_ONLY), SROCE_PSN_DUP);
	EXPECT_EQ(classify(RC, 100, 99, SROCE_OP_RC_RDMA_READ_REQUEST, true), SROCE_PSN_DUP);
	EXPECT_EQ(classify(RC, 100, 101, SROCE_OP_RC_SEND_ONLY), SROCE_PSN_SEQ_NAK);
	EXPECT_EQ(classify(RC, 100, 101, SROCE_OP_RC_SEND_ONLY, true), SROCE_PSN_SEQ_DROP);
	// around the 24-bit wrap
	EXPECT_EQ(classify(RC, 0xffffff, 0, SROCE_OP_RC_SEND_ONLY), SROCE_PSN_SEQ_NAK);
	EXPECT_EQ(classify(RC, 0, 0xffffff, SROCE_OP_RC_SEND_ONLY), SROCE_PSN_DUP);
	EXPECT_EQ(classify(RC, 0xffffff, 0x1ffffff, SROCE_OP_RC_SEND_ONLY), SROCE_PSN_NEW);
	// half the space away counts as before (sroce_psn_diff)
	EXPECT_EQ(classify(RC, 0, 0x800000, SROCE_OP_RC_SEND_ONLY), SROCE_PSN_DUP);
	EXPECT_EQ(classify(RC, 0, 0x7fffff, SROCE_OP_RC_SEND_ONLY), SROCE_PSN_SEQ_NAK);
	// RC ignores uc_drop
	EXPECT_EQ(classify(RC, 5, 5, SROCE_OP_RC_SEND_MIDDLE, false, true), SROCE_PSN_NEW);
	// XRC has RC's rules
	const auto XRC = SROCE_TRANSPORT_XRC;
	EXPECT_EQ(classify(XRC, 100, 99, 0xa4), SROCE_PSN_DUP);
	EXPECT_EQ(classify(XRC, 100, 101, 0xa4), SROCE_PSN_SEQ_NAK);
	EXPECT_EQ(classify(XRC, 100, 101, 0xa4, true), SROCE_PSN_SEQ_DROP);
	EXPECT_EQ(classify(XRC, 100, 100, 0xa1), SROCE_PSN_NEW);
}

TEST(WireDecide, UcPsn)
{
	const auto UC = SROCE_TRANSPORT_UC;
	EXPECT_EQ(classify(UC, 100, 100, SROCE_OP_UC_SEND_MIDDLE), SROCE_PSN_NEW);
	EXPECT_EQ(classify(UC, 100, 100, SROCE_OP_UC_SEND_FIRST), SROCE_PSN_NEW);
	EXPECT_EQ(classify(UC, 100, 102, SROCE_OP_UC_SEND_FIRST), SROCE_PSN_UC_RESYNC);
	EXPECT_EQ(classify(UC, 100, 102, SROCE_OP_UC_RDMA_WRITE_ONLY), SROCE_PSN_UC_RESYNC);
	EXPECT_EQ(classify(UC, 100, 102, SROCE_OP_UC_SEND_MIDDLE), SROCE_PSN_UC_LOST);
	EXPECT_EQ(classify(UC, 100, 102, SROCE_OP_UC_RDMA_WRITE_LAST), SROCE_PSN_UC_LOST);
	// UC has no duplicates: behind epsn is a gap as well
	EXPECT_EQ(classify(UC, 100, 99, SROCE_OP_UC_SEND_ONLY), SROCE_PSN_UC_RESYNC);
	EXPECT_EQ(classify(UC, 100, 99, SROCE_OP_UC_SEND_LAST), SROCE_PSN_UC_LOST);
	// skipping to the next message
	EXPECT_EQ(classify(UC, 100, 100, SROCE_OP_UC_SEND_MIDDLE, false, true), SROCE_PSN_UC_SKIP);
	EXPECT_EQ(classify(UC, 100, 100, SROCE_OP_UC_SEND_LAST_WITH_IMMEDIATE, false, true),
		  SROCE_PSN_UC_SKIP);
	EXPECT_EQ(classify(UC, 100, 100, SROCE_OP_UC_SEND_FIRST, false, true), SROCE_PSN_NEW);
	EXPECT_EQ(classify(UC, 100, 100, SROCE_OP_UC_SEND_ONLY, false, true), SROCE_PSN_NEW);
	EXPECT_EQ(classify(UC, 100, 101, SROCE_OP_UC_SEND_MIDDLE, false, true), SROCE_PSN_UC_LOST);
	// UC ignores nak_sent
	EXPECT_EQ(classify(UC, 7, 7, SROCE_OP_UC_SEND_MIDDLE, true), SROCE_PSN_NEW);
	// UD has no PSN rules
	EXPECT_EQ(classify(SROCE_TRANSPORT_UD, 7, 9000, SROCE_OP_UD_SEND_ONLY, true, true),
		  SROCE_PSN_NEW);
	EXPECT_TRUE(sroce_psn_class_exec(SROCE_PSN_NEW));
	EXPECT_TRUE(sroce_psn_class_exec(SROCE_PSN_UC_RESYNC));
	for (auto c : {SROCE_PSN_DUP, SROCE_PSN_SEQ_NAK, SROCE_PSN_SEQ_DROP, SROCE_PSN_UC_LOST,
		       SROCE_PSN_UC_SKIP})
		EXPECT_FALSE(sroce_psn_class_exec(c)) << c;
}

// The responder's sequence state and what it did with one packet.
struct RespModel {
	uint32_t epsn = 0;
	bool nak_sent = false, uc_drop = false, in_msg = false;
	uint8_t msg_kind = 0;
	// outcome of the last packet
	bool exec = false, dup = false, seq_nak = false, rc_invalid = false;

	bool operator==(const RespModel &o) const
	{
		return epsn == o.epsn && nak_sent == o.nak_sent && uc_drop == o.uc_drop &&
		       in_msg == o.in_msg && (!in_msg || msg_kind == o.msg_kind) &&
		       exec == o.exec && dup == o.dup && seq_nak == o.seq_nak &&
		       rc_invalid == o.rc_invalid;
	}
	void clear_outcome() { exec = dup = seq_nak = rc_invalid = false; }
	void executed(uint32_t psn, const sroce_opcode_info *oi)
	{
		exec = true;
		in_msg = !(oi->flags & SROCE_OPF_END);
		msg_kind = oi->kind;
		epsn = sroce_psn_inc(psn);
	}
	void uc_drop_msg(uint32_t psn, const sroce_opcode_info *oi)	// sroce_uc_drop()
	{
		in_msg = false;
		uc_drop = !(oi->flags & SROCE_OPF_END);
		epsn = sroce_psn_inc(psn);
	}
};

// kernel/resp.c sroce_resp_process() + the sequence part of sroce_resp_exec(),
// transcribed as they were (every execution succeeds).
void reference(RespModel &m, bool rc, uint32_t psn, const sroce_opcode_info *oi)
{
	m.clear_outcome();
	int d = sroce_psn_diff(psn, m.epsn);
	if (rc) {
		if (d > 0) {
			if (!m.nak_sent) {
				m.seq_nak = true;
				m.nak_sent = true;
			}
			return;
		}
		if (d < 0) {
			m.dup = true;
			return;
		}
		m.nak_sent = false;
	} else {
		if (d != 0) {
			m.in_msg = false;
			m.uc_drop = true;
		}
		if (m.uc_drop) {
			if (!(oi->flags & SROCE_OPF_START)) {
				m.epsn = sroce_psn_inc(psn);
				return;
			}
			m.uc_drop = false;
		}
	}
	bool seq_ok = !m.in_msg ? (oi->flags & SROCE_OPF_START) :
		      (!(oi->flags & SROCE_OPF_START) && oi->kind == m.msg_kind);
	if (!seq_ok) {
		if (rc) {
			m.rc_invalid = true;
			m.in_msg = false;	// sroce_resp_fatal() stops the responder
			return;
		}
		if (!(oi->flags & SROCE_OPF_START)) {
			m.uc_drop_msg(psn, oi);
			return;
		}
		m.in_msg = false;
	}
	m.executed(psn, oi);
}

// The same through decide.h, doing what each verdict's comment says.
void with_decide(RespModel &m, bool rc, uint32_t psn, const sroce_opcode_info *oi)
{
	sroce_transport t = rc ? SROCE_TRANSPORT_RC : SROCE_TRANSPORT_UC;
	sroce_resp_psn_state s{m.epsn, m.nak_sent, m.uc_drop};

	m.clear_outcome();
	switch (sroce_resp_psn_classify(t, &s, psn, oi)) {
	case SROCE_PSN_NEW:
		if (rc)
			m.nak_sent = false;
		else
			m.uc_drop = false;
		break;
	case SROCE_PSN_DUP:
		m.dup = true;
		return;
	case SROCE_PSN_SEQ_NAK:
		m.seq_nak = true;
		m.nak_sent = true;
		return;
	case SROCE_PSN_SEQ_DROP:
		return;
	case SROCE_PSN_UC_RESYNC:
		m.in_msg = false;
		m.uc_drop = false;
		break;
	case SROCE_PSN_UC_LOST:
		m.in_msg = false;
		m.uc_drop = true;
		m.epsn = sroce_psn_inc(psn);
		return;
	case SROCE_PSN_UC_SKIP:
		m.epsn = sroce_psn_inc(psn);
		return;
	}
	switch (sroce_resp_seq_check(t, m.in_msg, m.msg_kind, oi)) {
	case SROCE_SEQ_OK:
		break;
	case SROCE_SEQ_RC_INVALID:
		m.rc_invalid = true;
		m.in_msg = false;
		return;
	case SROCE_SEQ_UC_DROP:
		m.uc_drop_msg(psn, oi);
		return;
	case SROCE_SEQ_UC_RESTART:
		m.in_msg = false;
		break;
	}
	m.executed(psn, oi);
}

TEST(WireDecide, SameAsResponderBefore)
{
	std::mt19937 rng(42);
	for (bool rc : {true, false}) {
		std::vector<uint8_t> ops;
		uint8_t base = rc ? 0x00 : 0x20;
		for (int o = 0; o < 0x20; o++) {
			const sroce_opcode_info *oi = op((uint8_t)(base + o));
			if ((oi->flags & SROCE_OPF_SUPPORTED) && (oi->flags & SROCE_OPF_REQUEST))
				ops.push_back((uint8_t)(base + o));
		}
		for (int run = 0; run < 200; run++) {
			RespModel a, b;
			a.epsn = b.epsn = rng() & 0xffffff;
			for (int i = 0; i < 500; i++) {
				// mostly in order, sometimes a gap, a repeat or far away
				uint32_t psn = a.epsn;
				switch (rng() % 8) {
				case 0: psn = sroce_psn_add(a.epsn, 1 + rng() % 4); break;
				case 1: psn = sroce_psn_add(a.epsn, SROCE_PSN_MAX - rng() % 4); break;
				case 2: psn = rng(); break;
				default: break;
				}
				const sroce_opcode_info *oi = op(ops[rng() % ops.size()]);
				reference(a, rc, psn, oi);
				with_decide(b, rc, psn, oi);
				ASSERT_TRUE(a == b) << (rc ? "RC" : "UC") << " run " << run << " step "
						    << i << " " << oi->name << " psn " << psn;
			}
		}
	}
}

TEST(WireDecide, OpcodeOrder)
{
	// outside a message: only starts
	EXPECT_TRUE(sroce_opcode_seq_ok(false, 0, op(SROCE_OP_RC_SEND_FIRST)));
	EXPECT_TRUE(sroce_opcode_seq_ok(false, 0, op(SROCE_OP_RC_RDMA_READ_REQUEST)));
	EXPECT_TRUE(sroce_opcode_seq_ok(false, 0, op(SROCE_OP_RC_FETCH_ADD)));
	EXPECT_FALSE(sroce_opcode_seq_ok(false, 0, op(SROCE_OP_RC_SEND_MIDDLE)));
	EXPECT_FALSE(sroce_opcode_seq_ok(false, 0, op(SROCE_OP_RC_RDMA_WRITE_LAST)));
	// inside: the same kind goes on
	EXPECT_TRUE(sroce_opcode_seq_ok(true, SROCE_KIND_SEND, op(SROCE_OP_RC_SEND_MIDDLE)));
	EXPECT_TRUE(sroce_opcode_seq_ok(true, SROCE_KIND_SEND,
					op(SROCE_OP_RC_SEND_LAST_WITH_INVALIDATE)));
	EXPECT_FALSE(sroce_opcode_seq_ok(true, SROCE_KIND_SEND, op(SROCE_OP_RC_RDMA_WRITE_MIDDLE)));
	EXPECT_FALSE(sroce_opcode_seq_ok(true, SROCE_KIND_SEND, op(SROCE_OP_RC_SEND_FIRST)));
	EXPECT_FALSE(sroce_opcode_seq_ok(true, SROCE_KIND_WRITE, op(SROCE_OP_RC_RDMA_READ_REQUEST)));

	EXPECT_TRUE(sroce_opcode_may_follow(SROCE_OP_RC_SEND_FIRST, SROCE_OP_RC_SEND_MIDDLE));
	EXPECT_TRUE(sroce_opcode_may_follow(SROCE_OP_RC_SEND_MIDDLE, SROCE_OP_RC_SEND_LAST));
	EXPECT_TRUE(sroce_opcode_may_follow(SROCE_OP_RC_SEND_FIRST,
					    SROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE));
	EXPECT_TRUE(sroce_opcode_may_follow(SROCE_OP_RC_SEND_LAST, SROCE_OP_RC_RDMA_WRITE_FIRST));
	EXPECT_TRUE(sroce_opcode_may_follow(SROCE_OP_RC_COMPARE_SWAP, SROCE_OP_RC_SEND_ONLY));
	EXPECT_TRUE(sroce_opcode_may_follow(SROCE_OP_UC_RDMA_WRITE_FIRST,
					    SROCE_OP_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE));
	EXPECT_FALSE(sroce_opcode_may_follow(SROCE_OP_RC_SEND_FIRST, SROCE_OP_RC_SEND_ONLY));
	EXPECT_FALSE(sroce_opcode_may_follow(SROCE_OP_RC_SEND_LAST, SROCE_OP_RC_SEND_MIDDLE));
	EXPECT_FALSE(sroce_opcode_may_follow(SROCE_OP_RC_RDMA_WRITE_FIRST, SROCE_OP_RC_SEND_LAST));
	EXPECT_FALSE(sroce_opcode_may_follow(SROCE_OP_RC_SEND_FIRST, SROCE_OP_UC_SEND_MIDDLE));
	EXPECT_FALSE(sroce_opcode_may_follow(SROCE_OP_RC_SEND_ONLY, SROCE_OP_RC_ACKNOWLEDGE));
	EXPECT_FALSE(sroce_opcode_may_follow(SROCE_OP_RC_ACKNOWLEDGE, SROCE_OP_RC_SEND_ONLY));
	EXPECT_FALSE(sroce_opcode_may_follow(0x15, SROCE_OP_RC_SEND_ONLY));

	// verdicts
	EXPECT_EQ(sroce_resp_seq_check(SROCE_TRANSPORT_RC, true, SROCE_KIND_SEND,
				       op(SROCE_OP_RC_SEND_MIDDLE)), SROCE_SEQ_OK);
	EXPECT_EQ(sroce_resp_seq_check(SROCE_TRANSPORT_RC, true, SROCE_KIND_SEND,
				       op(SROCE_OP_RC_SEND_FIRST)), SROCE_SEQ_RC_INVALID);
	EXPECT_EQ(sroce_resp_seq_check(SROCE_TRANSPORT_RC, false, 0,
				       op(SROCE_OP_RC_SEND_LAST)), SROCE_SEQ_RC_INVALID);
	EXPECT_EQ(sroce_resp_seq_check(SROCE_TRANSPORT_XRC, true, SROCE_KIND_SEND,
				       op(0xa0)), SROCE_SEQ_RC_INVALID);
	EXPECT_EQ(sroce_resp_seq_check(SROCE_TRANSPORT_UC, true, SROCE_KIND_SEND,
				       op(SROCE_OP_UC_RDMA_WRITE_ONLY)), SROCE_SEQ_UC_RESTART);
	EXPECT_EQ(sroce_resp_seq_check(SROCE_TRANSPORT_UC, true, SROCE_KIND_SEND,
				       op(SROCE_OP_UC_RDMA_WRITE_MIDDLE)), SROCE_SEQ_UC_DROP);
	EXPECT_EQ(sroce_resp_seq_check(SROCE_TRANSPORT_UC, false, 0,
				       op(SROCE_OP_UC_SEND_LAST)), SROCE_SEQ_UC_DROP);
}

// Every message the requester builds (sroce_opcode_find over sroce_msg_pos)
// is accepted packet by packet, one message after another; leaving out the
// FIRST or the LAST of a multi-packet message puts a later packet out of
// order (a lost MIDDLE is for the PSN check to see).
TEST(WireDecide, RequesterMessagesAreInOrder)
{
	struct Msg {
		sroce_op_kind kind;
		unsigned variant;
		uint32_t len;
	};
	const Msg msgs[] = {
		{SROCE_KIND_SEND, 0, 9000}, {SROCE_KIND_SEND, SROCE_OPF_IMM, 1},
		{SROCE_KIND_WRITE, 0, 4096}, {SROCE_KIND_SEND, SROCE_OPF_INV, 8193},
		{SROCE_KIND_READ_REQ, 0, 1 << 20}, {SROCE_KIND_WRITE, SROCE_OPF_IMM, 5000},
		{SROCE_KIND_ATOMIC, SROCE_OPF_FETCH_ADD, 8}, {SROCE_KIND_SEND, 0, 0},
	};
	for (sroce_transport t : {SROCE_TRANSPORT_RC, SROCE_TRANSPORT_UC, SROCE_TRANSPORT_XRC}) {
		std::vector<uint8_t> seq;
		for (const Msg &m : msgs) {
			uint32_t n = (m.kind == SROCE_KIND_SEND || m.kind == SROCE_KIND_WRITE) ?
				     sroce_msg_npkts(m.len, 4096) : 1;
			for (uint32_t k = 0; k < n; k++) {
				int o = sroce_opcode_find(t, m.kind, sroce_msg_pos(k, n), m.variant);
				if (o < 0) {
					// RC-only operations on UC
					EXPECT_EQ(t, SROCE_TRANSPORT_UC);
					break;
				}
				uint32_t plen = std::min<uint32_t>(4096, m.len - std::min(m.len, k * 4096));
				if (!(op((uint8_t)o)->flags & SROCE_OPF_PAYLOAD))
					plen = 0;
				EXPECT_TRUE(sroce_payload_mtu_ok(op((uint8_t)o), 4096, plen));
				seq.push_back((uint8_t)o);
			}
		}
		bool in_msg = false;
		unsigned kind = 0;
		for (size_t i = 0; i < seq.size(); i++) {
			const sroce_opcode_info *oi = op(seq[i]);
			ASSERT_TRUE(sroce_opcode_seq_ok(in_msg, kind, oi)) << i << " " << oi->name;
			if (i) {
				EXPECT_TRUE(sroce_opcode_may_follow(seq[i - 1], seq[i]));
			}
			in_msg = !(oi->flags & SROCE_OPF_END);
			kind = oi->kind;
		}
		EXPECT_FALSE(in_msg);
		for (size_t drop = 0; drop < seq.size(); drop++) {
			const sroce_opcode_info *d = op(seq[drop]);
			if (d->pos != SROCE_POS_FIRST && d->pos != SROCE_POS_LAST)
				continue;
			bool broken = false;
			in_msg = false;
			kind = 0;
			for (size_t i = 0; i < seq.size() && !broken; i++) {
				if (i == drop)
					continue;
				const sroce_opcode_info *oi = op(seq[i]);
				broken = !sroce_opcode_seq_ok(in_msg, kind, oi);
				in_msg = !(oi->flags & SROCE_OPF_END);
				kind = oi->kind;
			}
			EXPECT_TRUE(broken || in_msg) << "dropped " << drop << " " << d->name;
		}
	}
}

TEST(WireDecide, PayloadLength)
{
	EXPECT_TRUE(sroce_payload_mtu_ok(op(SROCE_OP_RC_SEND_FIRST), 1024, 1024));
	EXPECT_FALSE(sroce_payload_mtu_ok(op(SROCE_OP_RC_SEND_FIRST), 1024, 1020));
	EXPECT_FALSE(sroce_payload_mtu_ok(op(SROCE_OP_UC_RDMA_WRITE_MIDDLE), 1024, 1028));
	EXPECT_TRUE(sroce_payload_mtu_ok(op(SROCE_OP_RC_SEND_LAST), 1024, 0));
	EXPECT_TRUE(sroce_payload_mtu_ok(op(SROCE_OP_RC_SEND_ONLY), 1024, 1024));
	EXPECT_FALSE(sroce_payload_mtu_ok(op(SROCE_OP_RC_SEND_ONLY), 1024, 1025));
	EXPECT_FALSE(sroce_payload_mtu_ok(op(SROCE_OP_UD_SEND_ONLY), 256, 257));
	// not SEND or WRITE: not checked here
	EXPECT_TRUE(sroce_payload_mtu_ok(op(SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE), 1024, 12));
	EXPECT_TRUE(sroce_payload_mtu_ok(op(SROCE_OP_RC_RDMA_READ_REQUEST), 1024, 0));
}

sroce_ack ack(uint8_t syn, uint32_t msn = 0)
{
	sroce_ack a;
	memset(&a, 0xcc, sizeof(a));	// every field must be written
	sroce_ack_decode(syn, msn, &a);
	return a;
}

TEST(WireDecide, AethKinds)
{
	EXPECT_EQ(ack(0x00).kind, SROCE_ACK_ACK);
	EXPECT_EQ(ack(0x1f).kind, SROCE_ACK_ACK);
	EXPECT_EQ(ack(0x20).kind, SROCE_ACK_RNR);
	EXPECT_EQ(ack(0x3f).kind, SROCE_ACK_RNR);
	EXPECT_EQ(ack(0x40).kind, SROCE_ACK_RESERVED);
	EXPECT_EQ(ack(0x5f).kind, SROCE_ACK_RESERVED);
	EXPECT_EQ(ack(0x60).kind, SROCE_ACK_NAK_SEQ);
	EXPECT_EQ(ack(0x61).kind, SROCE_ACK_NAK_INV_REQ);
	EXPECT_EQ(ack(0x62).kind, SROCE_ACK_NAK_REM_ACCESS);
	EXPECT_EQ(ack(0x63).kind, SROCE_ACK_NAK_REM_OP);
	EXPECT_EQ(ack(0x64).kind, SROCE_ACK_NAK_INV_RD_REQ);
	EXPECT_EQ(ack(0x65).kind, SROCE_ACK_NAK_RESERVED);
	EXPECT_EQ(ack(0x7f).kind, SROCE_ACK_NAK_RESERVED);
	EXPECT_EQ(ack(0xe0).kind, SROCE_ACK_NAK_SEQ);	// reserved bit 7 ignored
	EXPECT_EQ(ack(0x80).kind, SROCE_ACK_ACK);

	// agrees with the encoders, every value
	for (unsigned v = 0; v < 32; v++) {
		sroce_ack a = ack(sroce_aeth_syn_ack(v), 0x1abcdef);
		EXPECT_EQ(a.kind, SROCE_ACK_ACK);
		EXPECT_EQ(a.credit_code, v);
		EXPECT_EQ(a.value, v);
		EXPECT_EQ(a.rnr_us, 0u);
		EXPECT_EQ(a.msn, 0xabcdefu);
		a = ack(sroce_aeth_syn_rnr(v));
		EXPECT_EQ(a.kind, SROCE_ACK_RNR);
		EXPECT_EQ(a.rnr_us, sroce_rnr_timer_us(v));
		EXPECT_EQ(a.value, v);
		EXPECT_EQ(a.credits, 0u);
		EXPECT_FALSE(sroce_ack_is_fatal(&a));
	}
	const struct {
		unsigned code;
		sroce_ack_kind kind;
		bool fatal;
	} naks[] = {
		{SROCE_NAK_PSN_SEQ_ERROR, SROCE_ACK_NAK_SEQ, false},
		{SROCE_NAK_INVALID_REQUEST, SROCE_ACK_NAK_INV_REQ, true},
		{SROCE_NAK_REMOTE_ACCESS_ERROR, SROCE_ACK_NAK_REM_ACCESS, true},
		{SROCE_NAK_REMOTE_OP_ERROR, SROCE_ACK_NAK_REM_OP, true},
		{SROCE_NAK_INVALID_RD_REQUEST, SROCE_ACK_NAK_INV_RD_REQ, true},
		{9, SROCE_ACK_NAK_RESERVED, true},
	};
	for (const auto &n : naks) {
		sroce_ack a = ack(sroce_aeth_syn(SROCE_AETH_NAK, n.code), 7);
		EXPECT_EQ(a.kind, n.kind) << n.code;
		EXPECT_EQ(sroce_ack_is_fatal(&a), n.fatal) << n.code;
		EXPECT_EQ(a.value, n.code);
		EXPECT_EQ(a.msn, 7u);
	}
	sroce_ack a = ack(0x00);
	EXPECT_FALSE(sroce_ack_is_fatal(&a));
	a = ack(0x40);
	EXPECT_FALSE(sroce_ack_is_fatal(&a));

	// from the header bytes
	uint8_t b[SROCE_AETH_LEN];
	sroce_aeth h{sroce_aeth_syn_rnr(14), 0x000102};
	sroce_aeth_encode(b, &h);
	sroce_aeth_interpret(b, &a);
	EXPECT_EQ(a.kind, SROCE_ACK_RNR);
	EXPECT_EQ(a.rnr_us, 1280u);
	EXPECT_EQ(a.msn, 0x102u);
}

// IBTA table 44, credit count encoding.
TEST(WireDecide, AethCredits)
{
	const uint32_t want[32] = {0,    1,    2,    3,     4,     6,     8,     12,
				   16,   24,   32,   48,    64,    96,    128,   192,
				   256,  384,  512,  768,   1024,  1536,  2048,  3072,
				   4096, 6144, 8192, 12288, 16384, 24576, 32768, 0};
	for (unsigned c = 0; c < 32; c++) {
		EXPECT_EQ(sroce_aeth_credits(c), want[c]) << c;
		EXPECT_EQ(ack(sroce_aeth_syn_ack(c)).credits, want[c]) << c;
	}
	EXPECT_EQ(sroce_aeth_credits(0x25), 6u);	// only the low five bits count
}

}  // namespace
