// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD stand-in for an sroce uverbs character device, so the provider
 * can be driven through the real libibverbs on a host without RDMA hardware
 * or the sroce module. Test use only.
 *
 *  - socket(AF_NETLINK, *, NETLINK_RDMA) fails, so libibverbs falls back to
 *    scanning sysfs, which SYSFS_PATH points at a fake tree;
 *  - stat()/open() of /dev/infiniband/uverbsN are redirected to /dev/null (a
 *    real character device whose dev_t the fake sysfs tree advertises);
 *  - ioctl() on it fails with ENOTTY by itself, so libibverbs uses the legacy
 *    write() commands, which are answered here the way sroce.ko answers them.
 *
 * Environment:
 *   SROCE_FAKE_UVERBS_LOG   append "cmd=<n> in=<bytes> out=<bytes>" per command
 *   SROCE_FAKE_UVERBS_GONE  once this file exists, every command fails with
 *                           EIO (a disassociated context)
 *   SROCE_FAKE_UVERBS_ABI   abi_version put in sroce_alloc_ucontext_resp
 *                           (default SROCE_UVERBS_ABI_VERSION)
 */
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>

#include <rdma/sroce-abi.h>

namespace {

constexpr char kDevPrefix[] = "/dev/infiniband/uverbs";
constexpr int kMaxFd = 4096;
bool fake_fd[kMaxFd];

template <typename Fn>
Fn real(const char *name)
{
	return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

bool is_fake_path(const char *path)
{
	return path && std::strncmp(path, kDevPrefix, sizeof(kDevPrefix) - 1) == 0;
}

bool is_fake_fd(int fd)
{
	return fd >= 0 && fd < kMaxFd && fake_fd[fd];
}

void log_cmd(const ib_uverbs_cmd_hdr *h)
{
	const char *path = std::getenv("SROCE_FAKE_UVERBS_LOG");
	if (!path)
		return;
	if (FILE *f = std::fopen(path, "a")) {
		std::fprintf(f, "cmd=%u in=%u out=%u\n", h->command,
			     h->in_words * 4u, h->out_words * 4u);
		std::fclose(f);
	}
}

bool gone()
{
	const char *path = std::getenv("SROCE_FAKE_UVERBS_GONE");
	return path && access(path, F_OK) == 0;
}

template <typename T>
void put(void *resp, size_t resp_len, size_t offset, const T &value)
{
	if (offset + sizeof(T) <= resp_len)
		std::memcpy(static_cast<char *>(resp) + offset, &value, sizeof(T));
}

/* Returns 0 or an errno value. */
int answer(const void *buf, size_t len)
{
	const auto *h = static_cast<const ib_uverbs_cmd_hdr *>(buf);
	log_cmd(h);
	if (gone())
		return EIO;
	if (h->command & IB_USER_VERBS_CMD_FLAG_EXTENDED)
		return EOPNOTSUPP;
	if (h->command == IB_USER_VERBS_CMD_DEALLOC_PD)
		return len == sizeof(*h) + sizeof(ib_uverbs_dealloc_pd) ? 0 : EINVAL;
	/* Every other command handled here starts with the response pointer. */
	if (len < sizeof(*h) + sizeof(uint64_t))
		return EINVAL;

	const auto *req = static_cast<const char *>(buf) + sizeof(*h);
	uint64_t response;
	std::memcpy(&response, req, sizeof(response));
	void *resp = reinterpret_cast<void *>(static_cast<uintptr_t>(response));
	const size_t out = h->out_words * 4u;

	switch (h->command) {
	case IB_USER_VERBS_CMD_GET_CONTEXT: {
		ib_uverbs_get_context_resp core = {};
		core.async_fd = static_cast<uint32_t>(eventfd(0, EFD_CLOEXEC));
		core.num_comp_vectors = 1;
		put(resp, out, 0, core);
		const char *abi = std::getenv("SROCE_FAKE_UVERBS_ABI");
		sroce_alloc_ucontext_resp drv = {};
		drv.abi_version = abi ? static_cast<uint32_t>(std::atoi(abi))
				      : SROCE_UVERBS_ABI_VERSION;
		put(resp, out, sizeof(core), drv);
		return 0;
	}
	case IB_USER_VERBS_CMD_QUERY_DEVICE: {
		ib_uverbs_query_device_resp r = {};
		r.fw_ver = (1ull << 32) | (2u << 16) | 3u;
		r.vendor_id = 0x5ce;
		r.max_qp = 64;
		r.max_cq = 64;
		r.max_mr = 64;
		r.max_pd = 64;
		r.phys_port_cnt = 1;
		put(resp, out, 0, r);
		return 0;
	}
	case IB_USER_VERBS_CMD_QUERY_PORT: {
		ib_uverbs_query_port_resp r = {};
		r.state = 4;		/* IBV_PORT_ACTIVE */
		r.max_mtu = 5;		/* 4096 */
		r.active_mtu = 3;	/* 1024 */
		r.gid_tbl_len = 16;
		r.pkey_tbl_len = 1;
		r.phys_state = 5;	/* LinkUp */
		r.link_layer = 2;	/* IBV_LINK_LAYER_ETHERNET */
		put(resp, out, 0, r);
		return 0;
	}
	case IB_USER_VERBS_CMD_ALLOC_PD: {
		put(resp, out, 0, uint32_t{7});		/* pd_handle */
		sroce_alloc_pd_resp drv = {};
		drv.pdn = 42;
		put(resp, out, sizeof(ib_uverbs_alloc_pd_resp), drv);
		return 0;
	}
	default:
		return ENOSYS;
	}
}

} // namespace

extern "C" {

int socket(int domain, int type, int protocol)
{
	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	return real<int (*)(int, int, int)>("socket")(domain, type, protocol);
}

int stat(const char *path, struct stat *st)
{
	if (is_fake_path(path))
		path = "/dev/null";
	return real<int (*)(const char *, struct stat *)>("stat")(path, st);
}

int open(const char *path, int flags, ...)
{
	unsigned int mode = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, unsigned int);
		va_end(ap);
	}

	const bool fake = is_fake_path(path);
	const int fd = real<int (*)(const char *, int, ...)>("open")(
		fake ? "/dev/null" : path, flags, mode);
	if (fake && fd >= 0 && fd < kMaxFd)
		fake_fd[fd] = true;
	return fd;
}

int close(int fd)
{
	if (fd >= 0 && fd < kMaxFd)
		fake_fd[fd] = false;
	return real<int (*)(int)>("close")(fd);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	if (!is_fake_fd(fd) || len < sizeof(ib_uverbs_cmd_hdr))
		return real<ssize_t (*)(int, const void *, size_t)>("write")(fd, buf, len);

	const int err = answer(buf, len);
	if (err) {
		errno = err;
		return -1;
	}
	return static_cast<ssize_t>(len);
}

} // extern "C"
