#include "control/protocol.h"

#include <gtest/gtest.h>

#include <string>

#include "control/control_dir.h"

namespace proton::control {
namespace {

TEST(ControlProtocol, Requests) {
  Parsed p = parse_request("start");
  ASSERT_TRUE(p.request);
  EXPECT_EQ(p.request->command, Command::kStart);
  EXPECT_EQ(p.request->name, "");
  p = parse_request("start /tmp/my run/serve");
  ASSERT_TRUE(p.request);
  EXPECT_EQ(p.request->name, "/tmp/my run/serve");  // the rest of the line
  p = parse_request("window 10s /tmp/x");
  ASSERT_TRUE(p.request);
  EXPECT_EQ(p.request->command, Command::kWindow);
  EXPECT_EQ(p.request->duration_ms, 10'000u);
  EXPECT_EQ(p.request->name, "/tmp/x");
  EXPECT_EQ(parse_request("stop").request->command, Command::kStop);
  EXPECT_EQ(parse_request("status").request->command, Command::kStatus);
}

TEST(ControlProtocol, BadRequestsGetOneLine) {
  for (const char* line : {"launch", "", "stop now", "window", "window 0s", "window 10parsecs",
                           "window -5s", "start \x01", "START", "start   "}) {
    Parsed p = parse_request(line);
    EXPECT_FALSE(p.request) << line;
    EXPECT_NE(p.error, "") << line;
    EXPECT_EQ(error_reply(p.error).find('\n'), std::string::npos) << line;
  }
  EXPECT_NE(parse_request("launch").error.find("unknown command 'launch'"), std::string::npos);
  EXPECT_NE(parse_request(std::string(5000, 'a')).error.find("longer"), std::string::npos);
  EXPECT_EQ(error_reply("two\nlines"), "error two lines");
}

TEST(ControlProtocol, Durations) {
  EXPECT_EQ(parse_duration_ms("250"), 250u);
  EXPECT_EQ(parse_duration_ms("250ms"), 250u);
  EXPECT_EQ(parse_duration_ms("10s"), 10'000u);
  EXPECT_EQ(parse_duration_ms("2m"), 120'000u);
  EXPECT_EQ(parse_duration_ms("1h"), 3'600'000u);
  EXPECT_EQ(parse_duration_ms("24h"), 86'400'000u);
  for (const char* bad : {"", "0", "25h", "s", "1.5s", "10 s", "10sec", "99999999999999999999"}) {
    EXPECT_FALSE(parse_duration_ms(bad)) << bad;
  }
}

TEST(ControlProtocol, ClientEncodingReadsBack) {
  Request r{Command::kWindow, "/tmp/a b", 1500};
  Parsed p = parse_request(format_request(r));
  ASSERT_TRUE(p.request);
  EXPECT_EQ(p.request->duration_ms, 1500u);
  EXPECT_EQ(p.request->name, "/tmp/a b");
}

TEST(ControlPeers, OnlyTheSameUser) {
  EXPECT_TRUE(peer_allowed(1000, 1000));
  EXPECT_FALSE(peer_allowed(1001, 1000));
  EXPECT_FALSE(peer_allowed(0, 1000));  // not even root: a profile is written as this user
  EXPECT_NE(refusal_message(1001, 1000).find("uid 1001"), std::string::npos);
}

}  // namespace
}  // namespace proton::control
