// The API's wire types read answers as outside input: each hostile answer below is refused with
// an InputError that names the field (or, for the optional ones, read with its default), never a
// crash; and what the agent writes reads back the same.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/net/api_types.h"

namespace crucible::net {
namespace {

const std::string kShareKey(kShareKeyHexDigits, 'c');  // a run's rendezvous key, as agents send it

// A peer's submit whose share is valid but for `field`, set to `value`.
Json submit_with_share_field(const std::string& field, const Json& value) {
    Json share = {{"first_rank", 1}, {"world_size", 2}, {"store", "h:9"}, {"key", kShareKey}};
    share[field] = value;
    return {{"task", "t"}, {"share", share}, {"part_of", "a/j"}};
}

struct Hostile {
    const char* what;
    Json answer;
    const char* named;  // the field the message must name
};

template <typename Parse>
void expect_refused(const std::vector<Hostile>& table, Parse parse) {
    for (const auto& h : table) {
        try {
            parse(h.answer);
            ADD_FAILURE() << h.what << ": accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(h.named), std::string::npos)
                << h.what << ": " << e.what();
        }
    }
}

Json deeply_nested(int depth) {
    Json j = Json::array();
    for (int i = 0; i < depth; ++i)
        j = Json::array({j});
    return j;
}

TEST(ApiTypes, HostileAnswersAreRefusedWithTheField) {
    expect_refused(
        {
            {"not an object", Json::array(), "gpus"},
            {"gpus not a list", {{"gpus", "many"}}, "gpus.gpus"},
            {"a gpu not an object", {{"gpus", {1}}}, "gpus[0]"},
            {"negative memory", {{"gpus", {{{"memory_total", -1}}}}}, "gpus[0].memory_total"},
            {"text index", {{"gpus", {{{"index", "0"}}}}}, "gpus[0].index"},
            {"huge utilization", {{"gpus", {{{"utilization", 1e300}}}}}, "gpus[0].utilization"},
            {"pid out of range", {{"gpus", {{{"processes", {-4}}}}}}, "gpus[0].processes[0]"},
            {"nested mig", {{"gpus", {{{"mig", deeply_nested(10000)}}}}}, "gpus[0].mig[0]"},
        },
        [](const Json& j) { GpuReport::from_json(j); });
    expect_refused(
        {
            {"tasks not a list", {{"tasks", {{"a", 1}}}}, "info.tasks"},
            {"tls as text", {{"tls", "yes"}}, "info.tls"},
            {"bad gpus inside", {{"gpus", {{"gpus", 3}}}}, "gpus.gpus"},
            {"peers not a list", {{"peers", "b"}}, "info.peers"},
            {"a peer a number", {{"peers", {"b", 3}}}, "info.peers[1]"},
            {"an empty peer name", {{"peers", {""}}}, "info.peers[0]"},
            {"a peer name too long", {{"peers", {std::string(65, 'p')}}}, "info.peers[0]"},
            {"65 peers", {{"peers", Json(std::vector<std::string>(65, "p"))}}, "info.peers"},
            {"nested peers", {{"peers", deeply_nested(10000)}}, "info.peers[0]"},
        },
        [](const Json& j) { AgentInfo::from_json(j); });
    // An older agent names no peers; a newer one names them back as written.
    EXPECT_TRUE(AgentInfo::from_json(Json::object()).peers.empty());
    AgentInfo with_peers;
    with_peers.peers = {"b", "\xe8\xae\xad\xe7\xbb\x83"};
    EXPECT_EQ(AgentInfo::from_json(with_peers.to_json()).peers, with_peers.peers);
    expect_refused(
        {
            {"no task", {{"options", Json::object()}}, "task"},
            {"options a list", {{"task", "t"}, {"options", {1, 2}}}, "options"},
            {"65 gpus", {{"task", "t"}, {"gpus", 65}}, "gpus"},
            {"negative gpu", {{"task", "t"}, {"gpu", -1}}, "gpu"},
            {"empty gpu list", {{"task", "t"}, {"gpu", Json::array()}}, "gpu"},
            {"gpu listed twice", {{"task", "t"}, {"gpu", {0, 2, 0}}}, "twice"},
            {"gpu list of text", {{"task", "t"}, {"gpu", {"0", "1"}}}, "gpu"},
            {"gpu list nested", {{"task", "t"}, {"gpu", {{0, 1}}}}, "gpu"},
            {"65 gpus listed", {{"task", "t"}, {"gpu", std::vector<int>(65, 0)}}, "gpu"},
            {"gpus and gpu disagree", {{"task", "t"}, {"gpus", 3}, {"gpu", {0, 1}}}, "gpus"},
            {"long name", {{"task", "t"}, {"name", std::string(201, 'x')}}, "name"},
            {"priority as text", {{"task", "t"}, {"priority", "high"}}, "priority"},
            {"command as a number", {{"task", "t"}, {"command", 3}}, "command"},
            {"command with a path", {{"task", "t"}, {"command", "../predict"}}, "command"},
            {"command too long", {{"task", "t"}, {"command", std::string(65, 'p')}}, "command"},
            {"servers not a list", {{"task", "t"}, {"servers", "b"}}, "servers"},
            {"server without a name", {{"task", "t"}, {"servers", {Json::object()}}}, "servers[0]"},
            {"server name too long",
             {{"task", "t"}, {"servers", {{{"server", std::string(65, 'b')}}}}},
             "servers[0].server"},
            {"server named twice",
             {{"task", "t"}, {"servers", {{{"server", "b"}}, {{"server", "b"}}}}},
             "twice"},
            {"server gpu as text",
             {{"task", "t"}, {"servers", {{{"server", "b"}, {"gpu", {"0"}}}}}},
             "servers[0].gpu[0]"},
            {"share not an object", {{"task", "t"}, {"share", 3}, {"part_of", "a/j"}}, "share"},
            {"share of one rank",
             {{"task", "t"},
              {"share", {{"first_rank", 0}, {"world_size", 1}, {"store", "h:1"}}},
              {"part_of", "a/j"}},
             "world_size"},
            {"share rank outside the world",
             {{"task", "t"},
              {"share", {{"first_rank", 2}, {"world_size", 2}, {"store", "h:1"}}},
              {"part_of", "a/j"}},
             "first_rank"},
            {"share store without a port",
             {{"task", "t"},
              {"share", {{"first_rank", 1}, {"world_size", 2}, {"store", "h"}}},
              {"part_of", "a/j"}},
             "store"},
            {"share store port 0",
             {{"task", "t"},
              {"share", {{"first_rank", 1}, {"world_size", 2}, {"store", "h:0"}}},
              {"part_of", "a/j"}},
             "store"},
            {"share without a key",
             {{"task", "t"},
              {"share", {{"first_rank", 1}, {"world_size", 2}, {"store", "h:9"}}},
              {"part_of", "a/j"}},
             "key"},
            {"share key too short", submit_with_share_field("key", "ab"), "key"},
            {"share key not hex", submit_with_share_field("key", std::string(63, 'a') + "G"),
             "key"},
            {"share key a number", submit_with_share_field("key", 7), "key"},
            {"share gloo transport a number", submit_with_share_field("gloo_transport", 1),
             "gloo_transport"},
            {"share gate port text", submit_with_share_field("gate_port", "29400"), "gate_port"},
            {"share gate port 0", submit_with_share_field("gate_port", 0), "gate_port"},
            {"share gate port too big", submit_with_share_field("gate_port", 65536), "gate_port"},
            {"share gate port fractional", submit_with_share_field("gate_port", 29400.5),
             "gate_port"},
            {"share gloo transport unknown",
             submit_with_share_field("gloo_transport", "\xe4\xb8\xad\xff"), "gloo_transport"},
            {"share without part_of",
             {{"task", "t"},
              {"share",
               {{"first_rank", 1}, {"world_size", 2}, {"store", "h:9"}, {"key", kShareKey}}}},
             "part_of"},
            {"share naming servers",
             {{"task", "t"},
              {"share",
               {{"first_rank", 1}, {"world_size", 2}, {"store", "h:9"}, {"key", kShareKey}}},
              {"part_of", "a/j"},
              {"servers", {{{"server", "c"}}}}},
             "servers"},
        },
        [](const Json& j) { SubmitRequest::from_json(j); });
    expect_refused(
        {
            {"jobs not a list", {{"jobs", "x"}}, "jobs"},
            {"job without id", {{"jobs", {{{"state", "queued"}}}}}, "jobs[0]"},
            {"unknown state", {{"jobs", {{{"id", "j"}, {"state", "dancing"}}}}}, "dancing"},
            {"gpu ids as text",
             {{"jobs", {{{"id", "j"}, {"state", "queued"}, {"gpu_ids", "0"}}}}},
             "jobs[0].gpu_ids"},
        },
        [](const Json& j) { jobs_from_json(j); });
    expect_refused(
        {{"size as text", {{"artifacts", {{{"path", "a"}, {"size", "1"}}}}}, "artifacts[0].size"},
         {"no path", {{"artifacts", {{{"size", 1}}}}}, "artifacts[0]"}},
        [](const Json& j) { artifacts_from_json(j); });
    expect_refused(
        {{"roots not text", {{"roots", {1}}}, "roots[0]"},
         {"entry without name", {{"path", "/d"}, {"entries", {{{"dir", true}}}}}, "entries[0]"}},
        [](const Json& j) { FolderListing::from_json(j); });
    expect_refused({{"events not a list", {{"events", 5}}, "events"},
                    {"event not an object", {{"events", {"x"}}}, "events[0]"}},
                   [](const Json& j) { events_from_json(j); });
    expect_refused(
        {{"files negative", {{"datasets", {{{"id", "d"}, {"files", -2}}}}}, "datasets[0].files"}},
        [](const Json& j) { datasets_from_json(j); });
}

TEST(ApiTypes, WhatTheAgentWritesReadsBackTheSame) {
    GpuReport report;
    report.nvml = true;
    report.gpus.push_back({1, "NVIDIA H200", "GPU-1", 80, 20, 50, 60, 300.5, {42}, true, {}});
    report.gpus[0].mig.push_back({0, "MIG 3g", 40});
    const GpuReport back = GpuReport::from_json(report.to_json());
    EXPECT_EQ(back.to_json(), report.to_json());
    EXPECT_EQ(back.gpus[0].memory_free(), 60u);

    SubmitRequest request;
    request.task = "detect.yolo";
    request.options = {{"epochs", 3}};
    request.name = "模型";
    request.gpus = 2;
    request.gpu = {1, 3};
    request.run_id = "spot-1";
    request.servers = {{"b", 2, {}}, {"c", std::nullopt, {0, 1}}};
    const SubmitRequest read = SubmitRequest::from_json(request.to_json());
    EXPECT_EQ(read.to_json(), request.to_json());
    EXPECT_EQ(read.run_id, "spot-1");
    ASSERT_EQ(read.servers.size(), 2u);
    EXPECT_EQ(read.servers[1].gpu, (std::vector<int>{0, 1}));
    EXPECT_EQ(JobInfo::from_request(read).parts.size(), 2u);
    // A share, as an agent sends it to a peer.
    SubmitRequest part;
    part.task = "detect.yolo";
    part.share = ServerShare{3, 8, "10.0.0.1", 29400, "10.0.0.2", 29411, kShareKey, "uv"};
    part.part_of = "10.0.0.1/j7";
    const SubmitRequest part_read = SubmitRequest::from_json(part.to_json());
    EXPECT_EQ(part_read.to_json(), part.to_json());
    EXPECT_EQ(part_read.share->store_port, 29400);
    EXPECT_EQ(part_read.share->host, "10.0.0.2");
    EXPECT_EQ(part_read.share->gate_port, 29411);
    EXPECT_EQ(part_read.share->key, kShareKey);
    EXPECT_EQ(part_read.share->gloo_transport, "uv");
    // An older agent's share says nothing of its transport, and is read as not known.
    part.share->gloo_transport.clear();
    EXPECT_FALSE(part.to_json()["share"].contains("gloo_transport"));
    EXPECT_EQ(SubmitRequest::from_json(part.to_json()).share->gloo_transport, "");
    request.command = "predict";
    EXPECT_EQ(SubmitRequest::from_json(request.to_json()).command, "predict");
    EXPECT_EQ(JobInfo::from_request(SubmitRequest::from_json(request.to_json())).command,
              "predict");
    // One chosen GPU implies one GPU.
    EXPECT_EQ(SubmitRequest::from_json({{"task", "t"}, {"gpu", 0}}).gpus, 1);
    // Particular GPUs imply their count.
    EXPECT_EQ(SubmitRequest::from_json({{"task", "t"}, {"gpu", {0, 2}}}).gpus, 2);
    EXPECT_EQ(SubmitRequest::from_json({{"task", "t"}, {"gpu", {0, 2}}}).gpu,
              (std::vector<int>{0, 2}));
    EXPECT_FALSE(SubmitRequest::from_json({{"task", "t"}}).gpus.has_value());

    JobInfo job = JobInfo::from_request(read);
    job.id = "j1";
    job.state = JobState::Running;
    job.gpu_ids = {1};
    EXPECT_EQ(JobInfo::from_json(job.to_json(), "job").to_json(), job.to_json());
    EXPECT_EQ(JobInfo::from_json(job.to_json(), "job").run_id, "spot-1");
    EXPECT_EQ(JobInfo::from_json(job.to_json(), "job").requested_gpus, (std::vector<int>{1, 3}));
    // A job.json from before lists of GPUs names one GPU, or none.
    Json old = job.to_json();
    old.erase("requested_gpus");
    old["requested_gpu"] = 1;
    EXPECT_EQ(JobInfo::from_json(old, "job").requested_gpus, std::vector<int>{1});
    old["requested_gpu"] = nullptr;
    EXPECT_TRUE(JobInfo::from_json(old, "job").requested_gpus.empty());

    FolderListing roots;
    roots.roots = {"/data", "/数据"};
    EXPECT_EQ(FolderListing::from_json(roots.to_json()).roots, roots.roots);
    const std::vector<DatasetSummary> sets = {{"abc", "shapes", 12}};
    EXPECT_EQ(datasets_from_json(datasets_to_json(sets))[0].files, 12u);
}

}  // namespace
}  // namespace crucible::net
