#include <array>
#include <stdexcept>
#include <string>

#include "schedules/generators.hpp"

namespace dtwin::sched {
namespace {

struct Generator {
  std::string_view name;
  std::vector<ActionList> (*build)(const Layout&);
  bool interleaved;  ///< accepts virtual_stages > 1 and needs m to be a multiple of pp
};

constexpr std::array<Generator, 4> kGenerators{{
    {"gpipe", gpipe, false},
    {"1f1b", one_f_one_b, false},
    {"interleaved-1f1b", interleaved_1f1b, true},
    {"zb-h1", zb_h1, false},
}};

void check_layout(const Generator& generator, const Layout& layout) {
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument(std::string(generator.name) + ": " + what);
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

const std::vector<std::string>& generator_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const Generator& g : kGenerators) list.emplace_back(g.name);
    return list;
  }();
  return names;
}

Schedule generate(std::string_view name, const Layout& layout) {
  for (const Generator& generator : kGenerators) {
    if (generator.name != name) continue;
    check_layout(generator, layout);
    return replicate_pipeline(std::string(name), layout, generator.build(layout));
  }
  throw std::invalid_argument("unknown schedule '" + std::string(name) + "'");
}

}  // namespace dtwin::sched
