#include "backends/cpu/mpi_communicator.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <climits>
#include <regex>

#include "amp/formats.hpp"
#include "backends/cpu/conversions.hpp"
#include "backends/cpu/vector_loops.hpp"
#include "core/error.hpp"

namespace mpbench::cpu {

namespace {

void check(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw BackendError(fmt::format("{} failed: {}", call, std::string(text, static_cast<std::size_t>(length))));
}

int as_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw UsageError(fmt::format("{} elements is more than one MPI call moves (2^31 - 1)", count));
  return static_cast<int>(count);
}

// The element loop of the user-defined sums: the MPI_Datatype says which format the words hold.
MPI_Datatype bf16_type = MPI_DATATYPE_NULL, f16_type = MPI_DATATYPE_NULL;

void sum_words(void* in, void* inout, int* length, MPI_Datatype* type) {
  sum_16bit_words(static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(inout),
                  static_cast<std::size_t>(*length), *type == bf16_type ? DType::bf16 : DType::f16);
}

// MPI's own 16-bit word, named twice, so that the reduction can tell bf16 from fp16.
MPI_Datatype named_word() {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  check(MPI_Type_contiguous(1, MPI_UINT16_T, &type), "MPI_Type_contiguous");
  check(MPI_Type_commit(&type), "MPI_Type_commit");
  return type;
}

class MpiWorld final : public ProcessGroup {
 public:
  MpiWorld() {
    int provided = 0;
    // Only the main thread calls MPI; the loops' OpenMP threads never do.
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // A failed call is an error the caller reports, not an abort in the middle of a case.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiWorld() override { MPI_Finalize(); }
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  double max(double value) override {
    double result = 0;
    check(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return result;
  }
  std::vector<std::string> all_gather(const std::string& text) override;
  std::string broadcast(const std::string& text, int root) override;

 protected:
  void abort_job(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }

 private:
  int rank_ = 0, size_ = 1;
};

std::vector<std::string> MpiWorld::all_gather(const std::string& text) {
  const int length = as_count(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
  long total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += lengths[static_cast<std::size_t>(r)];
  }
  std::string all(static_cast<std::size_t>(as_count(static_cast<std::size_t>(total))), '\0');
  check(MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                       MPI_COMM_WORLD),
        "MPI_Allgatherv");
  std::vector<std::string> texts;
  for (int r = 0; r < size_; ++r)
    texts.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  return texts;
}

std::string MpiWorld::broadcast(const std::string& text, int root) {
  int length = rank_ == root ? as_count(text.size()) : 0;
  check(MPI_Bcast(&length, 1, MPI_INT, root, MPI_COMM_WORLD), "MPI_Bcast");
  std::string result = rank_ == root ? text : std::string(static_cast<std::size_t>(length), '\0');
  check(MPI_Bcast(result.data(), length, MPI_CHAR, root, MPI_COMM_WORLD), "MPI_Bcast");
  return result;
}

// An MPI_Iallreduce in flight: MPI progresses it inside MPI calls, here each test() and wait().
class MpiRequest final : public CollectiveRequest {
 public:
  explicit MpiRequest(MPI_Request request) : request_(request) {}
  // A collective request cannot be cancelled; one never finished (its job is ending) is left to
  // MPI_Finalize or the abort.
  ~MpiRequest() override = default;
  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int flag = 0;
    check(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    return flag != 0;
  }
  void wait() override {
    if (request_ == MPI_REQUEST_NULL) return;
    check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
  }

 private:
  MPI_Request request_;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (bf16_type == MPI_DATATYPE_NULL) bf16_type = named_word();
    if (f16_type == MPI_DATATYPE_NULL) f16_type = named_word();
    check(MPI_Op_create(sum_words, /*commute=*/1, &sum_16bit_op_), "MPI_Op_create");
  }
  ~MpiCommunicator() override {
    MPI_Op_free(&sum_16bit_op_);
    MPI_Comm_free(&comm_);
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string library() const override {
    const nlohmann::json env = mpi_environment();
    return fmt::format("MPI ({} {})", env.value("library", "?"), env.value("version", "?"));
  }
  std::optional<std::string> unsupported(Collective, DType dtype) const override {
    if (dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16) return std::nullopt;
    return "MPI moves fp8 only as bytes and mpbench reduces fp32, bf16 and fp16 on CPUs: fp8 collectives run on "
           "NCCL 2.24+ on sm_90+ GPUs";
  }
  std::string reduction(DType dtype) const override {
    if (dtype == DType::f32) return "native (MPI_FLOAT, MPI_SUM)";
    return fmt::format("user-defined MPI_Op: each pair of {0} elements added in fp32 and rounded to {0} (MPI has no "
                       "16-bit float type)", dtype_name(dtype));
  }
  void all_reduce_sum(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) override {
    const void* from = send.data() == receive.data() ? MPI_IN_PLACE : send.data();
    check(MPI_Allreduce(from, receive.data(), as_count(count), type(send.dtype()), sum(send.dtype()), comm_),
          "MPI_Allreduce");
  }
  std::unique_ptr<CollectiveRequest> start_all_reduce_sum(const DeviceBuffer& send, DeviceBuffer& receive,
                                                           std::size_t count) override {
    const void* from = send.data() == receive.data() ? MPI_IN_PLACE : send.data();
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallreduce(from, receive.data(), as_count(count), type(send.dtype()), sum(send.dtype()), comm_, &request),
          "MPI_Iallreduce");
    return std::make_unique<MpiRequest>(request);
  }
  void reduce_scatter_sum(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) override {
    check(MPI_Reduce_scatter_block(send.data(), receive.data(), as_count(count), type(send.dtype()), sum(send.dtype()),
                                   comm_),
          "MPI_Reduce_scatter_block");
  }
  void all_gather(const DeviceBuffer& send, DeviceBuffer& receive, std::size_t count) override {
    const MPI_Datatype t = type(send.dtype());
    check(MPI_Allgather(send.data(), as_count(count), t, receive.data(), as_count(count), t, comm_), "MPI_Allgather");
  }
  void broadcast(DeviceBuffer& buffer, std::size_t count, int root) override {
    check(MPI_Bcast(buffer.data(), as_count(count), type(buffer.dtype()), root, comm_), "MPI_Bcast");
  }
  // MPI's collectives on host memory are done when they return.
  void synchronize() override {}

 private:
  MPI_Datatype type(DType dtype) const {
    switch (dtype) {
      case DType::f32: return MPI_FLOAT;
      case DType::bf16: return bf16_type;
      case DType::f16: return f16_type;
      default: throw UsageError(unsupported(Collective::all_reduce, dtype).value());
    }
  }
  MPI_Op sum(DType dtype) const { return dtype == DType::f32 ? MPI_SUM : sum_16bit_op_; }

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Op sum_16bit_op_ = MPI_OP_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::uint16_t sum_16bit(std::uint16_t a, std::uint16_t b, DType dtype) {
  if (dtype == DType::bf16) return num::f32_to_bf16_bits(num::bf16_bits_to_f32(a) + num::bf16_bits_to_f32(b));
  return num::f32_to_f16_bits(num::f16_bits_to_f32(a) + num::f16_bits_to_f32(b));
}

// The vector loops' add is this sum (fp32, one rounding to the format): the same bits at memory
// speed, where the scalar loop decodes and rounds one element at a time.
void sum_16bit_words(const std::uint16_t* in, std::uint16_t* inout, std::size_t n, DType dtype) {
#if MPBENCH_HAVE_AVX2_LOOPS
  if (cpu_has_vector_loops()) {
    const auto loop = dtype == DType::bf16 ? avx2::stream_bf16 : avx2::stream_f16;
    return loop(avx2::StreamOp::add, in, inout, inout, 0.0f, n);
  }
#endif
  for (std::size_t i = 0; i < n; ++i) inout[i] = sum_16bit(in[i], inout[i], dtype);
}

std::unique_ptr<ProcessGroup> join_mpi_world(const LaunchInfo& expected) {
  auto world = std::make_unique<MpiWorld>();
  if (world->size() != expected.world_size || world->rank() != expected.rank) {
    const std::string message = fmt::format(
        "the launcher ({}) says rank {} of {}, MPI says rank {} of {}: mpbench starts its ranks through MPI, so "
        "launch it with mpirun, mpiexec or srun --mpi=pmix (torchrun-style variables need an MPI launcher too)",
        expected.launcher, expected.rank, expected.world_size, world->rank(), world->size());
    throw UsageError(message);
  }
  return world;
}

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

nlohmann::json mpi_environment() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string full(text, static_cast<std::size_t>(length));
  full.erase(full.find_last_not_of(std::string("\0\n ", 3)) + 1);  // Open MPI counts the terminating NUL
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  nlohmann::json env = {{"library", full.substr(0, full.find_first_of(",\n"))}, {"version", nullptr},
                        {"standard", fmt::format("{}.{}", major, minor)}, {"library_version", full}};
  // "Open MPI v4.1.4, package: ...", "MPICH Version:\t4.0.2\n...", "Intel(R) MPI Library 2021.9 for Linux* OS".
  std::smatch match;
  static const std::regex open_mpi(R"(^Open MPI v([0-9][^,\s]*))"), mpich(R"(^MPICH Version:\s*([^\s]+))"),
      named(R"(^(.*?) ([0-9]+\.[0-9][^\s,]*))");
  if (std::regex_search(full, match, open_mpi)) env["library"] = "Open MPI", env["version"] = match[1].str();
  else if (std::regex_search(full, match, mpich)) env["library"] = "MPICH", env["version"] = match[1].str();
  else if (std::regex_search(full, match, named)) env["library"] = match[1].str(), env["version"] = match[2].str();
  return env;
}

}  // namespace mpbench::cpu
