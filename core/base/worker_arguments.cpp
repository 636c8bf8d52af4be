#include "core/base/worker_arguments.h"

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible {
namespace {

constexpr const char* kJob = "--job";
constexpr const char* kResume = "--resume";

}  // namespace

std::vector<std::string> worker_job_arguments(const std::filesystem::path& job_dir, bool resume) {
    std::vector<std::string> args = {kJob, path_to_utf8(job_dir)};
    if (resume) args.emplace_back(kResume);
    return args;
}

WorkerArguments parse_worker_arguments(const std::vector<std::string>& args) {
    WorkerArguments out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == kJob) {
            if (i + 1 >= args.size()) throw InputError(kJob, "needs the job folder");
            out.job = path_from_utf8(args[++i]);
        } else if (args[i] == kResume) {
            out.resume = true;
        } else if (!take_rank_argument(args, i, out.rank)) {
            throw InputError(args[i], "unknown argument");
        }
    }
    if (out.job.empty()) throw InputError(kJob, "is required");
    check_rank_address(out.rank);
    return out;
}

}  // namespace crucible
