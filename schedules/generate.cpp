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
  bool interleaved;  ///< accepts virtual_stages > 1 and needs m to be a multiple of pp
};

constexpr std::array<Generator, 6> kGenerators{{
    {ScheduleKind::GPipe, untimed<gpipe>, false},
    {ScheduleKind::OneFOneB, untimed<one_f_one_b>, false},
    {ScheduleKind::Interleaved1F1B, untimed<interleaved_1f1b>, true},
    {ScheduleKind::ZbH1, untimed<zb_h1>, false},
    {ScheduleKind::Zb1p, zb_1p, false},
    {ScheduleKind::Zb2p, zb_2p, false},
}};

void check_layout(const Generator& generator, const Layout& layout) {
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument(std::string(kScheduleKindNames.name(generator.kind)) + ": " + what);
  };
  if (layout.dp < 1 || layout.pp < 1 || layout.microbatches < 1 || layout.virtual_stages < 1)
    fail("dp, pp, microbatches and virtual_stages must be positive");
  if (!generator.interleaved && layout.virtual_stages != 1)
    fail("virtual_stages must be 1, got " + std::to_string(layout.virtual_stages));
  if (generator.interleaved && layout.microbatches % layout.pp != 0)
    fail("microbatches (" + std::to_string(layout.microbatches) + ") must be a multiple of pp (" +
         std::to_string(layout.pp) + ")");
}

}  // namespace

Schedule generate(ScheduleKind kind, const Layout& layout, const PassTimes& times) {
  for (const Generator& generator : kGenerators) {
    if (generator.kind != kind) continue;
    check_layout(generator, layout);
    return replicate_pipeline(std::string(kScheduleKindNames.name(kind)), layout,
                              generator.build(layout, times));
  }
  throw std::logic_error("generate: no generator for schedule kind " +
                         std::string(kScheduleKindNames.name(kind)));
}

}  // namespace dtwin::sched
