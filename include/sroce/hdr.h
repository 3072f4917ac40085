/* SPDX-License-Identifier: GPL-2.0 */
/*
 * IBTA transport headers as carried by RoCE v2 (IBTA vol. 1 ch. 9, annex A17).
 *
 * All fields are big-endian on the wire. Each header has a decoded form
 * (plain struct, host order) with sroce_X_decode()/sroce_X_encode() that read
 * or write exactly SROCE_X_LEN bytes at an unaligned pointer, plus direct
 * field accessors for the BTH, which the fast path touches per packet.
 * Encoders mask every field to its wire width; reserved bits are written as
 * zero unless the struct carries them (BTH resv8a/resv7 are kept so that a
 * decode/encode round trip is exact).
 */
#ifndef SROCE_HDR_H
#define SROCE_HDR_H

#include "types.h"

SROCE_EXTERN_C_BEGIN

#define SROCE_UDP_PORT		4791	/* IANA: RoCE v2 */

#define SROCE_IPV4_HLEN		20	/* without options */
#define SROCE_IPV6_HLEN		40
#define SROCE_UDP_HLEN		8

#define SROCE_BTH_LEN		12
#define SROCE_RDETH_LEN		4	/* RD only: not supported */
#define SROCE_DETH_LEN		8
#define SROCE_RETH_LEN		16
#define SROCE_ATOMICETH_LEN	28
#define SROCE_AETH_LEN		4
#define SROCE_ATOMICACKETH_LEN	8
#define SROCE_IMMDT_LEN		4
#define SROCE_IETH_LEN		4
#define SROCE_FETH_LEN		4	/* FLUSH (IBTA 1.5): not supported */
#define SROCE_XRCETH_LEN	4
#define SROCE_CNP_RSVD_LEN	16	/* RoCE v2 CNP: 16 reserved bytes after BTH */
#define SROCE_ICRC_LEN		4

#define SROCE_QPN_MASK		0x00ffffffu
#define SROCE_PSN_MASK		0x00ffffffu
#define SROCE_MSN_MASK		0x00ffffffu
#define SROCE_PKEY_DEFAULT	0xffff
#define SROCE_GSI_QPN		1

/* ------------------------------------------------------------------ BTH */
/*
 *  byte 0      opcode
 *  byte 1      SE(7) M(6) PadCnt(5:4) TVer(3:0)
 *  bytes 2-3   P_Key
 *  byte 4      resv8a (masked to all ones for the ICRC)
 *  bytes 5-7   DestQP
 *  byte 8      AckReq(7) resv7(6:0)
 *  bytes 9-11  PSN
 */
#define SROCE_BTH_SE		0x80
#define SROCE_BTH_MIG		0x40
#define SROCE_BTH_PAD_SHIFT	4
#define SROCE_BTH_PAD_MASK	0x30
#define SROCE_BTH_TVER_MASK	0x0f
#define SROCE_BTH_ACKREQ	0x80
#define SROCE_BTH_TVER		0	/* the only transport header version */

struct sroce_bth {
	uint8_t opcode;
	bool se;
	bool mig;
	uint8_t pad;		/* 0..3 */
	uint8_t tver;		/* 0..15 */
	uint16_t pkey;
	uint8_t resv8a;
	uint32_t dqpn;		/* 24 bits */
	bool ackreq;
	uint8_t resv7;		/* 7 bits */
	uint32_t psn;		/* 24 bits */
};

static inline uint8_t sroce_bth_opcode(const uint8_t *b) { return b[0]; }
static inline bool sroce_bth_se(const uint8_t *b) { return (b[1] & SROCE_BTH_SE) != 0; }
static inline bool sroce_bth_mig(const uint8_t *b) { return (b[1] & SROCE_BTH_MIG) != 0; }
static inline uint8_t sroce_bth_pad(const uint8_t *b)
{
	return (uint8_t)((b[1] & SROCE_BTH_PAD_MASK) >> SROCE_BTH_PAD_SHIFT);
}
static inline uint8_t sroce_bth_tver(const uint8_t *b) { return b[1] & SROCE_BTH_TVER_MASK; }
static inline uint16_t sroce_bth_pkey(const uint8_t *b) { return sroce_get_be16(b + 2); }
static inline uint32_t sroce_bth_dqpn(const uint8_t *b) { return sroce_get_be24(b + 5); }
static inline bool sroce_bth_ackreq(const uint8_t *b) { return (b[8] & SROCE_BTH_ACKREQ) != 0; }
static inline uint32_t sroce_bth_psn(const uint8_t *b) { return sroce_get_be24(b + 9); }

static inline void sroce_bth_set_opcode(uint8_t *b, uint8_t op) { b[0] = op; }
static inline void sroce_bth_set_pad(uint8_t *b, uint8_t pad)
{
	b[1] = (uint8_t)((b[1] & ~SROCE_BTH_PAD_MASK) |
			 ((pad << SROCE_BTH_PAD_SHIFT) & SROCE_BTH_PAD_MASK));
}
static inline void sroce_bth_set_se(uint8_t *b, bool on)
{
	b[1] = (uint8_t)(on ? (b[1] | SROCE_BTH_SE) : (b[1] & ~SROCE_BTH_SE));
}
static inline void sroce_bth_set_mig(uint8_t *b, bool on)
{
	b[1] = (uint8_t)(on ? (b[1] | SROCE_BTH_MIG) : (b[1] & ~SROCE_BTH_MIG));
}
static inline void sroce_bth_set_pkey(uint8_t *b, uint16_t pkey) { sroce_put_be16(b + 2, pkey); }
static inline void sroce_bth_set_dqpn(uint8_t *b, uint32_t qpn) { sroce_put_be24(b + 5, qpn & SROCE_QPN_MASK); }
static inline void sroce_bth_set_ackreq(uint8_t *b, bool on)
{
	b[8] = (uint8_t)(on ? (b[8] | SROCE_BTH_ACKREQ) : (b[8] & ~SROCE_BTH_ACKREQ));
}
static inline void sroce_bth_set_psn(uint8_t *b, uint32_t psn) { sroce_put_be24(b + 9, psn & SROCE_PSN_MASK); }

/*
 * The fields every packet a QP sends sets, on a zeroed BTH: opcode, P_Key,
 * destination QP and PSN (SE, AckReq, pad and MigReq stay as they are).
 */
static inline void sroce_bth_init(uint8_t *b, uint8_t op, uint16_t pkey,
				  uint32_t dqpn, uint32_t psn)
{
	sroce_bth_set_opcode(b, op);
	sroce_bth_set_pkey(b, pkey);
	sroce_bth_set_dqpn(b, dqpn);
	sroce_bth_set_psn(b, psn);
}

/* Pad bytes that bring a payload of len bytes to a multiple of 4. */
static inline uint8_t sroce_pad_len(uint32_t len)
{
	return (uint8_t)((4 - (len & 3)) & 3);
}

/*
 * IBTA 10.9.3 P_Key check: the 15-bit keys are equal and at least one of
 * the two is a full member (bit 15 set).
 */
static inline bool sroce_pkey_match(uint16_t a, uint16_t b)
{
	return (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000);
}

static inline void sroce_bth_decode(const uint8_t *b, struct sroce_bth *h)
{
	h->opcode = b[0];
	h->se = sroce_bth_se(b);
	h->mig = sroce_bth_mig(b);
	h->pad = sroce_bth_pad(b);
	h->tver = sroce_bth_tver(b);
	h->pkey = sroce_bth_pkey(b);
	h->resv8a = b[4];
	h->dqpn = sroce_bth_dqpn(b);
	h->ackreq = sroce_bth_ackreq(b);
	h->resv7 = b[8] & 0x7f;
	h->psn = sroce_bth_psn(b);
}

static inline void sroce_bth_encode(uint8_t *b, const struct sroce_bth *h)
{
	b[0] = h->opcode;
	b[1] = (uint8_t)((h->se ? SROCE_BTH_SE : 0) | (h->mig ? SROCE_BTH_MIG : 0) |
			 ((h->pad << SROCE_BTH_PAD_SHIFT) & SROCE_BTH_PAD_MASK) |
			 (h->tver & SROCE_BTH_TVER_MASK));
	sroce_put_be16(b + 2, h->pkey);
	b[4] = h->resv8a;
	sroce_put_be24(b + 5, h->dqpn & SROCE_QPN_MASK);
	b[8] = (uint8_t)((h->ackreq ? SROCE_BTH_ACKREQ : 0) | (h->resv7 & 0x7f));
	sroce_put_be24(b + 9, h->psn & SROCE_PSN_MASK);
}

/* ----------------------------------------------------------------- RETH */
/* bytes 0-7 virtual address, 8-11 R_Key, 12-15 DMA length */
struct sroce_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
};

static inline void sroce_reth_decode(const uint8_t *p, struct sroce_reth *h)
{
	h->va = sroce_get_be64(p);
	h->rkey = sroce_get_be32(p + 8);
	h->len = sroce_get_be32(p + 12);
}

static inline void sroce_reth_encode(uint8_t *p, const struct sroce_reth *h)
{
	sroce_put_be64(p, h->va);
	sroce_put_be32(p + 8, h->rkey);
	sroce_put_be32(p + 12, h->len);
}

/* ----------------------------------------------------------------- AETH */
/* byte 0 syndrome, bytes 1-3 MSN (see ack.h for the syndrome encoding) */
struct sroce_aeth {
	uint8_t syndrome;
	uint32_t msn;		/* 24 bits */
};

static inline void sroce_aeth_decode(const uint8_t *p, struct sroce_aeth *h)
{
	h->syndrome = p[0];
	h->msn = sroce_get_be24(p + 1);
}

static inline void sroce_aeth_encode(uint8_t *p, const struct sroce_aeth *h)
{
	p[0] = h->syndrome;
	sroce_put_be24(p + 1, h->msn & SROCE_MSN_MASK);
}

static inline uint8_t sroce_aeth_syndrome(const uint8_t *p) { return p[0]; }
static inline uint32_t sroce_aeth_msn(const uint8_t *p) { return sroce_get_be24(p + 1); }
static inline void sroce_aeth_set_syndrome(uint8_t *p, uint8_t syn) { p[0] = syn; }
static inline void sroce_aeth_set_msn(uint8_t *p, uint32_t msn) { sroce_put_be24(p + 1, msn & SROCE_MSN_MASK); }

/* ------------------------------------------------------------ AtomicETH */
/* bytes 0-7 VA, 8-11 R_Key, 12-19 swap (CmpSwap) or add (FetchAdd) data, 20-27 compare data */
struct sroce_atomiceth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
};

static inline void sroce_atomiceth_decode(const uint8_t *p, struct sroce_atomiceth *h)
{
	h->va = sroce_get_be64(p);
	h->rkey = sroce_get_be32(p + 8);
	h->swap_add = sroce_get_be64(p + 12);
	h->compare = sroce_get_be64(p + 20);
}

static inline void sroce_atomiceth_encode(uint8_t *p, const struct sroce_atomiceth *h)
{
	sroce_put_be64(p, h->va);
	sroce_put_be32(p + 8, h->rkey);
	sroce_put_be64(p + 12, h->swap_add);
	sroce_put_be64(p + 20, h->compare);
}

/* --------------------------------------------------------- AtomicAckETH */
/* bytes 0-7: original remote data */
static inline uint64_t sroce_atomicacketh_orig(const uint8_t *p) { return sroce_get_be64(p); }
static inline void sroce_atomicacketh_set_orig(uint8_t *p, uint64_t v) { sroce_put_be64(p, v); }

/* ---------------------------------------------------------------- ImmDt */
/*
 * Immediate data is opaque: libibverbs and ib_core hand it around as a
 * __be32, i.e. already in wire order. These helpers read/write it as a
 * big-endian number; to move a __be32 unchanged, memcpy the 4 bytes.
 */
static inline uint32_t sroce_immdt_get(const uint8_t *p) { return sroce_get_be32(p); }
static inline void sroce_immdt_put(uint8_t *p, uint32_t v) { sroce_put_be32(p, v); }

/* --------------------------------------------------------------- XRCETH */
/* byte 0 reserved, bytes 1-3: the XRC SRQ at the target (XRC requests) */
static inline uint32_t sroce_xrceth_srqn(const uint8_t *p) { return sroce_get_be24(p + 1); }
static inline void sroce_xrceth_set_srqn(uint8_t *p, uint32_t srqn)
{
	p[0] = 0;
	sroce_put_be24(p + 1, srqn & SROCE_QPN_MASK);
}

/* ----------------------------------------------------------------- IETH */
/* bytes 0-3: R_Key to invalidate */
static inline uint32_t sroce_ieth_rkey(const uint8_t *p) { return sroce_get_be32(p); }
static inline void sroce_ieth_set_rkey(uint8_t *p, uint32_t rkey) { sroce_put_be32(p, rkey); }

/* ----------------------------------------------------------------- DETH */
/* bytes 0-3 Q_Key, byte 4 reserved, bytes 5-7 SrcQP */
struct sroce_deth {
	uint32_t qkey;
	uint32_t sqpn;		/* 24 bits */
};

static inline void sroce_deth_decode(const uint8_t *p, struct sroce_deth *h)
{
	h->qkey = sroce_get_be32(p);
	h->sqpn = sroce_get_be24(p + 5);
}

static inline void sroce_deth_encode(uint8_t *p, const struct sroce_deth *h)
{
	sroce_put_be32(p, h->qkey);
	p[4] = 0;
	sroce_put_be24(p + 5, h->sqpn & SROCE_QPN_MASK);
}

SROCE_EXTERN_C_END

#endif /* SROCE_HDR_H */
