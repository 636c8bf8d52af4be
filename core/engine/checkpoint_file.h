#pragma once
// The checkpoint container: "CRUCKPT1", an 8-byte little-endian header length, a JSON header
// ({"meta": {...}, "blobs": {"name": [offset, size], ...}}), the blobs, then the 64 hex digits of
// the SHA-256 of everything before them. A truncated or altered file fails the checksum and is
// refused with an InputError naming it, so resume can fall back to the previous checkpoint.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "core/base/json.h"

namespace crucible::engine {

struct CheckpointData {
    Json meta = Json::object();
    std::map<std::string, std::string> blobs;  // name -> bytes
};

std::string encode_checkpoint(const CheckpointData& data);
// Verifies magic, sizes and checksum; throws InputError(where, ...) on any mismatch.
CheckpointData decode_checkpoint(std::string_view bytes, const std::string& where);
// Reads the file (bounded by its size) and decodes it.
CheckpointData read_checkpoint_file(const std::filesystem::path& path);

}  // namespace crucible::engine
