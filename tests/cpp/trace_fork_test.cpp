// A child forked while a trace streams to its partial file must not add to that file when it
// exits: exit() flushes every stdio stream, including the parent's FILE and whatever bytes sat
// in its buffer at the fork, and the child shares the file offset.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/name_table.h"
#include "data/trace_store.h"
#include "io/chrome_trace_writer.h"

namespace proton {
namespace {

namespace fs = std::filesystem;

TEST(TraceFork, ChildExitDoesNotDuplicateBufferedBytes) {
  fs::path dir = fs::temp_directory_path() / ("proton_trace_fork_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string path = (dir / "t.chrome_trace").string();
  NameId name = NameTable::global().intern("forked_scope");
  // An odd count of events, so that the spilled bytes are not a multiple of any block size.
  std::vector<TraceEvent> events(20'001);
  for (size_t i = 0; i < events.size(); ++i) {
    events[i].kind = TraceEvent::kScope;
    events[i].name = name;
    events[i].start_ns = 1000 + i;
    events[i].end_ns = 2000 + i;
  }
  {
    ChromeTraceWriter writer(path, TraceClock{1000, 0});
    writer.append(events);  // > 1 MB of JSON: spilled to the partial file during the run
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) std::exit(0);  // flushes stdio streams, as a Python child's exit does
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    writer.append(events);
    writer.finish(TraceSummary{});
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(doc.is_discarded()) << "the trace is not valid JSON after the child exited";
  size_t scopes = 0;
  for (const auto& e : doc["traceEvents"])
    scopes += e.value("name", "") == "forked_scope";
  EXPECT_EQ(scopes, 2 * events.size());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace proton
