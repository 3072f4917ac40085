// SPDX-License-Identifier: GPL-2.0
// Header layouts: byte-exact encodings and decode/encode round trips.
#include "wire_test_util.h"

#include <gtest/gtest.h>

extern "C" int sroce_wire_c11_check(void);

namespace {

TEST(WireHdr, C11Build)
{
	EXPECT_EQ(sroce_wire_c11_check(), 0);
}

TEST(WireHdr, ByteOrderHelpers)
{
	uint8_t b[8];
	sroce_put_be64(b, 0x0102030405060708ull);
	const uint8_t want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	EXPECT_EQ(0, memcmp(b, want, 8));
	EXPECT_EQ(sroce_get_be64(b), 0x0102030405060708ull);
	EXPECT_EQ(sroce_get_be32(b + 1), 0x02030405u);
	EXPECT_EQ(sroce_get_be24(b + 1), 0x020304u);
	EXPECT_EQ(sroce_get_be16(b + 6), 0x0708);
	EXPECT_EQ(sroce_get_le32(b), 0x04030201u);
	sroce_put_le32(b, 0xdeadbeef);
	EXPECT_EQ(b[0], 0xef);
	EXPECT_EQ(b[3], 0xde);
}

TEST(WireHdr, BthLayout)
{
	sroce_bth h{};
	h.opcode = 0x0b;
	h.se = true;
	h.mig = false;
	h.pad = 3;
	h.tver = 0;
	h.pkey = 0xffff;
	h.resv8a = 0;
	h.dqpn = 0x000011;
	h.ackreq = true;
	h.psn = 0x5a5a5a;
	uint8_t b[SROCE_BTH_LEN];
	sroce_bth_encode(b, &h);
	const uint8_t want[SROCE_BTH_LEN] = {0x0b, 0xb0, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
					     0x80, 0x5a, 0x5a, 0x5a};
	EXPECT_EQ(0, memcmp(b, want, sizeof(want)));
	EXPECT_EQ(sroce_bth_pad(b), 3);
	EXPECT_TRUE(sroce_bth_se(b));
	EXPECT_FALSE(sroce_bth_mig(b));
	EXPECT_TRUE(sroce_bth_ackreq(b));

	sroce_bth_set_pad(b, 1);
	sroce_bth_set_se(b, false);
	sroce_bth_set_ackreq(b, false);
	sroce_bth_set_psn(b, 0x1abcdef);	// masked to 24 bits
	sroce_bth_set_dqpn(b, 0xff000002);
	EXPECT_EQ(b[1], 0x10);
	EXPECT_EQ(b[4], 0x00);			// resv8a untouched by set_dqpn
	EXPECT_EQ(sroce_bth_dqpn(b), 2u);
	EXPECT_EQ(sroce_bth_psn(b), 0xabcdefu);
	EXPECT_EQ(b[8], 0x00);
}

TEST(WireHdr, BthSetters)
{
	uint8_t b[SROCE_BTH_LEN];
	memset(b, 0, sizeof(b));
	sroce_bth_init(b, SROCE_OP_RC_RDMA_WRITE_FIRST, 0x8001, 0x1abcdef, 0x2123456);
	const uint8_t want[SROCE_BTH_LEN] = {0x06, 0x00, 0x80, 0x01, 0x00, 0xab, 0xcd, 0xef,
					     0x00, 0x12, 0x34, 0x56};
	EXPECT_EQ(0, memcmp(b, want, sizeof(want)));

	// each setter touches its own field only
	memset(b, 0xa5, sizeof(b));
	sroce_bth_set_pkey(b, SROCE_PKEY_DEFAULT);
	EXPECT_EQ(b[1], 0xa5);
	EXPECT_EQ(b[2], 0xff);
	EXPECT_EQ(b[3], 0xff);
	EXPECT_EQ(b[4], 0xa5);
	EXPECT_EQ(sroce_bth_pkey(b), SROCE_PKEY_DEFAULT);
	sroce_bth_set_mig(b, true);
	EXPECT_EQ(b[1], 0xe5);
	EXPECT_TRUE(sroce_bth_mig(b));
	sroce_bth_set_mig(b, false);
	EXPECT_EQ(b[1], 0xa5);
	EXPECT_EQ(sroce_bth_pad(b), 2);

	sroce_bth h{};
	memset(b, 0, sizeof(b));
	sroce_bth_init(b, SROCE_OP_UD_SEND_ONLY, 0x7fff, 1, 0xffffff);
	sroce_bth_decode(b, &h);
	EXPECT_EQ(h.opcode, SROCE_OP_UD_SEND_ONLY);
	EXPECT_EQ(h.pkey, 0x7fff);
	EXPECT_EQ(h.dqpn, 1u);
	EXPECT_EQ(h.psn, 0xffffffu);
	EXPECT_FALSE(h.se || h.mig || h.ackreq || h.pad || h.tver);
}

TEST(WireHdr, PadLen)
{
	for (uint32_t len = 0; len < 64; len++)
		EXPECT_EQ((len + sroce_pad_len(len)) % 4, 0u) << len;
	EXPECT_EQ(sroce_pad_len(0), 0);
	EXPECT_EQ(sroce_pad_len(1), 3);
	EXPECT_EQ(sroce_pad_len(4095), 1);
	EXPECT_EQ(sroce_pad_len(0xffffffffu), 1);
}

TEST(WireHdr, PkeyMatch)
{
	EXPECT_TRUE(sroce_pkey_match(0xffff, SROCE_PKEY_DEFAULT));
	EXPECT_TRUE(sroce_pkey_match(0x7fff, SROCE_PKEY_DEFAULT));	// limited vs full
	EXPECT_TRUE(sroce_pkey_match(0xffff, 0x7fff));
	EXPECT_FALSE(sroce_pkey_match(0x7fff, 0x7fff));		// both limited
	EXPECT_FALSE(sroce_pkey_match(0xfffe, SROCE_PKEY_DEFAULT));
	EXPECT_FALSE(sroce_pkey_match(0x0000, SROCE_PKEY_DEFAULT));
	EXPECT_TRUE(sroce_pkey_match(0x8001, 0x0001));
	for (uint32_t a = 0; a < 0x10000; a += 0x0101)
		for (uint32_t b = 0; b < 0x10000; b += 0x0303)
			ASSERT_EQ(sroce_pkey_match((uint16_t)a, (uint16_t)b),
				  sroce_pkey_match((uint16_t)b, (uint16_t)a));
}

TEST(WireHdr, BthRoundTripRandom)
{
	std::mt19937_64 rng(1);
	for (int i = 0; i < 10000; i++) {
		uint8_t b[SROCE_BTH_LEN], c[SROCE_BTH_LEN];
		for (auto &x : b)
			x = (uint8_t)rng();
		sroce_bth h;
		sroce_bth_decode(b, &h);
		sroce_bth_encode(c, &h);
		ASSERT_EQ(0, memcmp(b, c, sizeof(b)));
		EXPECT_LE(h.pad, 3);
		EXPECT_LE(h.tver, 15);
		EXPECT_LE(h.dqpn, SROCE_QPN_MASK);
		EXPECT_LE(h.psn, SROCE_PSN_MASK);
	}
}

TEST(WireHdr, RethAethDethIeth)
{
	uint8_t b[32];
	sroce_reth r{0x0011223344556677ull, 0x89abcdef, 0x00001000}, r2{};
	sroce_reth_encode(b, &r);
	const uint8_t rw[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
				0x89, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x10, 0x00};
	EXPECT_EQ(0, memcmp(b, rw, 16));
	sroce_reth_decode(b, &r2);
	EXPECT_EQ(r2.va, r.va);
	EXPECT_EQ(r2.rkey, r.rkey);
	EXPECT_EQ(r2.len, r.len);

	sroce_aeth a{sroce_aeth_syn_nak(SROCE_NAK_REMOTE_ACCESS_ERROR), 0x1234567}, a2{};
	sroce_aeth_encode(b, &a);
	EXPECT_EQ(b[0], 0x62);
	EXPECT_EQ(b[1], 0x23);
	EXPECT_EQ(b[3], 0x67);
	sroce_aeth_decode(b, &a2);
	EXPECT_EQ(a2.syndrome, 0x62);
	EXPECT_EQ(a2.msn, 0x234567u);
	EXPECT_EQ(sroce_aeth_syndrome(b), 0x62);
	EXPECT_EQ(sroce_aeth_msn(b), 0x234567u);
	sroce_aeth_set_syndrome(b, 0x21);
	sroce_aeth_set_msn(b, 0xff000001);
	EXPECT_EQ(b[0], 0x21);
	EXPECT_EQ(b[1], 0x00);
	EXPECT_EQ(b[3], 0x01);
	EXPECT_EQ(sroce_aeth_msn(b), 1u);

	sroce_deth d{0x80010000, 0xabcdef01}, d2{};
	memset(b, 0xee, sizeof(b));
	sroce_deth_encode(b, &d);
	const uint8_t dw[8] = {0x80, 0x01, 0x00, 0x00, 0x00, 0xcd, 0xef, 0x01};
	EXPECT_EQ(0, memcmp(b, dw, 8));
	sroce_deth_decode(b, &d2);
	EXPECT_EQ(d2.qkey, d.qkey);
	EXPECT_EQ(d2.sqpn, 0xcdef01u);

	sroce_ieth_set_rkey(b, 0x01020304);
	EXPECT_EQ(b[0], 1);
	EXPECT_EQ(sroce_ieth_rkey(b), 0x01020304u);
	memset(b, 0xee, sizeof(b));
	sroce_xrceth_set_srqn(b, 0xfe123456);	// 24 bits, byte 0 reserved
	const uint8_t xw[4] = {0x00, 0x12, 0x34, 0x56};
	EXPECT_EQ(0, memcmp(b, xw, 4));
	EXPECT_EQ(sroce_xrceth_srqn(b), 0x123456u);
	sroce_immdt_put(b, 0xa1b2c3d4);
	EXPECT_EQ(b[0], 0xa1);
	EXPECT_EQ(sroce_immdt_get(b), 0xa1b2c3d4u);
}

TEST(WireHdr, AtomicHeaders)
{
	uint8_t b[SROCE_ATOMICETH_LEN];
	sroce_atomiceth a{0x1000200030004000ull, 0x55667788, 0x0102030405060708ull,
			  0x1112131415161718ull}, a2{};
	sroce_atomiceth_encode(b, &a);
	EXPECT_EQ(b[0], 0x10);
	EXPECT_EQ(b[8], 0x55);
	EXPECT_EQ(b[12], 0x01);
	EXPECT_EQ(b[19], 0x08);
	EXPECT_EQ(b[20], 0x11);
	EXPECT_EQ(b[27], 0x18);
	sroce_atomiceth_decode(b, &a2);
	EXPECT_EQ(a2.va, a.va);
	EXPECT_EQ(a2.rkey, a.rkey);
	EXPECT_EQ(a2.swap_add, a.swap_add);
	EXPECT_EQ(a2.compare, a.compare);

	uint8_t c[SROCE_ATOMICACKETH_LEN];
	sroce_atomicacketh_set_orig(c, 0xfedcba9876543210ull);
	EXPECT_EQ(c[0], 0xfe);
	EXPECT_EQ(sroce_atomicacketh_orig(c), 0xfedcba9876543210ull);
}

}  // namespace
