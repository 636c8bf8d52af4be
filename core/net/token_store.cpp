#include "core/net/token_store.h"

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/sha256.h"

namespace crucible::net {

TokenStore::TokenStore(std::filesystem::path file) : file_(std::move(file)) {}

void TokenStore::reload_if_changed() const {
    std::error_code ec;
    if (!std::filesystem::exists(file_, ec)) {
        tokens_.clear();
        loaded_ = true;
        return;
    }
    auto mtime = std::filesystem::last_write_time(file_, ec);
    if (loaded_ && mtime == loaded_time_) return;
    Json j = read_json_file(file_);
    const std::string where = path_to_utf8(file_);
    if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_array())
        throw InputError(where, "expected {\"tokens\": [...]}");
    std::vector<TokenInfo> list;
    for (const auto& t : j["tokens"])
        list.push_back({get_string(t, "name", where), get_string(t, "sha256", where),
                        t.value("created", 0.0)});
    tokens_ = std::move(list);
    loaded_time_ = mtime;
    loaded_ = true;
}

void TokenStore::save() const {
    Json arr = Json::array();
    for (const auto& t : tokens_)
        arr.push_back({{"name", t.name}, {"sha256", t.hash}, {"created", t.created}});
    write_file_atomically(file_, Json{{"tokens", arr}}.dump(2));
    std::error_code ec;
    std::filesystem::permissions(
        file_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
        std::filesystem::perm_options::replace, ec);
    loaded_time_ = std::filesystem::last_write_time(file_, ec);
}

static void check_name(const std::string& name) {
    if (name.empty() || name.size() > 64)
        throw InputError("name", "token name must be 1 to 64 characters");
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
            throw InputError("name", "token name may hold letters, digits, '-', '_' and '.' only");
}

std::string TokenStore::create(const std::string& name) {
    check_name(name);
    std::lock_guard lock(mutex_);
    reload_if_changed();
    for (const auto& t : tokens_)
        if (t.name == name)
            throw InputError("name", "a token named '" + name + "' exists; revoke it first");
    std::string token = "crt_" + random_hex(24);
    tokens_.push_back({name, sha256_hex(token), unix_time_now()});
    save();
    return token;
}

void TokenStore::add_hashed(const std::string& name, const std::string& hash) {
    check_name(name);
    std::lock_guard lock(mutex_);
    reload_if_changed();
    std::erase_if(tokens_, [&](const TokenInfo& t) { return t.name == name; });
    tokens_.push_back({name, hash, unix_time_now()});
    save();
}

bool TokenStore::revoke(const std::string& name) {
    std::lock_guard lock(mutex_);
    reload_if_changed();
    auto n = std::erase_if(tokens_, [&](const TokenInfo& t) { return t.name == name; });
    if (n) save();
    return n > 0;
}

std::vector<TokenInfo> TokenStore::list() const {
    std::lock_guard lock(mutex_);
    reload_if_changed();
    return tokens_;
}

std::optional<std::string> TokenStore::verify(const std::string& token) const {
    if (token.empty() || token.size() > 256) return std::nullopt;
    const std::string hash = sha256_hex(token);
    std::lock_guard lock(mutex_);
    reload_if_changed();
    std::optional<std::string> found;
    for (const auto& t : tokens_)  // no early exit: time does not depend on the position
        if (constant_time_equal(hash, t.hash)) found = t.name;
    return found;
}

}  // namespace crucible::net
