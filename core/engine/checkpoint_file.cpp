#include "core/engine/checkpoint_file.h"

#include <cstdint>
#include <cstring>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"

namespace crucible::engine {

namespace {

constexpr std::string_view kMagic = "CRUCKPT1";
constexpr std::size_t kDigest = 64;

void put_u64(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_u64(std::string_view in) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
    return v;
}

}  // namespace

std::string encode_checkpoint(const CheckpointData& data) {
    Json table = Json::object();
    std::uint64_t offset = 0;
    for (const auto& [name, bytes] : data.blobs) {
        table[name] = {offset, bytes.size()};
        offset += bytes.size();
    }
    const std::string header = Json{{"meta", data.meta}, {"blobs", table}}.dump();
    std::string out;
    out.reserve(kMagic.size() + 8 + header.size() + offset + kDigest);
    out.append(kMagic);
    put_u64(out, header.size());
    out.append(header);
    for (const auto& [name, bytes] : data.blobs)
        out.append(bytes);
    out.append(sha256_hex(out));
    return out;
}

CheckpointData decode_checkpoint(std::string_view bytes, const std::string& where) {
    const std::size_t min = kMagic.size() + 8 + kDigest;
    if (bytes.size() < min)
        throw InputError(where,
                         "checkpoint is truncated (" + std::to_string(bytes.size()) + " bytes)");
    if (bytes.substr(0, kMagic.size()) != kMagic)
        throw InputError(where, "not a Crucible checkpoint (bad magic)");
    const std::string_view body = bytes.substr(0, bytes.size() - kDigest);
    const std::string_view digest = bytes.substr(bytes.size() - kDigest);
    if (!constant_time_equal(sha256_hex(body), digest))
        throw InputError(where, "checkpoint checksum mismatch (truncated or corrupted file)");
    const std::uint64_t header_size = get_u64(bytes.substr(kMagic.size(), 8));
    const std::size_t start = kMagic.size() + 8;
    if (header_size > body.size() - start)
        throw InputError(where, "checkpoint header size out of range");
    const Json header = parse_json(body.substr(start, header_size), where);
    const std::string_view blobs = body.substr(start + header_size);
    CheckpointData data;
    if (!header.is_object() || !header.contains("meta") || !header.contains("blobs") ||
        !header["blobs"].is_object())
        throw InputError(where, "checkpoint header lacks meta or blobs");
    data.meta = header["meta"];
    for (const auto& [name, range] : header["blobs"].items()) {
        if (!range.is_array() || range.size() != 2 || !range[0].is_number_unsigned() ||
            !range[1].is_number_unsigned())
            throw InputError(where, "checkpoint blob '" + name + "' has a bad range");
        const std::uint64_t off = range[0].get<std::uint64_t>(),
                            size = range[1].get<std::uint64_t>();
        if (off > blobs.size() || size > blobs.size() - off)
            throw InputError(where, "checkpoint blob '" + name + "' lies outside the file");
        data.blobs[name] = std::string(blobs.substr(off, size));
    }
    return data;
}

CheckpointData read_checkpoint_file(const std::filesystem::path& path) {
    const std::string bytes = read_file_bytes(path);
    return decode_checkpoint(bytes, path_to_utf8(path));
}

}  // namespace crucible::engine
