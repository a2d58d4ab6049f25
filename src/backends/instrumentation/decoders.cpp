// The decoder threads of the instrumentation runtime: they take copied batches from the
// consumer (consumer.cpp) in chunks of launches, decode them and hand the regions to the
// sessions. The first decoder takes every batch; helpers join only while work waits, so a
// batch of big launches is shared launch by launch and a sparse run keeps one thread busy.
#include <algorithm>
#include <chrono>

#include "backends/instrumentation/instr_runtime_parts.h"

namespace proton::instr {

namespace {

// What a decoder's reused result holds (its vectors' capacity).
size_t held_bytes(const DecodeResult& r) {
  return r.samples.capacity() * sizeof(RegionSample) + r.ctas.capacity() * sizeof(CtaHeader);
}

}  // namespace

bool InstrRuntime::may_decode(size_t index) const {
  if (decode_queue_.empty()) return false;
  if (index == 0) return true;
  size_t untouched = 0;  // batches no decoder has started
  for (const auto& c : decode_queue_)
    untouched += c->next == 0 ? 1 : 0;
  return untouched > index || unclaimed_bytes_ > index * helper_bytes;
}

void InstrRuntime::decode_batches(size_t index) {
  DecodeResult decoded;  // every launch decodes into it: its vectors keep their capacity
  std::unique_lock lock(mu_);
  for (;;) {
    const auto work = [&] { return may_decode(index); };
    if (!work()) {
      // A timeline of dense launches leaves up to the largest launch's regions here (2 MB for
      // 65,536 regions, per thread): kept while batches keep coming (a fresh result per batch
      // would map and fault it in again), given back after kIdleTrimMs without work.
      decoder_held_[index] = held_bytes(decoded);
      if (decoder_held_[index] > kKeptDecodeBytes &&
          !decode_cvs_[index].wait_for(lock, std::chrono::milliseconds(kIdleTrimMs), work)) {
        decoded = DecodeResult{};
        decoder_held_[index] = 0;
      }
      decode_cvs_[index].wait(lock, work);
    }
    // Take the next jobs of the oldest batch, about kChunkBytes of records (at least one job).
    Copied* c = decode_queue_.front().get();
    const size_t begin = c->next;
    uint64_t taken = 0;
    size_t end = begin;
    do {
      taken += c->jobs[end]->work;
      ++end;
    } while (end < c->jobs.size() && taken + c->jobs[end]->work <= kChunkBytes);
    c->next = end;
    ++c->working;
    unclaimed_bytes_ -= taken;
    if (end == c->jobs.size()) {  // every job taken: out of the queue until its last is done
      decoding_.push_back(std::move(decode_queue_.front()));
      decode_queue_.pop_front();
    }
    RegionSink* sink = sink_;
    lock.unlock();
    // Counted here and added once per chunk: a lock and the shared counters' lines per launch
    // would be taken from the launching thread's side as often.
    DecodeCounts counts;
    const uint64_t t0 = now_ns();
    uint64_t deliver = 0;
    for (size_t j = begin; j < end; ++j)
      deliver += finish(*c->jobs[j], *c, sink, counts, decoded);
    const uint64_t t1 = now_ns();
    lock.lock();
    stats_.decode_ns += t1 - t0 - deliver;
    stats_.deliver_ns += deliver;
    add_counts(counts);
    --c->working;
    if (c->next == c->jobs.size() && c->working == 0) batch_decoded(*c);
  }
}

void InstrRuntime::count_decoded(const DecodeResult& r, DecodeCounts& counts) {
  ++counts.decoded;
  counts.samples += r.regions;  // regions decoded (samples are kept only for a timeline)
  counts.wrapped_units += r.wrapped_units;
  counts.overwritten_events += r.overwritten_events;
  counts.unmatched_events += r.unmatched_events;
  counts.corrupt_ctas += r.corrupt_ctas;
  for (auto& e : r.errors)
    if (counts.errors.size() < 8) counts.errors.push_back(e);
}

void InstrRuntime::add_counts(DecodeCounts& counts) {
  stats_.decoded += counts.decoded;
  stats_.samples += counts.samples;
  stats_.wrapped_units += counts.wrapped_units;
  stats_.overwritten_events += counts.overwritten_events;
  stats_.unmatched_events += counts.unmatched_events;
  stats_.corrupt_ctas += counts.corrupt_ctas;
  stats_.copy_errors += counts.copy_errors;
  stats_.unknown_kernels += counts.unknown_kernels;
  for (auto& e : counts.errors)
    if (errors_.size() < 8) errors_.push_back(std::move(e));
}

void InstrRuntime::batch_decoded(Copied& c) {
  // Its jobs are finished together, with the staging given back: drain() returning means no
  // decoder reads the batch's staging any more.
  for (auto& job : c.jobs) {
    if (job->launched) free_events_.push_back(job->launched);
    ++job->queue->finished;
    job->kernel.reset();
    free_jobs_.push_back(std::move(job));
  }
  c.jobs.clear();
  // The queues of threads that ended, once every record of theirs is done.
  std::erase_if(queues_, [](const std::shared_ptr<LaunchQueue>& q) {
    return q->writer_gone.load(std::memory_order_acquire) && q->finished == q->written();
  });
  give_staging(c);
  auto it = std::find_if(decoding_.begin(), decoding_.end(),
                         [&](const std::unique_ptr<Copied>& p) { return p.get() == &c; });
  free_copied_.push_back(std::move(*it));
  decoding_.erase(it);
  copied_cv_.notify_all();  // the consumer may wait for a Copied or for staging room
  done_cv_.notify_all();
}

uint64_t InstrRuntime::finish(Job& job, const Copied& c, RegionSink* sink, DecodeCounts& counts,
                              DecodeResult& r) {
  // Runs on the decoder thread without mu_, on the batch's host staging (the device slices may
  // already be handed out again).
  if (!job.launch_ok) return 0;  // counted at the launch
  if (!job.ok) {
    ++counts.copy_errors;
    return 0;
  }
  if (!job.kernel) {
    ++counts.unknown_kernels;
    return 0;
  }
  const KernelInfo& k = *job.kernel;
  if (job.run < c.runs.size()) {
    const SliceRun& run = c.runs[job.run];
    const size_t row_bytes = run.compact_bytes();
    decode_scratch_into({c.data + run.data_at + job.row * row_bytes, job.rows * row_bytes},
                        compact_layout(k.layout, run), r,
                        sink != nullptr && sink->wants_samples(job.sessions));
  } else {
    // A slice smaller than one CTA's header: the decoder says so.
    decode_scratch_into({}, k.layout, r);
  }
  count_decoded(r, counts);
  if (sink == nullptr) return 0;
  const uint64_t t0 = now_ns();
  sink->deliver(job.sessions, job.ctx, k, r, api_->device_id(), api_->sm_clock_khz());
  return now_ns() - t0;
}

}  // namespace proton::instr
