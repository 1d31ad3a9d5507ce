// One table of names per enum: the single place that spells an enum's values, read when parsing
// input and when printing (messages, JSON, reports, lists of accepted names).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dtwin {

/// The names of the N values of the enum E, in the order messages list them.
template <typename E, std::size_t N>
class NameTable {
 public:
  using Entry = std::pair<std::string_view, E>;

  constexpr explicit NameTable(std::array<Entry, N> entries) : entries_(entries) {}

  /// The name of `value`. Throws std::logic_error for a value outside the table (a bug).
  std::string_view name(E value) const {
    for (const auto& [n, v] : entries_)
      if (v == value) return n;
    throw std::logic_error("NameTable: value " + std::to_string(static_cast<long long>(value)) +
                           " has no name");
  }
  /// The value called `name`, or nullopt for a name outside the table.
  std::optional<E> parse(std::string_view name) const {
    for (const auto& [n, v] : entries_)
      if (n == name) return v;
    return std::nullopt;
  }
  /// Every name, in table order.
  std::vector<std::string> names() const {
    std::vector<std::string> list;
    for (const auto& entry : entries_) list.emplace_back(entry.first);
    return list;
  }
  /// Every (name, value) pair, in table order.
  const std::array<Entry, N>& entries() const { return entries_; }

 private:
  std::array<Entry, N> entries_;
};

}  // namespace dtwin
