// The safetensors format of Hugging Face (github.com/huggingface/safetensors, "Format"): an
// unsigned little-endian 64-bit header size N, N bytes of a UTF-8 JSON object mapping each tensor
// name to {"dtype", "shape", "data_offsets": [begin, end]} (byte offsets into the data that
// follows the header) plus an optional "__metadata__" object of strings, then the data:
// little-endian, row-major, the tensors' byte ranges covering it without holes or overlaps.
// No C++ library of the format ships with Debian or PyPI (the safetensors package is Rust behind
// Python), so dtwin reads and writes it here; tests/check_hf_checkpoint.py checks both directions
// against that package.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtwin::rt {

/// Every tensor of the safetensors file at `path`, by name, as CPU tensors of the file's dtypes
/// (F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL). Throws UserError "PATH: what was
/// expected" when the file cannot be read, is shorter than its header says, the header is not a
/// JSON object of that shape, a dtype is not one of those, or a tensor's byte range disagrees
/// with its shape and dtype or leaves the data.
/// With `metadata`, fills it with the file's "__metadata__" strings (none: empty).
std::map<std::string, at::Tensor> read_safetensors(
    const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

/// Writes `tensors` (any device; written in their dtype, contiguous, in name order) to `path`
/// through write_file, with `metadata` as "__metadata__" (transformers writes {"format": "pt"}).
/// The header is padded with spaces to a multiple of 8 bytes, as the reference writer does.
/// Throws std::invalid_argument for a dtype the format lacks, std::runtime_error when the file
/// cannot be written.
void write_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

}  // namespace dtwin::rt
