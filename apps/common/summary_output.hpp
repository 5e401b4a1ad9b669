// The --summary file: one row per trial, with the run's identity (program, engine,
// peers, every resolved option: the KeyValues the trace's /config holds) repeated
// on every row, as CSV, or as JSON (an array of one object per row) when the file
// name ends in ".json". Numbers are numbers: a target not reached and a value that
// is not finite are empty in CSV and null in JSON. Written once, by rank 0, at the
// end of the run, under a temporary name renamed into place (docs/analysis.md).
#pragma once

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace avb::app {

// One cell: empty (CSV "", JSON null), a number (text as written), or text.
struct SummaryCell {
  enum class Kind { empty, number, text, boolean };
  Kind kind = Kind::empty;
  std::string value;
};
SummaryCell summary_empty();
SummaryCell summary_number(double value);  // empty when not finite
SummaryCell summary_integer(long long value);
SummaryCell summary_unsigned(unsigned long long value);
SummaryCell summary_text(std::string value);
// An option's text, typed as python/avbench types /config values: true/false,
// an integer, a finite number, else text.
SummaryCell summary_option(const std::string& value);

// The rows are rendered as they come (CSV, or JSON when `json`) into an unnamed
// temporary file, so memory does not grow with the number of trials; write()
// copies them to the destination with the last column, known only at the end.
class SummaryTable {
 public:
  explicit SummaryTable(bool json = false) : json_(json) {}
  ~SummaryTable();
  SummaryTable(const SummaryTable&) = delete;
  SummaryTable& operator=(const SummaryTable&) = delete;

  // The run's identity: the leading columns of every row.
  void set_identity(std::vector<std::pair<std::string, SummaryCell>> identity) { identity_ = std::move(identity); }
  // The per-trial columns, named once; every row then gives one cell per name.
  void set_columns(std::vector<std::string> names) { columns_ = std::move(names); }
  // Throws Error when the temporary file cannot be written.
  void add_row(const std::vector<SummaryCell>& cells);

  // Writes the table to `path` (write_summary_file) with one more column, `last`,
  // the same `cell` in every row. Returns write_summary_file's line ("" when written).
  std::string write(const std::filesystem::path& path, bool overwrite, const std::string& last,
                    const SummaryCell& cell);

 private:
  bool json_;
  std::vector<std::pair<std::string, SummaryCell>> identity_;
  std::vector<std::string> columns_;
  std::FILE* rows_ = nullptr;  // the rendered rows, each ended by a NUL
  std::size_t count_ = 0;
  std::string error_;          // why a row could not be kept
};

// JSON when the path ends in ".json" (any case), CSV otherwise.
bool summary_is_json(const std::filesystem::path& path);

// The check of a summary's destination, before the run (the trace's check:
// avb::check_trace_destination; output_clash refuses the --out file itself). Returns one
// line naming --summary, empty when it may be written.
std::string summary_destination_problem(const std::string& summary, bool overwrite);

// --summary's name for standard output.
inline constexpr const char* kSummaryToStdout = "-";

// Writes what `produce` writes to its stream at `path`, under a hidden temporary
// name in the same folder, then renames it into place (replacing an existing file
// only when `overwrite`); at kSummaryToStdout, to standard output. Returns one
// line naming --summary when it could not; nothing is left behind then.
std::string write_summary_file(const std::filesystem::path& path, bool overwrite,
                               const std::function<void(std::FILE*)>& produce);

}  // namespace avb::app
