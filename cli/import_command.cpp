// `dtwin import {hf,megatron,torchtitan} SOURCE`: a scenario from a Hugging Face config.json, a
// Megatron-LM argument list or a torchtitan TOML file (cli/import/importers.hpp).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "base/file_writer.hpp"
#include "base/user_error.hpp"
#include "cli/commands.hpp"
#include "cli/import/importers.hpp"
#include "models/spec/scenario_loader.hpp"

namespace dtwin {
namespace {

struct ImportOptions {
  std::vector<std::string> source;  ///< hf, torchtitan: the file; megatron: a file or arguments
  std::string output;               ///< "" = stdout
  std::vector<std::string> overrides;
  CLI::App* command = nullptr;  ///< megatron: where CLI11 left the arguments it did not know
};

/// Loads the scenario file `path` as `dtwin simulate` would; throws UserError naming the key to
/// change when it does not load.
void check_loads(const std::string& path) {
  try {
    load_scenario(path);
  } catch (const UserError& e) {
    throw UserError(fmt::format(
        "the imported scenario does not load: {} (change the key with --set KEY=VALUE)", e.what()));
  }
}

/// Reports the draft's unsupported fields and notes on stderr, then writes the scenario to
/// `output` (stdout when empty) after checking that it loads.
int write_scenario(const import::ScenarioDraft& draft, const std::string& output) {
  std::cerr << draft.report();
  const std::string text = draft.yaml();
  if (!output.empty()) {
    const std::filesystem::path parent = std::filesystem::path(output).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    write_file(output, text);
    check_loads(output);
    std::cerr << "import: wrote " << output << "\n";
    return 0;
  }
  draft.load();
  std::cout << text;
  return 0;
}

/// The one file argument of `hf` and `torchtitan`.
const std::string& single_source(const ImportOptions& options, const char* what) {
  if (options.source.size() != 1)
    throw UserError(
        fmt::format("import: expected one {} file, got {} arguments", what, options.source.size()));
  return options.source.front();
}

int run_hf(const ImportOptions& options) {
  return write_scenario(import::import_hf(single_source(options, "config.json"), options.overrides),
                        options.output);
}

int run_torchtitan(const ImportOptions& options) {
  return write_scenario(
      import::import_torchtitan(single_source(options, "TOML"), options.overrides), options.output);
}

/// Megatron's arguments: a file holding the command line, one quoted string of arguments, or the
/// arguments themselves after `--`.
int run_megatron(const ImportOptions& options) {
  std::vector<std::string> extras;
  bool dashes = false;
  for (const std::string& arg : options.command->remaining()) {
    if (arg == "--")
      dashes = true;
    else
      extras.push_back(arg);
  }
  if (!extras.empty() && !options.source.empty() && !dashes)
    throw UserError(
        "import megatron: expected pretrain_gpt.py's arguments as one quoted string, after --, or "
        "in a file, got them unquoted");
  std::vector<std::string> words;
  std::string source = "the command-line arguments", name = "megatron";
  if (options.source.size() == 1 && extras.empty() && !dashes &&
      options.source.front().find_first_of(" \t\n") == std::string::npos) {
    source = options.source.front();
    const std::optional<std::string> text = read_file(source);
    if (!text) throw UserError(source + ": cannot open the Megatron argument file");
    words = import::split_shell_words(*text);
    name = std::filesystem::path(source).stem().string();
  } else if (dashes) {
    words = options.source;
    for (const std::string& extra : extras)
      for (const std::string& word : import::split_shell_words(extra)) words.push_back(word);
  } else {
    std::vector<std::string> texts = options.source;
    texts.insert(texts.end(), extras.begin(), extras.end());
    for (const std::string& text : texts)
      for (const std::string& word : import::split_shell_words(text)) words.push_back(word);
  }
  if (words.empty())
    throw UserError("import megatron: expected pretrain_gpt.py's arguments, got none");
  return write_scenario(import::import_megatron(words, source, name, options.overrides),
                        options.output);
}

/// Adds the import subcommand `name` of `parent`, with SOURCE, -o and --set.
std::shared_ptr<ImportOptions> add_importer(CLI::App& parent, int& exit_code,
                                            const std::string& name, const std::string& description,
                                            int (*run)(const ImportOptions&),
                                            const std::string& source_help) {
  auto [cmd, options] =
      add_guarded_command<ImportOptions>(parent, exit_code, name, description, run);
  cmd->add_option("source", options->source, source_help);
  cmd->add_option("-o,--output", options->output,
                  "Scenario file to write (default: print it on stdout)");
  cmd->add_option("--set", options->overrides,
                  "Set a scenario key the source does not give or override one it does, e.g. "
                  "--set cluster.nodes=4 (repeatable)")
      ->type_name("KEY=VALUE");
  options->command = cmd;
  return options;
}

}  // namespace

void add_import_command(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Write a scenario from a Hugging Face config.json, Megatron-LM arguments or a torchtitan "
      "TOML (fields it cannot map are listed as unsupported)");
  cmd->require_subcommand(1);
  add_importer(*cmd, exit_code, "hf", "Import a Hugging Face config.json", run_hf,
               "The model's config.json")
      ->command->get_option("source")
      ->required()
      ->expected(1);
  add_importer(*cmd, exit_code, "torchtitan", "Import a torchtitan job TOML (llama3)",
               run_torchtitan, "The torchtitan TOML file")
      ->command->get_option("source")
      ->required()
      ->expected(1);
  auto megatron = add_importer(
      *cmd, exit_code, "megatron", "Import Megatron-LM pretrain_gpt.py arguments", run_megatron,
      "A file holding the command line (a launcher such as torchrun with --nproc_per_node and "
      "--nnodes gives the cluster's size), or the arguments as one quoted string or after --");
  megatron->command->allow_extras();
}

}  // namespace dtwin
