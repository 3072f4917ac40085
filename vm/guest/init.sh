#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stage 2 of a rig guest: runs as PID 1 on the tmpfs root the initramfs built
# (host /usr and /etc overlaid read-write in memory, /src = the repository,
# read-only, /out = this guest's output directory). Reads /out/guest.conf.
set -u
export PATH=/usr/sbin:/usr/bin
mkdir -p /dev/pts /dev/shm /run /tmp /var/tmp /var/lib /var/log
mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
ln -sfn /run /var/run
ln -sfn /proc/self/fd /dev/fd
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
echo 1 > /proc/sys/kernel/sysrq

# shellcheck disable=SC1091
. /out/guest.conf
hostname "g$GUEST_INDEX"
echo "g$GUEST_INDEX" > /etc/hostname
{
	echo "127.0.0.1 localhost"
	for i in $(seq 0 $((GUEST_COUNT - 1))); do
		echo "$NET4_PREFIX.$((i + 1)) g$i"
		echo "$NET6_PREFIX::$((i + 1)) g$i"
	done
} > /etc/hosts
# The host's libibverbs configuration may list providers for hardware we do not
# have; keep it as installed, sroce.driver comes from the install tree.

ip link set lo up
ip link set eth0 mtu "$GUEST_MTU"
ip addr add "$NET4_PREFIX.$((GUEST_INDEX + 1))/24" dev eth0
ip -6 addr add "$NET6_PREFIX::$((GUEST_INDEX + 1))/64" dev eth0 nodad
ip link set eth0 up
if [ -n "${GUEST_NETEM:-}" ]; then
	modprobe sch_netem
	# shellcheck disable=SC2086
	tc qdisc add dev eth0 root netem $GUEST_NETEM
fi

# Install this build exactly as "make install" lays it out.
if [ -n "${INSTALL_TREE:-}" ] && [ -d "$INSTALL_TREE" ]; then
	# tar keeps /lib -> usr/lib (merged /usr) where cp -a would refuse.
	tar -C "$INSTALL_TREE" -cf - . | tar -C / -xf - --keep-directory-symlink
	# The rig ran depmod on the host (vm/rig.py host_depmod); only fall back
	# to the slow in-guest depmod without it.
	if [ -n "${DEPMOD_DIR:-}" ] && [ -d "$DEPMOD_DIR" ]; then
		cp "$DEPMOD_DIR"/modules.* "/lib/modules/$(uname -r)/"
	else
		depmod -a "$(uname -r)"
	fi
fi

python3 /src/vm/guest/agent.py > /out/agent.log 2>&1 &
while true; do
	wait
	sleep 1
done
