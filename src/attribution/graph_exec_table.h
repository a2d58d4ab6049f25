// Executable CUDA graphs as the launch callback sees them: handle -> kernels per launch.
//
// Read on every graph launch (application threads, inside the launch callback) and written
// only when an executable graph is instantiated or destroyed (resource callbacks), so readers
// take no lock: the table is open-addressed over atomic slots, and a writer publishes a slot by
// storing its value before its key (release). Writers serialise on a mutex. When erased slots
// (tombstones) or live entries fill half the table, the writer builds a fresh table and
// publishes it with one pointer store; the old one is kept, never freed, because a launch
// callback on another thread may still be probing it (rebuilds happen once per hundreds of
// destroyed graphs, so the kept tables stay small).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

namespace proton {

class GraphExecTable {
 public:
  /// find(): the handle was never registered (instantiated before profiling started).
  static constexpr uint32_t kUnknown = std::numeric_limits<uint32_t>::max();

  static GraphExecTable& global();

  explicit GraphExecTable(size_t capacity = 1024);
  ~GraphExecTable();
  GraphExecTable(const GraphExecTable&) = delete;
  GraphExecTable& operator=(const GraphExecTable&) = delete;

  /// Lock-free, allocation-free: the value stored for `handle`, or kUnknown.
  uint32_t find(uintptr_t handle) const noexcept {
    const Table* t = table_.load(std::memory_order_acquire);
    for (size_t i = slot_of(*t, handle), n = 0; n <= t->mask; i = (i + 1) & t->mask, ++n) {
      uintptr_t key = t->slots[i].key.load(std::memory_order_acquire);
      if (key == handle) return t->slots[i].value.load(std::memory_order_relaxed);
      if (key == kEmpty) return kUnknown;
    }
    return kUnknown;
  }

  /// Registers (or updates) `handle`. Takes the writer mutex; may allocate.
  void set(uintptr_t handle, uint32_t value);
  /// Forgets `handle` (its executable graph is being destroyed).
  void erase(uintptr_t handle);
  /// Forgets every handle: the backend stopped watching, so a handle may be reused unseen.
  void clear();
  size_t size() const;

 private:
  static constexpr uintptr_t kEmpty = 0;
  static constexpr uintptr_t kErased = 1;  // handles are aligned pointers: never 0 or 1

  struct Slot {
    std::atomic<uintptr_t> key{kEmpty};
    std::atomic<uint32_t> value{kUnknown};
  };
  struct Table {
    explicit Table(size_t capacity);  // capacity: a power of two
    size_t mask;
    unsigned shift;  // 64 - log2(capacity)
    std::unique_ptr<Slot[]> slots;
  };

  static size_t slot_of(const Table& t, uintptr_t handle) noexcept {
    // Handles are heap pointers: drop the alignment bits, then Fibonacci-hash.
    return static_cast<size_t>(((handle >> 4) * 0x9E3779B97F4A7C15ull) >> t.shift);
  }
  void insert(Table& t, uintptr_t handle, uint32_t value);  // requires mu_
  void rebuild(size_t capacity);                            // requires mu_

  std::atomic<Table*> table_;
  mutable std::mutex mu_;                    // guards the fields below and all slot writes
  std::vector<std::unique_ptr<Table>> all_;  // every table ever published (see above)
  size_t live_ = 0;
  size_t erased_ = 0;
};

}  // namespace proton
