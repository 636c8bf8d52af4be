#pragma once
// A Crucible project: one `.crucible` SQLite file that holds datasets (images referenced by paths
// relative to the project file, labels, classes), chat records, run setups and run histories,
// servers and presets. The file can be moved with its folder: image paths are relative.
//
// One process writes a project at a time: opening for writing takes an OS lock on a side file
// (`<project>.lock`) and writes a lock record into the file, so a second writer is told
// "opened by another Crucible (pid N on host H)"; a stale lock of a dead process is taken over.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/store/sqlite_db.h"

namespace crucible::store {

namespace platform {
class OsFileLock;
}

// Rollback journal on network filesystems (WAL needs shared memory that SMB/NFS do not give),
// WAL elsewhere; or forced by the user.
enum class JournalMode { Auto, Wal, Rollback };
JournalMode parse_journal_mode(const std::string& text);  // "auto", "wal", "rollback"

struct OpenOptions {
    bool read_only = false;  // readers take no lock and change nothing
    JournalMode journal = JournalMode::Auto;
};

class Project {
  public:
    // Creates a new project file; refuses an existing path.
    static std::unique_ptr<Project> create(const std::filesystem::path& path,
                                           const OpenOptions& options = {});
    // Opens an existing project; refuses files that are not Crucible projects or are from a
    // newer Crucible, and migrates files from an older one (when writable).
    static std::unique_ptr<Project> open(const std::filesystem::path& path,
                                         const OpenOptions& options = {});
    // A read-only connection of its own, for background work beside the GUI thread's
    // connection (reading stored events, writing dataset snapshots or label files).
    static std::unique_ptr<Project> open_for_reading(const std::filesystem::path& path);
    ~Project();
    Project(const Project&) = delete;
    Project& operator=(const Project&) = delete;

    // Copies the project to `new_path` (SQLite backup API), rebases relative image paths so they
    // still point at the same files, and switches this object to the new file. Refuses an
    // existing target.
    void save_as(const std::filesystem::path& new_path);

    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path folder() const { return path_.parent_path(); }
    Database& db() { return *db_; }
    bool read_only() const { return options_.read_only; }
    int schema_version();
    std::string journal_mode();  // "wal", "delete", ...
    // Set when opening took over the lock of a process that is gone ("pid 42 on host h").
    const std::string& stale_lock_taken_over() const { return stale_lock_; }

    // Paths as stored: relative to the project folder with '/' separators, UTF-8; absolute only
    // when no relative path exists (another drive on Windows).
    std::string to_stored_path(const std::filesystem::path& file) const;
    std::filesystem::path resolve_stored_path(const std::string& stored) const;

    // Throws Error when the project was opened read-only.
    void require_writable(const char* what) const;

    // Cache of metric name ids for run_points; cleared when a write fails.
    std::unordered_map<std::string, std::int64_t>& metric_name_ids() { return metric_name_ids_; }

  private:
    Project(std::filesystem::path path, const OpenOptions& options);
    void open_file(bool create);
    void release();

    std::filesystem::path path_;
    OpenOptions options_;
    std::unique_ptr<platform::OsFileLock> os_lock_;
    std::unique_ptr<Database> db_;
    bool lock_record_written_ = false;
    std::string stale_lock_;
    std::unordered_map<std::string, std::int64_t> metric_name_ids_;
};

// The side file that carries the OS lock of a project.
std::filesystem::path project_lock_file(const std::filesystem::path& project);

}  // namespace crucible::store
