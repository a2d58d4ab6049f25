// Hardware counters of the calling thread, for benchmarks: instructions and cycles retired in
// user mode while the thread runs.
//
// A shared host makes wall and CPU time of a launch-bound loop drift by tens of percent from one
// second to the next; the instructions a thread retires for the same work do not. The launch
// benchmark (bench/interleave.py) reads these around each timed region to tell work a profiler
// adds to the launching thread from noise. Linux perf events, opened per thread; where the
// kernel or the container refuses them (no PMU in a VM, seccomp, perf_event_paranoid), open()
// says why and the benchmark goes on without.
#pragma once

#include <cstdint>
#include <string>

namespace proton {

class ThreadCounters {
 public:
  struct Values {
    uint64_t instructions = 0;
    uint64_t cycles = 0;
  };

  ThreadCounters() = default;
  ~ThreadCounters();
  ThreadCounters(const ThreadCounters&) = delete;
  ThreadCounters& operator=(const ThreadCounters&) = delete;

  /// Opens both counters for the calling thread (counting from now). Only that thread's
  /// execution is counted, whoever reads. False, with `why`, when the system refuses.
  bool open(std::string& why);
  bool is_open() const { return leader_ >= 0; }
  /// Both values, read together. False when not open or the read fails.
  bool read(Values& out) const;

 private:
  void close();

  int leader_ = -1;  // instructions; the group leader
  int cycles_ = -1;
};

}  // namespace proton
