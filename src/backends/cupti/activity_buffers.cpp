#include "backends/cupti/activity_buffers.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>

#include "common/thread_name.h"

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

std::atomic<bool> g_buffer_thread{false};

struct Completed {
  uint8_t* buffer;
  size_t size;
  size_t valid_bytes;
};

void deliver(const Completed& c) {
  {
    std::lock_guard lock(g_consumer_mu);
    if (g_consumer != nullptr) g_consumer->consume(c.buffer, c.valid_bytes);
  }
  buffer_pool().release(c.buffer, c.size);
}

// The worker behind set_buffer_thread(true): a FIFO of completed buffers and one thread
// delivering them. One per process: a forked child gets a new one (the parent's thread does
// not exist there, and its lock may have been held at the fork), the old one is leaked.
class DeliveryWorker {
 public:
  DeliveryWorker() : pid_(getpid()) {}

  // False when no thread could be started: the caller delivers inline.
  bool enqueue(const Completed& c) {
    std::lock_guard lock(mu_);
    if (!started_) {
      try {
        std::thread([this] {
          name_this_thread("proton-records");
          run();
        }).detach();
      } catch (...) {
        return false;
      }
      started_ = true;
    }
    queue_.push_back(c);  // allocates a deque chunk now and then: once per buffer, not launch
    work_.notify_one();
    return true;
  }

  bool wait_idle(std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    return idle_.wait_for(lock, limit, [this] { return queue_.empty() && !busy_; });
  }

  pid_t pid() const { return pid_; }

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      work_.wait(lock, [this] { return !queue_.empty(); });
      Completed c = queue_.front();
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      deliver(c);
      lock.lock();
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }

  const pid_t pid_;
  std::mutex mu_;  // guards the fields below
  std::condition_variable work_, idle_;
  std::deque<Completed> queue_;
  bool busy_ = false;  // a buffer taken off the queue is being delivered
  bool started_ = false;
};

std::mutex g_worker_mu;                          // guards replacing g_worker
std::atomic<DeliveryWorker*> g_worker{nullptr};  // leaked: its thread may outlive main

DeliveryWorker* worker() {
  DeliveryWorker* w = g_worker.load(std::memory_order_acquire);
  if (w != nullptr && w->pid() == getpid()) return w;
  std::lock_guard lock(g_worker_mu);
  w = g_worker.load(std::memory_order_relaxed);
  if (w == nullptr || w->pid() != getpid()) {
    w = new DeliveryWorker();
    g_worker.store(w, std::memory_order_release);
  }
  return w;
}

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

void BufferPool::reserve(size_t count) {
  std::lock_guard lock(mu_);
  while (allocated_ < std::min(count, max_)) {
    auto* b = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlign, bytes_));
    if (b == nullptr) return;  // no memory now: buffers come on demand, as without reserve
    std::memset(b, 0, bytes_);
    ++allocated_;
    free_.push_back(b);  // within the capacity configure() reserved
  }
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

void set_buffer_thread(bool on) {
  g_buffer_thread.store(on, std::memory_order_relaxed);
}

bool wait_for_deliveries(std::chrono::milliseconds limit) {
  DeliveryWorker* w = g_worker.load(std::memory_order_acquire);
  return w == nullptr || w->pid() != getpid() || w->wait_idle(limit);
}

void set_buffer_consumer(BufferConsumer* consumer) {
  wait_for_deliveries();
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
  Completed c{buffer, size, valid_bytes};
  if (g_buffer_thread.load(std::memory_order_relaxed) && worker()->enqueue(c)) return;
  deliver(c);
}

}  // namespace proton::cupti
