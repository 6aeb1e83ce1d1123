// QueryExecutor: the threads that answer results queries and exports for the gateway, so that a slow
// one (a histogram over millions of results, a large export) never holds up the gateway's I/O thread,
// which every other peer's messages wait on. Its queue is bounded: past it a query is refused at once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class QueryExecutor {
 public:
  QueryExecutor(std::size_t threads, std::size_t max_queued);
  ~QueryExecutor();  // runs what is queued, then joins
  QueryExecutor(const QueryExecutor&) = delete;
  QueryExecutor& operator=(const QueryExecutor&) = delete;

  // False when the queue is full (the job is not taken). Jobs must not throw.
  bool post(std::function<void()> job);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  std::size_t max_queued_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tessera
