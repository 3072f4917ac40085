#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Kernel style gates, part of make test:
#  1. checkpatch.pl --strict on kernel/ reports nothing. compat.h is the one
#     file allowed to test LINUX_VERSION_CODE, so those two checks are off
#     for it alone.
#  2. No file but kernel/compat.h tests LINUX_VERSION_CODE (kernel/, include/).
# checkpatch.pl comes from $CHECKPATCH, else from Debian's linux-source-6.1
# tarball (scripts/install-deps.sh installs it), unpacked once into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

cp_dir=build/checkpatch
checkpatch=${CHECKPATCH:-$cp_dir/scripts/checkpatch.pl}
if [ ! -x "$checkpatch" ] && [ -z "${CHECKPATCH:-}" ]; then
	tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$tarball" ]; then
		echo "check-kernel-style: no checkpatch.pl: install linux-source-6.1 (scripts/install-deps.sh)" >&2
		exit 1
	fi
	top=$(basename "$tarball" .tar.xz)
	rm -rf "$cp_dir"
	mkdir -p "$cp_dir"
	tar -xJf "$tarball" -C "$cp_dir" --strip-components=1 \
		"$top/scripts/checkpatch.pl" "$top/scripts/spelling.txt" \
		"$top/scripts/const_structs.checkpatch"
fi

status=0
files=$(ls kernel/*.c kernel/*.h | grep -v '^kernel/compat\.h$')
# shellcheck disable=SC2086
if ! perl "$checkpatch" --no-tree --strict --terse --show-types -f $files; then
	status=1
fi
if ! perl "$checkpatch" --no-tree --strict --terse --show-types \
	--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON -f kernel/compat.h; then
	status=1
fi

others=$(grep -l 'LINUX_VERSION_CODE' kernel/* include/sroce/* include/uapi/rdma/* 2>/dev/null |
	grep -v '^kernel/compat\.h$' || true)
if [ -n "$others" ]; then
	echo "check-kernel-style: only kernel/compat.h may test LINUX_VERSION_CODE; also in:" >&2
	echo "$others" >&2
	status=1
fi
[ $status -eq 0 ] && echo "check-kernel-style: checkpatch --strict clean, LINUX_VERSION_CODE only in compat.h"
exit $status
