// Work split over threads by contiguous blocks of an index range.
#pragma once

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

namespace avb {

// Runs work(first, last, block) on `blocks` contiguous parts [b n / B, (b + 1) n / B)
// of [0, n): part 0 on the calling thread, the others on threads of their own.
// Once every part has ended, the first exception a part threw (by part) is
// rethrown. The caller keeps its results independent of `blocks` by making each
// index's work independent of the others'.
template <class Work>
void for_blocks(int n, int blocks, Work&& work) {
  blocks = std::clamp(blocks, 1, std::max(n, 1));
  if (blocks == 1) {
    work(0, n, 0);
    return;
  }
  auto bound = [&](int b) { return static_cast<int>(static_cast<long long>(b) * n / blocks); };
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(blocks));
  auto run = [&](int b) {
    try {
      work(bound(b), bound(b + 1), b);
    } catch (...) {
      failures[static_cast<std::size_t>(b)] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> others;
    for (int b = 1; b < blocks; ++b) others.emplace_back(run, b);
    run(0);
  }  // joins the others
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

}  // namespace avb
