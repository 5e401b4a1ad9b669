#include "common/training_flags.hpp"

#include <string>

#include <CLI/CLI.hpp>

#include "core/error.hpp"

namespace avb::app {

constexpr long long kMaxInt = (1LL << 31) - 1;

namespace {

void define_problem_flags(TypedOptions& add, TrainingCli& cli) {
  ObjectiveOptions& f = cli.options.objective;
  add.group("Problem");
  add.word("--objective", f.kind, kObjectiveKindNames,
           "quadratic, logistic (L2-regularised logistic regression), softmax (multinomial logistic regression "
           "on IDX images, --data) or mlp (a perceptron with one hidden layer of --hidden ReLU units on them)");
  add.integer("--dim", f.dim, 1, 1 << 24, "quadratic, synthetic logistic: model dimension, an integer >= 1");
  add.word("--preset", f.preset, kQuadraticPresetNames,
           "quadratic: epfl (A_i = (i/sqrt N) I, b_i ~ N(0, zeta^2/i^2 I)) or conditioned (one diagonal A for all, "
           "condition number --condition)");
  add.real("--condition", f.condition, "a number >= 1",
           "quadratic, preset conditioned: condition number of the Hessian, >= 1");
  add.real("--zeta", f.heterogeneity, "a number >= 0", "quadratic: heterogeneity, the scale of the b_i, >= 0");
  add.real("--sigma", f.gradient_noise, "a number >= 0",
           "quadratic: gradient noise N(0, sigma^2/(d B) I) per step, >= 0");
  add.text("--data", f.data_path, "FILE",
           "logistic: LIBSVM file (such as a9a or w8a); without it, synthetic Gaussian classes. softmax: IDX images "
           "file, gzipped or not (labels: the name with labels-idx1 for images-idx3), as for mlp");
  add.integer("--data-limit", f.data_limit, 0, kMaxInt,
              "--data: train on the first M samples of the file, an integer >= 0 (0: all)");
  add.real("--l2", f.l2, "a number >= 0",
           "softmax, mlp: L2 weight lambda of (lambda/2)||x||^2 (the MLP's: of its weights theta), >= 0; 0 "
           "(default): 1/m, m the training samples");
  add.integer("--hidden", f.hidden, 1, kMaxHidden,
              "mlp: units of the hidden layer, an integer in [1, 65536]");
  add.integer("--data-dim", f.data_dim, 0, 1 << 24,
              "logistic with --data: feature count, 0 = the largest index in the file");
  add.word("--split", f.split, kDataSplitNames,
           "--data: shards random, label-sorted (heterogeneous) or dirichlet (each class dealt by shares drawn from "
           "Dir(--dirichlet-alpha))");
  add.real("--dirichlet-alpha", f.dirichlet_alpha, "a number > 0",
           "--split dirichlet: the concentration alpha > 0 of each class's shares over the peers; small: few "
           "classes a peer, large: near iid");
  add.text("--test-data", cli.options.test_data, "FILE",
           "--data: a file of the same kind for the accuracy column (default: the training set)");
  add.integer("--samples-per-peer", f.samples_per_peer, 1, 1 << 24,
              "synthetic logistic: samples per peer, an integer >= 1");
  add.real("--separation", f.separation, "a number >= 0",
           "synthetic logistic: class means at +-separation along one direction, >= 0");
  add.real("--label-skew", f.label_skew, "a number in [0, 1]",
           "synthetic logistic: in [0, 1]; share (1 + s)/2 of a peer's samples has its majority label");
}

void define_schedule_flags(TypedOptions& add, TrainingCli& cli) {
  add.group("Schedule");
  add.integer("--steps", cli.options.steps, 0, kMaxInt, "SGD steps per trial, an integer >= 0");
  add.integer("--local-steps", cli.options.local_steps, 1, kMaxInt,
              "SGD steps between averaging rounds (H), an integer >= 1");
  add.word("--local-steps-dist", cli.options.local_steps_dist, kLocalStepsDistNames,
           "fixed (H steps) or geometric (mean H, drawn per peer and round; --protocol swarm only)");
  add.real("--step-flops", cli.options.step_flops, "a number >= 0",
           "simulated cost of one local step in flops, >= 0: charged at the host's speed under SMPI, ignored on real "
           "MPI");
  add.integer("--batch", cli.options.batch, 1, 1 << 24, "minibatch per peer and step, an integer >= 1");
  add.real("--lr", cli.options.lr.lr, "a number > 0", "learning rate at step 0, > 0");
  add.word("--lr-schedule", cli.options.lr.schedule, kLrScheduleNames,
           "constant, inverse (lr T/(t + T)) or step (lr factor^floor(t/T)), T = --lr-decay-steps");
  add.integer("--lr-decay-steps", cli.options.lr.decay_steps, 1, kMaxInt, "inverse, step: T, an integer >= 1");
  add.real("--lr-decay-factor", cli.options.lr.decay_factor, "a number in (0, 1]", "step: factor in (0, 1]");
  add.real("--momentum", cli.options.momentum, "a number in [0, 1)", "heavy-ball momentum in [0, 1), kept per peer");
  add.flag("--gradient-tracking", cli.options.gradient_tracking,
           "gradient tracking (DSGT): step along a tracker of the mean gradient, mixed with the model each round "
           "(--local-steps 1, --momentum 0; allreduce or gossip with a doubly stochastic W)");
  add.word("--outer-optimizer", cli.options.outer.kind, kOuterOptimizerNames,
           "DiLoCo's outer loop: rounds mix the pseudo-gradients (start - x) of H >= 2 local steps, then each peer "
           "steps from its start with sgd (heavy ball) or nesterov; none: rounds mix the models (local SGD)");
  add.real("--outer-lr", cli.options.outer.lr, "a number > 0", "--outer-optimizer: the outer learning rate, > 0");
  add.real("--outer-momentum", cli.options.outer.momentum, "a number in [0, 1)",
           "--outer-optimizer: the outer momentum in [0, 1)");
  add.word("--outer-mix", cli.options.outer.mix, kOuterMixNames,
           "--outer-optimizer: what a round mixes: models (keeps the anchors together on graphs and after failures) "
           "or pseudo-gradients (start - x, DiLoCo's message: a --quantizer then compresses the pseudo-gradient)");
  add.integer("--fragments", cli.options.outer.fragments, 1, 1 << 24,
              "--outer-optimizer: Streaming DiLoCo's F fragments, an integer >= 1: round r mixes and steps only "
              "fragment (r - 1) mod F of F contiguous parts of the model");
  add.integer("--eval-every", cli.options.eval_every, 1, kMaxInt,
              "measure every this many steps (and after the last), an integer >= 1");
  add_run_flags(add, cli.options, cli.output,
                {"independent trials (own minibatches and failures), an integer >= 1",
                 "relative gap target (f(x) - f*)/(f(x0) - f*) > 0 (repeatable); steps to each are reported"});
}

// Like a protocol's flags, an objective's or schedule's flags are refused where
// they do not apply, unless left at their default.
void refuse_foreign_problem_flags(const TrainingCli& cli, const TrainingOptions& o) {
  const bool quadratic = o.objective.kind == ObjectiveKind::quadratic;
  const bool images = classifies_images(o.objective.kind);
  const bool file = !quadratic && !o.objective.data_path.empty();
  const bool synthetic = !quadratic && !file && !images;
  struct Rule {
    const char* flag;
    bool applies;
    const char* where;
  };
  const Rule rules[] = {
      {"--dim", !file && !images, "--objective quadratic or synthetic logistic (a --data file has its own)"},
      {"--preset", quadratic, "--objective quadratic"},
      {"--condition", quadratic && o.objective.preset == QuadraticPreset::conditioned, "--preset conditioned"},
      {"--zeta", quadratic, "--objective quadratic"},
      {"--sigma", quadratic, "--objective quadratic"},
      {"--data", !quadratic, "--objective logistic"},
      {"--data-dim", file && !images, "--objective logistic with --data"},
      {"--split", file, "--objective logistic, softmax or mlp with --data"},
      {"--data-limit", file, "--objective logistic, softmax or mlp with --data"},
      {"--l2", images, "--objective softmax or mlp"},
      {"--dirichlet-alpha", file && o.objective.split == DataSplit::dirichlet, "--split dirichlet with --data"},
      {"--hidden", o.objective.kind == ObjectiveKind::mlp, "--objective mlp"},
      {"--samples-per-peer", synthetic, "synthetic logistic data (no --data)"},
      {"--separation", synthetic, "synthetic logistic data (no --data)"},
      {"--label-skew", synthetic, "synthetic logistic data (no --data)"},
      {"--lr-decay-steps", o.lr.schedule != LrSchedule::constant, "--lr-schedule inverse or step"},
      {"--lr-decay-factor", o.lr.schedule == LrSchedule::step, "--lr-schedule step"},
      {"--outer-lr", o.outer.kind != OuterOptimizer::none, "--outer-optimizer sgd or nesterov"},
      {"--outer-momentum", o.outer.kind != OuterOptimizer::none, "--outer-optimizer sgd or nesterov"},
      {"--fragments", o.outer.kind != OuterOptimizer::none, "--outer-optimizer sgd or nesterov"},
      {"--outer-mix", o.outer.kind != OuterOptimizer::none, "--outer-optimizer sgd or nesterov"},
  };
  for (const Rule& r : rules)
    if (cli.changed.count(r.flag) && !r.applies)
      throw ConfigError(std::string(r.flag) + ": applies only to " + r.where);
}

}  // namespace

void define_training_flags(CLI::App& app, TrainingCli& cli) {
  app.set_config("--config", "", "read options from a TOML/INI file (flag = value per line)");
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.allow_extras();
  add_protocol_flags(app, cli.protocol, cli.options);
  TypedOptions add(app, cli.changed, cli.protocol.declared);
  define_problem_flags(add, cli);
  define_schedule_flags(add, cli);
  add_engine_flags(add, cli.engine);
}

ChangedFlags changed_flags(const TrainingCli& cli) {
  ChangedFlags all = cli.changed;
  all.insert(cli.protocol.changed.begin(), cli.protocol.changed.end());
  return all;
}

TrainingOptions training_options(const TrainingCli& cli, int n_peers) {
  TrainingOptions o = cli.options;
  read_availability(cli.protocol, o);
  if (cli.protocol.changed.count("--clock"))
    throw ConfigError("--clock: applies to averaging_bench only (in sgd_bench a swarm peer initiates after its "
                           "local steps: --local-steps, --local-steps-dist)");
  o = resolve(o, n_peers);
  refuse_foreign_flags(cli.protocol, o.protocol.name);
  refuse_foreign_problem_flags(cli, o);
  return o;
}

}  // namespace avb::app
