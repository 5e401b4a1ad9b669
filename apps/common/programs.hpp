// The two programs' bodies: averaging_bench and sgd_bench run them under
// run_with_mpi(); avbench._engine (apps/python_engine.cpp) runs them in-process,
// on the sequential engine, under a Host (common/host.hpp). Each returns the
// program's exit code.
#pragma once

namespace avb::app {

int averaging_program(int argc, char** argv);
int training_program(int argc, char** argv);

}  // namespace avb::app
