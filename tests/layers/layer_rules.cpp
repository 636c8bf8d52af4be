#include "tests/layers/layer_rules.h"

#include <fstream>
#include <map>
#include <regex>
#include <set>

namespace crucible::layers {
namespace {

// Which of our own folders each layer may include (DESIGN.md "Layers and folders").
const std::map<std::string, std::set<std::string>> kAllowedOwn = {
    {"core/base", {"core/base"}},
    {"core/data", {"core/base", "core/data"}},
    {"core/store", {"core/base", "core/data", "core/store"}},
    {"core/net", {"core/base", "core/net"}},
    {"core/jobs", {"core/base", "core/store", "core/net", "core/jobs"}},
    {"core/engine", {"core/base", "core/data", "core/engine"}},
    {"ui", {"core/base", "core/data", "core/store", "core/net", "ui"}},
};

bool starts_with(const std::string& s, const std::string& p) {
    return s.rfind(p, 0) == 0;
}

std::string layer_of(const std::string& rel) {
    for (const auto& [layer, _] : kAllowedOwn)
        if (starts_with(rel, layer + "/")) return layer;
    if (starts_with(rel, "plugins/")) {
        auto slash = rel.find('/', 8);
        return slash == std::string::npos ? "plugins" : rel.substr(0, slash);
    }
    if (starts_with(rel, "app/")) {
        auto slash = rel.find('/', 4);
        return slash == std::string::npos ? "app" : rel.substr(0, slash);
    }
    return "";
}

bool is_torch_header(const std::string& inc) {
    return starts_with(inc, "torch/") || starts_with(inc, "ATen/") || starts_with(inc, "c10/") ||
           starts_with(inc, "caffe2/");
}
bool is_qt_header(const std::string& inc) {
    return (inc.size() > 1 && inc[0] == 'Q' && std::isupper(static_cast<unsigned char>(inc[1]))) ||
           starts_with(inc, "Qt") || inc == "qcustomplot.h";
}
bool torch_allowed(const std::string& layer) {
    return layer == "core/engine" || starts_with(layer, "plugins") || layer == "app/worker" ||
           layer == "app/cli";
}

// A job folder's file names spelled outside JobFolder (core/base/job_folder.h): as a literal
// of its own, or joined onto a path.
const std::regex& job_folder_literal() {
    static const std::regex re(
        R"re("(spec\.json|events\.jsonl|control\.json|job\.json|worker\.log|results\.csv|)re"
        R"re(val_metrics\.json|artifacts/[^"]*)"|/\s*"(checkpoints|artifacts|inbox)")re");
    return re;
}

bool is_job_folder_type(const std::string& rel) {
    return rel == "core/base/job_folder.h" || rel == "core/base/job_folder.cpp";
}

// An agent route spelled outside the route table (core/net/api_routes.h): a string literal that
// starts with the API prefix, in the server, the client, the studio or the CLI.
const std::regex& route_literal() {
    static const std::regex re(R"re((R"\(|")/v1[/"?)])re");
    return re;
}

bool is_route_table(const std::string& rel) {
    return rel == "core/net/api_routes.h";
}

}  // namespace

std::vector<Violation> check_tree(const std::filesystem::path& root) {
    std::vector<Violation> out;
    static const std::regex include_re(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
    for (const char* top : {"core", "plugins", "ui", "app"}) {
        if (!std::filesystem::exists(root / top)) continue;
        for (const auto& entry : std::filesystem::recursive_directory_iterator(root / top)) {
            if (!entry.is_regular_file()) continue;
            auto ext = entry.path().extension().string();
            if (ext != ".h" && ext != ".hpp" && ext != ".cpp") continue;
            std::string rel = entry.path().lexically_relative(root).generic_string();
            std::string layer = layer_of(rel);
            std::ifstream in(entry.path());
            std::string line;
            int n = 0;
            while (std::getline(in, line)) {
                ++n;
                std::smatch m;
                if (!is_job_folder_type(rel) && std::regex_search(line, m, job_folder_literal()))
                    out.push_back(
                        {rel, n, m.str(0), "job-folder files are named in JobFolder only"});
                if (!is_route_table(rel) && std::regex_search(line, m, route_literal()))
                    out.push_back(
                        {rel, n, m.str(0), "agent routes are named in api_routes.h only"});
                if (!std::regex_search(line, m, include_re)) continue;
                std::string inc = m[2];
                auto add = [&](const std::string& rule) { out.push_back({rel, n, inc, rule}); };
                if (is_torch_header(inc) && !torch_allowed(layer))
                    add("LibTorch only in core/engine, plugins/, app/worker and app/cli");
                if (is_qt_header(inc) &&
                    (starts_with(rel, "core/") || starts_with(rel, "plugins/")))
                    add("no Qt under core/ or plugins/");
                if (layer == "core/base" &&
                    (starts_with(inc, "opencv2/") || starts_with(inc, "yaml-cpp/") ||
                     inc == "sqlite3.h" || inc == "httplib.h"))
                    add("core/base uses only std, spdlog, nlohmann-json, OpenSSL, CLI11");
                if ((layer == "app/studio" || layer == "app/agent") && is_torch_header(inc))
                    add("studio and agent never use LibTorch");
                // Executables reach tasks through the engine's registries (tasks, their
                // commands), never through a plugin's headers.
                if (starts_with(rel, "app/") && starts_with(inc, "plugins/"))
                    add("app/ includes no plugin code (tasks register their commands)");
                // Our own folders.
                bool own = starts_with(inc, "core/") || starts_with(inc, "plugins/") ||
                           starts_with(inc, "ui/") || starts_with(inc, "app/");
                if (!own || layer.empty()) continue;
                std::string target_layer = layer_of(inc);
                if (auto it = kAllowedOwn.find(layer); it != kAllowedOwn.end()) {
                    if (!it->second.count(target_layer))
                        add(layer + " may not include " + target_layer);
                } else if (starts_with(layer, "plugins/")) {
                    bool ok = target_layer == layer || target_layer == "core/engine" ||
                              target_layer == "core/data" || target_layer == "core/base";
                    if (!ok) add("a plugin uses only engine, data, base and itself");
                } else if (layer == "app/studio" || layer == "app/agent") {
                    if (target_layer == "core/engine" || starts_with(target_layer, "plugins"))
                        add("studio and agent never use the engine or plugins");
                }
            }
        }
    }
    return out;
}

}  // namespace crucible::layers
