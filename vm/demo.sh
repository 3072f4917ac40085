#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run by "make demo" in each of two guests (GUEST_INDEX 0 and 1).
set -eu
echo "# rdma link add sroce0 type sroce netdev eth0   (sroce.ko loads on demand)"
rdma link add sroce0 type sroce netdev eth0
echo "# rdma link show"
rdma link show
echo "# ibv_devices"
ibv_devices
echo "# ibv_devinfo -d sroce0"
ibv_devinfo -d sroce0
echo "# GIDs of sroce0 port 1 (ib_core fills them from eth0's addresses)"
ibv_devinfo -v -d sroce0 | grep -E 'GID\['
