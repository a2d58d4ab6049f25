// The CUPTI side of PM sampling that Proton's sampler (pm_sampling.h) and the bench's floor
// (bench/native/pm_floor.h) share: the sizes chosen for an interval, enabling and configuring a
// device, and the decode loop. One copy, so that the floor runs exactly our settings and calls
// and differs from us only by what is done with the samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cupti/counters_api.h"

namespace proton::cupti {

/// Sizes for one sampling interval. The hardware buffer holds kBufferSpanNs of samples (a
/// delayed decode loses none), the counter-data image two decode periods.
struct PmSizes {
  uint32_t interval_us = 250;
  uint64_t hardware_buffer_bytes = 0;
  uint32_t image_samples = 0;
};
/// Our sizes for `interval_us`; a non-zero `buffer_mb` or `image_samples` (CounterConfig's,
/// from PROTON_PM_BUFFER_MB and PROTON_PM_IMAGE_SAMPLES) overrides ours.
PmSizes pm_sizes(uint32_t interval_us, uint32_t buffer_mb = 0, uint32_t image_samples = 0);
/// How often the decoding thread empties the hardware buffer.
inline constexpr uint32_t kPmDecodePeriodMs = 20;

/// The device PM sampling samples (samples are device-wide, one device per sampler): the
/// device of the calling thread's current context when there is one (`context_device` >= 0);
/// else `local_rank` (the launcher's LOCAL_RANK, -1 when unset) when it names a visible
/// device, as a rank of torchrun uses cuda:LOCAL_RANK and `torchrun -m proton` starts before
/// the script made a context; else device 0.
uint32_t pm_device_for(int context_device, int local_rank, int device_count);

/// The same, asking the driver. `local_rank`: the rank's as the Python layer detected it
/// (torchrun, Open MPI, MPICH, Slurm; io/run_info.h), -1 when unknown: then LOCAL_RANK.
uint32_t pm_device(const CountersApi& api, int local_rank);

/// The device's counter-availability image (empty when CUPTI gives none): the profiler host
/// needs it to configure PM-sampling metrics.
std::vector<uint8_t> pm_counter_availability(const CountersApi& api, uint32_t device);

/// Enables PM sampling on `device` with a configuration image (CounterHost::configure) for the
/// metrics `names`, sets the sizes, sizes and initialises `image`, and starts sampling in
/// GPU-time-interval mode keeping the latest samples. On failure sampling is disabled again,
/// `why` says which call refused, and the result is null. CUPTI keeps pointers to
/// `config_image` and `names`: both must live until pm_sampling_end (a floor that freed its
/// configuration image after start crashed in its first decode, inside libnvperf_host).
CUpti_PmSampling_Object* pm_sampling_begin(const CountersApi& api, uint32_t device,
                                           const std::vector<uint8_t>& config_image,
                                           const std::vector<const char*>& names,
                                           const PmSizes& sizes, std::vector<uint8_t>& image,
                                           std::string& why);
/// Stops sampling (call pm_decode once more after it for the last samples).
void pm_sampling_stop(const CountersApi& api, CUpti_PmSampling_Object* object);
/// Disables sampling on the device.
void pm_sampling_end(const CountersApi& api, CUpti_PmSampling_Object* object);

struct PmDecodeCounts {
  uint64_t decodes = 0;
  uint64_t overflows = 0;  // decodes that found the hardware buffer had overwritten samples
  uint64_t errors = 0;     // decode or info calls that failed (the loop then stops)
};

/// Decodes the hardware buffer into `image` until it is empty (at most 64 images). For each
/// image: `on_image(completed)` with its number of completed samples (read them with
/// cuptiPmSamplingCounterDataGetSampleInfo and CounterHost::evaluate by index); the image is
/// then initialised again for the next decode.
template <class OnImage>
void pm_decode(const CountersApi& api, CUpti_PmSampling_Object* object, std::vector<uint8_t>& image,
               PmDecodeCounts& counts, OnImage&& on_image);

/// One decode of `image` (DecodeData, then GetCounterDataInfo): false on an error (counted).
bool pm_decode_step(const CountersApi& api, CUpti_PmSampling_Object* object,
                    std::vector<uint8_t>& image, PmDecodeCounts& counts, size_t& completed,
                    bool& image_full);
/// Initialises `image` (again, after its samples were read).
CUptiResult pm_reset_image(const CountersApi& api, CUpti_PmSampling_Object* object,
                           std::vector<uint8_t>& image);

template <class OnImage>
void pm_decode(const CountersApi& api, CUpti_PmSampling_Object* object, std::vector<uint8_t>& image,
               PmDecodeCounts& counts, OnImage&& on_image) {
  for (int round = 0; round < 64; ++round) {
    size_t completed = 0;
    bool image_full = false;
    if (!pm_decode_step(api, object, image, counts, completed, image_full)) break;
    on_image(completed);
    pm_reset_image(api, object, image);
    if (!image_full) break;  // the hardware buffer is empty
  }
}

}  // namespace proton::cupti
