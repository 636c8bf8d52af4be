#pragma once
// How the studio reaches a project's servers: the endpoint of a stored server with its token from
// the SecretStore (tokens never enter the project file or a log), and adding a server after the
// first-contact TLS fingerprint was confirmed by the user (as SSH does).
#include <string>

#include "core/net/api_client.h"
#include "core/store/run_store.h"

namespace crucible::ui {

std::string secret_key_for(const std::string& url);  // "agent:<url>"
// The server's endpoint; the token is empty when none is stored.
net::RemoteEndpoint endpoint_for(const store::ServerInfo& server);
// Validates the URL (InputError naming "url"), keeps the token in the SecretStore and the server
// (name, URL, confirmed fingerprint) in the project. Returns the server id.
std::int64_t add_server(store::Project& project, const std::string& name, const std::string& url,
                        const std::string& token, const std::string& fingerprint);

}  // namespace crucible::ui
