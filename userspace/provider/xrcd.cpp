// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * XRC domains (ibv_open_xrcd, ibv_close_xrcd): plain uverbs commands, with
 * no driver data either way. The kernel finds a shared domain by the inode
 * of the file the application names (fd), or creates an unshared one for
 * fd -1 with O_CREAT; the provider keeps only the handle.
 *
 * What lives in a domain is created elsewhere: XRC SRQs (srq.cpp,
 * create_srq_ex), XRC_RECV QPs (qp.cpp, create_qp_ex with
 * IBV_QP_INIT_ATTR_XRCD, and open_qp).
 */
#include <cerrno>
#include <cstdlib>

#include "sroce.h"

extern "C" {

struct ibv_xrcd *sroce_open_xrcd(struct ibv_context *ibctx,
				 struct ibv_xrcd_init_attr *attr)
{
	auto *x = static_cast<sroce::xrcd *>(std::calloc(1, sizeof(sroce::xrcd)));
	if (!x) {
		errno = ENOMEM;
		return nullptr;
	}

	/* libibverbs checks comp_mask (FD and OFLAGS are required). */
	sroce::abi::cmd_open_xrcd cmd{};
	sroce::abi::resp_open_xrcd_core resp{};
	const int err = ibv_cmd_open_xrcd(ibctx, &x->vxrcd, sizeof(x->vxrcd), attr,
					  &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		std::free(x);
		errno = err;
		return nullptr;
	}
	sroce_log(verbs_get_ctx(ibctx), SROCE_VERBS_LOG_DEBUG,
		  "xrcd handle %u (fd %d)", x->vxrcd.handle, attr->fd);
	return &x->vxrcd.xrcd;
}

/* The kernel refuses (EBUSY) while SRQs or QPs of this context use it. */
int sroce_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	sroce::xrcd *x = sroce::get_xrcd(ibxrcd);

	const int err = ibv_cmd_close_xrcd(&x->vxrcd);
	if (err)
		return err;
	std::free(x);
	return 0;
}

} // extern "C"
