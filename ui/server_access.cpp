#include "ui/server_access.h"

#include <QObject>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/store/run_store.h"

namespace crucible::ui {

QString server_problem(const net::ApiError& error) {
    switch (error.kind()) {
        case net::ApiErrorKind::Unauthorized:
        case net::ApiErrorKind::Forbidden:
            return QObject::tr("invalid token");
        case net::ApiErrorKind::RateLimited:
            return QObject::tr("locked out: too many wrong tokens from this address, try later");
        case net::ApiErrorKind::CertificateMismatch:
            return QObject::tr("certificate changed");
        case net::ApiErrorKind::Unreachable:
            return QObject::tr("unreachable");
        case net::ApiErrorKind::Incompatible:
            return QObject::tr("incompatible version");
        default:
            return {};
    }
}

std::vector<net::RemoteEntry> list_servers() {
    return net::RemoteConfig::load(net::default_remotes_file()).remotes();
}

std::optional<net::RemoteEntry> find_server(const std::string& name) {
    return net::RemoteConfig::load(net::default_remotes_file()).find(name);
}

void add_server(const std::string& name, const std::string& url, const std::string& token,
                const std::string& fingerprint) {
    if (name.empty()) throw InputError("name", "give the server a name");
    const auto file = net::default_remotes_file();
    auto registry = net::RemoteConfig::load(file);
    const net::RemoteEntry entry{name, url, fingerprint};
    registry.add(entry);  // validates; a taken name is refused
    if (!token.empty()) net::set_remote_token(entry, token);
    registry.save(file);
}

void set_server_token(const std::string& name, const std::string& token) {
    const auto registry = net::RemoteConfig::load(net::default_remotes_file());
    net::set_remote_token(registry.require(name), token);
}

void change_server_url(const std::string& name, const std::string& url,
                       const std::string& fingerprint) {
    const auto file = net::default_remotes_file();
    auto registry = net::RemoteConfig::load(file);
    const net::RemoteEntry old = registry.require(name);
    const auto token = net::remote_token(old);
    registry.remove(name);
    const net::RemoteEntry moved{name, url, fingerprint};
    registry.add(moved);  // validates before anything is saved
    registry.save(file);
    if (token) net::set_remote_token(moved, *token);
}

void remove_server(const std::string& name) {
    const auto file = net::default_remotes_file();
    auto registry = net::RemoteConfig::load(file);
    const net::RemoteEntry entry = registry.require(name);
    registry.remove(name);
    registry.save(file);
    net::set_remote_token(entry, "");
}

std::vector<std::string> import_project_servers(store::Project& project) {
    const auto legacy = store::legacy_servers(project);
    std::vector<std::string> lines;
    if (legacy.empty() || project.read_only()) return lines;
    const auto file = net::default_remotes_file();
    auto registry = net::RemoteConfig::load(file);
    bool changed = false;
    for (const auto& old : legacy) {
        net::RemoteEntry entry{old.name, old.url, old.tls_fingerprint};
        while (!entry.url.empty() && entry.url.back() == '/')
            entry.url.pop_back();
        const auto same = registry.find(entry.name);
        if (same && same->url == entry.url) {
            store::forget_legacy_server(project, old.name);
            continue;
        }
        for (int n = 2; registry.find(entry.name); ++n)
            entry.name = old.name + "-" + std::to_string(n);
        try {
            registry.add(entry);
        } catch (const InputError& e) {
            lines.push_back("server '" + old.name + "' of the project not moved to " +
                            path_to_utf8(file) + ": " + e.what());
            continue;
        }
        if (entry.name != old.name) store::rename_run_server(project, old.name, entry.name);
        store::forget_legacy_server(project, old.name);
        lines.push_back("server '" + old.name + "' (" + entry.url + ") moved to " +
                        path_to_utf8(file) +
                        (entry.name == old.name ? "" : " as '" + entry.name + "'"));
        changed = true;
    }
    if (changed) registry.save(file);
    return lines;
}

}  // namespace crucible::ui
