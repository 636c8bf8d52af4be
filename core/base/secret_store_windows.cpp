// Windows Credential Manager SecretStore (generic credentials named "Crucible/<key>").
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
// wincred.h needs the types of windows.h: keep it in its own include block.
#include <wincred.h>

#include <string>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/secret_store.h"

namespace crucible {
namespace {

std::wstring target_name(const std::string& key) {
    return (std::filesystem::path(L"Crucible/") += path_from_utf8(key).native()).native();
}

class CredentialManagerStore final : public SecretStore {
  public:
    void put(const std::string& key, const std::string& secret) override {
        std::wstring target = target_name(key);
        CREDENTIALW cred{};
        cred.Type = CRED_TYPE_GENERIC;
        cred.TargetName = target.data();
        cred.CredentialBlobSize = static_cast<DWORD>(secret.size());
        cred.CredentialBlob = reinterpret_cast<LPBYTE>(const_cast<char*>(secret.data()));
        cred.Persist = CRED_PERSIST_LOCAL_MACHINE;
        wchar_t user[] = L"crucible";
        cred.UserName = user;
        if (!CredWriteW(&cred, 0))
            throw Error("Credential Manager: cannot store the secret for " + key);
    }

    std::optional<std::string> get(const std::string& key) const override {
        PCREDENTIALW cred = nullptr;
        if (!CredReadW(target_name(key).c_str(), CRED_TYPE_GENERIC, 0, &cred)) return std::nullopt;
        std::string out(reinterpret_cast<const char*>(cred->CredentialBlob),
                        cred->CredentialBlobSize);
        CredFree(cred);
        return out;
    }

    bool remove(const std::string& key) override {
        return CredDeleteW(target_name(key).c_str(), CRED_TYPE_GENERIC, 0) != 0;
    }
};

}  // namespace

std::unique_ptr<SecretStore> SecretStore::open_default() {
    return std::make_unique<CredentialManagerStore>();
}

}  // namespace crucible
#endif
