// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Device context: open/close, device and port queries, and the ops table.
 */
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "abi_attr.h"
#include "sroce.h"

namespace sroce {

/*
 * Ops sroce implements. Everything left NULL keeps libibverbs' default, which
 * fails with EOPNOTSUPP (dummy_ops.c, v44).
 */
constinit const verbs_context_ops context_ops = [] {
	verbs_context_ops ops{};
	ops.advise_mr = sroce_advise_mr;
	ops.alloc_mw = sroce_alloc_mw;
	ops.alloc_parent_domain = sroce_alloc_parent_domain;
	ops.alloc_pd = sroce_alloc_pd;
	ops.attach_mcast = sroce_attach_mcast;
	ops.bind_mw = sroce_bind_mw;
	ops.close_xrcd = sroce_close_xrcd;
	ops.create_ah = sroce_create_ah;
	ops.create_cq = sroce_create_cq;
	ops.create_cq_ex = sroce_create_cq_ex;
	ops.create_qp = sroce_create_qp;
	ops.create_qp_ex = sroce_create_qp_ex;
	ops.create_srq = sroce_create_srq;
	ops.create_srq_ex = sroce_create_srq_ex;
	ops.dealloc_mw = sroce_dealloc_mw;
	ops.dealloc_pd = sroce_dealloc_pd;
	ops.dereg_mr = sroce_dereg_mr;
	ops.detach_mcast = sroce_detach_mcast;
	ops.destroy_ah = sroce_destroy_ah;
	ops.destroy_cq = sroce_destroy_cq;
	ops.destroy_qp = sroce_destroy_qp;
	ops.destroy_srq = sroce_destroy_srq;
	ops.free_context = sroce_free_context;
	ops.get_srq_num = sroce_get_srq_num;
	ops.import_mr = sroce_import_mr;
	ops.import_pd = sroce_import_pd;
	ops.modify_qp = sroce_modify_qp;
	ops.modify_srq = sroce_modify_srq;
	ops.open_qp = sroce_open_qp;
	ops.open_xrcd = sroce_open_xrcd;
	ops.poll_cq = sroce_poll_cq;
	ops.post_recv = sroce_post_recv;
	ops.post_send = sroce_post_send;
	ops.post_srq_recv = sroce_post_srq_recv;
	ops.query_device_ex = sroce_query_device_ex;
	ops.query_port = sroce_query_port;
	ops.query_qp = sroce_query_qp;
	ops.query_srq = sroce_query_srq;
	ops.reg_mr = sroce_reg_mr;
	ops.req_notify_cq = sroce_req_notify_cq;
	ops.rereg_mr = sroce_rereg_mr;
	ops.resize_cq = sroce_resize_cq;
	ops.unimport_mr = sroce_unimport_mr;
	ops.unimport_pd = sroce_unimport_pd;
	return ops;
}();

namespace {

using get_context_resp =
	abi::with_driver_data<abi::resp_get_context_core, sroce_alloc_ucontext_resp>;
static_assert(abi::driver_data_is_adjacent<abi::resp_get_context_core,
					   sroce_alloc_ucontext_resp>());

} // namespace
} // namespace sroce

extern "C" {

verbs_context *sroce_alloc_context(struct ibv_device *ibdev, int cmd_fd,
				   void * /* private_data */)
{
	/* The offset of the verbs_context inside ours, passed as a pointer. */
	auto *const vctx_offset = reinterpret_cast<verbs_context *>(
		static_cast<uintptr_t>(offsetof(sroce::context, vctx)));

	auto *ctx = static_cast<sroce::context *>(_verbs_init_and_alloc_context(
		ibdev, cmd_fd, sizeof(sroce::context), vctx_offset,
		RDMA_DRIVER_UNKNOWN));
	if (!ctx)
		return nullptr;	/* cmd_fd already closed, errno set */

	sroce::abi::cmd_get_context cmd{};
	sroce::get_context_resp resp{};
	int err = ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), &resp.core,
				      sizeof(resp));
	if (err) {
		sroce_log(&ctx->vctx, SROCE_VERBS_LOG_ERR,
			  "get_context failed: errno %d", err);
		goto fail;
	}

	if (!sroce::abi_supported(resp.drv.abi_version)) {
		sroce_log(&ctx->vctx, SROCE_VERBS_LOG_ERR,
			  "kernel reports ABI %u, provider supports %u to %u",
			  resp.drv.abi_version, sroce::kMinKernelAbi,
			  sroce::kMaxKernelAbi);
		err = EPROTO;
		goto fail;
	}
	ctx->kernel_abi = resp.drv.abi_version;
	sroce_log(&ctx->vctx, SROCE_VERBS_LOG_DEBUG,
		  "%s: kernel ABI %u, %d completion vectors",
		  ibdev->name, ctx->kernel_abi, ctx->vctx.context.num_comp_vectors);

	verbs_set_ops(&ctx->vctx, &sroce::context_ops);
	return &ctx->vctx;

fail:
	/* Closes cmd_fd (and any async fd) and drops the device reference. */
	verbs_uninit_context(&ctx->vctx);
	std::free(ctx);
	errno = err;
	return nullptr;
}

/*
 * ibv_import_device(): a context on the command FD of another one (a dup of
 * it, from this or another process), so the same kernel user context. There
 * is no GET_CONTEXT reply to read: the ABI version is the device's, which
 * libibverbs has matched already, and QUERY_CONTEXT gives the rest.
 */
verbs_context *sroce_import_context(struct ibv_device *ibdev, int cmd_fd)
{
	auto *const vctx_offset = reinterpret_cast<verbs_context *>(
		static_cast<uintptr_t>(offsetof(sroce::context, vctx)));

	auto *ctx = static_cast<sroce::context *>(_verbs_init_and_alloc_context(
		ibdev, cmd_fd, sizeof(sroce::context), vctx_offset,
		RDMA_DRIVER_UNKNOWN));
	if (!ctx)
		return nullptr;

	const uint32_t abi = verbs_get_device(ibdev)->sysfs->abi_ver;
	int err = ibv_cmd_query_context(&ctx->vctx.context, nullptr);
	if (!err && !sroce::abi_supported(abi))
		err = EPROTO;
	if (err) {
		sroce_log(&ctx->vctx, SROCE_VERBS_LOG_ERR,
			  "import of command FD %d failed: errno %d", cmd_fd, err);
		verbs_uninit_context(&ctx->vctx);
		std::free(ctx);
		errno = err;
		return nullptr;
	}
	ctx->kernel_abi = abi;
	verbs_set_ops(&ctx->vctx, &sroce::context_ops);
	return &ctx->vctx;
}

void sroce_free_context(struct ibv_context *ibctx)
{
	sroce::context *ctx = sroce::get_context(ibctx);

	verbs_uninit_context(&ctx->vctx);
	std::free(ctx);
}

int sroce_query_device_ex(struct ibv_context *ibctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t resp_size = sizeof(resp);

	const int err = ibv_cmd_query_device_any(ibctx, input, attr, attr_size,
						 &resp, &resp_size);
	if (err)
		return err;

	/* 64-bit firmware version rendered as major.minor.sub-minor. */
	const uint64_t fw = resp.base.fw_ver;
	std::snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		      "%u.%u.%u", static_cast<unsigned>((fw >> 32) & 0xffff),
		      static_cast<unsigned>((fw >> 16) & 0xffff),
		      static_cast<unsigned>(fw & 0xffff));
	return 0;
}

int sroce_query_port(struct ibv_context *ibctx, uint8_t port_num,
		     struct ibv_port_attr *port_attr)
{
	sroce::abi::cmd_query_port cmd{};

	return ibv_cmd_query_port(ibctx, port_num, port_attr, &cmd, sizeof(cmd));
}

} // extern "C"
