// A session's options: the mode grammar (every mode, every kind of bad input), the rule for
// PROTON_* variables (unset or empty: default; anything else outside what the variable takes:
// an error naming it), and how knobs and variables meet.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "options/environment.h"
#include "options/mode.h"
#include "options/session_options.h"

namespace proton {
namespace {

// The message of the std::invalid_argument `f` throws ("" when it throws nothing).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::string mode_error(const std::string& text) {
  return error_of([&] { parse_mode(text); });
}

TEST(ModeGrammar, EveryModeHasItsKind) {
  EXPECT_EQ(mode_kind(parse_mode("")), "kernel_timing");
  EXPECT_EQ(mode_kind(parse_mode("graph")), "graph");
  EXPECT_EQ(mode_kind(parse_mode("periodic_flushing")), "periodic_flushing");
  EXPECT_EQ(mode_kind(parse_mode("pcsampling")), "pcsampling");
  EXPECT_EQ(mode_kind(parse_mode("counters")), "counters");
  EXPECT_EQ(mode_kind(parse_mode("default")), "instrumentation");
  EXPECT_EQ(mode_kind(parse_mode("mma")), "instrumentation");
  EXPECT_EQ(mode_kind(parse_mode("mma_cycle::[warpgroup::circular::all]")), "instrumentation");
  EXPECT_EQ(mode_kind(parse_mode("  Periodic_Flushing:format=hatchet_msgpack ")),
            "periodic_flushing");
}

TEST(ModeGrammar, PeriodicFlushingFormats) {
  auto p = std::get<PeriodicFlushing>(parse_mode("periodic_flushing:format=hatchet_msgpack"));
  EXPECT_TRUE(p.enabled);
  EXPECT_EQ(p.format, "hatchet_msgpack");
  EXPECT_EQ(std::get<PeriodicFlushing>(parse_mode("periodic_flushing")).format, "hatchet");
  // As the newest triton.profiler: a trace per phase.
  EXPECT_EQ(std::get<PeriodicFlushing>(parse_mode("periodic_flushing:format=chrome_trace")).format,
            "chrome_trace");
}

TEST(ModeGrammar, PcSamplingKeepsTheIntervalAsked) {
  auto o = std::get<PcSamplingOptions>(
      parse_mode("pcsampling:interval=1000:buffer_mb=8:sleep_ms=10:drain_ms=5:adapt=0"));
  EXPECT_EQ(o.interval, 1000u);
  EXPECT_EQ(o.period_log2, 10u);
  EXPECT_EQ(o.buffer_bytes, uint64_t{8} << 20);
  EXPECT_EQ(o.sleep_span_ms, 10u);
  EXPECT_EQ(o.drain_ms, 5u);
  EXPECT_FALSE(o.adapt);
  EXPECT_EQ(std::get<PcSamplingOptions>(parse_mode("pcsampling")).interval, 0u);
}

TEST(ModeGrammar, InstrumentationLongAndShortForms) {
  auto m = std::get<InstrumentationMode>(parse_mode(
      "mma:metric_type=METRIC_TYPE.CYCLE:sampling_strategy=selective:sampling_options=4, 0,4"
      ":granularity=GRANULARITY.WARP_GROUP:buffer_strategy=flush:buffer_type=shared"
      ":buffer_size=4096:optimizations=time_shift,clock32"));
  EXPECT_EQ(m.name, "mma");
  EXPECT_EQ(m.metric_type, "cycle");
  EXPECT_EQ(m.sampling_strategy, "selective");
  EXPECT_EQ(m.sampled_warps, (std::vector<uint32_t>{0, 4}));
  EXPECT_EQ(m.granularity, "warp_group");
  EXPECT_EQ(m.buffer_strategy, "flush");
  EXPECT_EQ(m.buffer_type, "shared");
  EXPECT_EQ(m.buffer_size, 4096u);
  ASSERT_TRUE(m.optimizations.has_value());
  EXPECT_EQ(*m.optimizations, (std::vector<std::string>{"time_shift", "clock32"}));

  auto d = std::get<InstrumentationMode>(parse_mode("default"));
  EXPECT_EQ(d.name, "default");
  EXPECT_EQ(d.granularity, "warp");
  EXPECT_EQ(d.buffer_type, "global");
  EXPECT_FALSE(d.optimizations.has_value());  // the default set
  auto none = std::get<InstrumentationMode>(parse_mode("default:optimizations="));
  ASSERT_TRUE(none.optimizations.has_value());
  EXPECT_TRUE(none.optimizations->empty());  // explicitly none

  auto s = std::get<InstrumentationMode>(parse_mode("default_cycle::[warp::circular::2;0]"));
  EXPECT_EQ(s.sampling_strategy, "selective");
  EXPECT_EQ(s.sampled_warps, (std::vector<uint32_t>{0, 2}));
  s = std::get<InstrumentationMode>(parse_mode("mma_cycle::[warpgroup::flush::all]"));
  EXPECT_EQ(s.name, "mma");
  EXPECT_EQ(s.granularity, "warp_group");
  EXPECT_EQ(s.buffer_strategy, "flush");
  EXPECT_EQ(s.sampling_strategy, "none");
}

TEST(ModeGrammar, BadInputNamesThePartAndWhatIsAccepted) {
  struct Case {
    const char* text;
    std::vector<const char*> words;
  };
  const Case cases[] = {
      {"fancy", {"unknown mode", "default", "mma", "pcsampling", "counters"}},
      {"graph:x=1", {"graph", "no options"}},
      {"pcsamplingx", {"unknown mode"}},
      {"periodic_flushing:format=csv",
       {"unknown periodic_flushing format", "hatchet_msgpack", "chrome_trace"}},
      {"periodic_flushing:every=2", {"unknown periodic_flushing option", "format=hatchet"}},
      {"pcsampling:interval=0", {"interval", "from 1"}},
      {"pcsampling:interval=fast", {"interval"}},
      {"pcsampling:colour=1", {"colour", "buffer_mb"}},
      {"pcsampling:interval", {"needs a value"}},
      {"pcsampling:adapt=2", {"adapt", "0 to 1"}},
      {"counters:range=sideways", {"counters", "user or auto"}},
      {"counters:bogus", {"counters", "metrics="}},
      {"counters:metrics=", {"counters", "metric names"}},
      {"counters:metrics=a b", {"bad metric name"}},
      {"counters:interval_us=-1", {"counters", "interval_us"}},
      {"counters:sampling=pm:range=user", {"sampling=pm"}},
      {"default:granularity=block", {"unknown granularity", "warp_group"}},
      {"default:colour=red", {"unknown option", "buffer_size"}},
      {"default:buffer_size", {"malformed option", "key=value"}},
      {"default:buffer_size=1000", {"power of two"}},
      {"default:buffer_size=lots", {"buffer_size must be an integer"}},
      {"default:optimizations=turbo", {"unknown optimization", "clock32"}},
      {"default:sampling_strategy=selective", {"sampling_options"}},
      {"default:sampling_options=a,b", {"warp ids"}},
      {"mma_cycle::warp", {"malformed mode"}},
      {"fancy_cycle::[warp::circular::all]", {"unknown mode", "default"}},
  };
  for (const Case& c : cases) {
    std::string e = mode_error(c.text);
    ASSERT_FALSE(e.empty()) << c.text << " was accepted";
    for (const char* w : c.words)
      EXPECT_NE(e.find(w), std::string::npos) << c.text << ": " << e;
  }
}

// Sets variables for one test and takes them back.
class Env : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const EnvVariable& v : env_variables())
      unsetenv(std::string(v.name).c_str());
  }
  void set(const char* name, const char* value) { setenv(name, value, 1); }
};

TEST_F(Env, UnsetOrEmptyKeepsTheDefaults) {
  for (const EnvVariable& v : env_variables())
    set(std::string(v.name).c_str(), "");
  Environment e = read_environment();
  EXPECT_FALSE(e.buffer_bytes.has_value());
  EXPECT_FALSE(e.nvtx.has_value());
  EXPECT_FALSE(e.instr_pool_mb.has_value());
  SessionOptions o = make_session_options({}, e);
  EXPECT_EQ(o.backend.buffer_bytes, BackendOptions{}.buffer_bytes);
  EXPECT_TRUE(o.backend.nvtx);
  EXPECT_FALSE(o.backend.host_calls);  // asked for only: the tree stays triton.profiler's
  EXPECT_EQ(o.instr.pool_bytes, 0u);
}

TEST_F(Env, HostCallsCanBeTurnedOn) {
  set("PROTON_HOST_CALLS", "1");
  EXPECT_TRUE(make_session_options({}, read_environment()).backend.host_calls);
}

TEST_F(Env, EveryBadValueIsAnErrorNamingTheVariable) {
  const std::pair<const char*, const char*> bad[] = {
      {"PROTON_BUFFER_SIZE", "1MB"},        {"PROTON_BUFFER_SIZE", "12"},
      {"PROTON_FLUSH_INTERVAL_MS", "fast"}, {"PROTON_FLUSH_TAGS", "-1"},
      {"PROTON_BUFFER_THREAD", "yes"},      {"PROTON_LAUNCH_CALLBACKS", "runtime"},
      {"PROTON_GRAPH_TRACE_EAGER", "2"},    {"PROTON_CUPTI_FINALIZE", "maybe"},
      {"PROTON_NVTX", "no thanks"},         {"PROTON_NVTX_DEBUG", "verbose"},
      {"PROTON_TRACE_BUDGET_MB", "lots"},   {"PROTON_COUNTER_BATCH", "0"},
      {"PROTON_PM_BUFFER_MB", "9000"},      {"PROTON_PM_IMAGE_SAMPLES", "8"},
      {"PROTON_INSTR_POOL_MB", "0"},        {"PROTON_INSTR_STAGING_MB", "1e3"},
      {"PROTON_INSTR_DECODERS", "64"},      {"PROTON_INSTR_GATHER_MS", "-3"},
      {"PROTON_INSTR_WAKE_BATCH", "1000"},  {"PROTON_INSTR_KERNEL_TIME", "yes"},
      {"PROTON_HOST_CALLS", "sometimes"},   {"PROTON_FLUSH_EVERY", "10 s"},
      {"PROTON_FLUSH_EVERY", "0"},          {"PROTON_FLUSH_EVERY", "2d"},
  };
  for (auto [name, value] : bad) {
    set(name, value);
    std::string e = error_of([] { read_environment(); });
    EXPECT_NE(e.find(std::string(name) + "='" + value + "' is not "), std::string::npos)
        << name << "=" << value << ": '" << e << "'";
    unsetenv(name);
  }
}

TEST_F(Env, GoodValuesReachTheirOptions) {
  set("PROTON_BUFFER_SIZE", "4096");
  set("PROTON_FLUSH_INTERVAL_MS", "0");
  set("PROTON_LAUNCH_CALLBACKS", "driver");
  set("PROTON_BUFFER_THREAD", "1");
  set("PROTON_GRAPH_TRACE_EAGER", "true");
  set("PROTON_CUPTI_FINALIZE", "on");
  set("PROTON_NVTX_DEBUG", "1");
  set("PROTON_TRACE_BUDGET_MB", "0.5");
  set("PROTON_COUNTER_BATCH", "64");
  set("PROTON_PM_BUFFER_MB", "16");
  set("PROTON_PM_IMAGE_SAMPLES", "100");
  set("PROTON_INSTR_POOL_MB", "100");
  set("PROTON_INSTR_STAGING_MB", "8");
  set("PROTON_INSTR_DECODERS", "4");
  set("PROTON_INSTR_GATHER_MS", "7");
  set("PROTON_INSTR_WAKE_BATCH", "16");
  SessionConfig c;
  c.mode = "counters";
  SessionOptions o = make_session_options(c, read_environment());
  EXPECT_EQ(o.backend.buffer_bytes, 4096u);
  EXPECT_EQ(o.backend.flush_interval_ms, 0u);
  EXPECT_EQ(o.backend.launch_callbacks, BackendOptions::LaunchCallbacks::kDriver);
  EXPECT_TRUE(o.backend.buffer_thread);
  EXPECT_TRUE(o.backend.graph_trace_eager);
  EXPECT_TRUE(o.backend.cupti_finalize);
  EXPECT_TRUE(o.backend.nvtx_debug);
  EXPECT_EQ(o.config.trace_budget_bytes, uint64_t{512} << 10);
  EXPECT_EQ(o.backend.counters.range_batch, 64u);
  EXPECT_EQ(o.backend.counters.pm_buffer_mb, 16u);
  EXPECT_EQ(o.backend.counters.pm_image_samples, 100u);
  EXPECT_EQ(o.instr.pool_bytes, uint64_t{100} << 20);
  EXPECT_EQ(o.instr.staging_bytes, uint64_t{8} << 20);
  EXPECT_EQ(o.instr.decoders, 4u);
  EXPECT_EQ(o.instr.gather_ms, 7u);
  EXPECT_EQ(o.instr.wake_batch, 16u);
}

TEST_F(Env, FlushEveryTakesTheDurationGrammar) {
  EXPECT_FALSE(read_environment().flush_every_ms.has_value());
  for (auto [text, ms] : {std::pair{"10s", 10'000u},
                          {"500ms", 500u},
                          {"2m", 120'000u},
                          {"250", 250u},
                          {"24h", 86'400'000u}}) {
    set("PROTON_FLUSH_EVERY", text);
    EXPECT_EQ(read_environment().flush_every_ms, std::optional<uint64_t>(ms)) << text;
  }
  set("PROTON_FLUSH_EVERY", "25h");  // past one day
  EXPECT_NE(error_of([] { read_environment(); }).find("PROTON_FLUSH_EVERY='25h' is not a time"),
            std::string::npos);
}

TEST_F(Env, OurVariablesWinOverTritonsKnobs) {
  SessionConfig c;
  c.knobs.enable_nvtx = false;
  c.knobs.cupti_lib_dir = "/knob/lib";
  SessionOptions o = make_session_options(c, read_environment());
  EXPECT_FALSE(o.backend.nvtx);  // the knob, when no variable is set
  EXPECT_EQ(o.backend.cupti_path, "/knob/lib");
  set("PROTON_NVTX", "1");
  set("PROTON_CUPTI_PATH", "/ours/libcupti.so");
  o = make_session_options(c, read_environment());
  EXPECT_TRUE(o.backend.nvtx);
  EXPECT_EQ(o.backend.cupti_path, "/ours/libcupti.so");
}

TEST_F(Env, TritonsProfileBufferSizeSizesTheActivityBuffers) {
  SessionConfig c;
  EXPECT_EQ(make_session_options(c, read_environment()).backend.buffer_bytes, size_t{1} << 20);
  c.knobs.profile_buffer_size = 8 << 20;  // triton.knobs.proton.profile_buffer_size
  EXPECT_EQ(make_session_options(c, read_environment()).backend.buffer_bytes, size_t{8} << 20);
  set("PROTON_BUFFER_SIZE", "4096");  // ours wins
  EXPECT_EQ(make_session_options(c, read_environment()).backend.buffer_bytes, 4096u);
  unsetenv("PROTON_BUFFER_SIZE");
  for (int64_t bad : {int64_t{-1}, int64_t{512}, (int64_t{1} << 30) + 1}) {
    c.knobs.profile_buffer_size = bad;
    try {
      make_session_options(c, read_environment());
      ADD_FAILURE() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("TRITON_PROFILE_BUFFER_SIZE"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos);
    }
  }
}

TEST_F(Env, InstrKernelTimeTurnsKernelRecordsOn) {
  SessionConfig c;
  c.kernel_records = false;  // an instrumentation session keeping region cycles only
  EXPECT_FALSE(make_session_options(c, read_environment()).backend.kernel_records);
  set("PROTON_INSTR_KERNEL_TIME", "1");
  SessionOptions o = make_session_options(c, read_environment());
  EXPECT_TRUE(o.backend.kernel_records);
  EXPECT_TRUE(o.config.kernel_records);
}

TEST_F(Env, ThePythonLayersVariablesAreReadHereToo) {
  set("PROTON_RANK_PATTERN", "{name}/r{rank}");
  EXPECT_EQ(env_value("PROTON_RANK_PATTERN"), "{name}/r{rank}");
  EXPECT_EQ(env_value("PROTON_VIEWER"), "");
  EXPECT_NE(error_of([] { env_value("HOME"); }).find("not one of Proton's variables"),
            std::string::npos);
}

TEST(SessionOptions, ArgumentsAreCheckedInOnePlace) {
  SessionConfig c;
  c.context = "cuda";
  EXPECT_NE(error_of([&] { make_session_options(c, {}); }).find("unknown context 'cuda'"),
            std::string::npos);
  c = {};
  c.data = "tree,graph";
  EXPECT_NE(error_of([&] { make_session_options(c, {}); }).find("unknown data"), std::string::npos);
  c = {};
  c.mode = "default:granularity=warp";
  EXPECT_NE(error_of([&] { make_session_options(c, {}); }).find("backend='instrumentation'"),
            std::string::npos);
  c = {};
  c.data = "trace";
  c.mode = "periodic_flushing";
  EXPECT_NE(error_of([&] { make_session_options(c, {}); }).find("needs data='tree'"),
            std::string::npos);
  c = {};
  c.mode = "graph";
  SessionOptions o = make_session_options(c, {});
  EXPECT_TRUE(o.graph());
  EXPECT_TRUE(o.backend.graph_level);
  EXPECT_EQ(o.pc_sampling(), nullptr);
}

}  // namespace
}  // namespace proton
