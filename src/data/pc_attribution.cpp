#include "data/pc_attribution.h"

#include <algorithm>

#include "common/name_table.h"

namespace proton {

namespace {

// floor(c * part / total) without overflow (part <= total): long double has 64 mantissa bits,
// and the result is clamped so rounding can never give more than c.
uint64_t share(uint64_t c, uint64_t part, uint64_t total) {
  long double v = static_cast<long double>(c) * static_cast<long double>(part) /
                  static_cast<long double>(total);
  auto out = static_cast<uint64_t>(v);
  return out > c ? c : out;
}

}  // namespace

void PcAttribution::note_kernel(NameId function, uint32_t phase, CallTree::NodeId kernel_node,
                                uint64_t ns) {
  std::vector<Site>& sites = window_[function];
  for (Site& s : sites) {
    if (s.phase == phase && s.node == kernel_node) {
      s.ns += ns;
      return;
    }
  }
  sites.push_back({phase, kernel_node, ns});
}

void PcAttribution::add(const PcSampleBatch& batch) {
  if (batch.reasons) reasons_ = batch.reasons;
  stats_.buffer_full += batch.buffer_full;
  stats_.dropped += batch.dropped_samples;
  stats_.non_user += batch.non_user_samples;
  size_t n_reasons = reasons_ ? reasons_->reasons.size() : 0;
  for (const PcSample& s : batch.samples) {
    if (s.function == kNoName) continue;  // the decoder never emits these; be safe anyway
    Waiting& w = waiting_[s.function];
    std::vector<uint64_t>& counts = w.per_location[s.location];
    if (counts.size() < n_reasons) counts.resize(n_reasons, 0);
    uint64_t total = 0;
    size_t end = std::min<size_t>(size_t{s.stall_begin} + s.stall_count, batch.stalls.size());
    for (size_t i = s.stall_begin; i < end; ++i) {
      const PcStall& st = batch.stalls[i];
      if (st.reason >= n_reasons) continue;  // decoded against this table: cannot happen
      counts[st.reason] += st.samples;
      if (!reasons_->reasons[st.reason].not_issued || !reasons_->has_not_issued) {
        total += st.samples;
      }
    }
    stats_.samples += total;
    stats_.pending += total;
    if (s.location == kNoName) stats_.without_line += total;
  }
}

void PcAttribution::add_counts(CallTree& tree, CallTree::NodeId kernel, NameId location,
                               const std::vector<uint64_t>& per_reason) {
  if (num_samples_ == kNoName) {
    num_samples_ = NameTable::global().intern("num_samples");
    num_stalled_ = NameTable::global().intern("num_stalled_samples");
  }
  uint64_t total = 0;
  uint64_t stalled = 0;
  const PcStallTable& t = *reasons_;
  for (size_t r = 0; r < per_reason.size() && r < t.reasons.size(); ++r) {
    if (per_reason[r] == 0) continue;
    if (t.counts_as_stalled(static_cast<uint32_t>(r))) stalled += per_reason[r];
    if (t.reasons[r].not_issued) continue;
    total += per_reason[r];
  }
  if (total == 0 && stalled == 0) return;
  CallTree::NodeId node = location == kNoName ? kernel : tree.child(kernel, location);
  try {
    tree.add_metric(node, num_samples_, static_cast<int64_t>(total));
    tree.add_metric(node, num_stalled_, static_cast<int64_t>(stalled));
    for (size_t r = 0; r < per_reason.size() && r < t.reasons.size(); ++r) {
      if (per_reason[r] == 0 || t.reasons[r].metric == kNoName) continue;
      tree.add_metric(node, t.reasons[r].metric, static_cast<int64_t>(per_reason[r]));
    }
  } catch (const MetricTypeError&) {
    // A user metric of the same name with another type: keep collecting the rest.
  }
}

void PcAttribution::place(Waiting& w, const std::vector<Site>& sites, const TreeOf& tree_of) {
  uint64_t total_ns = 0;
  size_t largest = 0;
  for (size_t i = 0; i < sites.size(); ++i) {
    total_ns += sites[i].ns;
    if (sites[i].ns > sites[largest].ns) largest = i;
  }
  std::vector<std::vector<uint64_t>> shares(sites.size());
  for (auto& [location, counts] : w.per_location) {
    // Largest remainder, simplified: each site gets floor(c * t_i / T), the rest goes to the
    // site with the most time, so counts are preserved exactly and every node's stall
    // reasons still sum to its samples.
    for (auto& s : shares)
      s.assign(counts.size(), 0);
    for (size_t r = 0; r < counts.size(); ++r) {
      uint64_t c = counts[r];
      if (c == 0) continue;
      uint64_t given = 0;
      for (size_t i = 0; i < sites.size(); ++i) {
        uint64_t part = total_ns == 0 ? (i == largest ? c : 0) : share(c, sites[i].ns, total_ns);
        shares[i][r] = part;
        given += part;
      }
      shares[largest][r] += c - given;
    }
    for (size_t i = 0; i < sites.size(); ++i) {
      uint64_t n = 0;
      for (size_t r = 0; r < shares[i].size(); ++r) {
        if (!reasons_->reasons[r].not_issued || !reasons_->has_not_issued) n += shares[i][r];
      }
      CallTree* tree = tree_of(sites[i].phase);
      if (tree == nullptr) {
        stats_.late += n;
      } else {
        add_counts(*tree, sites[i].node, location, shares[i]);
        stats_.placed += n;
      }
      stats_.pending -= n;
    }
  }
}

void PcAttribution::distribute(const TreeOf& tree_of, bool final) {
  if (!reasons_) return;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    NameId function = it->first;
    Waiting& w = it->second;
    auto win = window_.find(function);
    const std::vector<Site>* sites = nullptr;
    bool from_window = false;
    if (win != window_.end() && !win->second.empty()) {
      sites = &win->second;
      from_window = true;
    } else if (auto h = history_.find(function);
               h != history_.end() && (final || ++w.age >= kWaitDrains)) {
      sites = &h->second;
    }
    if (sites != nullptr) {
      place(w, *sites, tree_of);
      if (from_window) {
        history_[function] = std::move(win->second);
        window_.erase(win);
      }
      it = waiting_.erase(it);
      continue;
    }
    if (final) {
      // No kernel record ever named this function (a kernel from before start, or one whose
      // records were lost): keep the samples, visibly apart.
      if (CallTree* tree = tree_of(UINT32_MAX)) {
        if (unattributed_ == kNoName) {
          unattributed_ = NameTable::global().intern("unattributed PC samples");
        }
        CallTree::NodeId parent =
            tree->child(tree->child(CallTree::kRoot, unattributed_), function);
        uint64_t before = stats_.placed;
        place(w, {Site{UINT32_MAX, parent, 1}}, tree_of);
        stats_.unattributed += stats_.placed - before;
        stats_.placed = before;
      }
      it = waiting_.erase(it);
      continue;
    }
    ++it;
  }
}

void PcAttribution::write_counters(CallTree& tree) {
  auto put = [&](const char* name, uint64_t now, uint64_t& written) {
    if (now == written) return;
    try {
      tree.add_metric(CallTree::kRoot, NameTable::global().intern(name),
                      static_cast<int64_t>(now - written));
    } catch (const MetricTypeError&) {
    }
    written = now;
  };
  put("pc_sampling_buffer_full", stats_.buffer_full, written_.buffer_full);
  put("pc_samples_dropped", stats_.dropped, written_.dropped);
  // CUPTI reports samples of NVIDIA's library kernels (cuBLAS, cuDNN) only as a total, with
  // no PCs: shown on the root so that a GEMM-heavy profile does not look unsampled.
  put("pc_samples_non_user", stats_.non_user, written_.non_user);
  put("pc_samples_unattributed", stats_.unattributed, written_.unattributed);
  put("pc_samples_late", stats_.late, written_.late);
}

void PcAttribution::forget_phases(uint32_t phase, bool up_to) {
  for (auto* m : {&window_, &history_}) {
    for (auto& [f, sites] : *m) {
      std::erase_if(sites,
                    [&](const Site& s) { return up_to ? s.phase <= phase : s.phase == phase; });
    }
  }
}

}  // namespace proton
