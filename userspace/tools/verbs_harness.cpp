// SPDX-License-Identifier: GPL-2.0
/*
 * The verbs harness of the test tools (verbs_harness.h says what is here).
 */
#include "verbs_harness.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstring>
#include <fstream>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sroce_tool {

/* ------------------------------------------------------------ text */

std::string strf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

const char *wc_opcode_name(int op)
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
	default: return nullptr;
	}
}

const char *qp_state_name(int state)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
	return state >= 0 && state < 7 ? names[state] : nullptr;
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

/* ------------------------------------------------------------ failures */

void fail(const std::string &why)
{
	throw Failure(why);
}

namespace {

std::function<void(const std::string &)> g_destroy_report = [](const std::string &s) {
	std::fprintf(stderr, "%s\n", s.c_str());
};
std::function<void(struct ibv_comp_channel *)> g_before_destroy =
	[](struct ibv_comp_channel *ch) {
		if (ch)
			ack_cq_events(ch);
	};

void destroyed(int rc, const char *what)
{
	if (rc)
		g_destroy_report(std::string(what) + ": " + errno_text(errno ? errno : rc));
}

void before_destroy(struct ibv_comp_channel *ch)
{
	if (g_before_destroy)
		g_before_destroy(ch);
}

} // namespace

void set_destroy_report(std::function<void(const std::string &)> report)
{
	g_destroy_report = std::move(report);
}

void set_before_destroy(std::function<void(struct ibv_comp_channel *)> hook)
{
	g_before_destroy = std::move(hook);
}

int ack_cq_events(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *ctx;
	int n = 0;
	while (ibv_get_cq_event(ch, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		n++;
	}
	return n;
}

/* ------------------------------------------------------------ time */

int Deadline::left_ms() const
{
	const auto left =
		std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
	return left < 0 ? 0 : static_cast<int>(left);
}

double seconds_since(Clock::time_point t0)
{
	return std::chrono::duration<double>(Clock::now() - t0).count();
}

long ms_since(Clock::time_point t0)
{
	return static_cast<long>(
		std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

void sleep_ms(int ms)
{
	usleep(static_cast<useconds_t>(ms) * 1000);
}

/* ------------------------------------------------------------ RAII */

namespace detail {

void Destroy::operator()(struct ibv_context *ctx) const
{
	errno = 0;
	destroyed(ibv_close_device(ctx), "ibv_close_device");
}

void Destroy::operator()(struct ibv_pd *pd) const
{
	errno = 0;
	destroyed(ibv_dealloc_pd(pd), "ibv_dealloc_pd");
}

void Destroy::operator()(struct ibv_cq *cq) const
{
	before_destroy(cq->channel);
	errno = 0;
	destroyed(ibv_destroy_cq(cq), "ibv_destroy_cq");
}

void Destroy::operator()(struct ibv_qp *qp) const
{
	before_destroy(nullptr);
	errno = 0;
	destroyed(ibv_destroy_qp(qp), "ibv_destroy_qp");
}

void Destroy::operator()(struct ibv_srq *srq) const
{
	before_destroy(nullptr);
	errno = 0;
	destroyed(ibv_destroy_srq(srq), "ibv_destroy_srq");
}

void Destroy::operator()(struct ibv_ah *ah) const
{
	errno = 0;
	destroyed(ibv_destroy_ah(ah), "ibv_destroy_ah");
}

void Destroy::operator()(struct ibv_mr *mr) const
{
	errno = 0;
	destroyed(ibv_dereg_mr(mr), "ibv_dereg_mr");
}

void Destroy::operator()(struct ibv_comp_channel *ch) const
{
	before_destroy(ch);
	errno = 0;
	destroyed(ibv_destroy_comp_channel(ch), "ibv_destroy_comp_channel");
}

} // namespace detail

Mapping::Mapping(size_t len)
{
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) {
		p_ = static_cast<uint8_t *>(p);
		len_ = len;
	}
}

Mapping::~Mapping()
{
	if (p_)
		munmap(p_, len_);
}

Mapping::Mapping(Mapping &&o) noexcept : p_(o.p_), len_(o.len_)
{
	o.p_ = nullptr;
	o.len_ = 0;
}

Mapping &Mapping::operator=(Mapping &&o) noexcept
{
	if (this != &o) {
		if (p_)
			munmap(p_, len_);
		p_ = o.p_;
		len_ = o.len_;
		o.p_ = nullptr;
		o.len_ = 0;
	}
	return *this;
}

struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	errno = 0;
	return ibv_reg_mr(pd, addr, len, access);
}

/* ------------------------------------------------------------ device */

DeviceList::DeviceList() : list_(ibv_get_device_list(&num_)), err_(list_ ? 0 : errno) {}

DeviceList::~DeviceList()
{
	if (list_)
		ibv_free_device_list(list_);
}

struct ibv_device *DeviceList::find(const char *name) const
{
	if (!list_) {
		std::fprintf(stderr, "ERROR ibv_get_device_list: %s\n", errno_text(err_).c_str());
		return nullptr;
	}
	for (int i = 0; i < num_; i++)
		if (std::strcmp(ibv_get_device_name(list_[i]), name) == 0)
			return list_[i];
	std::fprintf(stderr, "ERROR device %s not found\n", name);
	return nullptr;
}

struct ibv_context *open_device(const char *name, bool *not_found)
{
	const DeviceList devices;
	struct ibv_device *dev = devices.find(name);
	*not_found = !dev;
	if (!dev)
		return nullptr;
	errno = 0;
	return ibv_open_device(dev);
}

void set_nonblocking(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

std::string gid_type(struct ibv_context *ctx, uint8_t port, int index)
{
	std::ifstream f(strf("%s/ports/%u/gid_attrs/types/%d", ctx->device->ibdev_path, port,
			     index));
	std::string t;
	std::getline(f, t);
	return t;
}

int find_roce_v2_gid(struct ibv_context *ctx, uint8_t port, bool ipv6, union ibv_gid *gid)
{
	struct ibv_port_attr pa = {};
	if (ibv_query_port(ctx, port, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;
		if (ibv_query_gid(ctx, port, i, &g) || gid_type(ctx, port, i) != "RoCE v2")
			continue;
		const bool v4 = gid_is_v4mapped(g);
		const bool link_local = g.raw[0] == 0xfe && (g.raw[1] & 0xc0) == 0x80;
		const bool zero = std::all_of(g.raw, g.raw + 16, [](uint8_t b) { return b == 0; });
		if (zero || (v4 && !(g.raw[12] | g.raw[13] | g.raw[14] | g.raw[15])))
			continue;
		if (ipv6 ? (!v4 && !link_local) : v4) {
			if (gid)
				*gid = g;
			return i;
		}
	}
	return -1;
}

/* ------------------------------------------------------------ QPs */

struct ibv_qp_init_attr qp_init_attr(struct ibv_cq *scq, struct ibv_cq *rcq, const QpCaps &c)
{
	struct ibv_qp_init_attr ia = {};
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.srq = c.srq;
	ia.qp_type = c.type;
	ia.sq_sig_all = c.sig_all;
	ia.cap.max_send_wr = c.send_wr;
	ia.cap.max_recv_wr = c.srq ? 0 : c.recv_wr;
	ia.cap.max_send_sge = c.send_sge;
	ia.cap.max_recv_sge = c.srq ? 0 : c.recv_sge;
	ia.cap.max_inline_data = c.inline_data;
	return ia;
}

struct ibv_ah_attr ah_attr_to(uint8_t port, int sgid_index, const union ibv_gid &dgid)
{
	struct ibv_ah_attr a = {};
	a.is_global = 1;
	a.grh.dgid = dgid;
	a.grh.sgid_index = static_cast<uint8_t>(sgid_index);
	a.grh.hop_limit = 64;
	a.port_num = port;
	return a;
}

namespace {

int modify(struct ibv_qp *qp, struct ibv_qp_attr &a, int mask)
{
	const int rc = std::abs(ibv_modify_qp(qp, &a, mask));
	if (rc)
		errno = rc;
	return rc;
}

} // namespace

int qp_to_init(struct ibv_qp *qp, const Path &p)
{
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = p.port;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (p.type == IBV_QPT_UD) {
		a.qkey = p.qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = static_cast<unsigned int>(p.access);
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return modify(qp, a, mask);
}

int qp_to_rtr(struct ibv_qp *qp, const Path &p)
{
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_RTR;
	int mask = IBV_QP_STATE;
	if (p.type != IBV_QPT_UD) {
		a.path_mtu = p.mtu;
		a.dest_qp_num = p.dest_qpn;
		a.rq_psn = p.rq_psn;
		a.ah_attr = ah_attr_to(p.port, p.sgid_index, p.dgid);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	}
	/* an XRC initiator has no responder: ib_core refuses these for it */
	if (p.type == IBV_QPT_RC || p.type == IBV_QPT_XRC_RECV) {
		a.max_dest_rd_atomic = p.max_dest_rd_atomic;
		a.min_rnr_timer = p.min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	return modify(qp, a, mask);
}

int qp_to_rts(struct ibv_qp *qp, const Path &p)
{
	struct ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = p.sq_psn;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (p.type == IBV_QPT_RC || p.type == IBV_QPT_XRC_SEND) {
		a.timeout = p.timeout;
		a.retry_cnt = p.retry_cnt;
		a.rnr_retry = p.rnr_retry;
		a.max_rd_atomic = p.max_rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	} else if (p.type == IBV_QPT_XRC_RECV) {
		/* a target sends no requests: no retries to set */
		a.timeout = p.timeout;
		mask |= IBV_QP_TIMEOUT;
	}
	return modify(qp, a, mask);
}

int connect_qp(struct ibv_qp *qp, const Path &p, const char **step)
{
	const char *name = "INIT";
	int err = qp_to_init(qp, p);
	if (!err) {
		name = "RTR";
		err = qp_to_rtr(qp, p);
	}
	if (!err) {
		name = "RTS";
		err = qp_to_rts(qp, p);
	}
	if (err && step)
		*step = name;
	return err;
}

int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {};
	struct ibv_qp_init_attr ia = {};
	if (const int rc = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia)) {
		errno = std::abs(rc);
		return -1;
	}
	return a.qp_state;
}

/* ------------------------------------------------------------ waiting */

int poll_cq(struct ibv_cq *cq, int n, int timeout_ms, std::vector<struct ibv_wc> &out)
{
	out.clear();
	const Deadline dl(timeout_ms);
	int idle = 0;
	while (static_cast<int>(out.size()) < n) {
		struct ibv_wc wc[16];
		const int k = ibv_poll_cq(cq, std::min(16, n - static_cast<int>(out.size())), wc);
		if (k < 0)
			return k;
		if (k > 0) {
			out.insert(out.end(), wc, wc + k);
			idle = 0;
			continue;
		}
		if (dl.passed())
			return ETIMEDOUT;
		/* a completion is usually microseconds away: yield before sleeping */
		if (++idle < 200)
			sched_yield();
		else
			usleep(200);
	}
	return 0;
}

bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	std::vector<struct ibv_wc> got;
	if (poll_cq(cq, 1, timeout_ms, got))
		return false;
	*wc = got[0];
	return true;
}

bool get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev, int timeout_ms)
{
	const Deadline dl(timeout_ms);
	for (;;) {
		if (ibv_get_async_event(ctx, ev) == 0)
			return true;
		if (dl.passed())
			return false;
		struct pollfd pfd = {ctx->async_fd, POLLIN, 0};
		poll(&pfd, 1, std::min(dl.left_ms(), 100));
	}
}

int get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx, int timeout_ms)
{
	const Deadline dl(timeout_ms);
	for (;;) {
		if (ibv_get_cq_event(ch, cq, ctx) == 0)
			return 0;
		if (errno != EAGAIN)
			return errno;
		if (dl.passed())
			return ETIMEDOUT;
		struct pollfd pfd = {ch->fd, POLLIN, 0};
		poll(&pfd, 1, std::min(dl.left_ms(), 100));
	}
}

/* ------------------------------------------------------------ two hosts */

namespace {

int listen_on(int family, uint16_t port)
{
	const int fd = socket(family, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_storage ss = {};
	socklen_t len;
	if (family == AF_INET6) {
		/* both families on one socket */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		auto *a = reinterpret_cast<struct sockaddr_in6 *>(&ss);
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_any;
		a->sin6_port = htons(port);
		len = sizeof(*a);
	} else {
		auto *a = reinterpret_cast<struct sockaddr_in *>(&ss);
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_ANY);
		a->sin_port = htons(port);
		len = sizeof(*a);
	}
	if (bind(fd, reinterpret_cast<struct sockaddr *>(&ss), len) == 0 && listen(fd, 1) == 0)
		return fd;
	close(fd);
	return -1;
}

void no_delay(int fd)
{
	const int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

} // namespace

int tcp_listen(uint16_t port)
{
	const int fd = listen_on(AF_INET6, port);
	return fd >= 0 ? fd : listen_on(AF_INET, port);
}

int tcp_accept_one(int lfd)
{
	const int fd = accept(lfd, nullptr, nullptr);
	const int err = errno;
	close(lfd);
	if (fd >= 0)
		no_delay(fd);
	errno = err;
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
				no_delay(fd);
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

LineChannel::~LineChannel()
{
	if (fd_ >= 0)
		close(fd_);
}

void LineChannel::send(const std::string &line)
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

std::string LineChannel::recv(int timeout_ms)
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

std::string QpInfo::str() const
{
	std::string g;
	for (uint8_t b : gid.raw)
		g += strf("%02x", b);
	return strf("info gid=%s qpn=%u psn=%u mtu=%u addr=%" PRIu64 " rkey=%u", g.c_str(), qpn,
		    psn, mtu, addr, rkey);
}

bool QpInfo::parse(const std::string &s, QpInfo *out)
{
	char g[40] = {};
	unsigned qpn, psn, mtu, rkey;
	unsigned long long addr;
	if (std::sscanf(s.c_str(), "info gid=%32s qpn=%u psn=%u mtu=%u addr=%llu rkey=%u", g, &qpn,
			&psn, &mtu, &addr, &rkey) != 6 ||
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

/* ------------------------------------------------------------ data */

std::vector<uint8_t> pattern(size_t n, uint64_t seed)
{
	/* splitmix64 */
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

Mismatch compare(const uint8_t *got, const uint8_t *want, size_t n)
{
	Mismatch m;
	if (std::memcmp(got, want, n) == 0)
		return m;
	m.first = n;
	for (size_t i = 0; i < n; i++) {
		if (got[i] != want[i]) {
			m.first = std::min(m.first, i);
			m.last = i;
			m.count++;
		}
	}
	return m;
}

} // namespace sroce_tool
