#include "core/base/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/mapped_file.h"
#include "tests/support/temp_dir.h"

using namespace crucible;

namespace {

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> out(n);
    for (auto& b : out)
        b = static_cast<std::byte>(rng() & 0xff);
    return out;
}

std::string le64(std::uint64_t v) {
    std::string out;
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return out;
}

// A file from a raw header text and data buffer.
std::string raw_file(const std::string& header, const std::string& data = "") {
    return le64(header.size()) + header + data;
}

std::filesystem::path temp_dir(const std::string& name) {
    return test_support::scratch_dir(name);
}

// Element count with whole bytes for every dtype: 8 elements fill 4 bytes of F4, 6 of F6.
std::int64_t elements_for(SafetensorsDtype dtype) {
    return safetensors_dtype_bits(dtype) < 8 ? 8 : 6;
}

}  // namespace

TEST(Safetensors, EmptyFileIsExactBytes) {
    const std::string bytes = write_safetensors_bytes({});
    const std::vector<unsigned char> expected{0x08, 0,   0,   0,   0,   0,   0,   0,
                                              '{',  '}', ' ', ' ', ' ', ' ', ' ', ' '};
    EXPECT_EQ(std::vector<unsigned char>(bytes.begin(), bytes.end()), expected);
    const auto file = SafetensorsFile::from_bytes(bytes);
    EXPECT_EQ(file.size(), 0u);
    EXPECT_TRUE(file.metadata().empty());
}

TEST(Safetensors, DtypeTable) {
    EXPECT_EQ(all_safetensors_dtypes().size(), 20u);
    for (auto dtype : all_safetensors_dtypes())
        EXPECT_EQ(parse_safetensors_dtype(safetensors_dtype_name(dtype)), dtype);
    EXPECT_FALSE(parse_safetensors_dtype("f32").has_value());
    EXPECT_EQ(safetensors_dtype_bits(SafetensorsDtype::BF16), 16u);
    EXPECT_EQ(safetensors_dtype_bits(SafetensorsDtype::C64), 64u);
    EXPECT_EQ(safetensors_byte_size(SafetensorsDtype::F4, 8), 4u);
    EXPECT_EQ(safetensors_byte_size(SafetensorsDtype::F6_E2M3, 4), 3u);
    EXPECT_FALSE(safetensors_byte_size(SafetensorsDtype::F4, 3).has_value());
    EXPECT_FALSE(safetensors_byte_size(SafetensorsDtype::F64, std::uint64_t{1} << 62).has_value());
}

TEST(Safetensors, EveryDtypeRoundTripsBitExactThroughAMappedFile) {
    std::vector<std::vector<std::byte>> payloads;
    std::vector<SafetensorsTensorView> views;
    unsigned seed = 1;
    for (auto dtype : all_safetensors_dtypes()) {
        const std::int64_t n = elements_for(dtype);
        const auto bytes = *safetensors_byte_size(dtype, static_cast<std::uint64_t>(n));
        payloads.push_back(random_bytes(bytes, seed++));
    }
    std::size_t i = 0;
    for (auto dtype : all_safetensors_dtypes()) {
        const std::int64_t n = elements_for(dtype);
        std::vector<std::int64_t> shape =
            n == 8 ? std::vector<std::int64_t>{2, 4} : std::vector<std::int64_t>{2, 3};
        views.push_back(
            {"t_" + std::string(safetensors_dtype_name(dtype)), dtype, shape, payloads[i++]});
    }
    const auto dir = temp_dir("crucible_st_roundtrip");
    const auto path = dir / "all.safetensors";
    write_safetensors_file(path, views);

    const auto file = SafetensorsFile::open(path);
    ASSERT_EQ(file.size(), views.size());
    std::vector<std::string> expected_names;
    for (const auto& v : views)
        expected_names.push_back(v.name);
    EXPECT_EQ(file.names(), expected_names);
    for (const auto& v : views) {
        const auto& t = file.at(v.name);
        EXPECT_EQ(t.dtype, v.dtype) << v.name;
        EXPECT_EQ(t.shape, v.shape) << v.name;
        const auto data = file.data(t);
        ASSERT_EQ(data.size(), v.data.size()) << v.name;
        EXPECT_EQ(std::memcmp(data.data(), v.data.data(), data.size()), 0) << v.name;
    }
    // Writing back what was read gives the same file, byte for byte.
    std::vector<SafetensorsTensorView> again;
    for (const auto& t : file.tensors())
        again.push_back({t.name, t.dtype, t.shape, file.data(t)});
    EXPECT_EQ(write_safetensors_bytes(again), read_file_bytes(path));
    std::filesystem::remove_all(dir);
}

TEST(Safetensors, HeaderIsPaddedWithSpacesToAMultipleOfEight) {
    const std::vector<std::byte> one(4);
    for (std::string name : {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"}) {
        const auto bytes = write_safetensors_bytes({{name, SafetensorsDtype::F32, {}, one}});
        const auto file = SafetensorsFile::from_bytes(bytes);
        const auto n = file.header().header_bytes;
        EXPECT_EQ(n % 8, 0u) << name;
        EXPECT_EQ(bytes.size(), 8 + n + 4);
        EXPECT_EQ(bytes[8], '{');
        const auto text = bytes.substr(8, n);
        EXPECT_EQ(text.find_last_not_of(' '), text.find_last_of('}'));
    }
}

TEST(Safetensors, ScalarsAndEmptyTensors) {
    const auto scalar = random_bytes(8, 7);
    const std::vector<SafetensorsTensorView> views{
        {"scalar", SafetensorsDtype::F64, {}, scalar},
        {"empty", SafetensorsDtype::F32, {0}, {}},
        {"empty3d", SafetensorsDtype::I64, {3, 0, 2}, {}},
        {"empty_after", SafetensorsDtype::U8, {0, 5}, {}},
    };
    const auto file = SafetensorsFile::from_bytes(write_safetensors_bytes(views));
    ASSERT_EQ(file.size(), 4u);
    const auto& s = file.at("scalar");
    EXPECT_TRUE(s.shape.empty());
    EXPECT_EQ(s.numel(), 1u);
    EXPECT_EQ(std::memcmp(file.data(s).data(), scalar.data(), 8), 0);
    EXPECT_EQ(file.at("empty").numel(), 0u);
    EXPECT_EQ(file.data("empty").size(), 0u);
    EXPECT_EQ(file.at("empty3d").shape, (std::vector<std::int64_t>{3, 0, 2}));
    EXPECT_EQ(file.data("empty_after").size(), 0u);
    // Empty tensors share their offset with a neighbour; file order keeps header order then.
    EXPECT_EQ(file.names(),
              (std::vector<std::string>{"scalar", "empty", "empty3d", "empty_after"}));
}

TEST(Safetensors, MetadataRoundTrip) {
    const std::map<std::string, std::string> meta{
        {"format", "pt"}, {"ss_network_dim", "16"}, {"说明", "中文元数据"}, {"empty", ""}};
    const auto data = random_bytes(6, 3);
    const auto bytes = write_safetensors_bytes({{"w", SafetensorsDtype::F16, {3}, data}}, meta);
    const auto file = SafetensorsFile::from_bytes(bytes);
    EXPECT_EQ(file.metadata(), meta);
    // "__metadata__" is written first, as Hugging Face writers do.
    EXPECT_EQ(bytes.substr(8, 16), "{\"__metadata__\":");
}

TEST(Safetensors, ChineseFileName) {
    const auto dir = temp_dir("crucible_st_中文");
    const auto path = dir / path_from_utf8("模型权重.safetensors");
    const auto data = random_bytes(4, 9);
    write_safetensors_file(path, {{"层.权重", SafetensorsDtype::BF16, {2}, data}},
                           {{"名字", "值"}});
    const auto file = SafetensorsFile::open(path);
    EXPECT_EQ(file.where(), path_to_utf8(path));
    EXPECT_EQ(file.names(), std::vector<std::string>{"层.权重"});
    EXPECT_EQ(file.metadata().at("名字"), "值");
    EXPECT_EQ(std::memcmp(file.data("层.权重").data(), data.data(), 4), 0);
    std::filesystem::remove_all(dir);
}

TEST(Safetensors, LookupOfAMissingTensorNamesFileAndTensor) {
    const auto file = SafetensorsFile::from_bytes(write_safetensors_bytes({}), "x.safetensors");
    EXPECT_EQ(file.find("nope"), nullptr);
    try {
        (void)file.at("nope");
        FAIL() << "no exception";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("x.safetensors"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos);
    }
}

struct HostileCase {
    const char* label;
    std::string bytes;
    const char* message;  // a part of the expected message
};

TEST(Safetensors, HostileFilesAreRejectedWithAMessage) {
    const std::string f32x2 = R"("dtype":"F32","shape":[2])";
    const std::string ok_header = R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]}})";
    const std::string ok = raw_file(ok_header, std::string(8, '\1'));
    const std::vector<HostileCase> cases{
        {"empty file", "", "too short"},
        {"truncated length", std::string("\x08\x00\x00", 3), "too short"},
        {"truncated header", ok.substr(0, 20), "runs past the end of the file"},
        {"truncated data", ok.substr(0, ok.size() - 3), "the file is truncated"},
        {"header over the limit", le64(100'000'001) + "{}", "over the limit"},
        {"huge header length", le64(~std::uint64_t{0}) + "{}", "over the limit"},
        {"header length past end", le64(64) + "{}      ", "runs past the end"},
        {"not starting with brace", raw_file(R"( {"a":1})"), "does not start with '{'"},
        {"zero-length header", raw_file(""), "does not start with '{'"},
        {"invalid json", raw_file(R"({"a":{)"), "not valid JSON"},
        {"trailing garbage", raw_file(R"({}x)"), "not valid JSON"},
        {"not a map", raw_file(R"({"a":[1,2]})"), "expected an object"},
        {"non-utf8 name",
         raw_file("{\"\xff\xfe\":{" + f32x2 + R"(,"data_offsets":[0,8]}})", std::string(8, 0)),
         "not valid UTF-8"},
        {"lone surrogate escape", raw_file(R"({"\ud800":{}})"), "not valid JSON"},
        {"duplicate names",
         raw_file(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]},"a":{)" + f32x2 +
                      R"(,"data_offsets":[8,16]}})",
                  std::string(16, 0)),
         "duplicate tensor name 'a'"},
        {"duplicate field", raw_file(R"({"a":{"dtype":"F32","dtype":"F32"}})"),
         "duplicate key 'dtype' inside 'a'"},
        {"duplicate metadata key", raw_file(R"({"__metadata__":{"k":"1","k":"2"}})"),
         "duplicate key 'k' inside '__metadata__'"},
        {"metadata with number", raw_file(R"({"__metadata__":{"epochs":3}})"),
         "must be a string, got number"},
        {"metadata not a map", raw_file(R"({"__metadata__":["x"]})"), "must be a map of strings"},
        {"unknown dtype",
         raw_file(R"({"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})",
                  std::string(16, 0)),
         "unknown dtype 'F128'"},
        {"dtype not a string", raw_file(R"({"a":{"dtype":4,"shape":[],"data_offsets":[0,4]}})"),
         "'dtype' must be a string"},
        {"missing shape", raw_file(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})"),
         "missing 'shape'"},
        {"negative dim", raw_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})"),
         "is negative"},
        {"fractional dim", raw_file(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,6]}})"),
         "not a non-negative integer"},
        {"string dim", raw_file(R"({"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})"),
         "not a non-negative integer"},
        {"shape overflow",
         raw_file(
             R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}})"),
         "overflows"},
        {"byte overflow",
         raw_file(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})"),
         "overflows"},
        {"dim beyond int64",
         raw_file(R"({"a":{"dtype":"U8","shape":[0,18446744073709551615],"data_offsets":[0,0]}})"),
         "too large"},
        {"deep nesting", raw_file(R"({"a":{"shape":[[[1]]]}})"), "nested deeper"},
        {"offsets wrong type",
         raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":"0-8"}})", std::string(8, 0)),
         "must be two integers"},
        {"three offsets",
         raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,9]}})", std::string(8, 0)),
         "must be two integers"},
        {"negative offset",
         raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", std::string(8, 0)),
         "non-negative integers"},
        {"reversed offsets",
         raw_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", std::string(8, 0)),
         "end before they begin"},
        {"size mismatch",
         raw_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, 0)),
         "hold 8 bytes but F32 [3] needs 12"},
        {"sub-byte not filling bytes",
         raw_file(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}})", std::string(1, 0)),
         "does not fill whole bytes"},
        {"overlapping offsets",
         raw_file(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]},"b":{)" + f32x2 +
                      R"(,"data_offsets":[4,12]}})",
                  std::string(12, 0)),
         "overlapping data_offsets"},
        {"gapped offsets",
         raw_file(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]},"b":{)" + f32x2 +
                      R"(,"data_offsets":[12,20]}})",
                  std::string(20, 0)),
         "gap in the data buffer"},
        {"not starting at zero",
         raw_file(R"({"a":{)" + f32x2 + R"(,"data_offsets":[4,12]}})", std::string(12, 0)),
         "gap in the data buffer"},
        {"trailing bytes", raw_file(ok_header, std::string(9, 0)), "trailing bytes"},
        {"data without tensors", raw_file("{}", "xyz"), "trailing bytes"},
    };
    EXPECT_GE(cases.size(), 12u);
    EXPECT_NO_THROW(SafetensorsFile::from_bytes(ok, "ok.safetensors"));
    for (const auto& c : cases) {
        try {
            (void)SafetensorsFile::from_bytes(c.bytes, "hostile.safetensors");
            ADD_FAILURE() << c.label << ": accepted";
        } catch (const InputError& e) {
            const std::string what = e.what();
            EXPECT_EQ(what.rfind("hostile.safetensors: ", 0), 0u) << c.label << ": " << what;
            EXPECT_NE(what.find(c.message), std::string::npos) << c.label << ": " << what;
        }
    }
}

TEST(Safetensors, OpenRejectsMissingEmptyAndFolderPaths) {
    const auto dir = temp_dir("crucible_st_open");
    EXPECT_THROW(SafetensorsFile::open(dir / "missing.safetensors"), InputError);
    EXPECT_THROW(SafetensorsFile::open(dir), InputError);
    const auto empty = dir / "empty.safetensors";
    write_file_atomically(empty, "");
    EXPECT_EQ(MappedFile(empty).size(), 0u);
    try {
        (void)SafetensorsFile::open(empty);
        FAIL() << "empty file accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("empty.safetensors"), std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

TEST(Safetensors, WriterRejectsInconsistentTensors) {
    const auto four = random_bytes(4, 1);
    using V = std::vector<SafetensorsTensorView>;
    EXPECT_THROW(write_safetensors_bytes(V{{"a", SafetensorsDtype::F32, {2}, four}}), InputError);
    EXPECT_THROW(write_safetensors_bytes(V{{"a", SafetensorsDtype::F32, {-1}, {}}}), InputError);
    EXPECT_THROW(write_safetensors_bytes(V{{"__metadata__", SafetensorsDtype::U8, {4}, four}}),
                 InputError);
    EXPECT_THROW(write_safetensors_bytes(V{{"a", SafetensorsDtype::U8, {4}, four},
                                           {"a", SafetensorsDtype::U8, {4}, four}}),
                 InputError);
    EXPECT_THROW(write_safetensors_bytes(V{{"\xff", SafetensorsDtype::U8, {4}, four}}), InputError);
    EXPECT_THROW(write_safetensors_bytes(V{{"a", SafetensorsDtype::F4, {3}, {}}}), InputError);
    EXPECT_THROW(write_safetensors_bytes({}, {{"k", "\xff"}}), InputError);
}

TEST(Safetensors, ReadsTheYoloLossFixture) {
    const auto path =
        std::filesystem::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / "loss_case_inputs.safetensors";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture missing: " << path_to_utf8(path);
    const auto file = SafetensorsFile::open(path);
    EXPECT_EQ(file.names(), (std::vector<std::string>{"feats_p3", "feats_p4", "feats_p5",
                                                      "batch_idx", "cls", "bboxes_xywhn"}));
    const std::int64_t batch = file.at("feats_p3").shape.at(0);
    const std::int64_t channels = file.at("feats_p3").shape.at(1);
    EXPECT_EQ(channels, 64 + std::stoll(file.metadata().at("nc")));
    const std::int64_t imgsz = std::stoll(file.metadata().at("imgsz"));
    for (auto [name, stride] : {std::pair{"feats_p3", 8}, {"feats_p4", 16}, {"feats_p5", 32}}) {
        const auto& t = file.at(name);
        EXPECT_EQ(t.dtype, SafetensorsDtype::F32);
        EXPECT_EQ(t.shape,
                  (std::vector<std::int64_t>{batch, channels, imgsz / stride, imgsz / stride}));
    }
    const auto& boxes = file.at("bboxes_xywhn");
    const auto rows = boxes.shape.at(0);
    EXPECT_EQ(boxes.shape, (std::vector<std::int64_t>{rows, 4}));
    EXPECT_EQ(file.at("cls").shape, (std::vector<std::int64_t>{rows, 1}));
    EXPECT_EQ(file.at("batch_idx").shape, (std::vector<std::int64_t>{rows}));
    std::vector<float> values(static_cast<std::size_t>(rows * 4));
    std::memcpy(values.data(), file.data(boxes).data(), values.size() * sizeof(float));
    for (float v : values) {
        EXPECT_GE(v, 0.0f);
        EXPECT_LE(v, 1.0f);
    }
    std::vector<float> idx(static_cast<std::size_t>(rows));
    std::memcpy(idx.data(), file.data("batch_idx").data(), idx.size() * sizeof(float));
    for (float v : idx) {
        EXPECT_GE(v, 0.0f);
        EXPECT_LT(v, static_cast<float>(batch));
    }
}
