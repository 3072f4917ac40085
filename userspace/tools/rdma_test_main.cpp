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
 * exceeded, RNR retry recovering and its budget renewed per message, flush
 * of posted receives on ERR; completion channel events. Two-host cases: RC
 * SEND, WRITE, READ, atomics, ATOMIC WRITE, READ + fenced SEND; UC SEND,
 * WRITE; UD SEND; SENDs received through an SRQ.
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
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rdma_test.h"

namespace rdma_test {
namespace {

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
	bool not_found;
	d.name = o.dev;
	d.port = o.port;
	d.ctx = open_device(o.dev.c_str(), &not_found);
	if (!d.ctx) {
		if (!not_found)
			std::fprintf(stderr, "ERROR ibv_open_device %s: %s\n", o.dev.c_str(),
				     errno_text(errno).c_str());
		return false;
	}
	set_nonblocking(d.ctx->async_fd);
	if (ibv_query_device(d.ctx, &d.attr) || ibv_query_port(d.ctx, d.port, &d.port_attr)) {
		std::fprintf(stderr, "ERROR query device/port: %s\n", errno_text(errno).c_str());
		return false;
	}
	d.gid_index = o.gid >= 0 ? o.gid : find_roce_v2_gid(d.ctx, d.port, o.ipv6);
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
		    gid_type(d.ctx, d.port, d.gid_index).c_str(),
		    ibv_port_state_str(d.port_attr.state), d.mtu_bytes(), d.attr.max_sge,
		    d.attr.max_qp_wr, d.attr.max_qp_rd_atom, d.attr.max_qp_init_rd_atom,
		    d.attr.atomic_cap, d.attr.max_srq);
	std::fflush(stdout);
	return true;
}

} // namespace
} // namespace rdma_test

int main(int argc, char **argv)
{
	using namespace rdma_test;

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
	install_destroy_hooks();
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