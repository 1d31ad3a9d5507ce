// dtwin_export_reference: writes the initial parameters and the training batches of a scenario,
// exactly as dtwin's ranks build and read them, for bench/vs_torch_pipelining.py, which trains
// the same model with torch.distributed.pipelining from identical weights and data.
//
//   dtwin_export_reference SCENARIO.yaml [--set key.path=value ...] [--steps S]
//                          [--data-dir data] -o FILE
//
// FILE is a torch::pickle_save of a Dict[str, Tensor] that Python reads with
// torch.load(FILE, weights_only=False):
//   "param/<global name>"  every parameter of every stage (StageModule of that stage, as
//                          runtime/rank_model.cpp builds it from the scenario's seed), fp32;
//   "inputs", "targets"    int64 [S, microbatches, micro_batch_size, seq_len]: step t,
//                          microbatch j as TokenDataset::batch(t, 0, j, dp, ...) returns it
//                          (DP replica 0);
//   "stage_first_layer", "stage_num_layers"  int64 [pp * virtual_stages]: the layer split.
#include <torch/serialize.h>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "models/nn/stage_module.hpp"
#include "models/spec/scenario_loader.hpp"
#include "models/spec/stage_partition.hpp"
#include "runtime/data/token_dataset.hpp"

int main(int argc, char** argv) {
  std::string scenario_path, output, data_dir = "data";
  std::vector<std::string> overrides;
  int64_t steps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--set" && has_value) {
      overrides.push_back(argv[++i]);
    } else if (arg == "--steps" && has_value) {
      steps = std::stoll(argv[++i]);
    } else if (arg == "--data-dir" && has_value) {
      data_dir = argv[++i];
    } else if (arg == "-o" && has_value) {
      output = argv[++i];
    } else if (scenario_path.empty() && arg.rfind("-", 0) != 0) {
      scenario_path = arg;
    } else {
      std::fprintf(stderr, "error: unexpected argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  if (scenario_path.empty() || output.empty() || steps < 1) {
    std::fprintf(stderr,
                 "usage: dtwin_export_reference SCENARIO.yaml [--set key=value ...] "
                 "[--steps S] [--data-dir data] -o FILE\n");
    return 2;
  }
  try {
    const dtwin::Scenario scenario = dtwin::load_scenario(scenario_path, overrides);
    const dtwin::StagePartition partition(scenario);
    const dtwin::LayoutSpec& layout = scenario.layout;
    c10::Dict<std::string, at::Tensor> out;

    std::vector<int64_t> first_layers, num_layers;
    for (const dtwin::StageLayers& stage : partition.stages) {
      first_layers.push_back(stage.first_layer);
      num_layers.push_back(stage.num_layers);
      dtwin::nn::StageModule module(scenario, stage);
      for (const auto& item : module.named_parameters())
        out.insert("param/" + item.key(), item.value().detach().clone());
    }
    out.insert("stage_first_layer", torch::tensor(first_layers, torch::kLong));
    out.insert("stage_num_layers", torch::tensor(num_layers, torch::kLong));

    const dtwin::rt::TokenDataset data(data_dir, scenario.model.vocab_size, scenario.model.seq_len);
    std::vector<torch::Tensor> inputs, targets;
    for (int64_t step = 0; step < steps; ++step) {
      for (int j = 0; j < layout.microbatches; ++j) {
        const dtwin::rt::Batch batch = data.batch(step, 0, j, layout.dp, layout.microbatches,
                                                  layout.micro_batch_size, scenario.training.seed);
        inputs.push_back(batch.inputs);
        targets.push_back(batch.targets);
      }
    }
    const std::vector<int64_t> shape{steps, layout.microbatches, layout.micro_batch_size,
                                     scenario.model.seq_len};
    out.insert("inputs", torch::stack(inputs).reshape(shape));
    out.insert("targets", torch::stack(targets).reshape(shape));

    const std::vector<char> bytes = torch::pickle_save(c10::IValue(out));
    std::ofstream file(output, std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file) throw std::runtime_error(output + ": cannot write");
  } catch (const dtwin::ConfigError& e) {  // bad scenario or --set: file:line:col: key: ...
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
