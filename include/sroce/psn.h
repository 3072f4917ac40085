/* SPDX-License-Identifier: GPL-2.0 */
/*
 * 24-bit packet sequence number arithmetic (IBTA 9.7.1). PSNs (and MSNs) wrap
 * modulo 2^24; a PSN is "after" another if it lies in the next half of the
 * space (2^23 values), "before" if in the previous half. Every function
 * accepts any 32-bit input and uses only its low 24 bits.
 */
#ifndef SROCE_PSN_H
#define SROCE_PSN_H

#include "types.h"

SROCE_EXTERN_C_BEGIN

#define SROCE_PSN_BITS		24
#define SROCE_PSN_SPACE		0x01000000u
#define SROCE_PSN_HALF		0x00800000u
#define SROCE_PSN_MAX		0x00ffffffu

static inline uint32_t sroce_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & SROCE_PSN_MAX;
}

static inline uint32_t sroce_psn_inc(uint32_t psn)
{
	return sroce_psn_add(psn, 1);
}

/* a - b modulo 2^24, as an unsigned forward distance 0..2^24-1. */
static inline uint32_t sroce_psn_fwd(uint32_t a, uint32_t b)
{
	return (a - b) & SROCE_PSN_MAX;
}

/* a - b as a signed distance in [-2^23, 2^23 - 1]. */
static inline int32_t sroce_psn_diff(uint32_t a, uint32_t b)
{
	uint32_t d = sroce_psn_fwd(a, b);

	return d & SROCE_PSN_HALF ? (int32_t)d - (int32_t)SROCE_PSN_SPACE : (int32_t)d;
}

static inline bool sroce_psn_before(uint32_t a, uint32_t b)
{
	return sroce_psn_diff(a, b) < 0;
}

static inline bool sroce_psn_after(uint32_t a, uint32_t b)
{
	return sroce_psn_diff(a, b) > 0;
}

static inline bool sroce_psn_before_eq(uint32_t a, uint32_t b)
{
	return sroce_psn_diff(a, b) <= 0;
}

static inline bool sroce_psn_after_eq(uint32_t a, uint32_t b)
{
	return sroce_psn_diff(a, b) >= 0;
}

/* -1, 0 or 1 as a is before, equal to or after b. */
static inline int sroce_psn_cmp(uint32_t a, uint32_t b)
{
	int32_t d = sroce_psn_diff(a, b);

	return (d > 0) - (d < 0);
}

/* psn lies in [start, start + n) modulo 2^24 (n <= 2^24). */
static inline bool sroce_psn_in_window(uint32_t psn, uint32_t start, uint32_t n)
{
	return sroce_psn_fwd(psn, start) < n;
}

/* psn lies in [first, last] modulo 2^24 (last not before first). */
static inline bool sroce_psn_in_range(uint32_t psn, uint32_t first, uint32_t last)
{
	return sroce_psn_fwd(psn, first) <= sroce_psn_fwd(last, first);
}

SROCE_EXTERN_C_END

#endif /* SROCE_PSN_H */
