// /trials and /summary of a trace (trace.cpp's, internal): every trial's rows in
// one set of 2-D datasets over (trial, row), and one row per trial in /summary,
// appended in batches. A batch costs one write per dataset, whatever the number of
// trials in it: per-trial groups cost a dozen datasets each, more than a fast
// engine's trial itself.
#pragma once

#include <algorithm>
#include <bit>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "trace/columns.hpp"
#include "trace/h5.hpp"

namespace avb::trace_columns {

// What differs between the run kinds' tables.
template <class Trial, class Summary>
struct TableSpec {
  const char* index;    // the row axis's scale: "round" or "step"
  const char* to_prefix;  // "rounds_to_" or "steps_to_"
  std::span<const Column<Trial>> rows;
  std::span<const Column<Summary>> summary;
  std::int32_t (*index_of)(const typename decltype(Trial::rows)::value_type& row);
};

template <class Trial, class Summary>
class TrialTables {
 public:
  TrialTables(const h5::File& file, TableSpec<Trial, Summary> spec) : file_(file), spec_(spec) {}

  // Checks that the trial's rows follow the row axis's values so far (a training
  // run's trials evaluate at the same steps; an averaging run's row k is round k)
  // and buffers it with its summary row.
  void add(const Trial& trial, Summary summary, const std::vector<double>& targets, const std::string& where) {
    for (std::size_t r = 0; r < trial.rows.size(); ++r) {
      const std::int32_t value = spec_.index_of(trial.rows[r]);
      if (r < index_.size() && index_[r] != value)
        throw TraceError(where + ": row " + std::to_string(r) + " is " + spec_.index + " " + std::to_string(value) +
                         ", where the trials before had " + std::to_string(index_[r]));
      if (r == index_.size()) index_.push_back(value);
    }
    if (!targets_) targets_ = targets;
    pending_.push_back(trial);
    pending_summary_.push_back(std::move(summary));
    pending_rows_ += trial.rows.size();
  }

  // Rows buffered beyond which a batch is written whatever the time.
  bool full() const { return pending_rows_ >= kBatchRows; }

  // Appends the buffered trials (creating the tables at the first call).
  void write() {
    if (!trials_) create();
    const auto first = static_cast<hsize_t>(written_);
    const std::span<const Trial> batch(pending_);
    std::vector<std::int32_t> ids, rows;
    for (const Trial& t : batch) {
      ids.push_back(t.index);
      rows.push_back(static_cast<std::int32_t>(t.rows.size()));
    }
    trial_->write_block<std::int32_t>({first}, {ids.size()}, ids);
    if (index_.size() > scale_length_) {
      const std::span<const std::int32_t> added = std::span<const std::int32_t>(index_).subspan(scale_length_);
      row_scale_->write_block<std::int32_t>({scale_length_}, {added.size()}, added);
      scale_length_ = index_.size();
    }
    datasets_[0].write_block<std::int32_t>({first}, {rows.size()}, rows);
    for (std::size_t c = 0; c < spec_.rows.size(); ++c) spec_.rows[c].append(datasets_[c + 1], batch, first);
    write_summary(first);
    written_ += pending_.size();
    pending_.clear();
    pending_summary_.clear();
    pending_rows_ = 0;
  }

 private:
  static constexpr std::size_t kBatchRows = 65536;

  // Chunks as wide as the first batch's longest trial and as tall as its trials,
  // up to 64 KiB of doubles: a small run's file stays small, a big one's chunks
  // are big enough to write fast.
  void create() {
    if (!targets_) targets_.emplace();  // a run stopped before its first trial
    std::size_t width = 1;
    for (const Trial& t : pending_) width = std::max(width, t.rows.size());
    const hsize_t across = std::min<hsize_t>(width, 4096);
    const hsize_t down = std::clamp<hsize_t>(std::bit_ceil(std::max<std::size_t>(pending_.size(), 1)), 1,
                                             std::max<hsize_t>(1, 8192 / across));
    trials_ = file_.open_group("trials");
    trial_ = trials_->create_growing("trial", h5::Type::int32, {down}, false);
    trial_->make_scale("trial");
    row_scale_ = trials_->create_growing(spec_.index, h5::Type::int32, {across}, false);
    row_scale_->make_scale(spec_.index);
    datasets_.push_back(trials_->create_growing("rows", h5::Type::int32, {down}, false));
    datasets_.back().attach(*trial_);
    for (const Column<Trial>& c : spec_.rows) {
      datasets_.push_back(trials_->create_growing(c.name, c.type, {down, across}, true));
      datasets_.back().attach(*trial_, 0);
      datasets_.back().attach(*row_scale_, 1);
    }
    create_summary(down);
  }

  void create_summary(hsize_t down) {
    summary_ = file_.create_group("summary");
    const std::vector<double>& targets = *targets_;
    summary_sets_.push_back(summary_->create_growing("trial", h5::Type::int32, {down}, false));
    summary_sets_.front().make_scale("trial");
    auto add = [&](const std::string& name, h5::Type type) {
      summary_sets_.push_back(summary_->create_growing(name, type, {down}, false));
      summary_sets_.back().attach(summary_sets_.front());
    };
    add("seed", h5::Type::uint64);
    for (double t : targets) add(spec_.to_prefix + target_suffix(t), h5::Type::int32);
    for (double t : targets) add("reached_" + target_suffix(t), h5::Type::int32);
    for (const Column<Summary>& c : spec_.summary) add(c.name, c.type);
    // Its own dimension: a coordinate variable, as a netCDF reader sees it.
    summary_->write_dataset("targets", targets).make_scale("targets");
  }

  void write_summary(hsize_t first) {
    const std::span<const Summary> batch(pending_summary_);
    std::size_t at = 0;
    field<Summary, &Summary::trial>("").append(summary_sets_[at++], batch, first);
    field<Summary, &Summary::seed>("").append(summary_sets_[at++], batch, first);
    const std::size_t targets = targets_->size();
    std::vector<std::int32_t> values(batch.size());
    for (auto member : {&Summary::to_target, &Summary::reached})
      for (std::size_t k = 0; k < targets; ++k) {
        for (std::size_t i = 0; i < batch.size(); ++i) values[i] = (batch[i].*member)[k];
        summary_sets_[at++].write_block<std::int32_t>({first}, {values.size()}, values);
      }
    for (const Column<Summary>& c : spec_.summary) c.append(summary_sets_[at++], batch, first);
  }

  const h5::File& file_;
  TableSpec<Trial, Summary> spec_;
  std::vector<Trial> pending_;
  std::vector<Summary> pending_summary_;
  std::size_t pending_rows_ = 0;
  std::size_t written_ = 0;
  std::vector<std::int32_t> index_;  // the row axis's values, as long as the longest trial so far
  std::size_t scale_length_ = 0;     // of which the file holds this many
  std::optional<std::vector<double>> targets_;
  std::optional<h5::Node> trials_, summary_;
  std::optional<h5::Dataset> trial_, row_scale_;
  std::vector<h5::Dataset> datasets_;  // rows, then spec_.rows
  std::vector<h5::Dataset> summary_sets_;
};

}  // namespace avb::trace_columns
