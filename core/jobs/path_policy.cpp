#include "core/jobs/path_policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/utf8.h"

namespace crucible::jobs {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kMaxPathBytes = 4096;
constexpr std::uintmax_t kMaxDataYamlBytes = 1u << 20;

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// Both canonical: `path` is `base` or lies below it.
bool inside_or_equal(const fs::path& base, const fs::path& path) {
    const fs::path rel = path.lexically_relative(base);
    if (rel.empty()) return false;
    if (rel == ".") return true;
    return *rel.begin() != ".." && !rel.is_absolute() && !rel.has_root_name();
}

fs::path resolved(const fs::path& path) {
    std::error_code ec;
    fs::path out = fs::weakly_canonical(path, ec);
    return ec ? path.lexically_normal() : out;
}

// The strings a data.yaml field holds: one scalar or a list of them.
std::vector<std::string> yaml_strings(const YAML::Node& node) {
    std::vector<std::string> out;
    if (node.IsScalar()) out.push_back(node.Scalar());
    if (node.IsSequence())
        for (const auto& item : node)
            if (item.IsScalar()) out.push_back(item.Scalar());
    return out;
}

}  // namespace

std::string printable(std::string_view text) {
    std::string out;
    for (char c : utf8_lossy(text.substr(0, 200))) {
        if (static_cast<unsigned char>(c) < 0x20) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[(c >> 4) & 0xf];
            out += hex[c & 0xf];
        } else {
            out += c;
        }
    }
    return out;
}

bool is_reserved_device_name(std::string_view file_name) {
    const std::string stem = lower(file_name.substr(0, file_name.find('.')));
    // Windows also ignores trailing spaces: "nul " is the device too.
    const std::string trimmed = stem.substr(0, stem.find_last_not_of(' ') + 1);
    if (trimmed == "con" || trimmed == "prn" || trimmed == "aux" || trimmed == "nul") return true;
    return trimmed.size() == 4 && (trimmed.rfind("com", 0) == 0 || trimmed.rfind("lpt", 0) == 0) &&
           trimmed[3] >= '1' && trimmed[3] <= '9';
}

PathPolicy::PathPolicy(std::vector<fs::path> roots, fs::path data_dir)
    : roots_(std::move(roots)), data_dir_(resolved(fs::absolute(data_dir))) {
    for (const auto& root : roots_)
        canonical_roots_.push_back(resolved(root));
}

bool PathPolicy::allowed(const fs::path& path) const {
    if (inside_or_equal(data_dir_, path) || inside_or_equal(path, data_dir_)) return false;
    return std::any_of(canonical_roots_.begin(), canonical_roots_.end(),
                       [&](const fs::path& root) { return inside_or_equal(root, path); });
}

bool PathPolicy::may_browse(const fs::path& folder) const {
    return folder.is_absolute() && allowed(resolved(folder));
}

std::string PathPolicy::resolve(const std::string& option, const std::string& value) const {
    if (value.empty()) return value;
    const auto refuse = [&](const std::string& why) {
        throw InputError(option, "'" + printable(value) + "' " + why);
    };
    if (value.size() > kMaxPathBytes) refuse("is longer than 4096 bytes");
    if (!is_valid_utf8(value) || value.find('\0') != std::string::npos)
        refuse("is not a UTF-8 path");
    if (value.rfind("\\\\", 0) == 0 || value.rfind("//", 0) == 0)
        refuse("is a network (UNC) or device path; name a folder this agent shares instead");
    const bool drive_form =
        value.size() >= 2 && std::isalpha(static_cast<unsigned char>(value[0])) && value[1] == ':';
#ifndef _WIN32
    if (drive_form || value.find('\\') != std::string::npos)
        refuse("is a Windows path; this agent runs on " + std::string("a POSIX system"));
#endif
    if (value.find_first_of("/\\") == std::string::npos && !drive_form) {
        // A bare name: a model the task knows (yolov8n), never a way out of the job folder.
        if (value == "." || value == "..") refuse("is not a file name");
        if (is_reserved_device_name(value)) refuse("is a reserved device name");
        return value;
    }
    const fs::path path = path_from_utf8(value);
    if (!path.is_absolute())
        refuse(
            "is a relative path; name a file inside a folder this agent shares by its absolute "
            "path, or send it with the job (dataset: or blob:)");
    for (const auto& part : path.relative_path())
        if (is_reserved_device_name(path_to_utf8(part))) refuse("names a reserved device");
    const fs::path real = resolved(path);
    if (inside_or_equal(data_dir_, real) || inside_or_equal(real, data_dir_))
        refuse("is inside the agent's own data folder, which jobs may not read");
    if (!allowed(real))
        refuse(
            "is outside the folders this agent shares" +
            std::string(real != path.lexically_normal() ? " (once its links are followed)" : "") +
            "; add its folder to 'roots' in agent.json");
    std::error_code ec;
    const std::string ext = lower(path_to_utf8(real.extension()));
    if ((ext == ".yaml" || ext == ".yml") && fs::is_regular_file(real, ec))
        check_data_yaml(option, real);
    return path_to_utf8(real);
}

void PathPolicy::check_data_yaml(const std::string& option, const fs::path& yaml,
                                 const fs::path& confine_to) const {
    const std::string where = option + " (" + path_to_utf8(yaml.filename()) + ")";
    std::error_code ec;
    if (fs::file_size(yaml, ec) > kMaxDataYamlBytes)
        throw InputError(where, "data.yaml is over 1 MB; is it the right file?");
    YAML::Node doc;
    try {
        doc = YAML::LoadFile(path_to_utf8(yaml));
    } catch (const std::exception& e) {
        throw InputError(where, std::string("is not valid YAML: ") + e.what());
    }
    if (!doc.IsMap()) return;  // not a data.yaml: the task reports what it expected
    const fs::path confine = confine_to.empty() ? fs::path() : resolved(confine_to);
    const auto check = [&](const std::string& field, const fs::path& base,
                           const std::string& text) {
        fs::path given = path_from_utf8(text);
        const fs::path real = resolved(given.is_absolute() ? given : base / given);
        const bool ok = confine.empty() ? allowed(real) : inside_or_equal(confine, real);
        if (!ok)
            throw InputError(where,
                             "field '" + field + "' ('" + printable(text) + "') " +
                                 (confine.empty() ? "is outside the folders this agent shares"
                                                  : "points outside the pushed dataset") +
                                 "; datasets may only name folders inside them");
        return real;
    };
    fs::path root = yaml.parent_path();
    if (const auto p = doc["path"]; p && p.IsScalar() && !p.Scalar().empty())
        root = check("path", yaml.parent_path(), p.Scalar());
    for (const char* split : {"train", "val", "test"})
        if (const auto node = doc[split])
            for (const auto& text : yaml_strings(node))
                if (!text.empty()) check(split, root, text);
}

}  // namespace crucible::jobs
