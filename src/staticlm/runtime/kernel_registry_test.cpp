// SPDX-License-Identifier: Apache-2.0
// Kernel selection by (op, dtypes, ISA): the highest-priority kernel the allowed CPU features
// cover and whose factory takes the signature wins; a factory's Unimplemented passes to the next
// one; the chain ends at the portable kernel; other errors are not swallowed.
#include "staticlm/runtime/kernel_registry.h"

#include <string>

#include <gtest/gtest.h>

#include "staticlm/backends/portable/register.h"
#include "staticlm/runtime/prepared_method.h"

namespace staticlm {
namespace {

class NamedKernel final : public Kernel {
 public:
  Status execute(std::span<const TensorView>, std::span<const TensorView>, const KernelContext&) const override {
    return ok_status();
  }
};

// A factory that takes only f16 weights, the way a specialised kernel would.
Result<std::unique_ptr<Kernel>> f16_only(const KernelSignature& signature) {
  if (signature.inputs[1]->dtype != DType::kF16) {
    return unimplemented("f16 weights only, found ", dtype_name(signature.inputs[1]->dtype));
  }
  return std::unique_ptr<Kernel>(std::make_unique<NamedKernel>());
}

Result<std::unique_ptr<Kernel>> any_weight(const KernelSignature&) {
  return std::unique_ptr<Kernel>(std::make_unique<NamedKernel>());
}

struct LinearSignature {
  TensorSpec x{DType::kF32, {2, 64}};
  TensorSpec w;
  std::vector<TensorSpec> outputs{{DType::kF32, {2, 8}}};
  Attributes none;
  std::vector<const TensorSpec*> inputs;
  explicit LinearSignature(DType weight) : w{weight, {8, 64}}, inputs{&x, &w} {}
  KernelSignature get() const { return {OpKind::kLinear, inputs, outputs, none}; }
};

KernelRegistry registry_with_fast_kernels() {
  KernelRegistry registry;
  EXPECT_TRUE(register_portable_kernels(registry).ok());
  const CpuFeatures avx512 = CpuFeatures().with(CpuFeature::kAvx512);
  const CpuFeatures avx2 = CpuFeatures().with(CpuFeature::kAvx2);
  EXPECT_TRUE(registry.add({OpKind::kLinear, "test.avx512.linear_f16", avx512, 20, f16_only}).ok());
  EXPECT_TRUE(registry.add({OpKind::kLinear, "test.avx2.linear", avx2, 10, any_weight}).ok());
  return registry;
}

TEST(KernelRegistryTest, ThePreferredKernelIsTheFirstAllowedOneThatTakesTheSignature) {
  const KernelRegistry registry = registry_with_fast_kernels();
  const CpuFeatures everything = CpuFeatures::all();
  EXPECT_EQ(registry.select(LinearSignature(DType::kF16).get(), everything)->name, "test.avx512.linear_f16");
  // The avx512 kernel declines bf16 weights: the next one in the chain takes them.
  EXPECT_EQ(registry.select(LinearSignature(DType::kBF16).get(), everything)->name, "test.avx2.linear");
  // Capped at AVX2, the AVX-512 kernel is never asked.
  const CpuFeatures avx2 = CpuFeatures().with(CpuFeature::kAvx2);
  EXPECT_EQ(registry.select(LinearSignature(DType::kF16).get(), avx2)->name, "test.avx2.linear");
  // With no SIMD allowed the chain ends at the portable kernel.
  EXPECT_EQ(registry.select(LinearSignature(DType::kF16).get(), CpuFeatures())->name, "portable.linear");
  const std::vector<const KernelEntry*> chain = registry.kernels_of(OpKind::kLinear);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0]->name, "test.avx512.linear_f16");
  EXPECT_EQ(chain[2]->name, "portable.linear");
}

TEST(KernelRegistryTest, RefusalsSayWhyEachKernelDeclined) {
  KernelRegistry registry;
  ASSERT_TRUE(registry.add({OpKind::kLinear, "test.linear_f16", CpuFeatures(), 5, f16_only}).ok());
  auto refused = registry.select(LinearSignature(DType::kBF16).get(), CpuFeatures::all());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(refused.status().message().find("test.linear_f16: f16 weights only, found bf16"), std::string::npos)
      << refused.status().message();
  const Attributes none_attributes;
  auto none = registry.select(KernelSignature{OpKind::kAdd, {}, {}, none_attributes}, CpuFeatures::all());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no kernel is registered for op 'add'"), std::string::npos);
  EXPECT_FALSE(registry.add({OpKind::kAdd, "test.linear_f16", CpuFeatures(), 0, any_weight}).ok())
      << "names are unique";
  EXPECT_FALSE(registry.add({OpKind::kAdd, "test.empty", CpuFeatures(), 0, KernelFactory()}).ok());
}

TEST(KernelRegistryTest, AMalformedSignatureIsAnErrorNotAFallback) {
  KernelRegistry registry;
  ASSERT_TRUE(registry
                  .add({OpKind::kLinear, "test.broken", CpuFeatures(), 5,
                        [](const KernelSignature&) -> Result<std::unique_ptr<Kernel>> {
                          return invalid_argument("linear: the attributes make no sense");
                        }})
                  .ok());
  ASSERT_TRUE(register_portable_kernels(registry).ok());
  auto selected = registry.select(LinearSignature(DType::kF32).get(), CpuFeatures::all());
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().code(), StatusCode::kInvalidArgument);
}

TEST(KernelRegistryTest, APreparedMethodUsesTheFeaturesItIsAllowed) {
  const KernelRegistry registry = registry_with_fast_kernels();
  MethodSpec method;
  method.name = "forward";
  method.values = {{DType::kF32, {2, 64}, ValueStorage::kInput, 0, {}},
                   {DType::kF16, {8, 64}, ValueStorage::kInput, 1, {}},
                   {DType::kF32, {2, 8}, ValueStorage::kOutput, 0, {}}};
  method.inputs = {{"x", 0, false}, {"w", 1, false}};
  method.outputs = {{"y", 2, false}};
  method.instructions.push_back(KernelCallSpec{"linear", {0, 1}, {2}, {}});
  PrepareContext context;
  context.kernels = &registry;
  context.allowed_features = CpuFeatures().with(CpuFeature::kAvx2);
  auto prepared = PreparedMethod::prepare(method, context);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  EXPECT_EQ((*prepared)->choices()[0].runner, "test.avx2.linear");
}

}  // namespace
}  // namespace staticlm
