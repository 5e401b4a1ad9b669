#include "common/file_identity.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <tuple>

namespace avb::app {

namespace {

namespace fs = std::filesystem;

// (device, inode, name): name is empty for an existing file, whose (device, inode)
// alone identifies it; otherwise (device, inode) are its folder's.
using Identity = std::tuple<dev_t, ino_t, std::string>;

std::optional<Identity> identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return Identity{st.st_dev, st.st_ino, ""};
  fs::path p(path);
  // A dangling symlink: writing through it would create its target.
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) break;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  const fs::path folder = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (::stat(folder.c_str(), &st) != 0) return std::nullopt;  // no folder: nothing can clash there
  return Identity{st.st_dev, st.st_ino, p.filename().string()};
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  const auto x = identity(a), y = identity(b);
  return x && y && *x == *y;
}

std::string output_clash(const NamedPaths& outputs, const NamedPaths& inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    // Named members, not a structured binding: clang before 16 cannot capture one.
    const std::string& flag = outputs[i].first;
    const std::string& path = outputs[i].second;
    if (path.empty()) continue;
    auto clash = [&](const std::string& other_flag, const std::string& other, const char* what) {
      return flag + ": '" + path + "' is the same file as " + other_flag + " '" + other + "'" + what;
    };
    for (std::size_t j = 0; j < i; ++j)
      if (!outputs[j].second.empty() && same_file(path, outputs[j].second))
        return clash(outputs[j].first, outputs[j].second, "; give each output a file of its own");
    for (const auto& [in_flag, in_path] : inputs)
      if (!in_path.empty() && same_file(path, in_path))
        return clash(in_flag, in_path, ", which the run reads; write the output elsewhere");
  }
  return "";
}

}  // namespace avb::app
