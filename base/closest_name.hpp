// "Did you mean ...?" for a misspelled name.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dtwin {

/// The name of `candidates` nearest to `word` by edit distance (Levenshtein: insertions,
/// deletions, substitutions, and a swap of two neighbouring letters, each 1), when it is within
/// max(1, |word| / 3) edits; nullopt otherwise (or for an exact match, which is no misspelling).
std::optional<std::string> closest_name(const std::string& word,
                                        const std::vector<std::string>& candidates);

}  // namespace dtwin
