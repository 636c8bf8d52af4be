// Windows half of folder_access.h: an explicit, protected DACL (compiled on Windows, by the
// mingw-w64 check and in the wine tests).
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
// After windows.h, which they need.
#include <aclapi.h>
#include <bcrypt.h>
#include <sddl.h>

#include <algorithm>
#include <cstring>
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

// The SID of "NT SERVICE\<service>", a service's virtual account. Windows derives it from the
// name alone: S-1-5-80- and the SHA-1 of the name in capitals (UTF-16LE) read as five 32-bit
// numbers (what `sc showsid` prints). LookupAccountName knows the account only once the service
// is installed, and set-up makes the data folder private before it installs the service.
SidBuffer virtual_service_sid(const fs::path& folder, const std::wstring& service) {
    std::wstring upper(service.size(), L'\0');
    if (!service.empty() && LCMapStringEx(LOCALE_NAME_INVARIANT, LCMAP_UPPERCASE, service.data(),
                                          static_cast<int>(service.size()), upper.data(),
                                          static_cast<int>(upper.size()), nullptr, nullptr, 0) == 0)
        fail(folder, "cannot spell the service name in capitals", GetLastError());
    BYTE digest[20] = {};
    BCRYPT_ALG_HANDLE sha1 = nullptr;
    NTSTATUS status = BCryptOpenAlgorithmProvider(&sha1, BCRYPT_SHA1_ALGORITHM, nullptr, 0);
    if (BCRYPT_SUCCESS(status)) {
        status =
            BCryptHash(sha1, nullptr, 0, reinterpret_cast<PUCHAR>(upper.data()),
                       static_cast<ULONG>(upper.size() * sizeof(wchar_t)), digest, sizeof digest);
        BCryptCloseAlgorithmProvider(sha1, 0);
    }
    if (!BCRYPT_SUCCESS(status))
        fail(folder, "cannot hash the service name", static_cast<DWORD>(status));
    DWORD parts[5];
    std::memcpy(parts, digest, sizeof parts);  // little-endian, as Windows reads them
    SID_IDENTIFIER_AUTHORITY nt = SECURITY_NT_AUTHORITY;
    PSID sid = nullptr;
    if (!AllocateAndInitializeSid(&nt, 6, SECURITY_SERVICE_ID_BASE_RID, parts[0], parts[1],
                                  parts[2], parts[3], parts[4], 0, 0, &sid))
        fail(folder, "cannot build the service's SID", GetLastError());
    SidBuffer out(static_cast<BYTE*>(sid), static_cast<BYTE*>(sid) + GetLengthSid(sid));
    FreeSid(sid);
    return out;
}

SidBuffer account_sid(const fs::path& folder, const std::string& account) {
    const std::wstring service_prefix = L"NT SERVICE\\";
    const std::wstring wide_account = wide_from_utf8(account);
    if (wide_account.size() > service_prefix.size() &&
        CompareStringOrdinal(wide_account.data(), static_cast<int>(service_prefix.size()),
                             service_prefix.data(), static_cast<int>(service_prefix.size()),
                             TRUE) == CSTR_EQUAL)
        return virtual_service_sid(folder, wide_account.substr(service_prefix.size()));
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

// The DACL make_folder_private sets (LocalFree it); a file's entries have nothing to pass on.
PACL private_acl(const fs::path& folder, const std::vector<std::string>& also,
                 bool inheritable = true) {
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
        e.grfInheritance = inheritable ? SUB_CONTAINERS_AND_OBJECTS_INHERIT : NO_INHERITANCE;
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

// True when `folder`'s DACL is protected and, entry for entry, `acl`. Setting a DACL walks
// everything the folder holds to pass the entries down (a data folder of many datasets: minutes,
// and the agent's service must report within 30 s), so an unchanged one is left as it is.
bool has_protected_acl(const fs::path& folder, PACL acl) {
    PACL current = nullptr;
    PSECURITY_DESCRIPTOR descriptor = nullptr;
    if (GetNamedSecurityInfoW(folder.c_str(), SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, nullptr,
                              nullptr, &current, nullptr, &descriptor) != ERROR_SUCCESS)
        return false;
    SECURITY_DESCRIPTOR_CONTROL control = 0;
    DWORD revision = 0;
    const bool same = GetSecurityDescriptorControl(descriptor, &control, &revision) &&
                      (control & SE_DACL_PROTECTED) != 0 && current != nullptr &&
                      current->AclSize == acl->AclSize &&
                      std::memcmp(current, acl, acl->AclSize) == 0;
    LocalFree(descriptor);
    return same;
}

}  // namespace

void make_folder_private(const fs::path& folder, const std::vector<std::string>& also) {
    PACL acl = private_acl(folder, also);
    if (has_protected_acl(folder, acl)) {
        LocalFree(acl);
        return;
    }
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

void write_secret_file(const fs::path& file, std::string_view bytes) {
    PACL acl = private_acl(file, {}, false);
    SECURITY_DESCRIPTOR descriptor;
    InitializeSecurityDescriptor(&descriptor, SECURITY_DESCRIPTOR_REVISION);
    SetSecurityDescriptorDacl(&descriptor, TRUE, acl, FALSE);
    SetSecurityDescriptorControl(&descriptor, SE_DACL_PROTECTED, SE_DACL_PROTECTED);
    SECURITY_ATTRIBUTES attributes{sizeof attributes, &descriptor, FALSE};
    // CreateFile applies the descriptor only to a file it creates: an old file goes first, so
    // the secret never sits in a file that inherits its folder's access list.
    if (!DeleteFileW(file.c_str()) && GetLastError() != ERROR_FILE_NOT_FOUND) {
        const DWORD code = GetLastError();
        LocalFree(acl);
        fail(file, "cannot replace it", code);
    }
    HANDLE handle = CreateFileW(file.c_str(), GENERIC_WRITE, 0, &attributes, CREATE_NEW,
                                FILE_ATTRIBUTE_NORMAL, nullptr);
    const DWORD create_error = GetLastError();
    LocalFree(acl);
    if (handle == INVALID_HANDLE_VALUE) fail(file, "cannot create it", create_error);
    DWORD written = 0;
    const BOOL ok =
        WriteFile(handle, bytes.data(), static_cast<DWORD>(bytes.size()), &written, nullptr) &&
        written == bytes.size() && FlushFileBuffers(handle);
    const DWORD write_error = GetLastError();
    CloseHandle(handle);
    if (!ok) fail(file, "cannot write it", write_error);
}

void require_private_file(const fs::path&) {}

}  // namespace crucible
#endif
