// Padding: messages charged as if the vectors had --model-dim coordinates while
// their values have --dim (docs/simulation.md, "Model-sized messages").
//
// A padded message is one contiguous MPI_BYTE message [payload | padding], so the
// network sees its charged size exactly once, with the latency of one message.
// It is built in a staging buffer: the payload is copied into its private head;
// under SMPI the tail is declared shared (SMPI_PARTIAL_SHARED_MALLOC), which
// SimGrid never copies on delivery and backs by one file mapping, so a model of D
// coordinates costs neither D doubles per buffer nor a copy per message. On a real
// MPI the tail is ordinary zeroed memory that really travels.
//
// Comm owns one Padding per communicator tree (shared with its views) and routes
// every padded send and receive through it; received payloads are copied out of
// their staging buffer when Comm's wait completes the request.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <limits>
#include <unordered_map>
#include <vector>

namespace avb {

// Coordinates of a run's vectors: `dim` are computed, `model` are charged.
struct ModelLength {
  std::size_t dim = 0;
  std::size_t model = 0;
};

// A message's charged element count, when the sender states it (a part of the
// vector); kByRule: Padding::pad_bytes decides from the message itself.
inline constexpr std::size_t kByRule = std::numeric_limits<std::size_t>::max();

class Padding {
 public:
  explicit Padding(ModelLength length);
  ~Padding();
  Padding(const Padding&) = delete;
  Padding& operator=(const Padding&) = delete;

  const ModelLength& length() const { return length_; }

  // Bytes to append to a message of `count` elements of `type` that stands for
  // `model_count` elements. By rule, a message of at least dim doubles carries
  // the whole vector (plus count - dim scalars such as push-sum's weight) and gets
  // (model - dim) doubles; any other message (verdicts, headers) none.
  std::size_t pad_bytes(MPI_Datatype type, std::size_t count, std::size_t model_count) const;

  // A staging buffer holding `payload` (payload_bytes, copied in when non-null) at
  // its head, large enough for any padding. Throws Error when the payload does not
  // fit its private head.
  std::byte* stage(const void* payload, std::size_t payload_bytes);
  // `request` uses `buffer`; on completion, `bytes` are copied to `receive_into`
  // (null for a send) and the buffer is reused.
  void track(MPI_Request request, std::byte* buffer, void* receive_into, std::size_t bytes);
  // Finishes `request`'s staging after it completed (nothing if untracked).
  void finish(MPI_Request request);
  // A staging buffer not used by any request any more.
  void release(std::byte* buffer) { free_.push_back(buffer); }
  bool tracking() const { return !in_flight_.empty(); }

 private:
  struct Staged {
    std::byte* buffer;
    void* receive_into;
    std::size_t bytes;
  };
  std::byte* allocate() const;

  ModelLength length_;
  std::size_t head_ = 0;      // private bytes at the head of a staging buffer
  std::size_t capacity_ = 0;  // head + the largest padding
  std::vector<std::byte*> all_, free_;
  std::unordered_map<MPI_Request, Staged> in_flight_;
};

}  // namespace avb
