// SPDX-License-Identifier: GPL-2.0
// PSN arithmetic around the 24-bit wrap, AETH syndromes, RNR and ACK timers.
#include "wire_test_util.h"

#include <gtest/gtest.h>

namespace {

TEST(WirePsn, AddWraps)
{
	EXPECT_EQ(sroce_psn_add(0xffffff, 1), 0u);
	EXPECT_EQ(sroce_psn_add(0xfffffe, 5), 3u);
	EXPECT_EQ(sroce_psn_inc(0xffffff), 0u);
	EXPECT_EQ(sroce_psn_add(0x12345678, 0), 0x345678u);	// input masked
	EXPECT_EQ(sroce_psn_add(0, 0x1000000), 0u);
}

TEST(WirePsn, SignedDiff)
{
	EXPECT_EQ(sroce_psn_diff(0, 0xffffff), 1);
	EXPECT_EQ(sroce_psn_diff(0xffffff, 0), -1);
	EXPECT_EQ(sroce_psn_diff(5, 0xfffffb), 10);
	EXPECT_EQ(sroce_psn_diff(0x7fffff, 0), 0x7fffff);	// largest "after"
	EXPECT_EQ(sroce_psn_diff(0x800000, 0), -0x800000);	// half way counts as before
	EXPECT_EQ(sroce_psn_diff(0, 0x800000), -0x800000);
	EXPECT_EQ(sroce_psn_diff(0x1000005, 5), 0);		// high bits ignored
	EXPECT_EQ(sroce_psn_fwd(0, 0xffffff), 1u);
	EXPECT_EQ(sroce_psn_fwd(0xffffff, 0), 0xffffffu);
}

TEST(WirePsn, Compare)
{
	EXPECT_TRUE(sroce_psn_before(0xffffff, 0));
	EXPECT_TRUE(sroce_psn_after(0, 0xffffff));
	EXPECT_TRUE(sroce_psn_after(0x10, 0xfffff0));
	EXPECT_FALSE(sroce_psn_after(5, 5));
	EXPECT_TRUE(sroce_psn_after_eq(5, 5));
	EXPECT_TRUE(sroce_psn_before_eq(5, 5));
	EXPECT_EQ(sroce_psn_cmp(1, 0xffffff), 1);
	EXPECT_EQ(sroce_psn_cmp(0xffffff, 1), -1);
	EXPECT_EQ(sroce_psn_cmp(7, 7), 0);
	// antisymmetry everywhere except the exact half-way point
	std::mt19937 rng(7);
	for (int i = 0; i < 100000; i++) {
		uint32_t a = rng() & 0xffffff, b = rng() & 0xffffff;
		if (sroce_psn_fwd(a, b) == 0x800000)
			continue;
		ASSERT_EQ(sroce_psn_cmp(a, b), -sroce_psn_cmp(b, a));
		ASSERT_EQ(sroce_psn_add(b, (uint32_t)sroce_psn_diff(a, b)), a);
	}
}

TEST(WirePsn, Window)
{
	EXPECT_TRUE(sroce_psn_in_window(0xfffffe, 0xfffffe, 4));
	EXPECT_TRUE(sroce_psn_in_window(0x000001, 0xfffffe, 4));
	EXPECT_FALSE(sroce_psn_in_window(0x000002, 0xfffffe, 4));
	EXPECT_FALSE(sroce_psn_in_window(0xfffffd, 0xfffffe, 4));
	EXPECT_FALSE(sroce_psn_in_window(5, 5, 0));
	EXPECT_TRUE(sroce_psn_in_window(4, 5, 0x1000000));	// whole space
	EXPECT_TRUE(sroce_psn_in_range(0, 0xfffff0, 0x10));
	EXPECT_TRUE(sroce_psn_in_range(0x10, 0xfffff0, 0x10));
	EXPECT_FALSE(sroce_psn_in_range(0x11, 0xfffff0, 0x10));
	EXPECT_FALSE(sroce_psn_in_range(0xffffef, 0xfffff0, 0x10));
	EXPECT_TRUE(sroce_psn_in_range(3, 3, 3));
}

TEST(WireAck, Syndromes)
{
	EXPECT_EQ(sroce_aeth_syn_ack(0), 0x00);
	EXPECT_EQ(sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID), 0x1f);
	EXPECT_EQ(sroce_aeth_syn_rnr(0), 0x20);
	EXPECT_EQ(sroce_aeth_syn_rnr(14), 0x2e);
	EXPECT_EQ(sroce_aeth_syn_nak(SROCE_NAK_PSN_SEQ_ERROR), 0x60);
	EXPECT_EQ(sroce_aeth_syn_nak(SROCE_NAK_INVALID_REQUEST), 0x61);
	EXPECT_EQ(sroce_aeth_syn_nak(SROCE_NAK_REMOTE_ACCESS_ERROR), 0x62);
	EXPECT_EQ(sroce_aeth_syn_nak(SROCE_NAK_REMOTE_OP_ERROR), 0x63);
	EXPECT_EQ(sroce_aeth_syn_nak(SROCE_NAK_INVALID_RD_REQUEST), 0x64);
	EXPECT_EQ(sroce_aeth_syn_type(0x2e), SROCE_AETH_RNR_NAK);
	EXPECT_EQ(sroce_aeth_syn_value(0x2e), 14u);
	EXPECT_EQ(sroce_aeth_syn_type(0x1f), SROCE_AETH_ACK);
	EXPECT_EQ(sroce_aeth_syn_type(0x63), SROCE_AETH_NAK);
	EXPECT_EQ(sroce_aeth_syn_type(0x40), SROCE_AETH_RESERVED);
	EXPECT_TRUE(sroce_aeth_syn_valid(0x1f));
	EXPECT_TRUE(sroce_aeth_syn_valid(0x3f));
	EXPECT_TRUE(sroce_aeth_syn_valid(0x64));
	EXPECT_FALSE(sroce_aeth_syn_valid(0x65));
	EXPECT_FALSE(sroce_aeth_syn_valid(0x40));
	EXPECT_FALSE(sroce_aeth_syn_valid(0x80));
}

TEST(WireAck, RnrTable)
{
	// IBTA table 45, in microseconds
	const uint32_t want[32] = {655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480,
				   640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360,
				   20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760,
				   327680, 491520};
	for (unsigned c = 0; c < 32; c++)
		EXPECT_EQ(sroce_rnr_timer_us(c), want[c]) << c;
	for (unsigned c = 2; c < 32; c++)
		EXPECT_GT(sroce_rnr_timer_us(c), sroce_rnr_timer_us(c - 1));
	EXPECT_EQ(sroce_rnr_timer_us(32 + 5), 60u);	// code masked to 5 bits
	EXPECT_EQ(sroce_rnr_timer_code(0), 1u);
	EXPECT_EQ(sroce_rnr_timer_code(10), 1u);
	EXPECT_EQ(sroce_rnr_timer_code(11), 2u);
	EXPECT_EQ(sroce_rnr_timer_code(1000), 14u);	// 1.28 ms
	EXPECT_EQ(sroce_rnr_timer_code(491520), 31u);
	EXPECT_EQ(sroce_rnr_timer_code(491521), 0u);
	EXPECT_EQ(sroce_rnr_timer_code(10000000), 0u);
	for (unsigned c = 1; c < 32; c++)
		EXPECT_EQ(sroce_rnr_timer_code(sroce_rnr_timer_us(c)), c);
}

TEST(WireAck, AckTimeout)
{
	EXPECT_EQ(sroce_ack_timeout_ns(0), 0u);			// infinite
	EXPECT_EQ(sroce_ack_timeout_ns(1), 8192u);
	EXPECT_EQ(sroce_ack_timeout_ns(14), 67108864u);		// 67.1 ms
	EXPECT_EQ(sroce_ack_timeout_ns(31), 4096ull << 31);	// 2.4 h
	EXPECT_EQ(sroce_ack_timeout_ns(32 + 1), 8192u);
}

}  // namespace
