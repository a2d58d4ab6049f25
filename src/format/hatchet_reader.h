// The one reader of the Hatchet profile format, `[root, device_map]` as JSON or msgpack, as
// Proton and triton.profiler write it. It checks the grammar once and hands what it reads to a
// HatchetSink: the viewer keeps a full tree, the multi-rank merge a compact form, and both accept
// and refuse exactly the same documents with the same messages.
//
// Grammar: a node is an object with a "frame" object (a string "name", an optional string
// "type"), an optional "metrics" object (numbers, null for NaN, arrays of numbers shown by their
// sum, strings) and an optional "children" array of nodes; keys come in any order and unknown
// ones are skipped. The root may also hold "metric_rules" ({"<metric>": "exc" | "pty"}) and, in
// its frame, the rank block of a multi-process run. The device map is
// {"<type>": {"<id>": {"arch": ..., "num_sms": ..., ...}}}.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "format/hatchet_schema.h"
#include "format/input_error.h"

namespace proton::format {

// Receives a document as it is read. Nodes are numbered 0, 1, ... in document order (the root
// is 0, a parent comes before its children); every later call names a node by that number.
// Strings are valid only during the call. After a refusal the sink holds part of the document.
class HatchetSink {
 public:
  virtual ~HatchetSink() = default;

  // A new node under `parent` (-1 for the root), without name or type yet.
  virtual void node(int32_t parent) = 0;
  virtual void frame_name(int32_t node, std::string_view name) = 0;
  virtual void frame_type(int32_t node, std::string_view type) = 0;
  // A numeric metric of `node`: a number, a NaN (written as null), or the sum of an array's
  // elements (`from_array`). `integral`: every number was written as an integer. A name repeated
  // on one node sums, as Hatchet does.
  virtual void metric(int32_t node, std::string_view name, double value, bool integral,
                      bool from_array) = 0;
  // A string metric of `node` (device ids and types).
  virtual void text(int32_t node, std::string_view name, std::string_view value) = 0;
  // A rule of the root's "metric_rules", before or after the metric's values.
  virtual void declared_kind(std::string_view metric, HatchetRule kind) = 0;
  virtual void device(HatchetDevice&& device) = 0;
  // The root frame's rank block, once, when the whole document has been read.
  virtual void run(HatchetRun&& run) = 0;
};

// Thrown by a sink that cannot hold what it was given (a limit of its own representation); the
// reader turns it into an InputError at the byte where it stopped.
class SinkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads `text`, Hatchet JSON or msgpack (msgpack when it starts with a msgpack container header),
// into `sink`; throws InputError (byte offset + reason) on anything it cannot read. A leading
// UTF-8 byte-order mark is skipped (as editors on some systems write one); error offsets still
// count from the start of `text`.
void read_hatchet(std::string_view text, HatchetSink& sink);

}  // namespace proton::format
