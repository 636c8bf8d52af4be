// The safetensors writer: compact JSON header padded with spaces to a multiple of 8, then the
// tensors' bytes in the order given.
#include <limits>
#include <set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/safetensors.h"

namespace crucible {
namespace {

void append_le64(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Checks one tensor and returns its byte size.
std::uint64_t checked_size(const SafetensorsTensorView& t, std::set<std::string_view>& seen) {
    if (t.name == "__metadata__")
        throw InputError(t.name, "a tensor cannot be named '__metadata__' (reserved)");
    if (!is_valid_utf8(t.name)) throw InputError("", "tensor name is not valid UTF-8");
    if (!seen.insert(t.name).second) throw InputError(t.name, "duplicate tensor name");
    std::uint64_t numel = 1;
    for (auto d : t.shape) {
        if (d < 0)
            throw InputError(t.name, "negative dimension " + std::to_string(d) + " in shape");
        const auto ud = static_cast<std::uint64_t>(d);
        if (ud != 0 && numel > std::numeric_limits<std::uint64_t>::max() / ud)
            throw InputError(t.name, "shape overflows: too many elements");
        numel *= ud;
    }
    const auto bytes = safetensors_byte_size(t.dtype, numel);
    if (!bytes)
        throw InputError(t.name, std::to_string(numel) + " elements of " +
                                     std::string(safetensors_dtype_name(t.dtype)) +
                                     " do not fill whole bytes (or overflow)");
    if (*bytes != t.data.size())
        throw InputError(t.name, "data has " + std::to_string(t.data.size()) + " bytes but " +
                                     std::string(safetensors_dtype_name(t.dtype)) + " of " +
                                     std::to_string(numel) + " elements needs " +
                                     std::to_string(*bytes));
    return *bytes;
}

}  // namespace

std::string write_safetensors_bytes(const std::vector<SafetensorsTensorView>& tensors,
                                    const std::map<std::string, std::string>& metadata) {
    // nlohmann::ordered_json keeps insertion order: __metadata__ first, then tensors in data
    // order, each as dtype, shape, data_offsets (the order other writers use).
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) {
        auto& meta = header["__metadata__"] = nlohmann::ordered_json::object();
        for (const auto& [key, value] : metadata) {
            if (!is_valid_utf8(key) || !is_valid_utf8(value))
                throw InputError("__metadata__", "keys and values must be valid UTF-8");
            meta[key] = value;
        }
    }
    std::set<std::string_view> seen;
    std::uint64_t offset = 0;
    for (const auto& t : tensors) {
        const std::uint64_t bytes = checked_size(t, seen);
        nlohmann::ordered_json info = nlohmann::ordered_json::object();
        info["dtype"] = std::string(safetensors_dtype_name(t.dtype));
        info["shape"] = t.shape;
        info["data_offsets"] = {offset, offset + bytes};
        // emplace_back-style insertion: names are unique (checked above), so this is a plain
        // append and stays linear even for many tensors.
        header.get_ref<nlohmann::ordered_json::object_t&>().emplace_back(t.name, std::move(info));
        offset += bytes;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');

    std::string out;
    out.reserve(8 + text.size() + static_cast<std::size_t>(offset));
    append_le64(out, text.size());
    out += text;
    for (const auto& t : tensors)
        out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
    return out;
}

void write_safetensors_file(const std::filesystem::path& path,
                            const std::vector<SafetensorsTensorView>& tensors,
                            const std::map<std::string, std::string>& metadata) {
    write_file_atomically(path, write_safetensors_bytes(tensors, metadata));
}

}  // namespace crucible
