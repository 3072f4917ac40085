/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Transport decisions as pure functions: what a responder does with a
 * request's PSN and opcode, what an AETH tells a requester. They read their
 * arguments only and change nothing; the caller owns the state and applies
 * the verdict. Each verdict's comment says what the caller does with it.
 *
 * The rules are sroce's responder as it stands (IBTA vol. 1 9.7.5.1 for RC
 * requests, 9.9 and C9-x for UC resynchronisation):
 *
 *   RC  the expected PSN (epsn) executes; an earlier PSN is a duplicate; a
 *       later one is a gap, NAKed once (PSN sequence error at epsn) and then
 *       dropped silently until epsn arrives.
 *   UC  no NAKs. A gap loses the message in progress; packets are skipped
 *       (epsn follows them) up to the next packet that starts a message.
 *   Opcodes: outside a message only a FIRST or ONLY may come; inside one,
 *       only a MIDDLE or LAST of the same kind.
 */
#ifndef SROCE_DECIDE_H
#define SROCE_DECIDE_H

#include "types.h"
#include "hdr.h"
#include "opcode.h"
#include "psn.h"
#include "ack.h"

SROCE_EXTERN_C_BEGIN

/* ------------------------------------------------- responder: PSN check */

/* The responder's sequence state for one QP. */
struct sroce_resp_psn_state {
	uint32_t epsn;		/* next PSN expected */
	bool nak_sent;		/* RC: a NAK (sequence or RNR) is out for epsn */
	bool uc_drop;		/* UC: skipping to the start of the next message */
};

enum sroce_psn_class {
	/* epsn (UC: and not skipping, or starting a message): execute it.
	 * RC: nak_sent = false. UC: uc_drop = false. */
	SROCE_PSN_NEW = 0,
	/* RC, before epsn: a duplicate; re-ACK, re-READ or replay the atomic. */
	SROCE_PSN_DUP,
	/* RC, after epsn, first of the gap: NAK PSN sequence error with PSN
	 * epsn, nak_sent = true; the packet is dropped. */
	SROCE_PSN_SEQ_NAK,
	/* RC, after epsn, the NAK is out already: drop silently. */
	SROCE_PSN_SEQ_DROP,
	/* UC, not epsn, the packet starts a message: the message in progress
	 * (if any) is lost; execute this one (uc_drop = false). */
	SROCE_PSN_UC_RESYNC,
	/* UC, not epsn, inside a message: the message in progress is lost;
	 * skip: uc_drop = true, epsn = psn + 1. */
	SROCE_PSN_UC_LOST,
	/* UC, epsn while skipping, not a start: skip: epsn = psn + 1. */
	SROCE_PSN_UC_SKIP,
};

/*
 * Classify the PSN of request @oi at the responder. RC (and XRC, its
 * extension) and UC have PSN rules; UD is always SROCE_PSN_NEW.
 */
static inline enum sroce_psn_class
sroce_resp_psn_classify(enum sroce_transport transport,
			const struct sroce_resp_psn_state *s, uint32_t psn,
			const struct sroce_opcode_info *oi)
{
	int32_t d = sroce_psn_diff(psn, s->epsn);
	bool start = oi->flags & SROCE_OPF_START;

	switch (transport) {
	case SROCE_TRANSPORT_RC:
	case SROCE_TRANSPORT_XRC:
		if (d > 0)
			return s->nak_sent ? SROCE_PSN_SEQ_DROP : SROCE_PSN_SEQ_NAK;
		return d < 0 ? SROCE_PSN_DUP : SROCE_PSN_NEW;
	case SROCE_TRANSPORT_UC:
		if (d != 0)
			return start ? SROCE_PSN_UC_RESYNC : SROCE_PSN_UC_LOST;
		if (s->uc_drop && !start)
			return SROCE_PSN_UC_SKIP;
		return SROCE_PSN_NEW;
	default:
		return SROCE_PSN_NEW;
	}
}

/* Does the packet get executed (NEW or UC_RESYNC)? */
static inline bool sroce_psn_class_exec(enum sroce_psn_class c)
{
	return c == SROCE_PSN_NEW || c == SROCE_PSN_UC_RESYNC;
}

/* --------------------------------------------- responder: opcode order */

/*
 * May @oi come next on a connection where a message of kind @msg_kind is in
 * progress (@in_msg: the last packet executed was a FIRST or MIDDLE) or
 * none is (@in_msg false, @msg_kind ignored)?
 */
static inline bool sroce_opcode_seq_ok(bool in_msg, unsigned int msg_kind,
				       const struct sroce_opcode_info *oi)
{
	if (!in_msg)
		return oi->flags & SROCE_OPF_START;
	return !(oi->flags & SROCE_OPF_START) && oi->kind == msg_kind;
}

/*
 * May opcode @next follow opcode @prev on the same connection? Both must
 * be known requests of the same transport; after a LAST or ONLY a message
 * must start, after a FIRST or MIDDLE the same kind must go on.
 */
static inline bool sroce_opcode_may_follow(uint8_t prev, uint8_t next)
{
	const struct sroce_opcode_info *a = sroce_opcode_lookup(prev);
	const struct sroce_opcode_info *b = sroce_opcode_lookup(next);

	if (!(a->flags & b->flags & SROCE_OPF_REQUEST) || a->transport != b->transport)
		return false;
	return sroce_opcode_seq_ok(!(a->flags & SROCE_OPF_END), a->kind, b);
}

enum sroce_seq_verdict {
	SROCE_SEQ_OK = 0,	/* execute */
	/* RC: out of order: NAK invalid request, the QP goes to ERR (the
	 * receive WQE in use completes with a remote invalid request error). */
	SROCE_SEQ_RC_INVALID,
	/* UC: not a start where one was due, or the wrong kind: drop the
	 * message (uc_drop = !END, epsn = psn + 1). */
	SROCE_SEQ_UC_DROP,
	/* UC: a new message while one was in progress: the old one is lost,
	 * execute the new one. */
	SROCE_SEQ_UC_RESTART,
};

/* The responder's opcode sequence check, with what RC and UC do about it. */
static inline enum sroce_seq_verdict
sroce_resp_seq_check(enum sroce_transport transport, bool in_msg,
		     unsigned int msg_kind, const struct sroce_opcode_info *oi)
{
	if (sroce_opcode_seq_ok(in_msg, msg_kind, oi))
		return SROCE_SEQ_OK;
	if (transport == SROCE_TRANSPORT_RC || transport == SROCE_TRANSPORT_XRC)
		return SROCE_SEQ_RC_INVALID;
	return (oi->flags & SROCE_OPF_START) ? SROCE_SEQ_UC_RESTART : SROCE_SEQ_UC_DROP;
}

/*
 * IBTA 9.7.x: every SEND or WRITE packet but the last of its message
 * carries exactly one path MTU of payload, the last at most that much.
 * Other kinds are not checked here.
 */
static inline bool sroce_payload_mtu_ok(const struct sroce_opcode_info *oi,
					uint32_t mtu, uint32_t len)
{
	if (oi->kind != SROCE_KIND_SEND && oi->kind != SROCE_KIND_WRITE)
		return true;
	if (oi->flags & SROCE_OPF_END)
		return len <= mtu;
	return len == mtu;
}

/* ------------------------------------------------------ requester: AETH */

enum sroce_ack_kind {
	SROCE_ACK_ACK = 0,		/* positive acknowledgement up to the PSN */
	SROCE_ACK_RNR,			/* RNR NAK: resend the PSN after rnr_us */
	SROCE_ACK_NAK_SEQ,		/* NAK PSN sequence error: resend from the PSN */
	SROCE_ACK_NAK_INV_REQ,		/* NAK invalid request */
	SROCE_ACK_NAK_REM_ACCESS,	/* NAK remote access error */
	SROCE_ACK_NAK_REM_OP,		/* NAK remote operational error */
	SROCE_ACK_NAK_INV_RD_REQ,	/* NAK invalid RD request */
	SROCE_ACK_NAK_RESERVED,		/* NAK with a reserved code (5..31) */
	SROCE_ACK_RESERVED,		/* syndrome type 10b (reserved) */
};

/* An AETH, interpreted. */
struct sroce_ack {
	uint8_t kind;		/* enum sroce_ack_kind */
	uint8_t value;		/* the syndrome's low five bits, whatever the kind */
	uint8_t credit_code;	/* ACK: credit code 0..31 (31: no credit information) */
	uint32_t credits;	/* ACK: receive credits (IBTA table 44), 0 if code 31 */
	uint32_t rnr_us;	/* RNR NAK: minimum delay before resending */
	uint32_t msn;		/* the MSN field, 24 bits */
};

/*
 * Receive credits a credit code stands for (IBTA 9.7.5.1, table 44): 0, 1,
 * then 2, 3, 4, 6, 8, 12, ... up to 32768 for code 30; code 31 (no credit
 * information) gives 0.
 */
static inline uint32_t sroce_aeth_credits(unsigned int code)
{
	code &= SROCE_AETH_VALUE_MASK;
	if (code == SROCE_AETH_CREDITS_INVALID)
		return 0;
	if (code < 2)
		return code;
	return (code & 1) ? 3u << ((code - 3) / 2) : 1u << (code / 2);
}

/*
 * Interpret an AETH syndrome and MSN. The reserved bit 7 is ignored, as
 * reserved fields are on receive.
 */
static inline void sroce_ack_decode(uint8_t syn, uint32_t msn, struct sroce_ack *a)
{
	unsigned int v = sroce_aeth_syn_value(syn);

	a->value = (uint8_t)v;
	a->credit_code = 0;
	a->credits = 0;
	a->rnr_us = 0;
	a->msn = msn & SROCE_MSN_MASK;
	switch (sroce_aeth_syn_type(syn)) {
	case SROCE_AETH_ACK:
		a->kind = SROCE_ACK_ACK;
		a->credit_code = (uint8_t)v;
		a->credits = sroce_aeth_credits(v);
		break;
	case SROCE_AETH_RNR_NAK:
		a->kind = SROCE_ACK_RNR;
		a->rnr_us = sroce_rnr_timer_us(v);
		break;
	case SROCE_AETH_NAK:
		/* NAK codes 0..4 map in order onto SROCE_ACK_NAK_SEQ.. */
		if (v <= SROCE_NAK_INVALID_RD_REQUEST)
			a->kind = (uint8_t)(SROCE_ACK_NAK_SEQ + v);
		else
			a->kind = SROCE_ACK_NAK_RESERVED;
		break;
	default:
		a->kind = SROCE_ACK_RESERVED;
		break;
	}
}

/* The same, from the 4 AETH bytes. */
static inline void sroce_aeth_interpret(const uint8_t *aeth, struct sroce_ack *a)
{
	sroce_ack_decode(sroce_aeth_syndrome(aeth), sroce_aeth_msn(aeth), a);
}

/* Is it a NAK that fails the WQE it names (not a sequence error or RNR)? */
static inline bool sroce_ack_is_fatal(const struct sroce_ack *a)
{
	return a->kind >= SROCE_ACK_NAK_INV_REQ && a->kind <= SROCE_ACK_NAK_RESERVED;
}

SROCE_EXTERN_C_END

#endif /* SROCE_DECIDE_H */
