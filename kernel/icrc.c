// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - the CRC-32 behind the ICRC: which implementation computes it.
 *
 * Every RoCE v2 packet's ICRC is a CRC-32 (IEEE 802.3 polynomial) over
 * nearly the whole packet, computed once when it is sent and once when it
 * is received: with the payload copy, the only per-byte work of the data
 * path. Two implementations are at hand in the kernels sroce targets:
 *
 *  - crc32_le(), the library's table-driven CRC (slice-by-8), plain integer
 *    code that runs anywhere;
 *  - the crypto API's "crc32" hash, which on x86 is crc32-pclmul: folding
 *    with carry-less multiplication, several times faster on real CPUs
 *    (rdma_rxe computes its ICRC this way). It needs the kernel-mode FPU;
 *    where that cannot be used (crypto_simd_usable()) the driver falls back
 *    to crc32_le() by itself.
 *
 * Which one is faster depends on the machine: under an emulating CPU
 * (QEMU's TCG) the carry-less multiply is itself emulated, and the
 * table-driven code wins by about 2x. So, as the kernel picks its RAID-6 and
 * XOR routines, sroce times both on a 4 KiB buffer when the module loads and
 * keeps the faster one ("auto", the default). The "icrc" module parameter
 * can force either ("crc32_le" or "crypto"); reading it back gives the
 * implementation in use: "crc32_le" or the crypto driver's name.
 *
 * Both compute the same raw register update (no pre- or post-inversion), so
 * the choice changes nothing on the wire; the load-time measurement also
 * checks that they agree before the crypto driver is used.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/crc32.h>
#include <linux/jump_label.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <crypto/hash.h>

#include "sroce.h"

enum sroce_icrc_mode {
	SROCE_ICRC_AUTO,
	SROCE_ICRC_CRC32_LE,
	SROCE_ICRC_CRYPTO,
};

static const char *const sroce_icrc_modes[] = {
	[SROCE_ICRC_AUTO]	= "auto",
	[SROCE_ICRC_CRC32_LE]	= "crc32_le",
	[SROCE_ICRC_CRYPTO]	= "crypto",
};

static enum sroce_icrc_mode sroce_icrc_mode;
static struct crypto_shash *sroce_icrc_tfm;
/* What the parameter reads back: the tfm may be gone while it is read. */
static char sroce_icrc_in_use[CRYPTO_MAX_ALG_NAME] = "crc32_le";
static DEFINE_STATIC_KEY_FALSE(sroce_icrc_by_crypto);

/*
 * Shorter buffers (the masked headers, small chunks of a received skb) go
 * to crc32_le() either way: crc32-pclmul itself hands anything under 64
 * bytes to it, after the indirect call.
 */
#define SROCE_ICRC_CRYPTO_MIN	64

static u32 sroce_icrc_crypto(u32 crc, const void *buf, size_t len)
{
	/*
	 * SHASH_DESC_ON_STACK would reserve the largest context of any hash
	 * (hundreds of bytes, deep in the receive path); crc32's is the CRC
	 * register, 4 bytes, checked when the tfm was taken.
	 */
	char d[sizeof(struct shash_desc) + sizeof(u32)] CRYPTO_MINALIGN_ATTR;
	struct shash_desc *desc = (struct shash_desc *)d;
	u32 *ctx = shash_desc_ctx(desc);

	desc->tfm = sroce_icrc_tfm;
	*ctx = crc;
	/* crc32's update cannot fail: it has no key to miss. */
	crypto_shash_update(desc, buf, len);
	return *ctx;
}

u32 sroce_crc32_le(u32 crc, const void *buf, size_t len)
{
	if (static_branch_unlikely(&sroce_icrc_by_crypto) &&
	    len >= SROCE_ICRC_CRYPTO_MIN)
		return sroce_icrc_crypto(crc, buf, len);
	return crc32_le(crc, buf, len);
}

/* Best of a few rounds, in ns per call of fn over len bytes. */
static u64 sroce_icrc_time(u32 (*fn)(u32, const void *, size_t),
			   const void *buf, size_t len, u32 *out)
{
	u64 best = U64_MAX;
	int round, i;

	for (round = 0; round < 4; round++) {
		u64 t = ktime_get_ns();
		u32 crc = ~0u;

		for (i = 0; i < 4; i++)
			crc = fn(crc, buf, len);
		t = ktime_get_ns() - t;
		best = min(best, t);
		*out = crc;
	}
	return div_u64(best, 4);
}

static u32 sroce_icrc_lib(u32 crc, const void *buf, size_t len)
{
	return crc32_le(crc, buf, len);
}

void sroce_icrc_init(void)
{
	const size_t len = 4096;
	u64 t_lib, t_crypto;
	u32 c_lib, c_crypto;
	const char *drv;
	struct crypto_shash *tfm;
	u8 *buf;
	size_t i;

	if (sroce_icrc_mode == SROCE_ICRC_CRC32_LE)
		return;

	tfm = crypto_alloc_shash("crc32", 0, 0);
	if (IS_ERR(tfm)) {
		pr_info("ICRC by crc32_le (no crypto crc32: %ld)\n",
			PTR_ERR(tfm));
		return;
	}
	drv = crypto_tfm_alg_driver_name(crypto_shash_tfm(tfm));
	if (crypto_shash_descsize(tfm) != sizeof(u32)) {
		pr_info("ICRC by crc32_le (%s keeps %u bytes of state)\n",
			drv, crypto_shash_descsize(tfm));
		goto out_free;
	}

	buf = kmalloc(len, GFP_KERNEL);
	if (!buf)
		goto out_free;
	for (i = 0; i < len; i++)
		buf[i] = i * 151 + (i >> 8);
	sroce_icrc_tfm = tfm;
	t_lib = sroce_icrc_time(sroce_icrc_lib, buf, len, &c_lib);
	t_crypto = sroce_icrc_time(sroce_icrc_crypto, buf, len, &c_crypto);
	kfree(buf);

	if (c_lib != c_crypto) {
		pr_err("%s disagrees with crc32_le (%08x, %08x): ICRC by crc32_le\n",
		       drv, c_crypto, c_lib);
		goto out_clear;
	}
	/*
	 * Keep the crypto path only where it clearly pays: crc32-generic, for
	 * one, is crc32_le() behind an indirect call.
	 */
	if (sroce_icrc_mode == SROCE_ICRC_AUTO && t_crypto * 4 > t_lib * 3) {
		pr_info("ICRC by crc32_le: %llu ns per 4 KiB (%s: %llu ns)\n",
			t_lib, drv, t_crypto);
		goto out_clear;
	}
	pr_info("ICRC by %s: %llu ns per 4 KiB (crc32_le: %llu ns)\n",
		drv, t_crypto, t_lib);
	strscpy(sroce_icrc_in_use, drv, sizeof(sroce_icrc_in_use));
	static_branch_enable(&sroce_icrc_by_crypto);
	return;

out_clear:
	sroce_icrc_tfm = NULL;
out_free:
	crypto_free_shash(tfm);
}

void sroce_icrc_fini(void)
{
	/* No device is left, so no packet is being built or checked. */
	static_branch_disable(&sroce_icrc_by_crypto);
	if (sroce_icrc_tfm)
		crypto_free_shash(sroce_icrc_tfm);
	sroce_icrc_tfm = NULL;
}

static int sroce_icrc_param_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(sroce_icrc_modes, val);

	if (i < 0)
		return -EINVAL;
	sroce_icrc_mode = i;
	return 0;
}

static int sroce_icrc_param_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n", sroce_icrc_in_use);
}

static const struct kernel_param_ops sroce_icrc_param_ops = {
	.set = sroce_icrc_param_set,
	.get = sroce_icrc_param_get,
};

module_param_cb(icrc, &sroce_icrc_param_ops, NULL, 0444);
MODULE_PARM_DESC(icrc,
		 "CRC-32 for the ICRC: auto (time both at load, keep the faster), crc32_le or crypto (the crypto API's crc32, e.g. crc32-pclmul); reads back the one in use");
