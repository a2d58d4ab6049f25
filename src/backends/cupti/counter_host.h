// CUPTI's profiler host object for one chip: which metrics exist, the config image that
// schedules a metric list, and turning decoded counter data into metric values.
//
// Used by the Range Profiler (per-kernel values) and PM sampling (device-wide samples), each
// with its own host object (the profiler type is fixed at initialisation).
//
// Threads: set up on the session thread (or a launch callback, once per context); afterwards
// evaluate() runs only on the decoding worker. Not thread-safe on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cupti/counters_api.h"
#include "backends/cupti/counters_info.h"

namespace proton::cupti {

class CounterHost {
 public:
  CounterHost() = default;
  ~CounterHost();
  CounterHost(const CounterHost&) = delete;
  CounterHost& operator=(const CounterHost&) = delete;

  /// `availability` may be empty (every counter of a chip this CUPTI knows is assumed there).
  bool init(const CountersApi& api, CUpti_ProfilerType type, const std::string& chip,
            const std::vector<uint8_t>& availability, std::string& why);

  /// Picks, for each entry of `wanted`, the first alternative this chip knows. A user-named
  /// metric (one alternative) that is unknown fails with a message listing what the chip has;
  /// a default-set entry with no known alternative, or one that would need a second pass, is
  /// left out (said in `notes`).
  bool resolve(const std::vector<std::vector<std::string>>& wanted, bool user_named,
               std::vector<std::string>& out, std::string& notes, std::string& why);

  /// Schedules `metrics`: the config image and how many passes it needs.
  bool configure(const std::vector<std::string>& metrics, std::vector<uint8_t>& config,
                 size_t& passes, std::string& why);

  /// Values of `metrics` (as configured) for range or sample `index` of a decoded image.
  bool evaluate(const uint8_t* image, size_t size, size_t index, double* out);

  /// The base metric names of this chip, every type, sorted (for listings and messages).
  std::vector<std::string> base_metrics();
  bool known(const std::string& metric);

  const std::string& chip() const { return chip_; }

 private:
  /// Whether `metrics` configure on a scratch host object of the same chip, and in how many
  /// passes.
  bool trial(const std::vector<std::string>& metrics, size_t& passes);

  const CountersApi* api_ = nullptr;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  std::string chip_;
  CUpti_ProfilerType type_ = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  std::vector<uint8_t> availability_;
  std::vector<std::string> configured_;
  std::vector<const char*> configured_ptrs_;
};

/// The chip name of device `index` ("GH100", ...), or "" with `why` set.
std::string chip_name(const CountersApi& api, size_t index, std::string& why);

/// An "unknown metric" message: the name, the chip, the closest base metrics, the count.
std::string unknown_metric_message(const std::string& metric, const std::string& chip,
                                   const std::vector<std::string>& base_metrics);

}  // namespace proton::cupti
