#include "sgd/libsvm.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <istream>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/error.hpp"
#include "core/lines.hpp"

namespace avb {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// The next whitespace-separated word of `rest`, which is advanced past it; empty
// at the end.
std::string_view next_word(std::string_view& rest) {
  std::size_t begin = 0;
  while (begin < rest.size() && is_space(rest[begin])) ++begin;
  std::size_t end = begin;
  while (end < rest.size() && !is_space(rest[end])) ++end;
  const std::string_view word = rest.substr(begin, end - begin);
  rest.remove_prefix(end);
  return word;
}

// from_chars over the whole word; it rejects a leading '+', which LIBSVM files
// use on labels ("+1"), so one is skipped here.
bool parse_double(std::string_view word, double& value) {
  if (!word.empty() && word.front() == '+') {
    word.remove_prefix(1);
    if (!word.empty() && word.front() == '-') return false;  // "+-1"
  }
  if (word.empty()) return false;
  const char* end = word.data() + word.size();
  const auto [ptr, ec] = std::from_chars(word.data(), end, value);
  return ec == std::errc() && ptr == end && std::isfinite(value);
}

bool parse_index(std::string_view word, std::int64_t& index) {
  if (word.empty()) return false;
  const char* end = word.data() + word.size();
  const auto [ptr, ec] = std::from_chars(word.data(), end, index);
  return ec == std::errc() && ptr == end;
}


// The file's samples in compressed-row form, before the dimension is known.
struct SparseRows {
  bool keep_values = true;  // false: the shape only (read_libsvm_shape), in memory that does not grow with the file
  std::int64_t samples = 0;
  std::vector<double> labels;
  std::vector<std::size_t> row_start{0};
  std::vector<int> columns;  // 0-based
  std::vector<double> values;
  std::int64_t max_index = 0;
};

// One sample line: its label and idx:val words, appended to `rows`; `at` names
// the file and line for errors.
void add_sample(std::string_view label_word, std::string_view rest, int dim, const std::string& at,
                SparseRows& rows) {
  double label = 0.0;
  if (!parse_double(label_word, label))
    throw ConfigError(at + "label " + quoted_text(label_word) + " is not a number");
  ++rows.samples;
  if (rows.keep_values) rows.labels.push_back(label > 0.0 ? 1.0 : -1.0);

  std::int64_t previous = 0;
  for (std::string_view word = next_word(rest); !word.empty(); word = next_word(rest)) {
    const auto colon = word.find(':');
    std::int64_t index = 0;
    double value = 0.0;
    if (colon == std::string_view::npos || !parse_index(word.substr(0, colon), index) ||
        !parse_double(word.substr(colon + 1), value))
      throw ConfigError(at + quoted_text(word) + " is not idx:val (an integer index and a finite number)");
    if (index < 1) throw ConfigError(at + "index " + std::to_string(index) + " is below 1 (indices are 1-based)");
    if (index <= previous)
      throw ConfigError(at + "index " + std::to_string(index) + " does not increase (it follows index " +
                        std::to_string(previous) + ")");
    if (dim > 0 && index > dim)
      throw ConfigError(at + "index " + std::to_string(index) + " exceeds the given dimension " +
                        std::to_string(dim));
    if (index > (std::int64_t{1} << 30))
      throw ConfigError(at + "index " + std::to_string(index) + " is too large for dense storage");
    previous = index;
    if (value != 0.0 && rows.keep_values) {
      rows.columns.push_back(static_cast<int>(index - 1));
      rows.values.push_back(value);
    }
  }
  rows.max_index = std::max(rows.max_index, previous);
  if (rows.keep_values) rows.row_start.push_back(rows.columns.size());
}

// The dense shape of the rows, `dim` features (the largest index when dim is 0);
// refuses more than max_dense_values values.
LibsvmShape dense_shape(const SparseRows& rows, int dim, const std::string& where) {
  const auto m = static_cast<long long>(rows.samples);
  const auto d = static_cast<long long>(dim > 0 ? dim : rows.max_index);
  // An index may reach 2^30, so one sample alone could ask for 8 GB; divided rather
  // than multiplied, so that the check itself cannot overflow.
  if (d > 0 && m > max_dense_values / d)
    throw ConfigError(where + std::to_string(m) + " samples x " + std::to_string(d) +
                      " features is too large for dense storage (at most " + std::to_string(max_dense_values) +
                      " values, 1 GiB; is an index wrong?)");
  return {m, d};
}

// The rows as a dense data set (dense_shape's).
Dataset to_dense(const SparseRows& rows, int dim, const std::string& where, const std::atomic<bool>* stop) {
  const LibsvmShape shape = dense_shape(rows, dim, where);
  const auto m = static_cast<Eigen::Index>(shape.samples), d = static_cast<Eigen::Index>(shape.dim);
  Dataset data;
  data.features = SampleMatrix::Zero(m, d);
  data.labels = Eigen::Map<const Eigen::VectorXd>(rows.labels.data(), m);
  for (Eigen::Index r = 0; r < m; ++r) {
    if ((r & 4095) == 0) check_stop(stop);
    for (std::size_t k = rows.row_start[static_cast<std::size_t>(r)];
         k < rows.row_start[static_cast<std::size_t>(r) + 1]; ++k)
      data.features(r, rows.columns[k]) = rows.values[k];
  }
  return data;
}

// The file of `flag`, open (ConfigError naming it when it cannot be read).
std::ifstream open_data(const std::string& path, const std::string& flag) {
  // The file system would stop at a NUL and open another file than the one named.
  if (path.find('\0') != std::string::npos)
    throw ConfigError(flag + " " + quoted_text(path) + ": the path contains a NUL byte");
  const std::string where = flag + " " + path + ": ";
  std::error_code dir_error;
  if (std::filesystem::is_directory(path, dir_error))
    throw ConfigError(where + "cannot read the file (it is a directory)");
  errno = 0;
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    throw ConfigError(where + "cannot read the file" + (err != 0 ? std::string(" (") + std::strerror(err) + ")" : ""));
  }
  return in;
}

// Every sample line of `in` into `rows` (their values only if rows.keep_values).
void read_rows(std::istream& in, const std::string& where, int dim, SparseRows& rows,
               const std::atomic<bool>* stop = nullptr) {
  std::string line;
  bool too_long = false;
  // 16 MiB holds a million nonzero features; a file without newlines (a binary,
  // /dev/zero) ends here instead of in one string as large as memory.
  constexpr std::size_t max_line = 1 << 24;
  for (long number = 1; read_line(in, line, max_line, too_long); ++number) {
    if ((number & 4095) == 1) check_stop(stop);
    if (too_long)
      throw ConfigError(where + "line " + std::to_string(number) + ": longer than " + std::to_string(max_line) +
                        " characters (is this a LIBSVM text file?)");
    std::string_view rest(line);
    if (const auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
    const std::string_view label_word = next_word(rest);
    if (label_word.empty()) continue;
    add_sample(label_word, rest, dim, where + "line " + std::to_string(number) + ": ", rows);
  }
  if (in.bad()) throw ConfigError(where + "cannot read the file");
  if (rows.samples == 0) throw ConfigError(where + "no samples (only blank or comment lines)");
}

}  // namespace

Dataset read_libsvm(const std::string& path, int dim, const std::string& flag, const std::atomic<bool>* stop) {
  std::ifstream in = open_data(path, flag);
  return read_libsvm(in, path, dim, flag, stop);
}

Dataset read_libsvm(std::istream& in, const std::string& path, int dim, const std::string& flag,
                    const std::atomic<bool>* stop) {
  const std::string where = flag + " " + path + ": ";
  SparseRows rows;
  read_rows(in, where, dim, rows, stop);
  return to_dense(rows, dim, where, stop);
}

LibsvmShape read_libsvm_shape(const std::string& path, int dim, const std::string& flag,
                              const std::atomic<bool>* stop) {
  std::ifstream in = open_data(path, flag);
  const std::string where = flag + " " + path + ": ";
  SparseRows rows;
  rows.keep_values = false;
  read_rows(in, where, dim, rows, stop);
  return dense_shape(rows, dim, where);
}

Dataset keep_first(Dataset data, long long limit) {
  if (limit > 0 && limit < data.samples()) {
    const auto m = static_cast<Eigen::Index>(limit);
    data.features.conservativeResize(m, Eigen::NoChange);
    data.labels.conservativeResize(m);
  }
  return data;
}

double accuracy(const Dataset& data, const Eigen::Ref<const Eigen::VectorXd>& x) {
  if (data.samples() == 0) return 0.0;
  const Eigen::VectorXd margins = data.features * x;
  Eigen::Index correct = 0;
  for (Eigen::Index s = 0; s < margins.size(); ++s) correct += (margins[s] > 0.0 ? 1.0 : -1.0) == data.labels[s];
  return static_cast<double>(correct) / static_cast<double>(margins.size());
}

}  // namespace avb
