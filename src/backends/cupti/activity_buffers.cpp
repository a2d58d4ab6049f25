#include "backends/cupti/activity_buffers.h"

#include <algorithm>
#include <cstdlib>

namespace proton::cupti {

namespace {

constexpr size_t kRecordAlign = 8;  // CUPTI requires 8-byte aligned buffers

size_t round_up(size_t n) {
  n = std::max(n, kRecordAlign);
  return (n + kRecordAlign - 1) / kRecordAlign * kRecordAlign;
}

// Guards g_consumer. Held across consume(), so clearing the consumer waits for a delivery in
// progress. Lock order: g_consumer_mu -> RecordProcessor::mu_ (consume() calls process()).
std::mutex g_consumer_mu;
BufferConsumer* g_consumer = nullptr;  // guarded by g_consumer_mu

}  // namespace

BufferPool::~BufferPool() {
  for (uint8_t* b : free_)
    std::free(b);
}

void BufferPool::configure(size_t buffer_bytes, size_t max_buffers) {
  std::lock_guard lock(mu_);
  size_t bytes = round_up(buffer_bytes);
  if (bytes != bytes_) {
    for (uint8_t* b : free_)
      std::free(b);
    free_.clear();
    allocated_ = 0;  // lent buffers of the old size are freed when CUPTI returns them
    bytes_ = bytes;
  }
  max_ = std::max<size_t>(max_buffers, 1);
  free_.reserve(max_);
}

uint8_t* BufferPool::acquire(size_t& size) {
  std::lock_guard lock(mu_);
  size = 0;
  if (!free_.empty()) {
    uint8_t* b = free_.back();
    free_.pop_back();
    size = bytes_;
    return b;
  }
  if (allocated_ >= max_) {
    ++declined_;
    return nullptr;
  }
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlign, bytes_));
  if (b == nullptr) {
    ++declined_;
    return nullptr;
  }
  ++allocated_;
  size = bytes_;
  return b;
}

void BufferPool::release(uint8_t* buffer, size_t size) {
  if (buffer == nullptr) return;
  std::lock_guard lock(mu_);
  if (size != bytes_ || free_.size() >= max_) {
    // A buffer of an older configuration (or beyond a lowered cap): give the memory back.
    if (size == bytes_ && allocated_ > 0) --allocated_;
    std::free(buffer);
    return;
  }
  free_.push_back(buffer);  // never reallocates: capacity reserved in configure()
}

BufferPool::Stats BufferPool::stats() const {
  std::lock_guard lock(mu_);
  return Stats{bytes_, allocated_, free_.size(), declined_};
}

BufferPool& buffer_pool() {
  static auto* pool = new BufferPool();  // leaked: see the header
  return *pool;
}

void set_buffer_consumer(BufferConsumer* consumer) {
  std::lock_guard lock(g_consumer_mu);
  g_consumer = consumer;
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  size_t n = 0;
  *buffer = buffer_pool().acquire(n);
  *size = n;
  *max_records = 0;  // fill the buffer as far as it goes
}

void CUPTIAPI on_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t size,
                                  size_t valid_bytes) {
  {
    std::lock_guard lock(g_consumer_mu);
    if (g_consumer != nullptr) g_consumer->consume(buffer, valid_bytes);
  }
  buffer_pool().release(buffer, size);
}

}  // namespace proton::cupti
