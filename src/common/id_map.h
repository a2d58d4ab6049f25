// A hash map from 64-bit ids (correlation ids) to small plain records, for the record thread.
//
// The record processor inserts a launch tag per kernel launch and erases it when the kernel's
// record comes, millions of times a second: a node-based map paid a malloc and a free for each
// (about 12% of attribution time). This one keeps every item in one array (open addressing,
// linear probing) and never allocates once it has grown to the working set: erasing shifts the
// items after it back (no tombstones, so churn never degrades probes or forces a rehash), and
// the array doubles when 3/4 full and only shrinks on reset().
//
// The array comes from calloc: large ones are fresh zeroed pages from mmap, resident only
// once an item lands in them, and given back to the system when the map outgrows or resets
// them. So a generous initial capacity costs address space, not memory, and growing past it
// costs the new array minus the old one (a heap array outgrown would stay resident).
//
// Keys are hashed by Fibonacci multiplication, which spreads consecutive ids (how correlation
// ids come) evenly. Key 0 marks an empty slot, so an item with key 0 lives beside the array.
//
// Not thread-safe: the owner's lock guards it. Any insert or erase may move items, so an Item*
// is valid only until the next insert or erase.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace proton {

template <typename V>
class IdMap {
 public:
  // An aggregate of plain members, so calloc'd zero bytes are valid empty items.
  struct Item {
    uint64_t key() const { return key_; }

    uint64_t key_;  // 0 = empty slot (except for zero_); the map's to write
    V value;
  };

  /// `initial_capacity` slots (rounded up to a power of two, at least 8), allocated now.
  explicit IdMap(size_t initial_capacity = 64)
      : initial_capacity_(std::bit_ceil(initial_capacity < 8 ? size_t{8} : initial_capacity)) {
    // Checked here, not in the class body: a V nested in the map's owner is not default-
    // constructible yet where the member is declared (its member initialisers come later).
    static_assert(std::is_trivially_copyable_v<V> && std::is_default_constructible_v<V> &&
                      std::is_aggregate_v<V>,
                  "IdMap holds plain records: items are moved by copying and never destroyed, "
                  "and an all-zero item is an empty one");
    allocate(initial_capacity_);
  }
  IdMap(const IdMap&) = delete;
  IdMap& operator=(const IdMap&) = delete;

  size_t size() const { return used_ + (has_zero_ ? 1 : 0); }
  bool empty() const { return size() == 0; }
  /// Slots in the array (grows by doubling; tests watch it).
  size_t capacity() const { return mask_ + 1; }

  Item* find(uint64_t key) {
    if (key == 0) return has_zero_ ? &zero_ : nullptr;
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Item& slot = slots_[i];
      if (slot.key_ == key) return &slot;
      if (slot.key_ == 0) return nullptr;
    }
  }
  const Item* find(uint64_t key) const { return const_cast<IdMap*>(this)->find(key); }

  /// Inserts `value` under `key` unless the key is there; returns the item and whether it was
  /// inserted (an existing item is left as it was, like std::unordered_map::try_emplace).
  std::pair<Item*, bool> try_emplace(uint64_t key, const V& value) {
    if (key == 0) {
      if (has_zero_) return {&zero_, false};
      has_zero_ = true;
      zero_.value = value;
      return {&zero_, true};
    }
    if ((used_ + 1) * 4 > capacity() * 3) grow();
    size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      Item& slot = slots_[i];
      if (slot.key_ == key) return {&slot, false};
      if (slot.key_ == 0) break;
    }
    Item& slot = slots_[i];
    slot.key_ = key;
    slot.value = value;
    ++used_;
    return {&slot, true};
  }

  /// Erases the item `find` or `try_emplace` returned.
  void erase(Item* item) {
    if (item == &zero_) {
      has_zero_ = false;
      return;
    }
    // Backward-shift deletion: walk the run after the hole and move back every item whose home
    // slot is not between the hole and where it sits, so each item stays reachable from home.
    size_t hole = static_cast<size_t>(item - slots_.get());
    for (size_t j = (hole + 1) & mask_; slots_[j].key_ != 0; j = (j + 1) & mask_) {
      size_t from_home = (j - home(slots_[j].key_)) & mask_;
      size_t from_hole = (j - hole) & mask_;
      if (from_home >= from_hole) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].key_ = 0;
    --used_;
  }
  /// Erases `key`; false if it was not there.
  bool erase(uint64_t key) {
    Item* item = find(key);
    if (item == nullptr) return false;
    erase(item);
    return true;
  }

  /// Empties the map and keeps its capacity.
  void clear() {
    for (size_t i = 0; i <= mask_; ++i)
      slots_[i].key_ = 0;
    used_ = 0;
    has_zero_ = false;
  }
  /// Empties the map and gives back its memory (a fresh array of the initial capacity).
  void reset() {
    // A fresh array even at the initial capacity: clearing would write, and so keep resident,
    // every page of it; a calloc'd one costs nothing until used.
    has_zero_ = false;
    allocate(initial_capacity_);
  }

  /// Calls fn(key, value&) for every item, in no particular order. fn must not insert or erase.
  template <typename Fn>
  void for_each(Fn&& fn) {
    if (has_zero_) fn(uint64_t{0}, zero_.value);
    for (size_t i = 0; i <= mask_; ++i) {
      if (slots_[i].key_ != 0) fn(slots_[i].key_, slots_[i].value);
    }
  }

 private:
  size_t home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  struct Free {
    void operator()(Item* p) const { std::free(p); }
  };
  using Slots = std::unique_ptr<Item[], Free>;

  void allocate(size_t slots) {
    // calloc creates the (implicit-lifetime) items, all zero: every key_ is 0.
    slots_ = Slots(static_cast<Item*>(std::calloc(slots, sizeof(Item))));
    if (slots_ == nullptr) throw std::bad_alloc();
    mask_ = slots - 1;
    shift_ = 64 - std::countr_zero(slots);
    used_ = 0;
  }

  void grow() {
    Slots old = std::move(slots_);
    size_t old_slots = capacity();
    allocate(old_slots * 2);
    for (size_t i = 0; i < old_slots; ++i) {
      if (old[i].key_ == 0) continue;
      size_t j = home(old[i].key_);
      while (slots_[j].key_ != 0)
        j = (j + 1) & mask_;
      slots_[j] = old[i];
      ++used_;
    }
  }

  size_t initial_capacity_;
  Slots slots_;
  size_t mask_ = 0;
  int shift_ = 64;   // home(key) keeps the top log2(capacity) bits of the product
  size_t used_ = 0;  // items in slots_ (zero_ not counted)
  bool has_zero_ = false;
  Item zero_{};  // the item of key 0, when has_zero_
};

}  // namespace proton
