// The spread of a stage's compute between steps (runtime/calibrate/step_variation.hpp), from
// replayed seconds made up so that the answer is known.
#include <catch2/catch.hpp>
#include <cmath>

#include "runtime/calibrate/step_variation.hpp"

namespace {

using dtwin::rt::ActionSeconds;
using dtwin::sched::ActionKind;

// Seconds of `instances` F and as many B of `stage` over `steps` steps: row base x step speed x
// exp(residual(row, step)), each kind's values step after step as replay_compute lists them.
void add_stage(ActionSeconds& seconds, int stage, int instances, int steps,
               double (*residual)(int row, int step)) {
  int row = 0;
  for (ActionKind kind : {ActionKind::F, ActionKind::B}) {
    std::vector<double>& list = seconds[{stage, kind}];
    list.assign(static_cast<std::size_t>(instances * steps), 0);
    for (int j = 0; j < instances; ++j, ++row)
      for (int s = 0; s < steps; ++s)
        list[static_cast<std::size_t>(s * instances + j)] =
            (1e-3 + 2e-4 * row) * (1 + 0.1 * s) * std::exp(residual(row, s));
  }
}

double none(int, int) {
  return 0;
}
double checkerboard(int row, int step) {
  return (row + step) % 2 ? 0.05 : -0.05;
}

}  // namespace

TEST_CASE("step variation: what varies apart from the action and the step's speed") {
  ActionSeconds seconds;
  add_stage(seconds, 0, 2, 4, none);
  // Each action's own size and the step's shared speed are not variation.
  auto variation = dtwin::rt::step_variation(seconds, 4);
  REQUIRE(variation.size() == 1);
  CHECK(variation.at(0) == Approx(0).margin(1e-9));

  // Stage 1 varies by +-0.05 in log seconds, a pattern orthogonal to rows and steps: its
  // residuals are exactly that, and the unbiased variance over 8 rows x 4 steps is
  // sum e^2 x rows / (stage rows x (rows - 1) x (steps - 1)) = 0.05^2 x 4 x 8 / 21.
  add_stage(seconds, 1, 2, 4, checkerboard);
  seconds[{1, ActionKind::OPTIM}] = {1.0, 9.0, 1.0, 9.0};  // the optimizer step is left out
  variation = dtwin::rt::step_variation(seconds, 4);
  REQUIRE(variation.size() == 2);
  CHECK(variation.at(0) == Approx(0).margin(1e-9));
  CHECK(variation.at(1) == Approx(std::sqrt(std::expm1(0.05 * 0.05 * 4 * 8 / 21))));
  CHECK(variation.at(1) > 0.05);
}

TEST_CASE("step variation: nothing to say from one step, one action or a zero time") {
  ActionSeconds seconds;
  add_stage(seconds, 0, 2, 4, checkerboard);
  CHECK(dtwin::rt::step_variation(seconds, 1).empty());
  CHECK(dtwin::rt::step_variation({{{0, ActionKind::F}, {1e-3, 2e-3}}}, 2).empty());
  seconds[{0, ActionKind::F}][3] = 0;
  CHECK(dtwin::rt::step_variation(seconds, 4).empty());
  // A list that does not split into the steps.
  CHECK(dtwin::rt::step_variation(
            {{{0, ActionKind::F}, {1e-3, 2e-3, 3e-3}}, {{0, ActionKind::B}, {1e-3, 2e-3, 3e-3}}}, 2)
            .empty());
}

TEST_CASE("within-group log squares: deviations from each group's mean, pooled") {
  using dtwin::rt::within_group_log_squares;
  // Group 0: e^-0.1 and e^0.1 around their mean; group 1 alike at 0.2; group 2 one value.
  const auto squares = within_group_log_squares({{0, {std::exp(-0.1), std::exp(0.1)}},
                                                 {1, {2 * std::exp(-0.2), 2 * std::exp(0.2), 2.0}},
                                                 {2, {5.0}}});
  CHECK(squares.df == 1 + 2);
  CHECK(squares.sum == Approx(2 * 0.01 + 2 * 0.04));
  CHECK(dtwin::rt::lognormal_variation(squares.sum / squares.df) ==
        Approx(std::sqrt(std::expm1(0.1 / 3))));
  CHECK(within_group_log_squares({{0, {1.0}}}).df == 0);
  CHECK(dtwin::rt::lognormal_variation(0) == 0);
}
