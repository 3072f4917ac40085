// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-rdma-test, loopback cases: one device, fresh QP pairs per case
 * connected to each other through the device's own RoCE v2 GID.
 */
#include <algorithm>
#include <cinttypes>
#include <cstring>

#include <endian.h>

#include "rdma_test.h"

namespace rdma_test {
namespace {
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
	need_sges(d, 3);
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
	ChannelPtr ch = make_channel(d);
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
	/*
	 * An unsuccessful completion counts as solicited (ibv_req_notify_cq(3)):
	 * the receive flushed when the QP enters ERR raises the event.
	 */
	post_recv(p.b, 0x730, dst.sge(0, 4096));
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_ERR;
	if (const int rc = ibv_modify_qp(p.b.qp.get(), &a, IBV_QP_STATE))
		fail(strf("ibv_modify_qp to ERR: %s", errno_text(std::abs(rc)).c_str()));
	struct ibv_cq *ev = wait_cq_event(ch.get(), "flushed recv, solicited_only=1", nullptr);
	ibv_ack_cq_events(ev, 1);
	EXPECT(ev == p.b.rcq, "flushed recv: event for another CQ");
	check_wc(wait_one(p.b.rcq, "flushed recv"), "flushed recv", 0x730, IBV_WC_WR_FLUSH_ERR);
}

/* ------------------------------------------------------------ loopback: RC RDMA */

/*
 * One RDMA WRITE or READ from a between local pieces and remote memory at
 * raddr (rkey); its completion must have status st.
 */
void rdma_once(Ep &a, enum ibv_wr_opcode op, const std::vector<Piece> &local, uint64_t raddr,
	       uint32_t rkey, uint64_t id, const std::string &what,
	       enum ibv_wc_status st = IBV_WC_SUCCESS)
{
	const bool write = op == IBV_WR_RDMA_WRITE;
	auto sg = sges(local);
	struct ibv_send_wr wr = send_wr(id, op, sg.data(), static_cast<int>(sg.size()));
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	post_send(a, &wr);
	check_wc(wait_one(a.scq, write ? "write" : "read"), what, id, st,
		 write ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ);
}

void case_rc_write(Dev &d)
{
	need_sges(d, 3);
	Pair p = rc_pair(d);
	Buf src(d, MiB + 64, "src"), tgt(d, MiB + 256, "target");
	uint64_t id = 0x800;
	for (size_t size : {size_t(1), size_t(4096), MiB + 13}) {
		tgt.reset(SENTINEL);
		const auto msg = pattern(size, id);
		src.put(0, msg);
		const std::string what = strf("write %zu", size);
		rdma_once(p.a, IBV_WR_RDMA_WRITE, {{&src, 0, size}}, tgt.addr(77), tgt.rkey(), id,
			  what);
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
	rdma_once(p.a, IBV_WR_RDMA_WRITE, snd, tgt.addr(4093), tgt.rkey(), id, "write 3 sge");
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
		remote_at(wr, tgt, 3);
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
	need_sges(d, 3);
	Pair p = rc_pair(d);
	Buf local(d, MiB + 256, "local"), remote(d, MiB + 64, "remote");
	uint64_t id = 0xa00;
	for (size_t size : {size_t(1), size_t(4096), MiB}) {
		local.reset(SENTINEL);
		const auto msg = pattern(size, id);
		remote.put(5, msg);
		const std::string what = strf("read %zu", size);
		rdma_once(p.a, IBV_WR_RDMA_READ, {{&local, 11, size}}, remote.addr(5), remote.rkey(),
			  id, what);
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
	rdma_once(p.a, IBV_WR_RDMA_READ, dst, remote.addr(101), remote.rkey(), id, "read 3 sge");
	want_pieces(dst, msg);
	for (Buf *b : {&l1, &l2, &l3})
		b->check("read 3 sge");
	expect_no_wc(p.b.rcq, "remote recv cq");
}

/* Posts one atomic and checks its completion. */
void atomic_once(Pair &p, Buf &res, size_t roff, Buf &remote, size_t off, enum ibv_wr_opcode op,
		 uint64_t add_or_cmp, uint64_t swap, uint64_t id, const std::string &what)
{
	struct ibv_sge sg = res.sge(roff, 8);
	struct ibv_send_wr wr = send_wr(id, op, &sg, 1);
	remote_at(wr, remote, off);
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
		remote_at(wr[i], remote, 256);
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
			remote_at(w, wtgt, i * SLOT);
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
			remote_at(w, rsrc, i * SLOT);
			rd.want(i * SLOT, msg);
			break;
		case FADD:
		case CSWP:
			sg[i] = res.sge(i * 8, 8);
			w = send_wr(i, k == FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP,
				    &sg[i], 1);
			remote_at(w, ctr, 0);
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
		remote_at(wr[0], remote, 0);
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
		remote_at(wr[0], tgt, 129);
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
	remote_at(wr, tgt, 0);
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
		/* ConnectX's RoCE packet type: UDP (8) | IPv4 (2) or IPv6 (1); UCX reads it */
		const bool v4 = gid_is_v4mapped(sgid);
		const unsigned want_sl = 0x8 | (v4 ? 0x2 : 0x1);
		EXPECT(wc.sl == want_sl, "%s: sl 0x%x, want 0x%x (RoCE v2 over %s)", what.c_str(),
		       wc.sl, want_sl, v4 ? "IPv4" : "IPv6");
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
		remote_at(wr[i], b, 0);
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
	rdma_once(p.a, IBV_WR_RDMA_WRITE, {{&src, 0, 100}}, tgt.addr(0), tgt.rkey() ^ 0x00ffff00,
		  0x2000, "write with a wrong rkey", IBV_WC_REM_ACCESS_ERR);
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
	const uint64_t last = remote.addr(8192 - 100);
	rdma_once(p.a, IBV_WR_RDMA_READ, {{&local, 0, 100}}, last, remote.rkey(), 0x2100,
		  "read of the MR's last 100 bytes");
	local.want(0, msg);
	local.check("read of the MR's last 100 bytes");
	/* 100 bytes further: 100 past the end */
	rdma_once(p.a, IBV_WR_RDMA_READ, {{&local, 200, 200}}, last, remote.rkey(), 0x2101,
		  "read 100 bytes past the MR end", IBV_WC_REM_ACCESS_ERR);
	expect_flushing(p.a, local, "read out of bounds");
	/* a fresh pair: a read starting before the MR */
	Pair q = rc_pair(d);
	rdma_once(q.a, IBV_WR_RDMA_READ, {{&local, 0, 64}}, remote.addr(0) - 32, remote.rkey(),
		  0x2102, "read starting 32 bytes before the MR", IBV_WC_REM_ACCESS_ERR);
	remote.check("remote");
}

void case_err_write_no_remote_access(Dev &d)
{
	Pair p = rc_pair(d);
	Buf src(d, 4096, "src");
	Buf tgt(d, 4096, "read-only target", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	src.put(0, pattern(64, 0x2200));
	rdma_once(p.a, IBV_WR_RDMA_WRITE, {{&src, 0, 64}}, tgt.addr(0), tgt.rkey(), 0x2200,
		  "write to an MR without REMOTE_WRITE", IBV_WC_REM_ACCESS_ERR);
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

/*
 * Unsignaled WRITEs, then a WRITE whose lkey is stale, in one post, on a QP
 * with ACK timeout 0 (nothing is ever resent): the WRITEs land and the bad one
 * completes with LOC_PROT_ERR. sroce asks for no ACK at the end of a message
 * the next WQE follows at once, so the last good WRITE asked for none; the
 * bad one completes only after it, so the requester must ask again when that
 * one fails, or nothing would ever complete.
 */
void case_err_bad_lkey_after_writes(Dev &d)
{
	constexpr int N = 16;
	constexpr size_t SIZE = 256; /* one packet at any MTU */
	ConnOpts c;
	c.timeout = 0;
	Pair p;
	p.a = make_ep(d, EpOpts{});
	p.b = make_ep(d, EpOpts{});
	/* a multiple of 32, so that no WRITE's PSN asks for an ACK on its own */
	p.a.psn = 0xffffe0;
	connect(d, p.a, remote_of(d, p.b), c);
	connect(d, p.b, remote_of(d, p.a));
	Buf src(d, (N + 1) * SIZE, "src"), tgt(d, (N + 1) * SIZE, "write target");
	uint32_t stale;
	{
		Buf gone(d, 4096, "deregistered");
		stale = gone.lkey();
	}
	std::vector<struct ibv_sge> sg(N + 1);
	std::vector<struct ibv_send_wr> wr(N + 1);
	for (int i = 0; i <= N; i++) {
		const auto msg = pattern(SIZE, 0x2700 + i);
		src.put(i * SIZE, msg);
		sg[i] = src.sge(i * SIZE, SIZE);
		if (i < N)
			tgt.want(i * SIZE, msg);
		else
			sg[i].lkey = stale;
		wr[i] = send_wr(0x2700 + i, IBV_WR_RDMA_WRITE, &sg[i], 1,
				i < N ? 0 : IBV_SEND_SIGNALED);
		remote_at(wr[i], tgt, i * SIZE);
		wr[i].next = i < N ? &wr[i + 1] : nullptr;
	}
	post_send(p.a, wr.data());
	check_wc(wait_one(p.a.scq, "write with a stale lkey"),
		 strf("write with a stale lkey after %d unsignaled writes", N), 0x2700 + N,
		 IBV_WC_LOC_PROT_ERR);
	tgt.check("the writes before the bad one (the bad one places nothing)");
	expect_flushing(p.a, src, "bad lkey after unsignaled writes");
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

/*
 * rnr_retry counts RNR NAKs per message, not per connection: the budget is
 * whole again after each message goes through. rdma_cm gives QPs the
 * longest RNR timer (0: 655 ms), so each receive posted 100 ms after its send
 * is in place for the first retry. With rnr_retry 1, the second message's
 * RNR NAK would end the QP if the first one's were still counted.
 */
void case_err_rnr_retry_per_message(Dev &d)
{
	ConnOpts ca, cb;
	ca.rnr_retry = 1;
	cb.min_rnr_timer = 0;
	Pair p = make_pair(d, EpOpts{}, EpOpts{}, ca, cb);
	Buf src(d, 3 * 1024, "src"), dst(d, 3 * 1024, "dst");
	for (int i = 0; i < 3; i++) {
		const uint64_t id = 0x2680 + 2 * i;
		const auto msg = pattern(1024, id);
		src.put(i * 1024, msg);
		struct ibv_sge sg = src.sge(i * 1024, 1024);
		struct ibv_send_wr wr = send_wr(id + 1, IBV_WR_SEND, &sg, 1);
		post_send(p.a, &wr);
		const std::string n = "message " + std::to_string(i + 1) + " of 3";
		expect_quiet(p.a.scq, 100, "send without a receive, " + n);
		post_recv(p.b, id, dst.sge(i * 1024, 1024));
		check_wc(wait_one(p.a.scq, "send"), "send after the late receive, " + n, id + 1,
			 IBV_WC_SUCCESS, IBV_WC_SEND);
		check_recv(wait_one(p.b.rcq, "recv"), "late receive, " + n, id, IBV_WC_RECV,
			   1024, p.b.qpn());
		dst.want(i * 1024, msg);
	}
	dst.check("late receives");
}

void case_err_flush_on_error(Dev &d)
{
	Pair p = rc_pair(d);
	Buf dst(d, 8 * 512, "dst");
	for (int i = 0; i < 8; i++)
		post_recv(p.b, 0x2700 + i * 3, dst.sge(i * 512, 512));
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_ERR;
	if (const int rc = ibv_modify_qp(p.b.qp.get(), &a, IBV_QP_STATE))
		fail(strf("ibv_modify_qp to ERR: %s", errno_text(std::abs(rc)).c_str()));
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
	ChannelPtr ch = make_channel(d);
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
} // namespace

const std::vector<LoopCase> LOOP_CASES = {
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
	{"err_bad_lkey_after_writes", case_err_bad_lkey_after_writes},
	{"err_recv_too_small", case_err_recv_too_small},
	{"err_rnr_retry_exceeded", case_err_rnr_retry_exceeded},
	{"err_rnr_retry_recovers", case_err_rnr_retry_recovers},
	{"err_rnr_retry_per_message", case_err_rnr_retry_per_message},
	{"err_flush_on_error", case_err_flush_on_error},
	{"comp_channel", case_comp_channel},
};

} // namespace rdma_test
