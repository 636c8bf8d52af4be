#pragma once
// Environment variables set for one scope and put back as they were after it (a fake library
// steered through the environment, for one test only).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/environment.h"

namespace crucible::test_support {

class ScopedEnvironment {
  public:
    explicit ScopedEnvironment(std::vector<std::pair<std::string, std::string>> values) {
        for (auto& [name, value] : values) {
            before_.emplace_back(name, environment_variable(name));
            set_environment_variable(name, value);
        }
    }
    ~ScopedEnvironment() {
        for (auto it = before_.rbegin(); it != before_.rend(); ++it)
            if (it->second)
                set_environment_variable(it->first, *it->second);
            else
                unset_environment_variable(it->first);
    }
    ScopedEnvironment(const ScopedEnvironment&) = delete;
    ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

  private:
    std::vector<std::pair<std::string, std::optional<std::string>>> before_;
};

}  // namespace crucible::test_support
