#include "core/padding.hpp"

#include <cstring>
#include <string>

#include "core/error.hpp"

#ifdef AVB_ENGINE_SMPI
#include <smpi/smpi.h>
#endif

namespace avb {

namespace {
constexpr std::size_t kPage = 4096;
// Room in the private head beyond a whole vector, for the scalars and headers some
// messages carry next to it.
constexpr std::size_t kHeadSlack = kPage;

std::size_t round_up(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

std::size_t element_bytes(MPI_Datatype type) {
  int size = 0;
  if (const int rc = MPI_Type_size(type, &size); rc != MPI_SUCCESS) throw MpiError("MPI_Type_size", rc);
  return static_cast<std::size_t>(size);
}
}  // namespace

Padding::Padding(ModelLength length)
    : length_(length),
      head_(round_up(sizeof(double) * length.dim + kHeadSlack)),
      capacity_(head_ + round_up(sizeof(double) * length.model)) {}

Padding::~Padding() {
  for (std::byte* buffer : all_) {
#ifdef AVB_ENGINE_SMPI
    SMPI_SHARED_FREE(buffer);
#else
    delete[] buffer;
#endif
  }
}

std::size_t Padding::pad_bytes(MPI_Datatype type, std::size_t count, std::size_t model_count) const {
  if (length_.model <= length_.dim) return 0;
  if (model_count != kByRule) {
    if (model_count < count) throw Error("Padding: a message of " + std::to_string(count) +
                                         " elements cannot stand for " + std::to_string(model_count));
    return (model_count - count) * element_bytes(type);
  }
  if (type != MPI_DOUBLE || count < length_.dim) return 0;
  return sizeof(double) * (length_.model - length_.dim);
}

std::byte* Padding::allocate() const {
#ifdef AVB_ENGINE_SMPI
  // The tail [head_, capacity_) is shared: one file mapping for every buffer of
  // every simulated peer, skipped when SimGrid delivers a message.
  const std::size_t shared[2] = {head_, capacity_};
  return static_cast<std::byte*>(SMPI_PARTIAL_SHARED_MALLOC(capacity_, shared, 1));
#else
  return new std::byte[capacity_]();
#endif
}

std::byte* Padding::stage(const void* payload, std::size_t payload_bytes) {
  if (payload_bytes > head_)
    throw Error("Padding: a message of " + std::to_string(payload_bytes) + " bytes exceeds the staging head of " +
                std::to_string(head_) + " bytes");
  std::byte* buffer = nullptr;
  if (free_.empty()) {
    buffer = allocate();
    all_.push_back(buffer);
  } else {
    buffer = free_.back();
    free_.pop_back();
  }
  if (payload != nullptr && payload_bytes > 0) std::memcpy(buffer, payload, payload_bytes);
  return buffer;
}

void Padding::track(MPI_Request request, std::byte* buffer, void* receive_into, std::size_t bytes) {
  // A handle seen again belongs to a request completed outside Comm: its buffer is free.
  if (auto old = in_flight_.find(request); old != in_flight_.end()) {
    release(old->second.buffer);
    in_flight_.erase(old);
  }
  in_flight_.emplace(request, Staged{buffer, receive_into, bytes});
}

void Padding::finish(MPI_Request request) {
  auto it = in_flight_.find(request);
  if (it == in_flight_.end()) return;
  const Staged s = it->second;
  in_flight_.erase(it);
  if (s.receive_into != nullptr && s.bytes > 0) std::memcpy(s.receive_into, s.buffer, s.bytes);
  release(s.buffer);
}

}  // namespace avb
