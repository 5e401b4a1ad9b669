// Growing datasets (h5.hpp: Node::create_growing, Dataset::write_block): the
// trace's tables over trials, appended to in batches, so that writing a trial
// costs its values and not a group and a dozen datasets of its own.
#include <hdf5_hl.h>

#include <array>
#include <string>

#include "core/error.hpp"
#include "trace/h5.hpp"

namespace avb::h5 {

namespace detail {
std::string reason();  // h5.cpp: HDF5's reason for the call that just failed
Handle untimed(hid_t plist_class);
}  // namespace detail

namespace {

struct Types {
  hid_t file, memory;
};

Types types_of(Type type) {
  switch (type) {
    case Type::int32: return {H5T_STD_I32LE, H5T_NATIVE_INT32};
    case Type::uint64: return {H5T_STD_U64LE, H5T_NATIVE_UINT64};
    default: return {H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE};
  }
}

// The fill value of `type` as bytes of its memory type, for H5Pset_fill_value and
// the _FillValue attribute.
struct Fill {
  std::int32_t i = fill_value<std::int32_t>();
  std::uint64_t u = fill_value<std::uint64_t>();
  double d = fill_value<double>();
  const void* of(Type type) const {
    return type == Type::int32 ? static_cast<const void*>(&i)
                               : type == Type::uint64 ? static_cast<const void*>(&u) : static_cast<const void*>(&d);
  }
};

// HDF5's reason on failure, empty on success; `out` holds the open dataset.
std::string create(hid_t loc, const std::string& name, Type type, std::initializer_list<hsize_t> chunk,
                   bool fill_attribute, Handle& out) {
  const int rank = static_cast<int>(chunk.size());
  const std::array<hsize_t, 2> zero{0, 0}, unlimited{H5S_UNLIMITED, H5S_UNLIMITED};
  Handle space(H5Screate_simple(rank, zero.data(), unlimited.data()), H5Sclose);
  if (!space.valid()) return detail::reason();
  Handle dcpl = detail::untimed(H5P_DATASET_CREATE);
  if (!dcpl.valid()) return "cannot make a dataset creation property list";
  const Types t = types_of(type);
  const Fill fill;
  if (H5Pset_chunk(dcpl.get(), rank, chunk.begin()) < 0 || H5Pset_fill_value(dcpl.get(), t.memory, fill.of(type)) < 0)
    return detail::reason();
  Handle dset(H5Dcreate2(loc, name.c_str(), t.file, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
  if (!dset.valid()) return detail::reason();
  if (fill_attribute) {
    Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
    Handle attr(H5Acreate2(dset.get(), "_FillValue", t.file, scalar.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!scalar.valid() || !attr.valid() || H5Awrite(attr.get(), t.memory, fill.of(type)) < 0) return detail::reason();
  }
  out = std::move(dset);
  return {};
}

}  // namespace

Dataset Node::create_growing(std::string_view name, Type type, std::initializer_list<hsize_t> chunk,
                             bool fill_attribute) const {
  const std::string n(name);
  if (chunk.size() < 1 || chunk.size() > 2) fail_because("cannot create dataset", "'" + child_path(name) + "'", "1 or 2 axes");
  Handle dset;
  if (auto why = create(handle_.get(), n, type, chunk, fill_attribute, dset); !why.empty())
    fail_because("cannot create dataset", "'" + child_path(name) + "'", why);
  return Dataset(std::move(dset), file_, child_path(name));
}

void Dataset::write_block_raw(std::initializer_list<hsize_t> offset, std::initializer_list<hsize_t> count, Type type,
                              const void* values) const {
  const int rank = static_cast<int>(offset.size());
  std::array<hsize_t, 2> extent{0, 0};
  {
    Handle space(H5Dget_space(handle_.get()), H5Sclose);
    if (!space.valid() || H5Sget_simple_extent_ndims(space.get()) != rank ||
        H5Sget_simple_extent_dims(space.get(), extent.data(), nullptr) < 0)
      fail("cannot grow");
  }
  hsize_t cells = 1;
  for (int a = 0; a < rank; ++a) {
    const hsize_t end = offset.begin()[a] + count.begin()[a];
    if (end > extent[static_cast<std::size_t>(a)]) extent[static_cast<std::size_t>(a)] = end;
    cells *= count.begin()[a];
  }
  if (H5Dset_extent(handle_.get(), extent.data()) < 0) fail("cannot grow");
  if (cells == 0) return;  // HDF5 rejects an empty selection's write
  Handle file_space(H5Dget_space(handle_.get()), H5Sclose);
  Handle memory(H5Screate_simple(rank, count.begin(), nullptr), H5Sclose);
  if (!file_space.valid() || !memory.valid() ||
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, offset.begin(), nullptr, count.begin(), nullptr) < 0 ||
      H5Dwrite(handle_.get(), types_of(type).memory, memory.get(), file_space.get(), H5P_DEFAULT, values) < 0)
    fail("cannot write to");
}

}  // namespace avb::h5
