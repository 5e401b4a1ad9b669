// Text for a terminal and a shell: one printable line, a quoted command line.
#pragma once

#include <string>

namespace avb::app {

// `message` as one printable line: newlines as blanks, control bytes and bytes
// that are not UTF-8 as \xHH.
std::string printable(const std::string& message);

// The command line quoted for a POSIX shell, so that it can be run again as it is.
std::string join_command_line(int argc, char** argv);

}  // namespace avb::app
