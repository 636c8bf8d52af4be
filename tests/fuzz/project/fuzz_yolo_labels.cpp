// libFuzzer target for the YOLO label-row parser (core/data/formats/yolo_labels.h). Any bytes
// must parse into boxes and problems without crashing; every box kept must pass the checks the
// parser promises (finite, inside [0, 1], positive size, known class), and an input with an
// error must report it with "file:line".
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/error.h"
#include "core/data/formats/yolo_labels.h"
#include "tests/fuzz/project/fuzz_require.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const int class_count = size > 0 ? 1 + data[0] % 8 : 3;
    const auto parsed = crucible::data::parse_yolo_labels(text, "fuzz.txt", class_count);
    for (const auto& box : parsed.boxes) {
        require(box.cls >= 0 && box.cls < class_count);
        for (double v : {box.cx, box.cy, box.w, box.h})
            require(std::isfinite(v) && v >= 0 && v <= 1);
        require(box.w > 0 && box.h > 0);
        // A kept box written and read back is the same box.
        const auto again = crucible::data::parse_yolo_labels(crucible::data::format_yolo_row(box),
                                                             "r.txt", class_count);
        require(again.boxes.size() == 1 && again.boxes[0] == box);
    }
    for (const auto& problem : parsed.problems)
        require(problem.where.rfind("fuzz.txt:", 0) == 0 && !problem.what.empty());
    require(parsed.problems.size() <= 101);
    return 0;
}
