// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-rdma-test's own layer over the verbs harness: how a case reports
 * (problems and notes, CaseFail), buffers that know what they should hold,
 * QP ends and pairs, posting and completion checks, and running a case
 * (verdict line, watchdog, budget). rdma_test_main.cpp describes the tool;
 * the cases are in rdma_test_loopback.cpp and rdma_test_twohost.cpp.
 */
#ifndef SROCE_RDMA_TEST_H
#define SROCE_RDMA_TEST_H

#include <cstdint>
#include <string>
#include <vector>

#include "verbs_harness.h"

namespace rdma_test {

using namespace sroce_tool;

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * 1024;
constexpr uint8_t SENTINEL = 0xa5;
constexpr uint32_t UD_QKEY = 0x11111111;
constexpr size_t GRH_LEN = 40;
constexpr uint16_t DEFAULT_TCP_PORT = 18524;

/* deadline of every wait (--timeout) and the run's budget (--budget) */
extern int g_timeout_ms;
extern int g_budget_s;

using Dev = Device;
/* the device under test, for acknowledging async events */
extern Dev *g_dev;

/* ------------------------------------------------------------ reporting */

/* A case cannot go on (setup failed, a wait timed out). */
using CaseFail = Failure;

/* Problems found by the running case (it fails if there is any) and notes. */
extern std::vector<std::string> g_problems;
extern std::vector<std::string> g_notes;

void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void note(const std::string &s);

#define EXPECT(cond, ...)                     \
	do {                                  \
		if (!(cond))                  \
			problem(__VA_ARGS__); \
	} while (0)

const char *wc_opcode_str(int op);

/* Acknowledges every pending async event, noting it. */
void drain_async();
/* Waits for an async event of type want (others are noted and acked). */
bool wait_async(enum ibv_event_type want, struct ibv_async_event *out, int timeout_ms);
/* The harness's destroy hooks: destroy failures become problems. */
void install_destroy_hooks();

/* ------------------------------------------------------------ buffers */

/*
 * A registered buffer with an image of what it should contain: reset() and
 * put() change both, want() only the image, check() compares the whole
 * buffer with the image (so stray writes anywhere are found).
 */
class Buf {
public:
	Buf(Dev &d, size_t len, const char *name, int access = ACCESS_ALL);
	~Buf();
	Buf(const Buf &) = delete;
	Buf &operator=(const Buf &) = delete;

	uint8_t *p(size_t off = 0) const { return map_.p(off); }
	uint64_t addr(size_t off = 0) const { return reinterpret_cast<uintptr_t>(p(off)); }
	uint32_t lkey() const { return mr_->lkey; }
	uint32_t rkey() const { return mr_->rkey; }
	size_t len() const { return len_; }

	struct ibv_sge sge(size_t off, size_t n) const;
	void reset(uint8_t v);
	void put(size_t off, const uint8_t *src, size_t n);
	void put(size_t off, const std::vector<uint8_t> &v) { put(off, v.data(), v.size()); }
	void want(size_t off, const uint8_t *src, size_t n);
	void want(size_t off, const std::vector<uint8_t> &v) { want(off, v.data(), v.size()); }
	void put_u64(size_t off, uint64_t v) { put(off, reinterpret_cast<uint8_t *>(&v), 8); }
	void want_u64(size_t off, uint64_t v) { want(off, reinterpret_cast<uint8_t *>(&v), 8); }
	/* Take the current bytes of a range as expected (checked elsewhere). */
	void accept(size_t off, size_t n);
	bool check(const std::string &what) const;

private:
	size_t len_;
	std::string name_;
	std::vector<uint8_t> want_;
	Mapping map_;
	struct ibv_mr *mr_ = nullptr;
};

/* A piece of a message in a buffer, for scatter/gather lists. */
struct Piece {
	Buf *b;
	size_t off, len;
};

std::vector<struct ibv_sge> sges(const std::vector<Piece> &ps);
size_t total(const std::vector<Piece> &ps);
/* Sender side: put msg into the pieces in order. */
void put_pieces(const std::vector<Piece> &ps, const std::vector<uint8_t> &msg);
/* Receiver side: the first msg.size() bytes land in the pieces in order. */
void want_pieces(const std::vector<Piece> &ps, const std::vector<uint8_t> &msg);

/* ------------------------------------------------------------ QPs */

struct EpOpts : QpCaps {
	struct ibv_cq *scq = nullptr, *rcq = nullptr; /* shared CQs */
	struct ibv_comp_channel *ch = nullptr;	       /* for own CQs */
	uint64_t send_ops = 0;	/* IBV_QP_EX_WITH_*: created with ibv_create_qp_ex */
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

/* What the other end needs to know to connect to an Ep. */
struct Remote {
	union ibv_gid gid = {};
	uint32_t qpn = 0, psn = 0;
	enum ibv_mtu mtu = IBV_MTU_1024;
};

struct ConnOpts {
	uint8_t timeout = 14, retry_cnt = 7, rnr_retry = 7, min_rnr_timer = 12;
};

/* Two QPs of a type connected to each other on one device. */
struct Pair {
	Ep a, b;
};

ChannelPtr make_channel(Dev &d);
CqPtr make_cq(Dev &d, int cqe = 512, struct ibv_comp_channel *ch = nullptr);
AhPtr make_ah(Dev &d, const union ibv_gid &dgid);
Ep make_ep(Dev &d, const EpOpts &o);
Remote remote_of(const Dev &d, const Ep &e);
/* RESET -> INIT -> RTR -> RTS, connected to r (UD: r is not used). */
void connect(Dev &d, Ep &e, const Remote &r, const ConnOpts &c = {});
Pair make_pair(Dev &d, EpOpts oa = {}, EpOpts ob = {}, ConnOpts ca = {}, ConnOpts cb = {});
Pair rc_pair(Dev &d);
Pair typed_pair(Dev &d, enum ibv_qp_type t);
enum ibv_qp_state qp_state(Ep &e);
void need_atomics(Dev &d);
void need_sges(Dev &d, int n);

/* ------------------------------------------------------------ posting */

struct ibv_send_wr send_wr(uint64_t id, enum ibv_wr_opcode op, struct ibv_sge *sg, int n,
			   unsigned flags = IBV_SEND_SIGNALED);
/* Aims an RDMA or atomic WR (its opcode set) at off in b or in the peer's buffer. */
void remote_at(struct ibv_send_wr &wr, const Buf &b, size_t off);
void remote_at(struct ibv_send_wr &wr, const QpInfo &peer, size_t off);
void post_send(Ep &e, struct ibv_send_wr *wr);
void post_recv(Ep &e, uint64_t id, struct ibv_sge *sg, int n);
void post_recv(Ep &e, uint64_t id, struct ibv_sge sg);
void post_srq_recv(struct ibv_srq *srq, uint64_t id, struct ibv_sge sg);
/* An SRQ of max_wr single-SGE receives on the device's PD. */
SrqPtr make_srq(Dev &d, uint32_t max_wr);

/* ------------------------------------------------------------ completions */

std::string wc_str(const struct ibv_wc &wc);
/* Polls until n completions arrived; fails the case at the deadline. */
std::vector<struct ibv_wc> wait_wc(struct ibv_cq *cq, int n, const char *what,
				   int timeout_ms = g_timeout_ms);
struct ibv_wc wait_one(struct ibv_cq *cq, const char *what);
/* Checks a completion; opcode only for successful ones (else undefined). */
bool check_wc(const struct ibv_wc &wc, const std::string &what, uint64_t wr_id,
	      enum ibv_wc_status st, int opcode = -1);
/* Checks a receive completion fully. imm: -1 none, else the expected value. */
void check_recv(const struct ibv_wc &wc, const std::string &what, uint64_t wr_id, int opcode,
		uint32_t byte_len, uint32_t qpn, int64_t imm = -1);
/* The CQ must have nothing more (completions of one queue come in order, so
 * this is checked right after the last expected one). */
void expect_no_wc(struct ibv_cq *cq, const std::string &what);
/* No completion within ms milliseconds. */
void expect_quiet(struct ibv_cq *cq, int ms, const std::string &what);
/* Waits for a completion event on a channel. */
struct ibv_cq *wait_cq_event(struct ibv_comp_channel *ch, const char *what, void **ctx_out);
/* The GRH slot of a UD receive holds the IP header from sgid to dgid. */
void check_grh(const uint8_t *grh, const union ibv_gid &sgid, const union ibv_gid &dgid,
	       const std::string &what);

/* ------------------------------------------------------------ running */

struct Tally {
	int passed = 0, failed = 0;
};

/* With --budget, true (after reporting the case as failed) once it is spent. */
bool over_budget(const char *name, Tally &t);
/* Clears the case's problems and arms the watchdog. */
void begin_case(const char *name);
/* Prints the notes, problems and verdict line of a case. */
void end_case(const char *name, Clock::time_point t0, Tally &t);
/* SIGALRM: a hung case ends the process (exit status 3). */
void watchdog(int);

/* ------------------------------------------------------------ the cases */

struct LoopCase {
	const char *name;
	void (*fn)(Dev &);
};
extern const std::vector<LoopCase> LOOP_CASES;

struct Peer;
struct HostCase {
	const char *name;
	void (*fn)(Peer &);
};
extern const std::vector<HostCase> HOST_CASES;

/* Two hosts: 0, or 2 when the control connection could not be set up. */
int run_server(Dev &d, uint16_t port, Tally &t);
int run_client(Dev &d, const std::string &host, uint16_t port,
	       const std::vector<const HostCase *> &cases, Tally &t);

} // namespace rdma_test

#endif /* SROCE_RDMA_TEST_H */
