#include "data/counter_config.h"

namespace proton {

// Chosen to fit one pass on Hopper (GH100, checked with the profiler host API): the obvious
// sm__throughput.avg.pct_of_peak_sustained_elapsed needs 8 passes there and
// lts__t_sector_hit_rate.pct 2 (a hit and a miss count cannot share a pass), so SM throughput is
// the instruction-issue share and the L2 hit rate is estimated from L2 and DRAM sectors
// (viewer: l2_hit%). Both exact metrics remain available by name with ":replay".
std::vector<std::vector<std::string>> default_counter_metrics() {
  return {
      {"dram__bytes_read.sum"},
      {"dram__bytes_write.sum"},
      {"sm__warps_active.avg.pct_of_peak_sustained_active"},
      {"sm__inst_executed.avg.pct_of_peak_sustained_active"},
      // On Hopper the hmma pipe counter also counts warpgroup MMAs (wgmma): ncu shows ~95% for
      // cuBLAS's bf16 GEMM there, while the gmma name is refused by the profiler host.
      {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
       "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"},
      {"lts__t_sectors.sum"},
  };
}

// PM sampling on GH100 (profiler host API, CUPTI 13.0): the three SM ratios of the Range
// Profiler's set need 2 passes together, and the hmma pipe has no PM counter under its usual
// name. The "TPC.TriageCompute." counters (the group NVIDIA's own PM-sampling sections use) give
// instructions issued and the hmma pipe in one pass with warps active, DRAM bytes, L2 sectors
// and the clock. "_active" ratios: not diluted by the idle part of a sample a kernel shares
// (data/counter_split.h). The second name of each row is the fallback for other chips; a row
// that would add a pass is left out and said at start.
std::vector<std::vector<std::string>> default_sampling_metrics() {
  return {
      {"dram__bytes_read.sum"},
      {"dram__bytes_write.sum"},
      // Not TPC.TriageCompute.tpc__warps_active_realtime: one pass too, but twice ncu's
      // sm__warps_active on an H100 GEMM (28.4% vs 14.8%).
      {"sm__warps_active.avg.pct_of_peak_sustained_active"},
      {"TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_active",
       "sm__inst_executed.avg.pct_of_peak_sustained_active"},
      {"TPC.TriageCompute.sm__pipe_tensor_op_hmma_cycles_active_realtime.avg.pct_of_peak_"
       "sustained_active",
       "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"},
      {"lts__t_sectors.sum"},
      {"gpc__cycles_elapsed.avg.per_second"},
  };
}

std::string CounterConfig::canonical() const {
  if (!enabled) return "";
  std::string s = "counters";
  if (user_metrics) {
    s += ":metrics=";
    for (size_t i = 0; i < metrics.size(); ++i) {
      if (i) s += ',';
      s += metrics[i].front();
    }
  }
  if (range_profiler) s += range == CounterRange::kAuto ? ":range=auto" : ":range=user";
  if (replay) s += ":replay";
  s += range_profiler && pm_sampling ? ":sampling=both"
       : range_profiler              ? ":sampling=range"
                                     : ":sampling=pm";
  if (pm_sampling) s += ":interval_us=" + std::to_string(interval_us);
  return s;
}

}  // namespace proton
