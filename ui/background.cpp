#include "ui/background.h"

#include "core/net/api_client.h"

namespace crucible::ui {

bool end_background_work(std::chrono::milliseconds limit) {
    net::ApiClient::stop_all_requests();
    return QThreadPool::globalInstance()->waitForDone(static_cast<int>(limit.count()));
}

}  // namespace crucible::ui
