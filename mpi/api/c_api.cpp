// The C API (src/distmm.h) over MultiplyPlan (multiply.hpp): handles, status codes, a
// thread-local last error, and every error of a collective call agreed on by the ranks, so each
// returns the same code and message and none is left waiting.
#include "../../src/distmm.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../../cuda/device_info.hpp"
#include "../../cuda/ozaki_accuracy.hpp"
#include "multiply.hpp"

using namespace distmm;

struct distmm_layout_s {
  std::optional<Layout> layout;
  int status = DISTMM_SUCCESS;  // a problem in the constructor's arguments, reported by plan_create
  std::string error;
};

struct distmm_plan_s {
  MultiplyPlan plan;
  Comm comm;  // a duplicate of the caller's, for the agreements (the caller may free theirs)
  std::string algorithm;
  distmm_index extent[3] = {0, 0, 0};
};

namespace {

thread_local std::string last_error;

int fail(int status, std::string message) {
  last_error = std::move(message);
  return status;
}

// Collective: the lowest failing rank's status and message on every rank (status 0 where none
// failed). One allreduce when nothing failed.
int agree(MPI_Comm comm, int status, const std::string& message) {
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int who = status != DISTMM_SUCCESS ? rank : size;
  MPI_Allreduce(MPI_IN_PLACE, &who, 1, MPI_INT, MPI_MIN, comm);
  if (who == size) return DISTMM_SUCCESS;
  long long head[2] = {status, static_cast<long long>(message.size())};
  MPI_Bcast(head, 2, MPI_LONG_LONG, who, comm);
  std::string msg = rank == who ? message : std::string(static_cast<std::size_t>(head[1]), ' ');
  MPI_Bcast(msg.data(), static_cast<int>(head[1]), MPI_CHAR, who, comm);
  return fail(static_cast<int>(head[0]), std::move(msg));
}

// Runs f, turning any exception into a status and message (no exception leaves the C API).
template <class F>
std::pair<int, std::string> guarded(F&& f) {
  try {
    f();
    return {DISTMM_SUCCESS, ""};
  } catch (const std::bad_alloc&) {
    return {DISTMM_ERR_MEMORY, "distmm: out of memory"};
  } catch (const UsageError& e) {
    return {DISTMM_ERR_USAGE, e.what()};
  } catch (const MemoryUnsupported& e) {
    return {DISTMM_ERR_UNSUPPORTED, e.what()};
  } catch (const std::invalid_argument& e) {
    return {DISTMM_ERR_LAYOUT, e.what()};
  } catch (const std::exception& e) {
    return {DISTMM_ERR_INTERNAL, std::string("distmm: internal error: ") + e.what()};
  } catch (...) {
    return {DISTMM_ERR_INTERNAL, "distmm: internal error (unknown exception)"};
  }
}

// The communicator usable, or a message (local: no collective can run without it).
std::string comm_problem(MPI_Comm comm) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return "distmm: MPI is not initialised (or already finalised): call MPI_Init first";
  if (comm == MPI_COMM_NULL) return "distmm: the communicator is MPI_COMM_NULL: pass the ranks' communicator";
  return "";
}

bool is_dtype(int d) { return d >= DISTMM_F32 && d <= DISTMM_C64; }
bool is_op(int o) { return o >= DISTMM_OP_N && o <= DISTMM_OP_C; }
Dtype to_dtype(int d) {
  constexpr Dtype map[] = {Dtype::f32, Dtype::f64, Dtype::c32, Dtype::c64};
  return map[d];
}
Op to_op(int o) { return o == DISTMM_OP_N ? Op::N : o == DISTMM_OP_T ? Op::T : Op::C; }
StorageOrder to_order(int o) { return o == DISTMM_ROW_MAJOR ? StorageOrder::row_major : StorageOrder::col_major; }

// A new layout handle from a constructor that may throw or find a bad argument: the problem is
// kept for plan_create, which reports it collectively.
template <class F>
int make_layout(distmm_layout* out, const char* what, std::string problem, F&& build) {
  if (!out) return fail(DISTMM_ERR_ARGUMENT, std::string("distmm_layout_") + what + ": out is NULL");
  *out = nullptr;
  distmm_layout_s* l = new (std::nothrow) distmm_layout_s;
  if (!l) return fail(DISTMM_ERR_MEMORY, "distmm: out of memory");
  if (!problem.empty()) {
    l->status = DISTMM_ERR_ARGUMENT, l->error = std::string("distmm_layout_") + what + ": " + problem;
  } else {
    auto [st, msg] = guarded([&] { l->layout = build(); });
    if (st != DISTMM_SUCCESS) l->status = st == DISTMM_ERR_LAYOUT ? DISTMM_ERR_ARGUMENT : st, l->error = msg;
  }
  *out = l;
  return DISTMM_SUCCESS;
}

std::string order_problem(int order, const char* name) {
  return order == DISTMM_COL_MAJOR || order == DISTMM_ROW_MAJOR
             ? ""
             : std::string(name) + " " + std::to_string(order) + " is neither DISTMM_COL_MAJOR (0) nor DISTMM_ROW_MAJOR (1)";
}

int slabs(distmm_layout* out, bool rows, distmm_index m, distmm_index n, int nranks, const distmm_index* sizes,
          distmm_index ld, int order) {
  std::string problem = order_problem(order, "order");
  if (problem.empty() && nranks < 0) problem = "nranks " + std::to_string(nranks) + " is negative";
  if (problem.empty() && nranks > 0 && !sizes) problem = "sizes is NULL: pass one size per rank";
  return make_layout(out, rows ? "row_slabs" : "col_slabs", problem, [&] {
    std::vector<index_t> s(sizes, sizes + std::max(nranks, 0));
    return rows ? Layout::row_slabs(m, n, std::move(s), ld, to_order(order))
                : Layout::col_slabs(m, n, std::move(s), ld, to_order(order));
  });
}

// The options string: key=value words separated by spaces or commas.
std::string parse_options(const char* text, MultiplyOptions& o) {
  if (!text) return "";
  std::string s(text);
  std::replace(s.begin(), s.end(), ',', ' ');
  std::istringstream in(s);
  for (std::string word; in >> word;) {
    const auto eq = word.find('=');
    const std::string key = word.substr(0, eq), value = eq == std::string::npos ? "" : word.substr(eq + 1);
    if (eq == std::string::npos || value.empty())
      return "option \"" + word + "\" is not key=value (keys: algorithm, engine, accuracy, relabel, direct, emulate_device)";
    if (key == "algorithm") {
      const auto a = parse_algorithm(value);
      if (!a) return "algorithm \"" + value + "\" is unknown: use auto, summa, cannon, dns, cuboid, caps or scalapack";
      o.algorithm = *a;
    } else if (key == "engine") {
      o.engine = value;
    } else if (key == "accuracy") {  // the INT8-emulated engines' target (docs/accuracy.md)
      ozaki::Accuracy a;
      if (std::string why = ozaki::parse_accuracy(value, a, "accuracy="); !why.empty()) return why;
      o.engine_options.accuracy = value;
    } else if (key == "relabel") {
      if (value != "0" && value != "1") return "relabel=" + value + ": use relabel=1 or relabel=0";
      o.relabel = value == "1";
    } else if (key == "direct") {
      if (value != "0" && value != "1") return "direct=" + value + ": use direct=1 or direct=0";
      o.direct = value == "1";
    } else if (key == "emulate_device") {
      if (value != "0" && value != "1") return "emulate_device=" + value + ": use emulate_device=1 or emulate_device=0";
      o.emulate_device = value == "1";
    } else {
      return "option \"" + key + "\" is unknown: use algorithm=, engine=, accuracy=, relabel=, direct= or emulate_device=";
    }
  }
  return "";
}

int plan_create(distmm_plan* out, MPI_Comm comm, int dtype, int op_a, distmm_layout la, int op_b,
                distmm_layout lb, distmm_layout lc, const char* options) {
  const char* fn = "distmm_plan_create: ";
  if (out) *out = nullptr;
  if (const std::string p = comm_problem(comm); !p.empty()) return fail(DISTMM_ERR_MPI, fn + p);
  // Local checks, then agreed on: every rank returns the first failing rank's code and message.
  int status = DISTMM_SUCCESS;
  std::string error;
  MultiplyOptions opts;
  auto check = [&](bool bad, int st, const std::string& msg) {
    if (bad && status == DISTMM_SUCCESS) status = st, error = fn + msg;
  };
  check(!out, DISTMM_ERR_ARGUMENT, "out is NULL");
  check(!is_dtype(dtype), DISTMM_ERR_ARGUMENT,
        "dtype " + std::to_string(dtype) + " is unknown: use DISTMM_F32, DISTMM_F64, DISTMM_C32 or DISTMM_C64");
  check(!is_op(op_a), DISTMM_ERR_ARGUMENT, "op_a " + std::to_string(op_a) + " is unknown: use DISTMM_OP_N, _T or _C");
  check(!is_op(op_b), DISTMM_ERR_ARGUMENT, "op_b " + std::to_string(op_b) + " is unknown: use DISTMM_OP_N, _T or _C");
  const distmm_layout ls[3] = {la, lb, lc};
  for (int i = 0; i < 3; ++i) {
    const std::string name(1, "ABC"[i]);
    check(!ls[i], DISTMM_ERR_ARGUMENT, "the layout of " + name + " is NULL: make it with a distmm_layout_ function");
    if (ls[i]) check(ls[i]->status != DISTMM_SUCCESS, ls[i]->status, name + ": " + ls[i]->error);
  }
  const std::string bad_options = parse_options(options, opts);
  check(!bad_options.empty(), DISTMM_ERR_USAGE, bad_options);
  if (const int st = agree(comm, status, error); st != DISTMM_SUCCESS) return st;
  // The same dtype and ops on every rank (the layouts' agreement is the plan's).
  int sig[6] = {dtype, op_a, op_b, -dtype, -op_a, -op_b};
  MPI_Allreduce(MPI_IN_PLACE, sig, 6, MPI_INT, MPI_MIN, comm);
  if (sig[0] != -sig[3] || sig[1] != -sig[4] || sig[2] != -sig[5])
    return fail(DISTMM_ERR_ARGUMENT,
                std::string(fn) + "the ranks passed different dtypes or ops: every rank must pass the same");

  distmm_plan_s* p = nullptr;
  auto [st, msg] = guarded([&] {
    MultiplyPlan plan(Comm(comm, false), to_dtype(dtype), to_op(op_a), *la->layout, to_op(op_b), *lb->layout,
                      *lc->layout, opts);
    p = new distmm_plan_s{std::move(plan), Comm(comm, false).dup(), "", {0, 0, 0}};
    p->algorithm = p->plan.algorithm_name();
    const Comm c(comm, false);
    for (int i = 0; i < 3; ++i)
      p->extent[i] = local_extent(resolve(*ls[i]->layout, c, std::string(1, "ABC"[i])).ranks[std::size_t(c.rank())]);
  });
  // Agreed again: a rank that failed where the others did not still leaves with them.
  if (const int s = agree(comm, st, msg); s != DISTMM_SUCCESS) {
    delete p;
    return s;
  }
  *out = p;
  return DISTMM_SUCCESS;
}

// A plan's local call: f(plan), or the error of a NULL plan (refused on this rank alone).
template <class F>
int query(distmm_plan plan, const char* fn, F&& f) {
  return plan ? f(*plan) : fail(DISTMM_ERR_ARGUMENT, std::string(fn) + ": plan is NULL");
}

// Collective: the local checks agreed on, then the plan's execution.
int execute(distmm_plan_s& p, const void* alpha, const void* A, const void* B, const void* beta, void* C) {
  const char* fn = "distmm_plan_execute";
  std::string error;
  if (!alpha || !beta) error = std::string(fn) + ": alpha or beta is NULL: pass pointers to one element each";
  const void* bufs[3] = {A, B, C};
  for (int i = 0; i < 3 && error.empty(); ++i)
    if (!bufs[i] && p.extent[i] > 0)
      error = std::string(fn) + ": " + "ABC"[i] + " is NULL on a rank whose layout holds " + std::to_string(p.extent[i]) +
              " elements from it: pass this rank's base pointer";
  if (const int st = agree(p.comm.get(), error.empty() ? DISTMM_SUCCESS : DISTMM_ERR_ARGUMENT, error); st != DISTMM_SUCCESS)
    return st;
  auto [st, msg] = guarded([&] { p.plan.execute_call(p.plan.dtype(), alpha, A, B, beta, C); });
  return st == DISTMM_SUCCESS ? st : fail(st, msg);
}

}  // namespace

extern "C" {

const char* distmm_last_error(void) { return last_error.c_str(); }

size_t distmm_last_error_copy(char* buf, size_t size) {
  if (buf && size > 0) {
    const size_t n = std::min(size - 1, last_error.size());
    std::memcpy(buf, last_error.data(), n);
    buf[n] = '\0';
  }
  return last_error.size();
}

const char* distmm_status_name(int status) {
  switch (status) {
    case DISTMM_SUCCESS: return "DISTMM_SUCCESS";
    case DISTMM_ERR_ARGUMENT: return "DISTMM_ERR_ARGUMENT";
    case DISTMM_ERR_LAYOUT: return "DISTMM_ERR_LAYOUT";
    case DISTMM_ERR_USAGE: return "DISTMM_ERR_USAGE";
    case DISTMM_ERR_MEMORY: return "DISTMM_ERR_MEMORY";
    case DISTMM_ERR_MPI: return "DISTMM_ERR_MPI";
    case DISTMM_ERR_UNSUPPORTED: return "DISTMM_ERR_UNSUPPORTED";
    case DISTMM_ERR_INTERNAL: return "DISTMM_ERR_INTERNAL";
  }
  return "DISTMM_ERR_UNKNOWN";
}

int distmm_agree(MPI_Comm comm, int status, const char* message) {
  if (const std::string p = comm_problem(comm); !p.empty()) return fail(DISTMM_ERR_MPI, "distmm_agree: " + p);
  return agree(comm, status, message ? message : "");
}

int distmm_agree_f(MPI_Fint comm, int status, const char* message) {
  return distmm_agree(MPI_Comm_f2c(comm), status, message);
}

int distmm_layout_block_cyclic(distmm_layout* out, distmm_index m, distmm_index n, distmm_index mb, distmm_index nb,
                               int nprow, int npcol, int rsrc, int csrc, distmm_index lld, int grid_order) {
  const bool ok = grid_order == DISTMM_GRID_ROW_MAJOR || grid_order == DISTMM_GRID_COL_MAJOR;
  return make_layout(out, "block_cyclic",
                     ok ? "" : "grid_order " + std::to_string(grid_order) + " is neither DISTMM_GRID_ROW_MAJOR (0) nor DISTMM_GRID_COL_MAJOR (1)",
                     [&] {
                       return Layout::block_cyclic(m, n, mb, nb, nprow, npcol, rsrc, csrc, lld,
                                                   grid_order == DISTMM_GRID_COL_MAJOR ? GridOrder::col_major
                                                                                       : GridOrder::row_major);
                     });
}

int distmm_layout_scalapack(distmm_layout* out, const int desc[9], int nprow, int npcol, int grid_order) {
  if (!desc) return make_layout(out, "scalapack", "desc is NULL: pass a descinit_ descriptor", [] { return Layout(); });
  return make_layout(out, "scalapack", "", [&] {
    if (grid_order != DISTMM_GRID_ROW_MAJOR && grid_order != DISTMM_GRID_COL_MAJOR)
      throw std::invalid_argument("grid_order " + std::to_string(grid_order) + " is neither DISTMM_GRID_ROW_MAJOR (0) nor DISTMM_GRID_COL_MAJOR (1)");
    return Layout::scalapack(desc, nprow, npcol, grid_order == DISTMM_GRID_COL_MAJOR ? GridOrder::col_major : GridOrder::row_major);
  });
}

int distmm_layout_row_slabs(distmm_layout* out, distmm_index m, distmm_index n, int nranks, const distmm_index* sizes,
                            distmm_index ld, int order) {
  return slabs(out, true, m, n, nranks, sizes, ld, order);
}

int distmm_layout_col_slabs(distmm_layout* out, distmm_index m, distmm_index n, int nranks, const distmm_index* sizes,
                            distmm_index ld, int order) {
  return slabs(out, false, m, n, nranks, sizes, ld, order);
}

int distmm_layout_blocks(distmm_layout* out, distmm_index m, distmm_index n, int count, const distmm_block* blocks) {
  std::string problem = count < 0 ? "count " + std::to_string(count) + " is negative" : "";
  if (problem.empty() && count > 0 && !blocks) problem = "blocks is NULL with count " + std::to_string(count);
  for (int i = 0; problem.empty() && i < count; ++i)
    if (!order_problem(blocks[i].order, "order").empty())
      problem = "block " + std::to_string(i) + ": " + order_problem(blocks[i].order, "order");
  return make_layout(out, "blocks", problem, [&] {
    std::vector<LayoutBlock> v(static_cast<std::size_t>(std::max(count, 0)));
    for (int i = 0; i < count; ++i) {
      const distmm_block& b = blocks[i];
      v[std::size_t(i)] = {b.row, b.col, b.rows, b.cols, b.owner, b.offset, b.ld, to_order(b.order)};
    }
    return Layout::blocks(m, n, std::move(v));
  });
}

int distmm_layout_set_memory(distmm_layout layout, int memory) {
  if (!layout) return fail(DISTMM_ERR_ARGUMENT, "distmm_layout_set_memory: layout is NULL");
  if (memory != DISTMM_MEMORY_HOST && memory != DISTMM_MEMORY_DEVICE) {
    if (layout->status == DISTMM_SUCCESS)
      layout->status = DISTMM_ERR_ARGUMENT,
      layout->error = "distmm_layout_set_memory: memory " + std::to_string(memory) +
                      " is neither DISTMM_MEMORY_HOST (0) nor DISTMM_MEMORY_DEVICE (1)";
    return DISTMM_SUCCESS;  // reported by distmm_plan_create, on every rank
  }
  if (layout->layout) layout->layout = layout->layout->with_memory(memory == DISTMM_MEMORY_DEVICE ? Memory::device : Memory::host);
  return DISTMM_SUCCESS;
}

int distmm_device_support(void) { return gpu_support_built() ? 1 : 0; }

int distmm_layout_destroy(distmm_layout layout) {
  delete layout;
  return DISTMM_SUCCESS;
}

int distmm_plan_create(distmm_plan* out, MPI_Comm comm, int dtype, int op_a, distmm_layout la, int op_b,
                       distmm_layout lb, distmm_layout lc, const char* options) {
  return plan_create(out, comm, dtype, op_a, la, op_b, lb, lc, options);
}

int distmm_plan_create_f(distmm_plan* out, MPI_Fint comm, int dtype, int op_a, distmm_layout la, int op_b,
                         distmm_layout lb, distmm_layout lc, const char* options) {
  int init = 0;
  MPI_Initialized(&init);  // MPI_Comm_f2c needs MPI
  return plan_create(out, init ? MPI_Comm_f2c(comm) : MPI_COMM_NULL, dtype, op_a, la, op_b, lb, lc, options);
}

int distmm_plan_execute(distmm_plan plan, const void* alpha, const void* A, const void* B, const void* beta, void* C) {
  return query(plan, "distmm_plan_execute", [&](distmm_plan_s& x) -> int { return execute(x, alpha, A, B, beta, C); });
}

int distmm_plan_destroy(distmm_plan plan) {
  delete plan;
  return DISTMM_SUCCESS;
}


int distmm_plan_algorithm(distmm_plan plan, char* buf, size_t size, size_t* length) {
  return query(plan, "distmm_plan_algorithm", [&](distmm_plan_s& p) -> int {
    if (buf && size > 0) {
      const size_t n = std::min(size - 1, p.algorithm.size());
      std::memcpy(buf, p.algorithm.data(), n);
      buf[n] = '\0';
    }
    if (length) *length = p.algorithm.size();
    return DISTMM_SUCCESS;
  });
}

int distmm_plan_shape(distmm_plan plan, distmm_index* m, distmm_index* n, distmm_index* k) {
  return query(plan, "distmm_plan_shape", [&](distmm_plan_s& p) -> int {
    const GemmShape s = p.plan.shape();
    if (m) *m = s.m;
    if (n) *n = s.n;
    if (k) *k = s.k;
    return DISTMM_SUCCESS;
  });
}

int distmm_plan_dtype(distmm_plan plan, int* dtype) {
  return query(plan, "distmm_plan_dtype", [&](distmm_plan_s& p) -> int {
    if (!dtype) return fail(DISTMM_ERR_ARGUMENT, "distmm_plan_dtype: dtype is NULL");
    const Dtype d = p.plan.dtype();
    *dtype = d == Dtype::f32 ? DISTMM_F32 : d == Dtype::f64 ? DISTMM_F64 : d == Dtype::c32 ? DISTMM_C32 : DISTMM_C64;
    return DISTMM_SUCCESS;
  });
}

int distmm_plan_moved(distmm_plan plan, int scope, distmm_index words[3]) {
  return query(plan, "distmm_plan_moved", [&](distmm_plan_s& p) -> int {
    if (!words) return fail(DISTMM_ERR_ARGUMENT, "distmm_plan_moved: words is NULL");
    if (scope < DISTMM_RANK || scope > DISTMM_TOTAL)
      return fail(DISTMM_ERR_ARGUMENT, "distmm_plan_moved: scope " + std::to_string(scope) +
                                           " is unknown: use DISTMM_RANK, DISTMM_MAX or DISTMM_TOTAL");
    const MovedWords w = scope == DISTMM_RANK  ? p.plan.moved()
                         : scope == DISTMM_MAX ? p.plan.moved_max()
                                               : p.plan.moved_total();
    words[0] = w.a, words[1] = w.b, words[2] = w.c;
    return DISTMM_SUCCESS;
  });
}

int distmm_plan_words(distmm_plan plan, double* words_max, double* messages_max) {
  return query(plan, "distmm_plan_words", [&](distmm_plan_s& p) -> int {
    const CommEstimate e = p.plan.words();
    if (words_max) *words_max = e.words_max;
    if (messages_max) *messages_max = e.messages_max;
    return DISTMM_SUCCESS;
  });
}

int distmm_plan_memory(distmm_plan plan, int64_t* bytes) {
  return query(plan, "distmm_plan_memory", [&](distmm_plan_s& p) -> int {
    if (!bytes) return fail(DISTMM_ERR_ARGUMENT, "distmm_plan_memory: bytes is NULL");
    *bytes = static_cast<int64_t>(p.plan.memory_bytes());
    return DISTMM_SUCCESS;
  });
}

int distmm_plan_in_place(distmm_plan plan, int in_place[3]) {
  return query(plan, "distmm_plan_in_place", [&](distmm_plan_s& p) -> int {
    if (!in_place) return fail(DISTMM_ERR_ARGUMENT, "distmm_plan_in_place: in_place is NULL");
    in_place[0] = p.plan.in_place_a(), in_place[1] = p.plan.in_place_b(), in_place[2] = p.plan.in_place_c();
    return DISTMM_SUCCESS;
  });
}

int distmm_plan_extent(distmm_plan plan, int matrix, distmm_index* elements) {
  return query(plan, "distmm_plan_extent", [&](distmm_plan_s& p) -> int {
    if (!elements || matrix < DISTMM_A || matrix > DISTMM_C)
      return fail(DISTMM_ERR_ARGUMENT, "distmm_plan_extent: elements is NULL or matrix is not DISTMM_A, _B or _C");
    *elements = p.extent[matrix];
    return DISTMM_SUCCESS;
  });
}

}  // extern "C"
