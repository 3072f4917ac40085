// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-objects-test DEVICE [MODE]
 *
 * Exercises memory regions and completion queues of a device, without any
 * traffic. MODE is one of:
 *
 *   all       (default) every check below; "RESULT: PASS" or "RESULT: FAIL"
 *   leak [FILE]
 *             create a PD, MRs, CQs and a completion channel, print LEAKING,
 *             wait until FILE exists if given (2 min at most) and exit without
 *             destroying anything (the kernel cleans up)
 *   scribble  write garbage over a CQ ring header, then poll, arm (also
 *             through the kernel), destroy one CQ and exit with another
 *             still open; only this process may be hurt
 *   wq-scribble [GID_INDEX]
 *             break send, receive and SRQ rings of loopback QPs (RC pairs
 *             connected through the device's own IPv4 RoCE v2 GID, UD QPs):
 *             producers far ahead, garbage WQEs, random bytes written while
 *             another thread posts; every QP concerned must fail alone
 *             (error completions, error state), nothing may hang, and
 *             everything must destroy. "RESULT: PASS" or "RESULT: FAIL".
 *   harden    what the kernel must hold against its own process: objects
 *             beyond the device limits fail with EINVAL; receives posted in
 *             ERR are flushed once each; an SRQ's receive SGEs are checked
 *             against the SRQ's PD; a QP connected to itself and two pairs
 *             destroyed under a long READ and queued SENDs; the SQ producer
 *             rewound below what the kernel fetched (ERR + QP_FATAL).
 *             CASE runs one: oversize, recv_after_err, srq_pd,
 *             destroy_self, destroy_concurrent, sq_rewind.
 *   breadth   verbs beyond the basic set, in loopback through the device's
 *             IPv4 RoCE v2 GID, every byte checked: resize_cq with unpolled
 *             completions and while another thread polls, rereg_mr
 *             (translation, access, PD, a failing rereg), parent domains,
 *             a QP's completions dropped when it goes back to RESET, SRQ
 *             resize with WQEs posted, ATOMIC WRITE.
 *             CASE runs one: resize_cq, resize_cq_poller, rereg_mr,
 *             parent_domain, reset_cleans_cq, srq_resize, atomic_write.
 *   qp-hog [N] create up to N QPs with 16 Ki-entry rings; prints how many the
 *             kernel allowed (run in a memory cgroup).
 *
 * One line per check: "<check>: ok" or "<check>: FAIL <why>".
 */
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/sroce-abi.h>

#include "verbs_harness.h"

/*
 * The provider's own objects (userspace/provider/sroce.h): wq-scribble finds
 * the ring mappings of a QP and an SRQ through them, so a change of layout
 * breaks the build instead of scribbling somewhere else.
 */
#include "../provider/sroce.h"

/* libibverbs' private command wrapper (IBVERBS_PRIVATE_34, driver.h v44). */
extern "C" int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);

namespace {

using sroce_tool::Clock;
using sroce_tool::errno_text;
using sroce_tool::Mapping;
using sroce_tool::qp_state;
using sroce_tool::reg_mr;
using sroce_tool::seconds_since;

int failures = 0;

void check(const std::string &name, bool ok, const std::string &why = "")
{
	if (ok) {
		std::printf("%s: ok\n", name.c_str());
	} else {
		std::printf("%s: FAIL %s\n", name.c_str(), why.c_str());
		failures++;
	}
	std::fflush(stdout);
}

/* reg_mr must fail with one of the listed errnos. */
void expect_reg_fails(struct ibv_pd *pd, const char *name, void *addr,
		      size_t len, int access, std::initializer_list<int> errs)
{
	struct ibv_mr *mr = reg_mr(pd, addr, len, access);
	const int e = errno;
	if (mr) {
		ibv_dereg_mr(mr);
		check(name, false, "registration succeeded");
		return;
	}
	bool ok = false;
	for (int x : errs)
		ok |= x == e;
	check(name, ok, "got " + errno_text(e));
}

void test_mr(struct ibv_pd *pd)
{
	const int lw = IBV_ACCESS_LOCAL_WRITE;
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	const size_t big = 64u << 20;
	const Mapping big_map(big);
	char *buf = reinterpret_cast<char *>(big_map.p());
	if (!big_map) {
		check("mr_map_64MiB", false, errno_text(errno));
		return;
	}

	struct Case {
		const char *name;
		size_t off, len;
		int access;
	};
	const Case cases[] = {
		{"mr_1_byte", 100, 1, lw},
		{"mr_one_page", 0, 4096, lw},
		{"mr_multi_page_unaligned", 123, 3 * 4096 + 5, all},
		{"mr_1MiB_remote_read", 4096, 1u << 20, IBV_ACCESS_REMOTE_READ},
		{"mr_64MiB", 0, big, all},
	};
	std::vector<struct ibv_mr *> mrs;
	std::set<uint32_t> keys;
	for (const Case &c : cases) {
		struct ibv_mr *mr = reg_mr(pd, buf + c.off, c.len, c.access);
		if (!mr) {
			check(c.name, false, errno_text(errno));
			continue;
		}
		std::printf("  %s lkey=0x%x rkey=0x%x\n", c.name, mr->lkey,
			    mr->rkey);
		check(c.name, mr->lkey != 0 && mr->rkey == mr->lkey &&
			      mr->addr == buf + c.off && mr->length == c.len &&
			      keys.insert(mr->lkey).second,
		      "bad or duplicate keys");
		mrs.push_back(mr);
	}
	/* The same memory registered twice gets two keys. */
	struct ibv_mr *again = reg_mr(pd, buf, 4096, lw);
	check("mr_same_memory_twice", again && keys.insert(again->lkey).second,
	      again ? "duplicate key" : errno_text(errno));
	if (again)
		mrs.push_back(again);

	bool dereg_ok = true;
	for (struct ibv_mr *mr : mrs)
		dereg_ok &= ibv_dereg_mr(mr) == 0;
	check("mr_dereg", dereg_ok);

	/* A key is not reused right away after deregistration. */
	struct ibv_mr *a = reg_mr(pd, buf, 4096, lw);
	const uint32_t old_key = a ? a->lkey : 0;
	if (a)
		ibv_dereg_mr(a);
	struct ibv_mr *b = reg_mr(pd, buf, 4096, lw);
	check("mr_key_not_reused", a && b && b->lkey != old_key);
	if (b)
		ibv_dereg_mr(b);

	/* Access flag validation (IBTA: remote write/atomic need local write). */
	expect_reg_fails(pd, "mr_remote_write_without_local_write", buf, 4096,
			 IBV_ACCESS_REMOTE_WRITE, {EINVAL});
	expect_reg_fails(pd, "mr_remote_atomic_without_local_write", buf, 4096,
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ,
			 {EINVAL});
	expect_reg_fails(pd, "mr_unknown_access_bit", buf, 4096, lw | (1 << 15),
			 {EINVAL});
	expect_reg_fails(pd, "mr_zero_length", buf, 0, lw, {EINVAL});

	/* Unmapped memory cannot be pinned. */
	char *hole = reinterpret_cast<char *>(Mapping(4 * 4096).p());
	expect_reg_fails(pd, "mr_unmapped_memory", hole, 4 * 4096, lw, {EFAULT});

	/* Read-only memory: readable registration works, writable does not. */
	const Mapping ro_map(4096);
	char *ro = reinterpret_cast<char *>(ro_map.p());
	ro[0] = 1;
	mprotect(ro, 4096, PROT_READ);
	struct ibv_mr *rmr = reg_mr(pd, ro, 4096, IBV_ACCESS_REMOTE_READ);
	check("mr_read_only_memory_readable", rmr != nullptr, errno_text(errno));
	if (rmr)
		ibv_dereg_mr(rmr);
	expect_reg_fails(pd, "mr_read_only_memory_writable", ro, 4096, lw,
			 {EFAULT});

	/* Thousands of small MRs: all distinct keys, all deregister. */
	const int many = 4000;
	std::vector<struct ibv_mr *> lots;
	std::set<uint32_t> lot_keys;
	int reg_err = 0;
	for (int i = 0; i < many; i++) {
		struct ibv_mr *mr = reg_mr(pd, buf + (i % 1024) * 4096, 4096, lw);
		if (!mr) {
			reg_err = errno;
			break;
		}
		lots.push_back(mr);
		lot_keys.insert(mr->lkey);
	}
	check("mr_4000_small", lots.size() == many && lot_keys.size() == many,
	      "registered " + std::to_string(lots.size()) + " " +
		      errno_text(reg_err));
	dereg_ok = true;
	for (struct ibv_mr *mr : lots)
		dereg_ok &= ibv_dereg_mr(mr) == 0;
	check("mr_4000_dereg", dereg_ok);
}

struct ibv_cq *make_cq(struct ibv_context *ctx, int cqe,
		       struct ibv_comp_channel *ch = nullptr, int vec = 0)
{
	errno = 0;
	return ibv_create_cq(ctx, cqe, nullptr, ch, vec);
}

void test_cq(struct ibv_context *ctx, const struct ibv_device_attr &attr)
{
	for (int want : {1, 2, 1000, attr.max_cqe}) {
		const std::string name = "cq_size_" + std::to_string(want);
		struct ibv_cq *cq = make_cq(ctx, want);
		if (!cq) {
			check(name, false, errno_text(errno));
			continue;
		}
		struct ibv_wc wc[4];
		const int polled = ibv_poll_cq(cq, 4, wc);
		const int arm_next = ibv_req_notify_cq(cq, 0);
		const int arm_sol = ibv_req_notify_cq(cq, 1);
		const int polled2 = ibv_poll_cq(cq, 4, wc);
		check(name, cq->cqe >= want && polled == 0 && arm_next == 0 &&
			      arm_sol == 0 && polled2 == 0,
		      "cqe=" + std::to_string(cq->cqe) + " poll=" +
			      std::to_string(polled));
		check(name + "_destroy", ibv_destroy_cq(cq) == 0);
	}

	for (int bad : {attr.max_cqe + 1, 0, -1}) {
		const std::string name = "cq_size_" + std::to_string(bad) +
					 "_rejected";
		struct ibv_cq *cq = make_cq(ctx, bad);
		const int e = errno;
		if (cq)
			ibv_destroy_cq(cq);
		check(name, !cq && e == EINVAL, cq ? "created" : errno_text(e));
	}

	struct ibv_cq *cq = make_cq(ctx, 16, nullptr,
				    ctx->num_comp_vectors);
	const int e = errno;
	if (cq)
		ibv_destroy_cq(cq);
	check("cq_bad_comp_vector", !cq && e == EINVAL,
	      cq ? "created" : errno_text(e));

	/* A completion channel: no event without a completion. */
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	check("comp_channel_create", ch != nullptr, errno_text(errno));
	if (!ch)
		return;
	cq = make_cq(ctx, 64, ch);
	check("cq_on_channel", cq != nullptr, errno_text(errno));
	if (cq) {
		check("cq_on_channel_arm", ibv_req_notify_cq(cq, 0) == 0);
		fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
		struct ibv_cq *ev_cq = nullptr;
		void *ev_ctx = nullptr;
		errno = 0;
		const int rc = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
		check("cq_on_channel_no_spurious_event",
		      rc < 0 && errno == EAGAIN, errno_text(errno));
		check("cq_on_channel_destroy", ibv_destroy_cq(cq) == 0);
	}
	check("comp_channel_destroy", ibv_destroy_comp_channel(ch) == 0);

	/* Many CQs at once. */
	std::vector<struct ibv_cq *> cqs;
	for (int i = 0; i < 200; i++) {
		struct ibv_cq *c = make_cq(ctx, 32);
		if (!c)
			break;
		cqs.push_back(c);
	}
	bool ok = cqs.size() == 200;
	for (struct ibv_cq *c : cqs)
		ok &= ibv_destroy_cq(c) == 0;
	check("cq_200_at_once", ok);
}

int mode_leak(struct ibv_context *ctx, const char *hold)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static char buf[1 << 20] __attribute__((aligned(4096)));
	int n = 0;
	for (int i = 0; pd && i < 10; i++)
		n += ibv_reg_mr(pd, buf + i * 4096, 8192,
				IBV_ACCESS_LOCAL_WRITE) != nullptr;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	for (int i = 0; i < 5; i++) {
		struct ibv_cq *cq = make_cq(ctx, 100, i % 2 ? ch : nullptr);
		n += cq != nullptr;
		if (cq)
			ibv_req_notify_cq(cq, 0);
	}
	std::printf("LEAKING %d objects\n", n);
	std::fflush(stdout);
	for (int i = 0; hold && i < 2400 && access(hold, F_OK) != 0; i++)
		usleep(50000);
	return n == 15 ? 0 : 1;
}

int mode_scribble(struct ibv_context *ctx)
{
	struct ibv_cq *cq = make_cq(ctx, 8);
	struct ibv_cq *keep = make_cq(ctx, 8);
	if (!cq || !keep) {
		std::printf("create_cq: %s\n", errno_text(errno).c_str());
		return 1;
	}
	int bad = 0;
	for (struct ibv_cq *c : {cq, keep}) {
		/*
		 * The provider's CQ object (userspace/provider/sroce.h) starts
		 * with a union of struct ibv_cq and struct ibv_cq_ex (the larger)
		 * and keeps the ring mapping in the pointer right after it.
		 */
		auto *map = *reinterpret_cast<sroce_cq_ring_hdr **>(
			reinterpret_cast<char *>(c) + sizeof(struct ibv_cq_ex));
		map->producer = 0xdeadbeef;
		map->consumer = 0x12345678;
		map->arm = 0xffffffff;
		struct ibv_wc wc[8];
		const int n = ibv_poll_cq(c, 8, wc);
		std::printf("poll after scribble: %d\n", n);
		bad += n > 0;
		ibv_req_notify_cq(c, 1);
		map->arm = 0xfffffffc;
		std::printf("kernel req_notify: %d\n",
			    ibv_cmd_req_notify_cq(c, 0));
		map->producer = 7;
		map->consumer = 0xfffffff0;
	}
	std::printf("destroy: %d\n", ibv_destroy_cq(cq));
	std::printf("SCRIBBLED\n");
	std::fflush(stdout);
	return bad ? 1 : 0;	/* exit with "keep" still open */
}

/* ------------------------------------------------------------------------ */
/* wq-scribble: a process breaking its own send and receive rings.          */

namespace wqs {

constexpr double kWait = 8.0;		/* seconds, every wait */
constexpr uint32_t kQkey = 0x11111111;
constexpr size_t kBufSize = 1 << 20;
constexpr uint32_t kMsg = 64;		/* bytes per SEND */

struct Env {
	struct ibv_context *ctx = nullptr;
	struct ibv_pd *pd = nullptr;
	struct ibv_mr *mr = nullptr;
	Mapping map;
	char *buf = nullptr;
	int gid_index = -1;
	union ibv_gid gid = {};
	std::mt19937 rng{20240611};
};

const char *state_name(int s)
{
	const char *name = sroce_tool::qp_state_name(s);
	return name ? name : "?";
}

/* One QP with its own send and receive CQs. */
struct Side {
	struct ibv_cq *scq = nullptr;
	struct ibv_cq *rcq = nullptr;
	struct ibv_qp *qp = nullptr;
	struct ibv_ah *ah = nullptr;	/* UD: towards the peer */
	uint32_t peer_qpn = 0;
};

bool make_side(Env &e, Side &s, enum ibv_qp_type type, struct ibv_srq *srq = nullptr)
{
	s.scq = ibv_create_cq(e.ctx, 64, nullptr, nullptr, 0);
	s.rcq = ibv_create_cq(e.ctx, 64, nullptr, nullptr, 0);
	if (!s.scq || !s.rcq)
		return false;
	sroce_tool::QpCaps caps;
	caps.type = type;
	caps.send_wr = caps.recv_wr = 16;
	caps.send_sge = caps.recv_sge = 4;
	caps.inline_data = 64;
	caps.srq = srq;
	struct ibv_qp_init_attr ia = sroce_tool::qp_init_attr(s.scq, s.rcq, caps);
	s.qp = ibv_create_qp(e.pd, &ia);
	return s.qp != nullptr;
}

/* Loopback through the device's own GID, PSNs 0, path MTU 1024. */
sroce_tool::Path loopback_path(Env &e, enum ibv_qp_type type, uint32_t dqpn)
{
	sroce_tool::Path p;
	p.type = type;
	p.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	p.qkey = kQkey;
	p.sgid_index = e.gid_index;
	p.dgid = e.gid;
	p.dest_qpn = dqpn;
	p.min_rnr_timer = 1;
	p.rnr_retry = 1;
	return p;
}

bool rc_connect(Env &e, Side &s, uint32_t dqpn, uint8_t timeout = 10,
		uint8_t retry = 1, uint8_t rd_atomic = 1)
{
	sroce_tool::Path p = loopback_path(e, IBV_QPT_RC, dqpn);
	p.max_dest_rd_atomic = p.max_rd_atomic = rd_atomic;
	p.timeout = timeout;
	p.retry_cnt = retry;
	s.peer_qpn = dqpn;
	return sroce_tool::connect_qp(s.qp, p) == 0;
}

bool ud_ready(Env &e, Side &s, uint32_t dqpn)
{
	if (sroce_tool::connect_qp(s.qp, loopback_path(e, IBV_QPT_UD, dqpn)))
		return false;
	struct ibv_ah_attr ah = sroce_tool::ah_attr_to(1, e.gid_index, e.gid);
	s.ah = ibv_create_ah(e.pd, &ah);
	s.peer_qpn = dqpn;
	return s.ah != nullptr;
}

/* Destroys what exists; false if any destroy failed. */
bool destroy_side(Side &s, std::string *why)
{
	bool ok = true;
	auto one = [&](int rc, const char *what) {
		if (rc) {
			ok = false;
			*why += std::string(" destroy_") + what + ":" + errno_text(rc);
		}
	};
	if (s.ah)
		one(ibv_destroy_ah(s.ah), "ah");
	if (s.qp)
		one(ibv_destroy_qp(s.qp), "qp");
	if (s.scq)
		one(ibv_destroy_cq(s.scq), "cq");
	if (s.rcq)
		one(ibv_destroy_cq(s.rcq), "cq");
	s = Side{};
	return ok;
}

/* Two RC QPs connected to each other, or two UD QPs that know each other. */
struct Pair {
	Side a, b;		/* a sends, b receives */
	struct ibv_srq *srq = nullptr;	/* b's, if any */
};

bool make_pair(Env &e, Pair &p, enum ibv_qp_type type, bool b_on_srq = false)
{
	if (b_on_srq) {
		struct ibv_srq_init_attr sa = {};
		sa.attr.max_wr = 16;
		sa.attr.max_sge = 4;
		p.srq = ibv_create_srq(e.pd, &sa);
		if (!p.srq)
			return false;
	}
	if (!make_side(e, p.a, type) || !make_side(e, p.b, type, p.srq))
		return false;
	if (type == IBV_QPT_RC)
		return rc_connect(e, p.a, p.b.qp->qp_num) &&
		       rc_connect(e, p.b, p.a.qp->qp_num);
	return ud_ready(e, p.a, p.b.qp->qp_num) && ud_ready(e, p.b, p.a.qp->qp_num);
}

bool destroy_pair(Pair &p, std::string *why)
{
	bool ok = destroy_side(p.a, why);
	ok &= destroy_side(p.b, why);
	if (p.srq) {
		const int rc = ibv_destroy_srq(p.srq);
		if (rc) {
			ok = false;
			*why += " destroy_srq:" + errno_text(rc);
		}
		p.srq = nullptr;
	}
	return ok;
}

/* A check whose QPs could not be set up fails; what was made is destroyed. */
void setup_failed(const char *name, Side &s)
{
	check(name, false, "setup: " + errno_text(errno));
	std::string why;
	destroy_side(s, &why);
}

void setup_failed(const char *name, Pair &p)
{
	check(name, false, "setup: " + errno_text(errno));
	std::string why;
	destroy_pair(p, &why);
}

/* Async events seen so far (read and acknowledged at once). */
struct Event {
	enum ibv_event_type type;
	uint32_t qpn;		/* QP events */
	bool srq;
};
std::vector<Event> events;

void drain_events(struct ibv_context *ctx, double wait_s = 0)
{
	/* one event waited for; the rest are picked up without waiting */
	int wait_ms = wait_s > 0 ? static_cast<int>(wait_s * 1000) + 1 : 0;
	struct ibv_async_event ev;
	for (; sroce_tool::get_async_event(ctx, &ev, wait_ms); wait_ms = 0) {
		Event x = {ev.event_type, 0, false};
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_PATH_MIG:
		case IBV_EVENT_PATH_MIG_ERR:
		case IBV_EVENT_QP_LAST_WQE_REACHED:
			x.qpn = ev.element.qp->qp_num;
			break;
		case IBV_EVENT_SRQ_ERR:
		case IBV_EVENT_SRQ_LIMIT_REACHED:
			x.srq = true;
			break;
		default:
			break;
		}
		std::printf("  async event: %s qpn=%u\n", ibv_event_type_str(ev.event_type), x.qpn);
		ibv_ack_async_event(&ev);
		events.push_back(x);
	}
}

uint32_t count_events(uint32_t qpn, enum ibv_event_type t)
{
	uint32_t n = 0;
	for (const Event &x : events)
		n += x.type == t && x.qpn == qpn;
	return n;
}

bool saw_event(uint32_t qpn, enum ibv_event_type t)
{
	return count_events(qpn, t) != 0;
}

/* The next completion of cq, or false at the deadline. */
bool wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, double secs = kWait)
{
	return sroce_tool::poll_one(cq, wc, static_cast<int>(secs * 1000));
}

/*
 * Wait until qp is in ERR, or SQE (UC and UD after a send error), or the
 * deadline; returns the last state seen.
 */
int wait_err(struct ibv_qp *qp, double secs = kWait)
{
	const auto t0 = Clock::now();
	for (;;) {
		const int s = qp_state(qp);
		if (s == IBV_QPS_ERR || s == IBV_QPS_SQE || s < 0 || seconds_since(t0) > secs)
			return s;
		usleep(1000);
	}
}

std::string wc_text(const struct ibv_wc &wc)
{
	char b[128];
	std::snprintf(b, sizeof(b), "wr_id=0x%" PRIx64 " %s", wc.wr_id,
		      ibv_wc_status_str(wc.status));
	return b;
}

/* ----------------------------------------------------------- raw WQEs */

sroce::wq::ring &sq_of(struct ibv_qp *qp)
{
	return sroce::get_qp(qp)->sq;
}

sroce::wq::ring &rq_of(struct ibv_qp *qp)
{
	return sroce::get_qp(qp)->rq;
}

sroce::wq::ring &rq_of(struct ibv_srq *srq)
{
	return sroce::get_srq(srq)->rq;
}

size_t slot_size(const sroce::wq::ring &r)
{
	return size_t{1} << r.wqe_shift;
}

/*
 * Write one WQE straight into the ring at the provider's producer count
 * (so later ibv_post_* calls go after it) and publish it. fill gets the
 * slot, zeroed, and its size.
 */
bool raw_wqe(sroce::wq::ring &r, const std::function<void(unsigned char *, size_t)> &fill)
{
	if (!sroce::wq::reserve(r))
		return false;
	auto *slot = static_cast<unsigned char *>(sroce::wq::slot(r));
	std::memset(slot, 0, slot_size(r));
	fill(slot, slot_size(r));
	sroce::wq::advance(r);
	sroce::wq::publish(r);
	return true;
}

void ring_doorbell(struct ibv_qp *qp)
{
	const int rc = sroce::wq::ring_doorbell(qp->context->cmd_fd, qp->handle);
	if (rc)
		std::printf("  doorbell: %s\n", errno_text(rc).c_str());
}

/* A valid SEND (signaled) from the MR. */
int post_send(Env &e, Side &s, uint64_t wr_id, uint32_t off = 0)
{
	struct ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf + off), kMsg, e.mr->lkey};
	struct ibv_send_wr wr = {}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (s.ah) {
		wr.wr.ud.ah = s.ah;
		wr.wr.ud.remote_qpn = s.peer_qpn;
		wr.wr.ud.remote_qkey = kQkey;
	}
	return ibv_post_send(s.qp, &wr, &bad);
}

int post_recv(Env &e, Side &s, struct ibv_srq *srq, uint64_t wr_id, uint32_t off)
{
	struct ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf + off), 4096, e.mr->lkey};
	struct ibv_recv_wr wr = {}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(s.qp, &wr, &bad);
}

/* ------------------------------------------------------ 1: SQ producer */

void sq_producer(Env &e, const char *name, int64_t delta)
{
	Pair p;
	std::string why;
	if (!make_pair(e, p, IBV_QPT_RC))
		return setup_failed(name, p);
	auto &sq = sq_of(p.a.qp);
	const uint32_t cons = __atomic_load_n(&sq.hdr->consumer, __ATOMIC_ACQUIRE);
	__atomic_store_n(&sq.hdr->producer, static_cast<uint32_t>(cons + delta),
			 __ATOMIC_RELEASE);
	const auto t0 = Clock::now();
	ring_doorbell(p.a.qp);
	const int st = wait_err(p.a.qp);
	const auto t1 = Clock::now();
	while (!saw_event(p.a.qp->qp_num, IBV_EVENT_QP_FATAL) && seconds_since(t1) < 2.0)
		drain_events(e.ctx, 0.1);
	const bool fatal = saw_event(p.a.qp->qp_num, IBV_EVENT_QP_FATAL);
	std::printf("  %s: state %s after %.3f s, QP_FATAL %s\n", name, state_name(st),
		    seconds_since(t0), fatal ? "seen" : "not seen");
	/* The provider republishes its own producer: the kernel must flush, not hang. */
	const int prc = post_send(e, p.a, 0x5e9d);
	struct ibv_wc wc;
	const bool got = wait_wc(p.a.scq, &wc, 3.0);
	std::printf("  %s: post_send after: %d, completion: %s\n", name, prc,
		    got ? wc_text(wc).c_str() : "none");
	/* the peer is unharmed by A's broken ring: it still is in RTS */
	const int bst = qp_state(p.b.qp);
	const bool destroyed = destroy_pair(p, &why);
	check(name, st == IBV_QPS_ERR && bst == IBV_QPS_RTS && destroyed,
	      std::string("state ") + state_name(st) + ", peer " + state_name(bst) + why);
	check(std::string(name) + "_fatal_event", fatal, "no IBV_EVENT_QP_FATAL in 2 s");
}

/* ------------------------------------------------------ 2: garbage SQ WQEs */

using Fill = std::function<void(Env &, Pair &, unsigned char *, size_t)>;

void sq_garbage(Env &e, const char *name, enum ibv_qp_type type, const Fill &fill,
		std::initializer_list<enum ibv_wc_status> want)
{
	Pair p;
	std::string why;
	if (!make_pair(e, p, type))
		return setup_failed(name, p);
	for (int i = 0; i < 4; i++)
		post_recv(e, p.b, nullptr, 0x7000 + i, 65536 + i * 4096);
	bool ok = raw_wqe(sq_of(p.a.qp), [&](unsigned char *s, size_t n) {
		fill(e, p, s, n);
	});
	if (!ok)
		why += " no room in the SQ";
	/* A valid WR right behind it: the provider rings the doorbell. */
	const int prc1 = post_send(e, p.a, 0x600d1);
	struct ibv_wc w1 = {}, w2 = {}, w3 = {};
	const bool g1 = wait_wc(p.a.scq, &w1);
	const bool g2 = wait_wc(p.a.scq, &w2);
	const int st = wait_err(p.a.qp);
	/* and one posted after the QP went to ERR */
	const int prc2 = post_send(e, p.a, 0x600d2);
	const bool g3 = wait_wc(p.a.scq, &w3);
	std::printf("  %s: %s | %s | state %s | later %s (post %d/%d)\n", name,
		    g1 ? wc_text(w1).c_str() : "no completion",
		    g2 ? wc_text(w2).c_str() : "no completion", state_name(st),
		    g3 ? wc_text(w3).c_str() : "no completion", prc1, prc2);
	bool status_ok = false;
	for (auto w : want)
		status_ok |= g1 && w1.status == w;
	if (!g1 || !status_ok)
		why += " first completion " + (g1 ? wc_text(w1) : std::string("missing"));
	else if (w1.wr_id != 0xbad)
		why += " first completion is not the garbage WQE";
	if (!g2 || w2.status != IBV_WC_WR_FLUSH_ERR || w2.wr_id != 0x600d1)
		why += " second completion " + (g2 ? wc_text(w2) : std::string("missing"));
	/* IBTA 10.3.1: a send error takes RC to ERR, UC and UD to SQE. */
	if (st != (type == IBV_QPT_RC ? IBV_QPS_ERR : IBV_QPS_SQE))
		why += std::string(" state ") + state_name(st);
	if (prc2 == 0 && (!g3 || w3.status != IBV_WC_WR_FLUSH_ERR))
		why += " later WR " + (g3 ? wc_text(w3) : std::string("not completed"));
	if (type != IBV_QPT_RC && st == IBV_QPS_SQE) {
		/* SQE -> RTS: the send queue works again. */
		struct ibv_qp_attr a = {};
		a.qp_state = IBV_QPS_RTS;
		a.cur_qp_state = IBV_QPS_SQE;
		struct ibv_wc w4 = {};
		const int mrc = ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE);
		const int prc3 = mrc ? -1 : post_send(e, p.a, 0x600d3);
		const bool g4 = prc3 == 0 && wait_wc(p.a.scq, &w4);
		std::printf("  %s: SQE->RTS %d, then %s\n", name, mrc,
			    g4 ? wc_text(w4).c_str() : "no completion");
		if (!g4 || w4.status != IBV_WC_SUCCESS || w4.wr_id != 0x600d3)
			why += " after SQE->RTS: " + (g4 ? wc_text(w4) : std::string("no completion"));
	}
	drain_events(e.ctx);
	const int bst = qp_state(p.b.qp);
	if (bst != IBV_QPS_RTS)
		why += std::string(" peer in ") + state_name(bst);
	const bool destroyed = destroy_pair(p, &why);
	check(name, why.empty() && destroyed, why);
}

sroce_send_wqe *hdr(unsigned char *s)
{
	return reinterpret_cast<sroce_send_wqe *>(s);
}

sroce_sge *sges(unsigned char *s)
{
	return reinterpret_cast<sroce_sge *>(s + sizeof(sroce_send_wqe));
}

/* A well-formed signaled SEND of kMsg bytes from the MR, to be spoiled. */
void good_send(Env &e, Pair &p, unsigned char *s)
{
	sroce_send_wqe *w = hdr(s);
	w->wr_id = 0xbad;
	w->opcode = IBV_WR_SEND;
	w->send_flags = SROCE_SEND_SIGNALED;
	w->num_sge = 1;
	sges(s)[0] = {reinterpret_cast<uintptr_t>(e.buf), kMsg, e.mr->lkey};
	if (p.a.ah) {
		w->wr.ud.ah_num = sroce::get_ah(p.a.ah)->ah_num;
		w->wr.ud.remote_qpn = p.b.qp->qp_num;
		w->wr.ud.remote_qkey = kQkey;
	}
}

/* ------------------------------------------------------ 3: receive rings */

struct RecvOutcome {
	bool recv_err = false;		/* an error completion on b's RQ/SRQ */
	bool recv_ok = false;		/* a successful one */
	int b_state = -1;
	bool send_done = false;
	struct ibv_wc send_wc = {};
	std::string recv_text;
};

/* a sends one message to b; collect what both sides see (deadlines). */
RecvOutcome send_and_watch(Env &e, Pair &p, bool reliable)
{
	RecvOutcome o;
	const int prc = post_send(e, p.a, 0x5e7d);
	if (prc)
		std::printf("  post_send: %s\n", errno_text(prc).c_str());
	const auto t0 = Clock::now();
	while (seconds_since(t0) < kWait) {
		struct ibv_wc wc;
		if (ibv_poll_cq(p.b.rcq, 1, &wc) > 0) {
			(wc.status == IBV_WC_SUCCESS ? o.recv_ok : o.recv_err) = true;
			o.recv_text += " " + wc_text(wc);
		}
		if (!o.send_done && ibv_poll_cq(p.a.scq, 1, &o.send_wc) > 0)
			o.send_done = true;
		o.b_state = qp_state(p.b.qp);
		const bool b_done = o.recv_err || o.recv_ok || o.b_state == IBV_QPS_ERR;
		if (o.send_done && b_done && (reliable || seconds_since(t0) > 0.2))
			break;
		usleep(500);
	}
	drain_events(e.ctx);
	return o;
}

using RecvFill = std::function<void(Env &, sroce::wq::ring &)>;

void producer_ahead(Env &, sroce::wq::ring &r);

void recv_garbage(Env &e, const char *name, enum ibv_qp_type type, bool srq,
		  const RecvFill &spoil)
{
	const bool broken_ring = spoil.target<void (*)(Env &, sroce::wq::ring &)>() &&
				 *spoil.target<void (*)(Env &, sroce::wq::ring &)>() ==
					 &producer_ahead;
	Pair p;
	std::string why;
	if (!make_pair(e, p, type, srq))
		return setup_failed(name, p);
	spoil(e, srq ? rq_of(p.srq) : rq_of(p.b.qp));
	const bool reliable = type == IBV_QPT_RC;
	const RecvOutcome o = send_and_watch(e, p, reliable);
	std::printf("  %s: receiver%s%s, state %s; sender %s\n", name,
		    o.recv_text.empty() ? " no completion" : "", o.recv_text.c_str(),
		    state_name(o.b_state),
		    o.send_done ? wc_text(o.send_wc).c_str() : "no completion");
	if (o.recv_ok)
		why += " the receiver completed a receive successfully";
	if (!o.recv_err && o.b_state != IBV_QPS_ERR)
		why += std::string(" receiver: no error completion, state ") +
		       state_name(o.b_state);
	if (!o.send_done)
		why += " sender: no completion in time";
	else if (reliable && o.send_wc.status == IBV_WC_SUCCESS)
		why += " sender: SEND succeeded though nothing was received";
	/*
	 * A broken ring (producer more than entries ahead): sroce-abi.h promises
	 * the error state with IB_EVENT_QP_FATAL; for an SRQ, IB_EVENT_SRQ_ERR
	 * is accepted as well.
	 */
	bool fatal = false;
	if (broken_ring) {
		const uint32_t qpn = p.b.qp->qp_num;
		auto seen = [&] {
			if (saw_event(qpn, IBV_EVENT_QP_FATAL))
				return true;
			for (const Event &x : events)
				if (srq && x.srq && x.type == IBV_EVENT_SRQ_ERR)
					return true;
			return false;
		};
		const auto t1 = Clock::now();
		while (!seen() && seconds_since(t1) < 2.0)
			drain_events(e.ctx, 0.1);
		fatal = seen();
		events.clear();
	}
	const bool destroyed = destroy_pair(p, &why);
	check(name, why.empty() && destroyed, why);
	if (broken_ring)
		check(std::string(name) + "_fatal_event", fatal,
		      srq ? "neither IBV_EVENT_QP_FATAL for the QP nor IBV_EVENT_SRQ_ERR in 2 s"
			  : "no IBV_EVENT_QP_FATAL for the receiving QP in 2 s");
}

void producer_ahead(Env &, sroce::wq::ring &r)
{
	const uint32_t cons = __atomic_load_n(&r.hdr->consumer, __ATOMIC_ACQUIRE);
	__atomic_store_n(&r.hdr->producer, cons + (1u << 20), __ATOMIC_RELEASE);
}

void recv_num_sge_huge(Env &, sroce::wq::ring &r)
{
	/* every SGE the slot holds is empty: the message cannot fit */
	raw_wqe(r, [](unsigned char *s, size_t) {
		auto *w = reinterpret_cast<sroce_recv_wqe *>(s);
		w->wr_id = 0xbad;
		w->num_sge = 0xffffffff;
	});
}

void recv_bad_lkey(Env &e, sroce::wq::ring &r)
{
	raw_wqe(r, [&](unsigned char *s, size_t n) {
		auto *w = reinterpret_cast<sroce_recv_wqe *>(s);
		auto *sg = reinterpret_cast<sroce_sge *>(s + sizeof(*w));
		w->wr_id = 0xbad;
		w->num_sge = 1;
		(void)n;
		sg[0] = {reinterpret_cast<uintptr_t>(e.buf), 4096, e.mr->lkey ^ 0x5a5a5a00};
	});
}

void recv_random(Env &e, sroce::wq::ring &r)
{
	raw_wqe(r, [&](unsigned char *s, size_t n) {
		for (size_t i = 0; i < n; i++)
			s[i] = static_cast<unsigned char>(e.rng());
		/* keep num_sge >= 1 and the lkey wrong, so it cannot be valid */
		reinterpret_cast<sroce_recv_wqe *>(s)->num_sge |= 1;
		auto *sg = reinterpret_cast<sroce_sge *>(s + sizeof(sroce_recv_wqe));
		if (sg[0].lkey == e.mr->lkey)
			sg[0].lkey ^= 1;
		if (!sg[0].length)
			sg[0].length = 1;
	});
}

/* ------------------------------------------------------ 4: concurrency */

void concurrent(Env &e, double secs)
{
	const char *name = "concurrent_sq_scribble";
	Pair p;
	std::string why;
	if (!make_pair(e, p, IBV_QPT_RC))
		return setup_failed(name, p);
	auto &sq = sq_of(p.a.qp);
	unsigned char *map = reinterpret_cast<unsigned char *>(sq.hdr);
	const size_t len = SROCE_WQ_SLOTS_OFF + (size_t{sq.entries} << sq.wqe_shift);
	std::atomic<bool> stop{false};
	std::atomic<uint64_t> scribbles{0}, doorbells{0};
	std::thread scribbler([&] {
		std::mt19937_64 rng(99);
		while (!stop.load(std::memory_order_relaxed)) {
			for (size_t i = 0; i + 8 <= len; i += 8) {
				const uint64_t v = rng();
				std::memcpy(map + i, &v, 8);
			}
			scribbles++;
			if ((scribbles & 15) == 0) {
				sroce::wq::ring_doorbell(p.a.qp->context->cmd_fd, p.a.qp->handle);
				doorbells++;
			}
		}
	});
	uint64_t posted = 0, post_err = 0, recv_posted = 0;
	std::map<int, uint64_t> sstat, rstat;
	const auto t0 = Clock::now();
	uint64_t n = 0;
	while (seconds_since(t0) < secs) {
		if (post_send(e, p.a, n++) == 0)
			posted++;
		else
			post_err++;
		if (post_recv(e, p.b, nullptr, n, 65536 + (n % 16) * 4096) == 0)
			recv_posted++;
		struct ibv_wc wc[16];
		int k = ibv_poll_cq(p.a.scq, 16, wc);
		for (int i = 0; i < k; i++)
			sstat[wc[i].status]++;
		k = ibv_poll_cq(p.b.rcq, 16, wc);
		for (int i = 0; i < k; i++)
			rstat[wc[i].status]++;
		usleep(200);
	}
	stop = true;
	scribbler.join();
	std::printf("  %s: %.1f s, %" PRIu64 " ring scribbles, %" PRIu64
		    " doorbells, %" PRIu64 " sends posted (%" PRIu64 " refused), %" PRIu64
		    " receives posted\n", name, seconds_since(t0), scribbles.load(),
		    doorbells.load(), posted, post_err, recv_posted);
	for (auto &[s, c] : sstat)
		std::printf("  %s: sender %s x%" PRIu64 "\n", name,
			    ibv_wc_status_str(static_cast<enum ibv_wc_status>(s)), c);
	for (auto &[s, c] : rstat)
		std::printf("  %s: receiver %s x%" PRIu64 "\n", name,
			    ibv_wc_status_str(static_cast<enum ibv_wc_status>(s)), c);
	const int ast = qp_state(p.a.qp), bst = qp_state(p.b.qp);
	std::printf("  %s: states %s / %s\n", name, state_name(ast), state_name(bst));
	drain_events(e.ctx);
	const bool destroyed = destroy_pair(p, &why);
	check(name, destroyed && ast >= 0 && bst >= 0, why);
}

} // namespace wqs

/*
 * The setup both wq-scribble and harden share: a GID (gid_arg, or the
 * port's IPv4 RoCE v2 GID), a PD and a 1 MiB MR; checks "<prefix>_gid" and
 * "<prefix>_setup". False (RESULT: FAIL printed) if it cannot run.
 */
bool setup_env(wqs::Env &e, struct ibv_context *ctx, const char *gid_arg,
	       const std::string &prefix)
{
	using namespace wqs;

	e.ctx = ctx;
	sroce_tool::set_nonblocking(ctx->async_fd);
	if (gid_arg) {
		e.gid_index = std::atoi(gid_arg);
		if (ibv_query_gid(ctx, 1, e.gid_index, &e.gid))
			e.gid_index = -1;
	} else {
		e.gid_index = sroce_tool::find_roce_v2_gid(ctx, 1, false, &e.gid);
	}
	check(prefix + "_gid", e.gid_index >= 0, "no IPv4 RoCE v2 GID on port 1");
	e.pd = ibv_alloc_pd(ctx);
	e.map = Mapping(kBufSize);
	e.buf = reinterpret_cast<char *>(e.map.p());
	if (e.pd && e.map)
		e.mr = ibv_reg_mr(e.pd, e.buf, kBufSize, IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	check(prefix + "_setup", e.mr != nullptr, errno_text(errno));
	if (e.gid_index < 0 || !e.mr) {
		std::printf("RESULT: FAIL\n");
		return false;
	}
	return true;
}

/*
 * Runs body in the shared setup, then the shared teardown: check
 * "<prefix>_teardown", the time the mode took, RESULT.
 */
int run_env(struct ibv_context *ctx, const char *gid_arg, const std::string &prefix,
	    const char *mode, const std::function<void(wqs::Env &)> &body)
{
	wqs::Env e;
	const auto t0 = Clock::now();
	if (!setup_env(e, ctx, gid_arg, prefix))
		return 1;
	body(e);
	wqs::drain_events(e.ctx);
	bool ok = ibv_dereg_mr(e.mr) == 0;
	ok &= ibv_dealloc_pd(e.pd) == 0;
	ok &= ibv_close_device(e.ctx) == 0;
	check(prefix + "_teardown", ok, "dereg/dealloc/close failed");
	e.map = Mapping();
	std::printf("  %s took %.1f s\n", mode, seconds_since(t0));
	std::printf("RESULT: %s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}

void wq_scribble(wqs::Env &e)
{
	using namespace wqs;
	std::printf("  gid index %d\n", e.gid_index);

	/* A sanity pair first: the loopback works, so failures below mean something. */
	{
		Pair p;
		std::string why;
		bool ok = make_pair(e, p, IBV_QPT_RC);
		if (ok) {
			post_recv(e, p.b, nullptr, 1, 65536);
			const RecvOutcome o = send_and_watch(e, p, true);
			ok = o.recv_ok && o.send_done && o.send_wc.status == IBV_WC_SUCCESS;
			why = (o.send_done ? wc_text(o.send_wc) : "no send completion") +
			      (o.recv_ok ? " recv ok" : " no recv");
		} else {
			why = "setup: " + errno_text(errno);
		}
		ok &= destroy_pair(p, &why);
		check("wq_loopback_rc_baseline", ok, why);
	}

	/* 1: the SQ producer far from the consumer */
	sq_producer(e, "sq_producer_ahead", 1 << 20);
	sq_producer(e, "sq_producer_behind", -1);

	/* 2: garbage in SQ slots */
	const auto rc = IBV_QPT_RC;
	sq_garbage(e, "sq_wqe_random_bytes", rc, [](Env &e, Pair &, unsigned char *s, size_t n) {
		for (size_t i = 0; i < n; i++)
			s[i] = static_cast<unsigned char>(e.rng());
		hdr(s)->wr_id = 0xbad;
		hdr(s)->send_flags |= SROCE_SEND_SIGNALED;
		if (hdr(s)->opcode <= IBV_WR_SEND_WITH_INV)
			hdr(s)->opcode |= 0x80000000;
	}, {IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_PROT_ERR});
	sq_garbage(e, "sq_wqe_opcode_ffffffff", rc, [](Env &e, Pair &p, unsigned char *s, size_t) {
		good_send(e, p, s);
		hdr(s)->opcode = 0xffffffff;
	}, {IBV_WC_LOC_QP_OP_ERR});
	sq_garbage(e, "sq_wqe_num_sge_ffff", rc, [](Env &e, Pair &p, unsigned char *s, size_t) {
		good_send(e, p, s);
		hdr(s)->num_sge = 0xffff;
	}, {IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_LEN_ERR});
	sq_garbage(e, "sq_wqe_inline_len_7fffffff", rc, [](Env &e, Pair &p, unsigned char *s, size_t) {
		good_send(e, p, s);
		hdr(s)->send_flags |= SROCE_SEND_INLINE;
		hdr(s)->inline_len = 0x7fffffff;
	}, {IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_LEN_ERR});
	sq_garbage(e, "sq_wqe_sge_length_overflow", rc, [](Env &e, Pair &p, unsigned char *s, size_t) {
		good_send(e, p, s);
		hdr(s)->num_sge = 4;
		for (int i = 0; i < 4; i++)
			sges(s)[i] = {reinterpret_cast<uintptr_t>(e.buf), 0xffffffff, e.mr->lkey};
	}, {IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_PROT_ERR});
	sq_garbage(e, "sq_wqe_bad_lkey", rc, [](Env &e, Pair &p, unsigned char *s, size_t) {
		good_send(e, p, s);
		sges(s)[0].lkey = e.mr->lkey ^ 0x5a5a5a00;
	}, {IBV_WC_LOC_PROT_ERR});
	sq_garbage(e, "sq_wqe_addr_outside_mr", rc, [](Env &e, Pair &p, unsigned char *s, size_t) {
		good_send(e, p, s);
		sges(s)[0].addr = reinterpret_cast<uintptr_t>(e.buf) + kBufSize - 8;
	}, {IBV_WC_LOC_PROT_ERR});
	sq_garbage(e, "ud_wqe_bad_ah_num", IBV_QPT_UD, [](Env &e, Pair &p, unsigned char *s, size_t) {
		good_send(e, p, s);
		hdr(s)->wr.ud.ah_num = 0x7ffffff1;
	}, {IBV_WC_LOC_QP_OP_ERR});
	sq_garbage(e, "ud_wqe_rdma_write", IBV_QPT_UD, [](Env &e, Pair &p, unsigned char *s, size_t) {
		good_send(e, p, s);
		hdr(s)->opcode = IBV_WR_RDMA_WRITE;
	}, {IBV_WC_LOC_QP_OP_ERR});
	sq_garbage(e, "ud_wqe_bad_lkey", IBV_QPT_UD, [](Env &e, Pair &p, unsigned char *s, size_t) {
		good_send(e, p, s);
		sges(s)[0].lkey = e.mr->lkey ^ 0x5a5a5a00;
	}, {IBV_WC_LOC_PROT_ERR});

	/* 3: receive rings */
	recv_garbage(e, "rq_producer_ahead", rc, false, producer_ahead);
	recv_garbage(e, "rq_wqe_num_sge_huge", rc, false, recv_num_sge_huge);
	recv_garbage(e, "rq_wqe_bad_lkey", rc, false, recv_bad_lkey);
	recv_garbage(e, "rq_wqe_random_bytes", rc, false, recv_random);
	recv_garbage(e, "srq_producer_ahead", rc, true, producer_ahead);
	recv_garbage(e, "srq_wqe_num_sge_huge", rc, true, recv_num_sge_huge);
	recv_garbage(e, "srq_wqe_bad_lkey", rc, true, recv_bad_lkey);
	recv_garbage(e, "ud_rq_producer_ahead", IBV_QPT_UD, false, producer_ahead);
	recv_garbage(e, "ud_rq_wqe_bad_lkey", IBV_QPT_UD, false, recv_bad_lkey);

	/* 4: scribbling while another thread posts */
	concurrent(e, 3.0);
}


/* ================================================================ harden */
/*
 * harden: what a process must not be able to do to the kernel, and what the
 * kernel must do for it, through its own rings and objects.
 */
namespace hard {

using namespace wqs;

/*
 * The SQ producer rewound below what the kernel has already fetched. The
 * QP's peer does not exist, so the SENDs stay outstanding (fetched ahead of
 * the consumer) while the producer is rewound.
 */
void sq_rewind(Env &e)
{
	const char *name = "sq_producer_rewind_below_fetched";
	Side s;
	std::string why;
	if (!make_side(e, s, IBV_QPT_RC) ||
	    !rc_connect(e, s, 0xfffff0, 18, 7))
		return setup_failed(name, s);
	for (int i = 0; i < 4; i++)
		post_send(e, s, 0x100 + i);
	usleep(100 * 1000);	/* the kernel fetches them */
	auto &sq = sq_of(s.qp);
	const uint32_t cons = __atomic_load_n(&sq.hdr->consumer, __ATOMIC_ACQUIRE);
	const uint32_t prod = __atomic_load_n(&sq.hdr->producer, __ATOMIC_ACQUIRE);
	std::printf("  %s: consumer %u producer %u, rewinding to %u\n", name, cons,
		    prod, prod - 1);
	__atomic_store_n(&sq.hdr->producer, prod - 1, __ATOMIC_RELEASE);
	const auto t0 = Clock::now();
	ring_doorbell(s.qp);
	const int st = wait_err(s.qp);
	const auto t1 = Clock::now();
	while (!saw_event(s.qp->qp_num, IBV_EVENT_QP_FATAL) && seconds_since(t1) < 2.0)
		drain_events(e.ctx, 0.1);
	const bool fatal = saw_event(s.qp->qp_num, IBV_EVENT_QP_FATAL);
	std::printf("  %s: qp_state=%s fatal_event=%d after %.3f s\n", name,
		    state_name(st), fatal, seconds_since(t0));
	const bool destroyed = destroy_side(s, &why);
	check(name, st == IBV_QPS_ERR && fatal && destroyed,
	      std::string("state ") + state_name(st) + (fatal ? "" : ", no QP_FATAL") + why);
}

/* A receive posted after the QP went to ERR completes with a flush error. */
void recv_after_err(Env &e)
{
	const char *name = "recv_posted_in_err_is_flushed";
	Pair p;
	std::string why;
	if (!make_pair(e, p, IBV_QPT_RC))
		return setup_failed(name, p);
	post_recv(e, p.b, nullptr, 0x201, 0);
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_ERR;
	const int mrc = ibv_modify_qp(p.b.qp, &a, IBV_QP_STATE);
	std::map<uint64_t, int> seen;
	struct ibv_wc wc;
	bool bad_status = false;
	auto collect = [&](double secs) {
		const auto t0 = Clock::now();
		while (seconds_since(t0) < secs) {
			while (ibv_poll_cq(p.b.rcq, 1, &wc) > 0) {
				seen[wc.wr_id]++;
				bad_status |= wc.status != IBV_WC_WR_FLUSH_ERR;
			}
			usleep(1000);
		}
	};
	collect(0.5);
	post_recv(e, p.b, nullptr, 0x202, 4096);
	post_recv(e, p.b, nullptr, 0x203, 8192);
	collect(2.0);
	std::printf("  %s: modify %d, completions:", name, mrc);
	for (auto &[id, n] : seen)
		std::printf(" 0x%" PRIx64 "x%d", id, n);
	std::printf("\n");
	const bool ok = mrc == 0 && seen.size() == 3 && !bad_status &&
			seen[0x201] == 1 && seen[0x202] == 1 && seen[0x203] == 1;
	const bool destroyed = destroy_pair(p, &why);
	check(name, ok && destroyed, "want each of 0x201..0x203 flushed exactly once" + why);
}

/*
 * Receive SGEs of an SRQ belong to the SRQ's PD: an lkey of the QP's PD
 * (not the SRQ's) must not be usable through the SRQ.
 */
void srq_pd(Env &e)
{
	const char *name = "srq_sge_checked_against_srq_pd";
	struct ibv_pd *pd2 = ibv_alloc_pd(e.ctx);
	struct ibv_srq_init_attr sa = {};
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 2;
	struct ibv_srq *srq = pd2 ? ibv_create_srq(pd2, &sa) : nullptr;
	Pair p;
	std::string why;
	p.srq = srq;
	bool ok = srq && make_side(e, p.a, IBV_QPT_RC) &&
		  make_side(e, p.b, IBV_QPT_RC, srq) &&
		  rc_connect(e, p.a, p.b.qp->qp_num) &&
		  rc_connect(e, p.b, p.a.qp->qp_num);
	if (!ok) {
		check(name, false, "setup: " + errno_text(errno));
	} else {
		std::memset(e.buf + 65536, 0x3c, 4096);
		/* e.mr is in the QPs' PD, not in the SRQ's (pd2) */
		post_recv(e, p.b, srq, 0x301, 65536);
		const RecvOutcome o = send_and_watch(e, p, true);
		bool placed = false;
		for (int i = 0; i < 64; i++)
			placed |= e.buf[65536 + i] != 0x3c;
		std::printf("  %s: receiver%s, state %s, placed %d\n", name,
			    o.recv_text.c_str(), state_name(o.b_state), placed);
		check(name, o.recv_err && !o.recv_ok && !placed,
		      "the receive must fail (IBV_WC_LOC_PROT_ERR) and place nothing");
	}
	destroy_pair(p, &why);
	if (pd2)
		ibv_dealloc_pd(pd2);
}

/*
 * A long READ and many SENDs in flight: the READ (from the first half of a
 * region into its second half) keeps the responder busy, the SENDs queue up
 * behind it.
 */
constexpr size_t kBigSize = 16u << 20;

struct Big {
	Mapping map{kBigSize};
	char *buf = reinterpret_cast<char *>(map.p());
	sroce_tool::MrPtr mr;

	explicit Big(Env &e)
	{
		if (map)
			mr.reset(ibv_reg_mr(e.pd, buf, kBigSize, IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE));
	}
};

void load(Env &e, Big &big, Side &req, Side &resp)
{
	/* 448 KiB: under the requester's 512 unacknowledged PSNs, so the SENDs
	 * go out right behind it */
	struct ibv_sge sge = {reinterpret_cast<uintptr_t>(big.buf + kBigSize / 2),
			      448u << 10, big.mr->lkey};
	struct ibv_send_wr wr = {}, *bad = nullptr;
	wr.wr_id = 0x400;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(big.buf);
	wr.wr.rdma.rkey = big.mr->rkey;
	for (int i = 0; i < 12; i++)
		post_recv(e, resp, nullptr, 0x500 + i, 4096 * (i % 8));
	ibv_post_send(req.qp, &wr, &bad);
	for (int i = 0; i < 12; i++)
		post_send(e, req, 0x600 + i, 64 * i);
}

/*
 * destroy_qp of a QP connected to itself with a long READ and SENDs queued
 * behind it (its backlog holds its own packets): it must finish.
 */
void destroy_self(Env &e)
{
	const char *name = "destroy_self_connected_under_read";
	Side s;
	std::string why;
	if (!make_side(e, s, IBV_QPT_RC) ||
	    !rc_connect(e, s, s.qp->qp_num, 14, 7, 16))
		return setup_failed(name, s);
	Big big(e);
	if (!big.mr) {
		check(name, false, "16 MiB MR: " + errno_text(errno));
		destroy_side(s, &why);
		return;
	}
	load(e, big, s, s);
	/* at once: the READ is being answered, the SENDs queue behind it */
	const auto t0 = Clock::now();
	const bool destroyed = destroy_side(s, &why);
	const double t = seconds_since(t0);
	std::printf("  %s: destroyed in %.3f s\n", name, t);
	check(name, destroyed, why);
}

/* Two connected pairs under load, destroyed from two threads at once. */
void destroy_concurrent(Env &e)
{
	const char *name = "destroy_two_pairs_concurrently";
	Pair p[2];
	std::string why[2];
	for (auto &x : p) {
		if (!make_side(e, x.a, IBV_QPT_RC) || !make_side(e, x.b, IBV_QPT_RC) ||
		    !rc_connect(e, x.a, x.b.qp->qp_num, 14, 7, 16) ||
		    !rc_connect(e, x.b, x.a.qp->qp_num, 14, 7, 16)) {
			check(name, false, "setup: " + errno_text(errno));
			destroy_pair(p[0], &why[0]);
			destroy_pair(p[1], &why[1]);
			return;
		}
	}
	Big big(e);
	if (!big.mr) {
		check(name, false, "16 MiB MR: " + errno_text(errno));
		destroy_pair(p[0], &why[0]);
		destroy_pair(p[1], &why[1]);
		return;
	}
	for (auto &x : p) {
		load(e, big, x.a, x.b);
		load(e, big, x.b, x.a);
	}
	const auto t0 = Clock::now();
	bool ok[2] = {false, false};
	std::thread t1([&] { ok[0] = destroy_pair(p[0], &why[0]); });
	std::thread t2([&] { ok[1] = destroy_pair(p[1], &why[1]); });
	t1.join();
	t2.join();
	std::printf("  %s: destroyed in %.3f s\n", name, seconds_since(t0));
	check(name, ok[0] && ok[1], why[0] + why[1]);
}

/* Objects beyond the device limits fail with EINVAL and leave nothing. */
void oversize(Env &e)
{
	struct ibv_device_attr da = {};
	ibv_query_device(e.ctx, &da);
	struct ibv_cq *cq = ibv_create_cq(e.ctx, 16, nullptr, nullptr, 0);
	auto qp_with = [&](int send_wr, int recv_wr, int sge) {
		sroce_tool::QpCaps caps;
		caps.send_wr = send_wr;
		caps.recv_wr = recv_wr;
		caps.send_sge = sge;
		caps.recv_sge = 1;
		struct ibv_qp_init_attr ia = sroce_tool::qp_init_attr(cq, cq, caps);
		errno = 0;
		struct ibv_qp *qp = ibv_create_qp(e.pd, &ia);
		const int err = qp ? 0 : errno;
		if (qp)
			ibv_destroy_qp(qp);
		return err;
	};
	const int e1 = qp_with(da.max_qp_wr + 1, 1, 1);
	const int e2 = qp_with(1, da.max_qp_wr + 1, 1);
	const int e3 = qp_with(1, 1, da.max_sge + 1);
	errno = 0;
	struct ibv_cq *big = ibv_create_cq(e.ctx, da.max_cqe + 1, nullptr, nullptr, 0);
	const int e4 = big ? 0 : errno;
	if (big)
		ibv_destroy_cq(big);
	struct ibv_srq_init_attr sa = {};
	sa.attr.max_wr = da.max_srq_wr + 1;
	sa.attr.max_sge = 1;
	errno = 0;
	struct ibv_srq *srq = ibv_create_srq(e.pd, &sa);
	const int e5 = srq ? 0 : errno;
	if (srq)
		ibv_destroy_srq(srq);
	if (cq)
		ibv_destroy_cq(cq);
	std::printf("  oversize: qp send_wr %s, recv_wr %s, sge %s; cq %s; srq %s\n",
		    errno_text(e1).c_str(), errno_text(e2).c_str(), errno_text(e3).c_str(),
		    errno_text(e4).c_str(), errno_text(e5).c_str());
	check("oversize_objects_fail_with_einval",
	      e1 == EINVAL && e2 == EINVAL && e3 == EINVAL && e4 == EINVAL && e5 == EINVAL,
	      "want EINVAL for each");
}

} // namespace hard

/* A mode's named cases: all of them, or only the one called only (which must exist). */
using Case = std::pair<const char *, void (*)(wqs::Env &)>;

void run_cases(wqs::Env &e, const std::vector<Case> &cases, const char *only)
{
	bool found = false;
	for (const auto &[cname, fn] : cases) {
		if (!only || std::strcmp(only, cname) == 0) {
			found = true;
			fn(e);
		}
	}
	if (!found)
		check(std::string("case_") + only, false, "no such case");
}

void harden(wqs::Env &e, const char *only)
{
	run_cases(e, {
		{"oversize", hard::oversize},
		{"recv_after_err", hard::recv_after_err},
		{"srq_pd", hard::srq_pd},
		{"destroy_self", hard::destroy_self},
		{"destroy_concurrent", hard::destroy_concurrent},
		{"sq_rewind", hard::sq_rewind},
	}, only);
}

/* ------------------------------------------------------------------------ */
/*
 * breadth: verbs beyond the basic set, in loopback with every byte checked:
 * resize_cq (unpolled completions kept; a CQ resized while another thread
 * polls it), rereg_mr (translation, access, PD; a failed rereg leaves the
 * region working) and parent domains (QP, SRQ, CQ and MR created on one).
 */

namespace breadth {

using namespace wqs;
using sroce_tool::strf;

constexpr uint32_t kRecvOff = kBufSize / 2;	/* receive slots, 4 KiB apart */
constexpr uint32_t kSlots = 16;			/* = the QPs' queue depths */

uint8_t pat(uint32_t msg, uint32_t i)
{
	return static_cast<uint8_t>(msg * 131 + i * 7 + 1);
}

void fill(void *p, uint32_t msg, uint32_t len)
{
	auto *b = static_cast<uint8_t *>(p);
	for (uint32_t i = 0; i < len; i++)
		b[i] = pat(msg, i);
}

/* Index of the first byte that differs from message msg's pattern, or -1. */
long first_bad(const void *p, uint32_t msg, uint32_t len)
{
	const auto *b = static_cast<const uint8_t *>(p);
	for (uint32_t i = 0; i < len; i++)
		if (b[i] != pat(msg, i))
			return i;
	return -1;
}

/* Completions in cq's ring that this process has not polled yet. */
uint32_t unpolled(struct ibv_cq *cq)
{
	sroce::cq *c = sroce::get_cq(cq);
	return __atomic_load_n(&c->hdr->producer, __ATOMIC_ACQUIRE) - c->cons;
}

bool wait_unpolled(struct ibv_cq *cq, uint32_t n)
{
	const auto t0 = Clock::now();
	while (unpolled(cq) < n && seconds_since(t0) < kWait)
		usleep(1000);
	return unpolled(cq) == n;
}

/* Send message msg (kMsg bytes, from send slot msg % kSlots). */
int send_msg(Env &e, Side &s, uint32_t msg)
{
	fill(e.buf + (msg % kSlots) * kMsg, msg, kMsg);
	return post_send(e, s, msg, (msg % kSlots) * kMsg);
}

int recv_slot(Env &e, Side &s, uint32_t msg)
{
	return post_recv(e, s, nullptr, msg, kRecvOff + (msg % kSlots) * 4096);
}

/* A receive completion of message msg, its bytes in its slot. */
std::string check_recv(Env &e, const struct ibv_wc &wc, uint32_t msg)
{
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != msg || wc.byte_len != kMsg)
		return strf("recv %u: %s byte_len=%u", msg, wc_text(wc).c_str(), wc.byte_len);
	const long bad = first_bad(e.buf + kRecvOff + (msg % kSlots) * 4096, msg, kMsg);
	if (bad >= 0)
		return strf("recv %u: byte %ld differs", msg, bad);
	return "";
}

void resize_cq(Env &e)
{
	const char *name = "resize_cq_keeps_unpolled_completions";
	constexpr uint32_t kN = 12;
	Pair p;
	if (!make_pair(e, p, IBV_QPT_RC))
		return setup_failed(name, p);
	std::string why;
	for (uint32_t i = 0; i < kN && why.empty(); i++)
		if (recv_slot(e, p.b, i) || send_msg(e, p.a, i))
			why = "post " + std::to_string(i);
	if (why.empty() && !(wait_unpolled(p.a.scq, kN) && wait_unpolled(p.b.rcq, kN)))
		why = strf("completions: send %u recv %u of %u", unpolled(p.a.scq),
			   unpolled(p.b.rcq), kN);
	if (why.empty()) {
		/* fewer slots than completions waiting: refused, nothing lost */
		const int small = ibv_resize_cq(p.b.rcq, kN - 4);
		check("resize_cq_below_unpolled_refused", small == EINVAL,
		      errno_text(small) + strf(" cqe=%d", p.b.rcq->cqe));
		const int grow = ibv_resize_cq(p.b.rcq, 200);
		const int shrink = ibv_resize_cq(p.a.scq, kN);
		check("resize_cq_grow_and_shrink", !grow && !shrink && p.b.rcq->cqe >= 200 &&
			      p.a.scq->cqe >= static_cast<int>(kN) && p.a.scq->cqe < 64,
		      strf("grow %d (cqe %d) shrink %d (cqe %d)", grow, p.b.rcq->cqe, shrink,
			   p.a.scq->cqe));
		struct ibv_wc wc;
		for (uint32_t i = 0; i < kN && why.empty(); i++) {
			if (!wait_wc(p.b.rcq, &wc))
				why = strf("recv %u: no completion", i);
			else
				why = check_recv(e, wc, i);
			if (why.empty() && !(wait_wc(p.a.scq, &wc) && wc.status == IBV_WC_SUCCESS &&
					     wc.wr_id == i))
				why = strf("send %u: %s", i, wc_text(wc).c_str());
		}
		const int one = ibv_resize_cq(p.b.rcq, 1);
		if (why.empty() && (one || p.b.rcq->cqe < 1))
			why = strf("resize to 1: %d", one);
		/* the resized CQs keep working */
		if (why.empty() && (recv_slot(e, p.b, kN) || send_msg(e, p.a, kN)))
			why = "post after resize";
		if (why.empty() && !(wait_wc(p.b.rcq, &wc) && check_recv(e, wc, kN).empty() &&
				     wait_wc(p.a.scq, &wc) && wc.status == IBV_WC_SUCCESS))
			why = "message after resize: " + wc_text(wc);
	}
	std::string dwhy;
	const bool destroyed = destroy_pair(p, &dwhy);
	check(name, why.empty() && destroyed, why + dwhy);
}

/*
 * The receiver's CQ is resized again and again by this thread while another
 * thread polls it and reposts receives; every message must arrive once, in
 * order, with its bytes, and every resize must succeed (no more completions
 * can be waiting than receives posted, kSlots).
 */
void resize_cq_poller(Env &e)
{
	const char *name = "resize_cq_while_another_thread_polls";
	constexpr uint32_t kTotal = 2000, kEvery = 50;
	const int sizes[] = {kSlots, 700, 40, 4000, 17, 128};
	Pair p;
	if (!make_pair(e, p, IBV_QPT_RC))
		return setup_failed(name, p);
	std::atomic<uint32_t> polled{0};
	std::atomic<bool> stop{false};
	std::string rwhy;
	for (uint32_t i = 0; i < kSlots; i++)
		recv_slot(e, p.b, i);
	std::thread poller([&] {
		uint32_t next = 0;
		while (next < kTotal && !stop.load()) {
			struct ibv_wc wc[8];
			const int n = ibv_poll_cq(p.b.rcq, 8, wc);
			if (n < 0) {
				rwhy = strf("poll_cq: %d", n);
				return;
			}
			for (int k = 0; k < n; k++, next++) {
				rwhy = check_recv(e, wc[k], next);
				if (!rwhy.empty())
					return;
				if (next + kSlots < kTotal && recv_slot(e, p.b, next + kSlots)) {
					rwhy = strf("repost %u", next + kSlots);
					return;
				}
				polled.store(next + 1);
			}
		}
	});
	std::string why;
	uint32_t sent = 0, done = 0, resizes = 0;
	const auto t0 = Clock::now();
	while (done < kTotal && why.empty()) {
		if (seconds_since(t0) > 60) {
			why = strf("timeout: sent %u done %u polled %u", sent, done, polled.load());
			break;
		}
		/* only messages whose receive is posted, and send slots that are free */
		while (sent < kTotal && sent < polled.load() + kSlots && sent - done < kSlots - 4) {
			if (send_msg(e, p.a, sent)) {
				why = strf("post_send %u", sent);
				break;
			}
			sent++;
		}
		struct ibv_wc wc[8];
		const int n = ibv_poll_cq(p.a.scq, 8, wc);
		for (int k = 0; k < n && why.empty(); k++, done++)
			if (wc[k].status != IBV_WC_SUCCESS || wc[k].wr_id != done)
				why = strf("send %u: %s", done, wc_text(wc[k]).c_str());
		if (n > 0 && done / kEvery > resizes && why.empty()) {
			const int sz = sizes[resizes % (sizeof(sizes) / sizeof(sizes[0]))];
			const int rc = ibv_resize_cq(p.b.rcq, sz);
			if (rc || p.b.rcq->cqe < sz)
				why = strf("resize %u to %d: %s", resizes, sz, errno_text(rc).c_str());
			resizes++;
		}
	}
	if (!why.empty())
		stop = true;
	poller.join();
	if (why.empty() && !rwhy.empty())
		why = rwhy;
	if (why.empty() && polled.load() != kTotal)
		why = strf("received %u of %u", polled.load(), kTotal);
	std::printf("  %u messages, %u resizes while polled, %.1f s\n", polled.load(), resizes,
		    seconds_since(t0));
	std::string dwhy;
	const bool destroyed = destroy_pair(p, &dwhy);
	check(name, why.empty() && destroyed && resizes >= kTotal / kEvery - 1, why + dwhy);
}

/* A signaled RDMA WRITE or READ of len bytes, local to remote: ibv_post_send's result. */
int post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, const void *local,
	      uint32_t len, uint32_t lkey, const void *remote, uint32_t rkey)
{
	struct ibv_sge sge = {reinterpret_cast<uintptr_t>(local), len, lkey};
	struct ibv_send_wr wr = {}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(remote);
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* RDMA WRITE len bytes from send slot 0 to (addr, rkey); the completion's status. */
int write_to(Env &e, Side &s, void *addr, uint32_t rkey, uint32_t msg, uint32_t len)
{
	fill(e.buf, msg, len);
	if (post_rdma(s.qp, IBV_WR_RDMA_WRITE, msg, e.buf, len, e.mr->lkey, addr, rkey))
		return -1;
	struct ibv_wc wc;
	return wait_wc(s.scq, &wc) ? wc.status : -2;
}

/*
 * One write through a fresh pair (a failed write leaves its QP in ERR):
 * want the status, and with success the bytes at addr.
 */
void write_check(Env &e, const std::string &name, void *addr, uint32_t rkey, uint32_t msg,
		 int want)
{
	Pair p;
	if (!make_pair(e, p, IBV_QPT_RC))
		return setup_failed(name.c_str(), p);
	const int st = write_to(e, p.a, addr, rkey, msg, 4096);
	std::string why;
	if (st != want)
		why = strf("status %d (%s), want %s", st,
			   st >= 0 ? ibv_wc_status_str(static_cast<enum ibv_wc_status>(st)) : "-",
			   ibv_wc_status_str(static_cast<enum ibv_wc_status>(want)));
	else if (want == IBV_WC_SUCCESS && first_bad(addr, msg, 4096) >= 0)
		why = "bytes differ";
	destroy_pair(p, &why);
	check(name, why.empty(), why);
}

void rereg_mr(Env &e)
{
	constexpr size_t kLen = 64 << 10;
	constexpr int kRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ;
	Mapping x(kLen), y(kLen);
	struct ibv_pd *pd2 = ibv_alloc_pd(e.ctx);
	struct ibv_mr *mr = x && y && pd2 ? ibv_reg_mr(e.pd, x.p(), kLen, kRemote) : nullptr;
	check("rereg_setup", mr != nullptr, errno_text(errno));
	if (!mr) {
		if (pd2)
			ibv_dealloc_pd(pd2);
		return;
	}
	write_check(e, "rereg_before", x.p(), mr->rkey, 1, IBV_WC_SUCCESS);

	/* translation: the region moves to y, same keys; x keeps its bytes */
	const uint32_t old_lkey = mr->lkey, old_rkey = mr->rkey;
	int rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, y.p(), kLen, 0);
	check("rereg_translation", rc == 0 && mr->addr == y.p() && mr->rkey == old_rkey &&
		      mr->lkey == old_lkey,
	      strf("rc %d errno %s", rc, errno_text(errno).c_str()));
	write_check(e, "rereg_translation_write_lands_in_new_range", y.p(), old_rkey, 2,
		    IBV_WC_SUCCESS);
	check("rereg_translation_old_range_untouched", first_bad(x.p(), 1, 4096) < 0);
	write_check(e, "rereg_old_range_refused", x.p(), old_rkey, 3, IBV_WC_REM_ACCESS_ERR);

	/* access: without remote write, writes are refused */
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			  IBV_ACCESS_LOCAL_WRITE);
	check("rereg_access", rc == 0, strf("rc %d", rc));
	write_check(e, "rereg_access_write_refused", y.p(), mr->rkey, 4, IBV_WC_REM_ACCESS_ERR);

	/* PD: in another PD the QPs of this one cannot use it; back, they can */
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS, pd2,
			  nullptr, 0, kRemote);
	check("rereg_pd", rc == 0 && mr->pd == pd2, strf("rc %d", rc));
	write_check(e, "rereg_pd_other_pd_refused", y.p(), mr->rkey, 5, IBV_WC_REM_ACCESS_ERR);
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, e.pd, nullptr, 0, 0);
	check("rereg_pd_back", rc == 0 && mr->pd == e.pd, strf("rc %d", rc));
	write_check(e, "rereg_pd_back_write", y.p(), mr->rkey, 6, IBV_WC_SUCCESS);

	/* a rereg that fails (range not mapped) leaves the region as it was */
	Mapping gone(kLen);
	void *hole = gone.p();
	gone = Mapping();	/* unmapped */
	const uint32_t keep_rkey = mr->rkey;
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, hole, kLen, 0);
	check("rereg_unmapped_range_fails", rc == IBV_REREG_MR_ERR_CMD && mr->rkey == keep_rkey,
	      strf("rc %d", rc));
	write_check(e, "rereg_failed_region_still_works", y.p(), mr->rkey, 7, IBV_WC_SUCCESS);

	/* the lkey side: a SEND from a region moved by rereg */
	Mapping s1(4096), s2(4096);
	struct ibv_mr *smr = ibv_reg_mr(e.pd, s1.p(), 4096, IBV_ACCESS_LOCAL_WRITE);
	rc = smr ? ibv_rereg_mr(smr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, s2.p(), 4096, 0)
		 : -100;
	Pair p;
	std::string why = rc ? strf("rereg rc %d", rc) : "";
	if (why.empty() && !make_pair(e, p, IBV_QPT_RC))
		why = "pair";
	if (why.empty()) {
		fill(s2.p(), 8, kMsg);
		struct ibv_sge sge = {reinterpret_cast<uintptr_t>(s2.p()), kMsg, smr->lkey};
		struct ibv_send_wr wr = {}, *bad = nullptr;
		wr.wr_id = 8;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		struct ibv_wc wc;
		if (recv_slot(e, p.b, 8) || ibv_post_send(p.a.qp, &wr, &bad))
			why = "post";
		else if (!wait_wc(p.b.rcq, &wc))
			why = "no receive completion";
		else
			why = check_recv(e, wc, 8);
	}
	destroy_pair(p, &why);
	check("rereg_lkey_send_from_new_range", why.empty(), why);
	if (smr)
		ibv_dereg_mr(smr);

	check("rereg_teardown", ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd2) == 0);
}

/*
 * The set-up of the checks that a QP leaving takes its completions, not
 * the other QP's, out of a shared CQ: a pair, a second QP on p.b's CQs in
 * ERR with one receive (wr_id @msg) flushed there, three receives (@first,
 * ...) posted to p.b, with @send a SEND from p.b, then p.b in ERR and its
 * flushes in the CQs. Returns what failed, or "".
 */
std::string shared_cq_setup(Env &e, Pair &p, Side &other, uint32_t msg, uint32_t first,
			    bool send)
{
	if (!make_pair(e, p, IBV_QPT_RC))
		return "pair: " + errno_text(errno);
	sroce_tool::QpCaps caps;
	caps.send_wr = caps.recv_wr = kSlots;
	caps.send_sge = caps.recv_sge = 4;
	struct ibv_qp_init_attr ia = sroce_tool::qp_init_attr(p.b.scq, p.b.rcq, caps);
	other.qp = ibv_create_qp(e.pd, &ia);
	struct ibv_qp_attr to_err = {};
	to_err.qp_state = IBV_QPS_ERR;
	if (!other.qp || sroce_tool::qp_to_init(other.qp, loopback_path(e, IBV_QPT_RC, 0)) ||
	    recv_slot(e, other, msg) || ibv_modify_qp(other.qp, &to_err, IBV_QP_STATE))
		return "other QP: " + errno_text(errno);
	for (uint32_t i = 0; i < 3; i++)
		if (recv_slot(e, p.b, first + i))
			return "post_recv";
	if ((send && send_msg(e, p.b, first + 3)) || ibv_modify_qp(p.b.qp, &to_err, IBV_QP_STATE))
		return "b: send, to ERR";
	if (!wait_unpolled(p.b.rcq, 4))
		return strf("receive flushes: %u of 4", unpolled(p.b.rcq));
	if (send && !wait_unpolled(p.b.scq, 1))
		return "b's SEND did not complete";
	return "";
}

/* p.b's receive CQ holds one completion, the other QP's flushed @msg: "" or what is wrong. */
std::string only_the_other_qps(Pair &p, Side &other, uint32_t msg)
{
	struct ibv_wc wc;
	if (unpolled(p.b.rcq) != 1)
		return strf("%u receive completions left, want 1 (the other QP's)",
			    unpolled(p.b.rcq));
	if (!(wait_wc(p.b.rcq, &wc) && wc.wr_id == msg && wc.qp_num == other.qp->qp_num &&
	      wc.status == IBV_WC_WR_FLUSH_ERR))
		return "the other QP's completion: " + wc_text(wc);
	return "";
}

/*
 * A destroyed QP takes its unpolled completions out of the CQs it shared
 * (as hardware providers drop them): the other QPs of the CQ never poll a
 * completion whose wr_id the application may have freed with the QP.
 * Another QP's completions stay.
 */
void destroy_cleans_cq(Env &e)
{
	const char *name = "qp_destroy_drops_its_unpolled_completions";
	Pair p;
	Side other;
	std::string why = shared_cq_setup(e, p, other, 51, 61, true);
	const uint32_t bqpn = p.b.qp ? p.b.qp->qp_num : 0;
	if (why.empty()) {
		const int rc = ibv_destroy_qp(p.b.qp);
		p.b.qp = nullptr;
		if (rc)
			why = "destroy b: " + errno_text(rc);
	}
	if (why.empty() && unpolled(p.b.scq) != 0)
		why = strf("%u send completions left, want 0", unpolled(p.b.scq));
	if (why.empty())
		why = only_the_other_qps(p, other, 51);
	std::printf("  %s: QP %u destroyed with 3 receive and 1 send completions unpolled\n",
		    name, bqpn);
	destroy_side(other, &why);
	destroy_pair(p, &why);
	check(name, why.empty(), why);
}

/*
 * A QP moved to RESET takes its unpolled completions out of its CQs (the
 * provider cleans them, as hardware providers do); another QP's stay. Back
 * in RTS the QP reports only new completions.
 */
void reset_cleans_cq(Env &e)
{
	const char *name = "qp_reset_drops_its_unpolled_completions";
	Pair p;
	Side other;
	std::string why = shared_cq_setup(e, p, other, 50, 60, false);
	struct ibv_qp_attr to_reset = {};
	to_reset.qp_state = IBV_QPS_RESET;
	if (why.empty() && ibv_modify_qp(p.b.qp, &to_reset, IBV_QP_STATE))
		why = "b to RESET";
	if (why.empty())
		why = only_the_other_qps(p, other, 50);
	struct ibv_wc wc;
	/* up again: a message, and only its completion */
	if (why.empty() && !rc_connect(e, p.b, p.a.qp->qp_num))
		why = "b back to RTS";
	if (why.empty() && (recv_slot(e, p.b, 70) || send_msg(e, p.a, 70)))
		why = "post after RESET";
	if (why.empty() && !(wait_wc(p.b.rcq, &wc) && check_recv(e, wc, 70).empty()))
		why = "message after RESET: " + wc_text(wc);
	if (why.empty() && unpolled(p.b.rcq))
		why = strf("%u extra completions", unpolled(p.b.rcq));
	destroy_side(other, &why);
	destroy_pair(p, &why);
	check(name, why.empty(), why);
}

/*
 * A modify the QP's state does not allow (a new address vector in RTS) fails
 * with EINVAL and changes nothing: query_qp still reports the old address,
 * and the QP still carries messages.
 */
void rejected_modify(Env &e)
{
	const char *name = "rejected_modify_keeps_the_address";
	Pair p;
	if (!make_pair(e, p, IBV_QPT_RC))
		return setup_failed(name, p);
	std::string why;
	struct ibv_qp_attr attr = {};
	struct ibv_qp_init_attr init = {};
	if (ibv_query_qp(p.a.qp, &attr, IBV_QP_AV, &init))
		why = "query: " + errno_text(errno);
	const struct ibv_ah_attr before = attr.ah_attr;
	if (why.empty() && std::memcmp(&before.grh.dgid, &e.gid, sizeof(e.gid)) != 0)
		why = "dgid is not the loopback GID";
	/* the same destination (it must resolve), another class and SL */
	struct ibv_qp_attr av = {};
	av.ah_attr = sroce_tool::ah_attr_to(1, e.gid_index, e.gid);
	av.ah_attr.grh.traffic_class = before.grh.traffic_class ^ 0x28;
	av.ah_attr.sl = before.sl ^ 3;
	int rc = 0;
	if (why.empty() && (rc = ibv_modify_qp(p.a.qp, &av, IBV_QP_AV)) != EINVAL)
		why = "modify of the AV in RTS: " + errno_text(rc);
	attr = {};
	if (why.empty() && ibv_query_qp(p.a.qp, &attr, IBV_QP_AV | IBV_QP_STATE, &init))
		why = "query after: " + errno_text(errno);
	if (why.empty() && (attr.ah_attr.grh.traffic_class != before.grh.traffic_class ||
			    attr.ah_attr.sl != before.sl ||
			    std::memcmp(&attr.ah_attr.grh.dgid, &before.grh.dgid,
					sizeof(e.gid)) != 0))
		why = strf("query_qp reports the refused address (class %#x sl %u)",
			   attr.ah_attr.grh.traffic_class, attr.ah_attr.sl);
	if (why.empty() && attr.qp_state != IBV_QPS_RTS)
		why = strf("state %s", state_name(attr.qp_state));
	struct ibv_wc wc;
	if (why.empty() && (recv_slot(e, p.b, 80) || send_msg(e, p.a, 80)))
		why = "post";
	if (why.empty() && !(wait_wc(p.b.rcq, &wc) && check_recv(e, wc, 80).empty()))
		why = "message after: " + wc_text(wc);
	destroy_pair(p, &why);
	check(name, why.empty(), why);
}

/*
 * What applications written for hardware RNICs pass and expect to work:
 * qp_access_flags with other defined access bits beside the remote ones
 * (an MR's flags, RELAXED_ORDERING) are accepted and kept, an undefined bit
 * is EINVAL; IBV_QP_PATH_MIG_STATE "migrated" (no alternate path armed,
 * what query_qp reports) is accepted in RTR->RTS, while arming migration
 * is EOPNOTSUPP and loading an alternate path fails (no APM); srq_limit
 * means nothing at ibv_create_srq (its man page) and arms nothing.
 */
void modify_leniency(Env &e)
{
	sroce_tool::QpCaps caps;
	struct ibv_cq *cq = ibv_create_cq(e.ctx, 16, nullptr, nullptr, 0);
	struct ibv_qp_init_attr ia = sroce_tool::qp_init_attr(cq, cq, caps);
	struct ibv_qp *qp = cq ? ibv_create_qp(e.pd, &ia) : nullptr;
	check("leniency_setup", qp != nullptr, errno_text(errno));
	if (qp) {
		struct ibv_qp_attr a = {};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				 IBV_QP_ACCESS_FLAGS;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | 0x40000000;
		const int bad = ibv_modify_qp(qp, &a, mask);
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_RELAXED_ORDERING;
		const int good = ibv_modify_qp(qp, &a, mask);
		struct ibv_qp_attr q = {};
		struct ibv_qp_init_attr qi = {};
		const int qrc = ibv_query_qp(qp, &q, IBV_QP_ACCESS_FLAGS, &qi);
		check("qp_access_flags_undefined_bit_refused", bad == EINVAL,
		      "rc " + errno_text(bad));
		check("qp_access_flags_relaxed_ordering_accepted",
		      good == 0 && qrc == 0 && (q.qp_access_flags & IBV_ACCESS_REMOTE_READ),
		      strf("modify %d query %d flags %#x", good, qrc, q.qp_access_flags));
		ibv_destroy_qp(qp);
	}
	if (cq)
		ibv_destroy_cq(cq);

	Pair p;
	std::string why;
	if (!make_side(e, p.a, IBV_QPT_RC) || !make_side(e, p.b, IBV_QPT_RC) ||
	    !rc_connect(e, p.b, p.a.qp->qp_num))
		return setup_failed("path_mig_state_migrated_accepted", p);
	sroce_tool::Path pa = loopback_path(e, IBV_QPT_RC, p.b.qp->qp_num);
	if (sroce_tool::qp_to_init(p.a.qp, pa) || sroce_tool::qp_to_rtr(p.a.qp, pa))
		why = "a to RTR: " + errno_text(errno);
	struct ibv_qp_attr m = {};
	m.qp_state = IBV_QPS_RTS;
	m.timeout = 14;
	m.retry_cnt = 7;
	m.rnr_retry = 7;
	m.sq_psn = pa.sq_psn;
	m.max_rd_atomic = 1;
	const int rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
	m.path_mig_state = IBV_MIG_ARMED;
	int rc = why.empty() ? ibv_modify_qp(p.a.qp, &m, rts | IBV_QP_PATH_MIG_STATE) : -1;
	if (why.empty() && rc != EOPNOTSUPP)
		why = "arming migration: " + errno_text(rc) + ", want EOPNOTSUPP";
	m.path_mig_state = IBV_MIG_MIGRATED;
	rc = why.empty() ? ibv_modify_qp(p.a.qp, &m, rts | IBV_QP_PATH_MIG_STATE) : -1;
	if (why.empty() && rc)
		why = "to RTS with PATH_MIG_STATE migrated: " + errno_text(rc);
	struct ibv_wc wc;
	if (why.empty() && (recv_slot(e, p.b, 81) || send_msg(e, p.a, 81)))
		why = "post";
	if (why.empty() && !(wait_wc(p.b.rcq, &wc) && check_recv(e, wc, 81).empty()))
		why = "message: " + wc_text(wc);
	struct ibv_qp_attr alt = {};
	alt.alt_ah_attr = sroce_tool::ah_attr_to(1, e.gid_index, e.gid);
	alt.alt_port_num = 1;
	/* ib_core refuses alternate paths on RoCE before sroce sees them */
	rc = why.empty() ? ibv_modify_qp(p.a.qp, &alt, IBV_QP_ALT_PATH) : EINVAL;
	if (why.empty() && rc != EINVAL && rc != EOPNOTSUPP)
		why = "loading an alternate path: " + errno_text(rc) + ", want an error";
	destroy_pair(p, &why);
	check("path_mig_state_migrated_accepted", why.empty(), why);

	struct ibv_srq_init_attr sa = {};
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	sa.attr.srq_limit = 1000;	/* more than it holds: ignored */
	struct ibv_srq *srq = ibv_create_srq(e.pd, &sa);
	struct ibv_srq_attr sq = {};
	why = !srq ? "create_srq: " + errno_text(errno) :
	      ibv_query_srq(srq, &sq) ? "query_srq: " + errno_text(errno) :
	      sq.srq_limit ? strf("srq_limit %u after create, want 0", sq.srq_limit) : "";
	if (srq && ibv_destroy_srq(srq))
		why += " destroy_srq failed";
	check("srq_limit_at_create_ignored", why.empty(), why);
}

/*
 * A READ of 1 GiB + 256 bytes through a fresh RC pair at path MTU mtu (the
 * local SGE and the remote range far beyond the 1 MiB region): its status.
 */
int long_read(Env &e, enum ibv_mtu mtu, std::string *why)
{
	Pair p;
	sroce_tool::Path pa = loopback_path(e, IBV_QPT_RC, 0), pb = pa;
	int st = -1;
	if (make_side(e, p.a, IBV_QPT_RC) && make_side(e, p.b, IBV_QPT_RC)) {
		pa.dest_qpn = p.b.qp->qp_num;
		pb.dest_qpn = p.a.qp->qp_num;
		pa.mtu = pb.mtu = mtu;
		if (!sroce_tool::connect_qp(p.a.qp, pa) && !sroce_tool::connect_qp(p.b.qp, pb)) {
			struct ibv_wc wc;
			if (post_rdma(p.a.qp, IBV_WR_RDMA_READ, 9, e.buf, (1u << 30) + 256,
				      e.mr->lkey, e.buf, e.mr->rkey))
				*why = "post: " + errno_text(errno);
			else if (!wait_wc(p.a.scq, &wc))
				*why = "no completion";
			else
				st = wc.status;
		}
	}
	if (st < 0 && why->empty())
		*why = "setup: " + errno_text(errno);
	destroy_pair(p, why);
	return st;
}

/*
 * PSNs are 24 bits and compare within half of their space, so a message may
 * take at most 2^22 packets: at path MTU 256 a READ of 1 GiB + 256 bytes
 * fails at once with LOC_LEN_ERR, before any key is checked. At MTU 1024
 * the same length is 2^20 packets and goes to the responder, which refuses
 * the range beyond its region (REM_ACCESS_ERR).
 */
void long_message(Env &e)
{
	std::string why;
	int st = long_read(e, IBV_MTU_256, &why);
	if (why.empty() && st != IBV_WC_LOC_LEN_ERR)
		why = std::string("status ") + ibv_wc_status_str(static_cast<enum ibv_wc_status>(st));
	check("read_of_more_than_2p22_packets_refused", why.empty(), why);
	why.clear();
	st = long_read(e, IBV_MTU_1024, &why);
	if (why.empty() && st != IBV_WC_REM_ACCESS_ERR)
		why = std::string("status ") + ibv_wc_status_str(static_cast<enum ibv_wc_status>(st));
	check("read_of_1gib_at_mtu_1024_reaches_the_responder", why.empty(), why);
}

/* SQD: what sqd_rc and sqd_uc share. */
struct SqdRun {
	Env &e;
	Side &s;
	struct ibv_mr *mr;
	uint8_t *src, *dst;	/* in mr */
	std::string why;
	uint32_t next = 0;	/* the next completion wanted (wr_id) */

	void post(uint32_t i, size_t off, uint32_t len)
	{
		fill(src + off, 300 + i, len);
		if (why.empty() && post_rdma(s.qp, IBV_WR_RDMA_WRITE, i, src + off, len, mr->lkey,
					     dst + off, mr->rkey))
			why = strf("post %u: %s", i, errno_text(errno).c_str());
	}
	bool landed(uint32_t i, size_t off, uint32_t len)
	{
		const long bad = first_bad(dst + off, 300 + i, len);
		if (why.empty() && bad >= 0)
			why = strf("WRITE %u: byte %ld differs", i, bad);
		return bad < 0;
	}
	void to_sqd()
	{
		struct ibv_qp_attr a = {};
		a.qp_state = IBV_QPS_SQD;
		a.en_sqd_async_notify = 1;
		const int rc = why.empty() ? ibv_modify_qp(s.qp, &a, IBV_QP_STATE |
							   IBV_QP_EN_SQD_ASYNC_NOTIFY) : 0;
		if (rc)
			why = "to SQD: " + errno_text(rc);
	}
	void to_rts()
	{
		struct ibv_qp_attr a = {};
		a.qp_state = IBV_QPS_RTS;
		const int rc = why.empty() ? ibv_modify_qp(s.qp, &a, IBV_QP_STATE) : 0;
		if (rc)
			why = "back to RTS: " + errno_text(rc);
	}
	/* sq_draining, or -1 */
	int draining(int want_state = IBV_QPS_SQD)
	{
		struct ibv_qp_attr a = {};
		struct ibv_qp_init_attr ia = {};
		if (!why.empty())
			return -1;
		if (ibv_query_qp(s.qp, &a, IBV_QP_STATE, &ia)) {
			why = "query: " + errno_text(errno);
			return -1;
		}
		if (a.qp_state != want_state)
			why = strf("state %s", state_name(a.qp_state));
		return a.sq_draining;
	}
	uint32_t drained_events() { return count_events(s.qp->qp_num, IBV_EVENT_SQ_DRAINED); }
	void wait_drained()
	{
		for (auto t0 = Clock::now(); why.empty() && !drained_events() &&
		     seconds_since(t0) < kWait;)
			drain_events(e.ctx, 0.2);
		if (why.empty() && !drained_events())
			why = strf("no SQ_DRAINED within %.0f s", kWait);
		if (draining() > 0)
			why = "sq_draining after SQ_DRAINED";
	}
	/* completions in order up to wr_id upto - 1, none in error */
	void take(uint32_t upto, double secs)
	{
		struct ibv_wc wc;
		for (; next < upto && why.empty() && wait_wc(s.scq, &wc, secs); next++)
			if (wc.status != IBV_WC_SUCCESS || wc.wr_id != next)
				why = strf("completion %u: %s", next, wc_text(wc).c_str());
	}
	/* nothing completes while the QP stays in SQD */
	void none_in_sqd()
	{
		if (!why.empty())
			return;
		usleep(300 * 1000);
		if (unpolled(s.scq))
			why = strf("%u completions in SQD after SQ_DRAINED", unpolled(s.scq));
	}
	void finish(const char *name, Pair &p)
	{
		drain_events(e.ctx);
		if (why.empty() && drained_events() != 1)
			why = strf("%u SQ_DRAINED events", drained_events());
		destroy_pair(p, &why);
		check(name, why.empty(), why);
	}
};

/* An SqdRun of side s, WRITEs from e.buf to e.buf + kRecvOff. */
SqdRun sqd_run_in_buf(Env &e, Side &s)
{
	return SqdRun{e, s, e.mr, reinterpret_cast<uint8_t *>(e.buf),
		      reinterpret_cast<uint8_t *>(e.buf) + kRecvOff, {}};
}

/*
 * An RC pair whose a is connected to b (timeout 14: 67 ms, doubling, 7
 * retries: seconds before RETRY_EXC) while b stays in INIT and drops what
 * comes; rc_connect(e, p.b, ...) makes b ready.
 */
bool sqd_rc_pair(Env &e, Pair &p)
{
	return make_side(e, p.a, IBV_QPT_RC) && make_side(e, p.b, IBV_QPT_RC) &&
	       rc_connect(e, p.a, p.b.qp->qp_num, 14, 7) &&
	       !sroce_tool::qp_to_init(p.b.qp, loopback_path(e, IBV_QPT_RC, p.a.qp->qp_num));
}

/*
 * SQD (IBTA 10.3.1.4) on RC: WRITEs sent to a peer that is not ready yet
 * (INIT: it drops them) stay unacknowledged; moved to SQD with
 * en_sqd_async_notify, the QP is draining and stays so until the peer is
 * ready and the resent WRITEs are acknowledged (a rewind to resend them is
 * not a drained queue). Then SQ_DRAINED, once; WRITEs posted in SQD wait,
 * and run back in RTS. Every byte lands.
 */
void sqd_rc(Env &e)
{
	const char *name = "sqd_rc_drains_and_resumes";
	constexpr uint32_t kFirst = 3, kMore = 2, kLen = 36 << 10;
	static_assert((kFirst + kMore) * kLen <= kRecvOff, "source and destination overlap");
	static_assert(2 * kRecvOff <= kBufSize, "buffer");
	Pair p;
	if (!sqd_rc_pair(e, p))
		return setup_failed(name, p);
	SqdRun r = sqd_run_in_buf(e, p.a);
	std::memset(r.dst, 0, (kFirst + kMore) * kLen);
	for (uint32_t i = 0; i < kFirst; i++)
		r.post(i, i * kLen, kLen);
	r.to_sqd();
	if (r.draining() != 1 && r.why.empty())
		r.why = "not draining with every WRITE unacknowledged";
	drain_events(e.ctx, 0.1);
	if (r.why.empty() && r.drained_events())
		r.why = "SQ_DRAINED with every WRITE unacknowledged";
	for (uint32_t i = kFirst; i < kFirst + kMore; i++)
		r.post(i, i * kLen, kLen);
	if (r.why.empty() && !rc_connect(e, p.b, p.a.qp->qp_num))
		r.why = "peer to RTS: " + errno_text(errno);
	r.wait_drained();
	r.take(kFirst, 0);
	if (r.why.empty() && r.next != kFirst)
		r.why = strf("%u of %u WRITEs completed at SQ_DRAINED", r.next, kFirst);
	r.none_in_sqd();
	r.to_rts();
	r.take(kFirst + kMore, kWait);
	if (r.why.empty() && r.next != kFirst + kMore)
		r.why = strf("%u of %u WRITEs completed back in RTS", r.next, kFirst + kMore);
	for (uint32_t i = 0; i < kFirst + kMore; i++)
		r.landed(i, i * kLen, kLen);
	r.finish(name, p);
}

/*
 * SQD on UC: a long WRITE (16 MiB) is under way when the QP moves to SQD.
 * The requester finishes it (a UC WQE completes when its last packet has
 * left, without an ACK) and that drains the queue: SQ_DRAINED, once. A
 * WRITE posted in SQD waits and runs back in RTS.
 */
void sqd_uc(Env &e)
{
	const char *name = "sqd_uc_drains_and_resumes";
	constexpr uint32_t kLong = 16 << 20, kShort = 4096;
	Mapping m(2 * size_t{kLong});
	struct ibv_mr *mr = m ? sroce_tool::reg_mr(e.pd, m.p(), m.len(),
						     IBV_ACCESS_LOCAL_WRITE |
						     IBV_ACCESS_REMOTE_WRITE) : nullptr;
	Pair p;
	if (!mr || !make_side(e, p.a, IBV_QPT_UC) || !make_side(e, p.b, IBV_QPT_UC) ||
	    sroce_tool::connect_qp(p.a.qp, loopback_path(e, IBV_QPT_UC, p.b.qp->qp_num)) ||
	    sroce_tool::connect_qp(p.b.qp, loopback_path(e, IBV_QPT_UC, p.a.qp->qp_num))) {
		setup_failed(name, p);
		if (mr)
			ibv_dereg_mr(mr);
		return;
	}
	SqdRun r{e, p.a, mr, m.p(), m.p(kLong), {}};
	r.post(0, 0, kLong);
	r.to_sqd();
	const int draining = r.draining();
	r.wait_drained();
	r.take(1, 0);
	if (r.why.empty() && r.next != 1)
		r.why = "the long WRITE had not completed at SQ_DRAINED";
	r.post(1, kLong - kShort, kShort);
	r.none_in_sqd();
	r.to_rts();
	r.take(2, kWait);
	if (r.why.empty() && r.next != 2)
		r.why = "the WRITE posted in SQD did not complete back in RTS";
	r.landed(0, 0, kLong - kShort);
	r.landed(1, kLong - kShort, kShort);
	std::printf("  %s: sq_draining %d right after the modify\n", name, draining);
	r.finish(name, p);
	if (ibv_dereg_mr(mr))
		check(name, false, "dereg_mr");
}

/*
 * SQ_DRAINED comes only when the move into SQD asked for it: an RC QP moved
 * to SQD with en_sqd_async_notify and back to RTS before it drained, then
 * to SQD without it, drains (its WRITE completes) and raises no event.
 */
void sqd_notify_only_when_asked(Env &e)
{
	const char *name = "sqd_notify_only_when_asked";
	constexpr uint32_t kLen = 4096;
	Pair p;
	if (!sqd_rc_pair(e, p))
		return setup_failed(name, p);
	SqdRun r = sqd_run_in_buf(e, p.a);
	std::memset(r.dst, 0, kLen);
	r.post(0, 0, kLen);
	r.to_sqd();
	r.to_rts();
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_SQD;
	const int rc = r.why.empty() ? ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE) : 0;
	if (rc)
		r.why = "to SQD without notify: " + errno_text(rc);
	if (r.why.empty() && !rc_connect(e, p.b, p.a.qp->qp_num))
		r.why = "peer to RTS: " + errno_text(errno);
	r.take(1, kWait);
	if (r.why.empty() && r.next != 1)
		r.why = "the WRITE did not complete in SQD";
	drain_events(e.ctx, 1.0);
	if (r.why.empty() && r.drained_events())
		r.why = strf("%u SQ_DRAINED events, none asked for", r.drained_events());
	r.to_rts();
	r.landed(0, 0, kLen);
	destroy_pair(p, &r.why);
	check(name, r.why.empty(), r.why);
}

/*
 * SQD starts no new WQE, not even one that is to fail: a SEND whose SGEs add
 * up to 4 GiB (a local length error when the requester takes it up), posted
 * to a drained RC QP in SQD, leaves the QP in SQD without a completion; back
 * in RTS it completes with IBV_WC_LOC_LEN_ERR and the QP enters ERR.
 */
void sqd_bad_wqe_waits_for_rts(Env &e)
{
	const char *name = "sqd_bad_wqe_waits_for_rts";
	Pair p;
	if (!make_side(e, p.a, IBV_QPT_RC) || !make_side(e, p.b, IBV_QPT_RC) ||
	    !rc_connect(e, p.a, p.b.qp->qp_num) || !rc_connect(e, p.b, p.a.qp->qp_num))
		return setup_failed(name, p);
	SqdRun r = sqd_run_in_buf(e, p.a);
	r.to_sqd();
	r.wait_drained();
	struct ibv_sge sg[2] = {{reinterpret_cast<uintptr_t>(e.buf), 0x80000000u, e.mr->lkey},
				{reinterpret_cast<uintptr_t>(e.buf), 0x80000000u, e.mr->lkey}};
	struct ibv_send_wr wr = {}, *bad = nullptr;
	wr.wr_id = 0;
	wr.sg_list = sg;
	wr.num_sge = 2;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (r.why.empty() && ibv_post_send(p.a.qp, &wr, &bad))
		r.why = "post: " + errno_text(errno);
	r.none_in_sqd();
	r.draining();		/* still SQD */
	r.to_rts();
	struct ibv_wc wc;
	if (r.why.empty() && !wait_wc(p.a.scq, &wc))
		r.why = "no completion back in RTS";
	else if (r.why.empty() && wc.status != IBV_WC_LOC_LEN_ERR)
		r.why = "completion back in RTS: " + wc_text(wc);
	if (r.why.empty() && wait_err(p.a.qp) != IBV_QPS_ERR)
		r.why = "QP not in ERR after the length error";
	r.finish(name, p);
}

long long hw_counter(Env &e, const char *name);

/*
 * SQD to SQD may set new retry budgets; they count from then on. A QP
 * connected with retry_cnt 1 is given retry_cnt 3 in SQD; back in RTS its
 * SEND to a peer in RESET (which answers nothing) fails with
 * IBV_WC_RETRY_EXC_ERR after 3 retries: the port's retry counter (one per
 * ACK timeout) moves by 4, not by 2.
 */
void sqd_new_retry_budget(Env &e)
{
	const char *name = "sqd_sqd_new_retry_cnt_counts";
	Pair p;
	if (!make_pair(e, p, IBV_QPT_RC))
		return setup_failed(name, p);
	std::string why;
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_RESET;
	if (ibv_modify_qp(p.b.qp, &a, IBV_QP_STATE))
		why = "peer to RESET: " + errno_text(errno);
	a = {};
	a.qp_state = IBV_QPS_SQD;
	if (why.empty() && ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE))
		why = "to SQD: " + errno_text(errno);
	int rc = EBUSY;
	const auto t0 = Clock::now();
	while (why.empty() && rc == EBUSY && seconds_since(t0) < kWait) {
		a = {};
		a.qp_state = IBV_QPS_SQD;
		a.retry_cnt = 3;
		rc = ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE | IBV_QP_RETRY_CNT);
		if (rc == EBUSY)
			usleep(10000);	/* still draining */
	}
	if (why.empty() && rc)
		why = "SQD to SQD with retry_cnt 3: " + errno_text(rc);
	a = {};
	a.qp_state = IBV_QPS_RTS;
	if (why.empty() && ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE))
		why = "back to RTS: " + errno_text(errno);
	const long long before = hw_counter(e, "retry");
	struct ibv_wc wc;
	if (why.empty() && (rc = post_send(e, p.a, 0x31)))
		why = "post_send: " + errno_text(rc);
	if (why.empty() && !wait_wc(p.a.scq, &wc))
		why = "no completion";
	else if (why.empty() && (wc.wr_id != 0x31 || wc.status != IBV_WC_RETRY_EXC_ERR))
		why = "SEND: " + wc_text(wc) + ", want retry exceeded";
	const long long after = hw_counter(e, "retry");
	if (why.empty() && (before < 0 || after - before != 4))
		why = strf("%lld ACK timeouts, 4 expected (retry_cnt 3)", after - before);
	destroy_pair(p, &why);
	check(name, why.empty(), why);
}

void sqd(Env &e)
{
	sqd_rc(e);
	sqd_uc(e);
	sqd_notify_only_when_asked(e);
	sqd_bad_wqe_waits_for_rts(e);
	sqd_new_retry_budget(e);
}

/*
 * Communication Established: the peer's first request on a QP still in
 * RTR raises IBV_EVENT_COMM_EST on it, once; the message is received in
 * RTR. The sender, in RTS before any traffic, gets none, and neither does
 * the receiver once in RTS.
 */
void comm_est_one(Env &e, enum ibv_qp_type type, const char *name)
{
	Pair p;
	if (!make_side(e, p.a, type) || !make_side(e, p.b, type) ||
	    (type == IBV_QPT_RC ? !rc_connect(e, p.a, p.b.qp->qp_num) :
	     sroce_tool::connect_qp(p.a.qp, loopback_path(e, type, p.b.qp->qp_num)) != 0))
		return setup_failed(name, p);
	sroce_tool::Path pb = loopback_path(e, type, p.a.qp->qp_num);
	if (sroce_tool::qp_to_init(p.b.qp, pb) || sroce_tool::qp_to_rtr(p.b.qp, pb))
		return setup_failed(name, p);
	drain_events(e.ctx);
	const uint32_t b = p.b.qp->qp_num, a = p.a.qp->qp_num;
	std::string why;
	auto one = [&](uint32_t msg) {
		struct ibv_wc wc;
		if (!why.empty())
			return;
		if (recv_slot(e, p.b, msg) || send_msg(e, p.a, msg))
			why = strf("post %u: %s", msg, errno_text(errno).c_str());
		else if (!wait_wc(p.a.scq, &wc) || wc.status != IBV_WC_SUCCESS)
			why = strf("send %u: %s", msg, wc_text(wc).c_str());
		else if (!wait_wc(p.b.rcq, &wc))
			why = strf("recv %u: no completion", msg);
		else
			why = check_recv(e, wc, msg);
	};
	one(0);
	drain_events(e.ctx, 0.5);
	if (why.empty() && count_events(b, IBV_EVENT_COMM_EST) != 1)
		why = strf("%u COMM_EST events after the first message in RTR",
			   count_events(b, IBV_EVENT_COMM_EST));
	one(1);
	if (why.empty() && sroce_tool::qp_to_rts(p.b.qp, pb))
		why = "receiver to RTS: " + errno_text(errno);
	one(2);
	drain_events(e.ctx, 0.2);
	if (why.empty() && (count_events(b, IBV_EVENT_COMM_EST) != 1 ||
			    count_events(a, IBV_EVENT_COMM_EST) != 0))
		why = strf("COMM_EST: %u on the receiver, %u on the sender (want 1, 0)",
			   count_events(b, IBV_EVENT_COMM_EST),
			   count_events(a, IBV_EVENT_COMM_EST));
	destroy_pair(p, &why);
	check(name, why.empty(), why);
}

/*
 * A responder error that no receive completion reports raises an
 * affiliated event on the responder's QP once it is in ERR, as hardware
 * RNICs do (IBTA's local work queue errors): an RDMA WRITE with a wrong
 * rkey IBV_EVENT_QP_ACCESS_ERR, a misaligned atomic IBV_EVENT_QP_REQ_ERR.
 * A SEND larger than the receive buffer is reported by the receive's
 * completion (local length error) and raises none. The requester learns
 * of each from its completion and gets no event.
 */
void resp_error_event(Env &e, const char *name, enum ibv_wr_opcode op, int want_wc,
		      int want_event)
{
	Pair p;
	if (!make_pair(e, p, IBV_QPT_RC))
		return setup_failed(name, p);
	drain_events(e.ctx);
	const uint32_t a = p.a.qp->qp_num, b = p.b.qp->qp_num;
	std::string why;
	struct ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf), 4096, e.mr->lkey};
	struct ibv_send_wr wr = {}, *bad = nullptr;
	wr.wr_id = 0xe7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_RDMA_WRITE) {
		wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(e.buf + kRecvOff);
		wr.wr.rdma.rkey = e.mr->rkey ^ 0xff;	/* its variant bits: no such key */
	} else if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		/* the responder takes atomics: only the address is wrong */
		struct ibv_qp_attr acc = {};
		acc.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_REMOTE_ATOMIC;
		if (ibv_modify_qp(p.b.qp, &acc, IBV_QP_ACCESS_FLAGS))
			why = "responder access flags: " + errno_text(errno);
		sge.length = 8;
		wr.wr.atomic.remote_addr = reinterpret_cast<uintptr_t>(e.buf + kRecvOff + 4);
		wr.wr.atomic.rkey = e.mr->rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		sge.length = 8192;	/* the receive takes 4096 */
	}
	struct ibv_wc wc;
	const bool posted = why.empty() &&
			    !(op == IBV_WR_SEND && recv_slot(e, p.b, 0)) &&
			    !ibv_post_send(p.a.qp, &wr, &bad);
	if (why.empty() && !posted)
		why = "post: " + errno_text(errno);
	else if (posted && (!wait_wc(p.a.scq, &wc) || wc.status != want_wc))
		why = strf("requester: %s, want %s", wc_text(wc).c_str(),
			   ibv_wc_status_str(static_cast<enum ibv_wc_status>(want_wc)));
	else if (posted && wait_err(p.b.qp) != IBV_QPS_ERR)
		why = strf("responder QP in %s, not ERR", state_name(qp_state(p.b.qp)));
	if (why.empty() && op == IBV_WR_SEND &&
	    (!wait_wc(p.b.rcq, &wc) || wc.status != IBV_WC_LOC_LEN_ERR))
		why = "receive: " + wc_text(wc) + ", want a local length error";
	drain_events(e.ctx, 0.5);
	const enum ibv_event_type errs[] = {IBV_EVENT_QP_ACCESS_ERR, IBV_EVENT_QP_REQ_ERR,
					    IBV_EVENT_QP_FATAL};
	for (enum ibv_event_type t : errs) {
		const uint32_t nb = count_events(b, t), na = count_events(a, t);
		const uint32_t want = want_event == static_cast<int>(t);
		if (why.empty() && (nb != want || na))
			why = strf("%s: %u on the responder, %u on the requester (want %u, 0)",
				   ibv_event_type_str(t), nb, na, want);
	}
	destroy_pair(p, &why);
	check(name, why.empty(), why);
}

/*
 * A responder without responder resources (max_dest_rd_atomic 0) takes no
 * READ and no atomic: an invalid request, as rdma_rxe answers it (mlx5
 * turns remote READ and atomics off). The requester's WQE completes with
 * IBV_WC_REM_INV_REQ_ERR, the responder enters ERR with QP_REQ_ERR, and
 * the atomic's target is untouched.
 */
void no_responder_resources(Env &e, enum ibv_wr_opcode op, const char *name)
{
	Pair p;
	if (!make_side(e, p.a, IBV_QPT_RC) || !make_side(e, p.b, IBV_QPT_RC) ||
	    !rc_connect(e, p.a, p.b.qp->qp_num) ||
	    !rc_connect(e, p.b, p.a.qp->qp_num, 10, 1, 0))
		return setup_failed(name, p);
	drain_events(e.ctx);
	std::string why;
	struct ibv_qp_attr acc = {};
	acc.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(p.b.qp, &acc, IBV_QP_ACCESS_FLAGS))
		why = "responder access flags: " + errno_text(errno);
	auto *target = reinterpret_cast<uint64_t *>(e.buf + kRecvOff);
	*target = 0x1122334455667788ull;
	struct ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf), 8, e.mr->lkey};
	struct ibv_send_wr wr = {}, *bad = nullptr;
	wr.wr_id = 0xd0;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(target);
		wr.wr.rdma.rkey = e.mr->rkey;
	} else {
		wr.wr.atomic.remote_addr = reinterpret_cast<uintptr_t>(target);
		wr.wr.atomic.rkey = e.mr->rkey;
		wr.wr.atomic.compare_add = 1;
	}
	struct ibv_wc wc;
	if (why.empty() && ibv_post_send(p.a.qp, &wr, &bad))
		why = "post: " + errno_text(errno);
	else if (why.empty() && !wait_wc(p.a.scq, &wc))
		why = "no completion";
	else if (why.empty() && (wc.wr_id != 0xd0 || wc.status != IBV_WC_REM_INV_REQ_ERR))
		why = "requester: " + wc_text(wc) + ", want a remote invalid request error";
	if (why.empty() && wait_err(p.b.qp) != IBV_QPS_ERR)
		why = strf("responder QP in %s, not ERR", state_name(qp_state(p.b.qp)));
	drain_events(e.ctx, 0.5);
	if (why.empty() && count_events(p.b.qp->qp_num, IBV_EVENT_QP_REQ_ERR) != 1)
		why = strf("%u QP_REQ_ERR events on the responder, one expected",
			   count_events(p.b.qp->qp_num, IBV_EVENT_QP_REQ_ERR));
	if (why.empty() && *target != 0x1122334455667788ull)
		why = strf("the target changed to %#llx",
			   static_cast<unsigned long long>(*target));
	destroy_pair(p, &why);
	check(name, why.empty(), why);
}

void resp_error_events(Env &e)
{
	resp_error_event(e, "resp_write_bad_rkey_access_err_event", IBV_WR_RDMA_WRITE,
			 IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
	resp_error_event(e, "resp_misaligned_atomic_req_err_event", IBV_WR_ATOMIC_FETCH_AND_ADD,
			 IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR);
	resp_error_event(e, "resp_send_too_long_no_event", IBV_WR_SEND,
			 IBV_WC_REM_INV_REQ_ERR, -1);
	no_responder_resources(e, IBV_WR_RDMA_READ, "no_responder_resources_read_refused");
	no_responder_resources(e, IBV_WR_ATOMIC_FETCH_AND_ADD,
			       "no_responder_resources_atomic_refused");
}

void comm_est(Env &e)
{
	comm_est_one(e, IBV_QPT_RC, "comm_est_rc_once_in_rtr");
	comm_est_one(e, IBV_QPT_UC, "comm_est_uc_once_in_rtr");
}

/*
 * An SRQ grows with WQEs posted (they move along), takes more than its old
 * size, refuses to shrink below what is posted, shrinks when drained; every
 * message lands in its WQE's buffer, in order.
 */
void srq_resize(Env &e)
{
	const char *name = "srq_resize_keeps_posted_wqes";
	constexpr uint32_t kFirst = 12, kMore = 40;
	Pair p;
	if (!make_pair(e, p, IBV_QPT_RC, true))
		return setup_failed(name, p);
	std::string why;
	uint32_t posted = 0, got = 0;
	auto post = [&](uint32_t n) {
		for (uint32_t i = 0; i < n && why.empty(); i++, posted++)
			if (post_recv(e, p.b, p.srq, posted, kRecvOff + (posted % 64) * 4096))
				why = strf("post_srq_recv %u", posted);
	};
	/* send and check messages [got, upto) */
	auto run = [&](uint32_t upto) {
		for (; got < upto && why.empty(); got++) {
			struct ibv_wc wc;
			if (send_msg(e, p.a, got))
				why = strf("send %u", got);
			else if (!wait_wc(p.a.scq, &wc) || wc.status != IBV_WC_SUCCESS)
				why = strf("send %u: %s", got, wc_text(wc).c_str());
			else if (!wait_wc(p.b.rcq, &wc) || wc.status != IBV_WC_SUCCESS ||
				 wc.wr_id != got)
				why = strf("recv %u: %s", got, wc_text(wc).c_str());
			else if (first_bad(e.buf + kRecvOff + (got % 64) * 4096, got, kMsg) >= 0)
				why = strf("recv %u: bytes differ", got);
		}
	};
	struct ibv_device_attr da = {};
	check("srq_resize_advertised", ibv_query_device(e.ctx, &da) == 0 &&
		      (da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE));
	post(kFirst);				/* 12 of 16 */
	run(4);					/* 8 left posted */
	struct ibv_srq_attr a = {};
	a.max_wr = 100;
	int rc = why.empty() ? ibv_modify_srq(p.srq, &a, IBV_SRQ_MAX_WR) : -1;
	struct ibv_srq_attr q = {};
	if (why.empty() && (rc || ibv_query_srq(p.srq, &q) || q.max_wr < 100))
		why = strf("grow: rc %d max_wr %u", rc, q.max_wr);
	post(kMore);				/* 48 posted: more than 16 */
	if (why.empty()) {
		a.max_wr = 20;
		rc = ibv_modify_srq(p.srq, &a, IBV_SRQ_MAX_WR);
		check("srq_resize_below_posted_refused", rc == EINVAL, errno_text(rc));
	}
	run(kFirst + kMore);			/* all of them, in order */
	if (why.empty()) {
		a.max_wr = 20;
		a.srq_limit = 4;
		rc = ibv_modify_srq(p.srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT);
		if (rc || ibv_query_srq(p.srq, &q) || q.max_wr < 20 || q.max_wr >= 64 ||
		    q.srq_limit != 4)
			why = strf("shrink: rc %d max_wr %u limit %u", rc, q.max_wr, q.srq_limit);
	}
	post(20);
	run(kFirst + kMore + 20);
	if (why.empty()) {
		/* an armed limit is never left above the size (as rdma_rxe) */
		a.srq_limit = 10;
		rc = ibv_modify_srq(p.srq, &a, IBV_SRQ_LIMIT);
		struct ibv_srq_attr small = {};
		small.max_wr = 4;
		const int shrink = rc ? -1 : ibv_modify_srq(p.srq, &small, IBV_SRQ_MAX_WR);
		q = {};
		const int qrc = ibv_query_srq(p.srq, &q);
		check("srq_resize_below_armed_limit_refused",
		      !rc && shrink == EINVAL && !qrc && q.srq_limit == 10 && q.max_wr >= 20,
		      strf("arm rc %d, shrink %s, then max_wr %u limit %u", rc,
			   errno_text(shrink).c_str(), q.max_wr, q.srq_limit));
		small.max_wr = 16;
		rc = ibv_modify_srq(p.srq, &small, IBV_SRQ_MAX_WR);
		if (rc || ibv_query_srq(p.srq, &q) || q.max_wr < 16 || q.max_wr >= 20)
			why = strf("shrink to 16 under limit 10: rc %d max_wr %u", rc, q.max_wr);
	}
	post(8);
	run(kFirst + kMore + 28);
	std::string dwhy;
	const bool destroyed = destroy_pair(p, &dwhy);
	check(name, why.empty() && destroyed, why + dwhy);
}

/* A requester with the ibv_wr_* API (ATOMIC WRITE) connected to a plain QP. */
bool make_atomic_write_pair(Env &e, Pair &p)
{
	if (!make_side(e, p.b, IBV_QPT_RC))
		return false;
	p.a.scq = ibv_create_cq(e.ctx, 64, nullptr, nullptr, 0);
	p.a.rcq = ibv_create_cq(e.ctx, 64, nullptr, nullptr, 0);
	if (!p.a.scq || !p.a.rcq)
		return false;
	struct ibv_qp_init_attr_ex ia = {};
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = p.a.scq;
	ia.recv_cq = p.a.rcq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = kSlots;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.pd = e.pd;
	ia.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_RDMA_WRITE;
	p.a.qp = ibv_create_qp_ex(e.ctx, &ia);
	return p.a.qp && rc_connect(e, p.a, p.b.qp->qp_num) && rc_connect(e, p.b, p.a.qp->qp_num);
}

/* One ATOMIC WRITE of 8 bytes; the completion (status, opcode) or a failure text. */
std::string atomic_write_once(Env &e, const char *name, void *dst, uint32_t rkey,
			      const uint8_t (&val)[8], enum ibv_wc_status want)
{
	Pair p;
	if (!make_atomic_write_pair(e, p)) {
		std::string why = std::string(name) + ": setup: " + errno_text(errno);
		destroy_pair(p, &why);
		return why;
	}
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(p.a.qp);
	ibv_wr_start(qpx);
	qpx->wr_id = 0xa7;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, rkey, reinterpret_cast<uintptr_t>(dst), val);
	const int rc = ibv_wr_complete(qpx);
	std::string why;
	struct ibv_wc wc = {};
	if (rc)
		why = strf("wr_complete: %s", errno_text(rc).c_str());
	else if (!wait_wc(p.a.scq, &wc))
		why = "no completion";
	else if (wc.status != want || wc.wr_id != 0xa7 ||
		 (want == IBV_WC_SUCCESS && wc.opcode != IBV_WC_ATOMIC_WRITE))
		why = strf("completion %s opcode %d, want %s", wc_text(wc).c_str(), wc.opcode,
			   ibv_wc_status_str(want));
	destroy_pair(p, &why);
	return why.empty() ? "" : std::string(name) + ": " + why;
}

/*
 * ATOMIC WRITE (IBTA 1.5): 8 bytes land in one store where the region
 * allows remote writes; a misaligned address is an invalid request, a
 * region without remote write an access error; ibv_post_send cannot carry
 * it.
 */
void atomic_write(Env &e)
{
	Mapping t(4096);
	struct ibv_mr *rw = t ? ibv_reg_mr(e.pd, t.p(), 4096, IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE) : nullptr;
	struct ibv_mr *ro = t ? ibv_reg_mr(e.pd, t.p(), 4096, IBV_ACCESS_LOCAL_WRITE) : nullptr;
	check("atomic_write_setup", rw && ro, errno_text(errno));
	if (!rw || !ro)
		return;
	const uint8_t val[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
	std::memset(t.p(), 0xee, 4096);
	std::string why = atomic_write_once(e, "aligned", t.p(64), rw->rkey, val, IBV_WC_SUCCESS);
	if (why.empty() && std::memcmp(t.p(64), val, 8))
		why = "the 8 bytes did not land";
	for (size_t i = 0; i < 4096 && why.empty(); i++)
		if ((i < 64 || i >= 72) && *t.p(i) != 0xee)
			why = strf("byte %zu changed", i);
	check("atomic_write_lands", why.empty(), why);
	why = atomic_write_once(e, "misaligned", t.p(68), rw->rkey, val, IBV_WC_REM_INV_REQ_ERR);
	check("atomic_write_misaligned_refused", why.empty() && *t.p(68) != 0x11, why);
	why = atomic_write_once(e, "no_remote_write", t.p(128), ro->rkey, val,
				IBV_WC_REM_ACCESS_ERR);
	check("atomic_write_needs_remote_write", why.empty() && *t.p(128) == 0xee, why);

	Pair p;
	why.clear();
	if (!make_pair(e, p, IBV_QPT_RC)) {
		why = "pair";
	} else {
		struct ibv_send_wr wr = {}, *bad = nullptr;
		wr.opcode = IBV_WR_ATOMIC_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (ibv_post_send(p.a.qp, &wr, &bad) != EINVAL)
			why = "ibv_post_send took it";
	}
	destroy_pair(p, &why);
	check("atomic_write_not_through_post_send", why.empty(), why);
	ibv_dereg_mr(rw);
	ibv_dereg_mr(ro);
}

/* ------------------------------------------------------ memory windows */

/* The completion of a bind or LOCAL_INV on s: its status, -1 if the post was refused, -2 none. */
int local_op_status(Side &s, int post_rc, uint64_t wr_id, enum ibv_wc_opcode op)
{
	if (post_rc)
		return -1;
	struct ibv_wc wc;
	if (!wait_wc(s.scq, &wc))
		return -2;
	if (wc.wr_id != wr_id || (wc.status == IBV_WC_SUCCESS && wc.opcode != op))
		return -3;
	return wc.status;
}

/* ibv_bind_mw() of a type 1 window on s. */
int bind1(Side &s, struct ibv_mw *mw, struct ibv_mr *mr, void *addr, size_t len,
	  unsigned int access)
{
	struct ibv_mw_bind b = {};
	b.wr_id = 0xb1;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info = {mr, reinterpret_cast<uintptr_t>(addr), len, access};
	return local_op_status(s, ibv_bind_mw(s.qp, mw, &b), 0xb1, IBV_WC_BIND_MW);
}

/* IBV_WR_BIND_MW of a type 2B window on s, with rkey as its new key. */
int bind2(Side &s, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr, void *addr,
	  size_t len, unsigned int access)
{
	struct ibv_send_wr wr = {}, *bad = nullptr;
	wr.wr_id = 0xb2;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = {mr, reinterpret_cast<uintptr_t>(addr), len, access};
	return local_op_status(s, ibv_post_send(s.qp, &wr, &bad), 0xb2, IBV_WC_BIND_MW);
}

std::string status_text(int st)
{
	return st >= 0 ? ibv_wc_status_str(static_cast<enum ibv_wc_status>(st))
		       : strf("%d", st);
}

/* A bind on a fresh pair's receiving QP that must fail with MW_BIND_ERR. */
void bind_refused(Env &e, const char *name, struct ibv_mr *mr, void *addr, size_t len,
		  unsigned int access)
{
	Pair p;
	struct ibv_mw *mw = ibv_alloc_mw(e.pd, IBV_MW_TYPE_2);
	if (!mw || !make_pair(e, p, IBV_QPT_RC)) {
		if (mw)
			ibv_dealloc_mw(mw);
		return setup_failed(name, p);
	}
	const int st = bind2(p.b, mw, ibv_inc_rkey(mw->rkey), mr, addr, len, access);
	std::string why = st == IBV_WC_MW_BIND_ERR ? "" : "status " + status_text(st);
	destroy_pair(p, &why);
	if (ibv_dealloc_mw(mw))
		why += " dealloc";
	check(name, why.empty(), why);
}

/*
 * Memory windows (IBTA 10.6.7). The region allows local write and binding
 * only; windows grant remote rights on a part of it, [4 KiB, 12 KiB).
 */
void memory_windows(Env &e)
{
	constexpr size_t kLen = 64 << 10;
	constexpr unsigned int kRW = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	Mapping m(kLen);
	struct ibv_mr *mr = m ? ibv_reg_mr(e.pd, m.p(), kLen, IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_MW_BIND) : nullptr;
	struct ibv_mw *w1 = ibv_alloc_mw(e.pd, IBV_MW_TYPE_1);
	struct ibv_mw *w2 = ibv_alloc_mw(e.pd, IBV_MW_TYPE_2);
	check("mw_alloc", mr && w1 && w2 && w1->type == IBV_MW_TYPE_1 &&
		      w2->type == IBV_MW_TYPE_2 && w1->rkey != w2->rkey, errno_text(errno));
	errno = 0;
	struct ibv_mw *w3 = ibv_alloc_mw(e.pd, static_cast<enum ibv_mw_type>(3));
	check("mw_alloc_type3_refused", !w3 && errno == EINVAL, errno_text(errno));
	if (w3)
		ibv_dealloc_mw(w3);
	if (!mr || !w1 || !w2)
		return;
	uint8_t *win = m.p(4096);
	write_check(e, "mw_region_itself_not_remote", win, mr->rkey, 20, IBV_WC_REM_ACCESS_ERR);

	/* type 1: bound by ibv_bind_mw on any QP of the PD, used from any */
	{
		Pair p;
		std::string why;
		const uint32_t k0 = w1->rkey;
		if (!make_pair(e, p, IBV_QPT_RC)) {
			why = "pair";
		} else {
			const int st = bind1(p.a, w1, mr, win, 8192, kRW);
			if (st)
				why = "bind " + status_text(st);
			else if (w1->rkey == k0 || (w1->rkey >> 8) != (k0 >> 8))
				why = strf("rkey %#x after %#x", w1->rkey, k0);
		}
		destroy_pair(p, &why);
		check("mw_type1_bind", why.empty(), why);
		write_check(e, "mw_type1_write_lands", win + 100, w1->rkey, 21, IBV_WC_SUCCESS);
		check("mw_type1_region_outside_untouched",
		      *m.p(0) == 0 && *m.p(4095) == 0 && *m.p(12288) == 0);
		write_check(e, "mw_type1_outside_window_refused", m.p(0), w1->rkey, 22,
			    IBV_WC_REM_ACCESS_ERR);
		write_check(e, "mw_type1_crossing_end_refused", win + 8192 - 100, w1->rkey, 23,
			    IBV_WC_REM_ACCESS_ERR);
		write_check(e, "mw_type1_old_rkey_refused", win, k0, 24, IBV_WC_REM_ACCESS_ERR);
		const int busy = ibv_dereg_mr(mr);
		check("mw_dereg_region_with_window_busy", busy == EBUSY,
		      strf("dereg %d", busy));

		/* rebind read-only: writes refused; zero length: unbound */
		why.clear();
		if (!make_pair(e, p, IBV_QPT_RC)) {
			why = "pair";
		} else {
			int st = bind1(p.b, w1, mr, win, 8192, IBV_ACCESS_REMOTE_READ);
			if (st)
				why = "rebind " + status_text(st);
		}
		destroy_pair(p, &why);
		check("mw_type1_rebind", why.empty(), why);
		write_check(e, "mw_type1_read_only_write_refused", win, w1->rkey, 25,
			    IBV_WC_REM_ACCESS_ERR);
		const uint32_t k1 = w1->rkey;
		why.clear();
		if (!make_pair(e, p, IBV_QPT_RC)) {
			why = "pair";
		} else {
			const int st = bind1(p.a, w1, mr, win, 0, 0);
			if (st)
				why = "unbind " + status_text(st);
		}
		destroy_pair(p, &why);
		check("mw_type1_unbind", why.empty(), why);
		write_check(e, "mw_type1_unbound_refused", win, w1->rkey, 26, IBV_WC_REM_ACCESS_ERR);
		write_check(e, "mw_type1_unbound_old_key_refused", win, k1, 27,
			    IBV_WC_REM_ACCESS_ERR);

		/* ibv_post_send cannot bind a type 1 window */
		why.clear();
		if (!make_pair(e, p, IBV_QPT_RC))
			why = "pair";
		else if (bind2(p.a, w1, ibv_inc_rkey(w1->rkey), mr, win, 8192, kRW) != -1)
			why = "ibv_post_send took it";
		destroy_pair(p, &why);
		check("mw_type1_not_through_post_send", why.empty(), why);
	}

	/* type 2B: bound by a work request to the QP that posted it */
	{
		Pair p;
		std::string why;
		const uint32_t k = ibv_inc_rkey(w2->rkey);
		if (!make_pair(e, p, IBV_QPT_RC)) {
			why = "pair";
		} else {
			int st = bind2(p.b, w2, k, mr, win, 8192, kRW);
			if (st)
				why = "bind " + status_text(st);
			else if ((st = write_to(e, p.a, win + 8, k, 30, 4096)) != IBV_WC_SUCCESS)
				why = "write " + status_text(st);
			else if (first_bad(win + 8, 30, 4096) >= 0)
				why = "bytes differ";
		}
		check("mw_type2_bind_and_write_on_bound_qp", why.empty(), why);
		/* through another QP of the same PD: refused */
		write_check(e, "mw_type2_other_qp_refused", win, k, 31, IBV_WC_REM_ACCESS_ERR);
		write_check(e, "mw_type2_alloc_rkey_refused", win, w2->rkey, 32,
			    IBV_WC_REM_ACCESS_ERR);
		/* bound already: a second bind fails until it is invalidated */
		if (why.empty()) {
			struct ibv_send_wr wr = {}, *bad = nullptr;
			wr.wr_id = 0x1a;
			wr.opcode = IBV_WR_LOCAL_INV;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.invalidate_rkey = k;
			int st = local_op_status(p.a, ibv_post_send(p.a.qp, &wr, &bad), 0x1a,
						 IBV_WC_LOCAL_INV);
			if (st)
				why = "local_inv " + status_text(st);
			else if ((st = write_to(e, p.a, win, k, 33, 64)) != IBV_WC_REM_ACCESS_ERR)
				why = "write after local_inv " + status_text(st);
		}
		destroy_pair(p, &why);
		check("mw_type2_local_invalidate", why.empty(), why);

		/* remote invalidation: SEND_WITH_INV to the bound QP */
		const uint32_t k2 = ibv_inc_rkey(k);
		why.clear();
		if (!make_pair(e, p, IBV_QPT_RC)) {
			why = "pair";
		} else {
			int st = bind2(p.b, w2, k2, mr, win, 8192, kRW);
			struct ibv_send_wr wr = {}, *bad = nullptr;
			struct ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf), kMsg, e.mr->lkey};
			wr.wr_id = 0x5e;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND_WITH_INV;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.invalidate_rkey = k2;
			struct ibv_wc wc = {}, rwc = {};
			fill(e.buf, 34, kMsg);
			if (st)
				why = "bind " + status_text(st);
			else if (recv_slot(e, p.b, 34) || ibv_post_send(p.a.qp, &wr, &bad))
				why = "post";
			else if (!wait_wc(p.a.scq, &wc) || wc.status != IBV_WC_SUCCESS)
				why = "send " + wc_text(wc);
			else if (!wait_wc(p.b.rcq, &rwc) || rwc.status != IBV_WC_SUCCESS ||
				 !(rwc.wc_flags & IBV_WC_WITH_INV) || rwc.invalidated_rkey != k2)
				why = strf("recv %s flags %#x inv %#x", wc_text(rwc).c_str(),
					   rwc.wc_flags, rwc.invalidated_rkey);
			else if ((st = write_to(e, p.a, win, k2, 35, 64)) != IBV_WC_REM_ACCESS_ERR)
				why = "write after remote invalidation " + status_text(st);
		}
		destroy_pair(p, &why);
		check("mw_type2_remote_invalidate", why.empty(), why);

		/* bound twice: the second bind fails, the QP enters ERR */
		const uint32_t k3 = ibv_inc_rkey(k2);
		why.clear();
		if (!make_pair(e, p, IBV_QPT_RC)) {
			why = "pair";
		} else {
			int st = bind2(p.b, w2, k3, mr, win, 8192, kRW);
			if (st)
				why = "bind " + status_text(st);
			else if ((st = bind2(p.b, w2, ibv_inc_rkey(k3), mr, win, 4096, kRW)) !=
				 IBV_WC_MW_BIND_ERR)
				why = "second bind " + status_text(st);
			else if (wait_err(p.b.qp) != IBV_QPS_ERR)
				why = "QP not in ERR";
		}
		destroy_pair(p, &why);
		check("mw_type2_bind_bound_refused", why.empty(), why);

		/*
		 * A LOCAL_INV that fails while a WRITE before it is still
		 * unacknowledged (one post: the requester runs both before the
		 * ACK comes back) completes in error once the WRITE has
		 * completed, not as a success; the QP enters ERR and what is
		 * posted next is flushed.
		 */
		why.clear();
		if (!make_pair(e, p, IBV_QPT_RC)) {
			why = "pair";
		} else {
			fill(e.buf, 37, 4096);
			struct ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf), 4096, e.mr->lkey};
			struct ibv_send_wr wr[2] = {}, *bad = nullptr;
			wr[0].wr_id = 0x37;
			wr[0].sg_list = &sge;
			wr[0].num_sge = 1;
			wr[0].opcode = IBV_WR_RDMA_WRITE;
			wr[0].send_flags = IBV_SEND_SIGNALED;
			wr[0].wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(e.buf + 65536);
			wr[0].wr.rdma.rkey = e.mr->rkey;
			wr[0].next = &wr[1];
			wr[1].wr_id = 0x38;
			wr[1].opcode = IBV_WR_LOCAL_INV;
			wr[1].send_flags = IBV_SEND_SIGNALED;
			wr[1].invalidate_rkey = 0xffffff5a;	/* no such key */
			struct ibv_wc wc[2] = {};
			if (ibv_post_send(p.a.qp, wr, &bad))
				why = "post";
			else if (!wait_wc(p.a.scq, &wc[0]) || wc[0].wr_id != 0x37 ||
				 wc[0].status != IBV_WC_SUCCESS)
				why = "write " + wc_text(wc[0]);
			else if (first_bad(e.buf + 65536, 37, 4096) >= 0)
				why = "write: bytes differ";
			else if (!wait_wc(p.a.scq, &wc[1]) || wc[1].wr_id != 0x38 ||
				 wc[1].status == IBV_WC_SUCCESS ||
				 wc[1].status == IBV_WC_WR_FLUSH_ERR)
				why = "local_inv " + wc_text(wc[1]);
			else if (wait_err(p.a.qp) != IBV_QPS_ERR)
				why = "QP not in ERR";
			else if (write_to(e, p.a, e.buf + 65536, e.mr->rkey, 39, 64) !=
				 IBV_WC_WR_FLUSH_ERR)
				why = "next write not flushed";
		}
		destroy_pair(p, &why);
		check("mw_local_inv_failing_behind_a_write_fails", why.empty(), why);

		/* deallocating a bound window ends its access and frees the region */
		why.clear();
		if (!make_pair(e, p, IBV_QPT_RC)) {
			why = "pair";
		} else {
			/* k3 is still bound, to a QP now destroyed: dealloc anyway */
			int st = ibv_dealloc_mw(w2);
			w2 = nullptr;
			if (st)
				why = "dealloc " + errno_text(st);
			else if ((st = write_to(e, p.a, win, k3, 36, 64)) != IBV_WC_REM_ACCESS_ERR)
				why = "write after dealloc " + status_text(st);
		}
		destroy_pair(p, &why);
		check("mw_type2_dealloc_bound", why.empty(), why);
	}

	/* the checks of a bind */
	Mapping n(8192);
	struct ibv_mr *nobind = n ? ibv_reg_mr(e.pd, n.p(), 8192, IBV_ACCESS_LOCAL_WRITE) : nullptr;
	struct ibv_mr *noLW = n ? ibv_reg_mr(e.pd, n.p(), 8192, IBV_ACCESS_MW_BIND) : nullptr;
	bind_refused(e, "mw_bind_region_without_mw_bind", nobind, n.p(), 4096, kRW);
	bind_refused(e, "mw_bind_remote_write_needs_local_write", noLW, n.p(), 4096,
		     IBV_ACCESS_REMOTE_WRITE);
	bind_refused(e, "mw_bind_beyond_region", mr, m.p(kLen - 4096), 8192, kRW);
	struct ibv_pd *pd2 = ibv_alloc_pd(e.ctx);
	struct ibv_mr *other = pd2 ? ibv_reg_mr(pd2, n.p(), 8192, IBV_ACCESS_LOCAL_WRITE |
						IBV_ACCESS_MW_BIND) : nullptr;
	bind_refused(e, "mw_bind_region_of_other_pd", other, n.p(), 4096, kRW);
	if (other)
		ibv_dereg_mr(other);
	if (pd2)
		ibv_dealloc_pd(pd2);
	if (nobind)
		ibv_dereg_mr(nobind);
	if (noLW)
		ibv_dereg_mr(noLW);

	const int rc1 = ibv_dealloc_mw(w1);
	const int rc2 = w2 ? ibv_dealloc_mw(w2) : 0;
	check("mw_teardown", rc1 == 0 && rc2 == 0 && ibv_dereg_mr(mr) == 0);
}

/* ----------------------------------------------------------- multicast */

constexpr uint32_t kMcastQpn = 0xffffff;
constexpr uint32_t kGrh = 40;

/*
 * Post a receive for message msg on receiver r (slot r, msg), send msg from
 * s to the group; then which receivers got it, byte-verified ("" if all is
 * as want[] says, else what differs).
 */
std::string mcast_round(Env &e, Side &s, std::vector<Side> &r, const std::vector<bool> &want,
			uint32_t msg)
{
	auto slot = [&](size_t i) { return kRecvOff + static_cast<uint32_t>(i * kSlots + msg % kSlots) * 4096; };
	for (size_t i = 0; i < r.size(); i++)
		if (post_recv(e, r[i], nullptr, msg, slot(i)))
			return strf("post_recv %zu", i);
	fill(e.buf + (msg % kSlots) * kMsg, msg, kMsg);
	if (post_send(e, s, msg, (msg % kSlots) * kMsg))
		return "post_send";
	struct ibv_wc wc;
	if (!wait_wc(s.scq, &wc) || wc.status != IBV_WC_SUCCESS)
		return "send " + wc_text(wc);
	std::string why;
	for (size_t i = 0; i < r.size(); i++) {
		const bool got = wait_wc(r[i].rcq, &wc, want[i] ? kWait : 0.3);
		if (got != want[i]) {
			why += strf(" receiver %zu %s", i, got ? "got it" : "did not get it");
			continue;
		}
		if (!got)
			continue;
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != msg ||
		    wc.byte_len != kGrh + kMsg || wc.src_qp != s.qp->qp_num ||
		    !(wc.wc_flags & IBV_WC_GRH))
			why += strf(" receiver %zu: %s byte_len %u src_qp %#x", i, wc_text(wc).c_str(),
				    wc.byte_len, wc.src_qp);
		else if (first_bad(e.buf + slot(i) + kGrh, msg, kMsg) >= 0)
			why += strf(" receiver %zu: bytes differ", i);
	}
	return why;
}

/* Three receivers attached to a group, one not: who gets what. */
void mcast_family(Env &e, const char *fam, int sgid_index, const union ibv_gid &mgid)
{
	const std::string p = std::string("mcast_") + fam;
	std::vector<Side> r(4);
	Side s;
	bool ok = make_side(e, s, IBV_QPT_UD) &&
		  !sroce_tool::connect_qp(s.qp, loopback_path(e, IBV_QPT_UD, 0));
	for (Side &x : r)
		ok = ok && make_side(e, x, IBV_QPT_UD) &&
		     !sroce_tool::connect_qp(x.qp, loopback_path(e, IBV_QPT_UD, 0));
	if (ok) {
		struct ibv_ah_attr a = sroce_tool::ah_attr_to(1, sgid_index, mgid);
		s.ah = ibv_create_ah(e.pd, &a);
		s.peer_qpn = kMcastQpn;
		ok = s.ah != nullptr;
	}
	std::string why = ok ? "" : "setup: " + errno_text(errno);
	for (int i = 0; i < 3 && why.empty(); i++)
		if (int rc = ibv_attach_mcast(r[i].qp, &mgid, 0))
			why = strf("attach %d: %s", i, errno_text(rc).c_str());
	if (why.empty() && ibv_attach_mcast(r[0].qp, &mgid, 0))
		why = "attaching twice failed";
	check(p + "_attach", why.empty(), why);
	if (!why.empty())
		goto out;

	for (uint32_t m = 1; m <= 3 && why.empty(); m++)
		why = mcast_round(e, s, r, {true, true, true, false}, m);
	check(p + "_delivered_to_every_attached_qp", why.empty(), why);

	why.clear();
	if (int rc = ibv_detach_mcast(r[1].qp, &mgid, 0))
		why = "detach: " + errno_text(rc);
	else
		why = mcast_round(e, s, r, {true, false, true, false}, 4);
	/* r[1] has the receive of round 4 still posted: drain nothing, check the next */
	check(p + "_detached_qp_gets_nothing", why.empty(), why);
	check(p + "_detach_twice_refused", ibv_detach_mcast(r[1].qp, &mgid, 0) == EINVAL);

	why.clear();
	if (ibv_detach_mcast(r[0].qp, &mgid, 0) || ibv_detach_mcast(r[2].qp, &mgid, 0))
		why = "detach";
	else
		why = mcast_round(e, s, r, {false, false, false, false}, 5);
	check(p + "_group_left", why.empty(), why);
out:
	destroy_side(s, &why);
	for (Side &x : r)
		destroy_side(x, &why);
}

/*
 * UD multicast in loopback: delivery to every attached QP of this host,
 * for an IPv4 and an IPv6 group; the rules of attach.
 */
void multicast(Env &e)
{
	struct ibv_device_attr attr = {};
	check("mcast_advertised", !ibv_query_device(e.ctx, &attr) && attr.max_mcast_grp > 0 &&
		      attr.max_mcast_qp_attach > 0);
	union ibv_gid g4 = {}, g6 = {}, m4 = {}, m6 = {};
	const int i4 = sroce_tool::find_roce_v2_gid(e.ctx, 1, false, &g4);
	const int i6 = sroce_tool::find_roce_v2_gid(e.ctx, 1, true, &g6);
	/* ::ffff:239.1.2.3 and ff0e::5:3 */
	m4.raw[10] = m4.raw[11] = 0xff;
	m4.raw[12] = 239;
	m4.raw[13] = 1;
	m4.raw[14] = 2;
	m4.raw[15] = 3;
	m6.raw[0] = 0xff;
	m6.raw[1] = 0x0e;
	m6.raw[13] = 5;
	m6.raw[15] = 3;
	check("mcast_gids", i4 >= 0 && i6 >= 0);
	if (i4 >= 0)
		mcast_family(e, "ipv4", i4, m4);
	if (i6 >= 0)
		mcast_family(e, "ipv6", i6, m6);

	/* UD only, multicast GIDs only */
	Pair p;
	std::string why;
	if (!make_pair(e, p, IBV_QPT_RC))
		why = "pair";
	else if (ibv_attach_mcast(p.a.qp, &m4, 0) != EINVAL)
		why = "RC QP attached";
	destroy_pair(p, &why);
	Side u;
	if (!make_side(e, u, IBV_QPT_UD))
		why += " side";
	else if (ibv_attach_mcast(u.qp, &g4, 0) != EINVAL)
		why += " unicast GID attached";
	destroy_side(u, &why);
	check("mcast_attach_rules", why.empty(), why);
}

/* ------------------------------------------------------- device import */

/*
 * ibv_import_device on a dup of our command FD, then our PD and MR by handle:
 * QPs and CQs of the imported context carry an RDMA WRITE through the
 * imported MR's keys; unimporting and closing leave the original working.
 */
void import_device(Env &e)
{
	/* The caller dups the FD (ibv_import_device(3)); closing the import closes the dup. */
	const int fd = dup(e.ctx->cmd_fd);
	struct ibv_context *ictx = fd >= 0 ? ibv_import_device(fd) : nullptr;
	check("import_device", ictx != nullptr && ictx->cmd_fd == fd, errno_text(errno));
	if (!ictx) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct ibv_pd *ipd = ibv_import_pd(ictx, e.pd->handle);
	struct ibv_mr *imr = ipd ? ibv_import_mr(ipd, e.mr->handle) : nullptr;
	check("import_pd_and_mr", ipd && imr && imr->lkey == e.mr->lkey &&
		      imr->rkey == e.mr->rkey && imr->length == e.mr->length &&
		      imr->handle == e.mr->handle,
	      errno_text(errno));
	errno = 0;
	struct ibv_mr *bad = ipd ? ibv_import_mr(ipd, e.mr->handle + 1000) : nullptr;
	check("import_unknown_mr_refused", ipd && !bad && errno != 0, errno_text(errno));
	if (bad)
		ibv_unimport_mr(bad);
	if (imr) {
		Env ie;
		ie.ctx = ictx;
		ie.pd = ipd;
		ie.mr = imr;
		ie.buf = e.buf;
		ie.gid_index = e.gid_index;
		ie.gid = e.gid;
		write_check(ie, "import_write_through_imported_objects", e.buf + kRecvOff, imr->rkey,
			    40, IBV_WC_SUCCESS);
		ibv_unimport_mr(imr);
	}
	if (ipd)
		ibv_unimport_pd(ipd);
	check("import_close", ibv_close_device(ictx) == 0);
	write_check(e, "import_original_still_works", e.buf + kRecvOff + 8192, e.mr->rkey, 41,
		    IBV_WC_SUCCESS);
}

struct AllocLog {
	std::atomic<int> allocs{0};
	std::atomic<int> frees{0};
};

void *pd_alloc(struct ibv_pd *, void *ctx, size_t, size_t, uint64_t)
{
	static_cast<AllocLog *>(ctx)->allocs++;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

void pd_free(struct ibv_pd *, void *ctx, void *, uint64_t)
{
	static_cast<AllocLog *>(ctx)->frees++;
}

struct ibv_cq *cq_on(struct ibv_context *ctx, struct ibv_pd *parent)
{
	struct ibv_cq_init_attr_ex a = {};
	a.cqe = 64;
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = parent;
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &a);
	return cq ? ibv_cq_ex_to_cq(cq) : nullptr;
}

void parent_domain(Env &e)
{
	const char *name = "parent_domain_traffic";
	AllocLog log;
	struct ibv_parent_domain_init_attr pa = {};
	pa.pd = e.pd;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
		       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.alloc = pd_alloc;
	pa.free = pd_free;
	pa.pd_context = &log;
	struct ibv_pd *par = ibv_alloc_parent_domain(e.ctx, &pa);
	check("parent_domain_alloc", par != nullptr, errno_text(errno));
	if (!par)
		return;

	struct ibv_parent_domain_init_attr bad = pa;
	bad.pd = par;
	errno = 0;
	struct ibv_pd *x = ibv_alloc_parent_domain(e.ctx, &bad);
	check("parent_domain_on_parent_refused", !x && errno == EINVAL, errno_text(errno));
	if (x)
		ibv_dealloc_pd(x);
	check("parent_domain_keeps_pd", ibv_dealloc_pd(e.pd) == EBUSY);
	errno = 0;
	struct ibv_cq *nocq = cq_on(e.ctx, e.pd);
	check("cq_on_plain_pd_as_parent_refused", !nocq && errno == EINVAL, errno_text(errno));
	if (nocq)
		ibv_destroy_cq(nocq);

	/* QPs, an SRQ, CQs and an MR on the parent domain; SEND and WRITE */
	Mapping m(kBufSize / 2);
	struct ibv_mr *mr = m ? ibv_reg_mr(par, m.p(), m.len(), IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE) : nullptr;
	struct ibv_srq_init_attr sa = {};
	sa.attr.max_wr = kSlots;
	sa.attr.max_sge = 1;
	struct ibv_srq *srq = ibv_create_srq(par, &sa);
	Side a, b;
	a.scq = cq_on(e.ctx, par);
	a.rcq = cq_on(e.ctx, par);
	b.scq = cq_on(e.ctx, par);
	b.rcq = cq_on(e.ctx, par);
	std::string why;
	if (!mr || !srq || !a.scq || !a.rcq || !b.scq || !b.rcq)
		why = "setup: " + errno_text(errno);
	sroce_tool::QpCaps caps;
	caps.send_wr = caps.recv_wr = kSlots;
	caps.send_sge = caps.recv_sge = 1;
	if (why.empty()) {
		struct ibv_qp_init_attr ia = sroce_tool::qp_init_attr(a.scq, a.rcq, caps);
		a.qp = ibv_create_qp(par, &ia);
		caps.srq = srq;
		ia = sroce_tool::qp_init_attr(b.scq, b.rcq, caps);
		b.qp = ibv_create_qp(par, &ia);
		if (!a.qp || !b.qp || !rc_connect(e, a, b.qp->qp_num) ||
		    !rc_connect(e, b, a.qp->qp_num))
			why = "qps: " + errno_text(errno);
	}
	for (uint32_t i = 0; i < 4 && why.empty(); i++) {
		/* SEND into the SRQ's buffer (parent domain MR) */
		uint8_t *rbuf = m.p(i * 4096);
		struct ibv_sge rs = {reinterpret_cast<uintptr_t>(rbuf), 4096, mr->lkey};
		struct ibv_recv_wr rw = {}, *rbad = nullptr;
		rw.wr_id = 100 + i;
		rw.sg_list = &rs;
		rw.num_sge = 1;
		struct ibv_wc wc;
		if (ibv_post_srq_recv(srq, &rw, &rbad) || send_msg(e, a, i)) {
			why = "post";
			break;
		}
		if (!wait_wc(b.rcq, &wc) || wc.status != IBV_WC_SUCCESS || wc.wr_id != 100 + i ||
		    first_bad(rbuf, i, kMsg) >= 0) {
			why = strf("send %u: %s", i, wc_text(wc).c_str());
			break;
		}
		if (!wait_wc(a.scq, &wc) || wc.status != IBV_WC_SUCCESS) {
			why = strf("send %u completion: %s", i, wc_text(wc).c_str());
			break;
		}
		/* RDMA WRITE into the parent domain MR by its rkey */
		uint8_t *dst = m.p(kBufSize / 4 + i * 4096);
		const int st = write_to(e, a, dst, mr->rkey, 10 + i, 4096);
		if (st != IBV_WC_SUCCESS || first_bad(dst, 10 + i, 4096) >= 0)
			why = strf("write %u: status %d", i, st);
	}
	std::string dwhy;
	destroy_side(a, &dwhy);
	destroy_side(b, &dwhy);
	if (srq && ibv_destroy_srq(srq))
		dwhy += " destroy_srq";
	if (mr && ibv_dereg_mr(mr))
		dwhy += " dereg_mr";
	check(name, why.empty() && dwhy.empty(), why + dwhy);
	check("parent_domain_dealloc", ibv_dealloc_pd(par) == 0);
	std::printf("  parent domain allocator calls: %d alloc, %d free\n", log.allocs.load(),
		    log.frees.load());
}

/* ------------------------------------------------------- on-demand paging */

constexpr int kOdpAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			   IBV_ACCESS_ON_DEMAND;

/*
 * A device counter from sysfs (hw_counters), or -1. ib_core serves reads
 * from a copy up to 10 ms old: wait that out first.
 */
long long hw_counter(Env &e, const char *name)
{
	usleep(20000);
	const std::string path = strf("/sys/class/infiniband/%s/ports/1/hw_counters/%s",
				      ibv_get_device_name(e.ctx->device), name);
	FILE *f = std::fopen(path.c_str(), "r");
	long long v = -1;
	if (f) {
		if (std::fscanf(f, "%lld", &v) != 1)
			v = -1;
		std::fclose(f);
	}
	return v;
}

/* Objects in use in a slab cache (/proc/slabinfo, root only), or -1. */
long long slab_objects(const char *cache)
{
	FILE *f = std::fopen("/proc/slabinfo", "r");
	long long v = -1;
	char line[512], name[64];
	long long active;

	if (!f)
		return -1;
	while (std::fgets(line, sizeof(line), f))
		if (std::sscanf(line, "%63s %lld", name, &active) == 2 &&
		    std::strcmp(name, cache) == 0) {
			v = active;
			break;
		}
	std::fclose(f);
	return v;
}

/*
 * An RC pair that waits out page faults: the responder answers a fault with
 * an RNR NAK, so the requester retries without limit (rnr_retry 7).
 */
bool make_odp_pair(Env &e, Pair &p)
{
	if (!make_side(e, p.a, IBV_QPT_RC) || !make_side(e, p.b, IBV_QPT_RC))
		return false;
	for (int i = 0; i < 2; i++) {
		Side &s = i ? p.b : p.a;
		sroce_tool::Path path = loopback_path(e, IBV_QPT_RC,
						      (i ? p.a : p.b).qp->qp_num);
		path.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		path.max_dest_rd_atomic = path.max_rd_atomic = 4;
		path.timeout = 14;
		path.retry_cnt = 7;
		path.rnr_retry = 7;
		path.min_rnr_timer = 12;
		s.peer_qpn = path.dest_qpn;
		if (sroce_tool::connect_qp(s.qp, path))
			return false;
	}
	return true;
}

/* Post one signaled work request on a and return its completion status. */
int odp_post(Side &a, struct ibv_send_wr &wr)
{
	struct ibv_send_wr *bad = nullptr;
	wr.send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(a.qp, &wr, &bad))
		return -1;
	struct ibv_wc wc;
	return wait_wc(a.scq, &wc) ? wc.status : -2;
}

int odp_rdma(Side &a, enum ibv_wr_opcode op, void *local, uint32_t lkey, void *remote,
	     uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = {reinterpret_cast<uintptr_t>(local), len, lkey};
	struct ibv_send_wr wr = {};
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(remote);
	wr.wr.rdma.rkey = rkey;
	return odp_post(a, wr);
}

std::string st_text(int st)
{
	return st >= 0 ? ibv_wc_status_str(static_cast<enum ibv_wc_status>(st))
		       : strf("post/poll failed (%d)", st);
}

/*
 * Deregistering a region while a synchronous prefetch (FLUSH) faults in a
 * long range of it stops the prefetch at its next chunk: the prefetch fails
 * with ENOENT and the deregistration does not wait for the whole range.
 * 4 GiB mapped read-only (faulted to the zero page: next to no memory)
 * takes seconds to prefetch under TCG.
 */
void odp_dereg_during_prefetch(Env &e)
{
	const char *name = "odp_dereg_stops_a_prefetch";
	const size_t len = size_t(4) << 30;
	void *big = mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			 -1, 0);
	if (big == MAP_FAILED)
		return check(name, false, "mmap: " + errno_text(errno));
	struct ibv_mr *mr = ibv_reg_mr(e.pd, big, len,
				       IBV_ACCESS_ON_DEMAND | IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		check(name, false, "reg_mr: " + errno_text(errno));
		munmap(big, len);
		return;
	}
	std::atomic<int> arc{-1};
	std::atomic<bool> done{false};
	const auto t0 = Clock::now();
	std::thread prefetch([&] {
		/* one SGE (lengths are 32 bits): after it nothing looks the region up again */
		struct ibv_sge sge = {reinterpret_cast<uintptr_t>(big),
				      static_cast<uint32_t>(len - 4096), mr->lkey};
		arc = ibv_advise_mr(e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
				    &sge, 1);
		done = true;
	});
	usleep(300 * 1000);
	const bool early = done;
	const auto t1 = Clock::now();
	const int drc = ibv_dereg_mr(mr);
	const double dereg_s = seconds_since(t1);
	prefetch.join();
	std::printf("  deregistered during a 4 GiB prefetch: advise rc %d after %.3f s, "
		    "dereg %.3f s\n", arc.load(), seconds_since(t0), dereg_s);
	std::string why;
	if (drc)
		why = "dereg_mr: " + errno_text(drc);
	else if (early)
		std::printf("  the prefetch ended within 0.3 s: nothing to stop on this host\n");
	else if (arc != ENOENT)
		why = strf("advise rc %d: the prefetch went on after the region was deregistered",
			   arc.load());
	munmap(big, len);
	check(name, why.empty(), why);
}

/*
 * A synchronous prefetch runs inside ib_core's uverbs read section, which
 * device removal (rdma link del, rmmod) waits for, so it must end soon:
 *
 * - over memory that is not mapped it fails at its first chunk, as hardware
 *   ODP's does (it used to try every page of the range one by one: a
 *   16 GiB hole took minutes under TCG);
 * - over a long mapped range it stops after its 10 s budget with EAGAIN,
 *   keeping what it mapped. 48 GiB mapped read-only (the zero page) takes
 *   longer than that under TCG; a host that maps it faster has nothing to
 *   stop, and says so.
 */
/*
 * Map @len bytes with @prot (nothing is touched), register them as an ODP
 * region and prefetch all of it synchronously in SGEs of 2 GiB. Returns
 * the prefetch's rc and sets @secs; a set-up failure is said in @why.
 */
int odp_prefetch_all(Env &e, size_t len, int prot, int access,
		     enum ibv_advise_mr_advice advice, double &secs, std::string &why)
{
	void *p = mmap(nullptr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		why = "mmap: " + errno_text(errno);
		return -1;
	}
	int rc = -1;
	struct ibv_mr *mr = ibv_reg_mr(e.pd, p, len, IBV_ACCESS_ON_DEMAND | access);
	if (!mr) {
		why = "reg_mr: " + errno_text(errno);
	} else {
		std::vector<struct ibv_sge> sges;
		for (size_t off = 0; off < len; off += size_t(2) << 30)
			sges.push_back({reinterpret_cast<uintptr_t>(p) + off, 2u << 30, mr->lkey});
		const auto t0 = Clock::now();
		rc = ibv_advise_mr(e.pd, advice, IBV_ADVISE_MR_FLAG_FLUSH, sges.data(),
				   static_cast<uint32_t>(sges.size()));
		secs = seconds_since(t0);
		if (ibv_dereg_mr(mr))
			why = "dereg_mr failed";
	}
	munmap(p, len);
	return rc;
}

void odp_prefetch_bounded(Env &e)
{
	double t = 0;
	std::string why;
	int rc = odp_prefetch_all(e, size_t(16) << 30, PROT_NONE, IBV_ACCESS_LOCAL_WRITE,
				  IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, t, why);
	std::printf("  synchronous prefetch of a 16 GiB hole: rc %d after %.3f s\n", rc, t);
	if (why.empty() && (rc != EFAULT || t > 3.0))
		why = strf("rc %d after %.3f s (want EFAULT at its first chunk)", rc, t);
	check("odp_prefetch_hole_fails_at_once", why.empty(), why);

	why.clear();
	rc = odp_prefetch_all(e, size_t(48) << 30, PROT_READ, IBV_ACCESS_REMOTE_READ,
			      IBV_ADVISE_MR_ADVICE_PREFETCH, t, why);
	std::printf("  synchronous prefetch of 48 GiB: rc %d after %.3f s\n", rc, t);
	if (why.empty() && rc == 0 && t < 9.5)
		std::printf("  the prefetch ended within its budget: nothing to stop on this host\n");
	else if (why.empty() && (rc != EAGAIN || t > 14.0))
		why = strf("rc %d after %.3f s (want EAGAIN after its 10 s budget)", rc, t);
	check("odp_prefetch_sync_budget", why.empty(), why);
}

/*
 * ODP regions over memory the process has not touched: every access faults
 * pages in (RNR NAKs on the responder, pauses on the requester) and the
 * bytes arrive; invalidation (munmap + a new mapping at the same address)
 * sends later accesses to the new pages; unmapped memory fails; implicit
 * regions and prefetch (advise_mr).
 */
/*
 * A 4 MiB WRITE from a region the process has just filled into one nobody
 * has touched, both ODP and fresh: the requester and the responder each
 * wait for faults, and each wait reads ahead through the rest of the
 * mapping, so the message waits a few times per side, not once per page
 * (1024 per side) or per packet.
 */
void odp_first_touch(Env &e)
{
	constexpr size_t kBig = 4 << 20;
	Pair p;
	Mapping src(kBig), dst(kBig);
	char *s = reinterpret_cast<char *>(src.p());
	char *d = reinterpret_cast<char *>(dst.p());
	struct ibv_mr *smr = src ? ibv_reg_mr(e.pd, s, kBig, kOdpAccess) : nullptr;
	struct ibv_mr *dmr = dst ? ibv_reg_mr(e.pd, d, kBig, kOdpAccess) : nullptr;
	std::string why = smr && dmr ? "" : "reg: " + errno_text(errno);
	if (why.empty() && !make_odp_pair(e, p))
		return setup_failed("odp_first_touch_setup", p);
	if (why.empty()) {
		fill(s, 9, kBig);
		const long long w0 = hw_counter(e, "odp_waits");
		const int st = odp_rdma(p.a, IBV_WR_RDMA_WRITE, s, smr->lkey, d, dmr->rkey,
					static_cast<uint32_t>(kBig));
		const long long w1 = hw_counter(e, "odp_waits");
		if (st != IBV_WC_SUCCESS || first_bad(d, 9, kBig) >= 0)
			why = "write: " + st_text(st);
		else if (w1 - w0 > 256)
			why = strf("%lld waits for 1024 + 1024 pages", w1 - w0);
		else
			std::printf("  odp_first_touch: %lld waits\n", w1 - w0);
		destroy_pair(p, &why);
	}
	check("odp_first_touch_reads_ahead", why.empty(), why);
	if (smr)
		ibv_dereg_mr(smr);
	if (dmr)
		ibv_dereg_mr(dmr);
}

void odp(Env &e)
{
	constexpr uint32_t kLen = 16 << 10;	/* 16 packets at MTU 1024 */
	constexpr size_t kMap = 256 << 10;
	Pair p;
	if (!make_odp_pair(e, p))
		return setup_failed("odp_setup", p);
	Mapping m(kMap);
	char *base = reinterpret_cast<char *>(m.p());
	struct ibv_mr *mr = m ? ibv_reg_mr(e.pd, base, kMap, kOdpAccess) : nullptr;
	check("odp_reg_mr", mr != nullptr, errno_text(errno));
	if (!mr) {
		std::string why;
		destroy_pair(p, &why);
		return;
	}
	char *local = e.buf + kRecvOff;
	std::string why;
	int st;

	/* WRITE into untouched pages: faults on the responder */
	long long f0 = hw_counter(e, "odp_fault_pages");
	long long w0 = hw_counter(e, "odp_waits");
	fill(e.buf, 1, kLen);
	st = odp_rdma(p.a, IBV_WR_RDMA_WRITE, e.buf, e.mr->lkey, base, mr->rkey, kLen);
	const long long f1 = hw_counter(e, "odp_fault_pages");
	check("odp_write_faults_pages_in",
	      st == IBV_WC_SUCCESS && first_bad(base, 1, kLen) < 0 && f1 - f0 >= kLen / 4096 &&
		      hw_counter(e, "odp_waits") > w0,
	      strf("%s, faulted %lld pages", st_text(st).c_str(), f1 - f0));

	/* READ out of an ODP region (the READ responder waits for faults) */
	fill(base + kLen, 2, kLen);
	std::memset(local, 0, kLen);
	st = odp_rdma(p.a, IBV_WR_RDMA_READ, local, e.mr->lkey, base + kLen, mr->rkey, kLen);
	check("odp_read_from_region", st == IBV_WC_SUCCESS && first_bad(local, 2, kLen) < 0,
	      st_text(st));

	/* READ into an ODP region (the requester faults its buffer in first) */
	fill(e.buf, 3, kLen);
	st = odp_rdma(p.a, IBV_WR_RDMA_READ, base + 2 * kLen, mr->lkey, e.buf, e.mr->rkey, kLen);
	check("odp_read_into_region", st == IBV_WC_SUCCESS && first_bad(base + 2 * kLen, 3, kLen) < 0,
	      st_text(st));

	/* SEND from and into ODP pages nobody touched since they were mapped */
	{
		Mapping s(2 * kLen);
		char *sb = reinterpret_cast<char *>(s.p());
		struct ibv_mr *smr = s ? ibv_reg_mr(e.pd, sb, 2 * kLen, kOdpAccess) : nullptr;
		why = smr ? "" : "reg: " + errno_text(errno);
		struct ibv_sge rs = {reinterpret_cast<uintptr_t>(sb + kLen), kLen,
				     smr ? smr->lkey : 0};
		struct ibv_recv_wr rwr = {}, *rbad = nullptr;
		rwr.wr_id = 4;
		rwr.sg_list = &rs;
		rwr.num_sge = 1;
		if (why.empty() && ibv_post_recv(p.b.qp, &rwr, &rbad))
			why = "post_recv";
		if (why.empty()) {
			fill(sb, 4, kLen);
			/* drop the sender's pages from the region: they come back by fault */
			madvise(sb, kLen, MADV_DONTNEED);
			fill(sb, 4, kLen);
			struct ibv_sge ss = {reinterpret_cast<uintptr_t>(sb), kLen, smr->lkey};
			struct ibv_send_wr wr = {};
			wr.sg_list = &ss;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			st = odp_post(p.a, wr);
			struct ibv_wc wc;
			if (st != IBV_WC_SUCCESS)
				why = "send: " + st_text(st);
			else if (!wait_wc(p.b.rcq, &wc) || wc.status != IBV_WC_SUCCESS ||
				 wc.byte_len != kLen)
				why = "recv: " + wc_text(wc);
			else if (first_bad(sb + kLen, 4, kLen) >= 0)
				why = "received bytes differ";
		}
		if (smr)
			ibv_dereg_mr(smr);
		check("odp_send_and_receive", why.empty(), why);
	}

	/* atomics on an ODP page nobody touched */
	{
		uint64_t *tgt = reinterpret_cast<uint64_t *>(base + 4 * kLen);
		auto *res = reinterpret_cast<uint64_t *>(e.buf);
		*res = 0;
		struct ibv_sge sge = {reinterpret_cast<uintptr_t>(res), 8, e.mr->lkey};
		struct ibv_send_wr wr = {};
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = reinterpret_cast<uintptr_t>(tgt);
		wr.wr.atomic.rkey = mr->rkey;
		wr.wr.atomic.compare_add = 5;
		st = odp_post(p.a, wr);
		const uint64_t after = *tgt;
		check("odp_atomic_fetch_add", st == IBV_WC_SUCCESS && *res == 0 && after == 5,
		      strf("%s orig %llu now %llu", st_text(st).c_str(),
			   static_cast<unsigned long long>(*res),
			   static_cast<unsigned long long>(after)));
	}

	/* invalidation: a new mapping at the same address gets the next write */
	{
		const long long i0 = hw_counter(e, "odp_invalidated_pages");
		void *again = mmap(base, kLen, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		const long long i1 = hw_counter(e, "odp_invalidated_pages");
		const bool zeroed = again == base && first_bad(base, 1, kLen) == 0 &&
				    base[kLen - 1] == 0;
		fill(e.buf, 5, kLen);
		st = odp_rdma(p.a, IBV_WR_RDMA_WRITE, e.buf, e.mr->lkey, base, mr->rkey, kLen);
		check("odp_invalidation_follows_new_mapping",
		      zeroed && i1 - i0 >= kLen / 4096 && st == IBV_WC_SUCCESS &&
			      first_bad(base, 5, kLen) < 0,
		      strf("remapped %d, invalidated %lld pages, %s", zeroed, i1 - i0,
			   st_text(st).c_str()));
	}

	/* a hole in the region: the access fails, the QP goes to ERR */
	{
		munmap(base + kMap - kLen, kLen);
		fill(e.buf, 6, 4096);
		st = odp_rdma(p.a, IBV_WR_RDMA_WRITE, e.buf, e.mr->lkey, base + kMap - kLen,
			      mr->rkey, 4096);
		check("odp_write_to_unmapped_range_fails", st == IBV_WC_REM_ACCESS_ERR,
		      st_text(st));
	}
	destroy_pair(p, &why);

	check("odp_dereg", ibv_dereg_mr(mr) == 0);

	/*
	 * prefetch: after a synchronous PREFETCH_WRITE, a write waits for
	 * nothing. A region of its own: the faults above read ahead through
	 * the whole of the first one.
	 */
	Mapping pm(kMap);
	base = reinterpret_cast<char *>(pm.p());
	mr = pm ? ibv_reg_mr(e.pd, base, kMap, kOdpAccess) : nullptr;
	check("odp_prefetch_reg_mr", mr != nullptr, errno_text(errno));
	if (mr && make_odp_pair(e, p)) {
		char *pf = base + 6 * kLen;
		struct ibv_sge sge = {reinterpret_cast<uintptr_t>(pf), kLen, mr->lkey};
		const long long f2 = hw_counter(e, "odp_fault_pages");
		const int rc = ibv_advise_mr(e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
					     IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
		const long long f3 = hw_counter(e, "odp_fault_pages");
		const long long w2 = hw_counter(e, "odp_waits");
		fill(e.buf, 7, kLen);
		st = odp_rdma(p.a, IBV_WR_RDMA_WRITE, e.buf, e.mr->lkey, pf, mr->rkey, kLen);
		const long long w3 = hw_counter(e, "odp_waits");
		check("odp_prefetch_maps_pages",
		      rc == 0 && f3 - f2 == kLen / 4096 && st == IBV_WC_SUCCESS && w3 == w2 &&
			      first_bad(pf, 7, kLen) < 0,
		      strf("rc %d, mapped %lld, %s, waits %lld", rc, f3 - f2, st_text(st).c_str(),
			   w3 - w2));

		/* no-fault prefetch maps only what the process has touched */
		char *nf = base + 8 * kLen;
		struct ibv_sge nsge = {reinterpret_cast<uintptr_t>(nf), kLen, mr->lkey};
		const long long f4 = hw_counter(e, "odp_fault_pages");
		const int rc1 = ibv_advise_mr(e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
					      IBV_ADVISE_MR_FLAG_FLUSH, &nsge, 1);
		const long long f5 = hw_counter(e, "odp_fault_pages");
		std::memset(nf, 1, kLen);
		const int rc2 = ibv_advise_mr(e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
					      IBV_ADVISE_MR_FLAG_FLUSH, &nsge, 1);
		const long long f6 = hw_counter(e, "odp_fault_pages");
		check("odp_prefetch_no_fault", rc1 == 0 && rc2 == 0 && f5 == f4 &&
			      f6 - f5 == kLen / 4096,
		      strf("rc %d/%d, untouched %lld, touched %lld", rc1, rc2, f5 - f4, f6 - f5));

		/* advise_mr refuses what is not an ODP range of this PD */
		struct ibv_sge bad = {reinterpret_cast<uintptr_t>(e.buf), 4096, e.mr->lkey};
		const int r1 = ibv_advise_mr(e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
					     IBV_ADVISE_MR_FLAG_FLUSH, &bad, 1);
		bad = {reinterpret_cast<uintptr_t>(base), static_cast<uint32_t>(kMap) + 4096,
		       mr->lkey};
		const int r2 = ibv_advise_mr(e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
					     IBV_ADVISE_MR_FLAG_FLUSH, &bad, 1);
		check("odp_advise_refused_outside_odp", r1 == EINVAL && r2 == EINVAL,
		      strf("pinned region: %d, beyond the end: %d", r1, r2));
		destroy_pair(p, &why);
	} else if (mr) {
		setup_failed("odp_prefetch_setup", p);
	}
	if (mr)
		ibv_dereg_mr(mr);

	odp_first_touch(e);

	/* implicit ODP: one key for the whole address space */
	struct ibv_mr *imr = ibv_reg_mr(e.pd, nullptr, SIZE_MAX, kOdpAccess);
	check("odp_implicit_reg", imr != nullptr, errno_text(errno));
	if (imr && make_odp_pair(e, p)) {
		Mapping a(kLen), b(kLen);
		char *pa = reinterpret_cast<char *>(a.p());
		char *pb = reinterpret_cast<char *>(b.p());
		fill(e.buf, 8, kLen);
		st = odp_rdma(p.a, IBV_WR_RDMA_WRITE, e.buf, e.mr->lkey, pa, imr->rkey, kLen);
		why = st == IBV_WC_SUCCESS && first_bad(pa, 8, kLen) < 0 ? "" : "write: " + st_text(st);
		/* and as an lkey: WRITE from a to b, both through the implicit region */
		if (why.empty()) {
			st = odp_rdma(p.a, IBV_WR_RDMA_WRITE, pa, imr->lkey, pb, imr->rkey, kLen);
			if (st != IBV_WC_SUCCESS || first_bad(pb, 8, kLen) >= 0)
				why = "copy: " + st_text(st);
		}
		check("odp_implicit_write_anywhere", why.empty(), why);
		destroy_pair(p, &why);
	} else if (imr) {
		setup_failed("odp_implicit_setup", p);
	}
	/*
	 * Prefetching 128 MiB that cannot be mapped fails and leaves nothing
	 * behind: no table entries (xarray nodes, radix_tree_node) for pages no
	 * access waits for. Each node covers 64 pages: 512 of them would stay.
	 */
	if (imr) {
		const size_t hole_len = size_t(128) << 20;
		void *hole = mmap(nullptr, hole_len, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		std::string why = hole == MAP_FAILED ? "mmap: " + errno_text(errno) : "";
		if (why.empty()) {
			struct ibv_sge sge = {reinterpret_cast<uintptr_t>(hole),
					      static_cast<uint32_t>(hole_len), imr->lkey};
			const long long n0 = slab_objects("radix_tree_node");
			const int rc = ibv_advise_mr(e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
						     IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
			/*
			 * Nodes the faults reserved and released are freed after
			 * an RCU grace period: give them up to 10 s.
			 */
			long long n1 = slab_objects("radix_tree_node");
			for (int i = 0; i < 100 && n0 >= 0 && n1 - n0 >= 128; i++) {
				usleep(100000);
				n1 = slab_objects("radix_tree_node");
			}
			std::printf("  prefetch of unmapped memory: rc %d, radix_tree_node %lld -> %lld\n",
				    rc, n0, n1);
			if (rc == 0 || n0 < 0 || n1 - n0 >= 128)
				why = strf("rc %d, radix_tree_node %lld -> %lld", rc, n0, n1);
			munmap(hole, hole_len);
		}
		check("odp_prefetch_unmapped_leaves_nothing", why.empty(), why);
	}
	if (imr)
		check("odp_implicit_dereg", ibv_dereg_mr(imr) == 0);

	/* rereg moves an ODP region to other memory under the same keys */
	Mapping r1(kLen), r2(kLen);
	struct ibv_mr *rmr = r1 && r2 ? ibv_reg_mr(e.pd, r1.p(), kLen, kOdpAccess) : nullptr;
	const uint32_t rkey = rmr ? rmr->rkey : 0;
	int rc = rmr ? ibv_rereg_mr(rmr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, r2.p(), kLen, 0)
		     : -100;
	why = rc ? strf("reg/rereg: %d %s", rc, errno_text(errno).c_str()) : "";
	if (why.empty() && make_odp_pair(e, p)) {
		fill(e.buf, 9, kLen);
		st = odp_rdma(p.a, IBV_WR_RDMA_WRITE, e.buf, e.mr->lkey, r2.p(), rkey, kLen);
		if (st != IBV_WC_SUCCESS || first_bad(r2.p(), 9, kLen) >= 0 ||
		    rmr->rkey != rkey || r1.p()[0] || r1.p()[kLen - 1])
			why = "write after rereg: " + st_text(st);
		destroy_pair(p, &why);
	} else if (why.empty()) {
		why = "pair";
	}
	check("odp_rereg_translation", why.empty(), why);
	if (rmr)
		check("odp_rereg_dereg", ibv_dereg_mr(rmr) == 0);
	odp_dereg_during_prefetch(e);
	odp_prefetch_bounded(e);
}

/* ------------------------------------------------------------------ XRC */

/*
 * An XRC set-up on one device, over loopback: a domain opened through a
 * file (so that a second open shares it), XRC SRQs 1 (the Env's PD, cq1)
 * and 2 (a second PD, cq2) in it, SRQ 3 in another domain, and regions in
 * both PDs for RDMA and atomics. ini/tgt are a connected initiator and
 * target (xrc_connect()).
 */
struct Xrc {
	Mapping map2{1 << 20};
	char tmpl[32] = "/tmp/sroce-xrcd-XXXXXX";
	int fd = -1;
	struct ibv_xrcd *xrcd = nullptr, *other = nullptr;
	struct ibv_pd *pd2 = nullptr;
	struct ibv_mr *mr1 = nullptr, *mr2 = nullptr;	/* e.buf in pd, map2 in pd2 */
	struct ibv_cq *scq = nullptr, *cq1 = nullptr, *cq2 = nullptr, *cq3 = nullptr;
	struct ibv_srq *srq1 = nullptr, *srq2 = nullptr, *srq3 = nullptr;
	uint32_t n1 = 0, n2 = 0, n3 = 0;
	struct ibv_qp *ini = nullptr, *tgt = nullptr;
};

constexpr int kXrcAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

struct ibv_xrcd *xrcd_open(Env &e, int fd)
{
	struct ibv_xrcd_init_attr a = {};
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = fd;
	a.oflags = O_CREAT;
	return ibv_open_xrcd(e.ctx, &a);
}

struct ibv_srq *xrc_srq(Env &e, struct ibv_xrcd *xrcd, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex a = {};
	a.attr.max_wr = kSlots;
	a.attr.max_sge = 2;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		      IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = pd;
	a.xrcd = xrcd;
	a.cq = cq;
	return ibv_create_srq_ex(e.ctx, &a);
}

bool xrc_setup(Env &e, Xrc &x)
{
	x.fd = mkstemp(x.tmpl);
	if (x.fd < 0 || !x.map2)
		return false;
	unlink(x.tmpl);
	x.xrcd = xrcd_open(e, x.fd);
	x.other = xrcd_open(e, -1);
	x.pd2 = ibv_alloc_pd(e.ctx);
	if (!x.xrcd || !x.other || !x.pd2)
		return false;
	x.mr1 = ibv_reg_mr(e.pd, e.buf, kBufSize, kXrcAccess);
	x.mr2 = ibv_reg_mr(x.pd2, x.map2.p(), 1 << 20, kXrcAccess);
	x.scq = ibv_create_cq(e.ctx, 64, nullptr, nullptr, 0);
	x.cq1 = ibv_create_cq(e.ctx, 64, nullptr, nullptr, 0);
	x.cq2 = ibv_create_cq(e.ctx, 64, nullptr, nullptr, 0);
	x.cq3 = ibv_create_cq(e.ctx, 64, nullptr, nullptr, 0);
	if (!x.mr1 || !x.mr2 || !x.scq || !x.cq1 || !x.cq2 || !x.cq3)
		return false;
	x.srq1 = xrc_srq(e, x.xrcd, e.pd, x.cq1);
	x.srq2 = xrc_srq(e, x.xrcd, x.pd2, x.cq2);
	x.srq3 = xrc_srq(e, x.other, e.pd, x.cq3);
	return x.srq1 && x.srq2 && x.srq3 && !ibv_get_srq_num(x.srq1, &x.n1) &&
	       !ibv_get_srq_num(x.srq2, &x.n2) && !ibv_get_srq_num(x.srq3, &x.n3);
}

void xrc_drop_qps(Xrc &x, std::string *why)
{
	if (x.ini && ibv_destroy_qp(x.ini))
		*why += " destroy ini";
	if (x.tgt && ibv_destroy_qp(x.tgt))
		*why += " destroy tgt";
	x.ini = x.tgt = nullptr;
}

/* Connect a new initiator (send ops for ibv_wr_* if ops) to a new target. */
bool xrc_connect(Env &e, Xrc &x, uint64_t ops = 0, bool tgt_rts = true)
{
	struct ibv_qp_init_attr_ex ia = {};
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.send_cq = x.scq;
	ia.cap.max_send_wr = kSlots;
	ia.cap.max_send_sge = 2;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | (ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0);
	ia.pd = e.pd;
	ia.send_ops_flags = ops;
	x.ini = ibv_create_qp_ex(e.ctx, &ia);
	ia = {};
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ia.xrcd = x.xrcd;
	x.tgt = ibv_create_qp_ex(e.ctx, &ia);
	if (!x.ini || !x.tgt)
		return false;
	sroce_tool::Path p = loopback_path(e, IBV_QPT_XRC_SEND, x.tgt->qp_num);
	p.max_rd_atomic = p.max_dest_rd_atomic = 4;
	p.retry_cnt = 7;
	p.rnr_retry = 7;
	if (sroce_tool::connect_qp(x.ini, p))
		return false;
	p = loopback_path(e, IBV_QPT_XRC_RECV, x.ini->qp_num);
	p.access = kXrcAccess;
	p.max_rd_atomic = p.max_dest_rd_atomic = 4;
	if (!tgt_rts)
		return !sroce_tool::qp_to_init(x.tgt, p) && !sroce_tool::qp_to_rtr(x.tgt, p);
	return sroce_tool::connect_qp(x.tgt, p) == 0;
}

void xrc_teardown(Xrc &x, std::string *why)
{
	xrc_drop_qps(x, why);
	for (struct ibv_srq *s : {x.srq1, x.srq2, x.srq3})
		if (s && ibv_destroy_srq(s))
			*why += " destroy srq";
	for (struct ibv_cq *c : {x.scq, x.cq1, x.cq2, x.cq3})
		if (c && ibv_destroy_cq(c))
			*why += " destroy cq";
	for (struct ibv_mr *m : {x.mr1, x.mr2})
		if (m && ibv_dereg_mr(m))
			*why += " dereg mr";
	if (x.pd2 && ibv_dealloc_pd(x.pd2))
		*why += " dealloc pd";
	for (struct ibv_xrcd *d : {x.xrcd, x.other})
		if (d && ibv_close_xrcd(d))
			*why += " close xrcd";
	if (x.fd >= 0)
		close(x.fd);
}

/* One signaled work request from the initiator to SRQ srqn: its status. */
int xrc_post(Xrc &x, uint32_t srqn, struct ibv_send_wr wr, struct ibv_wc *out = nullptr)
{
	struct ibv_send_wr *bad = nullptr;
	wr.send_flags |= IBV_SEND_SIGNALED;
	wr.qp_type.xrc.remote_srqn = srqn;
	if (ibv_post_send(x.ini, &wr, &bad))
		return -1;
	struct ibv_wc wc;
	if (!wait_wc(x.scq, &wc))
		return -2;
	if (out)
		*out = wc;
	return wc.status;
}

int xrc_rdma(Xrc &x, uint32_t srqn, enum ibv_wr_opcode op, void *local, void *remote,
	     uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = {reinterpret_cast<uintptr_t>(local), len, x.mr1->lkey};
	struct ibv_send_wr wr = {};
	wr.wr_id = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(remote);
	wr.wr.rdma.rkey = rkey;
	return xrc_post(x, srqn, wr);
}

int xrc_srq_recv(struct ibv_srq *srq, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {reinterpret_cast<uintptr_t>(addr), len, lkey};
	struct ibv_recv_wr wr = {}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* Message msg of len bytes from e.buf to SRQ srqn; its status. */
int xrc_send(Env &e, Xrc &x, uint32_t srqn, uint32_t msg, uint32_t len, bool imm = false)
{
	fill(e.buf, msg, len);
	struct ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf), len, x.mr1->lkey};
	struct ibv_send_wr wr = {};
	wr.wr_id = msg;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.imm_data = htobe32(0xc0de0000 | msg);
	return xrc_post(x, srqn, wr);
}

/* The receive of message msg (len bytes at buf) on cq: "" or what is wrong. */
std::string xrc_recv_ok(Xrc &x, struct ibv_cq *cq, uint32_t msg, const void *buf, uint32_t len,
			bool imm = false)
{
	struct ibv_wc wc = {};
	if (!wait_wc(cq, &wc))
		return strf("msg %u: no receive completion", msg);
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != msg || wc.byte_len != len ||
	    wc.opcode != IBV_WC_RECV || wc.qp_num != x.tgt->qp_num ||
	    wc.src_qp != x.ini->qp_num)
		return strf("msg %u: %s byte_len %u opcode %d qp_num %u src_qp %u (tgt %u, ini %u)",
			    msg, wc_text(wc).c_str(), wc.byte_len, wc.opcode, wc.qp_num,
			    wc.src_qp, x.tgt->qp_num, x.ini->qp_num);
	if (imm != !!(wc.wc_flags & IBV_WC_WITH_IMM) ||
	    (imm && be32toh(wc.imm_data) != (0xc0de0000 | msg)))
		return strf("msg %u: immediate data wrong (flags 0x%x)", msg, wc.wc_flags);
	const long bad = first_bad(buf, msg, len);
	return bad >= 0 ? strf("msg %u: byte %ld differs", msg, bad) : "";
}

/* A request the target must refuse: the initiator's status, the target in ERR. */
std::string xrc_refused(Env &e, Xrc &x, const char *what, const std::function<int()> &post,
			int want)
{
	std::string why;
	if (!xrc_connect(e, x))
		return strf("%s: setup: %s", what, errno_text(errno).c_str());
	const int st = post();
	if (st != want)
		why = strf("%s: initiator got %s, want %s", what, st_text(st).c_str(),
			   st_text(want).c_str());
	else if (wait_err(x.tgt) != IBV_QPS_ERR)
		why = strf("%s: target not in ERR", what);
	xrc_drop_qps(x, &why);
	return why;
}

/*
 * XRC: one initiator reaches SRQs of two PDs through one target; every
 * request uses the PD and CQ of the SRQ it names; SRQs of another domain,
 * unknown numbers and keys of another PD are refused; a second open of the
 * domain's file shares it (ibv_open_qp); an SRQ goes away under a target.
 */
void xrc(Env &e)
{
	Xrc x;
	std::string why;
	if (!xrc_setup(e, x)) {
		check("xrc_setup", false, errno_text(errno));
		xrc_teardown(x, &why);
		return;
	}
	check("xrc_srq_numbers", x.n1 && x.n2 && x.n3 && x.n1 != x.n2 && x.n2 != x.n3 &&
	      x.n1 != x.n3, strf("%u %u %u", x.n1, x.n2, x.n3));

	/* SENDs: each to its SRQ's buffer, PD and CQ; multi-packet, immediate */
	char *r1 = e.buf + kRecvOff;
	char *r2 = reinterpret_cast<char *>(x.map2.p(0));
	if (!xrc_connect(e, x)) {
		check("xrc_connect", false, errno_text(errno));
		xrc_teardown(x, &why);
		return;
	}
	if (xrc_srq_recv(x.srq1, 1, r1, 8192, x.mr1->lkey) ||
	    xrc_srq_recv(x.srq2, 2, r2, 8192, x.mr2->lkey) ||
	    xrc_srq_recv(x.srq1, 3, r1 + 8192, 64, x.mr1->lkey))
		why = "post_srq_recv";
	int st;
	if (why.empty() && (st = xrc_send(e, x, x.n1, 1, 5000)) != IBV_WC_SUCCESS)
		why = "send 1: " + st_text(st);
	if (why.empty())
		why = xrc_recv_ok(x, x.cq1, 1, r1, 5000);
	if (why.empty() && (st = xrc_send(e, x, x.n2, 2, 3000)) != IBV_WC_SUCCESS)
		why = "send 2: " + st_text(st);
	if (why.empty())
		why = xrc_recv_ok(x, x.cq2, 2, r2, 3000);
	if (why.empty() && (st = xrc_send(e, x, x.n1, 3, 60, true)) != IBV_WC_SUCCESS)
		why = "send 3: " + st_text(st);
	if (why.empty())
		why = xrc_recv_ok(x, x.cq1, 3, r1 + 8192, 60, true);
	if (why.empty() && (unpolled(x.cq1) || unpolled(x.cq2) || unpolled(x.cq3)))
		why = "extra completions";
	check("xrc_send_to_two_srqs", why.empty(), why);

	/* RDMA and atomics in SRQ 2's PD */
	why.clear();
	char *src = e.buf + 0x10000, *dst = e.buf + 0x20000;
	char *t = reinterpret_cast<char *>(x.map2.p(0x40000));
	fill(src, 7, 6000);
	std::memset(t, 0, 6000);
	if ((st = xrc_rdma(x, x.n2, IBV_WR_RDMA_WRITE, src, t, x.mr2->rkey, 6000)))
		why = "write: " + st_text(st);
	else if (first_bad(t, 7, 6000) >= 0)
		why = "written bytes differ";
	std::memset(dst, 0, 6000);
	if (why.empty() &&
	    (st = xrc_rdma(x, x.n2, IBV_WR_RDMA_READ, dst, t, x.mr2->rkey, 6000)))
		why = "read: " + st_text(st);
	else if (why.empty() && first_bad(dst, 7, 6000) >= 0)
		why = "read bytes differ";
	auto *word = reinterpret_cast<uint64_t *>(x.map2.p(0x50000));
	auto *orig = reinterpret_cast<uint64_t *>(e.buf + 0x30000);
	*word = 40;
	if (why.empty()) {
		struct ibv_sge sge = {reinterpret_cast<uintptr_t>(orig), 8, x.mr1->lkey};
		struct ibv_send_wr wr = {};
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = reinterpret_cast<uintptr_t>(word);
		wr.wr.atomic.rkey = x.mr2->rkey;
		wr.wr.atomic.compare_add = 2;
		if ((st = xrc_post(x, x.n2, wr)) || *orig != 40 || *word != 42)
			why = strf("fetch_add: %s orig %" PRIu64 " now %" PRIu64,
				   st_text(st).c_str(), *orig, *word);
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 42;
		wr.wr.atomic.swap = 99;
		if (why.empty() && ((st = xrc_post(x, x.n2, wr)) || *orig != 42 || *word != 99))
			why = strf("cmp_swp: %s orig %" PRIu64 " now %" PRIu64,
				   st_text(st).c_str(), *orig, *word);
	}
	check("xrc_rdma_and_atomics", why.empty(), why);

	/* no queues to post to on a target; no receive queue on an initiator */
	why.clear();
	{
		struct ibv_recv_wr rwr = {}, *rbad = nullptr;
		struct ibv_send_wr swr = {}, *sbad = nullptr;
		swr.opcode = IBV_WR_SEND;
		if (ibv_post_recv(x.tgt, &rwr, &rbad) != EINVAL)
			why += " post_recv(tgt)";
		if (ibv_post_send(x.tgt, &swr, &sbad) != EINVAL)
			why += " post_send(tgt)";
		if (ibv_post_recv(x.ini, &rwr, &rbad) != EINVAL)
			why += " post_recv(ini)";
	}
	{
		/* whatever queue sizes a target is asked for, it gets none */
		struct ibv_qp_init_attr_ex ia = {};
		ia.qp_type = IBV_QPT_XRC_RECV;
		ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		ia.xrcd = x.xrcd;
		ia.cap.max_send_wr = 0x80000001u;
		ia.cap.max_send_sge = 100000;
		ia.cap.max_inline_data = 1u << 30;
		struct ibv_qp *big = ibv_create_qp_ex(e.ctx, &ia);
		struct ibv_qp_attr qa = {};
		struct ibv_qp_init_attr qi = {};
		if (!big)
			why += " target with huge caps: " + errno_text(errno);
		else if (ibv_query_qp(big, &qa, IBV_QP_CAP, &qi) || qa.cap.max_send_wr ||
			 qa.cap.max_send_sge || qa.cap.max_inline_data || qa.cap.max_recv_wr)
			why += strf(" target caps %u/%u/%u", qa.cap.max_send_wr,
				    qa.cap.max_send_sge, qa.cap.max_inline_data);
		if (big && ibv_destroy_qp(big))
			why += " destroy big target";
	}
	check("xrc_no_queues_where_none", why.empty(), why);

	/* a second open of the file shares the domain: ibv_open_qp reaches the target */
	why.clear();
	struct ibv_xrcd *again = xrcd_open(e, x.fd);
	struct ibv_qp *opened = nullptr;
	if (!again) {
		why = "second open: " + errno_text(errno);
	} else {
		struct ibv_qp_open_attr oa = {};
		oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			       IBV_QP_OPEN_ATTR_TYPE;
		oa.qp_num = x.tgt->qp_num;
		oa.qp_type = IBV_QPT_XRC_RECV;
		oa.xrcd = again;
		opened = ibv_open_qp(e.ctx, &oa);
		if (!opened)
			why = "open_qp: " + errno_text(errno);
	}
	if (opened) {
		/* the creator's handle goes; the opened one keeps the target */
		int rc = ibv_destroy_qp(x.tgt);
		x.tgt = opened;
		if (rc)
			why = "destroy creator's handle: " + errno_text(rc);
		else if (sroce_tool::qp_state(opened) != IBV_QPS_RTS)
			why = strf("opened target in state %d", sroce_tool::qp_state(opened));
		else if (xrc_srq_recv(x.srq1, 4, r1, 8192, x.mr1->lkey))
			why = "post_srq_recv";
		else if ((st = xrc_send(e, x, x.n1, 4, 100)) != IBV_WC_SUCCESS)
			why = "send via opened target: " + st_text(st);
		else
			why = xrc_recv_ok(x, x.cq1, 4, r1, 100);
	}
	xrc_drop_qps(x, &why);
	if (again && ibv_close_xrcd(again))
		why += " close second open";
	check("xrc_shared_domain_open_qp", why.empty(), why);

	/* the ibv_wr_* API names the SRQ with ibv_wr_set_xrc_srqn */
	why.clear();
	if (!xrc_connect(e, x, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE)) {
		why = "setup: " + errno_text(errno);
	} else if (xrc_srq_recv(x.srq2, 5, r2, 8192, x.mr2->lkey)) {
		why = "post_srq_recv";
	} else {
		fill(e.buf, 5, 2000);
		struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(x.ini);
		ibv_wr_start(qpx);
		qpx->wr_id = 5;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qpx);
		ibv_wr_set_xrc_srqn(qpx, x.n2);
		ibv_wr_set_sge(qpx, x.mr1->lkey, reinterpret_cast<uintptr_t>(e.buf), 2000);
		struct ibv_wc wc = {};
		const int rc = ibv_wr_complete(qpx);
		if (rc)
			why = "wr_complete: " + errno_text(rc);
		else if (!wait_wc(x.scq, &wc) || wc.status != IBV_WC_SUCCESS)
			why = "send: " + wc_text(wc);
		else
			why = xrc_recv_ok(x, x.cq2, 5, r2, 2000);
	}
	xrc_drop_qps(x, &why);
	check("xrc_wr_set_xrc_srqn", why.empty(), why);

	/* refusals: nothing lands, the initiator learns why, the target stops */
	std::memset(t, 0x5a, 64);
	why = xrc_refused(e, x, "rkey of another PD", [&] {
		return xrc_rdma(x, x.n1, IBV_WR_RDMA_WRITE, src, t, x.mr2->rkey, 64);
	}, IBV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 64 && why.empty(); i++)
		if (static_cast<uint8_t>(t[i]) != 0x5a)
			why = "the write landed";
	check("xrc_key_of_other_pd_refused", why.empty(), why);
	why = xrc_refused(e, x, "unknown SRQ", [&] {
		return xrc_send(e, x, 0xfffffe, 6, 64);
	}, IBV_WC_REM_INV_REQ_ERR);
	check("xrc_unknown_srq_refused", why.empty(), why);
	why.clear();
	if (xrc_srq_recv(x.srq3, 7, r1, 64, x.mr1->lkey))
		why = "post_srq_recv";
	else
		why = xrc_refused(e, x, "other domain", [&] {
			return xrc_send(e, x, x.n3, 7, 64);
		}, IBV_WC_REM_INV_REQ_ERR);
	if (why.empty() && unpolled(x.cq3))
		why = "the other domain's SRQ completed a receive";
	check("xrc_srq_of_other_domain_refused", why.empty(), why);

	/* an SRQ destroyed under a live target: its number is refused */
	why.clear();
	if (!xrc_connect(e, x)) {
		why = "setup: " + errno_text(errno);
	} else {
		const int rc = ibv_destroy_srq(x.srq1);
		x.srq1 = nullptr;
		if (rc)
			why = "destroy_srq: " + errno_text(rc);
		else if ((st = xrc_send(e, x, x.n1, 8, 64)) != IBV_WC_REM_INV_REQ_ERR)
			why = "send: " + st_text(st);
	}
	xrc_drop_qps(x, &why);
	check("xrc_destroyed_srq_refused", why.empty(), why);

	/* a target left in RTR (where XRC targets may stay) raises COMM_EST once */
	why.clear();
	drain_events(e.ctx);
	if (!xrc_connect(e, x, 0, false))
		why = "setup: " + errno_text(errno);
	/* SRQ 1 is gone (above): SRQ 2, in the second PD */
	for (uint32_t m = 20; m < 22 && why.empty(); m++) {
		if (xrc_srq_recv(x.srq2, m, r2, 64, x.mr2->lkey))
			why = "post_srq_recv";
		else if ((st = xrc_send(e, x, x.n2, m, 64)) != IBV_WC_SUCCESS)
			why = strf("send %u: %s", m, st_text(st).c_str());
		else
			why = xrc_recv_ok(x, x.cq2, m, r2, 64);
	}
	drain_events(e.ctx, 0.3);
	if (why.empty() && x.tgt && count_events(x.tgt->qp_num, IBV_EVENT_COMM_EST) != 1)
		why = strf("%u COMM_EST events on the target in RTR",
			   count_events(x.tgt->qp_num, IBV_EVENT_COMM_EST));
	xrc_drop_qps(x, &why);
	check("comm_est_xrc_target_in_rtr", why.empty(), why);

	/* a target entering ERR raises LAST_WQE_REACHED once, as a QP on an
	 * SRQ does (mlx5 raises it for targets too); ERR -> ERR raises none */
	why.clear();
	drain_events(e.ctx);
	if (!xrc_connect(e, x)) {
		why = "setup: " + errno_text(errno);
	} else {
		const uint32_t tq = x.tgt->qp_num;
		const uint32_t before = count_events(tq, IBV_EVENT_QP_LAST_WQE_REACHED);
		struct ibv_qp_attr qa = {};
		qa.qp_state = IBV_QPS_ERR;
		int rc = ibv_modify_qp(x.tgt, &qa, IBV_QP_STATE);
		if (!rc)
			rc = ibv_modify_qp(x.tgt, &qa, IBV_QP_STATE);
		drain_events(e.ctx, 0.5);
		drain_events(e.ctx, 0.3);
		if (rc)
			why = "modify to ERR: " + errno_text(rc);
		else if (count_events(tq, IBV_EVENT_QP_LAST_WQE_REACHED) != before + 1)
			why = strf("%u LAST_WQE_REACHED events on the target, one expected",
				   count_events(tq, IBV_EVENT_QP_LAST_WQE_REACHED) - before);
	}
	xrc_drop_qps(x, &why);
	check("xrc_target_last_wqe_once", why.empty(), why);

	why.clear();
	xrc_teardown(x, &why);
	check("xrc_teardown", why.empty(), why);
}

/*
 * CQ overrun (IBTA C9-218, C11-37): a completion the CQ cannot take raises
 * IBV_EVENT_CQ_ERR on the CQ, and the QP that tried to complete into it goes
 * to ERR with IBV_EVENT_QP_FATAL; what was not completed is not acknowledged
 * as done. Send side: two signaled SENDs into a one-entry send CQ; the second
 * completion does not fit. Receive side: two SENDs into a one-entry receive
 * CQ; the second message is NAKed, so its sender sees IBV_WC_REM_OP_ERR.
 */
void cq_overrun_one(Env &e, bool send_side)
{
	const char *name = send_side ? "cq_overrun_send_qp_fatal" : "cq_overrun_recv_qp_fatal";
	Pair p;
	if (!make_pair(e, p, IBV_QPT_RC))
		return setup_failed(name, p);
	std::string why;
	struct ibv_cq *small = send_side ? p.a.scq : p.b.rcq;
	struct ibv_qp *victim = send_side ? p.a.qp : p.b.qp;
	drain_events(e.ctx);
	const uint32_t cq_errs = count_events(0, IBV_EVENT_CQ_ERR);
	int rc = ibv_resize_cq(small, 1);
	if (rc)
		why = "resize_cq to 1: " + errno_text(rc);
	else if (small->cqe != 1)
		why = strf("resize_cq to 1 gave %d entries", small->cqe);
	for (uint64_t i = 1; why.empty() && i <= 2; i++)
		if ((rc = post_recv(e, p.b, nullptr, 0x800 + i, 65536 + i * 4096)))
			why = "post_recv: " + errno_text(rc);
	struct ibv_wc wc;
	if (why.empty() && (rc = post_send(e, p.a, 1)))
		why = "post_send 1: " + errno_text(rc);
	if (why.empty() && !send_side) {
		/* the first message fills the receive CQ */
		if (!wait_wc(p.a.scq, &wc))
			why = "first SEND: no completion";
		else if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 1)
			why = "first SEND: " + wc_text(wc);
	}
	if (why.empty() && (rc = post_send(e, p.a, 2, 4096)))
		why = "post_send 2: " + errno_text(rc);
	if (why.empty() && wait_err(victim) != IBV_QPS_ERR)
		why = strf("QP still in %s after the overrun", state_name(qp_state(victim)));
	if (why.empty() && !send_side) {
		if (!wait_wc(p.a.scq, &wc))
			why = "no completion for the second SEND";
		else if (wc.wr_id != 2 || wc.status != IBV_WC_REM_OP_ERR)
			why = "second SEND (its completion was lost): " + wc_text(wc);
	}
	drain_events(e.ctx, 1.0);
	if (why.empty() && count_events(0, IBV_EVENT_CQ_ERR) != cq_errs + 1)
		why = strf("%u CQ_ERR events, one expected",
			   count_events(0, IBV_EVENT_CQ_ERR) - cq_errs);
	if (why.empty() && count_events(victim->qp_num, IBV_EVENT_QP_FATAL) != 1)
		why = strf("%u QP_FATAL events on the QP, one expected",
			   count_events(victim->qp_num, IBV_EVENT_QP_FATAL));
	/* what the CQ held before the overrun is still there */
	if (why.empty()) {
		if (!wait_wc(small, &wc, 1.0))
			why = "the completion before the overrun is gone";
		else if (wc.status != IBV_WC_SUCCESS || wc.wr_id != (send_side ? 1u : 0x801u))
			why = "completion before the overrun: " + wc_text(wc);
	}
	destroy_pair(p, &why);
	check(name, why.empty(), why);
}

void cq_overrun(Env &e)
{
	cq_overrun_one(e, true);
	cq_overrun_one(e, false);
}

} // namespace breadth

void breadth_cases(wqs::Env &e, const char *only)
{
	run_cases(e, {
		{"resize_cq", breadth::resize_cq},
		{"resize_cq_poller", breadth::resize_cq_poller},
		{"rereg_mr", breadth::rereg_mr},
		{"parent_domain", breadth::parent_domain},
		{"reset_cleans_cq", breadth::reset_cleans_cq},
		{"destroy_cleans_cq", breadth::destroy_cleans_cq},
		{"rejected_modify", breadth::rejected_modify},
		{"modify_leniency", breadth::modify_leniency},
		{"sqd", breadth::sqd},
		{"comm_est", breadth::comm_est},
		{"resp_error_events", breadth::resp_error_events},
		{"long_message", breadth::long_message},
		{"srq_resize", breadth::srq_resize},
		{"atomic_write", breadth::atomic_write},
		{"memory_windows", breadth::memory_windows},
		{"multicast", breadth::multicast},
		{"import_device", breadth::import_device},
		{"odp", breadth::odp},
		{"xrc", breadth::xrc},
		{"cq_overrun", breadth::cq_overrun},
	}, only);
}

/*
 * qp-hog N: create up to N RC QPs with 16384-entry send queues (several MiB
 * of rings and WQE copies each) and report how many the kernel allowed; run
 * inside a memory cgroup, the cgroup's limit must stop it.
 */
int mode_qp_hog(struct ibv_context *ctx, int n)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, nullptr, nullptr, 0) : nullptr;
	std::vector<struct ibv_qp *> qps;
	int err = 0;
	while (cq && static_cast<int>(qps.size()) < n) {
		sroce_tool::QpCaps caps;
		caps.send_wr = caps.recv_wr = 16384;
		caps.send_sge = caps.recv_sge = 8;
		struct ibv_qp_init_attr ia = sroce_tool::qp_init_attr(cq, cq, caps);
		errno = 0;
		struct ibv_qp *qp = ibv_create_qp(pd, &ia);
		if (!qp) {
			err = errno;
			break;
		}
		qps.push_back(qp);
	}
	std::printf("qp-hog: created %zu of %d, stopped by %s\n", qps.size(), n,
		    err ? errno_text(err).c_str() : "nothing");
	for (auto *qp : qps)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

} // namespace

/*
 * ud-to IPV4: UD datagrams of the port's active MTU, to a QP number nobody
 * has at IPV4 (the peer drops them). Every send must complete successfully
 * and soon: a datagram the network refuses (a route MTU below the packet)
 * is lost, as on a wire, and holds up nothing behind it.
 */
void ud_to(wqs::Env &e, const char *ip)
{
	using namespace wqs;
	constexpr int kDatagrams = 64;
	constexpr int kDepth = 8;
	union ibv_gid dgid = {};
	dgid.raw[10] = dgid.raw[11] = 0xff;
	struct ibv_port_attr pa = {};
	Side s;
	std::string why;

	if (inet_pton(AF_INET, ip, dgid.raw + 12) != 1 || ibv_query_port(e.ctx, 1, &pa)) {
		check("ud_to_qp", false, sroce_tool::strf("address %s, or query_port", ip));
		return;
	}
	bool ok = make_side(e, s, IBV_QPT_UD) &&
		  !sroce_tool::connect_qp(s.qp, loopback_path(e, IBV_QPT_UD, 0));
	if (ok) {
		struct ibv_ah_attr a = sroce_tool::ah_attr_to(1, e.gid_index, dgid);
		s.ah = ibv_create_ah(e.pd, &a);
		ok = s.ah != nullptr;
	}
	check("ud_to_qp", ok, errno_text(errno));
	if (!ok) {
		destroy_side(s, &why);
		return;
	}
	const uint32_t len = 128u << pa.active_mtu;	/* IBV_MTU_256 is 1 */
	std::printf("  %d datagrams of %u bytes to %s\n", kDatagrams, len, ip);
	int posted = 0, done = 0, bad = 0;
	const auto t0 = Clock::now();
	while (done < kDatagrams && seconds_since(t0) < 10) {
		while (posted < kDatagrams && posted - done < kDepth) {
			struct ibv_sge sge = {reinterpret_cast<uintptr_t>(e.buf), len, e.mr->lkey};
			struct ibv_send_wr wr = {}, *bad_wr;
			wr.wr_id = posted;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.ud.ah = s.ah;
			wr.wr.ud.remote_qpn = 0xabcde;
			wr.wr.ud.remote_qkey = kQkey;
			if (int rc = ibv_post_send(s.qp, &wr, &bad_wr)) {
				why = "post_send: " + errno_text(rc);
				break;
			}
			posted++;
		}
		if (!why.empty())
			break;
		struct ibv_wc wc[kDepth];
		const int n = ibv_poll_cq(s.scq, kDepth, wc);
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS && !bad++)
				why = sroce_tool::strf("datagram %" PRIu64 ": %s", wc[i].wr_id,
					   ibv_wc_status_str(wc[i].status));
		done += n > 0 ? n : 0;
		if (n <= 0)
			usleep(1000);
	}
	std::printf("  %d of %d completed in %.1f s, %d with an error\n", done, kDatagrams,
		    seconds_since(t0), bad);
	if (why.empty() && done < kDatagrams)
		why = sroce_tool::strf("%d of %d completed within 10 s", done, kDatagrams);
	check("ud_to_every_datagram_completes", why.empty(), why);
	why.clear();
	check("ud_to_destroy", destroy_side(s, &why), why);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4 ||
	    (argc == 4 && std::strcmp(argv[2], "wq-scribble") != 0 &&
	     std::strcmp(argv[2], "leak") != 0 &&
	     std::strcmp(argv[2], "qp-hog") != 0 &&
	     std::strcmp(argv[2], "harden") != 0 &&
	     std::strcmp(argv[2], "breadth") != 0 &&
	     std::strcmp(argv[2], "ud-to") != 0)) {
		std::fprintf(stderr, "usage: %s DEVICE [all|leak [FILE]|scribble|harden [CASE]|breadth [CASE]|wq-scribble [GID_INDEX]|qp-hog [N]|ud-to IPV4]\n",
			     argv[0]);
		return 2;
	}
	const std::string mode = argc >= 3 ? argv[2] : "all";

	bool not_found;
	struct ibv_context *ctx = sroce_tool::open_device(argv[1], &not_found);
	if (not_found)
		return 2;
	if (!ctx) {
		std::printf("open_device: %s\nRESULT: FAIL\n",
			    errno_text(errno).c_str());
		return 1;
	}

	if (mode == "leak")
		return mode_leak(ctx, argc == 4 ? argv[3] : nullptr);
	if (mode == "scribble")
		return mode_scribble(ctx);
	if (mode == "wq-scribble")
		return run_env(ctx, argc == 4 ? argv[3] : nullptr, "wq", "wq-scribble", wq_scribble);
	if (mode == "harden")
		return run_env(ctx, nullptr, "harden", "harden", [&](wqs::Env &e) {
			harden(e, argc == 4 ? argv[3] : nullptr);
		});
	if (mode == "breadth")
		return run_env(ctx, nullptr, "breadth", "breadth", [&](wqs::Env &e) {
			breadth_cases(e, argc == 4 ? argv[3] : nullptr);
		});
	if (mode == "qp-hog")
		return mode_qp_hog(ctx, argc == 4 ? std::atoi(argv[3]) : 32);
	if (mode == "ud-to" && argc == 4)
		return run_env(ctx, nullptr, "ud_to", "ud-to", [&](wqs::Env &e) {
			ud_to(e, argv[3]);
		});

	struct ibv_device_attr attr = {};
	check("query_device", ibv_query_device(ctx, &attr) == 0);
	std::printf("  max_mr=%d max_cq=%d max_cqe=%d\n", attr.max_mr,
		    attr.max_cq, attr.max_cqe);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	check("alloc_pd", pd != nullptr, errno_text(errno));
	if (pd) {
		test_mr(pd);
		check("dealloc_pd", ibv_dealloc_pd(pd) == 0);
	}
	test_cq(ctx, attr);
	check("close_device", ibv_close_device(ctx) == 0);

	std::printf("RESULT: %s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
