#include "data/trace_store.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/name_table.h"
#include "context/context_tree.h"
#include "context/scope_metric_sets.h"
#include "data/metric.h"

namespace proton {

TraceStore::TraceStore(uint64_t budget_bytes, Spill spill)
    : budget_bytes_(budget_bytes), spill_(std::move(spill)) {
  max_chunks_ = budget_bytes == 0
                    ? kResidentChunks
                    : std::max<size_t>(2, static_cast<size_t>(budget_bytes / kChunkBytes));
}

TraceStore::~TraceStore() {
  for (const auto& c : chunks_)
    release_sets(*c);
  ScopeMetricSets& sets = ScopeMetricSets::global();
  for (const auto& [thread, stack] : open_scopes_)
    for (const OpenScope& open : stack)
      sets.release(open.op);
}

void TraceStore::release_sets(const Chunk& c) {
  ScopeMetricSets& sets = ScopeMetricSets::global();
  for (const TraceEvent& e : c)
    if (e.kind == TraceEvent::kScope && e.op != 0) sets.release(e.op);
}

TraceStore::Chunk* TraceStore::tail() {
  if (!chunks_.empty() && chunks_.back()->size() < kChunkEvents) return chunks_.back().get();
  if (chunks_.size() >= max_chunks_) {
    std::unique_ptr<Chunk> oldest = std::move(chunks_.front());
    chunks_.erase(chunks_.begin());
    if (budget_bytes_ == 0) {
      spill_(std::span<const TraceEvent>(*oldest));
    } else {
      dropped_ += oldest->size();
      for (const TraceEvent& e : *oldest)
        dropped_until_ns_ = std::max(dropped_until_ns_, e.start_ns);
    }
    release_sets(*oldest);  // written out or dropped: its scopes' metrics are no longer read
    oldest->clear();
    spare_ = std::move(oldest);
  }
  std::unique_ptr<Chunk> c = std::move(spare_);
  if (!c) {
    c = std::make_unique<Chunk>();
    c->reserve(kChunkEvents);
  }
  chunks_.push_back(std::move(c));
  return chunks_.back().get();
}

void TraceStore::add(const TraceEvent& e) {
  tail()->push_back(e);
  ++recorded_;
}

void TraceStore::scope_enter(uint32_t thread, ContextId scope, uint64_t ns) {
  open_scopes_[thread].push_back(OpenScope{scope, ns, next_scope_id_++});
}

void TraceStore::scope_metrics(uint32_t thread, uint32_t set) {
  auto it = open_scopes_.find(thread);
  if (set == 0 || it == open_scopes_.end() || it->second.empty()) return;
  OpenScope& open = it->second.back();
  ScopeMetricSets& sets = ScopeMetricSets::global();
  if (open.op == 0) {
    sets.retain(set);
    open.op = set;
    return;
  }
  // A second add to one scope (rare: a scope's metrics usually come at once): combined into one
  // set as the tree combines them.
  ScopeMetricSets::Metrics merged = sets.get(open.op);
  for (const auto& added : sets.get(set)) {
    NameId name = added.first;
    const MetricValue& value = added.second;
    auto same =
        std::find_if(merged.begin(), merged.end(), [&](const auto& m) { return m.first == name; });
    if (same == merged.end()) {
      merged.emplace_back(name, value);
      continue;
    }
    if (metric_type(same->second) == metric_type(value)) {
      combine_metric(metric_rule(NameTable::global().name(name)), same->second, value);
    } else {
      same->second = value;  // types that do not combine: the newest value stands
    }
  }
  sets.release(open.op);
  open.op = sets.add(std::move(merged));
}

void TraceStore::scope_exit(uint32_t thread, ContextId scope, uint64_t ns) {
  auto it = open_scopes_.find(thread);
  // A scope opened before the trace started has no enter event: nothing to pair it with.
  if (it == open_scopes_.end() || it->second.empty() || it->second.back().context != scope) return;
  const OpenScope& open = it->second.back();
  TraceEvent e;
  e.kind = TraceEvent::kScope;
  e.start_ns = open.start_ns;
  e.end_ns = ns;
  e.context = scope;
  e.name = ContextTree::global().node(scope).name;
  e.thread = thread;
  e.correlation = open.id;
  e.op = open.op;
  it->second.pop_back();
  add(e);
}

void TraceStore::close_open_scopes(uint64_t ns) {
  for (auto& [thread, stack] : open_scopes_) {
    while (!stack.empty()) {
      ++unfinished_scopes_;
      scope_exit(thread, stack.back().context, std::max(ns, stack.back().start_ns));
    }
  }
}

void TraceStore::for_each_chunk(const std::function<void(std::span<const TraceEvent>)>& fn) const {
  for (const auto& c : chunks_) {
    if (!c->empty()) fn(std::span<const TraceEvent>(*c));
  }
}

}  // namespace proton
