// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-pktgen: sends crafted RoCE v2 frames, well-formed or hostile, to a
 * peer over AF_PACKET. Headers and ICRC come from the wire library
 * (include/sroce). Needs CAP_NET_RAW.
 *
 *   sroce-pktgen -i eth0 -d 10.99.0.1 [-6] [--dst-mac M] -m MODE[,MODE...]
 *                [-n N] [--qpn Q] [--seed S] [--interval-us U]
 *   sroce-pktgen --list
 *
 * For each mode it prints "mode=NAME sent=N expect=COUNTER", COUNTER being
 * the sroce receive counter that the packets should land in on the peer, or
 * "none" for packets the peer's IP/UDP stack drops before sroce sees them.
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
};

struct Endpoint {
	int ifindex = 0;
	uint8_t src_mac[6] = {};
	uint8_t dst_mac[6] = {};
	uint8_t src_ip[16] = {};
	uint8_t dst_ip[16] = {};
};

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
		ip[6] = 17;
		ip[7] = 64;
		std::memcpy(ip + 8, ep.src_ip, 16);
		std::memcpy(ip + 24, ep.dst_ip, 16);
	} else {
		ip[0] = 0x45;
		sroce_put_be16(ip + 4, static_cast<uint16_t>(psn));	/* id */
		sroce_put_be16(ip + 6, 0x4000);				/* DF */
		ip[8] = 64;
		ip[9] = 17;
		std::memcpy(ip + 12, ep.src_ip, 4);
		std::memcpy(ip + 16, ep.dst_ip, 4);
	}
	uint8_t *udp = ip + p.iph;
	sroce_put_be16(udp, static_cast<uint16_t>(0xc000 | (psn & 0x3fff)));
	sroce_put_be16(udp + 2, SROCE_UDP_PORT);

	uint8_t bth[SROCE_BTH_LEN] = {};
	sroce_bth_set_opcode(bth, opcode);
	sroce_bth_set_pad(bth, pad);
	sroce_put_be16(bth + 2, SROCE_PKEY_DEFAULT);
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

std::vector<Mode> modes()
{
	std::vector<Mode> m;

	m.push_back({"valid", "rx_no_qp", "well-formed RC/UD packets to --qpn",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return valid_packet(ep, c.v6, c.qpn, i, 64 + 4 * (i % 16));
		     }});
	m.push_back({"cnp", "rx_cnp", "RoCE v2 congestion notification packets",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     return build(ep, c.v6, SROCE_OP_CNP, c.qpn, 0, 0, i);
		     }});
	m.push_back({"icrc", "rx_drop_icrc", "valid packet, one ICRC bit flipped",
		     [](const Endpoint &ep, const Config &c, unsigned long i, std::mt19937_64 &) {
			     Packet p = valid_packet(ep, c.v6, c.qpn, i, 32);
			     p.b[p.b.size() - 1 - i % 4] ^= static_cast<uint8_t>(1u << (i % 8));
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
		     "RD, XRC, FLUSH, ATOMIC WRITE opcodes",
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
	if (!found)
		usage("no source address of that family on the interface");

	if (!c.dst_mac.empty()) {
		if (!parse_mac(c.dst_mac, ep.dst_mac))
			usage("bad --dst-mac");
	} else if (!resolve_mac(c, ep.dst_mac)) {
		usage("cannot resolve the destination MAC (give --dst-mac)");
	}
	return ep;
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
		for (unsigned long i = 0; i < c.count; i++) {
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
		std::printf("mode=%s sent=%lu expect=%s\n", m->name, sent, m->expect);
		std::fflush(stdout);
	}
	close(fd);
	return 0;
}
