#pragma once
// Agent access tokens: created with `crucible agent token create`, printed once, stored only as
// SHA-256 hashes in <data>/tokens.json. The agent re-reads the file when it changes, so a token
// created while the agent runs works without a restart. Comparison is constant-time. Each token
// has a role (admin sees and controls everything; user their own jobs, datasets and uploads;
// viewer reads their own) and may expire.
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace crucible::net {

enum class TokenRole { Viewer, User, Admin };

// "admin", "user", "viewer"; parse throws InputError naming `field` for anything else.
const char* token_role_name(TokenRole role);
TokenRole parse_token_role(const std::string& text, const std::string& field = "role");

struct TokenInfo {
    std::string name;
    std::string hash;  // hex SHA-256 of the token
    double created = 0;
    TokenRole role = TokenRole::User;
    double expires = 0;  // unix seconds; 0 = never

    bool expired(double now) const { return expires > 0 && now >= expires; }
};

struct TokenOptions {
    TokenRole role = TokenRole::User;
    double expires = 0;  // unix seconds; 0 = never
};

// "30d", "12h", "90m", "3600s" or plain seconds -> seconds; InputError naming `field` otherwise.
double parse_duration_seconds(const std::string& text, const std::string& field);

class TokenStore {
  public:
    explicit TokenStore(std::filesystem::path file);

    // Creates a token named `name` (letters, digits, - _ .), stores its hash, returns the
    // token text (shown once). Throws InputError on a bad or duplicate name.
    std::string create(const std::string& name, TokenOptions options = {});
    bool revoke(const std::string& name);
    std::vector<TokenInfo> list() const;
    // The token's entry when it is known and not expired.
    std::optional<TokenInfo> verify(const std::string& token) const;
    // Whether a token named `name` is still valid (not revoked, not expired): open streams
    // ask this every few seconds and end when it turns false.
    bool still_valid(const std::string& name) const;
    // Stores an already hashed token (the studio's private local agent).
    void add_hashed(const std::string& name, const std::string& hash,
                    TokenRole role = TokenRole::Admin);

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
