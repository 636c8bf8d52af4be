#include "core/net/token_store.h"

#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/sha256.h"

#include <cctype>

namespace crucible::net {

const char* token_role_name(TokenRole role) {
    switch (role) {
        case TokenRole::Admin:
            return "admin";
        case TokenRole::User:
            return "user";
        case TokenRole::Viewer:
            return "viewer";
    }
    return "viewer";
}

TokenRole parse_token_role(const std::string& text, const std::string& field) {
    if (text == "admin") return TokenRole::Admin;
    if (text == "user") return TokenRole::User;
    if (text == "viewer") return TokenRole::Viewer;
    throw InputError(field, "role must be admin, user or viewer, not '" + text + "'");
}

double parse_duration_seconds(const std::string& text, const std::string& field) {
    const std::string usage = "a duration like 30d, 12h, 90m or 3600s, not '" + text + "'";
    if (text.empty() || text.size() > 12) throw InputError(field, usage);
    std::size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])))
        ++digits;
    if (digits == 0 || text.size() - digits > 1) throw InputError(field, usage);
    const double count = std::stod(text.substr(0, digits));
    const char unit = digits < text.size() ? text[digits] : 's';
    double seconds = 0;
    switch (unit) {
        case 'd':
            seconds = count * 86400;
            break;
        case 'h':
            seconds = count * 3600;
            break;
        case 'm':
            seconds = count * 60;
            break;
        case 's':
            seconds = count;
            break;
        default:
            throw InputError(field, usage);
    }
    if (seconds <= 0) throw InputError(field, "the duration must be more than 0");
    return seconds;
}

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
    for (const auto& t : j["tokens"]) {
        TokenInfo info{get_string(t, "name", where), get_string(t, "sha256", where),
                       t.value("created", 0.0)};
        // Tokens made before roles existed are users: they keep their own jobs, not others'.
        if (t.contains("role")) info.role = parse_token_role(get_string(t, "role", where), where);
        info.expires = t.value("expires", 0.0);
        list.push_back(std::move(info));
    }
    tokens_ = std::move(list);
    loaded_time_ = mtime;
    loaded_ = true;
}

void TokenStore::save() const {
    Json arr = Json::array();
    for (const auto& t : tokens_) {
        Json entry = {{"name", t.name},
                      {"sha256", t.hash},
                      {"created", t.created},
                      {"role", token_role_name(t.role)}};
        if (t.expires > 0) entry["expires"] = t.expires;
        arr.push_back(std::move(entry));
    }
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

std::string TokenStore::create(const std::string& name, TokenOptions options) {
    check_name(name);
    std::lock_guard lock(mutex_);
    reload_if_changed();
    for (const auto& t : tokens_)
        if (t.name == name)
            throw InputError("name", "a token named '" + name + "' exists; revoke it first");
    std::string token = "crt_" + random_hex(24);
    tokens_.push_back({name, sha256_hex(token), unix_time_now(), options.role, options.expires});
    save();
    return token;
}

void TokenStore::add_hashed(const std::string& name, const std::string& hash, TokenRole role) {
    check_name(name);
    std::lock_guard lock(mutex_);
    reload_if_changed();
    std::erase_if(tokens_, [&](const TokenInfo& t) { return t.name == name; });
    tokens_.push_back({name, hash, unix_time_now(), role, 0});
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

std::optional<TokenInfo> TokenStore::verify(const std::string& token) const {
    if (token.empty() || token.size() > 256) return std::nullopt;
    const std::string hash = sha256_hex(token);
    std::lock_guard lock(mutex_);
    reload_if_changed();
    std::optional<TokenInfo> found;
    for (const auto& t : tokens_)  // no early exit: time does not depend on the position
        if (constant_time_equal(hash, t.hash)) found = t;
    if (found && found->expired(unix_time_now())) return std::nullopt;
    return found;
}

bool TokenStore::still_valid(const std::string& name) const {
    std::lock_guard lock(mutex_);
    reload_if_changed();
    const double now = unix_time_now();
    for (const auto& t : tokens_)
        if (t.name == name) return !t.expired(now);
    return false;
}

}  // namespace crucible::net
