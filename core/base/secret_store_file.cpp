// The owner-only file SecretStore: a JSON map key -> secret, rewritten atomically. On POSIX the
// file is created 0600 in a 0700 folder and refused when group or others can read it (the mode
// calls live in folder_access_posix.cpp / folder_access_windows.cpp).
#include <mutex>

#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/folder_access.h"
#include "core/base/json.h"
#include "core/base/secret_store.h"

namespace crucible {
namespace {

class FileSecretStore final : public SecretStore {
  public:
    explicit FileSecretStore(std::filesystem::path path) : path_(std::move(path)) {}

    void put(const std::string& key, const std::string& secret) override {
        std::lock_guard lock(mutex_);
        Json all = load();
        all[key] = secret;
        save(all);
    }

    std::optional<std::string> get(const std::string& key) const override {
        std::lock_guard lock(mutex_);
        Json all = load();
        auto it = all.find(key);
        if (it == all.end() || !it->is_string()) return std::nullopt;
        return it->get<std::string>();
    }

    bool remove(const std::string& key) override {
        std::lock_guard lock(mutex_);
        Json all = load();
        if (!all.contains(key)) return false;
        all.erase(key);
        save(all);
        return true;
    }

  private:
    Json load() const {
        std::error_code ec;
        if (!std::filesystem::exists(path_, ec)) return Json::object();
        require_private_file(path_);
        Json j = read_json_file(path_);
        if (!j.is_object())
            throw InputError(path_to_utf8(path_), "secret file is not a JSON object");
        return j;
    }

    void save(const Json& all) const { write_private_file(path_, all.dump(2)); }

    std::filesystem::path path_;
    mutable std::mutex mutex_;
};

}  // namespace

std::unique_ptr<SecretStore> SecretStore::open_file(const std::filesystem::path& path) {
    return std::make_unique<FileSecretStore>(path);
}

std::filesystem::path user_config_dir() {
    if (auto over = nonempty_environment_variable("CRUCIBLE_CONFIG_DIR"))
        return path_from_utf8(*over);
#ifdef _WIN32
    if (auto appdata = nonempty_environment_variable("APPDATA"))
        return path_from_utf8(*appdata) / "Crucible";
#else
    if (auto xdg = nonempty_environment_variable("XDG_CONFIG_HOME"))
        return path_from_utf8(*xdg) / "crucible";
    if (auto home = nonempty_environment_variable("HOME"))
        return path_from_utf8(*home) / ".config" / "crucible";
#endif
    return std::filesystem::current_path() / ".crucible-config";
}

#ifndef _WIN32
std::unique_ptr<SecretStore> SecretStore::open_default() {
    return open_file(user_config_dir() / "secrets.json");
}
#endif

}  // namespace crucible
