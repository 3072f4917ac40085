// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-rdma-test: reporting, buffers, QP ends, posting, completion checks
 * and the running of one case (rdma_test.h).
 */
#include "rdma_test.h"

#include <algorithm>
#include <cinttypes>
#include <csignal>
#include <cstdarg>
#include <cstring>

#include <endian.h>
#include <netinet/in.h>
#include <unistd.h>

namespace rdma_test {

int g_timeout_ms = 20000;
int g_budget_s = 0;
Dev *g_dev;

/* ------------------------------------------------------------ reporting */

std::vector<std::string> g_problems;
std::vector<std::string> g_notes;

void problem(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	g_problems.emplace_back(buf);
}

void note(const std::string &s)
{
	g_notes.push_back(s);
}

const char *wc_opcode_str(int op)
{
	const char *name = wc_opcode_name(op);
	return name ? name : "?";
}

void drain_async()
{
	if (!g_dev)
		return;
	struct ibv_async_event ev;
	while (get_async_event(g_dev->ctx, &ev, 0)) {
		note(strf("async event %s", ibv_event_type_str(ev.event_type)));
		ibv_ack_async_event(&ev);
	}
}

bool wait_async(enum ibv_event_type want, struct ibv_async_event *out, int timeout_ms)
{
	const Deadline dl(timeout_ms);
	struct ibv_async_event ev;
	while (get_async_event(g_dev->ctx, &ev, dl.left_ms())) {
		if (ev.event_type == want) {
			*out = ev;
			return true;
		}
		note(strf("async event %s", ibv_event_type_str(ev.event_type)));
		ibv_ack_async_event(&ev);
	}
	return false;
}

void install_destroy_hooks()
{
	set_destroy_report([](const std::string &s) { problem("%s", s.c_str()); });
	set_before_destroy([](struct ibv_comp_channel *ch) {
		if (ch) {
			for (int n = ack_cq_events(ch); n > 0; n--)
				note("unconsumed completion event");
		}
		drain_async();
	});
}

/* ------------------------------------------------------------ buffers */

Buf::Buf(Dev &d, size_t len, const char *name, int access)
	: len_(len), name_(name), want_(len), map_((len + 4095) & ~size_t(4095))
{
	if (!map_)
		fail(strf("mmap %zu: %s", len, errno_text(errno).c_str()));
	reset(SENTINEL);
	mr_ = ibv_reg_mr(d.pd, map_.p(), len, access);
	if (!mr_)
		fail(strf("ibv_reg_mr %s (%zu bytes, access 0x%x): %s", name, len, access,
			  errno_text(errno).c_str()));
}

Buf::~Buf()
{
	if (mr_ && ibv_dereg_mr(mr_))
		problem("ibv_dereg_mr %s: %s", name_.c_str(), errno_text(errno).c_str());
}

struct ibv_sge Buf::sge(size_t off, size_t n) const
{
	struct ibv_sge s = {};
	s.addr = addr(off);
	s.length = static_cast<uint32_t>(n);
	s.lkey = lkey();
	return s;
}

void Buf::reset(uint8_t v)
{
	std::memset(p(), v, len_);
	std::memset(want_.data(), v, len_);
}

void Buf::put(size_t off, const uint8_t *src, size_t n)
{
	std::memcpy(p(off), src, n);
	std::memcpy(want_.data() + off, src, n);
}

void Buf::want(size_t off, const uint8_t *src, size_t n)
{
	std::memcpy(want_.data() + off, src, n);
}

void Buf::accept(size_t off, size_t n)
{
	std::memcpy(want_.data() + off, p(off), n);
}

bool Buf::check(const std::string &what) const
{
	const Mismatch m = compare(p(), want_.data(), len_);
	if (!m.count)
		return true;
	const uint8_t got = *p(m.first), want = want_[m.first];
	problem("%s: %s: %zu bytes differ in [%zu, %zu], at %zu got 0x%02x want 0x%02x%s",
		what.c_str(), name_.c_str(), m.count, m.first, m.last, m.first, got, want,
		want == SENTINEL ? " (should be untouched)" :
		got == SENTINEL	 ? " (not written)" : "");
	return false;
}

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

void put_pieces(const std::vector<Piece> &ps, const std::vector<uint8_t> &msg)
{
	size_t o = 0;
	for (const Piece &p : ps) {
		p.b->put(p.off, msg.data() + o, p.len);
		o += p.len;
	}
}

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

ChannelPtr make_channel(Dev &d)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(d.ctx);
	if (!ch)
		fail("ibv_create_comp_channel: " + errno_text(errno));
	set_nonblocking(ch->fd);
	return ChannelPtr(ch);
}

CqPtr make_cq(Dev &d, int cqe, struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq = ibv_create_cq(d.ctx, std::min(cqe, d.attr.max_cqe), nullptr, ch, 0);
	if (!cq)
		fail("ibv_create_cq: " + errno_text(errno));
	return CqPtr(cq);
}

AhPtr make_ah(Dev &d, const union ibv_gid &dgid)
{
	struct ibv_ah_attr a = ah_attr_to(d.port, d.gid_index, dgid);
	struct ibv_ah *ah = ibv_create_ah(d.pd, &a);
	if (!ah)
		fail("ibv_create_ah: " + errno_text(errno));
	return AhPtr(ah);
}

namespace {

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

struct ibv_cq *own_or_shared(Dev &d, struct ibv_cq *shared, CqPtr &own,
			     struct ibv_comp_channel *ch)
{
	if (shared)
		return shared;
	own = make_cq(d, 512, ch);
	return own.get();
}

} // namespace

Ep make_ep(Dev &d, const EpOpts &o)
{
	Ep e;
	e.type = o.type;
	e.scq = own_or_shared(d, o.scq, e.own_scq, o.ch);
	e.rcq = own_or_shared(d, o.rcq, e.own_rcq, o.ch);
	struct ibv_qp_init_attr ia = qp_init_attr(e.scq, e.rcq, o);
	struct ibv_qp *qp;
	if (o.send_ops) {
		struct ibv_qp_init_attr_ex x = {};
		x.qp_context = ia.qp_context;
		x.send_cq = ia.send_cq;
		x.recv_cq = ia.recv_cq;
		x.srq = ia.srq;
		x.cap = ia.cap;
		x.qp_type = ia.qp_type;
		x.sq_sig_all = ia.sq_sig_all;
		x.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		x.pd = d.pd;
		x.send_ops_flags = o.send_ops;
		qp = ibv_create_qp_ex(d.ctx, &x);
		ia.cap = x.cap;
	} else {
		qp = ibv_create_qp(d.pd, &ia);
	}
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

Remote remote_of(const Dev &d, const Ep &e)
{
	Remote r;
	r.gid = d.gid;
	r.qpn = e.qpn();
	r.psn = e.psn;
	r.mtu = d.port_attr.active_mtu;
	return r;
}

void connect(Dev &d, Ep &e, const Remote &r, const ConnOpts &c)
{
	Path p;
	p.type = e.type;
	p.port = d.port;
	p.access = IBV_ACCESS_REMOTE_WRITE;
	if (e.type == IBV_QPT_RC)
		p.access |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	p.qkey = UD_QKEY;
	p.sgid_index = d.gid_index;
	p.dgid = r.gid;
	p.dest_qpn = r.qpn;
	p.rq_psn = r.psn;
	p.mtu = std::min(d.port_attr.active_mtu, r.mtu);
	p.max_dest_rd_atomic = static_cast<uint8_t>(std::min(16, d.attr.max_qp_rd_atom));
	p.min_rnr_timer = c.min_rnr_timer;
	p.sq_psn = e.psn;
	p.timeout = c.timeout;
	p.retry_cnt = c.retry_cnt;
	p.rnr_retry = c.rnr_retry;
	p.max_rd_atomic = static_cast<uint8_t>(std::min(16, d.attr.max_qp_init_rd_atom));
	const char *step = "";
	if (const int err = connect_qp(e.qp.get(), p, &step))
		fail(strf("ibv_modify_qp to %s: %s", step, errno_text(err).c_str()));
}

Pair make_pair(Dev &d, EpOpts oa, EpOpts ob, ConnOpts ca, ConnOpts cb)
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
	const int st = sroce_tool::qp_state(e.qp.get());
	if (st < 0)
		fail("ibv_query_qp: " + errno_text(errno));
	return static_cast<enum ibv_qp_state>(st);
}

void need_atomics(Dev &d)
{
	if (d.attr.atomic_cap == IBV_ATOMIC_NONE)
		fail("device reports atomic_cap IBV_ATOMIC_NONE");
}

void need_sges(Dev &d, int n)
{
	if (d.attr.max_sge < n)
		fail(strf("device max_sge %d < %d", d.attr.max_sge, n));
}

/* ------------------------------------------------------------ posting */

namespace {

void remote_at(struct ibv_send_wr &wr, uint64_t addr, uint32_t rkey)
{
	if (wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = addr;
		wr.wr.atomic.rkey = rkey;
	} else {
		wr.wr.rdma.remote_addr = addr;
		wr.wr.rdma.rkey = rkey;
	}
}

} // namespace

void remote_at(struct ibv_send_wr &wr, const Buf &b, size_t off)
{
	remote_at(wr, b.addr(off), b.rkey());
}

void remote_at(struct ibv_send_wr &wr, const QpInfo &peer, size_t off)
{
	remote_at(wr, peer.addr + off, peer.rkey);
}

struct ibv_send_wr send_wr(uint64_t id, enum ibv_wr_opcode op, struct ibv_sge *sg, int n,
			   unsigned flags)
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

namespace {

void post_recv_to(struct ibv_qp *qp, struct ibv_srq *srq, uint64_t id, struct ibv_sge *sg,
		  int n)
{
	struct ibv_recv_wr wr = {}, *bad = nullptr;
	wr.wr_id = id;
	wr.sg_list = n ? sg : nullptr;
	wr.num_sge = n;
	const int rc = srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad);
	if (rc)
		fail(strf("%s (wr_id 0x%" PRIx64 "): %s",
			  srq ? "ibv_post_srq_recv" : "ibv_post_recv", id,
			  errno_text(std::abs(rc)).c_str()));
}

} // namespace

void post_recv(Ep &e, uint64_t id, struct ibv_sge *sg, int n)
{
	post_recv_to(e.qp.get(), nullptr, id, sg, n);
}

void post_recv(Ep &e, uint64_t id, struct ibv_sge sg)
{
	post_recv_to(e.qp.get(), nullptr, id, &sg, 1);
}

void post_srq_recv(struct ibv_srq *srq, uint64_t id, struct ibv_sge sg)
{
	post_recv_to(nullptr, srq, id, &sg, 1);
}

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

/* ------------------------------------------------------------ completions */

std::string wc_str(const struct ibv_wc &wc)
{
	return strf("{wr_id 0x%" PRIx64 " %s opcode %s len %u qp 0x%x flags 0x%x}", wc.wr_id,
		    ibv_wc_status_str(wc.status), wc_opcode_str(wc.opcode), wc.byte_len,
		    wc.qp_num, wc.wc_flags);
}

std::vector<struct ibv_wc> wait_wc(struct ibv_cq *cq, int n, const char *what, int timeout_ms)
{
	std::vector<struct ibv_wc> out;
	const int rc = poll_cq(cq, n, timeout_ms, out);
	if (rc < 0)
		fail(strf("ibv_poll_cq (%s): %d", what, rc));
	if (rc) {
		std::string got;
		for (const auto &w : out) {
			got += ' ';
			got += wc_str(w);
		}
		fail(strf("timed out after %d s waiting for %d %s completion(s), got %zu%s%s",
			  timeout_ms / 1000, n, what, out.size(), got.empty() ? "" : ":",
			  got.c_str()));
	}
	return out;
}

struct ibv_wc wait_one(struct ibv_cq *cq, const char *what)
{
	return wait_wc(cq, 1, what)[0];
}

bool check_wc(const struct ibv_wc &wc, const std::string &what, uint64_t wr_id,
	      enum ibv_wc_status st, int opcode)
{
	const bool ok = wc.wr_id == wr_id && wc.status == st &&
			(opcode < 0 || st != IBV_WC_SUCCESS || wc.opcode == opcode);
	if (!ok)
		problem("%s: got %s, want wr_id 0x%" PRIx64 " %s%s%s", what.c_str(),
			wc_str(wc).c_str(), wr_id, ibv_wc_status_str(st),
			opcode >= 0 ? " opcode " : "", opcode >= 0 ? wc_opcode_str(opcode) : "");
	return ok;
}

void check_recv(const struct ibv_wc &wc, const std::string &what, uint64_t wr_id, int opcode,
		uint32_t byte_len, uint32_t qpn, int64_t imm)
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

void expect_no_wc(struct ibv_cq *cq, const std::string &what)
{
	struct ibv_wc wc[4];
	const int k = ibv_poll_cq(cq, 4, wc);
	for (int i = 0; i < k; i++)
		problem("%s: unexpected completion %s", what.c_str(), wc_str(wc[i]).c_str());
}

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

struct ibv_cq *wait_cq_event(struct ibv_comp_channel *ch, const char *what, void **ctx_out)
{
	struct ibv_cq *cq;
	void *ctx;
	const int rc = get_cq_event(ch, &cq, &ctx, g_timeout_ms);
	if (rc == ETIMEDOUT)
		fail(strf("timed out after %d s waiting for a completion event (%s)",
			  g_timeout_ms / 1000, what));
	if (rc)
		fail(strf("ibv_get_cq_event (%s): %s", what, errno_text(rc).c_str()));
	if (ctx_out)
		*ctx_out = ctx;
	return cq;
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

/* ------------------------------------------------------------ running */

namespace {

const Clock::time_point g_start = Clock::now();

/* Prepared when a case starts: the watchdog handler only writes it. */
char g_watchdog_msg[256];
size_t g_watchdog_len;

} // namespace

void watchdog(int)
{
	if (write(STDOUT_FILENO, g_watchdog_msg, g_watchdog_len) < 0)
		_exit(4);
	_exit(3);
}

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

} // namespace rdma_test
