#include "core/jobs/dataset_manifest.h"

#include <algorithm>
#include <map>

#include "core/base/case_fold.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/base/stored_dataset.h"
#include "core/jobs/blob_store.h"
#include "core/jobs/path_policy.h"

namespace crucible::jobs {
namespace {

// Why `text` is not a safe path inside a dataset ("" when it is).
std::string entry_path_problem(const std::string& text) {
    if (text.empty()) return "is empty";
    if (text.size() > 4096) return "is longer than 4096 bytes";
    if (!is_valid_utf8(text)) return "is not UTF-8";
    if (text.find_first_of(std::string("\\:\0", 3)) != std::string::npos)
        return "holds a backslash, a colon or a NUL";
    // What else Windows cannot hold in a name: a dataset pushed from Linux must unpack on a
    // Windows server unchanged.
    if (text.find_first_of("<>\"|?*") != std::string::npos ||
        std::any_of(text.begin(), text.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
        return "holds a character Windows forbids in names (< > \" | ? * or a control character)";
    if (text.front() == '/') return "is absolute";
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find('/', start), text.size());
        const std::string part = text.substr(start, end - start);
        if (part.empty() || part == "." || part == "..") return "has an empty, '.' or '..' part";
        if (part.size() > 255) return "has a part longer than 255 bytes";
        if (part.back() == '.' || part.back() == ' ')
            return "has a part ending in a dot or a space (Windows drops them: '" + part +
                   "' would be another name's file)";
        if (is_reserved_device_name(part)) return "names a reserved device (" + part + ")";
        start = end + 1;
    }
    if (is_stored_dataset_bookkeeping(text)) return "is the name of the dataset's own bookkeeping";
    return {};
}

}  // namespace

DatasetManifest DatasetManifest::from_json(const Json& body) {
    if (!body.is_object()) throw InputError("body", "expected a JSON object {name, files}");
    DatasetManifest out;
    if (body.contains("name")) out.name = get_string(body, "name", "body");
    const Json& files = require_field(body, "files", "body");
    if (!files.is_array() || files.empty())
        throw InputError("files", "expected a non-empty list of {path, sha256}");
    // Each name so far under its case-insensitive key. Windows (and macOS) file systems ignore
    // case: IMG.jpg and img.jpg, or É.jpg and é.jpg, are one file there, and the dataset would
    // silently lose one of the two images.
    std::map<std::string, std::string> seen;
    for (std::size_t i = 0; i < files.size(); ++i) {
        const std::string where = "files[" + std::to_string(i) + "]";
        if (!files[i].is_object()) throw InputError(where, "expected {path, sha256}");
        std::string path = get_string(files[i], "path", where);
        std::string sha = get_string(files[i], "sha256", where);
        if (!BlobStore::is_valid_hash(sha))
            throw InputError(where, "sha256 must be 64 lower-case hex digits");
        if (const std::string problem = entry_path_problem(path); !problem.empty())
            throw InputError(where, "path '" + printable(path) + "' " + problem);
        if (const auto [other, added] = seen.emplace(case_insensitive_key(path), path); !added) {
            if (other->second == path)
                throw InputError(where, "path '" + path + "' is listed twice");
            throw InputError(where, "path '" + path + "' differs from '" + other->second +
                                        "' only in case; Windows would store them as one file");
        }
        out.files.emplace_back(path_from_utf8(path), sha);
        out.canonical.push_back({path, sha});
    }
    std::sort(out.canonical.begin(), out.canonical.end());
    return out;
}

std::string DatasetManifest::id() const {
    return sha256_hex(canonical.dump());
}

}  // namespace crucible::jobs
