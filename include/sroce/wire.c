// SPDX-License-Identifier: GPL-2.0
/*
 * sroce wire format, out-of-line parts: header lengths, the opcode table,
 * the RNR timer table, CRC-32 / ICRC and the packet validator.
 *
 * Plain C11 (gnu11 in the kernel), no allocation, no libc: compiled as C
 * into the kernel module (see wire.h) and into user space by CMake.
 */
#include "wire.h"

#ifdef __KERNEL__
#include <linux/crc32.h>
#endif

/* --------------------------------------------------------------- headers */

const uint8_t sroce_hdr_len[SROCE_HDR_NR] = {
	[SROCE_HDR_BTH]		 = SROCE_BTH_LEN,
	[SROCE_HDR_RDETH]	 = SROCE_RDETH_LEN,
	[SROCE_HDR_DETH]	 = SROCE_DETH_LEN,
	[SROCE_HDR_XRCETH]	 = SROCE_XRCETH_LEN,
	[SROCE_HDR_FETH]	 = SROCE_FETH_LEN,
	[SROCE_HDR_RETH]	 = SROCE_RETH_LEN,
	[SROCE_HDR_ATOMICETH]	 = SROCE_ATOMICETH_LEN,
	[SROCE_HDR_AETH]	 = SROCE_AETH_LEN,
	[SROCE_HDR_ATOMICACKETH] = SROCE_ATOMICACKETH_LEN,
	[SROCE_HDR_IMMDT]	 = SROCE_IMMDT_LEN,
	[SROCE_HDR_IETH]	 = SROCE_IETH_LEN,
	[SROCE_HDR_CNP_RSVD]	 = SROCE_CNP_RSVD_LEN,
};

const char *const sroce_hdr_name[SROCE_HDR_NR] = {
	[SROCE_HDR_BTH]		 = "BTH",
	[SROCE_HDR_RDETH]	 = "RDETH",
	[SROCE_HDR_DETH]	 = "DETH",
	[SROCE_HDR_XRCETH]	 = "XRCETH",
	[SROCE_HDR_FETH]	 = "FETH",
	[SROCE_HDR_RETH]	 = "RETH",
	[SROCE_HDR_ATOMICETH]	 = "AtomicETH",
	[SROCE_HDR_AETH]	 = "AETH",
	[SROCE_HDR_ATOMICACKETH] = "AtomicAckETH",
	[SROCE_HDR_IMMDT]	 = "ImmDt",
	[SROCE_HDR_IETH]	 = "IETH",
	[SROCE_HDR_CNP_RSVD]	 = "CNP reserved",
};

/* ---------------------------------------------------------- opcode table */

#define H(x)		SROCE_HDRF(SROCE_HDR_##x)
#define BTH		H(BTH)

/*
 * Header offsets and lengths are computed here, at compile time, from the
 * set of headers an opcode carries (headers follow each other in enum
 * sroce_hdr order): bytes of the headers in hd that precede header h.
 */
#define BEFORE1(hd, h, x)						\
	((SROCE_HDR_##x < (h) && ((hd) & SROCE_HDRF(SROCE_HDR_##x))) ? SROCE_##x##_LEN : 0)
#define BEFORE(hd, h)								\
	(BEFORE1(hd, h, BTH) + BEFORE1(hd, h, RDETH) + BEFORE1(hd, h, DETH) +	\
	 BEFORE1(hd, h, XRCETH) + BEFORE1(hd, h, FETH) + BEFORE1(hd, h, RETH) +	\
	 BEFORE1(hd, h, ATOMICETH) + BEFORE1(hd, h, AETH) +			\
	 BEFORE1(hd, h, ATOMICACKETH) + BEFORE1(hd, h, IMMDT) +		\
	 BEFORE1(hd, h, IETH) + BEFORE1(hd, h, CNP_RSVD))
#define OFF(hd, x)							\
	[SROCE_HDR_##x] = (((hd) & SROCE_HDRF(SROCE_HDR_##x)) ? BEFORE(hd, SROCE_HDR_##x) : 0)

/* flag shorthands */
#define K		SROCE_OPF_KNOWN
#define S		(SROCE_OPF_KNOWN | SROCE_OPF_SUPPORTED)
#define RQ		SROCE_OPF_REQUEST
#define RS		SROCE_OPF_RESPONSE
#define PL		SROCE_OPF_PAYLOAD
#define IM		SROCE_OPF_IMM
#define IV		SROCE_OPF_INV
#define AK		SROCE_OPF_ACKED
#define CP		SROCE_OPF_COMP
#define FA		SROCE_OPF_FETCH_ADD
#define P_FIRST		SROCE_OPF_START
#define P_MIDDLE	0
#define P_LAST		SROCE_OPF_END
#define P_ONLY		(SROCE_OPF_START | SROCE_OPF_END)

#define OP(code, nm, tr, kd, ps, fl, hd)					\
	[code] = { .name = nm, .hdrs = (uint16_t)(hd),			\
		   .flags = (uint16_t)((fl) | P_##ps),			\
		   .hdr_len = (uint8_t)BEFORE(hd, SROCE_HDR_NR),		\
		   .transport = SROCE_TRANSPORT_##tr,				\
		   .kind = SROCE_KIND_##kd, .pos = SROCE_POS_##ps,		\
		   .hdr_off = { OFF(hd, RDETH), OFF(hd, DETH), OFF(hd, XRCETH),	\
				OFF(hd, FETH), OFF(hd, RETH), OFF(hd, ATOMICETH), \
				OFF(hd, AETH), OFF(hd, ATOMICACKETH),		\
				OFF(hd, IMMDT), OFF(hd, IETH), OFF(hd, CNP_RSVD) } }

/*
 * Send and RDMA WRITE families, identical for RC (base 0x00) and UC (0x20)
 * except for the ACK requirement. XRC (0xa0) has the same set with an
 * XRCETH after the BTH of every request.
 */
#define SEND_WRITE(b, T, tr, ak, su, x)						\
	OP(b + 0x00, #T "_SEND_FIRST", tr, SEND, FIRST, su | RQ | PL | ak, BTH | x),	\
	OP(b + 0x01, #T "_SEND_MIDDLE", tr, SEND, MIDDLE, su | RQ | PL | ak, BTH | x),	\
	OP(b + 0x02, #T "_SEND_LAST", tr, SEND, LAST, su | RQ | PL | ak | CP, BTH | x),	\
	OP(b + 0x03, #T "_SEND_LAST_WITH_IMMEDIATE", tr, SEND, LAST,			\
	   su | RQ | PL | ak | CP | IM, BTH | x | H(IMMDT)),				\
	OP(b + 0x04, #T "_SEND_ONLY", tr, SEND, ONLY, su | RQ | PL | ak | CP, BTH | x),	\
	OP(b + 0x05, #T "_SEND_ONLY_WITH_IMMEDIATE", tr, SEND, ONLY,			\
	   su | RQ | PL | ak | CP | IM, BTH | x | H(IMMDT)),				\
	OP(b + 0x06, #T "_RDMA_WRITE_FIRST", tr, WRITE, FIRST, su | RQ | PL | ak,	\
	   BTH | x | H(RETH)),								\
	OP(b + 0x07, #T "_RDMA_WRITE_MIDDLE", tr, WRITE, MIDDLE, su | RQ | PL | ak, BTH | x), \
	OP(b + 0x08, #T "_RDMA_WRITE_LAST", tr, WRITE, LAST, su | RQ | PL | ak, BTH | x),	\
	OP(b + 0x09, #T "_RDMA_WRITE_LAST_WITH_IMMEDIATE", tr, WRITE, LAST,		\
	   su | RQ | PL | ak | CP | IM, BTH | x | H(IMMDT)),				\
	OP(b + 0x0a, #T "_RDMA_WRITE_ONLY", tr, WRITE, ONLY, su | RQ | PL | ak,	\
	   BTH | x | H(RETH)),								\
	OP(b + 0x0b, #T "_RDMA_WRITE_ONLY_WITH_IMMEDIATE", tr, WRITE, ONLY,		\
	   su | RQ | PL | ak | CP | IM, BTH | x | H(RETH) | H(IMMDT))

/*
 * READ, ACK, atomics and SEND with invalidate: RC (0x00) and XRC (0xa0).
 * Responses carry no XRCETH. FLUSH is known, not supported, in both.
 */
#define RC_ONLY_OPS(b, T, tr, su, x)							\
	OP(b + 0x0c, #T "_RDMA_READ_REQUEST", tr, READ_REQ, ONLY, su | RQ | AK,	\
	   BTH | x | H(RETH)),								\
	OP(b + 0x0d, #T "_RDMA_READ_RESPONSE_FIRST", tr, READ_RESP, FIRST, su | RS | PL, \
	   BTH | H(AETH)),								\
	OP(b + 0x0e, #T "_RDMA_READ_RESPONSE_MIDDLE", tr, READ_RESP, MIDDLE, su | RS | PL, \
	   BTH),									\
	OP(b + 0x0f, #T "_RDMA_READ_RESPONSE_LAST", tr, READ_RESP, LAST, su | RS | PL,	\
	   BTH | H(AETH)),								\
	OP(b + 0x10, #T "_RDMA_READ_RESPONSE_ONLY", tr, READ_RESP, ONLY, su | RS | PL,	\
	   BTH | H(AETH)),								\
	OP(b + 0x11, #T "_ACKNOWLEDGE", tr, ACK, ONLY, su | RS, BTH | H(AETH)),		\
	OP(b + 0x12, #T "_ATOMIC_ACKNOWLEDGE", tr, ATOMIC_ACK, ONLY, su | RS,		\
	   BTH | H(AETH) | H(ATOMICACKETH)),						\
	OP(b + 0x13, #T "_COMPARE_SWAP", tr, ATOMIC, ONLY, su | RQ | AK,		\
	   BTH | x | H(ATOMICETH)),							\
	OP(b + 0x14, #T "_FETCH_ADD", tr, ATOMIC, ONLY, su | RQ | AK | FA,		\
	   BTH | x | H(ATOMICETH)),							\
	OP(b + 0x16, #T "_SEND_LAST_WITH_INVALIDATE", tr, SEND, LAST,			\
	   su | RQ | PL | AK | CP | IV, BTH | x | H(IETH)),				\
	OP(b + 0x17, #T "_SEND_ONLY_WITH_INVALIDATE", tr, SEND, ONLY,			\
	   su | RQ | PL | AK | CP | IV, BTH | x | H(IETH)),				\
	OP(b + 0x1c, #T "_FLUSH", tr, FLUSH, ONLY, K | RQ | AK, BTH | x | H(FETH) | H(RETH)), \
	OP(b + 0x1d, #T "_ATOMIC_WRITE", tr, ATOMIC_WRITE, ONLY, su | RQ | PL | AK,	\
	   BTH | x | H(RETH))

/* Reliable Datagram: every request carries RDETH + DETH (known, unsupported). */
#define RDH		(H(RDETH) | H(DETH))

const struct sroce_opcode_info sroce_opcode_table[256] = {
	SEND_WRITE(0x00, RC, RC, AK, S, 0),
	RC_ONLY_OPS(0x00, RC, RC, S, 0),

	SEND_WRITE(0x20, UC, UC, 0, S, 0),

	OP(0x40, "RD_SEND_FIRST", RD, SEND, FIRST, K | RQ | PL | AK, BTH | RDH),
	OP(0x41, "RD_SEND_MIDDLE", RD, SEND, MIDDLE, K | RQ | PL | AK, BTH | RDH),
	OP(0x42, "RD_SEND_LAST", RD, SEND, LAST, K | RQ | PL | AK | CP, BTH | RDH),
	OP(0x43, "RD_SEND_LAST_WITH_IMMEDIATE", RD, SEND, LAST, K | RQ | PL | AK | CP | IM,
	   BTH | RDH | H(IMMDT)),
	OP(0x44, "RD_SEND_ONLY", RD, SEND, ONLY, K | RQ | PL | AK | CP, BTH | RDH),
	OP(0x45, "RD_SEND_ONLY_WITH_IMMEDIATE", RD, SEND, ONLY, K | RQ | PL | AK | CP | IM,
	   BTH | RDH | H(IMMDT)),
	OP(0x46, "RD_RDMA_WRITE_FIRST", RD, WRITE, FIRST, K | RQ | PL | AK, BTH | RDH | H(RETH)),
	OP(0x47, "RD_RDMA_WRITE_MIDDLE", RD, WRITE, MIDDLE, K | RQ | PL | AK, BTH | RDH),
	OP(0x48, "RD_RDMA_WRITE_LAST", RD, WRITE, LAST, K | RQ | PL | AK, BTH | RDH),
	OP(0x49, "RD_RDMA_WRITE_LAST_WITH_IMMEDIATE", RD, WRITE, LAST,
	   K | RQ | PL | AK | CP | IM, BTH | RDH | H(IMMDT)),
	OP(0x4a, "RD_RDMA_WRITE_ONLY", RD, WRITE, ONLY, K | RQ | PL | AK, BTH | RDH | H(RETH)),
	OP(0x4b, "RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE", RD, WRITE, ONLY,
	   K | RQ | PL | AK | CP | IM, BTH | RDH | H(RETH) | H(IMMDT)),
	OP(0x4c, "RD_RDMA_READ_REQUEST", RD, READ_REQ, ONLY, K | RQ | AK, BTH | RDH | H(RETH)),
	OP(0x4d, "RD_RDMA_READ_RESPONSE_FIRST", RD, READ_RESP, FIRST, K | RS | PL,
	   BTH | H(RDETH) | H(AETH)),
	OP(0x4e, "RD_RDMA_READ_RESPONSE_MIDDLE", RD, READ_RESP, MIDDLE, K | RS | PL,
	   BTH | H(RDETH)),
	OP(0x4f, "RD_RDMA_READ_RESPONSE_LAST", RD, READ_RESP, LAST, K | RS | PL,
	   BTH | H(RDETH) | H(AETH)),
	OP(0x50, "RD_RDMA_READ_RESPONSE_ONLY", RD, READ_RESP, ONLY, K | RS | PL,
	   BTH | H(RDETH) | H(AETH)),
	OP(0x51, "RD_ACKNOWLEDGE", RD, ACK, ONLY, K | RS, BTH | H(RDETH) | H(AETH)),
	OP(0x52, "RD_ATOMIC_ACKNOWLEDGE", RD, ATOMIC_ACK, ONLY, K | RS,
	   BTH | H(RDETH) | H(AETH) | H(ATOMICACKETH)),
	OP(0x53, "RD_COMPARE_SWAP", RD, ATOMIC, ONLY, K | RQ | AK, BTH | RDH | H(ATOMICETH)),
	OP(0x54, "RD_FETCH_ADD", RD, ATOMIC, ONLY, K | RQ | AK | FA, BTH | RDH | H(ATOMICETH)),
	OP(0x55, "RD_RESYNC", RD, RESYNC, ONLY, K | RQ | AK, BTH | RDH),

	OP(0x64, "UD_SEND_ONLY", UD, SEND, ONLY, S | RQ | PL | CP, BTH | H(DETH)),
	OP(0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", UD, SEND, ONLY, S | RQ | PL | CP | IM,
	   BTH | H(DETH) | H(IMMDT)),

	/* RoCE v2 annex A17.9.3: BTH (DestQP = the QP to slow down) + 16 reserved bytes. */
	OP(0x81, "CNP", CNP, CNP, ONLY, S, BTH | H(CNP_RSVD)),

	SEND_WRITE(0xa0, XRC, XRC, AK, S, H(XRCETH)),
	RC_ONLY_OPS(0xa0, XRC, XRC, S, H(XRCETH)),
};

/*
 * The inverse of the table. The low five bits of an opcode name the
 * operation the same way in every transport class (IBTA table 38), so they
 * depend on kind, position and variant only; the class adds transport << 5.
 * Entries hold low5 + 1 (0: no such packet). sroce_opcode_find() confirms
 * every answer against the table above, which stays the one authority.
 */
#define V_IMM		1	/* index bits: SROCE_OPF_IMM, _INV, _FETCH_ADD */
#define V_INV		2
#define V_FA		4

static const uint8_t opcode_low5[SROCE_KIND_CNP + 1][SROCE_POS_ONLY + 1][8] = {
	[SROCE_KIND_SEND] = {
		[SROCE_POS_FIRST]  = { [0] = 0x00 + 1 },
		[SROCE_POS_MIDDLE] = { [0] = 0x01 + 1 },
		[SROCE_POS_LAST]   = { [0] = 0x02 + 1, [V_IMM] = 0x03 + 1, [V_INV] = 0x16 + 1 },
		[SROCE_POS_ONLY]   = { [0] = 0x04 + 1, [V_IMM] = 0x05 + 1, [V_INV] = 0x17 + 1 },
	},
	[SROCE_KIND_WRITE] = {
		[SROCE_POS_FIRST]  = { [0] = 0x06 + 1 },
		[SROCE_POS_MIDDLE] = { [0] = 0x07 + 1 },
		[SROCE_POS_LAST]   = { [0] = 0x08 + 1, [V_IMM] = 0x09 + 1 },
		[SROCE_POS_ONLY]   = { [0] = 0x0a + 1, [V_IMM] = 0x0b + 1 },
	},
	[SROCE_KIND_READ_REQ]	  = { [SROCE_POS_ONLY] = { [0] = 0x0c + 1 } },
	[SROCE_KIND_READ_RESP] = {
		[SROCE_POS_FIRST]  = { [0] = 0x0d + 1 },
		[SROCE_POS_MIDDLE] = { [0] = 0x0e + 1 },
		[SROCE_POS_LAST]   = { [0] = 0x0f + 1 },
		[SROCE_POS_ONLY]   = { [0] = 0x10 + 1 },
	},
	[SROCE_KIND_ACK]	  = { [SROCE_POS_ONLY] = { [0] = 0x11 + 1 } },
	[SROCE_KIND_ATOMIC_ACK]	  = { [SROCE_POS_ONLY] = { [0] = 0x12 + 1 } },
	[SROCE_KIND_ATOMIC]	  = { [SROCE_POS_ONLY] = { [0] = 0x13 + 1, [V_FA] = 0x14 + 1 } },
	[SROCE_KIND_RESYNC]	  = { [SROCE_POS_ONLY] = { [0] = 0x15 + 1 } },
	[SROCE_KIND_FLUSH]	  = { [SROCE_POS_ONLY] = { [0] = 0x1c + 1 } },
	[SROCE_KIND_ATOMIC_WRITE] = { [SROCE_POS_ONLY] = { [0] = 0x1d + 1 } },
	[SROCE_KIND_CNP]	  = { [SROCE_POS_ONLY] = { [0] = 0x01 + 1 } },
};

int sroce_opcode_find(enum sroce_transport transport, enum sroce_op_kind kind,
		      enum sroce_pos pos, unsigned int variant)
{
	const struct sroce_opcode_info *oi;
	unsigned int v = 0;
	uint8_t low5;
	int op;

	if ((unsigned int)transport >= SROCE_TRANSPORT_VENDOR ||
	    (unsigned int)kind > SROCE_KIND_CNP || (unsigned int)pos > SROCE_POS_ONLY ||
	    (variant & ~(unsigned int)SROCE_OPF_VARIANT))
		return -1;
	/*
	 * ImmDt and IETH travel in the last packet of a message: its FIRST and
	 * MIDDLE packets are the plain ones, if the message can end that way.
	 */
	if ((pos == SROCE_POS_FIRST || pos == SROCE_POS_MIDDLE) &&
	    (variant & (SROCE_OPF_IMM | SROCE_OPF_INV))) {
		if (sroce_opcode_find(transport, kind, SROCE_POS_LAST, variant) < 0)
			return -1;
		variant &= ~(unsigned int)(SROCE_OPF_IMM | SROCE_OPF_INV);
	}
	if (variant & SROCE_OPF_IMM)
		v |= V_IMM;
	if (variant & SROCE_OPF_INV)
		v |= V_INV;
	if (variant & SROCE_OPF_FETCH_ADD)
		v |= V_FA;
	low5 = opcode_low5[kind][pos][v];
	if (!low5)
		return -1;
	op = ((int)transport << 5) | (low5 - 1);
	oi = sroce_opcode_lookup((uint8_t)op);
	if (!(oi->flags & SROCE_OPF_KNOWN) || oi->transport != transport ||
	    oi->kind != kind || oi->pos != pos ||
	    (oi->flags & SROCE_OPF_VARIANT) != variant)
		return -1;
	return op;
}

/* ------------------------------------------------------------ RNR timer */

const uint32_t sroce_rnr_timer_us_table[SROCE_RNR_TIMER_CODES] = {
	655360,	10,	20,	30,	40,	60,	80,	120,
	160,	240,	320,	480,	640,	960,	1280,	1920,
	2560,	3840,	5120,	7680,	10240,	15360,	20480,	30720,
	40960,	61440,	81920,	122880,	163840,	245760,	327680,	491520,
};

/* --------------------------------------------------------------- CRC-32 */

/*
 * The module defines sroce_crc32_le() in kernel/icrc.c, where it picks the
 * kernel's fastest CRC-32 at load time.
 */
#ifndef __KERNEL__

/* Reflected CRC-32 (polynomial 0xedb88320), one entry per byte value. */
static const uint32_t crc32_tab[256] = {
	0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau,
	0x076dc419u, 0x706af48fu, 0xe963a535u, 0x9e6495a3u,
	0x0edb8832u, 0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u,
	0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u,
	0x1db71064u, 0x6ab020f2u, 0xf3b97148u, 0x84be41deu,
	0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u,
	0x136c9856u, 0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu,
	0x14015c4fu, 0x63066cd9u, 0xfa0f3d63u, 0x8d080df5u,
	0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u,
	0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu,
	0x35b5a8fau, 0x42b2986cu, 0xdbbbc9d6u, 0xacbcf940u,
	0x32d86ce3u, 0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u,
	0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u,
	0x21b4f4b5u, 0x56b3c423u, 0xcfba9599u, 0xb8bda50fu,
	0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
	0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du,
	0x76dc4190u, 0x01db7106u, 0x98d220bcu, 0xefd5102au,
	0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u,
	0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u,
	0x7f6a0dbbu, 0x086d3d2du, 0x91646c97u, 0xe6635c01u,
	0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu,
	0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u,
	0x65b0d9c6u, 0x12b7e950u, 0x8bbeb8eau, 0xfcb9887cu,
	0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u,
	0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u,
	0x4adfa541u, 0x3dd895d7u, 0xa4d1c46du, 0xd3d6f4fbu,
	0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u,
	0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u,
	0x5005713cu, 0x270241aau, 0xbe0b1010u, 0xc90c2086u,
	0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
	0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u,
	0x59b33d17u, 0x2eb40d81u, 0xb7bd5c3bu, 0xc0ba6cadu,
	0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au,
	0xead54739u, 0x9dd277afu, 0x04db2615u, 0x73dc1683u,
	0xe3630b12u, 0x94643b84u, 0x0d6d6a3eu, 0x7a6a5aa8u,
	0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u,
	0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu,
	0xf762575du, 0x806567cbu, 0x196c3671u, 0x6e6b06e7u,
	0xfed41b76u, 0x89d32be0u, 0x10da7a5au, 0x67dd4accu,
	0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u,
	0xd6d6a3e8u, 0xa1d1937eu, 0x38d8c2c4u, 0x4fdff252u,
	0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu,
	0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u, 0x41047a60u,
	0xdf60efc3u, 0xa867df55u, 0x316e8eefu, 0x4669be79u,
	0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
	0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu,
	0xc5ba3bbeu, 0xb2bd0b28u, 0x2bb45a92u, 0x5cb36a04u,
	0xc2d7ffa7u, 0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du,
	0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au,
	0x9c0906a9u, 0xeb0e363fu, 0x72076785u, 0x05005713u,
	0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u,
	0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u,
	0x86d3d2d4u, 0xf1d4e242u, 0x68ddb3f8u, 0x1fda836eu,
	0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u,
	0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu,
	0x8f659effu, 0xf862ae69u, 0x616bffd3u, 0x166ccf45u,
	0xa00ae278u, 0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u,
	0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu,
	0xaed16a4au, 0xd9d65adcu, 0x40df0b66u, 0x37d83bf0u,
	0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
	0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u,
	0xbad03605u, 0xcdd70693u, 0x54de5729u, 0x23d967bfu,
	0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u,
	0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du,
};

uint32_t sroce_crc32_le(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = (const uint8_t *)buf;

	while (len--)
		crc = crc32_tab[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#endif

/*
 * CRC-32 without a table for all but its last few bytes.
 *
 * The register after a buffer is (c(x) x^(8 len) + m(x) x^32) mod P(x), P the
 * CRC-32 polynomial, c the register before, m the buffer (the first bit of
 * the stream the highest power; reflected order puts it in bit 0 of byte 0).
 * Reducing m modulo any multiple Q of P first does not change that. One
 * multiple with seven terms is
 *
 *   Q(x) = x^161 + x^93 + x^77 + x^69 + x^68 + x^37 + 1
 *
 * (found by a meet-in-the-middle search over the remainders x^i mod P; the
 * unit test checks it). Modulo Q, a bit of power d >= 161 is worth the six
 * bits of power d - 161 + {93, 77, 69, 68, 37, 0}: further down the stream by
 * 68, 84, 92, 93, 124 and 161 bit positions. So each 64-bit word of the
 * stream, taken in order, is cleared by XORing six shifted copies of it into
 * the next three words, until the last 161 to 224 bits remain; those, with
 * what was XORed into them, go through the table-driven CRC.
 *
 * Shifts and XORs in registers instead of eight table loads per eight bytes:
 * under an emulating CPU (QEMU's TCG), where every load is a checked memory
 * access, this takes about a quarter of the table's time; on a real CPU
 * somewhat less than the table's, and far more than carry-less
 * multiplication (kernel/icrc.c measures which to use).
 */
#define SROCE_CRC32_Q_DEGREE	161

#ifdef __KERNEL__
#define sroce_crc32_rest(crc, buf, len)	crc32_le(crc, buf, len)
#else
#define sroce_crc32_rest(crc, buf, len)	sroce_crc32_le(crc, buf, len)
#endif

uint32_t sroce_crc32_sparse(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = (const uint8_t *)buf;
	uint64_t a1 = 0, a2 = 0, a3 = 0, v;
	uint8_t rest[32];
	size_t words, i, n;

	if (len < SROCE_CRC32_SPARSE_MIN)
		return sroce_crc32_rest(crc, buf, len);
	/* Words whose every bit has power >= 161: all but 21 to 28 bytes. */
	words = (8 * len - SROCE_CRC32_Q_DEGREE) / 64;
	/* The register is the same as XORing it into the first four bytes. */
	v = sroce_get_le64(p) ^ crc;
	for (i = 0;;) {
		v ^= a1;
		a1 = a2 ^ (v << 4) ^ (v << 20) ^ (v << 28) ^ (v << 29) ^
		     (v << 60);
		a2 = a3 ^ (v >> 60) ^ (v >> 44) ^ (v >> 36) ^ (v >> 35) ^
		     (v >> 4) ^ (v << 33);
		a3 = v >> 31;
		if (++i == words)
			break;
		v = sroce_get_le64(p + 8 * i);
	}
	/*
	 * The rest, with the three words XORed into its start. Nothing was
	 * moved past the buffer's last bit (a word is cleared only while 161
	 * bits follow it), so the part of a3 beyond it is zero.
	 */
	p += 8 * words;
	n = len - 8 * words;
	for (i = 0; i < sizeof(rest); i++)
		rest[i] = i < n ? p[i] : 0;
	for (i = 0; i < 8; i++) {
		rest[i] ^= (uint8_t)(a1 >> (8 * i));
		rest[8 + i] ^= (uint8_t)(a2 >> (8 * i));
		rest[16 + i] ^= (uint8_t)(a3 >> (8 * i));
	}
	return sroce_crc32_rest(0, rest, n);
}

/* ----------------------------------------------------------------- ICRC */

uint32_t sroce_icrc_begin(const uint8_t *ip, unsigned int ip_version)
{
	/* masked copy of IP + UDP + BTH: at most 40 + 8 + 12 bytes */
	uint8_t h[SROCE_IPV6_HLEN + SROCE_UDP_HLEN + SROCE_BTH_LEN];
	unsigned int iplen = ip_version == 4 ? SROCE_IPV4_HLEN : SROCE_IPV6_HLEN;
	unsigned int n = iplen + SROCE_UDP_HLEN + SROCE_BTH_LEN;
	unsigned int i;

	for (i = 0; i < n; i++)
		h[i] = ip[i];
	if (ip_version == 4) {
		h[1] = 0xff;			/* TOS (DSCP + ECN) */
		h[8] = 0xff;			/* TTL */
		h[10] = 0xff;			/* header checksum */
		h[11] = 0xff;
	} else {
		h[0] |= 0x0f;			/* traffic class, high nibble */
		h[1] = 0xff;			/* traffic class low nibble + flow label */
		h[2] = 0xff;
		h[3] = 0xff;
		h[7] = 0xff;			/* hop limit */
	}
	h[iplen + 6] = 0xff;			/* UDP checksum */
	h[iplen + 7] = 0xff;
	h[iplen + SROCE_UDP_HLEN + 4] = 0xff;	/* BTH resv8a */

	return sroce_crc32_le(SROCE_ICRC_SEED, h, n);
}

uint32_t sroce_icrc_compute(const uint8_t *ip, unsigned int ip_version, size_t len)
{
	size_t fixed = (ip_version == 4 ? SROCE_IPV4_HLEN : SROCE_IPV6_HLEN) +
		       SROCE_UDP_HLEN + SROCE_BTH_LEN;
	uint32_t crc = sroce_icrc_begin(ip, ip_version);

	if (len > fixed)
		crc = sroce_icrc_update(crc, ip + fixed, len - fixed);
	return sroce_icrc_final(crc);
}

/* ------------------------------------------------------------ validator */

static const char *const wire_err_names[SROCE_WIRE_E_NR] = {
	[SROCE_WIRE_OK]			  = "ok",
	[SROCE_WIRE_E_TRUNC_IP]		  = "trunc_ip",
	[SROCE_WIRE_E_IP_VERSION]	  = "ip_version",
	[SROCE_WIRE_E_IP_HDR_LEN]	  = "ip_hdr_len",
	[SROCE_WIRE_E_IP_OPTIONS]	  = "ip_options",
	[SROCE_WIRE_E_IP_LEN]		  = "ip_len",
	[SROCE_WIRE_E_IP_FRAG]		  = "ip_frag",
	[SROCE_WIRE_E_IP_PROTO]		  = "ip_proto",
	[SROCE_WIRE_E_TRUNC_UDP]	  = "trunc_udp",
	[SROCE_WIRE_E_UDP_LEN]		  = "udp_len",
	[SROCE_WIRE_E_UDP_PORT]		  = "udp_port",
	[SROCE_WIRE_E_TRUNC_BTH]	  = "trunc_bth",
	[SROCE_WIRE_E_TVER]		  = "tver",
	[SROCE_WIRE_E_OPCODE_UNKNOWN]	  = "opcode_unknown",
	[SROCE_WIRE_E_OPCODE_UNSUPPORTED] = "opcode_unsupported",
	[SROCE_WIRE_E_TRUNC_HDRS]	  = "trunc_hdrs",
	[SROCE_WIRE_E_PAYLOAD]		  = "payload",
	[SROCE_WIRE_E_PAD]		  = "pad",
	[SROCE_WIRE_E_ALIGN]		  = "align",
	[SROCE_WIRE_E_ICRC]		  = "icrc",
};

const char *sroce_wire_err_name(enum sroce_wire_err err)
{
	if ((unsigned int)err >= SROCE_WIRE_E_NR)
		return "invalid";
	return wire_err_names[err];
}

static void pkt_clear(struct sroce_pkt *pkt)
{
	unsigned int i;

	pkt->info = sroce_opcode_lookup(0);
	pkt->ip_version = 0;
	pkt->opcode = 0;
	pkt->pad = 0;
	pkt->src_port = 0;
	pkt->udp_off = 0;
	pkt->bth_off = 0;
	for (i = 0; i < SROCE_HDR_NR; i++)
		pkt->hdr_off[i] = 0;
	pkt->payload_off = 0;
	pkt->payload_len = 0;
	pkt->icrc_off = 0;
	pkt->end = 0;
	pkt->icrc = 0;
}

/* Transport part: BTH at buf + bth_off, packet (incl. ICRC) ends at end. */
static enum sroce_wire_err parse_transport(const uint8_t *buf, uint32_t bth_off,
					   uint32_t end, unsigned int flags,
					   struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *oi;
	const uint8_t *bth;
	uint32_t avail, padded;
	uint8_t pad;
	unsigned int i;

	if (end < bth_off || end - bth_off < SROCE_BTH_LEN + SROCE_ICRC_LEN)
		return SROCE_WIRE_E_TRUNC_BTH;
	avail = end - bth_off;
	bth = buf + bth_off;

	if (sroce_bth_tver(bth) != SROCE_BTH_TVER)
		return SROCE_WIRE_E_TVER;
	oi = sroce_opcode_lookup(sroce_bth_opcode(bth));
	if (!(oi->flags & SROCE_OPF_KNOWN))
		return SROCE_WIRE_E_OPCODE_UNKNOWN;
	if (!(oi->flags & SROCE_OPF_SUPPORTED))
		return SROCE_WIRE_E_OPCODE_UNSUPPORTED;
	if (avail < (uint32_t)oi->hdr_len + SROCE_ICRC_LEN)
		return SROCE_WIRE_E_TRUNC_HDRS;

	padded = avail - oi->hdr_len - SROCE_ICRC_LEN;
	pad = sroce_bth_pad(bth);
	if (!(oi->flags & SROCE_OPF_PAYLOAD)) {
		if (padded)
			return SROCE_WIRE_E_PAYLOAD;
		if (pad)
			return SROCE_WIRE_E_PAD;
	} else {
		if (padded & 3)
			return SROCE_WIRE_E_ALIGN;
		if (pad > padded)
			return SROCE_WIRE_E_PAD;
		/* only the last packet of a message may be padded */
		if (pad && !(oi->flags & SROCE_OPF_END))
			return SROCE_WIRE_E_PAD;
	}

	pkt->info = oi;
	pkt->opcode = sroce_bth_opcode(bth);
	pkt->pad = pad;
	pkt->bth_off = bth_off;
	for (i = 0; i < SROCE_HDR_NR; i++)
		if (oi->hdrs & SROCE_HDRF(i))
			pkt->hdr_off[i] = bth_off + oi->hdr_off[i];
	pkt->payload_off = bth_off + oi->hdr_len;
	pkt->payload_len = padded - pad;
	pkt->icrc_off = end - SROCE_ICRC_LEN;
	pkt->end = end;
	pkt->icrc = (flags & SROCE_PARSE_HDRS_ONLY) ? 0 :
		    sroce_icrc_get(buf + pkt->icrc_off);
	return SROCE_WIRE_OK;
}

enum sroce_wire_err sroce_parse_bth(const uint8_t *buf, size_t len, unsigned int flags,
				    struct sroce_pkt *pkt)
{
	pkt_clear(pkt);
	if (len > 0xffffffffu)
		return SROCE_WIRE_E_IP_LEN;
	return parse_transport(buf, 0, (uint32_t)len, flags, pkt);
}

/*
 * The IP header (hlen bytes) claims more than the len bytes there are. If
 * the UDP layer delivered buf (SROCE_PARSE_UDP_TRIMMED) and the UDP length
 * says the datagram ends exactly at len, it trimmed a datagram whose UDP
 * length was shorter than its IP payload: a UDP length error, not a
 * truncated packet.
 */
static enum sroce_wire_err ip_len_err(const uint8_t *buf, size_t len, uint32_t hlen,
				      unsigned int flags)
{
	if ((flags & SROCE_PARSE_UDP_TRIMMED) && len >= hlen + SROCE_UDP_HLEN &&
	    sroce_get_be16(buf + hlen + 4) == len - hlen)
		return SROCE_WIRE_E_UDP_LEN;
	return SROCE_WIRE_E_IP_LEN;
}

enum sroce_wire_err sroce_parse_ip(const uint8_t *buf, size_t len, unsigned int flags,
				   struct sroce_pkt *pkt)
{
	enum sroce_wire_err err;
	const uint8_t *udp;
	uint32_t ip_end, udp_off, udp_len;
	unsigned int version;

	pkt_clear(pkt);
	if (len < 1)
		return SROCE_WIRE_E_TRUNC_IP;
	version = buf[0] >> 4;
	if (version == 4) {
		if (len < SROCE_IPV4_HLEN)
			return SROCE_WIRE_E_TRUNC_IP;
		if ((buf[0] & 0x0f) < 5)
			return SROCE_WIRE_E_IP_HDR_LEN;
		if ((buf[0] & 0x0f) > 5)
			return SROCE_WIRE_E_IP_OPTIONS;
		ip_end = sroce_get_be16(buf + 2);
		if (ip_end < SROCE_IPV4_HLEN)
			return SROCE_WIRE_E_IP_LEN;
		if (ip_end > len)
			return ip_len_err(buf, len, SROCE_IPV4_HLEN, flags);
		if (sroce_get_be16(buf + 6) & 0x3fff)	/* MF or fragment offset */
			return SROCE_WIRE_E_IP_FRAG;
		if (buf[9] != 17)
			return SROCE_WIRE_E_IP_PROTO;
		udp_off = SROCE_IPV4_HLEN;
	} else if (version == 6) {
		if (len < SROCE_IPV6_HLEN)
			return SROCE_WIRE_E_TRUNC_IP;
		ip_end = SROCE_IPV6_HLEN + (uint32_t)sroce_get_be16(buf + 4);
		if (ip_end > len)
			return ip_len_err(buf, len, SROCE_IPV6_HLEN, flags);
		if (buf[6] != 17)
			return SROCE_WIRE_E_IP_PROTO;
		udp_off = SROCE_IPV6_HLEN;
	} else {
		return SROCE_WIRE_E_IP_VERSION;
	}

	if (ip_end - udp_off < SROCE_UDP_HLEN)
		return SROCE_WIRE_E_TRUNC_UDP;
	udp = buf + udp_off;
	udp_len = sroce_get_be16(udp + 4);
	if (udp_len != ip_end - udp_off)
		return SROCE_WIRE_E_UDP_LEN;
	if (sroce_get_be16(udp + 2) != SROCE_UDP_PORT)
		return SROCE_WIRE_E_UDP_PORT;

	err = parse_transport(buf, udp_off + SROCE_UDP_HLEN, ip_end, flags, pkt);
	if (err != SROCE_WIRE_OK)
		return err;
	pkt->ip_version = (uint8_t)version;
	pkt->udp_off = udp_off;
	pkt->src_port = sroce_get_be16(udp);

	if (!(flags & (SROCE_PARSE_NO_ICRC | SROCE_PARSE_HDRS_ONLY)) &&
	    sroce_icrc_compute(buf, version, pkt->icrc_off) != pkt->icrc)
		return SROCE_WIRE_E_ICRC;
	return SROCE_WIRE_OK;
}
