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
echo "# RoCE v2 GIDs of sroce0 port 1"
cd /sys/class/infiniband/sroce0/ports/1
for i in $(ls gids | sort -n); do
	t=$(cat "gid_attrs/types/$i" 2>/dev/null || true)
	g=$(cat "gids/$i")
	[ "$g" = "0000:0000:0000:0000:0000:0000:0000:0000" ] && continue
	echo "  GID[$i] $g ${t}"
done
