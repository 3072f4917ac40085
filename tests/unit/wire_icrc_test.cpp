// SPDX-License-Identifier: GPL-2.0
// CRC-32 and ICRC: known answers, agreement with zlib, real rdma_rxe packets.
#include "wire_test_util.h"
#include "wire_vectors.h"

#include <gtest/gtest.h>
#include <zlib.h>

namespace {

TEST(WireCrc, CheckValue)
{
	EXPECT_EQ(sroce_crc32("123456789", 9), 0xcbf43926u);
	EXPECT_EQ(sroce_crc32("", 0), 0u);
	EXPECT_EQ(sroce_crc32_le(0x12345678, "", 0), 0x12345678u);
}

// The seed rdma_rxe starts from is the register after ~0 and the 8-byte
// pseudo LRH of all ones.
TEST(WireCrc, SeedIsMaskedLrh)
{
	const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	EXPECT_EQ(sroce_crc32_le(~0u, ones, 8), SROCE_ICRC_SEED);
}

// zlib's crc32(c, p, n) is ~crc32_le(~c, p, n) (the kernel's crc32_le is the
// bare register update): check the portable table against it on random data,
// random seeds and random splits.
TEST(WireCrc, AgreesWithZlib)
{
	std::mt19937 rng(42);
	std::vector<uint8_t> buf(4096);
	for (int iter = 0; iter < 500; iter++) {
		size_t n = rng() % buf.size();
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rng();
		uint32_t seed = rng();
		uint32_t z = (uint32_t)crc32(~seed & 0xffffffffu, buf.data(), (uInt)n);
		ASSERT_EQ(~sroce_crc32_le(seed, buf.data(), n), z);
		ASSERT_EQ(sroce_crc32(buf.data(), n), (uint32_t)crc32(0, buf.data(), (uInt)n));
		size_t cut = n ? rng() % n : 0;
		uint32_t split = sroce_crc32_le(sroce_crc32_le(seed, buf.data(), cut),
						buf.data() + cut, n - cut);
		ASSERT_EQ(split, sroce_crc32_le(seed, buf.data(), n));
	}
}

// The sparse reduction's polynomial is a multiple of the CRC-32 polynomial:
// the remainders x^e mod P of its seven terms XOR to zero.
TEST(WireCrc, SparseMultipleIsAMultiple)
{
	auto xmod = [](int e) {
		uint32_t r = 1;	// x^0, normal (not reflected) bit order
		for (int i = 0; i < e; i++)
			r = (r << 1) ^ ((r >> 31) ? 0x04c11db7u : 0);
		return r;
	};
	uint32_t sum = 0;
	for (int e : {161, 93, 77, 69, 68, 37, 0})
		sum ^= xmod(e);
	EXPECT_EQ(sum, 0u);
	// and a one-term change is not: the check can fail
	EXPECT_NE(sum ^ xmod(36) ^ xmod(37), 0u);
}

// sroce_crc32_sparse() is the same register update as the table, for every
// length around its thresholds, every alignment, any seed and any split.
TEST(WireCrc, SparseAgreesWithTable)
{
	std::mt19937 rng(7);
	std::vector<uint8_t> buf(9100);
	for (auto &b : buf)
		b = (uint8_t)rng();
	for (size_t n = 0; n <= 700; n++) {
		for (size_t off = 0; off < 8; off++) {
			uint32_t seed = rng();
			ASSERT_EQ(sroce_crc32_sparse(seed, buf.data() + off, n),
				  sroce_crc32_le(seed, buf.data() + off, n))
				<< "n " << n << " off " << off;
		}
	}
	for (int iter = 0; iter < 300; iter++) {
		size_t n = rng() % 9000, off = rng() % 64, cut = n ? rng() % n : 0;
		uint32_t seed = rng();
		uint32_t want = sroce_crc32_le(seed, buf.data() + off, n);
		ASSERT_EQ(sroce_crc32_sparse(seed, buf.data() + off, n), want) << n;
		uint32_t z = (uint32_t)crc32(~seed & 0xffffffffu, buf.data() + off, (uInt)n);
		ASSERT_EQ(~sroce_crc32_sparse(seed, buf.data() + off, n), z) << n;
		ASSERT_EQ(sroce_crc32_sparse(sroce_crc32_sparse(seed, buf.data() + off, cut),
					     buf.data() + off + cut, n - cut), want) << n;
	}
	// All ones and all zeros (long runs of bits cancelling in the words).
	for (uint8_t fill : {0x00, 0xff}) {
		std::vector<uint8_t> f(4096, fill);
		ASSERT_EQ(sroce_crc32_sparse(~0u, f.data(), f.size()),
			  sroce_crc32_le(~0u, f.data(), f.size()));
	}
}

// The ICRC definition, written out literally: standard CRC-32 over the 8
// pseudo-LRH bytes of 0xff followed by the masked packet.
uint32_t icrc_reference(const std::vector<uint8_t> &p, size_t icrc_off)
{
	const uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	std::vector<uint8_t> m(p);
	m.resize(icrc_off);
	uint8_t *ip = m.data();
	size_t iphl;
	if ((ip[0] >> 4) == 4) {
		iphl = 20;
		ip[1] = 0xff;
		ip[8] = 0xff;
		ip[10] = ip[11] = 0xff;
	} else {
		iphl = 40;
		ip[0] |= 0x0f;
		ip[1] = ip[2] = ip[3] = 0xff;
		ip[7] = 0xff;
	}
	ip[iphl + 6] = ip[iphl + 7] = 0xff;
	ip[iphl + 8 + 4] = 0xff;
	uLong crc = crc32(0, lrh, 8);
	return (uint32_t)crc32(crc, m.data(), (uInt)m.size());
}

TEST(WireIcrc, MatchesDefinitionAndSplits)
{
	std::mt19937 rng(3);
	for (uint8_t op : wiretest::supported_opcodes()) {
		for (int v : {4, 6}) {
			wiretest::PacketSpec s;
			s.ip_version = v;
			s.opcode = op;
			s.payload_len = rng() % 300;
			auto p = wiretest::build_packet(s);
			size_t icrc_off = p.size() - 4;
			uint32_t icrc = sroce_icrc_compute(p.data(), (unsigned)v, icrc_off);
			EXPECT_EQ(icrc, icrc_reference(p, icrc_off)) << (int)op << " v" << v;
			// begin + update in pieces
			size_t fixed = (v == 4 ? 20 : 40) + 8 + 12;
			uint32_t c = sroce_icrc_begin(p.data(), (unsigned)v);
			size_t off = fixed;
			while (off < icrc_off) {
				size_t n = std::min<size_t>(icrc_off - off, 1 + rng() % 64);
				c = sroce_icrc_update(c, p.data() + off, n);
				off += n;
			}
			EXPECT_EQ(sroce_icrc_final(c), icrc);
		}
	}
}

TEST(WireIcrc, MaskedFieldsDoNotMatter)
{
	for (int v : {4, 6}) {
		wiretest::PacketSpec s;
		s.ip_version = v;
		s.payload_len = 40;
		auto p = wiretest::build_packet(s);
		size_t icrc_off = p.size() - 4;
		uint32_t ref = sroce_icrc_compute(p.data(), (unsigned)v, icrc_off);
		std::vector<size_t> masked;
		size_t iphl = v == 4 ? 20 : 40;
		if (v == 4)
			masked = {1, 8, 10, 11};
		else
			masked = {1, 2, 3, 7};
		masked.push_back(iphl + 6);
		masked.push_back(iphl + 7);
		masked.push_back(iphl + 8 + 4);
		for (size_t i : masked) {
			auto q = p;
			q[i] ^= 0x5a;
			EXPECT_EQ(sroce_icrc_compute(q.data(), (unsigned)v, icrc_off), ref) << i;
		}
		if (v == 6) {	// traffic class high nibble, not the version
			auto q = p;
			q[0] ^= 0x0a;
			EXPECT_EQ(sroce_icrc_compute(q.data(), 6, icrc_off), ref);
		}
		// any other byte does matter
		for (size_t i = 0; i < icrc_off; i++) {
			if (std::find(masked.begin(), masked.end(), i) != masked.end() || i == 0)
				continue;
			auto q = p;
			q[i] ^= 0x01;
			EXPECT_NE(sroce_icrc_compute(q.data(), (unsigned)v, icrc_off), ref) << i;
		}
	}
}

// Known answers: packets rdma_rxe (Linux 6.1) put on the wire in the rig.
TEST(WireIcrc, RealRxePackets)
{
	ASSERT_FALSE(wirevec::captured_vectors().empty());
	for (const auto &vec : wirevec::captured_vectors()) {
		SCOPED_TRACE(vec.name);
		const auto &p = vec.bytes;
		ASSERT_GT(p.size(), 4u);
		size_t icrc_off = p.size() - 4;
		uint32_t wire = sroce_icrc_get(p.data() + icrc_off);
		EXPECT_EQ(sroce_icrc_compute(p.data(), (unsigned)vec.ip_version, icrc_off), wire);
		EXPECT_EQ(icrc_reference(p, icrc_off), wire);
		// Wireshark shows the 4 trailer bytes as a big-endian number.
		EXPECT_EQ(sroce_get_be32(p.data() + icrc_off), vec.ws_icrc);
	}
}

}  // namespace
