// PC samples on the call tree (data/pc_attribution.h), from synthetic sample records: no GPU.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "data/pc_attribution.h"
#include "test_util.h"

namespace proton {
namespace {

using testing::id;

// H100-like names: plain reasons and their "_not_issued" twins.
std::shared_ptr<const PcStallTable> h100_table() {
  return std::make_shared<const PcStallTable>(PcStallTable::from_names({
      "smsp__pcsamp_warps_issue_stalled_long_scoreboard",             // 0
      "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",  // 1
      "smsp__pcsamp_warps_issue_stalled_selected",                    // 2
      "smsp__pcsamp_warps_issue_stalled_wait",                        // 3
      "smsp__pcsamp_warps_issue_stalled_wait_not_issued",             // 4
      "smsp__pcsamp_warps_issue_stalled_barrier",                     // 5
  }));
}

struct Sample {
  std::string function;
  std::string location;  // "" = no line information
  uint64_t pc;
  std::vector<PcStall> stalls;
};

PcSampleBatch batch(const std::vector<Sample>& samples,
                    std::shared_ptr<const PcStallTable> table = h100_table()) {
  PcSampleBatch b;
  b.reasons = std::move(table);
  for (const Sample& s : samples) {
    PcSample p;
    p.function = id(s.function);
    p.location = s.location.empty() ? kNoName : id(s.location);
    p.pc_offset = s.pc;
    p.stall_begin = static_cast<uint32_t>(b.stalls.size());
    for (const PcStall& st : s.stalls)
      b.stalls.push_back(st);
    p.stall_count = static_cast<uint32_t>(s.stalls.size());
    b.samples.push_back(p);
  }
  return b;
}

class PcTree : public ::testing::Test {
 protected:
  CallTree tree_;
  PcAttribution pc_;
  PcAttribution::TreeOf tree_of_ = [this](uint32_t) { return &tree_; };

  CallTree::NodeId kernel_at(const std::string& scope, const std::string& kernel) {
    return tree_.child(tree_.child(CallTree::kRoot, id(scope)), id(kernel));
  }
  int64_t metric(CallTree::NodeId node, const std::string& name) {
    for (const auto& [n, v] : tree_.node(node).metrics) {
      if (n == id(name)) return std::get<int64_t>(v);
    }
    return 0;
  }
  // The child of `node` named `name`; fails the test when missing.
  CallTree::NodeId child(CallTree::NodeId node, const std::string& name) {
    for (CallTree::NodeId c : tree_.node(node).children) {
      if (tree_.node(c).name == id(name)) return c;
    }
    ADD_FAILURE() << "no child " << name;
    return CallTree::kRoot;
  }
  // Every location child's stalled_* metrics sum to its num_samples.
  void expect_stalls_sum(CallTree::NodeId kernel) {
    for (CallTree::NodeId c : tree_.node(kernel).children) {
      int64_t sum = 0;
      for (const auto& [n, v] : tree_.node(c).metrics) {
        if (NameTable::global().name(n).starts_with("stalled_")) sum += std::get<int64_t>(v);
      }
      EXPECT_EQ(sum, metric(c, "num_samples")) << NameTable::global().name(tree_.node(c).name);
    }
  }
};

TEST_F(PcTree, OneCallPathGetsEverySampleOnItsLines) {
  CallTree::NodeId k = kernel_at("model", "matmul_kernel");
  pc_.note_kernel(id("matmul_kernel"), 0, k, 1000);
  pc_.add(batch({{"matmul_kernel", "/src/mm.py:12@matmul_kernel", 0x10, {{0, 30}, {1, 25}, {2, 5}}},
                 {"matmul_kernel", "/src/mm.py:12@matmul_kernel", 0x20, {{3, 10}, {4, 8}}},
                 {"matmul_kernel", "/src/mm.py:15@matmul_kernel", 0x30, {{5, 7}}}}));
  pc_.distribute(tree_of_, false);
  CallTree::NodeId line12 = child(k, "/src/mm.py:12@matmul_kernel");
  CallTree::NodeId line15 = child(k, "/src/mm.py:15@matmul_kernel");
  // Plain reasons are the samples; the _not_issued twins are the stalled ones.
  EXPECT_EQ(metric(line12, "num_samples"), 45);
  EXPECT_EQ(metric(line12, "num_stalled_samples"), 33);
  EXPECT_EQ(metric(line12, "stalled_long_scoreboard"), 30);
  EXPECT_EQ(metric(line12, "stalled_selected"), 5);
  EXPECT_EQ(metric(line12, "stalled_wait"), 10);
  EXPECT_EQ(metric(line15, "num_samples"), 7);
  EXPECT_EQ(metric(k, "num_samples"), 0) << "metrics are exclusive: the kernel node has none";
  EXPECT_EQ(pc_.stats().samples, 52u);
  EXPECT_EQ(pc_.stats().placed, 52u);
  EXPECT_EQ(pc_.stats().pending, 0u);
  expect_stalls_sum(k);
}

TEST_F(PcTree, TwoCallPathsSplitByTheirTimeOfTheKernel) {
  CallTree::NodeId a = kernel_at("prefill", "attn");
  CallTree::NodeId b = kernel_at("decode", "attn");
  pc_.note_kernel(id("attn"), 0, a, 300);
  pc_.note_kernel(id("attn"), 0, b, 100);
  pc_.add(batch({{"attn", "a.py:3@attn", 0x10, {{0, 80}, {3, 20}}}}));
  pc_.distribute(tree_of_, false);
  CallTree::NodeId la = child(a, "a.py:3@attn");
  CallTree::NodeId lb = child(b, "a.py:3@attn");
  EXPECT_EQ(metric(la, "num_samples"), 75);
  EXPECT_EQ(metric(lb, "num_samples"), 25);
  EXPECT_EQ(metric(la, "stalled_long_scoreboard"), 60);
  EXPECT_EQ(metric(lb, "stalled_long_scoreboard"), 20);
  EXPECT_EQ(metric(la, "num_samples") + metric(lb, "num_samples"), 100);
  expect_stalls_sum(a);
  expect_stalls_sum(b);
}

TEST_F(PcTree, UnevenSplitsKeepEverySample) {
  CallTree::NodeId a = kernel_at("x", "k");
  CallTree::NodeId b = kernel_at("y", "k");
  CallTree::NodeId c = kernel_at("z", "k");
  for (auto [n, t] : {std::pair{a, 1u}, {b, 1u}, {c, 1u}})
    pc_.note_kernel(id("k"), 0, n, t);
  pc_.add(batch({{"k", "k.py:1@k", 0, {{0, 10}, {3, 1}}}}));
  pc_.distribute(tree_of_, false);
  int64_t total = 0;
  for (auto n : {a, b, c}) {
    total += metric(child(n, "k.py:1@k"), "num_samples");
    expect_stalls_sum(n);
  }
  EXPECT_EQ(total, 11);
}

TEST_F(PcTree, SamplesWaitForTheirKernelsTime) {
  pc_.add(batch({{"late_kernel", "l.py:9@late_kernel", 0, {{0, 4}}}}));
  pc_.distribute(tree_of_, false);
  EXPECT_EQ(pc_.stats().pending, 4u);
  EXPECT_EQ(pc_.stats().placed, 0u);
  CallTree::NodeId k = kernel_at("s", "late_kernel");
  pc_.note_kernel(id("late_kernel"), 0, k, 10);
  pc_.distribute(tree_of_, false);
  EXPECT_EQ(metric(child(k, "l.py:9@late_kernel"), "num_samples"), 4);
  EXPECT_EQ(pc_.stats().pending, 0u);
}

TEST_F(PcTree, LaterSamplesReuseTheLastSplitAfterWaiting) {
  CallTree::NodeId k = kernel_at("s", "loop");
  pc_.note_kernel(id("loop"), 0, k, 10);
  pc_.add(batch({{"loop", "l.py:1@loop", 0, {{0, 1}}}}));
  pc_.distribute(tree_of_, false);  // uses (and closes) the window
  pc_.add(batch({{"loop", "l.py:1@loop", 0, {{0, 2}}}}));
  for (uint32_t i = 0; i < PcAttribution::kWaitDrains; ++i)
    pc_.distribute(tree_of_, false);
  EXPECT_EQ(metric(child(k, "l.py:1@loop"), "num_samples"), 3);
}

TEST_F(PcTree, UnknownFunctionsAreKeptApartNeverDropped) {
  pc_.add(batch({{"never_seen", "n.py:2@never_seen", 0x40, {{0, 6}}}}));
  pc_.distribute(tree_of_, false);
  EXPECT_EQ(pc_.stats().pending, 6u);
  pc_.distribute(tree_of_, true);
  CallTree::NodeId u = child(CallTree::kRoot, "unattributed PC samples");
  CallTree::NodeId f = child(u, "never_seen");
  EXPECT_EQ(metric(child(f, "n.py:2@never_seen"), "num_samples"), 6);
  EXPECT_EQ(pc_.stats().unattributed, 6u);
  EXPECT_EQ(pc_.stats().pending, 0u);
  pc_.write_counters(tree_);
  EXPECT_EQ(metric(CallTree::kRoot, "pc_samples_unattributed"), 6);
}

TEST_F(PcTree, WithoutLineInfoSamplesGoOnTheKernelNode) {
  // As triton.profiler: samples of PCs with no line (PyTorch's kernels, cuBLAS without
  // -lineinfo) are summed on the kernel node itself, over all its PCs; lines stay children.
  CallTree::NodeId k = kernel_at("s", "sm90_xmma_gemm");
  CallTree::NodeId k2 = kernel_at("t", "sm90_xmma_gemm");
  pc_.note_kernel(id("sm90_xmma_gemm"), 0, k, 30);
  pc_.note_kernel(id("sm90_xmma_gemm"), 0, k2, 10);
  pc_.add(batch({{"sm90_xmma_gemm", "", 0x110, {{0, 3}, {1, 4}}},
                 {"sm90_xmma_gemm", "", 0x1f0, {{3, 2}}},
                 {"sm90_xmma_gemm", "", 0x2000, {{0, 3}}},
                 {"sm90_xmma_gemm", "/src/g.cu:7@sm90_xmma_gemm", 0x40, {{5, 4}}}}));
  pc_.distribute(tree_of_, false);
  // 8 issued samples without line (reason 1 is a _not_issued twin), split 3:1 by kernel time
  // per reason with the remainders to the larger node: 7 and 1.
  EXPECT_EQ(metric(k, "num_samples"), 7);
  EXPECT_EQ(metric(k2, "num_samples"), 1);
  EXPECT_EQ(metric(k, "stalled_long_scoreboard") + metric(k2, "stalled_long_scoreboard"), 6);
  EXPECT_GT(metric(k, "num_stalled_samples"), 0);
  EXPECT_EQ(metric(child(k, "/src/g.cu:7@sm90_xmma_gemm"), "num_samples") +
                metric(child(k2, "/src/g.cu:7@sm90_xmma_gemm"), "num_samples"),
            4);
  EXPECT_EQ(tree_.node(k).children.size(), 1u) << "no node per PC or PC range";
  EXPECT_EQ(pc_.stats().without_line, 8u);
  int64_t stalled = 0;
  for (const auto& [n, v] : tree_.node(k).metrics) {
    if (NameTable::global().name(n).starts_with("stalled_")) stalled += std::get<int64_t>(v);
  }
  EXPECT_EQ(stalled, metric(k, "num_samples"));
  expect_stalls_sum(k);
}

TEST_F(PcTree, AFullHardwareBufferIsCountedAndWritten) {
  PcSampleBatch full = batch({});
  full.buffer_full = 2;
  full.dropped_samples = 7;
  pc_.add(full);
  pc_.distribute(tree_of_, true);
  pc_.write_counters(tree_);
  EXPECT_EQ(metric(CallTree::kRoot, "pc_sampling_buffer_full"), 2);
  EXPECT_EQ(metric(CallTree::kRoot, "pc_samples_dropped"), 7);
  pc_.write_counters(tree_);  // written once, not again
  EXPECT_EQ(metric(CallTree::kRoot, "pc_sampling_buffer_full"), 2);
}

TEST_F(PcTree, LibraryKernelSamplesWithoutPcsAreCountedOnTheRoot) {
  // CUPTI gives cuBLAS/cuDNN kernels' samples only as nonUsrKernelsTotalSamples.
  PcSampleBatch lib = batch({});
  lib.non_user_samples = 40;
  pc_.add(lib);
  lib.non_user_samples = 2;
  pc_.add(lib);
  pc_.write_counters(tree_);
  EXPECT_EQ(metric(CallTree::kRoot, "pc_samples_non_user"), 42);
  pc_.write_counters(tree_);
  EXPECT_EQ(metric(CallTree::kRoot, "pc_samples_non_user"), 42);
}

TEST_F(PcTree, AClearedPhaseNeverReceivesSamples) {
  CallTree::NodeId k = kernel_at("s", "k");
  pc_.note_kernel(id("k"), 0, k, 10);
  pc_.forget_phases(0, true);
  pc_.add(batch({{"k", "k.py:1@k", 0, {{0, 1}}}}));
  pc_.distribute(tree_of_, true);
  EXPECT_EQ(pc_.stats().unattributed, 1u);
  EXPECT_TRUE(tree_.node(k).children.empty());
}

TEST_F(PcTree, ReloadedModuleSameFunctionKeepsOneNode) {
  // A module unloaded and loaded again gives the same function and (same CRC) the same
  // locations: samples of both lifetimes land on one node.
  CallTree::NodeId k = kernel_at("s", "reloaded");
  pc_.note_kernel(id("reloaded"), 0, k, 10);
  pc_.add(batch({{"reloaded", "r.py:5@reloaded", 0x10, {{0, 2}}}}));
  pc_.distribute(tree_of_, false);
  pc_.note_kernel(id("reloaded"), 0, k, 10);
  pc_.add(batch({{"reloaded", "r.py:5@reloaded", 0x10, {{0, 3}}}}));
  pc_.distribute(tree_of_, false);
  EXPECT_EQ(tree_.node(k).children.size(), 1u);
  EXPECT_EQ(metric(child(k, "r.py:5@reloaded"), "num_samples"), 5);
}

TEST(PcStallReasons, NamesAndFamilies) {
  EXPECT_EQ(stall_short_name("smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"),
            "long_scoreboard");
  EXPECT_EQ(stall_short_name("stalled_wait"), "wait");
  EXPECT_EQ(stall_family("smsp__pcsamp_warps_issue_stalled_long_scoreboard"), StallFamily::kMemory);
  EXPECT_EQ(stall_family("stalled_wait"), StallFamily::kDependency);
  EXPECT_EQ(stall_family("stalled_barrier"), StallFamily::kSynchronization);
  EXPECT_EQ(stall_family("stalled_warpgroup_arrive"), StallFamily::kSynchronization);
  EXPECT_EQ(stall_family("stalled_math_pipe_throttle"), StallFamily::kIssue);
  EXPECT_EQ(stall_family("stalled_not_Selected"), StallFamily::kIssue);  // Triton's spelling
  EXPECT_EQ(stall_family("stalled_something_new"), StallFamily::kOther);
  EXPECT_STREQ(stall_family_name(StallFamily::kIssue), "issue/pipe");
  auto t = h100_table();
  EXPECT_TRUE(t->has_not_issued);
  EXPECT_EQ(t->reasons[1].metric, kNoName);
  EXPECT_EQ(t->reasons[0].metric, id("stalled_long_scoreboard"));
  EXPECT_TRUE(t->counts_as_stalled(1));
  EXPECT_FALSE(t->counts_as_stalled(0));
  // Without twins (older GPUs): every reason but "selected" is a stall.
  PcStallTable old = PcStallTable::from_names({"stalled_selected", "stalled_wait"});
  EXPECT_FALSE(old.counts_as_stalled(0));
  EXPECT_TRUE(old.counts_as_stalled(1));
}

}  // namespace
}  // namespace proton
