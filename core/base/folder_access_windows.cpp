// Windows half of folder_access.h: an explicit, protected DACL (compiled on Windows, by the
// mingw-w64 check and in the wine tests).
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
// After windows.h, which they need.
#include <aclapi.h>
#include <sddl.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/folder_access.h"
#include "core/base/wide_text_windows.h"

namespace crucible {
namespace {

namespace fs = std::filesystem;

using platform::utf8_from_wide;
using platform::wide_from_utf8;

[[noreturn]] void fail(const fs::path& folder, const std::string& what, DWORD code) {
    throw Error(path_to_utf8(folder) + ": " + what + ": " + platform::windows_error_text(code));
}

// A SID held in a buffer of its own.
using SidBuffer = std::vector<BYTE>;

SidBuffer well_known_sid(WELL_KNOWN_SID_TYPE type) {
    DWORD size = SECURITY_MAX_SID_SIZE;
    SidBuffer sid(size);
    if (!CreateWellKnownSid(type, nullptr, sid.data(), &size)) return {};
    sid.resize(size);
    return sid;
}

SidBuffer this_process_user_sid() {
    HANDLE token = nullptr;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token)) return {};
    DWORD size = 0;
    GetTokenInformation(token, TokenUser, nullptr, 0, &size);
    std::vector<BYTE> buffer(size);
    SidBuffer sid;
    if (GetTokenInformation(token, TokenUser, buffer.data(), size, &size)) {
        PSID user = reinterpret_cast<TOKEN_USER*>(buffer.data())->User.Sid;
        sid.assign(static_cast<BYTE*>(user), static_cast<BYTE*>(user) + GetLengthSid(user));
    }
    CloseHandle(token);
    return sid;
}

SidBuffer account_sid(const fs::path& folder, const std::string& account) {
    DWORD sid_size = 0, domain_size = 0;
    SID_NAME_USE use{};
    const std::wstring name = wide_from_utf8(account);
    LookupAccountNameW(nullptr, name.c_str(), nullptr, &sid_size, nullptr, &domain_size, &use);
    SidBuffer sid(sid_size);
    std::vector<wchar_t> domain(domain_size + 1);
    if (sid_size == 0 || !LookupAccountNameW(nullptr, name.c_str(), sid.data(), &sid_size,
                                             domain.data(), &domain_size, &use))
        fail(folder, "no account named '" + account + "'", GetLastError());
    return sid;
}

std::string account_name(PSID sid) {
    wchar_t name[256], domain[256];
    DWORD name_size = 256, domain_size = 256;
    SID_NAME_USE use{};
    if (LookupAccountSidW(nullptr, sid, name, &name_size, domain, &domain_size, &use))
        return domain_size > 0 ? utf8_from_wide(domain) + "\\" + utf8_from_wide(name)
                               : utf8_from_wide(name);
    LPWSTR text = nullptr;  // an account that no longer exists: its SID as text
    if (!ConvertSidToStringSidW(sid, &text)) return "?";
    std::string out = utf8_from_wide(text);
    LocalFree(text);
    return out;
}

// The DACL make_folder_private sets (LocalFree it).
PACL private_acl(const fs::path& folder, const std::vector<std::string>& also) {
    std::vector<SidBuffer> sids = {well_known_sid(WinLocalSystemSid),
                                   well_known_sid(WinBuiltinAdministratorsSid),
                                   this_process_user_sid()};
    for (const auto& account : also)
        sids.push_back(account_sid(folder, account));
    std::vector<EXPLICIT_ACCESS_W> entries;
    for (auto& sid : sids) {
        if (sid.empty()) continue;
        EXPLICIT_ACCESS_W e{};
        e.grfAccessPermissions = GENERIC_ALL;
        e.grfAccessMode = SET_ACCESS;
        e.grfInheritance = SUB_CONTAINERS_AND_OBJECTS_INHERIT;
        e.Trustee.TrusteeForm = TRUSTEE_IS_SID;
        e.Trustee.TrusteeType = TRUSTEE_IS_UNKNOWN;
        e.Trustee.ptstrName = reinterpret_cast<LPWSTR>(sid.data());
        entries.push_back(e);
    }
    PACL acl = nullptr;
    DWORD rc = SetEntriesInAclW(static_cast<ULONG>(entries.size()), entries.data(), nullptr, &acl);
    if (rc != ERROR_SUCCESS) fail(folder, "cannot build its access list", rc);
    return acl;
}

// The allowed accounts of `acl`, each once, in order.
std::vector<std::string> allowed_accounts(PACL acl) {
    std::vector<std::string> out;
    for (DWORD i = 0; acl && i < acl->AceCount; ++i) {
        void* ace = nullptr;
        if (!GetAce(acl, i, &ace)) continue;
        auto* header = static_cast<ACE_HEADER*>(ace);
        if (header->AceType != ACCESS_ALLOWED_ACE_TYPE) continue;
        PSID sid = &static_cast<ACCESS_ALLOWED_ACE*>(ace)->SidStart;
        const std::string name = account_name(sid);
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    return out;
}

}  // namespace

void make_folder_private(const fs::path& folder, const std::vector<std::string>& also) {
    PACL acl = private_acl(folder, also);
    std::wstring path = folder.wstring();
    // PROTECTED: nothing inherited from the parent (C:\ lets Authenticated Users modify). The
    // entries flow down to what the folder holds already and to all that is made in it later.
    const DWORD rc =
        SetNamedSecurityInfoW(path.data(), SE_FILE_OBJECT,
                              DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                              nullptr, nullptr, acl, nullptr);
    LocalFree(acl);
    if (rc != ERROR_SUCCESS) fail(folder, "cannot set its access list", rc);
}

FolderAccess private_folder_access(const std::vector<std::string>& also) {
    PACL acl = private_acl(fs::path("(planned)"), also);
    FolderAccess out;
    out.inherits_from_parent = false;
    out.accounts = allowed_accounts(acl);
    LocalFree(acl);
    return out;
}

FolderAccess folder_access(const fs::path& path) {
    PACL acl = nullptr;
    PSECURITY_DESCRIPTOR descriptor = nullptr;
    const DWORD rc = GetNamedSecurityInfoW(path.c_str(), SE_FILE_OBJECT, DACL_SECURITY_INFORMATION,
                                           nullptr, nullptr, &acl, nullptr, &descriptor);
    if (rc != ERROR_SUCCESS) fail(path, "cannot read its access list", rc);
    FolderAccess out;
    SECURITY_DESCRIPTOR_CONTROL control = 0;
    DWORD revision = 0;
    if (GetSecurityDescriptorControl(descriptor, &control, &revision))
        out.inherits_from_parent = (control & SE_DACL_PROTECTED) == 0;
    out.accounts = allowed_accounts(acl);
    LocalFree(descriptor);
    return out;
}

void write_private_file(const fs::path& file, std::string_view bytes) {
    fs::create_directories(file.parent_path());
    // The new file inherits its folder's access list; std::filesystem::permissions would only
    // toggle the read-only attribute here.
    write_file_atomically(file, bytes);
}

void require_private_file(const fs::path&) {}

}  // namespace crucible
#endif
