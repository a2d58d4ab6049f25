// A fixture for tests that drive the whole Runtime over a FakeBackend: a temp directory per
// test, session configs that write into it, kernel launches completed on the fake backend and
// lookups in the Hatchet JSON that sessions write.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "attribution/launch_stage.h"
#include "fake_backend.h"
#include "session/runtime.h"
#include "test_util.h"

namespace proton::testing {

class RuntimeFixture : public ::testing::Test {
 protected:
  /// Each test gets the directory <tmp>/<dir_prefix><pid>_<test name>; its launches take
  /// correlation ids from first_correlation + 1 on.
  RuntimeFixture(std::string dir_prefix, uint64_t first_correlation)
      : correlation_(first_correlation), dir_prefix_(std::move(dir_prefix)) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (dir_prefix_ + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    auto backend = std::make_unique<FakeBackend>(&log_);
    fake_ = backend.get();
    rt_.set_backend_for_testing(std::move(backend));
  }
  void TearDown() override {
    rt_.finalize_all("");
    rt_.set_backend_for_testing(nullptr);
    std::filesystem::remove_all(dir_);
  }

  /// A session writing to dir_/name.
  SessionConfig config(const std::string& name, const std::string& mode = "") {
    SessionConfig c;
    c.name = (dir_ / name).string();
    c.mode = mode;
    return c;
  }
  /// The JSON file dir_/file.
  nlohmann::json read_json(const std::string& file) {
    std::ifstream in(dir_ / file);
    return nlohmann::json::parse(in);
  }
  /// The Hatchet file a session named `name` wrote.
  nlohmann::json read(const std::string& name) { return read_json(name + ".hatchet"); }
  /// Launches a kernel named `kernel` now and completes it with `ns` of GPU time; the record
  /// waits in the fake backend until the next flush.
  void launch(const std::string& kernel, uint64_t ns) {
    LaunchStage::tag(++correlation_);
    fake_->complete(correlation_, id(kernel), ns);
  }
  /// The child of a Hatchet node with frame name `name`, or nullptr.
  static const nlohmann::json* child(const nlohmann::json& node, const std::string& name) {
    for (const auto& c : node["children"]) {
      if (c["frame"]["name"] == name) return &c;
    }
    return nullptr;
  }

  MainThreadFixture main_;
  Runtime& rt_ = Runtime::get();
  FakeBackend::Log log_;
  FakeBackend* fake_ = nullptr;
  std::filesystem::path dir_;
  uint64_t correlation_;

 private:
  std::string dir_prefix_;
};

}  // namespace proton::testing
