// SPDX-License-Identifier: GPL-2.0
/*
 * RDS over RDMA (the kernel's rds_rdma) between two hosts, data checked.
 *
 *   sroce-rds-test server ADDR PEER PORT ROUNDS [READY]
 *   sroce-rds-test client ADDR PEER PORT ROUNDS
 *
 * Both ends bind an AF_RDS socket to ADDR:PORT (an IPv4 address of the RDMA
 * device's netdev) and talk to PEER:PORT. The server creates the file READY
 * once bound: RDS drops (and acknowledges) a message for a port nobody has
 * bound, so a client that starts earlier can lose its first message and both
 * ends then wait for ever. Each round:
 *
 *  1. messages: the client sends messages of sizes 1 byte .. 128 KiB, each a
 *     pattern of its own; the server checks every byte and echoes it; the
 *     client checks the echo.
 *  2. RDMA: the server fills a 1 MiB region with a pattern, registers it
 *     with the message that carries its cookie (RDS_CMSG_RDMA_MAP: rds_rdma
 *     maps it with a fast-registration work request, zero-based). The client RDMA-READs an unaligned
 *     range of it into two local pieces and checks them, then RDMA-WRITEs
 *     another range with a pattern of its own; both operations travel with a
 *     message and report their status (RDS_RDMA_NOTIFY_ME). RDS delivers a
 *     message only after the RDMA it carries, so on the message of the write
 *     the server checks the whole region (the range written, the rest
 *     untouched), frees the MR (with invalidation) and answers.
 *
 * Prints "rds ok ROUNDS rounds, N messages, R bytes read, W bytes written"
 * and exits 0; on any failure prints what, the step it was at and RDS's
 * counters that are not zero (RDS_INFO_COUNTERS), and exits 1.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/rds.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tool_util.h"

#ifndef SOL_RDS
#define SOL_RDS 276
#endif

namespace {

using sroce_tool::errno_text;

constexpr uint32_t kMagic = 0x52445354; /* "RDST" */
constexpr size_t kRegion = 1u << 20;
constexpr size_t kMaxMsg = 128u << 10;
constexpr size_t kSizes[] = {1, 7, 100, 1024, 4095, 4096, 8192, 9000, 65536, kMaxMsg};

enum Kind : uint32_t { kCookie = 1, kReading, kWrote, kDone };

struct Ctl {
	uint32_t magic;
	uint32_t kind;
	uint32_t round;
	uint32_t pad;
	uint64_t cookie;
	uint64_t off;
	uint64_t len;
};

/* What the run was doing (for a failure's message) and its RDS socket. */
std::string g_step = "setting up";
int g_fd = -1;

/*
 * RDS's own counters that are not zero (RDS_INFO_COUNTERS: the socket
 * layer's and the IB transport's), on one line: what a stalled run did.
 */
void print_rds_counters()
{
	if (g_fd < 0)
		return;
	socklen_t len = 0;
	std::vector<uint8_t> buf;
	for (int tries = 0; tries < 4; tries++) {
		buf.resize(len);
		const int each = getsockopt(g_fd, SOL_RDS, RDS_INFO_COUNTERS, buf.data(), &len);
		if (each < 0 && errno == ENOSPC)
			continue;
		if (each < static_cast<int>(sizeof(rds_info_counter)))
			return;
		std::string line = "rds counters:";
		for (size_t off = 0; off + each <= len; off += each) {
			rds_info_counter c;
			std::memcpy(&c, buf.data() + off, sizeof(c));
			if (c.value)
				line += " " + std::string(reinterpret_cast<const char *>(c.name),
							  strnlen(reinterpret_cast<const char *>(c.name),
								  sizeof(c.name))) +
					"=" + std::to_string(c.value);
		}
		std::fprintf(stderr, "%s\n", line.c_str());
		return;
	}
}

[[noreturn]] void fail(const std::string &what)
{
	std::fprintf(stderr, "rds FAIL: %s (%s)\n", what.c_str(), g_step.c_str());
	print_rds_counters();
	std::exit(1);
}

void step(uint32_t round, const std::string &what)
{
	g_step = "round " + std::to_string(round) + ", " + what;
}

uint8_t pat(uint64_t seed, uint64_t pos)
{
	uint64_t x = (seed << 40) ^ pos;
	x *= 0x9e3779b97f4a7c15ull;
	return static_cast<uint8_t>(x >> 56);
}

void fill(uint8_t *p, size_t len, uint64_t seed, uint64_t pos)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat(seed, pos + i);
}

/* The first byte that differs from the pattern, or -1. */
long check(const uint8_t *p, size_t len, uint64_t seed, uint64_t pos)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pat(seed, pos + i))
			return static_cast<long>(i);
	return -1;
}

/* Deterministic pseudo-random numbers, the same on both ends. */
struct Rng {
	uint64_t s;
	uint64_t next(uint64_t bound)
	{
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		return (s >> 33) % bound;
	}
};

struct Sock {
	int fd = -1;
	sockaddr_in peer{};
	uint64_t dest_cookie = 0; /* of the last RDS_CMSG_RDMA_DEST */
	uint64_t notified_token = ~0ull;
	int notified_status = -1;
	bool notified = false;
};

/* Sends buf to the peer, with one SOL_RDS control message if clen. */
void send_msg(Sock &s, const void *buf, size_t len, int ctype = 0, const void *cdata = nullptr,
	      size_t clen = 0)
{
	iovec iov{const_cast<void *>(buf), len};
	msghdr mh{};
	alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(rds_rdma_args))];
	mh.msg_name = &s.peer;
	mh.msg_namelen = sizeof(s.peer);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (clen) {
		std::memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(clen);
		cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_RDS;
		c->cmsg_type = ctype;
		c->cmsg_len = CMSG_LEN(clen);
		std::memcpy(CMSG_DATA(c), cdata, clen);
	}
	for (;;) {
		const ssize_t n = sendmsg(s.fd, &mh, 0);
		if (n == static_cast<ssize_t>(len))
			return;
		/* RDS answers a full send queue or a connection still coming up
		 * with ENOBUFS / EAGAIN; anything else is a failure. */
		if (n < 0 && (errno == ENOBUFS || errno == EAGAIN)) {
			usleep(1000);
			continue;
		}
		fail("sendmsg of " + std::to_string(len) + " bytes: " +
		     (n < 0 ? errno_text(errno) : "short, " + std::to_string(n)));
	}
}

/*
 * The next message into buf (its length), or -1 for an RDMA status
 * notification (recorded in s).
 */
ssize_t recv_msg(Sock &s, void *buf, size_t cap)
{
	iovec iov{buf, cap};
	msghdr mh{};
	sockaddr_in from{};
	alignas(cmsghdr) char cbuf[256];
	mh.msg_name = &from;
	mh.msg_namelen = sizeof(from);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	const ssize_t n = recvmsg(s.fd, &mh, 0);
	if (n < 0)
		fail("recvmsg: " + errno_text(errno) +
		     (errno == EAGAIN ? " (nothing for 60 s)" : ""));
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		fail("recvmsg: truncated, flags " + std::to_string(mh.msg_flags));
	s.dest_cookie = 0;
	for (cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_RDS && c->cmsg_type == RDS_CMSG_RDMA_DEST)
			std::memcpy(&s.dest_cookie, CMSG_DATA(c), sizeof(s.dest_cookie));
		if (c->cmsg_level != SOL_RDS || c->cmsg_type != RDS_CMSG_RDMA_STATUS)
			continue;
		rds_rdma_notify nt;
		std::memcpy(&nt, CMSG_DATA(c), sizeof(nt));
		if (s.notified)
			fail("a second RDMA status before the first was taken");
		s.notified = true;
		s.notified_token = nt.user_token;
		s.notified_status = nt.status;
		return -1;
	}
	if (s.peer.sin_addr.s_addr == 0)
		s.peer = from;
	else if (from.sin_addr.s_addr != s.peer.sin_addr.s_addr || from.sin_port != s.peer.sin_port)
		fail("a message from a stranger");
	return n;
}

Ctl recv_ctl(Sock &s, Kind want, uint32_t round)
{
	Ctl c{};
	ssize_t n;
	while ((n = recv_msg(s, &c, sizeof(c))) < 0) {
	}
	if (n != sizeof(c) || c.magic != kMagic || c.kind != want || c.round != round)
		fail("expected control message " + std::to_string(want) + " of round " +
		     std::to_string(round) + ", got " + std::to_string(n) + " bytes, kind " +
		     std::to_string(c.kind) + " round " + std::to_string(c.round));
	return c;
}

void await_status(Sock &s, uint64_t token, const char *what)
{
	char buf[64];
	while (!s.notified)
		if (recv_msg(s, buf, sizeof(buf)) >= 0)
			fail(std::string("a message while waiting for the status of the ") + what);
	s.notified = false;
	if (s.notified_token != token || s.notified_status != RDS_RDMA_SUCCESS)
		fail(std::string("RDMA ") + what + ": token " + std::to_string(s.notified_token) +
		     " (want " + std::to_string(token) + "), status " +
		     std::to_string(s.notified_status));
}

void *map_region(size_t len)
{
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		fail("mmap: " + errno_text(errno));
	return p;
}

void server_round(Sock &s, uint32_t round, uint8_t *region, std::vector<uint8_t> &buf,
		  uint64_t *msgs)
{
	for (size_t i = 0; i < std::size(kSizes); i++) {
		step(round, "waiting for message " + std::to_string(i) + " (" +
			    std::to_string(kSizes[i]) + " bytes)");
		const ssize_t n = recv_msg(s, buf.data(), buf.size());
		if (n != static_cast<ssize_t>(kSizes[i]))
			fail("round " + std::to_string(round) + ": message " + std::to_string(i) +
			     " of " + std::to_string(n) + " bytes, want " + std::to_string(kSizes[i]));
		const long bad = check(buf.data(), n, round * 64 + i, 0);
		if (bad >= 0)
			fail("message of " + std::to_string(n) + " bytes differs at " + std::to_string(bad));
		send_msg(s, buf.data(), n);
		++*msgs;
	}

	const uint64_t seed = 2 * round + 1000;
	fill(region, kRegion, seed, 0);
	/* With fast registration rds_rdma maps an MR only for a connection:
	 * with the message that carries its cookie (RDS_CMSG_RDMA_MAP; the
	 * RDS_GET_MR socket option is EOPNOTSUPP there). */
	uint64_t cookie = 0;
	rds_get_mr_args mr{};
	mr.vec.addr = reinterpret_cast<uintptr_t>(region);
	mr.vec.bytes = kRegion;
	mr.cookie_addr = reinterpret_cast<uintptr_t>(&cookie);
	Ctl c{kMagic, kCookie, round, 0, 0, 0, kRegion};
	step(round, "sending the MR's cookie");
	send_msg(s, &c, sizeof(c), RDS_CMSG_RDMA_MAP, &mr, sizeof(mr));
	if (!cookie)
		fail("RDS_CMSG_RDMA_MAP gave no cookie");

	step(round, "waiting for the READ's message");
	recv_ctl(s, kReading, round);
	step(round, "waiting for the WRITE's message");
	const Ctl w = recv_ctl(s, kWrote, round);
	if (w.off > kRegion || w.len > kRegion - w.off)
		fail("write range out of the region");
	long bad = check(region, w.off, seed, 0);
	if (bad < 0) {
		bad = check(region + w.off, w.len, seed + 1, w.off);
		if (bad >= 0)
			bad += w.off;
	}
	if (bad < 0) {
		const long b = check(region + w.off + w.len, kRegion - w.off - w.len, seed,
				     w.off + w.len);
		if (b >= 0)
			bad = b + w.off + w.len;
	}
	if (bad >= 0)
		fail("round " + std::to_string(round) + ": region differs at " + std::to_string(bad) +
		     " (written " + std::to_string(w.off) + "+" + std::to_string(w.len) + ")");
	rds_free_mr_args fr{cookie, RDS_RDMA_INVALIDATE};
	if (setsockopt(s.fd, SOL_RDS, RDS_FREE_MR, &fr, sizeof(fr)))
		fail("RDS_FREE_MR: " + errno_text(errno));
	Ctl d{kMagic, kDone, round, 0, 0, 0, 0};
	send_msg(s, &d, sizeof(d));
}

/* The non-empty ones of two local pieces in v: how many. */
uint64_t pieces(rds_iovec *v, uint8_t *a, uint64_t alen, uint8_t *b, uint64_t blen)
{
	uint64_t n = 0;
	if (alen)
		v[n++] = {reinterpret_cast<uintptr_t>(a), alen};
	if (blen)
		v[n++] = {reinterpret_cast<uintptr_t>(b), blen};
	return n;
}

/*
 * One RDMA operation on the peer's range [off, off + len) of the MR of
 * cookie, to or from local pieces a (alen bytes) and b (the rest), carried
 * by control message kind; returns once its status (RDS_RDMA_SUCCESS) came.
 */
void rdma_op(Sock &s, uint64_t cookie, Kind kind, uint32_t round, uint64_t off, uint64_t len,
	     uint8_t *a, uint64_t alen, uint8_t *b, uint64_t flags, uint64_t token)
{
	rds_iovec v[2];
	rds_rdma_args ra{};
	ra.cookie = cookie;
	ra.remote_vec = {off, len};
	ra.local_vec_addr = reinterpret_cast<uintptr_t>(v);
	ra.nr_local = pieces(v, a, alen, b, len - alen);
	ra.flags = flags;
	ra.user_token = token;
	Ctl c{kMagic, kind, round, 0, 0, off, len};
	send_msg(s, &c, sizeof(c), RDS_CMSG_RDMA_ARGS, &ra, sizeof(ra));
	await_status(s, token, kind == kReading ? "READ" : "WRITE");
}

/* The client's local buffer: two pieces of up to kRegion and some slack. */
constexpr size_t kLocal = 2 * kRegion + 4096;

void client_round(Sock &s, uint32_t round, uint8_t *local, std::vector<uint8_t> &buf,
		  uint64_t *msgs, uint64_t *rd, uint64_t *wr)
{
	for (size_t i = 0; i < std::size(kSizes); i++) {
		fill(buf.data(), kSizes[i], round * 64 + i, 0);
		step(round, "message " + std::to_string(i) + " (" + std::to_string(kSizes[i]) +
			    " bytes) and its echo");
		send_msg(s, buf.data(), kSizes[i]);
		std::vector<uint8_t> echo(kMaxMsg);
		const ssize_t n = recv_msg(s, echo.data(), echo.size());
		if (n != static_cast<ssize_t>(kSizes[i]) ||
		    std::memcmp(echo.data(), buf.data(), n))
			fail("round " + std::to_string(round) + ": echo of message " +
			     std::to_string(i) + " differs (" + std::to_string(n) + " bytes)");
		++*msgs;
	}

	step(round, "waiting for the MR's cookie");
	recv_ctl(s, kCookie, round);
	const uint64_t cookie = s.dest_cookie;
	if (!cookie)
		fail("the cookie's message came without RDS_CMSG_RDMA_DEST");
	const uint64_t seed = 2 * round + 1000;
	Rng rng{round * 7919ull + 1};

	/* READ an unaligned range into two local pieces, split unaligned. */
	const uint64_t rlen = 1 + rng.next(kRegion);
	const uint64_t roff = rng.next(kRegion - rlen + 1);
	const uint64_t split = rng.next(rlen + 1);
	std::memset(local, 0xa5, kLocal);
	step(round, "RDMA READ of " + std::to_string(rlen) + " bytes");
	rdma_op(s, cookie, kReading, round, roff, rlen, local + 3, split, local + kRegion + 5,
		RDS_RDMA_NOTIFY_ME, 2ull * round);
	long bad = check(local + 3, split, seed, roff);
	if (bad < 0 && (bad = check(local + kRegion + 5, rlen - split, seed, roff + split)) >= 0)
		bad += split;
	if (bad >= 0)
		fail("round " + std::to_string(round) + ": READ of " + std::to_string(roff) + "+" +
		     std::to_string(rlen) + " differs at " + std::to_string(bad));
	if (local[2] != 0xa5 || local[3 + split] != 0xa5 || local[kRegion + 4] != 0xa5 ||
	    local[kRegion + 5 + rlen - split] != 0xa5)
		fail("READ wrote outside its local pieces");
	*rd += rlen;

	/* WRITE another range from two local pieces. */
	const uint64_t wlen = 1 + rng.next(kRegion);
	const uint64_t woff = rng.next(kRegion - wlen + 1);
	const uint64_t wsplit = rng.next(wlen + 1);
	fill(local + 1, wsplit, seed + 1, woff);
	fill(local + kRegion + 9, wlen - wsplit, seed + 1, woff + wsplit);
	step(round, "RDMA WRITE of " + std::to_string(wlen) + " bytes, then the answer");
	rdma_op(s, cookie, kWrote, round, woff, wlen, local + 1, wsplit, local + kRegion + 9,
		RDS_RDMA_READWRITE | RDS_RDMA_NOTIFY_ME, 2ull * round + 1);
	recv_ctl(s, kDone, round);
	*wr += wlen;
}

void usage(const char *why)
{
	std::fprintf(stderr, "%s\nusage: sroce-rds-test server|client ADDR PEER PORT ROUNDS [READY]\n", why);
	std::exit(2);
}

/* IPv4 address text and port as a sockaddr_in, or usage(why). */
sockaddr_in inet_addr_or(const char *text, uint64_t port, const char *why)
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_port = htons(static_cast<uint16_t>(port));
	if (inet_pton(AF_INET, text, &a.sin_addr) != 1)
		usage(why);
	return a;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 6 && argc != 7)
		usage("wrong number of arguments");
	const std::string role = argv[1];
	if (role != "server" && role != "client")
		usage("role must be server or client");
	if (argc == 7 && role != "server")
		usage("READY is the server's");
	const uint64_t port = sroce_tool::parse_num_or(argv[4], 65535, usage);
	const uint64_t rounds = sroce_tool::parse_num_or(argv[5], 1000000, usage);

	Sock s;
	s.fd = socket(AF_RDS, SOCK_SEQPACKET, 0);
	if (s.fd < 0)
		fail("socket(AF_RDS): " + errno_text(errno) + " (is rds_rdma loaded?)");
	g_fd = s.fd;
	const int sz = 4 << 20;
	setsockopt(s.fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(s.fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	const timeval tmo{60, 0};
	if (setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)))
		fail("SO_RCVTIMEO: " + errno_text(errno));
	const sockaddr_in me = inet_addr_or(argv[2], port, "bad ADDR");
	if (bind(s.fd, reinterpret_cast<const sockaddr *>(&me), sizeof(me)))
		fail("bind: " + errno_text(errno));
	if (argc == 7) {
		const int rfd = open(argv[6], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (rfd < 0)
			fail(std::string("creating ") + argv[6] + ": " + errno_text(errno));
		close(rfd);
	}
	s.peer = inet_addr_or(argv[3], port, "bad PEER");

	std::vector<uint8_t> buf(kMaxMsg);
	uint64_t msgs = 0, rd = 0, wr = 0;
	if (role == "server") {
		auto *region = static_cast<uint8_t *>(map_region(kRegion));
		for (uint32_t i = 0; i < rounds; i++)
			server_round(s, i, region, buf, &msgs);
	} else {
		auto *local = static_cast<uint8_t *>(map_region(kLocal));
		for (uint32_t i = 0; i < rounds; i++)
			client_round(s, i, local, buf, &msgs, &rd, &wr);
	}
	std::printf("rds ok %llu rounds, %llu messages, %llu bytes read, %llu bytes written\n",
		    static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(msgs),
		    static_cast<unsigned long long>(rd), static_cast<unsigned long long>(wr));
	return 0;
}
