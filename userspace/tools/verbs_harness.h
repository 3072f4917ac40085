// SPDX-License-Identifier: GPL-2.0
/*
 * The verbs harness of the test tools: what every tool that drives a device
 * through libibverbs needs, written once.
 *
 *   - opening a device by name, finding its RoCE v2 GID of a family;
 *   - RAII owners of contexts, PDs, CQs, QPs, SRQs, AHs, MRs, channels and
 *     anonymous mappings;
 *   - creating QPs from a few capabilities, and the RESET -> INIT -> RTR ->
 *     RTS walk from one description of the path (RC, UC, UD);
 *   - waiting with deadlines: completions, async events, completion events;
 *   - a line-oriented TCP channel between two hosts and the QP description
 *     they exchange over it;
 *   - deterministic buffer contents and their comparison.
 *
 * Policy stays with the tools: the harness returns errno values and empty
 * results, and only the RAII owners report on their own, through the
 * destroy-failure hook (set_destroy_report), since a destructor cannot
 * return anything.
 */
#ifndef SROCE_VERBS_HARNESS_H
#define SROCE_VERBS_HARNESS_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "tool_util.h"

namespace sroce_tool {

/* ------------------------------------------------------------ text */

std::string strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "SEND", "RDMA_READ", ...; nullptr for an opcode without a name here. */
const char *wc_opcode_name(int op);
/* "RESET" .. "ERR"; nullptr for anything else. */
const char *qp_state_name(int state);
/* The GID as an IPv6 address, "::ffff:10.0.0.1". */
std::string gid_str(const union ibv_gid &g);
bool gid_is_v4mapped(const union ibv_gid &g);

/* ------------------------------------------------------------ failures */

/*
 * A step that cannot go on. The harness's throwing helpers (LineChannel) use
 * it; tools may too. from_peer: the other host gave up, not this one.
 */
struct Failure : std::runtime_error {
	explicit Failure(const std::string &why, bool peer = false)
		: std::runtime_error(why), from_peer(peer) {}
	bool from_peer;
};

[[noreturn]] void fail(const std::string &why);

/*
 * Where the RAII owners report a destroy that failed ("ibv_destroy_qp:
 * errno=16 (EBUSY)"), and what they run before destroying a QP, SRQ, CQ or
 * completion channel: events left unacknowledged make a destroy wait
 * forever. The hook gets the channel of a CQ, or the channel itself (else
 * nullptr). Defaults: print to stderr; acknowledge the channel's events.
 */
void set_destroy_report(std::function<void(const std::string &)> report);
void set_before_destroy(std::function<void(struct ibv_comp_channel *)> hook);
/* Acknowledges every pending completion event of ch; how many there were. */
int ack_cq_events(struct ibv_comp_channel *ch);

/* ------------------------------------------------------------ time */

using Clock = std::chrono::steady_clock;

struct Deadline {
	explicit Deadline(int ms) : t(Clock::now() + std::chrono::milliseconds(ms)) {}
	bool passed() const { return Clock::now() >= t; }
	int left_ms() const;
	Clock::time_point t;
};

double seconds_since(Clock::time_point t0);
long ms_since(Clock::time_point t0);
void sleep_ms(int ms);

/* ------------------------------------------------------------ RAII */

namespace detail {
struct Destroy {
	void operator()(struct ibv_context *ctx) const;
	void operator()(struct ibv_pd *pd) const;
	void operator()(struct ibv_cq *cq) const;
	void operator()(struct ibv_qp *qp) const;
	void operator()(struct ibv_srq *srq) const;
	void operator()(struct ibv_ah *ah) const;
	void operator()(struct ibv_mr *mr) const;
	void operator()(struct ibv_comp_channel *ch) const;
};
} // namespace detail

using ContextPtr = std::unique_ptr<struct ibv_context, detail::Destroy>;
using PdPtr = std::unique_ptr<struct ibv_pd, detail::Destroy>;
using CqPtr = std::unique_ptr<struct ibv_cq, detail::Destroy>;
using QpPtr = std::unique_ptr<struct ibv_qp, detail::Destroy>;
using SrqPtr = std::unique_ptr<struct ibv_srq, detail::Destroy>;
using AhPtr = std::unique_ptr<struct ibv_ah, detail::Destroy>;
using MrPtr = std::unique_ptr<struct ibv_mr, detail::Destroy>;
using ChannelPtr = std::unique_ptr<struct ibv_comp_channel, detail::Destroy>;

/* An anonymous private read-write mapping, unmapped on scope exit. */
class Mapping {
public:
	Mapping() = default;
	explicit Mapping(size_t len);
	~Mapping();
	Mapping(Mapping &&o) noexcept;
	Mapping &operator=(Mapping &&o) noexcept;
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;

	/* false if mmap failed (errno says why) */
	explicit operator bool() const { return p_ != nullptr; }
	uint8_t *p(size_t off = 0) const { return p_ + off; }
	size_t len() const { return len_; }

private:
	uint8_t *p_ = nullptr;
	size_t len_ = 0;
};

/* ibv_reg_mr with errno cleared first (so a failure's errno is its own). */
struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access);

constexpr int ACCESS_ALL = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

/* ------------------------------------------------------------ device */

/* The device list of libibverbs, freed on scope exit. */
class DeviceList {
public:
	DeviceList();
	~DeviceList();
	DeviceList(const DeviceList &) = delete;
	DeviceList &operator=(const DeviceList &) = delete;

	/* The device called name, or nullptr after printing why to stderr. */
	struct ibv_device *find(const char *name) const;

private:
	int num_ = 0;
	struct ibv_device **list_;
	int err_;
};

/*
 * Opens the device called name. On failure nullptr, with *not_found set
 * when there is no such device (DeviceList printed why), else errno from
 * ibv_open_device.
 */
struct ibv_context *open_device(const char *name, bool *not_found);

/* O_NONBLOCK on the context's async fd or a channel's fd. */
void set_nonblocking(int fd);

/* The sysfs type of a GID ("RoCE v2", "IB/RoCE v1"), "" if unknown. */
std::string gid_type(struct ibv_context *ctx, uint8_t port, int index);

/*
 * The index of port's RoCE v2 GID holding an IPv4 address (::ffff:a.b.c.d)
 * or, with ipv6, a global IPv6 one; -1 if there is none. *gid gets it.
 */
int find_roce_v2_gid(struct ibv_context *ctx, uint8_t port, bool ipv6,
		     union ibv_gid *gid = nullptr);

/* An opened device, its PD, limits, port and the GID it is reached by. */
struct Device {
	struct ibv_context *ctx = nullptr;
	struct ibv_pd *pd = nullptr;
	struct ibv_device_attr attr = {};
	struct ibv_port_attr port_attr = {};
	uint8_t port = 1;
	int gid_index = -1;
	union ibv_gid gid = {};
	std::string name;

	size_t mtu_bytes() const { return size_t(128) << port_attr.active_mtu; }
};

/* ------------------------------------------------------------ QPs */

/* What a new QP asks for; recv_wr and recv_sge are 0 on an SRQ. */
struct QpCaps {
	enum ibv_qp_type type = IBV_QPT_RC;
	uint32_t send_wr = 128, recv_wr = 128, send_sge = 3, recv_sge = 3;
	uint32_t inline_data = 0;
	bool sig_all = false;
	struct ibv_srq *srq = nullptr;
};

struct ibv_qp_init_attr qp_init_attr(struct ibv_cq *scq, struct ibv_cq *rcq, const QpCaps &c);

/* The address vector to dgid through port's GID sgid_index, hop limit 64. */
struct ibv_ah_attr ah_attr_to(uint8_t port, int sgid_index, const union ibv_gid &dgid);

/*
 * Everything the RESET -> INIT -> RTR -> RTS walk of one QP needs. UD uses
 * port, qkey and sq_psn only; UC leaves the RC-only fields alone.
 */
struct Path {
	enum ibv_qp_type type = IBV_QPT_RC;
	uint8_t port = 1;
	int access = IBV_ACCESS_REMOTE_WRITE; /* INIT qp_access_flags (RC, UC) */
	uint32_t qkey = 0;		      /* UD */
	/* RTR */
	int sgid_index = 0;
	union ibv_gid dgid = {};
	uint32_t dest_qpn = 0, rq_psn = 0;
	enum ibv_mtu mtu = IBV_MTU_1024;
	uint8_t max_dest_rd_atomic = 1, min_rnr_timer = 12; /* RC */
	/* RTS */
	uint32_t sq_psn = 0;
	uint8_t timeout = 14, retry_cnt = 7, rnr_retry = 7, max_rd_atomic = 1; /* RC */
};

/* One transition along p: 0 or its errno (also in errno). */
int qp_to_init(struct ibv_qp *qp, const Path &p);
int qp_to_rtr(struct ibv_qp *qp, const Path &p);
int qp_to_rts(struct ibv_qp *qp, const Path &p);

/*
 * Takes qp from RESET to RTS along p. 0, or the errno of the transition
 * that failed (also in errno), which *step names ("INIT", "RTR", "RTS").
 */
int connect_qp(struct ibv_qp *qp, const Path &p, const char **step = nullptr);

/* The QP's current state, or -1 (errno set) if it cannot be queried. */
int qp_state(struct ibv_qp *qp);

/* ------------------------------------------------------------ waiting */

/*
 * Polls cq until n completions arrived or timeout_ms passed; out holds what
 * arrived. 0, ETIMEDOUT, or -(ibv_poll_cq's error).
 */
int poll_cq(struct ibv_cq *cq, int n, int timeout_ms, std::vector<struct ibv_wc> &out);

/* The next completion within timeout_ms; false if none came. */
bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);

/* The next async event of ctx (async fd non-blocking) within timeout_ms. */
bool get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev, int timeout_ms);

/*
 * The next completion event of ch (fd non-blocking) within timeout_ms:
 * 0, ETIMEDOUT or the error of ibv_get_cq_event.
 */
int get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx, int timeout_ms);

/* ------------------------------------------------------------ two hosts */

int tcp_listen(uint16_t port);
/* Retries until timeout_ms; -1 after printing why to stderr. */
int tcp_connect(const std::string &host, uint16_t port, int timeout_ms);
/* Waits for one connection on a listening socket, closes it: the peer's fd or -1. */
int tcp_accept_one(int lfd);

/* Line-oriented TCP channel with deadlines; Failure when it breaks. */
class LineChannel {
public:
	explicit LineChannel(int fd = -1) : fd_(fd) {}
	~LineChannel();
	LineChannel(const LineChannel &) = delete;
	LineChannel &operator=(const LineChannel &) = delete;
	void reset(int fd) { fd_ = fd; }

	void send(const std::string &line);
	std::string recv(int timeout_ms);

private:
	int fd_;
	std::string buf_;
};

/* What one end of a connection tells the other. */
struct QpInfo {
	union ibv_gid gid = {};
	uint32_t qpn = 0, psn = 0, mtu = 0, rkey = 0;
	uint64_t addr = 0;

	std::string str() const;
	static bool parse(const std::string &s, QpInfo *out);
};

/* ------------------------------------------------------------ data */

/* n deterministic pseudo-random bytes for a seed. */
std::vector<uint8_t> pattern(size_t n, uint64_t seed);

/* Where got differs from want (n bytes): count, first and last offset. */
struct Mismatch {
	size_t count = 0, first = 0, last = 0;
};
Mismatch compare(const uint8_t *got, const uint8_t *want, size_t n);

} // namespace sroce_tool

#endif /* SROCE_VERBS_HARNESS_H */
