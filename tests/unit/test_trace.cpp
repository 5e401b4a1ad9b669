// Unit tests of the HDF5 trace writer (src/trace). No MPI: the writer only ever
// runs on rank 0 and does not depend on a communicator.
//
// The executable doubles as the sample writer for the Python checks: with
// AVB_TRACE_SAMPLE=<path> in the environment, TraceSample.Write writes an
// averaging trace with the known values that tests/scripts/test_trace_roundtrip.py
// expects; with AVB_TRACE_SAMPLE_SGD=<path>, TraceSample.WriteTraining writes the
// training trace that tests/scripts/test_trace_roundtrip_sgd.py expects.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "trace/h5.hpp"

#include <hdf5_hl.h>  // H5DS: reading the dimension scales back
#include "trace/trace.hpp"

namespace fs = std::filesystem;
using avb::OptimumRecord;
using avb::RoundRow;
using avb::RunInfo;
using avb::TargetResult;
using avb::TraceError;
using avb::TraceWriter;
using avb::TrainingRow;
using avb::TrainingTrial;
using avb::TrialRecord;

namespace {

// A fresh folder per test, removed afterwards, so tests neither see nor leave
// each other's files.
class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("avb_trace_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename());
    return out;
  }
  fs::path dir_;
};

RunInfo run_info() {
  RunInfo info;
  info.avbench_version = "0.1.0";
  info.git_sha = "abcdef012345";
  info.command_line = "averaging_bench --peers 4";
  info.engine = "openmpi";
  info.mpi_library = "Open MPI v4.1.4";
  info.n_peers = 4;
  return info;
}

TrialRecord small_trial(std::int32_t index) {
  TrialRecord t;
  t.index = index;
  t.seed = 1000 + static_cast<std::uint64_t>(index);
  for (int r = 0; r <= 2; ++r) {
    RoundRow row;
    row.round = r;
    row.variance = 1.0 / (1 << (4 * r));
    row.error = row.variance;
    row.alive = 4;
    row.groups = r == 0 ? 0 : 2;
    row.bytes_sent = 64u * static_cast<unsigned>(r);
    row.time = 0.5 * r;
    t.rows.push_back(row);
  }
  t.targets = {{1e-9, 2, false}, {0.5, 1, true}};
  return t;
}

RunInfo training_info() {
  RunInfo info = run_info();
  info.command_line = "sgd_bench --peers 4";
  info.run_kind = "sgd";
  return info;
}

OptimumRecord small_optimum() {
  OptimumRecord o;
  o.x = {1.0, -0.5};
  o.loss = 0.25;
  o.initial_loss = 2.25;
  o.gradient_norm = 1e-14;
  o.iterations = 0;
  o.converged = true;
  o.method = "ldlt";
  return o;
}

// Rows at steps 0, 2, 4 with one round every 4 steps; relative gaps 1, 1/2, 1/8.
TrainingTrial small_training_trial(std::int32_t index) {
  TrainingTrial t;
  t.index = index;
  t.seed = 2000 + static_cast<std::uint64_t>(index);
  const double rel[] = {1.0, 0.5, 0.125};
  for (int i = 0; i <= 2; ++i) {
    TrainingRow row;
    row.step = 2 * i;
    row.round = i / 2;
    row.relative_gap = rel[i];
    row.gap = 2.0 * rel[i];
    row.loss = row.gap + 0.25;
    row.distance = 1.25 * rel[i];
    row.consensus = i == 0 ? 0.0 : 0.0625 * i;
    row.accuracy = std::numeric_limits<double>::quiet_NaN();
    row.alive = 4;
    row.groups = i == 2 ? 2 : 0;
    row.decode_failures = i == 2 ? 3 : 0;
    row.bytes_sent = i == 2 ? 128u : 0u;
    row.time = 0.25 * i;
    row.detection_time = i == 0 ? 0.0 : 0.5;
    t.rows.push_back(row);
  }
  t.targets = {{0.25, 4, true}, {1e-3, 4, false}};
  return t;
}

// Reads a whole dataset of `axes` axes as T (row-major), checking that it is stored
// as T (class, size, sign); `width` (if given) gets its last axis's length.
template <class T>
std::vector<T> read_column(const avb::h5::Node& node, const std::string& name, int axes = 1,
                           hsize_t* width = nullptr) {
  const hid_t ds = H5Dopen2(node.id(), name.c_str(), H5P_DEFAULT);
  if (ds < 0) {
    ADD_FAILURE() << "no dataset " << name << " in " << node.object_path();
    return {};
  }
  const hid_t type = H5Dget_type(ds);
  const hid_t space = H5Dget_space(ds);
  EXPECT_EQ(H5Sget_simple_extent_ndims(space), axes) << name;
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  if (width != nullptr) *width = dims[axes - 1];
  EXPECT_EQ(H5Tget_size(type), sizeof(T)) << name;
  hid_t mem = H5T_NATIVE_DOUBLE;
  if constexpr (std::is_floating_point_v<T>) {
    EXPECT_EQ(H5Tget_class(type), H5T_FLOAT) << name;
  } else {
    EXPECT_EQ(H5Tget_class(type), H5T_INTEGER) << name;
    EXPECT_EQ(H5Tget_sign(type), std::is_signed_v<T> ? H5T_SGN_2 : H5T_SGN_NONE) << name;
    mem = std::is_signed_v<T> ? H5T_NATIVE_INT32 : H5T_NATIVE_UINT64;
  }
  std::vector<T> out(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  if (!out.empty()) {
    EXPECT_GE(H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), 0) << name;
  }
  H5Sclose(space);
  H5Tclose(type);
  H5Dclose(ds);
  return out;
}

// Trial `t`'s rows of the 2-D column `name` of /trials (schema v9): the first
// rows[t] cells of its row; checks that the cells after them hold the fill value.
template <class T>
std::vector<T> trial_column(const avb::h5::Node& trials, const std::string& name, std::size_t t) {
  hsize_t width = 0;
  const std::vector<T> all = read_column<T>(trials, name, 2, &width);
  const auto rows = static_cast<std::size_t>(read_column<std::int32_t>(trials, "rows").at(t));
  const auto begin = all.begin() + static_cast<std::ptrdiff_t>(t * width);
  for (std::size_t r = rows; r < width; ++r) {
    const T cell = begin[static_cast<std::ptrdiff_t>(r)];
    if constexpr (std::is_floating_point_v<T>) {
      EXPECT_TRUE(std::isnan(cell)) << name << " trial " << t << " row " << r;
    } else {
      EXPECT_EQ(cell, avb::h5::fill_value<T>()) << name << " trial " << t << " row " << r;
    }
  }
  return {begin, begin + static_cast<std::ptrdiff_t>(rows)};
}

double read_double_attribute(const avb::h5::Node& node, const std::string& name) {
  double value = std::nan("");
  const hid_t a = H5Aopen(node.id(), name.c_str(), H5P_DEFAULT);
  if (a < 0) {
    ADD_FAILURE() << "no attribute " << name << " on " << node.object_path();
    return value;
  }
  const hid_t type = H5Aget_type(a);
  EXPECT_EQ(H5Tget_class(type), H5T_FLOAT) << name;
  EXPECT_EQ(H5Tget_size(type), sizeof(double)) << name;
  EXPECT_GE(H5Aread(a, H5T_NATIVE_DOUBLE, &value), 0) << name;
  H5Tclose(type);
  H5Aclose(a);
  return value;
}

bool has_link(const avb::h5::Node& node, const std::string& name) {
  return H5Lexists(node.id(), name.c_str(), H5P_DEFAULT) > 0;
}

// Member names of a group in creation order.
std::vector<std::string> members(const avb::h5::Node& node) {
  std::vector<std::string> out;
  H5G_info_t info;
  if (H5Gget_info(node.id(), &info) < 0) return out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char name[256];
    const ssize_t n = H5Lget_name_by_idx(node.id(), ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, name, sizeof name,
                                         H5P_DEFAULT);
    if (n > 0) out.emplace_back(name, static_cast<std::size_t>(n));
  }
  return out;
}

int attribute_count(const avb::h5::Node& node) {
  int count = 0;
  hsize_t index = 0;
  auto add = [](hid_t, const char*, const H5A_info_t*, void* data) -> herr_t {
    ++*static_cast<int*>(data);
    return 0;
  };
  if (H5Aiterate2(node.id(), H5_INDEX_NAME, H5_ITER_INC, &index, add, &count) < 0) return -1;
  return count;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ---- target_attribute_name -----------------------------------------------------

TEST(TargetAttributeName, DocumentedExamples) {
  EXPECT_EQ(avb::target_attribute_name(1e-09), "rounds_to_1e-9");
  EXPECT_EQ(avb::target_attribute_name(1e-4), "rounds_to_1e-4");
  EXPECT_EQ(avb::target_attribute_name(2.5e-3), "rounds_to_2.5e-3");
  EXPECT_EQ(avb::target_attribute_name(0.5), "rounds_to_5e-1");
}

TEST(TargetAttributeName, ExponentsWithoutPlusOrLeadingZeros) {
  EXPECT_EQ(avb::target_attribute_name(1.0), "rounds_to_1e0");
  EXPECT_EQ(avb::target_attribute_name(10.0), "rounds_to_1e1");
  EXPECT_EQ(avb::target_attribute_name(1.25e20), "rounds_to_1.25e20");
  EXPECT_EQ(avb::target_attribute_name(1e-100), "rounds_to_1e-100");
  EXPECT_EQ(avb::target_attribute_name(0.1), "rounds_to_1e-1");
  EXPECT_EQ(avb::target_attribute_name(3e-5), "rounds_to_3e-5");
  EXPECT_EQ(avb::target_attribute_name(1.0 / 3.0), "rounds_to_3.333333333333333e-1");
}

// The name is the shortest text that reads back as the same double, so two
// different targets never share a column name.
TEST(TargetAttributeName, RoundTripsExactly) {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> exponent(-300, 300);
  for (int i = 0; i < 2000; ++i) {
    const double target = std::pow(10.0, exponent(gen));
    const std::string name = avb::target_attribute_name(target);
    ASSERT_EQ(name.rfind("rounds_to_", 0), 0u);
    EXPECT_EQ(std::strtod(name.c_str() + 10, nullptr), target) << name;
  }
}

TEST(TargetAttributeName, RejectsNonPositiveAndNonFinite) {
  EXPECT_THROW(avb::target_attribute_name(0.0), TraceError);
  EXPECT_THROW(avb::target_attribute_name(-1e-9), TraceError);
  EXPECT_THROW(avb::target_attribute_name(std::nan("")), TraceError);
  EXPECT_THROW(avb::target_attribute_name(INFINITY), TraceError);
}

// ---- destination checks ----------------------------------------------------------

TEST_F(TraceTest, RefusesToOverwriteAnExistingFile) {
  const fs::path path = dir_ / "run.h5";
  std::ofstream(path) << "precious";
  EXPECT_THROW(avb::check_trace_destination(path, false), TraceError);
  try {
    TraceWriter w(path, false, run_info());
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_all(path), "precious");
  EXPECT_EQ(files().size(), 1u);  // no temporary file was created
}

TEST_F(TraceTest, OverwriteReplacesOnlyAtFinish) {
  const fs::path path = dir_ / "run.h5";
  std::ofstream(path) << "old";
  EXPECT_NO_THROW(avb::check_trace_destination(path, true));
  TraceWriter w(path, true, run_info());
  EXPECT_EQ(read_all(path), "old");  // untouched while the run writes
  w.write_trial(small_trial(0));
  w.finish(true);
  EXPECT_NE(read_all(path), "old");
  EXPECT_EQ(avb::h5::File::open_read_only(path).get_int32("complete"), 1);
}

TEST_F(TraceTest, MissingFolderIsAnError) {
  const fs::path path = dir_ / "no" / "such" / "run.h5";
  try {
    TraceWriter w(path, false, run_info());
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "no" / "such").string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "no"));
}

TEST_F(TraceTest, FolderThatIsAFileOrPathThatIsAFolder) {
  std::ofstream(dir_ / "plain") << "x";
  EXPECT_THROW(avb::check_trace_destination(dir_ / "plain" / "run.h5", false), TraceError);
  fs::create_directory(dir_ / "sub");
  EXPECT_THROW(avb::check_trace_destination(dir_ / "sub", true), TraceError);
  EXPECT_THROW(avb::check_trace_destination(dir_ / "", true), TraceError);
}

TEST_F(TraceTest, ReadOnlyFolderIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write to any folder";
  fs::create_directory(dir_ / "ro");
  fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_THROW(avb::check_trace_destination(dir_ / "ro" / "run.h5", false), TraceError);
  fs::permissions(dir_ / "ro", fs::perms::owner_all);
}

// Only a regular file is ever replaced: a FIFO, a socket or a link to a device is
// refused with or without overwrite (before: replaced by the trace).
TEST_F(TraceTest, RefusesWhatIsNotARegularFile) {
  using Reason = avb::DestinationError::Reason;
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path device_link = dir_ / "null";
  fs::create_symlink("/dev/null", device_link);
  for (const fs::path& path : {fifo, device_link})
    for (bool overwrite : {false, true}) {
      try {
        avb::check_trace_destination(path, overwrite);
        ADD_FAILURE() << "expected DestinationError for " << path;
      } catch (const avb::DestinationError& e) {
        EXPECT_EQ(e.reason(), Reason::not_regular) << e.what();
        EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
      }
      EXPECT_THROW(TraceWriter(path, overwrite, run_info()), avb::DestinationError);
    }
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_symlink(device_link));
  EXPECT_EQ(files().size(), 2u);  // no temporary file
  // A link to a regular file may be replaced (the link, not its target).
  std::ofstream(dir_ / "target") << "x";
  fs::create_symlink(dir_ / "target", dir_ / "link");
  EXPECT_NO_THROW(avb::check_trace_destination(dir_ / "link", true));
}

// A FIFO that appears at the final name while the run writes is not replaced at
// finish(), even with overwrite: the finished trace is kept under its temporary name.
TEST_F(TraceTest, FinishDoesNotReplaceAFifoThatAppeared) {
  const fs::path path = dir_ / "run.h5";
  TraceWriter w(path, true, run_info());
  w.write_trial(small_trial(0));
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_THROW(w.finish(true), TraceError);
  EXPECT_TRUE(fs::is_fifo(path));
  EXPECT_TRUE(fs::exists(w.temporary_path()));
}

// ---- temporary file ----------------------------------------------------------------

TEST_F(TraceTest, WritesUnderAHiddenTemporaryName) {
  const fs::path path = dir_ / "run.h5";
  TraceWriter w(path, false, run_info());
  EXPECT_EQ(w.path(), path);
  EXPECT_EQ(w.temporary_path(), dir_ / (".run.h5.tmp." + std::to_string(::getpid())));
  EXPECT_TRUE(fs::exists(w.temporary_path()));
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(TraceTest, DestructorWithoutFinishRemovesTheTemporaryFile) {
  const fs::path path = dir_ / "run.h5";
  fs::path tmp;
  {
    TraceWriter w(path, false, run_info());
    tmp = w.temporary_path();
    w.write_config({{"peers", "4"}}, "peers = 4\n");
    w.write_trial(small_trial(0));
    ASSERT_TRUE(fs::exists(tmp));
  }
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(files().empty());
}

TEST_F(TraceTest, DestructorAfterAFailedWriteRemovesTheTemporaryFile) {
  fs::path tmp;
  {
    TraceWriter w(dir_ / "run.h5", false, run_info());
    tmp = w.temporary_path();
    w.write_trial(small_trial(0));
    EXPECT_THROW(w.write_trial(small_trial(0)), TraceError);  // same index twice
  }
  EXPECT_FALSE(fs::exists(tmp));
}

// A stale temporary file of the same name is never truncated: the writer reports
// the clash, names the file, and prints nothing (HDF5's stack printing is off).
TEST_F(TraceTest, ExistingTemporaryFileIsReportedNotClobbered) {
  const fs::path path = dir_ / "run.h5";
  const fs::path tmp = dir_ / (".run.h5.tmp." + std::to_string(::getpid()));
  std::ofstream(tmp) << "someone else's";
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  try {
    TraceWriter w(path, false, run_info());
    ADD_FAILURE() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(tmp.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot create HDF5 file"), std::string::npos) << e.what();
  }
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(read_all(tmp), "someone else's");
}

// ---- finish --------------------------------------------------------------------

TEST_F(TraceTest, FinishRenamesAndRecordsCompletion) {
  for (const bool complete : {true, false}) {
    const fs::path path = dir_ / (complete ? "done.h5" : "cut.h5");
    TraceWriter w(path, false, run_info());
    w.write_config({{"peers", "4"}, {"protocol", "moshpit"}}, "peers = 4\nprotocol = moshpit\n");
    w.write_trial(small_trial(0));
    w.write_trial(small_trial(1));
    w.finish(complete);
    EXPECT_FALSE(fs::exists(w.temporary_path()));
    ASSERT_TRUE(fs::exists(path));

    const auto file = avb::h5::File::open_read_only(path);
    EXPECT_EQ(file.get_int32("schema_version"), avb::kTraceSchemaVersion);
    EXPECT_EQ(file.get_int32("complete"), complete ? 1 : 0);
    EXPECT_EQ(file.get_int32("n_peers"), 4);
    EXPECT_EQ(file.get_string("git_sha"), "abcdef012345");
    EXPECT_EQ(file.get_string("engine"), "openmpi");
    EXPECT_EQ(file.get_string("created_utc").size(), std::string("2026-11-30T12:00:00Z").size());
    const auto config = file.open_group("config");
    EXPECT_EQ(config.get_string("protocol"), "moshpit");
    EXPECT_EQ(config.get_string("text"), "peers = 4\nprotocol = moshpit\n");
    const auto summary = file.open_group("summary");
    EXPECT_EQ(read_column<std::int32_t>(summary, "rounds_to_1e-9"), (std::vector<std::int32_t>{2, 2}));
    EXPECT_EQ(read_column<std::int32_t>(summary, "reached_1e-9"), (std::vector<std::int32_t>{0, 0}));
    EXPECT_EQ(read_column<std::int32_t>(summary, "rounds_to_5e-1"), (std::vector<std::int32_t>{1, 1}));
    EXPECT_EQ(read_column<std::int32_t>(summary, "reached_5e-1"), (std::vector<std::int32_t>{1, 1}));
    EXPECT_EQ(read_column<double>(summary, "targets"), (std::vector<double>{1e-9, 0.5}));
    const auto trials = file.open_group("trials");
    EXPECT_EQ(read_column<std::int32_t>(trials, "trial"), (std::vector<std::int32_t>{0, 1}));
    EXPECT_EQ(read_column<std::int32_t>(trials, "round"), (std::vector<std::int32_t>{0, 1, 2}));
    EXPECT_EQ(trial_column<double>(trials, "variance", 1), (std::vector<double>{1.0, 1.0 / 16, 1.0 / 256}));
    EXPECT_EQ(trial_column<std::uint64_t>(trials, "bytes_sent", 1), (std::vector<std::uint64_t>{0, 64, 128}));
  }
}

TEST_F(TraceTest, FinishWithoutTrialsOrConfigStillWritesTheSchema) {
  const fs::path path = dir_ / "empty.h5";
  TraceWriter w(path, false, run_info());
  w.finish(false);
  const auto file = avb::h5::File::open_read_only(path);
  EXPECT_EQ(file.get_int32("complete"), 0);
  EXPECT_EQ(file.open_group("config").get_string("text"), "");
  EXPECT_NO_THROW(file.open_group("trials"));
  EXPECT_NO_THROW(file.open_group("summary"));
}

TEST_F(TraceTest, NothingMayBeWrittenAfterFinish) {
  TraceWriter w(dir_ / "run.h5", false, run_info());
  w.finish(true);
  EXPECT_THROW(w.write_trial(small_trial(0)), TraceError);
  EXPECT_THROW(w.write_config({}, ""), TraceError);
  EXPECT_THROW(w.finish(true), TraceError);
  EXPECT_TRUE(fs::exists(dir_ / "run.h5"));  // a second finish does not undo the first
}

// If the final name appears while the run writes (another run, a user), the
// finished trace is kept under its temporary name rather than lost or clobbering.
TEST_F(TraceTest, FinalNameTakenMeanwhileKeepsTheTemporaryFile) {
  const fs::path path = dir_ / "run.h5";
  fs::path tmp;
  {
    TraceWriter w(path, false, run_info());
    tmp = w.temporary_path();
    w.write_trial(small_trial(0));
    std::ofstream(path) << "intruder";
    try {
      w.finish(true);
      ADD_FAILURE() << "expected TraceError";
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find(tmp.string()), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(read_all(path), "intruder");
  ASSERT_TRUE(fs::exists(tmp));
  EXPECT_EQ(avb::h5::File::open_read_only(tmp).get_int32("complete"), 1);
}

// ---- input validation ------------------------------------------------------------

TEST_F(TraceTest, RejectsMalformedTrials) {
  TraceWriter w(dir_ / "run.h5", false, run_info());
  TrialRecord empty = small_trial(0);
  empty.rows.clear();
  EXPECT_THROW(w.write_trial(empty), TraceError);

  TrialRecord twice = small_trial(0);
  twice.targets = {{1e-9, 2, false}, {1e-9, 2, false}};
  EXPECT_THROW(w.write_trial(twice), TraceError);

  w.write_trial(small_trial(0));
  TrialRecord other_targets = small_trial(1);
  other_targets.targets = {{1e-4, 2, false}};
  EXPECT_THROW(w.write_trial(other_targets), TraceError);
}

TEST_F(TraceTest, RejectsBadConfig) {
  TraceWriter w(dir_ / "run.h5", false, run_info());
  EXPECT_THROW(w.write_config({{"text", "x"}}, ""), TraceError);
  try {
    w.write_config({{"peers", "4"}, {"peers", "8"}}, "");
    ADD_FAILURE() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("peers"), std::string::npos) << e.what();
  }
  EXPECT_THROW(w.write_config({}, ""), TraceError);  // /config exists now
}

// Strings are stored as UTF-8; bytes that are not valid UTF-8 become U+FFFD so
// that Python can always decode them.
TEST_F(TraceTest, StringsAreValidUtf8) {
  RunInfo info = run_info();
  info.command_line = "run --note caf\xc3\xa9 --bad \xff\xfe end";
  const fs::path path = dir_ / "utf8.h5";
  {
    TraceWriter w(path, false, info);
    w.finish(true);
  }
  EXPECT_EQ(avb::h5::File::open_read_only(path).get_string("command_line"),
            "run --note caf\xc3\xa9 --bad \xef\xbf\xbd\xef\xbf\xbd end");
}

// ---- run kinds and the training layout (schema v2 on) ----------------------------

TEST_F(TraceTest, RunKindIsARootAttribute) {
  for (const std::string kind : {"averaging", "sgd"}) {
    RunInfo info = run_info();
    info.run_kind = kind;
    const fs::path path = dir_ / (kind + ".h5");
    TraceWriter w(path, false, info);
    w.finish(true);
    const auto file = avb::h5::File::open_read_only(path);
    EXPECT_EQ(file.get_int32("schema_version"), avb::kTraceSchemaVersion);
    EXPECT_EQ(file.get_string("run_kind"), kind);
    // Only a training trace has /optimum.
    EXPECT_EQ(has_link(file, "optimum"), kind == "sgd");
  }
  EXPECT_EQ(RunInfo{}.run_kind, "averaging");
}

TEST_F(TraceTest, UnknownRunKindIsRefusedBeforeAnythingIsLeft) {
  RunInfo info = run_info();
  info.run_kind = "training";
  try {
    TraceWriter w(dir_ / "run.h5", false, info);
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("'training'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(files().empty());  // the temporary file was removed
}

TEST_F(TraceTest, TrainingTrialBeforeOptimumIsRefused) {
  const fs::path path = dir_ / "run.h5";
  TraceWriter w(path, false, training_info());
  try {
    w.write_trial(small_training_trial(0));
    ADD_FAILURE() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("/optimum must be written first"), std::string::npos) << e.what();
  }
  w.write_optimum(small_optimum());
  EXPECT_THROW(w.write_optimum(small_optimum()), TraceError);  // once only
  // The refused trial left nothing behind: index 0 is still free.
  EXPECT_NO_THROW(w.write_trial(small_training_trial(0)));
  w.finish(true);
  const auto trials = avb::h5::File::open_read_only(path).open_group("trials");
  EXPECT_EQ(read_column<std::int32_t>(trials, "trial"), std::vector<std::int32_t>{0});
}

TEST_F(TraceTest, TrialKindsDoNotMix) {
  {
    const fs::path path = dir_ / "averaging.h5";
    TraceWriter w(path, false, run_info());
    try {
      w.write_optimum(small_optimum());
      ADD_FAILURE() << "expected TraceError";
    } catch (const TraceError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("averaging"), std::string::npos) << msg;
      EXPECT_NE(msg.find("sgd"), std::string::npos) << msg;
    }
    EXPECT_THROW(w.write_trial(small_training_trial(0)), TraceError);
    w.write_trial(small_trial(0));
    w.finish(true);
    const auto file = avb::h5::File::open_read_only(path);
    EXPECT_FALSE(has_link(file, "optimum"));
    EXPECT_EQ(read_column<std::int32_t>(file.open_group("trials"), "trial"), std::vector<std::int32_t>{0});
    EXPECT_TRUE(has_link(file.open_group("summary"), "final_variance"));
    EXPECT_FALSE(has_link(file.open_group("summary"), "final_gap"));
  }
  {
    const fs::path path = dir_ / "sgd.h5";
    TraceWriter w(path, false, training_info());
    w.write_optimum(small_optimum());
    try {
      w.write_trial(small_trial(0));
      ADD_FAILURE() << "expected TraceError";
    } catch (const TraceError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("averaging"), std::string::npos) << msg;
      EXPECT_NE(msg.find("sgd"), std::string::npos) << msg;
    }
    w.write_trial(small_training_trial(0));
    w.finish(true);
    const auto file = avb::h5::File::open_read_only(path);
    EXPECT_EQ(read_column<std::int32_t>(file.open_group("trials"), "trial"), std::vector<std::int32_t>{0});
    EXPECT_TRUE(has_link(file.open_group("summary"), "final_gap"));
    EXPECT_FALSE(has_link(file.open_group("summary"), "final_variance"));
  }
}

// `scale` of `group` is the dimension scale of that name and the one scale of
// axis `axis` of each dataset in `attached` (docs/trace-format.md).
void expect_scale(const avb::h5::Node& group, const std::string& scale, const std::vector<std::string>& attached,
                  unsigned axis = 0) {
  SCOPED_TRACE(group.object_path() + "/" + scale);
  avb::h5::Handle s(H5Dopen2(group.id(), scale.c_str(), H5P_DEFAULT), H5Dclose);
  ASSERT_TRUE(s.valid());
  EXPECT_GT(H5DSis_scale(s.get()), 0);
  char name[64] = {};
  ASSERT_GT(H5DSget_scale_name(s.get(), name, sizeof name), 0);
  EXPECT_EQ(std::string(name), scale);
  for (const std::string& column : attached) {
    avb::h5::Handle d(H5Dopen2(group.id(), column.c_str(), H5P_DEFAULT), H5Dclose);
    ASSERT_TRUE(d.valid()) << column;
    EXPECT_GT(H5DSis_attached(d.get(), s.get(), axis), 0) << column;
    EXPECT_EQ(H5DSget_num_scales(d.get(), axis), 1) << column;
  }
}

// The 2-D columns of /trials (schema v9): every member but the scales and `rows`.
std::vector<std::string> table_columns(const avb::h5::Node& trials, const std::string& index) {
  std::vector<std::string> columns = members(trials);
  for (const char* name : {"trial", "rows"}) std::erase(columns, std::string(name));
  std::erase(columns, index);
  return columns;
}

TEST_F(TraceTest, ColumnsCarryDimensionScales) {
  const fs::path avg = dir_ / "avg.h5";
  {
    TraceWriter w(avg, false, run_info());
    w.write_trial(small_trial(0));
    w.finish(true);
  }
  const auto a = avb::h5::File::open_read_only(avg);
  const auto trials = a.open_group("trials");
  std::vector<std::string> columns = table_columns(trials, "round");
  EXPECT_EQ(columns.size(), 11u);  // variance ... detection_time, late among them
  expect_scale(trials, "round", columns, 1);
  columns.push_back("rows");
  expect_scale(trials, "trial", columns, 0);
  std::vector<std::string> summary = members(a.open_group("summary"));
  std::erase(summary, std::string("trial"));
  std::erase(summary, std::string("targets"));
  expect_scale(a.open_group("summary"), "trial", summary);
  expect_scale(a.open_group("summary"), "targets", {});

  const fs::path sgd = dir_ / "sgd.h5";
  {
    TraceWriter w(sgd, false, training_info());
    w.write_optimum(small_optimum());
    w.write_trial(small_training_trial(0));
    w.finish(true);
  }
  const auto s = avb::h5::File::open_read_only(sgd);
  const auto training = s.open_group("trials");
  columns = table_columns(training, "step");
  EXPECT_EQ(columns.size(), 14u);
  expect_scale(training, "step", columns, 1);
  expect_scale(training, "trial", columns, 0);
  expect_scale(s.open_group("optimum"), "coordinate", {"x"});
}

// Cells past a trial's rows hold the fill value, which each 2-D column states in
// its _FillValue attribute (the netCDF convention: xarray masks them).
TEST_F(TraceTest, ShorterTrialsArePaddedWithTheFillValue) {
  const fs::path path = dir_ / "run.h5";
  {
    TraceWriter w(path, false, run_info());
    TrialRecord cut = small_trial(0);
    cut.rows.pop_back();
    cut.complete = false;
    w.write_trial(small_trial(1));
    w.write_trial(cut);
    w.finish(false);
  }
  const auto trials = avb::h5::File::open_read_only(path).open_group("trials");
  EXPECT_EQ(read_column<std::int32_t>(trials, "trial"), (std::vector<std::int32_t>{1, 0}));
  EXPECT_EQ(read_column<std::int32_t>(trials, "rows"), (std::vector<std::int32_t>{3, 2}));
  EXPECT_EQ(trial_column<double>(trials, "variance", 1), (std::vector<double>{1.0, 1.0 / 16}));
  EXPECT_EQ(trial_column<std::int32_t>(trials, "alive", 1), (std::vector<std::int32_t>{4, 4}));
  EXPECT_EQ(trial_column<std::uint64_t>(trials, "bytes_sent", 1), (std::vector<std::uint64_t>{0, 64}));
  for (const char* column : {"variance", "alive", "bytes_sent"}) {
    avb::h5::Handle d(H5Dopen2(trials.id(), column, H5P_DEFAULT), H5Dclose);
    EXPECT_GT(H5Aexists(d.get(), "_FillValue"), 0) << column;
  }
}

// An averaging trial's row k is round k, and a training run's trials evaluate at
// the same steps: the row axis is one scale for all of them.
TEST_F(TraceTest, RowsOffTheSharedAxisAreRefused) {
  TraceWriter w(dir_ / "run.h5", false, run_info());
  TrialRecord skipped = small_trial(0);
  skipped.rows[2].round = 3;
  EXPECT_THROW(w.write_trial(skipped), TraceError);
  TraceWriter t(dir_ / "sgd.h5", false, training_info());
  t.write_optimum(small_optimum());
  t.write_trial(small_training_trial(0));
  TrainingTrial other = small_training_trial(1);
  other.rows[1].step = 3;
  try {
    t.write_trial(other);
    ADD_FAILURE() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("row 1 is step 3, where the trials before had 2"), std::string::npos)
        << e.what();
  }
}

TEST_F(TraceTest, OptimumIsWrittenAsGiven) {
  const fs::path path = dir_ / "run.h5";
  TraceWriter w(path, false, training_info());
  OptimumRecord o = small_optimum();
  o.method = "newton";
  o.iterations = 7;
  o.test_set = "synthetic-held-out";
  w.write_optimum(o);
  w.finish(true);
  const auto optimum = avb::h5::File::open_read_only(path).open_group("optimum");
  EXPECT_EQ(members(optimum), (std::vector<std::string>{"coordinate", "x"}));
  std::vector<std::int32_t> index(o.x.size());
  for (std::size_t k = 0; k < index.size(); ++k) index[k] = static_cast<std::int32_t>(k);
  EXPECT_EQ(read_column<std::int32_t>(optimum, "coordinate"), index);
  EXPECT_EQ(read_column<double>(optimum, "x"), o.x);
  EXPECT_EQ(read_double_attribute(optimum, "loss"), 0.25);
  EXPECT_EQ(read_double_attribute(optimum, "initial_loss"), 2.25);
  EXPECT_EQ(read_double_attribute(optimum, "gradient_norm"), 1e-14);
  EXPECT_EQ(optimum.get_int32("iterations"), 7);
  EXPECT_EQ(optimum.get_int32("converged"), 1);
  EXPECT_EQ(optimum.get_string("method"), "newton");
  EXPECT_EQ(optimum.get_string("test_set"), "synthetic-held-out");
  EXPECT_EQ(attribute_count(optimum), 7);
}

TEST_F(TraceTest, TrainingTrialColumnsAndAttributes) {
  const fs::path path = dir_ / "run.h5";
  TraceWriter w(path, false, training_info());
  w.write_optimum(small_optimum());
  const TrainingTrial t = small_training_trial(3);
  w.write_trial(t);
  w.finish(true);
  const auto file = avb::h5::File::open_read_only(path);
  const auto g = file.open_group("trials");
  EXPECT_EQ(members(g), (std::vector<std::string>{"trial", "step", "rows", "round", "loss", "gap", "relative_gap",
                                                  "distance", "consensus", "accuracy", "alive", "groups",
                                                  "failed_groups", "decode_failures", "bytes_sent", "time",
                                                  "detection_time"}));
  EXPECT_EQ(attribute_count(g), 0);
  const auto s = file.open_group("summary");
  EXPECT_EQ(read_column<std::int32_t>(s, "complete"), std::vector<std::int32_t>{1});
  EXPECT_EQ(read_column<std::int32_t>(s, "diverged"), std::vector<std::int32_t>{0});  // schema v5
  EXPECT_EQ(read_column<std::int32_t>(s, "steps_to_2.5e-1"), std::vector<std::int32_t>{4});
  EXPECT_EQ(read_column<std::int32_t>(s, "reached_2.5e-1"), std::vector<std::int32_t>{1});
  EXPECT_EQ(read_column<std::int32_t>(s, "steps_to_1e-3"), std::vector<std::int32_t>{4});
  EXPECT_EQ(read_column<std::int32_t>(s, "reached_1e-3"), std::vector<std::int32_t>{0});
  EXPECT_FALSE(has_link(s, "rounds_to_1e-3"));  // averaging's name, not training's
  EXPECT_EQ(read_column<double>(s, "targets"), (std::vector<double>{0.25, 1e-3}));
  EXPECT_EQ(read_column<std::int32_t>(g, "trial"), std::vector<std::int32_t>{3});
  EXPECT_EQ(read_column<std::int32_t>(g, "step"), (std::vector<std::int32_t>{0, 2, 4}));
  EXPECT_EQ(trial_column<std::int32_t>(g, "round", 0), (std::vector<std::int32_t>{0, 0, 1}));
  EXPECT_EQ(trial_column<double>(g, "loss", 0), (std::vector<double>{2.25, 1.25, 0.5}));
  EXPECT_EQ(trial_column<double>(g, "gap", 0), (std::vector<double>{2.0, 1.0, 0.25}));
  EXPECT_EQ(trial_column<double>(g, "relative_gap", 0), (std::vector<double>{1.0, 0.5, 0.125}));
  EXPECT_EQ(trial_column<double>(g, "distance", 0), (std::vector<double>{1.25, 0.625, 0.15625}));
  EXPECT_EQ(trial_column<double>(g, "consensus", 0), (std::vector<double>{0.0, 0.0625, 0.125}));
  const auto accuracy = trial_column<double>(g, "accuracy", 0);
  ASSERT_EQ(accuracy.size(), 3u);
  for (double a : accuracy) EXPECT_TRUE(std::isnan(a)) << a;  // NaN survives the round trip
  EXPECT_EQ(trial_column<std::int32_t>(g, "alive", 0), (std::vector<std::int32_t>{4, 4, 4}));
  EXPECT_EQ(trial_column<std::int32_t>(g, "groups", 0), (std::vector<std::int32_t>{0, 0, 2}));
  EXPECT_EQ(trial_column<std::int32_t>(g, "failed_groups", 0), (std::vector<std::int32_t>{0, 0, 0}));
  EXPECT_EQ(trial_column<std::int32_t>(g, "decode_failures", 0), (std::vector<std::int32_t>{0, 0, 3}));
  EXPECT_EQ(trial_column<std::uint64_t>(g, "bytes_sent", 0), (std::vector<std::uint64_t>{0, 0, 128}));
  EXPECT_EQ(trial_column<double>(g, "time", 0), (std::vector<double>{0.0, 0.25, 0.5}));
  EXPECT_EQ(trial_column<double>(g, "detection_time", 0), (std::vector<double>{0.0, 0.5, 0.5}));
}

TEST_F(TraceTest, TrainingSummaryRepeatsEachTrial) {
  const fs::path path = dir_ / "run.h5";
  TraceWriter w(path, false, training_info());
  w.write_optimum(small_optimum());
  TrainingTrial t0 = small_training_trial(0);
  for (auto& row : t0.rows) row.accuracy = 0.5 + row.step / 16.0;  // a measured accuracy
  w.write_trial(t0);
  TrainingTrial t1 = small_training_trial(1);
  t1.rows.pop_back();  // cut short after step 2
  t1.complete = false;
  t1.diverged = true;  // (both at once cannot happen in a run; the writer stores each)
  t1.targets = {{0.25, 2, false}, {1e-3, 2, false}};
  w.write_trial(t1);
  w.finish(false);

  const auto s = avb::h5::File::open_read_only(path).open_group("summary");
  EXPECT_EQ(members(s), (std::vector<std::string>{"trial", "seed", "steps_to_2.5e-1", "steps_to_1e-3",
                                                  "reached_2.5e-1", "reached_1e-3", "final_gap",
                                                  "final_relative_gap", "final_consensus", "final_accuracy",
                                                  "bytes_sent", "time", "steps", "rounds", "complete",
                                                  "diverged", "targets"}));
  EXPECT_EQ(attribute_count(s), 0);
  EXPECT_EQ(read_column<std::int32_t>(s, "trial"), (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(read_column<std::uint64_t>(s, "seed"), (std::vector<std::uint64_t>{2000, 2001}));
  EXPECT_EQ(read_column<std::int32_t>(s, "steps_to_2.5e-1"), (std::vector<std::int32_t>{4, 2}));
  EXPECT_EQ(read_column<std::int32_t>(s, "steps_to_1e-3"), (std::vector<std::int32_t>{4, 2}));
  EXPECT_EQ(read_column<std::int32_t>(s, "reached_2.5e-1"), (std::vector<std::int32_t>{1, 0}));
  EXPECT_EQ(read_column<std::int32_t>(s, "reached_1e-3"), (std::vector<std::int32_t>{0, 0}));
  EXPECT_EQ(read_column<double>(s, "final_gap"), (std::vector<double>{0.25, 1.0}));
  EXPECT_EQ(read_column<double>(s, "final_relative_gap"), (std::vector<double>{0.125, 0.5}));
  EXPECT_EQ(read_column<double>(s, "final_consensus"), (std::vector<double>{0.125, 0.0625}));
  const auto accuracy = read_column<double>(s, "final_accuracy");
  ASSERT_EQ(accuracy.size(), 2u);
  EXPECT_EQ(accuracy[0], 0.75);
  EXPECT_TRUE(std::isnan(accuracy[1]));
  EXPECT_EQ(read_column<std::uint64_t>(s, "bytes_sent"), (std::vector<std::uint64_t>{128, 0}));
  EXPECT_EQ(read_column<double>(s, "time"), (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(read_column<std::int32_t>(s, "steps"), (std::vector<std::int32_t>{4, 2}));
  EXPECT_EQ(read_column<std::int32_t>(s, "rounds"), (std::vector<std::int32_t>{1, 0}));
  EXPECT_EQ(read_column<std::int32_t>(s, "complete"), (std::vector<std::int32_t>{1, 0}));
  EXPECT_EQ(read_column<std::int32_t>(s, "diverged"), (std::vector<std::int32_t>{0, 1}));
}

// A run stopped before its first trial: /optimum and /summary are there all the
// same, the optimum filled in if it was written, the summary with no rows.
TEST_F(TraceTest, TrainingRunStoppedBeforeAnyTrial) {
  for (const bool with_optimum : {false, true}) {
    const fs::path path = dir_ / (with_optimum ? "optimum.h5" : "bare.h5");
    TraceWriter w(path, false, training_info());
    if (with_optimum) w.write_optimum(small_optimum());
    w.finish(false);
    const auto file = avb::h5::File::open_read_only(path);
    EXPECT_EQ(file.get_int32("complete"), 0);
    EXPECT_EQ(file.get_string("run_kind"), "sgd");
    EXPECT_EQ(file.open_group("config").get_string("text"), "");
    const auto trials = file.open_group("trials");
    EXPECT_TRUE(read_column<std::int32_t>(trials, "trial").empty());
    EXPECT_TRUE(read_column<std::int32_t>(trials, "step").empty());
    EXPECT_EQ(table_columns(trials, "step").size(), 14u);
    const auto optimum = file.open_group("optimum");
    if (with_optimum) {
      EXPECT_EQ(read_column<double>(optimum, "x"), small_optimum().x);
      EXPECT_EQ(attribute_count(optimum), 7);
    } else {
      EXPECT_TRUE(members(optimum).empty());
      EXPECT_EQ(attribute_count(optimum), 0);
    }
    const auto s = file.open_group("summary");
    EXPECT_EQ(members(s), (std::vector<std::string>{"trial", "seed", "final_gap", "final_relative_gap",
                                                    "final_consensus", "final_accuracy", "bytes_sent", "time",
                                                    "steps", "rounds", "complete", "diverged", "targets"}));
    for (const auto& name : members(s)) {
      if (name == "seed" || name == "bytes_sent") {
        EXPECT_TRUE(read_column<std::uint64_t>(s, name).empty()) << name;
      } else if (name.starts_with("final_") || name == "time" || name == "targets") {
        EXPECT_TRUE(read_column<double>(s, name).empty()) << name;
      } else {
        EXPECT_TRUE(read_column<std::int32_t>(s, name).empty()) << name;
      }
    }
  }
}

TEST_F(TraceTest, RejectsMalformedTrainingTrials) {
  TraceWriter w(dir_ / "run.h5", false, training_info());
  w.write_optimum(small_optimum());
  TrainingTrial empty = small_training_trial(0);
  empty.rows.clear();
  EXPECT_THROW(w.write_trial(empty), TraceError);

  EXPECT_THROW(w.write_trial(small_training_trial(-1)), TraceError);

  TrainingTrial twice = small_training_trial(0);
  twice.targets = {{1e-3, 4, false}, {1e-3, 4, false}};
  EXPECT_THROW(w.write_trial(twice), TraceError);

  w.write_trial(small_training_trial(0));
  EXPECT_THROW(w.write_trial(small_training_trial(0)), TraceError);  // same index twice
  TrainingTrial other_targets = small_training_trial(1);
  other_targets.targets = {{1e-3, 4, false}};
  EXPECT_THROW(w.write_trial(other_targets), TraceError);
  EXPECT_NO_THROW(w.write_trial(small_training_trial(1)));
}

TEST_F(TraceTest, NoTrainingWritesAfterFinish) {
  TraceWriter w(dir_ / "run.h5", false, training_info());
  w.write_optimum(small_optimum());
  w.finish(true);
  EXPECT_THROW(w.write_optimum(small_optimum()), TraceError);
  EXPECT_THROW(w.write_trial(small_training_trial(0)), TraceError);
}

// ---- h5 wrappers ------------------------------------------------------------------

// Errors carry the operation, the object, the file and HDF5's own reason; the
// reason must survive the closing of handles that happens while unwinding.
TEST_F(TraceTest, H5ErrorsNameOperationObjectFileAndReason) {
  const fs::path path = dir_ / "x.h5";
  auto file = avb::h5::File::create(path);
  const std::vector<double> values = {1.0, 2.0};
  file.write_dataset("x", values);
  auto expect_message = [&](auto&& action, const std::string& what) {
    try {
      action();
      ADD_FAILURE() << "expected TraceError for " << what;
    } catch (const TraceError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
      EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
      EXPECT_NE(msg.find("already exists"), std::string::npos) << msg;
    }
  };
  expect_message([&] { file.write_dataset("x", values); }, "cannot write dataset '/x'");
  file.set_int32("a", 1);
  expect_message([&] { file.set_int32("a", 2); }, "cannot write attribute 'a' of /");
  expect_message([&] { file.set_string("a", "s"); }, "cannot create attribute 'a' of /");
  auto group = file.create_group("g");
  expect_message([&] { file.create_group("g"); }, "cannot create group '/g'");
  group.set_uint64("u", 5);
  expect_message([&] { group.set_uint64("u", 6); }, "attribute 'u' of /g");
  file.close();
  EXPECT_FALSE(file.is_open());
  EXPECT_NO_THROW(file.close());  // closing twice is harmless
}

// ---- sample for the Python round-trip test ---------------------------------------

// Where a sample trace is to be written: the environment variable VAR, or "" when
// it is unset or empty (the test then skips).
std::string sample_path(const char* var) {
  const char* path = std::getenv(var);
  return path == nullptr ? "" : path;
}

// The run description of a sample trace: version and SHA are the same in both
// samples; the readers compare every field.
RunInfo sample_info(std::string command_line, std::string engine, std::string mpi_library, std::int32_t n_peers,
                    std::string run_kind) {
  return {.avbench_version = "0.1.0-sample",
          .git_sha = "0123456789ab",
          .command_line = std::move(command_line),
          .engine = engine,
          .time_model = engine == "smpi" ? "simulated" : "wall clock",
          .mpi_library = std::move(mpi_library),
          .n_peers = n_peers,
          .run_kind = std::move(run_kind)};
}

// Values chosen to be exact in binary so that the Python side can compare with ==.
// Keep in sync with tests/scripts/test_trace_roundtrip.py.
TEST(TraceSample, Write) {
  const std::string out = sample_path("AVB_TRACE_SAMPLE");
  if (out.empty()) GTEST_SKIP() << "set AVB_TRACE_SAMPLE=<path> to write the sample trace";

  const RunInfo info = sample_info("averaging_bench --protocol moshpit --note 'caf\xc3\xa9 \xcf\x83'", "smpi",
                                   "SimGrid SMPI (sample)", 8, "averaging");
  TraceWriter w(out, /*overwrite=*/true, info);
  w.write_config({{"protocol", "moshpit"}, {"peers", "8"}, {"fail-rate", "0.01"}, {"rounds", "4"}},
                 "protocol = moshpit\npeers = 8\nfail-rate = 0.01\nrounds = 4\n");

  // Trial 0: complete, every target reached.
  TrialRecord t0;
  t0.index = 0;
  t0.seed = 42;
  t0.complete = true;
  const double v0[] = {1.0, 0.25, std::ldexp(1.0, -10), std::ldexp(1.0, -40), 0.0};
  const std::int32_t alive0[] = {8, 8, 7, 8, 8};
  const std::int32_t failed0[] = {0, 0, 1, 0, 0};
  for (int r = 0; r <= 4; ++r) {
    t0.rows.push_back({.round = r,
                       .variance = v0[r],
                       .error = v0[r],
                       .mean_drift = 0.0,
                       .alive = alive0[r],
                       .groups = r == 0 ? 0 : 4,
                       .failed_groups = failed0[r],
                       .bytes_sent = 1024u * static_cast<unsigned>(r),
                       .time = 0.5 * r});
  }
  t0.targets = {{1e-9, 3, true}, {2.5e-3, 2, true}, {0.5, 1, true}};
  w.write_trial(t0);

  // Trial 1: cut short after round 2; two targets never reached (cap = 2).
  TrialRecord t1;
  t1.index = 1;
  t1.seed = 43;
  t1.complete = false;
  const double v1[] = {2.0, 0.375, 0.0625};
  const double d1[] = {0.0, 0.125, 0.25};
  const std::int32_t alive1[] = {8, 6, 5};
  const std::int32_t groups1[] = {0, 3, 3};
  const std::int32_t failed1[] = {0, 1, 2};
  const std::uint64_t bytes1[] = {0, 512, 1000};
  const double time1[] = {0.0, 0.25, 0.75};
  for (int r = 0; r <= 2; ++r) {
    t1.rows.push_back({.round = r,
                       .variance = v1[r],
                       .error = v1[r] + d1[r],
                       .mean_drift = d1[r],
                       .alive = alive1[r],
                       .groups = groups1[r],
                       .failed_groups = failed1[r],
                       .bytes_sent = bytes1[r],
                       .time = time1[r]});
  }
  t1.targets = {{1e-9, 2, false}, {2.5e-3, 2, false}, {0.5, 1, true}};
  w.write_trial(t1);

  w.finish(/*complete=*/false);
  EXPECT_TRUE(fs::exists(out));
}

// A training trace (run_kind sgd) with the same care: a quadratic objective, so
// the accuracy column is NaN throughout. Keep in sync with
// tests/scripts/test_trace_roundtrip_sgd.py and the damage cases of
// tests/scripts/test_check_trace.py.
TEST(TraceSample, WriteTraining) {
  const std::string out = sample_path("AVB_TRACE_SAMPLE_SGD");
  if (out.empty()) GTEST_SKIP() << "set AVB_TRACE_SAMPLE_SGD=<path> to write the sample trace";

  const RunInfo info =
      sample_info("sgd_bench --objective quadratic --protocol moshpit --steps 8 --local-steps 4 --eval-every 2",
                  "openmpi", "Open MPI v4.1.4 (sample)", 4, "sgd");
  TraceWriter w(out, /*overwrite=*/true, info);
  w.write_config({{"objective", "quadratic"},
                  {"protocol", "moshpit"},
                  {"peers", "4"},
                  {"steps", "8"},
                  {"local-steps", "4"},
                  {"eval-every", "2"},
                  {"target", "0.25,0.001,1e-06"}},
                 "objective = quadratic\nprotocol = moshpit\npeers = 4\nsteps = 8\nlocal-steps = 4\n"
                 "eval-every = 2\ntarget = 0.25,0.001,1e-06\n");

  // f* = 1/4, f(x_0) = 9/4: the initial gap is 2; ||x*||^2 = 5/4.
  OptimumRecord optimum;
  optimum.x = {1.0, -0.5};
  optimum.loss = 0.25;
  optimum.initial_loss = 2.25;
  optimum.gradient_norm = std::ldexp(1.0, -40);
  optimum.iterations = 0;
  optimum.converged = true;
  optimum.method = "ldlt";
  optimum.test_set = "";
  w.write_optimum(optimum);

  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto trial = [&](std::int32_t index, std::uint64_t seed, bool complete, std::vector<TrainingRow> rows,
                   std::vector<TargetResult> targets) {
    TrainingTrial t;
    t.index = index;
    t.seed = seed;
    t.complete = complete;
    t.rows = std::move(rows);
    t.targets = std::move(targets);
    w.write_trial(t);
  };

  // Trial 0: complete, 8 steps, a round every 4 steps, rows every 2 steps;
  // reaches 0.25 at step 4 and 1e-3 at step 8 (2^-12), never 1e-6 (cap 8).
  const double g = std::ldexp(1.0, -11);
  trial(0, 7, true,
        {
            {0, 0, 2.25, 2.0, 1.0, 1.25, 0.0, nan, 4, 0, 0, 0, 0, 0.0},
            {2, 0, 1.25, 1.0, 0.5, 0.5, 0.25, nan, 4, 0, 0, 0, 0, 0.25},
            {4, 1, 0.5, 0.25, 0.125, 0.125, 0.0625, nan, 3, 2, 1, 0, 256, 0.75},
            {6, 1, 0.375, 0.125, 0.0625, 0.0625, 0.125, nan, 3, 0, 0, 0, 256, 1.0},
            {8, 2, 0.25 + g, g, g / 2, std::ldexp(1.0, -10), std::ldexp(1.0, -8), nan, 4, 2, 0, 0, 512, 1.5},
        },
        {{0.25, 4, true}, {1e-3, 8, true}, {1e-6, 8, false}});

  // Trial 1: cut short after step 4; reaches 0.25 exactly there (relative_gap <=
  // target counts), never the others (cap 4).
  trial(1, 8, false,
        {
            {0, 0, 2.25, 2.0, 1.0, 1.25, 0.0, nan, 4, 0, 0, 0, 0, 0.0},
            {2, 0, 1.75, 1.5, 0.75, 0.75, 0.5, nan, 4, 0, 0, 0, 0, 0.5},
            {4, 1, 0.75, 0.5, 0.25, 0.25, 0.125, nan, 2, 1, 1, 0, 64, 1.25},
        },
        {{0.25, 4, true}, {1e-3, 4, false}, {1e-6, 4, false}});

  w.finish(/*complete=*/false);
  EXPECT_TRUE(fs::exists(out));
}

}  // namespace
