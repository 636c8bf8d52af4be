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

// The bytes a PUT announces are still to come for its whole upload: from its first byte to the
// Content-Range total (the earlier pieces are stored already), else its Content-Length.
std::uint64_t bytes_still_to_come(const httplib::Request& req) {
    if (req.has_header("Content-Range")) {
        const ContentRange range = parse_content_range(req.get_header_value("Content-Range"));
        return range.total - range.begin;
    }
    return std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
}

}  // namespace

void AgentService::add_data_routes() {
    auto& server = *server_;

    // Refuses an upload, before reading its body, that would leave less than the reserve free
    // on the data folder's disk or take its sender over their quota (declared sizes count:
    // a declared 10^19 bytes is refused at once, not when the disk fills).
    auto refuse_without_room = [this](const httplib::Request& req, httplib::Response& res,
                                      const net::Caller& caller) {
        const std::uint64_t total = bytes_still_to_come(req);
        std::error_code ec;
        const auto space = std::filesystem::space(config_.data_dir, ec);
        const std::uint64_t reserve = config_.scheduler.min_free_disk_bytes;
        if (!ec && (space.available < reserve || total > space.available - reserve)) {
            net::send_error(res, 507, "insufficient_storage",
                            "an upload of " + std::to_string(total >> 20) + " MB does not fit: " +
                                std::to_string(space.available >> 20) + " MB free on the agent, " +
                                std::to_string(reserve >> 20) + " MB kept in reserve");
            return true;
        }
        const std::uint64_t quota = config_.quota_bytes_per_user;
        if (quota > 0 && !caller.is_admin()) {
            const std::uint64_t used = blobs_.bytes_used_by(caller.name);
            if (used > quota || total > quota - used) {
                net::send_error(res, 507, "quota_exceeded",
                                "'" + caller.name + "' keeps " + std::to_string(used >> 20) +
                                    " MB of uploads on this agent; " + std::to_string(total >> 20) +
                                    " MB more is over the quota of " + std::to_string(quota >> 20) +
                                    " MB");
                return true;
            }
        }
        return false;
    };

    server.on(net::routes::kGetBlob, [this](const httplib::Request& req, httplib::Response& res) {
        std::string sha = req.matches[1];
        if (!BlobStore::is_valid_hash(sha)) {
            net::send_error(res, 400, "bad_hash",
                            "blob names are 64 lower-case hex digits (SHA-256)");
            return;
        }
        const net::Caller& caller = net::HttpServer::identity(req);
        if (blobs_.visible_to(sha, caller)) {
            std::error_code ec;
            net::send_json(
                res, 200,
                {{"sha256", sha}, {"size", std::filesystem::file_size(blobs_.path(sha), ec)}});
            return;
        }
        res.set_header("Upload-Offset", std::to_string(blobs_.partial_size(sha, caller.name)));
        net::send_error(res, 404, "no_such_blob", "blob " + sha + " is not (fully) uploaded");
    });

    server.on(net::routes::kPutBlob, [this, refuse_without_room](
                                         const httplib::Request& req, httplib::Response& res,
                                         const httplib::ContentReader& reader) {
        std::string sha = req.matches[1];
        if (!BlobStore::is_valid_hash(sha)) {
            net::send_error(res, 400, "bad_hash",
                            "blob names are 64 lower-case hex digits (SHA-256)");
            return;
        }
        const net::Caller& caller = net::HttpServer::identity(req);
        if (!caller.may_write()) {
            net::send_error(res, 403, "read_only", "a viewer token cannot upload");
            return;
        }
        if (blobs_.visible_to(sha, caller)) {
            reader([](const char*, size_t) { return true; });  // drain; nothing to store
            net::send_json(res, 200, {{"sha256", sha}, {"stored", true}, {"skipped", true}});
            return;
        }
        if (refuse_without_room(req, res, caller)) return;
        BlobStore::WriteResult result = BlobStore::WriteResult::Partial;
        ContentRange range;
        auto end = receive_piece(
            req, res, reader,
            [&](std::uint64_t offset, std::uint64_t total, std::string_view bytes) {
                result = blobs_.write_chunk(sha, caller.name, offset, total, bytes);
            },
            [&] { return blobs_.partial_size(sha, caller.name); }, range);
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
    // An upload id names an upload of the caller's own: the same id from another user is
    // another upload (BlobStore keys them by owner).
    auto upload_id = [](const httplib::Request& req, httplib::Response& res) {
        std::string id = req.matches[1];
        if (!BlobStore::is_valid_upload_id(id)) {
            net::send_error(res, 400, "bad_upload_id",
                            "upload ids are 32 to 64 lower-case hex digits");
            return std::string();
        }
        if (!net::HttpServer::identity(req).may_write()) {
            net::send_error(res, 403, "read_only", "a viewer token cannot upload");
            return std::string();
        }
        return id;
    };
    server.on(net::routes::kGetUpload,
              [this, upload_id](const httplib::Request& req, httplib::Response& res) {
                  std::string id = upload_id(req, res);
                  if (id.empty()) return;
                  const auto size = blobs_.upload_size(id, net::HttpServer::caller(req));
                  res.set_header("Upload-Offset", std::to_string(size));
                  net::send_json(res, 200, {{"id", id}, {"offset", size}});
              });
    server.on(net::routes::kPutUpload, [this, upload_id, refuse_without_room](
                                           const httplib::Request& req, httplib::Response& res,
                                           const httplib::ContentReader& reader) {
        std::string id = upload_id(req, res);
        if (id.empty()) return;
        if (refuse_without_room(req, res, net::HttpServer::identity(req))) return;
        const std::string owner = net::HttpServer::caller(req);
        ContentRange range;
        auto end = receive_piece(
            req, res, reader,
            [&](std::uint64_t offset, std::uint64_t total, std::string_view bytes) {
                blobs_.write_upload_chunk(id, owner, offset, total, bytes);
            },
            [&] { return blobs_.upload_size(id, owner); }, range);
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
                  blobs_.finish_upload(id, net::HttpServer::caller(req), sha);
                  net::send_json(res, 201, {{"sha256", sha}, {"stored", true}});
              });
    server.on(net::routes::kDeleteUpload,
              [this, upload_id](const httplib::Request& req, httplib::Response& res) {
                  std::string id = upload_id(req, res);
                  if (id.empty()) return;
                  blobs_.discard_upload(id, net::HttpServer::caller(req));
                  net::send_json(res, 200, {{"id", id}, {"discarded", true}});
              });

    // A dataset is a manifest: {"name": "...", "files": [{"path": "images/train/a.jpg", "sha256":
    // "..."}]}. Its id is the SHA-256 of the canonical manifest; files are linked from the blob
    // store into <data>/datasets/<id>/. Missing blobs are listed (409) so the client sends just
    // those.
    server.on(net::routes::kCreateDataset, [this](const httplib::Request& req,
                                                  httplib::Response& res) {
        const net::Caller& caller = net::HttpServer::identity(req);
        if (!caller.may_write()) {
            net::send_error(res, 403, "read_only", "a viewer token cannot push datasets");
            return;
        }
        const DatasetManifest manifest =
            DatasetManifest::from_json(parse_json(req.body, "request body"));
        Json missing = Json::array();
        for (const auto& [rel, sha] : manifest.files)
            if (!blobs_.visible_to(sha, caller)) missing.push_back(sha);
        if (!missing.empty()) {
            net::send_json(
                res, 409,
                {{"error", {{"code", "missing_blobs"}, {"message", "upload these blobs first"}}},
                 {"missing", missing}});
            return;
        }
        datasets_.create(manifest, caller.name);
        const std::string id = manifest.id();
        audit(caller.name, "dataset", id);
        net::send_json(
            res, 201,
            {{"id", id}, {"files", manifest.files.size()}, {"reference", "dataset:" + id}});
    });

    server.on(
        net::routes::kListDatasets, [this](const httplib::Request& req, httplib::Response& res) {
            net::send_json(res, 200,
                           net::datasets_to_json(datasets_.list(net::HttpServer::identity(req))));
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
                  if (!paths_.may_browse(p)) {
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
