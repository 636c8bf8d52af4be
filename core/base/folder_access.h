#pragma once
// Who may open a folder that holds secrets (the agent's data folder: tokens.json, the TLS key,
// agent.json, every user's datasets and weights). POSIX: mode 0700, the owner alone. Windows:
// std::filesystem::permissions sets no ACL, so a folder under C:\ would keep what it inherits
// (Authenticated Users may modify) and any RDP user could add a token or widen "roots". There
// the folder gets an explicit, protected DACL (nothing inherited from its parent) of SYSTEM,
// Administrators, this process's user and the accounts named, which every file and folder in it
// inherits. The platform parts are folder_access_posix.cpp and folder_access_windows.cpp.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace crucible {

// Closes `folder` (which must exist) as above. `also` names further Windows accounts with full
// access, e.g. "NT SERVICE\crucible-agent" (ignored on POSIX, where only the owner counts).
// Throws Error naming the folder and the system's reason.
void make_folder_private(const std::filesystem::path& folder,
                         const std::vector<std::string>& also = {});

struct FolderAccess {
    bool inherits_from_parent = true;   // Windows: the DACL is not protected
    std::vector<std::string> accounts;  // Windows: DOMAIN\name of each allowed account;
                                        // POSIX: "owner", "group", "others" with any access
};
// What make_folder_private set, read back (tests, `crucible agent doctor`). Throws Error.
FolderAccess folder_access(const std::filesystem::path& path);
// What make_folder_private(folder, also) sets, built the same way but not applied (tests: wine
// accepts a DACL without storing it). Throws Error for an unknown account.
FolderAccess private_folder_access(const std::vector<std::string>& also = {});

// A file of secrets that its owner alone may read (the file SecretStore). Writes `bytes`
// atomically (write_file_atomically). POSIX: the file's folder is made 0700 and the file 0600,
// and the umask is 077 while the temporary file is made, so the secret is never readable by
// others, not even for a moment. Windows: the file inherits its folder's access list
// (make_folder_private decides who may read it). Throws Error when the write fails.
void write_private_file(const std::filesystem::path& file, std::string_view bytes);
// A file of secrets in a folder others may read (the first admin token that set-up hands to the
// administrator): the file alone is closed, from the moment it exists, and its folder is left as
// it is. POSIX: mode 0600. Windows: a protected DACL of SYSTEM, Administrators and this process's
// user. Replaces an existing file. Throws Error naming the file.
void write_secret_file(const std::filesystem::path& file, std::string_view bytes);
// Throws Error when users other than the owner may read the existing `file` (POSIX: a group or
// others mode bit); the message says how to close it. Windows: no check, the folder's access
// list decides.
void require_private_file(const std::filesystem::path& file);

}  // namespace crucible
