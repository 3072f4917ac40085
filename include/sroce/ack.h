/* SPDX-License-Identifier: GPL-2.0 */
/*
 * AETH syndrome encoding (IBTA 9.7.5.1, table 42), RNR NAK timer codes
 * (table 45) and the local ACK timeout (4.096 us * 2^timeout, 0 = infinite).
 *
 *   syndrome bit 7     reserved, 0
 *   bits 6:5           00 ACK, 01 RNR NAK, 10 reserved, 11 NAK
 *   bits 4:0           ACK: credit count (31 = invalid/no credits field)
 *                      RNR NAK: RNR timer code
 *                      NAK: NAK code (below)
 */
#ifndef SROCE_ACK_H
#define SROCE_ACK_H

#include "types.h"

SROCE_EXTERN_C_BEGIN

enum sroce_aeth_type {
	SROCE_AETH_ACK		= 0,
	SROCE_AETH_RNR_NAK	= 1,
	SROCE_AETH_RESERVED	= 2,
	SROCE_AETH_NAK		= 3,
};

enum sroce_nak_code {
	SROCE_NAK_PSN_SEQ_ERROR		= 0,
	SROCE_NAK_INVALID_REQUEST	= 1,
	SROCE_NAK_REMOTE_ACCESS_ERROR	= 2,
	SROCE_NAK_REMOTE_OP_ERROR	= 3,
	SROCE_NAK_INVALID_RD_REQUEST	= 4,
	/* 5..31 reserved */
};

#define SROCE_AETH_TYPE_SHIFT	5
#define SROCE_AETH_TYPE_MASK	0x60
#define SROCE_AETH_VALUE_MASK	0x1f
#define SROCE_AETH_CREDITS_INVALID 0x1f
#define SROCE_RNR_TIMER_CODES	32

static inline uint8_t sroce_aeth_syn(enum sroce_aeth_type t, unsigned int value)
{
	return (uint8_t)(((unsigned int)t << SROCE_AETH_TYPE_SHIFT) |
			 (value & SROCE_AETH_VALUE_MASK));
}

/* ACK carrying a credit count (0..30; 31 means "no credit information"). */
static inline uint8_t sroce_aeth_syn_ack(unsigned int credits)
{
	return sroce_aeth_syn(SROCE_AETH_ACK, credits);
}

static inline uint8_t sroce_aeth_syn_rnr(unsigned int timer_code)
{
	return sroce_aeth_syn(SROCE_AETH_RNR_NAK, timer_code);
}

static inline uint8_t sroce_aeth_syn_nak(enum sroce_nak_code code)
{
	return sroce_aeth_syn(SROCE_AETH_NAK, (unsigned int)code);
}

static inline enum sroce_aeth_type sroce_aeth_syn_type(uint8_t syn)
{
	return (enum sroce_aeth_type)((syn & SROCE_AETH_TYPE_MASK) >> SROCE_AETH_TYPE_SHIFT);
}

static inline unsigned int sroce_aeth_syn_value(uint8_t syn)
{
	return syn & SROCE_AETH_VALUE_MASK;
}

/* A syndrome a conforming responder may send: bit 7 clear, not the reserved
 * type, NAK codes 0..4 only. */
static inline bool sroce_aeth_syn_valid(uint8_t syn)
{
	if (syn & 0x80)
		return false;
	switch (sroce_aeth_syn_type(syn)) {
	case SROCE_AETH_ACK:
	case SROCE_AETH_RNR_NAK:
		return true;
	case SROCE_AETH_NAK:
		return sroce_aeth_syn_value(syn) <= SROCE_NAK_INVALID_RD_REQUEST;
	default:
		return false;
	}
}

/* RNR NAK timer code (0..31) -> minimum delay in microseconds (IBTA table 45):
 * code 0 is 655.36 ms, codes 1..31 go from 0.01 ms to 491.52 ms. */
extern const uint32_t sroce_rnr_timer_us_table[SROCE_RNR_TIMER_CODES];

static inline uint32_t sroce_rnr_timer_us(unsigned int code)
{
	return sroce_rnr_timer_us_table[code & 0x1f];
}

/* Code of the shortest delay that is at least us; code 0 (655.36 ms, the
 * longest) if us exceeds 491.52 ms. */
static inline unsigned int sroce_rnr_timer_code(uint32_t us)
{
	unsigned int c;

	for (c = 1; c < SROCE_RNR_TIMER_CODES; c++)
		if (sroce_rnr_timer_us_table[c] >= us)
			return c;
	return 0;
}

/* Local ACK timeout: 4.096 us * 2^timeout for timeout 1..31 (5 bits);
 * 0 means infinite and returns 0. */
static inline uint64_t sroce_ack_timeout_ns(unsigned int timeout)
{
	timeout &= 0x1f;
	return timeout ? (uint64_t)4096 << timeout : 0;
}

SROCE_EXTERN_C_END

#endif /* SROCE_ACK_H */
