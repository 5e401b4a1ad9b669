// Whether two paths name the same file, by the file system's identity rather than
// by spelling: a symlinked folder, "./", "..", a hard link or a bind mount can give
// one file many names, and an output written under one of them would replace the
// other output or an input the run reads.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace avb::app {

// (flag, path) pairs: "--out" and its file name.
using NamedPaths = std::vector<std::pair<std::string, std::string>>;

// True when `a` and `b` are the same file: an existing file by (device, inode),
// a file still to be created by its folder's (device, inode) and its name (a
// dangling symlink by the file it would create).
bool same_file(const std::string& a, const std::string& b);

// One line naming the first clash ("--summary: 'alias/a.h5' is the same file as
// --out 'real/a.h5'; ..."), or "" when every output is a file of its own, distinct
// from every other output and from every input. Empty paths are skipped.
std::string output_clash(const NamedPaths& outputs, const NamedPaths& inputs);

}  // namespace avb::app
