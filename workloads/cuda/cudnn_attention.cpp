// FusedAttention on cuDNN's scaled-dot-product attention (cuDNN frontend graph API, loaded with
// dlopen: the frontend is built with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING and reads cuDNN's
// entry points from cudnn_frontend::cudnn_dlhandle).
#include <cudnn_frontend.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "workloads/cuda/fused_attention.hpp"

namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;  // the frontend's handle on libcudnn, set once by load_cudnn
}  // namespace cudnn_frontend

namespace mpbench::workloads {

namespace {

namespace fe = cudnn_frontend;

// Opens libcudnn.so.9 once for the process; the reason it could not, or nullopt. The frontend
// loads the CUDA runtime by name too: point it at the one mpbench runs on (unless the user did),
// not at another major version that may sit on the library path.
const std::optional<std::string>& load_cudnn() {
  static const std::optional<std::string> problem = []() -> std::optional<std::string> {
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) {
      const std::string cudart = fmt::format("libcudart.so.{}", runtime / 1000);
      setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", cudart.c_str(), 0);
    }
    void* handle = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      return fmt::format("cannot load cuDNN 9 (libcudnn.so.9: {}): put its lib directory on LD_LIBRARY_PATH, or "
                         "use --attention unfused",
                         error ? error : "not found");
    }
    fe::cudnn_dlhandle = handle;
    return std::nullopt;
  }();
  return problem;
}

std::string version_text(std::size_t version) {
  return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

// Tensor uids of the graphs' variant packs.
enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kStats, kDout, kDq, kDk, kDv };

enum class Direction { forward, backward };

struct PlanKey {
  Direction direction;
  AttentionShape shape;
  num::Format format;
  auto operator<=>(const PlanKey&) const = default;
};

void check(fe::error_t status, const PlanKey& key, const char* step) {
  if (status.is_good()) return;
  throw BackendError(fmt::format("cuDNN fused attention {} (B={} NH={} T={} hs={}, {}): {} failed: {}; use "
                                 "--attention unfused",
                                 key.direction == Direction::forward ? "forward" : "backward", key.shape.B,
                                 key.shape.NH, key.shape.T, key.shape.hs, num::format_info(key.format).name, step,
                                 status.get_message()));
}

class CudnnAttention final : public FusedAttention {
 public:
  CudnnAttention(cudaStream_t stream, WorkspaceProvider workspace) : workspace_(std::move(workspace)) {
    if (const auto& problem = load_cudnn()) throw BackendError(*problem);
    guarded("creating a cuDNN handle", [&] { check_status(fe::detail::create_handle(&handle_), "cudnnCreate"); });
    try {
      guarded("setting the cuDNN handle's stream",
              [&] { check_status(fe::detail::set_stream(handle_, stream), "cudnnSetStream"); });
    } catch (...) {
      fe::detail::destroy_handle(handle_);  // the destructor does not run for a throwing constructor
      throw;
    }
  }
  ~CudnnAttention() override {
    plans_.clear();
    if (handle_ != nullptr) fe::detail::destroy_handle(handle_);
  }
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  std::string description() const override {
    return fmt::format("cuDNN {} fused attention (frontend {}.{}.{})", version_text(fe::detail::get_backend_version()),
                       CUDNN_FRONTEND_MAJOR_VERSION, CUDNN_FRONTEND_MINOR_VERSION, CUDNN_FRONTEND_PATCH_VERSION);
  }

  void forward(void* out, float* stats, const void* q, const void* k, const void* v, const AttentionShape& shape,
               num::Format format) override {
    const PlanKey key{Direction::forward, shape, format};
    std::unordered_map<std::int64_t, void*> pack{{kQ, const_cast<void*>(q)},
                                                 {kK, const_cast<void*>(k)},
                                                 {kV, const_cast<void*>(v)},
                                                 {kO, out},
                                                 {kStats, stats}};
    execute(key, pack);
  }

  void backward(void* dq, void* dk, void* dv, const void* dout, const void* q, const void* k, const void* v,
                const void* out, const float* stats, const AttentionShape& shape, num::Format format) override {
    const PlanKey key{Direction::backward, shape, format};
    std::unordered_map<std::int64_t, void*> pack{
        {kQ, const_cast<void*>(q)},  {kK, const_cast<void*>(k)},
        {kV, const_cast<void*>(v)},  {kO, const_cast<void*>(out)},
        {kDout, const_cast<void*>(dout)}, {kStats, const_cast<float*>(stats)},
        {kDq, dq}, {kDk, dk}, {kDv, dv}};
    execute(key, pack);
  }

 private:
  struct Plan {
    std::shared_ptr<fe::graph::Graph> graph;
    std::int64_t workspace_bytes = 0;
  };

  // The frontend reports some failures (a symbol missing from an older cuDNN) by exception.
  template <typename Body>
  static void guarded(const std::string& what, Body&& body) {
    try {
      body();
    } catch (const BackendError&) {
      throw;
    } catch (const OutOfMemoryError&) {
      throw;
    } catch (const std::exception& e) {
      throw BackendError(fmt::format("cuDNN fused attention: {}: {}; use --attention unfused", what, e.what()));
    }
  }

  static void check_status(cudnnStatus_t status, const char* call) {
    if (status != CUDNN_STATUS_SUCCESS)
      throw BackendError(fmt::format("cuDNN fused attention: {} failed: {}; use --attention unfused", call,
                                     fe::detail::get_error_string(status)));
  }

  void execute(const PlanKey& key, std::unordered_map<std::int64_t, void*>& pack) {
    guarded("running the attention", [&] {
      const Plan& plan = plan_for(key);
      void* workspace = plan.workspace_bytes > 0 ? workspace_(static_cast<std::size_t>(plan.workspace_bytes)) : nullptr;
      check(plan.graph->execute(handle_, pack, workspace), key, "execute");
    });
  }

  const Plan& plan_for(const PlanKey& key) {
    auto found = plans_.find(key);
    if (found != plans_.end()) return found->second;
    auto graph = key.direction == Direction::forward ? forward_graph(key) : backward_graph(key);
    check(graph->validate(), key, "validate");
    check(graph->build_operation_graph(handle_), key, "build_operation_graph");
    check(graph->create_execution_plans({fe::HeurMode_t::A}), key, "create_execution_plans");
    check(graph->check_support(), key, "check_support");
    check(graph->build_plans(), key, "build_plans");
    Plan plan{graph, 0};
    check(graph->get_workspace_size(plan.workspace_bytes), key, "get_workspace_size");
    return plans_.emplace(key, std::move(plan)).first->second;
  }

  static std::shared_ptr<fe::graph::Graph> new_graph(const PlanKey& key) {
    auto graph = std::make_shared<fe::graph::Graph>();
    graph->set_io_data_type(key.format == num::Format::fp16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    return graph;
  }

  // A packed [B,NH,T,hs] tensor of the io type.
  static std::shared_ptr<fe::graph::Tensor_attributes> heads(fe::graph::Graph& graph, const PlanKey& key,
                                                             const char* name, Uid uid) {
    return graph.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(head_dims(key.shape))
                            .set_stride(head_strides(key.shape)));
  }
  static std::vector<std::int64_t> head_dims(const AttentionShape& s) { return {s.B, s.NH, s.T, s.hs}; }
  static std::vector<std::int64_t> head_strides(const AttentionShape& s) {
    return {std::int64_t(s.NH) * s.T * s.hs, std::int64_t(s.T) * s.hs, s.hs, 1};
  }
  static std::vector<std::int64_t> stats_dims(const AttentionShape& s) { return {s.B, s.NH, s.T, 1}; }
  static std::vector<std::int64_t> stats_strides(const AttentionShape& s) { return {std::int64_t(s.NH) * s.T, s.T, 1, 1}; }
  static float scale(const AttentionShape& s) { return static_cast<float>(1.0 / std::sqrt(double(s.hs))); }

  static std::shared_ptr<fe::graph::Graph> forward_graph(const PlanKey& key) {
    auto graph = new_graph(key);
    auto q = heads(*graph, key, "q", kQ);
    auto k = heads(*graph, key, "k", kK);
    auto v = heads(*graph, key, "v", kV);
    auto options = fe::graph::SDPA_attributes()
                       .set_name("causal attention")
                       .set_generate_stats(true)
                       .set_causal_mask(true)
                       .set_attn_scale(scale(key.shape));
    auto [o, stats] = graph->sdpa(q, k, v, options);
    o->set_output(true).set_uid(kO).set_dim(head_dims(key.shape)).set_stride(head_strides(key.shape));
    stats->set_output(true)
        .set_uid(kStats)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim(stats_dims(key.shape))
        .set_stride(stats_strides(key.shape));
    return graph;
  }

  static std::shared_ptr<fe::graph::Graph> backward_graph(const PlanKey& key) {
    auto graph = new_graph(key);
    auto q = heads(*graph, key, "q", kQ);
    auto k = heads(*graph, key, "k", kK);
    auto v = heads(*graph, key, "v", kV);
    auto o = heads(*graph, key, "o", kO);
    auto dout = heads(*graph, key, "dout", kDout);
    auto stats = graph->tensor(fe::graph::Tensor_attributes()
                                   .set_name("stats")
                                   .set_uid(kStats)
                                   .set_data_type(fe::DataType_t::FLOAT)
                                   .set_dim(stats_dims(key.shape))
                                   .set_stride(stats_strides(key.shape)));
    auto options = fe::graph::SDPA_backward_attributes()
                       .set_name("causal attention backward")
                       .set_causal_mask(true)
                       .set_attn_scale(scale(key.shape));
    auto [dq, dk, dv] = graph->sdpa_backward(q, k, v, o, dout, stats, options);
    for (auto [tensor, uid] : {std::pair{dq, kDq}, std::pair{dk, kDk}, std::pair{dv, kDv}})
      tensor->set_output(true).set_uid(uid).set_dim(head_dims(key.shape)).set_stride(head_strides(key.shape));
    return graph;
  }

  WorkspaceProvider workspace_;
  cudnnHandle_t handle_ = nullptr;
  std::map<PlanKey, Plan> plans_;
};

}  // namespace

std::optional<std::string> fused_attention_unavailable() { return load_cudnn(); }

std::unique_ptr<FusedAttention> make_fused_attention(cudaStream_t stream, WorkspaceProvider workspace) {
  return std::make_unique<CudnnAttention>(stream, std::move(workspace));
}

}  // namespace mpbench::workloads
