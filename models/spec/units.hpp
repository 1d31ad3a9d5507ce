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

/// The bound on a quantity as messages say it: "a FLOP rate > 0" (`positive`) or "... >= 0".
std::string quantity_bound(Quantity kind, bool positive);

/// The unit suffixes parse_quantity accepts for `kind` (none for Count), e.g. "GB/s", "Gbps".
std::vector<std::string> unit_names(Quantity kind);

/// `s` without its leading and trailing spaces and tabs (a view into `s`).
std::string_view trim(std::string_view s);

/// What a valid text of `kind` looks like, e.g. "a bandwidth such as 25GB/s or 200Gb/s".
std::string quantity_description(Quantity kind);

}  // namespace dtwin
