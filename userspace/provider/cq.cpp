// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues: the kernel writes completions into a ring mapped into
 * the process (include/uapi/rdma/sroce-abi.h); poll_cq and req_notify_cq work
 * on that ring alone and never enter the kernel. Completion events still come
 * through the kernel: it raises them on the CQ's completion channel, read by
 * ibv_get_cq_event().
 *
 * Not implemented: resize_cq and create_cq_ex (libibverbs answers
 * EOPNOTSUPP).
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
/* Ring wc_flags are libibverbs' values, so entries are copied as they are. */
static_assert(SROCE_WC_FLAG_GRH == IBV_WC_GRH);
static_assert(SROCE_WC_FLAG_WITH_IMM == IBV_WC_WITH_IMM);
static_assert(SROCE_WC_FLAG_IP_CSUM_OK == IBV_WC_IP_CSUM_OK);
static_assert(SROCE_WC_FLAG_WITH_INV == IBV_WC_WITH_INV);

bool ring_reply_ok(const sroce_create_cq_resp &r)
{
	const uint64_t need = SROCE_CQ_RING_ENTRIES_OFF +
			      uint64_t{r.entries} * sizeof(ib_uverbs_wc);
	return r.entries && !(r.entries & (r.entries - 1)) &&
	       r.mmap_size >= need && r.mmap_size <= (uint64_t{1} << 32);
}

} // namespace
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

	if (!sroce::ring_reply_ok(resp.drv)) {
		sroce_log(verbs_get_ctx(ibctx), SROCE_VERBS_LOG_ERR,
			  "bad ring: %u entries, %llu bytes", resp.drv.entries,
			  static_cast<unsigned long long>(resp.drv.mmap_size));
		err = EPROTO;
		goto fail_destroy;
	}

	cq->map_size = resp.drv.mmap_size;
	cq->map = mmap(nullptr, cq->map_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, ibctx->cmd_fd,
		       static_cast<off_t>(resp.drv.mmap_offset));
	if (cq->map == MAP_FAILED) {
		err = errno;
		goto fail_destroy;
	}
	cq->hdr = static_cast<sroce_cq_ring_hdr *>(cq->map);
	cq->ring = reinterpret_cast<const ib_uverbs_wc *>(
		static_cast<char *>(cq->map) + SROCE_CQ_RING_ENTRIES_OFF);
	cq->entries = resp.drv.entries;
	cq->cons = __atomic_load_n(&cq->hdr->consumer, __ATOMIC_RELAXED);
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	return &cq->ibv;

fail_destroy:
	ibv_cmd_destroy_cq(&cq->ibv);
	std::free(cq);
	errno = err;
	return nullptr;
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
