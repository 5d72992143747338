// oxide/launch.hpp: launch kernels written in Python (compiled into a wheel by oxide) from C++.
//
// Header-only, C++17. It reads a module's manifest (<package>/_oxide/<module>.json), loads the
// code for the current device (cubin or fatbin, the same rule as the Python runtime; of a module
// built in parts, the code of the part that holds the kernel, with that part's error sites), and
// launches a kernel on the caller's stream with typed arguments checked against the manifest.
// The CUDA driver is opened with dlopen("libcuda.so.1"): building needs no CUDA toolkit, and
// running needs only the driver (link with ${CMAKE_DL_LIBS}; CMake: oxide::headers).
//
//   #include <oxide/launch.hpp>
//   oxide::Module mod = oxide::Module::open(package_dir + "/_oxide", "sample.kernels");
//   mod.kernel("gelu").launch({blocks}, {256}, stream,
//                             oxide::slice(x_ptr, n), oxide::mut_slice(out_ptr, n), 1.5f);
//
// Arguments, in the kernel's parameter order (constexpr parameters are compiled in, not passed):
//   a scalar parameter   the C++ type of its dtype, exactly: f32 float, f64 double, i32 int32_t,
//                        i64 int64_t, u32 uint32_t, bool bool, ... (no silent conversions)
//   Slice[T]             oxide::slice(const T* data, int64_t length)   (mut_slice also accepted)
//   MutSlice/DisjointSlice[T]  oxide::mut_slice(T* data, int64_t length)
//   Tensor[T, N] (Mut/Disjoint)  oxide::tensor(T* data, {shape...}, {strides in elements...})
//   ox.tma.Descriptor[T, N]  oxide::tensor_map<T>(const CUtensorMap* map, {box...}, swizzle): a
//                        map the caller encoded (cuTensorMapEncodeTiled) for elements of T, the
//                        box it was encoded with, outermost first, and its swizzle in bytes (0,
//                        32, 64, 128): the kernel's checks read them
//   (f16 and bf16 parameters are not supported yet: such a kernel is refused at launch)
// A mismatch (count, dtype, view kind, const-ness, ndim, a negative length) throws
// oxide::Error naming the kernel, the parameter and its file:line, before anything is launched.
//
// launch_shared(grid, block, shared_bytes, stream, args...) gives each block shared_bytes of
// dynamic shared memory (ox.shared.dynamic): above 48 KiB it raises the function's
// MAX_DYNAMIC_SHARED_SIZE_BYTES first (cudaFuncSetAttribute's job in CUDA C++), once per size,
// and throws oxide::Error beyond the device's opt-in maximum (227 KiB on sm_90).
//
// A kernel with tensor parameters has a second instance whose tensor offsets are 32-bit
// arithmetic (the manifest's "index32_symbol"): it is launched when every tensor argument spans
// at most 2**31 - 1 elements (1 + sum (extent - 1) * |stride|) and has no extent or |stride|
// beyond that, the kernel as written otherwise, as the Python runtime chooses (docs/runtime.md,
// "Code for the device"). Each entry point declares only the parameters its code reads (the
// manifest's "param_slots" and "index32_param_slots"): every slot is packed, and the launch
// passes those. A kernel whose bounds checks launch-invariant facts prove (len(x) >= n for the
// guard i < n) has a fast instance without them (the manifest's "fast_symbol"), launched when its
// "fast_condition" holds over the packed slots, as the Python runtime chooses.
//
// Launch preconditions (the asserts over arguments and launch dimensions the compiler moves to
// the launch, and the grid limits its bounds proofs assume: a DisjointSlice written at
// thread.index_1d() needs a 1-D grid of 1-D blocks) are checked here before the launch, over the
// packed slots: the build wrote each as a program (oxide.abi.preconditions, the manifest's "code"),
// which this header runs with the evaluator the Python runtime's C launcher uses
// (oxide/preconditions.h) and the Python runtime runs in Python; a failure throws oxide::Error with
// the assert's file:line and what it says.
//
// It reads the manifest format the build writes (oxide.abi.manifest.LAUNCH_HPP_MANIFEST_FORMATS); a package
// built by an older oxide is refused with the advice to rebuild it. The manifest is read with the
// small JSON reader below, at run time, as the Python runtime reads it: the one file the build
// wrote for the wheel, with the code files beside it.
//
// The contract's numbers and names (manifest formats, slot layout, view kinds, dtype codes, the
// precondition opcodes and limits, the slot types, the TMA limits, the index32 limit) come from
// oxide/abi.h, generated from oxide/abi/ as
// the Python runtime's are: this header writes none of them.
//
// What the Python runtime does and this does not: device-side check failures (bounds checks,
// asserts) are reported by Python as oxide.KernelError; here the failing thread traps, and the
// launch's stream reports CUDA_ERROR_ILLEGAL_INSTRUCTION / LAUNCH_FAILED (a sticky error: the
// context is lost). Kernels that call grid.sync() (the manifest marks them "cooperative") and
// kernels with a struct or vector parameter (passed as its scalar fields; oxide/abi/params.py)
// and kernels with a view of vector elements (Slice[f32x4]: CUDA's float4*) or an optional view
// (Optional[Tensor[f32, 2]], which may be None) are refused, naming the parameter: launch those
// from Python.
// The caller keeps the arrays alive and on the stream's device until the kernel has run. Memory
// handed to a launch is not tracked here: memory that another stream frees (cuMemFreeAsync, an
// oxide.DeviceArray allocated on another stream, whose free() knows nothing of this launch)
// must wait for the launch, by an event recorded on the launch's stream after launch() returns
// and waited for by the freeing stream, and no other thread may free it before launch() returns.
#pragma once

#include <dlfcn.h>

#include "abi.h"            // generated from oxide/abi/ (python -m oxide.abi.header)
#include "index32.h"        // when a kernel's index32 instance runs, shared with the C launcher
#include "preconditions.h"  // the precondition evaluator, shared with the C launcher

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace oxide {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// ---- the CUDA driver, opened at run time -------------------------------------------------------
namespace driver {
using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;

struct Api {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuFuncGetAttribute)(int*, int, CUfunction) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
};

// the enum values of cuda.h that this header uses
constexpr int CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

inline const Api& api() {
  static Api table;
  static std::string problem;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      problem = "the CUDA driver (libcuda.so.1) could not be loaded: no NVIDIA driver on this machine?";
      return;
    }
    auto bind = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && problem.empty()) problem = std::string("the CUDA driver has no ") + name;
    };
    bind(table.cuInit, "cuInit");
    bind(table.cuCtxGetCurrent, "cuCtxGetCurrent");
    bind(table.cuCtxSetCurrent, "cuCtxSetCurrent");
    bind(table.cuCtxGetDevice, "cuCtxGetDevice");
    bind(table.cuDeviceGet, "cuDeviceGet");
    bind(table.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(table.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    bind(table.cuModuleLoadData, "cuModuleLoadData");
    bind(table.cuModuleGetFunction, "cuModuleGetFunction");
    bind(table.cuLaunchKernel, "cuLaunchKernel");
    bind(table.cuGetErrorName, "cuGetErrorName");
    bind(table.cuFuncGetAttribute, "cuFuncGetAttribute");
    bind(table.cuFuncSetAttribute, "cuFuncSetAttribute");
    if (problem.empty() && table.cuInit(0) != 0) problem = "cuInit failed: no usable CUDA device";
  });
  if (!problem.empty()) throw Error("oxide: " + problem);
  return table;
}

inline void check(CUresult result, const std::string& what) {
  if (result == 0) return;
  const char* name = nullptr;
  if (api().cuGetErrorName) api().cuGetErrorName(result, &name);
  throw Error("oxide: " + what + " failed: " + (name ? name : std::to_string(result)));
}
}  // namespace driver

// ---- a JSON reader, enough for manifests -------------------------------------------------------
namespace json {
struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool boolean = false;
  double number = 0;
  std::string text;  // a String's characters; a Number's text as written (integers read exactly from it)
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;

  const Value* find(const std::string& key) const {
    for (const auto& m : members)
      if (m.first == key) return &m.second;
    return nullptr;
  }
  const Value& at(const std::string& key, const std::string& where) const {
    const Value* v = find(key);
    if (!v) throw Error("oxide: " + where + ": the manifest has no '" + key + "'");
    return *v;
  }
};

class Parser {
 public:
  Parser(const std::string& text, std::string where) : s_(text), where_(std::move(where)) {}
  Value parse() {
    Value v = value();
    space();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  const std::string& s_;
  std::string where_;
  size_t i_ = 0;

  [[noreturn]] void fail(const std::string& why) {
    throw Error("oxide: " + where_ + ": broken JSON at offset " + std::to_string(i_) + ": " + why);
  }
  void space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::string string() {
    if (!eat('"')) fail("expected a string");
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size()) fail("bad escape");
        char e = s_[i_++];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'u': {
            if (i_ + 4 > s_.size()) fail("bad \\u escape");
            unsigned code = static_cast<unsigned>(std::strtoul(s_.substr(i_, 4).c_str(), nullptr, 16));
            i_ += 4;
            if (code < 0x80) {
              out += static_cast<char>(code);
            } else if (code < 0x800) {
              out += static_cast<char>(0xC0 | (code >> 6));
              out += static_cast<char>(0x80 | (code & 0x3F));
            } else {  // surrogate pairs never occur in names oxide writes
              out += static_cast<char>(0xE0 | (code >> 12));
              out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
              out += static_cast<char>(0x80 | (code & 0x3F));
            }
            break;
          }
          default: out += e;
        }
      } else {
        out += c;
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  Value value() {
    space();
    if (i_ >= s_.size()) fail("unexpected end");
    Value v;
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.kind = Value::Object;
      if (eat('}')) return v;
      do {
        std::string key = string();
        if (!eat(':')) fail("expected ':'");
        v.members.emplace_back(key, value());
      } while (eat(','));
      if (!eat('}')) fail("expected '}'");
    } else if (c == '[') {
      ++i_;
      v.kind = Value::Array;
      if (eat(']')) return v;
      do v.items.push_back(value());
      while (eat(','));
      if (!eat(']')) fail("expected ']'");
    } else if (c == '"') {
      v.kind = Value::String;
      v.text = string();
    } else if (s_.compare(i_, 4, "true") == 0) {
      v.kind = Value::Bool, v.boolean = true, i_ += 4;
    } else if (s_.compare(i_, 5, "false") == 0) {
      v.kind = Value::Bool, i_ += 5;
    } else if (s_.compare(i_, 4, "null") == 0) {
      i_ += 4;
    } else {
      char* end = nullptr;
      v.kind = Value::Number;
      v.number = std::strtod(s_.c_str() + i_, &end);
      if (end == s_.c_str() + i_) fail("unexpected character");
      const size_t next = static_cast<size_t>(end - s_.c_str());
      v.text = s_.substr(i_, next - i_);
      i_ = next;
    }
    return v;
  }
};
}  // namespace json

// ---- views ------------------------------------------------------------------------------------
template <class T>
struct Slice {
  T* data;
  int64_t length;
};
template <class T>
Slice<const T> slice(const T* data, int64_t length) { return {data, length}; }
template <class T>
Slice<T> mut_slice(T* data, int64_t length) { return {data, length}; }

template <class T>
struct Tensor {
  T* data;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements
};
template <class T>
Tensor<T> tensor(T* data, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides) {
  return {data, shape, strides};
}

// A TMA descriptor argument: the 128-byte CUtensorMap (copied at the launch) and its box.
template <class T>
struct TensorMap {
  const void* map;
  std::vector<int64_t> box;  // outermost first
  int swizzle;               // bytes: 0, 32, 64 or 128
};
template <class T>
TensorMap<T> tensor_map(const void* map, std::initializer_list<int64_t> box, int swizzle = 0) {
  return {map, box, swizzle};
}

namespace detail {
template <class T> constexpr const char* dtype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>) return "bool";
  else if constexpr (std::is_same_v<U, float>) return "f32";
  else if constexpr (std::is_same_v<U, double>) return "f64";
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 1) return "i8";
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 2) return "i16";
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 4) return "i32";
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 8) return "i64";
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 1) return "u8";
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 2) return "u16";
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 4) return "u32";
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 8) return "u64";
  else return "a type with no oxide dtype";
}
}  // namespace detail

struct Param {
  std::string name, kind, dtype;
  int ndim = 1;
};

namespace detail {
class LoadedCode;
driver::CUfunction function_of(LoadedCode& code, const std::string& symbol);
void allow_dynamic_shared(LoadedCode& code, driver::CUfunction fn, unsigned bytes, const std::string& kernel,
                          const std::string& where);
}  // namespace detail

namespace detail {
// ---- the parameter layout (oxide.abi.params, through oxide/abi.h) --------------------------------
// The view kind of `kind` (oxide.abi.views.ViewKind), or nullptr for a kind that is not a view.
inline const oxide_view_kind* view_kind(const std::string& kind) {
  for (const auto& k : oxide_view_kinds)
    if (kind == k.name) return &k;
  return nullptr;
}
inline bool is_tensor_view(const std::string& kind) {
  const oxide_view_kind* v = view_kind(kind);
  return v && v->is_tensor;
}
// A view's element type that is a vector (oxide.abi.vectors: "f32x4"), not a scalar (oxide_dtype_names)
// nor a record ("record{...}[n]", oxide.abi.records).
inline bool is_vector_dtype(const std::string& dtype) {
  for (int c = 1; c < OXIDE_DT_COUNT; ++c)
    if (dtype == oxide_dtype_names[c]) return false;
  return dtype.rfind("record{", 0) != 0;
}
inline bool is_writable_view(const std::string& kind) {
  const oxide_view_kind* v = view_kind(kind);
  return v && v->is_writable;
}

// The slots a parameter takes, and the dtype code (OXIDE_DT_) of each as the Python runtime
// packs it (oxide.abi.params.param_slot_dtypes: OXIDE_VIEW_POINTER_DT, OXIDE_VIEW_DIM_DT, a scalar's
// dtype, OXIDE_TENSOR_MAP_DT). The kinds this header launches only: the caller refuses the others.
inline void append_slot_codes(const Param& p, std::vector<int8_t>& codes) {
  if (p.kind == OXIDE_PARAM_CONSTEXPR) return;
  if (p.kind == OXIDE_PARAM_SCALAR) {
    int code = OXIDE_DT_NONE;
    for (int c = 1; c < OXIDE_DT_COUNT; ++c)
      if (p.dtype == oxide_dtype_names[c]) code = c;
    codes.insert(codes.end(), OXIDE_SCALAR_SLOTS, static_cast<int8_t>(code));
  } else if (p.kind == OXIDE_PARAM_TENSOR_MAP) {
    codes.insert(codes.end(), OXIDE_TENSOR_MAP_SLOTS, static_cast<int8_t>(OXIDE_TENSOR_MAP_DT));
  } else {
    const size_t n = is_tensor_view(p.kind) ? OXIDE_TENSOR_SLOTS(static_cast<size_t>(p.ndim)) : OXIDE_SLICE_SLOTS;
    codes.insert(codes.end(), OXIDE_VIEW_POINTER_SLOTS, static_cast<int8_t>(OXIDE_VIEW_POINTER_DT));
    codes.insert(codes.end(), n - OXIDE_VIEW_POINTER_SLOTS, static_cast<int8_t>(OXIDE_VIEW_DIM_DT));
  }
}

// The slot where each .param of the full entry point begins (oxide.abi.manifest.entry_param_starts):
// one per slot, but a TMA descriptor's map (its OXIDE_TENSOR_MAP_WORDS slots) is one.
inline std::vector<size_t> entry_param_starts(const std::vector<Param>& params) {
  std::vector<size_t> starts;
  std::vector<int8_t> codes;
  for (const auto& p : params) {
    const size_t at = codes.size();
    append_slot_codes(p, codes);
    if (p.kind == OXIDE_PARAM_TENSOR_MAP) {
      starts.push_back(at);
      starts.push_back(at + OXIDE_TENSOR_MAP_WORDS);
    } else {
      for (size_t s = at; s < codes.size(); ++s) starts.push_back(s);
    }
  }
  return starts;
}

// ---- launch preconditions (oxide.abi.preconditions), evaluated by oxide/preconditions.h ------------
// A kernel's programs (each precondition's "code" in the manifest) one after another, each followed
// by its check, as oxide_pre_prepare checks them; a program the evaluator cannot run throws here,
// when the kernel is looked up.
inline std::vector<oxide_pre_insn> precondition_code(const std::vector<const json::Value*>& programs,
                                                     const std::vector<int8_t>& slot_codes, const std::string& where) {
  auto malformed = [&](const std::string& why) -> Error {
    return Error("oxide: " + where + ": a launch precondition " + why +
                 " (a manifest newer than this oxide/launch.hpp, or a broken one: rebuild the package)");
  };
  std::vector<oxide_pre_insn> code;
  for (size_t i = 0; i < programs.size(); ++i) {
    if (programs[i]->kind != json::Value::Array) throw malformed("is not a list of instructions");
    for (const auto& pair : programs[i]->items) {
      oxide_pre_insn in{};
      if (pair.kind != json::Value::Array || pair.items.size() != 2) throw malformed("has an instruction that is not a pair");
      const std::string& op = pair.items[0].text;
      const std::string& x = pair.items[1].text;
      if (pair.items[0].kind != json::Value::Number || op.empty() || op.size() > 3 ||
          op.find_first_not_of("0123456789") != std::string::npos)
        throw malformed("has an opcode that is not one of the encoding");
      const int opcode = std::stoi(op);
      // a launcher's own OXIDE_OP_CHECK ends each program; a program in a manifest holds none
      if (opcode >= OXIDE_OP_COUNT || opcode == OXIDE_OP_CHECK) throw malformed("has an opcode that is not one of the encoding");
      in.op = static_cast<uint8_t>(opcode);
      if (pair.items[1].kind != json::Value::Number || x.empty() ||
          x.find_first_not_of("0123456789", x[0] == '-' ? 1 : 0) != std::string::npos)
        throw malformed("has an operand that is not an integer");
      errno = 0;
      if (x[0] == '-') {
        const long long v = std::strtoll(x.c_str(), nullptr, 10);
        in.bits = static_cast<uint64_t>(v), in.neg = v < 0 ? 1 : 0;
      } else {
        in.bits = std::strtoull(x.c_str(), nullptr, 10);
      }
      if (errno != 0) throw malformed("has an operand outside [-2**63, 2**64)");
      code.push_back(in);
    }
    oxide_pre_insn check{};
    check.op = OXIDE_OP_CHECK, check.bits = i;
    code.push_back(check);
  }
  if (const char* problem = oxide_pre_prepare(code.data(), static_cast<int>(code.size()), slot_codes.data(), slot_codes.size()))
    throw malformed(problem);
  return code;
}

// The index of the first precondition that does not hold over these slots and dimensions, or -1.
inline int check_preconditions(const std::vector<oxide_pre_insn>& code, const std::vector<uint64_t>& slots,
                               const unsigned* grid, const unsigned* block) {
  if (code.empty()) return -1;
  return oxide_preconditions_failed(code.data(), static_cast<int>(code.size()), slots.data(), grid, block);
}
}  // namespace detail

// A launch precondition (its program: the manifest's "code"), and what its failure says.
struct LaunchCheck {
  json::Value code;
  std::string message;
};

namespace detail {
// Whether an argument may go to a kernel's index32 instance (oxide/index32.h, the rule the C
// launcher applies): scalars and 1-D slices always, their index math is as written.
template <class T>
bool fits_index32(const T&) { return true; }
template <class T>
bool fits_index32(const Tensor<T>& t) {
  return oxide_fits_index32(std::min(t.shape.size(), t.strides.size()), t.shape.data(), t.strides.data()) != 0;
}
}  // namespace detail

// A kernel's fast instance (the manifest's "fast_symbol", oxide_build/passes/launch_instances.py):
// its body proven under launch-invariant facts (view lengths, sizes, the block's shape), launched
// instead of the kernel as written when `condition` (the manifest's "fast_condition", a program of
// the launch-precondition encoding over the same slots) holds; its own index32 instance and
// declared slots.
struct FastInstance {
  std::string symbol;
  json::Value condition;
  std::optional<std::vector<size_t>> param_slots;
  std::string index32_symbol;
  std::optional<std::vector<size_t>> index32_param_slots;
};

class Kernel {
 public:
  // index32_symbol: the entry point of the kernel's index32 instance ("" if none), launched
  // instead of `symbol` when every tensor argument spans at most 2**31 - 1 elements.
  // param_slots, index32_param_slots: the slots where the parameters each entry point declares
  // begin (the manifest's "param_slots": the compiler drops those its code never reads); none:
  // every parameter
  Kernel(std::shared_ptr<detail::LoadedCode> code, std::string symbol, std::string name, std::string where,
         std::vector<Param> params, std::vector<LaunchCheck> checks = {}, std::string index32_symbol = "",
         std::optional<std::vector<size_t>> param_slots = std::nullopt,
         std::optional<std::vector<size_t>> index32_param_slots = std::nullopt,
         std::optional<FastInstance> fast = std::nullopt)
      : code_(std::move(code)), symbol_(std::move(symbol)), name_(std::move(name)), where_(std::move(where)),
        params_(std::move(params)), index32_symbol_(std::move(index32_symbol)),
        param_slots_(std::move(param_slots)), index32_param_slots_(std::move(index32_param_slots)),
        fast_(std::move(fast)) {
    for (const auto& p : params_) {
      if (p.kind != OXIDE_PARAM_SCALAR && p.kind != OXIDE_PARAM_CONSTEXPR && p.kind != OXIDE_PARAM_TENSOR_MAP &&
          !detail::view_kind(p.kind))
        throw Error(where_ + ": kernel '" + name_ + "' parameter '" + p.name + "' is of kind '" + p.kind +
                    "', which this C++ API does not launch: launch it from Python");
      detail::append_slot_codes(p, slot_codes_);
    }
    starts_ = detail::entry_param_starts(params_);
    std::vector<const json::Value*> programs;
    for (auto& check : checks) {
      programs.push_back(&check.code);
      messages_.push_back(std::move(check.message));
    }
    preconditions_ = detail::precondition_code(programs, slot_codes_, where_ + ": kernel '" + name_ + "'");
    if (fast_ && fast_->symbol.empty()) fast_.reset();
    if (fast_)
      fast_code_ = detail::precondition_code({&fast_->condition}, slot_codes_,
                                             where_ + ": kernel '" + name_ + "' (its fast instance's condition)");
    std::vector<const std::optional<std::vector<size_t>>*> all_declared{&param_slots_, &index32_param_slots_};
    if (fast_) all_declared.insert(all_declared.end(), {&fast_->param_slots, &fast_->index32_param_slots});
    for (const auto* declared : all_declared)
      if (*declared)
        for (size_t s : **declared) {
          bool known = false;
          for (size_t start : starts_) known = known || start == s;
          if (!known)
            throw Error(where_ + ": kernel '" + name_ + "': the manifest's param_slots name slot " + std::to_string(s) +
                        ", where no parameter begins (rebuild the package)");
        }
  }

  const std::string& name() const { return name_; }
  std::vector<Param> params() const { return params_; }  // a copy: safe on a temporary Kernel

  // Launches on `stream` (nullptr: the legacy default stream) of the current context.
  template <class... Args>
  void launch(std::initializer_list<unsigned> grid, std::initializer_list<unsigned> block, void* stream,
              const Args&... args) const {
    launch_shared(grid, block, 0, stream, args...);
  }

  template <class... Args>
  void launch_shared(std::initializer_list<unsigned> grid, std::initializer_list<unsigned> block,
                     unsigned shared_bytes, void* stream, const Args&... args) const {
    std::vector<const Param*> passed;
    for (const auto& p : params_)
      if (p.kind != OXIDE_PARAM_CONSTEXPR) passed.push_back(&p);
    if (passed.size() != sizeof...(Args)) {
      throw Error(where_ + ": kernel '" + name_ + "' takes " + std::to_string(passed.size()) +
                  " arguments, got " + std::to_string(sizeof...(Args)));
    }
    std::vector<uint64_t> slots;
    slots.reserve(slot_codes_.size());
    size_t index = 0;
    (pack(*passed[index++], args, slots), ...);
    unsigned g[3] = {1, 1, 1}, b[3] = {1, 1, 1};
    dims(grid, g, "grid");
    dims(block, b, "block");
    const int failed = detail::check_preconditions(preconditions_, slots, g, b);
    if (failed >= 0)
      throw Error(messages_[static_cast<size_t>(failed)] + " (kernel '" + name_ + "', grid " + std::to_string(g[0]) +
                  "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]) + ", block " + std::to_string(b[0]) + "x" +
                  std::to_string(b[1]) + "x" + std::to_string(b[2]) + ")");
    // the fast instance where its launch-invariant facts hold: no check of it can fail
    const bool fast = fast_ && detail::check_preconditions(fast_code_, slots, g, b) < 0;
    const std::string& wide = fast ? fast_->symbol : symbol_;
    const std::string& narrow = fast ? fast_->index32_symbol : index32_symbol_;
    // the arguments are checked first: a wrong call fails the same with or without a GPU
    const bool index32 = !narrow.empty() && (detail::fits_index32(args) && ...);
    // every slot is packed; kernelParams points at those the entry point declares
    const auto& declared = fast ? (index32 ? fast_->index32_param_slots : fast_->param_slots)
                                : (index32 ? index32_param_slots_ : param_slots_);
    std::vector<void*> pointers;
    for (size_t s : declared ? *declared : starts_) pointers.push_back(&slots[s]);
    driver::CUfunction fn = detail::function_of(*code_, index32 ? narrow : wide);
    if (shared_bytes > 0) detail::allow_dynamic_shared(*code_, fn, shared_bytes, name_, where_);
    const auto& api = driver::api();
    driver::check(api.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], shared_bytes,
                                     static_cast<driver::CUstream>(stream), pointers.data(), nullptr),
                  "launching '" + name_ + "'");
  }

 private:
  std::shared_ptr<detail::LoadedCode> code_;
  std::string symbol_, name_, where_;
  std::vector<Param> params_;
  std::string index32_symbol_;
  std::optional<std::vector<size_t>> param_slots_, index32_param_slots_;
  std::optional<FastInstance> fast_;
  std::vector<oxide_pre_insn> fast_code_;  // its condition, with its check
  std::vector<int8_t> slot_codes_;  // the dtype code of each packed slot
  std::vector<size_t> starts_;   // the slot where each parameter of the full entry point begins
  std::vector<oxide_pre_insn> preconditions_;  // oxide/preconditions.h's code of the manifest's
  std::vector<std::string> messages_;          // what each precondition's failure says

  void dims(std::initializer_list<unsigned> in, unsigned* out, const char* what) const {
    if (in.size() < 1 || in.size() > 3)
      throw Error(where_ + ": kernel '" + name_ + "': " + what + " needs 1 to 3 dimensions");
    size_t i = 0;
    for (unsigned v : in) {
      if (v == 0) throw Error(where_ + ": kernel '" + name_ + "': a " + what + " dimension is 0");
      out[i++] = v;
    }
  }
  [[noreturn]] void wrong(const Param& p, const std::string& expected, const std::string& got) const {
    throw Error(where_ + ": kernel '" + name_ + "' parameter '" + p.name + "' is " + expected + ", got " + got);
  }
  static bool writable(const std::string& kind) { return detail::is_writable_view(kind); }
  static std::string shown(const Param& p) {
    if (p.kind == OXIDE_PARAM_SCALAR) return p.dtype;
    const bool ranked = detail::is_tensor_view(p.kind) || p.kind == OXIDE_PARAM_TENSOR_MAP;
    return p.kind + "[" + p.dtype + (ranked ? ", " + std::to_string(p.ndim) : "") + "]";
  }

  template <class T>
  void pack(const Param& p, const T& value, std::vector<uint64_t>& slots) const {
    static_assert(std::is_arithmetic_v<T>, "oxide: pass a scalar, oxide::slice/mut_slice or oxide::tensor");
    if (p.kind != OXIDE_PARAM_SCALAR) wrong(p, shown(p), std::string("a scalar ") + detail::dtype_of<T>());
    if (p.dtype != detail::dtype_of<T>()) wrong(p, p.dtype, detail::dtype_of<T>());
    uint64_t slot = 0;
    std::memcpy(&slot, &value, sizeof(T));
    slots.push_back(slot);
  }
  template <class T>
  void pack(const Param& p, const Slice<T>& view, std::vector<uint64_t>& slots) const {
    std::string got = std::string(std::is_const_v<T> ? "slice[" : "mut_slice[") + detail::dtype_of<T>() + "]";
    if (!detail::view_kind(p.kind) || detail::is_tensor_view(p.kind)) wrong(p, shown(p), got);
    if (p.dtype != detail::dtype_of<T>()) wrong(p, shown(p), got);
    if (writable(p.kind) && std::is_const_v<T>) wrong(p, shown(p) + " (writable: pass oxide::mut_slice)", got);
    if (view.length < 0) wrong(p, shown(p), "a negative length " + std::to_string(view.length));
    if (!view.data && view.length > 0) wrong(p, shown(p), "a null pointer");
    slots.push_back(reinterpret_cast<uint64_t>(view.data));
    slots.push_back(static_cast<uint64_t>(view.length));
  }
  template <class T>
  void pack(const Param& p, const TensorMap<T>& m, std::vector<uint64_t>& slots) const {
    std::string got = std::string("tensor_map[") + detail::dtype_of<T>() + ", " + std::to_string(m.box.size()) + "]";
    if (p.kind != OXIDE_PARAM_TENSOR_MAP || p.dtype != detail::dtype_of<T>() || static_cast<int>(m.box.size()) != p.ndim)
      wrong(p, shown(p), got);
    if (!m.map) wrong(p, shown(p), "a null tensor map");
    int64_t elements = 1;
    for (int64_t extent : m.box) {
      if (extent < 1 || extent > OXIDE_TENSOR_MAP_MAX_BOX)
        wrong(p, shown(p), "a box extent of " + std::to_string(extent) + " (1 to " +
                               std::to_string(OXIDE_TENSOR_MAP_MAX_BOX) + ")");
      elements *= extent;
    }
    const int swizzles[] = OXIDE_TENSOR_MAP_SWIZZLES;
    if (std::find(std::begin(swizzles), std::end(swizzles), m.swizzle) == std::end(swizzles)) {
      std::string listed;
      for (int s : swizzles) listed += (listed.empty() ? "" : s == swizzles[std::size(swizzles) - 1] ? " or " : ", ") + std::to_string(s);
      wrong(p, shown(p), "a swizzle of " + std::to_string(m.swizzle) + " bytes (" + listed + ")");
    }
    uint64_t words[OXIDE_TENSOR_MAP_WORDS];
    std::memcpy(words, m.map, sizeof words);
    slots.insert(slots.end(), words, words + OXIDE_TENSOR_MAP_WORDS);
    slots.push_back(static_cast<uint64_t>(elements) | static_cast<uint64_t>(m.swizzle) << OXIDE_TENSOR_MAP_SWIZZLE_SHIFT);
  }
  template <class T>
  void pack(const Param& p, const Tensor<T>& view, std::vector<uint64_t>& slots) const {
    std::string got = std::string("tensor[") + detail::dtype_of<T>() + ", " + std::to_string(view.shape.size()) + "]";
    if (!detail::is_tensor_view(p.kind) || p.dtype != detail::dtype_of<T>())
      wrong(p, shown(p), got);
    if (writable(p.kind) && std::is_const_v<T>) wrong(p, shown(p) + " (writable: pass a non-const pointer)", got);
    if (static_cast<int>(view.shape.size()) != p.ndim || view.strides.size() != view.shape.size())
      wrong(p, shown(p), got + " with " + std::to_string(view.strides.size()) + " strides");
    for (int64_t extent : view.shape)
      if (extent < 0) wrong(p, shown(p), "a negative extent");
    slots.push_back(reinterpret_cast<uint64_t>(view.data));
    for (int64_t extent : view.shape) slots.push_back(static_cast<uint64_t>(extent));
    for (int64_t stride : view.strides) slots.push_back(static_cast<uint64_t>(stride));
  }
};

namespace detail {
// A module's code (the manifest's own "cubins" and "ptx", or those of one of its "parts": a build
// compiles a module of many independent kernels in parts, each into code of its own), loaded
// once per context it is used in.
class LoadedCode {
 public:
  // code: the object of `manifest` that holds this code's "cubins", "ptx" and "error_sites"
  LoadedCode(std::string dir, std::string path, std::shared_ptr<const json::Value> manifest, const json::Value* code)
      : dir_(std::move(dir)), path_(std::move(path)), manifest_(std::move(manifest)), code_(code) {}
  const json::Value& manifest() const { return *manifest_; }
  const json::Value& code() const { return *code_; }
  const std::string& path() const { return path_; }

  driver::CUfunction function(const std::string& symbol) {
    std::lock_guard<std::mutex> lock(mutex_);
    driver::CUfunction fn = nullptr;
    driver::check(driver::api().cuModuleGetFunction(&fn, loaded(), symbol.c_str()),
                  "finding '" + symbol + "' in " + path_);
    return fn;
  }

  // Makes `fn` take `bytes` of dynamic shared memory per block: above its limit (by default
  // 48 KiB less its static shared memory) cuFuncSetAttribute raises it first, as
  // cudaFuncSetAttribute in CUDA C++, once per function and size; more than the device's opt-in
  // maximum throws, before the launch. The limit is cached: a launch asking no more pays a lookup.
  void allow_dynamic_shared(driver::CUfunction fn, unsigned bytes, const std::string& kernel,
                            const std::string& where) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto& api = driver::api();
    auto known = shared_limits_.find(fn);
    if (known == shared_limits_.end()) {
      int limit = 0;
      driver::check(api.cuFuncGetAttribute(&limit, driver::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn),
                    "reading the dynamic shared memory limit of '" + kernel + "'");
      known = shared_limits_.emplace(fn, static_cast<unsigned>(limit < 0 ? 0 : limit)).first;
    }
    if (bytes <= known->second) return;
    int static_bytes = 0, optin = 0;
    driver::CUdevice dev = 0;
    driver::check(api.cuFuncGetAttribute(&static_bytes, driver::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
                  "reading the static shared memory of '" + kernel + "'");
    driver::check(api.cuCtxGetDevice(&dev), "cuCtxGetDevice");
    driver::check(api.cuDeviceGetAttribute(&optin, driver::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev),
                  "reading the device's shared memory per block");
    const uint64_t most = optin > static_bytes ? static_cast<uint64_t>(optin - static_bytes) : 0;
    if (bytes > most)
      throw Error(where + ": kernel '" + kernel + "' asks for " + std::to_string(bytes) +
                  " bytes of dynamic shared memory per block; the device gives a block at most " +
                  std::to_string(most) + " bytes (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN " +
                  std::to_string(optin) + ", less the kernel's " + std::to_string(static_bytes) +
                  " bytes of static shared memory): use less shared memory per block; the kernel was not launched");
    driver::check(api.cuFuncSetAttribute(fn, driver::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         static_cast<int>(bytes)),
                  "allowing '" + kernel + "' " + std::to_string(bytes) + " bytes of dynamic shared memory");
    known->second = bytes;
  }

 private:
  std::string dir_, path_;
  std::shared_ptr<const json::Value> manifest_;
  const json::Value* code_;
  std::mutex mutex_;
  std::map<driver::CUcontext, driver::CUmodule> modules_;
  std::map<driver::CUfunction, unsigned> shared_limits_;  // MAX_DYNAMIC_SHARED_SIZE_BYTES as read or raised

  // The module in the current context (the device's primary context when none is current).
  driver::CUmodule loaded() {
    const auto& api = driver::api();
    driver::CUcontext ctx = nullptr;
    driver::check(api.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
    if (!ctx) {
      driver::CUdevice dev = 0;
      driver::check(api.cuDeviceGet(&dev, 0), "cuDeviceGet");
      driver::check(api.cuDevicePrimaryCtxRetain(&ctx, dev), "retaining the primary context");
      driver::check(api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    }
    auto it = modules_.find(ctx);
    if (it != modules_.end()) return it->second;
    driver::CUdevice dev = 0;
    driver::check(api.cuCtxGetDevice(&dev), "cuCtxGetDevice");
    int major = 0, minor = 0;
    driver::check(api.cuDeviceGetAttribute(&major, driver::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                  "reading the compute capability");
    driver::check(api.cuDeviceGetAttribute(&minor, driver::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                  "reading the compute capability");
    const int have = major * 10 + minor;
    // the device's own arch (its arch-specific "sm_90a" cubin first), else the newest older one
    // of the same major version; an arch-specific cubin runs on its exact arch only
    std::string file;
    int best = -1;
    for (const auto& c : code_->at("cubins", path_).members) {
      char* end = nullptr;
      int number = static_cast<int>(std::strtol(c.first.c_str() + 3, &end, 10));  // "sm_90", "sm_90a"
      const bool specific = end != nullptr && *end != '\0';
      if (specific && number != have) continue;
      const int rank = number * 2 + (specific ? 1 : 0);
      if (number / 10 == major && number <= have && rank > best) best = rank, file = c.second.text;
    }
    if (file.empty())
      if (const auto* ptx = code_->find("ptx"))
        for (const auto& c : ptx->members) file = c.second.text;  // the driver JIT-compiles it
    if (file.empty())
      throw Error("oxide: " + path_ + " has no code for sm_" + std::to_string(have) + ": rebuild with that arch");
    std::ifstream in(dir_ + "/" + file, std::ios::binary);
    if (!in) throw Error("oxide: cannot read " + dir_ + "/" + file);
    std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    image.push_back('\0');  // PTX must be NUL-terminated
    driver::CUmodule module = nullptr;
    driver::check(api.cuModuleLoadData(&module, image.data()), "loading " + dir_ + "/" + file);
    modules_[ctx] = module;
    return module;
  }
};

inline driver::CUfunction function_of(LoadedCode& code, const std::string& symbol) { return code.function(symbol); }
inline void allow_dynamic_shared(LoadedCode& code, driver::CUfunction fn, unsigned bytes, const std::string& kernel,
                                 const std::string& where) {
  code.allow_dynamic_shared(fn, bytes, kernel, where);
}
}  // namespace detail

class Module {
 public:
  // Reads <artifact_dir>/<module>.json (artifact_dir: the package's _oxide directory). Needs no GPU.
  static Module open(const std::string& artifact_dir, const std::string& module) {
    std::string path = artifact_dir + "/" + module + ".json";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("oxide: cannot read the manifest " + path + " (is the package built and installed?)");
    std::stringstream text;
    text << in.rdbuf();
    const std::string body = text.str();
    auto manifest = std::make_shared<json::Value>(json::Parser(body, path).parse());
    const auto& format = manifest->at("format", path);
    // the formats this header reads (oxide.abi.manifest.LAUNCH_HPP_MANIFEST_FORMATS)
    const int readable[] = OXIDE_LAUNCH_HPP_MANIFEST_FORMATS;
    bool known = false, older = format.kind == json::Value::Number;
    std::string listed;
    for (int f : readable) {
      known = known || (format.kind == json::Value::Number && format.number == f);
      older = older && format.number < f;
      listed += (listed.empty() ? "" : " or ") + std::to_string(f);
    }
    if (!known)
      throw Error("oxide: " + path + ": manifest format is not " + listed +
                  (older ? " (an older oxide built it: rebuild the package with this oxide)"
                         : " (another oxide release built it)"));
    Module m;
    // the code of the kernels no part names, then each part's (oxide.abi.manifest.ModulePart), its
    // path ending in "#part<N>" as the Python runtime names it (oxide/runtime/artifacts.py, kernel_part)
    m.codes_.push_back(std::make_shared<detail::LoadedCode>(artifact_dir, path, manifest, manifest.get()));
    if (const auto* parts = manifest->find("parts")) {
      if (parts->kind != json::Value::Array) throw Error("oxide: " + path + ": the manifest's 'parts' is not a list");
      for (size_t i = 0; i < parts->items.size(); ++i)
        m.codes_.push_back(std::make_shared<detail::LoadedCode>(artifact_dir, path + "#part" + std::to_string(i + 1),
                                                                manifest, &parts->items[i]));
    }
    return m;
  }

  // The kernel called `name`; for a generic kernel, `specialization` picks one
  // ({{"T", "f32"}}). Needs no GPU: the code is loaded at the first launch.
  Kernel kernel(const std::string& name, const std::map<std::string, std::string>& specialization = {}) const {
    const std::string& path = codes_.front()->path();
    const json::Value& manifest = codes_.front()->manifest();
    const json::Value* found = nullptr;
    for (const auto& k : manifest.at("kernels", path).items) {
      if (k.at("name", path).text != name) continue;
      bool match = true;
      if (const auto* spec = k.find("specialization"))
        for (const auto& kv : specialization) {
          const auto* v = spec->find(kv.first);
          match = match && v && v->text == kv.second;
        }
      if (match) {
        if (found) throw Error("oxide: " + path + ": kernel '" + name + "' is generic: pass a specialization");
        found = &k;
      }
    }
    if (!found) throw Error("oxide: " + path + ": no kernel '" + name + "' (with that specialization)");
    const std::shared_ptr<detail::LoadedCode>& code = part_of(name);
    std::string where = found->at("file", path).text + ":" +
                        std::to_string(static_cast<int>(found->at("line", path).number));
    std::vector<LaunchCheck> checks;
    if (const auto* pre = found->find("preconditions"))
      for (const auto& c : pre->items) {
        const json::Value& program = c.at("code", path);
        std::string message = where + ": launch precondition failed";
        const int site = static_cast<int>(c.at("site", path).number);
        if (const auto* sites = code->code().find("error_sites"))
          for (const auto& s : sites->items)
            if (const auto* id = s.find("id"); id && static_cast<int>(id->number) == site) {
              const auto* file = s.find("file");
              const auto* line = s.find("line");
              const auto* what = s.find("what");
              if (file && line && what)
                message = file->text + ":" + std::to_string(static_cast<int>(line->number)) +
                          ": launch precondition failed: " + what->text;
            }
        checks.push_back(LaunchCheck{program, message});
      }
    if (const auto* coop = found->find("cooperative"); coop && coop->boolean)
      throw Error(where + ": kernel '" + name +
                  "' calls grid.sync(), which needs the cooperative launch oxide's Python runtime makes: "
                  "launch it from Python");
    std::vector<Param> params;
    for (const auto& p : found->at("params", path).items) {
      Param param{p.at("name", path).text, p.at("kind", path).text, p.at("dtype", path).text, 1};
      if (param.kind == OXIDE_PARAM_STRUCT || param.kind == OXIDE_PARAM_VECTOR)
        throw Error(where + ": kernel '" + name + "' parameter '" + param.name + "' is a " + param.kind + " (" +
                    param.dtype + "), passed as its scalar fields, which this C++ API does not pack yet: "
                    "launch it from Python");
      if (detail::view_kind(param.kind) && detail::is_vector_dtype(param.dtype))
        throw Error(where + ": kernel '" + name + "' parameter '" + param.name + "' is a view of " + param.dtype +
                    " elements (CUDA's float4*, half2*), which this C++ API does not pack yet: launch it from Python");
      if (const auto* optional = p.find("optional"); optional && optional->boolean)
        throw Error(where + ": kernel '" + name + "' parameter '" + param.name + "' is an optional view (" +
                    param.kind + " that may be None: a flag slot after its view's), which this C++ API does not "
                    "pack yet: launch it from Python");
      if (const auto* nd = p.find("ndim")) param.ndim = static_cast<int>(nd->number);
      params.push_back(param);
    }
    std::string index32_symbol;
    if (const auto* narrow = found->find("index32_symbol"); narrow && narrow->kind == json::Value::String)
      index32_symbol = narrow->text;
    auto slots_of = [found](const char* key) -> std::optional<std::vector<size_t>> {
      const auto* list = found->find(key);
      if (!list || list->kind != json::Value::Array) return std::nullopt;  // every parameter
      std::vector<size_t> out;
      for (const auto& s : list->items) out.push_back(static_cast<size_t>(s.number));
      return out;
    };
    std::optional<FastInstance> fast;
    if (const auto* f = found->find("fast_symbol"); f && f->kind == json::Value::String && !f->text.empty()) {
      std::string fast_narrow;
      if (const auto* n = found->find("fast_index32_symbol"); n && n->kind == json::Value::String) fast_narrow = n->text;
      fast = FastInstance{f->text, found->at("fast_condition", path), slots_of("fast_param_slots"), fast_narrow,
                          slots_of("fast_index32_param_slots")};
    }
    return Kernel(code, found->at("symbol", path).text, name, where, params, std::move(checks), index32_symbol,
                  slots_of("param_slots"), slots_of("index32_param_slots"), std::move(fast));
  }

 private:
  std::vector<std::shared_ptr<detail::LoadedCode>> codes_;  // the module's own code, then its parts'

  // The code that holds kernel `name`: the part that names it, else the module's own.
  const std::shared_ptr<detail::LoadedCode>& part_of(const std::string& name) const {
    for (size_t i = 1; i < codes_.size(); ++i)
      if (const auto* kernels = codes_[i]->code().find("kernels"))
        for (const auto& k : kernels->items)
          if (k.kind == json::Value::String && k.text == name) return codes_[i];
    return codes_.front();
  }
};

}  // namespace oxide
