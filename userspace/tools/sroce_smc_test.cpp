// SPDX-License-Identifier: GPL-2.0
/*
 * SMC-R (the kernel's net/smc: TCP sockets whose data moves over RDMA)
 * between two hosts, data checked.
 *
 *   sroce-smc-test ueid EID               add a user EID (SMC-Rv2 needs one)
 *   sroce-smc-test server ADDR PORT       serve one connection
 *   sroce-smc-test client ADDR PORT BYTES connect to ADDR
 *
 * SMC-R version 2 runs over routable RoCE v2 GIDs and takes the connection
 * only where both hosts have a user EID in common (net/smc's generic
 * netlink family, what smc-tools' "smcr ueid add" sends); otherwise it
 * falls back to TCP, which the caller must rule out (the RDMA devices'
 * counters). The client writes BYTES of a pattern in pieces of varying
 * size; the server checks every byte and writes it back; the client checks
 * what comes back. Prints "smc ok N bytes each way" and exits 0; on any
 * failure prints what and exits 1.
 */
#include <arpa/inet.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/smc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tool_util.h"

#ifndef AF_SMC
#define AF_SMC 43
#endif
#define SMCPROTO_SMC 0	/* SMC over IPv4 */

namespace {

using sroce_tool::errno_text;

[[noreturn]] void fail(const std::string &what)
{
	std::fprintf(stderr, "smc FAIL: %s\n", what.c_str());
	std::exit(1);
}

uint8_t pat(uint64_t pos)
{
	uint64_t x = pos * 0x9e3779b97f4a7c15ull;
	return static_cast<uint8_t>((x >> 56) ^ (pos >> 12));
}

/* ---------------------------------------------------------- generic netlink */

struct Nl {
	int fd;
	uint32_t seq = 1;
};

void nl_attr(std::vector<char> &m, uint16_t type, const void *data, size_t len)
{
	nlattr a{static_cast<uint16_t>(NLA_HDRLEN + len), type};
	const size_t at = m.size();
	m.resize(at + NLA_ALIGN(NLA_HDRLEN + len), 0);
	std::memcpy(m.data() + at, &a, sizeof(a));
	std::memcpy(m.data() + at + NLA_HDRLEN, data, len);
}

/*
 * Sends one request and reads until its acknowledgement; buf holds the
 * answer's message if one came before it. The errno of the answer, or 0.
 */
int nl_request(Nl &nl, uint16_t family, uint8_t cmd, const std::vector<char> &attrs,
	       std::vector<char> &buf)
{
	std::vector<char> m(NLMSG_HDRLEN + GENL_HDRLEN);
	const uint32_t seq = nl.seq++;
	auto *g = reinterpret_cast<genlmsghdr *>(m.data() + NLMSG_HDRLEN);
	g->cmd = cmd;
	g->version = 1;
	m.insert(m.end(), attrs.begin(), attrs.end());
	auto *h = reinterpret_cast<nlmsghdr *>(m.data());
	h->nlmsg_len = static_cast<uint32_t>(m.size());
	h->nlmsg_type = family;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = seq;
	if (send(nl.fd, m.data(), m.size(), 0) != static_cast<ssize_t>(m.size()))
		fail("netlink send: " + errno_text(errno));
	buf.clear();
	std::vector<char> in(65536);
	for (;;) {
		const ssize_t n = recv(nl.fd, in.data(), in.size(), 0);
		if (n < 0)
			fail("netlink recv: " + errno_text(errno));
		int left = static_cast<int>(n);
		for (auto *r = reinterpret_cast<nlmsghdr *>(in.data()); NLMSG_OK(r, left);
		     r = NLMSG_NEXT(r, left)) {
			if (r->nlmsg_seq != seq)
				continue;
			if (r->nlmsg_type == NLMSG_ERROR)
				return -reinterpret_cast<const nlmsgerr *>(NLMSG_DATA(r))->error;
			buf.assign(reinterpret_cast<char *>(r),
				   reinterpret_cast<char *>(r) + r->nlmsg_len);
		}
	}
}

void add_ueid(const char *eid)
{
	if (std::strlen(eid) > SMC_MAX_EID_LEN)
		fail("EID longer than 32 characters");
	Nl nl{socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC)};
	if (nl.fd < 0)
		fail("netlink socket: " + errno_text(errno));

	/* the family's number, by name */
	std::vector<char> attrs, buf;
	nl_attr(attrs, CTRL_ATTR_FAMILY_NAME, SMC_GENL_FAMILY_NAME,
		sizeof(SMC_GENL_FAMILY_NAME));
	int err = nl_request(nl, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, attrs, buf);
	if (err)
		fail("no " SMC_GENL_FAMILY_NAME " family (is smc loaded?): " + errno_text(err));
	uint16_t family = 0;
	size_t off = NLMSG_HDRLEN + GENL_HDRLEN;
	while (off + NLA_HDRLEN <= buf.size()) {
		nlattr a;
		std::memcpy(&a, buf.data() + off, sizeof(a));
		if (a.nla_len < NLA_HDRLEN)
			break;
		if (a.nla_type == CTRL_ATTR_FAMILY_ID)
			std::memcpy(&family, buf.data() + off + NLA_HDRLEN, sizeof(family));
		off += NLA_ALIGN(a.nla_len);
	}
	if (!family)
		fail("no family id in the answer");
	/* 32 characters padded with blanks, and a NUL */
	char entry[SMC_MAX_EID_LEN + 1];
	std::memset(entry, ' ', SMC_MAX_EID_LEN);
	std::memcpy(entry, eid, std::strlen(eid));
	entry[SMC_MAX_EID_LEN] = '\0';
	attrs.clear();
	nl_attr(attrs, SMC_NLA_EID_TABLE_ENTRY, entry, sizeof(entry));
	err = nl_request(nl, family, SMC_NETLINK_ADD_UEID, attrs, buf);
	if (err && err != EEXIST)
		fail("adding the user EID: " + errno_text(err));
	close(nl.fd);
	std::printf("smc ueid %s\n", eid);
}

/* ---------------------------------------------------------- the data */

sockaddr_in inet_addr_or_fail(const char *text, uint64_t port)
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_port = htons(static_cast<uint16_t>(port));
	if (inet_pton(AF_INET, text, &a.sin_addr) != 1)
		fail(std::string("bad address ") + text);
	return a;
}

int smc_socket()
{
	const int fd = socket(AF_SMC, SOCK_STREAM, SMCPROTO_SMC);
	if (fd < 0)
		fail("socket(AF_SMC): " + errno_text(errno) + " (is smc loaded?)");
	const timeval tmo{60, 0};
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)))
		fail("SO_RCVTIMEO: " + errno_text(errno));
	return fd;
}

void write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		const ssize_t n = write(fd, p, len);
		if (n <= 0)
			fail("write: " + (n < 0 ? errno_text(errno) : std::string("0")));
		p += n;
		len -= n;
	}
}

/* Reads exactly len bytes at stream position pos and checks them. */
void read_check(int fd, std::vector<uint8_t> &buf, uint64_t pos, size_t len, const char *who)
{
	size_t got = 0;
	while (got < len) {
		const ssize_t n = read(fd, buf.data() + got, len - got);
		if (n < 0)
			fail(std::string(who) + " read: " + errno_text(errno) +
			     (errno == EAGAIN ? " (nothing for 60 s)" : ""));
		if (n == 0)
			fail(std::string(who) + ": the stream ended at " + std::to_string(pos + got));
		got += n;
	}
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pat(pos + i))
			fail(std::string(who) + ": byte " + std::to_string(pos + i) + " differs");
}

void server(const char *addr, uint64_t port)
{
	const int ls = smc_socket();
	const int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	const sockaddr_in me = inet_addr_or_fail(addr, port);
	if (bind(ls, reinterpret_cast<const sockaddr *>(&me), sizeof(me)) || listen(ls, 1))
		fail("bind/listen: " + errno_text(errno));
	const int fd = accept(ls, nullptr, nullptr);
	if (fd < 0)
		fail("accept: " + errno_text(errno));
	std::vector<uint8_t> buf(1 << 20);
	uint64_t pos = 0;
	for (;;) {
		const ssize_t n = read(fd, buf.data(), buf.size());
		if (n < 0)
			fail("server read: " + errno_text(errno));
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pat(pos + i))
				fail("server: byte " + std::to_string(pos + i) + " differs");
		write_all(fd, buf.data(), n);
		pos += n;
	}
	close(fd);
	close(ls);
	std::printf("smc ok %llu bytes each way\n", static_cast<unsigned long long>(pos));
}

void client(const char *addr, uint64_t port, uint64_t bytes)
{
	const int fd = smc_socket();
	const sockaddr_in peer = inet_addr_or_fail(addr, port);
	if (connect(fd, reinterpret_cast<const sockaddr *>(&peer), sizeof(peer)))
		fail("connect: " + errno_text(errno));
	static const size_t kPieces[] = {1, 7, 4096, 65536, 100000, 333, 262144, 1000};
	std::vector<uint8_t> out(262144), in(262144);
	uint64_t sent = 0, checked = 0;
	for (size_t k = 0; sent < bytes; k++) {
		const size_t len = std::min<uint64_t>(kPieces[k % std::size(kPieces)], bytes - sent);
		for (size_t i = 0; i < len; i++)
			out[i] = pat(sent + i);
		write_all(fd, out.data(), len);
		sent += len;
		/* the echo of this piece (the server answers as it reads) */
		read_check(fd, in, checked, len, "client");
		checked += len;
	}
	if (shutdown(fd, SHUT_WR))
		fail("shutdown: " + errno_text(errno));
	uint8_t extra;
	if (read(fd, &extra, 1) != 0)
		fail("more data after the echo");
	close(fd);
	std::printf("smc ok %llu bytes each way\n", static_cast<unsigned long long>(sent));
}

void usage(const char *why)
{
	std::fprintf(stderr, "%s\nusage: sroce-smc-test ueid EID | server ADDR PORT | "
		     "client ADDR PORT BYTES\n", why);
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	const std::string role = argc > 1 ? argv[1] : "";
	if (role == "ueid" && argc == 3)
		add_ueid(argv[2]);
	else if (role == "server" && argc == 4)
		server(argv[2], sroce_tool::parse_num_or(argv[3], 65535, usage));
	else if (role == "client" && argc == 5)
		client(argv[2], sroce_tool::parse_num_or(argv[3], 65535, usage),
		       sroce_tool::parse_num_or(argv[4], 1ull << 40, usage));
	else
		usage("bad arguments");
	return 0;
}
