#pragma once
// Pushed datasets on the agent: <data>/datasets/<id>/ holds a manifest's files, hard-linked from
// the blob store, with manifest.json and a .complete marker; the id is the SHA-256 of the
// canonical manifest, so the same files pushed twice are one folder. Who pushed a dataset is
// kept beside it (<id>.owners): a user sees and uses only the datasets they pushed.
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/jobs/blob_store.h"
#include "core/jobs/dataset_manifest.h"
#include "core/net/api_types.h"
#include "core/net/auth_gate.h"

namespace crucible::jobs {

class DatasetStore {
  public:
    DatasetStore(std::filesystem::path dir, const BlobStore& blobs);

    std::filesystem::path folder(const std::string& id) const { return dir_ / id; }
    bool is_complete(const std::string& id) const;
    // Creates the dataset folder once (concurrent identical pushes build it once; a push that
    // dies halfway leaves a .partial folder that clean_partials removes) and records `owner`.
    void create(const DatasetManifest& manifest, const std::string& owner);
    // A complete dataset `caller` pushed (or any, for an admin).
    bool visible_to(const std::string& id, const net::Caller& caller) const;
    std::vector<net::DatasetSummary> list(const net::Caller& caller) const;
    // Removes folders of pushes cut off by a crash (run at start, before serving).
    std::size_t clean_partials();

  private:
    bool owned_by(const std::string& id, const std::string& owner) const;
    void add_owner(const std::string& id, const std::string& owner);

    std::filesystem::path dir_;
    const BlobStore& blobs_;
    std::mutex mutex_;
};

}  // namespace crucible::jobs
