// SPDX-License-Identifier: GPL-2.0
/*
 * Small helpers shared by the test tools, verbs or not: errno formatting and
 * argument parsing. The verbs harness (verbs_harness.h) builds on them.
 */
#ifndef SROCE_TOOL_UTIL_H
#define SROCE_TOOL_UTIL_H

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sroce_tool {

/* "errno=95 (EOPNOTSUPP)" */
inline std::string errno_text(int err)
{
	const char *name = strerrorname_np(err);
	return "errno=" + std::to_string(err) + " (" + (name ? name : "?") + ")";
}

/* Parses a port number 1..255; false if s is not one. */
inline bool parse_port(const char *s, uint8_t *port)
{
	char *end = nullptr;
	const long v = std::strtol(s, &end, 10);
	if (!*s || *end || v < 1 || v > 255)
		return false;
	*port = static_cast<uint8_t>(v);
	return true;
}

/*
 * Command line "TOOL DEVICE [PORT]": sets *dev and *port (default 1), or
 * prints the usage and returns false.
 */
inline bool parse_device_args(int argc, char **argv, const char **dev, uint8_t *port)
{
	*port = 1;
	if (argc < 2 || argc > 3 || (argc == 3 && !parse_port(argv[2], port))) {
		std::fprintf(stderr, "usage: %s DEVICE [PORT]\n", argv[0]);
		return false;
	}
	*dev = argv[1];
	return true;
}

/*
 * A whole-string unsigned number (decimal, 0x hex or 0 octal) no larger
 * than max; false for anything else.
 */
inline bool parse_num(const std::string &s, uint64_t max, uint64_t *out)
{
	char *end = nullptr;
	errno = 0;
	const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
	if (s.empty() || *end || errno || v > max)
		return false;
	*out = v;
	return true;
}

/* parse_num, or usage("bad number S"), which must not return. */
inline uint64_t parse_num_or(const std::string &s, uint64_t max, void (*usage)(const char *))
{
	uint64_t v = 0;
	if (!parse_num(s, max, &v)) {
		usage(("bad number " + s).c_str());
		std::abort();
	}
	return v;
}

} // namespace sroce_tool

#endif /* SROCE_TOOL_UTIL_H */
