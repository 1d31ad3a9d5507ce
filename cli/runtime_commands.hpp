// The subcommands that train or measure on this machine (run, profile, train). They live in the
// `dtwin-runtime` executable, which links LibTorch; `dtwin` hands them over to it, so that
// `schedule`, `simulate` and `compare` start without loading LibTorch and CUDA (about 1 s).
#pragma once

#include <string_view>

namespace dtwin {

/// A subcommand's name and the one-line description its --help shows.
struct CommandEntry {
  std::string_view name;
  std::string_view description;
};

/// The file name of the executable beside `dtwin` that runs the runtime commands.
inline constexpr std::string_view kRuntimeExecutable = "dtwin-runtime";

inline constexpr CommandEntry kRunCommand{
    "run", "Main job: profile, simulate, train, compare and plot one scenario"};
inline constexpr CommandEntry kProfileCommand{
    "profile", "Measure F/B/I/W seconds per stage, p2p and all-reduce figures on this machine"};
inline constexpr CommandEntry kTrainCommand{"train", "Train the scenario for real with LibTorch"};
inline constexpr CommandEntry kRuntimeCommands[] = {kRunCommand, kProfileCommand, kTrainCommand};

}  // namespace dtwin
