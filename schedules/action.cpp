#include "schedules/action.hpp"

#include <array>
#include <charconv>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

namespace dtwin::sched {
namespace {

// Longest names first so that parsing never takes a prefix ("SEND_F" before "F").
constexpr std::array<std::pair<std::string_view, ActionKind>, 13> kNames{{
    {"REDUCE_GRAD", ActionKind::REDUCE_GRAD},
    {"ALLREDUCE", ActionKind::ALLREDUCE},
    {"UNSHARD", ActionKind::UNSHARD},
    {"RESHARD", ActionKind::RESHARD},
    {"SEND_F", ActionKind::SEND_F},
    {"RECV_F", ActionKind::RECV_F},
    {"SEND_B", ActionKind::SEND_B},
    {"RECV_B", ActionKind::RECV_B},
    {"OPTIM", ActionKind::OPTIM},
    {"F", ActionKind::F},
    {"B", ActionKind::B},
    {"I", ActionKind::I},
    {"W", ActionKind::W},
}};

// Reads a non-negative decimal integer filling `text` exactly.
std::optional<int> parse_index(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::string_view kind_name(ActionKind kind) {
  for (const auto& [name, k] : kNames)
    if (k == kind) return name;
  return "?";
}

bool is_compute(ActionKind kind) {
  return kind == ActionKind::F || kind == ActionKind::B || kind == ActionKind::I ||
         kind == ActionKind::W;
}

double of_kind(ActionKind kind, double f, double b, double i, double w, double optimizer) {
  if (kind == ActionKind::OPTIM) return optimizer;
  const double figures[] = {f, b, i, w};  // ActionKind's order
  const auto index = static_cast<size_t>(kind);
  if (index >= std::size(figures))
    throw std::logic_error(std::string(kind_name(kind)) + " is not a compute action");
  return figures[index];
}

bool is_backward(ActionKind kind) {
  return kind == ActionKind::B || kind == ActionKind::I || kind == ActionKind::W;
}

bool is_send(ActionKind kind) {
  return kind == ActionKind::SEND_F || kind == ActionKind::SEND_B;
}

bool is_receive(ActionKind kind) {
  return kind == ActionKind::RECV_F || kind == ActionKind::RECV_B;
}

bool is_p2p(ActionKind kind) {
  return is_send(kind) || is_receive(kind);
}

bool is_collective(ActionKind kind) {
  return kind == ActionKind::ALLREDUCE || kind == ActionKind::UNSHARD ||
         kind == ActionKind::REDUCE_GRAD;
}

bool is_sharding(ActionKind kind) {
  return kind == ActionKind::UNSHARD || kind == ActionKind::RESHARD ||
         kind == ActionKind::REDUCE_GRAD;
}

bool has_microbatch(ActionKind kind) {
  return !is_collective(kind) && kind != ActionKind::RESHARD && kind != ActionKind::OPTIM;
}

std::string to_string(const Action& action) {
  std::string text = std::to_string(action.stage);
  text += kind_name(action.kind);
  if (has_microbatch(action.kind)) text += std::to_string(action.microbatch);
  return text;
}

std::optional<Action> parse_action(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  auto stage = parse_index(text.substr(0, digits));
  if (!stage) return std::nullopt;
  std::string_view rest = text.substr(digits);
  for (const auto& [name, kind] : kNames) {
    if (!rest.starts_with(name)) continue;
    std::string_view tail = rest.substr(name.size());
    if (!has_microbatch(kind)) {
      if (!tail.empty()) return std::nullopt;
      return Action{*stage, kind, kNoMicrobatch};
    }
    auto microbatch = parse_index(tail);
    if (!microbatch) return std::nullopt;
    return Action{*stage, kind, *microbatch};
  }
  return std::nullopt;
}

}  // namespace dtwin::sched
