#include "core/engine/safetensors_torch.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
using namespace crucible::engine;

namespace {

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed, bool as_bool = false) {
    std::mt19937 rng(seed);
    std::vector<std::byte> out(n);
    for (auto& b : out)
        b = static_cast<std::byte>(as_bool ? (rng() & 1) : (rng() & 0xff));
    return out;
}

bool same_bytes(const torch::Tensor& t, std::span<const std::byte> bytes) {
    auto c = t.contiguous();
    return static_cast<std::size_t>(c.nbytes()) == bytes.size() &&
           (bytes.empty() || std::memcmp(c.data_ptr(), bytes.data(), bytes.size()) == 0);
}

}  // namespace

// Random bit patterns (NaN payloads, subnormals, negative zeros included) of every dtype this
// LibTorch has go file -> tensor -> file unchanged.
TEST(SafetensorsTorch, EveryRepresentableDtypeRoundTripsBitExact) {
    std::vector<std::vector<std::byte>> payloads;
    std::vector<SafetensorsTensorView> views;
    unsigned seed = 11;
    for (auto dtype : all_safetensors_dtypes()) {
        if (!torch_dtype_of(dtype)) continue;
        const auto bytes = *safetensors_byte_size(dtype, 12);
        payloads.push_back(random_bytes(bytes, seed++, dtype == SafetensorsDtype::BOOL));
        views.push_back(
            {std::string(safetensors_dtype_name(dtype)), dtype, {3, 4}, payloads.back()});
    }
    // LibTorch 2.x has every safetensors dtype but the sub-byte F4 / F6 ones: the fp8 and
    // unsigned ones must be among those that just went through.
    for (auto dtype :
         {SafetensorsDtype::F8_E4M3, SafetensorsDtype::F8_E5M2, SafetensorsDtype::F8_E8M0,
          SafetensorsDtype::U16, SafetensorsDtype::U32, SafetensorsDtype::U64}) {
        EXPECT_TRUE(torch_dtype_of(dtype).has_value()) << safetensors_dtype_name(dtype);
    }
    ASSERT_GE(views.size(), 17u);
    std::sort(views.begin(), views.end(), [](auto& a, auto& b) { return a.name < b.name; });
    const std::string file_bytes = write_safetensors_bytes(views);
    const auto file = SafetensorsFile::from_bytes(file_bytes, "all.safetensors");

    const auto tensors = load_safetensors(file);
    ASSERT_EQ(tensors.size(), views.size());
    for (const auto& v : views) {
        const auto& t = tensors.at(v.name);
        EXPECT_EQ(t.scalar_type(), *torch_dtype_of(v.dtype)) << v.name;
        EXPECT_EQ(t.sizes().vec(), v.shape) << v.name;
        EXPECT_TRUE(same_bytes(t, v.data)) << v.name;
        EXPECT_EQ(safetensors_dtype_of(t.scalar_type(), v.name), v.dtype);
    }
    EXPECT_EQ(save_safetensors_bytes(tensors), file_bytes);
}

TEST(SafetensorsTorch, HalfAndBFloat16KeepTheirValues) {
    const auto half = torch::tensor({1.5f, -2.25f, 65504.0f, 0.0f}).to(torch::kFloat16);
    const auto bf = torch::tensor({1.5f, -2.25f, 3.0e38f, -0.0f}).to(torch::kBFloat16);
    const auto loaded = load_safetensors(
        SafetensorsFile::from_bytes(save_safetensors_bytes({{"h", half}, {"b", bf}})));
    EXPECT_TRUE(torch::equal(loaded.at("h"), half));
    EXPECT_TRUE(torch::equal(loaded.at("b"), bf));
    EXPECT_EQ(loaded.at("h").scalar_type(), torch::kFloat16);
    EXPECT_EQ(loaded.at("b").scalar_type(), torch::kBFloat16);
}

TEST(SafetensorsTorch, ScalarsEmptyAndNonContiguousTensors) {
    const auto scalar = torch::tensor(3.25);
    const auto empty = torch::zeros({0, 7}, torch::kInt32);
    const auto base = torch::arange(24, torch::kFloat32).reshape({4, 6});
    const auto transposed = base.t();                                // not contiguous
    const auto expanded = torch::tensor({1.0, 2.0}).expand({3, 2});  // stride 0
    const auto with_grad = torch::ones({2}, torch::requires_grad());
    const std::map<std::string, torch::Tensor> in{{"scalar", scalar},
                                                  {"empty", empty},
                                                  {"transposed", transposed},
                                                  {"expanded", expanded},
                                                  {"grad", with_grad}};
    const auto out = load_safetensors(SafetensorsFile::from_bytes(save_safetensors_bytes(in)));
    for (const auto& [name, t] : in) {
        EXPECT_EQ(out.at(name).sizes(), t.sizes()) << name;
        EXPECT_TRUE(torch::equal(out.at(name), t.detach())) << name;
    }
    EXPECT_EQ(out.at("scalar").dim(), 0);
    EXPECT_FALSE(out.at("grad").requires_grad());
}

TEST(SafetensorsTorch, MetadataAndChineseFileName) {
    const test_support::TempDir scratch("st_torch_中文");
    const std::filesystem::path dir = scratch.path();
    const auto path = dir / path_from_utf8("适配器.safetensors");
    const std::map<std::string, std::string> meta{{"format", "pt"}, {"模型", "yolov8n"}};
    save_safetensors(path, {{"w", torch::randn({2, 3})}}, meta);
    const auto file = SafetensorsFile::open(path);
    EXPECT_EQ(file.metadata(), meta);
    EXPECT_EQ(load_safetensors(path).at("w").sizes(), (std::vector<std::int64_t>{2, 3}));
    std::filesystem::remove_all(dir);
}

TEST(SafetensorsTorch, UnrepresentableDtypesGiveAClearError) {
    const auto four = random_bytes(4, 5);
    for (auto dtype : all_safetensors_dtypes()) {
        if (torch_dtype_of(dtype)) continue;
        const std::int64_t n = safetensors_dtype_bits(dtype) == 4 ? 8 : 0;
        const auto bytes = *safetensors_byte_size(dtype, static_cast<std::uint64_t>(n));
        const auto file = SafetensorsFile::from_bytes(
            write_safetensors_bytes({{"q", dtype, {n}, std::span(four).first(bytes)}}),
            "quant.safetensors");
        try {
            (void)load_safetensors(file);
            ADD_FAILURE() << safetensors_dtype_name(dtype) << " loaded";
        } catch (const InputError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("quant.safetensors: tensor 'q': dtype " +
                                std::string(safetensors_dtype_name(dtype)) +
                                " cannot be represented as a LibTorch tensor in this build"),
                      std::string::npos)
                << what;
        }
    }
    // F4 and F6 are never LibTorch dtypes here.
    EXPECT_FALSE(torch_dtype_of(SafetensorsDtype::F4).has_value());
    EXPECT_FALSE(torch_dtype_of(SafetensorsDtype::F6_E3M2).has_value());
}

TEST(SafetensorsTorch, RejectsBadBoolsAndUnsavableTensors) {
    const std::vector<std::byte> bools{std::byte{0}, std::byte{1}, std::byte{2}};
    const auto file = SafetensorsFile::from_bytes(
        write_safetensors_bytes({{"mask", SafetensorsDtype::BOOL, {3}, bools}}), "m.safetensors");
    EXPECT_THROW(load_safetensors(file), InputError);
    EXPECT_THROW(save_safetensors_bytes({{"u", torch::Tensor()}}), InputError);
    EXPECT_THROW(save_safetensors_bytes({{"c", torch::zeros({2}, torch::kComplexDouble)}}),
                 InputError);
    EXPECT_THROW(save_safetensors_bytes({{"s", torch::eye(3).to_sparse()}}), InputError);
}

// view_torch (what the Llama loader reads shards through) shows the mapped bytes themselves when
// they are aligned for their dtype, and copies them when they are not: a tensor after a 1-byte
// one sits at an odd offset, which LibTorch's kernels must not be handed.
TEST(SafetensorsTorch, ViewsShowTheFileAlignedAndCopyItUnaligned) {
    const auto dir = test_support::scratch_dir("safetensors_view");
    const torch::Tensor values = torch::arange(5, torch::kFloat32) * 1.5;
    const auto path = dir / "views.safetensors";
    {
        std::ofstream out(path, std::ios::binary);
        out << save_safetensors_bytes({{"a_byte", torch::ones({1}, torch::kUInt8)},
                                       {"b_floats", values},
                                       {"c_floats", values * 2}});
    }
    const auto file = SafetensorsFile::open(path);
    const auto address = [&](const char* name) {
        return reinterpret_cast<std::uintptr_t>(file.data(name).data());
    };
    ASSERT_NE(address("b_floats") % 4, 0u) << "the case needs an unaligned tensor";
    const torch::Tensor unaligned = view_torch(file, file.at("b_floats"));
    EXPECT_NE(reinterpret_cast<std::uintptr_t>(unaligned.data_ptr()), address("b_floats"));
    EXPECT_TRUE(torch::equal(unaligned, values));
    // Whatever its offset, a tensor reads back its values (and is a view exactly when aligned).
    const torch::Tensor byte_view = view_torch(file, file.at("a_byte"));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(byte_view.data_ptr()), address("a_byte"));
    EXPECT_EQ(byte_view.item<std::uint8_t>(), 1);
    const torch::Tensor c = view_torch(file, file.at("c_floats"));
    EXPECT_TRUE(torch::equal(c, values * 2));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(c.data_ptr()) == address("c_floats"),
              address("c_floats") % 4 == 0);
}

TEST(SafetensorsTorch, LoadsTheYoloLossFixture) {
    const auto path =
        std::filesystem::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / "loss_case_inputs.safetensors";
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    const auto tensors = load_safetensors(path);
    ASSERT_EQ(tensors.count("feats_p3"), 1u);
    EXPECT_EQ(tensors.at("feats_p3").scalar_type(), torch::kFloat32);
    EXPECT_EQ(tensors.at("feats_p3").dim(), 4);
    EXPECT_TRUE(torch::isfinite(tensors.at("feats_p3")).all().item<bool>());
    const auto boxes = tensors.at("bboxes_xywhn");
    EXPECT_GE(boxes.min().item<float>(), 0.0f);
    EXPECT_LE(boxes.max().item<float>(), 1.0f);
}
