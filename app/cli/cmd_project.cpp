// `crucible project new|info|import|export|runs`: the `.crucible` project file from the command
// line (core/store). Errors name the file, dataset or option at fault.
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "app/cli/command.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"

namespace crucible::cli {
namespace {

using store::OpenOptions;
using store::Project;

struct Parsed {
    std::vector<std::string> positional;
    std::map<std::string, std::string> flags;
    bool help = false;
};

// Words after the subcommand: positionals and `--flag value` pairs from `allowed`; `switches`
// take no value.
Parsed parse(const std::vector<std::string>& args, const std::set<std::string>& allowed,
             const std::set<std::string>& switches = {}) {
    Parsed p;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            p.help = true;
        } else if (a.rfind("--", 0) == 0) {
            if (switches.count(a)) {
                p.flags[a] = std::string(1, '1');  // not "1": GCC 12 -Wrestrict false positive
                continue;
            }
            if (!allowed.count(a)) throw InputError(a, "unknown option (see --help)");
            if (i + 1 >= args.size()) throw InputError(a, "needs a value");
            p.flags[a] = args[++i];
        } else {
            p.positional.push_back(a);
        }
    }
    return p;
}

OpenOptions open_options(const Parsed& p, bool read_only) {
    OpenOptions o;
    o.read_only = read_only;
    if (auto it = p.flags.find("--journal"); it != p.flags.end())
        o.journal = store::parse_journal_mode(it->second);
    return o;
}

std::string short_hash(const std::string& h) {
    return h.size() > 12 ? h.substr(0, 12) : h;
}

int need_args(const Parsed& p, std::size_t n, const char* usage) {
    if (p.help) {
        std::printf("%s", usage);
        return 0;
    }
    if (p.positional.size() != n) {
        std::fprintf(stderr, "%s", usage);
        throw InputError("arguments", "expected " + std::to_string(n) + " argument(s), got " +
                                          std::to_string(p.positional.size()));
    }
    return -1;
}

constexpr const char* kNewUsage =
    "usage: crucible project new FILE.crucible [--journal auto|wal|rollback]\n\n"
    "Creates an empty project file. The journal is WAL on local disks and the rollback journal\n"
    "on network shares (auto), or as chosen.\n";

int run_new(const std::vector<std::string>& args) {
    Parsed p = parse(args, {"--journal"});
    if (int rc = need_args(p, 1, kNewUsage); rc >= 0) return rc;
    auto project = Project::create(path_from_utf8(p.positional[0]), open_options(p, false));
    std::printf("created %s (schema %d, journal %s)\n", path_to_utf8(project->path()).c_str(),
                project->schema_version(), project->journal_mode().c_str());
    return 0;
}

constexpr const char* kInfoUsage =
    "usage: crucible project info FILE.crucible\n\n"
    "Shows the datasets, runs and servers of a project (opened read-only).\n";

int run_info(const std::vector<std::string>& args) {
    Parsed p = parse(args, {});
    if (int rc = need_args(p, 1, kInfoUsage); rc >= 0) return rc;
    auto project = Project::open(path_from_utf8(p.positional[0]), open_options(p, true));
    std::printf("project %s\n  schema version %d, journal %s\n",
                path_to_utf8(project->path()).c_str(), project->schema_version(),
                project->journal_mode().c_str());
    auto datasets = store::list_datasets(*project);
    std::printf("datasets: %zu\n", datasets.size());
    for (const auto& d : datasets) {
        if (d.kind == "chat")
            std::printf("  #%lld %s (chat): %lld records, version %s\n",
                        static_cast<long long>(d.id), d.name.c_str(),
                        static_cast<long long>(d.chat_records), short_hash(d.version_hash).c_str());
        else
            std::printf(
                "  #%lld %s (%s): %lld images, %lld boxes, %lld classes, %.1f MB, version %s\n",
                static_cast<long long>(d.id), d.name.c_str(),
                d.format.empty() ? d.kind.c_str() : d.format.c_str(),
                static_cast<long long>(d.images), static_cast<long long>(d.boxes),
                static_cast<long long>(d.classes), static_cast<double>(d.bytes) / 1e6,
                short_hash(d.version_hash).c_str());
        std::size_t missing = d.kind == "chat" ? 0 : store::missing_images(*project, d.id).size();
        if (missing) std::printf("    %zu image file(s) missing\n", missing);
    }
    const auto runs = store::list_runs(*project);
    std::printf("runs: %zu\n", runs.size());
    // Servers live in the user's registry (`crucible remote ls`); the project names them.
    std::set<std::string> servers;
    for (const auto& r : runs)
        if (!r.setup.server.empty()) servers.insert(r.setup.server);
    std::printf("servers its runs went to: %zu\n", servers.size());
    for (const auto& s : servers)
        std::printf("  %s\n", s.c_str());
    return 0;
}

constexpr const char* kImportUsage =
    "usage: crucible project import FILE.crucible DATA [--name NAME] [--format "
    "auto|yolo|coco|voc]\n"
    "                               [--sizes] [--journal auto|wal|rollback]\n\n"
    "Imports a detection dataset (a data.yaml, a COCO .json, a VOC folder, or a folder holding\n"
    "one) into the project: every image is hashed; labels and classes are stored. The name\n"
    "defaults to the dataset folder's name. --sizes reads image sizes from the file headers.\n";

int run_import(const std::vector<std::string>& args) {
    Parsed p = parse(args, {"--name", "--format", "--journal"}, {"--sizes"});
    if (int rc = need_args(p, 2, kImportUsage); rc >= 0) return rc;
    auto project = Project::open(path_from_utf8(p.positional[0]), open_options(p, false));
    const std::filesystem::path source = path_from_utf8(p.positional[1]);
    std::string name = p.flags.count("--name") ? p.flags["--name"] : std::string();
    if (name.empty()) {
        std::filesystem::path base = std::filesystem::absolute(source).lexically_normal();
        if (!base.has_filename()) base = base.parent_path();
        if (std::filesystem::is_regular_file(base)) base = base.parent_path();
        name = path_to_utf8(base.filename());
    }
    store::ImportOptions o{.name = name};
    std::size_t last_shown = 0;
    o.progress = [&](const store::ImportProgress& pr) {
        if (pr.done == pr.total || pr.done >= last_shown + 1000 || pr.done < last_shown) {
            last_shown = pr.done;
            std::fprintf(stderr, "\r%s %zu/%zu images (%.1f MB)   ", pr.phase, pr.done, pr.total,
                         static_cast<double>(pr.bytes) / 1e6);
            if (pr.done == pr.total) std::fprintf(stderr, "\n");
        }
    };
    data::LoadOptions load;
    load.read_image_sizes = p.flags.count("--sizes") > 0;
    std::vector<std::string> problems;
    auto r = store::import_dataset_from(*project, source,
                                        p.flags.count("--format") ? p.flags["--format"] : "auto", o,
                                        &problems, load);
    for (std::size_t i = 0; i < problems.size() && i < 20; ++i)
        std::fprintf(stderr, "  %s\n", problems[i].c_str());
    if (problems.size() > 20) std::fprintf(stderr, "  ... %zu more\n", problems.size() - 20);
    std::printf("imported '%s' (#%lld): %zu images, %zu boxes, %.1f MB, version %s\n", name.c_str(),
                static_cast<long long>(r.dataset_id), r.images, r.boxes,
                static_cast<double>(r.bytes) / 1e6, short_hash(r.version_hash).c_str());
    if (!problems.empty()) std::printf("%zu problem(s) reported while loading\n", problems.size());
    return 0;
}

constexpr const char* kExportUsage =
    "usage: crucible project export FILE.crucible DATASET OUT --format yolo|coco|voc\n\n"
    "Writes a project dataset (by name or #id) in a standard format under OUT.\n";

store::DatasetInfo dataset_by_name_or_id(Project& project, const std::string& text) {
    if (!text.empty() && text[0] == '#') {
        try {
            return store::get_dataset(project, std::stoll(text.substr(1)));
        } catch (const std::invalid_argument&) {
        } catch (const std::out_of_range&) {
        }
    }
    auto d = store::find_dataset(project, text);
    if (!d) throw InputError(text, "no such dataset in the project (see 'crucible project info')");
    return *d;
}

int run_export(const std::vector<std::string>& args) {
    Parsed p = parse(args, {"--format"});
    if (int rc = need_args(p, 3, kExportUsage); rc >= 0) return rc;
    if (!p.flags.count("--format")) throw InputError("--format", "choose yolo, coco or voc");
    OpenOptions ro;
    ro.read_only = true;
    auto project = Project::open(path_from_utf8(p.positional[0]), ro);
    auto d = dataset_by_name_or_id(*project, p.positional[1]);
    auto missing = store::missing_images(*project, d.id);
    if (!missing.empty())
        throw InputError(missing.front(), std::to_string(missing.size()) + " image file(s) of '" +
                                              d.name + "' are missing");
    auto main_file = store::export_dataset_to(*project, d.id, path_from_utf8(p.positional[2]),
                                              p.flags["--format"]);
    std::printf("exported '%s' (%lld images) to %s\n", d.name.c_str(),
                static_cast<long long>(d.images), path_to_utf8(main_file).c_str());
    return 0;
}

constexpr const char* kRunsUsage =
    "usage: crucible project runs FILE.crucible [--run ID]\n\n"
    "Lists the runs of a project; with --run, the metric series of one run (points after\n"
    "rollbacks, last value).\n";

int run_runs(const std::vector<std::string>& args) {
    Parsed p = parse(args, {"--run"});
    if (int rc = need_args(p, 1, kRunsUsage); rc >= 0) return rc;
    OpenOptions ro;
    ro.read_only = true;
    auto project = Project::open(path_from_utf8(p.positional[0]), ro);
    if (p.flags.count("--run")) {
        std::int64_t id = 0;
        try {
            id = std::stoll(p.flags["--run"]);
        } catch (const std::exception&) {
            throw InputError("--run", "expects a run id, got '" + p.flags["--run"] + "'");
        }
        auto run = store::get_run(*project, id);
        std::printf("run #%lld %s (%s) %s: %lld events\n", static_cast<long long>(run.id),
                    run.setup.name.c_str(), run.setup.task.c_str(), run.setup.state.c_str(),
                    static_cast<long long>(run.events));
        for (const auto& [name, s] : store::read_series(*project, id)) {
            if (s.size() == 0) continue;
            std::printf("  %-28s %8zu points, last step %lld = %g\n", name.c_str(), s.size(),
                        static_cast<long long>(s.step.back()), s.value.back());
        }
        return 0;
    }
    auto runs = store::list_runs(*project);
    if (runs.empty()) std::printf("no runs\n");
    for (const auto& r : runs)
        std::printf("#%-4lld %-20s %-14s %-10s %8lld events  dataset %s%s%s\n",
                    static_cast<long long>(r.id), r.setup.name.c_str(), r.setup.task.c_str(),
                    r.setup.state.c_str(), static_cast<long long>(r.events),
                    r.setup.dataset_hash.empty() ? "-" : short_hash(r.setup.dataset_hash).c_str(),
                    r.setup.remote_job_id.empty() ? "" : "  job ", r.setup.remote_job_id.c_str());
    return 0;
}

RegisterSubcommand reg_new({"project", "new", "create an empty .crucible project file", &run_new});
RegisterSubcommand reg_info({"project", "info", "show a project's datasets, runs and servers",
                             &run_info});
RegisterSubcommand reg_import({"project", "import", "import a YOLO/COCO/VOC dataset into a project",
                               &run_import});
RegisterSubcommand reg_export({"project", "export", "write a project dataset as YOLO, COCO or VOC",
                               &run_export});
RegisterSubcommand reg_runs({"project", "runs", "list a project's runs or one run's series",
                             &run_runs});

}  // namespace
}  // namespace crucible::cli
