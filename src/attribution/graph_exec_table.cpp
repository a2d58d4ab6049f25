#include "attribution/graph_exec_table.h"

#include <bit>

namespace proton {

GraphExecTable& GraphExecTable::global() {
  static auto* table = new GraphExecTable();  // leaked: launch callbacks may run during exit
  return *table;
}

GraphExecTable::Table::Table(size_t capacity)
    : mask(capacity - 1),
      shift(static_cast<unsigned>(64 - std::countr_zero(capacity))),
      slots(new Slot[capacity]) {}

GraphExecTable::GraphExecTable(size_t capacity) {
  all_.push_back(std::make_unique<Table>(std::bit_ceil(capacity < 16 ? size_t{16} : capacity)));
  table_.store(all_.back().get(), std::memory_order_release);
}

GraphExecTable::~GraphExecTable() = default;

void GraphExecTable::insert(Table& t, uintptr_t handle, uint32_t value) {
  size_t reuse = t.mask + 1;  // first erased slot on the probe path
  for (size_t i = slot_of(t, handle), n = 0; n <= t.mask; i = (i + 1) & t.mask, ++n) {
    uintptr_t key = t.slots[i].key.load(std::memory_order_relaxed);
    if (key == handle) {
      t.slots[i].value.store(value, std::memory_order_relaxed);
      return;
    }
    if (key == kErased && reuse > t.mask) reuse = i;
    if (key == kEmpty) {
      if (reuse > t.mask) reuse = i;
      break;
    }
  }
  // rebuild() keeps the table at most half full, so a free slot always exists.
  Slot& s = t.slots[reuse];
  if (s.key.load(std::memory_order_relaxed) == kErased) --erased_;
  s.value.store(value, std::memory_order_relaxed);
  s.key.store(handle, std::memory_order_release);  // publishes the value to readers
  ++live_;
}

void GraphExecTable::rebuild(size_t capacity) {
  Table& old = *table_.load(std::memory_order_relaxed);
  auto fresh = std::make_unique<Table>(capacity);
  live_ = 0;
  erased_ = 0;
  for (size_t i = 0; i <= old.mask; ++i) {
    uintptr_t key = old.slots[i].key.load(std::memory_order_relaxed);
    if (key != kEmpty && key != kErased) {
      insert(*fresh, key, old.slots[i].value.load(std::memory_order_relaxed));
    }
  }
  table_.store(fresh.get(), std::memory_order_release);
  all_.push_back(std::move(fresh));
}

void GraphExecTable::set(uintptr_t handle, uint32_t value) {
  if (handle == kEmpty || handle == kErased) return;
  std::lock_guard lock(mu_);
  Table* t = table_.load(std::memory_order_relaxed);
  size_t capacity = t->mask + 1;
  if (2 * (live_ + erased_ + 1) > capacity) {
    rebuild(2 * (live_ + 1) > capacity / 2 ? capacity * 2 : capacity);
    t = table_.load(std::memory_order_relaxed);
  }
  insert(*t, handle, value);
}

void GraphExecTable::erase(uintptr_t handle) {
  std::lock_guard lock(mu_);
  Table& t = *table_.load(std::memory_order_relaxed);
  for (size_t i = slot_of(t, handle), n = 0; n <= t.mask; i = (i + 1) & t.mask, ++n) {
    uintptr_t key = t.slots[i].key.load(std::memory_order_relaxed);
    if (key == kEmpty) return;
    if (key == handle) {
      t.slots[i].key.store(kErased, std::memory_order_release);
      --live_;
      ++erased_;
      return;
    }
  }
}

void GraphExecTable::clear() {
  std::lock_guard lock(mu_);
  Table& t = *table_.load(std::memory_order_relaxed);
  for (size_t i = 0; i <= t.mask; ++i)
    t.slots[i].key.store(kEmpty, std::memory_order_release);
  live_ = 0;
  erased_ = 0;
}

size_t GraphExecTable::size() const {
  std::lock_guard lock(mu_);
  return live_;
}

}  // namespace proton
