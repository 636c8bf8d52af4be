// `crucible project new|info|import|export|runs`: the `.crucible` project file from the command
// line (core/store). Errors name the file, dataset or option at fault.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "app/cli/cli_parser.h"
#include "app/cli/command.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/store/dataset_store.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "core/store/tidy_csv.h"

namespace crucible::cli {
namespace {

using store::OpenOptions;
using store::Project;

// Every subcommand opens one project file, the first positional.
CLI::Option* add_file(CLI::App& app, std::string& file) {
    return app.add_option("FILE", file, "the .crucible project file")->required();
}

CLI::Option* add_journal(CLI::App& app, std::string& journal) {
    return app.add_option("--journal", journal,
                          "auto (WAL on local disks, the rollback journal on network shares), wal "
                          "or rollback");
}

OpenOptions open_options(const std::string& journal, bool read_only) {
    OpenOptions o;
    o.read_only = read_only;
    if (!journal.empty()) o.journal = store::parse_journal_mode(journal);
    return o;
}

std::string short_hash(const std::string& h) {
    return h.size() > 12 ? h.substr(0, 12) : h;
}

int run_new(const std::vector<std::string>& args) {
    CLI::App app{"Creates an empty project file.", "crucible project new"};
    std::string file, journal;
    add_file(app, file);
    add_journal(app, journal);
    if (parse_words(app, args) == Parsed::HelpPrinted) return 0;
    auto project = Project::create(path_from_utf8(file), open_options(journal, false));
    std::printf("created %s (schema %d, journal %s)\n", path_to_utf8(project->path()).c_str(),
                project->schema_version(), project->journal_mode().c_str());
    return 0;
}

int run_info(const std::vector<std::string>& args) {
    CLI::App app{"Shows the datasets, runs and servers of a project (opened read-only).",
                 "crucible project info"};
    std::string file;
    add_file(app, file);
    if (parse_words(app, args) == Parsed::HelpPrinted) return 0;
    auto project = Project::open(path_from_utf8(file), open_options("", true));
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

int run_import(const std::vector<std::string>& args) {
    CLI::App app{
        "Imports a detection dataset into the project: every image is hashed; labels and classes\n"
        "are stored.",
        "crucible project import"};
    std::string file, data, name, format = "auto", journal;
    bool sizes = false;
    add_file(app, file);
    app.add_option("DATA", data, "a data.yaml, a COCO .json, a VOC folder, or a folder holding one")
        ->required();
    app.add_option("--name", name, "dataset name (default: the dataset folder's name)");
    app.add_option("--format", format, "auto, yolo, coco or voc")->capture_default_str();
    app.add_flag("--sizes", sizes, "read image sizes from the file headers");
    add_journal(app, journal);
    if (parse_words(app, args) == Parsed::HelpPrinted) return 0;
    auto project = Project::open(path_from_utf8(file), open_options(journal, false));
    const std::filesystem::path source = path_from_utf8(data);
    if (name.empty()) {
        std::filesystem::path base = std::filesystem::absolute(source).lexically_normal();
        if (!base.has_filename()) base = base.parent_path();
        if (std::filesystem::is_regular_file(base)) base = base.parent_path();
        name = path_to_utf8(base.filename());
    }
    store::ImportOptions o;
    o.name = name;
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
    load.read_image_sizes = sizes;
    std::vector<std::string> problems;
    auto r = store::import_dataset_from(*project, source, format, o, &problems, load);
    for (std::size_t i = 0; i < problems.size() && i < 20; ++i)
        std::fprintf(stderr, "  %s\n", problems[i].c_str());
    if (problems.size() > 20) std::fprintf(stderr, "  ... %zu more\n", problems.size() - 20);
    std::printf("imported '%s' (#%lld): %zu images, %zu boxes, %.1f MB, version %s\n", name.c_str(),
                static_cast<long long>(r.dataset_id), r.images, r.boxes,
                static_cast<double>(r.bytes) / 1e6, short_hash(r.version_hash).c_str());
    if (!problems.empty()) std::printf("%zu problem(s) reported while loading\n", problems.size());
    return 0;
}

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
    CLI::App app{"Writes a project dataset in a standard format under OUT.",
                 "crucible project export"};
    std::string file, dataset, out, format;
    add_file(app, file);
    app.add_option("DATASET", dataset, "dataset name or #id")->required();
    app.add_option("OUT", out, "output folder")->required();
    app.add_option("--format", format, "yolo, coco or voc")->required();
    if (parse_words(app, args) == Parsed::HelpPrinted) return 0;
    auto project = Project::open(path_from_utf8(file), open_options("", true));
    auto d = dataset_by_name_or_id(*project, dataset);
    auto missing = store::missing_images(*project, d.id);
    if (!missing.empty())
        throw InputError(missing.front(), std::to_string(missing.size()) + " image file(s) of '" +
                                              d.name + "' are missing");
    auto main_file = store::export_dataset_to(*project, d.id, path_from_utf8(out), format);
    std::printf("exported '%s' (%lld images) to %s\n", d.name.c_str(),
                static_cast<long long>(d.images), path_to_utf8(main_file).c_str());
    return 0;
}

int run_runs(const std::vector<std::string>& args) {
    CLI::App app{
        "Lists the runs of a project; with --run, the metric series of one run (points after\n"
        "rollbacks, last value); with --csv / --per-class-csv, writes them as tidy CSV.",
        "crucible project runs"};
    std::string file;
    std::int64_t id = 0;
    add_file(app, file);
    const CLI::Option* run_opt = app.add_option("--run", id, "run id");
    std::string csv, per_class_csv;
    app.add_option("--csv", csv,
                   "write the runs' metrics as tidy CSV (run_id,run,task,metric,step,epoch,time,"
                   "value), for spreadsheets and Power BI");
    app.add_option("--per-class-csv", per_class_csv,
                   "write the per-class evaluations of every epoch as tidy CSV "
                   "(run_id,run,epoch,step,class,name,metric,value)");
    if (parse_words(app, args) == Parsed::HelpPrinted) return 0;
    auto project = Project::open(path_from_utf8(file), open_options("", true));
    if (!csv.empty() || !per_class_csv.empty()) {
        std::vector<std::int64_t> ids;
        if (run_opt->count() > 0) ids.push_back(id);
        for (const auto& [out, table] : {std::pair{csv, &store::tidy_metrics_csv},
                                         {per_class_csv, &store::tidy_per_class_csv}}) {
            if (out.empty()) continue;
            const std::string text = table(*project, ids);
            write_file_atomically(path_from_utf8(out), text);
            const auto rows =
                static_cast<long long>(std::count(text.begin(), text.end(), '\n')) - 1;
            std::printf("wrote %s (%lld rows)\n", out.c_str(), rows);
        }
        return 0;
    }
    if (run_opt->count() > 0) {
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
