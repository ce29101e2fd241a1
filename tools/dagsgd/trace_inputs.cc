// The inputs analyze, replay and export share (trace_inputs.h): their flags, and the traces of
// one run read into a traced workload.
#include "trace_inputs.h"

namespace dagsgd::tools {

void add_trace_inputs(CLI::App& app, TraceInputs& in) {
  app.add_option("RUN", in.paths,
                 "A run directory (dagsgd train --trace / dagsgd collect), a directory of "
                 "Kineto traces or of Chakra execution traces (NAME.<rank>.et), or one trace "
                 "file per rank (Kineto .json, .json.gz; Chakra .et)")
      ->required();
  app.add_flag("--strict", in.strict, "Any bad record in a trace is an error (exit 2)");
  app.add_flag("--json", in.json, "Print one JSON object instead of text");
}

model::Expected<std::unique_ptr<sim::TracedWorkload>> load_traces(const TraceInputs& in) {
  trace::ImportOptions io;
  io.strict = in.strict;
  return sim::TracedWorkload::load(in.paths, io);
}

}  // namespace dagsgd::tools
