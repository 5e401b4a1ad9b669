// The column tables of a trace (trace.cpp's, internal): each table declares
// every dataset of one group once, in the order the file stores it, with the
// field it holds. docs/trace-format.md and python/avbench/schema.py describe the
// same columns (a test checks that they agree).
#pragma once

#include <algorithm>
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

// One dataset of a table over trials: its name, its type, and how a batch of
// items (trials for /trials, summary rows for /summary) is appended to it, the
// batch's first item going to position `first` on the trial axis. Each table
// below declares every column once, in the order the file stores them.
template <class Item>
struct Column {
  const char* name;
  h5::Type type;
  void (*append)(const h5::Dataset& ds, std::span<const Item> batch, hsize_t first);
};

template <class Item, auto Field>
using FieldType = std::remove_cvref_t<decltype(std::declval<const Item&>().*Field)>;

// A 1-D column over trials: one value per item.
template <class Item, auto Field>
void append_field(const h5::Dataset& ds, std::span<const Item> batch, hsize_t first) {
  std::vector<FieldType<Item, Field>> values;
  values.reserve(batch.size());
  for (const Item& item : batch) values.push_back(item.*Field);
  ds.write_block<FieldType<Item, Field>>({first}, {values.size()}, values);
}

template <class Item, auto Field>
constexpr Column<Item> field(const char* name) {
  return {name, h5::type_of<FieldType<Item, Field>>(), append_field<Item, Field>};
}

// A 2-D column over (trial, row): each trial's rows, then the fill value up to the
// batch's longest trial.
template <class Trial, auto Field>
void append_rows(const h5::Dataset& ds, std::span<const Trial> batch, hsize_t first) {
  using Row = typename decltype(Trial::rows)::value_type;
  using T = FieldType<Row, Field>;
  std::size_t width = 0;
  for (const Trial& t : batch) width = std::max(width, t.rows.size());
  std::vector<T> block(batch.size() * width, h5::fill_value<T>());
  for (std::size_t k = 0; k < batch.size(); ++k)
    for (std::size_t r = 0; r < batch[k].rows.size(); ++r) block[k * width + r] = batch[k].rows[r].*Field;
  ds.write_block<T>({first, 0}, {batch.size(), width}, block);
}

template <class Trial, auto Field>
constexpr Column<Trial> row_field(const char* name) {
  using Row = typename decltype(Trial::rows)::value_type;
  return {name, h5::type_of<FieldType<Row, Field>>(), append_rows<Trial, Field>};
}

// One table: `first`, then `rest`.
template <class Item, std::size_t A, std::size_t B>
constexpr std::array<Column<Item>, A + B> join(const Column<Item> (&first)[A], const Column<Item> (&rest)[B]) {
  std::array<Column<Item>, A + B> out{};
  for (std::size_t k = 0; k < A; ++k) out[k] = first[k];
  for (std::size_t k = 0; k < B; ++k) out[A + k] = rest[k];
  return out;
}

// The row columns every kind of trial ends with: the peers and groups of the
// round, what did not decode, traffic and time.
template <class Trial, class Row>
inline constexpr Column<Trial> kActivityColumns[] = {
    row_field<Trial, &Row::alive>("alive"),
    row_field<Trial, &Row::groups>("groups"),
    row_field<Trial, &Row::failed_groups>("failed_groups"),
    row_field<Trial, &Row::decode_failures>("decode_failures"),
    row_field<Trial, &Row::bytes_sent>("bytes_sent"),
    row_field<Trial, &Row::time>("time"),
    row_field<Trial, &Row::detection_time>("detection_time"),
};

// /trials of an averaging run, over (trial, round), after its scales (the row's
// `round` is its index: the scale `round`).
inline constexpr auto kRoundColumns = join<TrialRecord>(
    {
        row_field<TrialRecord, &RoundRow::variance>("variance"),
        row_field<TrialRecord, &RoundRow::error>("error"),
        row_field<TrialRecord, &RoundRow::mean_drift>("mean_drift"),
        row_field<TrialRecord, &RoundRow::late>("late"),
    },
    kActivityColumns<TrialRecord, RoundRow>);

// /trials of a training run, over (trial, step), after its scales.
inline constexpr auto kTrainingColumns = join<TrainingTrial>(
    {
        row_field<TrainingTrial, &TrainingRow::round>("round"),
        row_field<TrainingTrial, &TrainingRow::loss>("loss"),
        row_field<TrainingTrial, &TrainingRow::gap>("gap"),
        row_field<TrainingTrial, &TrainingRow::relative_gap>("relative_gap"),
        row_field<TrainingTrial, &TrainingRow::distance>("distance"),
        row_field<TrainingTrial, &TrainingRow::consensus>("consensus"),
        row_field<TrainingTrial, &TrainingRow::accuracy>("accuracy"),
    },
    kActivityColumns<TrainingTrial, TrainingRow>);

// /summary of an averaging run, after trial, seed and the per-target columns.
inline constexpr Column<SummaryRow> kSummaryColumns[] = {
    field<SummaryRow, &SummaryRow::final_variance>("final_variance"),
    field<SummaryRow, &SummaryRow::final_error>("final_error"),
    field<SummaryRow, &SummaryRow::bytes_sent>("bytes_sent"),
    field<SummaryRow, &SummaryRow::time>("time"),
    field<SummaryRow, &SummaryRow::rounds>("rounds"),
    field<SummaryRow, &SummaryRow::complete>("complete"),
};

// /summary of a training run, after trial, seed and the per-target columns.
inline constexpr Column<TrainingSummaryRow> kTrainingSummaryColumns[] = {
    field<TrainingSummaryRow, &TrainingSummaryRow::final_gap>("final_gap"),
    field<TrainingSummaryRow, &TrainingSummaryRow::final_relative_gap>("final_relative_gap"),
    field<TrainingSummaryRow, &TrainingSummaryRow::final_consensus>("final_consensus"),
    field<TrainingSummaryRow, &TrainingSummaryRow::final_accuracy>("final_accuracy"),
    field<TrainingSummaryRow, &TrainingSummaryRow::bytes_sent>("bytes_sent"),
    field<TrainingSummaryRow, &TrainingSummaryRow::time>("time"),
    field<TrainingSummaryRow, &TrainingSummaryRow::steps>("steps"),
    field<TrainingSummaryRow, &TrainingSummaryRow::rounds>("rounds"),
    field<TrainingSummaryRow, &TrainingSummaryRow::complete>("complete"),
    field<TrainingSummaryRow, &TrainingSummaryRow::diverged>("diverged"),
};

// The name after "rounds_to_" / "reached_", e.g. "1e-9".
inline std::string target_suffix(double target) {
  return target_attribute_name(target).substr(std::string_view("rounds_to_").size());
}

}  // namespace avb::trace_columns
