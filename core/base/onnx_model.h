#pragma once
// An ONNX model as plain data, and its protobuf encoding (onnx.proto, proto2): what an exporter
// builds and `serialize_onnx_model` writes. Only the parts an inference graph needs: nodes,
// initializers in raw little-endian bytes, typed inputs and outputs with fixed or named
// dimensions, one opset, and the key/value metadata runtimes show (class names, stride, size).
// No LibTorch and no protobuf library: the wire format needs only varints, fixed 32-bit floats
// and length-prefixed fields.
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace crucible::onnx {

// TensorProto.DataType values.
enum class DataType : std::int32_t { Float = 1, Uint8 = 2, Int32 = 6, Int64 = 7, Float16 = 10 };

std::size_t element_size(DataType type);

// A constant: `raw` holds the elements little-endian, dims' product of them.
struct Tensor {
    std::string name;
    DataType type = DataType::Float;
    std::vector<std::int64_t> dims;
    std::string raw;
};

Tensor int64_tensor(std::string name, const std::vector<std::int64_t>& values,
                    std::vector<std::int64_t> dims = {-1});  // -1: one axis of values.size()
Tensor float_tensor(std::string name, const std::vector<float>& values,
                    std::vector<std::int64_t> dims = {-1});
// The same values as IEEE half floats (round to nearest even).
Tensor half_tensor(std::string name, const std::vector<float>& values,
                   std::vector<std::int64_t> dims = {-1});
std::uint16_t half_from_float(float value);

struct Attribute {
    std::string name;
    std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>, std::vector<float>,
                 Tensor>
        value;
};

struct Node {
    std::string op_type;
    std::vector<std::string> inputs;  // "" for an omitted optional input
    std::vector<std::string> outputs;
    std::string name;
    std::vector<Attribute> attributes;
};

// A dimension: a fixed size, or a name (`param`) for one chosen at run time.
struct Dim {
    std::int64_t value = 0;
    std::string param;
};

struct ValueInfo {
    std::string name;
    DataType type = DataType::Float;
    std::vector<Dim> shape;
};

struct Graph {
    std::string name;
    std::vector<Node> nodes;  // in topological order
    std::vector<Tensor> initializers;
    std::vector<ValueInfo> inputs;
    std::vector<ValueInfo> outputs;
};

struct Model {
    std::int64_t ir_version = 8;  // ONNX 1.10+: what opsets up to 17 ask for
    std::int64_t opset = 17;
    std::string producer_name = "crucible";
    std::string producer_version;
    std::string doc_string;
    Graph graph;
    std::vector<std::pair<std::string, std::string>> metadata;
};

// The model's bytes, as an `.onnx` file holds them.
std::string serialize_onnx_model(const Model& model);

}  // namespace crucible::onnx
