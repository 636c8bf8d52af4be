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

void read_per_block_field(const Json& j, const char* key, std::vector<std::int64_t>& out,
                          std::size_t blocks, std::int64_t lo, std::int64_t hi,
                          const std::string& where) {
    if (!j.contains(key) || j[key].is_null()) return;
    if (!j[key].is_array()) {
        std::int64_t v = 0;
        read_int_field(j, key, v, lo, hi, where);
        out.assign(blocks, v);
        return;
    }
    std::string what = "'";
    what.append(key).append("' must list ").append(std::to_string(blocks));
    what.append(" integers in ").append(std::to_string(lo)).append("..").append(std::to_string(hi));
    what.append(", one per block");
    const Json& list = j[key];
    if (list.size() != blocks) throw InputError(where, what);
    out.clear();
    for (const auto& v : list) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
            throw InputError(where, what);
        out.push_back(v.get<std::int64_t>());
    }
}

}  // namespace crucible::sd
