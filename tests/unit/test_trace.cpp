// Unit tests of the HDF5 trace writer (src/trace). No MPI: the writer only ever
// runs on rank 0 and does not depend on a communicator.
//
// The executable doubles as the sample writer for the Python checks: with
// AVB_TRACE_SAMPLE=<path> in the environment, TraceSample.Write writes a trace
// with the known values that tests/scripts/test_trace_roundtrip.py expects.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "core/error.hpp"
#include "trace/h5.hpp"
#include "trace/trace.hpp"

namespace fs = std::filesystem;
using avb::RoundRow;
using avb::RunInfo;
using avb::TargetResult;
using avb::TraceError;
using avb::TraceWriter;
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
    const auto trial = file.open_group("trials").open_group("1");
    EXPECT_EQ(trial.get_int32("rounds_to_1e-9"), 2);
    EXPECT_EQ(trial.get_int32("reached_1e-9"), 0);
    EXPECT_EQ(trial.get_int32("rounds_to_5e-1"), 1);
    EXPECT_EQ(trial.get_int32("reached_5e-1"), 1);
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

// Values chosen to be exact in binary so that the Python side can compare with ==.
// Keep in sync with tests/scripts/test_trace_roundtrip.py.
TEST(TraceSample, Write) {
  const char* out = std::getenv("AVB_TRACE_SAMPLE");
  if (out == nullptr || *out == '\0') GTEST_SKIP() << "set AVB_TRACE_SAMPLE=<path> to write the sample trace";

  RunInfo info;
  info.avbench_version = "0.1.0-sample";
  info.git_sha = "0123456789ab";
  info.command_line = "averaging_bench --protocol moshpit --note 'caf\xc3\xa9 \xcf\x83'";
  info.engine = "smpi";
  info.mpi_library = "SimGrid SMPI (sample)";
  info.n_peers = 8;

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

}  // namespace
