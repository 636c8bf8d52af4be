#include "core/engine/checkpoint_writer.h"

#include <utility>

namespace crucible::engine {

CheckpointWriter::CheckpointWriter(CheckpointStore& store, bool synchronous)
    : store_(store), synchronous_(synchronous) {}

CheckpointWriter::~CheckpointWriter() {
    if (thread_.joinable()) thread_.join();
}

CheckpointWriter::Outcome CheckpointWriter::write(std::int64_t step, const std::string& bytes,
                                                  bool best) {
    Outcome o;
    o.step = step;
    o.best = best;
    try {
        o.file = store_.write_step(step, bytes);
    } catch (const std::exception& e) {
        o.error = e.what();
        return o;
    }
    if (best) {
        try {
            store_.link_named("best", o.file);
        } catch (const std::exception& e) {
            o.best_error = e.what();
        }
    }
    return o;
}

std::vector<CheckpointWriter::Outcome> CheckpointWriter::submit(std::int64_t step,
                                                                std::string bytes, bool best) {
    if (thread_.joinable()) thread_.join();
    if (synchronous_) {
        auto done = take_finished();
        done.push_back(write(step, bytes, best));
        return done;
    }
    thread_ = std::thread([this, step, best, bytes = std::move(bytes)] {
        Outcome o = write(step, bytes, best);
        std::lock_guard lock(mutex_);
        finished_.push_back(std::move(o));
    });
    return take_finished();
}

std::vector<CheckpointWriter::Outcome> CheckpointWriter::take_finished() {
    std::lock_guard lock(mutex_);
    return std::exchange(finished_, {});
}

std::vector<CheckpointWriter::Outcome> CheckpointWriter::finish_all() {
    if (thread_.joinable()) thread_.join();
    return take_finished();
}

}  // namespace crucible::engine
