// libFuzzer target for the ONNX model reader (core/base/onnx_model_reader.h). Any input must
// either be rejected with crucible::InputError or parse; a parsed model must survive a
// write/read round trip: writing it again and reading that back gives the same bytes once more.
// Anything else (a crash, a sanitizer report, another exception, a mismatch) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/error.h"
#include "core/base/onnx_model.h"
#include "core/base/onnx_model_reader.h"
#include "tests/fuzz/project/fuzz_require.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    crucible::onnx::Model model;
    try {
        model = crucible::onnx::parse_onnx_model(bytes, "fuzz");
    } catch (const crucible::InputError&) {
        return 0;  // rejected with a message: fine
    }
    // What the reader accepts the writer must write (it throws on a tensor whose size is off),
    // and the reader must read that back to the same model.
    const std::string written = crucible::onnx::serialize_onnx_model(model);
    const auto again = crucible::onnx::parse_onnx_model(written, "fuzz-again");
    require(crucible::onnx::serialize_onnx_model(again) == written);
    return 0;
}
