// SPDX-License-Identifier: GPL-2.0
// The packet validator: accepts every well-formed packet, rejects each
// malformation with its own code, never reads outside the buffer (the
// sanitizer build of this file checks the last part).
#include "wire_test_util.h"
#include "wire_vectors.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

using wiretest::build_packet;
using wiretest::PacketSpec;
using wiretest::parse_exact;
using wiretest::refresh;

TEST(WireValidate, ErrNames)
{
	std::set<std::string> names;
	for (int e = 0; e < SROCE_WIRE_E_NR; e++) {
		const char *n = sroce_wire_err_name((sroce_wire_err)e);
		ASSERT_NE(n, nullptr);
		EXPECT_TRUE(names.insert(n).second) << n;
	}
	EXPECT_STREQ(sroce_wire_err_name(SROCE_WIRE_OK), "ok");
	EXPECT_STREQ(sroce_wire_err_name(SROCE_WIRE_E_ICRC), "icrc");
	EXPECT_STREQ(sroce_wire_err_name(SROCE_WIRE_E_NR), "invalid");
}

// Calls fn(packet, opcode, its info, IP version, payload length) for a good packet
// of every supported opcode, both IP versions and each payload length (those
// that need a pad only on the opcodes that may carry one).
template <typename Fn>
static void for_each_good_packet(std::initializer_list<uint32_t> lens, Fn fn)
{
	for (uint8_t op : wiretest::supported_opcodes()) {
		for (int v : {4, 6}) {
			for (uint32_t len : lens) {
				const sroce_opcode_info *oi = sroce_opcode_lookup(op);
				if (len && oi->pos != SROCE_POS_LAST && oi->pos != SROCE_POS_ONLY &&
				    (len & 3))
					continue;	// only last/only packets carry pad
				SCOPED_TRACE(std::string(oi->name) + " v" + std::to_string(v) +
					     " len " + std::to_string(len));
				PacketSpec s;
				s.ip_version = v;
				s.opcode = op;
				s.payload_len = len;
				fn(build_packet(s), op, oi, v, len);
			}
		}
	}
}

TEST(WireValidate, AcceptsEverySupportedOpcode)
{
	for_each_good_packet({0u, 1u, 2u, 3u, 4u, 5u, 255u, 1024u}, [](const std::vector<uint8_t> &p,
								    uint8_t op,
								    const sroce_opcode_info *oi,
								    int v, uint32_t len) {
		sroce_pkt pkt;
		ASSERT_EQ(parse_exact(p.data(), p.size(), &pkt), SROCE_WIRE_OK);
		uint32_t iphl = v == 4 ? 20 : 40;
		uint32_t pay = (oi->flags & SROCE_OPF_PAYLOAD) ? len : 0;
		EXPECT_EQ(pkt.info, oi);
		EXPECT_EQ(pkt.ip_version, v);
		EXPECT_EQ(pkt.opcode, op);
		EXPECT_EQ(pkt.udp_off, iphl);
		EXPECT_EQ(pkt.bth_off, iphl + 8);
		EXPECT_EQ(pkt.src_port, 0xc0de);
		EXPECT_EQ(pkt.hdr_off[SROCE_HDR_BTH], iphl + 8);
		for (int h = 0; h < SROCE_HDR_NR; h++) {
			int off = sroce_opcode_hdr_off(oi, (sroce_hdr)h);
			EXPECT_EQ(pkt.hdr_off[h], off < 0 ? 0u : iphl + 8 + (uint32_t)off);
		}
		EXPECT_EQ(pkt.payload_off, iphl + 8 + oi->hdr_len);
		EXPECT_EQ(pkt.payload_len, pay);
		EXPECT_EQ(pkt.pad, wiretest::pad_for(pay));
		EXPECT_EQ(pkt.end, p.size());
		EXPECT_EQ(pkt.icrc_off, p.size() - 4);
		EXPECT_EQ(p[pkt.payload_off + (pay ? pay - 1 : 0)],
			  pay ? (uint8_t)(0x5a + pay - 1) : p[pkt.payload_off]);
		// the transport-only entry point agrees
		sroce_pkt t;
		ASSERT_EQ(sroce_parse_bth(p.data() + iphl + 8, p.size() - iphl - 8, 0, &t),
			  SROCE_WIRE_OK);
		EXPECT_EQ(t.info, oi);
		EXPECT_EQ(t.payload_off + iphl + 8, pkt.payload_off);
		EXPECT_EQ(t.payload_len, pkt.payload_len);
		EXPECT_EQ(t.icrc, pkt.icrc);
	});
}

TEST(WireValidate, TrailingBytesAfterIpPacketIgnored)
{
	PacketSpec s;
	s.payload_len = 6;
	auto p = build_packet(s);
	size_t n = p.size();
	p.resize(n + 18, 0);	// Ethernet minimum-frame padding
	sroce_pkt pkt;
	ASSERT_EQ(parse_exact(p.data(), p.size(), &pkt), SROCE_WIRE_OK);
	EXPECT_EQ(pkt.end, n);
}

TEST(WireValidate, RejectsEveryTruncation)
{
	for (uint8_t op : wiretest::supported_opcodes()) {
		for (int v : {4, 6}) {
			PacketSpec s;
			s.ip_version = v;
			s.opcode = op;
			s.payload_len = 9;
			auto p = build_packet(s);
			sroce_pkt pkt;
			// the buffer is shorter than the IP header claims
			for (size_t len = 0; len < p.size(); len++) {
				sroce_wire_err e = parse_exact(p.data(), len, &pkt);
				ASSERT_NE(e, SROCE_WIRE_OK) << (int)op << " len " << len;
				EXPECT_TRUE(e == SROCE_WIRE_E_TRUNC_IP || e == SROCE_WIRE_E_IP_LEN)
					<< sroce_wire_err_name(e);
				EXPECT_EQ(pkt.info, sroce_opcode_lookup(0));	// descriptor cleared
			}
			// consistently shortened packets (IP/UDP lengths and ICRC fixed up)
			uint32_t iphl = v == 4 ? 20 : 40;
			const sroce_opcode_info *oi = sroce_opcode_lookup(op);
			for (size_t len = iphl; len < p.size(); len++) {
				std::vector<uint8_t> q(p.begin(), p.begin() + (long)len);
				refresh(q);
				sroce_wire_err e = parse_exact(q.data(), q.size(), &pkt);
				size_t transport = len - iphl - 8;
				if (len < iphl + 8) {
					EXPECT_EQ(e, SROCE_WIRE_E_TRUNC_UDP);
				} else if (transport < 16) {
					EXPECT_EQ(e, SROCE_WIRE_E_TRUNC_BTH);
				} else if (transport < oi->hdr_len + 4u) {
					EXPECT_EQ(e, SROCE_WIRE_E_TRUNC_HDRS) << oi->name << " " << len;
				} else if (!(oi->flags & SROCE_OPF_PAYLOAD)) {
					ADD_FAILURE() << "longer than a payload-less packet?";
				} else if ((transport - oi->hdr_len - 4) & 3) {
					EXPECT_EQ(e, SROCE_WIRE_E_ALIGN);
				} else {
					// shorter payload with the original pad count: still
					// well formed when pad <= payload (and a LAST/ONLY)
					size_t padded = transport - oi->hdr_len - 4;
					uint8_t pad = sroce_bth_pad(p.data() + iphl + 8);
					if (padded >= pad && (oi->flags & SROCE_OPF_END)) {
						EXPECT_TRUE(e == SROCE_WIRE_OK || e == SROCE_WIRE_E_PAD);
					} else {
						EXPECT_EQ(e, SROCE_WIRE_E_PAD) << oi->name << " " << len;
					}
				}
			}
		}
	}
}

struct Mutation {
	const char *what;
	sroce_wire_err want;
	int ip_version;
	void (*apply)(std::vector<uint8_t> &p);
	bool refresh_icrc;
};

void set_bth_opcode(std::vector<uint8_t> &p, uint8_t op)
{
	uint32_t iphl = (p[0] >> 4) == 4 ? 20 : 40;
	p[iphl + 8] = op;
}

const Mutation mutations[] = {
	{"ip version 5", SROCE_WIRE_E_IP_VERSION, 4, [](auto &p) { p[0] = 0x55; }, false},
	{"ip version 0", SROCE_WIRE_E_IP_VERSION, 6, [](auto &p) { p[0] = 0x00; }, false},
	{"ihl 4", SROCE_WIRE_E_IP_HDR_LEN, 4, [](auto &p) { p[0] = 0x44; }, false},
	{"ihl 0", SROCE_WIRE_E_IP_HDR_LEN, 4, [](auto &p) { p[0] = 0x40; }, false},
	{"ihl 6 (options)", SROCE_WIRE_E_IP_OPTIONS, 4, [](auto &p) { p[0] = 0x46; }, false},
	{"ipv4 total len too big", SROCE_WIRE_E_IP_LEN, 4,
	 [](auto &p) { sroce_put_be16(&p[2], (uint16_t)(p.size() + 1)); }, false},
	{"ipv4 total len < 20", SROCE_WIRE_E_IP_LEN, 4,
	 [](auto &p) { sroce_put_be16(&p[2], 19); }, false},
	{"ipv4 total len 0xffff", SROCE_WIRE_E_IP_LEN, 4,
	 [](auto &p) { sroce_put_be16(&p[2], 0xffff); }, false},
	{"ipv6 payload len too big", SROCE_WIRE_E_IP_LEN, 6,
	 [](auto &p) { sroce_put_be16(&p[4], (uint16_t)(p.size() - 39)); }, false},
	{"ipv6 payload len 0xffff", SROCE_WIRE_E_IP_LEN, 6,
	 [](auto &p) { sroce_put_be16(&p[4], 0xffff); }, false},
	{"ipv4 more fragments", SROCE_WIRE_E_IP_FRAG, 4, [](auto &p) { p[6] = 0x20; }, false},
	{"ipv4 fragment offset", SROCE_WIRE_E_IP_FRAG, 4, [](auto &p) { p[7] = 0x01; }, false},
	{"ipv4 tcp", SROCE_WIRE_E_IP_PROTO, 4, [](auto &p) { p[9] = 6; }, false},
	{"ipv6 hop-by-hop ext header", SROCE_WIRE_E_IP_PROTO, 6, [](auto &p) { p[6] = 0; }, false},
	{"ipv4 short udp", SROCE_WIRE_E_TRUNC_UDP, 4,
	 [](auto &p) { p.resize(27); sroce_put_be16(&p[2], 27); }, false},
	{"ipv6 short udp", SROCE_WIRE_E_TRUNC_UDP, 6,
	 [](auto &p) { p.resize(47); sroce_put_be16(&p[4], 7); }, false},
	{"udp len too big", SROCE_WIRE_E_UDP_LEN, 4,
	 [](auto &p) { sroce_put_be16(&p[24], (uint16_t)(p.size() - 19)); }, false},
	{"udp len too small", SROCE_WIRE_E_UDP_LEN, 6,
	 [](auto &p) { sroce_put_be16(&p[44], (uint16_t)(p.size() - 41)); }, false},
	{"udp len < 8", SROCE_WIRE_E_UDP_LEN, 4, [](auto &p) { sroce_put_be16(&p[24], 4); }, false},
	{"udp port 4792", SROCE_WIRE_E_UDP_PORT, 4, [](auto &p) { sroce_put_be16(&p[22], 4792); },
	 false},
	{"udp port swapped", SROCE_WIRE_E_UDP_PORT, 6, [](auto &p) { sroce_put_be16(&p[42], 0xb712); },
	 false},
	{"tver 1", SROCE_WIRE_E_TVER, 4, [](auto &p) { p[29] |= 0x01; }, true},
	{"tver 15", SROCE_WIRE_E_TVER, 6, [](auto &p) { p[49] |= 0x0f; }, true},
	{"reserved opcode 0x15", SROCE_WIRE_E_OPCODE_UNKNOWN, 4,
	 [](auto &p) { set_bth_opcode(p, 0x15); }, true},
	{"reserved opcode 0x80", SROCE_WIRE_E_OPCODE_UNKNOWN, 6,
	 [](auto &p) { set_bth_opcode(p, 0x80); }, true},
	{"vendor opcode 0xc0", SROCE_WIRE_E_OPCODE_UNKNOWN, 4,
	 [](auto &p) { set_bth_opcode(p, 0xc0); }, true},
	{"RD opcode", SROCE_WIRE_E_OPCODE_UNSUPPORTED, 4, [](auto &p) { set_bth_opcode(p, 0x44); },
	 true},
	{"FLUSH", SROCE_WIRE_E_OPCODE_UNSUPPORTED, 4, [](auto &p) { set_bth_opcode(p, 0x1c); }, true},
	{"XRC FLUSH", SROCE_WIRE_E_OPCODE_UNSUPPORTED, 6, [](auto &p) { set_bth_opcode(p, 0xbc); },
	 true},
	{"payload on ACK", SROCE_WIRE_E_PAYLOAD, 4, [](auto &p) {
		 set_bth_opcode(p, SROCE_OP_RC_ACKNOWLEDGE);	// 40 byte payload, 16 byte headers
	 }, true},
	{"pad on ACK", SROCE_WIRE_E_PAD, 4, [](auto &p) {
		 set_bth_opcode(p, SROCE_OP_RC_ACKNOWLEDGE);
		 p.resize(20 + 8 + 16 + 4);
		 p[29] |= 0x10;
	 }, true},
	{"pad larger than payload", SROCE_WIRE_E_PAD, 4, [](auto &p) {
		 p.resize(20 + 8 + 12 + 4);			// SEND ONLY, empty
		 p[29] |= 0x30;
	 }, true},
	{"pad on SEND_FIRST", SROCE_WIRE_E_PAD, 6, [](auto &p) {
		 set_bth_opcode(p, SROCE_OP_RC_SEND_FIRST);
		 p[49] |= 0x10;
	 }, true},
	{"pad on READ_RESPONSE_MIDDLE", SROCE_WIRE_E_PAD, 4, [](auto &p) {
		 set_bth_opcode(p, SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE);
		 p[29] |= 0x20;
	 }, true},
	{"unaligned payload", SROCE_WIRE_E_ALIGN, 4, [](auto &p) { p.resize(p.size() + 1); }, true},
	{"unaligned, 3", SROCE_WIRE_E_ALIGN, 6, [](auto &p) { p.resize(p.size() + 3); }, true},
	{"CNP with payload", SROCE_WIRE_E_PAYLOAD, 4, [](auto &p) { set_bth_opcode(p, 0x81); }, true},
	{"atomic truncated", SROCE_WIRE_E_TRUNC_HDRS, 4, [](auto &p) {
		 set_bth_opcode(p, SROCE_OP_RC_FETCH_ADD);	// needs 40 + 4, has 12 + 40 + 4 - 20
		 p.resize(p.size() - 20);
	 }, true},
	{"icrc flipped", SROCE_WIRE_E_ICRC, 4, [](auto &p) { p.back() ^= 0x80; }, false},
	{"payload bit flipped", SROCE_WIRE_E_ICRC, 6, [](auto &p) { p[70] ^= 0x01; }, false},
	{"ip address changed", SROCE_WIRE_E_ICRC, 4, [](auto &p) { p[15] ^= 0x01; }, false},
	{"ipv6 address changed", SROCE_WIRE_E_ICRC, 6, [](auto &p) { p[30] ^= 0x01; }, false},
	{"bth pkey changed", SROCE_WIRE_E_ICRC, 4, [](auto &p) { p[30] ^= 0x01; }, false},
	{"udp src port changed", SROCE_WIRE_E_ICRC, 4, [](auto &p) { p[20] ^= 0x01; }, false},
	// masked fields: still valid
	{"ttl changed", SROCE_WIRE_OK, 4, [](auto &p) { p[8] = 1; }, false},
	{"ecn CE set", SROCE_WIRE_OK, 4, [](auto &p) { p[1] |= 0x03; }, false},
	{"ipv6 flow label", SROCE_WIRE_OK, 6, [](auto &p) { p[3] ^= 0xff; }, false},
	{"bth resv8a", SROCE_WIRE_OK, 4, [](auto &p) { p[32] = 0x77; }, false},
	{"udp checksum", SROCE_WIRE_OK, 6, [](auto &p) { p[46] ^= 0x42; }, false},
};

TEST(WireValidate, RejectsEachMalformation)
{
	for (const Mutation &m : mutations) {
		SCOPED_TRACE(m.what);
		PacketSpec s;
		s.ip_version = m.ip_version;
		s.payload_len = 40;
		auto p = build_packet(s);
		m.apply(p);
		if (m.refresh_icrc)
			refresh(p);
		sroce_pkt pkt;
		EXPECT_STREQ(sroce_wire_err_name(parse_exact(p.data(), p.size(), &pkt)),
			     sroce_wire_err_name(m.want));
		if (m.want == SROCE_WIRE_E_ICRC) {
			EXPECT_EQ(parse_exact(p.data(), p.size(), &pkt, SROCE_PARSE_NO_ICRC),
				  SROCE_WIRE_OK);
		}
	}
}

// A datagram whose UDP length is shorter than its IP payload reaches the
// kernel trimmed to the UDP length by the UDP layer, so IP claims more than
// there is. With SROCE_PARSE_UDP_TRIMMED that is the UDP length error it
// was; without, a raw buffer that IP says is truncated.
TEST(WireValidate, UdpTrimmed)
{
	struct Case {
		const char *what;
		int v;
		sroce_wire_err trimmed;	// with the flag; without, always IP_LEN
		void (*apply)(std::vector<uint8_t> &);
	} cases[] = {
		{"ipv4 udp len 4 short, trimmed", 4, SROCE_WIRE_E_UDP_LEN, [](auto &p) {
			 p.resize(p.size() - 4);
			 sroce_put_be16(&p[24], (uint16_t)(p.size() - 20));
		 }},
		{"ipv6 udp len 8 short, trimmed", 6, SROCE_WIRE_E_UDP_LEN, [](auto &p) {
			 p.resize(p.size() - 8);
			 sroce_put_be16(&p[44], (uint16_t)(p.size() - 40));
		 }},
		{"ipv4 udp len ends at the ip header", 4, SROCE_WIRE_E_UDP_LEN, [](auto &p) {
			 p.resize(28);
			 sroce_put_be16(&p[24], 8);
		 }},
		{"ipv4 truncated, udp len elsewhere", 4, SROCE_WIRE_E_IP_LEN, [](auto &p) {
			 p.resize(p.size() - 4);
			 sroce_put_be16(&p[24], (uint16_t)(p.size() - 21));
		 }},
		{"ipv6 truncated, udp len unchanged", 6, SROCE_WIRE_E_IP_LEN,
		 [](auto &p) { p.resize(p.size() - 4); }},
		{"ipv6 truncated into the udp header", 6, SROCE_WIRE_E_IP_LEN,
		 [](auto &p) { p.resize(45); }},
		{"ipv4 ip len too big, udp len at the end", 4, SROCE_WIRE_E_UDP_LEN,
		 [](auto &p) { sroce_put_be16(&p[2], (uint16_t)(p.size() + 1)); }},
	};
	for (const Case &c : cases) {
		SCOPED_TRACE(c.what);
		PacketSpec s;
		s.ip_version = c.v;
		s.payload_len = 40;
		auto p = build_packet(s);
		c.apply(p);
		sroce_pkt pkt;
		EXPECT_STREQ(sroce_wire_err_name(parse_exact(p.data(), p.size(), &pkt,
							     SROCE_PARSE_UDP_TRIMMED)),
			     sroce_wire_err_name(c.trimmed));
		EXPECT_STREQ(sroce_wire_err_name(parse_exact(p.data(), p.size(), &pkt)),
			     sroce_wire_err_name(SROCE_WIRE_E_IP_LEN));
	}
	// well-formed packets are unaffected by the flag
	for (int v : {4, 6}) {
		PacketSpec s;
		s.ip_version = v;
		s.payload_len = 17;
		auto p = build_packet(s);
		sroce_pkt pkt;
		EXPECT_EQ(parse_exact(p.data(), p.size(), &pkt, SROCE_PARSE_UDP_TRIMMED),
			  SROCE_WIRE_OK);
	}
}

TEST(WireValidate, AllOpcodesAllBytes)
{
	// Every opcode byte in an otherwise valid packet: ok iff supported and
	// the packet shape fits, never a crash; unknown/unsupported by class.
	for (int op = 0; op < 256; op++) {
		PacketSpec s;
		s.payload_len = 0;
		auto p = build_packet(s);
		set_bth_opcode(p, (uint8_t)op);
		const sroce_opcode_info *oi = sroce_opcode_lookup((uint8_t)op);
		p.resize(20 + 8 + (oi->hdr_len ? oi->hdr_len : 12) + 4);
		refresh(p);
		sroce_pkt pkt;
		sroce_wire_err e = parse_exact(p.data(), p.size(), &pkt);
		sroce_wire_err want = !(oi->flags & SROCE_OPF_KNOWN) ? SROCE_WIRE_E_OPCODE_UNKNOWN
				    : !(oi->flags & SROCE_OPF_SUPPORTED) ? SROCE_WIRE_E_OPCODE_UNSUPPORTED
				    : SROCE_WIRE_OK;
		EXPECT_EQ(e, want) << op;
	}
}

// A good packet of a random opcode, IP version and payload length (below
// max_payload) with one to four bits flipped among its first flip_span bytes.
static std::vector<uint8_t> damaged_packet(std::mt19937 &rng, uint32_t max_payload,
					   size_t flip_span)
{
	PacketSpec s;
	s.ip_version = rng() & 1 ? 4 : 6;
	auto ops = wiretest::supported_opcodes();
	s.opcode = ops[rng() % ops.size()];
	s.payload_len = rng() % max_payload;
	auto p = build_packet(s);
	int flips = 1 + rng() % 4;
	for (int f = 0; f < flips; f++)
		p[rng() % std::min(p.size(), flip_span)] ^= (uint8_t)(1u << (rng() % 8));
	return p;
}

TEST(WireValidate, RandomGarbageNeverCrashes)
{
	std::mt19937 rng(99);
	sroce_pkt pkt;
	int ok = 0;
	for (int i = 0; i < 20000; i++) {
		auto p = damaged_packet(rng, 64, SIZE_MAX);
		if (rng() % 4 == 0)
			p.resize(rng() % (p.size() + 1));
		if (rng() % 2)
			refresh(p);
		if (parse_exact(p.data(), p.size(), &pkt) == SROCE_WIRE_OK) {
			ok++;
			ASSERT_LE(pkt.end, p.size());
			ASSERT_LE(pkt.payload_off + pkt.payload_len + pkt.pad + 4, pkt.end);
		}
	}
	EXPECT_GT(ok, 0);
}

// The kernel validates a packet whose payload lies in page fragments from
// its headers alone (SROCE_PARSE_HDRS_ONLY) and checks the ICRC itself. That
// must reach the same verdict and the same offsets as the whole-buffer parse
// without the ICRC check, for good packets, every truncation and random
// damage, while reading nothing past the BTH.
static void expect_hdrs_only_agrees(const std::vector<uint8_t> &p, size_t len)
{
	sroce_pkt whole, hdrs;
	sroce_wire_err e = parse_exact(p.data(), len, &whole,
				       SROCE_PARSE_NO_ICRC | SROCE_PARSE_UDP_TRIMMED);
	ASSERT_STREQ(sroce_wire_err_name(wiretest::parse_hdrs_only(p.data(), len, &hdrs,
								  SROCE_PARSE_UDP_TRIMMED)),
		     sroce_wire_err_name(e));
	if (e != SROCE_WIRE_OK)
		return;
	EXPECT_EQ(hdrs.info, whole.info);
	EXPECT_EQ(hdrs.ip_version, whole.ip_version);
	EXPECT_EQ(hdrs.pad, whole.pad);
	EXPECT_EQ(hdrs.src_port, whole.src_port);
	EXPECT_EQ(hdrs.bth_off, whole.bth_off);
	for (int h = 0; h < SROCE_HDR_NR; h++)
		EXPECT_EQ(hdrs.hdr_off[h], whole.hdr_off[h]) << h;
	EXPECT_EQ(hdrs.payload_off, whole.payload_off);
	EXPECT_EQ(hdrs.payload_len, whole.payload_len);
	EXPECT_EQ(hdrs.icrc_off, whole.icrc_off);
	EXPECT_EQ(hdrs.end, whole.end);
	EXPECT_EQ(hdrs.icrc, 0u);
}

TEST(WireValidate, HeadersOnlyAgreesWithWholeBuffer)
{
	for_each_good_packet({0u, 3u, 4u, 40u, 1024u, 4096u}, [](const std::vector<uint8_t> &p,
								  uint8_t, const sroce_opcode_info *,
								  int, uint32_t) {
		sroce_pkt pkt;
		ASSERT_EQ(wiretest::parse_hdrs_only(p.data(), p.size(), &pkt), SROCE_WIRE_OK);
		expect_hdrs_only_agrees(p, p.size());
		for (size_t cut = 0; cut < p.size(); cut += cut < 100 ? 1 : 97)
			expect_hdrs_only_agrees(p, cut);
	});
	std::mt19937 rng(7);
	for (int i = 0; i < 20000; i++) {
		auto p = damaged_packet(rng, 200, 64);
		expect_hdrs_only_agrees(p, p.size());
	}
}

TEST(WireValidate, RealRxePackets)
{
	for (const auto &vec : wirevec::captured_vectors()) {
		SCOPED_TRACE(vec.name);
		sroce_pkt pkt;
		ASSERT_EQ(sroce_wire_err_name(parse_exact(vec.bytes.data(), vec.bytes.size(), &pkt)),
			  std::string("ok"));
		EXPECT_EQ(pkt.ip_version, vec.ip_version);
		EXPECT_EQ(pkt.opcode, vec.opcode);
		EXPECT_EQ(pkt.pad, vec.pad);
		const uint8_t *bth = vec.bytes.data() + pkt.bth_off;
		sroce_bth h;
		sroce_bth_decode(bth, &h);
		EXPECT_EQ(h.dqpn, vec.dqpn);
		EXPECT_EQ(h.psn, vec.psn);
		EXPECT_EQ(h.tver, 0);
		EXPECT_EQ(pkt.end, vec.bytes.size());
		if (pkt.info->transport == SROCE_TRANSPORT_UD) {
			sroce_deth d;
			sroce_deth_decode(vec.bytes.data() + pkt.hdr_off[SROCE_HDR_DETH], &d);
			EXPECT_NE(d.sqpn, 0u);
		}
		if (sroce_opcode_has(pkt.info, SROCE_HDR_AETH)) {
			EXPECT_TRUE(sroce_aeth_syn_valid(vec.bytes[pkt.hdr_off[SROCE_HDR_AETH]]));
		}
		// every truncation of a real packet is rejected
		for (size_t len = 0; len < vec.bytes.size(); len++)
			ASSERT_NE(parse_exact(vec.bytes.data(), len, &pkt), SROCE_WIRE_OK) << len;
	}
}

}  // namespace
