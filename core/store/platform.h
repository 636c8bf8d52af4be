#pragma once
// Operating-system pieces the project store needs: network-filesystem detection (WAL's shared
// memory does not work there) and an advisory whole-file lock that the OS drops when its holder
// dies, so a stale lock of a killed process is taken over. Implemented in platform_posix.cpp and
// platform_windows.cpp.
#include <filesystem>
#include <memory>
#include <string>

namespace crucible::store::platform {

// True when `path` (a file or folder; for a file not created yet, its folder) lives on a network
// filesystem: NFS, SMB/CIFS, AFS, ... on Linux (statfs f_type); a remote drive or UNC path on
// Windows. Errors count as "not known to be remote" (false).
bool is_network_filesystem(const std::filesystem::path& path);

// An exclusive advisory lock on a small side file (flock on POSIX, LockFileEx on Windows).
class OsFileLock {
  public:
    virtual ~OsFileLock() = default;
    // Replaces the side file's text (who holds the lock: "pid host").
    virtual void write_owner(const std::string& text) = 0;
};

// Locks `lock_file` (created when missing). Returns nullptr when another process holds it;
// throws Error when the file cannot be created at all.
std::unique_ptr<OsFileLock> try_lock_file(const std::filesystem::path& lock_file);

// The owner text in a lock file; empty when unreadable.
std::string read_lock_owner(const std::filesystem::path& lock_file);

}  // namespace crucible::store::platform
