// SPDX-License-Identifier: GPL-2.0
// libFuzzer target for the transport decisions (decide.h) and the inverse
// opcode lookup (cmake -DSROCE_FUZZ=ON with clang).
//
// Each input is read as a stream of records; each record feeds arbitrary
// values to every decision and checks what must hold whatever the input:
//   - the PSN class is one the transport can give, and agrees with the PSN
//     distance (RC: DUP iff before epsn, SEQ_* iff after; UC: NEW or
//     UC_SKIP iff psn == epsn);
//   - the sequence verdict is OK exactly when sroce_opcode_seq_ok() says so,
//     RC_INVALID only on RC, UC_* only elsewhere;
//   - an AETH interpretation has a defined kind, a 24-bit MSN, credits only
//     on ACKs and an RNR delay only on RNR NAKs;
//   - sroce_opcode_find() returns -1 or an opcode whose table entry is
//     what was asked for (FIRST and MIDDLE without the IMM/INV variant,
//     and only if the message can end with it).
#include <sroce/wire.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

struct Reader {
	const uint8_t *p;
	size_t n;

	bool more() const { return n > 0; }
	uint32_t u32()
	{
		uint32_t v = 0;
		for (int i = 0; i < 4; i++)
			v = (v << 8) | u8();
		return v;
	}
	uint8_t u8()
	{
		if (!n)
			return 0;
		n--;
		return *p++;
	}
};

void check_psn(Reader &r)
{
	uint8_t t = r.u8() & 7;
	sroce_resp_psn_state s;
	s.epsn = r.u32();
	uint8_t f = r.u8();
	s.nak_sent = f & 1;
	s.uc_drop = f & 2;
	uint32_t psn = r.u32();
	const sroce_opcode_info *oi = sroce_opcode_lookup(r.u8());

	sroce_psn_class c = sroce_resp_psn_classify((sroce_transport)t, &s, psn, oi);
	int32_t d = sroce_psn_diff(psn, s.epsn);
	switch (t) {
	case SROCE_TRANSPORT_RC:
		if ((c == SROCE_PSN_DUP) != (d < 0) || (c == SROCE_PSN_NEW) != (d == 0) ||
		    ((c == SROCE_PSN_SEQ_NAK || c == SROCE_PSN_SEQ_DROP) != (d > 0)) ||
		    (c == SROCE_PSN_SEQ_NAK && s.nak_sent))
			abort();
		break;
	case SROCE_TRANSPORT_UC:
		if (c == SROCE_PSN_DUP || c == SROCE_PSN_SEQ_NAK || c == SROCE_PSN_SEQ_DROP)
			abort();
		if ((c == SROCE_PSN_NEW || c == SROCE_PSN_UC_SKIP) != (d == 0))
			abort();
		if (sroce_psn_class_exec(c) != !!(oi->flags & SROCE_OPF_START) &&
		    (d != 0 || s.uc_drop))
			abort();
		break;
	default:
		if (c != SROCE_PSN_NEW)
			abort();
	}
}

void check_seq(Reader &r)
{
	uint8_t t = r.u8() & 7;
	bool in_msg = r.u8() & 1;
	unsigned int kind = r.u8();
	uint8_t prev = r.u8(), next = r.u8();
	const sroce_opcode_info *oi = sroce_opcode_lookup(next);

	bool ok = sroce_opcode_seq_ok(in_msg, kind, oi);
	sroce_seq_verdict v = sroce_resp_seq_check((sroce_transport)t, in_msg, kind, oi);
	if ((v == SROCE_SEQ_OK) != ok)
		abort();
	if (v == SROCE_SEQ_RC_INVALID && t != SROCE_TRANSPORT_RC)
		abort();
	if ((v == SROCE_SEQ_UC_DROP || v == SROCE_SEQ_UC_RESTART) && t == SROCE_TRANSPORT_RC)
		abort();
	if (v == SROCE_SEQ_UC_RESTART && !(oi->flags & SROCE_OPF_START))
		abort();

	if (sroce_opcode_may_follow(prev, next)) {
		const sroce_opcode_info *a = sroce_opcode_lookup(prev);
		if (a->transport != oi->transport || !(a->flags & oi->flags & SROCE_OPF_REQUEST))
			abort();
		if ((a->flags & SROCE_OPF_END) != 0 && !(oi->flags & SROCE_OPF_START))
			abort();
	}

	uint32_t mtu = r.u32(), len = r.u32();
	if (sroce_payload_mtu_ok(oi, mtu, len) && len > mtu &&
	    (oi->kind == SROCE_KIND_SEND || oi->kind == SROCE_KIND_WRITE))
		abort();
}

void check_ack(Reader &r)
{
	uint8_t b[SROCE_AETH_LEN];
	for (auto &x : b)
		x = r.u8();
	sroce_ack a;
	memset(&a, 0xa5, sizeof(a));
	sroce_aeth_interpret(b, &a);
	if (a.kind > SROCE_ACK_RESERVED || a.msn > SROCE_MSN_MASK || a.value > 31)
		abort();
	if (a.kind != SROCE_ACK_ACK && (a.credits || a.credit_code))
		abort();
	if (a.kind == SROCE_ACK_ACK && a.credits > 32768)
		abort();
	if ((a.kind == SROCE_ACK_RNR) != (a.rnr_us != 0))
		abort();
	if (sroce_ack_is_fatal(&a) && (b[0] & 0x60) != 0x60)
		abort();
}

void check_find(Reader &r)
{
	uint8_t t = r.u8(), k = r.u8(), p = r.u8();
	unsigned int v = r.u8() | (unsigned int)r.u8() << 8;
	int op = sroce_opcode_find((sroce_transport)(t & 7), (sroce_op_kind)(k & 15),
				   (sroce_pos)(p & 7), v);
	if (op == -1)
		return;
	if (op < 0 || op > 255)
		abort();
	unsigned int ve = v;
	if ((p & 7) == SROCE_POS_FIRST || (p & 7) == SROCE_POS_MIDDLE) {
		ve &= ~(unsigned int)(SROCE_OPF_IMM | SROCE_OPF_INV);
		if (sroce_opcode_find((sroce_transport)(t & 7), (sroce_op_kind)(k & 15),
				      SROCE_POS_LAST, v) < 0)
			abort();
	}
	const sroce_opcode_info *oi = sroce_opcode_lookup((uint8_t)op);
	if (!(oi->flags & SROCE_OPF_KNOWN) || oi->transport != (t & 7) || oi->kind != (k & 15) ||
	    oi->pos != (p & 7) || (oi->flags & SROCE_OPF_VARIANT) != ve)
		abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Reader r{data, size};

	while (r.more()) {
		switch (r.u8() & 3) {
		case 0:
			check_psn(r);
			break;
		case 1:
			check_seq(r);
			break;
		case 2:
			check_ack(r);
			break;
		default:
			check_find(r);
			break;
		}
	}
	return 0;
}
