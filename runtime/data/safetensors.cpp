#include "runtime/data/safetensors.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/file_writer.hpp"
#include "base/user_error.hpp"

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; dtwin reads it on little-endian hosts only");

namespace dtwin::rt {
namespace {

struct DtypeName {
  const char* name;
  at::ScalarType type;
};

constexpr std::array<DtypeName, 10> kDtypes{{{"F64", at::kDouble},
                                             {"F32", at::kFloat},
                                             {"F16", at::kHalf},
                                             {"BF16", at::kBFloat16},
                                             {"I64", at::kLong},
                                             {"I32", at::kInt},
                                             {"I16", at::kShort},
                                             {"I8", at::kChar},
                                             {"U8", at::kByte},
                                             {"BOOL", at::kBool}}};

/// Header sizes above this are not a safetensors file (the reference reader's limit is 100 MB).
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw UserError(path + ": " + what);
}

at::ScalarType dtype_of(const std::string& path, const std::string& tensor,
                        const std::string& name) {
  for (const DtypeName& d : kDtypes)
    if (name == d.name) return d.type;
  bad(path, "tensor '" + tensor + "': dtype: expected one of F64, F32, F16, BF16, I64, I32, I16, " +
                "I8, U8, BOOL, got '" + name + "'");
}

const char* name_of(at::ScalarType type) {
  for (const DtypeName& d : kDtypes)
    if (type == d.type) return d.name;
  throw std::invalid_argument(std::string("write_safetensors: dtype ") + c10::toString(type) +
                              " has no safetensors name");
}

}  // namespace

std::map<std::string, at::Tensor> read_safetensors(const std::string& path,
                                                   std::map<std::string, std::string>* metadata) {
  const std::optional<std::string> file = read_file(path);
  if (!file) bad(path, "cannot be read (expected a safetensors file)");
  const std::string& bytes = *file;
  std::uint64_t header_size = 0;
  if (bytes.size() < sizeof header_size)
    bad(path,
        "expected an 8-byte header size, the file has " + std::to_string(bytes.size()) + " bytes");
  std::memcpy(&header_size, bytes.data(), sizeof header_size);
  if (header_size > kMaxHeaderBytes || header_size > bytes.size() - sizeof header_size)
    bad(path, "header size " + std::to_string(header_size) + " bytes: expected at most the " +
                  std::to_string(bytes.size() - sizeof header_size) + " bytes that follow it");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(sizeof header_size, header_size));
  } catch (const nlohmann::json::exception& e) {
    bad(path, std::string("header: expected a JSON object: ") + e.what());
  }
  if (!header.is_object()) bad(path, "header: expected a JSON object");
  const char* data = bytes.data() + sizeof header_size + header_size;
  const std::uint64_t data_size = bytes.size() - sizeof header_size - header_size;
  std::map<std::string, at::Tensor> tensors;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) bad(path, "__metadata__: expected an object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) bad(path, "__metadata__: " + key + ": expected a string");
        if (metadata) (*metadata)[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "': ";
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
        !entry.contains("shape") || !entry["shape"].is_array() || !entry.contains("data_offsets") ||
        !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      bad(path, where +
                    "expected {\"dtype\": string, \"shape\": [int...], \"data_offsets\": "
                    "[begin, end]}");
    const at::ScalarType type = dtype_of(path, name, entry["dtype"].get<std::string>());
    std::vector<std::int64_t> shape;
    std::uint64_t elements = 1;
    for (const auto& n : entry["shape"]) {
      if (!n.is_number_unsigned()) bad(path, where + "shape: expected non-negative integers");
      shape.push_back(n.get<std::int64_t>());
      elements *= n.get<std::uint64_t>();
    }
    const auto& offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      bad(path, where + "data_offsets: expected two non-negative integers");
    const auto begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
    const std::uint64_t expected = elements * c10::elementSize(type);
    if (end < begin || end > data_size || end - begin != expected)
      bad(path, where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                    "]: expected " + std::to_string(expected) +
                    " bytes (shape × dtype) inside the " + std::to_string(data_size) +
                    " bytes of data");
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(type));
    if (expected > 0) std::memcpy(t.data_ptr(), data + begin, expected);
    tensors.emplace(name, std::move(t));
    ranges.emplace_back(begin, end);
  }
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin != covered)
      bad(path,
          "data: expected the tensors' byte ranges to follow each other without holes or "
          "overlaps, one starts at " +
              std::to_string(begin) + " after " + std::to_string(covered));
    covered = end;
  }
  if (covered != data_size)
    bad(path, "data: " + std::to_string(data_size - covered) + " bytes after the last tensor");
  return tensors;
}

void write_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> contiguous;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    contiguous.push_back(tensor.detach().to(at::kCPU).contiguous());
    const std::uint64_t size = contiguous.back().nbytes();
    header[name] = {{"dtype", name_of(tensor.scalar_type())},
                    {"shape", tensor.sizes().vec()},
                    {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t header_size = text.size();
  std::string bytes(sizeof header_size, '\0');
  std::memcpy(bytes.data(), &header_size, sizeof header_size);
  bytes += text;
  bytes.reserve(bytes.size() + offset);
  for (const at::Tensor& t : contiguous)
    bytes.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  write_file(path, bytes);
}

}  // namespace dtwin::rt
