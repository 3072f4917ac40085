// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-rdma-test: RDMA semantics through the plain libibverbs API, with
 * every byte and every completion checked. It knows nothing about sroce and
 * runs against any RoCE v2 device (sroce, rdma_rxe, hardware).
 *
 *   sroce-rdma-test -d DEV [options]                  loopback
 *   sroce-rdma-test -d DEV [options] --server         two hosts, responder
 *   sroce-rdma-test -d DEV [options] --client HOST    two hosts, requester
 *   sroce-rdma-test --list [--server|--client]        case names
 *
 * Loopback: one process, one device; every case connects fresh QPs to each
 * other through the device's own RoCE v2 GID.
 *
 * Two hosts: the client connects to the server over TCP (default port
 * 18524), tells it which case to run, and the two exchange QPN, PSN, GID,
 * MTU, buffer address and rkey per case. The client is the requester, the
 * server the responder; both check what they can see and exchange verdicts,
 * so both print the same PASS/FAIL for every case.
 *
 * Loopback cases: RC SEND of 0 B to 1 MiB, with 3 SGEs on both sides, with
 * immediate, inline (up to the QP's max_inline_data), unsignaled among
 * signaled and with sq_sig_all, solicited; RC WRITE, WRITE_WITH_IMM, READ,
 * FETCH_ADD, CMP_SWP, a chain of 100 mixed WRs in one post, READ then a
 * fenced SEND of what was read; UC SEND and WRITE; UD SEND (GRH, src_qp,
 * a reply through ibv_create_ah_from_wc) and with immediate; an SRQ shared
 * by two QPs, the SRQ limit event; errors: wrong rkey, READ out of bounds,
 * WRITE without REMOTE_WRITE, bad lkey, receive buffer too small, RNR retry
 * exceeded and RNR retry recovering, flush of posted receives on ERR;
 * completion channel events. Two-host cases: RC SEND, WRITE, READ,
 * atomics, READ + fenced SEND; UC SEND, WRITE; UD SEND.
 *
 * Every receive area is filled with a sentinel first and compared whole
 * with what it must hold afterwards, so writes out of place are found too.
 * Every other QP starts its PSNs just below the 24-bit wrap.
 *
 * Options:
 *   -d, --device DEV   RDMA device (required)
 *   -i, --ib-port N    port (default 1)
 *   --gid N            GID index (default: the RoCE v2 GID holding the
 *                      link's IPv4 address as ::ffff:a.b.c.d)
 *   --ipv6             use the global IPv6 RoCE v2 GID instead
 *   --case NAME        run only this case (repeatable; client and loopback)
 *   --timeout S        deadline of every wait for completions (default 20)
 *   --port P           TCP port of the two-host exchange (default 18524)
 *   --budget S         once the run has taken S seconds, report the cases
 *                      left as failed ("not run") instead of running them
 *
 * Output: one line per case, "PASS <case> (<seconds> s)" or
 * "FAIL <case> (<seconds> s): <first problem>", each FAIL preceded by
 * "  <case>: <problem>" lines for every problem found, then
 * "RESULT: PASS|FAIL (<n> passed, <m> failed)". Exit status 0 when all cases
 * passed, 1 when one failed, 2 on bad usage or when the device cannot be
 * set up. A case that hangs beyond its watchdog ends the process with a FAIL
 * line and status 3.
 */
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "tool_util.h"

namespace {

using sroce_tool::errno_text;

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * 1024;
constexpr uint8_t SENTINEL = 0xa5;
constexpr uint32_t UD_QKEY = 0x11111111;
constexpr size_t GRH_LEN = 40;
constexpr int ACC_ALL = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr uint16_t DEFAULT_TCP_PORT = 18524;

int g_timeout_ms = 20000;
int g_budget_s = 0;

/* ------------------------------------------------------------ reporting */

std::string strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string strf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

/* A case cannot go on (setup failed, a wait timed out). */
struct CaseFail : std::runtime_error {
	explicit CaseFail(const std::string &why, bool from_peer = false)
		: std::runtime_error(why), from_peer(from_peer) {}
	bool from_peer;
};

[[noreturn]] void fail(const std::string &why)
{
	throw CaseFail(why);
}

/* Problems found by the running case; it fails if there is any. */
std::vector<std::string> g_problems;
/* Notes of the running case (printed, not failures). */
std::vector<std::string> g_notes;

void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void problem(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	g_problems.emplace_back(buf);
}

#define EXPECT(cond, ...)                   \
	do {                                \
		if (!(cond))                \
			problem(__VA_ARGS__); \
	} while (0)

void note(const std::string &s)
{
	g_notes.push_back(s);
}

/* Watchdog: a case that hangs (a wait without deadline in a library, a
 * destroy waiting for an event nobody acknowledges) ends the process. The
 * message is prepared when the case starts: the handler only writes it. */
char g_watchdog_msg[256];
size_t g_watchdog_len;

void watchdog(int)
{
	if (write(STDOUT_FILENO, g_watchdog_msg, g_watchdog_len) < 0)
		_exit(4);
	_exit(3);
}

/* ------------------------------------------------------------ time */

using Clock = std::chrono::steady_clock;

struct Deadline {
	explicit Deadline(int ms = g_timeout_ms)
		: t(Clock::now() + std::chrono::milliseconds(ms)) {}
	bool passed() const { return Clock::now() >= t; }
	int left_ms() const
	{
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			t - Clock::now()).count();
		return left < 0 ? 0 : static_cast<int>(left);
	}
	Clock::time_point t;
};

double seconds_since(Clock::time_point t0)
{
	return std::chrono::duration<double>(Clock::now() - t0).count();
}

const Clock::time_point g_start = Clock::now();

void sleep_ms(int ms)
{
	usleep(static_cast<useconds_t>(ms) * 1000);
}

/* ------------------------------------------------------------ data */

/* Deterministic pseudo-random bytes (splitmix64) for a seed. */
std::vector<uint8_t> pattern(size_t n, uint64_t seed)
{
	std::vector<uint8_t> v(n);
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	for (size_t i = 0; i < n; i += 8) {
		uint64_t z = (x += 0x9e3779b97f4a7c15ull);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		std::memcpy(&v[i], &z, std::min<size_t>(8, n - i));
	}
	return v;
}

const char *wc_opcode_str(int op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

std::string gid_str(const union ibv_gid &g)
{
	char buf[INET6_ADDRSTRLEN];
	inet_ntop(AF_INET6, g.raw, buf, sizeof(buf));
	return buf;
}

bool gid_is_v4mapped(const union ibv_gid &g)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return std::memcmp(g.raw, prefix, sizeof(prefix)) == 0;
}

/* ------------------------------------------------------------ device */

struct Dev {
	struct ibv_context *ctx = nullptr;
	struct ibv_pd *pd = nullptr;
	struct ibv_device_attr attr = {};
	struct ibv_port_attr port_attr = {};
	uint8_t port = 1;
	int gid_index = -1;
	union ibv_gid gid = {};
	std::string name;

	size_t mtu_bytes() const { return 128u << port_attr.active_mtu; }
};

Dev *g_dev;

std::string gid_type(const Dev &d, int index)
{
	std::ifstream f(strf("%s/ports/%u/gid_attrs/types/%d", d.ctx->device->ibdev_path,
			     d.port, index));
	std::string t;
	std::getline(f, t);
	return t;
}

/* The RoCE v2 GID holding the IPv4 address (or a global IPv6 one), or -1. */
int pick_gid(const Dev &d, bool ipv6)
{
	for (int i = 0; i < d.port_attr.gid_tbl_len; i++) {
		union ibv_gid g;
		if (ibv_query_gid(d.ctx, d.port, i, &g))
			continue;
		if (gid_type(d, i) != "RoCE v2")
			continue;
		const bool v4 = gid_is_v4mapped(g);
		const bool link_local = g.raw[0] == 0xfe && (g.raw[1] & 0xc0) == 0x80;
		const bool zero = std::all_of(g.raw, g.raw + 16, [](uint8_t b) { return b == 0; });
		if (zero)
			continue;
		if (ipv6 ? (!v4 && !link_local) : v4)
			return i;
	}
	return -1;
}

/* Acknowledge every pending async event (an unacknowledged event on a QP,
 * SRQ or CQ makes its destruction wait forever). */
void drain_async()
{
	if (!g_dev)
		return;
	struct ibv_async_event ev;
	while (ibv_get_async_event(g_dev->ctx, &ev) == 0) {
		note(strf("async event %s", ibv_event_type_str(ev.event_type)));
		ibv_ack_async_event(&ev);
	}
}

/* Waits for an async event of type want (others are noted and acked). */
bool wait_async(enum ibv_event_type want, struct ibv_async_event *out, int timeout_ms)
{
	const Deadline dl(timeout_ms);
	for (;;) {
		struct ibv_async_event ev;
		if (ibv_get_async_event(g_dev->ctx, &ev) == 0) {
			if (ev.event_type == want) {
				*out = ev;
				return true;
			}
			note(strf("async event %s", ibv_event_type_str(ev.event_type)));
			ibv_ack_async_event(&ev);
			continue;
		}
		if (dl.passed())
			return false;
		struct pollfd pfd = {g_dev->ctx->async_fd, POLLIN, 0};
		poll(&pfd, 1, std::min(dl.left_ms(), 100));
	}
}

/* Acknowledges every pending completion event of a channel. */
void drain_channel(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *ctx;
	while (ibv_get_cq_event(ch, &cq, &ctx) == 0) {
		note("unconsumed completion event");
		ibv_ack_cq_events(cq, 1);
	}
}

/* ------------------------------------------------------------ RAII */

struct CqDel {
	void operator()(struct ibv_cq *cq) const
	{
		if (cq->channel)
			drain_channel(cq->channel);
		drain_async();
		if (ibv_destroy_cq(cq))
			problem("ibv_destroy_cq: %s", errno_text(errno).c_str());
	}
};
struct QpDel {
	void operator()(struct ibv_qp *qp) const
	{
		drain_async();
		if (ibv_destroy_qp(qp))
			problem("ibv_destroy_qp: %s", errno_text(errno).c_str());
	}
};
struct SrqDel {
	void operator()(struct ibv_srq *srq) const
	{
		drain_async();
		if (ibv_destroy_srq(srq))
			problem("ibv_destroy_srq: %s", errno_text(errno).c_str());
	}
};
struct AhDel {
	void operator()(struct ibv_ah *ah) const
	{
		if (ibv_destroy_ah(ah))
			problem("ibv_destroy_ah: %s", errno_text(errno).c_str());
	}
};
struct ChanDel {
	void operator()(struct ibv_comp_channel *ch) const
	{
		drain_channel(ch);
		if (ibv_destroy_comp_channel(ch))
			problem("ibv_destroy_comp_channel: %s", errno_text(errno).c_str());
	}
};
using CqPtr = std::unique_ptr<struct ibv_cq, CqDel>;
using QpPtr = std::unique_ptr<struct ibv_qp, QpDel>;
using SrqPtr = std::unique_ptr<struct ibv_srq, SrqDel>;
using AhPtr = std::unique_ptr<struct ibv_ah, AhDel>;
using ChanPtr = std::unique_ptr<struct ibv_comp_channel, ChanDel>;

ChanPtr make_channel(Dev &d)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(d.ctx);
	if (!ch)
		fail("ibv_create_comp_channel: " + errno_text(errno));
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	return ChanPtr(ch);
}

CqPtr make_cq(Dev &d, int cqe = 512, struct ibv_comp_channel *ch = nullptr,
	      void *cq_ctx = nullptr)
{
	struct ibv_cq *cq = ibv_create_cq(d.ctx, std::min(cqe, d.attr.max_cqe), cq_ctx, ch, 0);
	if (!cq)
		fail("ibv_create_cq: " + errno_text(errno));
	return CqPtr(cq);
}

/*
 * A registered buffer with an image of what it should contain: reset() and
 * put() change both, want() only the image, check() compares the whole
 * buffer with the image (so stray writes anywhere are found).
 */
class Buf {
public:
	Buf(Dev &d, size_t len, const char *name, int access = ACC_ALL)
		: len_(len), name_(name), want_(len)
	{
		map_len_ = (len + 4095) & ~size_t(4095);
		void *p = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			fail(strf("mmap %zu: %s", len, errno_text(errno).c_str()));
		p_ = static_cast<uint8_t *>(p);
		reset(SENTINEL);
		mr_ = ibv_reg_mr(d.pd, p_, len, access);
		if (!mr_) {
			const int e = errno;
			munmap(p_, map_len_);
			fail(strf("ibv_reg_mr %s (%zu bytes, access 0x%x): %s", name, len, access,
				  errno_text(e).c_str()));
		}
	}
	~Buf()
	{
		if (mr_ && ibv_dereg_mr(mr_))
			problem("ibv_dereg_mr %s: %s", name_.c_str(), errno_text(errno).c_str());
		munmap(p_, map_len_);
	}
	Buf(const Buf &) = delete;
	Buf &operator=(const Buf &) = delete;

	uint8_t *p(size_t off = 0) const { return p_ + off; }
	uint64_t addr(size_t off = 0) const { return reinterpret_cast<uintptr_t>(p_ + off); }
	uint32_t lkey() const { return mr_->lkey; }
	uint32_t rkey() const { return mr_->rkey; }
	size_t len() const { return len_; }
	struct ibv_mr *mr() const { return mr_; }

	struct ibv_sge sge(size_t off, size_t n) const
	{
		struct ibv_sge s = {};
		s.addr = addr(off);
		s.length = static_cast<uint32_t>(n);
		s.lkey = lkey();
		return s;
	}
	void reset(uint8_t v)
	{
		std::memset(p_, v, len_);
		std::memset(want_.data(), v, len_);
	}
	void put(size_t off, const uint8_t *src, size_t n)
	{
		std::memcpy(p_ + off, src, n);
		std::memcpy(want_.data() + off, src, n);
	}
	void put(size_t off, const std::vector<uint8_t> &v) { put(off, v.data(), v.size()); }
	void want(size_t off, const uint8_t *src, size_t n)
	{
		std::memcpy(want_.data() + off, src, n);
	}
	void want(size_t off, const std::vector<uint8_t> &v) { want(off, v.data(), v.size()); }
	void put_u64(size_t off, uint64_t v) { put(off, reinterpret_cast<uint8_t *>(&v), 8); }
	void want_u64(size_t off, uint64_t v) { want(off, reinterpret_cast<uint8_t *>(&v), 8); }
	uint64_t u64(size_t off) const
	{
		uint64_t v;
		std::memcpy(&v, p_ + off, 8);
		return v;
	}
	/* Take the current bytes of a range as expected (checked elsewhere). */
	void accept(size_t off, size_t n) { std::memcpy(want_.data() + off, p_ + off, n); }

	bool check(const std::string &what) const
	{
		if (std::memcmp(p_, want_.data(), len_) == 0)
			return true;
		size_t first = len_, last = 0, count = 0;
		for (size_t i = 0; i < len_; i++) {
			if (p_[i] != want_[i]) {
				first = std::min(first, i);
				last = i;
				count++;
			}
		}
		problem("%s: %s: %zu bytes differ in [%zu, %zu], at %zu got 0x%02x want 0x%02x%s",
			what.c_str(), name_.c_str(), count, first, last, first, p_[first],
			want_[first], want_[first] == SENTINEL ? " (should be untouched)" :
				      p_[first] == SENTINEL ? " (not written)" : "");
		return false;
	}

private:
	uint8_t *p_ = nullptr;
	size_t len_, map_len_;
	std::string name_;
	std::vector<uint8_t> want_;
	struct ibv_mr *mr_ = nullptr;
};

/* A piece of a message in a buffer, for scatter/gather lists. */
struct Piece {
	Buf *b;
	size_t off, len;
};

std::vector<struct ibv_sge> sges(const std::vector<Piece> &ps)
{
	std::vector<struct ibv_sge> v;
	for (const Piece &p : ps)
		v.push_back(p.b->sge(p.off, p.len));
	return v;
}

size_t total(const std::vector<Piece> &ps)
{
	size_t n = 0;
	for (const Piece &p : ps)
		n += p.len;
	return n;
}

/* Sender side: put msg into the pieces in order. */
void put_pieces(const std::vector<Piece> &ps, const std::vector<uint8_t> &msg)
{
	size_t o = 0;
	for (const Piece &p : ps) {
		p.b->put(p.off, msg.data() + o, p.len);
		o += p.len;
	}
}

/* Receiver side: the first msg.size() bytes land in the pieces in order. */
void want_pieces(const std::vector<Piece> &ps, const std::vector<uint8_t> &msg)
{
	size_t o = 0;
	for (const Piece &p : ps) {
		if (o >= msg.size())
			break;
		const size_t n = std::min(p.len, msg.size() - o);
		p.b->want(p.off, msg.data() + o, n);
		o += n;
	}
}

/* ------------------------------------------------------------ QPs */

struct EpOpts {
	enum ibv_qp_type type = IBV_QPT_RC;
	uint32_t send_wr = 128, recv_wr = 128, send_sge = 3, recv_sge = 3;
	uint32_t inline_data = 0;
	bool sig_all = false;
	struct ibv_srq *srq = nullptr;
	struct ibv_cq *scq = nullptr, *rcq = nullptr; /* shared CQs */
	struct ibv_comp_channel *ch = nullptr;	       /* for own CQs */
};

/* One end: a QP with its CQs. */
struct Ep {
	CqPtr own_scq, own_rcq;
	QpPtr qp;
	struct ibv_cq *scq = nullptr, *rcq = nullptr;
	enum ibv_qp_type type = IBV_QPT_RC;
	uint32_t psn = 0;
	uint32_t max_inline = 0;
	uint32_t qpn() const { return qp->qp_num; }
};

/* Start PSNs: every other QP starts just below the 24-bit wrap, so that
 * longer messages cross it. */
uint32_t next_psn()
{
	static uint32_t k;
	k++;
	if (k % 2)
		return 0xffff00u + (k * 13) % 200;
	return (k * 0x10101u + 0x1234u) & 0xffffffu;
}

Ep make_ep(Dev &d, const EpOpts &o)
{
	Ep e;
	e.type = o.type;
	if (o.scq) {
		e.scq = o.scq;
	} else {
		e.own_scq = make_cq(d, 512, o.ch);
		e.scq = e.own_scq.get();
	}
	if (o.rcq) {
		e.rcq = o.rcq;
	} else {
		e.own_rcq = make_cq(d, 512, o.ch);
		e.rcq = e.own_rcq.get();
	}
	struct ibv_qp_init_attr ia = {};
	ia.send_cq = e.scq;
	ia.recv_cq = e.rcq;
	ia.srq = o.srq;
	ia.qp_type = o.type;
	ia.sq_sig_all = o.sig_all;
	ia.cap.max_send_wr = o.send_wr;
	ia.cap.max_recv_wr = o.srq ? 0 : o.recv_wr;
	ia.cap.max_send_sge = o.send_sge;
	ia.cap.max_recv_sge = o.srq ? 0 : o.recv_sge;
	ia.cap.max_inline_data = o.inline_data;
	struct ibv_qp *qp = ibv_create_qp(d.pd, &ia);
	if (!qp)
		fail(strf("ibv_create_qp(%s, send_wr %u sge %u inline %u, recv_wr %u sge %u%s): %s",
			  o.type == IBV_QPT_RC ? "RC" : o.type == IBV_QPT_UC ? "UC" : "UD",
			  o.send_wr, o.send_sge, o.inline_data, o.recv_wr, o.recv_sge,
			  o.srq ? ", srq" : "", errno_text(errno).c_str()));
	e.qp.reset(qp);
	e.max_inline = ia.cap.max_inline_data;
	e.psn = next_psn();
	return e;
}

/* What the other end needs to know to connect to an Ep. */
struct Remote {
	union ibv_gid gid = {};
	uint32_t qpn = 0, psn = 0;
	enum ibv_mtu mtu = IBV_MTU_1024;
};

Remote remote_of(const Dev &d, const Ep &e)
{
	Remote r;
	r.gid = d.gid;
	r.qpn = e.qpn();
	r.psn = e.psn;
	r.mtu = d.port_attr.active_mtu;
	return r;
}

struct ConnOpts {
	uint8_t timeout = 14, retry_cnt = 7, rnr_retry = 7, min_rnr_timer = 12;
};

struct ibv_ah_attr ah_attr_to(const Dev &d, const union ibv_gid &dgid)
{
	struct ibv_ah_attr a = {};
	a.is_global = 1;
	a.grh.dgid = dgid;
	a.grh.sgid_index = static_cast<uint8_t>(d.gid_index);
	a.grh.hop_limit = 64;
	a.port_num = d.port;
	return a;
}

AhPtr make_ah(Dev &d, const union ibv_gid &dgid)
{
	struct ibv_ah_attr a = ah_attr_to(d, dgid);
	struct ibv_ah *ah = ibv_create_ah(d.pd, &a);
	if (!ah)
		fail("ibv_create_ah: " + errno_text(errno));
	return AhPtr(ah);
}

void modify(Ep &e, struct ibv_qp_attr &a, int mask, const char *what)
{
	const int rc = ibv_modify_qp(e.qp.get(), &a, mask);
	if (rc)
		fail(strf("ibv_modify_qp to %s: %s", what, errno_text(std::abs(rc)).c_str()));
}

/* RESET -> INIT -> RTR -> RTS, connected to r (UD: r is not used). */
void connect(Dev &d, Ep &e, const Remote &r, const ConnOpts &c = {})
{
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = d.port;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (e.type == IBV_QPT_UD) {
		a.qkey = UD_QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (e.type == IBV_QPT_RC)
			a.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	modify(e, a, mask, "INIT");

	a = {};
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (e.type != IBV_QPT_UD) {
		a.path_mtu = std::min(d.port_attr.active_mtu, r.mtu);
		a.dest_qp_num = r.qpn;
		a.rq_psn = r.psn;
		a.ah_attr = ah_attr_to(d, r.gid);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (e.type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = static_cast<uint8_t>(
				std::min(16, d.attr.max_qp_rd_atom));
			a.min_rnr_timer = c.min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	modify(e, a, mask, "RTR");

	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = e.psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (e.type == IBV_QPT_RC) {
		a.timeout = c.timeout;
		a.retry_cnt = c.retry_cnt;
		a.rnr_retry = c.rnr_retry;
		a.max_rd_atomic = static_cast<uint8_t>(std::min(16, d.attr.max_qp_init_rd_atom));
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	modify(e, a, mask, "RTS");
}

/* Two QPs of a type connected to each other on one device. */
struct Pair {
	Ep a, b;
};

Pair make_pair(Dev &d, EpOpts oa = {}, EpOpts ob = {}, ConnOpts ca = {}, ConnOpts cb = {})
{
	Pair p;
	p.a = make_ep(d, oa);
	p.b = make_ep(d, ob);
	connect(d, p.a, remote_of(d, p.b), ca);
	connect(d, p.b, remote_of(d, p.a), cb);
	return p;
}

Pair rc_pair(Dev &d)
{
	return make_pair(d);
}

Pair typed_pair(Dev &d, enum ibv_qp_type t)
{
	EpOpts o;
	o.type = t;
	return make_pair(d, o, o);
}

enum ibv_qp_state qp_state(Ep &e)
{
	struct ibv_qp_attr a = {};
	struct ibv_qp_init_attr ia = {};
	if (ibv_query_qp(e.qp.get(), &a, IBV_QP_STATE, &ia))
		fail("ibv_query_qp: " + errno_text(errno));
	return a.qp_state;
}

/* ------------------------------------------------------------ posting */

struct ibv_send_wr send_wr(uint64_t id, enum ibv_wr_opcode op, struct ibv_sge *sg, int n,
			   unsigned flags = IBV_SEND_SIGNALED)
{
	struct ibv_send_wr wr = {};
	wr.wr_id = id;
	wr.opcode = op;
	wr.sg_list = n ? sg : nullptr;
	wr.num_sge = n;
	wr.send_flags = flags;
	return wr;
}

void post_send(Ep &e, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = nullptr;
	const int rc = ibv_post_send(e.qp.get(), wr, &bad);
	if (rc)
		fail(strf("ibv_post_send (wr_id 0x%" PRIx64 ", bad wr_id 0x%" PRIx64 "): %s",
			  wr->wr_id, bad ? bad->wr_id : 0, errno_text(std::abs(rc)).c_str()));
}

void post_recv(Ep &e, uint64_t id, struct ibv_sge *sg, int n)
{
	struct ibv_recv_wr wr = {}, *bad = nullptr;
	wr.wr_id = id;
	wr.sg_list = n ? sg : nullptr;
	wr.num_sge = n;
	const int rc = ibv_post_recv(e.qp.get(), &wr, &bad);
	if (rc)
		fail(strf("ibv_post_recv (wr_id 0x%" PRIx64 "): %s", id,
			  errno_text(std::abs(rc)).c_str()));
}

void post_recv(Ep &e, uint64_t id, struct ibv_sge sg)
{
	post_recv(e, id, &sg, 1);
}

void post_srq_recv(struct ibv_srq *srq, uint64_t id, struct ibv_sge sg)
{
	struct ibv_recv_wr wr = {}, *bad = nullptr;
	wr.wr_id = id;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	const int rc = ibv_post_srq_recv(srq, &wr, &bad);
	if (rc)
		fail(strf("ibv_post_srq_recv (wr_id 0x%" PRIx64 "): %s", id,
			  errno_text(std::abs(rc)).c_str()));
}

/* ------------------------------------------------------------ completions */

std::string wc_str(const struct ibv_wc &wc)
{
	return strf("{wr_id 0x%" PRIx64 " %s opcode %s len %u qp 0x%x flags 0x%x}", wc.wr_id,
		    ibv_wc_status_str(wc.status), wc_opcode_str(wc.opcode), wc.byte_len,
		    wc.qp_num, wc.wc_flags);
}

/* Polls until n completions arrived; fails the case at the deadline. */
std::vector<struct ibv_wc> wait_wc(struct ibv_cq *cq, int n, const char *what,
				   int timeout_ms = g_timeout_ms)
{
	std::vector<struct ibv_wc> out;
	const Deadline dl(timeout_ms);
	int idle = 0;
	while (static_cast<int>(out.size()) < n) {
		struct ibv_wc wc[16];
		const int k = ibv_poll_cq(cq, std::min(16, n - static_cast<int>(out.size())), wc);
		if (k < 0)
			fail(strf("ibv_poll_cq (%s): %d", what, k));
		if (k > 0) {
			out.insert(out.end(), wc, wc + k);
			idle = 0;
			continue;
		}
		if (dl.passed()) {
			std::string got;
			for (const auto &w : out) {
				got += ' ';
				got += wc_str(w);
			}
			fail(strf("timed out after %d s waiting for %d %s completion(s), got %zu%s%s",
				  timeout_ms / 1000, n, what, out.size(), got.empty() ? "" : ":",
				  got.c_str()));
		}
		if (++idle < 200)
			sched_yield();
		else
			usleep(200);
	}
	return out;
}

struct ibv_wc wait_one(struct ibv_cq *cq, const char *what)
{
	return wait_wc(cq, 1, what)[0];
}

/* Checks a completion; opcode only for successful ones (else undefined). */
bool check_wc(const struct ibv_wc &wc, const std::string &what, uint64_t wr_id,
	      enum ibv_wc_status st, int opcode = -1)
{
	const bool ok = wc.wr_id == wr_id && wc.status == st &&
			(opcode < 0 || st != IBV_WC_SUCCESS || wc.opcode == opcode);
	if (!ok)
		problem("%s: got %s, want wr_id 0x%" PRIx64 " %s%s%s", what.c_str(),
			wc_str(wc).c_str(), wr_id, ibv_wc_status_str(st),
			opcode >= 0 ? " opcode " : "", opcode >= 0 ? wc_opcode_str(opcode) : "");
	return ok;
}

/* Checks a receive completion fully. imm: -1 none, else the expected value. */
void check_recv(const struct ibv_wc &wc, const std::string &what, uint64_t wr_id, int opcode,
		uint32_t byte_len, uint32_t qpn, int64_t imm = -1)
{
	if (!check_wc(wc, what, wr_id, IBV_WC_SUCCESS, opcode))
		return;
	EXPECT(wc.byte_len == byte_len, "%s: byte_len %u, want %u", what.c_str(), wc.byte_len,
	       byte_len);
	EXPECT(wc.qp_num == qpn, "%s: qp_num 0x%x, want 0x%x", what.c_str(), wc.qp_num, qpn);
	if (imm < 0) {
		EXPECT(!(wc.wc_flags & IBV_WC_WITH_IMM), "%s: IBV_WC_WITH_IMM set", what.c_str());
	} else {
		EXPECT(wc.wc_flags & IBV_WC_WITH_IMM, "%s: IBV_WC_WITH_IMM not set", what.c_str());
		EXPECT(wc.imm_data == htobe32(static_cast<uint32_t>(imm)),
		       "%s: imm_data 0x%08x, want 0x%08x", what.c_str(), be32toh(wc.imm_data),
		       static_cast<uint32_t>(imm));
	}
}

/* The CQ must have nothing more (completions of one queue come in order, so
 * this is checked right after the last expected one). */
void expect_no_wc(struct ibv_cq *cq, const std::string &what)
{
	struct ibv_wc wc[4];
	const int k = ibv_poll_cq(cq, 4, wc);
	for (int i = 0; i < k; i++)
		problem("%s: unexpected completion %s", what.c_str(), wc_str(wc[i]).c_str());
}

/* No completion within ms milliseconds. */
void expect_quiet(struct ibv_cq *cq, int ms, const std::string &what)
{
	const Deadline dl(ms);
	while (!dl.passed()) {
		struct ibv_wc wc;
		if (ibv_poll_cq(cq, 1, &wc) > 0) {
			problem("%s: unexpected completion %s", what.c_str(), wc_str(wc).c_str());
			return;
		}
		usleep(500);
	}
}

/* Waits for a completion event on a channel. */
struct ibv_cq *wait_cq_event(struct ibv_comp_channel *ch, const char *what, void **ctx_out)
{
	const Deadline dl;
	for (;;) {
		struct ibv_cq *cq;
		void *ctx;
		if (ibv_get_cq_event(ch, &cq, &ctx) == 0) {
			if (ctx_out)
				*ctx_out = ctx;
			return cq;
		}
		if (errno != EAGAIN)
			fail(strf("ibv_get_cq_event (%s): %s", what, errno_text(errno).c_str()));
		if (dl.passed())
			fail(strf("timed out after %d s waiting for a completion event (%s)",
				  g_timeout_ms / 1000, what));
		struct pollfd pfd = {ch->fd, POLLIN, 0};
		poll(&pfd, 1, std::min(dl.left_ms(), 100));
	}
}

void check_grh(const uint8_t *grh, const union ibv_gid &sgid, const union ibv_gid &dgid,
	       const std::string &what)
{
	if (gid_is_v4mapped(sgid)) {
		/* RoCE v2 over IPv4: the IPv4 header is in the last 20 bytes. */
		const uint8_t *ip = grh + 20;
		EXPECT((ip[0] >> 4) == 4 && ip[9] == IPPROTO_UDP &&
			       std::memcmp(ip + 12, sgid.raw + 12, 4) == 0 &&
			       std::memcmp(ip + 16, dgid.raw + 12, 4) == 0,
		       "%s: GRH slot holds no IPv4 header from %s to %s (version byte 0x%02x)",
		       what.c_str(), gid_str(sgid).c_str(), gid_str(dgid).c_str(), ip[0]);
	} else {
		EXPECT((grh[0] >> 4) == 6 && grh[6] == IPPROTO_UDP &&
			       std::memcmp(grh + 8, sgid.raw, 16) == 0 &&
			       std::memcmp(grh + 24, dgid.raw, 16) == 0,
		       "%s: GRH holds no IPv6 header from %s to %s (version byte 0x%02x)",
		       what.c_str(), gid_str(sgid).c_str(), gid_str(dgid).c_str(), grh[0]);
	}
}

/* ------------------------------------------------------------ loopback: RC SEND */

/* One SEND of msg from a's src at soff to b's dst at doff, checked end to end. */
void send_once(Pair &p, Buf &src, size_t soff, Buf &dst, size_t doff, size_t size,
	       uint64_t seed, const std::string &what, int64_t imm = -1, size_t slack = 64)
{
	const auto msg = pattern(size, seed);
	src.put(soff, msg);
	post_recv(p.b, seed, dst.sge(doff, size + slack));
	struct ibv_sge sg = src.sge(soff, size);
	struct ibv_send_wr wr = send_wr(seed | 1ull << 40,
					imm < 0 ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM, &sg,
					size ? 1 : 0);
	if (imm >= 0)
		wr.imm_data = htobe32(static_cast<uint32_t>(imm));
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "send"), what + " send", seed | 1ull << 40, IBV_WC_SUCCESS,
		 IBV_WC_SEND);
	check_recv(wait_one(p.b.rcq, "recv"), what + " recv", seed, IBV_WC_RECV,
		   static_cast<uint32_t>(size), p.b.qpn(), imm);
	dst.want(doff, msg);
	dst.check(what + " data");
	src.check(what + " source");
}

void case_rc_send(Dev &d)
{
	Pair p = rc_pair(d);
	Buf src(d, MiB + 64, "src"), dst(d, MiB + 256, "dst");
	uint64_t seed = 0x100;
	for (size_t size : {size_t(0), size_t(1), size_t(4095), size_t(4096), size_t(4097),
			    size_t(65536), MiB}) {
		dst.reset(SENTINEL);
		send_once(p, src, 0, dst, 0, size, seed++, strf("size %zu", size));
	}
	expect_no_wc(p.a.scq, "send cq");
	expect_no_wc(p.b.rcq, "recv cq");
}

void case_rc_send_multi_sge(Dev &d)
{
	if (d.attr.max_sge < 3)
		fail(strf("device max_sge %d < 3", d.attr.max_sge));
	Pair p = rc_pair(d);
	Buf s1(d, 8 * KiB, "s1"), s2(d, 8 * KiB, "s2"), s3(d, 8 * KiB, "s3");
	Buf r1(d, 8 * KiB, "r1"), r2(d, 8 * KiB, "r2"), r3(d, 8 * KiB, "r3");
	const std::vector<Piece> recv = {{&r1, 13, 2999}, {&r2, 511, 777}, {&r3, 3, 4001}};
	/* a message shorter than the receive SGEs, then one that fills them exactly */
	const std::vector<std::vector<Piece>> sends = {
		{{&s1, 7, 1001}, {&s2, 4093, 3}, {&s3, 1, 5003}},
		{{&s1, 7, 1001}, {&s2, 4093, 3}, {&s3, 1, 6773}},
	};
	uint64_t id = 0x200;
	for (const auto &snd : sends) {
		for (Buf *b : {&r1, &r2, &r3})
			b->reset(SENTINEL);
		const auto msg = pattern(total(snd), id);
		put_pieces(snd, msg);
		auto rs = sges(recv);
		post_recv(p.b, id, rs.data(), 3);
		auto ss = sges(snd);
		struct ibv_send_wr wr = send_wr(id + 1, IBV_WR_SEND, ss.data(), 3);
		post_send(p.a, &wr);
		const std::string what = strf("%zu bytes", msg.size());
		check_wc(wait_one(p.a.scq, "send"), what + " send", id + 1, IBV_WC_SUCCESS,
			 IBV_WC_SEND);
		check_recv(wait_one(p.b.rcq, "recv"), what + " recv", id, IBV_WC_RECV,
			   static_cast<uint32_t>(msg.size()), p.b.qpn());
		want_pieces(recv, msg);
		for (Buf *b : {&r1, &r2, &r3})
			b->check(what);
		for (Buf *b : {&s1, &s2, &s3})
			b->check(what + " source");
		id += 2;
	}
}

void case_rc_send_imm(Dev &d)
{
	Pair p = rc_pair(d);
	Buf src(d, 8 * KiB, "src"), dst(d, 8 * KiB, "dst");
	uint64_t seed = 0x300;
	for (size_t size : {0, 33, 4096}) {
		dst.reset(SENTINEL);
		const uint32_t imm = 0xc0ffee00u + static_cast<uint32_t>(size);
		send_once(p, src, 1, dst, 3, size, seed++, strf("size %zu imm", size), imm);
	}
}

void case_rc_send_inline(Dev &d)
{
	/* ask for inline room, largest first; use what the QP reports */
	Pair p;
	uint32_t asked = 0;
	for (uint32_t want : {1024u, 512u, 256u, 128u, 64u, 32u}) {
		try {
			EpOpts o;
			o.inline_data = want;
			p = make_pair(d, o, EpOpts{});
			asked = want;
			break;
		} catch (const CaseFail &) {
		}
	}
	if (!asked)
		fail("no RC QP with max_inline_data >= 32 could be created");
	struct ibv_qp_attr a = {};
	struct ibv_qp_init_attr ia = {};
	if (ibv_query_qp(p.a.qp.get(), &a, IBV_QP_CAP, &ia))
		fail("ibv_query_qp: " + errno_text(errno));
	const uint32_t max = std::max(ia.cap.max_inline_data, p.a.max_inline);
	note(strf("asked max_inline_data %u; create_qp reports %u, query_qp %u", asked,
		  p.a.max_inline, ia.cap.max_inline_data));
	if (max == 0)
		fail("QP reports max_inline_data 0");
	Buf dst(d, 8 * KiB, "dst");
	std::vector<uint32_t> sizes;
	for (uint32_t s : {1u, 17u, max / 2, max})
		if (s && (sizes.empty() || s > sizes.back()))
			sizes.push_back(s);
	uint64_t id = 0x400;
	for (uint32_t size : sizes) {
		dst.reset(SENTINEL);
		const auto msg = pattern(size, id);
		/* unregistered memory, overwritten right after posting */
		std::vector<uint8_t> src(msg);
		post_recv(p.b, id, dst.sge(0, max + 64));
		struct ibv_sge sg = {};
		sg.addr = reinterpret_cast<uintptr_t>(src.data());
		sg.length = size;
		sg.lkey = 0;
		struct ibv_send_wr wr = send_wr(id + 1, IBV_WR_SEND, &sg, 1,
						IBV_SEND_SIGNALED | IBV_SEND_INLINE);
		post_send(p.a, &wr);
		std::memset(src.data(), 0xee, src.size());
		const std::string what = strf("inline %u", size);
		check_wc(wait_one(p.a.scq, "send"), what + " send", id + 1, IBV_WC_SUCCESS,
			 IBV_WC_SEND);
		check_recv(wait_one(p.b.rcq, "recv"), what + " recv", id, IBV_WC_RECV, size,
			   p.b.qpn());
		dst.want(0, msg);
		dst.check(what);
		id += 2;
	}
}

void case_rc_send_unsignaled(Dev &d)
{
	Buf src(d, 64 * KiB, "src"), dst(d, 64 * KiB, "dst");
	const size_t size = 100;
	for (bool sig_all : {false, true}) {
		EpOpts o;
		o.sig_all = sig_all;
		Pair p = make_pair(d, o, EpOpts{});
		const int n = sig_all ? 5 : 12;
		dst.reset(SENTINEL);
		std::vector<uint64_t> signaled;
		for (int i = 0; i < n; i++)
			post_recv(p.b, 0x500 + i, dst.sge(i * 256, 256));
		for (int i = 0; i < n; i++) {
			src.put(i * 256, pattern(size, 0x500 + i));
			struct ibv_sge sg = src.sge(i * 256, size);
			/* sq_sig_all=0: every 4th signaled (and the last); sq_sig_all=1: none flagged */
			const bool sig = !sig_all && (i % 4 == 3 || i == n - 1);
			struct ibv_send_wr wr = send_wr(0x600 + i, IBV_WR_SEND, &sg, 1,
							sig ? IBV_SEND_SIGNALED : 0);
			post_send(p.a, &wr);
			if (sig || sig_all)
				signaled.push_back(0x600 + i);
		}
		const std::string what = sig_all ? "sq_sig_all=1" : "sq_sig_all=0";
		const auto swc = wait_wc(p.a.scq, static_cast<int>(signaled.size()), "send");
		for (size_t i = 0; i < swc.size(); i++)
			check_wc(swc[i], strf("%s send completion %zu", what.c_str(), i),
				 signaled[i], IBV_WC_SUCCESS, IBV_WC_SEND);
		const auto rwc = wait_wc(p.b.rcq, n, "recv");
		for (int i = 0; i < n; i++) {
			check_recv(rwc[i], strf("%s recv %d", what.c_str(), i), 0x500 + i,
				   IBV_WC_RECV, size, p.b.qpn());
			dst.want(i * 256, pattern(size, 0x500 + i));
		}
		dst.check(what);
		expect_no_wc(p.a.scq, what + " send cq");
	}
}

void case_rc_send_solicited(Dev &d)
{
	ChanPtr ch = make_channel(d);
	EpOpts ob;
	ob.ch = ch.get();
	Pair p = make_pair(d, EpOpts{}, ob);
	Buf src(d, 8 * KiB, "src"), dst(d, 8 * KiB, "dst");
	if (ibv_req_notify_cq(p.b.rcq, 1))
		fail("ibv_req_notify_cq(solicited_only=1) failed");
	/* an unsolicited message completes normally but raises no event */
	send_once(p, src, 0, dst, 0, 100, 0x700, "unsolicited");
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(ch.get(), &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		problem("completion event for an unsolicited message with solicited_only=1");
		if (ibv_req_notify_cq(p.b.rcq, 1))
			fail("ibv_req_notify_cq(solicited_only=1) failed");
	}
	/* a solicited one completes and raises the event */
	for (int i = 0; i < 2; i++) {
		const size_t size = i ? 0 : 2000;
		const auto msg = pattern(size, 0x710 + i);
		src.put(0, msg);
		post_recv(p.b, 0x710 + i, dst.sge(0, 4096));
		struct ibv_sge sg = src.sge(0, size);
		struct ibv_send_wr wr = send_wr(0x720 + i, i ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
						&sg, size ? 1 : 0,
						IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
		wr.imm_data = htobe32(0x5011c17);
		post_send(p.a, &wr);
		const std::string what = strf("solicited %zu", size);
		check_wc(wait_one(p.a.scq, "send"), what + " send", 0x720 + i, IBV_WC_SUCCESS,
			 IBV_WC_SEND);
		struct ibv_cq *ev = wait_cq_event(ch.get(), "solicited recv", nullptr);
		ibv_ack_cq_events(ev, 1);
		EXPECT(ev == p.b.rcq, "%s: event for another CQ", what.c_str());
		check_recv(wait_one(p.b.rcq, "recv"), what + " recv", 0x710 + i, IBV_WC_RECV,
			   static_cast<uint32_t>(size), p.b.qpn(), i ? 0x5011c17 : -1);
		dst.want(0, msg);
		dst.check(what);
		if (ibv_req_notify_cq(p.b.rcq, 1))
			fail("ibv_req_notify_cq(solicited_only=1) failed");
	}
}

/* ------------------------------------------------------------ loopback: RC RDMA */

void case_rc_write(Dev &d)
{
	if (d.attr.max_sge < 3)
		fail(strf("device max_sge %d < 3", d.attr.max_sge));
	Pair p = rc_pair(d);
	Buf src(d, MiB + 64, "src"), tgt(d, MiB + 256, "target");
	uint64_t id = 0x800;
	for (size_t size : {size_t(1), size_t(4096), MiB + 13}) {
		tgt.reset(SENTINEL);
		const auto msg = pattern(size, id);
		src.put(0, msg);
		struct ibv_sge sg = src.sge(0, size);
		struct ibv_send_wr wr = send_wr(id, IBV_WR_RDMA_WRITE, &sg, 1);
		wr.wr.rdma.remote_addr = tgt.addr(77);
		wr.wr.rdma.rkey = tgt.rkey();
		post_send(p.a, &wr);
		const std::string what = strf("write %zu", size);
		check_wc(wait_one(p.a.scq, "write"), what, id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		tgt.want(77, msg);
		tgt.check(what);
		id++;
	}
	/* gather from three MRs into one remote range */
	Buf s1(d, 8 * KiB, "s1"), s2(d, 8 * KiB, "s2"), s3(d, 8 * KiB, "s3");
	const std::vector<Piece> snd = {{&s1, 5, 3001}, {&s2, 4095, 2}, {&s3, 999, 4097}};
	tgt.reset(SENTINEL);
	const auto msg = pattern(total(snd), id);
	put_pieces(snd, msg);
	auto ss = sges(snd);
	struct ibv_send_wr wr = send_wr(id, IBV_WR_RDMA_WRITE, ss.data(), 3);
	wr.wr.rdma.remote_addr = tgt.addr(4093);
	wr.wr.rdma.rkey = tgt.rkey();
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "write"), "write 3 sge", id, IBV_WC_SUCCESS,
		 IBV_WC_RDMA_WRITE);
	tgt.want(4093, msg);
	tgt.check("write 3 sge");
	expect_no_wc(p.b.rcq, "target recv cq (plain WRITE consumes nothing)");
}

void case_rc_write_imm(Dev &d)
{
	Pair p = rc_pair(d);
	Buf src(d, 16 * KiB, "src"), tgt(d, 16 * KiB, "target"), rbuf(d, 4096, "recv buffer");
	uint64_t id = 0x900;
	for (size_t size : {5000, 0, 1}) {
		tgt.reset(SENTINEL);
		const auto msg = pattern(size, id);
		src.put(0, msg);
		/* with and without a receive buffer: neither is touched */
		if (size)
			post_recv(p.b, id, rbuf.sge(0, 4096));
		else
			post_recv(p.b, id, nullptr, 0);
		struct ibv_sge sg = src.sge(0, size);
		struct ibv_send_wr wr = send_wr(id + 1, IBV_WR_RDMA_WRITE_WITH_IMM, &sg,
						size ? 1 : 0);
		wr.imm_data = htobe32(0xabc00000u + static_cast<uint32_t>(size));
		wr.wr.rdma.remote_addr = tgt.addr(3);
		wr.wr.rdma.rkey = tgt.rkey();
		post_send(p.a, &wr);
		const std::string what = strf("write_imm %zu", size);
		check_wc(wait_one(p.a.scq, "write"), what, id + 1, IBV_WC_SUCCESS,
			 IBV_WC_RDMA_WRITE);
		check_recv(wait_one(p.b.rcq, "recv"), what + " recv", id,
			   IBV_WC_RECV_RDMA_WITH_IMM, static_cast<uint32_t>(size), p.b.qpn(),
			   0xabc00000u + size);
		tgt.want(3, msg);
		tgt.check(what);
		rbuf.check(what + " receive buffer");
		id += 2;
	}
}

void case_rc_read(Dev &d)
{
	if (d.attr.max_sge < 3)
		fail(strf("device max_sge %d < 3", d.attr.max_sge));
	Pair p = rc_pair(d);
	Buf local(d, MiB + 256, "local"), remote(d, MiB + 64, "remote");
	uint64_t id = 0xa00;
	for (size_t size : {size_t(1), size_t(4096), MiB}) {
		local.reset(SENTINEL);
		const auto msg = pattern(size, id);
		remote.put(5, msg);
		struct ibv_sge sg = local.sge(11, size);
		struct ibv_send_wr wr = send_wr(id, IBV_WR_RDMA_READ, &sg, 1);
		wr.wr.rdma.remote_addr = remote.addr(5);
		wr.wr.rdma.rkey = remote.rkey();
		post_send(p.a, &wr);
		const std::string what = strf("read %zu", size);
		check_wc(wait_one(p.a.scq, "read"), what, id, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
		local.want(11, msg);
		local.check(what);
		remote.check(what + " remote");
		id++;
	}
	/* scatter into three local MRs */
	Buf l1(d, 8 * KiB, "l1"), l2(d, 8 * KiB, "l2"), l3(d, 8 * KiB, "l3");
	const std::vector<Piece> dst = {{&l1, 3, 1999}, {&l2, 4000, 197}, {&l3, 1, 6001}};
	const auto msg = pattern(total(dst), id);
	remote.put(101, msg);
	auto ds = sges(dst);
	struct ibv_send_wr wr = send_wr(id, IBV_WR_RDMA_READ, ds.data(), 3);
	wr.wr.rdma.remote_addr = remote.addr(101);
	wr.wr.rdma.rkey = remote.rkey();
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "read"), "read 3 sge", id, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	want_pieces(dst, msg);
	for (Buf *b : {&l1, &l2, &l3})
		b->check("read 3 sge");
	expect_no_wc(p.b.rcq, "remote recv cq");
}

void need_atomics(Dev &d)
{
	if (d.attr.atomic_cap == IBV_ATOMIC_NONE)
		fail("device reports atomic_cap IBV_ATOMIC_NONE");
}

/* Posts one atomic and checks its completion. */
void atomic_once(Pair &p, Buf &res, size_t roff, Buf &remote, size_t off, enum ibv_wr_opcode op,
		 uint64_t add_or_cmp, uint64_t swap, uint64_t id, const std::string &what)
{
	struct ibv_sge sg = res.sge(roff, 8);
	struct ibv_send_wr wr = send_wr(id, op, &sg, 1);
	wr.wr.atomic.remote_addr = remote.addr(off);
	wr.wr.atomic.rkey = remote.rkey();
	wr.wr.atomic.compare_add = add_or_cmp;
	wr.wr.atomic.swap = swap;
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "atomic"), what, id, IBV_WC_SUCCESS,
		 op == IBV_WR_ATOMIC_FETCH_AND_ADD ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP);
}

void case_rc_atomic_fetch_add(Dev &d)
{
	need_atomics(d);
	Pair p = rc_pair(d);
	Buf res(d, 4096, "result"), remote(d, 4096, "remote");
	uint64_t v = 0x0123456789abcdf0ull;
	remote.put_u64(64, v);
	uint64_t id = 0xb00;
	for (uint64_t add : {5ull, 0ull, 0x100000000ull, ~0ull}) {
		atomic_once(p, res, 8, remote, 64, IBV_WR_ATOMIC_FETCH_AND_ADD, add, 0, id,
			    strf("fetch_add 0x%" PRIx64, add));
		res.want_u64(8, v);
		v += add;
		remote.want_u64(64, v);
		res.check(strf("fetch_add 0x%" PRIx64 " returned value", add));
		remote.check(strf("fetch_add 0x%" PRIx64 " remote value", add));
		id++;
	}
	/* wrap around 2^64 */
	remote.put_u64(128, ~0ull - 1);
	atomic_once(p, res, 16, remote, 128, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, 0, id,
		    "fetch_add wraps");
	res.want_u64(16, ~0ull - 1);
	remote.want_u64(128, 1);
	res.check("fetch_add wraps");
	remote.check("fetch_add wraps");
	/* five in one post: each sees the sum of the previous ones */
	std::vector<struct ibv_sge> sg(5);
	std::vector<struct ibv_send_wr> wr(5);
	remote.put_u64(256, 1000);
	for (int i = 0; i < 5; i++) {
		sg[i] = res.sge(512 + 8 * i, 8);
		wr[i] = send_wr(0xb80 + i, IBV_WR_ATOMIC_FETCH_AND_ADD, &sg[i], 1);
		wr[i].wr.atomic.remote_addr = remote.addr(256);
		wr[i].wr.atomic.rkey = remote.rkey();
		wr[i].wr.atomic.compare_add = i + 1;
		wr[i].next = i < 4 ? &wr[i + 1] : nullptr;
	}
	post_send(p.a, wr.data());
	const auto wcs = wait_wc(p.a.scq, 5, "fetch_add chain");
	uint64_t sum = 1000;
	for (int i = 0; i < 5; i++) {
		check_wc(wcs[i], strf("fetch_add chain %d", i), 0xb80 + i, IBV_WC_SUCCESS,
			 IBV_WC_FETCH_ADD);
		res.want_u64(512 + 8 * i, sum);
		sum += i + 1;
	}
	remote.want_u64(256, sum);
	res.check("fetch_add chain results");
	remote.check("fetch_add chain remote");
}

void case_rc_atomic_cmp_swp(Dev &d)
{
	need_atomics(d);
	Pair p = rc_pair(d);
	Buf res(d, 4096, "result"), remote(d, 4096, "remote");
	const uint64_t v = 0xfeedfacecafebeefull, w = 0x1122334455667788ull;
	remote.put_u64(8, v);
	res.put_u64(0, 0);
	/* compare equal: swapped */
	atomic_once(p, res, 0, remote, 8, IBV_WR_ATOMIC_CMP_AND_SWP, v, w, 0xc00, "cmp_swp equal");
	res.want_u64(0, v);
	remote.want_u64(8, w);
	res.check("cmp_swp equal: returned value");
	remote.check("cmp_swp equal: remote value");
	/* compare unequal: not swapped, the current value comes back */
	atomic_once(p, res, 8, remote, 8, IBV_WR_ATOMIC_CMP_AND_SWP, v, 0x99, 0xc01,
		    "cmp_swp unequal");
	res.want_u64(8, w);
	res.check("cmp_swp unequal: returned value");
	remote.check("cmp_swp unequal: remote value unchanged");
	/* compare differs only in the high half */
	atomic_once(p, res, 16, remote, 8, IBV_WR_ATOMIC_CMP_AND_SWP, w ^ (1ull << 63), 0x98,
		    0xc02, "cmp_swp high bit differs");
	res.want_u64(16, w);
	res.check("cmp_swp high bit differs: returned value");
	remote.check("cmp_swp high bit differs: remote value unchanged");
	/* at the last 8 bytes of the MR */
	remote.put_u64(4088, 7);
	atomic_once(p, res, 24, remote, 4088, IBV_WR_ATOMIC_CMP_AND_SWP, 7, 8, 0xc03,
		    "cmp_swp at MR end");
	res.want_u64(24, 7);
	remote.want_u64(4088, 8);
	res.check("cmp_swp at MR end");
	remote.check("cmp_swp at MR end");
}

void case_rc_chain_100(Dev &d)
{
	const bool atomics = d.attr.atomic_cap != IBV_ATOMIC_NONE;
	if (!atomics)
		problem("device reports atomic_cap IBV_ATOMIC_NONE: chain without atomics");
	Pair p = rc_pair(d);
	constexpr int N = 100;
	constexpr size_t SLOT = 4096;
	Buf src(d, N * SLOT, "src"), rd(d, N * SLOT, "read dst"), res(d, N * 8, "atomic results");
	Buf rbuf(d, N * SLOT, "recv buffers"), wtgt(d, N * SLOT, "write target"),
		rsrc(d, N * SLOT, "read source"), ctr(d, 64, "counter");
	enum Kind { SEND, SEND_IMM, WRITE, WRITE_IMM, READ, FADD, CSWP, KINDS };
	std::vector<struct ibv_sge> sg(N);
	std::vector<struct ibv_send_wr> wr(N);
	std::vector<int> kind(N);
	std::vector<size_t> len(N);
	std::vector<int> consumer; /* WR index of each receive, in order */
	uint64_t counter = 1000;
	ctr.put_u64(0, counter);
	for (int i = 0; i < N; i++) {
		int k = i % KINDS;
		if (!atomics && (k == FADD || k == CSWP))
			k = WRITE;
		kind[i] = k;
		len[i] = 1 + (static_cast<size_t>(i) * 2731) % SLOT;
		const auto msg = pattern(len[i], 0xd000 + i);
		struct ibv_send_wr &w = wr[i];
		switch (k) {
		case SEND:
		case SEND_IMM:
		case WRITE:
		case WRITE_IMM:
			src.put(i * SLOT, msg);
			sg[i] = src.sge(i * SLOT, len[i]);
			w = send_wr(i, k == SEND ? IBV_WR_SEND : k == SEND_IMM ? IBV_WR_SEND_WITH_IMM :
				    k == WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM,
				    &sg[i], 1);
			w.imm_data = htobe32(0x1000 + i);
			w.wr.rdma.remote_addr = wtgt.addr(i * SLOT);
			w.wr.rdma.rkey = wtgt.rkey();
			if (k == WRITE || k == WRITE_IMM)
				wtgt.want(i * SLOT, msg);
			if (k != WRITE)
				consumer.push_back(i);
			if (k == SEND || k == SEND_IMM)
				rbuf.want((consumer.size() - 1) * SLOT, msg);
			break;
		case READ:
			rsrc.put(i * SLOT, msg);
			sg[i] = rd.sge(i * SLOT, len[i]);
			w = send_wr(i, IBV_WR_RDMA_READ, &sg[i], 1);
			w.wr.rdma.remote_addr = rsrc.addr(i * SLOT);
			w.wr.rdma.rkey = rsrc.rkey();
			rd.want(i * SLOT, msg);
			break;
		case FADD:
		case CSWP:
			sg[i] = res.sge(i * 8, 8);
			w = send_wr(i, k == FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP,
				    &sg[i], 1);
			w.wr.atomic.remote_addr = ctr.addr(0);
			w.wr.atomic.rkey = ctr.rkey();
			res.want_u64(i * 8, counter);
			if (k == FADD) {
				w.wr.atomic.compare_add = i;
				counter += i;
			} else {
				w.wr.atomic.compare_add = counter;
				w.wr.atomic.swap = counter ^ (uint64_t(i) << 40);
				counter = w.wr.atomic.swap;
			}
			break;
		}
		w.next = i + 1 < N ? &wr[i + 1] : nullptr;
	}
	ctr.want_u64(0, counter);
	for (size_t j = 0; j < consumer.size(); j++)
		post_recv(p.b, 0x9000 + j, rbuf.sge(j * SLOT, SLOT));
	post_send(p.a, wr.data());

	static const int wc_op[KINDS] = {IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE,
					 IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD,
					 IBV_WC_COMP_SWAP};
	const auto swc = wait_wc(p.a.scq, N, "chain send");
	for (int i = 0; i < N; i++)
		check_wc(swc[i], strf("chain wr %d", i), i, IBV_WC_SUCCESS, wc_op[kind[i]]);
	const auto rwc = wait_wc(p.b.rcq, static_cast<int>(consumer.size()), "chain recv");
	for (size_t j = 0; j < consumer.size(); j++) {
		const int i = consumer[j];
		check_recv(rwc[j], strf("chain recv %zu (wr %d)", j, i), 0x9000 + j,
			   kind[i] == WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
			   static_cast<uint32_t>(len[i]), p.b.qpn(),
			   kind[i] == SEND ? -1 : 0x1000 + i);
	}
	expect_no_wc(p.a.scq, "chain send cq");
	expect_no_wc(p.b.rcq, "chain recv cq");
	rbuf.check("chain recv");
	wtgt.check("chain write");
	rd.check("chain read");
	res.check("chain atomic results");
	ctr.check("chain atomic counter");
	src.check("chain source");
	rsrc.check("chain read source");
}

void case_rc_read_fence_send(Dev &d)
{
	Pair p = rc_pair(d);
	const size_t size = 64 * KiB;
	Buf local(d, size, "local"), remote(d, size, "remote"), rbuf(d, size + 64, "recv");
	for (int round = 0; round < 3; round++) {
		/* READ remote -> local, then a fenced SEND of local: the SEND must carry
		 * the data just read, not what local held before */
		const auto msg = pattern(size, 0xe00 + round);
		remote.put(0, msg);
		local.reset(0);
		rbuf.reset(SENTINEL);
		post_recv(p.b, 0xe10 + round, rbuf.sge(0, size + 64));
		struct ibv_sge rs = local.sge(0, size), ss = local.sge(0, size);
		struct ibv_send_wr wr[2];
		wr[0] = send_wr(0xe20 + round, IBV_WR_RDMA_READ, &rs, 1);
		wr[0].wr.rdma.remote_addr = remote.addr(0);
		wr[0].wr.rdma.rkey = remote.rkey();
		wr[0].next = &wr[1];
		wr[1] = send_wr(0xe30 + round, IBV_WR_SEND, &ss, 1,
				IBV_SEND_SIGNALED | IBV_SEND_FENCE);
		post_send(p.a, wr);
		const std::string what = strf("round %d", round);
		const auto swc = wait_wc(p.a.scq, 2, "read+send");
		check_wc(swc[0], what + " read", 0xe20 + round, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
		check_wc(swc[1], what + " fenced send", 0xe30 + round, IBV_WC_SUCCESS,
			 IBV_WC_SEND);
		check_recv(wait_one(p.b.rcq, "recv"), what + " recv", 0xe10 + round, IBV_WC_RECV,
			   size, p.b.qpn());
		local.want(0, msg);
		local.check(what + " read");
		rbuf.want(0, msg);
		rbuf.check(what + " fenced send carries the read data");
	}
}

/* ------------------------------------------------------------ loopback: UC, UD */

void case_uc_send(Dev &d)
{
	Pair p = typed_pair(d, IBV_QPT_UC);
	Buf src(d, 64 * KiB, "src"), dst(d, 64 * KiB + 256, "dst");
	uint64_t seed = 0xf00;
	for (size_t size : {1, 4096, 65536}) {
		dst.reset(SENTINEL);
		send_once(p, src, 0, dst, 0, size, seed++, strf("uc size %zu", size));
	}
	dst.reset(SENTINEL);
	send_once(p, src, 0, dst, 0, 999, seed++, "uc imm", 0x0c0c0c0c);
}

void case_uc_write(Dev &d)
{
	Pair p = typed_pair(d, IBV_QPT_UC);
	Buf src(d, 64 * KiB, "src"), tgt(d, 64 * KiB + 256, "target"), rbuf(d, 64, "recv");
	uint64_t id = 0xf80;
	for (size_t size : {1, 4096, 65536}) {
		tgt.reset(SENTINEL);
		const auto msg = pattern(size, id);
		src.put(0, msg);
		post_recv(p.b, id, rbuf.sge(0, 64));
		/* the WRITE, then a zero-byte SEND: in order, so once it is received the
		 * WRITE has landed */
		struct ibv_sge sg = src.sge(0, size);
		struct ibv_send_wr wr[2];
		wr[0] = send_wr(id + 1, IBV_WR_RDMA_WRITE, &sg, 1);
		wr[0].wr.rdma.remote_addr = tgt.addr(129);
		wr[0].wr.rdma.rkey = tgt.rkey();
		wr[0].next = &wr[1];
		wr[1] = send_wr(id + 2, IBV_WR_SEND, nullptr, 0);
		post_send(p.a, wr);
		const std::string what = strf("uc write %zu", size);
		const auto swc = wait_wc(p.a.scq, 2, "write+send");
		check_wc(swc[0], what, id + 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		check_wc(swc[1], what + " marker send", id + 2, IBV_WC_SUCCESS, IBV_WC_SEND);
		check_recv(wait_one(p.b.rcq, "marker recv"), what + " marker recv", id, IBV_WC_RECV,
			   0, p.b.qpn());
		tgt.want(129, msg);
		tgt.check(what);
		id += 4;
	}
	/* WRITE_WITH_IMM on UC */
	tgt.reset(SENTINEL);
	const auto msg = pattern(3000, id);
	src.put(0, msg);
	post_recv(p.b, id, nullptr, 0);
	struct ibv_sge sg = src.sge(0, msg.size());
	struct ibv_send_wr wr = send_wr(id + 1, IBV_WR_RDMA_WRITE_WITH_IMM, &sg, 1);
	wr.imm_data = htobe32(0x7777);
	wr.wr.rdma.remote_addr = tgt.addr(0);
	wr.wr.rdma.rkey = tgt.rkey();
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "write_imm"), "uc write_imm", id + 1, IBV_WC_SUCCESS,
		 IBV_WC_RDMA_WRITE);
	check_recv(wait_one(p.b.rcq, "write_imm recv"), "uc write_imm recv", id,
		   IBV_WC_RECV_RDMA_WITH_IMM, 3000, p.b.qpn(), 0x7777);
	tgt.want(0, msg);
	tgt.check("uc write_imm");
	rbuf.check("uc receive buffers");
}

/* One UD message a -> b through ah, received with its GRH and checked. */
void ud_once(Ep &a, Ep &b, struct ibv_ah *ah, Buf &src, Buf &dst, size_t size, uint64_t id,
	     const union ibv_gid &sgid, const union ibv_gid &dgid, const std::string &what,
	     int64_t imm = -1, struct ibv_wc *wc_out = nullptr)
{
	dst.reset(SENTINEL);
	const auto msg = pattern(size, id);
	src.put(0, msg);
	post_recv(b, id, dst.sge(0, GRH_LEN + size + 64));
	struct ibv_sge sg = src.sge(0, size);
	struct ibv_send_wr wr = send_wr(id + 1, imm < 0 ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM, &sg,
					size ? 1 : 0);
	wr.imm_data = htobe32(static_cast<uint32_t>(imm));
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b.qpn();
	wr.wr.ud.remote_qkey = UD_QKEY;
	post_send(a, &wr);
	check_wc(wait_one(a.scq, "ud send"), what + " send", id + 1, IBV_WC_SUCCESS, IBV_WC_SEND);
	const struct ibv_wc wc = wait_one(b.rcq, "ud recv");
	check_recv(wc, what + " recv", id, IBV_WC_RECV, static_cast<uint32_t>(GRH_LEN + size),
		   b.qpn(), imm);
	if (wc.status == IBV_WC_SUCCESS) {
		EXPECT(wc.src_qp == a.qpn(), "%s: src_qp 0x%x, want 0x%x", what.c_str(), wc.src_qp,
		       a.qpn());
		EXPECT(wc.wc_flags & IBV_WC_GRH, "%s: IBV_WC_GRH not set", what.c_str());
		check_grh(dst.p(), sgid, dgid, what);
	}
	dst.accept(0, GRH_LEN);
	dst.want(GRH_LEN, msg);
	dst.check(what + " data after the GRH");
	if (wc_out)
		*wc_out = wc;
}

void case_ud_send(Dev &d)
{
	Pair p = typed_pair(d, IBV_QPT_UD);
	AhPtr ah = make_ah(d, d.gid);
	const size_t mtu = d.mtu_bytes();
	Buf src(d, mtu + 64, "src"), dst(d, GRH_LEN + mtu + 128, "dst");
	uint64_t id = 0x1100;
	struct ibv_wc wc = {};
	for (size_t size : {size_t(0), size_t(1), size_t(300), mtu}) {
		ud_once(p.a, p.b, ah.get(), src, dst, size, id, d.gid, d.gid,
			strf("ud size %zu", size), -1, &wc);
		id += 2;
	}
	/* reply the way UD servers do: an AH made from the received completion */
	if (wc.status != IBV_WC_SUCCESS)
		fail("no successful receive to reply to");
	struct ibv_grh grh;
	std::memcpy(&grh, dst.p(), GRH_LEN);
	struct ibv_ah *rah = ibv_create_ah_from_wc(d.pd, &wc, &grh, d.port);
	if (!rah)
		fail("ibv_create_ah_from_wc: " + errno_text(errno));
	AhPtr reply_ah(rah);
	Buf src_b(d, 512, "reply src"), dst_a(d, GRH_LEN + 512, "reply dst");
	ud_once(p.b, p.a, reply_ah.get(), src_b, dst_a, 200, id, d.gid, d.gid,
		"reply via ah_from_wc");
}

void case_ud_send_imm(Dev &d)
{
	Pair p = typed_pair(d, IBV_QPT_UD);
	AhPtr ah = make_ah(d, d.gid);
	Buf src(d, 4096, "src"), dst(d, 4096 + GRH_LEN + 128, "dst");
	ud_once(p.a, p.b, ah.get(), src, dst, 100, 0x1200, d.gid, d.gid, "ud imm 100", 0x12345678);
	ud_once(p.a, p.b, ah.get(), src, dst, 0, 0x1210, d.gid, d.gid, "ud imm 0", 0x87654321);
}

/* ------------------------------------------------------------ loopback: SRQ */

SrqPtr make_srq(Dev &d, uint32_t max_wr)
{
	if (d.attr.max_srq <= 0)
		fail("device reports max_srq 0");
	struct ibv_srq_init_attr ia = {};
	ia.attr.max_wr = max_wr;
	ia.attr.max_sge = 1;
	struct ibv_srq *srq = ibv_create_srq(d.pd, &ia);
	if (!srq)
		fail("ibv_create_srq: " + errno_text(errno));
	return SrqPtr(srq);
}

void case_srq_shared(Dev &d)
{
	SrqPtr srq = make_srq(d, 64);
	CqPtr rcq = make_cq(d);
	EpOpts ob;
	ob.srq = srq.get();
	ob.rcq = rcq.get();
	Pair p1 = make_pair(d, EpOpts{}, ob), p2 = make_pair(d, EpOpts{}, ob);
	constexpr size_t SLOT = 4096;
	constexpr int RECVS = 20, PER_QP = 6;
	Buf src(d, 2 * PER_QP * SLOT, "src"), rbuf(d, RECVS * SLOT, "srq buffers");
	for (int j = 0; j < RECVS; j++)
		post_srq_recv(srq.get(), 0x1300 + j, rbuf.sge(j * SLOT, SLOT));
	auto size_of = [](int q, int k) { return size_t(1 + (q * 977 + k * 1511) % 4000); };
	/* interleaved: A1, A2, A1, A2, ... */
	for (int k = 0; k < PER_QP; k++) {
		for (int q = 0; q < 2; q++) {
			Pair &p = q ? p2 : p1;
			const size_t off = (q * PER_QP + k) * SLOT;
			src.put(off, pattern(size_of(q, k), 0x1400 + q * 100 + k));
			struct ibv_sge sg = src.sge(off, size_of(q, k));
			struct ibv_send_wr wr = send_wr(0x1500 + q * 100 + k, IBV_WR_SEND, &sg, 1);
			post_send(p.a, &wr);
		}
	}
	for (int q = 0; q < 2; q++) {
		Pair &p = q ? p2 : p1;
		const auto swc = wait_wc(p.a.scq, PER_QP, "send");
		for (int k = 0; k < PER_QP; k++)
			check_wc(swc[k], strf("qp%d send %d", q, k), 0x1500 + q * 100 + k,
				 IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	const auto rwc = wait_wc(rcq.get(), 2 * PER_QP, "srq recv");
	int seen[2] = {0, 0};
	std::vector<bool> used(RECVS);
	for (const auto &wc : rwc) {
		const std::string what = strf("srq completion %s", wc_str(wc).c_str());
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) {
			problem("%s: not a successful RECV", what.c_str());
			continue;
		}
		const int q = wc.qp_num == p1.b.qpn() ? 0 : wc.qp_num == p2.b.qpn() ? 1 : -1;
		const uint64_t j = wc.wr_id - 0x1300;
		if (q < 0 || j >= RECVS || used[j] || seen[q] >= PER_QP) {
			problem("%s: unknown QP, unknown or reused wr_id", what.c_str());
			continue;
		}
		used[j] = true;
		const int k = seen[q]++;
		EXPECT(wc.byte_len == size_of(q, k), "%s: byte_len, want %zu", what.c_str(),
		       size_of(q, k));
		rbuf.want(j * SLOT, pattern(size_of(q, k), 0x1400 + q * 100 + k));
	}
	rbuf.check("srq buffers");
	expect_no_wc(rcq.get(), "srq recv cq");
	/* the receives not used are still there: one more message each way */
	for (int q = 0; q < 2; q++) {
		Pair &p = q ? p2 : p1;
		struct ibv_sge sg = src.sge(0, 10);
		struct ibv_send_wr wr = send_wr(0x1600 + q, IBV_WR_SEND, &sg, 1);
		post_send(p.a, &wr);
		check_wc(wait_one(p.a.scq, "send"), strf("qp%d extra send", q), 0x1600 + q,
			 IBV_WC_SUCCESS, IBV_WC_SEND);
		const struct ibv_wc wc = wait_one(rcq.get(), "srq recv");
		EXPECT(wc.status == IBV_WC_SUCCESS && wc.byte_len == 10 &&
			       wc.qp_num == p.b.qpn() && wc.wr_id >= 0x1300 &&
			       wc.wr_id < 0x1300 + RECVS && !used[wc.wr_id - 0x1300],
		       "qp%d extra recv: %s", q, wc_str(wc).c_str());
		if (wc.wr_id >= 0x1300 && wc.wr_id < 0x1300 + RECVS)
			used[wc.wr_id - 0x1300] = true;
	}
}

void case_srq_limit(Dev &d)
{
	SrqPtr srq = make_srq(d, 16);
	EpOpts ob;
	ob.srq = srq.get();
	Pair p = make_pair(d, EpOpts{}, ob);
	Buf src(d, 4096, "src"), rbuf(d, 16 * 256, "srq buffers");
	for (int j = 0; j < 10; j++)
		post_srq_recv(srq.get(), 0x1700 + j, rbuf.sge(j * 256, 256));
	drain_async();
	struct ibv_srq_attr a = {};
	a.srq_limit = 4;
	int rc = ibv_modify_srq(srq.get(), &a, IBV_SRQ_LIMIT);
	if (rc)
		fail("ibv_modify_srq(IBV_SRQ_LIMIT 4): " + errno_text(std::abs(rc)));
	a = {};
	if (ibv_query_srq(srq.get(), &a))
		fail("ibv_query_srq: " + errno_text(errno));
	EXPECT(a.srq_limit == 4, "query_srq: srq_limit %u, want 4", a.srq_limit);
	/* 10 posted, limit 4: after 6 messages 4 are left (no event), after the 7th 3 */
	for (int k = 0; k < 7; k++) {
		src.put(0, pattern(50, 0x1800 + k));
		struct ibv_sge sg = src.sge(0, 50);
		struct ibv_send_wr wr = send_wr(0x1800 + k, IBV_WR_SEND, &sg, 1);
		post_send(p.a, &wr);
		check_wc(wait_one(p.a.scq, "send"), strf("send %d", k), 0x1800 + k, IBV_WC_SUCCESS,
			 IBV_WC_SEND);
		check_recv(wait_one(p.b.rcq, "recv"), strf("recv %d", k), 0x1700 + k, IBV_WC_RECV,
			   50, p.b.qpn());
		rbuf.want(k * 256, pattern(50, 0x1800 + k));
		if (k == 5) {
			struct ibv_async_event ev;
			if (wait_async(IBV_EVENT_SRQ_LIMIT_REACHED, &ev, 0)) {
				ibv_ack_async_event(&ev);
				problem("SRQ limit event with 4 receives left (limit 4)");
			}
		}
	}
	struct ibv_async_event ev;
	if (!wait_async(IBV_EVENT_SRQ_LIMIT_REACHED, &ev, g_timeout_ms))
		fail(strf("no IBV_EVENT_SRQ_LIMIT_REACHED within %d s with 3 receives left (limit 4)",
			  g_timeout_ms / 1000));
	EXPECT(ev.element.srq == srq.get(), "SRQ limit event for another SRQ");
	ibv_ack_async_event(&ev);
	a = {};
	if (ibv_query_srq(srq.get(), &a))
		fail("ibv_query_srq: " + errno_text(errno));
	EXPECT(a.srq_limit == 0, "query_srq after the event: srq_limit %u, want 0 (disarmed)",
	       a.srq_limit);
	rbuf.check("srq buffers");
}

/* ------------------------------------------------------------ loopback: errors */

/* After an error the QP is in ERR and everything posted later flushes. */
void expect_flushing(Ep &e, Buf &b, const std::string &what)
{
	/* the error completion may come just before the state change */
	const Deadline dl(2000);
	enum ibv_qp_state st;
	while ((st = qp_state(e)) != IBV_QPS_ERR && !dl.passed())
		sleep_ms(10);
	EXPECT(st == IBV_QPS_ERR, "%s: requester QP state %d, want ERR (%d)", what.c_str(), st,
	       IBV_QPS_ERR);
	std::vector<struct ibv_sge> sg(3, b.sge(0, 16));
	std::vector<struct ibv_send_wr> wr(3);
	for (int i = 0; i < 3; i++) {
		wr[i] = send_wr(0xf1000 + i, i == 1 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, &sg[i], 1);
		wr[i].wr.rdma.remote_addr = b.addr(0);
		wr[i].wr.rdma.rkey = b.rkey();
		wr[i].next = i < 2 ? &wr[i + 1] : nullptr;
	}
	post_send(e, wr.data());
	const auto wcs = wait_wc(e.scq, 3, "flushed");
	for (int i = 0; i < 3; i++)
		check_wc(wcs[i], strf("%s: WR %d after the error", what.c_str(), i), 0xf1000 + i,
			 IBV_WC_WR_FLUSH_ERR);
}

void case_err_bad_rkey(Dev &d)
{
	Pair p = rc_pair(d);
	Buf src(d, 4096, "src"), tgt(d, 4096, "target");
	struct ibv_sge sg = src.sge(0, 100);
	struct ibv_send_wr wr = send_wr(0x2000, IBV_WR_RDMA_WRITE, &sg, 1);
	wr.wr.rdma.remote_addr = tgt.addr(0);
	wr.wr.rdma.rkey = tgt.rkey() ^ 0x00ffff00;
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "write"), "write with a wrong rkey", 0x2000,
		 IBV_WC_REM_ACCESS_ERR);
	tgt.check("target of the rejected write");
	expect_flushing(p.a, src, "wrong rkey");
}

void case_err_read_out_of_bounds(Dev &d)
{
	Pair p = rc_pair(d);
	Buf local(d, 4096, "local"), remote(d, 8192, "remote");
	const auto msg = pattern(100, 0x2100);
	remote.put(8192 - 100, msg);
	/* the last 100 bytes of the MR: fine */
	struct ibv_sge sg = local.sge(0, 100);
	struct ibv_send_wr wr = send_wr(0x2100, IBV_WR_RDMA_READ, &sg, 1);
	wr.wr.rdma.remote_addr = remote.addr(8192 - 100);
	wr.wr.rdma.rkey = remote.rkey();
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "read"), "read of the MR's last 100 bytes", 0x2100,
		 IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	local.want(0, msg);
	local.check("read of the MR's last 100 bytes");
	/* 100 bytes further: 100 past the end */
	sg = local.sge(200, 200);
	wr = send_wr(0x2101, IBV_WR_RDMA_READ, &sg, 1);
	wr.wr.rdma.remote_addr = remote.addr(8192 - 100);
	wr.wr.rdma.rkey = remote.rkey();
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "read"), "read 100 bytes past the MR end", 0x2101,
		 IBV_WC_REM_ACCESS_ERR);
	expect_flushing(p.a, local, "read out of bounds");
	/* a fresh pair: a read starting before the MR */
	Pair q = rc_pair(d);
	sg = local.sge(0, 64);
	wr = send_wr(0x2102, IBV_WR_RDMA_READ, &sg, 1);
	wr.wr.rdma.remote_addr = remote.addr(0) - 32;
	wr.wr.rdma.rkey = remote.rkey();
	post_send(q.a, &wr);
	check_wc(wait_one(q.a.scq, "read"), "read starting 32 bytes before the MR", 0x2102,
		 IBV_WC_REM_ACCESS_ERR);
	remote.check("remote");
}

void case_err_write_no_remote_access(Dev &d)
{
	Pair p = rc_pair(d);
	Buf src(d, 4096, "src");
	Buf tgt(d, 4096, "read-only target", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	src.put(0, pattern(64, 0x2200));
	struct ibv_sge sg = src.sge(0, 64);
	struct ibv_send_wr wr = send_wr(0x2200, IBV_WR_RDMA_WRITE, &sg, 1);
	wr.wr.rdma.remote_addr = tgt.addr(0);
	wr.wr.rdma.rkey = tgt.rkey();
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "write"), "write to an MR without REMOTE_WRITE", 0x2200,
		 IBV_WC_REM_ACCESS_ERR);
	tgt.check("MR without REMOTE_WRITE");
	expect_flushing(p.a, src, "write without access");
}

void case_err_bad_lkey(Dev &d)
{
	Pair p = rc_pair(d);
	Buf src(d, 4096, "src"), dst(d, 4096, "dst");
	/* the key of an MR that has been deregistered */
	uint32_t stale;
	{
		Buf gone(d, 4096, "deregistered");
		stale = gone.lkey();
	}
	post_recv(p.b, 0x2300, dst.sge(0, 4096));
	struct ibv_sge sg = src.sge(0, 100);
	sg.lkey = stale;
	struct ibv_send_wr wr = send_wr(0x2301, IBV_WR_SEND, &sg, 1);
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "send"), "send with a deregistered lkey", 0x2301,
		 IBV_WC_LOC_PROT_ERR);
	expect_no_wc(p.b.rcq, "receiver of the bad send");
	dst.check("receiver of the bad send");
	expect_flushing(p.a, src, "bad lkey");
}

void case_err_recv_too_small(Dev &d)
{
	Pair p = rc_pair(d);
	Buf src(d, 4096, "src"), dst(d, 4096, "dst");
	post_recv(p.b, 0x2400, dst.sge(0, 100));
	src.put(0, pattern(200, 0x2400));
	struct ibv_sge sg = src.sge(0, 200);
	struct ibv_send_wr wr = send_wr(0x2401, IBV_WR_SEND, &sg, 1);
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "send"), "sender of 200 bytes into 100", 0x2401,
		 IBV_WC_REM_INV_REQ_ERR);
	check_wc(wait_one(p.b.rcq, "recv"), "receiver of 200 bytes into 100", 0x2400,
		 IBV_WC_LOC_LEN_ERR);
	/* bytes beyond the receive buffer must never be written */
	dst.accept(0, 100);
	dst.check("beyond the 100-byte receive buffer");
}

void case_err_rnr_retry_exceeded(Dev &d)
{
	ConnOpts c;
	c.rnr_retry = 0;
	Pair p = make_pair(d, EpOpts{}, EpOpts{}, c, ConnOpts{});
	Buf src(d, 4096, "src"), dst(d, 4096, "dst");
	struct ibv_sge sg = src.sge(0, 64);
	struct ibv_send_wr wr = send_wr(0x2500, IBV_WR_SEND, &sg, 1);
	post_send(p.a, &wr);
	check_wc(wait_one(p.a.scq, "send"), "send without a receive, rnr_retry 0", 0x2500,
		 IBV_WC_RNR_RETRY_EXC_ERR);
	expect_flushing(p.a, src, "rnr retry exceeded");
}

void case_err_rnr_retry_recovers(Dev &d)
{
	Pair p = rc_pair(d); /* rnr_retry 7: retry forever */
	Buf src(d, 8192, "src"), dst(d, 8192, "dst");
	const auto msg = pattern(4096, 0x2600);
	src.put(0, msg);
	struct ibv_sge sg = src.sge(0, 4096);
	struct ibv_send_wr wr = send_wr(0x2601, IBV_WR_SEND, &sg, 1);
	post_send(p.a, &wr);
	expect_quiet(p.a.scq, 50, "send without a receive, rnr_retry 7, first 50 ms");
	post_recv(p.b, 0x2600, dst.sge(0, 8192));
	check_wc(wait_one(p.a.scq, "send"), "send after the late receive", 0x2601, IBV_WC_SUCCESS,
		 IBV_WC_SEND);
	check_recv(wait_one(p.b.rcq, "recv"), "late receive", 0x2600, IBV_WC_RECV, 4096,
		   p.b.qpn());
	dst.want(0, msg);
	dst.check("late receive");
}

void case_err_flush_on_error(Dev &d)
{
	Pair p = rc_pair(d);
	Buf dst(d, 8 * 512, "dst");
	for (int i = 0; i < 8; i++)
		post_recv(p.b, 0x2700 + i * 3, dst.sge(i * 512, 512));
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_ERR;
	modify(p.b, a, IBV_QP_STATE, "ERR");
	const auto wcs = wait_wc(p.b.rcq, 8, "flushed recv");
	for (int i = 0; i < 8; i++) {
		check_wc(wcs[i], strf("posted receive %d", i), 0x2700 + i * 3, IBV_WC_WR_FLUSH_ERR);
		EXPECT(wcs[i].qp_num == p.b.qpn(), "flushed receive %d: qp_num 0x%x, want 0x%x", i,
		       wcs[i].qp_num, p.b.qpn());
	}
	expect_no_wc(p.b.rcq, "recv cq after the flush");
	dst.check("flushed receive buffers");
}

/* ------------------------------------------------------------ loopback: events */

void case_comp_channel(Dev &d)
{
	ChanPtr ch = make_channel(d);
	EpOpts o;
	o.ch = ch.get();
	Pair p = make_pair(d, o, o);
	Buf src(d, 4096, "src"), dst(d, 4096, "dst");
	for (int round = 0; round < 3; round++) {
		if (ibv_req_notify_cq(p.a.scq, 0) || ibv_req_notify_cq(p.b.rcq, 0))
			fail("ibv_req_notify_cq failed");
		const auto msg = pattern(300, 0x2800 + round);
		src.put(0, msg);
		post_recv(p.b, 0x2800 + round, dst.sge(0, 4096));
		struct ibv_sge sg = src.sge(0, 300);
		struct ibv_send_wr wr = send_wr(0x2810 + round, IBV_WR_SEND, &sg, 1);
		post_send(p.a, &wr);
		/* one event for each armed CQ, in either order */
		bool got_s = false, got_r = false;
		for (int k = 0; k < 2; k++) {
			void *ctx = nullptr;
			struct ibv_cq *cq = wait_cq_event(ch.get(), "send/recv", &ctx);
			ibv_ack_cq_events(cq, 1);
			EXPECT(ctx == cq->cq_context, "event context %p, CQ's %p", ctx, cq->cq_context);
			if (cq == p.a.scq && !got_s)
				got_s = true;
			else if (cq == p.b.rcq && !got_r)
				got_r = true;
			else
				problem("round %d: unexpected event for CQ %p", round,
					static_cast<void *>(cq));
		}
		const std::string what = strf("round %d", round);
		check_wc(wait_one(p.a.scq, "send"), what + " send", 0x2810 + round, IBV_WC_SUCCESS,
			 IBV_WC_SEND);
		check_recv(wait_one(p.b.rcq, "recv"), what + " recv", 0x2800 + round, IBV_WC_RECV,
			   300, p.b.qpn());
		dst.want(0, msg);
		dst.check(what);
	}
	/* not armed any more: no further events */
	struct ibv_sge sg = src.sge(0, 10);
	post_recv(p.b, 0x2820, dst.sge(0, 4096));
	struct ibv_send_wr wr = send_wr(0x2821, IBV_WR_SEND, &sg, 1);
	post_send(p.a, &wr);
	wait_one(p.a.scq, "send");
	wait_one(p.b.rcq, "recv");
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(ch.get(), &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		problem("completion event on a CQ that was not re-armed");
	}
}

struct LoopCase {
	const char *name;
	void (*fn)(Dev &);
};

const LoopCase LOOP_CASES[] = {
	{"rc_send", case_rc_send},
	{"rc_send_multi_sge", case_rc_send_multi_sge},
	{"rc_send_imm", case_rc_send_imm},
	{"rc_send_inline", case_rc_send_inline},
	{"rc_send_unsignaled", case_rc_send_unsignaled},
	{"rc_send_solicited", case_rc_send_solicited},
	{"rc_write", case_rc_write},
	{"rc_write_imm", case_rc_write_imm},
	{"rc_read", case_rc_read},
	{"rc_atomic_fetch_add", case_rc_atomic_fetch_add},
	{"rc_atomic_cmp_swp", case_rc_atomic_cmp_swp},
	{"rc_chain_100", case_rc_chain_100},
	{"rc_read_fence_send", case_rc_read_fence_send},
	{"uc_send", case_uc_send},
	{"uc_write", case_uc_write},
	{"ud_send", case_ud_send},
	{"ud_send_imm", case_ud_send_imm},
	{"srq_shared", case_srq_shared},
	{"srq_limit", case_srq_limit},
	{"err_bad_rkey", case_err_bad_rkey},
	{"err_read_out_of_bounds", case_err_read_out_of_bounds},
	{"err_write_no_remote_access", case_err_write_no_remote_access},
	{"err_bad_lkey", case_err_bad_lkey},
	{"err_recv_too_small", case_err_recv_too_small},
	{"err_rnr_retry_exceeded", case_err_rnr_retry_exceeded},
	{"err_rnr_retry_recovers", case_err_rnr_retry_recovers},
	{"err_flush_on_error", case_err_flush_on_error},
	{"comp_channel", case_comp_channel},
};

/* ------------------------------------------------------------ two hosts: channel */

/* Line-oriented TCP control channel with deadlines. */
class Chan {
public:
	explicit Chan(int fd = -1) : fd_(fd) {}
	~Chan()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	Chan(const Chan &) = delete;
	Chan &operator=(const Chan &) = delete;
	void reset(int fd) { fd_ = fd; }

	void send(const std::string &line)
	{
		std::string s = line;
		std::replace(s.begin(), s.end(), '\n', ' ');
		s += '\n';
		size_t o = 0;
		while (o < s.size()) {
			const ssize_t n = ::send(fd_, s.data() + o, s.size() - o, MSG_NOSIGNAL);
			if (n <= 0) {
				if (n < 0 && errno == EINTR)
					continue;
				fail("control connection: send: " + errno_text(errno));
			}
			o += static_cast<size_t>(n);
		}
	}

	std::string recv(int timeout_ms)
	{
		const Deadline dl(timeout_ms);
		for (;;) {
			const size_t nl = buf_.find('\n');
			if (nl != std::string::npos) {
				std::string line = buf_.substr(0, nl);
				buf_.erase(0, nl + 1);
				return line;
			}
			struct pollfd pfd = {fd_, POLLIN, 0};
			const int r = poll(&pfd, 1, dl.left_ms());
			if (r == 0)
				fail(strf("control connection: nothing from the peer in %d s",
					  timeout_ms / 1000));
			if (r < 0) {
				if (errno == EINTR)
					continue;
				fail("control connection: poll: " + errno_text(errno));
			}
			char tmp[4096];
			const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
			if (n == 0)
				fail("control connection closed by the peer");
			if (n < 0) {
				if (errno == EINTR)
					continue;
				fail("control connection: recv: " + errno_text(errno));
			}
			buf_.append(tmp, static_cast<size_t>(n));
		}
	}

private:
	int fd_;
	std::string buf_;
};

int chan_timeout_ms()
{
	return 2 * g_timeout_ms + 10000;
}

/* What a case exchanges about one end. */
struct Info {
	union ibv_gid gid = {};
	uint32_t qpn = 0, psn = 0, mtu = 0, rkey = 0;
	uint64_t addr = 0;

	std::string str() const
	{
		std::string g;
		for (uint8_t b : gid.raw)
			g += strf("%02x", b);
		return strf("info gid=%s qpn=%u psn=%u mtu=%u addr=%" PRIu64 " rkey=%u", g.c_str(),
			    qpn, psn, mtu, addr, rkey);
	}
	static bool parse(const std::string &s, Info *out)
	{
		char g[40] = {};
		unsigned qpn, psn, mtu, rkey;
		unsigned long long addr;
		if (std::sscanf(s.c_str(), "info gid=%32s qpn=%u psn=%u mtu=%u addr=%llu rkey=%u", g,
				&qpn, &psn, &mtu, &addr, &rkey) != 6 ||
		    std::strlen(g) != 32)
			return false;
		for (int i = 0; i < 16; i++) {
			unsigned b;
			if (std::sscanf(g + 2 * i, "%2x", &b) != 1)
				return false;
			out->gid.raw[i] = static_cast<uint8_t>(b);
		}
		out->qpn = qpn;
		out->psn = psn;
		out->mtu = mtu;
		out->addr = addr;
		out->rkey = rkey;
		return true;
	}
};

struct Peer {
	Dev &d;
	bool server;
	Chan ch;

	explicit Peer(Dev &dev, bool is_server) : d(dev), server(is_server) {}

	/* Next line from the peer; an abort of the peer fails this side too. */
	std::string next()
	{
		const std::string l = ch.recv(chan_timeout_ms());
		if (l.rfind("abort", 0) == 0)
			throw CaseFail("the peer gave up on this case", true);
		return l;
	}

	void sync(const char *tag)
	{
		ch.send(std::string("sync ") + tag);
		const std::string l = next();
		if (l != std::string("sync ") + tag)
			fail(strf("protocol: waiting for \"sync %s\", got \"%s\"", tag, l.c_str()));
	}

	Info exchange(const Ep &e, const Buf *b)
	{
		Info mine;
		mine.gid = d.gid;
		mine.qpn = e.qpn();
		mine.psn = e.psn;
		mine.mtu = d.port_attr.active_mtu;
		if (b) {
			mine.addr = b->addr(0);
			mine.rkey = b->rkey();
		}
		ch.send(mine.str());
		const std::string l = next();
		Info theirs;
		if (!Info::parse(l, &theirs))
			fail("protocol: bad info line \"" + l + "\"");
		return theirs;
	}

	void connect_to(Ep &e, const Info &r)
	{
		Remote rem;
		rem.gid = r.gid;
		rem.qpn = r.qpn;
		rem.psn = r.psn;
		rem.mtu = static_cast<enum ibv_mtu>(r.mtu);
		connect(d, e, rem);
	}
};

/* Case body with fresh QP and buffer of each side; returns the peer's info. */
struct HostSetup {
	Ep ep;
	Info peer;
};

HostSetup host_setup(Peer &pr, enum ibv_qp_type t, const Buf *b)
{
	HostSetup s;
	EpOpts o;
	o.type = t;
	s.ep = make_ep(pr.d, o);
	s.peer = pr.exchange(s.ep, b);
	pr.connect_to(s.ep, s.peer);
	pr.sync("connected");
	return s;
}

/* ------------------------------------------------------------ two hosts: cases */

/* SEND (and SEND_WITH_IMM) client -> server for each size, RC or UC. */
void host_send_sizes(Peer &pr, enum ibv_qp_type t, const std::vector<size_t> &sizes)
{
	const size_t max = *std::max_element(sizes.begin(), sizes.end());
	Buf buf(pr.d, max + 256, pr.server ? "recv buffer" : "send buffer");
	HostSetup s = host_setup(pr, t, &buf);
	uint64_t id = 0x3000;
	for (size_t i = 0; i <= sizes.size(); i++) {
		/* the last round is a SEND_WITH_IMM */
		const bool imm = i == sizes.size();
		const size_t size = imm ? 777 : sizes[i];
		const auto msg = pattern(size, id);
		const std::string what = strf("%s%s %zu", t == IBV_QPT_RC ? "rc send" : "uc send",
					      imm ? "_imm" : "", size);
		if (pr.server) {
			buf.reset(SENTINEL);
			post_recv(s.ep, id, buf.sge(1, size + 64));
			pr.sync("posted");
			check_recv(wait_one(s.ep.rcq, "recv"), what + " recv", id, IBV_WC_RECV,
				   static_cast<uint32_t>(size), s.ep.qpn(),
				   imm ? int64_t(0xdead0000u + i) : -1);
			buf.want(1, msg);
			buf.check(what);
		} else {
			buf.put(3, msg);
			pr.sync("posted");
			struct ibv_sge sg = buf.sge(3, size);
			struct ibv_send_wr wr = send_wr(id, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
							&sg, size ? 1 : 0);
			wr.imm_data = htobe32(0xdead0000u + static_cast<uint32_t>(i));
			post_send(s.ep, &wr);
			check_wc(wait_one(s.ep.scq, "send"), what + " send", id, IBV_WC_SUCCESS,
				 IBV_WC_SEND);
		}
		pr.sync("checked");
		id++;
	}
}

void host_rc_send(Peer &pr)
{
	host_send_sizes(pr, IBV_QPT_RC, {0, 1, 4096, 65536, MiB});
}

void host_uc_send(Peer &pr)
{
	host_send_sizes(pr, IBV_QPT_UC, {1, 4096, 65536});
}

/* WRITE client -> server memory; UC adds a zero-byte SEND as the marker. */
void host_write_sizes(Peer &pr, enum ibv_qp_type t, const std::vector<size_t> &sizes)
{
	const size_t max = *std::max_element(sizes.begin(), sizes.end());
	Buf buf(pr.d, max + 256, pr.server ? "target" : "source");
	Buf rbuf(pr.d, 64, "recv buffer");
	HostSetup s = host_setup(pr, t, &buf);
	const bool uc = t == IBV_QPT_UC;
	uint64_t id = 0x3100;
	for (size_t i = 0; i <= sizes.size(); i++) {
		/* the last round is a WRITE_WITH_IMM */
		const bool imm = i == sizes.size();
		const size_t size = imm ? 5000 : sizes[i];
		const auto msg = pattern(size, id);
		const std::string what = strf("%s write%s %zu", uc ? "uc" : "rc", imm ? "_imm" : "",
					      size);
		if (pr.server) {
			buf.reset(SENTINEL);
			if (imm || uc)
				post_recv(s.ep, id, rbuf.sge(0, 64));
			pr.sync("ready");
			if (imm)
				check_recv(wait_one(s.ep.rcq, "recv"), what + " recv", id,
					   IBV_WC_RECV_RDMA_WITH_IMM, static_cast<uint32_t>(size),
					   s.ep.qpn(), 0xbeef0000u + i);
			else if (uc)
				check_recv(wait_one(s.ep.rcq, "marker recv"), what + " marker recv",
					   id, IBV_WC_RECV, 0, s.ep.qpn());
			pr.sync("written");
			buf.want(7, msg);
			buf.check(what);
			rbuf.check(what + " recv buffer");
			expect_no_wc(s.ep.rcq, what + " recv cq");
		} else {
			buf.put(0, msg);
			pr.sync("ready");
			struct ibv_sge sg = buf.sge(0, size);
			struct ibv_send_wr wr[2];
			wr[0] = send_wr(id, imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE, &sg,
					1);
			wr[0].imm_data = htobe32(0xbeef0000u + static_cast<uint32_t>(i));
			wr[0].wr.rdma.remote_addr = s.peer.addr + 7;
			wr[0].wr.rdma.rkey = s.peer.rkey;
			wr[1] = send_wr(id + 0x80, IBV_WR_SEND, nullptr, 0);
			wr[0].next = uc && !imm ? &wr[1] : nullptr;
			post_send(s.ep, wr);
			const auto wcs = wait_wc(s.ep.scq, uc && !imm ? 2 : 1, "write");
			check_wc(wcs[0], what, id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
			if (wcs.size() > 1)
				check_wc(wcs[1], what + " marker", id + 0x80, IBV_WC_SUCCESS,
					 IBV_WC_SEND);
			pr.sync("written");
		}
		pr.sync("checked");
		id++;
	}
}

void host_rc_write(Peer &pr)
{
	host_write_sizes(pr, IBV_QPT_RC, {1, 4096, MiB + 13});
}

void host_uc_write(Peer &pr)
{
	host_write_sizes(pr, IBV_QPT_UC, {1, 4096, 65536});
}

void host_rc_read(Peer &pr)
{
	Buf buf(pr.d, MiB + 256, pr.server ? "read source" : "read target");
	HostSetup s = host_setup(pr, IBV_QPT_RC, &buf);
	uint64_t id = 0x3200;
	for (size_t size : {size_t(1), size_t(4096), MiB}) {
		const auto msg = pattern(size, id);
		const std::string what = strf("rc read %zu", size);
		if (pr.server) {
			buf.put(5, msg);
			pr.sync("ready");
			pr.sync("read");
			buf.check(what + " source unchanged");
			expect_no_wc(s.ep.rcq, what + " recv cq");
		} else {
			buf.reset(SENTINEL);
			pr.sync("ready");
			struct ibv_sge sg = buf.sge(11, size);
			struct ibv_send_wr wr = send_wr(id, IBV_WR_RDMA_READ, &sg, 1);
			wr.wr.rdma.remote_addr = s.peer.addr + 5;
			wr.wr.rdma.rkey = s.peer.rkey;
			post_send(s.ep, &wr);
			check_wc(wait_one(s.ep.scq, "read"), what, id, IBV_WC_SUCCESS,
				 IBV_WC_RDMA_READ);
			buf.want(11, msg);
			buf.check(what);
			pr.sync("read");
		}
		pr.sync("checked");
		id++;
	}
}

void host_rc_atomic(Peer &pr)
{
	need_atomics(pr.d);
	Buf buf(pr.d, 4096, pr.server ? "atomic target" : "atomic results");
	HostSetup s = host_setup(pr, IBV_QPT_RC, &buf);
	const uint64_t v = 0x0123456789abcdf0ull, w = 0x1122334455667788ull;
	if (pr.server) {
		buf.put_u64(64, v);
		pr.sync("ready");
		pr.sync("done");
		/* v + 5, swapped to w, a failing compare, then w + 2^32 */
		buf.want_u64(64, w + 0x100000000ull);
		buf.check("remote value after fetch_add, cmp_swp");
	} else {
		pr.sync("ready");
		struct Op {
			enum ibv_wr_opcode op;
			uint64_t cmp_add, swap, old;
			const char *what;
		};
		const Op ops[] = {
			{IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 0, v, "fetch_add 5"},
			{IBV_WR_ATOMIC_CMP_AND_SWP, v + 5, w, v + 5, "cmp_swp equal"},
			{IBV_WR_ATOMIC_CMP_AND_SWP, v, 0x99, w, "cmp_swp unequal"},
			{IBV_WR_ATOMIC_FETCH_AND_ADD, 0x100000000ull, 0, w, "fetch_add 2^32"},
		};
		uint64_t id = 0x3300;
		size_t off = 0;
		for (const Op &o : ops) {
			struct ibv_sge sg = buf.sge(off, 8);
			struct ibv_send_wr wr = send_wr(id, o.op, &sg, 1);
			wr.wr.atomic.remote_addr = s.peer.addr + 64;
			wr.wr.atomic.rkey = s.peer.rkey;
			wr.wr.atomic.compare_add = o.cmp_add;
			wr.wr.atomic.swap = o.swap;
			post_send(s.ep, &wr);
			check_wc(wait_one(s.ep.scq, "atomic"), o.what, id, IBV_WC_SUCCESS,
				 o.op == IBV_WR_ATOMIC_FETCH_AND_ADD ? IBV_WC_FETCH_ADD :
								       IBV_WC_COMP_SWAP);
			buf.want_u64(off, o.old);
			buf.check(std::string(o.what) + ": returned value");
			off += 8;
			id++;
		}
		pr.sync("done");
	}
	pr.sync("checked");
}

void host_ud_send(Peer &pr)
{
	Buf buf(pr.d, GRH_LEN + 4096 + 256, "ud buffer");
	Buf sbuf(pr.d, 4096 + 64, "ud source");
	EpOpts o;
	o.type = IBV_QPT_UD;
	Ep ep = make_ep(pr.d, o);
	const Info peer = pr.exchange(ep, nullptr);
	pr.connect_to(ep, peer);
	const size_t mtu = std::min(pr.d.mtu_bytes(), size_t(128) << peer.mtu);
	pr.sync("connected");
	uint64_t id = 0x3400;
	int round = 0;
	for (size_t size : {size_t(1), size_t(200), mtu, size_t(100)}) {
		const bool imm = round == 3;
		const auto msg = pattern(size, id), reply = pattern(size, id + 1);
		const std::string what = strf("ud send%s %zu", imm ? "_imm" : "", size);
		buf.reset(SENTINEL);
		/* the client sends, the server checks and replies through an AH made
		 * from the completion and the GRH */
		post_recv(ep, id, buf.sge(0, GRH_LEN + size + 64));
		pr.sync("posted");
		if (pr.server) {
			const struct ibv_wc wc = wait_one(ep.rcq, "ud recv");
			check_recv(wc, what + " recv", id, IBV_WC_RECV,
				   static_cast<uint32_t>(GRH_LEN + size), ep.qpn(),
				   imm ? int64_t(0x0d0d0000 + round) : -1);
			if (wc.status != IBV_WC_SUCCESS)
				fail(what + ": receive failed");
			EXPECT(wc.src_qp == peer.qpn, "%s: src_qp 0x%x, want 0x%x", what.c_str(),
			       wc.src_qp, peer.qpn);
			EXPECT(wc.wc_flags & IBV_WC_GRH, "%s: IBV_WC_GRH not set", what.c_str());
			check_grh(buf.p(), peer.gid, pr.d.gid, what);
			buf.accept(0, GRH_LEN);
			buf.want(GRH_LEN, msg);
			buf.check(what + " data after the GRH");
			struct ibv_ah *ah = ibv_create_ah_from_wc(
				pr.d.pd, const_cast<struct ibv_wc *>(&wc),
				reinterpret_cast<struct ibv_grh *>(buf.p()), pr.d.port);
			if (!ah)
				fail("ibv_create_ah_from_wc: " + errno_text(errno));
			AhPtr rah(ah);
			sbuf.put(0, reply);
			struct ibv_sge sg = sbuf.sge(0, size);
			struct ibv_send_wr wr = send_wr(id + 1, IBV_WR_SEND, &sg, 1);
			wr.wr.ud.ah = rah.get();
			wr.wr.ud.remote_qpn = wc.src_qp;
			wr.wr.ud.remote_qkey = UD_QKEY;
			post_send(ep, &wr);
			check_wc(wait_one(ep.scq, "ud reply"), what + " reply", id + 1,
				 IBV_WC_SUCCESS, IBV_WC_SEND);
		} else {
			AhPtr ah = make_ah(pr.d, peer.gid);
			sbuf.put(0, msg);
			struct ibv_sge sg = sbuf.sge(0, size);
			struct ibv_send_wr wr = send_wr(id, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
							&sg, 1);
			wr.imm_data = htobe32(0x0d0d0000u + static_cast<uint32_t>(round));
			wr.wr.ud.ah = ah.get();
			wr.wr.ud.remote_qpn = peer.qpn;
			wr.wr.ud.remote_qkey = UD_QKEY;
			post_send(ep, &wr);
			check_wc(wait_one(ep.scq, "ud send"), what + " send", id, IBV_WC_SUCCESS,
				 IBV_WC_SEND);
			const struct ibv_wc wc = wait_one(ep.rcq, "ud reply recv");
			check_recv(wc, what + " reply recv", id, IBV_WC_RECV,
				   static_cast<uint32_t>(GRH_LEN + size), ep.qpn());
			if (wc.status == IBV_WC_SUCCESS) {
				EXPECT(wc.src_qp == peer.qpn, "%s reply: src_qp 0x%x, want 0x%x",
				       what.c_str(), wc.src_qp, peer.qpn);
				EXPECT(wc.wc_flags & IBV_WC_GRH, "%s reply: IBV_WC_GRH not set",
				       what.c_str());
				check_grh(buf.p(), peer.gid, pr.d.gid, what + " reply");
			}
			buf.accept(0, GRH_LEN);
			buf.want(GRH_LEN, reply);
			buf.check(what + " reply data");
		}
		pr.sync("checked");
		id += 2;
		round++;
	}
}

/* READ server memory, then a fenced SEND of what was read back to the server. */
void host_rc_fence(Peer &pr)
{
	const size_t size = 64 * KiB;
	Buf buf(pr.d, 2 * size + 256, pr.server ? "read source + recv" : "read target");
	HostSetup s = host_setup(pr, IBV_QPT_RC, &buf);
	for (int round = 0; round < 2; round++) {
		const auto msg = pattern(size, 0x3500 + round);
		const std::string what = strf("round %d", round);
		if (pr.server) {
			buf.reset(SENTINEL);
			buf.put(0, msg);
			post_recv(s.ep, 0x3500 + round, buf.sge(size + 128, size + 64));
			pr.sync("ready");
			check_recv(wait_one(s.ep.rcq, "recv"), what + " recv", 0x3500 + round,
				   IBV_WC_RECV, size, s.ep.qpn());
			buf.want(size + 128, msg);
			buf.check(what + ": the fenced SEND carries the data just read");
		} else {
			buf.reset(0);
			pr.sync("ready");
			struct ibv_sge rs = buf.sge(0, size), ss = buf.sge(0, size);
			struct ibv_send_wr wr[2];
			wr[0] = send_wr(0x3510 + round, IBV_WR_RDMA_READ, &rs, 1);
			wr[0].wr.rdma.remote_addr = s.peer.addr;
			wr[0].wr.rdma.rkey = s.peer.rkey;
			wr[0].next = &wr[1];
			wr[1] = send_wr(0x3520 + round, IBV_WR_SEND, &ss, 1,
					IBV_SEND_SIGNALED | IBV_SEND_FENCE);
			post_send(s.ep, wr);
			const auto wcs = wait_wc(s.ep.scq, 2, "read+send");
			check_wc(wcs[0], what + " read", 0x3510 + round, IBV_WC_SUCCESS,
				 IBV_WC_RDMA_READ);
			check_wc(wcs[1], what + " fenced send", 0x3520 + round, IBV_WC_SUCCESS,
				 IBV_WC_SEND);
			buf.want(0, msg);
			buf.check(what + " read");
		}
		pr.sync("checked");
	}
}

struct HostCase {
	const char *name;
	void (*fn)(Peer &);
};

const HostCase HOST_CASES[] = {
	{"rc_send", host_rc_send},   {"rc_write", host_rc_write},
	{"rc_read", host_rc_read},   {"rc_atomic", host_rc_atomic},
	{"rc_read_fence_send", host_rc_fence},
	{"uc_send", host_uc_send},   {"uc_write", host_uc_write},
	{"ud_send", host_ud_send},
};

/* ------------------------------------------------------------ running */

struct Tally {
	int passed = 0, failed = 0;
};

/* With --budget, true (after reporting the case as failed) once it is spent. */
bool over_budget(const char *name, Tally &t)
{
	if (!g_budget_s || seconds_since(g_start) < g_budget_s)
		return false;
	std::printf("FAIL %s (0.00 s): not run: the run's time budget of %d s is spent\n", name,
		    g_budget_s);
	std::fflush(stdout);
	t.failed++;
	return true;
}

void begin_case(const char *name)
{
	g_problems.clear();
	g_notes.clear();
	/* generous: in two-host mode one case may wait out a few peer deadlines */
	const int watchdog_s = std::max(60, 10 * g_timeout_ms / 1000);
	const int n = std::snprintf(g_watchdog_msg, sizeof(g_watchdog_msg),
				    "FAIL %s (%d s): watchdog: case hung\nRESULT: FAIL (watchdog)\n",
				    name, watchdog_s);
	g_watchdog_len = std::min(sizeof(g_watchdog_msg) - 1, static_cast<size_t>(std::max(n, 0)));
	alarm(static_cast<unsigned>(watchdog_s));
}

void end_case(const char *name, Clock::time_point t0, Tally &t)
{
	alarm(0);
	drain_async();
	for (const auto &n : g_notes)
		std::printf("  %s: note: %s\n", name, n.c_str());
	for (const auto &p : g_problems)
		std::printf("  %s: %s\n", name, p.c_str());
	if (g_problems.empty()) {
		std::printf("PASS %s (%.2f s)\n", name, seconds_since(t0));
		t.passed++;
	} else {
		std::printf("FAIL %s (%.2f s): %s\n", name, seconds_since(t0),
			    g_problems.front().c_str());
		t.failed++;
	}
	std::fflush(stdout);
}

void run_loop_case(Dev &d, const LoopCase &c, Tally &t)
{
	const auto t0 = Clock::now();
	begin_case(c.name);
	try {
		c.fn(d);
	} catch (const CaseFail &e) {
		g_problems.emplace_back(e.what());
	} catch (const std::exception &e) {
		g_problems.emplace_back(std::string("exception: ") + e.what());
	}
	end_case(c.name, t0, t);
}

/* Runs one case on this side, then both sides exchange their verdicts. */
void run_host_case(Peer &pr, const HostCase &c, Tally &t)
{
	const auto t0 = Clock::now();
	begin_case(c.name);
	bool peer_aborted = false;
	try {
		try {
			c.fn(pr);
		} catch (const CaseFail &e) {
			/* the peer's own reason comes with its verdict */
			peer_aborted = e.from_peer;
			if (!e.from_peer) {
				g_problems.emplace_back(e.what());
				pr.ch.send(std::string("abort ") + e.what());
			}
		} catch (const std::exception &e) {
			g_problems.emplace_back(std::string("exception: ") + e.what());
			pr.ch.send("abort exception");
		}
		std::string mine = "ok";
		if (!g_problems.empty() || peer_aborted) {
			mine = "fail";
			for (const auto &p : g_problems)
				mine += " | " + p;
			if (g_problems.empty())
				mine += " | stopped when the peer gave up";
		}
		pr.ch.send("done " + mine);
		for (;;) {
			const std::string l = pr.ch.recv(chan_timeout_ms());
			if (l.rfind("done ", 0) != 0)
				continue; /* syncs and aborts of a case given up */
			if (l != "done ok")
				g_problems.push_back(strf("%s says: %s", pr.server ? "client" : "server",
							  l.substr(5).c_str()));
			else if (peer_aborted)
				problem("the peer gave up on this case");
			break;
		}
	} catch (const CaseFail &e) {
		g_problems.emplace_back(e.what());
		end_case(c.name, t0, t);
		throw; /* the control connection is gone */
	}
	end_case(c.name, t0, t);
}

int tcp_listen(uint16_t port)
{
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	int one = 1, zero = 0;
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		struct sockaddr_in6 a = {};
		a.sin6_family = AF_INET6;
		a.sin6_addr = in6addr_any;
		a.sin6_port = htons(port);
		if (bind(fd, reinterpret_cast<struct sockaddr *>(&a), sizeof(a)) == 0 &&
		    listen(fd, 1) == 0)
			return fd;
		close(fd);
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	a.sin_port = htons(port);
	if (bind(fd, reinterpret_cast<struct sockaddr *>(&a), sizeof(a)) || listen(fd, 1)) {
		close(fd);
		return -1;
	}
	return fd;
}

int tcp_connect(const std::string &host, uint16_t port, int timeout_ms)
{
	const Deadline dl(timeout_ms);
	for (;;) {
		struct addrinfo hints = {}, *res = nullptr;
		hints.ai_socktype = SOCK_STREAM;
		const int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
		if (gai) {
			std::fprintf(stderr, "ERROR %s: %s\n", host.c_str(), gai_strerror(gai));
			return -1;
		}
		for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
			const int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
			if (fd < 0)
				continue;
			if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
				freeaddrinfo(res);
				return fd;
			}
			close(fd);
		}
		freeaddrinfo(res);
		if (dl.passed()) {
			std::fprintf(stderr, "ERROR connect %s port %u: %s\n", host.c_str(), port,
				     errno_text(errno).c_str());
			return -1;
		}
		sleep_ms(200);
	}
}

int run_server(Dev &d, uint16_t port, Tally &t)
{
	const int lfd = tcp_listen(port);
	if (lfd < 0) {
		std::fprintf(stderr, "ERROR listen on port %u: %s\n", port, errno_text(errno).c_str());
		return 2;
	}
	std::printf("listening on port %u\n", port);
	std::fflush(stdout);
	const int fd = accept(lfd, nullptr, nullptr);
	close(lfd);
	if (fd < 0) {
		std::fprintf(stderr, "ERROR accept: %s\n", errno_text(errno).c_str());
		return 2;
	}
	const int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	Peer pr(d, true);
	pr.ch.reset(fd);
	try {
		for (;;) {
			const std::string l = pr.ch.recv(10 * chan_timeout_ms());
			if (l == "bye")
				break;
			if (l.rfind("case ", 0) != 0)
				continue;
			const std::string name = l.substr(5);
			const HostCase *c = nullptr;
			for (const HostCase &hc : HOST_CASES)
				if (name == hc.name)
					c = &hc;
			if (!c) {
				pr.ch.send("done fail | unknown case " + name);
				continue;
			}
			run_host_case(pr, *c, t);
		}
	} catch (const CaseFail &e) {
		std::printf("control connection: %s\n", e.what());
		t.failed++;
	}
	return 0;
}

int run_client(Dev &d, const std::string &host, uint16_t port,
	       const std::vector<const HostCase *> &cases, Tally &t)
{
	const int fd = tcp_connect(host, port, 30000);
	if (fd < 0)
		return 2;
	const int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	Peer pr(d, false);
	pr.ch.reset(fd);
	try {
		for (const HostCase *c : cases) {
			if (over_budget(c->name, t))
				continue;
			pr.ch.send(std::string("case ") + c->name);
			run_host_case(pr, *c, t);
		}
		pr.ch.send("bye");
	} catch (const CaseFail &e) {
		std::printf("control connection: %s\n", e.what());
		t.failed++;
	}
	return 0;
}

/* ------------------------------------------------------------ main */

struct Options {
	std::string dev, host;
	uint8_t port = 1;
	int gid = -1;
	bool ipv6 = false, server = false, client = false, list = false;
	std::vector<std::string> cases;
	uint16_t tcp_port = DEFAULT_TCP_PORT;
};

void usage(const char *prog)
{
	std::fprintf(stderr,
		     "usage: %s -d DEV [-i PORT] [--gid N | --ipv6] [--case NAME]... [--timeout S]\n"
		     "          [--budget S]\n"
		     "       %s -d DEV [...] --server [--port P]\n"
		     "       %s -d DEV [...] --client HOST [--port P]\n"
		     "       %s --list [--server | --client]\n",
		     prog, prog, prog, prog);
}

bool parse_args(int argc, char **argv, Options *o)
{
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		auto val = [&](const char **out) {
			if (i + 1 >= argc)
				return false;
			*out = argv[++i];
			return true;
		};
		auto num = [&](long lo, long hi, long *out) {
			const char *s;
			if (!val(&s))
				return false;
			char *end;
			*out = std::strtol(s, &end, 10);
			return *s && !*end && *out >= lo && *out <= hi;
		};
		const char *s;
		long n;
		if (a == "-d" || a == "--device") {
			if (!val(&s))
				return false;
			o->dev = s;
		} else if (a == "-i" || a == "--ib-port") {
			if (!val(&s) || !sroce_tool::parse_port(s, &o->port))
				return false;
		} else if (a == "--gid") {
			if (!num(0, 65535, &n))
				return false;
			o->gid = static_cast<int>(n);
		} else if (a == "--ipv6") {
			o->ipv6 = true;
		} else if (a == "--case") {
			if (!val(&s))
				return false;
			o->cases.emplace_back(s);
		} else if (a == "--timeout") {
			if (!num(1, 3600, &n))
				return false;
			g_timeout_ms = static_cast<int>(n) * 1000;
		} else if (a == "--budget") {
			if (!num(1, 86400, &n))
				return false;
			g_budget_s = static_cast<int>(n);
		} else if (a == "--port") {
			if (!num(1, 65535, &n))
				return false;
			o->tcp_port = static_cast<uint16_t>(n);
		} else if (a == "--server") {
			o->server = true;
		} else if (a == "--client") {
			if (!val(&s))
				return false;
			o->client = true;
			o->host = s;
		} else if (a == "--list") {
			o->list = true;
		} else {
			return false;
		}
	}
	if (o->server && o->client)
		return false;
	return o->list || !o->dev.empty();
}

bool open_dev(const Options &o, Dev &d)
{
	const sroce_tool::DeviceList devices;
	struct ibv_device *dev = devices.find(o.dev.c_str());
	if (!dev)
		return false;
	d.name = o.dev;
	d.port = o.port;
	d.ctx = ibv_open_device(dev);
	if (!d.ctx) {
		std::fprintf(stderr, "ERROR ibv_open_device %s: %s\n", o.dev.c_str(),
			     errno_text(errno).c_str());
		return false;
	}
	fcntl(d.ctx->async_fd, F_SETFL, fcntl(d.ctx->async_fd, F_GETFL) | O_NONBLOCK);
	if (ibv_query_device(d.ctx, &d.attr) || ibv_query_port(d.ctx, d.port, &d.port_attr)) {
		std::fprintf(stderr, "ERROR query device/port: %s\n", errno_text(errno).c_str());
		return false;
	}
	d.gid_index = o.gid >= 0 ? o.gid : pick_gid(d, o.ipv6);
	if (d.gid_index < 0) {
		std::fprintf(stderr, "ERROR %s port %u: no RoCE v2 GID with %s\n", o.dev.c_str(),
			     d.port, o.ipv6 ? "a global IPv6 address" : "an IPv4 address");
		return false;
	}
	if (ibv_query_gid(d.ctx, d.port, d.gid_index, &d.gid)) {
		std::fprintf(stderr, "ERROR ibv_query_gid %d: %s\n", d.gid_index,
			     errno_text(errno).c_str());
		return false;
	}
	d.pd = ibv_alloc_pd(d.ctx);
	if (!d.pd) {
		std::fprintf(stderr, "ERROR ibv_alloc_pd: %s\n", errno_text(errno).c_str());
		return false;
	}
	std::printf("device %s port %u: gid[%d] %s (%s), state %s, active_mtu %zu, max_sge %d, "
		    "max_qp_wr %d, max_qp_rd_atom %d/%d, atomic_cap %d, max_srq %d\n",
		    d.name.c_str(), d.port, d.gid_index, gid_str(d.gid).c_str(),
		    gid_type(d, d.gid_index).c_str(), ibv_port_state_str(d.port_attr.state),
		    d.mtu_bytes(), d.attr.max_sge, d.attr.max_qp_wr, d.attr.max_qp_rd_atom,
		    d.attr.max_qp_init_rd_atom, d.attr.atomic_cap, d.attr.max_srq);
	std::fflush(stdout);
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	if (!parse_args(argc, argv, &o)) {
		usage(argv[0]);
		return 2;
	}
	const bool host_mode = o.server || o.client;
	if (o.list) {
		if (host_mode)
			for (const HostCase &c : HOST_CASES)
				std::printf("%s\n", c.name);
		else
			for (const LoopCase &c : LOOP_CASES)
				std::printf("%s\n", c.name);
		return 0;
	}
	/* the selection is checked before anything is opened */
	std::vector<const LoopCase *> loop;
	std::vector<const HostCase *> host;
	for (const LoopCase &c : LOOP_CASES)
		if (o.cases.empty() || std::find(o.cases.begin(), o.cases.end(), c.name) != o.cases.end())
			loop.push_back(&c);
	for (const HostCase &c : HOST_CASES)
		if (o.cases.empty() || std::find(o.cases.begin(), o.cases.end(), c.name) != o.cases.end())
			host.push_back(&c);
	for (const std::string &n : o.cases) {
		const bool known = host_mode ?
			std::any_of(host.begin(), host.end(), [&](auto *c) { return n == c->name; }) :
			std::any_of(loop.begin(), loop.end(), [&](auto *c) { return n == c->name; });
		if (!known) {
			std::fprintf(stderr, "ERROR unknown case %s (see --list)\n", n.c_str());
			return 2;
		}
	}
	if (o.server && !o.cases.empty()) {
		std::fprintf(stderr, "ERROR --case is the client's choice\n");
		return 2;
	}

	signal(SIGALRM, watchdog);
	Dev d;
	if (!open_dev(o, d))
		return 2;
	g_dev = &d;

	Tally t;
	int rc = 0;
	if (o.server)
		rc = run_server(d, o.tcp_port, t);
	else if (o.client)
		rc = run_client(d, o.host, o.tcp_port, host, t);
	else
		for (const LoopCase *c : loop)
			if (!over_budget(c->name, t))
				run_loop_case(d, *c, t);
	if (rc)
		return rc;

	g_dev = nullptr;
	ibv_dealloc_pd(d.pd);
	ibv_close_device(d.ctx);
	std::printf("RESULT: %s (%d passed, %d failed)\n", t.failed ? "FAIL" : "PASS", t.passed,
		    t.failed);
	return t.failed ? 1 : 0;
}
