#include "core/jobs/agent_secrets.h"

namespace crucible::jobs {

std::filesystem::path agent_secrets_file(const std::filesystem::path& data_dir) {
    return data_dir / "secrets.json";
}

std::string peer_token_secret(const std::string& peer_name) {
    return "peer:" + peer_name;
}

}  // namespace crucible::jobs
