// Small RAII layer over the HDF5 C API, just wide enough for the trace writer
// (and for tests that read a trace back).
//
// Why not the HDF5 C++ API: Debian ships it, but it reports errors through its own
// exception hierarchy and prints the error stack by default; we want every failure
// as an avb::TraceError whose message names the operation and the file, and no
// output at all from library code.
//
// Every function that can fail throws TraceError. Destructors never throw: a handle
// that fails to close is dropped silently (the only useful reaction, reporting it,
// is impossible there; File::close() is the checked way to close).
//
// HDF5 keeps global library state, so these wrappers are meant for rank 0 only
// (trace.hpp: only rank 0 writes the trace). They keep no state of their own beyond
// the objects they return.
#pragma once

#include <hdf5.h>

#include <type_traits>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace avb::h5 {

// Turns off HDF5's automatic printing of its error stack to stderr. Errors are
// still recorded on the stack, from which messages are built. Idempotent; called
// by File::create and File::open, so callers normally need not call it.
void silence_errors() noexcept;

// Owns one hid_t and the function that closes it (H5Fclose, H5Gclose, ...).
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);

  Handle() noexcept = default;
  Handle(hid_t id, Closer closer) noexcept : id_(id), closer_(closer) {}
  ~Handle() { reset(); }

  Handle(Handle&& other) noexcept : id_(other.id_), closer_(other.closer_) {
    other.id_ = H5I_INVALID_HID;
  }
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = other.id_;
      closer_ = other.closer_;
      other.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const noexcept { return id_; }
  bool valid() const noexcept { return id_ >= 0; }

  // Closes now and returns the closer's status (negative on failure); the handle
  // is empty afterwards either way.
  herr_t close() noexcept {
    herr_t status = 0;
    if (id_ >= 0 && closer_ != nullptr) status = closer_(id_);
    id_ = H5I_INVALID_HID;
    return status;
  }
  void reset() noexcept { (void)close(); }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// The element types of the trace's datasets, and what fills a cell of a growing
// dataset that nothing was written to (a trial's cells past its last row): NaN for
// reals, the largest unsigned and -1 for signed integers, none a value a column holds.
enum class Type { int32, uint64, float64 };
template <class T>
constexpr Type type_of();
template <>
constexpr Type type_of<std::int32_t>() { return Type::int32; }
template <>
constexpr Type type_of<std::uint64_t>() { return Type::uint64; }
template <>
constexpr Type type_of<double>() { return Type::float64; }
template <class T>
constexpr T fill_value() {
  if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::quiet_NaN();
  else if constexpr (std::is_signed_v<T>) return T{-1};
  else return std::numeric_limits<T>::max();
}

// An open 1-D dataset, for its dimension scales (the HDF5 high-level H5DS API,
// linked as hdf5_hl). A scale names the dimension of the datasets it is attached to, and
// its values index that dimension: netCDF-4 readers (xarray with h5netcdf) see
// named dimensions and coordinates instead of anonymous ones.
class Dataset {
 public:
  // Makes this dataset the dimension scale `dimension` (H5DSset_scale).
  void make_scale(std::string_view dimension) const;
  // Attaches `scale` to this dataset's axis `axis` (H5DSattach_scale).
  void attach(const Dataset& scale, unsigned axis = 0) const;

  // A growing dataset (Node::create_growing): writes `values`, row-major, into the
  // block of `count` cells that starts at `offset` (one entry per axis), first
  // growing the dataset to hold it.
  template <class T>
  void write_block(std::initializer_list<hsize_t> offset, std::initializer_list<hsize_t> count,
                   std::span<const T> values) const {
    write_block_raw(offset, count, type_of<T>(), values.data());
  }

  hid_t id() const noexcept { return handle_.get(); }

 private:
  friend class Node;
  Dataset(Handle handle, std::string file, std::string path)
      : handle_(std::move(handle)), file_(std::move(file)), path_(std::move(path)) {}
  [[noreturn]] void fail(std::string_view operation) const;
  void write_block_raw(std::initializer_list<hsize_t> offset, std::initializer_list<hsize_t> count, Type type,
                       const void* values) const;

  Handle handle_;
  std::string file_;
  std::string path_;
};

// A file or a group: a place for attributes, subgroups and datasets. Carries the
// file name and its own path inside the file so that error messages can say where.
class Node {
 public:
  // Creates a subgroup that records the creation order of its members and
  // attributes, so that h5py lists them in the order they were written (by default
  // it sorts by name: /trials/10 would come before /trials/2).
  Node create_group(std::string_view name) const;
  Node open_group(std::string_view name) const;

  // Scalar attributes. Strings are stored as variable-length UTF-8 (h5py reads
  // them as Python str); invalid UTF-8 sequences are replaced by U+FFFD so that
  // a reader can always decode them.
  void set_string(std::string_view name, std::string_view value) const;
  void set_int32(std::string_view name, std::int32_t value) const;
  void set_uint64(std::string_view name, std::uint64_t value) const;
  void set_double(std::string_view name, double value) const;

  // Overwrites an existing integer attribute in place (keeping its position), e.g.
  // the root `complete` flag that is set last. Creating (set_*) fails instead when
  // the name exists, which catches duplicate names.
  void update_int32(std::string_view name, std::int32_t value) const;

  bool has_attribute(std::string_view name) const;
  std::string get_string(std::string_view name) const;
  std::int32_t get_int32(std::string_view name) const;

  // 1-D contiguous little-endian datasets, one per column. The dataset stays open
  // as long as the returned handle lives, to make it a scale or attach one.
  Dataset write_dataset(std::string_view name, std::span<const std::int32_t> values) const;
  Dataset write_dataset(std::string_view name, std::span<const std::uint64_t> values) const;
  Dataset write_dataset(std::string_view name, std::span<const double> values) const;

  // An empty dataset of `chunk.size()` axes (1 or 2) that grows as blocks are
  // written to it (Dataset::write_block), stored in chunks of that shape. Cells
  // never written read as fill_value<T>; with `fill_attribute` the dataset also
  // says so in its attribute _FillValue, which netCDF readers (xarray) mask.
  Dataset create_growing(std::string_view name, Type type, std::initializer_list<hsize_t> chunk,
                         bool fill_attribute) const;

  hid_t id() const noexcept { return handle_.get(); }
  const std::string& object_path() const noexcept { return path_; }

 protected:
  template <class T>
  Dataset write_typed(std::string_view name, hid_t file_type, hid_t mem_type, std::span<const T> values) const;

  Node(Handle handle, std::string file, std::string path)
      : handle_(std::move(handle)), file_(std::move(file)), path_(std::move(path)) {}

  // Throws TraceError "<operation> <object> in <file>: <HDF5's reason>".
  // Must be called before any other HDF5 call (closing a handle included), since
  // every API call clears the error stack; otherwise take the reason earlier and
  // use fail_because.
  [[noreturn]] void fail(std::string_view operation, std::string_view object) const;
  [[noreturn]] void fail_because(std::string_view operation, std::string_view object,
                                 std::string_view reason) const;
  std::string child_path(std::string_view name) const;
  std::string attribute_where(std::string_view name) const;  // "attribute 'x' of /g"

  Handle handle_;
  std::string file_;
  std::string path_;
};

class File : public Node {
 public:
  // Creates a new file; fails if it exists (H5F_ACC_EXCL), so an existing file is
  // never truncated by accident.
  static File create(const std::filesystem::path& path);
  static File open_read_only(const std::filesystem::path& path);

  // Pushes buffered data to the operating system (H5Fflush).
  void flush() const;
  // Closes the file and checks the result. With the strong close degree set at
  // creation, any object still open in the file is closed too, so afterwards the
  // file on disk is complete and no longer in use. A no-op when already closed.
  void close();
  bool is_open() const noexcept { return handle_.valid(); }

 private:
  using Node::Node;
};

}  // namespace avb::h5
