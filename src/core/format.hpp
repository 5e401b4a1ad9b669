// Numbers as text for headers, traces and error messages.
#pragma once

#include <cstdlib>
#include <sstream>
#include <string>

namespace avb {

// The shortest text that reads back to the same double.
inline std::string format_number(double v) {
  for (int p = 1; p < 17; ++p) {
    std::ostringstream t;
    t.precision(p);
    t << v;
    // strtod, not stod: a short form may read back as a subnormal, which stod
    // reports as out of range.
    if (std::strtod(t.str().c_str(), nullptr) == v) return t.str();
  }
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

}  // namespace avb
