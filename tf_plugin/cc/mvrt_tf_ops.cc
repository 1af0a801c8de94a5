// TensorFlow glue for the mvrt selective scan: ops MambaSelectiveScan and
// MambaSelectiveScanGrad, their shape functions and their CPU/GPU kernels.
//
// This is the only file of the project that includes TensorFlow headers. It
// does no arithmetic of its own for float32/float16/bfloat16: it validates
// the inputs (every bad input becomes InvalidArgument naming the input),
// wraps TensorFlow's tensor memory as borrowed mvrt buffers (zero copies),
// and calls the mvrt C API on the "cpu" backend or, for GPU kernels, on the
// "cuda" backend with TensorFlow's own compute stream.
//
// float64 (CPU only) exists for tf.test.compute_gradient finite-difference
// checks: the mvrt C API has no f64 scan, so T=double runs the project's
// double-precision reference (ops/selective_scan/scan_reference.c), the same
// code every backend is tested against. It is not meant to be fast.
//
// Optional operands D, z and delta_bias are always wired as inputs; the
// attrs has_D / has_z / has_delta_bias say whether each is real. An absent
// one is passed as an empty tensor (its gradient output is empty too).
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "xla/stream_executor/stream.h"
#include "xla/stream_executor/stream_executor.h"

#include "mvrt/mvrt.h"
#include "scan_reference.h"

namespace mvrt_tf {
namespace {

using tensorflow::DataType;
using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;
using tensorflow::shape_inference::DimensionHandle;
using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

// Status builders: absl's constructors with StrCat-style messages (TF's
// errors:: helpers are deprecated).
#define MVRT_TF_ERROR_FN(NAME, ABSL)                         \
  template <typename... Args>                                \
  absl::Status NAME(const Args &...args) {                   \
    return absl::ABSL(absl::StrCat(args...));                \
  }
namespace errors {
MVRT_TF_ERROR_FN(InvalidArgument, InvalidArgumentError)
MVRT_TF_ERROR_FN(Unavailable, UnavailableError)
MVRT_TF_ERROR_FN(ResourceExhausted, ResourceExhaustedError)
MVRT_TF_ERROR_FN(Unimplemented, UnimplementedError)
MVRT_TF_ERROR_FN(NotFound, NotFoundError)
MVRT_TF_ERROR_FN(DataLoss, DataLossError)
MVRT_TF_ERROR_FN(Internal, InternalError)
}  // namespace errors

constexpr int kInputCount = 8;
enum InputIndex { kU = 0, kDelta, kA, kB, kC, kD, kZ, kDeltaBias, kDout };
const char *const kInputNames[] = {"u", "delta", "A", "B", "C", "D", "z", "delta_bias", "dout"};

// ---------------------------------------------------------------------------
// Op definitions and shape functions.

// Attrs shared by both ops. T: type of u, delta, z, out (and of variable B/C).
// Tw: type of D, delta_bias (float32, or float64 when T is float64). Ta: type
// of A, last_state and dA: Tw, or complex64 for a complex A (mamba_ssm's
// selective_scan_ref with a complex A: constant B / C are then complex64,
// variable B / C real with 2L steps; float32 u, CPU only). TB/TC: the type
// of B/C as given, checked against T/Ta by the kernel (it depends on
// whether B/C is variable).
#define MVRT_TF_SCAN_ATTRS                                  \
  Attr("T: {half, bfloat16, float, double}")                \
      .Attr("Tw: {float, double} = DT_FLOAT")               \
      .Attr("Ta: {float, double, complex64} = DT_FLOAT")    \
      .Attr("TB: {half, bfloat16, float, double, complex64}") \
      .Attr("TC: {half, bfloat16, float, double, complex64}") \
      .Attr("has_D: bool = false")                          \
      .Attr("has_z: bool = false")                          \
      .Attr("has_delta_bias: bool = false")                 \
      .Attr("delta_softplus: bool = false")

// Shape inference common to forward and backward: merges what the inputs say
// about (batch, dim, L, N). Unknown dimensions (batch, length) stay unknown.
absl::Status InferScanDims(InferenceContext *c, DimensionHandle *batch, DimensionHandle *dim,
                           DimensionHandle *seqlen, DimensionHandle *dstate) {
  ShapeHandle u, delta, a;
  TF_RETURN_IF_ERROR(c->WithRank(c->input(kU), 3, &u));
  TF_RETURN_IF_ERROR(c->WithRank(c->input(kDelta), 3, &delta));
  TF_RETURN_IF_ERROR(c->Merge(u, delta, &u));
  TF_RETURN_IF_ERROR(c->WithRank(c->input(kA), 2, &a));
  *batch = c->Dim(u, 0);
  *dim = c->Dim(u, 1);
  *seqlen = c->Dim(u, 2);
  TF_RETURN_IF_ERROR(c->Merge(*dim, c->Dim(a, 0), dim));
  *dstate = c->Dim(a, 1);
  DataType ta = tensorflow::DT_FLOAT;
  TF_RETURN_IF_ERROR(c->GetAttr("Ta", &ta));
  const bool complex_a = ta == tensorflow::DT_COMPLEX64;

  for (int i : {kB, kC}) {
    ShapeHandle s = c->input(i);
    if (!c->RankKnown(s)) continue;
    const int rank = c->Rank(s);
    if (rank == 2) {
      TF_RETURN_IF_ERROR(c->Merge(*dim, c->Dim(s, 0), dim));
      TF_RETURN_IF_ERROR(c->Merge(*dstate, c->Dim(s, 1), dstate));
    } else if (rank == 3 || rank == 4) {
      TF_RETURN_IF_ERROR(c->Merge(*batch, c->Dim(s, 0), batch));
      TF_RETURN_IF_ERROR(c->Merge(*dstate, c->Dim(s, rank - 2), dstate));
      if (complex_a) {  // 2L steps: (re, im) of step l at 2l, 2l + 1
        DimensionHandle twice;
        TF_RETURN_IF_ERROR(c->Multiply(*seqlen, 2, &twice));
        TF_RETURN_IF_ERROR(c->Merge(twice, c->Dim(s, rank - 1), &twice));
      } else {
        TF_RETURN_IF_ERROR(c->Merge(*seqlen, c->Dim(s, rank - 1), seqlen));
      }
    } else {
      return errors::InvalidArgument(kInputNames[i], " must have rank 2 (constant), 3 or 4 "
                                     "(variable), got rank ", rank);
    }
  }
  bool has_d = false, has_z = false, has_bias = false;
  TF_RETURN_IF_ERROR(c->GetAttr("has_D", &has_d));
  TF_RETURN_IF_ERROR(c->GetAttr("has_z", &has_z));
  TF_RETURN_IF_ERROR(c->GetAttr("has_delta_bias", &has_bias));
  for (auto [idx, present] : {std::pair<int, bool>{kD, has_d}, {kDeltaBias, has_bias}}) {
    if (!present) continue;
    ShapeHandle s;
    TF_RETURN_IF_ERROR(c->WithRank(c->input(idx), 1, &s));
    TF_RETURN_IF_ERROR(c->Merge(*dim, c->Dim(s, 0), dim));
  }
  if (has_z) {
    ShapeHandle z;
    TF_RETURN_IF_ERROR(c->WithRank(c->input(kZ), 3, &z));
    TF_RETURN_IF_ERROR(c->Merge(*batch, c->Dim(z, 0), batch));
    TF_RETURN_IF_ERROR(c->Merge(*dim, c->Dim(z, 1), dim));
    TF_RETURN_IF_ERROR(c->Merge(*seqlen, c->Dim(z, 2), seqlen));
  }
  return absl::OkStatus();
}

REGISTER_OP("MambaSelectiveScan")
    .Input("u: T")
    .Input("delta: T")
    .Input("a: Ta")
    .Input("b: TB")
    .Input("c: TC")
    .Input("d: Tw")
    .Input("z: T")
    .Input("delta_bias: Tw")
    .Output("out: T")
    .Output("last_state: Ta")
    .MVRT_TF_SCAN_ATTRS
    .SetShapeFn([](InferenceContext *c) {
      DimensionHandle batch, dim, seqlen, dstate;
      TF_RETURN_IF_ERROR(InferScanDims(c, &batch, &dim, &seqlen, &dstate));
      c->set_output(0, c->MakeShape({batch, dim, seqlen}));
      c->set_output(1, c->MakeShape({batch, dim, dstate}));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Mamba selective scan (mamba_ssm selective_scan_fn semantics) through mvrt.
out: (batch, dim, L) in T. last_state: (batch, dim, N), the true final state.
Absent D / z / delta_bias are empty tensors with has_* = false.
)doc");

REGISTER_OP("MambaSelectiveScanGrad")
    .Input("u: T")
    .Input("delta: T")
    .Input("a: Ta")
    .Input("b: TB")
    .Input("c: TC")
    .Input("d: Tw")
    .Input("z: T")
    .Input("delta_bias: Tw")
    .Input("dout: T")
    .Output("du: T")
    .Output("ddelta: T")
    .Output("da: Ta")
    .Output("db: TB")
    .Output("dc: TC")
    .Output("dd: Tw")
    .Output("dz: T")
    .Output("ddelta_bias: Tw")
    .MVRT_TF_SCAN_ATTRS
    .SetShapeFn([](InferenceContext *c) {
      DimensionHandle batch, dim, seqlen, dstate;
      TF_RETURN_IF_ERROR(InferScanDims(c, &batch, &dim, &seqlen, &dstate));
      ShapeHandle dout;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(kDout), 3, &dout));
      ShapeHandle usual = c->MakeShape({batch, dim, seqlen});
      TF_RETURN_IF_ERROR(c->Merge(usual, dout, &usual));
      // Each gradient has the shape of its input (empty for absent ones).
      c->set_output(0, usual);
      c->set_output(1, usual);
      for (int i = kA; i < kInputCount; i++) c->set_output(i, c->input(i));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Gradients of sum(out * dout) for MambaSelectiveScan with respect to every
input. A gradient flowing into last_state is not supported (as in mamba_ssm).
)doc");

// ---------------------------------------------------------------------------
// Backends: opened once per process, never closed (kernels may run until the
// process exits). Thread-safe lazy initialization; a failed open is retried
// on the next call so that its message reaches the user each time.

struct BackendSlot {
  std::mutex mu;
  mvrt_backend_t *backend = nullptr;
};

absl::Status MapStatus(mvrt_status_t st, const std::string &what) {
  if (st == MVRT_OK) return absl::OkStatus();
  const std::string msg = what + ": " + mvrt_status_string(st) + ": " + mvrt_last_error();
  switch (st) {
    case MVRT_ERR_INVALID_ARGUMENT: return errors::InvalidArgument(msg);
    case MVRT_ERR_UNAVAILABLE: return errors::Unavailable(msg);
    case MVRT_ERR_OUT_OF_MEMORY: return errors::ResourceExhausted(msg);
    case MVRT_ERR_UNSUPPORTED: return errors::Unimplemented(msg);
    case MVRT_ERR_NOT_FOUND: return errors::NotFound(msg);
    case MVRT_ERR_IO: return errors::DataLoss(msg);
    case MVRT_ERR_DEVICE:
    case MVRT_ERR_INTERNAL:
    default: return errors::Internal(msg);
  }
}

absl::Status OpenBackend(BackendSlot *slot, const std::string &spec, mvrt_backend_t **out) {
  std::lock_guard<std::mutex> lock(slot->mu);
  if (!slot->backend) {
    mvrt_backend_t *b = nullptr;
    mvrt_status_t st = mvrt_backend_open(spec.c_str(), &b);
    if (st != MVRT_OK) return MapStatus(st, "mvrt_backend_open(\"" + spec + "\")");
    slot->backend = b;
  }
  *out = slot->backend;
  return absl::OkStatus();
}

absl::Status CpuBackend(mvrt_backend_t **out) {
  static BackendSlot slot;
  return OpenBackend(&slot, "cpu", out);
}

constexpr int kMaxGpus = 64;
absl::Status CudaBackend(int ordinal, mvrt_backend_t **out) {
  static BackendSlot slots[kMaxGpus];
  if (ordinal < 0 || ordinal >= kMaxGpus)
    return errors::Internal("mvrt_tf: GPU ordinal ", ordinal, " out of range");
  return OpenBackend(&slots[ordinal], "cuda:" + std::to_string(ordinal), out);
}

// ---------------------------------------------------------------------------
// Validation (shared by every kernel). Runs before anything is allocated or
// launched, so a bad input never reaches mvrt.

struct ScanAttrs {
  DataType T = tensorflow::DT_INVALID, Tw = tensorflow::DT_INVALID, Ta = tensorflow::DT_INVALID;
  DataType TB = tensorflow::DT_INVALID, TC = tensorflow::DT_INVALID;
  bool has_d = false, has_z = false, has_bias = false, softplus = false;

  explicit ScanAttrs(OpKernelConstruction *ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("T", &T));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("Tw", &Tw));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("Ta", &Ta));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("TB", &TB));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("TC", &TC));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("has_D", &has_d));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("has_z", &has_z));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("has_delta_bias", &has_bias));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("delta_softplus", &softplus));
  }
};

struct ScanDims {
  int64_t batch = 0, dim = 0, seqlen = 0, dstate = 0, groups = 1;
  bool b_variable = false, c_variable = false;
  bool empty() const { return batch == 0 || dim == 0 || seqlen == 0; }
};

std::string Name(DataType t) { return tensorflow::DataTypeString(t); }

absl::Status CheckShape(const Tensor &t, int idx, std::initializer_list<int64_t> want,
                        const char *layout) {
  TensorShape expect;
  for (int64_t d : want) expect.AddDim(d);
  if (t.shape() != expect)
    return errors::InvalidArgument(kInputNames[idx], " must have shape ", layout, " = ",
                                   expect.DebugString(), ", got ", t.shape().DebugString());
  return absl::OkStatus();
}

absl::Status ValidateInputs(OpKernelContext *ctx, const ScanAttrs &a, bool backward,
                            ScanDims *out) {
  // Types. A float64 scan is all-float64 (CPU gradient checking only).
  const bool f64 = a.T == tensorflow::DT_DOUBLE;
  const DataType weight = f64 ? tensorflow::DT_DOUBLE : tensorflow::DT_FLOAT;
  const bool complex_a = a.Ta == tensorflow::DT_COMPLEX64;
  if (complex_a && a.T != tensorflow::DT_FLOAT)
    return errors::Unimplemented("a complex A (complex64) runs with float32 u only, got ",
                                 Name(a.T));
  if (!complex_a && a.Ta != weight)
    return errors::InvalidArgument("A must be ", Name(weight), " (or complex64) when u is ",
                                   Name(a.T), ", got ", Name(a.Ta));
  if (a.Tw != weight)
    return errors::InvalidArgument("D and delta_bias must be ", Name(weight), " when u is ",
                                   Name(a.T), ", got ", Name(a.Tw));
  // constant B / C and last_state have A's type
  const DataType constant_bc = a.Ta;

  const Tensor &u = ctx->input(kU);
  if (u.dims() != 3)
    return errors::InvalidArgument("u must have rank 3 (batch, dim, L), got shape ",
                                   u.shape().DebugString());
  ScanDims d;
  d.batch = u.dim_size(0);
  d.dim = u.dim_size(1);
  d.seqlen = u.dim_size(2);
  TF_RETURN_IF_ERROR(CheckShape(ctx->input(kDelta), kDelta, {d.batch, d.dim, d.seqlen},
                                "(batch, dim, L) like u"));
  const Tensor &A = ctx->input(kA);
  if (A.dims() != 2 || A.dim_size(0) != d.dim)
    return errors::InvalidArgument("A must have shape (dim, N) = (", d.dim, ", N), got ",
                                   A.shape().DebugString());
  d.dstate = A.dim_size(1);
  if (d.dstate < 1 || d.dstate > MVRT_SCAN_MAX_DSTATE)
    return errors::InvalidArgument("A: the state size N = A.shape[1] must be in [1, ",
                                   MVRT_SCAN_MAX_DSTATE, "], got ", d.dstate);

  int64_t groups[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    const int idx = k == 0 ? kB : kC;
    const Tensor &t = ctx->input(idx);
    const DataType given = k == 0 ? a.TB : a.TC;
    bool variable = true;
    if (t.dims() == 2) {
      variable = false;
      TF_RETURN_IF_ERROR(CheckShape(t, idx, {d.dim, d.dstate}, "(dim, N) (constant)"));
      if (given != constant_bc)
        return errors::InvalidArgument(kInputNames[idx], " is constant (dim, N) and must be ",
                                       Name(constant_bc), " like A, got ", Name(given));
      groups[k] = 0;
    } else if (t.dims() == 3) {
      TF_RETURN_IF_ERROR(CheckShape(t, idx, {d.batch, d.dstate, complex_a ? 2 * d.seqlen : d.seqlen},
                                    complex_a ? "(batch, N, 2L) (variable, one group, complex A)"
                                              : "(batch, N, L) (variable, one group)"));
      groups[k] = 1;
    } else if (t.dims() == 4) {
      const int64_t g = t.dim_size(1);
      if (g < 1 || d.dim % g != 0)
        return errors::InvalidArgument(kInputNames[idx], " has ", g, " groups (shape[1]), which "
                                       "must be >= 1 and divide dim = ", d.dim);
      TF_RETURN_IF_ERROR(CheckShape(t, idx, {d.batch, g, d.dstate, complex_a ? 2 * d.seqlen : d.seqlen},
                                    complex_a ? "(batch, groups, N, 2L) (variable, complex A)"
                                              : "(batch, groups, N, L) (variable)"));
      groups[k] = g;
    } else {
      return errors::InvalidArgument(kInputNames[idx], " must have rank 2 (dim, N), 3 (batch, N, "
                                     "L) or 4 (batch, groups, N, L), got shape ",
                                     t.shape().DebugString());
    }
    if (variable && given != a.T)
      return errors::InvalidArgument(kInputNames[idx], " is variable and must have the type of u ",
                                     "(", Name(a.T), "), got ", Name(given));
    (k == 0 ? d.b_variable : d.c_variable) = variable;
  }
  if (groups[0] && groups[1] && groups[0] != groups[1])
    return errors::InvalidArgument("B and C must have the same number of groups, got ", groups[0],
                                   " and ", groups[1]);
  d.groups = groups[0] ? groups[0] : (groups[1] ? groups[1] : 1);

  struct Opt { int idx; bool present; };
  for (Opt o : {Opt{kD, a.has_d}, Opt{kDeltaBias, a.has_bias}}) {
    const Tensor &t = ctx->input(o.idx);
    if (o.present)
      TF_RETURN_IF_ERROR(CheckShape(t, o.idx, {d.dim}, "(dim,)"));
    else if (t.NumElements() != 0)
      return errors::InvalidArgument(kInputNames[o.idx], " is given but has_",
                                     kInputNames[o.idx], " is false");
  }
  const Tensor &z = ctx->input(kZ);
  if (a.has_z)
    TF_RETURN_IF_ERROR(CheckShape(z, kZ, {d.batch, d.dim, d.seqlen}, "(batch, dim, L) like u"));
  else if (z.NumElements() != 0)
    return errors::InvalidArgument("z is given but has_z is false");
  if (backward)
    TF_RETURN_IF_ERROR(CheckShape(ctx->input(kDout), kDout, {d.batch, d.dim, d.seqlen},
                                  "(batch, dim, L) like u"));
  *out = d;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Borrowed mvrt views of TensorFlow tensors. Every wrapper is freed when the
// kernel returns (mvrt never frees wrapped memory; TF owns it).

class Wrapped {
 public:
  explicit Wrapped(mvrt_backend_t *backend) : backend_(backend) {}
  ~Wrapped() {
    for (mvrt_buffer_t *b : buffers_) mvrt_buffer_free(b);
  }
  Wrapped(const Wrapped &) = delete;
  Wrapped &operator=(const Wrapped &) = delete;

  // A contiguous mvrt tensor over t's memory; absent ({} tensor) when t is
  // empty (only optional operands can be empty here).
  absl::Status View(const Tensor &t, const char *name, mvrt_tensor_t *out) {
    std::memset(out, 0, sizeof *out);
    if (t.NumElements() == 0) return absl::OkStatus();
    mvrt_dtype_t dt;
    switch (t.dtype()) {
      case tensorflow::DT_FLOAT: dt = MVRT_DTYPE_F32; break;
      case tensorflow::DT_HALF: dt = MVRT_DTYPE_F16; break;
      case tensorflow::DT_BFLOAT16: dt = MVRT_DTYPE_BF16; break;
      case tensorflow::DT_COMPLEX64: dt = MVRT_DTYPE_C64; break;
      default:
        return errors::InvalidArgument(name, ": type ", Name(t.dtype()),
                                       " is not supported by the mvrt scan");
    }
    auto data = t.tensor_data();
    mvrt_buffer_t *buf = nullptr;
    mvrt_status_t st = mvrt_buffer_wrap(backend_, const_cast<char *>(data.data()), data.size(),
                                        &buf);
    if (st != MVRT_OK) return MapStatus(st, std::string("mvrt_buffer_wrap(") + name + ")");
    buffers_.push_back(buf);
    int64_t shape[MVRT_MAX_RANK] = {0, 0, 0, 0};
    for (int i = 0; i < t.dims(); i++) shape[i] = t.dim_size(i);
    *out = mvrt_tensor_make(buf, 0, dt, t.dims(), shape);
    return absl::OkStatus();
  }

  // Zeroes t (stream-ordered on GPUs); nothing to do when it is empty.
  absl::Status Zero(mvrt_stream_t *stream, const Tensor &t, const char *name) {
    if (t.NumElements() == 0) return absl::OkStatus();
    mvrt_buffer_t *buf = nullptr;
    TF_RETURN_IF_ERROR(Buffer(t, &buf));
    const unsigned char zero = 0;
    return MapStatus(mvrt_buffer_fill(stream, buf, 0, t.TotalBytes(), &zero, 1),
                     std::string("mvrt_buffer_fill(") + name + ")");
  }

  absl::Status Buffer(const Tensor &t, mvrt_buffer_t **out) {
    auto data = t.tensor_data();
    mvrt_status_t st = mvrt_buffer_wrap(backend_, const_cast<char *>(data.data()), data.size(),
                                        out);
    if (st != MVRT_OK) return MapStatus(st, "mvrt_buffer_wrap");
    buffers_.push_back(*out);
    return absl::OkStatus();
  }

 private:
  mvrt_backend_t *backend_;
  std::vector<mvrt_buffer_t *> buffers_;
};

absl::Status FillArgs(Wrapped *w, OpKernelContext *ctx, const ScanAttrs &a,
                      mvrt_selective_scan_args_t *args) {
  std::memset(args, 0, sizeof *args);
  mvrt_tensor_t *slots[kInputCount] = {&args->u, &args->delta, &args->A, &args->B,
                                       &args->C, &args->D,     &args->z, &args->delta_bias};
  for (int i = 0; i < kInputCount; i++)
    TF_RETURN_IF_ERROR(w->View(ctx->input(i), kInputNames[i], slots[i]));
  args->delta_softplus = a.softplus ? 1 : 0;
  return absl::OkStatus();
}

// The mvrt stream of one kernel invocation: TF's compute stream on GPU
// (wrapped, never synchronized or destroyed by mvrt); on CPU a fresh stream
// per call, because TF runs kernels from many threads at once and an mvrt
// stream may be used by one thread at a time (CPU work completes before the
// call returns, so there is nothing to order between calls).
class StreamScope {
 public:
  ~StreamScope() { mvrt_stream_destroy(stream_); }
  absl::Status WrapNative(mvrt_backend_t *backend, void *native) {
    mvrt_status_t st = mvrt_stream_wrap(backend, native, &stream_);
    return MapStatus(st, "mvrt_stream_wrap(TensorFlow's stream)");
  }
  absl::Status Create(mvrt_backend_t *backend) {
    return MapStatus(mvrt_stream_create(backend, &stream_), "mvrt_stream_create");
  }
  mvrt_stream_t *get() const { return stream_; }

 private:
  mvrt_stream_t *stream_ = nullptr;
};

enum class Device { kCpu, kGpu };

absl::Status BackendFor(OpKernelContext *ctx, Device dev, mvrt_backend_t **backend,
                        StreamScope *stream) {
  if (dev == Device::kCpu) {
    TF_RETURN_IF_ERROR(CpuBackend(backend));
    return stream->Create(*backend);
  }
  auto *dc = ctx->op_device_context();
  stream_executor::Stream *s = dc ? dc->stream() : nullptr;
  if (!s) return errors::Internal("mvrt_tf: the GPU kernel has no TensorFlow stream");
  TF_RETURN_IF_ERROR(CudaBackend(s->parent()->device_ordinal(), backend));
  void *native = s->platform_specific_handle().stream;
  if (!native)
    return errors::Internal("mvrt_tf: TensorFlow's GPU stream has no native handle");
  return stream->WrapNative(*backend, native);
}

// ---------------------------------------------------------------------------
// float64 path (CPU, gradient checking only): the double-precision reference.

mvrt_scan_ref_problem_t RefProblem(OpKernelContext *ctx, const ScanAttrs &a, const ScanDims &d) {
  auto ptr = [&](int i) -> const double * {
    const Tensor &t = ctx->input(i);
    return t.NumElements() ? t.flat<double>().data() : nullptr;
  };
  mvrt_scan_ref_problem_t p;
  std::memset(&p, 0, sizeof p);
  p.batch = d.batch;
  p.dim = d.dim;
  p.seqlen = d.seqlen;
  p.dstate = d.dstate;
  p.groups = d.groups;
  p.b_variable = d.b_variable;
  p.c_variable = d.c_variable;
  p.delta_softplus = a.softplus;
  p.u = ptr(kU);
  p.delta = ptr(kDelta);
  p.A = ptr(kA);
  p.B = ptr(kB);
  p.C = ptr(kC);
  p.D = a.has_d ? ptr(kD) : nullptr;
  p.z = a.has_z ? ptr(kZ) : nullptr;
  p.delta_bias = a.has_bias ? ptr(kDeltaBias) : nullptr;
  return p;
}

// ---------------------------------------------------------------------------
// Kernels.

class ScanFwdOp : public OpKernel {
 public:
  ScanFwdOp(OpKernelConstruction *ctx, Device dev) : OpKernel(ctx), attrs_(ctx), dev_(dev) {}

  void Compute(OpKernelContext *ctx) override {
    ScanDims d;
    OP_REQUIRES_OK(ctx, ValidateInputs(ctx, attrs_, false, &d));
    Tensor *out = nullptr, *last = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(kU).shape(), &out));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({d.batch, d.dim, d.dstate}), &last));
    if (d.empty() && attrs_.T == tensorflow::DT_DOUBLE) {
      if (last->NumElements()) std::memset(last->data(), 0, last->TotalBytes());
      return;
    }
    if (attrs_.T == tensorflow::DT_DOUBLE) {
      OP_REQUIRES(ctx, dev_ == Device::kCpu, errors::Internal("float64 is CPU-only"));
      mvrt_scan_ref_problem_t p = RefProblem(ctx, attrs_, d);
      int rc = mvrt_scan_ref_forward(&p, out->flat<double>().data(), last->flat<double>().data());
      OP_REQUIRES(ctx, rc == 0, errors::Internal("mvrt_tf: float64 reference forward failed"));
      return;
    }
    mvrt_backend_t *backend = nullptr;
    StreamScope stream;
    OP_REQUIRES_OK(ctx, BackendFor(ctx, dev_, &backend, &stream));
    Wrapped w(backend);
    if (d.empty()) {
      // mvrt rejects empty dimensions; TF graphs meet them (empty batches).
      // h_{-1} = 0 is the state after zero steps.
      OP_REQUIRES_OK(ctx, w.Zero(stream.get(), *last, "last_state"));
      return;
    }
    mvrt_selective_scan_args_t args;
    OP_REQUIRES_OK(ctx, FillArgs(&w, ctx, attrs_, &args));
    mvrt_selective_scan_outputs_t outs;
    std::memset(&outs, 0, sizeof outs);
    OP_REQUIRES_OK(ctx, w.View(*out, "out", &outs.out));
    OP_REQUIRES_OK(ctx, w.View(*last, "last_state", &outs.last_state));
    OP_REQUIRES_OK(ctx, MapStatus(mvrt_selective_scan_fwd(stream.get(), &args, &outs),
                                  "mvrt_selective_scan_fwd"));
  }

 private:
  ScanAttrs attrs_;
  Device dev_;
};

class ScanBwdOp : public OpKernel {
 public:
  ScanBwdOp(OpKernelConstruction *ctx, Device dev) : OpKernel(ctx), attrs_(ctx), dev_(dev) {}

  void Compute(OpKernelContext *ctx) override {
    ScanDims d;
    OP_REQUIRES_OK(ctx, ValidateInputs(ctx, attrs_, true, &d));
    Tensor *g[kInputCount] = {};
    for (int i = 0; i < kInputCount; i++)
      OP_REQUIRES_OK(ctx, ctx->allocate_output(i, ctx->input(i).shape(), &g[i]));
    if (d.empty() && attrs_.T == tensorflow::DT_DOUBLE) {
      for (Tensor *t : g)
        if (t->NumElements()) std::memset(t->data(), 0, t->TotalBytes());
      return;
    }
    if (attrs_.T == tensorflow::DT_DOUBLE) {
      OP_REQUIRES(ctx, dev_ == Device::kCpu, errors::Internal("float64 is CPU-only"));
      mvrt_scan_ref_problem_t p = RefProblem(ctx, attrs_, d);
      auto ptr = [&](int i) { return g[i]->NumElements() ? g[i]->flat<double>().data() : nullptr; };
      mvrt_scan_ref_grads_t rg;
      rg.du = ptr(kU);
      rg.ddelta = ptr(kDelta);
      rg.dA = ptr(kA);
      rg.dB = ptr(kB);
      rg.dC = ptr(kC);
      rg.dD = ptr(kD);
      rg.dz = ptr(kZ);
      rg.ddelta_bias = ptr(kDeltaBias);
      int rc = mvrt_scan_ref_backward(&p, ctx->input(kDout).flat<double>().data(), &rg);
      OP_REQUIRES(ctx, rc != -2, errors::ResourceExhausted("float64 reference backward: no memory"));
      OP_REQUIRES(ctx, rc == 0, errors::Internal("mvrt_tf: float64 reference backward failed"));
      return;
    }
    mvrt_backend_t *backend = nullptr;
    StreamScope stream;
    OP_REQUIRES_OK(ctx, BackendFor(ctx, dev_, &backend, &stream));
    Wrapped w(backend);
    if (d.empty()) {
      // No step contributes: every gradient is zero.
      for (int i = 0; i < kInputCount; i++)
        OP_REQUIRES_OK(ctx, w.Zero(stream.get(), *g[i], kInputNames[i]));
      return;
    }
    mvrt_selective_scan_args_t args;
    OP_REQUIRES_OK(ctx, FillArgs(&w, ctx, attrs_, &args));
    mvrt_selective_scan_grads_t grads;
    std::memset(&grads, 0, sizeof grads);
    OP_REQUIRES_OK(ctx, w.View(ctx->input(kDout), "dout", &grads.dout));
    mvrt_tensor_t *slots[kInputCount] = {&grads.du, &grads.ddelta, &grads.dA, &grads.dB,
                                         &grads.dC, &grads.dD,     &grads.dz, &grads.ddelta_bias};
    for (int i = 0; i < kInputCount; i++) {
      const std::string name = std::string("d") + kInputNames[i];
      OP_REQUIRES_OK(ctx, w.View(*g[i], name.c_str(), slots[i]));
    }

    // Workspace from TensorFlow's allocator (no allocation inside mvrt).
    size_t ws_bytes = 0;
    OP_REQUIRES_OK(ctx, MapStatus(mvrt_selective_scan_bwd_workspace_size(backend, &args, &ws_bytes),
                                  "mvrt_selective_scan_bwd_workspace_size"));
    Tensor ws;
    mvrt_buffer_t *ws_buf = nullptr;
    if (ws_bytes > 0) {
      OP_REQUIRES(ctx, ws_bytes <= static_cast<size_t>(INT64_MAX),
                  errors::ResourceExhausted("mvrt_tf: backward workspace too large"));
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(tensorflow::DT_UINT8,
                                             TensorShape({static_cast<int64_t>(ws_bytes)}), &ws));
      OP_REQUIRES_OK(ctx, w.Buffer(ws, &ws_buf));
    }
    OP_REQUIRES_OK(ctx, MapStatus(mvrt_selective_scan_bwd(stream.get(), &args, &grads, ws_buf),
                                  "mvrt_selective_scan_bwd"));
  }

 private:
  ScanAttrs attrs_;
  Device dev_;
};

template <Device kDev>
class ScanFwd : public ScanFwdOp {
 public:
  explicit ScanFwd(OpKernelConstruction *ctx) : ScanFwdOp(ctx, kDev) {}
};
template <Device kDev>
class ScanBwd : public ScanBwdOp {
 public:
  explicit ScanBwd(OpKernelConstruction *ctx) : ScanBwdOp(ctx, kDev) {}
};

// The kernels are type-agnostic (mvrt takes the dtype at run time); one
// registration per T value keeps the device/type dispatch in TF's hands.
#define MVRT_TF_REGISTER(DEV, DEVENUM, TYPE)                                            \
  REGISTER_KERNEL_BUILDER(                                                              \
      Name("MambaSelectiveScan").Device(tensorflow::DEV).TypeConstraint<TYPE>("T"),     \
      ScanFwd<Device::DEVENUM>);                                                        \
  REGISTER_KERNEL_BUILDER(                                                              \
      Name("MambaSelectiveScanGrad").Device(tensorflow::DEV).TypeConstraint<TYPE>("T"), \
      ScanBwd<Device::DEVENUM>);

MVRT_TF_REGISTER(DEVICE_CPU, kCpu, float)
MVRT_TF_REGISTER(DEVICE_CPU, kCpu, Eigen::half)
MVRT_TF_REGISTER(DEVICE_CPU, kCpu, Eigen::bfloat16)
MVRT_TF_REGISTER(DEVICE_CPU, kCpu, double)

// GPU kernels: the mvrt "cuda" backend on TF's stream. Compiled and
// registered with every TensorFlow wheel (registration needs no CUDA headers
// or GOOGLE_CUDA); they only run under a GPU build of TensorFlow.
// A complex A (Ta complex64, float32 u only) has its own registration:
// the CUDA backend runs it since issue #32's complex kernels.
#ifndef MVRT_TF_NO_GPU
#define MVRT_TF_REGISTER_GPU(TYPE)                                                          \
  REGISTER_KERNEL_BUILDER(Name("MambaSelectiveScan")                                       \
                              .Device(tensorflow::DEVICE_GPU)                              \
                              .TypeConstraint<TYPE>("T")                                   \
                              .TypeConstraint<float>("Ta"),                                \
                          ScanFwd<Device::kGpu>);                                          \
  REGISTER_KERNEL_BUILDER(Name("MambaSelectiveScanGrad")                                   \
                              .Device(tensorflow::DEVICE_GPU)                              \
                              .TypeConstraint<TYPE>("T")                                   \
                              .TypeConstraint<float>("Ta"),                                \
                          ScanBwd<Device::kGpu>);
MVRT_TF_REGISTER_GPU(float)
MVRT_TF_REGISTER_GPU(Eigen::half)
MVRT_TF_REGISTER_GPU(Eigen::bfloat16)
REGISTER_KERNEL_BUILDER(Name("MambaSelectiveScan")
                            .Device(tensorflow::DEVICE_GPU)
                            .TypeConstraint<float>("T")
                            .TypeConstraint<tensorflow::complex64>("Ta"),
                        ScanFwd<Device::kGpu>);
REGISTER_KERNEL_BUILDER(Name("MambaSelectiveScanGrad")
                            .Device(tensorflow::DEVICE_GPU)
                            .TypeConstraint<float>("T")
                            .TypeConstraint<tensorflow::complex64>("Ta"),
                        ScanBwd<Device::kGpu>);
#endif

}  // namespace
}  // namespace mvrt_tf
