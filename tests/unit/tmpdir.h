// SPDX-License-Identifier: GPL-2.0
// A scratch directory for tests that fake sysfs files; removed afterwards.
#ifndef SROCE_TESTS_UNIT_TMPDIR_H
#define SROCE_TESTS_UNIT_TMPDIR_H

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace sroce_test {

class TmpDir {
public:
	TmpDir()
	{
		const char *base = std::getenv("TMPDIR");
		std::string tmpl = std::string(base && *base ? base : "/tmp") +
				   "/sroce-unit-XXXXXX";
		if (!mkdtemp(tmpl.data()))
			std::abort();
		path_ = tmpl;
	}
	~TmpDir() { std::filesystem::remove_all(path_); }
	TmpDir(const TmpDir &) = delete;
	TmpDir &operator=(const TmpDir &) = delete;

	const std::filesystem::path &path() const { return path_; }

	// Creates <tmp>/<dir> and returns its path.
	std::filesystem::path mkdir(const std::string &dir) const
	{
		auto p = path_ / dir;
		std::filesystem::create_directories(p);
		return p;
	}

	static void write(const std::filesystem::path &file, const std::string &content)
	{
		std::ofstream(file, std::ios::binary) << content;
	}

private:
	std::filesystem::path path_;
};

} // namespace sroce_test

#endif
