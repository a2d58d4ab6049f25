// libFuzzer target: PM samples and kernel records as CUPTI may hand them over, into the split
// (data/counter_split.h). Timestamps and values come from the GPU and the driver: out of order,
// overlapping, empty, NaN, on unknown devices. Any stream of them must resolve without a crash,
// give finite shares in [0, 1] per sample, and stay within the limits.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "data/counter_split.h"

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  template <typename T>
  bool get(T& out) {
    if (n < sizeof(T)) return false;
    std::memcpy(&out, p, sizeof(T));
    p += sizeof(T);
    n -= sizeof(T);
    return true;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const proton::CounterSchema schema({"a.sum", "b.pct"});
  proton::CounterSplit::Limits limits;
  limits.max_samples = 64;
  limits.max_kernels = 64;
  limits.min_lag_ns = 1000;
  proton::CounterSplit split(limits);
  split.set_rules({proton::CounterRule::kSum, proton::CounterRule::kTimeWeighted});
  Reader in{data, size};
  std::vector<proton::CounterSplit::Result> results;
  std::vector<double> values;
  uint8_t op = 0;
  while (in.get(op)) {
    uint16_t a = 0, b = 0;
    uint8_t device = 0;
    if (!in.get(a) || !in.get(b) || !in.get(device)) break;
    device &= 3;
    switch (op % 3) {
      case 0: {  // a batch of up to 8 samples from `a`, each `b`-ish long
        proton::CounterSamples batch;
        batch.schema = &schema;
        batch.device = device;
        uint8_t count = 0;
        in.get(count);
        uint64_t t = a;
        for (uint8_t i = 0; i < (count & 7); ++i) {
          uint16_t len = 0;
          double v0 = 0, v1 = 0;
          if (!in.get(len) || !in.get(v0) || !in.get(v1)) break;
          batch.start_ns.push_back(t);
          batch.end_ns.push_back(t + (len % 512));
          batch.values.push_back(v0);
          batch.values.push_back(v1);
          t += len % 600;
        }
        split.add_samples(batch);
        break;
      }
      case 1:
        split.add_kernel(device, a, uint64_t{a} + b, op >> 2);
        break;
      default:
        results.clear();
        values.clear();
        split.resolve(op & 4, results, values);
        if (values.size() != results.size() * 2) std::abort();
        for (const auto& r : results) {
          if (!(r.samples >= 0) || r.shared > r.samples + 1e-9 || r.sampled_ns == 0) std::abort();
        }
        // The session resolves after every batch of samples: that is what bounds them.
        if (split.kept_samples() > 4 * limits.max_samples) std::abort();
        break;
    }
    if (split.waiting_kernels() > 4 * (limits.max_kernels + 1)) std::abort();
  }
  results.clear();
  values.clear();
  split.resolve(true, results, values);
  return 0;
}
