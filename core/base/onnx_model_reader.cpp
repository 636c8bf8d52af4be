#include "core/base/onnx_model_reader.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/onnx_wire.h"

namespace crucible::onnx {

namespace {

using namespace wire;

// TensorProto.DataLocation.EXTERNAL: the weights sit in another file.
constexpr std::int64_t kDataLocationExternal = 1;

// A tensor over 2^40 elements cannot come with its data in a 2 GiB file; the cap keeps the
// element and byte counts far from overflow.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 40;

// Protobuf refuses messages of 2 GiB and more; exporters keep larger weights as external data.
constexpr std::uint64_t kMaxModelBytes = (std::uint64_t{1} << 31) - 1;

std::string wire_type_label(std::uint32_t wire) {
    static constexpr std::array<const char*, 8> names = {
        "varint",    "fixed64", "length-delimited", "start group",
        "end group", "fixed32", "invalid",          "invalid"};
    return std::to_string(wire) + " (" + names[wire & 7u] + ")";
}

// "11 (DOUBLE)" rather than a bare number: TensorProto.DataType names up to onnx 1.17.
std::string data_type_label(std::int64_t type) {
    static constexpr std::array<const char*, 24> names = {
        "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
        "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
        "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
        "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",     "FLOAT4E2M1"};
    std::string label = std::to_string(type);
    if (type >= 0 && type < static_cast<std::int64_t>(names.size()))
        label += std::string(" (") + names[static_cast<std::size_t>(type)] + ")";
    return label;
}

constexpr const char* kSupportedDataTypes = "supported are FLOAT, UINT8, INT32, INT64 and FLOAT16";

std::optional<DataType> supported_data_type(std::int64_t type) {
    switch (type) {
        case 1:
            return DataType::Float;
        case 2:
            return DataType::Uint8;
        case 6:
            return DataType::Int32;
        case 7:
            return DataType::Int64;
        case 10:
            return DataType::Float16;
        default:
            return std::nullopt;
    }
}

std::string attribute_type_label(std::int64_t type) {
    static constexpr std::array<const char*, 15> names = {
        "UNDEFINED",      "FLOAT",      "INT",        "STRING",  "TENSOR", "GRAPH",
        "FLOATS",         "INTS",       "STRINGS",    "TENSORS", "GRAPHS", "SPARSE_TENSOR",
        "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    std::string label = std::to_string(type);
    if (type >= 0 && type < static_cast<std::int64_t>(names.size()))
        label = std::string(names[static_cast<std::size_t>(type)]) + " (" + label + ")";
    return label;
}

// "graph.node[3]": the path of element `index` of repeated field `field` in message `path`.
std::string indexed(const std::string& path, std::string_view field, std::size_t index) {
    return (path.empty() ? "" : path + ".") + std::string(field) + "[" + std::to_string(index) +
           "]";
}

struct Field {
    std::uint32_t number = 0;
    std::uint32_t wire = 0;
};

// A cursor over one message's bytes. `path` names the message in errors ("graph.node[3]"),
// `where` (the file) leads them. Every read checks the bytes left first, so no input reads
// out of bounds; an embedded message gets its own Reader over exactly its bytes.
class Reader {
  public:
    Reader(std::string_view bytes, const std::string& where, std::string path)
        : bytes_(bytes), where_(where), path_(std::move(path)) {}

    bool more() const { return pos_ < bytes_.size(); }
    const std::string& path() const { return path_; }

    [[noreturn]] void fail(const std::string& what) const {
        throw InputError(where_, path_ + ": " + what);
    }

    // The next field's key.
    Field field() {
        const std::uint64_t key = varint();
        const std::uint64_t number = key >> 3;
        const auto wire = static_cast<std::uint32_t>(key & 7u);
        if (number == 0 || number > (std::uint64_t{1} << 29) - 1)
            fail("invalid field number " + std::to_string(number));
        if (wire != kVarint && wire != kFixed64 && wire != kLengthDelimited && wire != kFixed32)
            fail("field " + std::to_string(number) + " has wire type " + wire_type_label(wire) +
                 ", which onnx.proto never uses");
        return {static_cast<std::uint32_t>(number), wire};
    }

    std::uint64_t varint() {
        std::uint64_t value = 0;
        for (int i = 0; i < 10; ++i) {
            if (pos_ >= bytes_.size()) fail("truncated varint");
            const auto byte = static_cast<std::uint8_t>(bytes_[pos_++]);
            value |= static_cast<std::uint64_t>(byte & 0x7fu) << (7 * i);
            if ((byte & 0x80u) == 0) {
                // The tenth byte holds bit 63 only.
                if (i == 9 && byte > 1) fail("varint over 64 bits");
                return value;
            }
        }
        fail("varint longer than 10 bytes");
    }

    std::uint32_t fixed32() {
        const std::string_view b = take(4, "fixed32 value");
        std::uint32_t value = 0;
        for (std::size_t i = 0; i < 4; ++i)
            value |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(b[i])) << (8 * i);
        return value;
    }

    // A length-delimited field's payload.
    std::string_view length_delimited() {
        const std::uint64_t length = varint();
        const std::size_t left = bytes_.size() - pos_;
        if (length > left)
            fail("field length " + std::to_string(length) + " past the end (" +
                 std::to_string(left) + " bytes left)");
        return take(static_cast<std::size_t>(length), "field");
    }

    // An unknown field of any valid wire type is skipped, as protobuf does.
    void skip(const Field& f) {
        switch (f.wire) {
            case kVarint:
                varint();
                return;
            case kFixed64:
                take(8, "fixed64 value");
                return;
            case kLengthDelimited:
                length_delimited();
                return;
            default:  // kFixed32; field() refused the others
                take(4, "fixed32 value");
                return;
        }
    }

    // A known field must come with the wire type onnx.proto gives it.
    void expect(const Field& f, std::uint32_t wire, std::string_view name) const {
        if (f.wire != wire)
            fail("wrong wire type " + wire_type_label(f.wire) + " for " + std::string(name) +
                 " (field " + std::to_string(f.number) + "); expected " + wire_type_label(wire));
    }

    std::int64_t read_int64(const Field& f, std::string_view name) {
        expect(f, kVarint, name);
        return static_cast<std::int64_t>(varint());  // two's complement, as protobuf's int64
    }
    float read_float(const Field& f, std::string_view name) {
        expect(f, kFixed32, name);
        return std::bit_cast<float>(fixed32());
    }
    std::string read_string(const Field& f, std::string_view name) {
        expect(f, kLengthDelimited, name);
        return std::string(length_delimited());  // bytes, not checked as UTF-8: names are bytes
    }
    // An embedded message, as a Reader named `path`.
    Reader read_message(const Field& f, std::string_view name, std::string path) {
        expect(f, kLengthDelimited, name);
        return Reader(length_delimited(), where_, std::move(path));
    }

    // Repeated scalars come packed (one length-delimited run: proto3 writers, and onnx's own
    // helpers for some fields) or unpacked (one key per element: proto2's default, which
    // onnx.proto is); protobuf accepts both for either declaration, and so does this.
    void read_int64s(const Field& f, std::string_view name, std::vector<std::int64_t>& out) {
        if (f.wire != kLengthDelimited) {
            out.push_back(read_int64(f, name));
            return;
        }
        Reader packed(length_delimited(), where_, path_ + "." + std::string(name));
        while (packed.more())
            out.push_back(static_cast<std::int64_t>(packed.varint()));
    }
    void read_floats(const Field& f, std::string_view name, std::vector<float>& out) {
        if (f.wire != kLengthDelimited) {
            out.push_back(read_float(f, name));
            return;
        }
        Reader packed(length_delimited(), where_, path_ + "." + std::string(name));
        if (packed.bytes_.size() % 4 != 0)
            packed.fail("packed floats of " + std::to_string(packed.bytes_.size()) +
                        " bytes, not a multiple of 4");
        while (packed.more())
            out.push_back(std::bit_cast<float>(packed.fixed32()));
    }

  private:
    std::string_view take(std::size_t n, std::string_view what) {
        if (bytes_.size() - pos_ < n) fail("truncated " + std::string(what));
        const std::string_view out = bytes_.substr(pos_, n);
        pos_ += n;
        return out;
    }

    std::string_view bytes_;
    std::size_t pos_ = 0;
    const std::string& where_;
    std::string path_;
};

void append_little_endian(std::string& out, std::uint64_t value, std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i)
        out.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

// TensorProto keeps values outside raw_data in a field chosen by type: float_data for FLOAT,
// int64_data for INT64, int32_data for INT32 and the narrower types (a FLOAT16 as its 16 bits).
// Tensor holds them raw, little-endian.
std::string raw_from_typed(const Reader& r, const std::string& label, std::int64_t data_type,
                           DataType type, const std::vector<float>& floats,
                           const std::vector<std::int64_t>& int32s,
                           const std::vector<std::int64_t>& int64s) {
    const bool uses_floats = type == DataType::Float;
    const bool uses_int64s = type == DataType::Int64;
    const bool uses_int32s = !uses_floats && !uses_int64s;
    if ((!floats.empty() && !uses_floats) || (!int64s.empty() && !uses_int64s) ||
        (!int32s.empty() && !uses_int32s))
        r.fail(label + " of type " + data_type_label(data_type) +
               " has values in a field that type does not use");
    std::string raw;
    raw.reserve((floats.size() + int32s.size() + int64s.size()) * element_size(type));
    for (float v : floats)
        append_little_endian(raw, std::bit_cast<std::uint32_t>(v), 4);
    for (std::int64_t v : int64s)
        append_little_endian(raw, static_cast<std::uint64_t>(v), 8);
    for (std::int64_t v : int32s) {
        if (type == DataType::Int32) {
            // An int32 field keeps the varint's low 32 bits, as protobuf reads it.
            append_little_endian(raw, static_cast<std::uint32_t>(v), 4);
            continue;
        }
        const std::int64_t limit = type == DataType::Uint8 ? 0xff : 0xffff;
        if (v < 0 || v > limit)
            r.fail(label + " of type " + data_type_label(data_type) + " has value " +
                   std::to_string(v) + " in int32_data, out of range");
        append_little_endian(raw, static_cast<std::uint64_t>(v), element_size(type));
    }
    return raw;
}

Tensor read_tensor(Reader r) {
    Tensor t;
    std::int64_t data_type = 0;
    std::int64_t location = 0;
    bool has_raw = false;
    std::vector<float> floats;
    std::vector<std::int64_t> int32s;
    std::vector<std::int64_t> int64s;
    while (r.more()) {
        const Field f = r.field();
        switch (f.number) {
            case 1:
                r.read_int64s(f, "dims", t.dims);
                break;
            case 2:
                data_type = r.read_int64(f, "data_type");
                break;
            case 4:
                r.read_floats(f, "float_data", floats);
                break;
            case 5:
                r.read_int64s(f, "int32_data", int32s);
                break;
            case 7:
                r.read_int64s(f, "int64_data", int64s);
                break;
            case 8:
                t.name = r.read_string(f, "name");
                break;
            case 9:
                t.raw = r.read_string(f, "raw_data");
                has_raw = true;
                break;
            case 14:
                location = r.read_int64(f, "data_location");
                break;
            default:
                r.skip(f);
        }
    }
    // Checked after the whole message: protobuf fields may come in any order.
    const std::string label = t.name.empty() ? "tensor" : "tensor '" + t.name + "'";
    if (location == kDataLocationExternal)
        r.fail(label +
               ": external data is not supported (save the model with its weights "
               "inside the file)");
    const auto type = supported_data_type(data_type);
    if (!type)
        r.fail(label + " has data type " + data_type_label(data_type) + "; " + kSupportedDataTypes);
    t.type = *type;

    for (std::int64_t d : t.dims)
        if (d < 0) r.fail(label + " has negative dimension " + std::to_string(d));
    const bool empty = std::find(t.dims.begin(), t.dims.end(), 0) != t.dims.end();
    std::uint64_t count = empty ? 0 : 1;
    if (!empty) {
        for (std::int64_t d : t.dims) {
            const auto n = static_cast<std::uint64_t>(d);
            if (n > kMaxElements / count)
                r.fail(label + " has more than 2^40 elements (dimensions overflow)");
            count *= n;
        }
    }

    if (has_raw && !(floats.empty() && int32s.empty() && int64s.empty()))
        r.fail(label + " has both raw_data and typed data");
    if (!has_raw) t.raw = raw_from_typed(r, label, data_type, *type, floats, int32s, int64s);
    const std::uint64_t expected = count * element_size(t.type);
    if (t.raw.size() != expected)
        r.fail(label + " has " + std::to_string(t.raw.size()) + " bytes of data where its " +
               std::to_string(count) + " elements of type " + data_type_label(data_type) +
               " take " + std::to_string(expected));
    return t;
}

// The AttributeType of a value field this reader does not hold, or kAttrUndefined.
std::int64_t unsupported_attribute_field(std::uint32_t number) {
    switch (number) {
        case 6:
            return kAttrGraph;
        case 9:
            return kAttrStrings;
        case 10:
            return kAttrTensors;
        case 11:
            return kAttrGraphs;
        case 14:
            return kAttrTypeProto;
        case 15:
            return kAttrTypeProtos;
        case 22:
            return kAttrSparseTensor;
        case 23:
            return kAttrSparseTensors;
        default:
            return kAttrUndefined;
    }
}

Attribute read_attribute(Reader r) {
    Attribute a;
    std::int64_t type = kAttrUndefined;
    std::optional<float> f_value;
    std::optional<std::int64_t> i_value;
    std::optional<std::string> s_value;
    std::optional<Tensor> t_value;
    std::vector<float> floats;
    std::vector<std::int64_t> ints;
    std::vector<std::int64_t> kinds_set;  // AttributeTypes whose value field was seen
    const auto seen = [&kinds_set](std::int64_t kind) {
        if (std::find(kinds_set.begin(), kinds_set.end(), kind) == kinds_set.end())
            kinds_set.push_back(kind);
    };
    while (r.more()) {
        const Field field = r.field();
        switch (field.number) {
            case 1:
                a.name = r.read_string(field, "name");
                break;
            case 2:
                f_value = r.read_float(field, "f");
                seen(kAttrFloat);
                break;
            case 3:
                i_value = r.read_int64(field, "i");
                seen(kAttrInt);
                break;
            case 4:
                s_value = r.read_string(field, "s");
                seen(kAttrString);
                break;
            case 5:
                t_value = read_tensor(r.read_message(field, "t", r.path() + ".t"));
                seen(kAttrTensor);
                break;
            case 7:
                r.read_floats(field, "floats", floats);
                seen(kAttrFloats);
                break;
            case 8:
                r.read_int64s(field, "ints", ints);
                seen(kAttrInts);
                break;
            case 20:
                type = r.read_int64(field, "type");
                break;
            default:
                if (const auto other = unsupported_attribute_field(field.number)) seen(other);
                r.skip(field);
        }
    }
    const std::string label = "attribute '" + a.name + "'";
    if (a.name.empty()) r.fail("attribute without a name");
    // Files of IR version 1 have no `type`: the value field that is set tells it.
    if (type == kAttrUndefined) {
        if (kinds_set.empty()) r.fail(label + " has neither a type nor a value");
        if (kinds_set.size() > 1) r.fail(label + " has no type and values of several kinds");
        type = kinds_set.front();
    }
    switch (type) {
        case kAttrFloat:
            a.value = f_value.value_or(0.0f);
            break;
        case kAttrInt:
            a.value = i_value.value_or(0);
            break;
        case kAttrString:
            a.value = s_value.value_or(std::string());
            break;
        case kAttrTensor:
            if (!t_value) r.fail(label + " of type TENSOR has no tensor");
            a.value = std::move(*t_value);
            break;
        case kAttrFloats:
            a.value = std::move(floats);
            break;
        case kAttrInts:
            a.value = std::move(ints);
            break;
        default:
            r.fail(label + " has type " + attribute_type_label(type) +
                   ", which is not supported (FLOAT, INT, STRING, TENSOR, FLOATS and INTS are)");
    }
    return a;
}

Node read_node(Reader r) {
    Node n;
    std::string domain;
    while (r.more()) {
        const Field f = r.field();
        switch (f.number) {
            case 1:
                n.inputs.push_back(r.read_string(f, "input"));
                break;
            case 2:
                n.outputs.push_back(r.read_string(f, "output"));
                break;
            case 3:
                n.name = r.read_string(f, "name");
                break;
            case 4:
                n.op_type = r.read_string(f, "op_type");
                break;
            case 5:
                n.attributes.push_back(read_attribute(r.read_message(
                    f, "attribute", indexed(r.path(), "attribute", n.attributes.size()))));
                break;
            case 7:
                domain = r.read_string(f, "domain");
                break;
            default:
                r.skip(f);
        }
    }
    const std::string label = n.name.empty() ? "node" : "node '" + n.name + "'";
    if (n.op_type.empty()) r.fail(label + " has no op_type");
    // Node carries no domain: an operator of another domain (com.microsoft, a model-local
    // function) would silently become the ONNX operator of the same name.
    if (!domain.empty() && domain != "ai.onnx")
        r.fail(label + " (" + n.op_type + ") is in domain '" + domain +
               "'; only the default ONNX domain is supported");
    return n;
}

Dim read_dim(Reader r) {
    Dim d{-1, {}};  // neither a value nor a name: a dimension the file leaves unknown
    while (r.more()) {
        const Field f = r.field();
        switch (f.number) {
            case 1:  // dim_value and dim_param are a oneof: the last one set wins
                d.value = r.read_int64(f, "dim_value");
                d.param.clear();
                break;
            case 2:
                d.param = r.read_string(f, "dim_param");
                d.value = 0;
                break;
            default:
                r.skip(f);
        }
    }
    return d;
}

// TypeProto.Tensor: elem_type(1) and shape(2), a TensorShapeProto of dim(1).
void read_tensor_type(Reader r, std::int64_t& elem_type, std::vector<Dim>& shape) {
    elem_type = 0;
    shape.clear();
    while (r.more()) {
        const Field f = r.field();
        if (f.number == 1) {
            elem_type = r.read_int64(f, "elem_type");
        } else if (f.number == 2) {
            Reader s = r.read_message(f, "shape", r.path() + ".shape");
            shape.clear();
            while (s.more()) {
                const Field g = s.field();
                if (g.number == 1)
                    shape.push_back(
                        read_dim(s.read_message(g, "dim", indexed(s.path(), "dim", shape.size()))));
                else
                    s.skip(g);
            }
        } else {
            r.skip(f);
        }
    }
}

ValueInfo read_value_info(Reader r) {
    ValueInfo v;
    std::optional<std::int64_t> elem_type;  // set once a TypeProto.tensor_type was read
    while (r.more()) {
        const Field f = r.field();
        if (f.number == 1) {
            v.name = r.read_string(f, "name");
        } else if (f.number == 2) {
            // TypeProto: only tensor_type(1); sequences, maps and the like are skipped here
            // and refused below.
            Reader type_proto = r.read_message(f, "type", r.path() + ".type");
            while (type_proto.more()) {
                const Field g = type_proto.field();
                if (g.number == 1) {
                    elem_type.emplace();
                    read_tensor_type(type_proto.read_message(g, "tensor_type",
                                                             type_proto.path() + ".tensor_type"),
                                     *elem_type, v.shape);
                } else {
                    type_proto.skip(g);
                }
            }
        } else {
            r.skip(f);
        }
    }
    const std::string label = "value '" + v.name + "'";
    if (!elem_type) r.fail(label + " has no tensor type");
    const auto type = supported_data_type(*elem_type);
    if (!type)
        r.fail(label + " has element type " + data_type_label(*elem_type) + "; " +
               kSupportedDataTypes);
    v.type = *type;
    return v;
}

Graph read_graph(Reader r) {
    Graph g;
    while (r.more()) {
        const Field f = r.field();
        switch (f.number) {
            case 1:
                g.nodes.push_back(read_node(
                    r.read_message(f, "node", indexed(r.path(), "node", g.nodes.size()))));
                break;
            case 2:
                g.name = r.read_string(f, "name");
                break;
            case 5:
                g.initializers.push_back(read_tensor(r.read_message(
                    f, "initializer", indexed(r.path(), "initializer", g.initializers.size()))));
                break;
            case 11:
                g.inputs.push_back(read_value_info(
                    r.read_message(f, "input", indexed(r.path(), "input", g.inputs.size()))));
                break;
            case 12:
                g.outputs.push_back(read_value_info(
                    r.read_message(f, "output", indexed(r.path(), "output", g.outputs.size()))));
                break;
            case 15:  // skipping it would lose a constant the nodes read
                r.fail("sparse initializers are not supported");
            default:  // value_info(13), doc_string(10) and the rest
                r.skip(f);
        }
    }
    // Before IR version 4 every initializer was also a graph input; such an input is a
    // constant, not something a caller feeds.
    std::unordered_set<std::string_view> constants;
    for (const auto& t : g.initializers)
        constants.insert(t.name);
    std::erase_if(g.inputs,
                  [&constants](const ValueInfo& v) { return constants.contains(v.name); });
    return g;
}

}  // namespace

Model parse_onnx_model(std::string_view bytes, const std::string& where) {
    if (bytes.empty()) throw InputError(where, "empty file: not an ONNX model");
    Reader r(bytes, where, "model");
    Model model;
    model.ir_version = 0;  // protobuf's defaults, not those of a model being built
    model.producer_name.clear();
    bool has_graph = false;
    std::optional<std::int64_t> opset;
    std::size_t opsets = 0;
    while (r.more()) {
        const Field f = r.field();
        switch (f.number) {
            case 1:
                model.ir_version = r.read_int64(f, "ir_version");
                break;
            case 2:
                model.producer_name = r.read_string(f, "producer_name");
                break;
            case 3:
                model.producer_version = r.read_string(f, "producer_version");
                break;
            case 6:
                model.doc_string = r.read_string(f, "doc_string");
                break;
            case 7:
                model.graph = read_graph(r.read_message(f, "graph", "graph"));
                has_graph = true;
                break;
            case 8: {
                Reader o = r.read_message(f, "opset_import", indexed("", "opset_import", opsets++));
                std::string domain;
                std::int64_t version = 0;
                while (o.more()) {
                    const Field g = o.field();
                    if (g.number == 1)
                        domain = o.read_string(g, "domain");
                    else if (g.number == 2)
                        version = o.read_int64(g, "version");
                    else
                        o.skip(g);
                }
                if (domain.empty() || domain == "ai.onnx") opset = version;
                break;
            }
            case 14: {
                Reader e = r.read_message(f, "metadata_props",
                                          indexed("", "metadata_props", model.metadata.size()));
                std::pair<std::string, std::string> entry;
                while (e.more()) {
                    const Field g = e.field();
                    if (g.number == 1)
                        entry.first = e.read_string(g, "key");
                    else if (g.number == 2)
                        entry.second = e.read_string(g, "value");
                    else
                        e.skip(g);
                }
                model.metadata.push_back(std::move(entry));
                break;
            }
            default:
                r.skip(f);
        }
    }
    if (!has_graph) r.fail("no graph: not an ONNX model");
    if (!opset) r.fail("no opset_import for the default ONNX domain (\"\" or \"ai.onnx\")");
    model.opset = *opset;
    return model;
}

Model read_onnx_model(const std::filesystem::path& file) {
    const std::string where = path_to_utf8(file);
    return parse_onnx_model(read_file_bytes_limited(file, kMaxModelBytes), where);
}

const std::string* find_metadata(const Model& model, std::string_view key) {
    for (const auto& [k, v] : model.metadata)
        if (k == key) return &v;
    return nullptr;
}

}  // namespace crucible::onnx
