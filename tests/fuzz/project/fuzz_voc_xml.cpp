// libFuzzer target for the Pascal VOC XML reader (core/data/formats/xml_reader.h, on pugixml).
// Any bytes must either be rejected with crucible::InputError or give a tree no deeper than the
// limit whose names, attribute values and texts are valid UTF-8, each element on a line >= 1.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/formats/xml_reader.h"
#include "tests/fuzz/project/fuzz_require.h"

namespace {

constexpr std::size_t kMaxDepth = 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024) return 0;  // VOC files are small; keep runs fast
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const crucible::data::XmlElement root =
            crucible::data::parse_xml(text, "fuzz.xml", kMaxDepth);
        std::vector<std::pair<const crucible::data::XmlElement*, std::size_t>> stack{{&root, 1}};
        while (!stack.empty()) {
            const auto [e, depth] = stack.back();
            stack.pop_back();
            require(depth <= kMaxDepth);
            require(e->line >= 1);
            require(crucible::is_valid_utf8(e->name) && !e->name.empty());
            require(crucible::is_valid_utf8(e->text));
            for (const auto& [name, value] : e->attributes)
                require(crucible::is_valid_utf8(name) && crucible::is_valid_utf8(value));
            for (const auto& c : e->children)
                stack.push_back({&c, depth + 1});
        }
    } catch (const crucible::InputError&) {
        return 0;
    }
    return 0;
}
