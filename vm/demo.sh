#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run by "make demo" in each of two guests (GUEST_INDEX 0 and 1), side by side.
# Each guest creates sroce0 on eth0 and shows it; then guest 0 serves and guest 1
# connects: an ibv_rc_pingpong with data check, and an ib_write_bw.
set -eu
DEV=sroce0
KIND=sroce

echo "# rdma link add $DEV type $KIND netdev eth0   (sroce.ko loads on demand)"
rdma link add $DEV type $KIND netdev eth0
echo "# rdma link show"
rdma link show
echo "# ibv_devices"
ibv_devices
echo "# ibv_devinfo -d $DEV"
ibv_devinfo -d $DEV
echo "# GIDs of $DEV port 1 (ib_core fills them from eth0's addresses)"
ibv_devinfo -v -d $DEV | grep -E 'GID\['

# ---- traffic between the guests over RoCE v2 (IPv4 GIDs)

SERVER_IP=10.99.0.1
MY_IP=$(ip -4 -o addr show dev eth0 | awk '{split($4, a, "/"); print a[1]; exit}')

# The index of the RoCE v2 GID holding MY_IP (IPv4-mapped): with an IPv4 and an
# IPv6 address on eth0 it is not always 1. ib_core adds GIDs asynchronously.
gid_index() {
	local want f i
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${MY_IP//./ })
	for i in $(seq 30); do
		for f in $(grep -lx "$want" /sys/class/infiniband/$DEV/ports/1/gids/* 2>/dev/null); do
			if [ "$(cat /sys/class/infiniband/$DEV/ports/1/gid_attrs/types/${f##*/} 2>/dev/null)" = "RoCE v2" ]; then
				echo ${f##*/}
				return 0
			fi
		done
		sleep 1
	done
	echo "no RoCE v2 GID for $MY_IP on $DEV" >&2
	return 1
}
GID=$(gid_index)

# The client runs until it gets past connecting to the server in the other
# guest, which may not listen yet (up to 60 tries, a second apart).
client() {
	local i out rc
	for i in $(seq 60); do
		rc=0
		out=$("$@" 2>&1) || rc=$?
		if [ $rc -eq 0 ] || ! grep -qE "Couldn't connect to|Unable to open file descriptor for socket connection" <<<"$out"; then
			break
		fi
		sleep 1
	done
	printf '%s\n' "$out"
	return $rc
}

PINGPONG="ibv_rc_pingpong -d $DEV -g $GID -c -s 4096 -n 100"
# perftest on its own TCP port, so it never meets the pingpong's
WRITE_BW="ib_write_bw -d $DEV -x $GID -F --report_gbits -s 65536 -n 300 -p 18516"

if [ "${GUEST_INDEX:-0}" = 0 ]; then
	echo "# $PINGPONG   (server; guest 1 connects; -c checks the data)"
	timeout 180 $PINGPONG
	echo "# $WRITE_BW   (server)"
	timeout 180 $WRITE_BW
else
	echo "# $PINGPONG $SERVER_IP   (client)"
	client timeout 180 $PINGPONG $SERVER_IP
	echo "# $WRITE_BW $SERVER_IP   (client: RDMA writes 300 x 64 KiB into guest 0)"
	client timeout 180 $WRITE_BW $SERVER_IP
fi
