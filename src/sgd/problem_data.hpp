// Where a problem's data comes from, for build_problem (MPI: rank 0 reads and
// pools) and build_problem_sequential (every peer in one process): a --data
// file's rows read and split among the peers, its pooled set, and the test set
// accuracy is measured on.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "sgd/image_objective.hpp"
#include "sgd/problem.hpp"

namespace avb {

// Reads the --data file (and --test-data) and splits it: `rows`, each peer's.
// Without --test-data, accuracy is measured on the training set. `stop` is polled
// as the files are read (StopRequested).
Dataset read_data(const TrainingOptions& options, int n, Problem& p, std::vector<std::vector<int>>& rows,
                  const std::atomic<bool>* stop);
// The pooled problem of a --data file; without a test file, `data` becomes the test set.
void pool_data(const TrainingOptions& options, int n, Dataset&& data, Problem& p, const std::atomic<bool>* stop);
// --data's images (and --test-data's), as read_data.
ImageSet read_images(const TrainingOptions& options, int n, Problem& p, std::vector<std::vector<int>>& rows,
                     const std::atomic<bool>* stop);
void pool_images(const TrainingOptions& options, const ImageModel& model, int n, ImageSet&& data, Problem& p);
// Synthetic logistic data's held-out set.
void generate_test_set(const ObjectiveOptions& o, std::uint64_t seed, int n, Problem& p);

}  // namespace avb
