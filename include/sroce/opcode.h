/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The IBTA base transport opcodes (vol. 1 ch. 9.2, table 38) as used by
 * RoCE v2, plus the RoCE v2 CNP (annex A17). The top three bits of an opcode
 * select the transport class, the low five bits the operation.
 *
 * sroce_opcode_lookup(op) never returns NULL: reserved opcodes have a NULL name
 * and no SROCE_OPF_KNOWN flag; known opcodes that sroce does not speak (RD,
 * FLUSH) have SROCE_OPF_KNOWN but not SROCE_OPF_SUPPORTED.
 */
#ifndef SROCE_OPCODE_H
#define SROCE_OPCODE_H

#include "types.h"
#include "hdr.h"

SROCE_EXTERN_C_BEGIN

enum sroce_opcode {
	/* Reliable Connection (0x00-0x1f) */
	SROCE_OP_RC_SEND_FIRST			= 0x00,
	SROCE_OP_RC_SEND_MIDDLE			= 0x01,
	SROCE_OP_RC_SEND_LAST			= 0x02,
	SROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE	= 0x03,
	SROCE_OP_RC_SEND_ONLY			= 0x04,
	SROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE	= 0x05,
	SROCE_OP_RC_RDMA_WRITE_FIRST		= 0x06,
	SROCE_OP_RC_RDMA_WRITE_MIDDLE		= 0x07,
	SROCE_OP_RC_RDMA_WRITE_LAST		= 0x08,
	SROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
	SROCE_OP_RC_RDMA_WRITE_ONLY		= 0x0a,
	SROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
	SROCE_OP_RC_RDMA_READ_REQUEST		= 0x0c,
	SROCE_OP_RC_RDMA_READ_RESPONSE_FIRST	= 0x0d,
	SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE	= 0x0e,
	SROCE_OP_RC_RDMA_READ_RESPONSE_LAST	= 0x0f,
	SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY	= 0x10,
	SROCE_OP_RC_ACKNOWLEDGE			= 0x11,
	SROCE_OP_RC_ATOMIC_ACKNOWLEDGE		= 0x12,
	SROCE_OP_RC_COMPARE_SWAP		= 0x13,
	SROCE_OP_RC_FETCH_ADD			= 0x14,
	/* 0x15 reserved (was RESYNC, RD only) */
	SROCE_OP_RC_SEND_LAST_WITH_INVALIDATE	= 0x16,
	SROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE	= 0x17,
	SROCE_OP_RC_FLUSH			= 0x1c,	/* IBTA 1.5, unsupported */
	SROCE_OP_RC_ATOMIC_WRITE		= 0x1d,	/* IBTA 1.5 */

	/* Unreliable Connection (0x20-0x3f) */
	SROCE_OP_UC_SEND_FIRST			= 0x20,
	SROCE_OP_UC_SEND_MIDDLE			= 0x21,
	SROCE_OP_UC_SEND_LAST			= 0x22,
	SROCE_OP_UC_SEND_LAST_WITH_IMMEDIATE	= 0x23,
	SROCE_OP_UC_SEND_ONLY			= 0x24,
	SROCE_OP_UC_SEND_ONLY_WITH_IMMEDIATE	= 0x25,
	SROCE_OP_UC_RDMA_WRITE_FIRST		= 0x26,
	SROCE_OP_UC_RDMA_WRITE_MIDDLE		= 0x27,
	SROCE_OP_UC_RDMA_WRITE_LAST		= 0x28,
	SROCE_OP_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x29,
	SROCE_OP_UC_RDMA_WRITE_ONLY		= 0x2a,
	SROCE_OP_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x2b,

	/* Reliable Datagram (0x40-0x5f): known, unsupported (as everywhere in RoCE) */

	/* Unreliable Datagram (0x60-0x7f) */
	SROCE_OP_UD_SEND_ONLY			= 0x64,
	SROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE	= 0x65,

	/* RoCE v2 Congestion Notification Packet */
	SROCE_OP_CNP				= 0x81,

	/* Extended Reliable Connection (0xa0-0xbf): the RC set + 0xa0 */
};

enum sroce_transport {
	SROCE_TRANSPORT_RC	= 0,
	SROCE_TRANSPORT_UC	= 1,
	SROCE_TRANSPORT_RD	= 2,
	SROCE_TRANSPORT_UD	= 3,
	SROCE_TRANSPORT_CNP	= 4,
	SROCE_TRANSPORT_XRC	= 5,
	SROCE_TRANSPORT_VENDOR	= 6,	/* 0xc0-0xff manufacturer specific */
};

static inline enum sroce_transport sroce_opcode_transport(uint8_t op)
{
	unsigned int c = op >> 5;
	return c >= 6 ? SROCE_TRANSPORT_VENDOR : (enum sroce_transport)c;
}

/* Headers, in the order they follow each other in a packet. */
enum sroce_hdr {
	SROCE_HDR_BTH = 0,
	SROCE_HDR_RDETH,
	SROCE_HDR_DETH,
	SROCE_HDR_XRCETH,
	SROCE_HDR_FETH,
	SROCE_HDR_RETH,
	SROCE_HDR_ATOMICETH,
	SROCE_HDR_AETH,
	SROCE_HDR_ATOMICACKETH,
	SROCE_HDR_IMMDT,
	SROCE_HDR_IETH,
	SROCE_HDR_CNP_RSVD,
	SROCE_HDR_NR
};

#define SROCE_HDRF(h)		(1u << (h))

enum sroce_op_kind {
	SROCE_KIND_NONE = 0,	/* reserved opcode */
	SROCE_KIND_SEND,
	SROCE_KIND_WRITE,
	SROCE_KIND_READ_REQ,
	SROCE_KIND_READ_RESP,
	SROCE_KIND_ACK,
	SROCE_KIND_ATOMIC,	/* CmpSwap, FetchAdd */
	SROCE_KIND_ATOMIC_ACK,
	SROCE_KIND_FLUSH,
	SROCE_KIND_ATOMIC_WRITE,
	SROCE_KIND_RESYNC,
	SROCE_KIND_CNP,
};

/* Where a packet sits in its message. Single-packet operations are ONLY. */
enum sroce_pos {
	SROCE_POS_NONE = 0,	/* reserved opcode */
	SROCE_POS_FIRST,
	SROCE_POS_MIDDLE,
	SROCE_POS_LAST,
	SROCE_POS_ONLY,
};

#define SROCE_OPF_KNOWN		0x0001	/* defined by IBTA / RoCE v2 */
#define SROCE_OPF_SUPPORTED	0x0002	/* sroce sends and accepts it */
#define SROCE_OPF_REQUEST	0x0004	/* requester -> responder */
#define SROCE_OPF_RESPONSE	0x0008	/* responder -> requester (ACK, READ resp, atomic ACK) */
#define SROCE_OPF_PAYLOAD	0x0010	/* may carry payload after the headers */
#define SROCE_OPF_IMM		0x0020	/* carries ImmDt */
#define SROCE_OPF_INV		0x0040	/* carries IETH */
#define SROCE_OPF_ACKED		0x0080	/* responder must answer (ACK/NAK, READ resp, atomic ACK) */
#define SROCE_OPF_START		0x0100	/* FIRST or ONLY: starts a message */
#define SROCE_OPF_END		0x0200	/* LAST or ONLY: completes a message */
#define SROCE_OPF_COMP		0x0400	/* consumes a receive WQE at the responder (SEND, WRITE w/ imm) */
#define SROCE_OPF_FETCH_ADD	0x0800	/* the FetchAdd one of the two atomics */

/* The flags that tell opcodes of the same transport, kind and position apart. */
#define SROCE_OPF_VARIANT	(SROCE_OPF_IMM | SROCE_OPF_INV | SROCE_OPF_FETCH_ADD)

struct sroce_opcode_info {
	const char *name;	/* IBTA name ("RC_SEND_FIRST"), NULL if reserved */
	uint16_t hdrs;		/* SROCE_HDRF(SROCE_HDR_*) of every header incl. BTH */
	uint16_t flags;		/* SROCE_OPF_* */
	uint8_t hdr_len;	/* bytes of BTH + extension headers = payload offset */
	uint8_t transport;	/* enum sroce_transport */
	uint8_t kind;		/* enum sroce_op_kind */
	uint8_t pos;		/* enum sroce_pos */
	/* offset of each header in hdrs from the start of the BTH, 0 if absent */
	uint8_t hdr_off[SROCE_HDR_NR];
};

/* Lengths of each enum sroce_hdr in bytes. */
extern const uint8_t sroce_hdr_len[SROCE_HDR_NR];
extern const char *const sroce_hdr_name[SROCE_HDR_NR];
extern const struct sroce_opcode_info sroce_opcode_table[256];

static inline const struct sroce_opcode_info *sroce_opcode_lookup(uint8_t op)
{
	return &sroce_opcode_table[op];
}

static inline bool sroce_opcode_has(const struct sroce_opcode_info *oi, enum sroce_hdr h)
{
	return (oi->hdrs & SROCE_HDRF(h)) != 0;
}

/*
 * Offset of header h from the start of the BTH, or -1 if the opcode does not
 * carry it. Where the opcode is known to carry h, oi->hdr_off[h] is the same.
 */
static inline int sroce_opcode_hdr_off(const struct sroce_opcode_info *oi, enum sroce_hdr h)
{
	if (!sroce_opcode_has(oi, h))
		return -1;
	return oi->hdr_off[h];
}

/* Where the payload starts, from the start of the BTH. */
static inline unsigned int sroce_opcode_payload_off(const struct sroce_opcode_info *oi)
{
	return oi->hdr_len;
}

/*
 * The opcode of the packet at position pos of a message of the given
 * transport, kind and variant: the inverse of the table. variant is 0 or
 * SROCE_OPF_VARIANT flags (SROCE_OPF_IMM: with immediate, SROCE_OPF_INV:
 * with invalidate, SROCE_OPF_FETCH_ADD: FetchAdd rather than CmpSwap) and
 * describes the message: the FIRST and MIDDLE packets of a SEND with
 * immediate are plain SEND_FIRST / SEND_MIDDLE. Returns the opcode (0..255)
 * or -1 if IBTA defines no such packet (or no such message: an RDMA WRITE
 * with invalidate, a UC SEND with invalidate, a FIRST of a READ request).
 * Known but unsupported opcodes (RD, FLUSH) are found too: check
 * SROCE_OPF_SUPPORTED where it matters. Constant time.
 */
int sroce_opcode_find(enum sroce_transport transport, enum sroce_op_kind kind,
		      enum sroce_pos pos, unsigned int variant);

/* Position of a packet that is (or is not) the first and the last of its message. */
static inline enum sroce_pos sroce_pos_from(bool first, bool last)
{
	if (first)
		return last ? SROCE_POS_ONLY : SROCE_POS_FIRST;
	return last ? SROCE_POS_LAST : SROCE_POS_MIDDLE;
}

/* Position of packet k (0-based) of a message of n packets (n >= 1). */
static inline enum sroce_pos sroce_msg_pos(uint32_t k, uint32_t n)
{
	if (n <= 1)
		return SROCE_POS_ONLY;
	if (k == 0)
		return SROCE_POS_FIRST;
	return k + 1 >= n ? SROCE_POS_LAST : SROCE_POS_MIDDLE;
}

/*
 * Packets a message of len bytes takes at a path MTU of mtu bytes: at least
 * one (a zero-length message is one packet). mtu 0 counts as one packet.
 */
static inline uint32_t sroce_msg_npkts(uint32_t len, uint32_t mtu)
{
	uint32_t n;

	if (!mtu)
		return 1;
	n = len / mtu + (len % mtu != 0);
	return n ? n : 1;
}

SROCE_EXTERN_C_END

#endif /* SROCE_OPCODE_H */
