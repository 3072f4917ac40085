// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-victim: one RC or UC QP with a patterned memory region, for attack
 * tests. The QP is connected to --remote-ip/--remote-qpn (a peer that may
 * not exist: the test plays it with sroce-pktgen), its MR sits between two
 * unregistered guard areas, and commands then run in order:
 *
 *   sroce-victim -d DEV --type rc|uc --remote-ip IP --remote-qpn Q [--gid N]
 *                [--mr-size BYTES] [--psn P] [--timeout T] [--retry N] [--recvs N]
 *                [--remote-va V] [--remote-rkey K] [--script FILE|--cmd 'c;c;...']
 *
 * First line on stdout, flushed: {"qpn":..,"rq_psn":..,"sq_psn":..,"rkey":..,
 * "va":..,"len":..,"gid_index":..}. Commands (one per line in --script, or
 * separated by ';' in --cmd):
 *
 *   wait FILE      until FILE exists (120 s at most, else exit 3)
 *   touch FILE     create FILE
 *   sleep MS
 *   send N         N signaled SENDs of 64 bytes (from a separate buffer)
 *   read N         one RDMA READ of N bytes from --remote-va/--remote-rkey into
 *                  the second half of the MR
 *   poll MS [N]    poll the CQ for MS ms: "wc status=NAME opcode=NAME wr_id=N len=N";
 *                  with N, stop once N completions of send work requests (not of
 *                  posted receives) have come in this poll
 *   dereg          deregister the MR (the memory stays mapped): "dereg_ms=N"
 *   destroy_qp     "destroy_qp_ms=N"
 *   check          "mr_changed=N guard_changed=N mr_pattern_bytes=N
 *                   mr_first_changed=OFF mr_last_changed=OFF" (-1: none)
 *   state          "qp_state=NAME"
 *   exit
 *
 * The MR starts out as MR_BYTE(i), the guards as GUARD_BYTE(i); neither ever
 * equals PAYLOAD_BYTE (0xa5), which is what sroce-pktgen's transport modes
 * write, so "mr_pattern_bytes" counts the bytes an attacker placed.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <infiniband/verbs.h>

#include "verbs_harness.h"

namespace {

using sroce_tool::Clock;
using sroce_tool::ms_since;

constexpr uint8_t PAYLOAD_BYTE = 0xa5;
constexpr size_t GUARD = 16384;
constexpr size_t SEND_LEN = 64;
constexpr size_t RECV_LEN = 4096;
constexpr int RECVS = 16;
/* Receives carry wr_ids from here up; send work requests count up from 1. */
constexpr uint64_t RECV_WR_ID = 1000000;

uint8_t mr_byte(size_t i) { return static_cast<uint8_t>(0x10 + i % 0x80); }
uint8_t guard_byte(size_t i) { return static_cast<uint8_t>(0xc0 + i % 16); }

struct Options {
	std::string dev;
	bool uc = false;
	std::string remote_ip;
	uint32_t remote_qpn = 0;
	int gid = -1;
	size_t mr_size = 65536;
	uint32_t psn = 0x100;
	uint8_t timeout = 18;
	uint8_t retry = 7;
	int recvs = RECVS;	/* receive WQEs posted at the start */
	uint64_t remote_va = 0;
	uint32_t remote_rkey = 0;
	std::vector<std::string> cmds;
};

[[noreturn]] void fail(const char *what, int err = errno)
{
	std::fprintf(stderr, "sroce-victim: %s: %s\n", what, sroce_tool::errno_text(err).c_str());
	std::fflush(stdout);
	std::exit(1);
}

[[noreturn]] void usage(const char *msg)
{
	std::fprintf(stderr, "sroce-victim: %s\n"
		     "usage: sroce-victim -d DEV --type rc|uc --remote-ip IP --remote-qpn Q [--gid N]\n"
		     "                    [--mr-size BYTES] [--psn P] [--timeout T] [--retry N]\n"
		     "                    [--recvs N (0..16, default 16)]\n"
		     "                    [--remote-va V] [--remote-rkey K]\n"
		     "                    [--script FILE | --cmd 'CMD;CMD;...']\n", msg);
	std::exit(2);
}

uint64_t num(const std::string &s, uint64_t max)
{
	return sroce_tool::parse_num_or(s, max, usage);
}

std::string trim(const std::string &s)
{
	const size_t b = s.find_first_not_of(" \t\r\n");
	if (b == std::string::npos)
		return "";
	return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

void split_cmds(const std::string &text, char sep, std::vector<std::string> &out)
{
	size_t pos = 0;
	while (pos <= text.size()) {
		size_t e = text.find(sep, pos);
		if (e == std::string::npos)
			e = text.size();
		std::string c = trim(text.substr(pos, e - pos));
		if (!c.empty() && c[0] != '#')
			out.push_back(c);
		pos = e + 1;
	}
}

Options parse(int argc, char **argv)
{
	Options o;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc)
				usage("missing value");
			return argv[++i];
		};
		if (a == "-d") {
			o.dev = val();
		} else if (a == "--type") {
			const std::string t = val();
			if (t != "rc" && t != "uc")
				usage("--type is rc or uc");
			o.uc = t == "uc";
		} else if (a == "--remote-ip") {
			o.remote_ip = val();
		} else if (a == "--remote-qpn") {
			o.remote_qpn = static_cast<uint32_t>(num(val(), 0xffffff));
		} else if (a == "--gid") {
			o.gid = static_cast<int>(num(val(), 255));
		} else if (a == "--mr-size") {
			o.mr_size = num(val(), 1ull << 30);
		} else if (a == "--psn") {
			o.psn = static_cast<uint32_t>(num(val(), 0xffffff));
		} else if (a == "--timeout") {
			o.timeout = static_cast<uint8_t>(num(val(), 31));
		} else if (a == "--retry") {
			o.retry = static_cast<uint8_t>(num(val(), 7));
		} else if (a == "--recvs") {
			o.recvs = static_cast<int>(num(val(), RECVS));
		} else if (a == "--remote-va") {
			o.remote_va = num(val(), UINT64_MAX);
		} else if (a == "--remote-rkey") {
			o.remote_rkey = static_cast<uint32_t>(num(val(), UINT32_MAX));
		} else if (a == "--cmd") {
			split_cmds(val(), ';', o.cmds);
		} else if (a == "--script") {
			std::ifstream f(val());
			if (!f)
				usage("cannot read --script file");
			std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
			split_cmds(text, '\n', o.cmds);
		} else {
			usage(("unknown argument " + a).c_str());
		}
	}
	if (o.dev.empty() || o.remote_ip.empty() || !o.remote_qpn)
		usage("-d, --remote-ip and --remote-qpn are required");
	if (o.mr_size < 128 || o.mr_size % 64)
		usage("--mr-size must be a multiple of 64, at least 128");
	return o;
}

/* The remote GID: IPv4-mapped for an IPv4 address, the address itself for IPv6. */
ibv_gid remote_gid(const std::string &ip, bool *v4)
{
	ibv_gid g = {};
	in_addr a4;
	*v4 = inet_pton(AF_INET, ip.c_str(), &a4) == 1;
	if (*v4) {
		g.raw[10] = g.raw[11] = 0xff;
		std::memcpy(&g.raw[12], &a4, 4);
	} else if (inet_pton(AF_INET6, ip.c_str(), g.raw) != 1) {
		usage("bad --remote-ip");
	}
	return g;
}

const char *status_name(ibv_wc_status s)
{
	static const char *const names[] = {
		"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR",
		"IBV_WC_LOC_EEC_OP_ERR", "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR",
		"IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR", "IBV_WC_LOC_ACCESS_ERR",
		"IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
		"IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
		"IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR",
		"IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR",
		"IBV_WC_GENERAL_ERR", "IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE",
	};
	const unsigned int i = static_cast<unsigned int>(s);
	return i < sizeof(names) / sizeof(names[0]) ? names[i] : "IBV_WC_UNKNOWN";
}

const char *opcode_name(ibv_wc_opcode op)
{
	const char *name = sroce_tool::wc_opcode_name(op);
	return name ? name : "OTHER";
}

const char *state_name(ibv_qp_state s)
{
	const char *name = sroce_tool::qp_state_name(s);
	return name ? name : "UNKNOWN";
}

class Victim {
public:
	explicit Victim(const Options &o) : o_(o) {}
	void setup();
	int run();
	void teardown();

private:
	void connect(const ibv_gid &dgid, int sgid);
	int pick_gid(bool v4) const;
	void post_recvs();
	bool exec(const std::string &cmd, const std::string &arg);
	void check() const;

	const Options &o_;
	ibv_context *ctx_ = nullptr;
	ibv_pd *pd_ = nullptr;
	ibv_cq *cq_ = nullptr;
	ibv_qp *qp_ = nullptr;
	ibv_mr *mr_ = nullptr;		/* the target, in the middle of map_ */
	ibv_mr *local_mr_ = nullptr;	/* send and receive buffers */
	sroce_tool::Mapping map_;	/* guard, MR, guard */
	std::vector<uint8_t> local_;
	uint64_t next_wr_ = 1;
};

void Victim::setup()
{
	bool not_found;
	ctx_ = sroce_tool::open_device(o_.dev.c_str(), &not_found);
	if (not_found)
		std::exit(1);
	if (!ctx_)
		fail("ibv_open_device");
	pd_ = ibv_alloc_pd(ctx_);
	if (!pd_)
		fail("ibv_alloc_pd");
	cq_ = ibv_create_cq(ctx_, 256, nullptr, nullptr, 0);
	if (!cq_)
		fail("ibv_create_cq");

	map_ = sroce_tool::Mapping(GUARD + o_.mr_size + GUARD);
	if (!map_)
		fail("mmap");
	for (size_t i = 0; i < GUARD; i++) {
		map_.p()[i] = guard_byte(i);
		map_.p()[GUARD + o_.mr_size + i] = guard_byte(i);
	}
	for (size_t i = 0; i < o_.mr_size; i++)
		map_.p()[GUARD + i] = mr_byte(i);
	mr_ = ibv_reg_mr(pd_, map_.p(GUARD), o_.mr_size,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr_)
		fail("ibv_reg_mr");
	local_.assign(SEND_LEN + RECVS * RECV_LEN, 0x33);
	local_mr_ = ibv_reg_mr(pd_, local_.data(), local_.size(), IBV_ACCESS_LOCAL_WRITE);
	if (!local_mr_)
		fail("ibv_reg_mr (local)");

	sroce_tool::QpCaps caps;
	caps.type = o_.uc ? IBV_QPT_UC : IBV_QPT_RC;
	caps.send_wr = 64;
	caps.recv_wr = RECVS;
	caps.send_sge = caps.recv_sge = 1;
	ibv_qp_init_attr ia = sroce_tool::qp_init_attr(cq_, cq_, caps);
	qp_ = ibv_create_qp(pd_, &ia);
	if (!qp_)
		fail("ibv_create_qp");

	bool v4;
	const ibv_gid dgid = remote_gid(o_.remote_ip, &v4);
	const int sgid = o_.gid >= 0 ? o_.gid : pick_gid(v4);
	connect(dgid, sgid);
	post_recvs();
	std::printf("{\"qpn\": %u, \"rq_psn\": %u, \"sq_psn\": %u, \"rkey\": %u, \"va\": %" PRIu64
		    ", \"len\": %zu, \"gid_index\": %d}\n", qp_->qp_num, o_.psn, o_.psn, mr_->rkey,
		    reinterpret_cast<uint64_t>(map_.p(GUARD)), o_.mr_size, sgid);
	std::fflush(stdout);
}

/* The first RoCE v2 GID of the remote address's family. */
int Victim::pick_gid(bool v4) const
{
	const int i = sroce_tool::find_roce_v2_gid(ctx_, 1, !v4);
	if (i < 0)
		usage("no RoCE v2 GID of the remote address's family: give --gid");
	return i;
}

void Victim::connect(const ibv_gid &dgid, int sgid)
{
	sroce_tool::Path p;
	p.type = o_.uc ? IBV_QPT_UC : IBV_QPT_RC;
	p.access = o_.uc ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	p.sgid_index = sgid;
	p.dgid = dgid;
	p.dest_qpn = o_.remote_qpn;
	p.rq_psn = p.sq_psn = o_.psn;
	p.max_dest_rd_atomic = p.max_rd_atomic = 4;
	p.timeout = o_.timeout;
	p.retry_cnt = o_.retry;
	const char *step = "";
	if (const int err = sroce_tool::connect_qp(qp_, p, &step))
		fail(("modify to " + std::string(step)).c_str(), err);
}

void Victim::post_recvs()
{
	for (int i = 0; i < o_.recvs; i++) {
		ibv_sge sge = {};
		sge.addr = reinterpret_cast<uint64_t>(local_.data() + SEND_LEN + i * RECV_LEN);
		sge.length = RECV_LEN;
		sge.lkey = local_mr_->lkey;
		ibv_recv_wr wr = {};
		ibv_recv_wr *bad = nullptr;
		wr.wr_id = RECV_WR_ID + static_cast<uint64_t>(i);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(qp_, &wr, &bad))
			fail("ibv_post_recv", errno);
	}
}

void Victim::check() const
{
	size_t mr_changed = 0, guard_changed = 0, pattern = 0;
	long first = -1, last = -1;
	for (size_t i = 0; i < GUARD; i++) {
		guard_changed += map_.p()[i] != guard_byte(i);
		guard_changed += map_.p()[GUARD + o_.mr_size + i] != guard_byte(i);
	}
	for (size_t i = 0; i < o_.mr_size; i++) {
		const uint8_t b = map_.p()[GUARD + i];
		if (b == mr_byte(i))
			continue;
		mr_changed++;
		pattern += b == PAYLOAD_BYTE;
		if (first < 0)
			first = static_cast<long>(i);
		last = static_cast<long>(i);
	}
	std::printf("mr_changed=%zu guard_changed=%zu mr_pattern_bytes=%zu mr_first_changed=%ld "
		    "mr_last_changed=%ld\n", mr_changed, guard_changed, pattern, first, last);
}

/* Runs one command; false ends the run. */
bool Victim::exec(const std::string &cmd, const std::string &arg)
{
	if (cmd == "exit")
		return false;
	if (cmd == "wait") {
		const auto t0 = Clock::now();
		while (access(arg.c_str(), F_OK) != 0) {
			if (ms_since(t0) > 120000) {
				std::printf("wait_timeout %s\n", arg.c_str());
				std::fflush(stdout);
				teardown();
				std::exit(3);
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
	} else if (cmd == "touch") {
		const int fd = open(arg.c_str(), O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			fail(arg.c_str());
		close(fd);
	} else if (cmd == "sleep") {
		std::this_thread::sleep_for(std::chrono::milliseconds(num(arg, 600000)));
	} else if (cmd == "send" || cmd == "read") {
		const bool read = cmd == "read";
		const uint64_t n = num(arg, read ? o_.mr_size / 2 : 64);
		if (!qp_ || (read && !mr_)) {
			std::printf("%s_skipped\n", cmd.c_str());
			return true;
		}
		for (uint64_t k = 0; k < (read ? 1 : n); k++) {
			ibv_sge sge = {};
			ibv_send_wr wr = {};
			ibv_send_wr *bad = nullptr;
			if (read) {
				sge.addr = reinterpret_cast<uint64_t>(map_.p(GUARD) + o_.mr_size / 2);
				sge.length = static_cast<uint32_t>(n);
				sge.lkey = mr_->lkey;
				wr.opcode = IBV_WR_RDMA_READ;
				wr.wr.rdma.remote_addr = o_.remote_va;
				wr.wr.rdma.rkey = o_.remote_rkey;
			} else {
				sge.addr = reinterpret_cast<uint64_t>(local_.data());
				sge.length = SEND_LEN;
				sge.lkey = local_mr_->lkey;
				wr.opcode = IBV_WR_SEND;
			}
			wr.wr_id = next_wr_++;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			const int err = ibv_post_send(qp_, &wr, &bad);
			if (err) {
				std::printf("post_%s_err=%d\n", cmd.c_str(), err);
				break;
			}
		}
		std::printf("posted %s %" PRIu64 "\n", cmd.c_str(), n);
	} else if (cmd == "poll") {
		const auto t0 = Clock::now();
		const size_t sp = arg.find(' ');
		const long limit = static_cast<long>(num(arg.substr(0, sp), 600000));
		const uint64_t want = sp == std::string::npos ? 0 : num(trim(arg.substr(sp)), 1u << 20);
		uint64_t sent_done = 0;
		do {
			ibv_wc wc[16];
			const int got = ibv_poll_cq(cq_, 16, wc);
			if (got < 0) {
				std::printf("poll_err=%d\n", got);
				break;
			}
			for (int k = 0; k < got; k++) {
				std::printf("wc status=%s opcode=%s wr_id=%" PRIu64 " len=%u\n",
					    status_name(wc[k].status), opcode_name(wc[k].opcode),
					    wc[k].wr_id, wc[k].byte_len);
				sent_done += wc[k].wr_id < RECV_WR_ID;
			}
			if (want && sent_done >= want)
				break;
			if (!got)
				std::this_thread::sleep_for(std::chrono::milliseconds(5));
		} while (ms_since(t0) < limit);
	} else if (cmd == "dereg") {
		if (!mr_) {
			std::printf("dereg_skipped\n");
			return true;
		}
		const auto t0 = Clock::now();
		const int err = ibv_dereg_mr(mr_);
		std::printf("dereg_ms=%ld dereg_rc=%d\n", ms_since(t0), err);
		mr_ = nullptr;
	} else if (cmd == "destroy_qp") {
		if (!qp_) {
			std::printf("destroy_qp_skipped\n");
			return true;
		}
		const auto t0 = Clock::now();
		const int err = ibv_destroy_qp(qp_);
		std::printf("destroy_qp_ms=%ld destroy_qp_rc=%d\n", ms_since(t0), err);
		qp_ = nullptr;
	} else if (cmd == "check") {
		check();
	} else if (cmd == "state") {
		ibv_qp_attr a = {};
		ibv_qp_init_attr ia = {};
		if (!qp_)
			std::printf("qp_state=NONE\n");
		else if (ibv_query_qp(qp_, &a, IBV_QP_STATE, &ia))
			std::printf("qp_state=QUERY_FAILED\n");
		else
			std::printf("qp_state=%s\n", state_name(a.qp_state));
	} else {
		std::fprintf(stderr, "sroce-victim: unknown command %s\n", cmd.c_str());
		teardown();
		std::exit(2);
	}
	return true;
}

int Victim::run()
{
	for (const std::string &line : o_.cmds) {
		const size_t sp = line.find(' ');
		const std::string cmd = line.substr(0, sp);
		const std::string arg = sp == std::string::npos ? "" : trim(line.substr(sp + 1));
		const bool more = exec(cmd, arg);
		std::fflush(stdout);
		if (!more)
			break;
	}
	return 0;
}

void Victim::teardown()
{
	if (qp_)
		ibv_destroy_qp(qp_);
	if (mr_)
		ibv_dereg_mr(mr_);
	if (local_mr_)
		ibv_dereg_mr(local_mr_);
	if (cq_)
		ibv_destroy_cq(cq_);
	if (pd_)
		ibv_dealloc_pd(pd_);
	if (ctx_)
		ibv_close_device(ctx_);
	map_ = sroce_tool::Mapping();
	qp_ = nullptr;
	mr_ = local_mr_ = nullptr;
	cq_ = nullptr;
	pd_ = nullptr;
	ctx_ = nullptr;
}

} // namespace

int main(int argc, char **argv)
{
	const Options o = parse(argc, argv);
	Victim v(o);
	v.setup();
	const int rc = v.run();
	v.teardown();
	std::printf("victim_done\n");
	return rc;
}
