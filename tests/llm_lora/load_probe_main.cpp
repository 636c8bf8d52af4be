// llama_load_probe FOLDER fp32|nf4: loads a Llama folder on the CPU as the llm.lora task does
// (load_base_model) in a fresh process and prints how far the resident size rose above where it
// stood before the load ("peak_mb=<MB>"). A process of its own, so that memory freed by earlier
// work cannot hide a loader's peak (load_memory_test.cpp reads it).
#include <cstdio>
#include <string>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/process_info.h"
#include "plugins/llm_lora/llama_load.h"

int main(int argc, char** argv) {
    using namespace crucible;
    if (argc != 3) {
        std::fprintf(stderr, "usage: llama_load_probe FOLDER fp32|nf4\n");
        return 2;
    }
    try {
        llm::BaseModelLoad how;
        how.nf4 = std::string(argv[2]) == "nf4";
        torch::ones({1});  // LibTorch's own start-up memory stays out of the figure
        const std::int64_t start = resident_bytes();
        reset_peak_resident_bytes();
        const auto model = llm::load_base_model(path_from_utf8(argv[1]), how);
        std::printf("peak_mb=%.1f\n",
                    static_cast<double>(peak_resident_bytes() - start) / (1 << 20));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llama_load_probe: %s\n", e.what());
        return 1;
    }
}
