#include "common/summary_output.hpp"

#include <fcntl.h>  // AT_FDCWD, open
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>  // renameat2, RENAME_NOREPLACE
#include <cstring>
#include <system_error>

#include "common/text.hpp"
#include "common/typed_options.hpp"  // default_text: the shortest text that reads back
#include "trace/trace.hpp"           // check_trace_destination

namespace avb::app {

SummaryCell summary_empty() { return {}; }
SummaryCell summary_number(double value) {
  return std::isfinite(value) ? SummaryCell{SummaryCell::Kind::number, default_text(value)} : summary_empty();
}
SummaryCell summary_integer(long long value) { return {SummaryCell::Kind::number, std::to_string(value)}; }
SummaryCell summary_unsigned(unsigned long long value) { return {SummaryCell::Kind::number, std::to_string(value)}; }
// printable(): one line of valid UTF-8, whatever the bytes given on the command line.
SummaryCell summary_text(std::string value) { return {SummaryCell::Kind::text, printable(value)}; }

SummaryCell summary_option(const std::string& value) {
  if (value == "true" || value == "false") return {SummaryCell::Kind::boolean, value};
  const char* first = value.data();
  const char* last = first + value.size();
  long long i = 0;
  if (!value.empty() && std::from_chars(first, last, i).ptr == last) return summary_integer(i);
  double d = 0;
  const auto parsed = std::from_chars(first, last, d);
  if (!value.empty() && parsed.ec == std::errc() && parsed.ptr == last && std::isfinite(d)) return summary_number(d);
  return summary_text(value);
}

namespace {

std::string csv_cell(const SummaryCell& c) {
  if (c.kind != SummaryCell::Kind::text) return c.value;
  const bool quote = c.value.find_first_of(",\"\r\n") != std::string::npos ||
                     (!c.value.empty() && (std::isspace(static_cast<unsigned char>(c.value.front())) ||
                                           std::isspace(static_cast<unsigned char>(c.value.back()))));
  if (!quote) return c.value;
  std::string out = "\"";
  for (char ch : c.value) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", ch);
      out += esc;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

std::string json_cell(const SummaryCell& c) {
  switch (c.kind) {
    case SummaryCell::Kind::empty: return "null";
    case SummaryCell::Kind::text: return json_string(c.value);
    default: return c.value;
  }
}

}  // namespace

SummaryTable::~SummaryTable() {
  if (rows_ != nullptr) std::fclose(rows_);
}

void SummaryTable::add_row(const std::vector<SummaryCell>& cells) {
  if (rows_ == nullptr && error_.empty()) {
    rows_ = std::tmpfile();
    if (rows_ == nullptr) error_ = std::string("cannot keep the rows in a temporary file: ") + std::strerror(errno);
  }
  if (rows_ == nullptr) return;
  std::string line;
  if (json_) {
    auto add = [&](const std::string& name, const SummaryCell& cell) {
      line += (line.empty() ? "" : ", ") + json_string(printable(name)) + ": " + json_cell(cell);
    };
    for (const auto& [name, cell] : identity_) add(name, cell);
    for (std::size_t c = 0; c < columns_.size() && c < cells.size(); ++c) add(columns_[c], cells[c]);
  } else {
    for (const auto& [name, cell] : identity_) line += (line.empty() ? "" : ",") + csv_cell(cell);
    for (const auto& cell : cells) line += (line.empty() ? "" : ",") + csv_cell(cell);
  }
  line += '\0';  // a CSV cell may hold a newline (quoted); no option holds a NUL
  if (std::fwrite(line.data(), 1, line.size(), rows_) != line.size())
    error_ = std::string("cannot keep the rows in a temporary file: ") + std::strerror(errno);
  ++count_;
}

std::string SummaryTable::write(const std::filesystem::path& path, bool overwrite, const std::string& last,
                                const SummaryCell& cell) {
  if (!error_.empty()) return "--summary: cannot write " + path.string() + ": " + error_;
  return write_summary_file(path, overwrite, [&](std::FILE* out) {
    if (!json_) {
      std::string head;
      auto name = [&](const std::string& n) { head += (head.empty() ? "" : ",") + csv_cell(summary_text(n)); };
      for (const auto& [n, c] : identity_) name(n);
      for (const auto& n : columns_) name(n);
      name(last);
      std::fprintf(out, "%s\n", head.c_str());
    } else {
      std::fputs("[", out);
    }
    const std::string tail = json_ ? ", " + json_string(printable(last)) + ": " + json_cell(cell) + "}"
                                   : "," + csv_cell(cell);
    if (rows_ != nullptr) {
      std::rewind(rows_);
      std::string line;
      std::size_t r = 0;
      for (int ch; (ch = std::fgetc(rows_)) != EOF;) {
        if (ch != '\0') {
          line += static_cast<char>(ch);
          continue;
        }
        if (json_) std::fprintf(out, "%s  {%s%s", r == 0 ? "\n" : ",\n", line.c_str(), tail.c_str());
        else std::fprintf(out, "%s%s\n", line.c_str(), tail.c_str());
        line.clear();
        ++r;
      }
    }
    if (json_) std::fputs(count_ == 0 ? "]\n" : "\n]\n", out);
  });
}

bool summary_is_json(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return ext == ".json";
}

std::string summary_destination_problem(const std::string& summary, bool overwrite) {
  namespace fs = std::filesystem;
  if (summary.empty() || summary == kSummaryToStdout) return "";
  try {
    check_trace_destination(summary, overwrite);
  } catch (const DestinationError& e) {
    using Reason = DestinationError::Reason;
    if (e.reason() == Reason::exists)
      return "--summary: '" + summary + "' already exists (pass --overwrite to replace it, or choose another name)";
    if (e.reason() == Reason::not_writable)
      return "--summary: the folder of '" + summary + "' is not writable";
    return std::string("--summary: ") + e.what();
  }
  return "";
}

std::string write_summary_file(const std::filesystem::path& path, bool overwrite,
                               const std::function<void(std::FILE*)>& produce) {
  namespace fs = std::filesystem;
  if (path == kSummaryToStdout) {
    std::fflush(stdout);
    produce(stdout);
    return std::fflush(stdout) == 0 && std::ferror(stdout) == 0
               ? ""
               : std::string("--summary: cannot write to standard output: ") + std::strerror(errno);
  }
  const fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp." + std::to_string(::getpid()));
  auto fail = [&](const std::string& why) {
    std::error_code ec;
    fs::remove(tmp, ec);
    return "--summary: cannot write " + path.string() + ": " + why;
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return "--summary: cannot create " + tmp.string() + ": " + std::strerror(errno);
  std::FILE* out = ::fdopen(fd, "w");
  if (out == nullptr) {
    const int err = errno;
    ::close(fd);
    return fail(std::strerror(err));
  }
  produce(out);
  const bool written = std::ferror(out) == 0;
  const int err = errno;
  if (std::fclose(out) != 0 || !written) return fail(std::strerror(written ? errno : err));
  if (!overwrite) {
    // As the trace: a file that appeared at the name meanwhile is never replaced.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return "";
    std::error_code ec;
    if (errno == EEXIST || fs::exists(fs::symlink_status(path, ec)))
      return fail("it appeared while the run was writing (pass --overwrite to replace it)");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  return ec ? fail(ec.message()) : "";
}

}  // namespace avb::app
