// Chakra execution traces (MLCommons; what ASTRA-sim reads and `dagsgd export --format chakra`
// writes) as a run: which inputs are Chakra files, and their nodes as events with their
// dependencies (ImportedRank::chakra). Private to trace/; the mapping is in docs/formats.md.
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/trace/importer.h"

namespace dagsgd::trace::detail {

// The Chakra files the inputs name, in the order given (a directory: its *.et files): empty when
// the inputs are not Chakra traces (a run directory with a manifest, Kineto traces). A file is a
// Chakra trace by its extension .et or, whatever its name, by its first message. Inputs that mix
// Chakra and Kineto traces are an Error naming one of each.
model::Expected<std::vector<std::string>> chakra_files(const std::vector<std::string>& paths);

// The run the Chakra files make, one file per rank: the rank from the name NAME.<rank>.et (else
// the file's metadata, else its place in the list). Times are not yet checked for their span
// and `origin` is not set (import_run does both, as for every run).
model::Expected<ImportedRun> import_chakra_run(const std::string& path,
                                               const std::vector<std::string>& files,
                                               const ImportOptions& options);

// Whether a file name is a Kineto trace's (.json, .json.gz; importer.cc).
bool is_kineto_name(const std::string& name);

// Orders a run's ranks (and their file reports) by rank; two files of one rank are an Error
// naming both (importer.cc; every run, Kineto or Chakra).
model::Expected<void> order_by_rank(ImportedRun& run);

}  // namespace dagsgd::trace::detail
