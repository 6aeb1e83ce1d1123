#include "actors/embedded_cluster.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "actors/worker_actor.hpp"

namespace tessera {

namespace {
std::uint32_t cores() {
  return std::max(1u, std::thread::hardware_concurrency());
}
}  // namespace

EmbeddedCluster::EmbeddedCluster(ClusterOptions options) : options_(options) {
  if (options_.threads_per_worker == 0) options_.threads_per_worker = cores();
  if (options_.actor_threads == 0) options_.actor_threads = std::max(2u, cores());
  config_ = std::make_unique<caf::actor_system_config>();
  config_->set("scheduler.max-threads", static_cast<size_t>(options_.actor_threads));
  system_ = std::make_unique<caf::actor_system>(*config_);
  if (!options_.scheduler.directory) options_.scheduler.directory = std::make_shared<WorkerDirectory>();
  scheduler_ = spawn_scheduler(*system_, options_.scheduler);
  link_ = std::make_shared<SchedulerLink>(SchedulerLink{scheduler_});
  if (options_.workers > 0) scale(options_.workers);  // none: a scheduler for worker processes
}

EmbeddedCluster::~EmbeddedCluster() {
  link_.reset();  // futures that outlive the cluster stop reporting releases
  caf::anon_send(scheduler_, shutdown_atom::value);
  scheduler_ = nullptr;
  system_->await_all_actors_done();
  system_.reset();
}

void EmbeddedCluster::scale(std::uint32_t workers) {
  if (workers == 0) throw std::invalid_argument("scale: a cluster needs at least one worker");
  std::lock_guard lock(mutex_);
  caf::scoped_actor self{*system_};
  while (active_.size() < workers) {
    auto worker = spawn_worker(*system_, scheduler_,
                               WorkerOptions{options_.threads_per_worker, options_.scheduler.directory});
    std::uint32_t id = 0;
    self->request(scheduler_, caf::infinite, register_atom::value,
                  WorkerRegistration{.actor = worker, .threads = options_.threads_per_worker})
        .receive(
            [&](std::uint32_t assigned) { id = assigned; },
            [&](const caf::error& e) {
              throw std::runtime_error("EmbeddedCluster: worker registration failed: " + system_->render(e));
            });
    active_.push_back(id);
  }
  while (active_.size() > workers) {
    self->send(scheduler_, retire_atom::value, active_.back());
    active_.pop_back();
  }
}

std::uint32_t EmbeddedCluster::workers() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::uint32_t>(active_.size());
}

SchedulerStatus EmbeddedCluster::status() const {
  caf::scoped_actor self{*system_};
  SchedulerStatus out;
  self->request(scheduler_, caf::infinite, status_atom::value)
      .receive([&](const SchedulerStatus& s) { out = s; },
               [&](const caf::error& e) {
                 throw std::runtime_error("EmbeddedCluster: status request failed: " + system_->render(e));
               });
  return out;
}

bool EmbeddedCluster::wait_for_workers(std::uint32_t workers, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto s = status();
    if (s.workers == workers && s.retiring_workers == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling a condition with a deadline
  }
}

}  // namespace tessera

namespace tessera {

std::shared_ptr<ClusterBackend> EmbeddedCluster::backend() const {
  return std::make_shared<LocalBackend>(scheduler_, link_);
}

}  // namespace tessera
