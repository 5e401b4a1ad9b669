// Where a trace may be written, and the final rename into place.
#include "trace/destination.hpp"

#include <fcntl.h>  // AT_FDCWD
#include <unistd.h>

#include <cerrno>
#include <cstdio>  // renameat2, RENAME_NOREPLACE (glibc with _GNU_SOURCE, g++'s default)

#include <system_error>

namespace avb {
namespace {
// What a path names when it exists and is not a regular file, in words; empty for
// a regular file (or a link to one) and for nothing at all.
std::string special_kind(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(path, ec);
  if (!fs::exists(link)) return "";
  const fs::file_status target = fs::status(path, ec);
  const bool via_link = fs::is_symlink(link);
  std::string kind;
  switch (target.type()) {
    case fs::file_type::regular: return "";
    case fs::file_type::not_found: return "";  // a dangling link: replacing it harms nothing
    case fs::file_type::directory: kind = "a folder"; break;
    case fs::file_type::fifo: kind = "a FIFO"; break;
    case fs::file_type::character: kind = "a character device"; break;
    case fs::file_type::block: kind = "a block device"; break;
    case fs::file_type::socket: kind = "a socket"; break;
    default: kind = "not a regular file"; break;
  }
  return via_link ? "a link to " + kind : kind;
}

}  // namespace

void check_trace_destination(const std::filesystem::path& path, bool overwrite) {
  namespace fs = std::filesystem;
  using Reason = DestinationError::Reason;
  const std::string name = path.string();
  if (path.empty() || !path.has_filename())
    throw DestinationError(Reason::not_a_file_name, "'" + name + "' is not a file name (it names a folder)");
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  const fs::file_status folder_status = fs::status(folder, ec);
  if (!fs::exists(folder_status))
    throw DestinationError(Reason::no_folder, "folder '" + folder.string() + "' does not exist (create it first)");
  if (!fs::is_directory(folder_status))
    throw DestinationError(Reason::folder_is_file, "'" + folder.string() + "' is not a folder (it is a file), so '" +
                                                       name + "' cannot be created");
  if (fs::is_directory(fs::status(path, ec)))
    throw DestinationError(Reason::is_folder, "'" + name + "' is a folder, not a file name");
  // A trace replaces only a regular file: with --overwrite a FIFO, a device or a
  // socket would otherwise be replaced by a file (as root, /dev/full was).
  if (const std::string kind = special_kind(path); !kind.empty())
    throw DestinationError(Reason::not_regular, "'" + name + "' is " + kind +
                                                    ", not a regular file: a trace only ever replaces a regular file");
  // Creating and renaming files needs write and search permission on the folder.
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw DestinationError(Reason::not_writable, "folder " + folder.string() + " for trace " + name +
                                                     " is not writable");
  if (fs::exists(fs::symlink_status(path, ec)) && !overwrite)
    throw DestinationError(Reason::exists, "'" + name + "' already exists");
}
void move_into_place(const std::filesystem::path& tmp, const std::filesystem::path& path, bool overwrite) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!overwrite) {
    // Atomic "rename unless the target exists" (Linux renameat2): a file that
    // appeared at the final name since the start is never replaced, not even in
    // the instant between a check and a rename. File systems without it fall
    // back to that check.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return;
    const int err = errno;
    if (err == EEXIST || fs::exists(fs::symlink_status(path, ec)))
      throw TraceError("cannot move trace into place: " + path.string() +
                       " appeared while the run was writing; the trace was left at " + tmp.string());
  }
  // With overwrite too, what appeared at the final name meanwhile is replaced
  // only if it is a regular file (a check, then the rename: not atomic, but it
  // closes all but an instant).
  if (const std::string kind = special_kind(path); !kind.empty())
    throw TraceError("cannot move trace into place: " + path.string() + " is now " + kind +
                     ", not a regular file; the trace was left at " + tmp.string());
  fs::rename(tmp, path, ec);
  if (ec)
    throw TraceError("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message() +
                     "; the trace was left at " + tmp.string());
}

}  // namespace avb
