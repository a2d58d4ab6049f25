// An append-only array whose elements never move, readable without a lock.
//
// Writers append under a caller-held mutex; readers index any element whose index they learned
// after it was published (the index travels through an atomic or a lock handoff). Storage grows
// in fixed chunks and the chunk table has a fixed size, so no reader ever sees a reallocation.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <stdexcept>

namespace proton {

template <typename T, size_t kChunkBits = 12, size_t kMaxChunks = 4096>
class ChunkedArray {
 public:
  static constexpr size_t kChunkSize = size_t{1} << kChunkBits;
  static constexpr size_t kCapacity = kChunkSize * kMaxChunks;

  ChunkedArray() = default;
  ChunkedArray(const ChunkedArray&) = delete;
  ChunkedArray& operator=(const ChunkedArray&) = delete;
  ~ChunkedArray() {
    for (auto& c : chunks_)
      delete[] c.load(std::memory_order_relaxed);
  }

  /// Appends and returns the new index. Caller serialises writers.
  size_t push_back(T value) {
    size_t i = size_.load(std::memory_order_relaxed);
    if (i >= kCapacity) throw std::length_error("ChunkedArray capacity exhausted");
    auto& slot = chunks_[i >> kChunkBits];
    T* chunk = slot.load(std::memory_order_relaxed);
    if (chunk == nullptr) {
      chunk = new T[kChunkSize]();
      slot.store(chunk, std::memory_order_release);
    }
    chunk[i & (kChunkSize - 1)] = std::move(value);
    size_.store(i + 1, std::memory_order_release);
    return i;
  }

  const T& operator[](size_t i) const {
    return chunks_[i >> kChunkBits].load(std::memory_order_acquire)[i & (kChunkSize - 1)];
  }
  size_t size() const { return size_.load(std::memory_order_acquire); }

 private:
  std::array<std::atomic<T*>, kMaxChunks> chunks_{};
  std::atomic<size_t> size_{0};
};

}  // namespace proton
