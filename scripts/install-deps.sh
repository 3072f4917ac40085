#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install everything sroce's build, QEMU rig and tests use, from Debian 12's archive.
# Idempotent: does nothing (and needs no network) when all packages are present.
set -euo pipefail

# Kernel flavours the rig boots: Debian 12's 6.1 (linux-image-amd64, the
# distribution default) and 6.12 (linux-image-6.12-amd64), each with its
# headers. 6.1 is the default KVER; make test runs every VM suite there and a
# subset on 6.12 (see the Makefile's KVER_OTHERS).
PKGS=(
	# build
	build-essential make cmake g++ pkg-config kmod
	linux-image-amd64 linux-headers-amd64
	linux-image-6.12-amd64 linux-headers-6.12-amd64
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
	# netfilter rules in a guest (tests/vm/test_net.py: direct receive steps aside)
	nftables
	# UCX (tests/vm/test_rdmacm.py: io_demo over RC and UD)
	ucx-utils
	# make bench's chart
	python3-matplotlib
	# documentation check (tests/build/test_docs.py)
	python3-docutils
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
