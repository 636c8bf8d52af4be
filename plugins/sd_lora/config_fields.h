#pragma once
// Reading the fields of diffusers / Hugging Face config.json files (UNet, VAE, CLIP text encoder)
// with range checks that name the field.
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/json.h"

namespace crucible::sd {

// `out` = j[key] when present and not null; InputError(where, ...) naming the key when it is not
// an integer in [lo, hi].
void read_int_field(const Json& j, const char* key, std::int64_t& out, std::int64_t lo,
                    std::int64_t hi, const std::string& where);

// `out` = j["block_out_channels"] when present: a list of 1..8 integers in 1..8192.
void read_block_out_channels(const Json& j, std::vector<std::int64_t>& out,
                             const std::string& where);

// `out` = j[key] when present and not null: one integer in [lo, hi] for every block (diffusers
// writes SDXL's heads and transformer depths as lists) or a single one for all `blocks`.
void read_per_block_field(const Json& j, const char* key, std::vector<std::int64_t>& out,
                          std::size_t blocks, std::int64_t lo, std::int64_t hi,
                          const std::string& where);

}  // namespace crucible::sd
