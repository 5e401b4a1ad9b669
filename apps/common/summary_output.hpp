// The --summary file: one row per trial, with the run's identity (program, engine,
// peers, every resolved option: the KeyValues the trace's /config holds) repeated
// on every row, as CSV, or as JSON (an array of one object per row) when the file
// name ends in ".json". Numbers are numbers: a target not reached and a value that
// is not finite are empty in CSV and null in JSON. Written once, by rank 0, at the
// end of the run, under a temporary name renamed into place (docs/analysis.md).
#pragma once

#include <filesystem>
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

class SummaryTable {
 public:
  // The run's identity: the leading columns of every row.
  void set_identity(std::vector<std::pair<std::string, SummaryCell>> identity) { identity_ = std::move(identity); }
  // The per-trial columns, named once; every row then gives one cell per name.
  void set_columns(std::vector<std::string> names) { columns_ = std::move(names); }
  void add_row(std::vector<SummaryCell> cells) { rows_.push_back(std::move(cells)); }
  // A column after the others, with the same cell in every row (known only at the end).
  void append_constant(const std::string& name, const SummaryCell& cell) {
    columns_.push_back(name);
    for (auto& row : rows_) row.push_back(cell);
  }

  std::string csv() const;
  std::string json() const;

 private:
  std::vector<std::pair<std::string, SummaryCell>> identity_;
  std::vector<std::string> columns_;
  std::vector<std::vector<SummaryCell>> rows_;
};

// JSON when the path ends in ".json" (any case), CSV otherwise.
bool summary_is_json(const std::filesystem::path& path);

// The check of a summary's destination, before the run (the trace's check:
// avb::check_trace_destination; output_clash refuses the --out file itself). Returns one
// line naming --summary, empty when it may be written.
std::string summary_destination_problem(const std::string& summary, bool overwrite);

// Writes `text` to `path` under a hidden temporary name in the same folder, then
// renames it into place (replacing an existing file only when `overwrite`).
// Returns one line naming --summary when it could not; nothing is left behind then.
std::string write_summary_file(const std::filesystem::path& path, bool overwrite, const std::string& text);

}  // namespace avb::app
