// SPDX-License-Identifier: GPL-2.0
// Helpers for the wire format tests: build RoCE v2 packets from the IP header on.
#pragma once

#include <sroce/wire.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace wiretest {

struct PacketSpec {
	int ip_version = 4;
	uint8_t opcode = SROCE_OP_RC_SEND_ONLY;
	uint32_t payload_len = 0;
	uint32_t dqpn = 0x000123;
	uint32_t psn = 0x00abcd;
	uint16_t src_port = 0xc0de;
	bool ackreq = false;
	uint8_t fill = 0x5a;	// payload bytes: fill + index
};

inline uint32_t pad_for(uint32_t payload_len)
{
	return (4 - (payload_len & 3)) & 3;
}

// A valid packet (correct lengths, pad and ICRC) for any supported opcode.
inline std::vector<uint8_t> build_packet(const PacketSpec &s)
{
	const sroce_opcode_info *oi = sroce_opcode_lookup(s.opcode);
	uint32_t pay = (oi->flags & SROCE_OPF_PAYLOAD) ? s.payload_len : 0;
	uint32_t pad = pad_for(pay);
	uint32_t iphl = s.ip_version == 4 ? SROCE_IPV4_HLEN : SROCE_IPV6_HLEN;
	uint32_t udplen = SROCE_UDP_HLEN + oi->hdr_len + pay + pad + SROCE_ICRC_LEN;
	std::vector<uint8_t> p(iphl + udplen, 0);
	uint8_t *ip = p.data();

	if (s.ip_version == 4) {
		ip[0] = 0x45;
		ip[1] = 0x02;		// ECT(0), as rxe sends
		sroce_put_be16(ip + 2, (uint16_t)(iphl + udplen));
		sroce_put_be16(ip + 4, 0x1234);
		ip[6] = 0x40;		// DF
		ip[8] = 64;
		ip[9] = 17;
		ip[10] = 0xbe;
		ip[11] = 0xef;
		const uint8_t src[4] = {10, 99, 0, 1}, dst[4] = {10, 99, 0, 2};
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, dst, 4);
	} else {
		ip[0] = 0x60;
		ip[1] = 0x21;		// some traffic class / flow label bits
		ip[2] = 0x43;
		ip[3] = 0x65;
		sroce_put_be16(ip + 4, (uint16_t)udplen);
		ip[6] = 17;
		ip[7] = 64;
		ip[8] = 0xfd;
		ip[9] = 0x99;
		ip[23] = 1;
		ip[24] = 0xfd;
		ip[25] = 0x99;
		ip[39] = 2;
	}
	uint8_t *udp = ip + iphl;
	sroce_put_be16(udp, s.src_port);
	sroce_put_be16(udp + 2, SROCE_UDP_PORT);
	sroce_put_be16(udp + 4, (uint16_t)udplen);
	sroce_put_be16(udp + 6, 0x7777);	// any checksum: masked by the ICRC

	uint8_t *bth = udp + SROCE_UDP_HLEN;
	sroce_bth h{};
	h.opcode = s.opcode;
	h.pad = (uint8_t)pad;
	h.pkey = SROCE_PKEY_DEFAULT;
	h.dqpn = s.dqpn;
	h.ackreq = s.ackreq;
	h.psn = s.psn;
	sroce_bth_encode(bth, &h);
	// extension headers: recognisable non-zero bytes
	for (uint32_t i = SROCE_BTH_LEN; i < oi->hdr_len; i++)
		bth[i] = (uint8_t)(0xa0 + i);
	if (sroce_opcode_has(oi, SROCE_HDR_AETH))
		bth[sroce_opcode_hdr_off(oi, SROCE_HDR_AETH)] = sroce_aeth_syn_ack(SROCE_AETH_CREDITS_INVALID);
	uint8_t *payload = bth + oi->hdr_len;
	for (uint32_t i = 0; i < pay; i++)
		payload[i] = (uint8_t)(s.fill + i);
	size_t icrc_off = p.size() - SROCE_ICRC_LEN;
	sroce_icrc_put(ip + icrc_off, sroce_icrc_compute(ip, (unsigned)s.ip_version, icrc_off));
	return p;
}

// Fix IP/UDP lengths to the vector's size and recompute the ICRC in place.
inline void refresh(std::vector<uint8_t> &p)
{
	uint8_t *ip = p.data();
	int v = ip[0] >> 4;
	uint32_t iphl = v == 4 ? SROCE_IPV4_HLEN : SROCE_IPV6_HLEN;
	if (v == 4)
		sroce_put_be16(ip + 2, (uint16_t)p.size());
	else
		sroce_put_be16(ip + 4, (uint16_t)(p.size() - iphl));
	if (p.size() >= iphl + SROCE_UDP_HLEN)
		sroce_put_be16(ip + iphl + 4, (uint16_t)(p.size() - iphl));
	if (p.size() >= iphl + SROCE_UDP_HLEN + SROCE_BTH_LEN + SROCE_ICRC_LEN) {
		size_t icrc_off = p.size() - SROCE_ICRC_LEN;
		sroce_icrc_put(ip + icrc_off, sroce_icrc_compute(ip, (unsigned)v, icrc_off));
	}
}

// Parse a copy in a heap buffer of exactly the given size, so that the
// sanitizer build catches any read past the end.
inline sroce_wire_err parse_exact(const uint8_t *data, size_t len, sroce_pkt *pkt,
				  unsigned flags = 0)
{
	std::vector<uint8_t> copy(data, data + len);
	return sroce_parse_ip(len ? copy.data() : nullptr, len, flags, pkt);
}

// Parse with SROCE_PARSE_HDRS_ONLY as the kernel does for a packet whose
// payload is in page fragments: only the first SROCE_PARSE_HDRS_LEN bytes
// (fewer if the datagram is shorter) are in an exact-size heap copy, so ASan
// sees any read of the rest; len is still the whole datagram's.
inline sroce_wire_err parse_hdrs_only(const uint8_t *data, size_t len, sroce_pkt *pkt,
				      unsigned flags = 0)
{
	size_t lin = len < SROCE_PARSE_HDRS_LEN ? len : SROCE_PARSE_HDRS_LEN;
	std::vector<uint8_t> copy(data, data + lin);
	return sroce_parse_ip(lin ? copy.data() : nullptr, len,
			      flags | SROCE_PARSE_HDRS_ONLY, pkt);
}

inline std::vector<uint8_t> supported_opcodes()
{
	std::vector<uint8_t> ops;
	for (int op = 0; op < 256; op++)
		if (sroce_opcode_lookup((uint8_t)op)->flags & SROCE_OPF_SUPPORTED)
			ops.push_back((uint8_t)op);
	return ops;
}

}  // namespace wiretest
