#pragma once
// JSON helpers over nlohmann-json: parsing that names the file and position on failure, and
// typed field access that names the field ("spec.json: field 'epochs': expected integer").
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <string_view>

namespace crucible {

using Json = nlohmann::json;

// Arrays and objects nested deeper than this are refused before parsing: a value that deep is
// never data of ours, and code that walks values recursively (dump(), messages that quote a
// value) would run out of stack on it. 100,000 levels fit in a 200 KB request.
inline constexpr int kMaxJsonDepth = 256;

// Parses text; on failure throws InputError naming `where` and the byte position. Nesting deeper
// than kMaxJsonDepth is refused the same way.
Json parse_json(std::string_view text, const std::string& where);
// Byte offset where `text` first nests deeper than `max_depth` ([ and { outside strings), or
// npos when it never does.
std::size_t json_nesting_exceeds(std::string_view text, int max_depth);
// Reads and parses a file; the error names the file.
Json read_json_file(const std::filesystem::path& path);
// Writes pretty JSON atomically (temp file + rename).
void write_json_file(const std::filesystem::path& path, const Json& value);

// Required field of an object with a given type; throws InputError "<where>: field '<name>' ...".
const Json& require_field(const Json& object, const std::string& name, const std::string& where);
std::string get_string(const Json& object, const std::string& name, const std::string& where);
double get_number(const Json& object, const std::string& name, const std::string& where);
long long get_integer(const Json& object, const std::string& name, const std::string& where);

// Name of a JSON value's type for messages ("string", "number", ...).
const char* json_type_name(const Json& value);

}  // namespace crucible
