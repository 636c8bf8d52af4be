// `crucible remote ...`: the client side of crucible-agent. Remotes (name, URL, pinned
// certificate fingerprint) live in <user config>/remotes.json; their tokens in the SecretStore
// under "agent:<url>", never in remotes.json.
//
//   remote add NAME URL [--token T] [--yes]     remote ls      remote rm NAME
//   remote push NAME FOLDER [--name N]          remote submit NAME TASK key=value ... [--servers
//   PEER,...] remote jobs NAME    remote logs NAME JOB [-f]    remote cancel|pause|resume NAME JOB
//   remote download NAME JOB ARTIFACT [OUT] [--force]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/cli_parser.h"
#include "app/cli/command.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/net/api_client.h"
#include "core/net/job_inputs.h"
#include "core/net/loopback.h"
#include "core/net/remote_config.h"
#include "core/net/tls.h"

namespace crucible::cli {
namespace {

// "uploading 3/120 files, 12.3/69.0 MB" on one line of stderr, rewritten in place.
void print_upload_progress(const net::UploadProgress& p) {
    std::fprintf(stderr, "\ruploading %zu/%zu files, %.1f/%.1f MB", p.files_done, p.files,
                 static_cast<double>(p.done) / 1e6, static_cast<double>(p.total) / 1e6);
}

// Most subcommands name a remote first.
CLI::Option* add_remote(CLI::App& app, std::string& name) {
    return app.add_option("NAME", name, "the remote (see crucible remote ls)")->required();
}

CLI::Option* add_job(CLI::App& app, std::string& job) {
    return app.add_option("JOB", job, "the job id (see crucible remote jobs NAME)")->required();
}

std::string trim_url(std::string url) {
    while (!url.empty() && url.back() == '/')
        url.pop_back();
    return url;
}

// Job ids go into URL paths: refuse anything that could change the route.
const std::string& check_job_id(const std::string& id) {
    bool ok = !id.empty() && id.size() <= 128;
    for (unsigned char c : id)
        ok = ok && (std::isalnum(c) || c == '-');
    if (!ok) throw InputError("JOB", "'" + id + "' is not a job id (see crucible remote jobs)");
    return id;
}

net::ApiClient client_for(const std::string& name) {
    auto config = net::RemoteConfig::load(net::default_remotes_file());
    const auto& remote = config.require(name);
    net::RemoteEndpoint endpoint = net::endpoint_for(remote);
    if (endpoint.token.empty())
        throw InputError(name, "no token stored for " + remote.url + "; run crucible remote add " +
                                   name + " " + remote.url +
                                   " --token TOKEN (create one on the agent with crucible agent "
                                   "token create)");
    return net::ApiClient(endpoint);
}

std::string format_time(double unix_seconds) {
    if (unix_seconds <= 0) return "-";
    return utc_time_text(static_cast<std::time_t>(unix_seconds), "%Y-%m-%d %H:%M:%SZ");
}

// ---- add / ls / rm ------------------------------------------------------------------------

// Asks `question` on the terminal; true for y, Y or yes.
bool confirmed(const char* question) {
    std::printf("%s [y/N] ", question);
    std::fflush(stdout);
    std::string answer;
    if (!std::getline(std::cin, answer)) answer.clear();
    return answer == "y" || answer == "Y" || answer == "yes";
}

// The token from --token (or stdin for "-"), --token-file or the CRUCIBLE_TOKEN environment
// variable, in that order; "" when none. Surrounding white space (a file's newline) is dropped.
std::string token_from(const std::string& option, const std::string& file) {
    std::string token = option;
    if (token == "-") {
        if (!std::getline(std::cin, token)) throw InputError("--token", "no token on stdin");
    } else if (token.empty() && !file.empty()) {
        token = read_file_bytes_limited(path_from_utf8(file), 4096);
    } else if (token.empty()) {
        if (const auto env = environment_variable("CRUCIBLE_TOKEN")) token = *env;
    }
    const auto first = token.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return "";
    return token.substr(first, token.find_last_not_of(" \t\r\n") - first + 1);
}

int run_add(const std::vector<std::string>& words) {
    CLI::App app{"Adds an agent; an https agent's certificate is shown and pinned.",
                 "crucible remote add"};
    std::string name, url_text, token, token_file;
    bool yes = false;
    app.add_option("NAME", name, "a name for the agent")->required();
    app.add_option("URL", url_text, "the agent's address (https://HOST:PORT)")->required();
    app.add_option("--token", token,
                   "an access token (crucible agent token create); '-' reads it from stdin. "
                   "Other users can see command lines: prefer --token-file or CRUCIBLE_TOKEN");
    app.add_option("--token-file", token_file, "read the access token from this file");
    app.add_flag("-y,--yes", yes,
                 "trust the certificate (or plain HTTP to another machine) without asking");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    token = token_from(token, token_file);
    net::RemoteEntry entry{name, trim_url(url_text), ""};
    auto file = net::default_remotes_file();
    auto config = net::RemoteConfig::load(file);
    if (config.find(entry.name))
        throw InputError(entry.name,
                         "a remote with this name exists; remove it first with "
                         "crucible remote rm " +
                             entry.name);
    net::ParsedUrl url = net::parse_url(entry.url);
    if (!url.https && !net::is_loopback_host(url.host)) {
        std::fprintf(stderr,
                     "warning: %s is plain HTTP to another machine: the token and every dataset "
                     "and weight file travel unencrypted, readable by anyone on the network. Use "
                     "https:// (the agent serves TLS off loopback unless started with "
                     "--insecure).\n",
                     entry.url.c_str());
        if (!yes && !confirmed("Use plain HTTP anyway?")) {
            std::printf("Not added.\n");
            return 1;
        }
    }
    if (url.https) {
        entry.fingerprint = net::ApiClient::probe_fingerprint(entry.url);
        std::printf("The agent at %s presents a certificate with SHA-256 fingerprint\n  %s\n",
                    entry.url.c_str(), entry.fingerprint.c_str());
        std::printf("Compare it with the fingerprint crucible-agent printed when it started.\n");
        if (!yes && !confirmed("Trust this certificate?")) {
            std::printf("Not added.\n");
            return 1;
        }
    }
    net::validate_remote(entry);
    if (!token.empty()) {
        // Check the token before storing anything: a typo should fail here, not at first use.
        net::ApiClient client({entry.url, token, entry.fingerprint});
        const net::AgentInfo info = client.info();
        std::printf("Connected: crucible-agent %s, %zu tasks, %zu GPUs\n",
                    info.version.empty() ? "?" : info.version.c_str(), info.tasks.size(),
                    info.gpus.gpus.size());
        net::set_remote_token(entry, token);
    } else if (!net::remote_token(entry)) {
        std::fprintf(stderr,
                     "warning: no token given; add one later with crucible remote rm %s and "
                     "crucible remote add %s %s --token TOKEN\n",
                     entry.name.c_str(), entry.name.c_str(), entry.url.c_str());
    }
    config.add(entry);
    config.save(file);
    std::printf("Added remote '%s' (%s)\n", entry.name.c_str(), entry.url.c_str());
    return 0;
}

int run_ls(const std::vector<std::string>& words) {
    CLI::App app{"Lists the agents this user knows.", "crucible remote ls"};
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    auto config = net::RemoteConfig::load(net::default_remotes_file());
    if (config.remotes().empty()) {
        std::printf("no remotes (add one with: crucible remote add NAME URL --token TOKEN)\n");
        return 0;
    }
    for (const auto& r : config.remotes()) {
        const bool has_token = net::remote_token(r).has_value();
        std::printf("%-16s %-32s %s%s\n", r.name.c_str(), r.url.c_str(),
                    has_token ? "token stored" : "NO TOKEN",
                    r.fingerprint.empty()
                        ? ""
                        : ("  pinned " + r.fingerprint.substr(0, 23) + "...").c_str());
    }
    return 0;
}

int run_rm(const std::vector<std::string>& words) {
    CLI::App app{"Forgets an agent and its token.", "crucible remote rm"};
    std::string name;
    add_remote(app, name);
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    auto file = net::default_remotes_file();
    auto config = net::RemoteConfig::load(file);
    const auto entry = config.require(name);
    config.remove(entry.name);
    config.save(file);
    net::set_remote_token(entry, "");  // its own token goes with it; other entries keep theirs
    std::printf("Removed remote '%s'\n", entry.name.c_str());
    return 0;
}

// ---- data and jobs --------------------------------------------------------------------------

int run_push(const std::vector<std::string>& words) {
    CLI::App app{"Uploads a dataset folder; prints dataset:<id> for job options.",
                 "crucible remote push"};
    std::string remote, folder_text, name;
    add_remote(app, remote);
    app.add_option("FOLDER", folder_text, "the dataset folder")->required();
    app.add_option("--name", name, "dataset name (default: the folder's name)");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    auto folder = path_from_utf8(folder_text);
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec))
        throw InputError(folder_text, "is not a folder");
    if (name.empty())
        name = path_to_utf8(std::filesystem::absolute(folder).lexically_normal().filename());
    auto client = client_for(remote);
    std::string id = client.push_dataset(folder, name, print_upload_progress);
    std::fprintf(stderr, "\n");
    std::printf("dataset:%s\n", id.c_str());
    return 0;
}

// `key=value` words: the value is JSON when it parses (numbers, true/false, lists, objects,
// quoted strings), otherwise the text itself.
Json parse_job_options(const std::vector<std::string>& words) {
    Json options = Json::object();
    for (const auto& w : words) {
        auto eq = w.find('=');
        if (eq == std::string::npos || eq == 0)
            throw InputError(w, "options are written key=value");
        std::string key = w.substr(0, eq), value = w.substr(eq + 1);
        if (options.contains(key)) throw InputError(key, "given twice");
        Json parsed = Json::parse(value, nullptr, /*allow_exceptions=*/false);
        options[key] = parsed.is_discarded() ? Json(value) : parsed;
    }
    return options;
}

int run_submit(const std::vector<std::string>& words) {
    CLI::App app{
        "Submits a job: TASK key=value ... Path options naming local files or folders upload\n"
        "them first (folders as datasets).",
        "crucible remote submit"};
    std::string remote;
    net::SubmitRequest request;
    int gpus = 0;
    add_remote(app, remote);
    app.add_option("TASK", request.task, "the task (see the agent's task list)")->required();
    app.add_option("--name", request.name, "job name");
    app.add_option("--command", request.command,
                   "run one of the task's commands instead of training (predict: its output "
                   "stays in the job's folder; fetch it with `remote download`)");
    app.add_option("--priority", request.priority, "queue priority")->capture_default_str();
    const CLI::Option* gpus_given = app.add_option(
        "--gpus", gpus,
        "GPUs the job needs (more than 1: one data-parallel rank per GPU, on the closest free "
        "set)");
    app.add_option("--gpu", request.gpu,
                   "particular GPUs by the agent's index (--gpu 0 --gpu 2, or --gpu 0,2): the job "
                   "waits for those")
        ->delimiter(',');
    app.add_option("--run-id", request.run_id,
                   "keep the run in the agent's checkpoint mirror under this name; the same id "
                   "on another agent with that mirror goes on from its newest checkpoint");
    std::string servers;
    app.add_option("--servers", servers,
                   "run ranks of the job on other agents too, this agent's peers (agent.json "
                   "\"cluster\"): NAME[:GPUS],... (GPUS: a number of its GPUs; none: as many "
                   "ranks as here)");
    std::vector<std::string> key_values;  // the task's options, for parse_job_options
    if (parse_words(app, words, &key_values) == Parsed::HelpPrinted) return 0;
    request.options = parse_job_options(key_values);
    if (gpus_given->count() > 0) request.gpus = gpus;
    std::size_t start = 0;
    while (!servers.empty() && start <= servers.size()) {
        const std::size_t comma = std::min(servers.find(',', start), servers.size());
        const std::string text = servers.substr(start, comma - start);
        start = comma + 1;
        net::ServerRanks server;
        const auto colon = text.find(':');
        server.server = text.substr(0, colon);
        if (colon != std::string::npos) {
            const std::string count = text.substr(colon + 1);
            if (count.empty() || count.size() > 2 ||
                count.find_first_not_of("0123456789") != std::string::npos)
                throw InputError("--servers", "'" + text + "' is not NAME or NAME:GPUS");
            server.gpus = std::stoi(count);
        }
        request.servers.push_back(std::move(server));
    }
    auto client = client_for(remote);
    // Local files named by path options (a dataset folder, pretrained weights) go up first.
    const Json tasks = client.info().tasks;
    const Json schema = request.command.empty()
                            ? net::find_task_schema(tasks, request.task)
                            : net::find_command_schema(tasks, request.task, request.command);
    bool uploaded = false;
    request.options = net::upload_local_inputs(client, schema, request.options,
                                               [&](const net::UploadProgress& p) {
                                                   uploaded = true;
                                                   print_upload_progress(p);
                                               });
    if (uploaded) std::fprintf(stderr, "\n");
    std::printf("%s\n", client.submit(request).id.c_str());
    return 0;
}

int run_jobs(const std::vector<std::string>& words) {
    CLI::App app{"Lists the agent's jobs.", "crucible remote jobs"};
    std::string remote;
    add_remote(app, remote);
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const auto jobs = client_for(remote).jobs();
    if (jobs.empty()) std::printf("no jobs\n");
    for (const auto& j : jobs) {
        std::printf("%-28s %-12s %-16s %-20s %s%s\n", j.id.c_str(), job_state_name(j.state),
                    j.task.c_str(), format_time(j.submitted).c_str(), j.name.c_str(),
                    j.reason.empty() ? "" : ("  (" + j.reason + ")").c_str());
    }
    return 0;
}

void print_event(const Event& e) {
    std::string when = format_time(e.t);
    std::printf("%6lld %s %-10s %s\n", static_cast<long long>(e.seq), when.c_str(), e.kind.c_str(),
                e.fields.dump().c_str());
    if (e.kind == event_kind::kRollback)
        std::printf(
            "       note: the job resumed from an earlier checkpoint; points after step "
            "%s above are superseded\n",
            e.fields.contains("to_step") ? e.fields["to_step"].dump().c_str() : "?");
    std::fflush(stdout);
}

int run_logs(const std::vector<std::string>& words) {
    CLI::App app{"Prints a job's events.", "crucible remote logs"};
    std::string remote, job_text;
    std::int64_t after = -1;
    bool follow = false;
    add_remote(app, remote);
    add_job(app, job_text);
    app.add_flag("-f,--follow", follow, "keep printing until the job ends");
    app.add_option("--after", after, "only events after this seq");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const std::string& job = check_job_id(job_text);
    auto client = client_for(remote);
    if (follow) {
        client.follow_events(job, after, [](const Event& e) {
            print_event(e);
            return true;
        });
        const net::JobInfo final_job = client.job(job);
        std::printf("job %s: %s%s\n", job.c_str(), job_state_name(final_job.state),
                    final_job.reason.empty() ? "" : (" - " + final_job.reason).c_str());
        return 0;
    }
    for (const auto& e : client.events(job, after))
        print_event(e);
    return 0;
}

template <net::JobAction Action>
int run_control(const std::vector<std::string>& words) {
    const std::string action = net::job_action_name(Action);
    CLI::App app{"Asks the agent to " + action + " a job.", "crucible remote " + action};
    std::string remote, job_text;
    add_remote(app, remote);
    add_job(app, job_text);
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const std::string& job = check_job_id(job_text);
    client_for(remote).control(job, Action);
    std::printf("%s requested for %s\n", action.c_str(), job.c_str());
    return 0;
}

// Downloads go to OUT.crucible-part and become OUT when complete; running the same command again
// after a cut resumes, but only into a part this command started for the same file on the agent.
int run_download(const std::vector<std::string>& words) {
    CLI::App app{"Downloads a job artifact; running it again after a cut resumes.",
                 "crucible remote download"};
    std::string remote, job_text, artifact, out_text;
    bool force = false;
    add_remote(app, remote);
    add_job(app, job_text);
    app.add_option("ARTIFACT", artifact, "the artifact's path (artifact events in remote logs)")
        ->required();
    app.add_option("OUT", out_text, "file or folder to write (default: the artifact's name)");
    app.add_flag("--force", force, "start again instead of resuming a part");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const std::string& job = check_job_id(job_text);
    if (artifact.empty() || artifact.find("..") != std::string::npos || artifact[0] == '/')
        throw InputError("ARTIFACT", "'" + artifact +
                                         "' is not an artifact path (see the list "
                                         "with crucible remote logs NAME JOB: artifact events)");
    std::filesystem::path out =
        !out_text.empty() ? path_from_utf8(out_text) : path_from_utf8(artifact).filename();
    std::error_code ec;
    if (std::filesystem::is_directory(out, ec)) out /= path_from_utf8(artifact).filename();
    auto last_report = std::chrono::steady_clock::now();
    const std::uint64_t size = client_for(remote).download(
        job, artifact, out, force, [&](std::uint64_t done, std::uint64_t total) {
            auto now = std::chrono::steady_clock::now();
            if (now - last_report > std::chrono::seconds(1)) {
                last_report = now;
                std::fprintf(stderr, "\r%llu / %llu MB",
                             static_cast<unsigned long long>(done >> 20),
                             static_cast<unsigned long long>(total >> 20));
            }
            return true;
        });
    std::printf("%s (%llu bytes)\n", path_to_utf8(out).c_str(),
                static_cast<unsigned long long>(size));
    return 0;
}

const RegisterSubcommand add_cmd({"remote", "add", "add an agent (pins its TLS certificate)",
                                  &run_add});
const RegisterSubcommand ls_cmd({"remote", "ls", "list the agents this user knows", &run_ls});
const RegisterSubcommand rm_cmd({"remote", "rm", "forget an agent and its token", &run_rm});
const RegisterSubcommand push_cmd({"remote", "push",
                                   "upload a dataset folder (prints dataset:<id>)", &run_push});
const RegisterSubcommand submit_cmd({"remote", "submit", "submit a job: TASK key=value ...",
                                     &run_submit});
const RegisterSubcommand jobs_cmd({"remote", "jobs", "list the agent's jobs", &run_jobs});
const RegisterSubcommand logs_cmd({"remote", "logs", "print a job's events (-f follows)",
                                   &run_logs});
const RegisterSubcommand cancel_cmd({"remote", "cancel", "cancel a job",
                                     &run_control<net::JobAction::Cancel>});
const RegisterSubcommand pause_cmd({"remote", "pause", "pause a job (checkpoint and stop)",
                                    &run_control<net::JobAction::Pause>});
const RegisterSubcommand resume_cmd({"remote", "resume", "resume a paused or interrupted job",
                                     &run_control<net::JobAction::Resume>});
const RegisterSubcommand download_cmd({"remote", "download", "download a job artifact (resumes)",
                                       &run_download});

}  // namespace
}  // namespace crucible::cli
