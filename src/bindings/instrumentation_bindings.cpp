// proton._proton's instrumentation functions (python/proton/hooks/instrumentation.py calls
// them): translation only; the runtime is src/backends/instrumentation, whose pools the
// sessions open and close (session/runtime.cpp).
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attribution/launch_stage.h"
#include "backends/instrumentation/instr_runtime.h"
#include "common/hot.h"
#include "common/name_table.h"
#include "context/thread_context.h"
#include "session/runtime.h"

namespace nb = nanobind;
using namespace proton;

namespace proton {

namespace {

// What the decoder and the tree need of a kernel: its layout and its scope ids' names and
// parents (from Triton's analysis of the kernel, or the caller's for CUDA C++ kernels).
instr::KernelInfo kernel_info(const std::string& name, instr::KernelLayout layout,
                              const std::vector<std::pair<uint32_t, std::string>>& names,
                              const std::vector<std::pair<uint32_t, uint32_t>>& parents) {
  instr::KernelInfo k;
  k.name = NameTable::global().intern(name);
  k.layout = std::move(layout);
  k.scope_names.assign(256, kNoName);
  k.scope_parents.assign(256, -1);
  for (const auto& [id, n] : names)
    if (id < 256) k.scope_names[id] = NameTable::global().intern(n);
  for (const auto& [id, parent] : parents)
    if (id < 256) k.scope_parents[id] = static_cast<int32_t>(parent);
  return k;
}

}  // namespace

void bind_instrumentation(nb::module_& m) {
  // Sessions open, drain and close the runtime's pools themselves (Runtime::start/finalize).
  m.def("instr_drain", [] {
    nb::gil_scoped_release release;
    instr::InstrRuntime::get().drain();
  });
  m.def(
      "instr_register_kernel",
      [](uint64_t function, const std::string& name, uint32_t num_warps, uint32_t scratch,
         std::vector<uint32_t> units, std::vector<std::pair<uint32_t, std::string>> names,
         std::vector<std::pair<uint32_t, uint32_t>> parents, uint32_t group_warps,
         uint32_t segments) {
        instr::KernelInfo k = kernel_info(
            name, instr::KernelLayout{num_warps, scratch, std::move(units), 0, segments}, names,
            parents);
        k.group_warps = group_warps == 0 ? 1 : group_warps;
        instr::InstrRuntime::get().register_kernel(function, std::move(k));
      },
      nb::arg("function"), nb::arg("name"), nb::arg("num_warps"), nb::arg("scratch"),
      nb::arg("units"), nb::arg("names"), nb::arg("parents"), nb::arg("group_warps") = 1,
      nb::arg("segments") = 0);
  m.def("instr_alloc", [](uint64_t size, uint64_t alignment, nb::handle stream) {
    uint64_t s = stream.is_none() ? 0 : nb::cast<uint64_t>(stream);
    return instr::InstrRuntime::get().alloc(size, alignment, s);
  });
  m.def("instr_launch_exit", [](uint64_t function, uint64_t stream) {
    instr::InstrRuntime::get().launch_exit(
        function, stream, ThreadContext::launch_context(),
        LaunchStage::active_sessions.load(std::memory_order_relaxed));
  });
  // Whether the launch callbacks queue each launch's copy-back (no Python exit hook needed):
  // asked when the first instrumentation session starts, after kernel timing started.
  m.def("instr_exit_via_callback", [](bool enable) {
    bool on = enable && hot::globals.launch_callbacks_on.load(std::memory_order_relaxed);
    instr::InstrRuntime::get().set_exit_via_callback(on);
    return on;
  });
  m.def("instr_stats", [] {
    instr::InstrStats s = instr::InstrRuntime::get().stats();
    nb::dict d;
    d["launches"] = s.launches;
    d["decoded"] = s.decoded;
    d["overflows"] = s.overflows;
    d["largest_overflow_bytes"] = s.largest_overflow;
    d["paused"] = s.paused;
    d["failed_launches"] = s.failed_launches;
    d["bytes_reserved"] = s.bytes_reserved;
    d["unknown_kernels"] = s.unknown_kernels;
    d["copy_errors"] = s.copy_errors;
    d["samples"] = s.samples;
    d["wrapped_units"] = s.wrapped_units;
    d["overwritten_events"] = s.overwritten_events;
    d["unmatched_events"] = s.unmatched_events;
    d["corrupt_ctas"] = s.corrupt_ctas;
    d["bytes_copied"] = s.bytes_copied;
    d["pool_bytes"] = s.pool_bytes;
    d["max_in_flight_bytes"] = s.max_in_flight_bytes;
    d["batches"] = s.batches;
    d["copy_wait_ns"] = s.copy_wait_ns;
    d["decode_ns"] = s.decode_ns;
    d["deliver_ns"] = s.deliver_ns;
    d["full_wait_ns"] = s.full_wait_ns;
    d["abandoned_slices"] = s.abandoned_slices;
    d["wakes"] = s.wakes;
    d["wake_ns"] = s.wake_ns;
    d["deferred_wakes"] = s.deferred_wakes;
    d["other_context_launches"] = s.other_context_launches;
    d["decoder_held_bytes"] = s.decoder_held_bytes;
    d["slow_allocs"] = s.slow_allocs;
    d["slow_alloc_ns"] = s.slow_alloc_ns;
    d["staging_allocs"] = s.staging_allocs;
    d["staging_alloc_ns"] = s.staging_alloc_ns;
    d["graph_launches"] = s.graph_launches;
    d["graph_bytes"] = s.graph_bytes;
    d["graph_replays"] = s.graph_replays;
    d["graph_dropped"] = s.graph_dropped;
    d["graph_unheard"] = s.graph_unheard;
    d["capture_syncs"] = s.capture_syncs;
    d["decoder_threads"] = instr::InstrRuntime::get().decoder_threads;
    d["errors"] = instr::InstrRuntime::get().errors();
    return d;
  });
  // Regions of a kernel recorded elsewhere (include/proton/instrument.cuh, or a dumped
  // Triton buffer), decoded now and added under the current context of every active session.
  m.def("instr_add_host",
        [](const std::string& name, nb::bytes data, uint32_t num_warps, uint32_t scratch,
           std::vector<uint32_t> units, std::vector<std::pair<uint32_t, std::string>> names,
           std::vector<std::pair<uint32_t, uint32_t>> parents, uint32_t clock_khz) {
          instr::KernelInfo k = kernel_info(
              name, instr::KernelLayout{num_warps, scratch, std::move(units), 0}, names, parents);
          instr::DecodeResult r = instr::decode_scratch(
              {reinterpret_cast<const uint8_t*>(data.c_str()), data.size()}, k.layout);
          Runtime::get().add_host_regions(k, r, clock_khz);
          nb::dict d;
          d["samples"] = r.samples.size();
          d["ctas"] = r.ctas.size();
          d["wrapped_units"] = r.wrapped_units;
          d["unmatched_events"] = r.unmatched_events;
          d["async_events"] = r.async_events;
          d["cross_unit_events"] = r.cross_unit_events;
          d["unmatched_async"] = r.unmatched_async;
          d["corrupt_ctas"] = r.corrupt_ctas;
          d["errors"] = r.errors;
          return d;
        });
  // Decodes raw profile-scratch bytes with the runtime's decoder (probes, tests, tools).
  m.def("instr_decode",
        [](nb::bytes data, uint32_t num_warps, uint32_t scratch, std::vector<uint32_t> units) {
          instr::KernelLayout layout{num_warps, scratch, std::move(units), 0};
          instr::DecodeResult r = instr::decode_scratch(
              {reinterpret_cast<const uint8_t*>(data.c_str()), data.size()}, layout);
          nb::list samples;
          for (const auto& s : r.samples)
            samples.append(nb::make_tuple(s.cta, s.sm, s.unit, s.scope, s.start_cycle, s.end_cycle,
                                          s.end_unit, s.async));
          nb::list ctas;
          for (const auto& c : r.ctas)
            ctas.append(nb::make_tuple(c.cta, c.sm, c.init_ns, c.pre_final_ns, c.post_final_ns));
          nb::dict d;
          d["samples"] = samples;
          d["ctas"] = ctas;
          d["wrapped_units"] = r.wrapped_units;
          d["overwritten_events"] = r.overwritten_events;
          d["unmatched_events"] = r.unmatched_events;
          d["async_events"] = r.async_events;
          d["cross_unit_events"] = r.cross_unit_events;
          d["unmatched_async"] = r.unmatched_async;
          d["skipped_ctas"] = r.skipped_ctas;
          d["corrupt_ctas"] = r.corrupt_ctas;
          d["errors"] = r.errors;
          return d;
        });
}

}  // namespace proton
