#include "core/base/onnx_model.h"

#include <bit>
#include <cstring>

#include "core/base/error.h"
#include "core/base/onnx_wire.h"

namespace crucible::onnx {

namespace {

using namespace wire;

// One protobuf message being written: fields are appended in the order given.
class Message {
  public:
    void varint(std::uint32_t field, std::uint64_t value) {
        key(field, kVarint);
        raw_varint(value);
    }
    void int64(std::uint32_t field, std::int64_t value) {
        varint(field, static_cast<std::uint64_t>(value));  // negative: ten bytes, as protobuf
    }
    void float32(std::uint32_t field, float value) {
        key(field, kFixed32);
        const auto bits = std::bit_cast<std::uint32_t>(value);
        for (int i = 0; i < 4; ++i)
            bytes_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    }
    void bytes(std::uint32_t field, const std::string& value) {
        key(field, kLengthDelimited);
        raw_varint(value.size());
        bytes_ += value;
    }
    void message(std::uint32_t field, const Message& value) { bytes(field, value.bytes_); }
    const std::string& data() const { return bytes_; }

  private:
    void key(std::uint32_t field, std::uint32_t wire_type) {
        raw_varint((static_cast<std::uint64_t>(field) << 3) | wire_type);
    }
    void raw_varint(std::uint64_t value) {
        while (value >= 0x80) {
            bytes_.push_back(static_cast<char>((value & 0x7f) | 0x80));
            value >>= 7;
        }
        bytes_.push_back(static_cast<char>(value));
    }
    std::string bytes_;
};

Message tensor_message(const Tensor& t) {
    std::size_t count = 1;
    for (auto d : t.dims) {
        if (d < 0) throw Error("ONNX tensor '" + t.name + "': negative dimension");
        count *= static_cast<std::size_t>(d);
    }
    if (t.raw.size() != count * element_size(t.type))
        throw Error("ONNX tensor '" + t.name + "': " + std::to_string(t.raw.size()) +
                    " bytes for " + std::to_string(count) + " elements");
    Message m;
    for (auto d : t.dims)
        m.int64(1, d);                                // dims
    m.varint(2, static_cast<std::uint64_t>(t.type));  // data_type
    if (!t.name.empty()) m.bytes(8, t.name);          // name
    m.bytes(9, t.raw);                                // raw_data
    return m;
}

Message attribute_message(const Attribute& a) {
    Message m;
    m.bytes(1, a.name);
    std::visit(
        [&m](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::int64_t>) {
                m.int64(3, v);
                m.int64(20, kAttrInt);
            } else if constexpr (std::is_same_v<T, float>) {
                m.float32(2, v);
                m.int64(20, kAttrFloat);
            } else if constexpr (std::is_same_v<T, std::string>) {
                m.bytes(4, v);
                m.int64(20, kAttrString);
            } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
                for (auto x : v)
                    m.int64(8, x);
                m.int64(20, kAttrInts);
            } else if constexpr (std::is_same_v<T, std::vector<float>>) {
                for (auto x : v)
                    m.float32(7, x);
                m.int64(20, kAttrFloats);
            } else {
                m.message(5, tensor_message(v));
                m.int64(20, kAttrTensor);
            }
        },
        a.value);
    return m;
}

Message node_message(const Node& n) {
    Message m;
    for (const auto& i : n.inputs)
        m.bytes(1, i);
    for (const auto& o : n.outputs)
        m.bytes(2, o);
    if (!n.name.empty()) m.bytes(3, n.name);
    m.bytes(4, n.op_type);
    for (const auto& a : n.attributes)
        m.message(5, attribute_message(a));
    return m;
}

Message value_info_message(const ValueInfo& v) {
    Message shape;
    for (const auto& d : v.shape) {
        Message dim;
        if (d.param.empty())
            dim.int64(1, d.value);  // dim_value
        else
            dim.bytes(2, d.param);  // dim_param
        shape.message(1, dim);
    }
    Message tensor_type;
    tensor_type.varint(1, static_cast<std::uint64_t>(v.type));  // elem_type
    tensor_type.message(2, shape);
    Message type;
    type.message(1, tensor_type);  // TypeProto.tensor_type
    Message m;
    m.bytes(1, v.name);
    m.message(2, type);
    return m;
}

template <typename T>
Tensor tensor_of(std::string name, DataType type, const std::vector<T>& values,
                 std::vector<std::int64_t> dims) {
    if (dims.size() == 1 && dims[0] == -1) dims[0] = static_cast<std::int64_t>(values.size());
    Tensor t{std::move(name), type, std::move(dims), {}};
    t.raw.resize(values.size() * sizeof(T));
    static_assert(std::endian::native == std::endian::little, "raw_data is little-endian");
    if (!values.empty()) std::memcpy(t.raw.data(), values.data(), t.raw.size());
    return t;
}

}  // namespace

std::size_t element_size(DataType type) {
    switch (type) {
        case DataType::Float:
        case DataType::Int32:
            return 4;
        case DataType::Uint8:
            return 1;
        case DataType::Int64:
            return 8;
        case DataType::Float16:
            return 2;
    }
    throw Error("ONNX: unknown data type " + std::to_string(static_cast<int>(type)));
}

std::uint16_t half_from_float(float value) {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t sign = (bits >> 16) & 0x8000u;
    const std::uint32_t exponent = (bits >> 23) & 0xffu;
    std::uint32_t mantissa = bits & 0x7fffffu;
    if (exponent == 0xff)  // inf or nan (a nan keeps a mantissa bit)
        return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
    const int e = static_cast<int>(exponent) - 127 + 15;
    if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow: inf
    if (e <= 0) {                                                    // subnormal or zero
        if (e < -10) return static_cast<std::uint16_t>(sign);
        mantissa |= 0x800000u;
        const int shift = 14 - e;
        std::uint32_t half = mantissa >> shift;
        const std::uint32_t rest = mantissa & ((1u << shift) - 1);
        const std::uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
        return static_cast<std::uint16_t>(sign | half);
    }
    std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13);
    const std::uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into inf
    return static_cast<std::uint16_t>(sign | half);
}

Tensor int64_tensor(std::string name, const std::vector<std::int64_t>& values,
                    std::vector<std::int64_t> dims) {
    return tensor_of(std::move(name), DataType::Int64, values, std::move(dims));
}

Tensor float_tensor(std::string name, const std::vector<float>& values,
                    std::vector<std::int64_t> dims) {
    return tensor_of(std::move(name), DataType::Float, values, std::move(dims));
}

Tensor half_tensor(std::string name, const std::vector<float>& values,
                   std::vector<std::int64_t> dims) {
    std::vector<std::uint16_t> halves;
    halves.reserve(values.size());
    for (float v : values)
        halves.push_back(half_from_float(v));
    return tensor_of(std::move(name), DataType::Float16, halves, std::move(dims));
}

std::string serialize_onnx_model(const Model& model) {
    Message graph;
    for (const auto& n : model.graph.nodes)
        graph.message(1, node_message(n));
    graph.bytes(2, model.graph.name);
    for (const auto& t : model.graph.initializers)
        graph.message(5, tensor_message(t));
    for (const auto& v : model.graph.inputs)
        graph.message(11, value_info_message(v));
    for (const auto& v : model.graph.outputs)
        graph.message(12, value_info_message(v));

    Message m;
    m.int64(1, model.ir_version);
    m.bytes(2, model.producer_name);
    if (!model.producer_version.empty()) m.bytes(3, model.producer_version);
    if (!model.doc_string.empty()) m.bytes(6, model.doc_string);
    m.message(7, graph);
    Message opset;
    opset.bytes(1, "");  // the default domain: ai.onnx
    opset.int64(2, model.opset);
    m.message(8, opset);
    for (const auto& [key, value] : model.metadata) {
        Message entry;
        entry.bytes(1, key);
        entry.bytes(2, value);
        m.message(14, entry);
    }
    return m.data();
}

}  // namespace crucible::onnx
