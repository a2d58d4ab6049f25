// Where libcupti is looked for, and the messages CUPTI failures become.
#include "backends/cupti/library_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "backends/cupti/cupti_errors.h"

namespace proton::cupti {
namespace {

size_t position(const std::vector<std::string>& v, const std::string& s) {
  auto it = std::find(v.begin(), v.end(), s);
  EXPECT_NE(it, v.end()) << s << " is not a candidate";
  return static_cast<size_t>(it - v.begin());
}

LibrarySearch typical() {
  LibrarySearch s;
  s.extra_dirs = {"/py/site-packages"};
  s.cuda_roots = {"/opt/cuda-13", "/usr/local/cuda"};
  s.python_roots = {"/venv/lib/python3.12/site-packages"};
  return s;
}

TEST(LibrarySearch, OrderIsToolkitThenWheelsThenTritonThenLoader) {
  auto c = cupti_candidates(typical());
  size_t given = position(c, "/py/site-packages/libcupti.so.13");
  size_t toolkit_extras = position(c, "/opt/cuda-13/extras/CUPTI/lib64/libcupti.so");
  size_t toolkit_lib = position(c, "/opt/cuda-13/lib64/libcupti.so");
  size_t second_toolkit = position(c, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  size_t wheel13 = position(c, "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13");
  size_t wheel12 =
      position(c, "/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
  size_t triton = position(
      c, "/venv/lib/python3.12/site-packages/triton/backends/nvidia/lib/cupti/libcupti.so.12");
  size_t loader = position(c, "libcupti.so.13");
  EXPECT_LT(given, toolkit_extras);
  EXPECT_LT(toolkit_extras, toolkit_lib);
  EXPECT_LT(toolkit_lib, second_toolkit);
  EXPECT_LT(second_toolkit, wheel13);
  EXPECT_LT(wheel13, wheel12);
  EXPECT_LT(wheel12, triton);
  EXPECT_LT(triton, loader);
  EXPECT_EQ(c.back().find('/'), std::string::npos);  // bare sonames last
}

TEST(LibrarySearch, FoldersPassedByPythonAreAlsoSitePackagesRoots) {
  auto c = cupti_candidates(typical());
  position(c, "/py/site-packages/nvidia/cu13/lib/libcupti.so.13");
  position(c, "/py/site-packages/triton/backends/nvidia/lib/cupti/libcupti.so.12");
}

TEST(LibrarySearch, OverrideComesFirstAsFileOrFolder) {
  LibrarySearch s = typical();
  s.override_path = "/custom/libcupti.so.12.4";
  auto c = cupti_candidates(s);
  EXPECT_EQ(c.front(), "/custom/libcupti.so.12.4");
  s.override_path = "/custom/lib/";
  c = cupti_candidates(s);
  EXPECT_EQ(c.front(), "/custom/lib/libcupti.so");
  EXPECT_EQ(c[1], "/custom/lib/libcupti.so.13");
}

TEST(LibrarySearch, NoDuplicates) {
  LibrarySearch s = typical();
  s.cuda_roots.push_back("/usr/local/cuda");
  auto c = cupti_candidates(s);
  EXPECT_EQ(std::set<std::string>(c.begin(), c.end()).size(), c.size());
}

TEST(LibrarySearch, OnlyExistingFilesAndBareNamesSurvive) {
  auto c = cupti_candidates(typical());
  std::set<std::string> disk = {
      "/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
      "/venv/lib/python3.12/site-packages/triton/backends/nvidia/lib/cupti/libcupti.so.12"};
  auto e = existing_candidates(c, [&](const std::string& p) { return disk.count(p) > 0; });
  ASSERT_EQ(e.size(), 2 + cupti_file_names().size());
  EXPECT_EQ(e[0], "/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
  EXPECT_EQ(e[1],
            "/venv/lib/python3.12/site-packages/triton/backends/nvidia/lib/cupti/libcupti.so.12");
  EXPECT_EQ(e[2], "libcupti.so");
}

TEST(CuptiErrors, AnotherSubscriberNamesTheLikelyCulprits) {
  std::string m =
      describe_cupti_error("cuptiSubscribe", CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
                           "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
  for (const char* culprit : {"torch.profiler", "triton.profiler", "nsys", "ncu"}) {
    EXPECT_NE(m.find(culprit), std::string::npos) << culprit << " missing from: " << m;
  }
  EXPECT_EQ(m.find('\n'), std::string::npos);  // one line
}

TEST(CuptiErrors, TheHolderIsNamedWhenCuptiKnowsIt) {
  std::string m =
      describe_cupti_error("cuptiSubscribe", CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "busy",
                           "CUPTI for Nsight Systems");
  EXPECT_NE(m.find("'CUPTI for Nsight Systems'"), std::string::npos) << m;
}

TEST(CuptiErrors, OtherErrorsCarryCuptisWordsOrTheCode) {
  std::string m = describe_cupti_error("cuptiActivityEnable", CUPTI_ERROR_UNKNOWN, "");
  EXPECT_EQ(m, "cuptiActivityEnable failed: CUPTI error 999");
  m = describe_cupti_error("cuptiActivityEnable", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
                           "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  EXPECT_NE(m.find("NVreg_RestrictProfilingToAdminUsers"), std::string::npos) << m;
}

TEST(CuptiErrors, NotCompatibleNamesBothCauses) {
  // Another client's PC sampling (measured on an H100) or a libcupti/driver mismatch.
  std::string m = describe_cupti_error("cuptiActivityEnable", CUPTI_ERROR_NOT_COMPATIBLE,
                                       "CUPTI_ERROR_NOT_COMPATIBLE");
  EXPECT_NE(m.find("PC sampling"), std::string::npos) << m;
  EXPECT_NE(m.find("PROTON_CUPTI_PATH"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace proton::cupti
