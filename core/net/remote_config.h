#pragma once
// The one registry of agents a user knows, for the CLI (`crucible remote ...`) and the studio
// alike: <user_config_dir()>/remotes.json holds each remote's name, URL and pinned certificate
// fingerprint. Tokens are never stored here; they live in the SecretStore, one per entry
// (remote_secret_key), so two entries for one URL (two users of one agent) keep their own.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/net/api_client.h"

namespace crucible::net {

struct RemoteEntry {
    std::string name;         // letters, digits, - _ . (1..64)
    std::string url;          // http(s)://host:port
    std::string fingerprint;  // "AB:CD:..." for https; empty for http
};

// The SecretStore key of a remote's token: "remote:" + its name (names are unique).
std::string remote_secret_key(const RemoteEntry& entry);
// Where tokens were kept before, one per URL: "agent:" + url. Read only to adopt them.
std::string legacy_remote_secret_key(const std::string& url);

// The entry's token from the default SecretStore. A token kept under the legacy per-URL key is
// adopted (moved to the entry's key) when no other entry of the default registry has that URL;
// when several do, it belonged to whichever was added last, so none takes it.
std::optional<std::string> remote_token(const RemoteEntry& entry);
// Stores (or, for an empty token, removes) the entry's token.
void set_remote_token(const RemoteEntry& entry, const std::string& token);

// Throws InputError naming the field when the entry is unusable: bad name, a URL that
// parse_url rejects or that carries a path, https without a fingerprint, http with one.
void validate_remote(const RemoteEntry& entry);

class RemoteConfig {
  public:
    // Reads `file` when it exists (a missing file is an empty list). Throws InputError naming
    // the file and entry when it is malformed.
    static RemoteConfig load(const std::filesystem::path& file);
    // Writes atomically (temp + rename).
    void save(const std::filesystem::path& file) const;

    const std::vector<RemoteEntry>& remotes() const { return remotes_; }
    std::optional<RemoteEntry> find(const std::string& name) const;
    // Validates and adds; throws InputError when the name is taken (unless `replace`).
    void add(const RemoteEntry& entry, bool replace = false);
    bool remove(const std::string& name);
    // find() or InputError("remote", "no remote named ... (see `crucible remote ls`)").
    const RemoteEntry& require(const std::string& name) const;

    Json to_json() const;

  private:
    std::vector<RemoteEntry> remotes_;
};

// <user_config_dir()>/remotes.json
std::filesystem::path default_remotes_file();

// The endpoint of a remote, with its token (remote_token; empty when none).
RemoteEndpoint endpoint_for(const RemoteEntry& entry);

}  // namespace crucible::net
