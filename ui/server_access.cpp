#include "ui/server_access.h"

#include "core/base/error.h"
#include "core/base/secret_store.h"

namespace crucible::ui {

std::string secret_key_for(const std::string& url) {
    return "agent:" + url;
}

net::RemoteEndpoint endpoint_for(const store::ServerInfo& server) {
    net::RemoteEndpoint ep;
    ep.url = server.url;
    ep.fingerprint = server.tls_fingerprint;
    if (auto token = SecretStore::open_default()->get(secret_key_for(server.url)))
        ep.token = *token;
    return ep;
}

std::int64_t add_server(store::Project& project, const std::string& name, const std::string& url,
                        const std::string& token, const std::string& fingerprint) {
    if (name.empty()) throw InputError("name", "give the server a name");
    const net::ParsedUrl parsed = net::parse_url(url);
    if (parsed.https && fingerprint.empty())
        throw InputError("url", "an https server needs its confirmed certificate fingerprint");
    store::ServerInfo info;
    info.name = name;
    info.url = url;
    info.tls_fingerprint = fingerprint;
    const auto id = store::add_server(project, info);
    if (!token.empty()) SecretStore::open_default()->put(secret_key_for(url), token);
    return id;
}

}  // namespace crucible::ui
