// The .pt checkpoint reader: the real reference checkpoint, hand-built pickles, and a table of
// hostile inputs that must be refused with a clear message.
#include <gtest/gtest.h>

#include <torch/torch.h>
#include <set>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/engine/pt/pickle.h"
#include "core/engine/pt/pt_archive.h"
#include "core/engine/pt/pt_checkpoint.h"
#include "core/engine/pt/zip_reader.h"
#include "tests/pt_reader/pt_test_util.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using namespace crucible;
using namespace crucible::engine;
using crucible::engine::test::make_zip;
using crucible::engine::test::Pickle;
using namespace std::string_literals;

namespace {

fs::path fixture(const std::string& name) {
    return fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / name;
}

std::string floats_bytes(const std::vector<float>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::string repeat(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i)
        out += s;
    return out;
}

// Expects InputError whose message contains `needle`; returns the message.
template <typename F>
std::string expect_input_error(F&& f, const std::string& needle) {
    try {
        f();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "expected InputError containing '" << needle
                      << "', got other exception: " << e.what();
        return {};
    }
    ADD_FAILURE() << "expected InputError containing '" << needle << "', nothing thrown";
    return {};
}

PtCheckpoint read_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
    return read_pt_checkpoint_bytes(make_zip(entries), "test.pt");
}

// A tiny Ultralytics-like checkpoint: model with a conv (weight), a bn (weight, None bias,
// running_mean buffer, a non-persistent buffer) and a strided view.
std::string tiny_checkpoint_pickle(bool model_in_ema) {
    Pickle p;
    p.op('}').mark();
    p.str("epoch").integer(7);
    p.str("model");
    if (model_in_ema) p.none();
    auto write_model = [&] {
        p.module_begin("ultralytics.nn.tasks", "DetectionModel");
        p.str("_parameters").ordered_dict_begin().setitems();
        p.str("_buffers").ordered_dict_begin().setitems();
        p.str("_modules").ordered_dict_begin();
        {
            p.str("conv");
            p.module_begin("torch.nn.modules.conv", "Conv2d");
            p.str("_parameters").ordered_dict_begin();
            p.str("weight")
                .parameter_begin()
                .tensor("FloatStorage", "0", 12, 1, {2, 3}, {1, 2})
                .parameter_end();
            p.str("bias").none();
            p.setitems();
            p.str("_buffers").ordered_dict_begin().setitems();
            p.str("_modules").ordered_dict_begin().setitems();
            p.module_end();
            p.str("bn");
            p.module_begin("torch.nn.modules.batchnorm", "BatchNorm2d");
            p.str("_parameters").ordered_dict_begin();
            p.str("weight")
                .parameter_begin()
                .tensor("HalfStorage", "1", 2, 0, {2}, {1})
                .parameter_end();
            p.setitems();
            p.str("_buffers").ordered_dict_begin();
            p.str("running_mean").tensor("FloatStorage", "0", 12, 10, {2}, {1});
            p.str("scratch").tensor("FloatStorage", "0", 12, 0, {1}, {1});
            p.str("num_batches_tracked").tensor("LongStorage", "2", 1, 0, {}, {});
            p.setitems();
            p.str("_non_persistent_buffers_set")
                .global("__builtin__", "set")
                .op(']')
                .str("scratch")
                .op('a')
                .op('\x85')
                .op('R');
            p.str("_modules").ordered_dict_begin().setitems();
            p.module_end();
            p.str("skipped").none();
        }
        p.setitems();
        p.str("yaml").op('}').mark().str("nc").integer(2).str("scale").str("n").setitems();
        p.str("names").op('}').mark().integer(0).str("cat").integer(1).str("dog").setitems();
        p.module_end();
    };
    if (!model_in_ema) write_model();
    p.str("ema");
    if (model_in_ema)
        write_model();
    else
        p.none();
    p.str("train_args")
        .op('}')
        .mark()
        .str("imgsz")
        .integer(320)
        .str("data")
        .str("shapes.yaml")
        .setitems();
    p.setitems().stop();
    return p.b;
}

std::vector<std::pair<std::string, std::string>> tiny_entries(const std::string& pkl) {
    std::vector<float> f(12);
    for (int i = 0; i < 12; ++i)
        f[static_cast<std::size_t>(i)] = static_cast<float>(i);
    const std::uint16_t half[2] = {0x3C00, 0xC000};  // 1.0, -2.0
    const std::int64_t count = 42;
    return {{"archive/data.pkl", pkl},
            {"archive/data/0", floats_bytes(f)},
            {"archive/data/1", std::string(reinterpret_cast<const char*>(half), sizeof half)},
            {"archive/data/2", std::string(reinterpret_cast<const char*>(&count), sizeof count)},
            {"archive/version", "3\n"}};
}

}  // namespace

TEST(PtReader, ReferenceCheckpointStateDictMatchesTheReferenceShapes) {
    const PtCheckpoint ck = read_pt_checkpoint(fixture("yolov8n_shapes11.pt"));
    const Json expected = read_json_file(fixture("yolov8n_nc4_state_dict_shapes.json"));
    ASSERT_EQ(ck.state_dict.size(), expected.size());
    ASSERT_EQ(ck.state_dict.size(), 355u);
    // The reader keeps PyTorch's state-dict order (module by module, parameters before
    // buffers); the JSON object is read back sorted by name, so compare by name.
    EXPECT_EQ(ck.state_dict.front().first, "model.0.conv.weight");
    EXPECT_EQ(ck.state_dict[1].first, "model.0.bn.weight");
    std::set<std::string> seen;
    for (const auto& [name, tensor] : ck.state_dict) {
        auto it = expected.find(name);
        ASSERT_NE(it, expected.end()) << name << " is not in the reference state dict";
        seen.insert(name);
        std::vector<std::int64_t> want = it->get<std::vector<std::int64_t>>();
        EXPECT_EQ(tensor.sizes().vec(), want) << name;
        EXPECT_TRUE(tensor.is_contiguous()) << name;
        if (name.find("num_batches_tracked") != std::string::npos) {
            EXPECT_EQ(tensor.scalar_type(), torch::kLong) << name;
        } else {
            EXPECT_EQ(tensor.scalar_type(), torch::kHalf) << name;  // fp16 weights
            EXPECT_TRUE(torch::isfinite(tensor.to(torch::kFloat)).all().item<bool>()) << name;
        }
    }
    EXPECT_EQ(seen.size(), 355u);
    EXPECT_EQ(ck.source, "model");
    EXPECT_EQ(ck.model_class, "ultralytics.nn.tasks.DetectionModel");
    ASSERT_TRUE(ck.nc.has_value());
    EXPECT_EQ(*ck.nc, 4);
    EXPECT_EQ(ck.scale, "n");
    EXPECT_EQ(ck.names, (std::vector<std::string>{"ellipse", "box", "triangle", "star"}));
    ASSERT_TRUE(ck.train_args.is_object());
    EXPECT_EQ(ck.train_args.at("imgsz").get<int>(), 320);
    EXPECT_EQ(ck.train_args.at("task").get<std::string>(), "detect");
    EXPECT_EQ(ck.yaml.at("nc").get<int>(), 4);
    ASSERT_TRUE(ck.epoch.has_value());
    EXPECT_FALSE(ck.ultralytics_version.empty());

    // Real statistics, not garbage: BatchNorm running variances are positive, the frozen DFL
    // conv holds 0..15.
    const torch::Tensor* var = ck.find("model.0.bn.running_var");
    ASSERT_NE(var, nullptr);
    EXPECT_TRUE((var->to(torch::kFloat) > 0).all().item<bool>());
    const torch::Tensor* dfl = ck.find("model.22.dfl.conv.weight");
    ASSERT_NE(dfl, nullptr);
    EXPECT_TRUE(torch::equal(dfl->to(torch::kFloat).flatten(), torch::arange(16, torch::kFloat)));
    const torch::Tensor* nbt = ck.find("model.0.bn.num_batches_tracked");
    ASSERT_NE(nbt, nullptr);
    EXPECT_EQ(nbt->dim(), 0);
}

TEST(PtReader, ChineseFileName) {
    const test_support::TempDir scratch("pt");
    const fs::path dir = scratch.path();
    const fs::path target = dir / path_from_utf8("权重 模型.pt");
    write_file_atomically(target, make_zip(tiny_entries(tiny_checkpoint_pickle(false))));
    const PtCheckpoint ck = read_pt_checkpoint(target);
    EXPECT_EQ(ck.state_dict.size(), 4u);
    fs::remove_all(dir);
}

TEST(PtReader, HandBuiltCheckpointRebuildsViewsDtypesAndMetadata) {
    for (bool in_ema : {false, true}) {
        const PtCheckpoint ck = read_zip(tiny_entries(tiny_checkpoint_pickle(in_ema)));
        EXPECT_EQ(ck.source, in_ema ? "ema" : "model");
        ASSERT_EQ(ck.state_dict.size(), 4u);  // None bias and non-persistent 'scratch' skipped
        EXPECT_EQ(ck.state_dict[0].first, "conv.weight");
        EXPECT_EQ(ck.state_dict[1].first, "bn.weight");
        EXPECT_EQ(ck.state_dict[2].first, "bn.running_mean");
        EXPECT_EQ(ck.state_dict[3].first, "bn.num_batches_tracked");
        // Offset 1, size (2, 3), stride (1, 2) over 0..11: element [i][j] = 1 + i + 2j.
        const torch::Tensor w = ck.state_dict[0].second;
        EXPECT_TRUE(w.is_contiguous());
        EXPECT_TRUE(torch::equal(w, torch::tensor({{1.f, 3.f, 5.f}, {2.f, 4.f, 6.f}})));
        const torch::Tensor h = ck.state_dict[1].second;
        EXPECT_EQ(h.scalar_type(), torch::kHalf);
        EXPECT_TRUE(torch::equal(h.to(torch::kFloat), torch::tensor({1.f, -2.f})));
        EXPECT_TRUE(torch::equal(ck.state_dict[2].second, torch::tensor({10.f, 11.f})));
        EXPECT_EQ(ck.state_dict[3].second.item<std::int64_t>(), 42);
        EXPECT_EQ(*ck.nc, 2);
        EXPECT_EQ(ck.scale, "n");
        EXPECT_EQ(ck.names, (std::vector<std::string>{"cat", "dog"}));
        EXPECT_EQ(ck.train_args.at("data").get<std::string>(), "shapes.yaml");
        EXPECT_EQ(*ck.epoch, 7);
    }
}

TEST(PtReader, PlainStateDictFile) {
    Pickle p;
    p.ordered_dict_begin();
    p.str("a.weight").tensor("FloatStorage", "0", 12, 0, {3, 4}, {4, 1});
    p.str("a.bias").tensor("FloatStorage", "0", 12, 8, {4}, {1});
    p.setitems().stop();
    std::vector<float> f(12, 0.5f);
    const PtCheckpoint ck = read_zip({{"x/data.pkl", p.b}, {"x/data/0", floats_bytes(f)}});
    EXPECT_EQ(ck.source, "root");
    ASSERT_EQ(ck.state_dict.size(), 2u);
    EXPECT_EQ(ck.state_dict[1].second.sizes().vec(), (std::vector<std::int64_t>{4}));
    EXPECT_FALSE(ck.nc.has_value());
}

TEST(PtReader, GlobalsAreInertRecords) {
    const test_support::TempDir scratch("pt_pwned");
    const fs::path marker = scratch / "pwned";
    fs::remove(marker);
    Pickle p;
    p.global("os", "system").str("touch " + path_to_utf8(marker)).op('\x85').op('R').stop();
    const pickle::PickleDocument doc = pickle::unpickle(p.b, "inline");
    ASSERT_EQ(doc.root()->kind, pickle::Kind::Object);
    EXPECT_EQ(doc.root()->class_name(), "os.system");
    ASSERT_NE(doc.root()->object->args, nullptr);
    EXPECT_EQ(doc.root()->object->args->elements.at(0)->text, "touch " + path_to_utf8(marker));
    EXPECT_FALSE(fs::exists(marker));
    // As a checkpoint: read cleanly refused, never executed.
    expect_input_error(
        [&] {
            read_zip({{"a/data.pkl", p.b}});
        },
        "Object os.system, not a torch module");
    EXPECT_FALSE(fs::exists(marker));
}

TEST(PtReader, MemoAliasesAndProtocol4Opcodes) {
    // Protocol 4: FRAME, SHORT_BINUNICODE, STACK_GLOBAL, MEMOIZE, EMPTY_SET/ADDITEMS, LONG1.
    std::string b("\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00", 11);
    b += "]\x94";  // list, memo 0
    b += "\x8c\x01"
         "a\x94";                          // 'a', memo 1
    b += "a";                              // list.append('a')
    b += "0h\x00"s;                        // pop it, then fetch the same list from the memo
    b += "\x8f\x94(\x8a\x02\x01\x01\x90";  // set {257}
    b += "\x8c\x0b"
         "collections\x8c\x0b"
         "OrderedDict\x93)R";  // OrderedDict()
    b += "\x87.";              // (list, set, dict) as a tuple... plus the first list
    const pickle::PickleDocument doc = pickle::unpickle(b, "inline");
    const pickle::Value* root = doc.root();
    ASSERT_EQ(root->kind, pickle::Kind::Tuple);
    ASSERT_EQ(root->elements.size(), 3u);
    EXPECT_EQ(root->elements[0]->kind, pickle::Kind::List);
    EXPECT_EQ(root->elements[0]->elements.at(0)->text, "a");
    EXPECT_EQ(root->elements[1]->elements.at(0)->integer, 257);
    EXPECT_EQ(root->elements[2]->kind, pickle::Kind::Dict);
}

// ---------------------------------------------------------------- hostile inputs

TEST(PtReaderHostile, PickleTable) {
    const std::string proto("\x80\x02", 2);
    struct Case {
        std::string name, bytes, needle;
    };
    std::vector<Case> cases = {
        {"tuple recursion bomb", proto + "]" + std::string(100000, '\x85') + ".",
         "nesting deeper than"},
        {"mark recursion bomb", proto + std::string(100000, '(') + ".", "nested MARKs"},
        {"list recursion bomb",
         proto +
             "]q\x00"
             "0"s +
             repeat("]h\x00"
                    "aq\x00"
                    "0"s,
                    50000) +
             "h\x00."s,
         "nesting deeper than"},
        {"memo miss", proto + "h\x05.", "memo index 5 is not defined"},
        {"long memo miss", proto + "j\xff\xff\xff\x7f.", "memo index 2147483647 is not defined"},
        {"unknown opcode", proto + "\xff.", "opcode 0xff: unknown opcode"},
        {"missing STOP", proto + "N", "without STOP"},
        {"empty pickle", "", "empty pickle"},
        {"truncated BINUNICODE",
         proto + std::string("X\x10\x00\x00\x00"
                             "ab",
                             7),
         "needs 16 bytes"},
        {"huge BINUNICODE",
         proto + std::string("X\xff\xff\xff\xff"
                             "ab.",
                             8),
         "needs 4294967295 bytes"},
        {"huge BINUNICODE8",
         proto + std::string("\x8d\xff\xff\xff\xff\xff\xff\xff\x7f"
                             "ab.",
                             12),
         "bytes but only"},
        {"huge BINBYTES8", proto + std::string("\x8e\x00\x00\x00\x00\x01\x00\x00\x00.", 10),
         "bytes but only"},
        {"huge LONG4", proto + std::string("\x8b\xff\xff\xff\x7f.", 6), "bytes but only"},
        {"huge FRAME", proto + std::string("\x95\xff\xff\xff\xff\xff\xff\x00\x00N.", 11),
         "runs past the end"},
        {"stack underflow", proto + "a.", "stack underflow"},
        {"pop below mark", proto + "N(a.", "below the MARK"},
        {"no mark", proto + "t.", "no MARK"},
        {"two values at STOP", proto + "NN.", "values on the stack"},
        {"open mark at STOP", proto + "(N.", "open MARK"},
        {"build on a list", proto + "]}b.", "BUILD on List"},
        {"append to int", proto + "K\x01Na.", "append to Int"},
        {"setitem on a list", proto + "]NNs.", "set item on List"},
        {"odd dict", proto + "(Nd.", "odd number"},
        {"bad protocol", "\x80\x09N.", "unsupported pickle protocol 9"},
        {"invalid UTF-8", proto + std::string("X\x02\x00\x00\x00\xff\xfe.", 8), "not valid UTF-8"},
        {"GLOBAL without newline", proto + "cos", "without a terminating newline"},
        {"STACK_GLOBAL of ints", proto + "K\x01K\x02\x93.", "must be strings"},
        {"persistent id outside an archive",
         proto + "X\x07\x00\x00\x00"
                 "storageQ."s,
         "not a torch storage reference"},
        {"extension code", proto + "\x82\x01.", "extension-registry"},
        {"protocol-0 STRING", proto + "S'x'\n.", "quoted STRING is not supported"},
        {"REDUCE with non-tuple", proto + "cos\nsystem\nNR.", "arguments must be a tuple"},
        {"rebuild_tensor without storage",
         proto + "ctorch._utils\n_rebuild_tensor_v2\n(NK\x00"
                 "))\x89NtR."s,
         "first argument is None, not a storage"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        expect_input_error([&] { pickle::unpickle(c.bytes, "hostile.pkl"); }, c.needle);
    }
}

TEST(PtReaderHostile, ValueAndEntryLimits) {
    pickle::UnpickleLimits small;
    small.max_values = 100;
    expect_input_error(
        [&] { pickle::unpickle("\x80\x02(" + std::string(200, 'N') + "l.", "x", {}, small); },
        "more than 100 values");
    small = {};
    small.max_entries = 10;
    // 5 references to one list, each appended 3 times = 15 container slots.
    std::string b("\x80\x02]q\x00", 5);
    b.append("(").append(std::string(20, 'N')).append("e.");  // (GCC 12 warns on operator+)
    expect_input_error([&] { pickle::unpickle(b, "x", {}, small); }, "container entries");
}

TEST(PtReaderHostile, CyclesAreRefusedByTheWalkers) {
    // A list that contains itself: parses (the arena owns it), but any traversal stops.
    // PROTO 2, EMPTY_LIST, BINPUT 0, BINGET 0, APPEND, STOP (9 bytes).
    const std::string bytes(
        "\x80\x02]q\x00h\x00"
        "a.",
        9);
    const pickle::PickleDocument doc = pickle::unpickle(bytes, "cycle");
    ASSERT_EQ(doc.root()->elements.at(0), doc.root());
    expect_input_error([&] { pickle_to_json(doc.root()); }, "nested deeper than");
    // A module that lists itself among its children.
    Pickle p;
    p.global("torch.nn", "Module").op(')').op('\x81').raw(std::string("q\x00", 2));
    p.op('}').mark();
    p.str("_parameters").ordered_dict_begin().setitems();
    p.str("_buffers").ordered_dict_begin().setitems();
    p.str("_modules").ordered_dict_begin().str("me").raw(std::string("h\x00", 2)).setitems();
    p.module_end().stop();
    expect_input_error([&] { read_zip({{"a/data.pkl", p.b}}); }, "modules nested deeper than");
}

TEST(PtReaderHostile, StorageTable) {
    std::vector<float> f(4, 1.f);
    auto with_tensor = [](const std::string& type, std::int32_t numel, std::int32_t offset,
                          std::vector<std::int32_t> size, std::vector<std::int32_t> stride,
                          const std::string& key = "0") {
        Pickle p;
        p.ordered_dict_begin()
            .str("w")
            .tensor(type, key, numel, offset, size, stride)
            .setitems()
            .stop();
        return p.b;
    };
    const std::string data = floats_bytes(f);  // 4 floats, 16 bytes
    struct Case {
        std::string name, pkl, needle;
    };
    const std::vector<Case> cases = {
        {"view past storage end", with_tensor("FloatStorage", 4, 2, {3}, {1}),
         "reaches past the end of its 4-element"},
        {"offset past end", with_tensor("FloatStorage", 4, 4, {1}, {1}), "reaches past the end"},
        {"strided past end", with_tensor("FloatStorage", 4, 0, {2, 2}, {3, 1}),
         "reaches past the end"},
        {"huge stride overflow", with_tensor("FloatStorage", 4, 0, {2}, {0x7fffffff}),
         "reaches past the end"},
        {"stride-0 blow-up", with_tensor("FloatStorage", 4, 0, {1000000, 1000}, {0, 0}),
         "more elements than"},
        {"negative size", with_tensor("FloatStorage", 4, 0, {-1}, {1}), "negative size or stride"},
        {"negative offset", with_tensor("FloatStorage", 4, -1, {1}, {1}),
         "negative storage offset"},
        {"rank mismatch", with_tensor("FloatStorage", 4, 0, {2, 2}, {1}),
         "dimensions but stride has"},
        {"numel larger than entry", with_tensor("FloatStorage", 5, 0, {1}, {1}),
         "claims 5 FloatStorage elements"},
        {"double larger than entry", with_tensor("DoubleStorage", 4, 0, {1}, {1}),
         "but its entry holds 16 bytes"},
        {"missing archive entry", with_tensor("FloatStorage", 4, 0, {1}, {1}, "77"),
         "storage '77' has no data entry"},
        {"unsupported storage type", with_tensor("ComplexFloatStorage", 1, 0, {1}, {1}),
         "unsupported storage type"},
        {"traversal key", with_tensor("FloatStorage", 4, 0, {1}, {1}, "../../etc/passwd"),
         "has no data entry"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        expect_input_error(
            [&] {
                read_zip({{"a/data.pkl", c.pkl}, {"a/data/0", data}});
            },
            c.needle);
    }
}

TEST(PtReaderHostile, ArchiveTable) {
    const std::string pkl = Pickle().none().stop().b;
    std::string good = make_zip({{"a/data.pkl", pkl}});
    auto patched = [&](std::size_t from_end, std::uint32_t value) {
        std::string z = good;
        const std::size_t at = z.size() - from_end;
        for (int i = 0; i < 4; ++i)
            z[at + static_cast<std::size_t>(i)] = static_cast<char>((value >> (8 * i)) & 0xFF);
        return z;
    };
    std::string deflated = make_zip({{"a/data.pkl", pkl}}, 8);
    std::string bad_crc = good;
    bad_crc[30 + 10 + 2] ^= 0x01;  // a byte of the pickle, after the local header and name
    struct Case {
        std::string name, bytes, needle;
    };
    const std::vector<Case> cases = {
        {"empty file", "", "empty file"},
        {"non-zip file", "hello, this is not a zip archive at all", "not a ZIP archive"},
        {"legacy pickle",
         std::string("\x80\x02\x8a\x0al\xfc\x9c"
                     "F\xf9 j\xa8P\x19.",
                     15),
         "legacy (pre-1.6"},
        {"zip magic only", "PK\x03\x04 and then nothing useful", "no end-of-central-directory"},
        {"central directory offset past end", patched(6, 0x7fffff00), "lies past the end"},
        {"central directory size too large", patched(10, 0x7fffff00), "lies past the end"},
        {"truncated archive", good.substr(0, good.size() - 30), "no end-of-central-directory"},
        {"entry name with ../", make_zip({{"a/../../evil", pkl}}), "is not a plain relative path"},
        {"absolute entry name", make_zip({{"/etc/passwd", pkl}}), "is not a plain relative path"},
        {"duplicate entries", make_zip({{"a/data.pkl", pkl}, {"a/data.pkl", pkl}}),
         "duplicate entry name"},
        {"two data.pkl", make_zip({{"a/data.pkl", pkl}, {"b/data.pkl", pkl}}), "two data.pkl"},
        {"no data.pkl", make_zip({{"a/other", pkl}}), "without a data.pkl"},
        {"torchscript", make_zip({{"a/constants.pkl", pkl}}), "TorchScript"},
        {"deflate entry", deflated, "deflate-compressed"},
        {"CRC mismatch", bad_crc, "CRC-32"},
        {"big-endian", make_zip({{"a/data.pkl", pkl}, {"a/byteorder", "big"}}), "byte order 'big'"},
        {"not a model", good, "not a torch module"},
        {"dict without model",
         make_zip({{"a/data.pkl", Pickle().op('}').str("x").integer(1).op('s').stop().b}}),
         "no 'model' or 'ema' entry (top-level keys: x)"},
        {"model and ema None",
         make_zip(
             {{"a/data.pkl",
               Pickle().op('}').mark().str("model").none().str("ema").none().setitems().stop().b}}),
         "both empty"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        expect_input_error([&] { read_pt_checkpoint_bytes(c.bytes, "hostile.pt"); }, c.needle);
    }
}

TEST(PtReaderHostile, TruncatedAndMutatedReferenceCheckpointNeverCrash) {
    const std::string bytes = read_file_bytes(fixture("yolov8n_shapes11.pt"));
    for (std::size_t cut : {std::size_t{0}, std::size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
        SCOPED_TRACE(cut);
        expect_input_error([&] { read_pt_checkpoint_bytes(bytes.substr(0, cut), "cut.pt"); },
                           "cut.pt");
    }
    // Mutate the pickle (CRC checks are the zip's business; here the unpickler must hold up).
    auto shared = std::make_shared<const std::string>(bytes);
    const ZipArchive zip = ZipArchive::open(shared, "ref.pt");
    const std::string pkl(zip.read("last/data.pkl"));
    std::mt19937 rng(1234);
    int refused = 0;
    for (int round = 0; round < 300; ++round) {
        std::string m = pkl;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < flips; ++k)
            m[rng() % m.size()] = static_cast<char>(rng() & 0xFF);
        try {
            const pickle::PickleDocument doc = pickle::unpickle(
                m, "mutated",
                [](const std::string&) -> std::optional<std::uint64_t> { return 1u << 20; });
            (void)doc;
        } catch (const InputError&) {
            ++refused;
        }
    }
    EXPECT_GT(refused, 0);
}
