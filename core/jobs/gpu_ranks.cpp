#include "core/jobs/gpu_ranks.h"

#include <algorithm>
#include <string>

#include "core/base/error.h"
#include "core/base/rank_plan.h"

namespace crucible::jobs {

std::set<int> mig_gpus(const net::GpuReport& report) {
    std::set<int> out;
    for (const auto& g : report.gpus)
        if (g.mig_enabled) out.insert(g.index);
    return out;
}

void plan_gpu_ranks(net::JobInfo& job, const std::vector<int>& gpu_ids, const std::set<int>& mig) {
    for (const int g : job.requested_gpus)
        if (std::find(gpu_ids.begin(), gpu_ids.end(), g) == gpu_ids.end())
            throw InputError("gpu", "this agent has no GPU " + std::to_string(g) +
                                        (gpu_ids.empty() ? " (it has none: train on the CPU)"
                                                         : " (see GET /v1/gpus)"));
    if (job.requested_gpus.size() > 1)
        for (const int g : job.requested_gpus)
            if (mig.count(g))
                throw InputError("gpu", "GPU " + std::to_string(g) +
                                            " is split into MIG slices, which a job on several "
                                            "GPUs cannot use (CUDA has no peer collectives "
                                            "between slices; a 1-GPU job may take a slice)");
    const std::string device = job.options.contains("device") && job.options["device"].is_string()
                                   ? job.options["device"].get<std::string>()
                                   : std::string();
    if (job.gpus <= 1) {
        // A device list would name GPUs of the agent the scheduler does not hand this job.
        if (plan_ranks(device, 1).world_size() > 1)
            throw InputError("device", "'" + device +
                                           "' lists several GPUs: on an agent, ask for a number "
                                           "of GPUs (gpus=N) or for particular ones (gpu=[0, 2]; "
                                           "the studio's GPU choice), one rank each");
        return;
    }
    const int whole = static_cast<int>(gpu_ids.size()) -
                      static_cast<int>(std::count_if(gpu_ids.begin(), gpu_ids.end(),
                                                     [&](int g) { return mig.count(g) > 0; }));
    if (job.gpus > whole) {
        std::string why = "this agent has " + std::to_string(gpu_ids.size()) + " GPU(s)";
        if (!mig.empty())
            why += ", of which " + std::to_string(mig.size()) +
                   " are split into MIG slices, which a job on several GPUs cannot use (CUDA has "
                   "no peer collectives between slices; a 1-GPU job may take a slice)";
        throw InputError("gpus", "asks for " + std::to_string(job.gpus) + " GPUs but " + why);
    }
    std::string ranks;
    for (int k = 0; k < job.gpus; ++k)
        ranks += (k ? ",cuda:" : "cuda:") + std::to_string(k);
    job.options["device"] = ranks;
    job.options.erase("ranks");  // one rank per GPU
}

}  // namespace crucible::jobs
