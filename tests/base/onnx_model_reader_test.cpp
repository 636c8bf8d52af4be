#include "core/base/onnx_model_reader.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "tests/support/temp_dir.h"

using namespace crucible;
using namespace crucible::onnx;

namespace {

// A protobuf message written by hand, for inputs serialize_onnx_model never writes: unpacked
// and packed repeated fields, unknown fields, hostile lengths.
class Proto {
  public:
    Proto& varint(std::uint32_t field, std::uint64_t value) {
        key(field, 0);
        bytes_ += varint_bytes(value);
        return *this;
    }
    Proto& int64(std::uint32_t field, std::int64_t value) {
        return varint(field, static_cast<std::uint64_t>(value));
    }
    Proto& fixed32(std::uint32_t field, std::uint32_t value) {
        key(field, 5);
        for (int i = 0; i < 4; ++i)
            bytes_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
        return *this;
    }
    Proto& float32(std::uint32_t field, float value) {
        return fixed32(field, std::bit_cast<std::uint32_t>(value));
    }
    Proto& fixed64(std::uint32_t field, std::uint64_t value) {
        key(field, 1);
        for (int i = 0; i < 8; ++i)
            bytes_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
        return *this;
    }
    Proto& bytes(std::uint32_t field, std::string_view value) {
        key(field, 2);
        bytes_ += varint_bytes(value.size());
        bytes_ += value;
        return *this;
    }
    Proto& message(std::uint32_t field, const Proto& value) { return bytes(field, value.bytes_); }
    Proto& packed_int64s(std::uint32_t field, const std::vector<std::int64_t>& values) {
        std::string run;
        for (auto v : values)
            run += varint_bytes(static_cast<std::uint64_t>(v));
        return bytes(field, run);
    }
    Proto& packed_floats(std::uint32_t field, const std::vector<float>& values) {
        Proto run;
        for (float v : values)
            for (int i = 0; i < 4; ++i)
                run.bytes_.push_back(
                    static_cast<char>((std::bit_cast<std::uint32_t>(v) >> (8 * i)) & 0xff));
        return bytes(field, run.bytes_);
    }
    Proto& raw(std::string_view tail) {
        bytes_ += tail;
        return *this;
    }
    const std::string& str() const { return bytes_; }

    static std::string varint_bytes(std::uint64_t value) {
        std::string out;
        while (value >= 0x80) {
            out.push_back(static_cast<char>((value & 0x7f) | 0x80));
            value >>= 7;
        }
        out.push_back(static_cast<char>(value));
        return out;
    }

  private:
    void key(std::uint32_t field, std::uint32_t wire) {
        bytes_ += varint_bytes((static_cast<std::uint64_t>(field) << 3) | wire);
    }
    std::string bytes_;
};

// One unknown field of each wire type protobuf skips (varint, fixed64, length-delimited,
// fixed32), on field numbers onnx.proto does not use.
Proto& add_unknown_fields(Proto& p) {
    return p.varint(900, 12345)
        .fixed64(901, 0x0102030405060708ull)
        .bytes(902, "skip me")
        .fixed32(903, 0xdeadbeef);
}

std::string le_bytes(std::uint64_t value, int n) {
    std::string out;
    for (int i = 0; i < n; ++i)
        out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
    return out;
}

Proto default_opset(std::int64_t version = 17) {
    return Proto().bytes(1, "").int64(2, version);
}

// A model around `graph` (with the default opset unless told otherwise).
std::string model_around(const Proto& graph, bool with_opset = true) {
    Proto m;
    m.int64(1, 8).bytes(2, "hand").message(7, graph);
    if (with_opset) m.message(8, default_opset());
    return m.str();
}

Proto tensor_proto(std::string_view name, const std::vector<std::int64_t>& dims,
                   std::int64_t data_type, std::string_view raw) {
    Proto t;
    for (auto d : dims)
        t.int64(1, d);
    t.int64(2, data_type).bytes(8, name).bytes(9, raw);
    return t;
}

std::string model_with_initializer(const Proto& tensor) {
    return model_around(Proto().bytes(2, "g").message(5, tensor));
}

std::string model_with_node(const Proto& node) {
    return model_around(Proto().message(1, node).bytes(2, "g"));
}

std::string model_with_attribute(const Proto& attribute) {
    return model_with_node(
        Proto().bytes(1, "x").bytes(2, "y").bytes(3, "n0").bytes(4, "Op").message(5, attribute));
}

void expect_same_tensor(const Tensor& a, const Tensor& b) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type) << a.name;
    EXPECT_EQ(a.dims, b.dims) << a.name;
    EXPECT_EQ(a.raw, b.raw) << a.name;
}

std::vector<std::uint32_t> float_bits(const std::vector<float>& values) {
    std::vector<std::uint32_t> bits;
    for (float v : values)
        bits.push_back(std::bit_cast<std::uint32_t>(v));
    return bits;
}

void expect_same_attribute(const Attribute& a, const Attribute& b) {
    EXPECT_EQ(a.name, b.name);
    ASSERT_EQ(a.value.index(), b.value.index()) << a.name;
    if (const auto* i = std::get_if<std::int64_t>(&a.value)) {
        EXPECT_EQ(*i, std::get<std::int64_t>(b.value));
    } else if (const auto* f = std::get_if<float>(&a.value)) {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(*f),
                  std::bit_cast<std::uint32_t>(std::get<float>(b.value)));
    } else if (const auto* s = std::get_if<std::string>(&a.value)) {
        EXPECT_EQ(*s, std::get<std::string>(b.value));
    } else if (const auto* is = std::get_if<std::vector<std::int64_t>>(&a.value)) {
        EXPECT_EQ(*is, std::get<std::vector<std::int64_t>>(b.value));
    } else if (const auto* fs = std::get_if<std::vector<float>>(&a.value)) {
        EXPECT_EQ(float_bits(*fs), float_bits(std::get<std::vector<float>>(b.value)));
    } else {
        expect_same_tensor(std::get<Tensor>(a.value), std::get<Tensor>(b.value));
    }
}

void expect_same_values(const std::vector<ValueInfo>& a, const std::vector<ValueInfo>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].name, b[i].name);
        EXPECT_EQ(a[i].type, b[i].type) << a[i].name;
        ASSERT_EQ(a[i].shape.size(), b[i].shape.size()) << a[i].name;
        for (std::size_t d = 0; d < a[i].shape.size(); ++d) {
            EXPECT_EQ(a[i].shape[d].value, b[i].shape[d].value) << a[i].name << " dim " << d;
            EXPECT_EQ(a[i].shape[d].param, b[i].shape[d].param) << a[i].name << " dim " << d;
        }
    }
}

void expect_same_model(const Model& a, const Model& b) {
    EXPECT_EQ(a.ir_version, b.ir_version);
    EXPECT_EQ(a.opset, b.opset);
    EXPECT_EQ(a.producer_name, b.producer_name);
    EXPECT_EQ(a.producer_version, b.producer_version);
    EXPECT_EQ(a.doc_string, b.doc_string);
    EXPECT_EQ(a.metadata, b.metadata);
    EXPECT_EQ(a.graph.name, b.graph.name);
    ASSERT_EQ(a.graph.nodes.size(), b.graph.nodes.size());
    for (std::size_t i = 0; i < a.graph.nodes.size(); ++i) {
        const auto& x = a.graph.nodes[i];
        const auto& y = b.graph.nodes[i];
        EXPECT_EQ(x.op_type, y.op_type);
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.inputs, y.inputs);
        EXPECT_EQ(x.outputs, y.outputs);
        ASSERT_EQ(x.attributes.size(), y.attributes.size()) << x.name;
        for (std::size_t j = 0; j < x.attributes.size(); ++j)
            expect_same_attribute(x.attributes[j], y.attributes[j]);
    }
    ASSERT_EQ(a.graph.initializers.size(), b.graph.initializers.size());
    for (std::size_t i = 0; i < a.graph.initializers.size(); ++i)
        expect_same_tensor(a.graph.initializers[i], b.graph.initializers[i]);
    expect_same_values(a.graph.inputs, b.graph.inputs);
    expect_same_values(a.graph.outputs, b.graph.outputs);
}

Tensor raw_tensor(std::string name, DataType type, std::vector<std::int64_t> dims,
                  std::string raw) {
    return Tensor{std::move(name), type, std::move(dims), std::move(raw)};
}

// A model with every attribute kind, every data type and both kinds of dimension.
Model full_model() {
    Model m;
    m.ir_version = 9;
    m.opset = 19;
    m.producer_name = "crucible";
    m.producer_version = "1.2.3";
    m.doc_string = "检测模型 (detector)";
    m.graph.name = "main_graph";
    m.graph.initializers = {
        float_tensor("conv.weight", {0.5f, -1.25f, 3.0f, 1e-30f}, {4, 1, 1, 1}),
        half_tensor("half.bias", {1.0f, -2.0f, 65504.0f}),
        int64_tensor("shape", {1, -1, 84}),
        raw_tensor("int32s", DataType::Int32, {2}, le_bytes(0xfffffff9u, 4) + le_bytes(42, 4)),
        raw_tensor("bytes", DataType::Uint8, {2, 2}, std::string("\x00\x7f\x80\xff", 4)),
        float_tensor("scalar", {2.5f}, {}),
        float_tensor("empty", {}, {0, 3}),
    };
    Node conv;
    conv.op_type = "Conv";
    conv.name = "/model.0/conv/Conv";
    conv.inputs = {"images", "conv.weight", ""};
    conv.outputs = {"conv_out"};
    conv.attributes = {
        {"group", std::int64_t{-3}},
        {"alpha", 0.125f},
        {"auto_pad", std::string("SAME_UPPER")},
        {"kernel_shape", std::vector<std::int64_t>{3, 3, -1}},
        {"scales", std::vector<float>{1.0f, 2.0f, -0.5f}},
        {"value", half_tensor("", {0.25f, 4.0f}, {2, 1})},
        {"empty_ints", std::vector<std::int64_t>{}},
    };
    Node reshape;
    reshape.op_type = "Reshape";
    reshape.inputs = {"conv_out", "shape"};
    reshape.outputs = {"output0"};
    m.graph.nodes = {conv, reshape};
    m.graph.inputs = {{"images", DataType::Float, {{1, ""}, {3, ""}, {0, "height"}, {0, "width"}}}};
    m.graph.outputs = {{"output0", DataType::Float16, {{0, "batch"}, {84, ""}, {8400, ""}}},
                       {"count", DataType::Int64, {}},
                       {"mask", DataType::Uint8, {{0, "n"}}},
                       {"ids", DataType::Int32, {{7, ""}}}};
    m.metadata = {{"names", "{0: '猫', 1: '狗'}"}, {"stride", "32"}, {"描述", "中文说明"}};
    return m;
}

// A small valid model, for the loops over every prefix and every byte.
std::string small_model_bytes() {
    Model m;
    m.graph.name = "g";
    m.graph.initializers = {float_tensor("w", {1.0f, 2.0f})};
    Node n;
    n.op_type = "Mul";
    n.inputs = {"x", "w"};
    n.outputs = {"y"};
    n.attributes = {{"k", std::int64_t{2}}, {"t", int64_tensor("", {5})}};
    m.graph.nodes = {n};
    m.graph.inputs = {{"x", DataType::Float, {{0, "n"}, {2, ""}}}};
    m.graph.outputs = {{"y", DataType::Float, {{0, "n"}, {2, ""}}}};
    m.metadata = {{"stride", "32"}};
    return serialize_onnx_model(m);
}

constexpr const char* kWhere = "hostile.onnx";

// The InputError message parsing `bytes` gives, or "" (and a failure) when it parses.
std::string error_of(const std::string& bytes) {
    try {
        parse_onnx_model(bytes, kWhere);
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), kWhere);
        return e.what();
    }
    ADD_FAILURE() << "parsed without error";
    return "";
}

}  // namespace

TEST(OnnxModelReader, RoundTripKeepsEveryField) {
    const Model original = full_model();
    const std::string bytes = serialize_onnx_model(original);
    const Model parsed = parse_onnx_model(bytes, "full.onnx");
    expect_same_model(original, parsed);
    // And the bytes written again are the same bytes.
    EXPECT_EQ(serialize_onnx_model(parsed), bytes);
}

TEST(OnnxModelReader, HandEncodedUnpackedFieldsUnknownFieldsAndInitializerInputs) {
    Proto conv;
    conv.bytes(1, "x").bytes(1, "w").bytes(2, "y").bytes(3, "mul0").bytes(4, "Mul");
    // ints unpacked with a negative value (ten-byte varint), and a type.
    conv.message(5, Proto().bytes(1, "axes").int64(8, 1).int64(8, -1).int64(20, 7));
    // No type: the value fields tell it (IR version 1).
    conv.message(5, Proto().bytes(1, "scale").float32(2, 0.75f));
    conv.message(5, Proto().bytes(1, "count").int64(3, -5));
    conv.message(5, Proto().bytes(1, "mode").bytes(4, "nearest"));
    conv.message(5, Proto().bytes(1, "packed_floats").packed_floats(7, {1.5f, -2.0f}));
    conv.message(
        5, Proto().bytes(1, "unpacked_floats").float32(7, 3.0f).float32(7, 4.0f).int64(20, 6));
    conv.message(5, Proto().bytes(1, "packed_ints").packed_int64s(8, {7, -8}));
    conv.message(5, Proto().bytes(1, "t").message(5, tensor_proto("", {1}, 7, le_bytes(9, 8))));
    conv.bytes(7, "ai.onnx");  // the default domain by its long name
    add_unknown_fields(conv);

    // Unpacked dims and float_data.
    Proto w;
    w.int64(1, 2).int64(1, 3).int64(2, 1).bytes(8, "w");
    for (float v : {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, -6.0f})
        w.float32(4, v);
    add_unknown_fields(w);
    // Packed dims, unpacked int64_data.
    Proto shape;
    shape.packed_int64s(1, {2}).int64(2, 7).bytes(8, "shape").int64(7, -1).int64(7, 5);
    // FLOAT16 in int32_data (each half's bits in an int32), packed.
    Proto half;
    half.int64(1, 2).int64(2, 10).bytes(8, "half").packed_int64s(5, {0x3c00, 0xc000});
    // UINT8 and INT32 in int32_data, unpacked; -7 as a ten-byte varint.
    Proto u8;
    u8.int64(1, 2).int64(2, 2).bytes(8, "u8").int64(5, 1).int64(5, 255);
    Proto i32;
    i32.int64(1, 1).int64(2, 6).bytes(8, "i32").int64(5, -7);
    // Scalar float in float_data, data_type written last.
    Proto scalar;
    scalar.bytes(8, "scalar").float32(4, 2.5f).int64(2, 1);

    auto value = [](std::string_view name, std::int64_t elem_type, const Proto& shape_proto,
                    bool with_shape = true) {
        Proto tensor_type;
        tensor_type.int64(1, elem_type);
        if (with_shape) tensor_type.message(2, shape_proto);
        Proto type;
        type.message(1, tensor_type).bytes(6, "denotation");
        return Proto().bytes(1, name).message(2, type).bytes(3, "doc");
    };
    Proto x_shape;
    x_shape.message(1, Proto().bytes(2, "N"))
        .message(1, Proto().int64(1, 4))
        .message(1, Proto())                                // neither value nor name: unknown
        .message(1, Proto().bytes(2, "late").int64(1, 9));  // a oneof: the last one wins

    Proto graph;
    graph.message(1, conv)
        .bytes(2, "torch_jit")
        .message(5, w)
        .message(5, shape)
        .message(5, half)
        .message(5, u8)
        .message(5, i32)
        .message(5, scalar)
        .bytes(10, "graph doc")
        .message(11, value("x", 1, x_shape))
        .message(11, value("w", 1, Proto().message(1, Proto().int64(1, 2))))  // an initializer
        .message(11, value("z", 7, Proto(), /*with_shape=*/false))
        .message(11, value("shape", 7, Proto()))  // an initializer too
        .message(12, value("y", 10, Proto().message(1, Proto().bytes(2, "N"))))
        .message(13, value("intermediate", 1, Proto()));
    add_unknown_fields(graph);

    Proto model;
    model.int64(1, 7)
        .bytes(2, "pytorch")
        .bytes(3, "2.1.0")
        .bytes(4, "domain")
        .int64(5, 3)
        .bytes(6, "doc")
        .message(7, graph)
        .message(8, Proto().bytes(1, "ai.onnx.ml").int64(2, 3))
        .message(8, Proto().bytes(1, "ai.onnx").int64(2, 13))
        .message(14, Proto().bytes(1, "names").bytes(2, "{0: 'person'}"))
        .message(14, Proto().bytes(1, "empty"));
    add_unknown_fields(model);

    const Model m = parse_onnx_model(model.str(), "hand.onnx");
    EXPECT_EQ(m.ir_version, 7);
    EXPECT_EQ(m.opset, 13);
    EXPECT_EQ(m.producer_name, "pytorch");
    EXPECT_EQ(m.producer_version, "2.1.0");
    EXPECT_EQ(m.doc_string, "doc");
    EXPECT_EQ(m.metadata, (std::vector<std::pair<std::string, std::string>>{
                              {"names", "{0: 'person'}"}, {"empty", ""}}));
    EXPECT_EQ(m.graph.name, "torch_jit");

    ASSERT_EQ(m.graph.nodes.size(), 1u);
    const Node& n = m.graph.nodes[0];
    EXPECT_EQ(n.op_type, "Mul");
    EXPECT_EQ(n.name, "mul0");
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
    ASSERT_EQ(n.attributes.size(), 8u);
    EXPECT_EQ(std::get<std::vector<std::int64_t>>(n.attributes[0].value),
              (std::vector<std::int64_t>{1, -1}));
    EXPECT_EQ(std::get<float>(n.attributes[1].value), 0.75f);
    EXPECT_EQ(std::get<std::int64_t>(n.attributes[2].value), -5);
    EXPECT_EQ(std::get<std::string>(n.attributes[3].value), "nearest");
    EXPECT_EQ(std::get<std::vector<float>>(n.attributes[4].value),
              (std::vector<float>{1.5f, -2.0f}));
    EXPECT_EQ(std::get<std::vector<float>>(n.attributes[5].value),
              (std::vector<float>{3.0f, 4.0f}));
    EXPECT_EQ(std::get<std::vector<std::int64_t>>(n.attributes[6].value),
              (std::vector<std::int64_t>{7, -8}));
    expect_same_tensor(std::get<Tensor>(n.attributes[7].value), int64_tensor("", {9}));

    ASSERT_EQ(m.graph.initializers.size(), 6u);
    expect_same_tensor(m.graph.initializers[0],
                       float_tensor("w", {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, -6.0f}, {2, 3}));
    expect_same_tensor(m.graph.initializers[1], int64_tensor("shape", {-1, 5}));
    expect_same_tensor(m.graph.initializers[2], half_tensor("half", {1.0f, -2.0f}));
    expect_same_tensor(m.graph.initializers[3],
                       raw_tensor("u8", DataType::Uint8, {2}, std::string("\x01\xff", 2)));
    expect_same_tensor(m.graph.initializers[4],
                       raw_tensor("i32", DataType::Int32, {1}, le_bytes(0xfffffff9u, 4)));
    expect_same_tensor(m.graph.initializers[5], float_tensor("scalar", {2.5f}, {}));

    // "w" and "shape" are initializers: not inputs a caller feeds.
    ASSERT_EQ(m.graph.inputs.size(), 2u);
    EXPECT_EQ(m.graph.inputs[0].name, "x");
    EXPECT_EQ(m.graph.inputs[0].type, DataType::Float);
    ASSERT_EQ(m.graph.inputs[0].shape.size(), 4u);
    EXPECT_EQ(m.graph.inputs[0].shape[0].param, "N");
    EXPECT_EQ(m.graph.inputs[0].shape[1].value, 4);
    EXPECT_EQ(m.graph.inputs[0].shape[1].param, "");
    EXPECT_EQ(m.graph.inputs[0].shape[2].value, -1);
    EXPECT_EQ(m.graph.inputs[0].shape[2].param, "");
    EXPECT_EQ(m.graph.inputs[0].shape[3].value, 9);
    EXPECT_EQ(m.graph.inputs[0].shape[3].param, "");
    EXPECT_EQ(m.graph.inputs[1].name, "z");
    EXPECT_EQ(m.graph.inputs[1].type, DataType::Int64);
    EXPECT_TRUE(m.graph.inputs[1].shape.empty());
    ASSERT_EQ(m.graph.outputs.size(), 1u);
    EXPECT_EQ(m.graph.outputs[0].name, "y");
    EXPECT_EQ(m.graph.outputs[0].type, DataType::Float16);
    ASSERT_EQ(m.graph.outputs[0].shape.size(), 1u);
    EXPECT_EQ(m.graph.outputs[0].shape[0].param, "N");
}

TEST(OnnxModelReader, HostileInputsAreInputErrorsNamingFileAndFault) {
    struct Case {
        const char* what;
        std::string bytes;
        std::vector<std::string> words;  // each must be in the message
    };
    const Proto graph_ok = Proto().bytes(2, "g");
    const std::string float8 = le_bytes(0, 8);
    const std::vector<Case> cases = {
        {"empty", "", {"empty file"}},
        {"length past the end",
         Proto().raw("\x3a").raw(Proto::varint_bytes(4000000000)).str(),
         {"field length 4000000000 past the end", "model"}},
        {"11-byte varint", "\x08" + std::string(10, '\x80') + "\x01", {"longer than 10 bytes"}},
        {"varint over 64 bits", "\x08" + std::string(9, '\xff') + "\x02", {"64 bits"}},
        {"truncated varint in a node",
         model_with_node(Proto().bytes(4, "Relu").raw(std::string("\x98\x06", 2))),
         {"graph.node[0]: truncated varint"}},
        {"truncated fixed32",
         model_with_attribute(Proto().bytes(1, "f").raw(std::string("\x15\x01\x02", 3))),
         {"graph.node[0].attribute[0]", "truncated"}},
        {"wrong wire type for graph",
         Proto().varint(7, 1).message(8, default_opset()).str(),
         {"wire type 0", "graph (field 7)"}},
        {"wrong wire type for an attribute's f",
         model_with_attribute(Proto().bytes(1, "alpha").varint(2, 1)),
         {"graph.node[0].attribute[0]", "wrong wire type", "f (field 2)"}},
        {"group wire type", Proto().raw("\x3b").str(), {"wire type 3"}},
        {"field number 0", std::string("\x00\x01", 2), {"field number 0"}},
        {"external data",
         model_with_initializer(tensor_proto("w", {2}, 1, "").int64(14, 1)),
         {"graph.initializer[0]", "tensor 'w'", "external data is not supported"}},
        {"DOUBLE tensor",
         model_with_initializer(tensor_proto("d", {1}, 11, float8)),
         {"tensor 'd'", "11 (DOUBLE)"}},
        {"undefined data type",
         model_with_initializer(Proto().bytes(8, "u").bytes(9, "")),
         {"tensor 'u'", "0 (UNDEFINED)"}},
        {"raw size mismatch",
         model_with_initializer(tensor_proto("w", {3}, 1, float8)),
         {"tensor 'w'", "8 bytes", "3 elements"}},
        {"negative dim",
         model_with_initializer(tensor_proto("w", {-2}, 1, float8)),
         {"tensor 'w'", "negative dimension -2"}},
        {"dims overflow",
         model_with_initializer(tensor_proto("big", {1ll << 40, 1ll << 40, 1ll << 40}, 1, "")),
         {"tensor 'big'", "2^40"}},
        {"int64 overflow dims",
         model_with_initializer(tensor_proto("big", {1ll << 62, 1ll << 62}, 1, "")),
         {"tensor 'big'", "2^40"}},
        {"raw and typed data",
         model_with_initializer(tensor_proto("w", {1}, 1, le_bytes(0, 4)).float32(4, 1.0f)),
         {"both raw_data and typed data"}},
        {"float_data for INT64",
         model_with_initializer(Proto().int64(1, 1).int64(2, 7).bytes(8, "w").float32(4, 1.0f)),
         {"tensor 'w'", "INT64", "does not use"}},
        {"UINT8 out of range",
         model_with_initializer(Proto().int64(1, 1).int64(2, 2).bytes(8, "u").int64(5, 300)),
         {"tensor 'u'", "300", "out of range"}},
        {"packed floats not a multiple of 4",
         model_with_initializer(Proto().int64(1, 1).int64(2, 1).bytes(8, "w").bytes(4, "12345")),
         {"graph.initializer[0].float_data", "multiple of 4"}},
        {"GRAPH attribute",
         model_with_attribute(Proto().bytes(1, "then_branch").message(6, graph_ok).int64(20, 5)),
         {"graph.node[0].attribute[0]", "attribute 'then_branch'", "GRAPH (5)"}},
        {"GRAPH attribute without a type",
         model_with_attribute(Proto().bytes(1, "body").message(6, graph_ok)),
         {"attribute 'body'", "GRAPH (5)"}},
        {"STRINGS attribute",
         model_with_attribute(Proto().bytes(1, "names").bytes(9, "a").int64(20, 8)),
         {"attribute 'names'", "STRINGS (8)"}},
        {"attribute without a value",
         model_with_attribute(Proto().bytes(1, "nothing")),
         {"attribute 'nothing'", "neither a type nor a value"}},
        {"attribute of mixed kinds",
         model_with_attribute(Proto().bytes(1, "mixed").int64(3, 1).float32(2, 1.0f)),
         {"attribute 'mixed'", "several kinds"}},
        {"attribute without a name",
         model_with_attribute(Proto().int64(3, 1)),
         {"attribute without a name"}},
        {"TENSOR attribute without a tensor",
         model_with_attribute(Proto().bytes(1, "value").int64(20, 4)),
         {"attribute 'value'", "no tensor"}},
        {"foreign domain node",
         model_with_node(Proto()
                             .bytes(1, "x")
                             .bytes(2, "y")
                             .bytes(3, "attn")
                             .bytes(4, "Attention")
                             .bytes(7, "com.microsoft")),
         {"graph.node[0]", "node 'attn'", "Attention", "'com.microsoft'"}},
        {"node without op_type", model_with_node(Proto().bytes(3, "n")), {"node 'n'", "op_type"}},
        {"no default opset",
         Proto()
             .int64(1, 8)
             .message(7, graph_ok)
             .message(8, Proto().bytes(1, "ai.onnx.ml").int64(2, 3))
             .str(),
         {"model", "opset_import", "default ONNX domain"}},
        {"no graph",
         Proto().int64(1, 8).message(8, default_opset()).str(),
         {"no graph", "not an ONNX model"}},
        {"sparse initializer",
         model_around(Proto().bytes(2, "g").message(15, Proto())),
         {"graph", "sparse initializers"}},
        {"sequence input",
         model_around(
             Proto().message(11, Proto().bytes(1, "seq").message(2, Proto().message(4, Proto())))),
         {"graph.input[0]", "value 'seq'", "no tensor type"}},
        {"input without a type",
         model_around(Proto().message(11, Proto().bytes(1, "bare"))),
         {"value 'bare'", "no tensor type"}},
        {"BOOL output",
         model_around(Proto().message(
             12, Proto().bytes(1, "flag").message(
                     2, Proto().message(1, Proto().int64(1, 9).message(2, Proto()))))),
         {"graph.output[0]", "value 'flag'", "9 (BOOL)"}},
        {"truncated dim in a shape",
         model_around(Proto().message(
             11, Proto().bytes(1, "x").message(
                     2, Proto().message(1, Proto().int64(1, 1).message(
                                               2, Proto().message(1, Proto().raw("\x08"))))))),
         {"graph.input[0].type.tensor_type.shape.dim[0]", "truncated varint"}},
        {"not protobuf at all", "PK\x03\x04 a zip file", {}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        const std::string message = error_of(c.bytes);
        EXPECT_EQ(message.rfind(std::string(kWhere) + ": ", 0), 0u) << message;
        for (const auto& word : c.words)
            EXPECT_NE(message.find(word), std::string::npos)
                << "'" << word << "' not in: " << message;
    }
}

TEST(OnnxModelReader, EveryPrefixOfAModelParsesOrIsAnInputError) {
    const std::string bytes = small_model_bytes();
    ASSERT_NO_THROW(parse_onnx_model(bytes, kWhere));
    std::size_t rejected = 0;
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        try {
            parse_onnx_model(std::string_view(bytes).substr(0, n), kWhere);
        } catch (const InputError& e) {
            EXPECT_EQ(std::string(e.what()).rfind(std::string(kWhere) + ": ", 0), 0u) << e.what();
            ++rejected;
        }
    }
    // Only a cut after the opset (before the metadata) leaves a whole model.
    EXPECT_EQ(rejected, bytes.size() - 1);
}

TEST(OnnxModelReader, EveryChangedByteParsesOrIsAnInputError) {
    const std::string bytes = small_model_bytes();
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        for (const int x : {0x01, 0x07, 0x80, 0xff}) {
            std::string changed = bytes;
            changed[i] = static_cast<char>(static_cast<unsigned char>(changed[i]) ^ x);
            try {
                parse_onnx_model(changed, kWhere);
            } catch (const InputError&) {
            }
        }
    }
}

TEST(OnnxModelReader, NonUtf8NamesAreBytesAndParse) {
    Model m;
    m.graph.name = std::string("g\xff", 2);
    m.graph.initializers = {float_tensor(std::string("\xc3\x28", 2), {1.0f})};
    Node n;
    n.op_type = "Identity";
    n.name = std::string("\xfe\xfe", 2);
    n.inputs = {std::string("\x80", 1)};
    n.outputs = {"y"};
    n.attributes = {{std::string("\xff", 1), std::string("\xed\xa0\x80", 3)}};  // a surrogate
    m.graph.nodes = {n};
    m.graph.inputs = {{std::string("\x80", 1), DataType::Float, {{0, std::string("\xc0\xaf", 2)}}}};
    m.graph.outputs = {{"y", DataType::Float, {{1, ""}}}};
    m.metadata = {{std::string("\xff\xfe", 2), std::string("\xc0", 1)}};
    expect_same_model(m, parse_onnx_model(serialize_onnx_model(m), kWhere));
}

TEST(OnnxModelReader, FindMetadataReturnsTheValueOrNull) {
    Model m;
    m.metadata = {{"stride", "32"}, {"names", "{0: '猫'}"}};
    ASSERT_NE(find_metadata(m, "names"), nullptr);
    EXPECT_EQ(*find_metadata(m, "names"), "{0: '猫'}");
    EXPECT_EQ(*find_metadata(m, "stride"), "32");
    EXPECT_EQ(find_metadata(m, "imgsz"), nullptr);
}

TEST(OnnxModelReader, ReadsAFileAndNamesItInErrors) {
    test_support::TempDir dir("onnx_reader");
    const auto file = dir / "模型.onnx";
    write_file_atomically(file, serialize_onnx_model(full_model()));
    expect_same_model(full_model(), read_onnx_model(file));

    const auto broken = dir / "broken.onnx";
    write_file_atomically(broken, std::string("\x3a\x7f", 2));
    try {
        read_onnx_model(broken);
        ADD_FAILURE() << "a broken file parsed";
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), path_to_utf8(broken));
        EXPECT_NE(std::string(e.what()).find("past the end"), std::string::npos) << e.what();
    }

    const auto empty = dir / "empty.onnx";
    write_file_atomically(empty, "");
    try {
        read_onnx_model(empty);
        ADD_FAILURE() << "an empty file parsed";
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), path_to_utf8(empty));
        EXPECT_NE(std::string(e.what()).find("empty file"), std::string::npos) << e.what();
    }
}

TEST(OnnxModelReader, MissingFileIsAnInputErrorNamingIt) {
    test_support::TempDir dir("onnx_reader");
    const auto missing = dir / "missing.onnx";
    try {
        read_onnx_model(missing);
        ADD_FAILURE() << "a missing file was read";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("missing.onnx"), std::string::npos) << e.what();
    }
}
