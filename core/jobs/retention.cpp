#include "core/jobs/retention.h"

#include <set>

#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/json.h"
#include "core/base/stored_dataset.h"

namespace crucible::jobs {
namespace {

bool protected_checkpoint(const std::filesystem::path& p) {
    const std::string name = path_to_utf8(p.filename());
    return name.rfind("best", 0) == 0 || name.rfind("last", 0) == 0;
}

double file_age_hours(const std::filesystem::path& p) {
    std::error_code ec;
    auto t = std::filesystem::last_write_time(p, ec);
    if (ec) return 0;
    auto age = std::filesystem::file_time_type::clock::now() - t;
    return std::chrono::duration<double, std::ratio<3600>>(age).count();
}

// The <sha> folders under `inputs_prefix` ("<data>/inputs/") that string options of `job` name
// (the agent wrote the resolved absolute paths into the options at submit).
void collect_inputs(const Json& value, const std::string& inputs_prefix,
                    std::set<std::string>& out) {
    if (value.is_string()) {
        const auto& text = value.get_ref<const std::string&>();
        if (text.rfind(inputs_prefix, 0) != 0) return;
        const auto rest = path_from_utf8(text.substr(inputs_prefix.size()));
        if (!rest.empty()) out.insert(path_to_utf8(*rest.begin()));
    } else if (value.is_structured()) {
        for (const auto& child : value)
            collect_inputs(child, inputs_prefix, out);
    }
}

// Bytes that removing `dir` frees: files hard-linked elsewhere (a job input and its blob share
// their bytes) free nothing yet.
std::uint64_t freed_by_removing(const std::filesystem::path& dir) {
    std::uint64_t total = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec) && std::filesystem::hard_link_count(it->path(), ec) == 1)
            total += it->file_size(ec);
    return total;
}

}  // namespace

RetentionReport apply_retention(const JobRegistry& registry, const std::filesystem::path& blobs_dir,
                                const std::filesystem::path& datasets_dir,
                                const RetentionPolicy& policy, double now_unix,
                                const std::filesystem::path& inputs_dir) {
    RetentionReport report;
    std::error_code ec;
    // Uploads cut off and never continued (blobs/partial/): judged by their last write, so an
    // upload in progress is never touched.
    const double stalled_hours =
        std::chrono::duration<double, std::ratio<3600>>(policy.keep_stalled_uploads).count();
    for (const auto& e : std::filesystem::directory_iterator(blobs_dir / "partial", ec)) {
        if (!e.is_regular_file() || file_age_hours(e.path()) < stalled_hours) continue;
        auto size = e.file_size(ec);
        if (std::filesystem::remove(e.path(), ec)) {
            ++report.partial_uploads_removed;
            report.bytes_freed += size;
        }
    }
    ec.clear();
    const double keep_s =
        std::chrono::duration<double>(policy.keep_checkpoints_of_ended_jobs).count();
    const auto ended_long_ago = [&](const JobInfo& job) {
        return is_final_state(job.state) && job.finished > 0 && now_unix - job.finished >= keep_s;
    };
    // Inputs that a job which may still start, resume or was extended recently names.
    std::set<std::string> inputs_in_use;
    const std::string inputs_prefix = path_to_utf8(inputs_dir / "");
    for (const auto& job : registry.list()) {
        if (!ended_long_ago(job)) {
            if (!inputs_dir.empty()) collect_inputs(job.options, inputs_prefix, inputs_in_use);
            continue;
        }
        auto dir = JobFolder{registry.folder(job.id)}.checkpoints();
        for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
             !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
            if (!it->is_regular_file() || protected_checkpoint(it->path())) continue;
            auto size = it->file_size(ec);
            if (std::filesystem::remove(it->path(), ec)) {
                ++report.checkpoint_files_removed;
                report.bytes_freed += size;
            }
        }
    }
    // Blobs referenced by any dataset manifest stay; others go once they are old enough (a
    // dataset being pushed right now references blobs that are only minutes old).
    std::set<std::string> referenced;
    for (const auto& e : std::filesystem::directory_iterator(datasets_dir, ec)) {
        auto manifest = e.path() / kStoredDatasetManifest;
        if (!std::filesystem::exists(manifest, ec)) continue;
        try {
            for (const auto& f : read_json_file(manifest).value("files", Json::array()))
                if (f.is_array() && f.size() == 2 && f[1].is_string())
                    referenced.insert(f[1].get<std::string>());
        } catch (const std::exception&) {
            return report;  // an unreadable manifest: remove no blob rather than a needed one
        }
    }
    const double blob_hours =
        std::chrono::duration<double, std::ratio<3600>>(policy.keep_unreferenced_blobs).count();
    // Job inputs: kept while in use, or young (a submit may be creating one right now).
    for (const auto& e : std::filesystem::directory_iterator(inputs_dir, ec)) {
        if (!e.is_directory()) continue;
        const std::string sha = path_to_utf8(e.path().filename());
        if (inputs_in_use.count(sha) || file_age_hours(e.path()) < blob_hours) {
            referenced.insert(sha);
            continue;
        }
        const auto size = freed_by_removing(e.path());
        if (std::filesystem::remove_all(e.path(), ec) > 0 && !ec) {
            ++report.inputs_removed;
            report.bytes_freed += size;
        }
    }
    ec.clear();
    for (const auto& e : std::filesystem::directory_iterator(blobs_dir, ec)) {
        if (!e.is_regular_file()) continue;
        const std::string name = path_to_utf8(e.path().filename());
        if (referenced.count(name) || file_age_hours(e.path()) < blob_hours) continue;
        auto size = e.file_size(ec);
        if (std::filesystem::remove(e.path(), ec)) {
            std::filesystem::remove(blobs_dir / "owners" / name, ec);
            ++report.blobs_removed;
            report.bytes_freed += size;
        }
    }
    return report;
}

}  // namespace crucible::jobs
