#pragma once
// `crucible-studio --demo`: a demo project with a synthetic detection dataset (core/data's
// generator) and three recorded example runs that differ in one option each, so the first window
// shows a dataset, a run setup, curves and a run table without a server. The runs' events are
// generated here (decaying losses, the first with a resume rollback) and say so in their log
// line; nothing is trained.
#include <QString>
#include <filesystem>
#include <string>

namespace crucible::ui {

struct DemoOptions {
    int train_images = 48;
    int val_images = 12;
    int classes = 4;
    int imgsz = 320;
    int epochs = 30;
    std::string task = "demo";  // task id recorded on the example run
};

// Creates `folder`/demo.crucible (dataset under `folder`/synth) unless it exists; returns the
// project file. Throws crucible::Error on failure.
std::filesystem::path ensure_demo_project(const std::filesystem::path& folder,
                                          const DemoOptions& options = {});

}  // namespace crucible::ui
