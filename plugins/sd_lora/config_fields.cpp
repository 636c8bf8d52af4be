#include "plugins/sd_lora/config_fields.h"

#include "core/base/error.h"

namespace crucible::sd {

void read_int_field(const Json& j, const char* key, std::int64_t& out, std::int64_t lo,
                    std::int64_t hi, const std::string& where) {
    if (!j.contains(key) || j[key].is_null()) return;
    std::string what = "'";
    what.append(key).append("'");
    if (!j[key].is_number_integer()) throw InputError(where, what.append(" must be an integer"));
    const auto v = j[key].get<std::int64_t>();
    if (v < lo || v > hi)
        throw InputError(where, what.append(" = ")
                                    .append(std::to_string(v))
                                    .append(" is outside ")
                                    .append(std::to_string(lo))
                                    .append("..")
                                    .append(std::to_string(hi)));
    out = v;
}

void read_block_out_channels(const Json& j, std::vector<std::int64_t>& out,
                             const std::string& where) {
    if (!j.contains("block_out_channels")) return;
    const Json& b = j["block_out_channels"];
    const char* what = "'block_out_channels' must be a list of 1..8 integers";
    if (!b.is_array() || b.empty() || b.size() > 8) throw InputError(where, what);
    out.clear();
    for (const auto& v : b) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 8192)
            throw InputError(where, what);
        out.push_back(v.get<std::int64_t>());
    }
}

}  // namespace crucible::sd
