#include "command_line.h"

#include "autograd/backend/cpu_fast/parallel.h"
#include "train/cli.h"

namespace copy_task {

using sg::train::integer_in;
using sg::train::real_in;

Config configured(const std::string& preset, const CLI::App& command, Config& given) {
  Config c = Config::preset_named(preset);
  sg::train::copy_given(command, given.schema(), c.schema());
  if (command.count("--length") > 0 && command.count("--min-len") == 0) c.min_len = c.length;
  return c;
}

// The CPU kernels: the reference backend (the code the chapters show) or the fast one.
void add_kernels_option(CLI::App* cmd, std::string& kernels) {
  cmd->add_option("--kernels", kernels,
                  "CPU kernels: reference | fast (default: SCRATCHGRAD_KERNELS, else fast)")
      ->check(CLI::IsMember({"reference", "fast"}));
}

CLI::App* add_train_command(CLI::App& app, TrainArgs& a, std::string& kernels) {
  CLI::App* cmd = app.add_subcommand("train", "train a model (the default preset is tiny)");
  TrainOptions& o = a.options;
  cmd->add_option("--preset", a.preset, "tiny | annotated | medium")
      ->check(CLI::IsMember({"tiny", "annotated", "medium"}));
  sg::train::add_options(*cmd, a.given.schema());
  a.command = cmd;
  cmd->add_option("--out", o.out_dir, "directory for checkpoints and pictures");
  cmd->add_flag("--resume", o.resume,
                "continue from <out>/last.safetensors, with the same configuration (only "
                "--steps, --eval-every, --eval-samples, --final-samples and "
                "--checkpoint-every may change)");
  cmd->add_flag("--overwrite", o.overwrite,
                "replace the run already in <out> (without it, or --resume, it is refused)");
  cmd->add_flag("--quiet", o.quiet, "no progress output");
  cmd->add_option("--metrics-json", o.metrics_json, "write the final metrics here");
  cmd->add_option("--log-jsonl", o.log_jsonl, "append one JSON line per evaluation");
  cmd->add_option("--device", o.device,
                  "cpu | cuda | cuda:N (with --distributed, cuda = one GPU per rank)");
  cmd->add_flag("--bf16", o.bf16,
                "mixed precision: the forward and the loss under bfloat16 autocast "
                "(products in bfloat16, sums, weights and Adam in float32)");
  cmd->add_flag("--cuda-graph", o.cuda_graph,
                "on CUDA: capture the training step as one CUDA graph after the first step "
                "and replay it (the same results; no launch cost per kernel)");
  cmd->add_flag("--deterministic", o.deterministic,
                "sums in a fixed order where a GPU would add in any order, so the run repeats "
                "itself bit for bit (slower on a GPU)");
  cmd->add_flag("--tf32", o.tf32,
                "on CUDA: float32 products on TF32 tensor cores (faster, ~1e-3 less exact)");
  cmd->add_option("--sync-every", o.sync_every,
                  "steps between reads of loss/accuracy to the host, >= 1 (default: 1 on "
                  "cpu, 25 on cuda, where each read makes the host wait for the GPU)")
      ->check(integer_in(1, sg::train::LoopConfig::kMaxSteps));
  cmd->add_option("--threads", a.threads,
                  "CPU threads: the fast kernels' pool and the BLAS library's, at most one "
                  "per core there (default: SCRATCHGRAD_NUM_THREADS, else every core; BLAS 2)")
      ->check(integer_in(1, sg::cpu::kMaxThreads));
  add_kernels_option(cmd, kernels);
  sg::train::add_data_parallel_flags(*cmd, o.parallel);
  cmd->add_flag("--zero1", o.zero1,
                "with --distributed: ZeRO-1, each rank keeps only its 1/N shard of Adam's "
                "state (the checkpoint still holds all of it)");
  cmd->add_flag("--detect-anomaly", a.detect_anomaly,
                "stop at the first op or gradient that is NaN or Inf, naming it and the line "
                "that called it (slower; also SCRATCHGRAD_DETECT_ANOMALY=1)");
  return cmd;
}

CLI::App* add_compare_command(CLI::App& app, CompareArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "compare", "compare two captures (safetensors files of the same names) in execution order");
  cmd->add_option("reference", a.reference, "the reference capture (e.g. PyTorch's)")->required();
  cmd->add_option("candidate", a.candidate, "the capture to check against it")->required();
  cmd->add_option("--atol", a.atol, "absolute tolerance (default 1e-5)")->check(real_in(0, 1e6));
  cmd->add_option("--rtol", a.rtol, "relative tolerance (default 1e-4)")->check(real_in(0, 1e6));
  return cmd;
}

CLI::App* add_capture_command(CLI::App& app, CaptureArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "capture", "record one training step's module outputs and gradients (for compare)");
  cmd->add_option("--checkpoint", a.capture.checkpoint, "the model (model.safetensors)")
      ->required();
  cmd->add_flag("--init", a.init,
                "first write the untrained model of --preset and the flags below (seeded "
                "with --seed, as train starts) to --checkpoint, a new file");
  cmd->add_option("--preset", a.preset, "with --init: tiny | annotated | medium")
      ->check(CLI::IsMember({"tiny", "annotated", "medium"}));
  sg::train::add_options(*cmd, a.given.schema());
  a.command = cmd;
  cmd->add_option("--out", a.capture.out, "the capture (safetensors)")->required();
  cmd->add_option("--batch-out", a.capture.batch_out,
                  "write the batch here (src, tgt), for scripts/capture_torch_step.py");
  cmd->add_option("--batch-size", a.capture.batch, "sequences in the batch (default 8)")
      ->check(integer_in(1, 4096));
  cmd->add_option("--data-seed", a.capture.seed, "seed of the batch's sequences (default 1)")
      ->check(sg::train::unsigned_integer());
  return cmd;
}

std::pair<CLI::App*, CLI::App*> add_eval_and_decode(CLI::App& app, ModelArgs& a,
                                                    std::string& kernels) {
  CLI::App* eval = app.add_subcommand("eval", "evaluate a checkpoint on fresh sequences");
  eval->add_option("--checkpoint", a.checkpoint, "model.safetensors written by train")->required();
  eval->add_option("--samples", a.samples, "sequences to decode")->check(integer_in(1, 10000000));
  eval->add_option("--seed", a.eval_seed, "seed of the fresh sequences")
      ->check(sg::train::unsigned_integer());
  eval->add_option("--metrics-json", a.eval_metrics, "write the metrics here");
  add_kernels_option(eval, kernels);
  CLI::App* decode =
      app.add_subcommand("decode", "decode sequences given as arguments or on stdin");
  decode->add_option("--checkpoint", a.checkpoint, "model.safetensors written by train")
      ->required();
  decode->add_option("sequences", a.sequences,
                     "token ids, e.g. \"1 4 2 9\" (start symbol optional)");
  decode->add_flag("--no-cache", a.no_cache, "recompute the whole prefix at every step");
  decode->add_flag("--print-logits,--scores", a.print_logits,
                   "after each sequence, every step's chosen token, its log-probability and "
                   "the log-probabilities of the whole vocabulary");
  decode->add_option("--beam", a.beam, "beam size (1 = greedy)")->check(integer_in(1, 64));
  add_kernels_option(decode, kernels);
  return {eval, decode};
}

}  // namespace copy_task
