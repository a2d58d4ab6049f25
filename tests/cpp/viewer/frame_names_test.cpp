#include <gtest/gtest.h>

#include "viewer/frame_names.h"

namespace proton::viewer {
namespace {

TEST(FrameNames, TritonFormatsOnPythonFrames) {
  const char* frame = "/home/u/proj/train.py:42@forward";
  EXPECT_EQ(format_frame(frame, FrameFormat::kFull), frame);
  EXPECT_EQ(format_frame(frame, FrameFormat::kFileFunctionLine), "train.py:42@forward");
  EXPECT_EQ(format_frame(frame, FrameFormat::kFunctionLine), "42@forward");
  EXPECT_EQ(format_frame(frame, FrameFormat::kFileFunction), "train.py@forward");
  // Not a Python frame: left alone rather than cut at '/' or ':'.
  EXPECT_EQ(format_frame("ns::kern<a/b>", FrameFormat::kFunctionLine), "ns::kern<a/b>");
}

TEST(FrameNames, DemanglesAndShortens) {
  EXPECT_EQ(demangle("_Z14vector_add_f32PKfS0_Pfi"),
            "vector_add_f32(float const*, float const*, float*, int)");
  EXPECT_FALSE(demangle("_attn_fwd").has_value());
  EXPECT_FALSE(demangle("_Zgarbage").has_value());
  EXPECT_EQ(shorten_cpp_name("void ns::gemm<128, float>(Params)"), "ns::gemm<…>");
  EXPECT_EQ(shorten_cpp_name("void f<a<b>, c>(int (*)(int)) const"), "f<…>");
  EXPECT_EQ(shorten_cpp_name("void (anonymous namespace)::k<1>(int)"), "{anon}::k<…>");
  NameOptions shortened;
  EXPECT_EQ(display_name("_Z14vector_add_f32PKfS0_Pfi", shortened), "vector_add_f32");
  NameOptions full{FrameFormat::kFull, true};
  EXPECT_EQ(display_name("_Z14vector_add_f32PKfS0_Pfi", full),
            "vector_add_f32(float const*, float const*, float*, int)");
  EXPECT_EQ(display_name("train.py:1@<module>", shortened), "train.py:1@<module>");
}

TEST(FrameNames, TerminalSafe) {
  EXPECT_EQ(terminal_safe("a\033[31mb\n"), "a?[31mb?");
}

}  // namespace
}  // namespace proton::viewer
