#pragma once
// The checkpoints/ folder of a job: step-<012d>.ckpt files written atomically (temp file, flush,
// fsync, rename, fsync of the folder), the last K kept, plus best.ckpt. Resume takes the newest
// one whose checksum holds; the rejected ones are reported so the caller can warn.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/checkpoint_file.h"

namespace crucible::engine {

// temp + flush + fsync + [fault point mid_checkpoint_write] + rename + fsync folder. Throws Error
// (e.g. "No space left on device", or the disk_full fault) leaving `path` as it was.
void write_checkpoint_atomically(const std::filesystem::path& path, const std::string& bytes);

class CheckpointStore {
  public:
    CheckpointStore(std::filesystem::path dir, int keep);

    const std::filesystem::path& dir() const { return dir_; }
    static std::string step_file_name(std::int64_t step);

    // Writes step-<step>.ckpt and removes the oldest step files beyond `keep`.
    std::filesystem::path write_step(std::int64_t step, const std::string& bytes);
    // <name>.ckpt as the same file as `written` (a checkpoint this store wrote): best.ckpt costs
    // a link, not a second 60 MB write.
    std::filesystem::path link_named(const std::string& name, const std::filesystem::path& written);

    // Step checkpoint files, newest (highest step) first.
    std::vector<std::filesystem::path> step_files() const;
    // Removes temp files left by a crash in the middle of a write.
    void remove_stale_temp_files() const;

    struct Loaded {
        CheckpointData data;
        std::filesystem::path file;
    };
    // The newest valid step checkpoint; every rejected file's message is appended to `rejected`.
    std::optional<Loaded> load_newest_valid(std::vector<std::string>& rejected) const;

  private:
    std::filesystem::path dir_;
    int keep_;
};

}  // namespace crucible::engine
