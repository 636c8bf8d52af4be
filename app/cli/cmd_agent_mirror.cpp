// `crucible agent mirror set|show|unset` configures the agent's checkpoint mirror (see
// core/jobs/checkpoint_mirror.h): the bucket goes to <data>/agent.json "mirror", the credentials
// to the agent's secret store (<data>/secrets.json, owner-only). The secret never appears on the
// command line: it comes from $AWS_SECRET_ACCESS_KEY or one line on standard input. No LibTorch
// here, so the CLI of the agent's tests is built with this file too.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli/agent_data.h"
#include "app/cli/cli_parser.h"
#include "app/cli/command.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/secret_store.h"
#include "core/jobs/checkpoint_mirror.h"
#include "core/net/s3_client.h"

namespace crucible::cli {
namespace {

std::string env(const char* name) {
    return environment_variable(name).value_or("");
}

void print_usage() {
    std::printf(
        "usage: crucible agent mirror set --data DIR --endpoint URL --bucket NAME [--region R]\n"
        "                                 [--prefix P] [--max-mbps N] [--keep N] [--path-style]\n"
        "                                 [--access-key-id ID] [--no-check]\n"
        "       crucible agent mirror show --data DIR\n"
        "       crucible agent mirror unset --data DIR\n\n"
        "Jobs submitted with a run id (crucible remote submit ... --run-id NAME) copy their\n"
        "checkpoints and artifacts to the bucket; the same run id submitted to another agent\n"
        "with the same mirror goes on from the newest checkpoint there. The secret access key\n"
        "is read from $AWS_SECRET_ACCESS_KEY or, when that is unset, from one line on standard\n"
        "input; the key id from --access-key-id or $AWS_ACCESS_KEY_ID. Both go to the agent's\n"
        "secret store (DIR/secrets.json, owner-only), never to agent.json. Restart the agent\n"
        "afterwards.\n");
}

int run_set(const std::vector<std::string>& words) {
    CLI::App app{"Points the agent's checkpoint mirror at a bucket and stores its credentials.",
                 "crucible agent mirror set"};
    std::string data, key_id;
    jobs::MirrorConfig c;
    bool path_style = false, no_check = false;
    int part_mb = 8;
    app.add_option("--data", data, "the agent's data folder (the --data of crucible-agent)");
    app.add_option("--endpoint", c.endpoint,
                   "the S3 endpoint, e.g. https://s3.eu-central-1.amazonaws.com, "
                   "https://oss-cn-hangzhou.aliyuncs.com, http://minio:9000");
    app.add_option("--bucket", c.bucket, "the bucket (it must exist)");
    app.add_option("--region", c.region, "the region the signature names (default us-east-1)");
    app.add_option("--prefix", c.prefix, "runs go under PREFIX/<run id>/ in the bucket");
    app.add_option("--max-mbps", c.max_mbps,
                   "upload cap in megabits per second, so training traffic keeps its share "
                   "(default 0: none)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--keep", c.keep, "checkpoints kept in the bucket for each run (default 2)")
        ->check(CLI::Range(1, 1000));
    app.add_option("--part-mb", part_mb, "multipart part size in MiB (default 8)")
        ->check(CLI::Range(5, 5120));
    app.add_flag("--path-style", path_style,
                 "endpoint/bucket/key URLs (MinIO behind a name); default: by the endpoint");
    app.add_option("--ca-file", c.ca_file, "PEM bundle for an endpoint with a private CA");
    app.add_option("--access-key-id", key_id, "the access key id (default $AWS_ACCESS_KEY_ID)");
    app.add_flag("--no-check", no_check, "store without listing the bucket first");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const auto dir = agent_data_folder(data);
    if (path_style) c.path_style = true;
    c.part_size = static_cast<std::uint64_t>(part_mb) << 20;
    Json agent = read_agent_json(dir);
    // The same checks as the agent's when it reads agent.json.
    c = jobs::MirrorConfig::from_json(c.to_json(), "mirror");
    if (key_id.empty()) key_id = env("AWS_ACCESS_KEY_ID");
    if (key_id.empty())
        throw InputError("--access-key-id", "give the access key id (or set $AWS_ACCESS_KEY_ID)");
    const std::string secret =
        secret_input("AWS_SECRET_ACCESS_KEY", "secret access key for " + key_id, "secret");
    if (!no_check) {
        net::S3Options o;
        o.ca_file = c.ca_file;
        o.attempts = 2;
        net::S3Client s3({c.endpoint, c.bucket, c.region, c.path_style}, {key_id, secret}, o);
        try {
            s3.list(jobs::mirror_run_prefix(c, "-"));  // any prefix: the answer is what counts
        } catch (const std::exception& e) {
            throw Error(std::string("the bucket does not answer these credentials: ") + e.what() +
                        " (nothing stored; --no-check stores anyway)");
        }
    }
    auto secrets = SecretStore::open_file(jobs::agent_secrets_file(dir));
    secrets->put(jobs::kMirrorAccessKeySecret, key_id);
    secrets->put(jobs::kMirrorSecretKeySecret, secret);
    agent["mirror"] = c.to_json();
    write_json_file(dir / "agent.json", agent);
    std::printf("checkpoint mirror: s3://%s/%s (%s)%s; restart the agent to use it\n",
                c.bucket.c_str(), jobs::mirror_run_prefix(c, "<run id>").c_str(),
                c.endpoint.c_str(), no_check ? "" : ", credentials checked");
    return 0;
}

int run_mirror(const std::vector<std::string>& args) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        print_usage();
        return args.empty() ? 2 : 0;
    }
    const std::string& action = args[0];
    const std::vector<std::string> words(args.begin() + 1, args.end());
    if (action == "set") return run_set(words);
    std::string data;
    CLI::App app{action == "show" ? "Prints the agent's checkpoint mirror (never its secret)."
                                  : "Turns the checkpoint mirror off and forgets its credentials.",
                 "crucible agent mirror " + action};
    app.add_option("--data", data, "the agent's data folder (the --data of crucible-agent)");
    if (action != "show" && action != "unset")
        throw InputError(action, "unknown action; use set, show or unset");
    if (parse_words(app, words) == Parsed::HelpPrinted) return 0;
    const auto dir = agent_data_folder(data);
    Json agent = read_agent_json(dir);
    auto secrets = SecretStore::open_file(jobs::agent_secrets_file(dir));
    if (action == "show") {
        if (!agent.contains("mirror")) {
            std::printf("no checkpoint mirror (set one with crucible agent mirror set)\n");
            return 0;
        }
        const auto c = jobs::MirrorConfig::from_json(agent["mirror"], "agent.json: mirror");
        const auto key = secrets->get(jobs::kMirrorAccessKeySecret);
        std::printf("endpoint:   %s\nbucket:     %s\nregion:     %s\nruns under: %s\n",
                    c.endpoint.c_str(), c.bucket.c_str(), c.region.c_str(),
                    jobs::mirror_run_prefix(c, "<run id>").c_str());
        std::printf("upload cap: %s\nkeep:       %d checkpoints per run\n",
                    c.max_mbps > 0 ? (std::to_string(c.max_mbps) + " Mbit/s").c_str() : "none",
                    c.keep);
        std::printf("key id:     %s\n", key ? key->c_str() : "MISSING (crucible agent mirror set)");
        return 0;
    }
    agent.erase("mirror");
    write_json_file(dir / "agent.json", agent);
    secrets->remove(jobs::kMirrorAccessKeySecret);
    secrets->remove(jobs::kMirrorSecretKeySecret);
    std::printf("checkpoint mirror off; restart the agent\n");
    return 0;
}

const RegisterSubcommand mirror_cmd({"agent", "mirror",
                                     "set, show or unset the bucket that keeps runs' checkpoints",
                                     &run_mirror});

}  // namespace
}  // namespace crucible::cli
