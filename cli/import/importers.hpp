// `dtwin import`: scenarios from the configurations users already have, a Hugging Face
// config.json, a Megatron-LM pretrain_gpt.py argument list or a torchtitan TOML file. Each
// importer maps every source field it can to a scenario key, reports the rest as unsupported, and
// fills what the source cannot know (the cluster, a Hugging Face model's layout) with documented
// defaults. docs/import.md lists the mappings.
#pragma once

#include <string>
#include <vector>

#include "cli/import/scenario_draft.hpp"

namespace dtwin::import {

/// A Hugging Face config.json (model_type llama, mistral, mixtral, qwen2, gpt2 or bert) as a
/// scenario: the model from the file, the default cluster (set_default_cluster) and a default
/// layout over it; `overrides` (--set) are applied first and win. Throws UserError (file, key,
/// what was expected) for a file that cannot be read, malformed JSON, a missing or mistyped field
/// or an unsupported model_type.
ScenarioDraft import_hf(const std::string& path, const std::vector<std::string>& overrides);

/// Megatron-LM's pretrain_gpt.py arguments (`args`, already split into words; a launcher prefix
/// such as `torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py` gives the cluster's size) as
/// a scenario named `name`; `source` names where they came from in the header and the errors.
/// Throws UserError for a missing required argument or a malformed value.
ScenarioDraft import_megatron(const std::vector<std::string>& args, const std::string& source,
                              const std::string& name, const std::vector<std::string>& overrides);

/// A torchtitan job TOML (model llama3, flavor debugmodel, 8B, 70B or 405B) as a scenario on the
/// default cluster (or the one --set gives). Throws UserError (file:line:col, key, what was
/// expected) for a file that cannot be read, malformed TOML or a bad value.
ScenarioDraft import_torchtitan(const std::string& path, const std::vector<std::string>& overrides);

/// Splits `text` into words as a POSIX shell would without expansions: blanks separate words,
/// single quotes keep everything, double quotes keep all but \" \\ \$ \`, a backslash escapes the
/// next character and joins a line to the next, '#' at a word's start comments out the rest of the
/// line. Throws UserError for an unterminated quote.
std::vector<std::string> split_shell_words(const std::string& text);

}  // namespace dtwin::import
