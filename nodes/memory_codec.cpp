#include "nodes/memory_codec.hpp"

#include <cmath>

namespace tessera::wire {
namespace {

double finite_seconds(double v) {
  return std::isfinite(v) && v > 0 ? v : 0;
}

}  // namespace

void encode_memory(const ::tessera::WorkerMemory& m, WorkerMemory::Builder out) {
  out.setWorkerId(m.worker);
  out.setLimit(m.limit);
  out.setManagedBytes(m.managed_bytes);
  out.setSpilledBytes(m.spilled_bytes);
  out.setRss(m.rss);
  out.setProcessRss(m.process_rss);
  out.setProcessWorkers(m.process_workers);
  out.setSpills(m.spills);
  out.setUnspills(m.unspills);
  out.setSpilledTotal(m.spilled_total);
  out.setUnspilledTotal(m.unspilled_total);
  out.setSpillSeconds(m.spill_seconds);
  out.setUnspillSeconds(m.unspill_seconds);
  out.setCorruptRecords(m.corrupt_records);
  out.setPaused(m.paused);
  out.setSpillError(m.spill_error.substr(0, kMaxSpillErrorBytes));
}

::tessera::WorkerMemory decode_memory(WorkerMemory::Reader in) {
  ::tessera::WorkerMemory m;
  m.worker = in.getWorkerId();
  m.limit = in.getLimit();
  m.managed_bytes = in.getManagedBytes();
  m.spilled_bytes = in.getSpilledBytes();
  m.rss = in.getRss();
  m.process_rss = in.getProcessRss();
  m.process_workers = std::max<std::uint32_t>(1, in.getProcessWorkers());
  m.spills = in.getSpills();
  m.unspills = in.getUnspills();
  m.spilled_total = in.getSpilledTotal();
  m.unspilled_total = in.getUnspilledTotal();
  m.spill_seconds = finite_seconds(in.getSpillSeconds());
  m.unspill_seconds = finite_seconds(in.getUnspillSeconds());
  m.corrupt_records = in.getCorruptRecords();
  m.paused = in.getPaused();
  const auto error = in.getSpillError();
  m.spill_error.assign(error.begin(), std::min<std::size_t>(error.size(), kMaxSpillErrorBytes));
  return m;
}

}  // namespace tessera::wire
