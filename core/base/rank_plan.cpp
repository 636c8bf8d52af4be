#include "core/base/rank_plan.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/base/error.h"

namespace crucible {
namespace {

std::string trimmed_lower(const std::string& raw) {
    std::string text;
    for (char c : raw)
        if (!std::isspace(static_cast<unsigned char>(c)))
            text += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = text.find(',', start);
        parts.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
        if (comma == std::string::npos) return parts;
        start = comma + 1;
    }
}

int parse_int(const std::string& flag, const std::string& text, int min, int max) {
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
        throw InputError(flag, "'" + text + "' is not a whole number from " + std::to_string(min) +
                                   " to " + std::to_string(max));
    return value;
}

constexpr const char* kRank = "--rank";
constexpr const char* kWorldSize = "--world-size";
constexpr const char* kStore = "--store";
constexpr const char* kRankDevice = "--rank-device";
constexpr const char* kLauncher = "--launcher";
constexpr const char* kRankHost = "--rank-host";
constexpr const char* kMeshReady = "--mesh-ready";

}  // namespace

HostPort parse_host_port(const std::string& where, const std::string& text) {
    const auto colon = text.rfind(':');
    HostPort out;
    const char* port_end = text.data() + text.size();
    const auto [end, ec] = colon == std::string::npos
                               ? std::from_chars_result{text.data(), std::errc::invalid_argument}
                               : std::from_chars(text.data() + colon + 1, port_end, out.port);
    if (colon == std::string::npos || colon == 0 || ec != std::errc() || end != port_end ||
        out.port < 1 || out.port > 65535)
        throw InputError(where, "'" + text + "' is not HOST:PORT (a port from 1 to 65535)");
    out.host = text.substr(0, colon);
    return out;
}

RankPlan plan_ranks(const std::string& device, int ranks) {
    if (ranks < 1) throw InputError("ranks", "must be at least 1");
    const std::string text = trimmed_lower(device);
    RankPlan plan;
    if (text.empty() || text == "auto" || text == "cpu") {
        if (ranks > 1 && text != "cpu")
            throw InputError("ranks", "ranks=" + std::to_string(ranks) +
                                          " needs device=cpu, or a list of GPUs such as device=0,1 "
                                          "(one rank per GPU)");
        plan.devices.assign(static_cast<std::size_t>(ranks), text);
        return plan;
    }
    const auto parts = split_commas(text);
    for (const auto& part : parts) {
        if (part.empty())
            throw InputError("device", "'" + device + "' has an empty entry in its list");
        if (std::count(parts.begin(), parts.end(), part) > 1)
            throw InputError("device", "'" + device + "' names " + part + " twice");
    }
    if (parts.size() == 1 && ranks > 1)
        throw InputError("ranks", "ranks=" + std::to_string(ranks) + " on one GPU (" + device +
                                      "): data-parallel ranks need one device each; list the "
                                      "GPUs instead, e.g. device=0,1");
    if (parts.size() > 1 && ranks != 1 && ranks != static_cast<int>(parts.size()))
        throw InputError("ranks", "ranks=" + std::to_string(ranks) + " but device=" + device +
                                      " lists " + std::to_string(parts.size()) +
                                      " GPUs: one rank per GPU (leave ranks out)");
    plan.devices = parts;
    return plan;
}

ShardRange shard_range(std::int64_t begin, std::int64_t end, int rank, int world_size) {
    const std::int64_t length = end - begin;
    return {begin + length * rank / world_size, begin + length * (rank + 1) / world_size};
}

std::vector<std::string> rank_arguments(const RankAddress& a) {
    std::vector<std::string> args = {kRank,       std::to_string(a.rank),
                                     kWorldSize,  std::to_string(a.world_size),
                                     kStore,      a.store_host + ":" + std::to_string(a.store_port),
                                     kRankDevice, a.device};
    if (!a.host.empty()) {
        args.emplace_back(kRankHost);
        args.push_back(a.host);
    }
    if (!a.mesh_ready.empty()) {
        args.emplace_back(kMeshReady);
        args.push_back(a.mesh_ready);
    }
    if (a.launcher_pid > 0) {
        args.emplace_back(kLauncher);
        args.push_back(std::to_string(a.launcher_pid) + ":" + a.launcher_token);
    }
    return args;
}

bool take_rank_argument(const std::vector<std::string>& args, std::size_t& i,
                        RankAddress& address) {
    const std::string& flag = args[i];
    if (flag != kRank && flag != kWorldSize && flag != kStore && flag != kRankDevice &&
        flag != kLauncher && flag != kRankHost && flag != kMeshReady)
        return false;
    if (i + 1 >= args.size()) throw InputError(flag, "needs a value");
    const std::string& value = args[i + 1];
    if (flag == kRank) {
        address.rank = parse_int(flag, value, 0, 65535);
    } else if (flag == kWorldSize) {
        address.world_size = parse_int(flag, value, 1, 65536);
    } else if (flag == kStore) {
        const HostPort store = parse_host_port(flag, value);
        address.store_host = store.host;
        address.store_port = store.port;
    } else if (flag == kLauncher) {  // PID:TOKEN
        const auto colon = value.find(':');
        const std::string pid = value.substr(0, colon);
        long parsed = 0;
        const auto [end, ec] = std::from_chars(pid.data(), pid.data() + pid.size(), parsed);
        if (ec != std::errc() || end != pid.data() + pid.size() || parsed <= 0)
            throw InputError(flag, "'" + value + "' is not PID:TOKEN");
        address.launcher_pid = parsed;
        address.launcher_token = colon == std::string::npos ? "" : value.substr(colon + 1);
    } else if (flag == kRankHost) {
        address.host = value;
    } else if (flag == kMeshReady) {
        if (value.empty()) throw InputError(flag, "needs a file");
        address.mesh_ready = value;
    } else {
        address.device = value;
    }
    i += 1;
    return true;
}

Json ServerShare::to_json() const {
    Json json = {{"first_rank", first_rank},
                 {"world_size", world_size},
                 {"store", store_host + ":" + std::to_string(store_port)},
                 {"host", host},
                 {"key", key}};
    if (gate_port > 0) json["gate_port"] = gate_port;
    if (!gloo_transport.empty()) json["gloo_transport"] = gloo_transport;
    return json;
}

ServerShare ServerShare::from_json(const Json& json, const std::string& where) {
    if (!json.is_object()) throw InputError(where, "expected an object");
    ServerShare s;
    const auto whole = [&](const char* field, int min, int max) {
        const long long v = get_integer(json, field, where);
        if (v < min || v > max)
            throw InputError(where, std::string("field '") + field + "' must be from " +
                                        std::to_string(min) + " to " + std::to_string(max));
        return static_cast<int>(v);
    };
    s.world_size = whole("world_size", 2, 65536);
    s.first_rank = whole("first_rank", 0, s.world_size - 1);
    const HostPort store =
        parse_host_port(where + ": field 'store'", get_string(json, "store", where));
    s.store_host = store.host;
    s.store_port = store.port;
    if (json.contains("host")) s.host = get_string(json, "host", where);
    if (json.contains("gate_port")) s.gate_port = whole("gate_port", 1, 65535);
    s.key = get_string(json, "key", where);
    const bool hex = std::all_of(s.key.begin(), s.key.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
    if (s.key.size() != kShareKeyHexDigits || !hex)
        throw InputError(where, "field 'key' must be " + std::to_string(kShareKeyHexDigits) +
                                    " lower-case hex digits (the run's rendezvous key)");
    if (json.contains("gloo_transport")) {
        s.gloo_transport = get_string(json, "gloo_transport", where);
        if (s.gloo_transport != "tcp" && s.gloo_transport != "uv")
            throw InputError(where, "field 'gloo_transport' must be tcp or uv");
    }
    return s;
}

void check_rank_address(const RankAddress& a) {
    if (a.rank >= a.world_size)
        throw InputError(kRank, std::to_string(a.rank) + " is outside a world of " +
                                    std::to_string(a.world_size) + " ranks");
    if (a.world_size > 1 && a.store_port == 0)
        throw InputError(kStore, "a distributed rank needs the rendezvous store's HOST:PORT");
}

}  // namespace crucible
