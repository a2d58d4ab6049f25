// CUPTI failures as one-line messages a user can act on (pure: testable without CUPTI).
#pragma once

#include <cupti_result.h>

#include <string>
#include <string_view>

namespace proton::cupti {

/// `call` is the CUPTI function that failed, `cupti_text` CUPTI's own string for `result`
/// (cuptiGetResultString; may be empty), `holder` the name of the tool already subscribed
/// when CUPTI reported one (cuptiSubscribe_v2; may be empty).
std::string describe_cupti_error(std::string_view call, CUptiResult result,
                                 std::string_view cupti_text, std::string_view holder = {});

}  // namespace proton::cupti
