// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "abi_attr.h"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace sroce {

bool parse_abi_attr(const char *text, size_t len, uint32_t *version)
{
	if (len > 0 && text[len - 1] == '\n')
		len--;
	if (len == 0)
		return false;

	uint64_t value = 0;
	for (size_t i = 0; i < len; i++) {
		const char c = text[i];
		if (c < '0' || c > '9')
			return false;
		value = value * 10 + static_cast<uint64_t>(c - '0');
		if (value > UINT32_MAX)
			return false;
	}
	*version = static_cast<uint32_t>(value);
	return true;
}

attr_verdict check_ibdev_dir(const char *ibdev_dir, uint32_t *version)
{
	char path[512];
	const int n = std::snprintf(path, sizeof(path), "%s/%s", ibdev_dir,
				    SROCE_SYSFS_ABI_ATTR);
	if (n < 0 || static_cast<size_t>(n) >= sizeof(path))
		return attr_verdict::malformed;

	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return (errno == ENOENT || errno == ENOTDIR) ? attr_verdict::absent
							      : attr_verdict::malformed;

	/* The attribute is a few bytes; anything that fills the buffer is bad. */
	char buf[32];
	size_t used = 0;
	for (;;) {
		const ssize_t got = read(fd, buf + used, sizeof(buf) - used);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return attr_verdict::malformed;
		}
		if (got == 0)
			break;
		used += static_cast<size_t>(got);
		if (used == sizeof(buf)) {
			close(fd);
			return attr_verdict::malformed;
		}
	}
	close(fd);

	uint32_t v = 0;
	if (!parse_abi_attr(buf, used, &v))
		return attr_verdict::malformed;
	*version = v;
	return abi_supported(v) ? attr_verdict::accepted
				: attr_verdict::unsupported;
}

const char *attr_verdict_name(attr_verdict v)
{
	switch (v) {
	case attr_verdict::accepted:
		return "accepted";
	case attr_verdict::absent:
		return "absent";
	case attr_verdict::malformed:
		return "malformed";
	case attr_verdict::unsupported:
		return "unsupported";
	}
	return "?";
}

} // namespace sroce
