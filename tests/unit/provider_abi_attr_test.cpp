// SPDX-License-Identifier: GPL-2.0
// The sysfs ABI attribute parser and classifier (userspace/provider/abi_attr.*).
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "abi_attr.h"
#include "tmpdir.h"

namespace {

using sroce::attr_verdict;

bool parse(const std::string &s, uint32_t *v)
{
	return sroce::parse_abi_attr(s.data(), s.size(), v);
}

TEST(AbiAttrParse, AcceptsDecimalWithOptionalNewline)
{
	uint32_t v = 0;
	EXPECT_TRUE(parse("1\n", &v));
	EXPECT_EQ(v, 1u);
	EXPECT_TRUE(parse("1", &v));
	EXPECT_EQ(v, 1u);
	EXPECT_TRUE(parse("42\n", &v));
	EXPECT_EQ(v, 42u);
	EXPECT_TRUE(parse("007", &v));
	EXPECT_EQ(v, 7u);
	EXPECT_TRUE(parse("4294967295\n", &v));
	EXPECT_EQ(v, 4294967295u);
}

TEST(AbiAttrParse, RejectsEverythingElse)
{
	uint32_t v = 12345;
	for (const char *bad : {"", "\n", " 1", "1 ", "1\n\n", "\n1", "+1", "-1",
				"0x1", "1a", "one", "4294967296", "99999999999999999999"})
		EXPECT_FALSE(parse(bad, &v)) << "input: \"" << bad << "\"";
	EXPECT_FALSE(parse(std::string("1\0", 2), &v));
	EXPECT_FALSE(parse(std::string("\0" "1", 2), &v));
	EXPECT_EQ(v, 12345u) << "output must be untouched on failure";
}

TEST(AbiAttrParse, SupportedRangeIsTheHeaderVersion)
{
	EXPECT_FALSE(sroce::abi_supported(0));
	// rxe, siw and every other provider use small ABI numbers: never ours.
	EXPECT_FALSE(sroce::abi_supported(1));
	EXPECT_TRUE(sroce::abi_supported(SROCE_UVERBS_ABI_VERSION));
	EXPECT_FALSE(sroce::abi_supported(SROCE_UVERBS_ABI_VERSION + 1));
}

class AbiAttrDir : public ::testing::Test {
protected:
	sroce_test::TmpDir tmp;
	std::filesystem::path dev = tmp.mkdir("class/infiniband/sroce0");

	attr_verdict check(uint32_t *v) { return sroce::check_ibdev_dir(dev.c_str(), v); }
	void put(const std::string &content)
	{
		sroce_test::TmpDir::write(dev / SROCE_SYSFS_ABI_ATTR, content);
	}
};

TEST_F(AbiAttrDir, NoAttributeIsNotOurs)
{
	uint32_t v = 0;
	EXPECT_EQ(check(&v), attr_verdict::absent);
}

TEST_F(AbiAttrDir, MissingDirectoryIsNotOurs)
{
	uint32_t v = 0;
	const auto gone = (tmp.path() / "class/infiniband/nodev").string();
	EXPECT_EQ(sroce::check_ibdev_dir(gone.c_str(), &v), attr_verdict::absent);
}

TEST_F(AbiAttrDir, CurrentVersionAccepted)
{
	put(std::to_string(SROCE_UVERBS_ABI_VERSION) + "\n");
	uint32_t v = 0;
	EXPECT_EQ(check(&v), attr_verdict::accepted);
	EXPECT_EQ(v, static_cast<uint32_t>(SROCE_UVERBS_ABI_VERSION));
}

TEST_F(AbiAttrDir, OtherVersionsUnsupported)
{
	uint32_t v = 0;
	put("0\n");
	EXPECT_EQ(check(&v), attr_verdict::unsupported);
	EXPECT_EQ(v, 0u);
	put(std::to_string(SROCE_UVERBS_ABI_VERSION + 1) + "\n");
	EXPECT_EQ(check(&v), attr_verdict::unsupported);
	EXPECT_EQ(v, static_cast<uint32_t>(SROCE_UVERBS_ABI_VERSION + 1));
}

TEST_F(AbiAttrDir, GarbageIsMalformed)
{
	uint32_t v = 0;
	put("");
	EXPECT_EQ(check(&v), attr_verdict::malformed);
	put("sroce\n");
	EXPECT_EQ(check(&v), attr_verdict::malformed);
	put(std::string(4096, '1'));
	EXPECT_EQ(check(&v), attr_verdict::malformed);
}

TEST_F(AbiAttrDir, DirectoryInsteadOfFileIsMalformed)
{
	std::filesystem::create_directory(dev / SROCE_SYSFS_ABI_ATTR);
	uint32_t v = 0;
	EXPECT_EQ(check(&v), attr_verdict::malformed);
}

TEST_F(AbiAttrDir, OverlongPathIsMalformed)
{
	const std::string huge = "/" + std::string(600, 'x');
	uint32_t v = 0;
	EXPECT_EQ(sroce::check_ibdev_dir(huge.c_str(), &v), attr_verdict::malformed);
}

} // namespace
