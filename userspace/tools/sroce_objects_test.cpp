// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-objects-test DEVICE [MODE]
 *
 * Exercises memory regions and completion queues of a device, without any
 * traffic. MODE is one of:
 *
 *   all       (default) every check below; "RESULT: PASS" or "RESULT: FAIL"
 *   leak      create a PD, MRs, CQs and a completion channel, print LEAKING
 *             and exit without destroying anything (the kernel cleans up)
 *   scribble  write garbage over a CQ ring header, then poll, arm (also
 *             through the kernel), destroy one CQ and exit with another
 *             still open; only this process may be hurt
 *
 * One line per check: "<check>: ok" or "<check>: FAIL <why>".
 */
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/sroce-abi.h>

#include "tool_util.h"

/* libibverbs' private command wrapper (IBVERBS_PRIVATE_34, driver.h v44). */
extern "C" int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);

namespace {

using sroce_tool::errno_text;

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

struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	errno = 0;
	return ibv_reg_mr(pd, addr, len, access);
}

/* reg_mr must fail with one of the listed errnos. */
void expect_reg_fails(struct ibv_pd *pd, const char *name, void *addr,
		      size_t len, int access, std::initializer_list<int> errs)
{
	struct ibv_mr *mr = reg(pd, addr, len, access);
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

void *map_anon(size_t len)
{
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? nullptr : p;
}

void test_mr(struct ibv_pd *pd)
{
	const int lw = IBV_ACCESS_LOCAL_WRITE;
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	const size_t big = 64u << 20;
	char *buf = static_cast<char *>(map_anon(big));
	if (!buf) {
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
		struct ibv_mr *mr = reg(pd, buf + c.off, c.len, c.access);
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
	struct ibv_mr *again = reg(pd, buf, 4096, lw);
	check("mr_same_memory_twice", again && keys.insert(again->lkey).second,
	      again ? "duplicate key" : errno_text(errno));
	if (again)
		mrs.push_back(again);

	bool dereg_ok = true;
	for (struct ibv_mr *mr : mrs)
		dereg_ok &= ibv_dereg_mr(mr) == 0;
	check("mr_dereg", dereg_ok);

	/* A key is not reused right away after deregistration. */
	struct ibv_mr *a = reg(pd, buf, 4096, lw);
	const uint32_t old_key = a ? a->lkey : 0;
	if (a)
		ibv_dereg_mr(a);
	struct ibv_mr *b = reg(pd, buf, 4096, lw);
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
	/* ib_core rejects ODP itself (EINVAL) for devices without it. */
	expect_reg_fails(pd, "mr_on_demand", buf, 4096,
			 lw | IBV_ACCESS_ON_DEMAND, {EINVAL, EOPNOTSUPP});
	expect_reg_fails(pd, "mr_zero_length", buf, 0, lw, {EINVAL});

	/* Unmapped memory cannot be pinned. */
	char *hole = static_cast<char *>(map_anon(4 * 4096));
	munmap(hole, 4 * 4096);
	expect_reg_fails(pd, "mr_unmapped_memory", hole, 4 * 4096, lw, {EFAULT});

	/* Read-only memory: readable registration works, writable does not. */
	char *ro = static_cast<char *>(map_anon(4096));
	ro[0] = 1;
	mprotect(ro, 4096, PROT_READ);
	struct ibv_mr *rmr = reg(pd, ro, 4096, IBV_ACCESS_REMOTE_READ);
	check("mr_read_only_memory_readable", rmr != nullptr, errno_text(errno));
	if (rmr)
		ibv_dereg_mr(rmr);
	expect_reg_fails(pd, "mr_read_only_memory_writable", ro, 4096, lw,
			 {EFAULT});
	munmap(ro, 4096);

	/* Thousands of small MRs: all distinct keys, all deregister. */
	const int many = 4000;
	std::vector<struct ibv_mr *> lots;
	std::set<uint32_t> lot_keys;
	int reg_err = 0;
	for (int i = 0; i < many; i++) {
		struct ibv_mr *mr = reg(pd, buf + (i % 1024) * 4096, 4096, lw);
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

	munmap(buf, big);
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

int mode_leak(struct ibv_context *ctx)
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

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		std::fprintf(stderr, "usage: %s DEVICE [all|leak|scribble]\n",
			     argv[0]);
		return 2;
	}
	const std::string mode = argc == 3 ? argv[2] : "all";

	const sroce_tool::DeviceList devices;
	struct ibv_device *dev = devices.find(argv[1]);
	if (!dev)
		return 2;
	struct ibv_context *ctx = ibv_open_device(dev);
	if (!ctx) {
		std::printf("open_device: %s\nRESULT: FAIL\n",
			    errno_text(errno).c_str());
		return 1;
	}

	if (mode == "leak")
		return mode_leak(ctx);
	if (mode == "scribble")
		return mode_scribble(ctx);

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
