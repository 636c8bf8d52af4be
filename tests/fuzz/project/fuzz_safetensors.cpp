// libFuzzer target for the safetensors reader (core/base/safetensors.h). Any input must either
// be rejected with crucible::InputError or parse; a parsed file must survive a write/read
// round trip unchanged (same names, dtypes, shapes, bytes and metadata, and the writer lays
// out the same offsets). Anything else (a crash, a sanitizer report, another exception, a
// mismatch) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "core/base/error.h"
#include "core/base/safetensors.h"
#include "tests/fuzz/project/fuzz_require.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    std::optional<crucible::SafetensorsFile> file;
    try {
        file.emplace(crucible::SafetensorsFile::view(bytes, "fuzz"));
    } catch (const crucible::InputError&) {
        return 0;  // rejected with a message: fine
    }

    std::vector<crucible::SafetensorsTensorView> views;
    std::uint64_t covered = 0;
    for (const auto& t : file->tensors()) {
        const auto d = file->data(t);  // ASan checks the whole range when we compare below
        require(d.size() == t.byte_size());
        require(t.begin == covered);
        covered = t.end;
        require(file->find(t.name) == &t);
        views.push_back({t.name, t.dtype, t.shape, d});
    }
    require(covered == file->header().data_bytes);

    const std::string again = crucible::write_safetensors_bytes(views, file->metadata());
    const auto reread = crucible::SafetensorsFile::from_bytes(again, "fuzz-again");
    require(reread.names() == file->names());
    require(reread.metadata() == file->metadata());
    for (std::size_t i = 0; i < views.size(); ++i) {
        const auto& a = file->tensors()[i];
        const auto& b = reread.tensors()[i];
        require(a.dtype == b.dtype && a.shape == b.shape && a.begin == b.begin && a.end == b.end);
        const auto da = file->data(a);
        const auto db = reread.data(b);
        require(da.size() == db.size() &&
                (da.empty() || std::memcmp(da.data(), db.data(), da.size()) == 0));
    }
    return 0;
}
