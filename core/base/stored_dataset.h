#pragma once
// A dataset as an agent stores it (core/jobs/dataset_store.h): <data>/datasets/<id>/ holds the
// pushed files and two of the agent's own, named here for the store, the manifest check and
// the client (which leaves them out when it pushes a stored dataset on to another agent).
#include <string_view>

namespace crucible {

inline constexpr const char* kStoredDatasetManifest = "manifest.json";  // [path, sha256] pairs
inline constexpr const char* kStoredDatasetComplete = ".complete";      // the push finished

// True for a path relative to the dataset's folder ('/' separators) that is one of those two.
inline bool is_stored_dataset_bookkeeping(std::string_view relative) {
    return relative == kStoredDatasetManifest || relative == kStoredDatasetComplete;
}

}  // namespace crucible
