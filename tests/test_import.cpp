// `dtwin import` as a user runs it: five public configurations (tests/import/) become scenarios
// that simulate, with their values where they belong and their unmapped fields listed; bad input
// exits 2 naming the file, the key and what was expected.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_process.hpp"

namespace {

using Result = dtwin::test::ProcessResult;
using dtwin::test::run_dtwin;

const std::string kImports = std::string(DTWIN_SOURCE_DIR) + "/tests/import/";

/// The scenario `dtwin import IMPORTER -o FILE ARGS` wrote, resolved by `dtwin keys --resolved`
/// (defaults applied, base units); the import's output (stderr's report) in `report`.
nlohmann::json import_resolved(const std::string& importer, const std::string& args,
                               const std::string& file, std::string& report) {
  std::filesystem::remove(file);
  const Result imported = run_dtwin("import " + importer + " -o " + file + " " + args);
  INFO(imported.output);
  REQUIRE(imported.exit_code == 0);
  report = imported.output;
  const Result resolved = run_dtwin("keys --resolved " + file);
  REQUIRE(resolved.exit_code == 0);
  return nlohmann::json::parse(resolved.output);
}

/// The text of the file at `path`.
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Simulates the scenario `file` and returns its predicted step time in seconds. With
/// --allow-oom: an imported layout that dtwin's memory model does not fit on its default cluster
/// (Mixtral 8x7B on one node; torchtitan's Llama 3 8B, 83 GiB against 67.9) still simulates.
double simulated_step(const std::string& file) {
  const std::string out = file + ".out";
  std::filesystem::remove_all(out);
  const Result simulated = run_dtwin("simulate " + file + " --allow-oom -o " + out);
  INFO(simulated.output);
  REQUIRE(simulated.exit_code == 0);
  std::ifstream summary(out + "/predicted.summary.json");
  REQUIRE(summary);
  const double step = nlohmann::json::parse(summary)["step_time_s"].get<double>();
  std::filesystem::remove_all(out);
  return step;
}

/// Writes `text` to `path` (a bad input of a test).
void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  REQUIRE(out);
}

}  // namespace

TEST_CASE("dtwin import hf: Llama 3 8B's config.json becomes a scenario that simulates") {
  const std::string file = "import-llama3-8b.yaml";
  std::string report;
  const auto sc = import_resolved("hf", kImports + "Meta-Llama-3-8B/config.json", file, report);
  CHECK(sc["model"]["family"] == "llama");
  CHECK(sc["model"]["d_model"] == 4096);
  CHECK(sc["model"]["n_layers"] == 32);
  CHECK(sc["model"]["n_heads"] == 32);
  CHECK(sc["model"]["n_kv_heads"] == 8);
  CHECK(sc["model"]["ffn_hidden"] == 14336);
  CHECK(sc["model"]["vocab_size"] == 128256);
  CHECK(sc["model"]["seq_len"] == 8192);
  CHECK(sc["name"] == "meta-llama-3-8b");
  // The default cluster and layout: one node of 8 H100, FSDP over all of it; full recomputation,
  // since without it the estimated peak exceeds an H100's memory.
  CHECK(sc["world_size"] == 8);
  CHECK(sc["cluster"]["device"]["model"] == "h100-sxm");
  CHECK(sc["layout"]["dp"] == 8);
  CHECK(sc["layout"]["zero"] == 3);
  CHECK(sc["layout"]["recompute"] == "full");
  // Every field not mapped is listed, in the file's header and on stderr.
  const std::string text = read_text(file);
  CHECK_THAT(text, Catch::StartsWith("# Imported by `dtwin import hf` from "));
  for (const char* field : {"rope_theta", "rms_norm_eps", "torch_dtype", "bos_token_id"}) {
    CHECK_THAT(text, Catch::Contains(field));
    CHECK_THAT(report, Catch::Contains(field));
  }
  CHECK_THAT(report, Catch::Contains("import: unsupported: architectures, bos_token_id"));
  CHECK_THAT(text, Catch::Contains("n_kv_heads: 8  # num_key_value_heads"));
  CHECK(simulated_step(file) > 0);
  std::filesystem::remove(file);
}

TEST_CASE("dtwin import hf: Mixtral 8x7B's config.json maps its experts and simulates") {
  const std::string file = "import-mixtral-8x7b.yaml";
  std::string report;
  const auto sc = import_resolved("hf", kImports + "Mixtral-8x7B-v0.1/config.json", file, report);
  CHECK(sc["model"]["moe"]["num_experts"] == 8);
  CHECK(sc["model"]["moe"]["top_k"] == 2);
  CHECK(sc["model"]["moe"]["expert_ffn_hidden"] == 14336);
  CHECK(sc["model"]["n_kv_heads"] == 8);
  CHECK(sc["model"]["vocab_size"] == 32000);
  // A 32768-token context: the default sequence is 8192, and the note says how to get the rest.
  CHECK(sc["model"]["seq_len"] == 8192);
  CHECK_THAT(report, Catch::Contains("max_position_embeddings 32768"));
  CHECK(sc["layout"]["ep"] == 8);
  CHECK(sc["layout"]["zero"] == 1);
  CHECK_THAT(report, Catch::Contains("router_aux_loss_coef"));
  CHECK_THAT(report, Catch::Contains("the default layout does not fit"));
  CHECK(simulated_step(file) > 0);
  std::filesystem::remove(file);
}

TEST_CASE("dtwin import hf: bert-base-uncased simulates as the gpt2 family with eager attention") {
  const std::string file = "import-bert-base.yaml";
  std::string report;
  const auto sc = import_resolved("hf", kImports + "bert-base-uncased/config.json", file, report);
  CHECK(sc["model"]["family"] == "gpt2");
  CHECK(sc["model"]["attention"] == "eager");
  CHECK(sc["model"]["d_model"] == 768);
  CHECK(sc["model"]["n_layers"] == 12);
  CHECK(sc["model"]["ffn_hidden"] == 3072);
  CHECK(sc["model"]["vocab_size"] == 30522);
  CHECK(sc["model"]["seq_len"] == 512);
  CHECK(sc["layout"]["micro_batch_size"] == 16);
  CHECK(sc["layout"]["zero"] == 0);  // 110M parameters: plain data parallelism
  // Every difference from BERT is in the header: the encoder, the attention, what is left out.
  const std::string text = read_text(file);
  for (const char* part :
       {"model_type bert is an encoder", "model.attention eager: BERT's attention is bidirectional",
        "the MLM head's transform", "type_vocab_size: the token-type embedding"}) {
    CHECK_THAT(text, Catch::Contains(part));
    CHECK_THAT(report, Catch::Contains(part));
  }
  CHECK(simulated_step(file) > 0);
  std::filesystem::remove(file);
  // Flash attention would be timed as causal: refused.
  const Result flash = run_dtwin("import hf " + kImports +
                                 "bert-base-uncased/config.json --set model.attention=flash");
  CHECK(flash.exit_code == 2);
  CHECK_THAT(flash.output, Catch::Contains("model_type bert: expected eager"));
}

TEST_CASE(
    "dtwin import hf: BERT and DistilBERT sequence classifiers import as their encoder "
    "families") {
  std::string report;
  const std::string bert_file = "import-bert-rte.yaml";
  const auto bert =
      import_resolved("hf", kImports + "bert-base-rte/config.json", bert_file, report);
  CHECK(bert["model"]["family"] == "bert");
  CHECK(bert["model"]["d_model"] == 768);
  CHECK(bert["model"]["max_position_embeddings"] == 512);
  CHECK(bert["model"]["num_labels"] == 2);
  CHECK(simulated_step(bert_file) > 0);
  std::filesystem::remove(bert_file);
  const std::string distil_file = "import-distilbert-sst2.yaml";
  const auto distil =
      import_resolved("hf", kImports + "distilbert-sst2/config.json", distil_file, report);
  CHECK(distil["model"]["family"] == "distilbert");
  CHECK(distil["model"]["n_layers"] == 6);
  CHECK(distil["model"]["ffn_hidden"] == 3072);
  CHECK(distil["model"]["num_labels"] == 2);
  CHECK_THAT(report, Catch::Contains("finetuning_task"));  // listed as not mapped
  CHECK(simulated_step(distil_file) > 0);
  std::filesystem::remove(distil_file);
}

TEST_CASE("dtwin import megatron: a pretrain_gpt.py command line for Llama-2 7B simulates") {
  const std::string file = "import-megatron-llama2.yaml";
  std::string report;
  const auto sc = import_resolved("megatron", kImports + "megatron-llama2-7b.sh", file, report);
  CHECK(sc["model"]["family"] == "llama");
  CHECK(sc["model"]["d_model"] == 4096);
  CHECK(sc["model"]["ffn_hidden"] == 11008);
  CHECK(sc["model"]["n_kv_heads"] == 32);
  CHECK(sc["model"]["vocab_size"] == 32000);
  CHECK(sc["model"]["seq_len"] == 4096);
  CHECK(sc["model"]["attention"] == "flash");
  // torchrun --nproc_per_node 8 --nnodes 2: 16 GPUs, tp 2 · pp 2 leave dp 4; 64 sequences of
  // micro-batch 1 over 4 replicas are 16 microbatches.
  CHECK(sc["world_size"] == 16);
  CHECK(sc["layout"]["tp"] == 2);
  CHECK(sc["layout"]["pp"] == 2);
  CHECK(sc["layout"]["dp"] == 4);
  CHECK(sc["layout"]["microbatches"] == 16);
  CHECK(sc["layout"]["sequence_parallel"] == true);
  CHECK(sc["layout"]["zero"] == 1);
  CHECK(sc["layout"]["overlap_grad_reduce"] == true);
  CHECK(sc["layout"]["overlap_param_gather"] == true);
  CHECK(sc["training"]["precision"] == "bf16");
  CHECK(sc["runtime"]["timeout_s"] == 7200);
  for (const char* field : {"--weight-decay", "--split", "launcher --master_addr", "--mock-data"})
    CHECK_THAT(report, Catch::Contains(field));
  CHECK_THAT(report, Catch::Contains("import: unsupported: launcher --node_rank"));
  CHECK(simulated_step(file) > 0);
  std::filesystem::remove(file);
}

TEST_CASE("dtwin import megatron: GPT-3 175B's arguments, quoted or after --, give one scenario") {
  const std::string args =
      "--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
      "--max-position-embeddings 2048 --attention-backend auto --micro-batch-size 1 "
      "--global-batch-size 1536 --rampup-batch-size 16 16 5859375 --train-iters 500000 "
      "--weight-decay 0.1 --clip-grad 1.0 --fp16 --lr 6.0e-5 --tensor-model-parallel-size 8 "
      "--pipeline-model-parallel-size 16 --data-path /data/gpt_text_document "
      "--vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt --split 949,50,1";
  std::string quoted_report, dashed_report;
  const auto quoted =
      import_resolved("megatron", "\"" + args + "\"", "import-gpt3-a.yaml", quoted_report);
  const auto dashed =
      import_resolved("megatron", "-- " + args, "import-gpt3-b.yaml", dashed_report);
  auto same = [](nlohmann::json resolved) {
    resolved.erase("source");
    return resolved;
  };
  CHECK(same(quoted) == same(dashed));
  CHECK(quoted["model"]["family"] == "gpt2");
  CHECK(quoted["model"]["ffn_hidden"] == 4 * 12288);
  CHECK(quoted["model"]["vocab_size"] == 51200);  // 50257 padded to a multiple of 128 · tp 8
  CHECK(quoted["world_size"] == 128);             // the fewest 8-GPU nodes tp 8 · pp 16 fits
  CHECK(quoted["layout"]["dp"] == 1);
  CHECK(quoted["layout"]["microbatches"] == 1536);
  CHECK(quoted["training"]["precision"] == "bf16");
  CHECK_THAT(quoted_report, Catch::Contains("--fp16: dtwin has no fp16: simulated as bf16"));
  CHECK_THAT(quoted_report, Catch::Contains("--rampup-batch-size"));
  // --set wins over the arguments and the defaults, and the derived keys follow it.
  std::string report;
  const auto wider = import_resolved("megatron", "\"" + args + "\" --set cluster.nodes=32",
                                     "import-gpt3-c.yaml", report);
  CHECK(wider["layout"]["dp"] == 2);
  CHECK(wider["layout"]["microbatches"] == 768);
  for (const char* file : {"import-gpt3-a.yaml", "import-gpt3-b.yaml", "import-gpt3-c.yaml"})
    std::filesystem::remove(file);
}

TEST_CASE("dtwin import torchtitan: the llama3_8b.toml job simulates") {
  const std::string file = "import-torchtitan-llama3-8b.yaml";
  std::string report;
  const auto sc = import_resolved("torchtitan", kImports + "llama3_8b.toml", file, report);
  CHECK(sc["model"]["d_model"] == 4096);
  CHECK(sc["model"]["n_layers"] == 32);
  CHECK(sc["model"]["n_kv_heads"] == 8);
  CHECK(sc["model"]["ffn_hidden"] == 14336);
  CHECK(sc["model"]["vocab_size"] == 128256);
  CHECK(sc["model"]["seq_len"] == 8192);
  // data_parallel_shard_degree -1 takes the default node's 8 GPUs: FSDP over them.
  CHECK(sc["layout"]["dp"] == 8);
  CHECK(sc["layout"]["zero"] == 3);
  CHECK(sc["layout"]["micro_batch_size"] == 1);
  CHECK(sc["layout"]["recompute"] == "selective");
  CHECK(sc["training"]["steps"] == 1000);
  CHECK(sc["training"]["precision"] == "bf16");
  for (const char* field : {"job.dump_folder", "optimizer.eps", "compile.enable",
                            "activation_checkpoint.selective_ac_option: op-level"})
    CHECK_THAT(report, Catch::Contains(field));
  CHECK(simulated_step(file) > 0);
  std::filesystem::remove(file);
  // On two nodes (--set) data_parallel_shard_degree -1 takes 16 GPUs.
  const auto two_nodes = import_resolved(
      "torchtitan", kImports + "llama3_8b.toml --set cluster.nodes=2 --set layout.recompute=full",
      file, report);
  CHECK(two_nodes["layout"]["dp"] == 16);
  CHECK(two_nodes["layout"]["zero"] == 3);
  CHECK(two_nodes["layout"]["recompute"] == "full");
  std::filesystem::remove(file);
}

TEST_CASE("dtwin import exits 2 naming the file, the key and what was expected") {
  struct Case {
    std::string args;
    std::string expected;
  };
  write_text("import-bad.json", "{\"model_type\": \"llama\", \"hidden_size\": 4096,\n");
  write_text("import-missing.json", "{\"model_type\": \"llama\", \"vocab_size\": 32000}");
  write_text("import-type.json",
             "{\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": \"wide\"}");
  write_text("import-t5.json", "{\"model_type\": \"t5\"}");
  write_text("import-bad.toml", "[model]\nname = \"llama3\"\n[training\n");
  write_text("import-flavor.toml", "[model]\nname = \"llama3\"\nflavor = \"13B\"\n");
  write_text("import-seq.toml",
             "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nseq_len = \"long\"\n");
  const std::string llama = kImports + "Meta-Llama-3-8B/config.json";
  const Case cases[] = {
      {"hf /nonexistent/config.json", "/nonexistent/config.json: cannot open"},
      {"hf import-bad.json", "import-bad.json: invalid JSON: "},
      {"hf import-missing.json",
       "import-missing.json: hidden_size: missing: expected the model "
       "width"},
      {"hf import-type.json",
       "import-type.json: hidden_size: expected the model width, an "
       "integer >= 1, got '\"wide\"'"},
      {"hf import-t5.json", "import-t5.json: model_type: expected one of llama, mistral"},
      {"torchtitan /nonexistent.toml", "/nonexistent.toml: cannot open"},
      {"torchtitan import-bad.toml", "import-bad.toml:3:"},
      {"torchtitan import-flavor.toml",
       "import-flavor.toml:3:10: model.flavor: expected debugmodel, 8B, 70B or 405B"},
      {"torchtitan import-seq.toml",
       "import-seq.toml:5:11: training.seq_len: expected an "
       "integer >= 1, got 'long'"},
      {"megatron \"--hidden-size 4096\"", "--num-layers: missing: expected the number of layers"},
      {"megatron \"--num-layers many\"", "--num-layers: expected an integer >= 1, got 'many'"},
      {"megatron \"--num-layers 2 --swiglu yes\"", "--swiglu: expected no value (a flag)"},
      {"megatron \"--num-layers '2\"", "unterminated ' quote"},
      {"megatron --num-layers 2 --hidden-size 64", "as one quoted string, after --, or in a file"},
      {"megatron \"--num-layers 2 --hidden-size 64 --num-attention-heads 2 --seq-length 32\"",
       "--vocab-size: missing: expected the vocabulary size"},
      {"hf " + llama + " --set model.width=1",
       "--set model.width=1: expected KEY=VALUE with a "
       "scenario key"},
      {"hf " + llama + " --set model.n_kv_heads=5",
       "the imported scenario does not load: <imported scenario>:"},
  };
  for (const Case& c : cases) {
    const Result result = run_dtwin("import " + c.args);
    INFO("dtwin import " << c.args << "\n" << result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Catch::Contains(c.expected));
  }
  for (const char* file :
       {"import-bad.json", "import-missing.json", "import-type.json", "import-t5.json",
        "import-bad.toml", "import-flavor.toml", "import-seq.toml"})
    std::filesystem::remove(file);
}
