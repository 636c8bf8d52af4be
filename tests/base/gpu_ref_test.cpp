// GPU names (index, cuda:N, GPU- and MIG- UUIDs) and their mapping through CUDA_VISIBLE_DEVICES
// onto this process's CUDA devices, with the UUIDs a GPU machine would report given by hand.
#include "core/base/gpu_ref.h"

#include <gtest/gtest.h>

#include "core/base/error.h"

namespace crucible {
namespace {

const std::string kUuidA = "GPU-8f2c41d0-1111-2222-3333-444455556666";
const std::string kUuidB = "GPU-0b7e9a12-aaaa-bbbb-cccc-ddddeeeeffff";
const std::string kMig = "GPU-7d3e0000-0000-4000-8000-00000000abcd";  // CUDA's uuid of a MIG slice

std::string error_of(const GpuRef& wanted, const std::optional<std::vector<GpuRef>>& visible,
                     const std::vector<std::string>& uuids) {
    try {
        (void)cuda_ordinal_of(wanted, visible, uuids);
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), "device");
        return e.what();
    }
    return "";
}

GpuRef ref(const char* text) {
    const auto r = parse_gpu_ref(text);
    EXPECT_TRUE(r.has_value()) << text;
    return r.value_or(GpuRef{});
}

TEST(GpuRef, ParsesTheFourSpellings) {
    EXPECT_EQ(ref("2").kind, GpuRef::Kind::MachineIndex);
    EXPECT_EQ(ref(" 2 ").index, 2);
    EXPECT_EQ(ref("CUDA:1").kind, GpuRef::Kind::CudaOrdinal);
    EXPECT_EQ(ref("cuda:1").index, 1);
    const GpuRef gpu = ref("GPU-8F2C41D0-1111");
    EXPECT_EQ(gpu.kind, GpuRef::Kind::Uuid);
    EXPECT_EQ(gpu.uuid, "8f2c41d0-1111");
    EXPECT_FALSE(gpu.mig);
    EXPECT_TRUE(ref("MIG-7d3e0000-0000-4000-8000-00000000abcd").mig);
}

TEST(GpuRef, RejectsWhatIsNoGpuName) {
    for (const char* bad : {"", "-1", "1.5", "cuda:", "cuda:x", "gpu-", "GPU-xyz", "MIG-", "1234",
                            "cuda:1,2", "0x1", "全部", "\xff\xfe"}) {
        EXPECT_FALSE(parse_gpu_ref(bad).has_value()) << bad;
    }
}

TEST(GpuRef, VisibleDevicesEndAtTheFirstInvalidEntryAsInCuda) {
    EXPECT_TRUE(parse_visible_devices("").empty());
    const auto v = parse_visible_devices("2,0,x,1");
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].index, 2);
    EXPECT_EQ(v[1].index, 0);
    const auto u = parse_visible_devices(kUuidB + ",MIG-7d3e");
    ASSERT_EQ(u.size(), 2u);
    EXPECT_EQ(u[0].kind, GpuRef::Kind::Uuid);
    EXPECT_TRUE(u[1].mig);
    EXPECT_TRUE(parse_visible_devices("cuda:0").empty());
}

TEST(GpuRef, MachineIndexWithoutVisibleDevicesIsTheCudaOrdinal) {
    const std::vector<std::string> uuids{kUuidA, kUuidB};
    EXPECT_EQ(cuda_ordinal_of(ref("1"), std::nullopt, uuids), 1);
    EXPECT_NE(error_of(ref("2"), std::nullopt, uuids)
                  .find("GPU 2 does not exist (this machine "
                        "has 2)"),
              std::string::npos);
}

TEST(GpuRef, MachineIndexIsRemappedThroughVisibleDevices) {
    // The agent gave this job the machine's GPUs 3 and 1; CUDA calls them 0 and 1.
    const auto visible = parse_visible_devices("3,1");
    const std::vector<std::string> uuids{kUuidA, kUuidB};
    EXPECT_EQ(cuda_ordinal_of(ref("3"), visible, uuids), 0);
    EXPECT_EQ(cuda_ordinal_of(ref("1"), visible, uuids), 1);
    const std::string hidden = error_of(ref("0"), visible, uuids);
    EXPECT_NE(hidden.find("GPU 0 is not visible to this process (CUDA_VISIBLE_DEVICES=GPU 3,GPU "
                          "1)"),
              std::string::npos)
        << hidden;
    // cuda:N counts the visible ones, as LibTorch does.
    EXPECT_EQ(cuda_ordinal_of(ref("cuda:1"), visible, uuids), 1);
    EXPECT_NE(error_of(ref("cuda:2"), visible, uuids).find("this process sees 2 CUDA device(s)"),
              std::string::npos);
}

TEST(GpuRef, UuidsMatchByPrefixWhateverIsVisible) {
    const std::vector<std::string> uuids{kUuidA, kUuidB, kMig};
    const auto visible = parse_visible_devices(kUuidA + "," + kUuidB + ",MIG-7d3e0000");
    EXPECT_EQ(cuda_ordinal_of(ref("GPU-0b7e9a12"), visible, uuids), 1);
    EXPECT_EQ(cuda_ordinal_of(ref("gpu-0B7E9A12-AAAA-BBBB-CCCC-DDDDEEEEFFFF"), visible, uuids), 1);
    EXPECT_EQ(cuda_ordinal_of(ref("MIG-7d3e0000-0000-4000-8000-00000000abcd"), visible, uuids), 2);
    EXPECT_NE(error_of(ref("GPU-ffff"), visible, uuids)
                  .find("GPU-ffff is not among this "
                        "process's 3 GPUs"),
              std::string::npos);
    const std::vector<std::string> twins{"GPU-abcd0000-0000-0000-0000-000000000001",
                                         "GPU-abcd0000-0000-0000-0000-000000000002"};
    EXPECT_NE(error_of(ref("GPU-abcd"), std::nullopt, twins).find("matches several GPUs"),
              std::string::npos);
    // A machine index cannot be found in a list of UUIDs: say how to name it instead.
    EXPECT_NE(error_of(ref("0"), visible, uuids).find("name it by UUID or as cuda:N"),
              std::string::npos);
}

TEST(GpuRef, NoDeviceSaysSoAndSuggestsTheCpu) {
    const std::string e = error_of(ref("0"), parse_visible_devices(""), {});
    EXPECT_NE(e.find("GPU 0 was asked for, but this process sees no CUDA device "
                     "(CUDA_VISIBLE_DEVICES=none); use device=cpu"),
              std::string::npos)
        << e;
}

TEST(GpuRef, FormatsUuidsAsNvmlDoes) {
    const unsigned char bytes[16] = {0x8f, 0x2c, 0x41, 0xd0, 0x11, 0x11, 0x22, 0x22,
                                     0x33, 0x33, 0x44, 0x44, 0x55, 0x55, 0x66, 0x66};
    EXPECT_EQ(format_gpu_uuid(bytes), kUuidA);
}

}  // namespace
}  // namespace crucible
