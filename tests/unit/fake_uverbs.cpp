// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD stand-in for an sroce uverbs character device, so the provider
 * can be driven through the real libibverbs on a host without RDMA hardware
 * or the sroce module. Test use only.
 *
 *  - socket(AF_NETLINK, *, NETLINK_RDMA) fails, so libibverbs falls back to
 *    scanning sysfs, which SYSFS_PATH points at a fake tree;
 *  - stat()/open() of /dev/infiniband/uverbsN are redirected to /dev/null (a
 *    real character device whose dev_t the fake sysfs tree advertises);
 *  - ioctl() on it fails with ENOTTY by itself, so libibverbs uses the legacy
 *    write() commands, which are answered here the way sroce.ko answers them;
 *  - CQ, QP and SRQ rings live in memfds; mmap() of the command fd at an
 *    object's offset maps its memfd, so the fake sees what the provider
 *    writes. A POST_SEND doorbell runs a toy send engine: every WQE between
 *    the SQ consumer and producer completes at once (successfully if it is
 *    well formed) into the send CQ, and sq_idle stays 1.
 *  - XRC: domains; XRC SRQs (CREATE_XSRQ), numbered like basic ones;
 *    XRC_SEND QPs (no RQ), whose WQEs must name a live XRC SRQ (and every
 *    other QP's must name none); XRC_RECV QPs, created without driver data
 *    or rings, and opened (OPEN_QP) by number.
 *
 * Environment:
 *   SROCE_FAKE_UVERBS_LOG   append "cmd=<n> in=<bytes> out=<bytes>" per command
 *   SROCE_FAKE_UVERBS_GONE  once this file exists, every command fails with
 *                           EIO (a disassociated context)
 *   SROCE_FAKE_UVERBS_ABI   abi_version put in sroce_alloc_ucontext_resp
 *                           (default SROCE_UVERBS_ABI_VERSION)
 *   SROCE_FAKE_UVERBS_BUSY  if set, SQs report sq_idle 0 (the engine is
 *                           busy, so the provider must not ring)
 */
#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>

#include <rdma/sroce-abi.h>

namespace {

constexpr char kDevPrefix[] = "/dev/infiniband/uverbs";
constexpr int kMaxFd = 4096;
bool fake_fd[kMaxFd];

template <typename Fn>
Fn real(const char *name)
{
	return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

bool is_fake_path(const char *path)
{
	return path && std::strncmp(path, kDevPrefix, sizeof(kDevPrefix) - 1) == 0;
}

bool is_fake_fd(int fd)
{
	return fd >= 0 && fd < kMaxFd && fake_fd[fd];
}

void log_cmd(const ib_uverbs_cmd_hdr *h)
{
	const char *path = std::getenv("SROCE_FAKE_UVERBS_LOG");
	if (!path)
		return;
	if (FILE *f = std::fopen(path, "a")) {
		std::fprintf(f, "cmd=%u in=%u out=%u\n", h->command,
			     h->in_words * 4u, h->out_words * 4u);
		std::fclose(f);
	}
}

bool gone()
{
	const char *path = std::getenv("SROCE_FAKE_UVERBS_GONE");
	return path && access(path, F_OK) == 0;
}

template <typename T>
void put(void *resp, size_t resp_len, size_t offset, const T &value)
{
	if (offset + sizeof(T) <= resp_len)
		std::memcpy(static_cast<char *>(resp) + offset, &value, sizeof(T));
}

/* The request after the header, as the uapi struct (zero-padded if short). */
template <typename T>
T request(const void *buf, size_t len)
{
	T v = {};
	const size_t have = len - sizeof(ib_uverbs_cmd_hdr);
	std::memcpy(&v, static_cast<const char *>(buf) + sizeof(ib_uverbs_cmd_hdr),
		    have < sizeof(T) ? have : sizeof(T));
	return v;
}

/* ------------------------------------------------------------------------ */
/* Objects of the fake kernel. Handles are table index + 1.                  */

constexpr uint64_t kPage = 4096;
constexpr int kMaxObj = 64;

uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

uint64_t page_round(uint64_t v)
{
	return (v + kPage - 1) & ~(kPage - 1);
}

/* Shared memory handed out through mmap() at offset. */
struct Region {
	int memfd = -1;
	void *view = nullptr;		/* the fake kernel's own mapping */
	uint64_t size = 0;
	uint64_t offset = 0;
};

uint64_t next_offset = 16 * kPage;

bool region_alloc(Region &r, uint64_t size)
{
	r.size = page_round(size);
	r.memfd = memfd_create("sroce-fake-ring", MFD_CLOEXEC);
	if (r.memfd < 0 || ftruncate(r.memfd, static_cast<off_t>(r.size)) != 0)
		return false;
	r.view = mmap(nullptr, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, r.memfd, 0);
	if (r.view == MAP_FAILED)
		return false;
	r.offset = next_offset;
	next_offset += r.size + kPage;
	return true;
}

void region_free(Region &r)
{
	if (r.view && r.view != MAP_FAILED)
		munmap(r.view, r.size);
	if (r.memfd >= 0)
		close(r.memfd);
	r = Region{};
}

struct Cq {
	bool used = false;
	uint32_t entries = 0;
	Region ring;
};

/* ib_qp_type values of the XRC QPs */
constexpr uint32_t kQptXrcIni = 9, kQptXrcTgt = 10;

struct Qp {
	bool used = false;
	uint32_t qp_type = 0, qpn = 0, send_cq = 0, srq = 0;
	uint32_t xrcd = 0;		/* XRC_RECV: its domain */
	bool sig_all = false;
	uint8_t state = 0;
	ib_uverbs_create_qp_resp caps = {};
	uint32_t sq_entries = 0, sq_wqe = 0, rq_entries = 0, rq_wqe = 0;
	uint32_t sq_cons = 0;
	Region sq, rq;
};

struct Srq {
	bool used = false;
	uint32_t max_wr = 0, max_sge = 0, limit = 0;
	uint32_t srqn = 0, xrcd = 0;	/* xrcd: XRC SRQs only */
	Region ring;
};

struct Xrcd {
	bool used = false;
};

Cq cqs[kMaxObj];
Qp qps[kMaxObj];
Srq srqs[kMaxObj];
Xrcd xrcds[kMaxObj];
bool ahs[kMaxObj];

template <typename T>
int alloc_slot(T (&table)[kMaxObj])
{
	for (int i = 0; i < kMaxObj; i++)
		if (!table[i].used)
			return i;
	return -1;
}

template <typename T>
T *lookup(T (&table)[kMaxObj], uint32_t handle)
{
	if (handle < 1 || handle > kMaxObj || !table[handle - 1].used)
		return nullptr;
	return &table[handle - 1];
}

const Region *region_at(uint64_t offset)
{
	for (const Cq &c : cqs)
		if (c.used && c.ring.offset == offset)
			return &c.ring;
	for (const Qp &q : qps) {
		if (q.used && q.sq.size && q.sq.offset == offset)
			return &q.sq;
		if (q.used && q.rq.size && q.rq.offset == offset)
			return &q.rq;
	}
	for (const Srq &s : srqs)
		if (s.used && s.ring.offset == offset)
			return &s.ring;
	return nullptr;
}

void init_wq_hdr(Region &r, bool sq)
{
	auto *h = static_cast<sroce_wq_hdr *>(r.view);
	h->sq_idle = sq && !std::getenv("SROCE_FAKE_UVERBS_BUSY") ? 1 : 0;
}

/* Is srqn the number of a live XRC SRQ? */
bool xrc_srq_exists(uint32_t srqn)
{
	for (const Srq &s : srqs)
		if (s.used && s.xrcd && s.srqn == srqn)
			return true;
	return false;
}

/* Completes everything the provider published on qp's SQ into its send CQ. */
void run_send_engine(Qp &q)
{
	auto *h = static_cast<sroce_wq_hdr *>(q.sq.view);
	Cq *cq = lookup(cqs, q.send_cq);
	const uint32_t prod = __atomic_load_n(&h->producer, __ATOMIC_ACQUIRE);

	for (; q.sq_cons != prod; q.sq_cons++) {
		sroce_send_wqe w;
		std::memcpy(&w, static_cast<char *>(q.sq.view) + SROCE_WQ_SLOTS_OFF +
					size_t{q.sq_cons & (q.sq_entries - 1)} * q.sq_wqe,
			    sizeof(w));
		ib_uverbs_wc wc = {};
		wc.wr_id = w.wr_id;
		wc.qp_num = q.qpn;
		wc.status = 0;		/* IBV_WC_SUCCESS */
		switch (w.opcode) {
		case IB_UVERBS_WR_SEND:
		case IB_UVERBS_WR_SEND_WITH_IMM:
		case IB_UVERBS_WR_SEND_WITH_INV:
			wc.opcode = 0;		/* IBV_WC_SEND */
			break;
		case IB_UVERBS_WR_RDMA_WRITE:
		case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
			wc.opcode = 1;		/* IBV_WC_RDMA_WRITE */
			break;
		case IB_UVERBS_WR_RDMA_READ:
			wc.opcode = 2;		/* IBV_WC_RDMA_READ */
			break;
		case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
			wc.opcode = 3;
			break;
		case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
			wc.opcode = 4;
			break;
		default:
			wc.status = 10;		/* IBV_WC_LOC_QP_OP_ERR */
		}
		if (w.send_flags & 8u) {	/* IBV_SEND_INLINE */
			wc.byte_len = w.inline_len;
			if (w.num_sge || w.inline_len > q.caps.max_inline_data)
				wc.status = 1;	/* IBV_WC_LOC_LEN_ERR */
		} else if (w.num_sge > q.caps.max_send_sge) {
			wc.status = 1;
		} else {
			const char *sg = static_cast<char *>(q.sq.view) + SROCE_WQ_SLOTS_OFF +
					 size_t{q.sq_cons & (q.sq_entries - 1)} * q.sq_wqe +
					 sizeof(w);
			for (uint32_t i = 0; i < w.num_sge; i++) {
				sroce_sge s;
				std::memcpy(&s, sg + i * sizeof(s), sizeof(s));
				wc.byte_len += s.length;
			}
		}
		/* XRC_SEND: a live XRC SRQ at "the target"; others: none. */
		if (q.qp_type == kQptXrcIni ? !xrc_srq_exists(w.xrc_srqn) : w.xrc_srqn != 0)
			wc.status = 9;		/* IBV_WC_REM_INV_REQ_ERR */
		/* UD: the AH must be one of ours (ah_num = handle + 100). */
		if (q.qp_type == 4 /* IB_QPT_UD */) {
			const uint32_t ah = w.wr.ud.ah_num - 100;
			if (ah < 1 || ah > kMaxObj || !ahs[ah - 1])
				wc.status = 10;
		}
		const bool signaled = q.sig_all || (w.send_flags & 2u) || wc.status;
		if (!signaled || !cq)
			continue;
		auto *ch = static_cast<sroce_cq_ring_hdr *>(cq->ring.view);
		auto *ring = reinterpret_cast<ib_uverbs_wc *>(
			static_cast<char *>(cq->ring.view) + SROCE_CQ_RING_ENTRIES_OFF);
		const uint32_t cp = ch->producer;
		if (cp - __atomic_load_n(&ch->consumer, __ATOMIC_ACQUIRE) >= cq->entries)
			continue;	/* overrun: dropped */
		ring[cp & (cq->entries - 1)] = wc;
		__atomic_store_n(&ch->producer, cp + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&h->consumer, q.sq_cons, __ATOMIC_RELEASE);
}

/* Commands whose request starts with a handle, not a response pointer. */
int answer_no_response(const ib_uverbs_cmd_hdr *h, const void *buf, size_t len)
{
	switch (h->command) {
	case IB_USER_VERBS_CMD_DEALLOC_PD:
		return len == sizeof(*h) + sizeof(ib_uverbs_dealloc_pd) ? 0 : EINVAL;
	case IB_USER_VERBS_CMD_DEREG_MR:
		return len == sizeof(*h) + sizeof(ib_uverbs_dereg_mr) ? 0 : EINVAL;
	case IB_USER_VERBS_CMD_DEALLOC_MW:
		return len == sizeof(*h) + sizeof(ib_uverbs_dealloc_mw) ? 0 : EINVAL;
	case IB_USER_VERBS_CMD_DESTROY_AH: {
		if (len != sizeof(*h) + sizeof(ib_uverbs_destroy_ah))
			return EINVAL;
		const auto r = request<ib_uverbs_destroy_ah>(buf, len);
		if (r.ah_handle < 1 || r.ah_handle > kMaxObj || !ahs[r.ah_handle - 1])
			return EINVAL;
		ahs[r.ah_handle - 1] = false;
		return 0;
	}
	case IB_USER_VERBS_CMD_MODIFY_QP: {
		if (len != sizeof(*h) + sizeof(ib_uverbs_modify_qp))
			return EINVAL;
		const auto r = request<ib_uverbs_modify_qp>(buf, len);
		Qp *q = lookup(qps, r.qp_handle);
		if (!q)
			return EINVAL;
		if (r.attr_mask & 1u)	/* IB_QP_STATE */
			q->state = r.qp_state;
		return 0;
	}
	case IB_USER_VERBS_CMD_CLOSE_XRCD: {
		if (len != sizeof(*h) + sizeof(ib_uverbs_close_xrcd))
			return EINVAL;
		const auto r = request<ib_uverbs_close_xrcd>(buf, len);
		if (!lookup(xrcds, r.xrcd_handle))
			return EINVAL;
		for (const Srq &q : srqs)
			if (q.used && q.xrcd == r.xrcd_handle)
				return EBUSY;
		for (const Qp &q : qps)
			if (q.used && q.xrcd == r.xrcd_handle)
				return EBUSY;
		xrcds[r.xrcd_handle - 1] = Xrcd{};
		return 0;
	}
	case IB_USER_VERBS_CMD_MODIFY_SRQ: {
		/* driver data: sroce_modify_srq_cmd, or none */
		if (len != sizeof(*h) + sizeof(ib_uverbs_modify_srq) &&
		    len != sizeof(*h) + sizeof(ib_uverbs_modify_srq) + sizeof(sroce_modify_srq_cmd))
			return EINVAL;
		const auto r = request<ib_uverbs_modify_srq>(buf, len);
		Srq *s = lookup(srqs, r.srq_handle);
		if (!s || (r.attr_mask & 1u))	/* IB_SRQ_MAX_WR: the fake does not resize */
			return EINVAL;
		if (r.attr_mask & 2u)		/* IB_SRQ_LIMIT */
			s->limit = r.srq_limit;
		return 0;
	}
	default:
		return -1;
	}
}

int answer_post_send(const void *buf, size_t len)
{
	if (len != sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_send))
		return EINVAL;
	const auto r = request<ib_uverbs_post_send>(buf, len);
	/* What sroce.ko insists on: a doorbell, nothing else (uverbs checks wqe_size). */
	if (r.wr_count || r.sge_count || r.wqe_size < sizeof(ib_uverbs_send_wr))
		return EINVAL;
	Qp *q = lookup(qps, r.qp_handle);
	if (!q)
		return EINVAL;
	run_send_engine(*q);
	ib_uverbs_post_send_resp resp = {};
	const auto *h = static_cast<const ib_uverbs_cmd_hdr *>(buf);
	put(reinterpret_cast<void *>(static_cast<uintptr_t>(r.response)),
	    h->out_words * 4u, 0, resp);
	return 0;
}

/*
 * XRC_RECV (XRC_TGT): owned by the kernel, in the XRC domain pd_handle
 * names; no CQs, no rings, and no driver data in the answer.
 */
int answer_create_xrc_tgt(const ib_uverbs_create_qp &r, void *resp, size_t out)
{
	const int i = alloc_slot(qps);
	if (i < 0)
		return ENOMEM;
	/* libibverbs sends no CQ; an SRQ is ignored, as by uverbs */
	if (!lookup(xrcds, r.pd_handle) || r.send_cq_handle || r.recv_cq_handle)
		return EINVAL;
	Qp &q = qps[i];
	q = Qp{};
	q.qp_type = r.qp_type;
	q.qpn = 0x100 + static_cast<uint32_t>(i);
	q.xrcd = r.pd_handle;
	q.used = true;
	q.caps.qp_handle = static_cast<uint32_t>(i) + 1;
	q.caps.qpn = q.qpn;
	put(resp, out, 0, q.caps);
	return 0;
}

int answer_create_qp(const void *buf, size_t len, void *resp, size_t out)
{
	const auto r = request<ib_uverbs_create_qp>(buf, len);
	if (r.qp_type == kQptXrcTgt)
		return answer_create_xrc_tgt(r, resp, out);
	const int i = alloc_slot(qps);
	if (i < 0)
		return ENOMEM;
	/* RC UC UD XRC_INI */
	if (r.qp_type != 2 && r.qp_type != 3 && r.qp_type != 4 && r.qp_type != kQptXrcIni)
		return EOPNOTSUPP;
	/* XRC_INI: no receive side, whatever the request says (as in uverbs) */
	const bool xrc = r.qp_type == kQptXrcIni;
	if (r.max_send_wr > 4096 || r.max_recv_wr > 4096 || r.max_send_sge > 32 ||
	    r.max_recv_sge > 32 || r.max_inline_data > SROCE_MAX_INLINE_DATA ||
	    !lookup(cqs, r.send_cq_handle) || (!xrc && !lookup(cqs, r.recv_cq_handle)) ||
	    (!xrc && r.is_srq && !lookup(srqs, r.srq_handle)))
		return EINVAL;
	Qp &q = qps[i];
	q = Qp{};
	q.qp_type = r.qp_type;
	q.qpn = 0x100 + static_cast<uint32_t>(i);
	q.send_cq = r.send_cq_handle;
	q.srq = !xrc && r.is_srq ? r.srq_handle : 0;
	q.sig_all = r.sq_sig_all;
	q.sq_entries = pow2_at_least(r.max_send_wr ? r.max_send_wr : 1);
	uint32_t need = 64 + std::max(16 * r.max_send_sge, r.max_inline_data);
	q.sq_wqe = pow2_at_least(need < 128 ? 128 : need);
	q.caps.max_send_wr = q.sq_entries;
	q.caps.max_send_sge = (q.sq_wqe - 64) / 16;
	q.caps.max_inline_data = std::min<uint32_t>(q.sq_wqe - 64, SROCE_MAX_INLINE_DATA);
	if (!region_alloc(q.sq, SROCE_WQ_SLOTS_OFF + uint64_t{q.sq_entries} * q.sq_wqe))
		return ENOMEM;
	init_wq_hdr(q.sq, true);
	if (!q.srq && !xrc) {
		q.rq_entries = pow2_at_least(r.max_recv_wr ? r.max_recv_wr : 1);
		q.rq_wqe = pow2_at_least(16 + 16 * (r.max_recv_sge ? r.max_recv_sge : 1));
		q.caps.max_recv_wr = q.rq_entries;
		q.caps.max_recv_sge = (q.rq_wqe - 16) / 16;
		if (!region_alloc(q.rq, SROCE_WQ_SLOTS_OFF + uint64_t{q.rq_entries} * q.rq_wqe))
			return ENOMEM;
		init_wq_hdr(q.rq, false);
	}
	q.used = true;
	q.caps.qp_handle = static_cast<uint32_t>(i) + 1;
	q.caps.qpn = q.qpn;
	put(resp, out, 0, q.caps);
	sroce_create_qp_resp drv = {};
	drv.sq_mmap_offset = q.sq.offset;
	drv.sq_mmap_size = q.sq.size;
	drv.rq_mmap_offset = q.rq.offset;
	drv.rq_mmap_size = q.rq.size;
	drv.sq_entries = q.sq_entries;
	drv.sq_wqe_size = q.sq_wqe;
	drv.rq_entries = q.rq_entries;
	drv.rq_wqe_size = q.rq_wqe;
	drv.qpn = q.qpn;
	put(resp, out, sizeof(ib_uverbs_create_qp_resp), drv);
	return 0;
}

/* OPEN_QP: another handle on an XRC_RECV QP of the same domain. */
int answer_open_qp(const void *buf, size_t len, void *resp, size_t out)
{
	if (len != sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_open_qp))
		return EINVAL;
	const auto r = request<ib_uverbs_open_qp>(buf, len);
	if (r.qp_type != kQptXrcTgt || !lookup(xrcds, r.pd_handle))
		return EINVAL;
	bool found = false;
	for (const Qp &q : qps)
		found |= q.used && q.qp_type == kQptXrcTgt && q.qpn == r.qpn &&
			 q.xrcd == r.pd_handle;
	const int i = alloc_slot(qps);
	if (!found)
		return ENOENT;
	if (i < 0)
		return ENOMEM;
	Qp &q = qps[i];
	q = Qp{};
	q.used = true;
	q.qp_type = kQptXrcTgt;
	q.qpn = r.qpn;
	q.xrcd = r.pd_handle;
	ib_uverbs_create_qp_resp a = {};
	a.qp_handle = static_cast<uint32_t>(i) + 1;
	a.qpn = r.qpn;
	put(resp, out, 0, a);
	return 0;
}

/*
 * CREATE_SRQ (basic) and CREATE_XSRQ (XRC; tag matching is refused): one
 * receive ring, and for XRC the domain and the CQ.
 */
int answer_create_srq(uint32_t type, uint32_t max_wr, uint32_t max_sge,
		      uint32_t limit, uint32_t xrcd, uint32_t cq, void *resp,
		      size_t out)
{
	const int i = alloc_slot(srqs);
	if (i < 0)
		return ENOMEM;
	if (type > 1)			/* IB_SRQT_TM */
		return EOPNOTSUPP;
	if (!max_wr || max_wr > 4096 || max_sge > 32 ||
	    (type == 1 && (!lookup(xrcds, xrcd) || !lookup(cqs, cq))))
		return EINVAL;
	Srq &q = srqs[i];
	const uint32_t entries = pow2_at_least(max_wr);
	const uint32_t wqe = pow2_at_least(16 + 16 * (max_sge ? max_sge : 1));
	if (!region_alloc(q.ring, SROCE_WQ_SLOTS_OFF + uint64_t{entries} * wqe))
		return ENOMEM;
	q.used = true;
	q.max_wr = entries;
	q.max_sge = (wqe - 16) / 16;
	q.limit = limit;
	q.srqn = 0x200 + static_cast<uint32_t>(i);
	q.xrcd = type == 1 ? xrcd : 0;
	ib_uverbs_create_srq_resp core = {};
	core.srq_handle = static_cast<uint32_t>(i) + 1;
	core.max_wr = q.max_wr;
	core.max_sge = q.max_sge;
	core.srqn = q.srqn;
	put(resp, out, 0, core);
	sroce_create_srq_resp drv = {};
	drv.mmap_offset = q.ring.offset;
	drv.mmap_size = q.ring.size;
	drv.entries = entries;
	drv.wqe_size = wqe;
	drv.srqn = core.srqn;
	put(resp, out, sizeof(core), drv);
	return 0;
}

/* Returns 0 or an errno value. */
int answer(const void *buf, size_t len)
{
	const auto *h = static_cast<const ib_uverbs_cmd_hdr *>(buf);
	log_cmd(h);
	if (gone())
		return EIO;
	if (h->command & IB_USER_VERBS_CMD_FLAG_EXTENDED)
		return EOPNOTSUPP;
	if (len != h->in_words * 4u)
		return EINVAL;
	const int no_resp = answer_no_response(h, buf, len);
	if (no_resp >= 0)
		return no_resp;
	if (h->command == IB_USER_VERBS_CMD_POST_SEND)
		return answer_post_send(buf, len);
	/* Every other command handled here starts with the response pointer. */
	if (len < sizeof(*h) + sizeof(uint64_t))
		return EINVAL;

	const auto *req = static_cast<const char *>(buf) + sizeof(*h);
	uint64_t response;
	std::memcpy(&response, req, sizeof(response));
	void *resp = reinterpret_cast<void *>(static_cast<uintptr_t>(response));
	const size_t out = h->out_words * 4u;

	switch (h->command) {
	case IB_USER_VERBS_CMD_GET_CONTEXT: {
		ib_uverbs_get_context_resp core = {};
		core.async_fd = static_cast<uint32_t>(eventfd(0, EFD_CLOEXEC));
		core.num_comp_vectors = 1;
		put(resp, out, 0, core);
		const char *abi = std::getenv("SROCE_FAKE_UVERBS_ABI");
		sroce_alloc_ucontext_resp drv = {};
		drv.abi_version = abi ? static_cast<uint32_t>(std::atoi(abi))
				      : SROCE_UVERBS_ABI_VERSION;
		put(resp, out, sizeof(core), drv);
		return 0;
	}
	case IB_USER_VERBS_CMD_QUERY_DEVICE: {
		ib_uverbs_query_device_resp r = {};
		r.fw_ver = (1ull << 32) | (2u << 16) | 3u;
		r.vendor_id = 0x5ce;
		r.max_qp = 64;
		r.max_cq = 64;
		r.max_mr = 64;
		r.max_pd = 64;
		r.phys_port_cnt = 1;
		put(resp, out, 0, r);
		return 0;
	}
	case IB_USER_VERBS_CMD_QUERY_PORT: {
		ib_uverbs_query_port_resp r = {};
		r.state = 4;		/* IBV_PORT_ACTIVE */
		r.max_mtu = 5;		/* 4096 */
		r.active_mtu = 3;	/* 1024 */
		r.gid_tbl_len = 16;
		r.pkey_tbl_len = 1;
		r.phys_state = 5;	/* LinkUp */
		r.link_layer = 2;	/* IBV_LINK_LAYER_ETHERNET */
		put(resp, out, 0, r);
		return 0;
	}
	case IB_USER_VERBS_CMD_ALLOC_PD: {
		put(resp, out, 0, uint32_t{7});		/* pd_handle */
		sroce_alloc_pd_resp drv = {};
		drv.pdn = 42;
		put(resp, out, sizeof(ib_uverbs_alloc_pd_resp), drv);
		return 0;
	}
	case IB_USER_VERBS_CMD_ALLOC_MW: {
		ib_uverbs_alloc_mw_resp r = {};
		r.mw_handle = 4;
		r.rkey = 0x80000123;
		put(resp, out, 0, r);
		return 0;
	}
	case IB_USER_VERBS_CMD_REG_MR: {
		static uint32_t next_key = 0x1000;
		ib_uverbs_reg_mr_resp r = {};
		r.mr_handle = 3;
		r.lkey = r.rkey = next_key++;
		put(resp, out, 0, r);
		return 0;
	}
	case IB_USER_VERBS_CMD_CREATE_CQ: {
		const auto r = request<ib_uverbs_create_cq>(buf, len);
		const int i = alloc_slot(cqs);
		if (i < 0)
			return ENOMEM;
		if (r.cqe < 1 || r.cqe > 65536 || r.comp_vector != 0)
			return EINVAL;
		Cq &c = cqs[i];
		c.entries = pow2_at_least(r.cqe + 1);
		if (!region_alloc(c.ring, SROCE_CQ_RING_ENTRIES_OFF +
						  uint64_t{c.entries} * SROCE_CQ_RING_WC_SIZE))
			return ENOMEM;
		c.used = true;
		ib_uverbs_create_cq_resp core = {};
		core.cq_handle = static_cast<uint32_t>(i) + 1;
		core.cqe = c.entries;
		put(resp, out, 0, core);
		sroce_create_cq_resp drv = {};
		drv.mmap_offset = c.ring.offset;
		drv.mmap_size = c.ring.size;
		drv.entries = c.entries;
		put(resp, out, sizeof(core), drv);
		return 0;
	}
	case IB_USER_VERBS_CMD_DESTROY_CQ: {
		const auto r = request<ib_uverbs_destroy_cq>(buf, len);
		Cq *c = lookup(cqs, r.cq_handle);
		if (!c)
			return EINVAL;
		region_free(c->ring);
		*c = Cq{};
		put(resp, out, 0, ib_uverbs_destroy_cq_resp{});
		return 0;
	}
	case IB_USER_VERBS_CMD_CREATE_QP:
		return answer_create_qp(buf, len, resp, out);
	case IB_USER_VERBS_CMD_QUERY_QP: {
		const auto r = request<ib_uverbs_query_qp>(buf, len);
		const Qp *q = lookup(qps, r.qp_handle);
		if (!q)
			return EINVAL;
		ib_uverbs_query_qp_resp a = {};
		a.max_send_wr = q->caps.max_send_wr;
		a.max_recv_wr = q->caps.max_recv_wr;
		a.max_send_sge = q->caps.max_send_sge;
		a.max_recv_sge = q->caps.max_recv_sge;
		a.max_inline_data = q->caps.max_inline_data;
		a.qp_state = q->state;
		a.cur_qp_state = q->state;
		a.sq_sig_all = q->sig_all;
		put(resp, out, 0, a);
		return 0;
	}
	case IB_USER_VERBS_CMD_DESTROY_QP: {
		const auto r = request<ib_uverbs_destroy_qp>(buf, len);
		Qp *q = lookup(qps, r.qp_handle);
		if (!q)
			return EINVAL;
		region_free(q->sq);
		region_free(q->rq);
		*q = Qp{};
		put(resp, out, 0, ib_uverbs_destroy_qp_resp{});
		return 0;
	}
	case IB_USER_VERBS_CMD_CREATE_SRQ: {
		const auto r = request<ib_uverbs_create_srq>(buf, len);
		return answer_create_srq(0, r.max_wr, r.max_sge, r.srq_limit, 0, 0,
					 resp, out);
	}
	case IB_USER_VERBS_CMD_CREATE_XSRQ: {
		const auto r = request<ib_uverbs_create_xsrq>(buf, len);
		return answer_create_srq(r.srq_type, r.max_wr, r.max_sge, r.srq_limit,
					 r.xrcd_handle, r.cq_handle, resp, out);
	}
	case IB_USER_VERBS_CMD_OPEN_XRCD: {
		const auto r = request<ib_uverbs_open_xrcd>(buf, len);
		/* fd -1: a new, unshared domain, which needs O_CREAT */
		if (r.fd != UINT32_MAX || !(r.oflags & O_CREAT))
			return EINVAL;
		const int i = alloc_slot(xrcds);
		if (i < 0)
			return ENOMEM;
		xrcds[i].used = true;
		put(resp, out, 0, static_cast<uint32_t>(i) + 1);	/* xrcd_handle */
		return 0;
	}
	case IB_USER_VERBS_CMD_OPEN_QP:
		return answer_open_qp(buf, len, resp, out);
	case IB_USER_VERBS_CMD_QUERY_SRQ: {
		const auto r = request<ib_uverbs_query_srq>(buf, len);
		const Srq *q = lookup(srqs, r.srq_handle);
		if (!q)
			return EINVAL;
		ib_uverbs_query_srq_resp a = {};
		a.max_wr = q->max_wr;
		a.max_sge = q->max_sge;
		a.srq_limit = q->limit;
		put(resp, out, 0, a);
		return 0;
	}
	case IB_USER_VERBS_CMD_DESTROY_SRQ: {
		const auto r = request<ib_uverbs_destroy_srq>(buf, len);
		Srq *q = lookup(srqs, r.srq_handle);
		if (!q)
			return EINVAL;
		for (const Qp &p : qps)
			if (p.used && p.srq == r.srq_handle)
				return EBUSY;
		region_free(q->ring);
		*q = Srq{};
		put(resp, out, 0, ib_uverbs_destroy_srq_resp{});
		return 0;
	}
	case IB_USER_VERBS_CMD_CREATE_AH: {
		const auto r = request<ib_uverbs_create_ah>(buf, len);
		if (!r.attr.is_global)
			return EINVAL;	/* RoCE needs a GRH */
		int i = 0;
		while (i < kMaxObj && ahs[i])
			i++;
		if (i == kMaxObj)
			return ENOMEM;
		ahs[i] = true;
		put(resp, out, 0, static_cast<uint32_t>(i) + 1);	/* ah_handle */
		sroce_create_ah_resp drv = {};
		drv.ah_num = static_cast<uint32_t>(i) + 1 + 100;
		put(resp, out, sizeof(ib_uverbs_create_ah_resp), drv);
		return 0;
	}
	default:
		return ENOSYS;
	}
}

} // namespace

extern "C" {

int socket(int domain, int type, int protocol)
{
	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	return real<int (*)(int, int, int)>("socket")(domain, type, protocol);
}

int stat(const char *path, struct stat *st)
{
	if (is_fake_path(path))
		path = "/dev/null";
	return real<int (*)(const char *, struct stat *)>("stat")(path, st);
}

int open(const char *path, int flags, ...)
{
	unsigned int mode = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, unsigned int);
		va_end(ap);
	}

	const bool fake = is_fake_path(path);
	const int fd = real<int (*)(const char *, int, ...)>("open")(
		fake ? "/dev/null" : path, flags, mode);
	if (fake && fd >= 0 && fd < kMaxFd)
		fake_fd[fd] = true;
	return fd;
}

int close(int fd)
{
	if (fd >= 0 && fd < kMaxFd)
		fake_fd[fd] = false;
	return real<int (*)(int)>("close")(fd);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset)
{
	using mmap_fn = void *(*)(void *, size_t, int, int, int, off_t);
	if (!is_fake_fd(fd))
		return real<mmap_fn>("mmap")(addr, len, prot, flags, fd, offset);
	const Region *r = region_at(static_cast<uint64_t>(offset));
	if (!r || len != r->size || !(flags & MAP_SHARED)) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	return real<mmap_fn>("mmap")(addr, len, prot, flags, r->memfd, 0);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	if (!is_fake_fd(fd) || len < sizeof(ib_uverbs_cmd_hdr))
		return real<ssize_t (*)(int, const void *, size_t)>("write")(fd, buf, len);

	const int err = answer(buf, len);
	if (err) {
		errno = err;
		return -1;
	}
	return static_cast<ssize_t>(len);
}

} // extern "C"
