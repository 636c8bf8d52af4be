#pragma once
// The agent's one rule for every path a client names (a job's path options, the paths inside a
// data.yaml those options lead to, a folder to browse): it must lie inside a folder the agent
// shares (agent.json "roots") or inside the job's own inputs (a pushed dataset, an uploaded
// file), and never inside the agent's data folder (tokens, TLS key, other jobs' weights). Paths
// are judged after symlinks are resolved; relative paths with separators, Windows drive, UNC
// and device forms, and reserved device names are refused. The worker gets absolute paths only.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace crucible::jobs {

// CON, PRN, AUX, NUL, COM1-9 and LPT1-9, with or without an extension, in any case: names that
// open a device instead of a file on Windows. Refused on every platform so a job behaves alike.
bool is_reserved_device_name(std::string_view file_name);

// A path a client sent, fit to quote in an error message: valid UTF-8, control characters (NUL,
// newlines) as \xNN, at most 200 bytes.
std::string printable(std::string_view text);

class PathPolicy {
  public:
    PathPolicy(std::vector<std::filesystem::path> roots, std::filesystem::path data_dir);

    // The value of path option `option` as the worker must get it:
    // - a bare name without separators (a model name such as yolov8n) comes back unchanged;
    // - an absolute path comes back resolved (symlinks followed) when it is inside a shared
    //   root and outside the data folder; a data.yaml it names is checked too (check_data_yaml).
    // Anything else throws InputError naming the option and what to do instead.
    std::string resolve(const std::string& option, const std::string& value) const;

    // Checks the folders a data.yaml names (`path`, `train`, `val`, `test`) the way the worker
    // resolves them: `path` relative to the yaml's folder, the splits relative to `path`. With
    // `confine_to` set (a pushed dataset) every one must stay inside that folder; otherwise each
    // must satisfy the shared-root rule. Throws InputError naming the option and the yaml field.
    void check_data_yaml(const std::string& option, const std::filesystem::path& yaml,
                         const std::filesystem::path& confine_to = {}) const;

    // Whether a folder may be browsed (/v1/fs): a shared root or inside one, not the data folder.
    bool may_browse(const std::filesystem::path& folder) const;

    const std::vector<std::filesystem::path>& roots() const { return roots_; }

  private:
    // Resolved `path` is inside a shared root and outside the data folder.
    bool allowed(const std::filesystem::path& resolved) const;

    std::vector<std::filesystem::path> roots_;  // as configured (shown to clients)
    std::vector<std::filesystem::path> canonical_roots_;
    std::filesystem::path data_dir_;  // canonical
};

}  // namespace crucible::jobs
