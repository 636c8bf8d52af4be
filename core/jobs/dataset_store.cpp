#include "core/jobs/dataset_store.h"

#include <fstream>
#include <system_error>

#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/base/stored_dataset.h"

namespace crucible::jobs {
namespace fs = std::filesystem;

// Each push builds in <id>.partial-<random>/ and renames it into place when complete.
constexpr const char* kPartialMark = ".partial-";

DatasetStore::DatasetStore(fs::path dir, const BlobStore& blobs)
    : dir_(std::move(dir)), blobs_(blobs) {
    fs::create_directories(dir_);
}

bool DatasetStore::is_complete(const std::string& id) const {
    std::error_code ec;
    return BlobStore::is_valid_hash(id) && fs::exists(dir_ / id / kStoredDatasetComplete, ec);
}

bool DatasetStore::owned_by(const std::string& id, const std::string& owner) const {
    std::ifstream in(dir_ / (id + ".owners"), std::ios::binary);
    std::string line;
    while (std::getline(in, line))
        if (line == owner) return true;
    return false;
}

void DatasetStore::add_owner(const std::string& id, const std::string& owner) {
    if (owned_by(id, owner)) return;
    const auto file = dir_ / (id + ".owners");
    std::error_code ec;
    std::string text = fs::exists(file, ec) ? read_file_bytes(file) : std::string();
    write_file_atomically(file, text + owner + "\n");
}

bool DatasetStore::visible_to(const std::string& id, const net::Caller& caller) const {
    if (!is_complete(id)) return false;
    return caller.is_admin() || (caller.may_write() && owned_by(id, caller.name));
}

void DatasetStore::create(const DatasetManifest& manifest, const std::string& owner) {
    const std::string id = manifest.id();
    const fs::path dir = folder(id);
    std::error_code ec;
    if (!is_complete(id)) {
        // Each push builds in a folder of its own; the first to finish wins the rename.
        const fs::path temp = dir_ / (id + kPartialMark + random_hex(8));
        for (const auto& [rel, sha] : manifest.files) {
            const auto target = temp / rel;
            const auto blob = blobs_.path(sha);
            fs::create_directories(target.parent_path());
            fs::create_hard_link(blob, target, ec);
            if (ec == std::errc::file_exists) {
                // Never write through an existing `target`: it is a hard link to another stored
                // blob when two entries land on one name (names a case-insensitive file system
                // folds together), and copying over it would rewrite that blob in place for
                // every dataset sharing it. Removing the entry drops only this folder's name;
                // the blob keeps its bytes, and the name is linked (or copied) afresh.
                fs::remove(target);
                fs::create_hard_link(blob, target, ec);
            }
            if (ec) fs::copy_file(blob, target);  // no hard links here: a copy of its own
        }
        write_json_file(temp / kStoredDatasetManifest,
                        {{"name", manifest.name}, {"files", manifest.canonical}});
        write_file_atomically(temp / kStoredDatasetComplete, "");
        std::lock_guard lock(mutex_);
        if (is_complete(id)) {
            fs::remove_all(temp, ec);
        } else {
            fs::remove_all(dir, ec);  // a folder left without .complete by a crash
            fs::rename(temp, dir);
        }
    }
    std::lock_guard lock(mutex_);
    add_owner(id, owner);
}

std::vector<net::DatasetSummary> DatasetStore::list(const net::Caller& caller) const {
    std::vector<net::DatasetSummary> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
        const std::string id = path_to_utf8(e.path().filename());
        if (!e.is_directory(ec) || !visible_to(id, caller)) continue;
        Json m = read_json_file(e.path() / kStoredDatasetManifest);
        out.push_back({id, m.value("name", std::string()), m.value("files", Json::array()).size()});
    }
    return out;
}

std::size_t DatasetStore::clean_partials() {
    std::size_t removed = 0;
    std::error_code ec;
    std::vector<fs::path> doomed;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
        const std::string name = path_to_utf8(e.path().filename());
        const bool partial = name.find(kPartialMark) != std::string::npos ||
                             (name.size() > 8 && name.ends_with(".partial"));
        const bool unfinished =
            e.is_directory(ec) && !fs::exists(e.path() / kStoredDatasetComplete, ec);
        if (partial || unfinished) doomed.push_back(e.path());
    }
    for (const auto& path : doomed)
        if (fs::remove_all(path, ec) > 0) ++removed;
    return removed;
}

}  // namespace crucible::jobs
