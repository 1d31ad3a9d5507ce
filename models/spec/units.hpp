// Quantities with units as written in scenario files: "25GB/s", "200Gb/s", "20us", "24GiB",
// "100GFLOP/s". A plain number is in base SI units.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtwin {

/// The kind of quantity a text is expected to hold; it decides which units are accepted.
enum class Quantity {
  Bandwidth,  ///< bytes/s: B/s KB/s MB/s GB/s TB/s, KiB/s MiB/s GiB/s TiB/s, Kb/s Mb/s Gb/s Tb/s,
              ///< Kbps Mbps Gbps Tbps
  Latency,    ///< seconds: s ms us ns
  Bytes,      ///< bytes: B KB MB GB TB (powers of 1000), KiB MiB GiB TiB (powers of 1024)
  FlopRate,   ///< FLOP/s: FLOP/s MFLOP/s GFLOP/s TFLOP/s PFLOP/s
  Count,      ///< a plain number, no unit
};

/// Parses `text` (a number, optionally followed by a space and a unit of `kind`) into base units:
/// bytes/s, seconds, bytes or FLOP/s. A plain number ("1e9", "300") is already in base units.
/// Bits are 1/8 byte ("200Gb/s" = "200Gbps" = 25e9 bytes/s). Units are case-sensitive.
/// Throws UserError("expected ...") for an empty text, an unknown unit, trailing
/// garbage, or a value that is not finite. The sign is not checked: callers check ranges.
double parse_quantity(const std::string& text, Quantity kind);

/// The plain numbers (no unit, so base units) plausible for a scenario key of `kind`: at least
/// `min` and at most `max`. A bandwidth from 1 MB/s, a latency up to 1 s, a FLOP rate from
/// 1 GFLOP/s, a size of 0 (a key's "default") or from 1 MB; any count.
struct PlainRange {
  double min = 0;
  double max = 0;  ///< 0: no upper bound
};
PlainRange plausible_plain_range(Quantity kind);

/// The values of `kind` that any hardware could have, in base units, however they are written: a
/// bandwidth from 1 kB/s to 1 PB/s, a latency up to 10 s, a FLOP rate from 1 MFLOP/s to
/// 1 EFLOP/s, a size up to 1 PB; any count. Beyond them a figure is a typo, and the simulator's
/// arithmetic breaks (SimGrid aborts on a host of 1e300 FLOP/s).
PlainRange physical_range(Quantity kind);

/// What physical_range(kind) admits, as messages say it after "expected", e.g. "a bandwidth from
/// 1kB/s to 1PB/s (what any real link has)".
std::string physical_bound(Quantity kind);

/// "" unless `text` is a plain number (no unit) outside plausible_plain_range(kind) (a size of 0
/// excepted). Then what the text should be, as messages say it after "expected",
/// e.g. "a bandwidth with its unit, such as 300GB/s or 300Gb/s (a plain 300 is 300 bytes/s, under
/// 1 MB/s: implausible)".
std::string implausible_without_unit(const std::string& text, Quantity kind);

/// The bound on a quantity as messages say it: "a FLOP rate > 0" (`positive`) or "... >= 0".
std::string quantity_bound(Quantity kind, bool positive);

/// The unit suffixes parse_quantity accepts for `kind` (none for Count), e.g. "GB/s", "Gbps".
std::vector<std::string> unit_names(Quantity kind);

/// `s` without its leading and trailing spaces and tabs (a view into `s`).
std::string_view trim(std::string_view s);

/// What a valid text of `kind` looks like, e.g. "a bandwidth such as 25GB/s or 200Gb/s".
std::string quantity_description(Quantity kind);

}  // namespace dtwin
