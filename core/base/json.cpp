#include "core/base/json.h"

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible {

std::size_t json_nesting_exceeds(std::string_view text, int max_depth) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) return i;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return std::string_view::npos;
}

Json parse_json(std::string_view text, const std::string& where) {
    if (const auto at = json_nesting_exceeds(text, kMaxJsonDepth); at != std::string_view::npos)
        throw InputError(where, "invalid JSON: nested deeper than " +
                                    std::to_string(kMaxJsonDepth) + " levels at byte " +
                                    std::to_string(at));
    try {
        return Json::parse(text.begin(), text.end());
    } catch (const Json::exception& e) {
        // parse_error, and out_of_range for a number too large for a double (1e999999): a
        // fuzzer found the latter escaping as a non-InputError (the agent answered 500).
        throw InputError(where, std::string("invalid JSON: ") + e.what());
    }
}

Json read_json_file(const std::filesystem::path& path) {
    return parse_json(read_file_bytes(path), path_to_utf8(path));
}

void write_json_file(const std::filesystem::path& path, const Json& value) {
    write_file_atomically(path, value.dump(2) + "\n");
}

const char* json_type_name(const Json& value) {
    return value.type_name();
}

const Json& require_field(const Json& object, const std::string& name, const std::string& where) {
    if (!object.is_object()) throw InputError(where, "expected a JSON object");
    auto it = object.find(name);
    if (it == object.end()) throw InputError(where, "missing field '" + name + "'");
    return *it;
}

std::string get_string(const Json& object, const std::string& name, const std::string& where) {
    const Json& v = require_field(object, name, where);
    if (!v.is_string())
        throw InputError(where, "field '" + name + "': expected string, got " + v.type_name());
    return v.get<std::string>();
}

double get_number(const Json& object, const std::string& name, const std::string& where) {
    const Json& v = require_field(object, name, where);
    if (!v.is_number())
        throw InputError(where, "field '" + name + "': expected number, got " + v.type_name());
    return v.get<double>();
}

long long get_integer(const Json& object, const std::string& name, const std::string& where) {
    const Json& v = require_field(object, name, where);
    if (!v.is_number_integer())
        throw InputError(where, "field '" + name + "': expected integer, got " + v.type_name());
    return v.get<long long>();
}

}  // namespace crucible
