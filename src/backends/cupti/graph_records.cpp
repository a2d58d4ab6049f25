#include "backends/cupti/graph_records.h"

#include <cstddef>

#include "backends/cupti/graph_callbacks.h"
#include "common/name_table.h"

namespace proton::cupti {

// CUDA 12+ writes CUpti_ActivityGraphTrace2; an older libcupti (torch's wheels may load one)
// writes CUpti_ActivityGraphTrace. Only fields at the same offset in both are read.
using GraphActivity = CUpti_ActivityGraphTrace2;
#define PROTON_SAME_OFFSET(field)                                                            \
  static_assert(offsetof(GraphActivity, field) == offsetof(CUpti_ActivityGraphTrace, field), \
                "CUPTI moved " #field)
PROTON_SAME_OFFSET(correlationId);
PROTON_SAME_OFFSET(start);
PROTON_SAME_OFFSET(end);
PROTON_SAME_OFFSET(deviceId);
PROTON_SAME_OFFSET(graphId);
PROTON_SAME_OFFSET(streamId);
#undef PROTON_SAME_OFFSET

bool translate_graph_trace(const CUpti_Activity& record, KernelRecord& out) {
  if (record.kind != CUPTI_ACTIVITY_KIND_GRAPH_TRACE) return false;
  static const NameId name = NameTable::global().intern(kGraphRecordName);
  const auto& g = reinterpret_cast<const GraphActivity&>(record);
  out.correlation = g.correlationId;
  out.start_ns = g.start;
  // 0/0 means CUPTI could not time it: counted, with zero time (as for kernels).
  out.end_ns = g.end < g.start ? g.start : g.end;
  out.name = name;
  // CUDA 12.x: INT_MAX when the graph starts with a host node; its device is then unknown.
  out.device_id = g.deviceId < 64 ? g.deviceId : 0;
  out.stream_id = g.streamId;
  out.device_type = DeviceType::kCuda;
  out.graph_id = g.graphId;
  out.graph_node_id = 0;  // the whole graph: no capture-site path below the launch site
  return true;
}

bool keep_kernel_record(const KernelRecord& r) {
  return r.graph_id == 0 || !graph_level();
}

}  // namespace proton::cupti
