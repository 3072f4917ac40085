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

#include <infiniband/verbs.h>

#include "verbs_harness.h"

using sroce_tool::errno_text;

int main(int argc, char **argv)
{
	const char *want;
	uint8_t port;
	if (!sroce_tool::parse_device_args(argc, argv, &want, &port))
		return 2;

	/* Must precede the first libibverbs call, which reads it. */
	setenv("RDMAV_ALLOW_DISASSOC_DESTROY", "1", 0);

	bool not_found;
	struct ibv_context *ctx = sroce_tool::open_device(want, &not_found);
	if (!ctx) {
		if (not_found)
			return 2;
		std::fprintf(stderr, "ERROR ibv_open_device %s: %s\n", want,
			     errno_text(errno).c_str());
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd) {
		std::fprintf(stderr, "ERROR ibv_alloc_pd: %s\n",
			     errno_text(errno).c_str());
		ibv_close_device(ctx);
		return 1;
	}

	std::printf("OPEN %s\n", want);
	std::fflush(stdout);

	/* Wait for a line or EOF on stdin. */
	char line[256];
	(void)!std::fgets(line, sizeof(line), stdin);

	struct ibv_port_attr attr = {};
	const int qrc = ibv_query_port(ctx, port, &attr);
	if (qrc == 0)
		std::printf("QUERY_PORT rc=0 state=%s\n",
			    ibv_port_state_str(attr.state));
	else
		std::printf("QUERY_PORT rc=%d %s\n", qrc, errno_text(qrc).c_str());

	std::printf("DEALLOC_PD rc=%d\n", ibv_dealloc_pd(pd));
	std::printf("CLOSE rc=%d\n", ibv_close_device(ctx));
	std::printf("DONE\n");
	std::fflush(stdout);
	return 0;
}
