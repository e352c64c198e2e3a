// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "staticlm/core/checked_math.h"
#include "staticlm/json/strict_json.h"

namespace staticlm {
namespace {

using nlohmann::json;

constexpr std::string_view kIndexFileName = "model.safetensors.index.json";
constexpr std::string_view kSingleFileName = "model.safetensors";
constexpr uint64_t kHeaderLengthBytes = 8;

std::string path_in(const std::string& dir, std::string_view file_name) {
  return (std::filesystem::path(dir) / std::filesystem::path(file_name)).string();
}

// Safetensors dtype names of the types the exporter reads; the others are refused by name.
std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  return std::nullopt;
}

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    default: return dtype_name(dtype);
  }
}

// A JSON integer that fits in int64_t and is >= 0 (nlohmann stores non-negative literals as
// unsigned, negative ones as signed, and anything with a fraction or exponent as float).
std::optional<int64_t> non_negative_int(const json& value) {
  if (value.is_number_unsigned()) {
    const uint64_t raw = value.get<uint64_t>();
    if (raw > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<int64_t>(raw);
  }
  if (value.is_number_integer()) {
    const int64_t raw = value.get<int64_t>();
    if (raw < 0) {
      return std::nullopt;
    }
    return raw;
  }
  return std::nullopt;
}

Status check_metadata(const json& metadata, const std::string& file) {
  if (!metadata.is_object()) {
    return invalid_argument("'", file, "': \"__metadata__\" must be an object of strings, found ",
                            json_preview(metadata));
  }
  for (const auto& [key, value] : metadata.items()) {
    if (!value.is_string()) {
      return invalid_argument("'", file, "': \"__metadata__\" key '", key, "': expected a string, found ",
                              json_preview(value));
    }
  }
  return ok_status();
}

Result<SafetensorsTensor> parse_entry(const std::string& name, const json& entry, std::span<const uint8_t> data,
                                      const std::string& file) {
  const std::string where = str_cat("'", file, "': tensor '", name, "'");
  if (!entry.is_object()) {
    return invalid_argument(where, ": expected an object with dtype, shape and data_offsets, found ",
                            json_preview(entry));
  }
  SafetensorsTensor tensor;
  tensor.name = name;
  tensor.file = file;

  const auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    return invalid_argument(where, ": expected a string \"dtype\", found ",
                            dtype_it == entry.end() ? "none" : json_preview(*dtype_it));
  }
  const std::string& dtype_text = dtype_it->get_ref<const std::string&>();
  const std::optional<DType> dtype = dtype_from_safetensors_name(dtype_text);
  if (!dtype) {
    return invalid_argument(where, " has unsupported dtype ", dtype_text, " (supported: F32, F16, BF16)");
  }
  tensor.dtype = *dtype;

  const auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return invalid_argument(where, ": expected \"shape\" to be an array of non-negative integers, found ",
                            shape_it == entry.end() ? "none" : json_preview(*shape_it));
  }
  for (const json& dim : *shape_it) {
    const std::optional<int64_t> size = non_negative_int(dim);
    if (!size) {
      return invalid_argument(where, ": expected \"shape\" to be an array of non-negative integers, found ",
                              json_preview(*shape_it));
    }
    tensor.shape.push_back(*size);
  }

  const auto offsets_it = entry.find("data_offsets");
  std::optional<int64_t> begin;
  std::optional<int64_t> end;
  if (offsets_it != entry.end() && offsets_it->is_array() && offsets_it->size() == 2) {
    begin = non_negative_int((*offsets_it)[0]);
    end = non_negative_int((*offsets_it)[1]);
  }
  if (!begin || !end) {
    return invalid_argument(where, ": expected \"data_offsets\" to be [begin, end] of non-negative integers, found ",
                            offsets_it == entry.end() ? "none" : json_preview(*offsets_it));
  }
  const uint64_t begin_byte = static_cast<uint64_t>(*begin);
  const uint64_t end_byte = static_cast<uint64_t>(*end);
  if (begin_byte > end_byte) {
    return invalid_argument(where, ": data_offsets [", begin_byte, ", ", end_byte, "] has begin after end");
  }
  if (end_byte > data.size()) {
    return invalid_argument(where, ": data_offsets [", begin_byte, ", ", end_byte,
                            "] reach beyond the data buffer, which holds ", data.size(), " bytes");
  }
  Result<uint64_t> expected_bytes = tensor_bytes(tensor.dtype, tensor.shape);
  if (!expected_bytes.ok()) {
    return expected_bytes.status().with_context(where);
  }
  if (end_byte - begin_byte != *expected_bytes) {
    return invalid_argument(where, ": data_offsets [", begin_byte, ", ", end_byte, "] hold ", end_byte - begin_byte,
                            " bytes, but ", safetensors_dtype_name(tensor.dtype), " ", shape_string(tensor.shape),
                            " needs ", *expected_bytes);
  }
  tensor.bytes = data.subspan(begin_byte, end_byte - begin_byte);
  return tensor;
}

Status check_no_overlap(std::span<const SafetensorsTensor> tensors, std::span<const uint8_t> data,
                        const std::string& file) {
  struct Range {
    uint64_t begin;
    uint64_t end;
    const SafetensorsTensor* tensor;
  };
  std::vector<Range> ranges;
  for (const SafetensorsTensor& tensor : tensors) {
    if (tensor.bytes.empty()) {
      continue;  // an empty tensor occupies no bytes, wherever its offsets point
    }
    const auto begin = static_cast<uint64_t>(tensor.bytes.data() - data.data());
    ranges.push_back({begin, begin + tensor.bytes.size(), &tensor});
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    const Range& previous = ranges[i - 1];
    const Range& current = ranges[i];
    // Sorted by begin, with the previous ranges already known to be disjoint: only the
    // neighbour can reach into this range.
    if (current.begin < previous.end) {
      return invalid_argument("'", file, "': tensors '", previous.tensor->name, "' (bytes [", previous.begin, ", ",
                              previous.end, ")) and '", current.tensor->name, "' (bytes [", current.begin, ", ",
                              current.end, ")) overlap");
    }
  }
  return ok_status();
}

// Plain file names only, so an index cannot point the reader outside the model directory.
bool is_plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\\') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

Result<std::vector<SafetensorsTensor>> parse_safetensors(std::span<const uint8_t> file_bytes, const std::string& file) {
  if (file_bytes.size() < kHeaderLengthBytes) {
    return data_loss("'", file, "': ", file_bytes.size(),
                     " bytes is too short for a safetensors file (expected at least the 8-byte header length)");
  }
  uint64_t header_length = 0;
  for (uint64_t i = 0; i < kHeaderLengthBytes; ++i) {
    header_length |= static_cast<uint64_t>(file_bytes[i]) << (8 * i);
  }
  const uint64_t after_length = file_bytes.size() - kHeaderLengthBytes;
  if (header_length > kMaxSafetensorsHeaderBytes) {
    return invalid_argument("'", file, "': header length ", header_length, " exceeds the limit of ",
                            kMaxSafetensorsHeaderBytes, " bytes");
  }
  if (header_length > after_length) {
    return data_loss("'", file, "': header length ", header_length, " reaches beyond the end of the file (",
                     after_length, " bytes follow the length)");
  }
  const std::string_view header_text(reinterpret_cast<const char*>(file_bytes.data() + kHeaderLengthBytes),
                                     header_length);
  STATICLM_ASSIGN_OR_RETURN(json header, parse_json_object(header_text, file));
  const std::span<const uint8_t> data = file_bytes.subspan(kHeaderLengthBytes + header_length);

  std::vector<SafetensorsTensor> tensors;
  tensors.reserve(header.size());
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      STATICLM_RETURN_IF_ERROR(check_metadata(entry, file));
      continue;
    }
    STATICLM_ASSIGN_OR_RETURN(SafetensorsTensor tensor, parse_entry(name, entry, data, file));
    tensors.push_back(std::move(tensor));
  }
  STATICLM_RETURN_IF_ERROR(check_no_overlap(tensors, data, file));
  return tensors;
}

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const std::string& model_dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(model_dir, error)) {
    return not_found("'", model_dir, "': no such directory");
  }
  SafetensorsCheckpoint checkpoint;
  checkpoint.model_dir_ = model_dir;

  const std::string index_path = path_in(model_dir, kIndexFileName);
  Result<std::string> index_text = read_text_file(index_path);
  if (!index_text.ok() && index_text.status().code() != StatusCode::kNotFound) {
    return index_text.status();
  }
  if (!index_text.ok()) {
    Status single = checkpoint.add_file(path_in(model_dir, kSingleFileName));
    if (single.code() == StatusCode::kNotFound) {
      return not_found("'", model_dir, "': no ", kSingleFileName, " or ", kIndexFileName);
    }
    STATICLM_RETURN_IF_ERROR(single);
    return checkpoint;
  }

  STATICLM_ASSIGN_OR_RETURN(json index, parse_json_object(*index_text, index_path));
  const auto weight_map = index.find("weight_map");
  if (weight_map == index.end() || !weight_map->is_object()) {
    return invalid_argument("'", index_path,
                            "': expected \"weight_map\" to be an object of tensor name -> shard file, found ",
                            weight_map == index.end() ? "none" : json_preview(*weight_map));
  }
  if (weight_map->empty()) {
    return invalid_argument("'", index_path, "': \"weight_map\" lists no tensors");
  }
  std::set<std::string> shard_names;
  for (const auto& [name, shard] : weight_map->items()) {
    if (!shard.is_string()) {
      return invalid_argument("'", index_path, "': weight_map entry '", name, "': expected a shard file name, found ",
                              json_preview(shard));
    }
    const std::string& shard_name = shard.get_ref<const std::string&>();
    if (!is_plain_file_name(shard_name)) {
      return invalid_argument("'", index_path, "': weight_map puts tensor '", name, "' in '", shard_name,
                              "', which is not a plain file name inside the model directory");
    }
    shard_names.insert(shard_name);
  }
  for (const std::string& shard_name : shard_names) {
    Status added = checkpoint.add_file(path_in(model_dir, shard_name));
    if (!added.ok()) {
      return added.with_context(str_cat("'", index_path, "' names shard '", shard_name, "'"));
    }
  }
  for (const auto& [name, shard] : weight_map->items()) {
    const std::string& shard_name = shard.get_ref<const std::string&>();
    const SafetensorsTensor* tensor = checkpoint.find(name);
    if (tensor == nullptr) {
      return invalid_argument("'", index_path, "': weight_map lists tensor '", name, "' in '", shard_name,
                              "', but that shard has no such tensor");
    }
    if (tensor->file != path_in(model_dir, shard_name)) {
      return invalid_argument("'", index_path, "': weight_map lists tensor '", name, "' in '", shard_name,
                              "', but it is in '", tensor->file, "'");
    }
  }
  return checkpoint;
}

Status SafetensorsCheckpoint::add_file(const std::string& path) {
  STATICLM_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  STATICLM_ASSIGN_OR_RETURN(std::vector<SafetensorsTensor> tensors, parse_safetensors(mapped.bytes(), path));
  // The tensors view the mapping's pages, which stay put when the MappedFile object moves.
  files_.push_back(std::move(mapped));
  for (SafetensorsTensor& tensor : tensors) {
    auto existing = tensors_.find(tensor.name);
    if (existing != tensors_.end()) {
      return invalid_argument("'", model_dir_, "': tensor '", tensor.name, "' is in both '", existing->second.file,
                              "' and '", path, "'");
    }
    std::string name = tensor.name;
    tensors_.emplace(std::move(name), std::move(tensor));
  }
  return ok_status();
}

const SafetensorsTensor* SafetensorsCheckpoint::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Result<const SafetensorsTensor*> SafetensorsCheckpoint::get(std::string_view name) const {
  if (const SafetensorsTensor* tensor = find(name)) {
    return tensor;
  }
  // Only close names are worth suggesting: a third of the name may differ.
  const size_t max_distance = std::max<size_t>(2, name.size() / 3);
  std::string_view best;
  size_t best_distance = max_distance + 1;
  for (const auto& [candidate, tensor] : tensors_) {
    const size_t distance = edit_distance(name, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (best.empty()) {
    return not_found("'", model_dir_, "': checkpoint has no tensor '", name, "'");
  }
  return not_found("'", model_dir_, "': checkpoint has no tensor '", name, "' (did you mean '", best, "'?)");
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, tensor] : tensors_) {
    out.push_back(name);
  }
  return out;
}

}  // namespace staticlm
