// The C++ side of tests/hf/check_hf_checkpoint.py: loads a transformers encoder checkpoint into
// dtwin's EncoderClassifier and writes its logits, or copies a safetensors file through dtwin's
// reader and writer.
//
//   hf_encoder_probe logits CHECKPOINT_DIR INPUTS OUT [SAVE_DIR]
//       INPUTS: a safetensors file of input_ids [b, s] (and token_type_ids, attention_mask when
//       present); OUT: a safetensors file of "logits" [b, L] (fp32, eval mode). With SAVE_DIR,
//       writes the loaded model back there in the Hugging Face layout (labels and tokenizer files
//       kept). Prints the loader's notes.
//   hf_encoder_probe copy IN OUT
//       read_safetensors(IN), then write_safetensors(OUT).
// Exit 2 with "error: ..." on bad input (UserError), 1 on any other failure.
#include <torch/torch.h>

#include <cstdio>
#include <exception>
#include <string>

#include "base/user_error.hpp"
#include "runtime/data/safetensors.hpp"
#include "runtime/hf_checkpoint.hpp"

namespace {

int logits(int argc, char** argv) {
  const std::string dir = argv[2];
  const dtwin::rt::HfEncoderConfig config = dtwin::rt::read_hf_encoder_config(dir);
  dtwin::nn::EncoderClassifier model(config.model, torch::TensorOptions().dtype(torch::kFloat));
  for (const std::string& note : dtwin::rt::load_hf_encoder(model, dir, config.initializer_range))
    std::printf("note: %s\n", note.c_str());
  model->eval();
  auto inputs = dtwin::rt::read_safetensors(argv[3]);
  const auto get = [&](const char* name) {
    return inputs.count(name) ? inputs[name].to(torch::kLong) : torch::Tensor();
  };
  torch::NoGradGuard no_grad;
  const torch::Tensor out = model(get("input_ids"), get("token_type_ids"), get("attention_mask"));
  dtwin::rt::write_safetensors(argv[4], {{"logits", out.to(torch::kFloat)}});
  if (argc > 5) dtwin::rt::save_hf_encoder(model, config.labels, argv[5], dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string command = argc > 1 ? argv[1] : "";
    if (command == "logits" && argc >= 5) return logits(argc, argv);
    if (command == "copy" && argc == 4) {
      dtwin::rt::write_safetensors(argv[3], dtwin::rt::read_safetensors(argv[2]));
      return 0;
    }
    std::fprintf(stderr,
                 "usage: hf_encoder_probe logits DIR INPUTS OUT [SAVE_DIR] | copy IN OUT\n");
    return 2;
  } catch (const dtwin::UserError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "failure: %s\n", e.what());
    return 1;
  }
}
