// POSIX half of folder_access.h: the mode bits. The Windows twin is folder_access_windows.cpp.
#ifndef _WIN32
#include <sys/stat.h>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/folder_access.h"

namespace crucible {

namespace fs = std::filesystem;

void make_folder_private(const fs::path& folder, const std::vector<std::string>&) {
    std::error_code ec;
    fs::permissions(folder, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) throw Error(path_to_utf8(folder) + ": cannot make it private: " + ec.message());
}

FolderAccess folder_access(const fs::path& path) {
    std::error_code ec;
    const fs::perms p = fs::status(path, ec).permissions();
    if (ec) throw Error(path_to_utf8(path) + ": " + ec.message());
    FolderAccess out;
    out.inherits_from_parent = false;  // POSIX modes are never inherited
    if ((p & fs::perms::owner_all) != fs::perms::none) out.accounts.push_back("owner");
    if ((p & fs::perms::group_all) != fs::perms::none) out.accounts.push_back("group");
    if ((p & fs::perms::others_all) != fs::perms::none) out.accounts.push_back("others");
    return out;
}

FolderAccess private_folder_access(const std::vector<std::string>&) {
    return {.inherits_from_parent = false, .accounts = {"owner"}};
}

void write_private_file(const fs::path& file, std::string_view bytes) {
    const fs::path folder = file.parent_path();
    fs::create_directories(folder);
    std::error_code ec;
    // A folder whose mode cannot change is not an error here: require_private_file refuses the
    // file on the next read, naming the fix.
    fs::permissions(folder, fs::perms::owner_all, fs::perm_options::replace, ec);
    write_secret_file(file, bytes);
}

void write_secret_file(const fs::path& file, std::string_view bytes) {
    // The umask covers the atomic writer's temporary file, which is renamed into place: without
    // it the secret would sit world-readable until the chmod below.
    const mode_t old = ::umask(077);
    try {
        write_file_atomically(file, bytes);
    } catch (...) {
        ::umask(old);
        throw;
    }
    ::umask(old);
    std::error_code ec;
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace,
                    ec);
    if (ec) throw Error(path_to_utf8(file) + ": cannot make it private: " + ec.message());
}

void require_private_file(const fs::path& file) {
    std::error_code ec;
    const fs::perms p = fs::status(file, ec).permissions();
    if (ec) return;  // gone or unreadable: reading it reports that
    if ((p & (fs::perms::group_all | fs::perms::others_all)) != fs::perms::none)
        throw Error(path_to_utf8(file) +
                    ": secret file is readable by other users; run chmod 600 on it");
}

}  // namespace crucible
#endif
