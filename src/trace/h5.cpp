#include "trace/h5.hpp"

#include <hdf5_hl.h>  // H5DS: dimension scales

#include <vector>

#include "core/error.hpp"

namespace avb::h5 {
namespace {

// The most specific description HDF5 left on its error stack for the call that
// just failed (e.g. the errno text of a failed open). Must run before any other
// HDF5 call, since every API call clears the stack first.
std::string hdf5_reason() {
  std::string reason;
  auto collect = [](unsigned n, const H5E_error2_t* err, void* data) -> herr_t {
    // Walking upward, n == 0 is the innermost frame, the one closest to the cause.
    if (n == 0 && err != nullptr && err->desc != nullptr) *static_cast<std::string*>(data) = err->desc;
    return 0;
  };
  if (H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect, &reason) < 0 || reason.empty()) {
    return "HDF5 gave no reason";
  }
  return reason;
}

[[noreturn]] void throw_file_error(std::string_view operation, const std::filesystem::path& path) {
  std::string reason = hdf5_reason();
  throw TraceError(std::string(operation) + " " + path.string() + ": " + reason);
}

// Replaces every byte sequence that is not well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF) by U+FFFD. Attributes are
// tagged UTF-8, and h5py refuses to decode a str attribute that is not, which
// would make e.g. a config file saved as Latin-1 unreadable from Python.
std::string valid_utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(in[k]); };
  std::size_t i = 0;
  while (i < in.size()) {
    const unsigned char c = byte(i);
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    }
    bool ok = len > 0 && i + len <= in.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const unsigned char b = byte(i + k);
      ok = (k == 1) ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    }
    if (ok) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD, then resynchronise on the next byte
      ++i;
    }
  }
  return out;
}

Handle scalar_space() { return Handle(H5Screate(H5S_SCALAR), H5Sclose); }

// Variable-length UTF-8 string type: no length limit, no padding for readers to
// strip, and the value lives in the global heap so large texts do not overflow
// the attribute's object header.
Handle vlen_utf8_type() {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!type.valid() || H5Tset_size(type.get(), H5T_VARIABLE) < 0 ||
      H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0) {
    return Handle();
  }
  return type;
}

// Object creation property list with modification times switched off, so that
// the same run writes the same bytes (only created_utc differs).
Handle untimed_plist(hid_t cls) {
  Handle plist(H5Pcreate(cls), H5Pclose);
  if (plist.valid() && H5Pset_obj_track_times(plist.get(), false) < 0) return Handle();
  return plist;
}

}  // namespace

namespace detail {
std::string reason() { return hdf5_reason(); }
Handle untimed(hid_t plist_class) { return untimed_plist(plist_class); }
}  // namespace detail

void silence_errors() noexcept {
  // No HDF5 clean-up at exit: after a write failed (a full file system) the file
  // cannot be closed, its id stays open, and HDF5 1.10's exit handler then
  // crashes closing it (H5F__close_cb, SIGSEGV) after the app has reported the
  // error. Every trace is closed, or dropped, before main() returns. Effective
  // only before the library's first use; later calls fail harmlessly.
  (void)H5dont_atexit();
  (void)H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

// ---- Dataset -------------------------------------------------------------------

void Dataset::fail(std::string_view operation) const {
  throw TraceError(std::string(operation) + " '" + path_ + "' in " + file_ + ": " + hdf5_reason());
}

void Dataset::make_scale(std::string_view dimension) const {
  const std::string name(dimension);
  if (H5DSset_scale(handle_.get(), name.c_str()) < 0) fail("cannot make a dimension scale of");
}

void Dataset::attach(const Dataset& scale, unsigned axis) const {
  if (H5DSattach_scale(handle_.get(), scale.handle_.get(), axis) < 0) {
    fail("cannot attach scale '" + scale.path_ + "' to");
  }
}

// ---- Node ----------------------------------------------------------------------

std::string Node::attribute_where(std::string_view name) const {
  return "attribute '" + std::string(name) + "' of " + path_;
}

std::string Node::child_path(std::string_view name) const {
  std::string p = path_;
  if (p.empty() || p.back() != '/') p += '/';
  p += name;
  return p;
}

void Node::fail(std::string_view operation, std::string_view object) const {
  fail_because(operation, object, hdf5_reason());  // first: later HDF5 calls clear the stack
}

void Node::fail_because(std::string_view operation, std::string_view object, std::string_view reason) const {
  throw TraceError(std::string(operation) + " " + std::string(object) + " in " + file_ + ": " +
                   std::string(reason));
}

Node Node::create_group(std::string_view name) const {
  const std::string n(name);
  Handle gcpl = untimed_plist(H5P_GROUP_CREATE);
  if (!gcpl.valid()) fail("cannot prepare group", "'" + child_path(name) + "'");
  if (H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0 ||
      H5Pset_attr_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0) {
    fail("cannot prepare group", "'" + child_path(name) + "'");
  }
  Handle group(H5Gcreate2(handle_.get(), n.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose);
  if (!group.valid()) fail("cannot create group", "'" + child_path(name) + "'");
  return Node(std::move(group), file_, child_path(name));
}

Node Node::open_group(std::string_view name) const {
  const std::string n(name);
  Handle group(H5Gopen2(handle_.get(), n.c_str(), H5P_DEFAULT), H5Gclose);
  if (!group.valid()) fail("cannot open group", "'" + child_path(name) + "'");
  return Node(std::move(group), file_, child_path(name));
}

void Node::set_string(std::string_view name, std::string_view value) const {
  const std::string n(name);
  const std::string text = valid_utf8(value);
  const std::string where = attribute_where(n);
  Handle type = vlen_utf8_type();
  Handle space = scalar_space();
  if (!type.valid() || !space.valid()) fail("cannot prepare string type for", where);
  Handle attr(H5Acreate2(handle_.get(), n.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  if (!attr.valid()) fail("cannot create", where);
  // A variable-length string is written through a pointer to its C string.
  const char* ptr = text.c_str();
  if (H5Awrite(attr.get(), type.get(), &ptr) < 0) fail("cannot write", where);
}

namespace {
// One scalar numeric attribute: `file_type` fixes the on-disk layout (little
// endian, explicit width) independently of the machine; `mem_type` describes `value`.
// Returns HDF5's reason on failure, empty on success. The reason is taken at the
// failing call, while the handles are still open: closing them is an API call,
// which would clear the error stack.
template <class T>
std::string write_scalar(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type, T value) {
  Handle space = scalar_space();
  if (!space.valid()) return hdf5_reason();
  Handle attr(H5Acreate2(loc, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), mem_type, &value) < 0) return hdf5_reason();
  return {};
}
}  // namespace

void Node::set_int32(std::string_view name, std::int32_t value) const {
  const std::string n(name);
  if (auto why = write_scalar(handle_.get(), n, H5T_STD_I32LE, H5T_NATIVE_INT32, value); !why.empty()) {
    fail_because("cannot write", attribute_where(n), why);
  }
}

void Node::set_uint64(std::string_view name, std::uint64_t value) const {
  const std::string n(name);
  if (auto why = write_scalar(handle_.get(), n, H5T_STD_U64LE, H5T_NATIVE_UINT64, value); !why.empty()) {
    fail_because("cannot write", attribute_where(n), why);
  }
}

void Node::set_double(std::string_view name, double value) const {
  const std::string n(name);
  if (auto why = write_scalar(handle_.get(), n, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, value); !why.empty()) {
    fail_because("cannot write", attribute_where(n), why);
  }
}

void Node::update_int32(std::string_view name, std::int32_t value) const {
  const std::string n(name);
  const std::string where = attribute_where(n);
  Handle attr(H5Aopen(handle_.get(), n.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) fail("cannot open", where);
  if (H5Awrite(attr.get(), H5T_NATIVE_INT32, &value) < 0) fail("cannot write", where);
}

bool Node::has_attribute(std::string_view name) const {
  const std::string n(name);
  const htri_t exists = H5Aexists(handle_.get(), n.c_str());
  if (exists < 0) fail("cannot look up", attribute_where(n));
  return exists > 0;
}

std::string Node::get_string(std::string_view name) const {
  const std::string n(name);
  const std::string where = attribute_where(n);
  Handle attr(H5Aopen(handle_.get(), n.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) fail("cannot open", where);
  Handle file_type(H5Aget_type(attr.get()), H5Tclose);
  if (!file_type.valid()) fail("cannot read", where);
  if (H5Tget_class(file_type.get()) != H5T_STRING) {
    throw TraceError(where + " in " + file_ + " is not a string");
  }
  const htri_t variable = H5Tis_variable_str(file_type.get());
  if (variable < 0) fail("cannot read", where);
  if (variable > 0) {
    Handle mem_type = vlen_utf8_type();
    Handle space = scalar_space();
    if (!mem_type.valid() || !space.valid()) fail("cannot read", where);
    char* ptr = nullptr;
    if (H5Aread(attr.get(), mem_type.get(), &ptr) < 0) fail("cannot read", where);
    std::string value = ptr != nullptr ? std::string(ptr) : std::string();
    // HDF5 allocated the string; give it back through the library's own allocator.
    (void)H5Dvlen_reclaim(mem_type.get(), space.get(), H5P_DEFAULT, &ptr);
    return value;
  }
  // Fixed-length strings (written by other tools): read the bytes, drop padding.
  const std::size_t size = H5Tget_size(file_type.get());
  std::vector<char> buffer(size + 1, '\0');
  if (H5Aread(attr.get(), file_type.get(), buffer.data()) < 0) fail("cannot read", where);
  std::string value(buffer.data(), size);
  value.erase(value.find_last_not_of(std::string_view("\0 ", 2)) + 1);
  return value;
}

std::int32_t Node::get_int32(std::string_view name) const {
  const std::string n(name);
  const std::string where = attribute_where(n);
  Handle attr(H5Aopen(handle_.get(), n.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) fail("cannot open", where);
  std::int32_t value = 0;
  // HDF5 converts any integer class to the requested memory type (and fails on
  // overflow or non-integers), so this also reads attributes other tools wrote.
  if (H5Aread(attr.get(), H5T_NATIVE_INT32, &value) < 0) fail("cannot read", where);
  return value;
}

namespace {
// Like write_scalar: HDF5's reason on failure, empty on success; `out` holds the
// open dataset.
constexpr std::size_t kCompactBytes = 16384;  // HDF5 allows up to 64 KiB in the header

template <class T>
std::string write_column(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type,
                         std::span<const T> values, Handle& out) {
  const hsize_t dims[1] = {static_cast<hsize_t>(values.size())};
  Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  if (!space.valid()) return hdf5_reason();
  Handle dcpl = untimed_plist(H5P_DATASET_CREATE);
  if (!dcpl.valid()) return "cannot make a dataset creation property list";
  // A short column lives in its object header (compact), not in a block of its
  // own: a trial's dozen columns were a third of the time of writing it.
  if (values.size() * sizeof(T) <= kCompactBytes && H5Pset_layout(dcpl.get(), H5D_COMPACT) < 0) {
    return hdf5_reason();
  }
  Handle dset(H5Dcreate2(loc, name.c_str(), file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
              H5Dclose);
  if (!dset.valid()) return hdf5_reason();
  // An empty column (e.g. /summary before any trial) has nothing to write, and
  // HDF5 rejects a null buffer even for zero elements.
  if (!values.empty() && H5Dwrite(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
    return hdf5_reason();
  }
  out = std::move(dset);
  return {};
}
}  // namespace

template <class T>
Dataset Node::write_typed(std::string_view name, hid_t file_type, hid_t mem_type, std::span<const T> values) const {
  const std::string n(name);
  Handle dset;
  if (auto why = write_column(handle_.get(), n, file_type, mem_type, values, dset); !why.empty()) {
    fail_because("cannot write dataset", "'" + child_path(name) + "'", why);
  }
  return Dataset(std::move(dset), file_, child_path(name));
}

Dataset Node::write_dataset(std::string_view name, std::span<const std::int32_t> values) const {
  return write_typed(name, H5T_STD_I32LE, H5T_NATIVE_INT32, values);
}

Dataset Node::write_dataset(std::string_view name, std::span<const std::uint64_t> values) const {
  return write_typed(name, H5T_STD_U64LE, H5T_NATIVE_UINT64, values);
}

Dataset Node::write_dataset(std::string_view name, std::span<const double> values) const {
  return write_typed(name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values);
}

// ---- File ----------------------------------------------------------------------

File File::create(const std::filesystem::path& path) {
  silence_errors();
  // Strong close degree: H5Fclose also closes anything left open in the file, so
  // once close() returns the file is finished and can be renamed or removed.
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.valid() || H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0) {
    throw_file_error("cannot prepare to create HDF5 file", path);
  }
  // The root group is created with the file: set its ordering here, as
  // create_group does for the others.
  Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  if (!fcpl.valid() || H5Pset_obj_track_times(fcpl.get(), false) < 0 ||
      H5Pset_link_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0 ||
      H5Pset_attr_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0) {
    throw_file_error("cannot prepare to create HDF5 file", path);
  }
  Handle file(H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get()), H5Fclose);
  if (!file.valid()) throw_file_error("cannot create HDF5 file", path);
  return File(std::move(file), path.string(), "/");
}

File File::open_read_only(const std::filesystem::path& path) {
  silence_errors();
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw_file_error("cannot open HDF5 file", path);
  return File(std::move(file), path.string(), "/");
}

void File::flush() const {
  if (H5Fflush(handle_.get(), H5F_SCOPE_LOCAL) < 0) throw_file_error("cannot flush HDF5 file", file_);
}

void File::close() {
  if (!handle_.valid()) return;
  if (handle_.close() < 0) throw_file_error("cannot close HDF5 file", file_);
}

}  // namespace avb::h5
