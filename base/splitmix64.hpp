// SplitMix64, the 64-bit mixer that seeds dtwin's random streams (parameter initialisation and
// the batch order) from the scenario's seed.
#pragma once

#include <cstdint>

namespace dtwin {

/// One SplitMix64 step (Steele, Lea & Flood 2014, "Fast splittable pseudorandom number
/// generators"; the constants of Vigna's reference code): a bijective mix of `x` whose output
/// bits each depend on every input bit. Pure, so equal inputs give equal seeds on every rank.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace dtwin
