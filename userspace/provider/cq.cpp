// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues: the kernel writes completions into a ring mapped into
 * the process (include/uapi/rdma/sroce-abi.h); poll_cq and req_notify_cq work
 * on that ring alone and never enter the kernel. Completion events still come
 * through the kernel: it raises them on the CQ's completion channel, read by
 * ibv_get_cq_event().
 *
 * create_cq_ex gives the same ring an ibv_cq_ex face (start_poll, next_poll,
 * end_poll and the read_* callbacks of IBV_WC_STANDARD_FLAGS). Completion
 * timestamps, CVLAN, flow tags, tag matching and IGNORE_OVERRUN are not
 * available (EOPNOTSUPP); a parent domain (IBV_CQ_INIT_ATTR_MASK_PD) is
 * accepted.
 *
 * resize_cq: the kernel moves the unpolled completions into a new ring,
 * which replaces the mapping while the CQ's lock keeps pollers out.
 */
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "sroce.h"

namespace sroce {
namespace {

using create_cq_resp =
	abi::with_driver_data<abi::resp_create_cq_core, sroce_create_cq_resp>;
static_assert(abi::driver_data_is_adjacent<abi::resp_create_cq_core,
					   sroce_create_cq_resp>());
static_assert(sizeof(sroce_cq_ring_hdr) == SROCE_CQ_RING_ENTRIES_OFF);
static_assert(offsetof(sroce_cq_ring_hdr, consumer) == SROCE_CQ_RING_LINE);
static_assert(offsetof(sroce_cq_ring_hdr, arm) == 2 * SROCE_CQ_RING_LINE);
static_assert(sizeof(ib_uverbs_wc) == SROCE_CQ_RING_WC_SIZE);
static_assert(sizeof(sroce_create_cq_resp) == 24);
static_assert(offsetof(sroce::cq, map) == sizeof(struct ibv_cq_ex),
	      "sroce-objects-test (scribble) finds the ring pointer here");
/* Ring wc_flags are libibverbs' values, so entries are copied as they are. */
static_assert(SROCE_WC_FLAG_GRH == IBV_WC_GRH);
static_assert(SROCE_WC_FLAG_WITH_IMM == IBV_WC_WITH_IMM);
static_assert(SROCE_WC_FLAG_IP_CSUM_OK == IBV_WC_IP_CSUM_OK);
static_assert(SROCE_WC_FLAG_WITH_INV == IBV_WC_WITH_INV);

using resize_cq_resp =
	abi::with_driver_data<abi::resp_resize_cq_core, sroce_create_cq_resp>;
static_assert(abi::driver_data_is_adjacent<abi::resp_resize_cq_core,
					   sroce_create_cq_resp>());

using create_cq_ex_resp =
	abi::with_driver_data<abi::resp_create_cq_ex_core, sroce_create_cq_resp>;
static_assert(abi::driver_data_is_adjacent<abi::resp_create_cq_ex_core,
					   sroce_create_cq_resp>());

bool ring_reply_ok(const sroce_create_cq_resp &r)
{
	const uint64_t need = SROCE_CQ_RING_ENTRIES_OFF +
			      uint64_t{r.entries} * sizeof(ib_uverbs_wc);
	return r.entries && !(r.entries & (r.entries - 1)) &&
	       r.mmap_size >= need && r.mmap_size <= (uint64_t{1} << 32);
}

/*
 * Maps the ring the kernel described in place of the one @cq has (if any,
 * it is unmapped); on failure returns an errno value and @cq is unchanged.
 */
int switch_ring(struct ibv_context *ibctx, cq *cq, const sroce_create_cq_resp &r)
{
	if (!ring_reply_ok(r)) {
		sroce_log(verbs_get_ctx(ibctx), SROCE_VERBS_LOG_ERR,
			  "bad ring: %u entries, %llu bytes", r.entries,
			  static_cast<unsigned long long>(r.mmap_size));
		return EPROTO;
	}
	void *map = mmap(nullptr, r.mmap_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, ibctx->cmd_fd, static_cast<off_t>(r.mmap_offset));
	if (map == MAP_FAILED)
		return errno;
	if (cq->map)
		munmap(cq->map, cq->map_size);
	cq->map = map;
	cq->map_size = r.mmap_size;
	cq->hdr = static_cast<sroce_cq_ring_hdr *>(cq->map);
	cq->ring = reinterpret_cast<const ib_uverbs_wc *>(
		static_cast<char *>(cq->map) + SROCE_CQ_RING_ENTRIES_OFF);
	cq->entries = r.entries;
	return 0;
}

/*
 * Maps the ring of a new CQ; on failure returns an errno value and the
 * caller destroys the kernel object.
 */
int map_ring(struct ibv_context *ibctx, cq *cq, const sroce_create_cq_resp &r)
{
	const int err = switch_ring(ibctx, cq, r);
	if (err)
		return err;
	cq->cons = __atomic_load_n(&cq->hdr->consumer, __ATOMIC_RELAXED);
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&cq->ring_lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

/*
 * Extended polling. start_poll takes the lock and keeps it until end_poll
 * (or until it fails: then end_poll is not called). The entry being read is
 * copied out of the ring and stays unreleased until the next next_poll or
 * end_poll, which advance the consumer index; end_poll publishes it.
 */

/* Entries ready at cons; reloads producer when the known ones are used. */
int refill(cq *cq)
{
	if (cq->avail)
		return 0;
	if (cq->lost)
		return EIO;
	const uint32_t prod = __atomic_load_n(&cq->hdr->producer, __ATOMIC_ACQUIRE);
	const uint32_t avail = prod - cq->cons;
	if (avail > cq->entries)
		return EIO;	/* the ring was overwritten */
	if (!avail)
		return ENOENT;
	cq->avail = avail;
	return 0;
}

void load_current(cq *cq)
{
	std::memcpy(&cq->cur, &cq->ring[cq->cons & (cq->entries - 1)],
		    sizeof(cq->cur));
	cq->cur_valid = true;
	cq->ibv_ex.status = static_cast<enum ibv_wc_status>(cq->cur.status);
	cq->ibv_ex.wr_id = cq->cur.wr_id;
}

void release_current(cq *cq)
{
	if (!cq->cur_valid)
		return;
	cq->cur_valid = false;
	cq->cons++;
	cq->avail--;
}

int start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	cq *cq = get_cq(ibcq);

	if (attr && attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	const int err = refill(cq);
	if (err) {
		pthread_spin_unlock(&cq->lock);
		return err;
	}
	load_current(cq);
	return 0;
}

int next_poll(struct ibv_cq_ex *ibcq)
{
	cq *cq = get_cq(ibcq);

	release_current(cq);
	const int err = refill(cq);
	if (err)
		return err;
	load_current(cq);
	return 0;
}

void end_poll(struct ibv_cq_ex *ibcq)
{
	cq *cq = get_cq(ibcq);

	release_current(cq);
	__atomic_store_n(&cq->hdr->consumer, cq->cons, __ATOMIC_RELEASE);
	/* Whatever is left is re-read from producer next time. */
	cq->avail = 0;
	pthread_spin_unlock(&cq->lock);
}

enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *ibcq)
{
	return static_cast<enum ibv_wc_opcode>(get_cq(ibcq)->cur.opcode);
}

uint32_t read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return get_cq(ibcq)->cur.vendor_err;
}

uint32_t read_byte_len(struct ibv_cq_ex *ibcq)
{
	return get_cq(ibcq)->cur.byte_len;
}

/* The raw word: immediate data (big endian) or the invalidated rkey. */
__be32 read_imm_data(struct ibv_cq_ex *ibcq)
{
	__be32 v;
	std::memcpy(&v, &get_cq(ibcq)->cur.ex.imm_data, sizeof(v));
	return v;
}

uint32_t read_qp_num(struct ibv_cq_ex *ibcq)
{
	return get_cq(ibcq)->cur.qp_num;
}

uint32_t read_src_qp(struct ibv_cq_ex *ibcq)
{
	return get_cq(ibcq)->cur.src_qp;
}

unsigned int read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return get_cq(ibcq)->cur.wc_flags;
}

uint32_t read_slid(struct ibv_cq_ex *ibcq)
{
	return get_cq(ibcq)->cur.slid;
}

uint8_t read_sl(struct ibv_cq_ex *ibcq)
{
	return get_cq(ibcq)->cur.sl;
}

uint8_t read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return get_cq(ibcq)->cur.dlid_path_bits;
}

/* What create_cq_ex accepts. */
constexpr uint64_t kWcFlags = IBV_WC_STANDARD_FLAGS;
constexpr uint32_t kCqFlags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
constexpr uint32_t kCqMask = IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;

} // namespace

void init_cq_ex(cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex &x = cq->ibv_ex;

	x.start_poll = start_poll;
	x.next_poll = next_poll;
	x.end_poll = end_poll;
	x.read_opcode = read_opcode;
	x.read_vendor_err = read_vendor_err;
	x.read_wc_flags = read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x.read_byte_len = read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		x.read_imm_data = read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x.read_qp_num = read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x.read_src_qp = read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		x.read_slid = read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		x.read_sl = read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x.read_dlid_path_bits = read_dlid_path_bits;
}

/*
 * A QP went back to RESET: drop its completions that nobody has polled, as
 * hardware providers do, so that a QP brought up again does not report the
 * flushes of its previous life. Receive completions of a QP on an SRQ stay
 * (their SRQ slots were used up and are not given back). The kept entries
 * move towards the producer end of [cons, prod) and cons moves past the
 * dropped ones; the kernel only writes at prod and beyond, and once the
 * QP is in RESET it adds nothing more for it.
 */
void cq_clean(struct ibv_cq *ibcq, uint32_t qpn, bool keep_recv)
{
	cq *cq = get_cq(ibcq);

	pthread_spin_lock(&cq->lock);
	const uint32_t prod = __atomic_load_n(&cq->hdr->producer, __ATOMIC_ACQUIRE);
	if (cq->lost || prod - cq->cons > cq->entries) {
		pthread_spin_unlock(&cq->lock);
		return;
	}
	auto *ring = const_cast<ib_uverbs_wc *>(cq->ring);
	const uint32_t mask = cq->entries - 1;
	uint32_t dst = prod;
	for (uint32_t src = prod; src != cq->cons;) {
		src--;
		const ib_uverbs_wc &e = ring[src & mask];
		if (e.qp_num == qpn && !(keep_recv && (e.opcode & IBV_WC_RECV)))
			continue;
		dst--;
		if (dst != src)
			std::memcpy(&ring[dst & mask], &e, sizeof(e));
	}
	if (dst != cq->cons) {
		cq->cons = dst;
		cq->avail = 0;
		__atomic_store_n(&cq->hdr->consumer, cq->cons, __ATOMIC_RELEASE);
	}
	pthread_spin_unlock(&cq->lock);
}

} // namespace sroce

extern "C" {

struct ibv_cq *sroce_create_cq(struct ibv_context *ibctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector)
{
	auto *cq = static_cast<sroce::cq *>(std::calloc(1, sizeof(sroce::cq)));
	if (!cq) {
		errno = ENOMEM;
		return nullptr;
	}

	sroce::abi::cmd_create_cq cmd{};
	sroce::create_cq_resp resp{};
	int err = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->ibv,
				    &cmd, sizeof(cmd), &resp.core, sizeof(resp));
	if (err) {
		std::free(cq);
		errno = err;
		return nullptr;
	}

	err = sroce::map_ring(ibctx, cq, resp.drv);
	if (err) {
		ibv_cmd_destroy_cq(&cq->ibv);
		std::free(cq);
		errno = err;
		return nullptr;
	}
	return &cq->ibv;
}

/*
 * The same ring behind an ibv_cq_ex. libibverbs' wrapper has already refused
 * wc_flags it does not know; refuse those we cannot fill.
 */
struct ibv_cq_ex *sroce_create_cq_ex(struct ibv_context *ibctx,
				     struct ibv_cq_init_attr_ex *attr)
{
	if ((attr->wc_flags & ~sroce::kWcFlags) ||
	    (attr->comp_mask & ~sroce::kCqMask) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~sroce::kCqFlags))) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	/*
	 * A parent domain only carries allocators, which a CQ (kernel ring
	 * memory) does not use; the kernel command knows nothing of it.
	 */
	struct ibv_cq_init_attr_ex kattr = *attr;
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		if (!attr->parent_domain || attr->parent_domain->context != ibctx ||
		    !sroce::get_pd(attr->parent_domain)->protection) {
			errno = EINVAL;
			return nullptr;
		}
		kattr.comp_mask &= ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_PD);
	}

	auto *cq = static_cast<sroce::cq *>(std::calloc(1, sizeof(sroce::cq)));
	if (!cq) {
		errno = ENOMEM;
		return nullptr;
	}

	sroce::abi::cmd_create_cq_ex cmd{};
	sroce::create_cq_ex_resp resp{};
	int err = ibv_cmd_create_cq_ex(ibctx, &kattr, &cq->vcq, &cmd, sizeof(cmd),
				       &resp.core, sizeof(resp), 0);
	if (err) {
		std::free(cq);
		errno = err;
		return nullptr;
	}

	err = sroce::map_ring(ibctx, cq, resp.drv);
	if (err) {
		ibv_cmd_destroy_cq(&cq->ibv);
		std::free(cq);
		errno = err;
		return nullptr;
	}
	sroce::init_cq_ex(cq, attr->wc_flags);
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD)
		cq->parent = sroce::parent_hold(attr->parent_domain);
	return &cq->ibv_ex;
}

int sroce_destroy_cq(struct ibv_cq *ibcq)
{
	sroce::cq *cq = sroce::get_cq(ibcq);

	const int err = ibv_cmd_destroy_cq(ibcq);
	if (err)
		return err;
	sroce::parent_release(cq->parent);
	munmap(cq->map, cq->map_size);
	pthread_spin_destroy(&cq->lock);
	pthread_spin_destroy(&cq->ring_lock);
	std::free(cq);
	return 0;
}

/*
 * Load-acquire of producer, copy, store-release of consumer. Our own copy of
 * the consumer index is authoritative; a producer index more than a ring away
 * from it means the ring was overwritten (by this process): report an error
 * rather than return garbage.
 */
int sroce_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	sroce::cq *cq = sroce::get_cq(ibcq);
	int n = 0;

	if (num_entries <= 0)
		return 0;

	pthread_spin_lock(&cq->lock);
	const uint32_t prod = __atomic_load_n(&cq->hdr->producer, __ATOMIC_ACQUIRE);
	const uint32_t avail = prod - cq->cons;
	if (avail > cq->entries || cq->lost) {
		pthread_spin_unlock(&cq->lock);
		return -EIO;
	}
	const uint32_t mask = cq->entries - 1;
	while (static_cast<uint32_t>(n) < avail && n < num_entries) {
		std::memcpy(&wc[n], &cq->ring[(cq->cons + n) & mask],
			    sizeof(*wc));
		n++;
	}
	if (n) {
		cq->cons += n;
		__atomic_store_n(&cq->hdr->consumer, cq->cons, __ATOMIC_RELEASE);
	}
	pthread_spin_unlock(&cq->lock);
	return n;
}

/*
 * A sequentially consistent read-modify-write (a locked instruction, a full
 * barrier) pairs with the kernel's barrier between publishing a completion
 * and reading arm: a completion the kernel published without seeing the arm
 * is visible to any poll_cq issued after this returns.
 */
int sroce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	sroce::cq *cq = sroce::get_cq(ibcq);
	const uint32_t bits = solicited_only ? SROCE_CQ_ARM_SOLICITED :
					       SROCE_CQ_ARM_NEXT;

	/*
	 * ring_lock keeps resize_cq from moving the ring under us (and from
	 * copying the old ring's arm word before we set it); not the CQ's
	 * lock, which an extended-poll batch of this thread may hold.
	 */
	pthread_spin_lock(&cq->ring_lock);
	__atomic_fetch_or(&cq->hdr->arm, bits, __ATOMIC_SEQ_CST);
	/*
	 * The arm before any later load of the producer index: the language
	 * orders a seq_cst read-modify-write against later plain acquire loads
	 * only with a fence (x86 and arm64 would not need it, POWER does).
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pthread_spin_unlock(&cq->ring_lock);
	return 0;
}

/*
 * Under the CQ's lock, so no poller is between reading and releasing entries
 * and the consumer index the kernel reads is ours. The kernel keeps the
 * counters, so cons stays valid in the new ring. If the new ring cannot be
 * mapped the kernel writes where this process cannot look any more: the CQ
 * then fails every poll rather than lose completions silently.
 */
int sroce_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	sroce::cq *cq = sroce::get_cq(ibcq);
	sroce::abi::cmd_resize_cq cmd{};
	sroce::resize_cq_resp resp{};

	pthread_spin_lock(&cq->lock);
	if (cq->lost) {
		pthread_spin_unlock(&cq->lock);
		return EIO;
	}
	pthread_spin_lock(&cq->ring_lock);
	int err = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.core,
				    sizeof(resp));
	if (!err) {
		err = sroce::switch_ring(ibcq->context, cq, resp.drv);
		if (err) {
			sroce_log(verbs_get_ctx(ibcq->context), SROCE_VERBS_LOG_ERR,
				  "resize_cq: cannot map the new ring (%d); the CQ is lost",
				  err);
			cq->lost = true;
		}
	}
	pthread_spin_unlock(&cq->ring_lock);
	pthread_spin_unlock(&cq->lock);
	return err;
}

} // extern "C"
