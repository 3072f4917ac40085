/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCE v2 invariant CRC (IBTA annex A17.3.3).
 *
 * The ICRC is the standard CRC-32 (IEEE 802.3 polynomial, reflected, initial
 * value ~0, final inversion, as zlib's crc32()) over
 *
 *   8 bytes of 0xff   stand-in for the (absent) masked LRH
 *   IP header         IPv4: TOS, TTL, header checksum set to all ones;
 *                     IPv6: traffic class, flow label, hop limit all ones
 *   UDP header        checksum all ones
 *   BTH               resv8a (byte 4) all ones
 *   the rest          extension headers, payload and pad, up to the ICRC
 *
 * and is stored little-endian on the wire (the CRC register's low byte
 * first, the same byte order as the Ethernet FCS). Wireshark shows it as
 * the big-endian number of those four bytes, i.e. byte-swapped.
 *
 * The raw register function sroce_crc32_le() (no pre-/post-inversion) is, in
 * the module, the kernel's crc32_le(), sroce_crc32_sparse() or the crypto
 * API's crc32, whichever was fastest when it loaded (kernel/icrc.c), and a
 * table-driven copy in user space.
 * Running it from ~0 over the 8 bytes of 0xff gives SROCE_ICRC_SEED =
 * 0xdebb20e3, which is why implementations (rdma_rxe) start from that seed
 * and skip the pseudo LRH.
 */
#ifndef SROCE_ICRC_H
#define SROCE_ICRC_H

#include "types.h"

SROCE_EXTERN_C_BEGIN

#define SROCE_ICRC_SEED		0xdebb20e3u	/* register after ~0 + 8 x 0xff */

/* Raw reflected CRC-32 register update (== kernel crc32_le()). */
uint32_t sroce_crc32_le(uint32_t crc, const void *buf, size_t len);

/*
 * The same register update by reduction modulo a sparse multiple of the
 * polynomial (wire.c): shifts and XORs for all but the last 21 to 28 bytes,
 * which go to the table-driven CRC. Buffers shorter than
 * SROCE_CRC32_SPARSE_MIN go to it whole.
 */
#define SROCE_CRC32_SPARSE_MIN	64
uint32_t sroce_crc32_sparse(uint32_t crc, const void *buf, size_t len);

/* Standard CRC-32 of a buffer ("123456789" -> 0xcbf43926). */
static inline uint32_t sroce_crc32(const void *buf, size_t len)
{
	return ~sroce_crc32_le(~0u, buf, len);
}

/*
 * Start an ICRC: the register after the pseudo LRH and the masked IP, UDP
 * and BTH headers. ip points at the IP header (version 4 without options,
 * or 6 without extension headers), immediately followed by the UDP header
 * and the BTH. Reads exactly 20 or 40, + 8 + 12 bytes.
 */
uint32_t sroce_icrc_begin(const uint8_t *ip, unsigned int ip_version);

/* Continue over more bytes (extension headers, payload, pad; any split). */
static inline uint32_t sroce_icrc_update(uint32_t crc, const void *buf, size_t len)
{
	return sroce_crc32_le(crc, buf, len);
}

/* The value to compare with / store as the ICRC (use sroce_icrc_put/get). */
static inline uint32_t sroce_icrc_final(uint32_t crc)
{
	return ~crc;
}

/* ICRC of a whole packet in one buffer: from the IP header to len bytes,
 * len excluding the 4 ICRC bytes. len must cover IP + UDP + BTH. */
uint32_t sroce_icrc_compute(const uint8_t *ip, unsigned int ip_version, size_t len);

/* Wire byte order of the ICRC trailer. */
static inline uint32_t sroce_icrc_get(const uint8_t *p) { return sroce_get_le32(p); }
static inline void sroce_icrc_put(uint8_t *p, uint32_t icrc) { sroce_put_le32(p, icrc); }

SROCE_EXTERN_C_END

#endif /* SROCE_ICRC_H */
