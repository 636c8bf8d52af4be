// A stand-in for crucible-worker in the agent, remote and studio tests, the same on Windows and
// Linux: honours --job DIR [--resume], writes DESIGN.md events with gap-free seq, appends what
// the agent posts to inbox/ (see core/jobs/job_events.h), obeys control.json requests, writes an
// artifact. Its "checkpoint" is the last completed step, kept in DIR/checkpoints/last. It exits
// with crucible-worker's codes (core/base/job_state.h): 0 succeeded, 3 paused, 4 canceled,
// 5 interrupted; 7 (or FAKE_WORKER_CRASH_CODE) for the simulated crash at FAKE_WORKER_CRASH_AT.
//   describe [--out FILE]   the fake task's schema (agent_test_util.h has the same)
//   devices [--out FILE]    a CUDA 12.4 LibTorch that sees the fake NVML's GPU 0
//                           (FAKE_WORKER_CUDA_DEVICES replaces the list, as JSON)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"

namespace {

using namespace crucible;
namespace fs = std::filesystem;

const char* const kSchemas = R"({"tasks":[{"task":"test.fake","title":"fake","options":[)"
                             R"({"name":"steps","type":"integer","default":20,"min":1},)"
                             R"({"name":"delay_ms","type":"integer","default":30,"min":0},)"
                             R"({"name":"data","type":"path","default":""},)"
                             R"({"name":"model","type":"path","default":""},)"
                             R"({"name":"device","type":"string","default":""}]}]})";

int answer(const std::vector<std::string>& args, const std::string& json) {
    if (args.size() == 3 && args[1] == "--out")
        write_file_atomically(path_from_utf8(args[2]), json + "\n");
    else
        std::printf("%s\n", json.c_str());
    return 0;
}

// Appends one line to events.jsonl; seq counts the lines.
class Events {
  public:
    explicit Events(fs::path file) : file_(std::move(file)) {
        std::error_code ec;
        if (fs::exists(file_, ec)) {
            const std::string text = read_file_bytes(file_);
            for (char c : text)
                if (c == '\n') ++seq_;
        }
    }
    void emit(const std::string& kind, const std::string& fields) {
        const double t =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        char time_text[32];
        std::snprintf(time_text, sizeof time_text, "%.6f", t);
        append("{\"seq\":" + std::to_string(seq_) + ",\"t\":" + time_text + ",\"kind\":\"" + kind +
               "\"," + fields + "}");
    }
    // A line the agent wrote to inbox/ ({"t":...,"kind":...}), given its seq here.
    void take(const std::string& body) {
        append("{\"seq\":" + std::to_string(seq_) + "," + body.substr(body.find('{') + 1));
    }

  private:
    void append(std::string line) {
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
            line.pop_back();
        std::ofstream out(file_, std::ios::binary | std::ios::app);
        out << line << '\n';
        if (!out) throw Error(path_to_utf8(file_) + ": cannot append");
        ++seq_;
    }
    fs::path file_;
    long seq_ = 0;
};

long spec_number(const Json& spec, const char* name, long fallback) {
    const Json& options = spec.contains("options") ? spec["options"] : spec;
    if (options.contains(name) && options[name].is_number_integer())
        return options[name].get<long>();
    return fallback;
}

int worker(const std::vector<std::string>& args) {
    if (args.size() < 2 || args[0] != "--job")
        throw Error("usage: fake_worker --job DIR [--resume]");
    const fs::path dir = path_from_utf8(args[1]);
    const bool resume = args.size() > 2 && args[2] == "--resume";
    const Json spec = Json::parse(read_file_bytes(dir / "spec.json"));
    const long steps = spec_number(spec, "steps", 20);
    const long delay_ms = spec_number(spec, "delay_ms", 30);
    Events events(dir / "events.jsonl");
    // What the agent told CUDA about GPUs, for the tests to read.
    write_file_atomically(
        dir / "gpu_env",
        "CUDA_VISIBLE_DEVICES=" + environment_variable("CUDA_VISIBLE_DEVICES").value_or("unset") +
            " CUDA_DEVICE_ORDER=" + environment_variable("CUDA_DEVICE_ORDER").value_or("unset") +
            "\n");
    const fs::path last = dir / "checkpoints" / "last";
    long start = 1;
    std::error_code ec;
    if (resume && fs::exists(last, ec)) {
        const long done = std::stol(read_file_bytes(last));
        start = done + 1;
        events.emit("rollback", "\"to_step\":" + std::to_string(done));
    }
    events.emit("status", "\"state\":\"running\"");
    const long crash_at = std::stol(environment_variable("FAKE_WORKER_CRASH_AT").value_or("0"));
    for (long i = start; i <= steps; ++i) {
        events.emit("metric", "\"epoch\":0,\"step\":" + std::to_string(i) +
                                  ",\"values\":{\"train/loss\":" + std::to_string(1000 / i) + "}");
        fs::create_directories(last.parent_path());
        write_file_atomically(last, std::to_string(i) + "\n");
        // The agent's events for this job (alarms) wait in inbox/ while the worker owns the log.
        if (fs::is_directory(dir / "inbox", ec)) {
            std::vector<fs::path> waiting;
            for (const auto& e : fs::directory_iterator(dir / "inbox", ec))
                if (e.path().extension() == ".json") waiting.push_back(e.path());
            std::sort(waiting.begin(), waiting.end());
            for (const auto& f : waiting) {
                events.take(read_file_bytes(f));
                fs::remove(f, ec);
            }
        }
        if (fs::exists(dir / "control.json", ec)) {
            const std::string request =
                Json::parse(read_file_bytes(dir / "control.json")).value("request", "");
            if (request == "cancel") {
                events.emit("status", "\"state\":\"canceled\",\"reason\":\"canceled by the user\"");
                return 4;
            }
            if (request == "pause") {
                events.emit("status", "\"state\":\"paused\",\"reason\":\"paused by the user\"");
                return 3;
            }
            if (request == "checkpoint") {
                events.emit("status",
                            "\"state\":\"interrupted\",\"reason\":\"checkpoint requested\"");
                return 5;
            }
        }
        if (crash_at == i) {
            std::fprintf(stderr, "boom: simulated crash\n");
            return std::stoi(environment_variable("FAKE_WORKER_CRASH_CODE").value_or("7"));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    }
    fs::create_directories(dir / "artifacts");
    std::string bytes(100000, '\0');
    std::mt19937 random(std::random_device{}());
    for (char& b : bytes)
        b = static_cast<char>(random());
    write_file_atomically(dir / "artifacts" / "best.safetensors", bytes);
    events.emit("artifact", "\"name\":\"best.safetensors\",\"type\":\"weights\"");
    events.emit("status", "\"state\":\"succeeded\",\"reason\":\"finished\"");
    return 0;
}

int fake_worker_main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    const std::string first = args.empty() ? "" : args[0];
    if (first == "describe") return answer(args, kSchemas);
    if (first == "devices")
        return answer(
            args, R"({"libtorch":"2.11.0","cuda_runtime":"12.4","cuda_devices":)" +
                      environment_variable("FAKE_WORKER_CUDA_DEVICES").value_or(R"(["GPU-aaaa"])") +
                      "}");
    return worker(args);
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("fake_worker", fake_worker_main, argc, argv);
}
