#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Drives libsroce-rdmav34.so through Debian's real libibverbs against a fake
# sroce device (fake sysfs tree + fake_uverbs LD_PRELOAD, no kernel module):
# provider loading and device claiming in both provider orders, open/query/
# alloc_pd/close with the command and driver-data sizes sroce.ko will see,
# EOPNOTSUPP for unimplemented verbs, QPs/SRQs/AHs/extended CQs with their
# rings and doorbells, a disassociated context, and a kernel ABI mismatch.
#
# usage: provider_fake_device_test.sh PROVIDER_SO FAKE_UVERBS_SO OWNER PROBE HOLD VERBS_TEST
set -euo pipefail

provider_so=$1 fake_so=$2 owner=$3 probe=$4 hold=$5 verbs_test=$6
provider=${provider_so%-rdmav34.so}	# libibverbs appends the suffix itself

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sroce-fake-dev.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sys=$tmp/sys
log=$tmp/uverbs.log
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# dev_t of /dev/null, which the fake device nodes are redirected to.
null_dev=$(printf '%d:%d' "0x$(stat -c %t /dev/null)" "0x$(stat -c %T /dev/null)")

# add_dev INDEX NAME UVERBS_ABI [SROCE_ATTR_CONTENT]
add_dev() {
	local uv=$sys/class/infiniband_verbs/uverbs$1 ib=$sys/class/infiniband/$2
	mkdir -p "$uv" "$ib"
	echo "$2" >"$uv/ibdev"
	echo "$null_dev" >"$uv/dev"
	echo "$3" >"$uv/abi_version"
	echo "1: CA" >"$ib/node_type"
	if [ $# -ge 4 ]; then printf '%b' "$4" >"$ib/sroce_abi_version"; fi
}
mkdir -p "$sys/class/infiniband_verbs"
echo 6 >"$sys/class/infiniband_verbs/abi_version"
# The ABI version the provider supports, from the shared header.
hdr=$(dirname "$0")/../../include/uapi/rdma/sroce-abi.h
abi=$(($(sed -n 's/^#define SROCE_UVERBS_ABI_VERSION[[:space:]]*//p' "$hdr")))
bad_abi=$((abi + 1))
add_dev 0 sroce0 "$abi" "$abi\n"
add_dev 1 rocep0s3 "$abi" "$abi\n"	# an sroce device renamed by udev
add_dev 2 rxe0 2		# rdma_rxe: no sroce attribute
add_dev 3 sroce9 "$bad_abi" "$bad_abi\n"	# sroce device with an ABI we do not support
add_dev 4 foo0 1		# something else entirely

run() {
	SYSFS_PATH=$sys LD_PRELOAD=$fake_so SROCE_FAKE_UVERBS_LOG=$log \
		SROCE_FAKE_UVERBS_GONE=$tmp/gone timeout 60 "$@"
}

rxe_installed=0
for f in /usr/lib/*/libibverbs/librxe-rdmav34.so /usr/lib/libibverbs/librxe-rdmav34.so; do
	[ -e "$f" ] && rxe_installed=1
done

# 1. Claiming, with sroce registered before and after rxe.
for order in "$provider:rxe" "rxe:$provider"; do
	out=$(RDMAV_DRIVERS=$order run "$owner" 2>"$tmp/owner.err")
	grep -qx 'sroce0 sroce' <<<"$out" || fail "[$order] sroce0 not claimed by sroce"
	grep -qx 'rocep0s3 sroce' <<<"$out" || fail "[$order] renamed device not claimed by sroce"
	grep -q '^rxe0 sroce$' <<<"$out" && fail "[$order] sroce stole rxe0"
	if [ $rxe_installed = 1 ]; then
		grep -qx 'rxe0 rxe' <<<"$out" || fail "[$order] rxe0 not claimed by rxe"
	fi
	grep -q '^sroce9 ' <<<"$out" && fail "[$order] device with unsupported ABI claimed"
	grep -q '^foo0 sroce$' <<<"$out" && fail "[$order] sroce claimed foo0"
	grep -q "sroce9 has kernel ABI $bad_abi" "$tmp/owner.err" ||
		fail "[$order] no warning for unsupported ABI"
done
[ $failures = 0 ] && pass "device claiming"

# 2. Implemented verbs work, the others fail with EOPNOTSUPP.
rm -f "$log"
if RDMAV_DRIVERS=$provider run "$probe" sroce0 >"$tmp/probe.out" 2>&1 &&
	grep -q '^RESULT: PASS' "$tmp/probe.out" && grep -q '^close_device: ok' "$tmp/probe.out"; then
	pass "sroce-verbs-probe"
else
	cat "$tmp/probe.out"
	fail "sroce-verbs-probe"
fi
for verb in alloc_dm alloc_td create_wq modify_cq; do
	grep -qx "$verb: errno=95 (EOPNOTSUPP)" "$tmp/probe.out" ||
		fail "sroce-verbs-probe: $verb did not fail with EOPNOTSUPP"
done
# Legacy command sizes as sroce.ko sees them (header + core + driver data):
# GET_CONTEXT 16 in / 8+8 out, QUERY_PORT 24 / 40, ALLOC_PD 16 / 4+8 out,
# CREATE_CQ 40 / 8+24, CREATE_QP 64 / 32+56, CREATE_SRQ 40 / 16+32,
# OPEN_XRCD 24 / 4, CLOSE_XRCD 12 / 0 (no driver data either way).
for want in 'cmd=0 in=16 out=16' 'cmd=2 in=24 out=40' 'cmd=3 in=16 out=12' 'cmd=4 in=12 out=0' \
	'cmd=18 in=40 out=32' 'cmd=24 in=64 out=88' 'cmd=32 in=40 out=48' \
	'cmd=37 in=24 out=4' 'cmd=38 in=12 out=0'; do
	grep -qx "$want" "$log" || fail "command sizes: no '$want' in: $(tr '\n' ' ' <"$log")"
done

# 2b. QPs, SRQs, AHs and extended CQs through libibverbs: rings, doorbells
# (one per post_send, none for receives), completions from the fake engine.
rm -f "$log"
if SROCE_FAKE_DEVICE=sroce0 RDMAV_DRIVERS=$provider run "$verbs_test" >"$tmp/verbs.out" 2>&1; then
	pass "fake-device verbs"
else
	cat "$tmp/verbs.out"
	fail "fake-device verbs"
fi
# With the send engine busy (sq_idle 0) post_send never rings.
rm -f "$log"
if SROCE_FAKE_UVERBS_BUSY=1 SROCE_FAKE_DEVICE=sroce0 RDMAV_DRIVERS=$provider \
	run "$verbs_test" >"$tmp/busy.out" 2>&1 && ! grep -q '^cmd=28 ' "$log"; then
	pass "no doorbell while busy"
else
	cat "$tmp/busy.out"
	fail "no doorbell while busy"
fi

# 3. Holding a context; the device stays.
out=$(echo go | RDMAV_DRIVERS=$provider run "$hold" rocep0s3 2>/dev/null) || fail "sroce-ctx-hold exit $?"
grep -qx 'OPEN rocep0s3' <<<"$out" && grep -qx 'QUERY_PORT rc=0 state=active' <<<"$out" &&
	grep -qx 'DONE' <<<"$out" && pass "ctx-hold, device present" ||
	fail "ctx-hold, device present: $out"

# 4. Holding a context while the device goes away (disassociation: EIO).
mkfifo "$tmp/in"
RDMAV_DRIVERS=$provider run "$hold" sroce0 <"$tmp/in" >"$tmp/hold.out" 2>"$tmp/hold.err" &
pid=$!
exec 3>"$tmp/in"
for _ in $(seq 100); do
	grep -q '^OPEN' "$tmp/hold.out" && break
	sleep 0.1
done
touch "$tmp/gone"
exec 3>&-
if wait $pid; then :; else fail "ctx-hold (gone) exit $?"; fi
rm -f "$tmp/gone"
grep -qx 'QUERY_PORT rc=5 errno=5 (EIO)' "$tmp/hold.out" && grep -qx 'DONE' "$tmp/hold.out" &&
	pass "ctx-hold, device gone" || fail "ctx-hold, device gone: $(cat "$tmp/hold.out")"

# 5. The kernel answers get_context with an ABI we do not support.
if SROCE_FAKE_UVERBS_ABI=$bad_abi RDMAV_DRIVERS=$provider run "$hold" sroce0 </dev/null >/dev/null 2>"$tmp/abi.err"; then
	fail "open succeeded despite kernel ABI $bad_abi"
else
	grep -q 'EPROTO' "$tmp/abi.err" && pass "kernel ABI mismatch refused" ||
		fail "kernel ABI mismatch: $(cat "$tmp/abi.err")"
fi

[ $failures = 0 ] && echo "PASS" || { echo "FAIL ($failures)"; exit 1; }
