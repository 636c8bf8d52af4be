// POSIX half of folder_access.h: the mode bits. The Windows twin is folder_access_windows.cpp.
#ifndef _WIN32
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

}  // namespace crucible
#endif
