// Ultralytics data.yaml: `path` (root, relative to the yaml's folder), train/val/test (a folder,
// a .txt list of images, or a list of those), names (list or map index->name), optional nc.
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/formats/data_yaml.h"
#include "core/data/formats/path_text.h"

namespace crucible::data {
namespace fs = std::filesystem;

namespace {

std::string where_at(const std::string& file, const YAML::Mark& mark) {
    if (mark.line < 0) return file;
    return file + ":" + std::to_string(mark.line + 1);
}

std::string scalar_text(const YAML::Node& node, const std::string& where,
                        const std::string& field) {
    if (!node.IsScalar())
        throw InputError(where_at(where, node.Mark()),
                         "field '" + field + "' must be a text value");
    const std::string& text = node.Scalar();
    if (!is_valid_utf8(text))
        throw InputError(where_at(where, node.Mark()), "field '" + field + "' is not valid UTF-8");
    return text;
}

bool inside_or_equal(const fs::path& root, const fs::path& candidate) {
    return detail::lexically_inside(root, candidate);
}

}  // namespace

DataYaml parse_data_yaml(std::string_view text, const fs::path& yaml_path,
                         bool allow_outside_root) {
    const std::string where = detail::safe_utf8(path_to_utf8(yaml_path));
    YAML::Node doc;
    try {
        doc = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
        throw InputError(where_at(where, e.mark), "not valid YAML: " + e.msg);
    }
    if (doc.IsNull()) throw InputError(where, "data.yaml is empty");
    if (!doc.IsMap())
        throw InputError(where, "data.yaml must be a YAML map (path, train, val, names), not a " +
                                    std::string(doc.IsSequence() ? "list" : "single value"));
    DataYaml out;
    const fs::path yaml_dir = detail::normalized_absolute(yaml_path).parent_path();
    out.root = yaml_dir;
    try {
        if (const auto p = doc["path"]; p && !p.IsNull()) {
            const fs::path given = path_from_utf8(scalar_text(p, where, "path"));
            out.root = detail::normalized_absolute(given.is_absolute() ? given : yaml_dir / given);
            if (!given.is_absolute() && !allow_outside_root && !inside_or_equal(yaml_dir, out.root))
                throw InputError(where_at(where, p.Mark()),
                                 "field 'path' ('" + p.Scalar() +
                                     "') points outside the folder of data.yaml (path traversal "
                                     "refused; use an absolute path or allow it explicitly)");
        }
        for (const std::string split : {"train", "val", "test"}) {
            const auto node = doc[split];
            if (!node || node.IsNull()) continue;
            std::vector<YAML::Node> entries;
            if (node.IsSequence()) {
                for (const auto& e : node)
                    entries.push_back(e);
            } else {
                entries.push_back(node);
            }
            auto& list = out.splits[split];
            for (const auto& entry : entries) {
                if (entry.IsNull()) continue;
                const std::string value = scalar_text(entry, where, split);
                if (value.empty()) continue;
                const fs::path given = path_from_utf8(value);
                const fs::path resolved =
                    detail::normalized_absolute(given.is_absolute() ? given : out.root / given);
                if (!allow_outside_root && !inside_or_equal(out.root, resolved))
                    throw InputError(where_at(where, entry.Mark()),
                                     "field '" + split + "' ('" + value +
                                         "') points outside the dataset root " +
                                         detail::safe_utf8(path_to_utf8(out.root)) +
                                         " (path traversal refused)");
                list.push_back(resolved);
            }
            if (list.empty()) out.splits.erase(split);
        }
        if (!out.splits.count("train") && !out.splits.count("val"))
            throw InputError(where, "data.yaml names no 'train' or 'val' images");

        long long nc = -1;
        if (const auto n = doc["nc"]; n && !n.IsNull()) {
            try {
                nc = n.as<long long>();
            } catch (const YAML::Exception&) {
                throw InputError(where_at(where, n.Mark()), "field 'nc' must be an integer");
            }
            if (nc < 0 || nc > 100000)
                throw InputError(where_at(where, n.Mark()), "field 'nc' is out of range");
        }
        const auto names = doc["names"];
        if (!names || names.IsNull()) {
            if (nc < 0) throw InputError(where, "data.yaml has no 'names' (nor 'nc')");
            for (long long i = 0; i < nc; ++i)
                out.names.push_back("class" + std::to_string(i));
            out.problems.push_back(
                {where, "no 'names': classes are called class0.." + std::to_string(nc - 1), false});
        } else if (names.IsSequence()) {
            for (const auto& n : names)
                out.names.push_back(scalar_text(n, where, "names"));
        } else if (names.IsMap()) {
            std::map<long long, std::string> by_index;
            for (const auto& kv : names) {
                long long index = -1;
                try {
                    index = kv.first.as<long long>();
                } catch (const YAML::Exception&) {
                    throw InputError(
                        where_at(where, kv.first.Mark()),
                        "field 'names': key '" + kv.first.Scalar() + "' is not a class index");
                }
                if (index < 0 || index >= 100000)
                    throw InputError(where_at(where, kv.first.Mark()),
                                     "field 'names': class index out of range");
                by_index[index] = scalar_text(kv.second, where, "names");
            }
            const long long count = by_index.empty() ? 0 : by_index.rbegin()->first + 1;
            for (long long i = 0; i < count; ++i) {
                auto it = by_index.find(i);
                if (it == by_index.end()) {
                    out.problems.push_back({where,
                                            "field 'names' has no name for class " +
                                                std::to_string(i) + "; called class" +
                                                std::to_string(i),
                                            false});
                    out.names.push_back("class" + std::to_string(i));
                } else {
                    out.names.push_back(it->second);
                }
            }
        } else {
            throw InputError(where_at(where, names.Mark()),
                             "field 'names' must be a list or a map index -> name");
        }
        if (out.names.empty()) throw InputError(where, "data.yaml lists no class names");
        if (nc >= 0 && nc != static_cast<long long>(out.names.size()))
            throw InputError(where, "field 'nc' (" + std::to_string(nc) + ") does not match the " +
                                        std::to_string(out.names.size()) + " names");
    } catch (const YAML::Exception& e) {
        throw InputError(where_at(where, e.mark), "unexpected YAML structure: " + e.msg);
    } catch (const InputError&) {
        throw;
    }
    return out;
}

}  // namespace crucible::data
