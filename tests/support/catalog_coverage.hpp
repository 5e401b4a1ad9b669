// Which protocols of the catalog a parameterized GoogleTest suite has no case for.
// The suites' parameters print as "protocol/...", so a protocol added to the
// catalog without cases in a suite fails that suite's coverage test, by name,
// instead of going untested (docs/testing.md, "Where a test lives").
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "protocols/protocol.hpp"

namespace avb::test {

// The catalog protocols for which `wanted` holds that no instantiation of `suite`
// (registered as "Instance/suite", filtered out or not) has a parameter of.
template <class Wanted>
std::vector<std::string> protocols_without_cases(const std::string& suite, Wanted wanted) {
  std::set<std::string> covered;
  const ::testing::UnitTest& all = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < all.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& s = *all.GetTestSuite(i);
    const std::string name = s.name();
    if (name.size() <= suite.size() || name.compare(name.size() - suite.size() - 1, std::string::npos, "/" + suite))
      continue;
    for (int t = 0; t < s.total_test_count(); ++t) {
      const char* param = s.GetTestInfo(t)->value_param();
      if (param != nullptr) covered.insert(std::string(param).substr(0, std::string(param).find('/')));
    }
  }
  std::vector<std::string> missing;
  for (const ProtocolInfo& info : protocol_catalog())
    if (wanted(info) && !covered.count(std::string(info.name))) missing.emplace_back(info.name);
  return missing;
}

// The protocols whose two forms write the same rows: those with a sequential form,
// but the asynchronous ones, whose order of events follows simulated time (their
// sequential forms are checked against SMPI: tests/scripts/test_smpi_async.sh).
inline bool has_sequential_form(const ProtocolInfo& info) { return info.forms.sequential != nullptr && !info.asynchronous; }

}  // namespace avb::test
