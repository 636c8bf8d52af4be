#include "ui/run_files.h"

#include <algorithm>
#include <thread>

#include "core/base/file_io.h"
#include "core/base/json.h"

namespace crucible::ui {

namespace fs = std::filesystem;

namespace {

// Resume state of training (optimizer moments, RNG): large, and only the agent resumes from it.
bool worth_keeping(const std::string& path) {
    return path.rfind("checkpoints/", 0) != 0;
}

}  // namespace

FetchedRunFiles fetch_run_files(const RunPlace& place, const fs::path& dest, int tries,
                                std::chrono::milliseconds pause) {
    FetchedRunFiles out;
    if (!place.remote()) return out;
    net::ApiClient client(place.endpoint);
    std::vector<net::ArtifactEntry> entries;
    for (int attempt = 1;; ++attempt) {
        try {
            entries = client.artifacts(place.job);
            break;
        } catch (const std::exception& e) {
            if (attempt >= tries) {
                out.failed.push_back(std::string("the file list: ") + e.what());
                return out;
            }
            std::this_thread::sleep_for(pause * (1 << (attempt - 1)));
        }
    }
    for (const auto& entry : entries) {
        if (!worth_keeping(entry.path)) continue;
        const fs::path rel = path_from_utf8(entry.path);
        const fs::path target = dest / rel;
        if (rel.is_absolute() || !is_path_inside(dest, target)) {
            out.failed.push_back(entry.path + ": leaves the run's folder");
            continue;
        }
        std::error_code ec;
        if (fs::is_regular_file(target, ec) && fs::file_size(target, ec) == entry.size) {
            ++out.kept;
            continue;
        }
        fs::create_directories(target.parent_path(), ec);
        for (int attempt = 1;; ++attempt) {
            try {
                // A cut download resumes from its .crucible-part on the next try.
                out.bytes += client.download(place.job, entry.path, target, /*overwrite=*/true);
                ++out.fetched;
                break;
            } catch (const std::exception& e) {
                if (attempt >= tries) {
                    out.failed.push_back(entry.path + ": " + e.what());
                    break;
                }
                std::this_thread::sleep_for(pause * (1 << (attempt - 1)));
            }
        }
    }
    if (out.failed.empty())
        write_file_atomically(dest / kRunFilesComplete, Json{{"agent", place.endpoint.url},
                                                             {"job", place.job},
                                                             {"files", out.fetched + out.kept}}
                                                                .dump() +
                                                            "\n");
    return out;
}

bool has_run_files(const fs::path& dest) {
    std::error_code ec;
    return fs::is_regular_file(dest / kRunFilesComplete, ec);
}

std::vector<fs::path> run_weight_files(const fs::path& dest) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dest, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const auto ext = it->path().extension();
        if (ext == ".safetensors" || ext == ".pt") out.push_back(it->path());
    }
    auto rank = [](const fs::path& p) {
        const std::string name = path_to_utf8(p.filename());
        return (p.extension() == ".safetensors" ? 0 : 2) +
               (name.find("best") != std::string::npos ? 0 : 1);
    };
    std::stable_sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
        return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
    });
    return out;
}

}  // namespace crucible::ui
