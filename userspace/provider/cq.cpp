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
 * timestamps, CVLAN, flow tags, tag matching, parent domains and
 * IGNORE_OVERRUN are not available (EOPNOTSUPP).
 *
 * Not implemented: resize_cq (libibverbs answers EOPNOTSUPP).
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
 * Maps the ring the kernel described; on failure returns an errno value and
 * the caller destroys the kernel object.
 */
int map_ring(struct ibv_context *ibctx, cq *cq, const sroce_create_cq_resp &r)
{
	if (!ring_reply_ok(r)) {
		sroce_log(verbs_get_ctx(ibctx), SROCE_VERBS_LOG_ERR,
			  "bad ring: %u entries, %llu bytes", r.entries,
			  static_cast<unsigned long long>(r.mmap_size));
		return EPROTO;
	}
	cq->map_size = r.mmap_size;
	cq->map = mmap(nullptr, cq->map_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, ibctx->cmd_fd, static_cast<off_t>(r.mmap_offset));
	if (cq->map == MAP_FAILED) {
		cq->map = nullptr;
		return errno;
	}
	cq->hdr = static_cast<sroce_cq_ring_hdr *>(cq->map);
	cq->ring = reinterpret_cast<const ib_uverbs_wc *>(
		static_cast<char *>(cq->map) + SROCE_CQ_RING_ENTRIES_OFF);
	cq->entries = r.entries;
	cq->cons = __atomic_load_n(&cq->hdr->consumer, __ATOMIC_RELAXED);
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
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
	    (attr->comp_mask & ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~sroce::kCqFlags))) {
		errno = EOPNOTSUPP;
		return nullptr;
	}

	auto *cq = static_cast<sroce::cq *>(std::calloc(1, sizeof(sroce::cq)));
	if (!cq) {
		errno = ENOMEM;
		return nullptr;
	}

	sroce::abi::cmd_create_cq_ex cmd{};
	sroce::create_cq_ex_resp resp{};
	int err = ibv_cmd_create_cq_ex(ibctx, attr, &cq->vcq, &cmd, sizeof(cmd),
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
	return &cq->ibv_ex;
}

int sroce_destroy_cq(struct ibv_cq *ibcq)
{
	sroce::cq *cq = sroce::get_cq(ibcq);

	const int err = ibv_cmd_destroy_cq(ibcq);
	if (err)
		return err;
	munmap(cq->map, cq->map_size);
	pthread_spin_destroy(&cq->lock);
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
	if (avail > cq->entries) {
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

	__atomic_fetch_or(&cq->hdr->arm, bits, __ATOMIC_SEQ_CST);
	return 0;
}

} // extern "C"
