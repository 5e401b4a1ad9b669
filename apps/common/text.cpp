#include "common/text.hpp"

namespace avb::app {

std::string printable(const std::string& message) {
  // A message may quote bytes of a binary file (a --config key, a path): control
  // bytes and bytes that are not UTF-8 become \xHH, so that the line stays one
  // line of text (grep would call it a binary file otherwise).
  static constexpr char hex[] = "0123456789abcdef";
  std::string line;
  const auto* s = reinterpret_cast<const unsigned char*>(message.data());
  const std::size_t n = message.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool valid = len > 0 && i + len <= n;
    for (std::size_t k = 1; valid && k < len; ++k) valid = (s[i + k] & 0xC0) == 0x80;
    if (valid && len == 1 && (c >= 0x20 || c == '\t') && c != 0x7f) {
      line += static_cast<char>(c);
    } else if (valid && len > 1) {
      line.append(message, i, len);
    } else if (c == '\n') {
      line += ' ';
    } else {
      line += "\\x";
      line += hex[c >> 4];
      line += hex[c & 15];
      len = 1;
    }
    i += len;
  }
  return line;
}

std::string join_command_line(int argc, char** argv) {
  // Quoted for a POSIX shell, so the recorded line can be run again as it is.
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    const std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789_-+=.,/:@%") == std::string::npos;
    if (plain) {
      line += arg;
      continue;
    }
    line += '\'';
    for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

}  // namespace avb::app
