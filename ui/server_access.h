#pragma once
// The studio's servers are the user's one registry of agents (net::RemoteConfig: remotes.json,
// the same file, names and certificate pinning as `crucible remote`), with each token in the
// SecretStore (never in the project file or a log). A server is added after its first-contact TLS
// fingerprint was confirmed by the user (as SSH does). A project names the server of each run;
// servers an older project kept itself are moved into the registry when it is opened.
#include <QString>
#include <optional>
#include <string>
#include <vector>

#include "core/net/api_client.h"
#include "core/net/remote_config.h"

namespace crucible::store {
class Project;
}

namespace crucible::ui {

// The registry's servers, in the order they were added; an unreadable remotes.json throws
// InputError naming the file.
std::vector<net::RemoteEntry> list_servers();
// A refusal told as what it is, for the status bar: "invalid token", "locked out: …" (too many
// wrong tokens from this address), "certificate changed", "unreachable", "incompatible
// version"; empty for any other failure.
QString server_problem(const net::ApiError& error);
std::optional<net::RemoteEntry> find_server(const std::string& name);
// Validates (InputError naming "name", "url" or "fingerprint"), keeps the token in the
// SecretStore and the server in the registry.
void add_server(const std::string& name, const std::string& url, const std::string& token,
                const std::string& fingerprint);
// A new token for a server (the old one was wrong or revoked); InputError for an unknown name.
void set_server_token(const std::string& name, const std::string& token);
// A server moved: the entry keeps its name and token, takes `url` and its certificate's
// `fingerprint` ("" for plain HTTP). InputError for an unknown name or a bad URL (the entry is
// then unchanged).
void change_server_url(const std::string& name, const std::string& url,
                       const std::string& fingerprint);
// Forgets a server and its token (other entries for the same agent keep theirs). Runs that name
// it keep the name; InputError for an unknown name.
void remove_server(const std::string& name);
// Moves the servers that `project` kept itself (schema version 3 and before) into the registry:
// one already there under the same name and URL is skipped; a name taken by another URL is
// imported as "<name>-2" (-3, ...) and the project's runs follow it; a moved server leaves the
// project. Returns a line per server moved or refused, for the log.
std::vector<std::string> import_project_servers(store::Project& project);

}  // namespace crucible::ui
