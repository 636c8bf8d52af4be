// /v1/blobs (content-addressed, resumable uploads), /v1/datasets (manifests of blobs) and
// /v1/fs (browsing the server folders the agent shares).
#include <functional>
#include <optional>
#include <regex>
#include <string_view>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/jobs/agent_service.h"

namespace crucible::jobs {
namespace {

struct ContentRange {
    std::uint64_t begin = 0, end = 0, total = 0;  // end exclusive
};

// "bytes 0-1023/4096" -> [0,1024) of 4096. Throws InputError on anything else.
ContentRange parse_content_range(const std::string& text) {
    static const std::regex re(R"(^bytes (\d{1,19})-(\d{1,19})/(\d{1,19})$)");
    std::smatch m;
    if (!std::regex_match(text, m, re))
        throw InputError("Content-Range", "expected 'bytes <first>-<last>/<total>'");
    ContentRange r{std::stoull(m[1]), std::stoull(m[2]) + 1, std::stoull(m[3])};
    if (r.end <= r.begin || r.end > r.total)
        throw InputError("Content-Range", "range outside the total size");
    return r;
}

// Receives one piece of a resumable upload (the whole body, or `Content-Range: bytes a-b/total`)
// through httplib's content reader. httplib hands the body over in small pieces (a few KB);
// writing each through its own open/append/close capped uploads at ~20 MB/s, so pieces are
// gathered into 4 MB writes. `write(offset, total, bytes)` stores bytes (throwing on a refusal),
// `stored()` says how many bytes are kept. Returns the offset after the piece when it all arrived
// and was stored; otherwise the answer (with Upload-Offset: where to continue) is already in
// `res`.
std::optional<std::uint64_t> receive_piece(
    const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
    const std::function<void(std::uint64_t, std::uint64_t, std::string_view)>& write,
    const std::function<std::uint64_t()>& stored, ContentRange& range) {
    const std::uint64_t length =
        std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
    if (req.has_header("Content-Range")) {
        range = parse_content_range(req.get_header_value("Content-Range"));
        if (range.end - range.begin != length)
            throw InputError("Content-Range", "range length does not match Content-Length");
    } else {
        range = {0, length, length};
    }
    std::uint64_t offset = range.begin;
    std::string error;
    std::string pending;
    pending.reserve(std::min<std::uint64_t>(length, 4u << 20));
    auto flush = [&]() {
        if (pending.empty()) return true;
        try {
            write(offset, range.total, pending);
            offset += pending.size();
            pending.clear();
            return true;
        } catch (const std::exception& e) {
            error = e.what();
            return false;
        }
    };
    const bool complete = reader([&](const char* data, size_t n) {
        pending.append(data, n);
        return pending.size() < (4u << 20) || flush();
    });
    if (error.empty()) flush();
    if (length == 0 && range.total == 0 && error.empty()) {
        try {
            write(0, 0, {});
        } catch (const std::exception& e) {
            error = e.what();
        }
    }
    if (error.empty() && (!complete || offset - range.begin != length)) {
        // A body over the request limit (or a dropped connection): what arrived is kept, and
        // the client is told where to continue instead of being told it succeeded.
        const bool too_large = length > net::HttpServerOptions{}.payload_limit;
        res.set_header("Upload-Offset", std::to_string(stored()));
        net::send_error(res, too_large ? 413 : 400, too_large ? "too_large" : "incomplete_body",
                        "received " + std::to_string(offset - range.begin) + " of the " +
                            std::to_string(length) +
                            " bytes announced; send large blobs in Content-Range pieces of at "
                            "most " +
                            std::to_string(net::HttpServerOptions{}.payload_limit >> 20) +
                            " MB and continue at Upload-Offset");
        return std::nullopt;
    }
    if (!error.empty()) {
        res.set_header("Upload-Offset", std::to_string(stored()));
        net::send_error(res, 409, "upload_rejected", error);
        return std::nullopt;
    }
    return offset;
}

}  // namespace

void AgentService::add_data_routes() {
    auto& server = *server_;

    server.on(net::routes::kGetBlob, [this](const httplib::Request& req, httplib::Response& res) {
        std::string sha = req.matches[1];
        if (!BlobStore::is_valid_hash(sha)) {
            net::send_error(res, 400, "bad_hash",
                            "blob names are 64 lower-case hex digits (SHA-256)");
            return;
        }
        if (blobs_.has(sha)) {
            std::error_code ec;
            net::send_json(
                res, 200,
                {{"sha256", sha}, {"size", std::filesystem::file_size(blobs_.path(sha), ec)}});
            return;
        }
        res.set_header("Upload-Offset", std::to_string(blobs_.partial_size(sha)));
        net::send_error(res, 404, "no_such_blob", "blob " + sha + " is not (fully) uploaded");
    });

    server.on(net::routes::kPutBlob, [this](const httplib::Request& req, httplib::Response& res,
                                            const httplib::ContentReader& reader) {
        std::string sha = req.matches[1];
        if (!BlobStore::is_valid_hash(sha)) {
            net::send_error(res, 400, "bad_hash",
                            "blob names are 64 lower-case hex digits (SHA-256)");
            return;
        }
        if (blobs_.has(sha)) {
            reader([](const char*, size_t) { return true; });  // drain; nothing to store
            net::send_json(res, 200, {{"sha256", sha}, {"stored", true}, {"skipped", true}});
            return;
        }
        BlobStore::WriteResult result = BlobStore::WriteResult::Partial;
        ContentRange range;
        auto end = receive_piece(
            req, res, reader,
            [&](std::uint64_t offset, std::uint64_t total, std::string_view bytes) {
                result = blobs_.write_chunk(sha, offset, total, bytes);
            },
            [&] { return blobs_.partial_size(sha); }, range);
        if (!end) return;
        res.set_header("Upload-Offset", std::to_string(*end));
        net::send_json(res, result == BlobStore::WriteResult::Stored ? 201 : 202,
                       {{"sha256", sha},
                        {"stored", result == BlobStore::WriteResult::Stored},
                        {"offset", *end}});
    });

    // Uploads of large files whose hash the client computes while it sends them (see
    // BlobStore::write_upload_chunk): PUT pieces, GET where to continue, POST .../finish with the
    // hash, DELETE to drop one (the client found out the agent has the blob already).
    auto upload_id = [](const httplib::Request& req, httplib::Response& res) {
        std::string id = req.matches[1];
        if (!BlobStore::is_valid_upload_id(id)) {
            net::send_error(res, 400, "bad_upload_id",
                            "upload ids are 32 to 64 lower-case hex digits");
            return std::string();
        }
        return id;
    };
    server.on(net::routes::kGetUpload,
              [this, upload_id](const httplib::Request& req, httplib::Response& res) {
                  std::string id = upload_id(req, res);
                  if (id.empty()) return;
                  const auto size = blobs_.upload_size(id);
                  res.set_header("Upload-Offset", std::to_string(size));
                  net::send_json(res, 200, {{"id", id}, {"offset", size}});
              });
    server.on(net::routes::kPutUpload,
              [this, upload_id](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) {
                  std::string id = upload_id(req, res);
                  if (id.empty()) return;
                  ContentRange range;
                  auto end = receive_piece(
                      req, res, reader,
                      [&](std::uint64_t offset, std::uint64_t total, std::string_view bytes) {
                          blobs_.write_upload_chunk(id, offset, total, bytes);
                      },
                      [&] { return blobs_.upload_size(id); }, range);
                  if (!end) return;
                  res.set_header("Upload-Offset", std::to_string(*end));
                  net::send_json(res, 202, {{"id", id}, {"offset", *end}, {"total", range.total}});
              });
    server.on(net::routes::kFinishUpload,
              [this, upload_id](const httplib::Request& req, httplib::Response& res) {
                  std::string id = upload_id(req, res);
                  if (id.empty()) return;
                  Json body = parse_json(req.body, "request body");
                  std::string sha = get_string(body, "sha256", "body");
                  blobs_.finish_upload(id, sha);
                  net::send_json(res, 201, {{"sha256", sha}, {"stored", true}});
              });
    server.on(net::routes::kDeleteUpload,
              [this, upload_id](const httplib::Request& req, httplib::Response& res) {
                  std::string id = upload_id(req, res);
                  if (id.empty()) return;
                  blobs_.discard_upload(id);
                  net::send_json(res, 200, {{"id", id}, {"discarded", true}});
              });

    // A dataset is a manifest: {"name": "...", "files": [{"path": "images/train/a.jpg", "sha256":
    // "..."}]}. Its id is the SHA-256 of the canonical manifest; files are linked from the blob
    // store into <data>/datasets/<id>/. Missing blobs are listed (409) so the client sends just
    // those.
    server.on(net::routes::kCreateDataset, [this](const httplib::Request& req,
                                                  httplib::Response& res) {
        Json body = parse_json(req.body, "request body");
        const Json& files = require_field(body, "files", "body");
        if (!files.is_array() || files.empty())
            throw InputError("files", "expected a non-empty list of {path, sha256}");
        std::vector<std::pair<std::filesystem::path, std::string>> entries;
        Json canonical = Json::array();
        Json missing = Json::array();
        for (std::size_t i = 0; i < files.size(); ++i) {
            const std::string where = "files[" + std::to_string(i) + "]";
            std::string path = get_string(files[i], "path", where);
            std::string sha = get_string(files[i], "sha256", where);
            if (!BlobStore::is_valid_hash(sha))
                throw InputError(where, "sha256 must be 64 lower-case hex digits");
            std::filesystem::path rel = path_from_utf8(path);
            if (path.empty() || rel.is_absolute() || rel.has_root_name() ||
                rel.lexically_normal().string().rfind("..", 0) == 0 ||
                path.find('\\') != std::string::npos)
                throw InputError(
                    where, "path '" + path + "' must be relative and stay inside the dataset");
            entries.emplace_back(rel.lexically_normal(), sha);
            canonical.push_back({path, sha});
            if (!blobs_.has(sha)) missing.push_back(sha);
        }
        if (!missing.empty()) {
            net::send_json(
                res, 409,
                {{"error", {{"code", "missing_blobs"}, {"message", "upload these blobs first"}}},
                 {"missing", missing}});
            return;
        }
        std::sort(canonical.begin(), canonical.end());
        const std::string id = sha256_hex(canonical.dump());
        auto dir = config_.data_dir / "datasets" / id;
        std::error_code ec;
        if (!std::filesystem::exists(dir / ".complete", ec)) {
            auto temp = config_.data_dir / "datasets" / (id + ".partial");
            std::filesystem::remove_all(temp, ec);
            for (const auto& [rel, sha] : entries) {
                auto target = temp / rel;
                std::filesystem::create_directories(target.parent_path());
                std::filesystem::create_hard_link(blobs_.path(sha), target, ec);
                if (ec)
                    std::filesystem::copy_file(blobs_.path(sha), target,
                                               std::filesystem::copy_options::overwrite_existing);
            }
            write_json_file(temp / "manifest.json",
                            {{"name", body.value("name", std::string())}, {"files", canonical}});
            write_file_atomically(temp / ".complete", "");
            std::filesystem::remove_all(dir, ec);
            std::filesystem::rename(temp, dir);
        }
        audit(net::HttpServer::caller(req), "dataset", id);
        net::send_json(res, 201,
                       {{"id", id}, {"files", entries.size()}, {"reference", "dataset:" + id}});
    });

    server.on(net::routes::kListDatasets, [this](const httplib::Request&, httplib::Response& res) {
        std::vector<net::DatasetSummary> list;
        std::error_code ec;
        for (const auto& e :
             std::filesystem::directory_iterator(config_.data_dir / "datasets", ec)) {
            if (!std::filesystem::exists(e.path() / ".complete")) continue;
            Json m = read_json_file(e.path() / "manifest.json");
            list.push_back({path_to_utf8(e.path().filename()), m.value("name", std::string()),
                            m["files"].size()});
        }
        net::send_json(res, 200, net::datasets_to_json(list));
    });

    // Browse the shared server folders: /v1/fs lists the roots, /v1/fs?path=<dir> a folder in one.
    server.on(net::routes::kListFolder,
              [this](const httplib::Request& req, httplib::Response& res) {
                  net::FolderListing listing;
                  if (!req.has_param("path")) {
                      for (const auto& root : config_.roots)
                          listing.roots.push_back(path_to_utf8(root));
                      net::send_json(res, 200, listing.to_json());
                      return;
                  }
                  std::filesystem::path p = path_from_utf8(req.get_param_value("path"));
                  bool allowed = false;
                  for (const auto& root : config_.roots)
                      allowed = allowed || p == root || is_path_inside(root, p);
                  if (!allowed) {
                      net::send_error(res, 403, "outside_roots",
                                      "only the folders in agent.json 'roots' can be browsed");
                      return;
                  }
                  std::error_code ec;
                  for (const auto& e : std::filesystem::directory_iterator(p, ec)) {
                      if (listing.entries.size() >= 10000) break;
                      bool dir = e.is_directory(ec);
                      listing.entries.push_back(
                          {path_to_utf8(e.path().filename()), dir, dir ? 0 : e.file_size(ec)});
                  }
                  if (ec && listing.entries.empty()) {
                      net::send_error(res, 404, "not_found", "cannot list " + path_to_utf8(p));
                      return;
                  }
                  listing.path = path_to_utf8(p);
                  net::send_json(res, 200, listing.to_json());
              });
}

}  // namespace crucible::jobs
