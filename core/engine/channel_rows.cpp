#include "core/engine/channel_rows.h"

namespace crucible::engine {

ChannelRows channel_rows_of(const torch::Tensor& t) {
    const std::int64_t n = t.size(0), c = t.size(1), h = t.size(2), w = t.size(3);
    const std::int64_t pixel = w > 1 ? t.stride(3) : h > 1 ? t.stride(2) : n > 1 ? t.stride(0) : c;
    if ((c > 1 && t.stride(1) != 1) || pixel < c || (w > 1 && t.stride(3) != pixel) ||
        (h > 1 && t.stride(2) != w * pixel) || (n > 1 && t.stride(0) != h * w * pixel))
        return {};
    return {t.data_ptr<float>(), pixel};
}

}  // namespace crucible::engine
