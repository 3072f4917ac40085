// SPDX-License-Identifier: GPL-2.0
// Opcode table sanity: lengths, positions, classes, the supported set.
#include "wire_test_util.h"

#include <gtest/gtest.h>

#include <string>

namespace {

int sum_hdrs(const sroce_opcode_info *oi)
{
	int n = 0;
	for (int h = 0; h < SROCE_HDR_NR; h++)
		if (oi->hdrs & SROCE_HDRF(h))
			n += sroce_hdr_len[h];
	return n;
}

const char *transport_prefix(int t)
{
	switch (t) {
	case SROCE_TRANSPORT_RC: return "RC_";
	case SROCE_TRANSPORT_UC: return "UC_";
	case SROCE_TRANSPORT_RD: return "RD_";
	case SROCE_TRANSPORT_UD: return "UD_";
	case SROCE_TRANSPORT_CNP: return "CNP";
	case SROCE_TRANSPORT_XRC: return "XRC_";
	default: return "?";
	}
}

TEST(WireOpcode, EveryEntryConsistent)
{
	for (int op = 0; op < 256; op++) {
		SCOPED_TRACE(op);
		const sroce_opcode_info *oi = sroce_opcode_lookup((uint8_t)op);
		if (!(oi->flags & SROCE_OPF_KNOWN)) {
			EXPECT_EQ(oi->name, nullptr);
			EXPECT_EQ(oi->hdrs, 0);
			EXPECT_EQ(oi->flags, 0);
			EXPECT_EQ(oi->pos, SROCE_POS_NONE);
			continue;
		}
		ASSERT_NE(oi->name, nullptr);
		std::string name = oi->name;
		EXPECT_EQ(oi->transport, sroce_opcode_transport((uint8_t)op));
		EXPECT_EQ(name.rfind(transport_prefix(oi->transport), 0), 0u) << name;
		EXPECT_TRUE(oi->hdrs & SROCE_HDRF(SROCE_HDR_BTH)) << name;
		EXPECT_EQ(oi->hdr_len, sum_hdrs(oi)) << name;
		EXPECT_EQ(oi->hdr_len % 4, 0) << name;
		// exactly one of request / response (a CNP is neither)
		if (oi->kind == SROCE_KIND_CNP) {
			EXPECT_FALSE(oi->flags & (SROCE_OPF_REQUEST | SROCE_OPF_RESPONSE));
		} else {
			EXPECT_NE(!!(oi->flags & SROCE_OPF_REQUEST),
				  !!(oi->flags & SROCE_OPF_RESPONSE)) << name;
		}
		// position <-> start/end flags <-> name suffix
		bool start = oi->flags & SROCE_OPF_START, end = oi->flags & SROCE_OPF_END;
		switch (oi->pos) {
		case SROCE_POS_FIRST:
			EXPECT_TRUE(start && !end) << name;
			EXPECT_NE(name.find("_FIRST"), std::string::npos) << name;
			break;
		case SROCE_POS_MIDDLE:
			EXPECT_TRUE(!start && !end) << name;
			EXPECT_NE(name.find("_MIDDLE"), std::string::npos) << name;
			break;
		case SROCE_POS_LAST:
			EXPECT_TRUE(!start && end) << name;
			EXPECT_NE(name.find("_LAST"), std::string::npos) << name;
			break;
		case SROCE_POS_ONLY:
			EXPECT_TRUE(start && end) << name;
			EXPECT_EQ(name.find("_FIRST"), std::string::npos) << name;
			EXPECT_EQ(name.find("_MIDDLE"), std::string::npos) << name;
			EXPECT_EQ(name.find("_LAST"), std::string::npos) << name;
			break;
		default:
			ADD_FAILURE() << name << " has no position";
		}
		// name and header/flag agreement
		bool imm = name.find("IMMEDIATE") != std::string::npos;
		EXPECT_EQ(imm, sroce_opcode_has(oi, SROCE_HDR_IMMDT)) << name;
		EXPECT_EQ(imm, !!(oi->flags & SROCE_OPF_IMM)) << name;
		bool inv = name.find("INVALIDATE") != std::string::npos;
		EXPECT_EQ(inv, sroce_opcode_has(oi, SROCE_HDR_IETH)) << name;
		EXPECT_EQ(inv, !!(oi->flags & SROCE_OPF_INV)) << name;
		EXPECT_EQ(oi->transport == SROCE_TRANSPORT_UD, sroce_opcode_has(oi, SROCE_HDR_DETH) &&
			  !sroce_opcode_has(oi, SROCE_HDR_RDETH)) << name;
		if (oi->flags & SROCE_OPF_RESPONSE) {
			EXPECT_TRUE(oi->kind == SROCE_KIND_ACK || oi->kind == SROCE_KIND_READ_RESP ||
				    oi->kind == SROCE_KIND_ATOMIC_ACK) << name;
			EXPECT_FALSE(oi->flags & SROCE_OPF_ACKED) << name;
		}
		// only reliable transports get answers
		if (oi->flags & SROCE_OPF_ACKED) {
			EXPECT_TRUE(oi->transport == SROCE_TRANSPORT_RC ||
				    oi->transport == SROCE_TRANSPORT_RD ||
				    oi->transport == SROCE_TRANSPORT_XRC) << name;
		}
		if (oi->transport == SROCE_TRANSPORT_RC && (oi->flags & SROCE_OPF_REQUEST)) {
			EXPECT_TRUE(oi->flags & SROCE_OPF_ACKED) << name;
		}
		// payload-carrying kinds
		bool payload = oi->kind == SROCE_KIND_SEND || oi->kind == SROCE_KIND_WRITE ||
			       oi->kind == SROCE_KIND_READ_RESP || oi->kind == SROCE_KIND_ATOMIC_WRITE;
		EXPECT_EQ(payload, !!(oi->flags & SROCE_OPF_PAYLOAD)) << name;
		// a RETH only where a message starts (RDMA WRITE first/only, READ request)
		if (sroce_opcode_has(oi, SROCE_HDR_RETH)) {
			EXPECT_TRUE(start) << name;
		}
	}
}

TEST(WireOpcode, SupportedSet)
{
	std::vector<uint8_t> want;
	for (int op = 0x00; op <= 0x14; op++)
		want.push_back((uint8_t)op);
	want.push_back(0x16);
	want.push_back(0x17);
	want.push_back(0x1d);
	for (int op = 0x20; op <= 0x2b; op++)
		want.push_back((uint8_t)op);
	want.push_back(0x64);
	want.push_back(0x65);
	want.push_back(0x81);
	// XRC: the RC set at 0xa0
	for (int op = 0xa0; op <= 0xb4; op++)
		want.push_back((uint8_t)op);
	want.push_back(0xb6);
	want.push_back(0xb7);
	want.push_back(0xbd);
	EXPECT_EQ(wiretest::supported_opcodes(), want);
	// known but unsupported: RD, FLUSH (RC and XRC)
	for (uint8_t op : {0x1c, 0x40, 0x55, 0xbc})
		EXPECT_EQ(sroce_opcode_lookup(op)->flags & (SROCE_OPF_KNOWN | SROCE_OPF_SUPPORTED),
			  SROCE_OPF_KNOWN) << (int)op;
	// reserved
	for (uint8_t op : {0x15, 0x18, 0x19, 0x1a, 0x1b, 0x1e, 0x1f, 0xb8, 0xb9, 0x2c, 0x3f, 0x56, 0x60, 0x63, 0x66, 0x80, 0x82,
			   0xb5, 0xba, 0xc0, 0xff})
		EXPECT_FALSE(sroce_opcode_lookup(op)->flags & SROCE_OPF_KNOWN) << (int)op;
}

TEST(WireOpcode, KnownLayouts)
{
	struct L {
		uint8_t op;
		int len;
		const char *name;
	} cases[] = {
		{SROCE_OP_RC_SEND_FIRST, 12, "RC_SEND_FIRST"},
		{SROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE, 16, "RC_SEND_LAST_WITH_IMMEDIATE"},
		{SROCE_OP_RC_RDMA_WRITE_FIRST, 28, "RC_RDMA_WRITE_FIRST"},
		{SROCE_OP_RC_RDMA_WRITE_MIDDLE, 12, "RC_RDMA_WRITE_MIDDLE"},
		{SROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 32, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE"},
		{SROCE_OP_RC_RDMA_READ_REQUEST, 28, "RC_RDMA_READ_REQUEST"},
		{SROCE_OP_RC_RDMA_READ_RESPONSE_FIRST, 16, "RC_RDMA_READ_RESPONSE_FIRST"},
		{SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE, 12, "RC_RDMA_READ_RESPONSE_MIDDLE"},
		{SROCE_OP_RC_RDMA_READ_RESPONSE_LAST, 16, "RC_RDMA_READ_RESPONSE_LAST"},
		{SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, 16, "RC_RDMA_READ_RESPONSE_ONLY"},
		{SROCE_OP_RC_ACKNOWLEDGE, 16, "RC_ACKNOWLEDGE"},
		{SROCE_OP_RC_ATOMIC_ACKNOWLEDGE, 24, "RC_ATOMIC_ACKNOWLEDGE"},
		{SROCE_OP_RC_COMPARE_SWAP, 40, "RC_COMPARE_SWAP"},
		{SROCE_OP_RC_FETCH_ADD, 40, "RC_FETCH_ADD"},
		{SROCE_OP_RC_SEND_LAST_WITH_INVALIDATE, 16, "RC_SEND_LAST_WITH_INVALIDATE"},
		{SROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE, 16, "RC_SEND_ONLY_WITH_INVALIDATE"},
		{SROCE_OP_UC_SEND_ONLY, 12, "UC_SEND_ONLY"},
		{SROCE_OP_UC_RDMA_WRITE_ONLY, 28, "UC_RDMA_WRITE_ONLY"},
		{SROCE_OP_UD_SEND_ONLY, 20, "UD_SEND_ONLY"},
		{SROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE, 24, "UD_SEND_ONLY_WITH_IMMEDIATE"},
		{SROCE_OP_CNP, 28, "CNP"},
	};
	for (const auto &c : cases) {
		const sroce_opcode_info *oi = sroce_opcode_lookup(c.op);
		EXPECT_EQ(oi->hdr_len, c.len) << c.name;
		EXPECT_STREQ(oi->name, c.name);
	}
	const sroce_opcode_info *w = sroce_opcode_lookup(SROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
	EXPECT_EQ(sroce_opcode_hdr_off(w, SROCE_HDR_BTH), 0);
	EXPECT_EQ(sroce_opcode_hdr_off(w, SROCE_HDR_RETH), 12);
	EXPECT_EQ(sroce_opcode_hdr_off(w, SROCE_HDR_IMMDT), 28);
	EXPECT_EQ(sroce_opcode_hdr_off(w, SROCE_HDR_AETH), -1);
	const sroce_opcode_info *aa = sroce_opcode_lookup(SROCE_OP_RC_ATOMIC_ACKNOWLEDGE);
	EXPECT_EQ(sroce_opcode_hdr_off(aa, SROCE_HDR_AETH), 12);
	EXPECT_EQ(sroce_opcode_hdr_off(aa, SROCE_HDR_ATOMICACKETH), 16);
	const sroce_opcode_info *ud = sroce_opcode_lookup(SROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE);
	EXPECT_EQ(sroce_opcode_hdr_off(ud, SROCE_HDR_DETH), 12);
	EXPECT_EQ(sroce_opcode_hdr_off(ud, SROCE_HDR_IMMDT), 20);
	const sroce_opcode_info *x = sroce_opcode_lookup(0xa0 + SROCE_OP_RC_RDMA_WRITE_ONLY);
	EXPECT_EQ(sroce_opcode_hdr_off(x, SROCE_HDR_XRCETH), 12);
	EXPECT_EQ(sroce_opcode_hdr_off(x, SROCE_HDR_RETH), 16);
	// XRC requests carry the XRCETH, responses do not
	for (int op = 0xa0; op <= 0xbd; op++) {
		const sroce_opcode_info *oi = sroce_opcode_lookup((uint8_t)op);
		if (!(oi->flags & SROCE_OPF_KNOWN))
			continue;
		EXPECT_EQ(sroce_opcode_has(oi, SROCE_HDR_XRCETH),
			  !!(oi->flags & SROCE_OPF_REQUEST)) << op;
	}
	EXPECT_EQ(sroce_opcode_find(SROCE_TRANSPORT_XRC, SROCE_KIND_SEND, SROCE_POS_ONLY,
				    SROCE_OPF_IMM), 0xa5);
	EXPECT_EQ(sroce_opcode_find(SROCE_TRANSPORT_XRC, SROCE_KIND_ACK, SROCE_POS_ONLY, 0), 0xb1);

	// classes
	EXPECT_TRUE(sroce_opcode_lookup(SROCE_OP_RC_ACKNOWLEDGE)->flags & SROCE_OPF_RESPONSE);
	EXPECT_TRUE(sroce_opcode_lookup(SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE)->flags & SROCE_OPF_RESPONSE);
	EXPECT_TRUE(sroce_opcode_lookup(SROCE_OP_RC_RDMA_READ_REQUEST)->flags & SROCE_OPF_ACKED);
	EXPECT_FALSE(sroce_opcode_lookup(SROCE_OP_UC_SEND_ONLY)->flags & SROCE_OPF_ACKED);
	EXPECT_FALSE(sroce_opcode_lookup(SROCE_OP_UD_SEND_ONLY)->flags & SROCE_OPF_ACKED);
	EXPECT_TRUE(sroce_opcode_lookup(SROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE)->flags & SROCE_OPF_COMP);
	EXPECT_FALSE(sroce_opcode_lookup(SROCE_OP_RC_RDMA_WRITE_LAST)->flags & SROCE_OPF_COMP);
	EXPECT_STREQ(sroce_hdr_name[SROCE_HDR_ATOMICACKETH], "AtomicAckETH");
}

// The precomputed offsets agree with summing the lengths of the headers
// before each one, in enum order.
TEST(WireOpcode, PrecomputedOffsets)
{
	for (int op = 0; op < 256; op++) {
		const sroce_opcode_info *oi = sroce_opcode_lookup((uint8_t)op);
		SCOPED_TRACE(op);
		int off = 0;
		for (int h = 0; h < SROCE_HDR_NR; h++) {
			if (oi->hdrs & SROCE_HDRF(h)) {
				EXPECT_EQ(oi->hdr_off[h], off) << sroce_hdr_name[h];
				EXPECT_EQ(sroce_opcode_hdr_off(oi, (sroce_hdr)h), off);
				off += sroce_hdr_len[h];
			} else {
				EXPECT_EQ(oi->hdr_off[h], 0) << sroce_hdr_name[h];
				EXPECT_EQ(sroce_opcode_hdr_off(oi, (sroce_hdr)h), -1);
			}
		}
		EXPECT_EQ(oi->hdr_len, off);
		EXPECT_EQ(sroce_opcode_payload_off(oi), (unsigned)off);
	}
	const sroce_opcode_info *rd = sroce_opcode_lookup(0x4b);	// RD WRITE ONLY w/ imm
	EXPECT_EQ(rd->hdr_off[SROCE_HDR_RDETH], 12);
	EXPECT_EQ(rd->hdr_off[SROCE_HDR_DETH], 16);
	EXPECT_EQ(rd->hdr_off[SROCE_HDR_RETH], 24);
	EXPECT_EQ(rd->hdr_off[SROCE_HDR_IMMDT], 40);
	EXPECT_EQ(rd->hdr_len, 44);
	const sroce_opcode_info *fl = sroce_opcode_lookup(0xbc);	// XRC FLUSH
	EXPECT_EQ(fl->hdr_off[SROCE_HDR_XRCETH], 12);
	EXPECT_EQ(fl->hdr_off[SROCE_HDR_FETH], 16);
	EXPECT_EQ(fl->hdr_off[SROCE_HDR_RETH], 20);
	EXPECT_EQ(sroce_opcode_lookup(SROCE_OP_CNP)->hdr_off[SROCE_HDR_CNP_RSVD], 12);
	EXPECT_EQ(sroce_opcode_lookup(SROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE)->hdr_off[SROCE_HDR_IETH],
		  12);
}

// Every known opcode is found again from its own description, and nothing
// else is found: for every description that is not an opcode, -1. The one
// liberty: FIRST and MIDDLE packets of a message with immediate or with
// invalidate are the plain FIRST and MIDDLE opcodes.
TEST(WireOpcode, InverseLookupRoundTrips)
{
	const unsigned variants[] = {0,
				     SROCE_OPF_IMM,
				     SROCE_OPF_INV,
				     SROCE_OPF_FETCH_ADD,
				     SROCE_OPF_IMM | SROCE_OPF_INV,
				     SROCE_OPF_IMM | SROCE_OPF_FETCH_ADD,
				     SROCE_OPF_INV | SROCE_OPF_FETCH_ADD,
				     SROCE_OPF_VARIANT};
	int found = 0;
	for (int op = 0; op < 256; op++) {
		const sroce_opcode_info *oi = sroce_opcode_lookup((uint8_t)op);
		if (!(oi->flags & SROCE_OPF_KNOWN))
			continue;
		EXPECT_EQ(sroce_opcode_find((sroce_transport)oi->transport, (sroce_op_kind)oi->kind,
					    (sroce_pos)oi->pos, oi->flags & SROCE_OPF_VARIANT),
			  op) << oi->name;
	}
	for (int t = 0; t <= SROCE_TRANSPORT_VENDOR + 1; t++)
		for (int k = 0; k <= SROCE_KIND_CNP + 1; k++)
			for (int p = 0; p <= SROCE_POS_ONLY + 1; p++)
				for (unsigned v : variants) {
					int op = sroce_opcode_find((sroce_transport)t, (sroce_op_kind)k,
								   (sroce_pos)p, v);
					if (op < 0) {
						EXPECT_EQ(op, -1);
						continue;
					}
					ASSERT_LT(op, 256);
					unsigned ve = v;
					if (p == SROCE_POS_FIRST || p == SROCE_POS_MIDDLE) {
						ve &= ~(unsigned)(SROCE_OPF_IMM | SROCE_OPF_INV);
						// the message can end with v
						EXPECT_GE(sroce_opcode_find((sroce_transport)t,
									    (sroce_op_kind)k,
									    SROCE_POS_LAST, v), 0);
					}
					found += ve == v;
					const sroce_opcode_info *oi = sroce_opcode_lookup((uint8_t)op);
					EXPECT_TRUE(oi->flags & SROCE_OPF_KNOWN);
					EXPECT_EQ(oi->transport, t);
					EXPECT_EQ(oi->kind, k);
					EXPECT_EQ(oi->pos, p);
					EXPECT_EQ(oi->flags & SROCE_OPF_VARIANT, ve);
				}
	int known = 0;
	for (int op = 0; op < 256; op++)
		known += !!(sroce_opcode_lookup((uint8_t)op)->flags & SROCE_OPF_KNOWN);
	EXPECT_EQ(found, known);	// a bijection between known opcodes and descriptions
	// undefined variant bits
	EXPECT_EQ(sroce_opcode_find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND, SROCE_POS_ONLY,
				    SROCE_OPF_PAYLOAD), -1);
	EXPECT_EQ(sroce_opcode_find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND, SROCE_POS_ONLY, 0x8000),
		  -1);
}

// What the requester and responder ask for.
TEST(WireOpcode, InverseLookupCallers)
{
	using T = sroce_transport;
	auto find = [](T t, sroce_op_kind k, sroce_pos p, unsigned v = 0) {
		return sroce_opcode_find(t, k, p, v);
	};
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND, SROCE_POS_FIRST), SROCE_OP_RC_SEND_FIRST);
	EXPECT_EQ(find(SROCE_TRANSPORT_UC, SROCE_KIND_SEND, SROCE_POS_MIDDLE), SROCE_OP_UC_SEND_MIDDLE);
	EXPECT_EQ(find(SROCE_TRANSPORT_UC, SROCE_KIND_SEND, SROCE_POS_LAST, SROCE_OPF_IMM),
		  SROCE_OP_UC_SEND_LAST_WITH_IMMEDIATE);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND, SROCE_POS_ONLY, SROCE_OPF_INV),
		  SROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND, SROCE_POS_LAST, SROCE_OPF_INV),
		  SROCE_OP_RC_SEND_LAST_WITH_INVALIDATE);
	EXPECT_EQ(find(SROCE_TRANSPORT_UC, SROCE_KIND_SEND, SROCE_POS_ONLY, SROCE_OPF_INV), -1);
	// ImmDt / IETH only in the last packet of the message
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND, SROCE_POS_FIRST, SROCE_OPF_IMM),
		  SROCE_OP_RC_SEND_FIRST);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND, SROCE_POS_MIDDLE, SROCE_OPF_INV),
		  SROCE_OP_RC_SEND_MIDDLE);
	EXPECT_EQ(find(SROCE_TRANSPORT_UC, SROCE_KIND_WRITE, SROCE_POS_MIDDLE, SROCE_OPF_IMM),
		  SROCE_OP_UC_RDMA_WRITE_MIDDLE);
	EXPECT_EQ(find(SROCE_TRANSPORT_UC, SROCE_KIND_SEND, SROCE_POS_FIRST, SROCE_OPF_INV), -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_WRITE, SROCE_POS_FIRST, SROCE_OPF_INV), -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND, SROCE_POS_FIRST,
		       SROCE_OPF_IMM | SROCE_OPF_INV), -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND, SROCE_POS_FIRST, SROCE_OPF_FETCH_ADD),
		  -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_WRITE, SROCE_POS_ONLY, SROCE_OPF_IMM),
		  SROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
	EXPECT_EQ(find(SROCE_TRANSPORT_UC, SROCE_KIND_WRITE, SROCE_POS_FIRST),
		  SROCE_OP_UC_RDMA_WRITE_FIRST);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_WRITE, SROCE_POS_LAST, SROCE_OPF_INV), -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_UD, SROCE_KIND_SEND, SROCE_POS_ONLY), SROCE_OP_UD_SEND_ONLY);
	EXPECT_EQ(find(SROCE_TRANSPORT_UD, SROCE_KIND_SEND, SROCE_POS_ONLY, SROCE_OPF_IMM),
		  SROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE);
	EXPECT_EQ(find(SROCE_TRANSPORT_UD, SROCE_KIND_SEND, SROCE_POS_FIRST), -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_UD, SROCE_KIND_WRITE, SROCE_POS_ONLY), -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_READ_REQ, SROCE_POS_ONLY),
		  SROCE_OP_RC_RDMA_READ_REQUEST);
	EXPECT_EQ(find(SROCE_TRANSPORT_UC, SROCE_KIND_READ_REQ, SROCE_POS_ONLY), -1);
	for (uint32_t n : {1u, 2u, 3u, 7u}) {
		for (uint32_t k = 0; k < n; k++) {
			int op = find(SROCE_TRANSPORT_RC, SROCE_KIND_READ_RESP, sroce_msg_pos(k, n));
			int want = n == 1 ? SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY :
				   k == 0 ? SROCE_OP_RC_RDMA_READ_RESPONSE_FIRST :
				   k == n - 1 ? SROCE_OP_RC_RDMA_READ_RESPONSE_LAST :
						SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
			EXPECT_EQ(op, want) << k << "/" << n;
		}
	}
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_ACK, SROCE_POS_ONLY), SROCE_OP_RC_ACKNOWLEDGE);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_ATOMIC_ACK, SROCE_POS_ONLY),
		  SROCE_OP_RC_ATOMIC_ACKNOWLEDGE);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_ATOMIC, SROCE_POS_ONLY),
		  SROCE_OP_RC_COMPARE_SWAP);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_ATOMIC, SROCE_POS_ONLY, SROCE_OPF_FETCH_ADD),
		  SROCE_OP_RC_FETCH_ADD);
	EXPECT_EQ(find(SROCE_TRANSPORT_UC, SROCE_KIND_ATOMIC, SROCE_POS_ONLY), -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_CNP, SROCE_KIND_CNP, SROCE_POS_ONLY), SROCE_OP_CNP);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_CNP, SROCE_POS_ONLY), -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_NONE, SROCE_POS_ONLY), -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND, SROCE_POS_NONE), -1);
	EXPECT_EQ(find(SROCE_TRANSPORT_VENDOR, SROCE_KIND_SEND, SROCE_POS_ONLY), -1);
}

TEST(WireOpcode, MessageShape)
{
	EXPECT_EQ(sroce_msg_npkts(0, 1024), 1u);
	EXPECT_EQ(sroce_msg_npkts(1, 1024), 1u);
	EXPECT_EQ(sroce_msg_npkts(1024, 1024), 1u);
	EXPECT_EQ(sroce_msg_npkts(1025, 1024), 2u);
	EXPECT_EQ(sroce_msg_npkts(0x80000000u, 4096), 0x80000u);
	EXPECT_EQ(sroce_msg_npkts(0xffffffffu, 256), 0x1000000u);
	EXPECT_EQ(sroce_msg_npkts(0xffffffffu, 1), 0xffffffffu);
	EXPECT_EQ(sroce_msg_npkts(5, 0), 1u);
	EXPECT_EQ(sroce_msg_pos(0, 1), SROCE_POS_ONLY);
	EXPECT_EQ(sroce_msg_pos(0, 0), SROCE_POS_ONLY);
	EXPECT_EQ(sroce_msg_pos(0, 2), SROCE_POS_FIRST);
	EXPECT_EQ(sroce_msg_pos(1, 2), SROCE_POS_LAST);
	EXPECT_EQ(sroce_msg_pos(1, 3), SROCE_POS_MIDDLE);
	EXPECT_EQ(sroce_msg_pos(2, 3), SROCE_POS_LAST);
	EXPECT_EQ(sroce_pos_from(true, true), SROCE_POS_ONLY);
	EXPECT_EQ(sroce_pos_from(true, false), SROCE_POS_FIRST);
	EXPECT_EQ(sroce_pos_from(false, false), SROCE_POS_MIDDLE);
	EXPECT_EQ(sroce_pos_from(false, true), SROCE_POS_LAST);
	// the same split as the requester uses: each position's flags
	for (uint32_t len : {0u, 1u, 4096u, 4097u, 10000u}) {
		uint32_t n = sroce_msg_npkts(len, 4096);
		for (uint32_t k = 0; k < n; k++) {
			int op = sroce_opcode_find(SROCE_TRANSPORT_RC, SROCE_KIND_SEND,
						   sroce_msg_pos(k, n), 0);
			ASSERT_GE(op, 0);
			uint16_t f = sroce_opcode_lookup((uint8_t)op)->flags;
			EXPECT_EQ(!!(f & SROCE_OPF_START), k == 0);
			EXPECT_EQ(!!(f & SROCE_OPF_END), k == n - 1);
		}
	}
}

}  // namespace
