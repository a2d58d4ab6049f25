#include "data/comm_overlap.h"

#include <algorithm>

#include "common/name_table.h"
#include "format/collective_kernels.h"

namespace proton {

bool CommOverlap::is_comm(NameId name) {
  if (name == kNoName) return false;
  if (name >= names_.size()) names_.resize(name + 1, 0);
  if (names_[name] == 0)
    names_[name] = format::is_collective_kernel(NameTable::global().name(name)) ? 1 : 2;
  return names_[name] == 1;
}

CommOverlap::Device& CommOverlap::device(uint64_t key) {
  if (last_device_ < devices_.size() && devices_[last_device_].key == key)
    return devices_[last_device_];
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].key == key) {
      last_device_ = i;
      return devices_[i];
    }
  }
  devices_.emplace_back();
  devices_.back().key = key;
  last_device_ = devices_.size() - 1;
  return devices_.back();
}

void CommOverlap::note_stream(Device& d, uint32_t stream, uint64_t end_ns, bool comm) {
  d.max_end = std::max(d.max_end, end_ns);
  d.comm_seen |= comm;
  for (StreamEnd& s : d.streams) {
    if (s.stream == stream) {
      s.end = std::max(s.end, end_ns);
      s.comm |= comm;
      return;
    }
  }
  d.streams.push_back({stream, end_ns, comm});
}

void CommOverlap::ask_for_records(Device& d) {
  // Nothing awaited on a device that never ran a collective: the usual program's records stop
  // here. Then once per flush_lag_ns of the device's GPU time at most: a stream that stays quiet
  // (NCCL between steps, or done for good) costs a flush per lag, not one per record.
  if (!d.comm_seen || d.max_end < d.asked_at + limits_.flush_lag_ns) return;
  bool behind = !d.waiting.empty() && d.waiting_min_end + limits_.flush_lag_ns <= d.max_end;
  for (const StreamEnd& s : d.streams)
    behind |= s.comm && s.end + limits_.flush_lag_ns <= d.max_end;
  if (!behind) return;
  d.asked_at = d.max_end;
  flush_wanted_ = true;
}

void CommOverlap::add(uint64_t key, uint32_t stream, uint64_t start_ns, uint64_t end_ns, bool comm,
                      const Site& site) {
  if (end_ns <= start_ns) return;  // an empty or damaged record overlaps nothing
  Device& d = device(key);
  note_stream(d, stream, end_ns, comm);
  if (comm) {
    if (start_ns < d.floor) ++late_;  // compute it ran beside may be gone already
    if (d.waiting.size() >= limits_.max_waiting) {
      ++forced_;
      decide(d, /*all=*/true);
    }
    d.waiting.push_back({{start_ns, end_ns}, site});
    d.waiting_min_end = std::min(d.waiting_min_end, end_ns);
    d.waiting_min_start = std::min(d.waiting_min_start, start_ns);
  } else if (end_ns > d.floor) {
    add_busy(d, {start_ns, end_ns});
  }
  // The watermark: records ending a window behind the latest are taken to have come (by
  // stream order nothing can be told: a stream's records come in several threads' buffers).
  if (d.max_end > limits_.window_ns) d.mark = std::max(d.mark, d.max_end - limits_.window_ns);
  if (d.waiting_min_end <= d.mark) decide(d, /*all=*/false);
  ask_for_records(d);
  prune(d);
  if (d.busy.size() - d.busy_head > limits_.max_busy) {
    // Full (a window of many short kernels with gaps): the oldest half goes. A collective
    // waiting beside them then counts that compute as absent, erring toward exposed.
    ++forced_;
    d.busy_head += (d.busy.size() - d.busy_head) / 2;
    d.floor = std::max(d.floor, d.busy[d.busy_head - 1].end);
    prune(d);
  }
}

size_t CommOverlap::held() const {
  size_t n = 0;
  for (const Device& d : devices_)
    n += d.busy.size() - d.busy_head + d.waiting.size();
  return n;
}

void CommOverlap::add_busy(Device& d, Interval iv) {
  // Most records extend the back; a late buffer's land inside: found by binary search.
  size_t pos = d.busy.size();
  if (pos > d.busy_head && d.busy[pos - 1].start > iv.start) {
    pos = static_cast<size_t>(
        std::upper_bound(d.busy.begin() + static_cast<std::ptrdiff_t>(d.busy_head), d.busy.end(),
                         iv.start, [](uint64_t t, const Interval& b) { return t < b.start; }) -
        d.busy.begin());
  }
  size_t at = pos;
  if (pos > d.busy_head && d.busy[pos - 1].end >= iv.start) {
    at = pos - 1;
    d.busy[at].end = std::max(d.busy[at].end, iv.end);
  } else {
    d.busy.insert(d.busy.begin() + static_cast<std::ptrdiff_t>(pos), iv);
  }
  size_t next = at + 1;
  while (next < d.busy.size() && d.busy[next].start <= d.busy[at].end)
    d.busy[at].end = std::max(d.busy[at].end, d.busy[next++].end);
  d.busy.erase(d.busy.begin() + static_cast<std::ptrdiff_t>(at + 1),
               d.busy.begin() + static_cast<std::ptrdiff_t>(next));
}

void CommOverlap::decide_one(Device& d, const Waiting& w) {
  const Interval c = w.span;
  // Busy intervals are disjoint and sorted, so their ends are sorted too.
  auto first =
      std::partition_point(d.busy.begin() + static_cast<std::ptrdiff_t>(d.busy_head), d.busy.end(),
                           [&](const Interval& b) { return b.end <= c.start; });
  uint64_t covered = 0;
  for (auto it = first; it != d.busy.end() && it->start < c.end; ++it)
    covered += std::min(it->end, c.end) - std::max(it->start, c.start);
  const uint64_t span = c.end - c.start;
  ready_.push_back({w.site, span, span - std::min(covered, span)});
}

void CommOverlap::decide(Device& d, bool all) {
  size_t kept = 0;
  d.waiting_min_end = UINT64_MAX;
  d.waiting_min_start = UINT64_MAX;
  for (size_t i = 0; i < d.waiting.size(); ++i) {
    const Waiting& w = d.waiting[i];
    if (all || w.span.end <= d.mark) {
      decide_one(d, w);
      continue;
    }
    d.waiting_min_end = std::min(d.waiting_min_end, w.span.end);
    d.waiting_min_start = std::min(d.waiting_min_start, w.span.start);
    d.waiting[kept++] = w;
  }
  d.waiting.resize(kept);
}

void CommOverlap::prune(Device& d) {
  // Compute that ends before the watermark and before every waiting collective starts can meet
  // no collective waiting or still to come within the window.
  d.floor = std::max(d.floor, std::min(d.mark, d.waiting_min_start));
  while (d.busy_head < d.busy.size() && d.busy[d.busy_head].end <= d.floor)
    ++d.busy_head;
  if (d.busy_head >= 64 && d.busy_head * 2 >= d.busy.size()) {
    d.busy.erase(d.busy.begin(), d.busy.begin() + static_cast<std::ptrdiff_t>(d.busy_head));
    d.busy_head = 0;
  }
}

void CommOverlap::flush() {
  for (Device& d : devices_) {
    decide(d, /*all=*/true);
    prune(d);
  }
}

void CommOverlap::clear() {
  devices_.clear();
  last_device_ = 0;
  ready_.clear();
}

}  // namespace proton
