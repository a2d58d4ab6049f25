// libFuzzer target: any bytes as a kernel's profile scratch, through the decoder and the steps
// after it (region totals, timeline spans). The first 4 bytes pick the layout (warps, data size,
// selected warps), the rest is the buffer. Sanitizers catch anything but a clean result.
#include <cstddef>
#include <cstdint>
#include <span>

#include "backends/instrumentation/region_totals.h"
#include "backends/instrumentation/scratch_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proton::instr;
  if (size < 4) return 0;
  KernelLayout layout;
  layout.num_warps = 1u << (data[0] % 6);            // 1..32 warps
  const uint32_t data_bytes = 8u << (data[1] % 12);  // 8 B .. 16 KB
  layout.scratch_bytes = 40 + 4 * layout.num_warps + data_bytes + (data[2] % 3) * 8;
  for (uint32_t w = 0; w < layout.num_warps && w < 8; ++w)  // selected warps from a mask
    if (data[3] & (1u << w)) layout.units.push_back(w);
  DecodeResult r = decode_scratch(std::span<const uint8_t>(data + 4, size - 4), layout);
  KernelInfo k;
  k.layout = layout;
  k.scope_parents.assign(256, -1);
  k.scope_parents[1] = 0;
  k.scope_parents[0] = 1;  // a cycle in bad metadata must not loop
  (void)region_totals(k, r);
  (void)region_spans(k, r, 1980000);
  return 0;
}
