// Graph-level mode's activity records: CUPTI_ACTIVITY_KIND_GRAPH_TRACE becomes a KernelRecord
// (the vendor border, as cupti_records.h is for kernels: nothing downstream sees CUPTI).
//
// One record per graph launch, timed from the start of its first node to the end of its last,
// carrying the launch's correlation id: it lands on the launch site of the replay as one node
// named kGraphRecordName, with the graph launch count as its count.
#pragma once

#include <cupti.h>

#include "attribution/kernel_record.h"

namespace proton::cupti {

inline constexpr const char* kGraphRecordName = "<cuda graph>";

/// Translates a GRAPH_TRACE record; false (leaving `out` alone) for any other kind.
bool translate_graph_trace(const CUpti_Activity& record, KernelRecord& out);

/// Whether a kernel record is delivered in the current mode: in graph-level mode kernels run
/// by a graph launch are covered by the launch's graph record and would count twice.
bool keep_kernel_record(const KernelRecord& r);

}  // namespace proton::cupti
