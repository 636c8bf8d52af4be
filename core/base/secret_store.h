#pragma once
// SecretStore (DESIGN.md "Agent API"): where the CLI and the studio keep agent tokens. Windows
// Credential Manager on Windows; elsewhere a per-user file readable only by its owner (mode
// 0600 inside a 0700 folder), as docker and kubectl keep theirs. Tokens never enter a project
// file or a log.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace crucible {

class SecretStore {
  public:
    virtual ~SecretStore() = default;
    // `key` names the secret, e.g. "agent:https://gpu1:7443".
    virtual void put(const std::string& key, const std::string& secret) = 0;
    virtual std::optional<std::string> get(const std::string& key) const = 0;
    virtual bool remove(const std::string& key) = 0;

    // The platform's store: Credential Manager on Windows, the owner-only file elsewhere.
    static std::unique_ptr<SecretStore> open_default();
    // The owner-only file store at an explicit path (tests, portable installs).
    static std::unique_ptr<SecretStore> open_file(const std::filesystem::path& path);
};

// Per-user configuration folder: %APPDATA%\Crucible, $XDG_CONFIG_HOME/crucible or
// ~/.config/crucible. CRUCIBLE_CONFIG_DIR overrides it.
std::filesystem::path user_config_dir();

}  // namespace crucible
