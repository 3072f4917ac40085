// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-pktgen: sends crafted RoCE v2 frames, well-formed or hostile, to a
 * peer over AF_PACKET. Headers and ICRC come from the wire library
 * (include/sroce). Needs CAP_NET_RAW.
 *
 *   sroce-pktgen -i eth0 -d 10.99.0.1 [-6] [--dst-mac M] -m MODE[,MODE...]
 *                [-n N] [--qpn Q] [--seed S] [--interval-us U] [--src IP]
 *                [--psn P] [--rkey K] [--va V] [--len L] [--payload-len N]
 *                [--qkey Q] [--syndrome S] [--pkey P] [--sport P] [--ecn E]
 *   sroce-pktgen --list
 *
 * The transport modes (uc_write ... live) aim at a live QP: --qpn, --psn,
 * --rkey and --va are the victim's, --src may spoof the source address.
 * Their payload bytes are all PAYLOAD_BYTE (0xa5), so a victim can count
 * what landed in its memory.
 *
 * For each mode it prints "mode=NAME sent=N expect=COUNTER", COUNTER being
 * the sroce receive counter that the packets should land in on the peer, or
 * "none" for packets the peer's IP/UDP stack drops before sroce sees them.
 * --ecn sets the IP header's ECN field (3: CE) of every packet; the ICRC
 * does not cover it.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <sroce/wire.h>

#include "tool_util.h"

namespace {

using Bytes = std::vector<uint8_t>;

struct Config {
	std::string ifname;
	std::string dst;
	std::string dst_mac;
	bool v6 = false;
	std::vector<std::string> modes;
	unsigned long count = 10;
	uint32_t qpn = 0x11;
	uint64_t seed = 1;
	unsigned int interval_us = 100;
	std::string src;		/* spoofed source address, "" = the interface's */
	uint32_t psn = 0;
	uint32_t rkey = 0;
	uint64_t va = 0;
	uint32_t len = 0;		/* RETH DMA length, 0 = the mode's default */
	long payload_len = -1;		/* -1 = the mode's default */
	uint32_t qkey = 0x80010000u;	/* the GSI Q_Key */
	int syndrome = -1;		/* AETH syndrome, -1 = the mode's default */
	uint16_t pkey = SROCE_PKEY_DEFAULT;
	int sport = -1;			/* UDP source port, -1 = derived from the PSN */
	uint8_t ecn = 0;		/* the IP header's ECN field */
};

struct Endpoint {
	int ifindex = 0;
	uint8_t src_mac[6] = {};
	uint8_t dst_mac[6] = {};
	uint8_t src_ip[16] = {};
	uint8_t dst_ip[16] = {};
	uint16_t pkey = SROCE_PKEY_DEFAULT;
	int sport = -1;
	uint8_t ecn = 0;
};

/* Every payload byte of the transport modes. */
constexpr uint8_t PAYLOAD_BYTE = 0xa5;

/* A packet under construction: IP header, UDP header, transport, ICRC. */
struct Packet {
	bool v6 = false;
	Bytes b;		/* from the IP header on */
	unsigned int iph = 0;	/* IP header length */
	unsigned int udp() const { return iph; }
	unsigned int bth() const { return iph + SROCE_UDP_HLEN; }
};

[[noreturn]] void die(const char *what)
{
	std::fprintf(stderr, "sroce-pktgen: %s: %s\n", what, std::strerror(errno));
	std::exit(1);
}

[[noreturn]] void usage(const char *msg)
{
	std::fprintf(stderr, "sroce-pktgen: %s\n"
		     "usage: sroce-pktgen -i IFACE -d DSTIP [-6] [--dst-mac MAC] -m MODE[,MODE..]\n"
		     "                    [-n COUNT] [--qpn QPN] [--seed S] [--interval-us U]\n"
		     "                    [--src IP] [--psn P] [--rkey K] [--va V] [--len L]\n"
		     "                    [--payload-len N] [--qkey Q] [--syndrome S] [--pkey P]\n"
		     "                    [--sport P] [--ecn E]\n"
		     "       sroce-pktgen --list\n", msg);
	std::exit(2);
}

uint16_t ip_csum(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += sroce_get_be16(p + i);
	if (len & 1)
		sum += p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return static_cast<uint16_t>(~sum);
}

/* Make the IP and UDP length fields match the buffer, IPv4 checksum too. */
void fix_lengths(Packet &p)
{
	size_t ip_len = p.b.size();
	size_t udp_len = ip_len - p.iph;

	if (p.v6) {
		sroce_put_be16(&p.b[4], static_cast<uint16_t>(ip_len - SROCE_IPV6_HLEN));
	} else {
		sroce_put_be16(&p.b[2], static_cast<uint16_t>(ip_len));
	}
	sroce_put_be16(&p.b[p.udp() + 4], static_cast<uint16_t>(udp_len));
}

void fix_ip_csum(Packet &p)
{
	if (p.v6)
		return;
	p.b[10] = p.b[11] = 0;
	sroce_put_be16(&p.b[10], ip_csum(p.b.data(), p.iph));
}

/* ICRC over everything but the last four bytes, stored there. */
void fix_icrc(Packet &p)
{
	if (p.b.size() < p.bth() + SROCE_BTH_LEN + SROCE_ICRC_LEN || p.iph != (p.v6 ? 40u : 20u))
		return;
	size_t n = p.b.size() - SROCE_ICRC_LEN;
	sroce_icrc_put(&p.b[n], sroce_icrc_compute(p.b.data(), p.v6 ? 6 : 4, n));
}

/*
 * A packet with the given opcode: BTH to qpn, the opcode's extension
 * headers (zeros), payload bytes, pad bytes and an ICRC, all consistent.
 * transport_len overrides the size of everything after the UDP header
 * (used to build truncated packets).
 */
Packet build(const Endpoint &ep, bool v6, uint8_t opcode, uint32_t qpn, size_t payload,
	     uint8_t pad, uint32_t psn, long transport_len = -1)
{
	Packet p;
	p.v6 = v6;
	p.iph = v6 ? SROCE_IPV6_HLEN : SROCE_IPV4_HLEN;
	const sroce_opcode_info *oi = sroce_opcode_lookup(opcode);
	size_t hdrs = oi->hdr_len ? oi->hdr_len : SROCE_BTH_LEN;
	size_t tlen = transport_len >= 0 ? static_cast<size_t>(transport_len)
					 : hdrs + payload + pad + SROCE_ICRC_LEN;

	p.b.assign(p.iph + SROCE_UDP_HLEN + tlen, 0);
	uint8_t *ip = p.b.data();
	if (v6) {
		ip[0] = 0x60;
		ip[1] = static_cast<uint8_t>(ep.ecn << 4);	/* traffic class bits 1..0 */
		ip[6] = 17;
		ip[7] = 64;
		std::memcpy(ip + 8, ep.src_ip, 16);
		std::memcpy(ip + 24, ep.dst_ip, 16);
	} else {
		ip[0] = 0x45;
		ip[1] = ep.ecn;
		sroce_put_be16(ip + 4, static_cast<uint16_t>(psn));	/* id */
		sroce_put_be16(ip + 6, 0x4000);				/* DF */
		ip[8] = 64;
		ip[9] = 17;
		std::memcpy(ip + 12, ep.src_ip, 4);
		std::memcpy(ip + 16, ep.dst_ip, 4);
	}
	uint8_t *udp = ip + p.iph;
	sroce_put_be16(udp, static_cast<uint16_t>(ep.sport >= 0 ? ep.sport
							  : 0xc000 | (psn & 0x3fff)));
	sroce_put_be16(udp + 2, SROCE_UDP_PORT);

	uint8_t bth[SROCE_BTH_LEN] = {};
	sroce_bth_set_opcode(bth, opcode);
	sroce_bth_set_pad(bth, pad);
	sroce_bth_set_pkey(bth, ep.pkey);
	sroce_bth_set_dqpn(bth, qpn);
	sroce_bth_set_psn(bth, psn);
	std::memcpy(udp + SROCE_UDP_HLEN, bth, std::min(tlen, sizeof(bth)));

	/* payload: a recognisable pattern */
	size_t off = p.bth() + hdrs;
	for (size_t i = 0; i < payload && off + i < p.b.size(); i++)
		p.b[off + i] = static_cast<uint8_t>(0xa0 + i);

	fix_lengths(p);
	fix_ip_csum(p);
	fix_icrc(p);
	return p;
}

/* ------------------------------------------------------------------ modes */

struct Mode {
	const char *name;
	const char *expect;	/* counter on the receiver, "none": dropped by the stack */
	const char *what;
	std::function<Packet(const Endpoint &, const Config &, unsigned long i, std::mt19937_64 &)> make;
	int opcode = -1;	/* transport modes: the opcode every packet has (-2: any valid one) */
	/* packets the mode sends whatever -n says (rc_write_rest), nullptr: -n */
	unsigned long (*fixed_count)(const Config &) = nullptr;
};

std::vector<uint8_t> opcodes_with(uint16_t want, uint16_t mask, size_t max)
{
	std::vector<uint8_t> v;
	for (unsigned int op = 0; op < 256 && v.size() < max; op++)
		if ((sroce_opcode_lookup(static_cast<uint8_t>(op))->flags & mask) == want)
			v.push_back(static_cast<uint8_t>(op));
	return v;
}

Packet valid_packet(const Endpoint &ep, bool v6, uint32_t qpn, unsigned long i, size_t payload)
{
	switch (i % 5) {
	case 0:
		return build(ep, v6, SROCE_OP_RC_SEND_ONLY, qpn, payload & ~size_t(3), 0, i);
	case 1:
		return build(ep, v6, SROCE_OP_UD_SEND_ONLY, qpn, payload & ~size_t(3), 0, i);
	case 2:
		return build(ep, v6, SROCE_OP_RC_RDMA_WRITE_ONLY, qpn, payload & ~size_t(3), 0, i);
	case 3:
		return build(ep, v6, SROCE_OP_RC_ACKNOWLEDGE, qpn, 0, 0, i);
	default:	/* 1..3 pad bytes on a LAST packet */
		return build(ep, v6, SROCE_OP_RC_SEND_LAST, qpn, (payload | 4) - 1 - (i % 3),
			     static_cast<uint8_t>(1 + i % 3), i);
	}
}

/* --------------------------------------------------------- transport modes */

/* What the extension headers of a transport-mode packet carry. */
struct Ext {
	uint64_t va = 0;
	uint32_t rkey = 0;
	uint32_t len = 0;
	uint8_t syndrome = SROCE_AETH_CREDITS_INVALID;
	uint32_t qkey = 0;
	uint32_t sqpn = SROCE_GSI_QPN;
};

/*
 * A well-formed packet aimed at a live QP: opcode to qpn at psn, its
 * extension headers from x, payload bytes all PAYLOAD_BYTE (padded to a
 * multiple of 4), AckReq on requests, a valid ICRC.
 */
Packet transport(const Endpoint &ep, const Config &c, uint8_t opcode, uint32_t qpn,
		 size_t payload, uint32_t psn, const Ext &x)
{
	const uint8_t pad = static_cast<uint8_t>((4 - payload % 4) % 4);
	Packet p = build(ep, c.v6, opcode, qpn, payload, pad, psn);
	const sroce_opcode_info *oi = sroce_opcode_lookup(opcode);
	uint8_t *bth = &p.b[p.bth()];
	int off;

	if ((off = sroce_opcode_hdr_off(oi, SROCE_HDR_RETH)) >= 0) {
		const sroce_reth r = {x.va, x.rkey, x.len};
		sroce_reth_encode(bth + off, &r);
	}
	if ((off = sroce_opcode_hdr_off(oi, SROCE_HDR_AETH)) >= 0) {
		const sroce_aeth a = {x.syndrome, psn & SROCE_MSN_MASK};
		sroce_aeth_encode(bth + off, &a);
	}
	if ((off = sroce_opcode_hdr_off(oi, SROCE_HDR_DETH)) >= 0) {
		const sroce_deth d = {x.qkey, x.sqpn};
		sroce_deth_encode(bth + off, &d);
	}
	if ((off = sroce_opcode_hdr_off(oi, SROCE_HDR_ATOMICETH)) >= 0) {
		const sroce_atomiceth a = {x.va & ~uint64_t(7), x.rkey, 1, 0};
		sroce_atomiceth_encode(bth + off, &a);
	}
	if ((off = sroce_opcode_hdr_off(oi, SROCE_HDR_IETH)) >= 0)
		sroce_ieth_set_rkey(bth + off, x.rkey);
	sroce_bth_set_ackreq(bth, (oi->flags & SROCE_OPF_REQUEST) && (oi->flags & SROCE_OPF_END));
	std::fill_n(p.b.begin() + p.bth() + oi->hdr_len, payload, PAYLOAD_BYTE);
	fix_icrc(p);
	return p;
}

size_t payload_or(const Config &c, size_t dflt)
{
	return c.payload_len >= 0 ? static_cast<size_t>(c.payload_len) : dflt;
}

/* The RETH fields from the command line; DMA length defaults to dflt_len. */
Ext reth_ext(const Config &c, uint32_t dflt_len)
{
	Ext x;
	x.va = c.va;
	x.rkey = c.rkey;
	x.len = c.len ? c.len : dflt_len;
	return x;
}

/* An RDMA WRITE ONLY of --payload-len bytes (64), PSN --psn + i. */
Packet write_only(const Endpoint &ep, const Config &c, unsigned long i, uint8_t opcode)
{
	const size_t n = payload_or(c, 64);
	return transport(ep, c, opcode, c.qpn, n, c.psn + static_cast<uint32_t>(i),
			 reth_ext(c, static_cast<uint32_t>(n)));
}

Ext aeth_ext(uint8_t syndrome)
{
	Ext x;
	x.syndrome = syndrome;
	return x;
}

/* rc_write_rest: the MIDDLE/LAST packets after one FIRST of --payload-len bytes. */
constexpr size_t WRITE_PMTU = 1024;

unsigned long write_rest_count(const Config &c)
{
	const size_t pmtu = payload_or(c, WRITE_PMTU);
	const size_t len = c.len ? c.len : 4 * pmtu;
	const size_t total = pmtu ? (len + pmtu - 1) / pmtu : 0;
	return total > 1 ? total - 1 : 0;
}

/* live: the opcodes a live RC/UC QP may be sent, requests and responses. */
const std::vector<uint8_t> &live_opcodes()
{
	static const std::vector<uint8_t> ops = [] {
		std::vector<uint8_t> v;
		for (unsigned int op = 0; op < 0x40; op++) {
			const uint16_t f = sroce_opcode_lookup(static_cast<uint8_t>(op))->flags;
			if ((f & SROCE_OPF_KNOWN) && (f & SROCE_OPF_SUPPORTED) &&
			    (f & (SROCE_OPF_REQUEST | SROCE_OPF_RESPONSE)))
				v.push_back(static_cast<uint8_t>(op));
		}
		return v;
	}();
	return ops;
}

Packet live_packet(const Endpoint &ep, const Config &c, std::mt19937_64 &rng)
{
	static const uint8_t syndromes[] = {0x1f, 0x00, 0x0a, 0x20, 0x2e, 0x60, 0x61, 0x62, 0x63};
	const auto &ops = live_opcodes();
	const uint8_t op = ops[rng() % ops.size()];
	const sroce_opcode_info *oi = sroce_opcode_lookup(op);
	const uint32_t span = c.len ? c.len : 65536;
	Ext x;

	x.rkey = rng() % 4 ? c.rkey : static_cast<uint32_t>(rng());
	switch (rng() % 4) {
	case 0:
		x.va = rng();
		break;
	case 1:
		x.va = c.va + span - rng() % 2048;	/* across the end */
		break;
	case 2:
		x.va = c.va - rng() % 2048;		/* before the start */
		break;
	default:
		x.va = c.va + rng() % span;
		break;
	}
	x.len = rng() % 2 ? static_cast<uint32_t>(rng() % (2 * span)) : span;
	x.syndrome = syndromes[rng() % sizeof(syndromes)];
	x.qkey = c.qkey;
	size_t payload = 0;
	if (oi->flags & SROCE_OPF_PAYLOAD) {
		payload = 4 * (rng() % (payload_or(c, WRITE_PMTU) / 4 + 1));
		if ((oi->flags & SROCE_OPF_END) && payload >= 4 && rng() % 2)
			payload -= 1 + rng() % 3;	/* a pad count on LAST/ONLY only */
	}
	const uint32_t psn = (c.psn + static_cast<uint32_t>(rng() % 17) - 8) & SROCE_PSN_MASK;
	return transport(ep, c, op, c.qpn, payload, psn, x);
}

std::vector<Mode> modes()
{
	std::vector<Mode> m;

	m.push_back({"valid", "rx_no_qp", "well-formed RC/UD packets to --qpn (--payload-len bytes)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return valid_packet(ep, c.v6, c.qpn, i,
						 payload_or(c, 64 + 4 * (i % 16)));
		     }});
	m.push_back({"cnp", "rx_cnp", "RoCE v2 congestion notification packets",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return build(ep, c.v6, SROCE_OP_CNP, c.qpn, 0, 0, i);
		     }});
	m.push_back({"icrc", "rx_drop_icrc",
		     "valid packet (--payload-len bytes), one bit flipped: of the ICRC (even i) "
		     "or of a byte just before it (odd i)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     Packet p = valid_packet(ep, c.v6, c.qpn, i, payload_or(c, 32));
			     const size_t back = i % 2 ? SROCE_ICRC_LEN + 1 + i / 2 % 4 : 1 + i / 2 % 4;
			     p.b[p.b.size() - back] ^= static_cast<uint8_t>(1u << (i % 8));
			     return p;
		     }});
	m.push_back({"trunc_bth", "rx_drop_trunc_bth", "UDP payload shorter than BTH + ICRC",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     static const long lens[] = {0, 1, 4, 8, 12, 15};
			     return build(ep, c.v6, SROCE_OP_RC_SEND_ONLY, c.qpn, 0, 0, i,
					  lens[i % 6]);
		     }});
	m.push_back({"trunc_hdrs", "rx_drop_trunc_hdrs", "RDMA WRITE ONLY cut inside its RETH",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     static const long lens[] = {16, 20, 24, 28, 31};
			     return build(ep, c.v6, SROCE_OP_RC_RDMA_WRITE_ONLY, c.qpn, 0, 0, i,
					  lens[i % 5]);
		     }});
	m.push_back({"tver", "rx_drop_tver", "BTH transport version != 0",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     Packet p = valid_packet(ep, c.v6, c.qpn, i, 16);
			     p.b[p.bth() + 1] |= static_cast<uint8_t>(1 + i % 15);
			     fix_icrc(p);
			     return p;
		     }});
	m.push_back({"opcode_unknown", "rx_drop_opcode_unknown", "reserved opcodes",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     static const auto ops = opcodes_with(0, SROCE_OPF_KNOWN, 64);
			     return build(ep, c.v6, ops[i % ops.size()], c.qpn, 16, 0, i);
		     }});
	m.push_back({"opcode_unsupported", "rx_drop_opcode_unsupported",
		     "RD and FLUSH opcodes",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     static const auto ops = opcodes_with(SROCE_OPF_KNOWN,
				     SROCE_OPF_KNOWN | SROCE_OPF_SUPPORTED, 256);
			     return build(ep, c.v6, ops[(i * 7) % ops.size()], c.qpn, 16, 0, i);
		     }});
	m.push_back({"payload", "rx_drop_payload", "ACK with payload bytes",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return build(ep, c.v6, SROCE_OP_RC_ACKNOWLEDGE, c.qpn, 4 * (1 + i % 4), 0, i);
		     }});
	m.push_back({"pad", "rx_drop_pad", "pad count larger than the payload, or on a MIDDLE packet",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     if (i % 2)
				     return build(ep, c.v6, SROCE_OP_RC_SEND_MIDDLE, c.qpn, 7, 1, i);
			     Packet p = build(ep, c.v6, SROCE_OP_RC_SEND_ONLY, c.qpn, 0, 0, i);
			     sroce_bth_set_pad(&p.b[p.bth()], 2);
			     fix_icrc(p);
			     return p;
		     }});
	m.push_back({"align", "rx_drop_align", "transport length not a multiple of 4",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return build(ep, c.v6, SROCE_OP_RC_SEND_ONLY, c.qpn, 4 * (i % 4) + 1 + i % 3,
					  0, i);
		     }});
	m.push_back({"udp_len", "rx_drop_udp_len", "UDP length shorter than the IP payload",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     Packet p = valid_packet(ep, c.v6, c.qpn, i, 32);
			     uint8_t *ul = &p.b[p.udp() + 4];
			     sroce_put_be16(ul, static_cast<uint16_t>(sroce_get_be16(ul) - 4 * (1 + i % 2)));
			     return p;
		     }});
	m.push_back({"ip_options", "rx_drop_ip_options", "IPv4 header with options (IPv4 only)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     Packet p = valid_packet(ep, false, c.qpn, i, 32);
			     static const uint8_t opts[4] = {1, 1, 1, 0};	/* NOP NOP NOP EOL */
			     p.b.insert(p.b.begin() + SROCE_IPV4_HLEN, opts, opts + 4);
			     p.b[0] = 0x46;
			     p.iph = 24;
			     fix_lengths(p);
			     fix_ip_csum(p);
			     return p;
		     }});
	m.push_back({"ip6_exthdr", "rx_drop_ip_proto", "IPv6 hop-by-hop extension header (IPv6 only)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     Packet p = valid_packet(ep, true, c.qpn, i, 32);
			     /* next header UDP, length 0 (8 bytes), PadN over the other 6 */
			     static const uint8_t hbh[8] = {17, 0, 1, 4, 0, 0, 0, 0};
			     p.b.insert(p.b.begin() + SROCE_IPV6_HLEN, hbh, hbh + 8);
			     p.b[6] = 0;	/* next header: hop-by-hop */
			     p.iph = SROCE_IPV6_HLEN + 8;
			     fix_lengths(p);
			     return p;
		     }});
	m.push_back({"ip_version", "none", "IP version neither 4 nor 6 (the IP stack drops it)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     Packet p = valid_packet(ep, c.v6, c.qpn, i, 32);
			     p.b[0] = static_cast<uint8_t>((p.b[0] & 0x0f) | (c.v6 ? 0x50 : 0x70));
			     fix_ip_csum(p);
			     return p;
		     }});
	m.push_back({"udp_len_long", "none", "UDP length beyond the IP payload (UDP drops it)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     Packet p = valid_packet(ep, c.v6, c.qpn, i, 32);
			     uint8_t *ul = &p.b[p.udp() + 4];
			     sroce_put_be16(ul, static_cast<uint16_t>(sroce_get_be16(ul) + 4));
			     return p;
		     }});
	m.push_back({"random", "any", "random mutations of valid packets (fuzz; --seed)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &rng) {
			     Packet p = valid_packet(ep, c.v6, c.qpn, i, rng() % 200);
			     unsigned int n = 1 + rng() % 4;
			     bool hit_ip = false;
			     for (unsigned int k = 0; k < n; k++) {
				     unsigned int r = rng() % 100;
				     size_t tr = p.bth();
				     if (r < 70 && p.b.size() > tr) {
					     p.b[tr + rng() % (p.b.size() - tr)] ^= static_cast<uint8_t>(1 + rng() % 255);
				     } else if (r < 80) {
					     p.b[rng() % p.b.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
					     hit_ip = true;
				     } else if (r < 90) {
					     p.b.resize(tr + rng() % (p.b.size() - tr + 1));
					     fix_lengths(p);
				     } else {
					     size_t add = 1 + rng() % 64;
					     for (size_t a = 0; a < add; a++)
						     p.b.push_back(static_cast<uint8_t>(rng()));
					     fix_lengths(p);
				     }
			     }
			     if (!hit_ip || rng() % 2)
				     fix_ip_csum(p);
			     if (rng() % 2)
				     fix_icrc(p);
			     return p;
		     }});

	/* ---- transport modes: well-formed packets at a live QP (--qpn/--psn/--rkey/--va) */
	m.push_back({"uc_write", "transport", "UC RDMA WRITE ONLY, RETH --va/--rkey/--len, PSN --psn + i",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return write_only(ep, c, i, SROCE_OP_UC_RDMA_WRITE_ONLY);
		     }, SROCE_OP_UC_RDMA_WRITE_ONLY});
	m.push_back({"rc_write_only", "transport", "RC RDMA WRITE ONLY, RETH --va/--rkey/--len, PSN --psn + i",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return write_only(ep, c, i, SROCE_OP_RC_RDMA_WRITE_ONLY);
		     }, SROCE_OP_RC_RDMA_WRITE_ONLY});
	m.push_back({"rc_send_only", "transport", "RC SEND ONLY of --payload-len bytes, PSN --psn + i",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return transport(ep, c, SROCE_OP_RC_SEND_ONLY, c.qpn, payload_or(c, 64),
					      c.psn + static_cast<uint32_t>(i), Ext());
		     }, SROCE_OP_RC_SEND_ONLY});
	m.push_back({"uc_send_only", "transport", "UC SEND ONLY of --payload-len bytes, PSN --psn + i",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return transport(ep, c, SROCE_OP_UC_SEND_ONLY, c.qpn, payload_or(c, 64),
					      c.psn + static_cast<uint32_t>(i), Ext());
		     }, SROCE_OP_UC_SEND_ONLY});
	m.push_back({"uc_send_last", "transport", "UC SEND LAST of --payload-len bytes, PSN --psn + i",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return transport(ep, c, SROCE_OP_UC_SEND_LAST, c.qpn, payload_or(c, 64),
					      c.psn + static_cast<uint32_t>(i), Ext());
		     }, SROCE_OP_UC_SEND_LAST});
	m.push_back({"rc_write_first", "transport",
		     "RC RDMA WRITE FIRST, RETH length --len, one path MTU (--payload-len) of payload",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     const size_t n = payload_or(c, WRITE_PMTU);
			     return transport(ep, c, SROCE_OP_RC_RDMA_WRITE_FIRST, c.qpn, n,
					      c.psn + static_cast<uint32_t>(i),
					      reth_ext(c, static_cast<uint32_t>(4 * n)));
		     }, SROCE_OP_RC_RDMA_WRITE_FIRST});
	m.push_back({"rc_write_rest", "transport",
		     "RC RDMA WRITE MIDDLE..LAST from --psn finishing a --len message (ignores -n)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     const size_t pmtu = payload_or(c, WRITE_PMTU);
			     const size_t len = c.len ? c.len : 4 * pmtu;
			     const unsigned long rest = write_rest_count(c);
			     if (rest)
				     i %= rest;	/* the selftest asks for more */
			     const bool last = i + 1 >= rest;
			     const size_t n = last ? len - std::min(len, (i + 1) * pmtu) : pmtu;
			     return transport(ep, c, last ? SROCE_OP_RC_RDMA_WRITE_LAST
							  : SROCE_OP_RC_RDMA_WRITE_MIDDLE,
					      c.qpn, n, c.psn + static_cast<uint32_t>(i), Ext());
		     }, -2, write_rest_count});
	m.push_back({"ack", "transport", "RC ACKNOWLEDGE at --psn + i, AETH --syndrome (0x1f)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     const uint8_t syn = static_cast<uint8_t>(c.syndrome >= 0 ? c.syndrome : 0x1f);
			     return transport(ep, c, SROCE_OP_RC_ACKNOWLEDGE, c.qpn, 0,
					      c.psn + static_cast<uint32_t>(i), aeth_ext(syn));
		     }, SROCE_OP_RC_ACKNOWLEDGE});
	m.push_back({"nak_seq", "transport", "RC NAK PSN sequence error (0x60) at --psn + i",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return transport(ep, c, SROCE_OP_RC_ACKNOWLEDGE, c.qpn, 0,
					      c.psn + static_cast<uint32_t>(i), aeth_ext(0x60));
		     }, SROCE_OP_RC_ACKNOWLEDGE});
	m.push_back({"nak_access", "transport", "RC NAK remote access error (0x62) at --psn + i",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return transport(ep, c, SROCE_OP_RC_ACKNOWLEDGE, c.qpn, 0,
					      c.psn + static_cast<uint32_t>(i), aeth_ext(0x62));
		     }, SROCE_OP_RC_ACKNOWLEDGE});
	m.push_back({"rnr", "transport", "RC RNR NAK (0x20 | timer, timer = --syndrome & 0x1f, 1)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     const uint8_t t = static_cast<uint8_t>(c.syndrome >= 0 ? c.syndrome & 0x1f : 1);
			     return transport(ep, c, SROCE_OP_RC_ACKNOWLEDGE, c.qpn, 0,
					      c.psn + static_cast<uint32_t>(i), aeth_ext(0x20 | t));
		     }, SROCE_OP_RC_ACKNOWLEDGE});
	m.push_back({"gsi_flood", "transport", "UD SEND ONLY to QP 1, DETH --qkey (0x80010000), src QP 1",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     Ext x;
			     x.qkey = c.qkey;
			     return transport(ep, c, SROCE_OP_UD_SEND_ONLY, SROCE_GSI_QPN,
					      payload_or(c, 300), c.psn + static_cast<uint32_t>(i), x);
		     }, SROCE_OP_UD_SEND_ONLY});
	m.push_back({"ud_send", "transport",
		     "UD SEND ONLY to --qpn, DETH --qkey (0x80010000), src QP 1, --payload-len (64)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     Ext x;
			     x.qkey = c.qkey;
			     return transport(ep, c, SROCE_OP_UD_SEND_ONLY, c.qpn, payload_or(c, 64),
					      c.psn + static_cast<uint32_t>(i), x);
		     }, SROCE_OP_UD_SEND_ONLY});
	m.push_back({"read_resp_long", "transport",
		     "RC READ RESPONSE ONLY at --psn + i, --payload-len (1024) bytes",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return transport(ep, c, SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, c.qpn,
					      payload_or(c, WRITE_PMTU), c.psn + static_cast<uint32_t>(i),
					      aeth_ext(0x1f));
		     }, SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY});
	m.push_back({"read_req", "transport", "RC RDMA READ request, RETH --va/--rkey/--len (64)",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return transport(ep, c, SROCE_OP_RC_RDMA_READ_REQUEST, c.qpn, 0,
					      c.psn + static_cast<uint32_t>(i), reth_ext(c, 64));
		     }, SROCE_OP_RC_RDMA_READ_REQUEST});
	m.push_back({"live", "transport",
		     "random RC/UC requests and responses at --qpn, PSN --psn +-8 (--seed)",
		     [](const Endpoint &ep, const Config &c, unsigned long, std::mt19937_64 &rng) {
			     return live_packet(ep, c, rng);
		     }, -2});
	return m;
}

/* ------------------------------------------------------------- endpoints */

bool parse_mac(const std::string &s, uint8_t mac[6])
{
	unsigned int v[6];
	if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4],
			&v[5]) != 6)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = static_cast<uint8_t>(v[i]);
	return true;
}

bool resolve_mac(const Config &c, uint8_t mac[6])
{
	std::string cmd = std::string("ping ") + (c.v6 ? "-6 " : "") + "-c 1 -W 2 " + c.dst +
			  " >/dev/null 2>&1; ip neigh show " + c.dst + " dev " + c.ifname;
	FILE *f = popen(cmd.c_str(), "r");
	if (!f)
		return false;
	char line[256];
	bool ok = false;
	while (!ok && std::fgets(line, sizeof(line), f)) {
		const char *l = std::strstr(line, "lladdr ");
		if (l) {
			char buf[32] = {};
			std::sscanf(l + 7, "%31s", buf);
			ok = parse_mac(buf, mac);
		}
	}
	pclose(f);
	return ok;
}

Endpoint setup(const Config &c)
{
	Endpoint ep;

	ep.ifindex = static_cast<int>(if_nametoindex(c.ifname.c_str()));
	if (!ep.ifindex)
		die(c.ifname.c_str());

	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	ifreq ifr = {};
	std::snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", c.ifname.c_str());
	if (ioctl(s, SIOCGIFHWADDR, &ifr) < 0)
		die("SIOCGIFHWADDR");
	std::memcpy(ep.src_mac, ifr.ifr_hwaddr.sa_data, 6);
	close(s);

	if (inet_pton(c.v6 ? AF_INET6 : AF_INET, c.dst.c_str(), ep.dst_ip) != 1)
		usage("bad destination address");

	ifaddrs *ifa = nullptr;
	bool found = false;
	if (getifaddrs(&ifa) < 0)
		die("getifaddrs");
	for (ifaddrs *a = ifa; a && !found; a = a->ifa_next) {
		if (!a->ifa_addr || c.ifname != a->ifa_name)
			continue;
		if (!c.v6 && a->ifa_addr->sa_family == AF_INET) {
			std::memcpy(ep.src_ip, &reinterpret_cast<sockaddr_in *>(a->ifa_addr)->sin_addr, 4);
			found = true;
		} else if (c.v6 && a->ifa_addr->sa_family == AF_INET6) {
			const in6_addr &ad = reinterpret_cast<sockaddr_in6 *>(a->ifa_addr)->sin6_addr;
			if (IN6_IS_ADDR_LINKLOCAL(&ad))
				continue;
			std::memcpy(ep.src_ip, &ad, 16);
			found = true;
		}
	}
	freeifaddrs(ifa);
	if (!c.src.empty()) {
		if (inet_pton(c.v6 ? AF_INET6 : AF_INET, c.src.c_str(), ep.src_ip) != 1)
			usage("bad --src address (it must be of the -d family)");
		found = true;
	}
	if (!found)
		usage("no source address of that family on the interface");
	ep.pkey = c.pkey;
	ep.sport = c.sport;
	ep.ecn = c.ecn;

	if (!c.dst_mac.empty()) {
		if (!parse_mac(c.dst_mac, ep.dst_mac))
			usage("bad --dst-mac");
	} else if (!resolve_mac(c, ep.dst_mac)) {
		usage("cannot resolve the destination MAC (give --dst-mac)");
	}
	return ep;
}

/* A transport mode's packets parse cleanly and carry the mode's opcode. */
int selftest_transport(const Endpoint &ep, const Config &c, const Mode &m, int v6,
		       std::mt19937_64 &rng)
{
	int bad = 0;

	for (unsigned long k = 0; k < 40; k++) {
		Packet p = m.make(ep, c, k, rng);
		sroce_pkt pkt;
		auto err = sroce_parse_ip(p.b.data(), p.b.size(), 0, &pkt);
		const int want = m.opcode >= 0 ? m.opcode : p.b[p.bth()];
		if (err || pkt.opcode != want) {
			std::printf("selftest v%d %s #%lu: got %s opcode 0x%02x, want 0x%02x\n",
				    v6 ? 6 : 4, m.name, k, err ? sroce_wire_err_name(err) : "ok",
				    pkt.opcode, want);
			bad++;
		}
	}
	return bad;
}

uint64_t num(const std::string &s, uint64_t max)
{
	return sroce_tool::parse_num_or(s, max, usage);
}

} // namespace

int main(int argc, char **argv)
{
	Config c;
	auto all = modes();

	for (int i = 1; i < argc; i++) {
		std::string_view a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc)
				usage("missing value");
			return argv[++i];
		};
		if (a == "--selftest") {
			/* build every mode offline and check it against the validator */
			Endpoint ep;
			int bad = 0;
			for (int v6 = 0; v6 < 2; v6++) {
				c.v6 = v6;
				ep.src_ip[0] = ep.dst_ip[0] = 10;
				std::mt19937_64 rng(1);
				for (const auto &m : all) {
					if (m.opcode != -1) {
						bad += selftest_transport(ep, c, m, v6, rng);
						continue;
					}
					std::string exp = m.expect;
					if (exp == "none" || exp == "any" || (v6 && exp == "rx_drop_ip_options") ||
					    (!v6 && exp == "rx_drop_ip_proto"))
						continue;
					for (unsigned long k = 0; k < 40; k++) {
						Packet p = m.make(ep, c, k, rng);
						sroce_pkt pkt;
						auto err = sroce_parse_ip(p.b.data(), p.b.size(), 0, &pkt);
						std::string got = err ? std::string("rx_drop_") + sroce_wire_err_name(err)
							: pkt.opcode == SROCE_OP_CNP ? "rx_cnp" : "rx_no_qp";
						if (got != exp) {
							std::printf("selftest v%d %s #%lu: got %s\n", v6 ? 6 : 4,
								    m.name, k, got.c_str());
							bad++;
						}
					}
				}
			}
			std::printf("selftest: %s\n", bad ? "FAIL" : "PASS");
			return bad ? 1 : 0;
		} else if (a == "--list") {
			for (const auto &m : all)
				std::printf("%-20s %-28s %s\n", m.name, m.expect, m.what);
			return 0;
		} else if (a == "-i") {
			c.ifname = val();
		} else if (a == "-d") {
			c.dst = val();
		} else if (a == "-6") {
			c.v6 = true;
		} else if (a == "--dst-mac") {
			c.dst_mac = val();
		} else if (a == "-m") {
			std::string s = val();
			size_t pos = 0;
			while (pos <= s.size()) {
				size_t e = s.find(',', pos);
				if (e == std::string::npos)
					e = s.size();
				if (e > pos)
					c.modes.push_back(s.substr(pos, e - pos));
				pos = e + 1;
			}
		} else if (a == "-n") {
			c.count = std::strtoul(val().c_str(), nullptr, 0);
		} else if (a == "--qpn") {
			c.qpn = static_cast<uint32_t>(std::strtoul(val().c_str(), nullptr, 0));
		} else if (a == "--seed") {
			c.seed = std::strtoull(val().c_str(), nullptr, 0);
		} else if (a == "--src") {
			c.src = val();
		} else if (a == "--psn") {
			c.psn = static_cast<uint32_t>(num(val(), SROCE_PSN_MASK));
		} else if (a == "--rkey") {
			c.rkey = static_cast<uint32_t>(num(val(), UINT32_MAX));
		} else if (a == "--va") {
			c.va = num(val(), UINT64_MAX);
		} else if (a == "--len") {
			c.len = static_cast<uint32_t>(num(val(), UINT32_MAX));
		} else if (a == "--payload-len") {
			c.payload_len = static_cast<long>(num(val(), 8192));
		} else if (a == "--qkey") {
			c.qkey = static_cast<uint32_t>(num(val(), UINT32_MAX));
		} else if (a == "--syndrome") {
			c.syndrome = static_cast<int>(num(val(), 0xff));
		} else if (a == "--pkey") {
			c.pkey = static_cast<uint16_t>(num(val(), 0xffff));
		} else if (a == "--sport") {
			c.sport = static_cast<int>(num(val(), 0xffff));
		} else if (a == "--ecn") {
			c.ecn = static_cast<uint8_t>(num(val(), 3));
		} else if (a == "--interval-us") {
			c.interval_us = static_cast<unsigned int>(std::strtoul(val().c_str(), nullptr, 0));
		} else {
			usage("unknown argument");
		}
	}
	if (c.ifname.empty() || c.dst.empty() || c.modes.empty())
		usage("-i, -d and -m are required");
	if (c.count > 10000000)
		usage("-n too large");

	std::vector<const Mode *> sel;
	for (const auto &name : c.modes) {
		const Mode *found = nullptr;
		for (const auto &m : all)
			if (name == m.name)
				found = &m;
		if (!found)
			usage(("unknown mode " + name).c_str());
		if (c.v6 && name == "ip_options")
			usage("ip_options is IPv4 only");
		if (!c.v6 && name == "ip6_exthdr")
			usage("ip6_exthdr is IPv6 only");
		sel.push_back(found);
	}

	Endpoint ep = setup(c);
	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0)
		die("AF_PACKET socket");
	sockaddr_ll sll = {};
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = ep.ifindex;
	sll.sll_halen = 6;
	std::memcpy(sll.sll_addr, ep.dst_mac, 6);

	std::mt19937_64 rng(c.seed);
	for (const Mode *m : sel) {
		unsigned long sent = 0;
		const unsigned long count = m->fixed_count ? m->fixed_count(c) : c.count;
		for (unsigned long i = 0; i < count; i++) {
			Packet p = m->make(ep, c, i, rng);
			Bytes frame(14);
			std::memcpy(&frame[0], ep.dst_mac, 6);
			std::memcpy(&frame[6], ep.src_mac, 6);
			sroce_put_be16(&frame[12], c.v6 ? ETHERTYPE_IPV6 : ETHERTYPE_IP);
			frame.insert(frame.end(), p.b.begin(), p.b.end());
			if (frame.size() < 60)
				frame.resize(60, 0);	/* Ethernet minimum; the IP length says what counts */
			for (;;) {
				ssize_t r = sendto(fd, frame.data(), frame.size(), 0,
						   reinterpret_cast<sockaddr *>(&sll), sizeof(sll));
				if (r == static_cast<ssize_t>(frame.size()))
					break;
				if (r < 0 && (errno == ENOBUFS || errno == EAGAIN)) {
					usleep(1000);
					continue;
				}
				die("sendto");
			}
			sent++;
			if (c.interval_us)
				usleep(c.interval_us);
		}
		std::printf("mode=%s sent=%lu expect=%s qpn=0x%x psn=0x%x\n", m->name, sent,
			    m->expect, m->name == std::string_view("gsi_flood") ? SROCE_GSI_QPN : c.qpn,
			    c.psn);
		std::fflush(stdout);
	}
	close(fd);
	return 0;
}
