#pragma once
// Reads an `.onnx` file back into the plain data of onnx_model.h: the inverse of
// `serialize_onnx_model`, for the models it writes and for those other exporters write within
// the same subset (one default-domain opset, tensors of the five DataTypes, attributes of the
// six kinds `Attribute` holds). Like the writer it decodes the protobuf wire format by hand,
// without a protobuf library. A file is hostile input: anything outside the subset, and every
// malformed byte, is a crucible::InputError naming the file and the message at fault
// ("graph.node[3]: truncated varint"); it never crashes, reads out of bounds or allocates more
// than a small multiple of the input's size. It does not check the graph itself (that inputs exist,
// that operators are known): that is a runtime's job.
#include <filesystem>
#include <string>
#include <string_view>

#include "core/base/onnx_model.h"

namespace crucible::onnx {

// The model in `bytes`; `where` (a file name) leads every error message. Unknown fields are
// skipped, as protobuf does. Graph inputs that are also initializers (older exporters list
// them) are left out of graph.inputs. A dimension the file leaves unknown (neither a value nor
// a name) is read as value -1.
Model parse_onnx_model(std::string_view bytes, const std::string& where);

// The model in `file` (at most 2 GiB, protobuf's own limit; larger models keep their weights
// as external data, which is not supported); errors name the file.
Model read_onnx_model(const std::filesystem::path& file);

// The value of metadata entry `key`, or nullptr when the model has none.
const std::string* find_metadata(const Model& model, std::string_view key);

}  // namespace crucible::onnx
