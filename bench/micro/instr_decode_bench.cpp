// Not a test: the decoder thread's CPU cost per launch and per region, on synthetic launches
// laid out as the copy-back hands them to it (compact rows: each CTA's header, then only what
// each warp wrote; compact_copy.h), so no GPU is needed (docs/instrumentation.md, "Cost").
//
//   instr_decode_bench [rounds=7] [fresh]
//
// Cases: the wall-time loop of bench/instrumentation_bench.py (132 CTAs x 4 warps, one region)
// and a Hopper GEMM with a region per step of its tile loop (132 CTAs x 8 warps x 16 regions).
// Each round decodes `reps` launches into one reused result, as the decoder threads do
// (`fresh`: a new result per launch, as before 2026-11-26), keeping every region (a session
// with a timeline), then keeping only the per-scope sums (tree sessions), then the sums and
// the tree's totals made from them. Prints one JSON line per case: the best round's us per
// launch and ns per region.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/instrumentation/instr_runtime.h"
#include "backends/instrumentation/region_totals.h"
#include "common/name_table.h"
#include "scratch_builder.h"

namespace {

using namespace proton::instr;
using namespace proton::instr::testing;

struct Case {
  const char* name;
  uint32_t ctas, warps, regions;
  int reps;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const bool fresh = argc > 2 && std::strcmp(argv[2], "fresh") == 0;
  for (const Case& c : {Case{"wall_loop_one_region", 132, 4, 1, 4000},
                        Case{"gemm_region_per_step", 132, 8, 16, 200}}) {
    // Compact rows: each warp's segment is exactly what it wrote (2 events per region).
    ScratchBuilder b(c.warps, 16 * c.regions * c.warps, c.warps, 0);
    for (uint32_t cta = 0; cta < c.ctas; ++cta) {
      std::vector<std::vector<Event>> ev(c.warps);
      for (uint32_t w = 0; w < c.warps; ++w)
        for (uint32_t r = 0; r < c.regions; ++r) {
          ev[w].push_back({false, r % 4, 1000u + r * 700 + w});
          ev[w].push_back({true, r % 4, 1600u + r * 700 + w});
        }
      b.add_cta(cta, cta, ev);
    }
    KernelInfo k;
    k.name = proton::NameTable::global().intern("kernel");
    for (const char* scope : {"load", "mma", "epilogue", "store"})
      k.scope_names.push_back(proton::NameTable::global().intern(scope));
    k.scope_parents.assign(4, -1);
    k.layout = KernelLayout{c.warps, b.slice_bytes(), {}, 0, 0};
    // Per round: decoding with every region kept (a session with a timeline), with the sums
    // only (tree sessions), and the sums turned into the tree's totals as delivery does.
    double best_full = 1e30, best_sums = 1e30, best_totals = 1e30;
    uint64_t regions = 0;
    DecodeResult reused;
    for (int round = 0; round < rounds; ++round) {
      uint64_t n = 0, counted = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < c.reps; ++i) {
        if (fresh) {
          DecodeResult r = decode_scratch(b.bytes(), k.layout);
          n += r.samples.size();
        } else {
          decode_scratch_into(b.bytes(), k.layout, reused);
          n += reused.samples.size();
        }
      }
      best_full = std::min(best_full, seconds_since(t0) / c.reps);
      t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < c.reps; ++i)
        decode_scratch_into(b.bytes(), k.layout, reused, /*keep_samples=*/false);
      best_sums = std::min(best_sums, seconds_since(t0) / c.reps);
      t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < c.reps; ++i) {
        decode_scratch_into(b.bytes(), k.layout, reused, /*keep_samples=*/false);
        for (const proton::RegionTotals& t : region_totals(k, reused))
          counted += t.count;
      }
      best_totals = std::min(best_totals, seconds_since(t0) / c.reps);
      regions = n / c.reps;
      if (counted != n)
        std::fprintf(stderr, "summed %llu regions, decoded %llu\n",
                     static_cast<unsigned long long>(counted), static_cast<unsigned long long>(n));
    }
    std::printf(
        "{\"case\": \"%s\", \"regions_per_launch\": %llu, \"full_result\": \"%s\", "
        "\"full_us_per_launch\": %.2f, \"full_ns_per_region\": %.2f, "
        "\"sums_only_us_per_launch\": %.2f, \"sums_only_ns_per_region\": %.2f, "
        "\"sums_and_totals_us_per_launch\": %.2f}\n",
        c.name, static_cast<unsigned long long>(regions), fresh ? "fresh" : "reused",
        best_full * 1e6, best_full * 1e9 / regions, best_sums * 1e6, best_sums * 1e9 / regions,
        best_totals * 1e6);
  }
  return 0;
}
