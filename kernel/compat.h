/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce - differences between the kernels sroce builds for (Debian 12's 6.1
 * and 6.12). This is the only file that may test LINUX_VERSION_CODE; the
 * rest of the module uses the names defined here (make test checks that).
 *
 * Everything else the module calls builds unchanged against both kernels'
 * headers (make KVER=...); the interfaces that differ are below.
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/version.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/* vm_flags became read-only with accessors in 6.3. */
static inline void sroce_vm_flags_clear(struct vm_area_struct *vma,
					unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/*
 * ib_device_ops.create_cq takes the whole uverbs_attr_bundle since 6.10 (NULL
 * for kernel CQs) instead of the driver's ib_udata. sroce's create_cq keeps
 * the ib_udata form; SROCE_CREATE_CQ_OP(fn) names the op for ib_device_ops.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata);

static inline int sroce_create_cq_attrs(struct ib_cq *ibcq,
					const struct ib_cq_init_attr *attr,
					struct uverbs_attr_bundle *attrs)
{
	return sroce_create_cq(ibcq, attr, attrs ? &attrs->driver_udata : NULL);
}

#define SROCE_CREATE_CQ_OP sroce_create_cq_attrs
#else
#define SROCE_CREATE_CQ_OP sroce_create_cq
#endif

/*
 * Whether the netdev has tc ingress filters (or BPF programs): a clsact or
 * ingress qdisc's mini_Qdisc before 6.6, tcx entries since.
 */
static inline bool sroce_tc_ingress(const struct net_device *ndev)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
#ifdef CONFIG_NET_XGRESS
	return rcu_access_pointer(ndev->tcx_ingress);
#else
	return false;
#endif
#else
#ifdef CONFIG_NET_CLS_ACT
	return rcu_access_pointer(ndev->miniq_ingress);
#else
	return false;
#endif
#endif
}

#endif /* SROCE_COMPAT_H */
