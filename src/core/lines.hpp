// Line reading and quoting for the text readers (topology edge lists, LIBSVM files).
#pragma once

#include <cstddef>
#include <istream>
#include <streambuf>
#include <string>
#include <string_view>

namespace avb {

// Reads one line into `line` (without its '\n'), like std::getline, but keeps at
// most max_chars characters: a file with no newline at all (a binary, /dev/zero)
// must end in an error naming the line, not in one string that grows until memory
// runs out. Returns false at the end of the input or on a read error (badbit set).
// Sets `too_long` when the line had more than max_chars characters; the reader then
// stops, so the rest of that line is left unread.
inline bool read_line(std::istream& in, std::string& line, std::size_t max_chars, bool& too_long) {
  line.clear();
  too_long = false;
  std::streambuf* buf = in.rdbuf();
  if (!in || buf == nullptr) return false;
  using traits = std::char_traits<char>;
  bool any = false;
  for (;;) {
    traits::int_type c = traits::eof();
    // std::filebuf throws on a read error (a directory: EISDIR); std::getline
    // turns that into badbit, and so does this, for the callers' in.bad() check.
    try {
      c = buf->sbumpc();
    } catch (...) {
      in.setstate(std::ios::badbit);
      return false;
    }
    if (traits::eq_int_type(c, traits::eof())) {
      in.setstate(std::ios::eofbit);
      return any;
    }
    any = true;
    if (traits::to_char_type(c) == '\n') return true;
    if (line.size() == max_chars) {
      too_long = true;
      return true;
    }
    line.push_back(traits::to_char_type(c));
  }
}

// Text from a file as quoted in a one-line error message: at most max_chars
// characters ("..." after), control bytes (tab aside) such as NUL or '\n' written as \xHH,
// since a message is printed with %s and must stay on one line.
inline std::string quoted_text(std::string_view text, std::size_t max_chars = 60) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string shown = "'";
  for (std::size_t k = 0; k < text.size() && k < max_chars; ++k) {
    const auto c = static_cast<unsigned char>(text[k]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      shown += "\\x";
      shown += hex[c >> 4];
      shown += hex[c & 15];
    } else {
      shown += static_cast<char>(c);
    }
  }
  if (text.size() > max_chars) shown += "...";
  return shown + "'";
}

}  // namespace avb
