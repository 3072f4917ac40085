// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-rdma-test, two-host cases: the client (requester) tells the server
 * (responder) which case to run over a TCP control connection; the two
 * exchange their QP descriptions per case, check what they can see and
 * exchange verdicts.
 */
#include <algorithm>
#include <cinttypes>
#include <cstring>

#include <endian.h>
#include <unistd.h>

#include "rdma_test.h"

namespace rdma_test {
namespace {

int chan_timeout_ms()
{
	return 2 * g_timeout_ms + 10000;
}


} // namespace

struct Peer {
	Dev &d;
	bool server;
	LineChannel ch;

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

	QpInfo exchange(const Ep &e, const Buf *b)
	{
		QpInfo mine;
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
		QpInfo theirs;
		if (!QpInfo::parse(l, &theirs))
			fail("protocol: bad info line \"" + l + "\"");
		return theirs;
	}

	void connect_to(Ep &e, const QpInfo &r)
	{
		Remote rem;
		rem.gid = r.gid;
		rem.qpn = r.qpn;
		rem.psn = r.psn;
		rem.mtu = static_cast<enum ibv_mtu>(r.mtu);
		connect(d, e, rem);
	}
};

namespace {

/* Case body with fresh QP and buffer of each side; returns the peer's info. */
struct HostSetup {
	Ep ep;
	QpInfo peer;
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
			remote_at(wr[0], s.peer, 7);
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

/*
 * SENDs client -> server whose RC QP takes its receives from an SRQ: each
 * message lands whole in the slot of the receive its completion names, the
 * other slots stay untouched; every receive is taken exactly once.
 */
void host_srq_send(Peer &pr)
{
	const std::vector<size_t> sizes = {1, 4096, 65536, MiB + 5, 100, 0};
	constexpr size_t SLOT = MiB + 64;
	constexpr int RECVS = 6;
	Buf buf(pr.d, pr.server ? RECVS * SLOT : SLOT, pr.server ? "srq buffers" : "send buffer");
	SrqPtr srq;
	HostSetup s;
	EpOpts o;
	if (pr.server) {
		srq = make_srq(pr.d, 16);
		o.srq = srq.get();
		o.recv_wr = o.recv_sge = 0;
		buf.reset(SENTINEL);
		for (int j = 0; j < RECVS; j++)
			post_srq_recv(srq.get(), 0x3800 + j, buf.sge(j * SLOT, SLOT));
	}
	s.ep = make_ep(pr.d, o);
	s.peer = pr.exchange(s.ep, nullptr);
	pr.connect_to(s.ep, s.peer);
	pr.sync("connected");
	std::vector<bool> used(RECVS);
	uint64_t id = 0x3900;
	for (size_t size : sizes) {
		const auto msg = pattern(size, id);
		const std::string what = strf("srq send %zu", size);
		if (pr.server) {
			pr.sync("ready");
			const struct ibv_wc wc = wait_one(s.ep.rcq, "srq recv");
			const uint64_t j = wc.wr_id - 0x3800;
			if (wc.wr_id < 0x3800 || j >= RECVS || used[j])
				fail(strf("%s: unknown or reused receive in %s", what.c_str(),
					  wc_str(wc).c_str()));
			used[j] = true;
			check_recv(wc, what + " recv", wc.wr_id, IBV_WC_RECV,
				   static_cast<uint32_t>(size), s.ep.qpn());
			buf.want(j * SLOT, msg);
			buf.check(what);
		} else {
			buf.put(0, msg);
			pr.sync("ready");
			struct ibv_sge sg = buf.sge(0, size);
			struct ibv_send_wr wr = send_wr(id, IBV_WR_SEND, &sg, size ? 1 : 0);
			post_send(s.ep, &wr);
			check_wc(wait_one(s.ep.scq, "send"), what + " send", id, IBV_WC_SUCCESS,
				 IBV_WC_SEND);
		}
		pr.sync("checked");
		id++;
	}
	if (pr.server)
		expect_no_wc(s.ep.rcq, "srq recv cq");
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
			remote_at(wr, s.peer, 5);
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
			remote_at(wr, s.peer, 64);
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

/*
 * ATOMIC WRITE (IBTA 1.5) client -> server: two 8-byte stores through
 * ibv_wr_atomic_write, each completed with IBV_WC_ATOMIC_WRITE; the server
 * sees both values and nothing else changed around them.
 */
void host_rc_atomic_write(Peer &pr)
{
	Buf buf(pr.d, 4096, pr.server ? "atomic write target" : "atomic write source");
	EpOpts o;
	o.type = IBV_QPT_RC;
	o.send_ops = IBV_QP_EX_WITH_ATOMIC_WRITE;
	HostSetup s;
	s.ep = make_ep(pr.d, o);
	s.peer = pr.exchange(s.ep, &buf);
	pr.connect_to(s.ep, s.peer);
	pr.sync("connected");
	const uint64_t vals[] = {0x0123456789abcdefull, 0xfedcba9876543210ull};
	if (pr.server) {
		buf.reset(SENTINEL);
		pr.sync("ready");
		pr.sync("done");
		buf.want_u64(64, vals[0]);
		buf.want_u64(72, vals[1]);
		buf.check("remote values after two ATOMIC WRITEs");
	} else {
		pr.sync("ready");
		struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(s.ep.qp.get());
		uint64_t id = 0x3400;
		for (size_t i = 0; i < 2; i++) {
			ibv_wr_start(qpx);
			qpx->wr_id = id + i;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_atomic_write(qpx, s.peer.rkey, s.peer.addr + 64 + 8 * i, &vals[i]);
			const int err = ibv_wr_complete(qpx);
			if (err)
				fail(strf("ibv_wr_complete: %s", errno_text(err).c_str()));
			check_wc(wait_one(s.ep.scq, "atomic write"), strf("atomic write %zu", i),
				 id + i, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
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
	const QpInfo peer = pr.exchange(ep, nullptr);
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
			remote_at(wr[0], s.peer, 0);
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

} // namespace

const std::vector<HostCase> HOST_CASES = {
	{"rc_send", host_rc_send},   {"rc_write", host_rc_write},
	{"rc_read", host_rc_read},   {"rc_atomic", host_rc_atomic},
	{"rc_atomic_write", host_rc_atomic_write},
	{"rc_read_fence_send", host_rc_fence},
	{"uc_send", host_uc_send},   {"uc_write", host_uc_write},
	{"ud_send", host_ud_send},   {"srq_send", host_srq_send},
};

namespace {

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

} // namespace

int run_server(Dev &d, uint16_t port, Tally &t)
{
	const int lfd = tcp_listen(port);
	if (lfd < 0) {
		std::fprintf(stderr, "ERROR listen on port %u: %s\n", port, errno_text(errno).c_str());
		return 2;
	}
	std::printf("listening on port %u\n", port);
	std::fflush(stdout);
	const int fd = tcp_accept_one(lfd);
	if (fd < 0) {
		std::fprintf(stderr, "ERROR accept: %s\n", errno_text(errno).c_str());
		return 2;
	}
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

} // namespace rdma_test
