/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce wire format: the one place that knows whether we are built into the
 * kernel module or into user space (unit tests, fuzzer, tools).
 *
 * Everything under include/sroce/ uses only the fixed-width types
 * (uint8_t .. uint64_t), size_t and bool, plus the byte-order helpers below,
 * so the same source compiles as C11 (gcc/clang), as C++20, and inside the
 * kernel (gnu11, where <linux/types.h> provides all of these names).
 */
#ifndef SROCE_TYPES_H
#define SROCE_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/stddef.h>
#else
#include <stdint.h>
#include <stddef.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif
#endif

#ifdef __cplusplus
#define SROCE_EXTERN_C_BEGIN extern "C" {
#define SROCE_EXTERN_C_END }
#else
#define SROCE_EXTERN_C_BEGIN
#define SROCE_EXTERN_C_END
#endif

/*
 * Explicit byte-by-byte big-endian (network order) loads and stores, and
 * the little-endian ones the CRC-32 needs. They need no alignment and no
 * host byte order knowledge; gcc and clang fold them into a single
 * load/store (plus bswap where the orders differ).
 */
static inline uint16_t sroce_get_be16(const uint8_t *p)
{
	return (uint16_t)(((uint16_t)p[0] << 8) | p[1]);
}

static inline uint32_t sroce_get_be24(const uint8_t *p)
{
	return ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2];
}

static inline uint32_t sroce_get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t sroce_get_be64(const uint8_t *p)
{
	return ((uint64_t)sroce_get_be32(p) << 32) | sroce_get_be32(p + 4);
}

static inline uint32_t sroce_get_le32(const uint8_t *p)
{
	return ((uint32_t)p[3] << 24) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[1] << 8) | p[0];
}

static inline uint64_t sroce_get_le64(const uint8_t *p)
{
	return ((uint64_t)sroce_get_le32(p + 4) << 32) | sroce_get_le32(p);
}

static inline void sroce_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void sroce_put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void sroce_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void sroce_put_be64(uint8_t *p, uint64_t v)
{
	sroce_put_be32(p, (uint32_t)(v >> 32));
	sroce_put_be32(p + 4, (uint32_t)v);
}

static inline void sroce_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

#endif /* SROCE_TYPES_H */
