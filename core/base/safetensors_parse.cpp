// Strict validation of a safetensors file: the 8-byte length, the JSON header and the layout
// of the data buffer. Every violation throws InputError naming the file and, where there is
// one, the tensor.
#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/safetensors.h"
#include "core/base/shape_text.h"

namespace crucible {
namespace {

constexpr std::size_t kMaxNameInMessage = 120;

// A name as it appears in a message: quoted, control bytes escaped, long names cut.
std::string name_text(std::string_view name) {
    std::string out = "'";
    for (std::size_t i = 0; i < name.size() && i < kMaxNameInMessage; ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        if (c < 0x20 || c == 0x7f) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    if (name.size() > kMaxNameInMessage) out += "...";
    return out + "'";
}

std::uint64_t read_le64(const std::byte* p) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
    return v;
}

// Thrown from the parser callback to stop parsing at the first structural problem.
struct HeaderProblem {
    std::string what;
};

// Parses the JSON header, rejecting duplicate keys at any level (nlohmann keeps the last one
// silently) and nesting deeper than a valid header has (root > tensor > shape array), which
// also bounds the work a hostile header can cause. `order` receives the top-level keys in
// header order.
Json parse_header_json(std::string_view text, const std::string& where,
                       std::vector<std::string>& order) {
    std::vector<std::set<std::string, std::less<>>> open_objects;
    std::vector<std::string> object_owner;  // key whose value is each open object
    std::string last_key;
    auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) -> bool {
        switch (event) {
            case Json::parse_event_t::object_start:
            case Json::parse_event_t::array_start:
                if (depth >= 3)
                    throw HeaderProblem{"nested deeper than a safetensors header can be (inside " +
                                        name_text(order.empty() ? "" : order.back()) + ")"};
                if (event == Json::parse_event_t::object_start) {
                    open_objects.emplace_back();
                    object_owner.push_back(depth == 0 ? "" : last_key);
                }
                break;
            case Json::parse_event_t::object_end:
                if (!open_objects.empty()) {
                    open_objects.pop_back();
                    object_owner.pop_back();
                }
                break;
            case Json::parse_event_t::key: {
                last_key = parsed.get<std::string>();
                if (!open_objects.empty() && !open_objects.back().insert(last_key).second) {
                    if (open_objects.size() == 1)
                        throw HeaderProblem{"duplicate tensor name " + name_text(last_key)};
                    throw HeaderProblem{"duplicate key " + name_text(last_key) + " inside " +
                                        name_text(object_owner.back())};
                }
                if (depth == 1) order.push_back(last_key);
                break;
            }
            default:
                break;
        }
        return true;
    };
    try {
        return Json::parse(text.begin(), text.end(), callback);
    } catch (const HeaderProblem& p) {
        throw InputError(where, "safetensors header: " + p.what);
    } catch (const Json::exception& e) {
        std::string what = e.what();
        if (what.size() > 300) what = what.substr(0, 300) + "...";
        throw InputError(where, "safetensors header is not valid JSON: " + what);
    }
}

// A non-negative JSON integer, or nullopt (negative, fractional, not a number).
std::optional<std::uint64_t> as_count(const Json& v) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0)
        return static_cast<std::uint64_t>(v.get<std::int64_t>());
    return std::nullopt;
}

SafetensorsTensorInfo parse_tensor(const std::string& name, const Json& info,
                                   const std::string& where) {
    const std::string tensor = "tensor " + name_text(name) + ": ";
    auto fail = [&](const std::string& what) -> InputError { return {where, tensor + what}; };
    if (!info.is_object())
        throw fail(std::string("expected an object with dtype, shape and data_offsets, got ") +
                   info.type_name());
    SafetensorsTensorInfo out;
    out.name = name;

    const auto dtype_it = info.find("dtype");
    if (dtype_it == info.end()) throw fail("missing 'dtype'");
    if (!dtype_it->is_string())
        throw fail(std::string("'dtype' must be a string, got ") + dtype_it->type_name());
    const auto dtype = parse_safetensors_dtype(dtype_it->get_ref<const std::string&>());
    if (!dtype) throw fail("unknown dtype " + name_text(dtype_it->get_ref<const std::string&>()));
    out.dtype = *dtype;

    const auto shape_it = info.find("shape");
    if (shape_it == info.end()) throw fail("missing 'shape'");
    if (!shape_it->is_array())
        throw fail(std::string("'shape' must be an array, got ") + shape_it->type_name());
    std::uint64_t numel = 1;
    for (std::size_t i = 0; i < shape_it->size(); ++i) {
        const Json& d = (*shape_it)[i];
        const std::string dim = "shape dimension " + std::to_string(i) + " ";
        if (d.is_number_integer() && !d.is_number_unsigned() && d.get<std::int64_t>() < 0)
            throw fail(dim + "is negative (" + std::to_string(d.get<std::int64_t>()) + ")");
        const auto count = as_count(d);
        if (!count) throw fail(dim + "is not a non-negative integer: " + d.dump());
        if (*count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            throw fail(dim + "is too large (" + std::to_string(*count) + ")");
        if (*count != 0 && numel > std::numeric_limits<std::uint64_t>::max() / *count)
            throw fail("shape " + shape_it->dump() + " overflows: too many elements");
        numel *= *count;
        out.shape.push_back(static_cast<std::int64_t>(*count));
    }

    const auto offsets_it = info.find("data_offsets");
    if (offsets_it == info.end()) throw fail("missing 'data_offsets'");
    if (!offsets_it->is_array() || offsets_it->size() != 2)
        throw fail("'data_offsets' must be two integers [begin, end], got " +
                   offsets_it->dump().substr(0, 80));
    const auto begin = as_count((*offsets_it)[0]);
    const auto end = as_count((*offsets_it)[1]);
    if (!begin || !end)
        throw fail("'data_offsets' must be two non-negative integers, got " +
                   offsets_it->dump().substr(0, 80));
    if (*end < *begin)
        throw fail("'data_offsets' [" + std::to_string(*begin) + ", " + std::to_string(*end) +
                   "] end before they begin");
    out.begin = *begin;
    out.end = *end;

    const auto bytes = safetensors_byte_size(out.dtype, numel);
    const std::string described =
        std::string(safetensors_dtype_name(out.dtype)) + " " + shape_text(out.shape);
    if (!bytes) {
        if (safetensors_dtype_bits(out.dtype) % 8 != 0 &&
            numel <= std::numeric_limits<std::uint64_t>::max() / 8)
            throw fail(described + " does not fill whole bytes (" + std::to_string(numel) +
                       " elements of " + std::to_string(safetensors_dtype_bits(out.dtype)) +
                       " bits)");
        throw fail("shape " + shape_text(out.shape) + " overflows: too many bytes");
    }
    if (out.end - out.begin != *bytes)
        throw fail("data_offsets [" + std::to_string(out.begin) + ", " + std::to_string(out.end) +
                   "] hold " + std::to_string(out.end - out.begin) + " bytes but " + described +
                   " needs " + std::to_string(*bytes));
    return out;
}

std::map<std::string, std::string> parse_metadata(const Json& meta, const std::string& where) {
    if (!meta.is_object())
        throw InputError(
            where, std::string("'__metadata__' must be a map of strings, got ") + meta.type_name());
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : meta.items()) {
        if (!value.is_string())
            throw InputError(where, "'__metadata__' value of " + name_text(key) +
                                        " must be a string, got " + value.type_name());
        out.emplace(key, value.get<std::string>());
    }
    return out;
}

// Sorted by offset the tensors must tile the data buffer from 0 with no gap or overlap.
void check_layout(std::vector<SafetensorsTensorInfo>& tensors,
                  const std::vector<std::string>& order, std::uint64_t data_bytes,
                  const std::string& where) {
    std::map<std::string, std::size_t, std::less<>> rank;
    for (std::size_t i = 0; i < order.size(); ++i)
        rank.emplace(order[i], i);
    std::sort(tensors.begin(), tensors.end(), [&](const auto& a, const auto& b) {
        if (a.begin != b.begin) return a.begin < b.begin;
        if (a.end != b.end) return a.end < b.end;
        return rank.at(a.name) < rank.at(b.name);
    });
    std::uint64_t cursor = 0;
    const SafetensorsTensorInfo* previous = nullptr;
    for (const auto& t : tensors) {
        const std::string after = previous ? "the previous tensor " + name_text(previous->name) +
                                                 " ends at " + std::to_string(cursor)
                                           : "the data buffer starts at 0";
        if (t.begin > cursor)
            throw InputError(where, "tensor " + name_text(t.name) + " starts at data byte " +
                                        std::to_string(t.begin) + " but " + after +
                                        ": gap in the data buffer");
        if (t.begin < cursor)
            throw InputError(where, "tensor " + name_text(t.name) + " starts at data byte " +
                                        std::to_string(t.begin) + " but " + after +
                                        ": overlapping data_offsets");
        if (t.end > data_bytes)
            throw InputError(where, "tensor " + name_text(t.name) + " ends at data byte " +
                                        std::to_string(t.end) + " but the data buffer has only " +
                                        std::to_string(data_bytes) +
                                        " bytes: the file is truncated");
        cursor = t.end;
        previous = &t;
    }
    if (cursor != data_bytes)
        throw InputError(where, "the tensors cover " + std::to_string(cursor) +
                                    " bytes of a data buffer of " + std::to_string(data_bytes) +
                                    ": trailing bytes not covered by any tensor");
}

}  // namespace

SafetensorsHeader parse_safetensors(std::span<const std::byte> file, const std::string& where) {
    const std::uint64_t size = file.size();
    if (size < 8)
        throw InputError(where, "file is " + std::to_string(size) +
                                    " bytes, too short for a safetensors header length");
    SafetensorsHeader out;
    out.header_bytes = read_le64(file.data());
    if (out.header_bytes > kSafetensorsMaxHeaderBytes)
        throw InputError(where, "safetensors header length " + std::to_string(out.header_bytes) +
                                    " is over the limit of " +
                                    std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
    if (out.header_bytes > size - 8)
        throw InputError(where, "safetensors header length " + std::to_string(out.header_bytes) +
                                    " runs past the end of the file (" + std::to_string(size) +
                                    " bytes): the file is truncated");
    out.data_bytes = size - 8 - out.header_bytes;
    const std::string_view text(reinterpret_cast<const char*>(file.data() + 8),
                                static_cast<std::size_t>(out.header_bytes));
    if (text.empty() || text.front() != '{')
        throw InputError(where, "safetensors header does not start with '{'");
    if (!is_valid_utf8(text)) throw InputError(where, "safetensors header is not valid UTF-8");

    std::vector<std::string> order;
    const Json header = parse_header_json(text, where, order);
    if (!header.is_object())
        throw InputError(where, std::string("safetensors header must be a JSON object, got ") +
                                    header.type_name());
    for (const auto& [name, info] : header.items()) {
        if (name == "__metadata__")
            out.metadata = parse_metadata(info, where);
        else
            out.tensors.push_back(parse_tensor(name, info, where));
    }
    check_layout(out.tensors, order, out.data_bytes, where);
    return out;
}

}  // namespace crucible
