#include "thread_counters.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace proton {

namespace {

int open_counter(uint64_t config, int group) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = config;
  attr.read_format = PERF_FORMAT_GROUP;
  attr.exclude_kernel = 1;  // allowed at perf_event_paranoid 2; a launch rarely enters the kernel
  attr.exclude_hv = 1;
  // pid 0, cpu -1: this thread, wherever it runs; not inherited by threads it starts.
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, group, 0));
}

}  // namespace

ThreadCounters::~ThreadCounters() {
  close();
}

void ThreadCounters::close() {
  if (cycles_ >= 0) ::close(cycles_);
  if (leader_ >= 0) ::close(leader_);
  cycles_ = leader_ = -1;
}

bool ThreadCounters::open(std::string& why) {
  close();
  leader_ = open_counter(PERF_COUNT_HW_INSTRUCTIONS, -1);
  if (leader_ >= 0) cycles_ = open_counter(PERF_COUNT_HW_CPU_CYCLES, leader_);
  if (leader_ >= 0 && cycles_ >= 0) return true;
  int err = errno;
  close();
  why = std::string("perf_event_open refused hardware counters: ") + std::strerror(err);
  if (err == ENOENT || err == EOPNOTSUPP) why += " (no PMU visible: a VM or container?)";
  if (err == EACCES || err == EPERM) why += " (see /proc/sys/kernel/perf_event_paranoid)";
  return false;
}

bool ThreadCounters::read(Values& out) const {
  if (leader_ < 0) return false;
  uint64_t data[3] = {};  // PERF_FORMAT_GROUP: count, then the values in group order
  if (::read(leader_, data, sizeof(data)) != static_cast<ssize_t>(sizeof(data)) || data[0] != 2) {
    return false;
  }
  out.instructions = data[1];
  out.cycles = data[2];
  return true;
}

}  // namespace proton
