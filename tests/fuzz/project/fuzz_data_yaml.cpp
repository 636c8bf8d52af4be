// libFuzzer target for the Ultralytics data.yaml reader (core/data/formats/data_yaml.h). Any
// bytes must either be rejected with crucible::InputError or give at least one class name and a
// train or val entry, every entry lexically inside the dataset root (path traversal is refused).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/formats/data_yaml.h"
#include "core/data/formats/path_text.h"
#include "tests/fuzz/project/fuzz_require.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024)
        return 0;  // the loader refuses data.yaml files over 1 MiB; keep runs fast
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::filesystem::path yaml = "/fuzz-root/ds/data.yaml";
    try {
        const auto spec = crucible::data::parse_data_yaml(text, yaml);
        require(!spec.names.empty());
        require(spec.splits.count("train") || spec.splits.count("val"));
        for (const auto& [split, entries] : spec.splits) {
            require(split == "train" || split == "val" || split == "test");
            for (const auto& entry : entries)
                require(crucible::data::detail::lexically_inside(spec.root, entry));
        }
        if (!spec.root.empty()) require(spec.root.is_absolute());
    } catch (const crucible::InputError&) {
        return 0;
    }
    return 0;
}
