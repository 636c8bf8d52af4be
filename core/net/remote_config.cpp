#include "core/net/remote_config.h"

#include <cctype>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/secret_store.h"
#include "core/net/api_client.h"
#include "core/net/tls.h"

namespace crucible::net {
namespace {

constexpr std::uint64_t kMaxRemotesFileBytes = 4u << 20;

bool valid_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (unsigned char c : name)
        if (!(std::isalnum(c) || c == '-' || c == '_' || c == '.')) return false;
    return name != "." && name != "..";
}

}  // namespace

std::string remote_secret_key(const RemoteEntry& entry) {
    return "remote:" + entry.name;
}

std::string legacy_remote_secret_key(const std::string& url) {
    return "agent:" + url;
}

std::optional<std::string> remote_token(const RemoteEntry& entry) {
    auto secrets = SecretStore::open_default();
    if (auto token = secrets->get(remote_secret_key(entry))) return token;
    const auto legacy = secrets->get(legacy_remote_secret_key(entry.url));
    if (!legacy) return std::nullopt;
    const RemoteConfig registry = RemoteConfig::load(default_remotes_file());
    for (const auto& other : registry.remotes())
        if (other.name != entry.name && other.url == entry.url) return std::nullopt;
    secrets->put(remote_secret_key(entry), *legacy);
    secrets->remove(legacy_remote_secret_key(entry.url));
    return legacy;
}

void set_remote_token(const RemoteEntry& entry, const std::string& token) {
    auto secrets = SecretStore::open_default();
    if (token.empty())
        secrets->remove(remote_secret_key(entry));
    else
        secrets->put(remote_secret_key(entry), token);
}

void validate_remote(const RemoteEntry& entry) {
    if (!valid_name(entry.name))
        throw InputError("name", "remote name '" + entry.name +
                                     "' must be 1-64 letters, digits, '-', '_' or '.'");
    ParsedUrl parsed = parse_url(entry.url);  // InputError("url", ...) when malformed
    // parse_url accepts scheme://host:port; anything after the port would be silently dropped.
    auto scheme_end = entry.url.find("://");
    if (scheme_end != std::string::npos && entry.url.find('/', scheme_end + 3) != std::string::npos)
        throw InputError("url", "'" + entry.url +
                                    "' must be scheme://host:port without a path "
                                    "(the client adds /v1/...)");
    if (parsed.https && entry.fingerprint.empty())
        throw InputError("fingerprint",
                         "an https remote needs the certificate fingerprint "
                         "confirmed with `crucible remote add`");
    if (!parsed.https && !entry.fingerprint.empty())
        throw InputError("fingerprint", "a plain http remote has no certificate to pin");
    if (!entry.fingerprint.empty() &&
        (normalize_fingerprint(entry.fingerprint) != entry.fingerprint ||
         entry.fingerprint.size() != 95))
        throw InputError(
            "fingerprint",
            "expected 32 hex bytes separated by ':' (AB:CD:...), got '" + entry.fingerprint + "'");
}

RemoteConfig RemoteConfig::load(const std::filesystem::path& file) {
    RemoteConfig config;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return config;
    const std::string where = path_to_utf8(file);
    Json root = parse_json(read_file_bytes_limited(file, kMaxRemotesFileBytes), where);
    if (!root.is_object() || !root.contains("remotes") || !root["remotes"].is_array())
        throw InputError(where, "expected {\"remotes\": [...]}");
    const Json& list = root["remotes"];
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string at = where + ": remotes[" + std::to_string(i) + "]";
        if (!list[i].is_object()) throw InputError(at, "expected an object");
        RemoteEntry e;
        e.name = get_string(list[i], "name", at);
        e.url = get_string(list[i], "url", at);
        if (list[i].contains("fingerprint")) e.fingerprint = get_string(list[i], "fingerprint", at);
        if (list[i].contains("token"))
            throw InputError(at,
                             "tokens do not belong in remotes.json (they are kept in the "
                             "secret store); remove the 'token' field and run "
                             "`crucible remote add` again");
        try {
            validate_remote(e);
        } catch (const InputError& err) {
            throw InputError(at, err.what());
        }
        if (config.find(e.name)) throw InputError(at, "remote '" + e.name + "' appears twice");
        config.remotes_.push_back(e);
    }
    return config;
}

Json RemoteConfig::to_json() const {
    Json list = Json::array();
    for (const auto& r : remotes_) {
        Json j = {{"name", r.name}, {"url", r.url}};
        if (!r.fingerprint.empty()) j["fingerprint"] = r.fingerprint;
        list.push_back(j);
    }
    return {{"remotes", list}};
}

void RemoteConfig::save(const std::filesystem::path& file) const {
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
    write_file_atomically(file, to_json().dump(2) + "\n");
}

std::optional<RemoteEntry> RemoteConfig::find(const std::string& name) const {
    for (const auto& r : remotes_)
        if (r.name == name) return r;
    return std::nullopt;
}

const RemoteEntry& RemoteConfig::require(const std::string& name) const {
    for (const auto& r : remotes_)
        if (r.name == name) return r;
    throw InputError("remote", "no remote named '" + name +
                                   "' (see `crucible remote ls`, add one with "
                                   "`crucible remote add NAME URL`)");
}

void RemoteConfig::add(const RemoteEntry& entry, bool replace) {
    validate_remote(entry);
    for (auto& r : remotes_) {
        if (r.name != entry.name) continue;
        if (!replace)
            throw InputError("name", "a remote named '" + entry.name +
                                         "' exists; remove it first with `crucible remote rm " +
                                         entry.name + "`");
        r = entry;
        return;
    }
    remotes_.push_back(entry);
}

bool RemoteConfig::remove(const std::string& name) {
    auto before = remotes_.size();
    std::erase_if(remotes_, [&](const RemoteEntry& r) { return r.name == name; });
    return remotes_.size() != before;
}

std::filesystem::path default_remotes_file() {
    return user_config_dir() / "remotes.json";
}

RemoteEndpoint endpoint_for(const RemoteEntry& entry) {
    return {entry.url, remote_token(entry).value_or(""), entry.fingerprint};
}

}  // namespace crucible::net
