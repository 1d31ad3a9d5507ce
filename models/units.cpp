#include "models/units.hpp"

#include <charconv>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "schedules/user_error.hpp"

namespace dtwin {
namespace {

using UnitTable = std::vector<std::pair<std::string_view, double>>;

constexpr double kKi = 1024.0;

const UnitTable& units_of(Quantity kind) {
  static const UnitTable bandwidth = {
      {"B/s", 1},
      {"KB/s", 1e3},
      {"MB/s", 1e6},
      {"GB/s", 1e9},
      {"TB/s", 1e12},
      {"KiB/s", kKi},
      {"MiB/s", kKi * kKi},
      {"GiB/s", kKi * kKi * kKi},
      {"TiB/s", kKi * kKi * kKi * kKi},
      {"Kb/s", 1e3 / 8},
      {"Mb/s", 1e6 / 8},
      {"Gb/s", 1e9 / 8},
      {"Tb/s", 1e12 / 8},
      {"Kbps", 1e3 / 8},
      {"Mbps", 1e6 / 8},
      {"Gbps", 1e9 / 8},
      {"Tbps", 1e12 / 8},
  };
  static const UnitTable latency = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  static const UnitTable bytes = {
      {"B", 1},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"KiB", kKi},
      {"MiB", kKi * kKi},
      {"GiB", kKi * kKi * kKi},
      {"TiB", kKi * kKi * kKi * kKi},
  };
  static const UnitTable flop_rate = {
      {"FLOP/s", 1}, {"MFLOP/s", 1e6}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15},
  };
  static const UnitTable none = {};
  switch (kind) {
    case Quantity::Bandwidth:
      return bandwidth;
    case Quantity::Latency:
      return latency;
    case Quantity::Bytes:
      return bytes;
    case Quantity::FlopRate:
      return flop_rate;
    case Quantity::Count:
      break;
  }
  return none;
}

}  // namespace

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string quantity_description(Quantity kind) {
  switch (kind) {
    case Quantity::Bandwidth:
      return "a bandwidth such as 25GB/s or 200Gb/s";
    case Quantity::Latency:
      return "a latency such as 20us or 1.5ms";
    case Quantity::Bytes:
      return "a size such as 24GiB or 512MB";
    case Quantity::FlopRate:
      return "a FLOP rate such as 100GFLOP/s or 1e12";
    case Quantity::Count:
      break;
  }
  return "a number such as 3 or 1e-3";
}

double parse_quantity(const std::string& text, Quantity kind) {
  const auto fail = [kind]() { return UserError("expected " + quantity_description(kind)); };
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);  // from_chars rejects a leading '+'
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || !std::isfinite(value)) throw fail();
  const std::string_view unit = trim(s.substr(static_cast<std::size_t>(end - s.data())));
  if (unit.empty()) return value;
  for (const auto& [name, scale] : units_of(kind)) {
    if (unit == name) return value * scale;
  }
  throw fail();
}

}  // namespace dtwin
