// The code a training step runs reads device values only through core/engine/host_read.h, whose
// reads the run tests count: a stray .item() or LibTorch's clip_grad_norm_ (which returns the norm
// as a double) would be a device synchronisation in every step on a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string read_source(const char* relative) {
    std::ifstream in(std::filesystem::path(CRUCIBLE_SOURCE_DIR) / relative);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Lines of `text` that contain one of the patterns, as "line: text".
std::string host_reads_in(const std::string& text) {
    std::string found;
    std::istringstream lines(text);
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
        ++number;
        if (line.find("//") != std::string::npos) line = line.substr(0, line.find("//"));
        for (const char* pattern : {".item<", ".item()", "clip_grad_norm_(", ".cpu()", "kCPU"})
            if (line.find(pattern) != std::string::npos)
                found += std::to_string(number) + ": " + line + "\n";
    }
    return found;
}

TEST(StepSync, StepCodeHasNoHostReadOfItsOwn) {
    for (const char* file :
         {"core/engine/trainer.cpp", "core/engine/loss_scaler.cpp", "core/engine/grad_clip.cpp",
          "core/engine/device_loss_sums.cpp", "core/engine/ema.cpp"}) {
        const std::string text = read_source(file);
        ASSERT_FALSE(text.empty()) << file;
        EXPECT_EQ(host_reads_in(text), "") << file;
    }
}

TEST(StepSync, TheScanFindsAPlantedRead) {
    EXPECT_EQ(host_reads_in("auto x = loss.item<double>();\n// loss.item()\n"),
              "1: auto x = loss.item<double>();\n");
}

}  // namespace
