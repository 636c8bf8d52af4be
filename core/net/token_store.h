#pragma once
// Agent access tokens: created with `crucible agent token create`, printed once, stored only as
// SHA-256 hashes in <data>/tokens.json. The agent re-reads the file when it changes, so a token
// created while the agent runs works without a restart. Comparison is constant-time.
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace crucible::net {

struct TokenInfo {
    std::string name;
    std::string hash;  // hex SHA-256 of the token
    double created = 0;
};

class TokenStore {
  public:
    explicit TokenStore(std::filesystem::path file);

    // Creates a token named `name` (letters, digits, - _ .), stores its hash, returns the
    // token text (shown once). Throws InputError on a bad or duplicate name.
    std::string create(const std::string& name);
    bool revoke(const std::string& name);
    std::vector<TokenInfo> list() const;
    // The token's name when valid.
    std::optional<std::string> verify(const std::string& token) const;
    // Stores an already hashed token (the studio's private local agent).
    void add_hashed(const std::string& name, const std::string& hash);

  private:
    void reload_if_changed() const;
    void save() const;

    std::filesystem::path file_;
    mutable std::mutex mutex_;
    mutable std::vector<TokenInfo> tokens_;
    mutable std::filesystem::file_time_type loaded_time_{};
    mutable bool loaded_ = false;
};

}  // namespace crucible::net
