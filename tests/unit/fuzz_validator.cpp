// SPDX-License-Identifier: GPL-2.0
// libFuzzer target for the packet validator (cmake -DSROCE_FUZZ=ON with clang).
//
// Each input is parsed in these ways, each from an exact-size heap copy so
// ASan sees any read past the end:
//   1. as is, from the IP header (sroce_parse_ip) and from the BTH
//      (sroce_parse_bth);
//      From the IP header also with SROCE_PARSE_HDRS_ONLY, from a copy of
//      the headers alone;
//   2. "repaired": IP/UDP length fields, UDP port and the ICRC are made
//      consistent, so the fuzzer reaches the transport checks instead of
//      stopping at the first length or CRC mismatch.
// Whatever parses must describe a packet inside the buffer.
#include <sroce/wire.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

static void check(const uint8_t *buf, size_t len, unsigned flags, bool from_ip)
{
	sroce_pkt pkt;
	sroce_wire_err e = from_ip ? sroce_parse_ip(buf, len, flags, &pkt)
				   : sroce_parse_bth(buf, len, flags, &pkt);
	if ((unsigned)e >= SROCE_WIRE_E_NR)
		abort();
	if (e != SROCE_WIRE_OK)
		return;
	const sroce_opcode_info *oi = pkt.info;
	if (!(oi->flags & SROCE_OPF_SUPPORTED) || pkt.end > len ||
	    pkt.icrc_off + SROCE_ICRC_LEN != pkt.end ||
	    pkt.payload_off != pkt.bth_off + oi->hdr_len ||
	    pkt.payload_off + pkt.payload_len + pkt.pad != pkt.icrc_off || pkt.pad > 3)
		abort();
	// touch every byte the descriptor points at
	volatile uint8_t sink = 0;
	for (uint32_t i = pkt.bth_off; i < pkt.end; i++)
		sink = sink ^ buf[i];
	(void)sink;
}

// SROCE_PARSE_HDRS_ONLY from a copy of the first SROCE_PARSE_HDRS_LEN bytes
// only: same verdict and offsets as the whole buffer without the ICRC check.
static void check_hdrs_only(const uint8_t *data, size_t size)
{
	size_t lin = size < SROCE_PARSE_HDRS_LEN ? size : SROCE_PARSE_HDRS_LEN;
	std::vector<uint8_t> head(data, data + lin);
	sroce_pkt whole, hdrs;
	sroce_wire_err e = sroce_parse_ip(data, size, SROCE_PARSE_NO_ICRC, &whole);
	if (sroce_parse_ip(lin ? head.data() : nullptr, size, SROCE_PARSE_HDRS_ONLY,
			   &hdrs) != e)
		abort();
	if (e == SROCE_WIRE_OK &&
	    (hdrs.payload_off != whole.payload_off || hdrs.payload_len != whole.payload_len ||
	     hdrs.end != whole.end || hdrs.info != whole.info))
		abort();
}

static void parse_copy(const uint8_t *data, size_t size, bool from_ip)
{
	std::vector<uint8_t> copy(data, data + size);
	const uint8_t *p = size ? copy.data() : nullptr;
	check(p, size, 0, from_ip);
	check(p, size, SROCE_PARSE_NO_ICRC, from_ip);
	if (from_ip)
		check_hdrs_only(p, size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parse_copy(data, size, true);
	parse_copy(data, size, false);

	// repaired variant: the version nibble picks IPv6, anything else IPv4
	if (size < 1 || size > 0xffff - 64)
		return 0;
	std::vector<uint8_t> p(data, data + size);
	int v = (p[0] >> 4) == 6 ? 6 : 4;
	size_t iphl = v == 4 ? SROCE_IPV4_HLEN : SROCE_IPV6_HLEN;
	if (p.size() < iphl + SROCE_UDP_HLEN + SROCE_BTH_LEN + SROCE_ICRC_LEN)
		p.resize(iphl + SROCE_UDP_HLEN + SROCE_BTH_LEN + SROCE_ICRC_LEN, 0);
	uint8_t *ip = p.data();
	if (v == 4) {
		ip[0] = 0x45;
		sroce_put_be16(ip + 2, (uint16_t)p.size());
		ip[6] &= 0x40;
		ip[7] = 0;
		ip[9] = 17;
	} else {
		ip[0] = (uint8_t)(0x60 | (ip[0] & 0x0f));
		sroce_put_be16(ip + 4, (uint16_t)(p.size() - iphl));
		ip[6] = 17;
	}
	sroce_put_be16(ip + iphl + 2, SROCE_UDP_PORT);
	sroce_put_be16(ip + iphl + 4, (uint16_t)(p.size() - iphl));
	ip[iphl + SROCE_UDP_HLEN + 1] &= 0xf0;	// tver 0
	size_t icrc_off = p.size() - SROCE_ICRC_LEN;
	sroce_icrc_put(ip + icrc_off, sroce_icrc_compute(ip, (unsigned)v, icrc_off));
	parse_copy(p.data(), p.size(), true);
	return 0;
}
