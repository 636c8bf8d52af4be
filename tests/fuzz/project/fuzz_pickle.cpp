// libFuzzer target for the PyTorch checkpoint reader's torch-free half: the ZIP reader, the
// restricted unpickler and the module walker (core/engine/pt/). Each input is tried twice: as
// a bare pickle (every persistent id resolves to a 1 MiB storage) and as a whole .pt archive.
// It must be rejected with crucible::InputError or accepted; for accepted input every tensor
// descriptor must lie inside its storage. Anything else (a crash, a sanitizer report, another
// exception, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/error.h"
#include "core/engine/pt/pickle.h"
#include "core/engine/pt/pt_archive.h"
#include "core/engine/pt/zip_reader.h"
#include "tests/fuzz/project/fuzz_require.h"

namespace {

using namespace crucible::engine;

// Re-checks the unpickler's promise: a view never reaches outside its storage.
void check_tensor(const pickle::Value* v) {
    require(v->kind == pickle::Kind::Tensor);
    const pickle::TensorData& t = *v->tensor;
    require(t.storage && t.storage->kind == pickle::Kind::Storage);
    require(t.sizes.size() == t.strides.size());
    std::uint64_t last = t.offset;
    bool empty = false;
    for (std::size_t i = 0; i < t.sizes.size(); ++i) {
        require(t.sizes[i] >= 0 && t.strides[i] >= 0);
        if (t.sizes[i] == 0)
            empty = true;
        else
            last += static_cast<std::uint64_t>(t.sizes[i] - 1) *
                    static_cast<std::uint64_t>(t.strides[i]);
    }
    if (!empty) require(last < t.storage->storage->numel);
}

pickle::UnpickleLimits fuzz_limits() {
    pickle::UnpickleLimits limits;
    limits.max_values = 200'000;
    limits.max_entries = 400'000;
    limits.max_memo = 200'000;
    return limits;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const WalkLimits walk_limits{16, 100'000, 32, 100'000};

    try {
        const pickle::PickleDocument doc = pickle::unpickle(
            bytes, "fuzz.pkl",
            [](const std::string&) -> std::optional<std::uint64_t> { return 1u << 20; },
            fuzz_limits());
        require(doc.root() != nullptr);
        (void)pickle_to_json(doc.root(), walk_limits);
    } catch (const crucible::InputError&) {
    }

    try {
        const PtArchive archive =
            open_pt_archive(std::make_shared<const std::string>(bytes), "fuzz.pt", fuzz_limits());
        for (const ZipEntry& e : archive.zip.entries())
            require(archive.zip.find(e.name) == &e);
        const PtModelInfo info = describe_pt_model(archive, walk_limits);
        for (const PtStateEntry& e : info.state) {
            check_tensor(e.tensor);
            const pickle::StorageData& s = *e.tensor->tensor->storage->storage;
            const std::string_view stored = archive.storage_bytes(s.key);
            require(stored.size() >= s.numel * pickle::storage_element_size(s.type));
        }
    } catch (const crucible::InputError&) {
    }
    return 0;
}
