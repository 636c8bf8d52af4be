#pragma once
// The protobuf numbers onnx.proto's encoding uses, for its writer (onnx_model.cpp) and its reader
// (onnx_model_reader.cpp): one home for both sides.
#include <cstdint>

namespace crucible::onnx::wire {

// Protobuf wire types. Groups (3, 4) are deprecated and onnx.proto has none; 6 and 7 do not
// exist.
constexpr std::uint32_t kVarint = 0;
constexpr std::uint32_t kFixed64 = 1;
constexpr std::uint32_t kLengthDelimited = 2;
constexpr std::uint32_t kFixed32 = 5;

// AttributeProto.AttributeType values.
constexpr std::int64_t kAttrUndefined = 0;
constexpr std::int64_t kAttrFloat = 1;
constexpr std::int64_t kAttrInt = 2;
constexpr std::int64_t kAttrString = 3;
constexpr std::int64_t kAttrTensor = 4;
constexpr std::int64_t kAttrGraph = 5;
constexpr std::int64_t kAttrFloats = 6;
constexpr std::int64_t kAttrInts = 7;
constexpr std::int64_t kAttrStrings = 8;
constexpr std::int64_t kAttrTensors = 9;
constexpr std::int64_t kAttrGraphs = 10;
constexpr std::int64_t kAttrSparseTensor = 11;
constexpr std::int64_t kAttrSparseTensors = 12;
constexpr std::int64_t kAttrTypeProto = 13;
constexpr std::int64_t kAttrTypeProtos = 14;

}  // namespace crucible::onnx::wire
