#include "core/engine/checkpoint_store.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <system_error>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/sha256.h"
#include "core/engine/fault.h"

namespace crucible::engine {

namespace {

std::atomic<long long> g_write_index{0};

bool is_step_file(const std::filesystem::path& p) {
    return JobFolder::step_of_checkpoint(path_to_utf8(p.filename())).has_value();
}

}  // namespace

void write_checkpoint_atomically(const std::filesystem::path& path, const std::string& bytes) {
    const long long index = ++g_write_index;
    const FaultPlan& plan = fault_plan();
    if (plan.point == "disk_full" && index >= (plan.n >= 0 ? plan.n : 2))
        throw Error(
            path_to_utf8(path) +
            ": cannot write checkpoint: No space left on device (CRUCIBLE_FAULT=disk_full)");
    std::filesystem::path tmp = path;
    tmp += ".tmp-" + random_hex(4);
    auto fail = [&](const std::string& what) {
        std::error_code ec;
        std::filesystem::remove(tmp, ec);
        throw Error(path_to_utf8(path) + ": cannot write checkpoint: " + what);
    };
    try {
        write_file_durably(tmp, bytes, path_to_utf8(tmp));
    } catch (const std::exception& e) {
        fail(e.what());
    }
    fault_point("mid_checkpoint_write", index, 2);
    try {
        platform::replace_file(tmp, path);
    } catch (const std::exception& e) {
        fail(e.what());
    }
    platform::fsync_folder(path.parent_path());
}

CheckpointStore::CheckpointStore(std::filesystem::path dir, int keep)
    : dir_(std::move(dir)), keep_(std::max(keep, 1)) {}

std::string CheckpointStore::step_file_name(std::int64_t step) {
    return JobFolder::step_checkpoint_name(step);
}

std::filesystem::path CheckpointStore::write_step(std::int64_t step, const std::string& bytes) {
    std::filesystem::create_directories(dir_);
    const auto path = dir_ / step_file_name(step);
    write_checkpoint_atomically(path, bytes);
    auto files = step_files();
    for (std::size_t i = static_cast<std::size_t>(keep_); i < files.size(); ++i) {
        std::error_code ec;
        std::filesystem::remove(files[i], ec);
    }
    return path;
}

std::filesystem::path CheckpointStore::link_named(const std::string& name,
                                                  const std::filesystem::path& written) {
    const auto path = dir_ / (name + ".ckpt");
    link_or_copy_atomically(written, path);
    return path;
}

std::vector<std::filesystem::path> CheckpointStore::step_files() const {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec)) return files;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec))
        if (entry.is_regular_file() && is_step_file(entry.path())) files.push_back(entry.path());
    std::sort(files.begin(), files.end(),
              [](const auto& a, const auto& b) { return a.filename() > b.filename(); });
    return files;
}

void CheckpointStore::remove_stale_temp_files() const {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec)) return;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec))
        if (path_to_utf8(entry.path().filename()).find(".ckpt.tmp-") != std::string::npos)
            std::filesystem::remove(entry.path(), ec);
}

std::optional<CheckpointStore::Loaded> CheckpointStore::load_newest_valid(
    std::vector<std::string>& rejected) const {
    for (const auto& file : step_files()) {
        try {
            return Loaded{read_checkpoint_file(file), file};
        } catch (const std::exception& e) {
            rejected.push_back(e.what());
        }
    }
    return std::nullopt;
}

}  // namespace crucible::engine
