#include "core/net/auth_gate.h"

#include <algorithm>

#include "core/base/event.h"
#include "core/base/sha256.h"
#include "core/net/api_routes.h"
#include "core/net/api_version.h"
#include "core/net/http_server.h"

namespace crucible::net {

TokenWatch::TokenWatch(std::shared_ptr<const TokenStore> tokens, std::string name,
                       std::chrono::milliseconds period)
    : tokens_(std::move(tokens)), name_(std::move(name)), period_(period) {}

bool TokenWatch::still_valid() {
    const auto now = std::chrono::steady_clock::now();
    if (valid_ && now >= next_check_) {
        valid_ = name_.empty() || tokens_->still_valid(name_);
        next_check_ = now + period_;
    }
    return valid_;
}

AuthGate::AuthGate(std::shared_ptr<TokenStore> tokens, AuthGateOptions options, AuditFn audit)
    : tokens_(std::move(tokens)), options_(options), audit_(std::move(audit)) {}

bool AuthGate::locked_out(const std::string& address, httplib::Response& res) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    auto it = failures_.find(address);
    if (it == failures_.end()) return false;
    if (now - it->second.first > options_.failure_window) {
        failures_.erase(it);
        return false;
    }
    if (static_cast<int>(it->second.wrong_tokens.size()) < options_.max_failures) return false;
    auto wait = std::chrono::duration_cast<std::chrono::seconds>(options_.failure_window -
                                                                 (now - it->second.first));
    res.set_header("Retry-After", std::to_string(wait.count()));
    send_error(res, 429, "too_many_failures",
               "too many failed logins from this address; retry in " +
                   std::to_string(wait.count()) + " s");
    return true;
}

// Forgets the entries of a map keyed by address once it holds `limit`: a scan of many source
// addresses must not grow the agent's memory without bound.
template <typename Map, typename Expired>
static void forget_some(Map& map, std::size_t limit, Expired expired) {
    if (map.size() < limit) return;
    std::erase_if(map, [&](const auto& entry) { return expired(entry.second); });
    if (map.size() >= limit) map.clear();  // all fresh: a flood of addresses; start over
}

bool AuthGate::within_flood_budget(const std::string& address, int& suppressed) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    forget_some(floods_, options_.max_addresses,
                [&](const Flood& f) { return now - f.start > options_.flood_window; });
    Flood& flood = floods_[address];
    suppressed = 0;
    if (flood.count == 0 || now - flood.start > options_.flood_window) {
        suppressed = flood.suppressed;
        flood = {now, 0, 0};
    }
    if (++flood.count <= options_.max_unauthenticated) return true;
    ++flood.suppressed;
    return false;
}

void AuthGate::count_failure(const std::string& address, const std::string& header) {
    // Only distinct wrong tokens count: a missing header is a client that is not set up yet,
    // and the same wrong token again is a stale one, not a guess.
    if (header.empty()) return;
    const std::string hash = sha256_hex(header);
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    forget_some(failures_, options_.max_addresses,
                [&](const Failures& f) { return now - f.first > options_.failure_window; });
    auto& f = failures_[address];
    if (f.wrong_tokens.empty()) f.first = now;
    if (std::find(f.wrong_tokens.begin(), f.wrong_tokens.end(), hash) == f.wrong_tokens.end())
        f.wrong_tokens.push_back(hash);
}

std::optional<Caller> AuthGate::admit(const httplib::Request& req, httplib::Response& res) {
    if (req.has_header(kVersionHeader)) {
        int theirs = std::atoi(req.get_header_value(kVersionHeader).c_str());
        std::string mismatch = protocol_mismatch(kProtocolVersion, theirs, true);
        if (!mismatch.empty()) {
            send_error(res, 426, "incompatible_version", mismatch);
            return std::nullopt;
        }
    }
    res.set_header(kVersionHeader, std::to_string(kProtocolVersion));
    if (req.path == routes::kHealth.pattern) return Caller{};

    const std::string header = req.get_header_value("Authorization");
    std::optional<TokenInfo> token;
    if (header.rfind("Bearer ", 0) == 0) token = tokens_->verify(header.substr(7));
    // A valid token always passes: the lock-out slows down guessers from an address, never
    // the other users who share it (every RDP user of a server comes from one address).
    if (token) return Caller{token->name, token->role};
    int suppressed = 0;
    if (!within_flood_budget(req.remote_addr, suppressed)) {
        res.set_header("Retry-After", std::to_string(options_.flood_window.count()));
        send_error(res, 429, "too_many_requests",
                   "too many requests without a valid token from this address");
        return std::nullopt;
    }
    if (audit_ && suppressed > 0)
        audit_("-", "auth_failed_unlogged",
               req.remote_addr + " " + std::to_string(suppressed) +
                   " more requests without a valid token were refused unlogged");
    if (locked_out(req.remote_addr, res)) return std::nullopt;
    count_failure(req.remote_addr, header);
    if (audit_) audit_("-", "auth_failed", req.remote_addr + " " + req.method + " " + req.path);
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, 401, "unauthorized",
               header.empty() ? "missing 'Authorization: Bearer <token>' (create one with: "
                                "crucible agent token create)"
                              : "invalid token (mistyped, revoked or expired)");
    return std::nullopt;
}

}  // namespace crucible::net
