// The column tables of a trace (trace.cpp's, internal): each table declares
// every dataset of one group once, in the order the file stores it, with the
// row field it holds. docs/trace-format.md describes the same columns.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "trace/h5.hpp"
#include "trace/trace.hpp"

namespace avb::trace_columns {

// What /summary needs of a trial once its rows are written and gone: the fields
// of every run kind here, the kind's own in the two rows below.
struct SummaryHead {
  std::int32_t trial = 0;
  std::uint64_t seed = 0;
  std::vector<std::int32_t> to_target;  // rounds_to_ / steps_to_<target>, one per target, in target order
  std::vector<std::int32_t> reached;
  std::uint64_t bytes_sent = 0;
  double time = 0;
  std::int32_t rounds = 0;
  std::int32_t complete = 0;
};

// /summary of an averaging run, one per trial.
struct SummaryRow : SummaryHead {
  double final_variance = 0;
  double final_error = 0;
};

// /summary of a training run, one per trial.
struct TrainingSummaryRow : SummaryHead {
  double final_gap = 0;
  double final_relative_gap = 0;
  double final_consensus = 0;
  double final_accuracy = 0;
  std::int32_t steps = 0;
  std::int32_t diverged = 0;
};

// Collects one field of every row into a column: the file stores columns, which
// is what a reader (numpy, pandas) wants, while the caller hands over rows.
template <class Row, class F>
auto column(const std::vector<Row>& rows, F field) {
  std::vector<std::decay_t<decltype(field(std::declval<const Row&>()))>> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(field(r));
  return out;
}

// The name after "rounds_to_" / "reached_", e.g. "1e-9".
inline std::string target_suffix(double target) {
  return target_attribute_name(target).substr(std::string_view("rounds_to_").size());
}

// One dataset of a table of rows: its name and the field it holds. Each table
// below declares every column once, in the order the file stores them.
template <class Row>
struct Column {
  const char* name;
  h5::Dataset (*write)(const h5::Node& group, const char* name, const std::vector<Row>& rows);
};

template <class Row, auto Field>
h5::Dataset write_field(const h5::Node& group, const char* name, const std::vector<Row>& rows) {
  return group.write_dataset(name, column(rows, [](const Row& r) { return r.*Field; }));
}

// Writes `columns`, each with `scale` attached as its dimension.
template <class Row>
void write_attached(const h5::Node& group, const h5::Dataset& scale,
                    std::type_identity_t<std::span<const Column<Row>>> columns, const std::vector<Row>& rows) {
  for (const Column<Row>& c : columns) c.write(group, c.name, rows).attach(scale);
}

// Writes a table whose first column is its dimension (round, step, trial): a
// scale of that name, attached to every other column, so that a netCDF reader
// (xarray) indexes the rows by its values.
template <class Row>
void write_columns(const h5::Node& group, std::type_identity_t<std::span<const Column<Row>>> columns,
                   const std::vector<Row>& rows) {
  const h5::Dataset scale = columns.front().write(group, columns.front().name, rows);
  scale.make_scale(columns.front().name);
  write_attached<Row>(group, scale, columns.subspan(1), rows);
}

// One table: `first`, then `rest`.
template <class Row, std::size_t A, std::size_t B>
constexpr std::array<Column<Row>, A + B> join(const Column<Row> (&first)[A], const Column<Row> (&rest)[B]) {
  std::array<Column<Row>, A + B> out{};
  for (std::size_t k = 0; k < A; ++k) out[k] = first[k];
  for (std::size_t k = 0; k < B; ++k) out[A + k] = rest[k];
  return out;
}

// The columns every kind of trial ends with: the peers and groups of the round,
// what did not decode, traffic and time.
template <class Row>
inline constexpr Column<Row> kActivityColumns[] = {
    {"alive", write_field<Row, &Row::alive>},
    {"groups", write_field<Row, &Row::groups>},
    {"failed_groups", write_field<Row, &Row::failed_groups>},
    {"decode_failures", write_field<Row, &Row::decode_failures>},
    {"bytes_sent", write_field<Row, &Row::bytes_sent>},
    {"time", write_field<Row, &Row::time>},
    {"detection_time", write_field<Row, &Row::detection_time>},
};

// /trials/<k> of an averaging run.
inline constexpr auto kRoundColumns = join<RoundRow>(
    {
        {"round", write_field<RoundRow, &RoundRow::round>},
        {"variance", write_field<RoundRow, &RoundRow::variance>},
        {"error", write_field<RoundRow, &RoundRow::error>},
        {"mean_drift", write_field<RoundRow, &RoundRow::mean_drift>},
        {"late", write_field<RoundRow, &RoundRow::late>},
    },
    kActivityColumns<RoundRow>);

// /trials/<k> of a training run.
inline constexpr auto kTrainingColumns = join<TrainingRow>(
    {
        {"step", write_field<TrainingRow, &TrainingRow::step>},
        {"round", write_field<TrainingRow, &TrainingRow::round>},
        {"loss", write_field<TrainingRow, &TrainingRow::loss>},
        {"gap", write_field<TrainingRow, &TrainingRow::gap>},
        {"relative_gap", write_field<TrainingRow, &TrainingRow::relative_gap>},
        {"distance", write_field<TrainingRow, &TrainingRow::distance>},
        {"consensus", write_field<TrainingRow, &TrainingRow::consensus>},
        {"accuracy", write_field<TrainingRow, &TrainingRow::accuracy>},
    },
    kActivityColumns<TrainingRow>);

// /summary of an averaging run, after trial, seed and the per-target columns.
inline constexpr Column<SummaryRow> kSummaryColumns[] = {
    {"final_variance", write_field<SummaryRow, &SummaryRow::final_variance>},
    {"final_error", write_field<SummaryRow, &SummaryRow::final_error>},
    {"bytes_sent", write_field<SummaryRow, &SummaryRow::bytes_sent>},
    {"time", write_field<SummaryRow, &SummaryRow::time>},
    {"rounds", write_field<SummaryRow, &SummaryRow::rounds>},
    {"complete", write_field<SummaryRow, &SummaryRow::complete>},
};

// /summary of a training run, after trial, seed and the per-target columns.
inline constexpr Column<TrainingSummaryRow> kTrainingSummaryColumns[] = {
    {"final_gap", write_field<TrainingSummaryRow, &TrainingSummaryRow::final_gap>},
    {"final_relative_gap", write_field<TrainingSummaryRow, &TrainingSummaryRow::final_relative_gap>},
    {"final_consensus", write_field<TrainingSummaryRow, &TrainingSummaryRow::final_consensus>},
    {"final_accuracy", write_field<TrainingSummaryRow, &TrainingSummaryRow::final_accuracy>},
    {"bytes_sent", write_field<TrainingSummaryRow, &TrainingSummaryRow::bytes_sent>},
    {"time", write_field<TrainingSummaryRow, &TrainingSummaryRow::time>},
    {"steps", write_field<TrainingSummaryRow, &TrainingSummaryRow::steps>},
    {"rounds", write_field<TrainingSummaryRow, &TrainingSummaryRow::rounds>},
    {"complete", write_field<TrainingSummaryRow, &TrainingSummaryRow::complete>},
    {"diverged", write_field<TrainingSummaryRow, &TrainingSummaryRow::diverged>},
};

// /summary: trial (the dimension scale of the others) and seed,
// "<to_prefix><target>" and "reached_<target>" per target, then the table's columns.
template <class Row, std::size_t N>
void write_summary(const h5::File& file, const std::vector<Row>& rows, const std::vector<double>& targets,
                   const std::string& to_prefix, const Column<Row> (&columns)[N]) {
  h5::Node summary = file.create_group("summary");  // closed before the file
  const h5::Dataset trial = write_field<Row, &Row::trial>(summary, "trial", rows);
  trial.make_scale("trial");
  write_field<Row, &Row::seed>(summary, "seed", rows).attach(trial);
  for (std::size_t k = 0; k < targets.size(); ++k)
    summary.write_dataset(to_prefix + target_suffix(targets[k]), column(rows, [k](const Row& r) { return r.to_target[k]; }))
        .attach(trial);
  for (std::size_t k = 0; k < targets.size(); ++k)
    summary.write_dataset("reached_" + target_suffix(targets[k]), column(rows, [k](const Row& r) { return r.reached[k]; }))
        .attach(trial);
  write_attached<Row>(summary, trial, columns, rows);
}


}  // namespace avb::trace_columns
