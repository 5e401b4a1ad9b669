// The protocols' case tables (tests/protocols/<name>/cases.txt; docs/testing.md,
// "Case tables") as the parameters of a GoogleTest suite: one per line of a
// section, in catalog order. A protocol's cases then live in its own table, and
// a suite needs no edit when the catalog gains a protocol. (tests/scripts/cases.py
// reads the same tables for the script harnesses.)
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "protocols/protocol.hpp"

#ifndef AVB_CASE_TABLES
#error "AVB_CASE_TABLES: the folder of the case tables (tests/CMakeLists.txt defines it)"
#endif

namespace avb::test {

struct TableCase {
  std::string protocol;
  std::string flags;    // the line: one run's flags after --protocol <protocol>
  std::string problem;  // set when the table does not give this suite its cases: the test fails with it
};

// "protocol/flags": the suites' coverage tests read the protocol before the '/'.
inline std::ostream& operator<<(std::ostream& os, const TableCase& c) { return os << c.protocol << "/" << c.flags; }

// A GoogleTest name of a case: its protocol and flags, each run of other
// characters than letters and digits one '_', numbered, as two lines of a table
// may differ only in those.
inline std::string table_case_name(const ::testing::TestParamInfo<TableCase>& info) {
  std::string name = std::to_string(info.index);
  for (char c : "_" + info.param.protocol + "_" + info.param.flags) {
    const bool word = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (word || name.back() != '_') name += word ? c : '_';
  }
  return name;
}

// The lines of `section` in the table of every catalog protocol for which
// `wanted` holds. Such a protocol without the section, or whose section skips
// ("skip: <reason>") or is empty, gives one case that fails naming its table.
template <class Wanted>
std::vector<TableCase> table_cases(const std::string& section, Wanted wanted) {
  std::vector<TableCase> cases;
  for (const ProtocolInfo& info : protocol_catalog()) {
    if (!wanted(info)) continue;
    const std::string protocol(info.name);
    const std::string path = std::string(AVB_CASE_TABLES) + "/" + protocol + "/cases.txt";
    std::ifstream table(path);
    std::string line, current, skip;
    std::size_t found = 0;
    while (table && std::getline(table, line)) {
      const auto first = line.find_first_not_of(" \t\r"), last = line.find_last_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;
      line = line.substr(first, last - first + 1);
      if (line.front() == '[' && line.back() == ']')
        current = line.substr(1, line.size() - 2);
      else if (current == section && line.rfind("skip:", 0) == 0)
        skip = line;
      else if (current == section)
        cases.push_back({protocol, line, ""}), ++found;
    }
    if (found == 0)
      cases.push_back({protocol, "none", path + ": no cases in [" + section + "]" + (skip.empty() ? "" : " (" + skip + ")")});
  }
  return cases;
}

}  // namespace avb::test
