// Nothing in ui/ knows a task by name (DESIGN.md "Task plugins"): the generic form is the only
// way options reach the GUI. Fails when a task id appears in a ui/ source.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

TEST(UiSources, NoTaskIdInUi) {
    const std::filesystem::path ui = std::filesystem::path(CRUCIBLE_SOURCE_DIR) / "ui";
    int files = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(ui)) {
        const auto ext = entry.path().extension();
        if (ext != ".cpp" && ext != ".h") continue;
        ++files;
        std::ifstream in(entry.path());
        std::stringstream text;
        text << in.rdbuf();
        for (const char* id : {"detect.yolo", "llm.lora", "diffusion.sd_lora", "sd_lora", "yolov8"})
            EXPECT_EQ(text.str().find(id), std::string::npos)
                << entry.path() << " names the task '" << id << "'";
    }
    EXPECT_GT(files, 5);
}
