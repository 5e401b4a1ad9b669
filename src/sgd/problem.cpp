#include "sgd/problem.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <sstream>
#include <vector>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "sgd/image_objective.hpp"
#include "sgd/problem_data.hpp"
#include "sgd/softmax.hpp"

namespace avb {

namespace {

constexpr int kShardTag = 7301;

// Runs `work` on rank 0 and turns a ConfigError (or a stop) there into the same
// on every rank, so that all ranks leave together and only rank 0 need speak.
template <class F>
void on_root_or_throw_everywhere(MPI_Comm world, int rank, F&& work) {
  std::string problem;
  int kind = 0;  // 0 fine, 1 ConfigError, 2 other error, 3 out of memory, 4 stop requested
  if (rank == 0) {
    try {
      work();
    } catch (const StopRequested&) {
      kind = 4;
    } catch (const ConfigError& e) {
      problem = e.what();
      kind = 1;
    } catch (const std::bad_alloc& e) {
      // Kept a bad_alloc, so that the app can tell the user the problem is too big.
      problem = e.what();
      kind = 3;
    } catch (const std::exception& e) {
      problem = e.what();
      kind = 2;
    }
  }
  int header[2] = {kind, static_cast<int>(problem.size())};
  check_mpi(MPI_Bcast(header, 2, MPI_INT, 0, world), "MPI_Bcast");
  if (header[0] == 0) return;
  if (header[0] == 4) throw StopRequested{};
  problem.resize(static_cast<std::size_t>(header[1]));
  check_mpi(MPI_Bcast(problem.data(), header[1], MPI_CHAR, 0, world), "MPI_Bcast");
  if (header[0] == 1) throw ConfigError(problem);
  if (header[0] == 3) throw std::bad_alloc();
  throw Error(problem);
}

// The optimum and the loss at x = 0 are the reference of every measurement: a
// problem whose numbers do not fit in double precision is refused as bad input
// (ConfigError, so every engine reports it once, exit 2), naming the flag that
// scales the problem. Any values would fail on every rank alike.
void check_optimum(const ObjectiveOptions& o, const Optimum& optimum, double initial_loss) {
  const bool finite = std::isfinite(initial_loss) && std::isfinite(optimum.loss) && optimum.x.allFinite();
  if (finite && optimum.converged) return;
  std::string flag;
  if (o.kind == ObjectiveKind::quadratic) {
    flag = o.preset == QuadraticPreset::conditioned && o.condition > 1e8
               ? "--condition: " + format_number(o.condition)
               : "--zeta: " + format_number(o.heterogeneity);
  } else {
    flag = o.data_path.empty() ? "--separation: " + format_number(o.separation) : "--data: " + o.data_path;
    if (classifies_images(o.kind) && o.l2 > 0) flag = "--l2: " + format_number(o.l2);
  }
  std::ostringstream s;
  s << flag << ": the pooled problem's optimum cannot be computed in double precision (";
  if (!finite) {
    s << "its loss or minimiser overflows: f(0) = " << initial_loss << ", f* = " << optimum.loss;
  } else {
    s << "gradient norm " << optimum.gradient_norm << " at the computed x*, above " << kOptimumTolerance
      << " x its scale " << optimum.gradient_scale << ", after ";
    if (o.kind == ObjectiveKind::quadratic)
      s << "the direct solve of the diagonal normal equations";
    else
      s << optimum.iterations << (o.kind == ObjectiveKind::softmax ? " L-BFGS iterations" : " Newton iterations");
  }
  s << "); use a smaller value";
  throw ConfigError(s.str());
}

// The samples of one peer as rows of (label, features), for one message.
std::vector<double> pack(const Dataset& d) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(d.samples()) * static_cast<std::size_t>(d.dim() + 1));
  for (int s = 0; s < d.samples(); ++s) {
    out.push_back(d.labels[s]);
    for (int k = 0; k < d.dim(); ++k) out.push_back(d.features(s, k));
  }
  return out;
}

Dataset unpack(const std::vector<double>& in, int dim) {
  const auto width = static_cast<std::size_t>(dim + 1);
  const auto m = static_cast<Eigen::Index>(in.size() / width);
  Dataset d;
  d.features.resize(m, dim);
  d.labels.resize(m);
  for (Eigen::Index s = 0; s < m; ++s) {
    const double* row = in.data() + static_cast<std::size_t>(s) * width;
    d.labels[s] = row[0];
    for (int k = 0; k < dim; ++k) d.features(s, k) = row[k + 1];
  }
  return d;
}

// What rank 0 sent this rank with its shard (send_shards): empty when it
// stopped dealing, as no shard is empty.
template <class T>
std::vector<T> receive_packed(MPI_Comm world, MPI_Datatype type) {
  MPI_Status status;
  check_mpi(MPI_Probe(0, kShardTag, world, &status), "MPI_Probe");
  int count = 0;
  check_mpi(MPI_Get_count(&status, type, &count), "MPI_Get_count");
  std::vector<T> packed(static_cast<std::size_t>(count));
  check_mpi(MPI_Recv(packed.data(), count, type, 0, kShardTag, world, MPI_STATUS_IGNORE), "MPI_Recv");
  return packed;
}

// A rank other than 0: its shard from rank 0, rebuilt with logistic_peer's
// weights (the objective rank 0 would build), or null if rank 0 stopped dealing.
// shape: the data's dim and samples.
std::unique_ptr<Objective> receive_shard(MPI_Comm world, int rank, const std::int64_t shape[2]) {
  const std::vector<double> packed = receive_packed<double>(world, MPI_DOUBLE);
  if (packed.empty()) return nullptr;
  Dataset shard = unpack(packed, static_cast<int>(shape[0]));
  const Eigen::Index m = shard.samples();
  return std::make_unique<LogisticObjective>(std::move(shard), Eigen::VectorXd::Constant(m, 1.0 / static_cast<double>(m)),
                                             1.0 / static_cast<double>(shape[1]), static_cast<std::uint64_t>(rank));
}

}  // namespace

std::unique_ptr<LogisticObjective> logistic_peer(const ObjectiveOptions& options, const Dataset& data, int peer,
                                                 int n_peers, std::uint64_t seed) {
  return logistic_peer(data, shard_rows(data, options.split_spec(), peer, n_peers, seed, options.data_path), peer);
}

std::unique_ptr<LogisticObjective> logistic_peer(const Dataset& data, const std::vector<int>& rows, int peer) {
  Dataset shard = select_rows(data, rows);
  const Eigen::Index m = shard.samples();
  Eigen::VectorXd weights = Eigen::VectorXd::Constant(m, 1.0 / static_cast<double>(m));
  return std::make_unique<LogisticObjective>(std::move(shard), std::move(weights), 1.0 / data.samples(),
                                             static_cast<std::uint64_t>(peer));
}

namespace {

// What became of a rank's shard. Every rank learns the worst (MPI_MAX) at one
// collective that all of them reach, and all leave together.
enum ShardOutcome : int { kShardMade = 0, kShardStopped = 1, kShardOutOfMemory = 2 };

void agree_on_shards(MPI_Comm world, int outcome) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &outcome, 1, MPI_INT, MPI_MAX, world), "MPI_Allreduce");
  if (outcome == kShardStopped) throw StopRequested{};
  if (outcome == kShardOutOfMemory) throw std::bad_alloc();
}

// Rank 0 sends ranks 1..n-1 their shards, packed(peer) each, polling `stop`
// between them. Once it is set, or a shard does not fit in memory, the ranks
// still waiting get an empty message (no shard is empty) and the outcome says why.
template <class T, class F>
ShardOutcome send_shards(MPI_Comm world, int n, MPI_Datatype type, const std::atomic<bool>* stop, F&& packed) {
  ShardOutcome outcome = kShardMade;
  for (int peer = 1; peer < n; ++peer) {
    std::vector<T> shard;
    if (outcome == kShardMade && stop != nullptr && stop->load(std::memory_order_relaxed)) outcome = kShardStopped;
    try {
      if (outcome == kShardMade) shard = packed(peer);
    } catch (const std::bad_alloc&) {
      outcome = kShardOutOfMemory;
    }
    check_mpi(MPI_Send(shard.data(), static_cast<int>(shard.size()), type, peer, kShardTag, world), "MPI_Send");
  }
  return outcome;
}

// deal_file for IDX images: the shards travel as bytes (labels, then pixels).
ShardOutcome deal_images(const TrainingOptions& options, MPI_Comm world, int rank, int n, Problem& p,
                         const std::atomic<bool>* stop) {
  const ObjectiveOptions& o = options.objective;
  ImageSet data;
  std::vector<std::vector<int>> rows;
  on_root_or_throw_everywhere(world, rank, [&] { data = read_images(options, n, p, rows, stop); });
  std::int64_t shape[3] = {data.dim(), data.samples(), data.classes};
  check_mpi(MPI_Bcast(shape, 3, MPI_INT64_T, 0, world), "MPI_Bcast");
  const ImageModel model(o, static_cast<int>(shape[0]), static_cast<int>(shape[2]), options.seed);
  if (rank != 0) {
    const std::vector<std::uint8_t> packed = receive_packed<std::uint8_t>(world, MPI_BYTE);
    if (packed.empty()) return kShardStopped;
    ImageSet shard = unpack_images(packed, static_cast<int>(shape[0]), static_cast<int>(shape[2]));
    const Eigen::Index m = shard.samples();
    p.local = model.make(std::move(shard), Eigen::VectorXd::Constant(m, 1.0 / static_cast<double>(m)),
                         softmax_l2(o, shape[1]), static_cast<std::uint64_t>(rank));
    return kShardMade;
  }
  if (const ShardOutcome sent = send_shards<std::uint8_t>(world, n, MPI_BYTE, stop, [&](int peer) {
        return pack_images(select_images(data, rows[static_cast<std::size_t>(peer)]));
      });
      sent != kShardMade)
    return sent;
  p.local = image_peer(model, o, data, rows[0], 0);
  pool_images(options, model, n, std::move(data), p);
  return kShardMade;
}

// Rank 0 reads the --data file and deals the shards; the others wait for theirs.
// Rank 0 keeps the whole set as the pooled problem (and, without --test-data,
// as the test set).
ShardOutcome deal_file(const TrainingOptions& options, MPI_Comm world, int rank, int n, Problem& p,
                       const std::atomic<bool>* stop) {
  Dataset data;
  std::vector<std::vector<int>> rows;
  on_root_or_throw_everywhere(world, rank, [&] { data = read_data(options, n, p, rows, stop); });
  // Every rank needs the dimension and, for the l2 weight 1/m, the total count.
  std::int64_t shape[2] = {rank == 0 ? data.dim() : 0, rank == 0 ? data.samples() : 0};
  check_mpi(MPI_Bcast(shape, 2, MPI_INT64_T, 0, world), "MPI_Bcast");
  if (rank != 0) {
    p.local = receive_shard(world, rank, shape);
    return p.local ? kShardMade : kShardStopped;
  }
  if (const ShardOutcome sent = send_shards<double>(world, n, MPI_DOUBLE, stop, [&](int peer) {
        return pack(select_rows(data, rows[static_cast<std::size_t>(peer)]));
      });
      sent != kShardMade)
    return sent;
  p.local = logistic_peer(data, rows[0], 0);
  pool_data(options, n, std::move(data), p, stop);
  return kShardMade;
}

// x*, f* and f(x_0) of the pooled problem (rank 0's part of build_problem).
void find_reference(const ObjectiveOptions& o, Problem& p, const std::atomic<bool>* stop = nullptr) {
  p.optimum = find_optimum(*p.pooled, kOptimumTolerance, stop);
  p.initial_loss = p.pooled->loss(Eigen::VectorXd::Zero(p.pooled->dim()));
  check_optimum(o, p.optimum, p.initial_loss);
}

}  // namespace

Problem build_problem(const TrainingOptions& options, MPI_Comm world, const std::atomic<bool>* stop) {
  int rank = 0, n = 1;
  check_mpi(MPI_Comm_rank(world, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(world, &n), "MPI_Comm_size");
  require_resolved(options, n, "build_problem");
  const ObjectiveOptions& o = options.objective;
  Problem p;
  const bool images = classifies_images(o.kind), file = o.kind == ObjectiveKind::logistic && !o.data_path.empty();
  const bool generated = !images && !file;
  // Each rank's shard: dealt by rank 0 from a file, or generated where it is
  // needed. A bad file throws the same ConfigError on every rank from inside; a
  // stop, or a shard that does not fit where it is generated or packed, is
  // agreed on below. (A receiving rank that cannot hold the shard it is sent
  // leaves that message unreceived: the estimate refuses such runs first.)
  int outcome = kShardMade;
  try {
    if (images)
      outcome = deal_images(options, world, rank, n, p, stop);
    else if (file)
      outcome = deal_file(options, world, rank, n, p, stop);
    else
      p.local = make_objective(o, rank, n, options.seed, nullptr, stop);
  } catch (const StopRequested&) {
    outcome = kShardStopped;
  } catch (const std::bad_alloc&) {
    outcome = kShardOutOfMemory;
  }
  agree_on_shards(world, outcome);

  check_fragments(options.outer, p.local->dim());  // every rank: the same dimension
  // The optimum on rank 0 (of synthetic data's pooled set, generated there with
  // the held-out set); every rank gets x* (the measurements' reference).
  on_root_or_throw_everywhere(world, rank, [&] {
    if (generated) {
      p.pooled = make_objective(o, pooled, n, options.seed, nullptr, stop);
      generate_test_set(o, options.seed, n, p);
    }
    find_reference(o, p, stop);
  });
  const int d = p.local->dim();
  if (rank != 0) p.optimum.x = Eigen::VectorXd::Zero(d);
  check_mpi(MPI_Bcast(p.optimum.x.data(), d, MPI_DOUBLE, 0, world), "MPI_Bcast");
  return p;
}

namespace {

// Synthetic data's pooled problem is every peer's own, in peer order (what
// make_objective generates for `pooled`): here it is copied from the peers'
// objectives already built rather than drawn a second time.
std::unique_ptr<Objective> pool_peers(const ObjectiveOptions& o, const Problem& p, int n,
                                      const std::atomic<bool>* stop) {
  const auto counter = static_cast<std::uint64_t>(n);  // the pooled problem's counter word, as make_objective's
  if (o.kind == ObjectiveKind::quadratic) {
    Eigen::MatrixXd diagonals(o.dim, n), targets(o.dim, n);
    for (int i = 0; i < n; ++i) {
      if ((i & 1023) == 0) check_stop(stop);
      const auto& q = static_cast<const QuadraticObjective&>(*p.peers[static_cast<std::size_t>(i)]);
      diagonals.col(i) = q.diagonals().col(0);
      targets.col(i) = q.targets().col(0);
    }
    return std::make_unique<QuadraticObjective>(std::move(diagonals), std::move(targets), o.gradient_noise, counter);
  }
  const Eigen::Index m = o.samples_per_peer;
  const double total = static_cast<double>(n) * o.samples_per_peer;
  Dataset all;
  all.features.resize(n * m, o.dim);
  all.labels.resize(n * m);
  for (int i = 0; i < n; ++i) {
    if ((i & 1023) == 0) check_stop(stop);
    const Dataset& shard = static_cast<const LogisticObjective&>(*p.peers[static_cast<std::size_t>(i)]).samples();
    all.features.middleRows(i * m, m) = shard.features;
    all.labels.segment(i * m, m) = shard.labels;
  }
  return std::make_unique<LogisticObjective>(std::move(all), Eigen::VectorXd::Constant(n * m, 1.0 / total), 1.0 / total,
                                             counter);
}

}  // namespace

Problem build_problem_sequential(const TrainingOptions& options, int n, const std::atomic<bool>* stop) {
  require_resolved(options, n, "build_problem_sequential");
  const ObjectiveOptions& o = options.objective;
  Problem p;
  p.peers.reserve(static_cast<std::size_t>(n));
  if (classifies_images(o.kind)) {
    std::vector<std::vector<int>> rows;
    ImageSet data = read_images(options, n, p, rows, stop);
    const ImageModel model(o, data.dim(), data.classes, options.seed);
    for (int i = 0; i < n; ++i) {
      if ((i & 255) == 0) check_stop(stop);
      p.peers.push_back(image_peer(model, o, data, rows[static_cast<std::size_t>(i)], i));
    }
    pool_images(options, model, n, std::move(data), p);
  } else if (o.kind == ObjectiveKind::logistic && !o.data_path.empty()) {
    std::vector<std::vector<int>> rows;
    Dataset data = read_data(options, n, p, rows, stop);
    for (int i = 0; i < n; ++i) {
      if ((i & 255) == 0) check_stop(stop);
      p.peers.push_back(logistic_peer(data, rows[static_cast<std::size_t>(i)], i));
    }
    pool_data(options, n, std::move(data), p, stop);
  } else {
    for (int i = 0; i < n; ++i) {
      if ((i & 255) == 0) check_stop(stop);
      p.peers.push_back(make_objective(o, i, n, options.seed, nullptr, stop));
    }
    p.pooled = pool_peers(o, p, n, stop);
    generate_test_set(o, options.seed, n, p);
  }
  check_fragments(options.outer, p.pooled->dim());
  find_reference(o, p, stop);
  return p;
}

}  // namespace avb
