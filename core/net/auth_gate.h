#pragma once
// Who may use the agent: every route but /v1/health needs `Authorization: Bearer <token>`.
// The gate checks the client's protocol version, verifies the token, slows down guessers and
// hands the route the caller (the token's name and role). Transport-free: the agent's server
// calls admit() once per request, before the route.
#include <httplib.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/net/token_store.h"

namespace crucible::net {

// The authenticated client of one request, and what its role lets it do with something owned
// by `owner` (the token name that submitted a job, pushed a dataset or uploaded a blob):
// - admin: everything, everyone's;
// - user: submits, and sees, controls and downloads their own work only;
// - viewer: sees every job's state and curves (a wall screen, a team lead) and changes nothing.
struct Caller {
    std::string name;  // the token's name; empty for /v1/health
    TokenRole role = TokenRole::Viewer;

    bool is_admin() const { return role == TokenRole::Admin; }
    // Submits jobs, pushes datasets, uploads.
    bool may_write() const { return role != TokenRole::Viewer; }
    // Lists and reads a job's state and events.
    bool may_see(const std::string& owner) const {
        return is_admin() || role == TokenRole::Viewer || owner == name;
    }
    // Pauses, cancels, deletes; downloads artifacts; uses a dataset or blob.
    bool may_use(const std::string& owner) const {
        return is_admin() || (role == TokenRole::User && owner == name);
    }
};

// For a long answer (an event stream): whether the token that opened it is still valid, asked
// of the store at most once per period, so revoking or expiring a token ends its open streams
// within seconds without a file check per event.
class TokenWatch {
  public:
    TokenWatch(std::shared_ptr<const TokenStore> tokens, std::string name,
               std::chrono::milliseconds period = std::chrono::seconds(2));
    bool still_valid();

  private:
    std::shared_ptr<const TokenStore> tokens_;
    std::string name_;
    std::chrono::milliseconds period_;
    std::chrono::steady_clock::time_point next_check_{};
    bool valid_ = true;
};

struct AuthGateOptions {
    // Distinct wrong tokens per address within failure_window: a guesser is slowed down
    // after this many guesses, while a client that repeats one stale token (a studio polling
    // with an old one) never locks out the other users of its address.
    int max_failures = 5;
    std::chrono::seconds failure_window{300};
    // Requests without a valid token per address and flood_window: the rest are answered 429
    // at once and not written to the audit log one by one (one line then tells how many).
    int max_unauthenticated = 30;
    std::chrono::seconds flood_window{10};
    // Addresses remembered at most (failures and floods); the oldest are forgotten first.
    std::size_t max_addresses = 10000;
};

class AuthGate {
  public:
    using AuditFn = std::function<void(const std::string& who, const std::string& action,
                                       const std::string& detail)>;

    AuthGate(std::shared_ptr<TokenStore> tokens, AuthGateOptions options, AuditFn audit = {});

    // The caller when `req` may go on to its route; otherwise the answer (426, 401 or 429) is
    // written into `res` and the result is empty. /v1/health passes as an anonymous caller.
    std::optional<Caller> admit(const httplib::Request& req, httplib::Response& res);

  private:
    bool locked_out(const std::string& address, httplib::Response& res);
    void count_failure(const std::string& address, const std::string& header);
    // Counts a request without a valid token; false when the address is over its budget.
    // `suppressed` receives how many went unlogged in the window that just ended.
    bool within_flood_budget(const std::string& address, int& suppressed);

    std::shared_ptr<TokenStore> tokens_;
    AuthGateOptions options_;
    AuditFn audit_;
    std::mutex mutex_;
    struct Failures {
        std::vector<std::string> wrong_tokens;  // SHA-256 of each distinct wrong token
        std::chrono::steady_clock::time_point first;
    };
    std::map<std::string, Failures> failures_;  // by remote address
    struct Flood {
        std::chrono::steady_clock::time_point start;
        int count = 0;
        int suppressed = 0;
    };
    std::map<std::string, Flood> floods_;  // by remote address
};

}  // namespace crucible::net
