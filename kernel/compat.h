/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce - differences between the kernels sroce builds for (Debian 12's 6.1
 * and 6.12). This is the only file that may test LINUX_VERSION_CODE; the
 * rest of the module uses the names defined here.
 *
 * The device stage uses only interfaces that are identical in both kernels
 * as far as checked (rdma_link_ops, ib_device_ops.device_group,
 * ib_get_eth_speed, netdev_hold/netdev_put, ib_unregister_device_queued).
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/version.h>

#endif /* SROCE_COMPAT_H */
