// SPDX-License-Identifier: Apache-2.0
// Writes llama.cpp's logits of every fed token as raw float32 [n, vocab], as `staticlm logits`
// does, for bench/gguf_logits_check.py. Built against the peer tree bench/llama_cpp_side_by_side.py
// builds (libllama from build/peer/llama.cpp), never by this project's CMake; also by
// bench/kv_cache_quality.py for llama.cpp's q8_0 caches.
//   llama_cpp_logits MODEL.gguf OUT.bin N_CTX TOKEN...
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s MODEL.gguf OUT.bin N_CTX TOKEN...\n", argv[0]);
    return 2;
  }
  std::vector<llama_token> tokens;
  for (int i = 4; i < argc; ++i) {
    tokens.push_back(static_cast<llama_token>(std::atoi(argv[i])));
  }
  const auto n = static_cast<int32_t>(tokens.size());
  llama_backend_init();
  llama_model_params model_params = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], model_params);
  if (model == nullptr) {
    std::fprintf(stderr, "llama_cpp_logits: cannot load %s\n", argv[1]);
    return 1;
  }
  llama_context_params context_params = llama_context_default_params();
  context_params.n_ctx = static_cast<uint32_t>(std::atoi(argv[3]));
  context_params.n_batch = static_cast<uint32_t>(n);
  context_params.n_ubatch = static_cast<uint32_t>(n);
  context_params.n_threads = 1;
  context_params.n_threads_batch = 1;
  // f32 caches, as staticlm's program, and no flash attention: llama.cpp's default f16 caches and
  // its CPU flash attention (on by default, also in llama-bench) each move the logits by ~1e-3
  // relative, which would hide a conversion error of that size. LLAMA_CPP_LOGITS_FA=1 keeps it on;
  // LLAMA_CPP_LOGITS_KV=f16|q8_0 picks the caches' type (-ctk / -ctv; a q8_0 V cache needs FA).
  const char* kv = std::getenv("LLAMA_CPP_LOGITS_KV");
  const std::string kv_type = kv != nullptr ? kv : "f32";
  const ggml_type cache_type = kv_type == "q8_0" ? GGML_TYPE_Q8_0 : kv_type == "f16" ? GGML_TYPE_F16 : GGML_TYPE_F32;
  if (kv_type != "f32" && kv_type != "f16" && kv_type != "q8_0") {
    std::fprintf(stderr, "llama_cpp_logits: LLAMA_CPP_LOGITS_KV: expected f32, f16 or q8_0, found %s\n", kv);
    return 2;
  }
  context_params.type_k = cache_type;
  context_params.type_v = cache_type;
  const char* flash_attention = std::getenv("LLAMA_CPP_LOGITS_FA");
  context_params.flash_attn_type = flash_attention != nullptr && flash_attention[0] == '1'
                                       ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                                       : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* context = llama_init_from_model(model, context_params);
  if (context == nullptr) {
    std::fprintf(stderr, "llama_cpp_logits: cannot create a context\n");
    return 1;
  }
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (int32_t i = 0; i < n; ++i) {
    batch.token[i] = tokens[static_cast<size_t>(i)];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = n;
  if (llama_decode(context, batch) != 0) {
    std::fprintf(stderr, "llama_cpp_logits: llama_decode failed\n");
    return 1;
  }
  const int32_t vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  FILE* out = std::fopen(argv[2], "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "llama_cpp_logits: cannot write %s\n", argv[2]);
    return 1;
  }
  for (int32_t i = 0; i < n; ++i) {
    std::fwrite(llama_get_logits_ith(context, i), sizeof(float), static_cast<size_t>(vocab), out);
  }
  std::fclose(out);
  llama_batch_free(batch);
  llama_free(context);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
