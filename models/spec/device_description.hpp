// A GPU as the kernel-level compute model sees it (models/cost/kernel_model.hpp): peak rates, SM
// count, memory, the GEMM tile, and the efficiencies that turn peaks into achieved rates. Read
// from a YAML file in models/devices/ (a100-80gb-sxm, h100-sxm, h800-sxm, h200-sxm, b200), each
// number with its source. A measured Profile, where a scenario names one, takes precedence over
// the times this description gives.
//
// The file is YAML (quantities take units as in scenarios; a plain number is in base units):
//
//   name: "H100 SXM"
//   bf16_flops: 989TFLOP/s        # dense tensor-core peak, bf16 and fp16
//   fp8_flops: 1979TFLOP/s        # dense tensor-core peak, fp8; optional: absent = no fp8
//   fp32_flops: 67TFLOP/s         # fp32 on CUDA cores (TF32 off)
//   sm_count: 132
//   memory_bandwidth: 3.35TB/s
//   memory: 80GB
//   gemm_tile: {m: 128, n: 256}   # output tile of one thread block
//   gemm_efficiency: 0.8          # fractions of a peak, in (0, 1]
//   attention_forward_efficiency: 0.35
//   attention_backward_efficiency: 0.3
//   attention_causal_speedup: 1.75 # optional, in [1, 2]; absent = 1.75
//   memory_efficiency: 0.85
//   kernel_overhead: 5us
//   host_op_overhead: 4us         # host seconds per framework operator (autograd recording)
//   host_op_overhead_no_grad: 3us # the same without autograd
//   overlap_slowdown: 1.05        # >= 1
//   reserved_memory: 723MiB       # held outside the tensors, per process
//   allocator_fragmentation: 0.08 # in [0, 1)
//
// Every key but fp8_flops and attention_causal_speedup is required; unknown and duplicate keys are
// errors.
#pragma once

#include <string>

#include "base/config_error.hpp"
#include "models/spec/settings.hpp"

namespace dtwin {

struct DeviceDescription {
  std::string source;     ///< the file it was read from
  std::string name;       ///< free text, e.g. "A100 80GB SXM"
  double bf16_flops = 0;  ///< FLOP/s: dense tensor-core peak for bf16 and fp16 operands
  double fp8_flops = 0;   ///< FLOP/s: dense tensor-core peak for fp8 operands; 0: no fp8
  double fp32_flops = 0;  ///< FLOP/s: fp32 peak on CUDA cores (TF32 tensor cores off)
  int sm_count = 0;       ///< streaming multiprocessors: thread blocks that run at once, one each
  double memory_bandwidth = 0;  ///< bytes/s of HBM
  double memory = 0;            ///< bytes of HBM
  int tile_m = 0;               ///< rows of the GEMM output tile one thread block computes
  int tile_n = 0;               ///< columns of that tile
  /// Fraction of the peak FLOP/s that a large GEMM whose tiles fill whole waves reaches.
  double gemm_efficiency = 0;
  /// Fraction of the peak FLOP/s that the flash-attention forward kernel reaches.
  double attention_forward_efficiency = 0;
  /// Fraction of the peak FLOP/s that the flash-attention backward kernel reaches.
  double attention_backward_efficiency = 0;
  /// How much faster a flash-attention kernel runs with a causal mask than without it, at the
  /// same sequence: it skips the blocks above the diagonal (about half the work) but not the
  /// diagonal's masking. FlashAttention-2 measured 1.7-1.8x (T. Dao 2023, "FlashAttention-2",
  /// section 3.1.1), the default. The two efficiencies above are of non-causal kernels, at the
  /// full 4·B·s²·dh count.
  double attention_causal_speedup = 1.75;
  /// Fraction of memory_bandwidth that streaming (element-wise, reduction) kernels reach.
  double memory_efficiency = 0;
  double kernel_overhead = 0;  ///< seconds each kernel adds: launch, ramp-up and tail
  /// Seconds the host thread spends per framework operator it dispatches (the Python call,
  /// PyTorch's dispatcher and autograd recording, the kernel launch) in a forward that autograd
  /// records and in the backward (models/cost/host_ops.hpp counts the operators).
  double host_op_overhead = 0;
  /// The same in a forward that autograd does not record (full recomputation's first forward).
  double host_op_overhead_no_grad = 0;
  /// Factor (>= 1) by which compute stretches while communication kernels run beside it (they
  /// take SMs and memory bandwidth).
  double overlap_slowdown = 1;
  /// Bytes of device memory each training process holds outside its tensors: the CUDA context
  /// with its kernels and library handles.
  double reserved_memory = 0;
  /// Fraction in [0, 1) of the caching allocator's reserved memory that is free but too
  /// fragmented to serve a request: B bytes of live tensors take B / (1 - fragmentation).
  double allocator_fragmentation = 0;

  /// The peak FLOP/s for operands of `precision`: fp32_flops, bf16_flops or fp8_flops (0 when
  /// the device has no fp8).
  double peak_flops(Precision precision) const;
  /// Whether the tensor cores take fp8 operands (fp8_flops given).
  bool has_fp8() const { return fp8_flops > 0; }
  bool operator==(const DeviceDescription&) const = default;
};

/// Bytes of one element of `precision` as an operand type: 4 (fp32), 2 (bf16), 1 (fp8). Weights
/// and activations of training precision p take element_bytes(storage_precision(p)).
double element_bytes(Precision precision);

/// Reads a device description. A bare name (no '/' and not ending in ".yaml") is the file
/// `<name>.yaml` of the devices directory (models/devices/ of the source tree); anything else
/// is a path, taken relative to the directory of `relative_to` (the scenario file that names the
/// device) unless absolute. Throws ConfigError "FILE:LINE:COL: KEY: expected WHAT, got 'VALUE'"
/// (or "unknown key", "missing key") for a bad file, "FILE: cannot open device file" for a
/// missing one, and "unknown device 'NAME': expected one of NAMES ..." for a bare name with no
/// file, listing the devices that the directory has.
DeviceDescription load_device_description(const std::string& name_or_path,
                                          const std::string& relative_to);

/// Writes `device` to `path` as a device file that load_device_description reads back equal
/// (but for `source`): every key (fp8_flops only where the device has fp8), numbers in base units
/// in their shortest exact form, after `comment` as YAML comment lines. Throws std::runtime_error
/// when the file cannot be written.
void save_device_description(const DeviceDescription& device, const std::string& path,
                             const std::string& comment);

}  // namespace dtwin
