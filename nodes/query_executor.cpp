#include "nodes/query_executor.hpp"

namespace tessera {

QueryExecutor::QueryExecutor(std::size_t threads, std::size_t max_queued) : max_queued_(max_queued) {
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

QueryExecutor::~QueryExecutor() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& thread : threads_) thread.join();
}

bool QueryExecutor::post(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(job));
  }
  ready_.notify_one();
  return true;
}

void QueryExecutor::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace tessera
