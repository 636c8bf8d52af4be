// `crucible train <task> key=value ... [cfg=FILE.yaml|json]`: trains in this process with the same
// engine, events and folder layout as crucible-worker, in runs/<task>/<name> (yolo CLI habit).
// `crucible train resume=RUN_DIR [epochs=N ...]` continues a run from its newest valid
// checkpoint (with more epochs to extend a finished run); weights=FILE starts a new run from
// another run's weights. `dry_run=true [gpu_memory=GB]` prints the run's predicted peak device
// memory and whether it fits, and trains nothing.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/cli_parser.h"
#include "app/cli/command.h"
#include "app/cli/new_run.h"
#include "app/cli/schema_flags.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/json.h"
#include "core/engine/device.h"
#include "core/engine/device_memory.h"
#include "core/engine/job.h"
#include "core/engine/stop_control.h"
#include "core/engine/task.h"
#include "core/jobs/rank_launcher.h"

namespace crucible::cli {
namespace {

Json yaml_to_json(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map: {
            Json out = Json::object();
            for (const auto& kv : node)
                out[kv.first.as<std::string>()] = yaml_to_json(kv.second);
            return out;
        }
        case YAML::NodeType::Sequence: {
            Json out = Json::array();
            for (const auto& item : node)
                out.push_back(yaml_to_json(item));
            return out;
        }
        case YAML::NodeType::Scalar: {
            const std::string text = node.Scalar();
            if (node.Tag() == "!") return text;  // quoted
            if (text == "true" || text == "True") return true;
            if (text == "false" || text == "False") return false;
            try {
                std::size_t used = 0;
                long long i = std::stoll(text, &used);
                if (used == text.size()) return i;
                double d = std::stod(text, &used);
                if (used == text.size()) return d;
            } catch (...) {
            }
            return text;
        }
        default:
            return nullptr;
    }
}

Json read_config_file(const std::string& file) {
    const auto path = path_from_utf8(file);
    const std::string text = read_file_bytes_limited(path, 16u << 20);
    const std::string ext = path_to_utf8(path.extension());
    if (ext == ".json") return parse_json(text, file);
    try {
        return yaml_to_json(YAML::Load(text));
    } catch (const YAML::Exception& e) {
        throw InputError(file, std::string("not valid YAML: ") + e.what());
    }
}

void print_train_usage() {
    std::printf(
        "usage: crucible train <task> key=value ... [cfg=FILE.yaml|json]\n"
        "       crucible train resume=RUN_DIR [epochs=N ...]\n"
        "       crucible train <task> key=value ... dry_run=true [gpu_memory=GB]\n\n"
        "Runs go to runs/<task>/<name> (project= and name= override). Tasks:\n");
    for (const auto* info : engine::TaskRegistry::instance().all()) {
        std::string aliases;
        for (const auto& a : info->aliases)
            aliases += (aliases.empty() ? " (alias " : ", ") + a;
        std::printf("  %-18s %s%s\n", info->id.c_str(), info->title.c_str(),
                    aliases.empty() ? "" : (aliases + ")").c_str());
    }
    std::printf("\n'crucible-worker describe' prints every option of every task as JSON.\n");
}

// `crucible train detect --help`: the task's options by group, with defaults and choices.
void print_task_options(const engine::TaskInfo& info, const OptionSchema& schema) {
    std::printf(
        "usage: crucible train %s key=value ... [cfg=FILE.yaml|json]\n\n%s options, as "
        "key=value or --key value:\n",
        info.id.c_str(), info.title.c_str());
    print_schema_options(schema);
}

// The task the words name (the first bare word that is not --resume's value), when there is one
// that is registered: its options become flags too.
const engine::TaskInfo* named_task(const std::vector<std::string>& words) {
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (words[i] == "--resume") {
            ++i;
            continue;
        }
        if (words[i].empty() || words[i][0] == '-' || words[i].find('=') != std::string::npos)
            continue;
        return engine::TaskRegistry::instance().find(words[i]);
    }
    return nullptr;
}

// Runs the job in this process, or, when it asks for several ranks, starts crucible-worker once
// per rank (core/jobs/rank_launcher.h) and watches them.
int run_local_job(const std::filesystem::path& dir, bool resume) {
    engine::JobOptions job;
    job.resume = resume;
    job.launch_ranks = jobs::rank_launcher(sibling_program("crucible-worker", "worker"), dir,
                                           resume, engine::signal_stop_pending);
    return engine::run_job(dir, job);
}

// dry_run=true: the predicted peak device memory of the run `options` describe, on this
// machine's device or, with gpu_memory, on a GPU of that many GiB (a server's, planned from a
// workstation). Exit 0 when it fits or nothing is known of the device, 3 when it will not fit.
int dry_run(const engine::TaskInfo& info, const Json& options, double gpu_gib) {
    torch::DeviceType type = torch::kCPU;
    std::int64_t capacity = 0;
    std::string where;
    if (gpu_gib > 0) {
        type = torch::kCUDA;
        capacity = static_cast<std::int64_t>(gpu_gib * static_cast<double>(1ll << 30));
        char text[64];
        std::snprintf(text, sizeof text, "a GPU of %.1f GiB", gpu_gib);
        where = text;
    } else {
        const auto choice = engine::choose_device(options.value("device", std::string()));
        type = choice.device.type();
        where = choice.describe();
        if (const auto memory = engine::device_memory(choice.device))
            capacity = static_cast<std::int64_t>(memory->dedicated);
    }
    const auto estimate = info.make()->estimate_memory(options, type);
    if (!estimate) {
        std::printf("%s makes no memory prediction yet; nothing was trained\n", info.id.c_str());
        return 0;
    }
    std::printf("predicted peak memory of this %s run on %s:\n%s", info.id.c_str(), where.c_str(),
                estimate->table().c_str());
    if (capacity <= 0) {
        std::printf("dry run: nothing was trained (give gpu_memory=GB to check a GPU's size)\n");
        return 0;
    }
    const double cap = static_cast<double>(capacity) / (1ll << 30);
    if (estimate->fits(capacity)) {
        std::printf(
            "fits in %.1f GiB (with %.1f GiB kept for the CUDA context and 10 %% for "
            "fragmentation); dry run: nothing was trained\n",
            cap, static_cast<double>(engine::kDeviceReserve) / (1ll << 30));
        return 0;
    }
    std::printf("warning: this run will not fit in %.1f GiB%s%s. Dry run: nothing was trained\n",
                cap, estimate->advice.empty() ? "" : "; try ", estimate->advice.c_str());
    return 3;
}

void merge_into(Json& target, const Json& source) {
    for (const auto& [k, v] : source.items())
        target[k] = v;
}

int run_train(const std::vector<std::string>& args) {
    if (args.empty()) {
        print_train_usage();
        return 2;
    }
    // CLI11 reads the flags; the task and its key=value options come back as extras, for the
    // task's option schema. Help depends on the task (the task list, or that task's options), so
    // --help is a plain flag here rather than CLI11's.
    CLI::App app{"", "crucible train"};
    app.set_help_flag();
    bool help = false;
    std::string resume;
    app.add_flag("-h,--help", help, "the tasks, or with a task its options");
    app.add_option("--resume", resume, "a run folder to continue (as resume=RUN_DIR)");
    std::optional<SchemaFlags> task_flags;
    if (const engine::TaskInfo* named = named_task(args))
        task_flags.emplace(app, named->make()->schema());
    std::vector<std::string> extras;
    parse_words(app, args, &extras);
    std::string task_name, cfg;
    std::vector<std::string> words;
    bool plan_only = false;
    double gpu_gib = 0;
    for (std::size_t i = 0; i < extras.size(); ++i) {
        const std::string& a = extras[i];
        if (i == 0 && a.find('=') == std::string::npos) {
            task_name = a;
        } else if (a.rfind("cfg=", 0) == 0) {
            cfg = a.substr(4);
        } else if (a.rfind("resume=", 0) == 0) {
            resume = a.substr(7);
        } else if (a.rfind("dry_run=", 0) == 0) {
            const std::string v = a.substr(8);
            if (v != "true" && v != "false" && v != "1" && v != "0")
                throw InputError("dry_run", "expected true or false, got '" + v + "'");
            plan_only = v == "true" || v == "1";
        } else if (a.rfind("gpu_memory=", 0) == 0) {
            try {
                gpu_gib = std::stod(a.substr(11));
            } catch (const std::exception&) {
                gpu_gib = -1;
            }
            if (!(gpu_gib > 0 && gpu_gib < 100000))
                throw InputError("gpu_memory", "expected a size in GiB, e.g. gpu_memory=24");
        } else {
            words.push_back(a);
        }
    }
    if (task_flags) {  // flags first: a key=value word given after them overrides them
        const auto flags = task_flags->key_values();
        words.insert(words.begin(), flags.begin(), flags.end());
    }
    if (help) {  // before resume: asking for help never starts a run
        if (task_name.empty()) {
            print_train_usage();
        } else {
            const auto& info = engine::TaskRegistry::instance().get(task_name);
            print_task_options(info, info.make()->schema());
        }
        return 0;
    }

    if (!resume.empty()) {
        const auto dir = path_from_utf8(resume);
        const auto spec_path = JobFolder{dir}.spec();
        Json spec = read_json_file(spec_path);
        const auto& info =
            engine::TaskRegistry::instance().get(get_string(spec, "task", path_to_utf8(spec_path)));
        if (!task_name.empty() && engine::TaskRegistry::instance().get(task_name).id != info.id)
            throw InputError(
                "resume", "the run in " + resume + " is a " + info.id + " run, not " + task_name);
        const auto schema = info.make()->schema();
        Json options = spec.value("options", Json::object());
        if (!cfg.empty()) merge_into(options, read_config_file(cfg));
        merge_into(options, schema.parse_key_values(words));
        schema.resolve(options);  // refuse bad overrides before touching the run
        absolutize_paths(options, schema);
        spec["options"] = options;
        write_json_file(spec_path, spec);
        std::printf("resuming %s\n", resume.c_str());
        return run_local_job(dir, true);
    }

    if (task_name.empty())
        throw InputError("task", "name a task first, e.g. 'crucible train detect data=...'");
    const auto& info = engine::TaskRegistry::instance().get(task_name);
    const auto schema = info.make()->schema();
    Json options = Json::object();
    if (!cfg.empty()) merge_into(options, read_config_file(cfg));
    merge_into(options, schema.parse_key_values(words));
    if (plan_only) return dry_run(info, schema.resolve(options), gpu_gib);
    const auto dir = prepare_new_run(info, options, std::filesystem::current_path());
    std::printf("run folder: %s\n", path_to_utf8(dir).c_str());
    return run_local_job(dir, false);
}

RegisterCommand reg({"train", "train a task locally (crucible train detect data=... epochs=...)",
                     &run_train});

}  // namespace
}  // namespace crucible::cli
