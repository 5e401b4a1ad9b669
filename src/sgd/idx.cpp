#include "sgd/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "core/error.hpp"

namespace avb {

namespace {

std::string hex32(std::uint32_t v) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%08x", v);
  return buffer;
}

// One gzipped (or plain: zlib reads those as they are) file; `where` starts
// every error: "--data PATH: ". A read polls `stop` between its chunks.
class GzReader {
 public:
  GzReader(const std::string& path, std::string where, const std::atomic<bool>* stop = nullptr)
      : where_(std::move(where)), path_(path), stop_(stop) {
    if (path.find('\0') != std::string::npos) throw ConfigError(where_ + "the path contains a NUL byte");
    std::error_code ignored;
    if (std::filesystem::is_directory(path, ignored)) throw ConfigError(where_ + "cannot read the file (it is a directory)");
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      const int err = errno;
      throw ConfigError(where_ + "cannot read the file" + (err != 0 ? std::string(" (") + std::strerror(err) + ")" : ""));
    }
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;
  ~GzReader() { gzclose(file_); }

  // Up to n bytes; fewer only at the end of the file.
  std::size_t read(void* out, std::size_t n) {
    auto* bytes = static_cast<unsigned char*>(out);
    std::size_t done = 0;
    while (done < n) {
      check_stop(stop_);  // a chunk takes tens of milliseconds to inflate
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, std::size_t{1} << 24));
      const int got = gzread(file_, bytes + done, chunk);
      if (got < 0) {
        check_stop(stop_);  // a read of a pipe that the signal interrupted (EINTR) is the stop, not a bad file
        int code = 0;
        std::string message = gzerror(file_, &code);  // "PATH: what"
        if (message.rfind(path_ + ": ", 0) == 0) message.erase(0, path_.size() + 2);
        throw ConfigError(where_ + "cannot read the file (" + message + ")");
      }
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    return done;
  }

  std::uint32_t big_endian_word(const char* what) {
    unsigned char b[4];
    if (read(b, 4) != 4) throw ConfigError(where_ + "the file ends inside its header (" + what + ")");
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
  }

  bool at_end() {
    unsigned char b;
    return read(&b, 1) == 0;
  }

 private:
  std::string where_, path_;
  const std::atomic<bool>* stop_;
  gzFile file_ = nullptr;
};

struct ImagesHeader {
  long long count = 0;
  int rows = 0, cols = 0;
};

ImagesHeader images_header(GzReader& in, const std::string& where) {
  const std::uint32_t magic = in.big_endian_word("magic number");
  if (magic != kIdxImagesMagic)
    throw ConfigError(where + "not an IDX images file (magic " + hex32(magic) + ", expected " +
                      hex32(kIdxImagesMagic) + ": unsigned bytes in 3 dimensions)");
  ImagesHeader h;
  h.count = in.big_endian_word("image count");
  const std::uint32_t rows = in.big_endian_word("rows"), cols = in.big_endian_word("columns");
  if (h.count < 1) throw ConfigError(where + "the header announces no images");
  if (rows < 1 || cols < 1 || rows > (1u << 15) || cols > (1u << 15))
    throw ConfigError(where + "images of " + std::to_string(rows) + " x " + std::to_string(cols) +
                      " pixels (each side must be in [1, 32768])");
  h.rows = static_cast<int>(rows);
  h.cols = static_cast<int>(cols);
  const long long d = static_cast<long long>(rows) * cols;
  if (h.count > kMaxIdxPixels / d)
    throw ConfigError(where + std::to_string(h.count) + " images of " + std::to_string(d) +
                      " pixels is more than " + std::to_string(kMaxIdxPixels) + " pixels (1 GiB)");
  return h;
}

// The labels file's count and labels; `count` is what the images file announced.
std::vector<std::uint8_t> read_labels(const std::string& path, const std::string& where, long long count) {
  const std::string at = where + "its labels file " + path + ": ";
  GzReader in(path, at);
  const std::uint32_t magic = in.big_endian_word("magic number");
  if (magic != kIdxLabelsMagic)
    throw ConfigError(at + "not an IDX labels file (magic " + hex32(magic) + ", expected " + hex32(kIdxLabelsMagic) +
                      ": unsigned bytes in 1 dimension)");
  const long long labels = in.big_endian_word("label count");
  if (labels != count)
    throw ConfigError(at + "holds " + std::to_string(labels) + " labels for " + std::to_string(count) + " images");
  std::vector<std::uint8_t> out(static_cast<std::size_t>(count));
  const std::size_t got = in.read(out.data(), out.size());
  if (got != out.size())
    throw ConfigError(at + "truncated: the file ends after " + std::to_string(got) + " of its " +
                      std::to_string(count) + " labels");
  if (!in.at_end()) throw ConfigError(at + "more bytes than the " + std::to_string(count) + " labels it announces");
  return out;
}

int class_count(const std::vector<std::uint8_t>& labels, const std::string& where) {
  const int largest = *std::max_element(labels.begin(), labels.end());
  if (std::all_of(labels.begin(), labels.end(), [&](std::uint8_t l) { return l == largest; }))
    throw ConfigError(where + "every label is " + std::to_string(largest) + " (a softmax needs two classes or more)");
  return largest + 1;
}

}  // namespace

Eigen::VectorXd ImageSet::label_values() const {
  Eigen::VectorXd out(static_cast<Eigen::Index>(labels.size()));
  for (std::size_t s = 0; s < labels.size(); ++s) out[static_cast<Eigen::Index>(s)] = labels[s];
  return out;
}

std::string idx_labels_path(const std::string& images_path, const std::string& flag) {
  constexpr std::string_view from = "images-idx3", to = "labels-idx1";
  const std::size_t slash = images_path.find_last_of('/');
  const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
  const std::size_t at = images_path.rfind(from);
  if (at == std::string::npos || at < name)
    throw ConfigError(flag + " " + images_path + ": the file name has no \"images-idx3\" (its labels file is the " +
                      "same name with \"labels-idx1\" in its place)");
  std::string out = images_path;
  out.replace(at, from.size(), to);
  return out;
}

IdxShape read_idx_shape(const std::string& images_path, const std::string& flag) {
  const std::string where = flag + " " + images_path + ": ";
  const std::string labels_path = idx_labels_path(images_path, flag);
  GzReader in(images_path, where);
  const ImagesHeader h = images_header(in, where);
  const std::vector<std::uint8_t> labels = read_labels(labels_path, where, h.count);
  return {h.count, h.rows * h.cols, class_count(labels, where + "its labels file " + labels_path + ": ")};
}

ImageSet read_idx(const std::string& images_path, const std::string& flag, long long limit,
                  const std::atomic<bool>* stop) {
  const std::string where = flag + " " + images_path + ": ";
  const std::string labels_path = idx_labels_path(images_path, flag);
  GzReader in(images_path, where, stop);
  const ImagesHeader h = images_header(in, where);
  std::vector<std::uint8_t> labels = read_labels(labels_path, where, h.count);
  ImageSet out;
  out.classes = class_count(labels, where + "its labels file " + labels_path + ": ");
  const long long m = limit > 0 ? std::min(limit, h.count) : h.count;
  const long long d = static_cast<long long>(h.rows) * h.cols;
  out.pixels.resize(m, d);
  const auto bytes = static_cast<std::size_t>(m * d);
  const std::size_t got = in.read(out.pixels.data(), bytes);
  if (got != bytes)
    throw ConfigError(where + "truncated: the header announces " + std::to_string(h.count) + " images of " +
                      std::to_string(h.rows) + " x " + std::to_string(h.cols) + " pixels, the file ends in image " +
                      std::to_string(got / static_cast<std::size_t>(d) + 1));
  if (m == h.count && !in.at_end())
    throw ConfigError(where + "more bytes than the " + std::to_string(h.count) + " images its header announces");
  labels.resize(static_cast<std::size_t>(m));
  out.labels = std::move(labels);
  return out;
}

ImageSet select_images(const ImageSet& data, const std::vector<int>& rows) {
  ImageSet out;
  out.classes = data.classes;
  out.pixels.resize(static_cast<Eigen::Index>(rows.size()), data.dim());
  out.labels.resize(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out.pixels.row(static_cast<Eigen::Index>(r)) = data.pixels.row(rows[r]);
    out.labels[r] = data.labels[static_cast<std::size_t>(rows[r])];
  }
  return out;
}

std::vector<std::uint8_t> pack_images(const ImageSet& data) {
  std::vector<std::uint8_t> out(data.labels);
  out.insert(out.end(), data.pixels.data(), data.pixels.data() + data.pixels.size());
  return out;
}

ImageSet unpack_images(const std::vector<std::uint8_t>& bytes, int dim, int classes) {
  const auto width = static_cast<std::size_t>(dim) + 1;
  if (dim < 1 || bytes.size() % width != 0)
    throw std::invalid_argument("unpack_images: " + std::to_string(bytes.size()) + " bytes for images of " +
                                std::to_string(dim) + " pixels");
  const std::size_t m = bytes.size() / width;
  ImageSet out;
  out.classes = classes;
  out.labels.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(m));
  out.pixels = Eigen::Map<const PixelMatrix>(bytes.data() + m, static_cast<Eigen::Index>(m), dim);
  return out;
}

}  // namespace avb
