// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - the CRC-32 behind the ICRC: which implementation computes it.
 *
 * Every RoCE v2 packet's ICRC is a CRC-32 (IEEE 802.3 polynomial) over
 * nearly the whole packet, computed once when it is sent and once when it
 * is received: with the payload copy, the only per-byte work of the data
 * path. Three implementations are at hand:
 *
 *  - crc32_le(), the library's table-driven CRC (slice-by-8), plain integer
 *    code that runs anywhere;
 *  - sroce_crc32_sparse() (include/sroce/wire.c): reduction modulo a sparse
 *    multiple of the polynomial, shifts and XORs in registers and crc32_le()
 *    for the last 21 to 28 bytes; also plain integer code;
 *  - the crypto API's "crc32" hash, which on x86 is crc32-pclmul: folding
 *    with carry-less multiplication, several times faster than either on
 *    real CPUs (rdma_rxe computes its ICRC this way). It needs the
 *    kernel-mode FPU; where that cannot be used (crypto_simd_usable()) the
 *    driver falls back to crc32_le() by itself.
 *
 * Which one is fastest depends on the machine: under an emulating CPU
 * (QEMU's TCG) every table load is a checked memory access and the
 * carry-less multiply is itself emulated, so the sparse reduction wins by
 * about 3.5x over the table and the table by about 2x over the crypto
 * driver. So, as the kernel picks its RAID-6 and XOR routines, sroce times
 * them on a 4 KiB buffer when the module loads and keeps the fastest ("auto",
 * the default); the crypto driver only where it takes at most 3/4 of the
 * best integer code's time. The "icrc" module parameter can force one
 * ("crc32_le", "sparse" or "crypto"); reading it back gives the
 * implementation in use: "crc32_le", "sparse" or the crypto driver's name.
 *
 * All compute the same raw register update (no pre- or post-inversion), so
 * the choice changes nothing on the wire; the load-time measurement also
 * checks that they agree with crc32_le() before another one is used.
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
	SROCE_ICRC_SPARSE,
	SROCE_ICRC_CRYPTO,
};

static const char *const sroce_icrc_modes[] = {
	[SROCE_ICRC_AUTO]	= "auto",
	[SROCE_ICRC_CRC32_LE]	= "crc32_le",
	[SROCE_ICRC_SPARSE]	= "sparse",
	[SROCE_ICRC_CRYPTO]	= "crypto",
};

static enum sroce_icrc_mode sroce_icrc_mode;
static struct crypto_shash *sroce_icrc_tfm;
/* What the parameter reads back: the tfm may be gone while it is read. */
static char sroce_icrc_in_use[CRYPTO_MAX_ALG_NAME] = "crc32_le";
static DEFINE_STATIC_KEY_FALSE(sroce_icrc_by_crypto);
static DEFINE_STATIC_KEY_FALSE(sroce_icrc_by_sparse);

/*
 * Shorter buffers (the masked headers, small chunks of a received skb) go
 * to crc32_le() either way: crc32-pclmul itself hands anything under 64
 * bytes to it, after the indirect call, and the sparse reduction leaves
 * 21 to 28 bytes to it.
 */
#define SROCE_ICRC_LONG		SROCE_CRC32_SPARSE_MIN

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
	if (len >= SROCE_ICRC_LONG) {
		if (static_branch_unlikely(&sroce_icrc_by_sparse))
			return sroce_crc32_sparse(crc, buf, len);
		if (static_branch_unlikely(&sroce_icrc_by_crypto))
			return sroce_icrc_crypto(crc, buf, len);
	}
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

/*
 * The crypto API's crc32, if it keeps the bare register as its state (then
 * sroce_icrc_crypto() can drive it); NULL otherwise, said in *why.
 */
static struct crypto_shash *sroce_icrc_get_tfm(char *why, size_t size)
{
	struct crypto_shash *tfm = crypto_alloc_shash("crc32", 0, 0);

	if (IS_ERR(tfm)) {
		snprintf(why, size, "no crypto crc32: %ld", PTR_ERR(tfm));
		return NULL;
	}
	if (crypto_shash_descsize(tfm) != sizeof(u32)) {
		snprintf(why, size, "%s keeps %u bytes of state",
			 crypto_tfm_alg_driver_name(crypto_shash_tfm(tfm)),
			 crypto_shash_descsize(tfm));
		crypto_free_shash(tfm);
		return NULL;
	}
	return tfm;
}

enum sroce_icrc_impl {
	SROCE_IMPL_LIB,
	SROCE_IMPL_SPARSE,
	SROCE_IMPL_CRYPTO,
	SROCE_IMPL_NR,
};

struct sroce_icrc_cand {
	const char *name;
	u32 (*fn)(u32 crc, const void *buf, size_t len);
	u64 ns;		/* per 4 KiB, 0 if not timed */
	bool ok;	/* timed and agrees with crc32_le() */
};

/* "ICRC by sparse: 1839 ns per 4 KiB (crc32_le: 6599 ns, ...)" */
static void sroce_icrc_log(const struct sroce_icrc_cand *c, int chosen)
{
	char others[3 * (CRYPTO_MAX_ALG_NAME + 32)];
	size_t n = 0;
	int i;

	for (i = 0; i < SROCE_IMPL_NR; i++) {
		if (i == chosen || !c[i].ns)
			continue;
		n += scnprintf(others + n, sizeof(others) - n, "%s%s: %llu ns",
			       n ? ", " : "", c[i].name, c[i].ns);
	}
	if (c[chosen].ns)
		pr_info("ICRC by %s: %llu ns per 4 KiB (%s)\n", c[chosen].name,
			c[chosen].ns, n ? others : "nothing else timed");
	else
		pr_info("ICRC by %s (not timed)\n", c[chosen].name);
}

void sroce_icrc_init(void)
{
	struct sroce_icrc_cand c[SROCE_IMPL_NR] = {
		[SROCE_IMPL_LIB]	= { "crc32_le", sroce_icrc_lib },
		[SROCE_IMPL_SPARSE]	= { "sparse", sroce_crc32_sparse },
		[SROCE_IMPL_CRYPTO]	= { NULL, sroce_icrc_crypto },
	};
	const size_t len = 4096;
	char why[CRYPTO_MAX_ALG_NAME + 40] = "";
	int i, chosen = SROCE_IMPL_LIB;
	size_t j;
	u32 ref = 0;
	u8 *buf;

	if (sroce_icrc_mode == SROCE_ICRC_CRC32_LE)
		goto out;
	if (sroce_icrc_mode != SROCE_ICRC_SPARSE)
		sroce_icrc_tfm = sroce_icrc_get_tfm(why, sizeof(why));
	if (sroce_icrc_tfm)
		c[SROCE_IMPL_CRYPTO].name =
			crypto_tfm_alg_driver_name(crypto_shash_tfm(sroce_icrc_tfm));
	else if (sroce_icrc_mode == SROCE_ICRC_CRYPTO)
		pr_info("icrc=crypto: %s, using crc32_le\n", why);

	buf = kmalloc(len, GFP_KERNEL);
	if (!buf)
		goto out;
	for (j = 0; j < len; j++)
		buf[j] = j * 151 + (j >> 8);
	for (i = 0; i < SROCE_IMPL_NR; i++) {
		u32 crc;

		if (!c[i].name)
			continue;
		c[i].ns = max_t(u64, sroce_icrc_time(c[i].fn, buf, len, &crc), 1);
		if (i == SROCE_IMPL_LIB)
			ref = crc;
		c[i].ok = crc == ref;
		if (!c[i].ok)
			pr_err("%s disagrees with crc32_le (%08x, %08x): not used\n",
			       c[i].name, crc, ref);
	}
	kfree(buf);

	switch (sroce_icrc_mode) {
	case SROCE_ICRC_SPARSE:
		if (c[SROCE_IMPL_SPARSE].ok)
			chosen = SROCE_IMPL_SPARSE;
		break;
	case SROCE_ICRC_CRYPTO:
		if (c[SROCE_IMPL_CRYPTO].ok)
			chosen = SROCE_IMPL_CRYPTO;
		break;
	default:
		if (c[SROCE_IMPL_SPARSE].ok &&
		    c[SROCE_IMPL_SPARSE].ns < c[SROCE_IMPL_LIB].ns)
			chosen = SROCE_IMPL_SPARSE;
		/*
		 * Keep the crypto path only where it clearly pays: crc32-generic,
		 * for one, is crc32_le() behind an indirect call.
		 */
		if (c[SROCE_IMPL_CRYPTO].ok &&
		    c[SROCE_IMPL_CRYPTO].ns * 4 <= c[chosen].ns * 3)
			chosen = SROCE_IMPL_CRYPTO;
		break;
	}
out:
	strscpy(sroce_icrc_in_use, c[chosen].name, sizeof(sroce_icrc_in_use));
	sroce_icrc_log(c, chosen);
	if (chosen == SROCE_IMPL_SPARSE)
		static_branch_enable(&sroce_icrc_by_sparse);
	if (chosen == SROCE_IMPL_CRYPTO) {
		static_branch_enable(&sroce_icrc_by_crypto);
		return;
	}
	if (sroce_icrc_tfm)
		crypto_free_shash(sroce_icrc_tfm);
	sroce_icrc_tfm = NULL;
}

void sroce_icrc_fini(void)
{
	/* No device is left, so no packet is being built or checked. */
	static_branch_disable(&sroce_icrc_by_crypto);
	static_branch_disable(&sroce_icrc_by_sparse);
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
		 "CRC-32 for the ICRC: auto (time all at load, keep the fastest), crc32_le, sparse or crypto (the crypto API's crc32, e.g. crc32-pclmul); reads back the one in use");
