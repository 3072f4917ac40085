// SPDX-License-Identifier: GPL-2.0
// The built libsroce-rdmav34.so loads the way libibverbs loads providers
// (dynamic_driver.c v44: dlopen(path, RTLD_NOW)), i.e. every symbol it needs
// from libibverbs resolves at the version libibverbs 44 exports.
#include <dlfcn.h>

#include <gtest/gtest.h>

namespace {

TEST(ProviderLoad, DlopenNowSucceeds)
{
	void *h = dlopen(SROCE_PROVIDER_PATH, RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(h, nullptr) << dlerror();
	// Nothing of ours is visible through the handle.
	EXPECT_EQ(dlsym(h, "sroce_match_device"), nullptr);
	EXPECT_EQ(dlsym(h, "sroce_alloc_context"), nullptr);
	// Not closed: its constructor registered it with libibverbs, which keeps
	// a pointer to its descriptor.
}

} // namespace
