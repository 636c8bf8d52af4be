// `crucible dataset synth OUT --train N --val M --classes K --imgsz S --seed X`: writes a
// deterministic synthetic detection dataset (shapes on cluttered backgrounds, exact labels) in
// the Ultralytics layout. The same arguments give byte-identical files.
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/cli_parser.h"
#include "app/cli/command.h"
#include "core/base/file_io.h"
#include "core/data/synth/synth.h"

namespace crucible::cli {
namespace {

int run_synth(const std::vector<std::string>& args) {
    data::SynthOptions o;
    std::string out;
    CLI::App app{
        "Writes OUT/data.yaml, OUT/images/{train,val}/*.jpg and OUT/labels/{train,val}/*.txt:\n"
        "coloured shapes (one class per shape: circle, rectangle, triangle, star, cross, diamond,\n"
        "hexagon, ring, ellipse, arrow) on cluttered backgrounds with exact boxes.",
        "crucible dataset synth"};
    app.add_option("OUT", out, "output folder")->required();
    app.add_option("--train", o.train, "train images")
        ->capture_default_str()
        ->check(CLI::Range(0, 10'000'000));
    app.add_option("--val", o.val, "val images")
        ->capture_default_str()
        ->check(CLI::Range(0, 10'000'000));
    app.add_option("--classes", o.classes, "classes")
        ->capture_default_str()
        ->check(CLI::Range(1, data::synth_max_classes()));
    app.add_option("--imgsz", o.imgsz, "image size in pixels")
        ->capture_default_str()
        ->check(CLI::Range(32, 8192));
    app.add_option("--seed", o.seed, "seed (the same seed writes the same bytes)")
        ->capture_default_str()
        ->check(non_negative());
    app.add_option("--max-objects", o.max_objects, "most shapes in one image")
        ->capture_default_str()
        ->check(CLI::Range(1, 100));
    app.add_option("--quality", o.jpeg_quality, "JPEG quality")
        ->capture_default_str()
        ->check(CLI::Range(1, 100));
    if (parse_words(app, args) == Parsed::HelpPrinted) return 0;
    const auto yaml = data::write_synth_dataset(path_from_utf8(out), o);
    std::printf("wrote %d train + %d val images (%d classes, %d px, seed %llu): %s\n", o.train,
                o.val, o.classes, o.imgsz, static_cast<unsigned long long>(o.seed),
                path_to_utf8(yaml).c_str());
    return 0;
}

RegisterSubcommand reg({"dataset", "synth", "write a deterministic synthetic detection dataset",
                        &run_synth});

}  // namespace
}  // namespace crucible::cli
