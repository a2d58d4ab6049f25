// The CUPTI side of PC sampling on the CPU: the record decoder on hand-built CUPTI structs,
// the binary store and line cache, and the choice of period and buffer.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backends/cupti/pc_sampling.h"
#include "backends/cupti/pc_sampling_lines.h"
#include "backends/cupti/pc_sampling_records.h"
#include "test_util.h"

namespace proton::cupti {
namespace {

using proton::testing::id;

struct Records {
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<std::vector<CUpti_PCSamplingStallReason>> stalls;
  CUpti_PCSamplingData data{};
  void add(const char* fn, uint64_t crc, uint64_t pc, std::vector<CUpti_PCSamplingStallReason> s) {
    stalls.push_back(std::move(s));
    CUpti_PCSamplingPCData d{};
    d.functionName = const_cast<char*>(fn);
    d.cubinCrc = crc;
    d.pcOffset = pc;
    d.stallReasonCount = stalls.back().size();
    pcs.push_back(d);
  }
  CUpti_PCSamplingData& finish() {
    for (size_t i = 0; i < pcs.size(); ++i)
      pcs[i].stallReason = stalls[i].data();
    data.pPcData = pcs.data();
    data.totalNumPcs = pcs.size();
    return data;
  }
};

NameId intern(const char* s) {
  return NameTable::global().intern(s);
}

TEST(PcRecords, TranslatesReasonsAndSkipsWhatItCannotRead) {
  Records r;
  // CUPTI's hardware indices 7 and 3 are our positions 0 and 1.
  r.add("kern", 0xabc, 0x40, {{7, 5}, {3, 2}, {99, 4}, {7, 0}});
  r.add(nullptr, 0xabc, 0x50, {{7, 1}});  // no function name
  r.add("kern", 0xdef, 0x60, {{3, 1}});
  StallIndex index({7, 3});
  PcSampleBatch out;
  std::vector<std::tuple<uint64_t, NameId, uint64_t>> asked;
  auto locate = [&](uint64_t crc, NameId fn, const char*, uint64_t pc) {
    asked.emplace_back(crc, fn, pc);
    return crc == 0xabc ? id("k.py:3@kern") : kNoName;
  };
  PcDecodeStats st = translate_pc_data(r.finish(), {16, 8}, index, 0, intern, locate, out);
  EXPECT_EQ(st.records, 3u);
  EXPECT_EQ(st.bad_records, 1u);
  EXPECT_EQ(st.bad_stalls, 1u);
  ASSERT_EQ(out.samples.size(), 2u);
  EXPECT_EQ(out.samples[0].function, id("kern"));
  EXPECT_EQ(out.samples[0].location, id("k.py:3@kern"));
  EXPECT_EQ(out.samples[0].stall_count, 2u);  // the unknown index and the zero are gone
  EXPECT_EQ(out.stalls[0].reason, 0u);
  EXPECT_EQ(out.stalls[0].samples, 5u);
  EXPECT_EQ(out.stalls[1].reason, 1u);
  EXPECT_EQ(out.samples[1].location, kNoName);
  EXPECT_EQ(out.samples[1].pc_offset, 0x60u);
  EXPECT_EQ(asked.size(), 2u);
}

TEST(PcRecords, ClaimedCountsBeyondOurBuffersAreClamped) {
  Records r;
  r.add("kern", 1, 0, {{7, 1}, {7, 1}});
  CUpti_PCSamplingData& d = r.finish();
  d.totalNumPcs = 1000;              // more than we allocated
  r.pcs[0].stallReasonCount = 1000;  // likewise
  StallIndex index({7});
  PcSampleBatch out;
  auto locate = [](uint64_t, NameId, const char*, uint64_t) { return kNoName; };
  translate_pc_data(d, {1, 2}, index, 0, intern, locate, out);
  ASSERT_EQ(out.samples.size(), 1u);
  EXPECT_EQ(out.samples[0].stall_count, 2u);
}

TEST(PcRecords, SharedFunctionNameStringsAreInternedOnce) {
  // CUPTI hands one string to every record of a function: we intern, never free.
  static char shared[] = "shared_fn";
  Records r;
  r.add(shared, 1, 0, {{7, 1}});
  r.add(shared, 1, 4, {{7, 1}});
  StallIndex index({7});
  PcSampleBatch out;
  auto locate = [](uint64_t, NameId, const char*, uint64_t) { return kNoName; };
  translate_pc_data(r.finish(), {4, 4}, index, 0, intern, locate, out);
  ASSERT_EQ(out.samples.size(), 2u);
  EXPECT_EQ(out.samples[0].function, out.samples[1].function);
  EXPECT_STREQ(shared, "shared_fn");
}

TEST(PcLines, CachesPerPcAndKeepsBinariesAcrossUnloadAndReload) {
  PcLineMap lines(1000);
  int calls = 0;
  lines.set_correlate(
      [&](const void* cubin, size_t size, const char* fn, uint64_t pc, PcLineMap::SourceLine& out) {
        ++calls;
        EXPECT_EQ(size, 4u);
        EXPECT_EQ(std::memcmp(cubin, "ELF1", 4), 0);
        out.line = static_cast<uint32_t>(10 + pc / 16);
        out.file = "kernel.py";
        out.dir = "/src";
        return pc < 0x100;  // past 0x100: no line table
      });
  NameId fn = id("kern");
  EXPECT_EQ(lines.locate(7, fn, "kern", 0x10), kNoName) << "binary not loaded yet";
  lines.add_binary(7, "ELF1", 4);
  EXPECT_EQ(lines.locate(7, fn, "kern", 0x10), id("/src/kernel.py:11@kern"));
  EXPECT_EQ(lines.locate(7, fn, "kern", 0x10), id("/src/kernel.py:11@kern"));
  EXPECT_EQ(calls, 1) << "asked CUPTI once per (binary, function, pc)";
  EXPECT_EQ(lines.locate(7, fn, "kern", 0x200), kNoName);
  lines.add_binary(7, "ELF1", 4);  // the same module loaded again: kept once
  EXPECT_EQ(lines.stats().binaries, 1u);
  EXPECT_EQ(lines.stats().binary_bytes, 4u);
}

TEST(PcLines, BinariesLoadedBeforeStartAreFoundInTritonsCacheFolder) {
  auto dir =
      std::filesystem::temp_directory_path() / ("proton_pc_lines_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "HASH");
  std::ofstream(dir / "HASH" / "kern.cubin", std::ios::binary) << "ELF2";
  std::ofstream(dir / "HASH" / "kern.json") << "{}";
  PcLineMap lines(1000);
  lines.set_correlate([](const void*, size_t, const char*, uint64_t, PcLineMap::SourceLine& out) {
    out.line = 4;
    out.file = "/t/kern.py";
    return true;
  });
  int crcs = 0;
  lines.set_binary_folders({dir.string()}, [&](const void* data, size_t size, uint64_t& crc) {
    ++crcs;
    crc = size == 4 && std::memcmp(data, "ELF2", 4) == 0 ? 42 : 0;
    return true;
  });
  EXPECT_EQ(lines.locate(42, id("kern"), "kern", 0), id("/t/kern.py:4@kern"));
  EXPECT_EQ(lines.stats().from_folders, 1u);
  EXPECT_EQ(lines.locate(43, id("kern"), "kern", 0), kNoName);  // unknown: no rescan yet
  EXPECT_EQ(crcs, 1) << "each file is read once";
  std::filesystem::remove_all(dir);
}

TEST(PcLines, OldestBinariesGoFirstBeyondTheBound) {
  PcLineMap lines(10);
  lines.add_binary(1, "AAAA", 4);
  lines.add_binary(2, "BBBB", 4);
  lines.add_binary(3, "CCCC", 4);  // over 10 bytes: binary 1 goes
  auto s = lines.stats();
  EXPECT_EQ(s.binaries, 2u);
  EXPECT_EQ(s.evicted, 1u);
  EXPECT_LE(s.binary_bytes, 10u);
}

TEST(PcSizes, DefaultIsASmallBufferThatHoldsSeveralSleepSpans) {
  PcSamplingOptions o;
  PcSizes s = choose_pc_sizes(o, 132);
  EXPECT_EQ(s.period_log2, 16u);
  EXPECT_LE(s.buffer_bytes, uint64_t{8} << 20);
  EXPECT_GE(s.buffer_bytes, uint64_t{2} << 20);
  EXPECT_TRUE(s.note.empty());
}

TEST(PcSizes, AFastIntervalIsRaisedUntilTheBufferCapHoldsIt) {
  PcSamplingOptions o;
  o.period_log2 = 10;  // triton.profiler's PCSampling() default
  PcSizes s = choose_pc_sizes(o, 132);
  EXPECT_GT(s.period_log2, 10u);
  EXPECT_LE(s.buffer_bytes, o.max_buffer_bytes);
  EXPECT_NE(s.note.find("raised from 2^10"), std::string::npos) << s.note;
  o.buffer_bytes = uint64_t{1} << 30;  // the user's own buffer: their period stands
  EXPECT_EQ(choose_pc_sizes(o, 132).period_log2, 10u);
}

}  // namespace
}  // namespace proton::cupti
