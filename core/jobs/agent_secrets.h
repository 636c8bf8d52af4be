#pragma once
// The agent's own secret store: <data>/secrets.json, owner-only (core/base/secret_store.h), and
// the names of what it holds. agent.json names things; their secrets live here, put there by
// `crucible agent mirror set` and `crucible agent peer add`.
#include <filesystem>
#include <string>

namespace crucible::jobs {

std::filesystem::path agent_secrets_file(const std::filesystem::path& data_dir);

// The checkpoint mirror's credentials (checkpoint_mirror.h).
inline constexpr const char* kMirrorAccessKeySecret = "mirror:access_key_id";
inline constexpr const char* kMirrorSecretKeySecret = "mirror:secret_access_key";

// The token a peer agent (agent.json "cluster": "peers") made for this one.
std::string peer_token_secret(const std::string& peer_name);

}  // namespace crucible::jobs
