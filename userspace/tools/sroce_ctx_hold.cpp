// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-ctx-hold DEVICE [PORT]
 *
 * Holds a verbs context open across an event chosen by the caller (typically
 * removing the device or unloading the module), then reports what the context
 * sees afterwards. Protocol, one line each on stdout:
 *
 *   OPEN <device>                 context and PD are up; now waiting
 *   (caller writes a line to stdin or closes it)
 *   QUERY_PORT rc=0 state=<state>       or   QUERY_PORT rc=<errno> errno=<N> (<NAME>)
 *   DEALLOC_PD rc=<n>
 *   CLOSE rc=<n>
 *   DONE
 *
 * Exit status: 0 once DONE is printed (whatever the query returned), 1 if the
 * device could not be opened or the PD not allocated, 2 on bad usage or an
 * unknown device.
 *
 * A disassociated context (device gone) fails every command with EIO; the tool
 * sets RDMAV_ALLOW_DISASSOC_DESTROY=1 (unless already set) so libibverbs
 * reports destroy of such objects as success and frees them.
 */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <infiniband/verbs.h>

namespace {

std::string errno_text(int err)
{
	const char *name = strerrorname_np(err);
	return "errno=" + std::to_string(err) + " (" + (name ? name : "?") + ")";
}

int usage(const char *argv0)
{
	std::fprintf(stderr, "usage: %s DEVICE [PORT]\n", argv0);
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3)
		return usage(argv[0]);
	const char *want = argv[1];
	int port = 1;
	if (argc == 3) {
		char *end = nullptr;
		const long v = std::strtol(argv[2], &end, 10);
		if (!*argv[2] || *end || v < 1 || v > 255)
			return usage(argv[0]);
		port = static_cast<int>(v);
	}

	/* Must precede the first libibverbs call, which reads it. */
	setenv("RDMAV_ALLOW_DISASSOC_DESTROY", "1", 0);

	int num = 0;
	struct ibv_device **list = ibv_get_device_list(&num);
	if (!list) {
		std::fprintf(stderr, "ERROR ibv_get_device_list: %s\n",
			     errno_text(errno).c_str());
		return 2;
	}
	struct ibv_device *dev = nullptr;
	for (int i = 0; i < num; i++)
		if (std::strcmp(ibv_get_device_name(list[i]), want) == 0)
			dev = list[i];
	if (!dev) {
		std::fprintf(stderr, "ERROR device %s not found\n", want);
		ibv_free_device_list(list);
		return 2;
	}

	struct ibv_context *ctx = ibv_open_device(dev);
	if (!ctx) {
		std::fprintf(stderr, "ERROR ibv_open_device %s: %s\n", want,
			     errno_text(errno).c_str());
		ibv_free_device_list(list);
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd) {
		std::fprintf(stderr, "ERROR ibv_alloc_pd: %s\n",
			     errno_text(errno).c_str());
		ibv_close_device(ctx);
		ibv_free_device_list(list);
		return 1;
	}

	std::printf("OPEN %s\n", want);
	std::fflush(stdout);

	/* Wait for a line or EOF on stdin. */
	char line[256];
	(void)!std::fgets(line, sizeof(line), stdin);

	struct ibv_port_attr attr = {};
	const int qrc = ibv_query_port(ctx, static_cast<uint8_t>(port), &attr);
	if (qrc == 0)
		std::printf("QUERY_PORT rc=0 state=%s\n",
			    ibv_port_state_str(attr.state));
	else
		std::printf("QUERY_PORT rc=%d %s\n", qrc, errno_text(qrc).c_str());

	std::printf("DEALLOC_PD rc=%d\n", ibv_dealloc_pd(pd));
	std::printf("CLOSE rc=%d\n", ibv_close_device(ctx));
	ibv_free_device_list(list);
	std::printf("DONE\n");
	std::fflush(stdout);
	return 0;
}
