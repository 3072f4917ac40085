// SPDX-License-Identifier: GPL-2.0
// Provider descriptor, device matching and ops table, driven without a device.
#include <cstdlib>
#include <cstring>
#include <fnmatch.h>
#include <string>

#include <gtest/gtest.h>

#include "sroce.h"
#include "tmpdir.h"

namespace {

// A verbs_sysfs_dev as libibverbs builds it for a device found in sysfs.
struct FakeSysfsDev {
	verbs_sysfs_dev *dev = static_cast<verbs_sysfs_dev *>(
		std::calloc(1, sizeof(verbs_sysfs_dev)));

	FakeSysfsDev(const std::string &name, const std::filesystem::path &ibdev_path)
	{
		std::snprintf(dev->sysfs_name, sizeof(dev->sysfs_name), "uverbs0");
		std::snprintf(dev->ibdev_name, sizeof(dev->ibdev_name), "%s", name.c_str());
		std::snprintf(dev->ibdev_path, sizeof(dev->ibdev_path), "%s",
			      ibdev_path.c_str());
		dev->ibdev_idx = -1;
		dev->abi_ver = SROCE_UVERBS_ABI_VERSION;
	}
	~FakeSysfsDev() { std::free(dev); }
};

class Match : public ::testing::Test {
protected:
	sroce_test::TmpDir tmp;

	std::filesystem::path ibdev(const std::string &name, const char *attr)
	{
		auto p = tmp.mkdir("class/infiniband/" + name);
		sroce_test::TmpDir::write(p / "node_type", "1: CA\n");
		if (attr)
			sroce_test::TmpDir::write(p / SROCE_SYSFS_ABI_ATTR, attr);
		return p;
	}
};

TEST_F(Match, AcceptsSroceDeviceUnderAnyName)
{
	for (const char *name : {"sroce0", "rocep0s3", "ib7", "x"}) {
		const auto attr = std::to_string(SROCE_UVERBS_ABI_VERSION) + "\n";
		FakeSysfsDev d(name, ibdev(name, attr.c_str()));
		EXPECT_TRUE(sroce_match_device(d.dev)) << name;
	}
}

TEST_F(Match, LeavesOtherDevicesAlone)
{
	// rdma_rxe and hardware devices have no sroce attribute.
	for (const char *name : {"rxe0", "mlx5_0", "siw0", "sroce9"}) {
		FakeSysfsDev d(name, ibdev(name, nullptr));
		EXPECT_FALSE(sroce_match_device(d.dev)) << name;
	}
}

TEST_F(Match, RejectsUnsupportedOrBrokenAttribute)
{
	FakeSysfsDev newer("sroce1", ibdev("sroce1", "99\n"));
	EXPECT_FALSE(sroce_match_device(newer.dev));
	FakeSysfsDev broken("sroce2", ibdev("sroce2", "garbage"));
	EXPECT_FALSE(sroce_match_device(broken.dev));
}

TEST(DeviceOps, Descriptor)
{
	const verbs_device_ops &ops = sroce::device_ops;
	EXPECT_STREQ(ops.name, "sroce");
	EXPECT_EQ(ops.match_min_abi_version,
		  static_cast<uint32_t>(SROCE_UVERBS_ABI_VERSION));
	EXPECT_EQ(ops.match_max_abi_version,
		  static_cast<uint32_t>(SROCE_UVERBS_ABI_VERSION));
	EXPECT_EQ(ops.match_device, &sroce_match_device);
	EXPECT_EQ(ops.alloc_device, &sroce_alloc_device);
	EXPECT_EQ(ops.uninit_device, &sroce_uninit_device);
	EXPECT_EQ(ops.alloc_context, &sroce_alloc_context);
	EXPECT_EQ(ops.import_context, &sroce_import_context);
	EXPECT_EQ(ops.static_providers, nullptr);
}

// libibverbs (init.c match_name, v44) fnmatch()es table patterns against
// "rdma_device:N<ibdev_name>". Ours must let every name through so that
// match_device decides, and must be the only entry.
TEST(DeviceOps, TableMatchesEverySynthesisedName)
{
	const verbs_match_ent *t = sroce::device_ops.match_table;
	ASSERT_NE(t, nullptr);
	ASSERT_EQ(t[0].kind, SROCE_VERBS_MATCH_MODALIAS);
	for (const char *name : {"sroce0", "rxe0", "rocep0s3", "a"}) {
		const std::string synth = std::string("rdma_device:N") + name;
		EXPECT_EQ(fnmatch(t[0].u.modalias, synth.c_str(), 0), 0) << synth;
	}
	EXPECT_EQ(t[1].kind, SROCE_VERBS_MATCH_SENTINEL);
}

TEST(DeviceOps, AllocDeviceIsZeroedAndFreed)
{
	FakeSysfsDev d("sroce0", "/nonexistent");
	verbs_device *vdev = sroce_alloc_device(d.dev);
	ASSERT_NE(vdev, nullptr);
	const auto *bytes = reinterpret_cast<const unsigned char *>(vdev);
	for (size_t i = 0; i < sizeof(*vdev); i++)
		ASSERT_EQ(bytes[i], 0) << "byte " << i;
	sroce_uninit_device(vdev);
}

// Only the ops implemented so far are set; the rest must stay NULL so that
// libibverbs keeps its EOPNOTSUPP defaults.
TEST(ContextOps, OnlyImplementedOpsAreSet)
{
	const verbs_context_ops &ops = sroce::context_ops;
	EXPECT_EQ(ops.advise_mr, &sroce_advise_mr);
	EXPECT_EQ(ops.alloc_mw, &sroce_alloc_mw);
	EXPECT_EQ(ops.alloc_pd, &sroce_alloc_pd);
	EXPECT_EQ(ops.bind_mw, &sroce_bind_mw);
	EXPECT_EQ(ops.close_xrcd, &sroce_close_xrcd);
	EXPECT_EQ(ops.attach_mcast, &sroce_attach_mcast);
	EXPECT_EQ(ops.import_pd, &sroce_import_pd);
	EXPECT_EQ(ops.import_mr, &sroce_import_mr);
	EXPECT_EQ(ops.detach_mcast, &sroce_detach_mcast);
	EXPECT_EQ(ops.dealloc_mw, &sroce_dealloc_mw);
	EXPECT_EQ(ops.create_ah, &sroce_create_ah);
	EXPECT_EQ(ops.create_cq, &sroce_create_cq);
	EXPECT_EQ(ops.create_cq_ex, &sroce_create_cq_ex);
	EXPECT_EQ(ops.create_qp, &sroce_create_qp);
	EXPECT_EQ(ops.create_qp_ex, &sroce_create_qp_ex);
	EXPECT_EQ(ops.create_srq, &sroce_create_srq);
	EXPECT_EQ(ops.create_srq_ex, &sroce_create_srq_ex);
	EXPECT_EQ(ops.get_srq_num, &sroce_get_srq_num);
	EXPECT_EQ(ops.open_qp, &sroce_open_qp);
	EXPECT_EQ(ops.open_xrcd, &sroce_open_xrcd);
	EXPECT_EQ(ops.dealloc_pd, &sroce_dealloc_pd);
	EXPECT_EQ(ops.dereg_mr, &sroce_dereg_mr);
	EXPECT_EQ(ops.destroy_ah, &sroce_destroy_ah);
	EXPECT_EQ(ops.destroy_cq, &sroce_destroy_cq);
	EXPECT_EQ(ops.destroy_qp, &sroce_destroy_qp);
	EXPECT_EQ(ops.destroy_srq, &sroce_destroy_srq);
	EXPECT_EQ(ops.free_context, &sroce_free_context);
	EXPECT_EQ(ops.modify_qp, &sroce_modify_qp);
	EXPECT_EQ(ops.modify_srq, &sroce_modify_srq);
	EXPECT_EQ(ops.poll_cq, &sroce_poll_cq);
	EXPECT_EQ(ops.post_recv, &sroce_post_recv);
	EXPECT_EQ(ops.post_send, &sroce_post_send);
	EXPECT_EQ(ops.post_srq_recv, &sroce_post_srq_recv);
	EXPECT_EQ(ops.query_device_ex, &sroce_query_device_ex);
	EXPECT_EQ(ops.query_port, &sroce_query_port);
	EXPECT_EQ(ops.query_qp, &sroce_query_qp);
	EXPECT_EQ(ops.query_srq, &sroce_query_srq);
	EXPECT_EQ(ops.reg_mr, &sroce_reg_mr);
	EXPECT_EQ(ops.req_notify_cq, &sroce_req_notify_cq);

	void *slots[sizeof(ops) / sizeof(void *)];
	static_assert(sizeof(slots) == sizeof(ops));
	std::memcpy(slots, &ops, sizeof(ops));
	const size_t set[] = {
		offsetof(verbs_context_ops, advise_mr),
		offsetof(verbs_context_ops, alloc_mw),
		offsetof(verbs_context_ops, alloc_parent_domain),
		offsetof(verbs_context_ops, alloc_pd),
		offsetof(verbs_context_ops, attach_mcast),
		offsetof(verbs_context_ops, bind_mw),
		offsetof(verbs_context_ops, close_xrcd),
		offsetof(verbs_context_ops, create_ah),
		offsetof(verbs_context_ops, create_cq),
		offsetof(verbs_context_ops, create_cq_ex),
		offsetof(verbs_context_ops, create_qp),
		offsetof(verbs_context_ops, create_qp_ex),
		offsetof(verbs_context_ops, create_srq),
		offsetof(verbs_context_ops, create_srq_ex),
		offsetof(verbs_context_ops, dealloc_mw),
		offsetof(verbs_context_ops, dealloc_pd),
		offsetof(verbs_context_ops, dereg_mr),
		offsetof(verbs_context_ops, detach_mcast),
		offsetof(verbs_context_ops, destroy_ah),
		offsetof(verbs_context_ops, destroy_cq),
		offsetof(verbs_context_ops, destroy_qp),
		offsetof(verbs_context_ops, destroy_srq),
		offsetof(verbs_context_ops, free_context),
		offsetof(verbs_context_ops, get_srq_num),
		offsetof(verbs_context_ops, import_mr),
		offsetof(verbs_context_ops, import_pd),
		offsetof(verbs_context_ops, modify_qp),
		offsetof(verbs_context_ops, modify_srq),
		offsetof(verbs_context_ops, open_qp),
		offsetof(verbs_context_ops, open_xrcd),
		offsetof(verbs_context_ops, poll_cq),
		offsetof(verbs_context_ops, post_recv),
		offsetof(verbs_context_ops, post_send),
		offsetof(verbs_context_ops, post_srq_recv),
		offsetof(verbs_context_ops, query_device_ex),
		offsetof(verbs_context_ops, query_port),
		offsetof(verbs_context_ops, query_qp),
		offsetof(verbs_context_ops, query_srq),
		offsetof(verbs_context_ops, reg_mr),
		offsetof(verbs_context_ops, req_notify_cq),
		offsetof(verbs_context_ops, rereg_mr),
		offsetof(verbs_context_ops, resize_cq),
		offsetof(verbs_context_ops, unimport_mr),
		offsetof(verbs_context_ops, unimport_pd),
	};
	for (size_t i = 0; i < std::size(slots); i++) {
		bool expected = false;
		for (size_t off : set)
			expected |= off == i * sizeof(void *);
		EXPECT_EQ(slots[i] != nullptr, expected) << "slot " << i;
	}
}

TEST(ObjectLayout, BackPointers)
{
	sroce::context ctx{};
	EXPECT_EQ(sroce::get_context(&ctx.vctx.context), &ctx);
	sroce::pd pd{};
	EXPECT_EQ(sroce::get_pd(&pd.ibv), &pd);
	sroce::device dev{};
	EXPECT_EQ(sroce::get_device(&dev.vdev), &dev);
}

} // namespace
