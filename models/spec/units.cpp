#include "models/spec/units.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "base/user_error.hpp"

namespace dtwin {
namespace {

using UnitTable = std::vector<std::pair<std::string, double>>;

constexpr double kKi = 1024.0;
const UnitTable kDecimal = {{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}};
const UnitTable kBinary = {
    {"Ki", kKi}, {"Mi", kKi* kKi}, {"Gi", kKi* kKi* kKi}, {"Ti", kKi* kKi* kKi* kKi}};

// `unit` ("B" or "B/s") with no prefix, the decimal prefixes K, M, G, T and the binary ones Ki,
// Mi, Gi, Ti (IEC 80000-13).
UnitTable bytes_scaled(const std::string& unit) {
  UnitTable table = {{unit, 1}};
  for (const UnitTable* prefixes : {&kDecimal, &kBinary})
    for (const auto& [prefix, factor] : *prefixes) table.push_back({prefix + unit, factor});
  return table;
}

const UnitTable& units_of(Quantity kind) {
  static const UnitTable bandwidth = [] {
    UnitTable table = bytes_scaled("B/s");
    for (const auto& [prefix, factor] : kDecimal) {  // bits per second, two spellings
      table.push_back({prefix + "b/s", factor / 8});
      table.push_back({prefix + "bps", factor / 8});
    }
    return table;
  }();
  static const UnitTable latency = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  static const UnitTable bytes = bytes_scaled("B");
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

std::string quantity_bound(Quantity kind, bool positive) {
  std::string noun = quantity_description(kind);
  noun = noun.substr(0, noun.find(" such as"));
  return noun + (positive ? " > 0" : " >= 0");
}

std::vector<std::string> unit_names(Quantity kind) {
  std::vector<std::string> names;
  for (const auto& unit : units_of(kind)) names.push_back(unit.first);
  return names;
}

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

PlainRange plausible_plain_range(Quantity kind) {
  switch (kind) {
    case Quantity::Bandwidth:
      return {1e6, 0};
    case Quantity::Latency:
      return {0, 1};
    case Quantity::FlopRate:
      return {1e9, 0};
    case Quantity::Bytes:
      return {1e6, 0};
    case Quantity::Count:
      return {};
  }
  return {};
}

PlainRange physical_range(Quantity kind) {
  switch (kind) {
    case Quantity::Bandwidth:
      return {1e3, 1e15};
    case Quantity::Latency:
      return {0, 10};
    case Quantity::FlopRate:
      return {1e6, 1e18};
    case Quantity::Bytes:
      return {0, 1e15};
    case Quantity::Count:
      return {};
  }
  return {};
}

std::string physical_bound(Quantity kind) {
  switch (kind) {
    case Quantity::Bandwidth:
      return "a bandwidth from 1kB/s to 1PB/s (what any real link has)";
    case Quantity::Latency:
      return "a latency of at most 10s (what any real link has)";
    case Quantity::FlopRate:
      return "a FLOP rate from 1MFLOP/s to 1EFLOP/s (what any real device has)";
    case Quantity::Bytes:
      return "a size of at most 1PB (what any real device has)";
    case Quantity::Count:
      break;
  }
  return "";
}

std::string implausible_without_unit(const std::string& text, Quantity kind) {
  const std::string_view number = trim(text);
  if (number.empty() || std::isalpha(static_cast<unsigned char>(number.back()))) return "";
  const double value = parse_quantity(text, kind);
  const PlainRange range = plausible_plain_range(kind);
  if (value >= range.min && (range.max == 0 || value <= range.max)) return "";
  if (kind == Quantity::Bytes && value == 0) return "";
  const std::string plain(number);
  const auto message = [&](const char* what, const char* examples, const char* base,
                           const char* bound) {
    return fmt::format("{} with its unit, such as {} (a plain {} is {} {}, {}: implausible)", what,
                       fmt::format(fmt::runtime(examples), plain), plain, plain, base, bound);
  };
  switch (kind) {
    case Quantity::Bandwidth:
      return message("a bandwidth", "{0}GB/s or {0}Gb/s", "bytes/s", "under 1 MB/s");
    case Quantity::Latency:
      return message("a latency", "{0}us or {0}ms", "seconds", "over 1 s");
    case Quantity::FlopRate:
      return message("a FLOP rate", "{0}TFLOP/s", "FLOP/s", "under 1 GFLOP/s");
    case Quantity::Bytes:
      return message("a size", "{0}GiB or {0}GB", "bytes", "under 1 MB");
    case Quantity::Count:
      return "";
  }
  return "";
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
