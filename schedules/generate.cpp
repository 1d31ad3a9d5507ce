#include <array>
#include <stdexcept>
#include <string>

#include "schedules/generators.hpp"

namespace dtwin::sched {
namespace {

using Build = std::vector<ActionList> (*)(const Layout&, const PassTimes&);

/// A generator that does not depend on pass times.
template <std::vector<ActionList> (*build)(const Layout&)>
std::vector<ActionList> untimed(const Layout& layout, const PassTimes&) {
  return build(layout);
}

struct Generator {
  ScheduleKind kind;
  Build build;
  Requirements requirements;
};

constexpr std::array<Generator, 8> kGenerators{{
    {ScheduleKind::GPipe, untimed<gpipe>, {}},
    {ScheduleKind::OneFOneB, untimed<one_f_one_b>, {}},
    {ScheduleKind::Interleaved1F1B,
     untimed<interleaved_1f1b>,
     {.virtual_stages = 0, .microbatches_pp_multiple = true}},
    {ScheduleKind::ZbH1, untimed<zb_h1>, {}},
    {ScheduleKind::Zb1p, zb_1p, {}},
    {ScheduleKind::Zb2p, zb_2p, {}},
    {ScheduleKind::ZbV, untimed<zb_v>, {.virtual_stages = 2, .placement = StagePlacement::VShape}},
    {ScheduleKind::DualPipeV,
     untimed<dualpipe_v>,
     {.virtual_stages = 2, .min_microbatches_per_pp = 2, .placement = StagePlacement::VShape}},
}};

const Generator& generator_of(ScheduleKind kind) {
  for (const Generator& generator : kGenerators)
    if (generator.kind == kind) return generator;
  throw std::logic_error("generate: no generator for schedule kind " +
                         std::string(kScheduleKindNames.name(kind)));
}

void check_layout(ScheduleKind kind, const Layout& layout) {
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument(std::string(kScheduleKindNames.name(kind)) + ": " + what);
  };
  if (layout.dp < 1 || layout.pp < 1 || layout.microbatches < 1 || layout.virtual_stages < 1)
    fail("dp, pp, microbatches and virtual_stages must be positive");
  const Requirements needs = requirements(kind);
  if (needs.virtual_stages != 0 && layout.virtual_stages != needs.virtual_stages)
    fail("virtual_stages must be " + std::to_string(needs.virtual_stages) + ", got " +
         std::to_string(layout.virtual_stages));
  const std::string m = "microbatches (" + std::to_string(layout.microbatches) + ")";
  if (needs.microbatches_pp_multiple && layout.microbatches % layout.pp != 0)
    fail(m + " must be a multiple of pp (" + std::to_string(layout.pp) + ")");
  if (layout.microbatches < needs.min_microbatches_per_pp * layout.pp)
    fail(m + " must be at least " + std::to_string(needs.min_microbatches_per_pp) + " * pp (" +
         std::to_string(layout.pp) + ")");
}

}  // namespace

Requirements requirements(ScheduleKind kind) {
  return generator_of(kind).requirements;
}

Schedule generate(ScheduleKind kind, const Layout& layout, const PassTimes& times) {
  check_layout(kind, layout);
  Layout placed = layout;
  placed.placement = requirements(kind).placement;
  return replicate_pipeline(std::string(kScheduleKindNames.name(kind)), placed,
                            generator_of(kind).build(placed, times));
}

}  // namespace dtwin::sched
