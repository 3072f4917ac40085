#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install everything sroce's build, QEMU rig and tests use, from Debian 12's archive.
# Idempotent: does nothing (and needs no network) when all packages are present.
set -euo pipefail

# Kernel flavours the rig boots. linux-image-amd64 pulls the current 6.1 image
# (the primary target and the default KVER); its headers come from
# linux-headers-amd64. Debian 12's 6.12 kernel (linux-image-6.12-amd64,
# linux-headers-6.12-amd64) is the second target, not installed here yet: the
# module builds for it, but make test does not run on it (work in progress).
PKGS=(
	# build
	build-essential make cmake g++ pkg-config kmod
	linux-image-amd64 linux-headers-amd64
	# checkpatch.pl for make check-style (unpacked from the source tarball)
	linux-source-6.1
	# packages (make deb) and the DKMS path tests/build/test_deb.py checks
	debhelper dh-dkms dkms devscripts fakeroot
	libibverbs-dev librdmacm-dev rdma-core googletest libgtest-dev
	# rig
	qemu-system-x86 busybox-static cpio gzip xz-utils iproute2 iputils-ping ethtool procps util-linux
	# verbs tools and tests
	ibverbs-utils ibverbs-providers perftest rdmacm-utils infiniband-diags
	python3-pyverbs python3-pytest python3-pytest-timeout python3-pexpect
	# storage and comparison traffic (later issues)
	nvme-cli fio targetcli-fb open-iscsi nfs-kernel-server nfs-common dbus
	iperf3 sockperf qperf tshark
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
