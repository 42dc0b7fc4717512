/* distmm's C API (issue #41): multiply distributed matrices where they already are, from C,
 * from Fortran (ISO_C_BINDING: src/fortran/distmm.f90, `use distmm`) and from Python (ctypes:
 * src/python/distmm). One header, opaque handles, status codes; no C++ exception crosses it.
 * Link libdistmm_c.so (CMake: distmm::distmm_c). The C++ API beside it is <distmm/distmm.hpp>.
 *
 *   distmm_layout la, lb, lc;             // local: describe each matrix as you hold it
 *   distmm_layout_block_cyclic(&la, m, k, 64, 64, nprow, npcol, 0, 0, lld_a, DISTMM_GRID_ROW_MAJOR);
 *   distmm_layout_row_slabs(&lb, k, n, nranks, sizes_b, 0, DISTMM_COL_MAJOR);
 *   distmm_layout_blocks(&lc, m, n, nblocks, my_blocks);
 *   distmm_plan plan;                     // collective: checks, chooses, plans the moves
 *   if (distmm_plan_create(&plan, MPI_COMM_WORLD, DISTMM_F64, DISTMM_OP_N, la, DISTMM_OP_T, lb,
 *                          lc, NULL) != DISTMM_SUCCESS)
 *     fprintf(stderr, "%s\n", distmm_last_error());   // the same code and message on every rank
 *   double one = 1, zero = 0;
 *   distmm_plan_execute(plan, &one, A, B, &zero, C);   // collective, as often as needed
 *   distmm_plan_destroy(plan); distmm_layout_destroy(la); ...
 *
 * Errors. Layout constructors are local and only fail for a NULL `out` (or no memory); any
 * other problem in their arguments is kept in the layout and reported by the collective
 * distmm_plan_create. The collective calls (plan_create, plan_execute, agree) return the same
 * status and the same message (distmm_last_error) on every rank of the communicator: bad
 * arguments, layouts that overlap, leave gaps or do not fit the shape, an lld below the local
 * rows, a dtype/op that differs between ranks, an algorithm that does not fit the rank count.
 * The last error is per thread. Two problems are refused at once on the rank that has them, with
 * no communicator to agree on: a NULL plan handle, and MPI not initialised or a null communicator.
 *
 * Device (GPU) memory: distmm_layout_set_memory(layout, DISTMM_MEMORY_DEVICE) says the matrix's
 * base pointers on every rank are device pointers (the layout's offsets count from them). Where
 * any matrix is on the device, a plan redistributes and multiplies on the GPUs (NCCL between them,
 * or MPI through pinned memory); a matrix left in host memory is staged through a device copy of
 * the rank's storage (A and B uploaded, C uploaded where beta != 0 and downloaded back). The
 * engine is "cublas" on the calling thread's current GPU unless engine= names another GPU engine.
 * The buffers must be ready when distmm_plan_execute is called; it returns when C is written. The
 * plan allocates every buffer execute uses: a rank out of GPU memory fails distmm_plan_create on
 * every rank (DISTMM_ERR_USAGE), not an execution. A build without CUDA refuses
 * device memory with DISTMM_ERR_UNSUPPORTED (distmm_device_support() says which build this is).
 * The option emulate_device=1 takes host pointers as an emulated device's memory (a host engine):
 * the device path tested without a GPU.
 */
#ifndef DISTMM_H
#define DISTMM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DISTMM_C_API_VERSION 2
#if defined(__GNUC__)
#define DISTMM_API __attribute__((visibility("default")))
#else
#define DISTMM_API
#endif

typedef int64_t distmm_index;

/* Status codes (every function returns one; DISTMM_SUCCESS is 0). */
enum {
  DISTMM_SUCCESS = 0,
  DISTMM_ERR_ARGUMENT = 1,    /* a bad argument: NULL handle or pointer, enum out of range, ... */
  DISTMM_ERR_LAYOUT = 2,      /* layouts that do not describe the matrices or do not fit together */
  DISTMM_ERR_USAGE = 3,       /* an option that does not fit: unknown algorithm or engine, rank count */
  DISTMM_ERR_MEMORY = 4,      /* out of memory */
  DISTMM_ERR_MPI = 5,         /* MPI not initialised, a null communicator */
  DISTMM_ERR_UNSUPPORTED = 6, /* memories not taken: device on some ranks only, device without CUDA */
  DISTMM_ERR_INTERNAL = 7     /* anything else (a bug: please report the message) */
};

/* Element types, ops, storage and grid orders (plain ints in the signatures, for Fortran). */
enum { DISTMM_F32 = 0, DISTMM_F64 = 1, DISTMM_C32 = 2, DISTMM_C64 = 3 };
enum { DISTMM_OP_N = 0, DISTMM_OP_T = 1, DISTMM_OP_C = 2 }; /* op(X) = X, X^T, X^H */
/* a block's storage: element (i, j) at i + j * ld (column-major) or i * ld + j (row-major) */
enum { DISTMM_COL_MAJOR = 0, DISTMM_ROW_MAJOR = 1 };
/* a BLACS grid's rank order: rank = prow * npcol + pcol (row-major, BLACS's default) or
 * pcol * nprow + prow */
enum { DISTMM_GRID_ROW_MAJOR = 0, DISTMM_GRID_COL_MAJOR = 1 };
/* where a matrix lives (distmm_layout_set_memory) */
enum { DISTMM_MEMORY_HOST = 0, DISTMM_MEMORY_DEVICE = 1 };
/* which matrix a query is about */
enum { DISTMM_A = 0, DISTMM_B = 1, DISTMM_C = 2 };
/* moved words: this rank's, the most over ranks, the sum over ranks */
enum { DISTMM_RANK = 0, DISTMM_MAX = 1, DISTMM_TOTAL = 2 };

typedef struct distmm_layout_s* distmm_layout;
typedef struct distmm_plan_s* distmm_plan;

/* One block of a matrix held by one rank (distmm_layout_blocks). */
typedef struct distmm_block {
  distmm_index row, col;   /* global index of its first element */
  distmm_index rows, cols; /* its size */
  distmm_index offset;     /* elements from the owner's base pointer to its first element */
  distmm_index ld;         /* leading dimension (0: tight) */
  int32_t owner;           /* the rank holding it (-1: the rank passing it) */
  int32_t order;           /* DISTMM_COL_MAJOR or DISTMM_ROW_MAJOR */
} distmm_block;

/* ---- errors ---- */
/* The message of this thread's last failed call ("" when none failed yet). */
DISTMM_API const char* distmm_last_error(void);
/* The same copied into buf (NUL-terminated, cut to size - 1 bytes); returns its full length. */
DISTMM_API size_t distmm_last_error_copy(char* buf, size_t size);
/* A status code's name: "DISTMM_ERR_LAYOUT", ... */
DISTMM_API const char* distmm_status_name(int status);
/* Collective: every rank passes its own problem (NULL or "" for none) and all get the lowest
 * failing rank's message as distmm_last_error and `status` (DISTMM_SUCCESS where none failed):
 * for checks of your own that must not leave ranks behind. */
DISTMM_API int distmm_agree(MPI_Comm comm, int status, const char* message);
DISTMM_API int distmm_agree_f(MPI_Fint comm, int status, const char* message);

/* ---- layouts (local; describe the matrix as stored, before op) ---- */
/* ScaLAPACK's block-cyclic layout on an nprow x npcol BLACS grid (ranks beyond it hold
 * nothing): blocks mb x nb from process (rsrc, csrc), column-major with leading dimension lld
 * (0: tight). */
DISTMM_API int distmm_layout_block_cyclic(distmm_layout* out, distmm_index m, distmm_index n, distmm_index mb,
                               distmm_index nb, int nprow, int npcol, int rsrc, int csrc,
                               distmm_index lld, int grid_order);
/* The same from a descinit_ descriptor (DTYPE 1: desc[2..8] = m, n, mb, nb, rsrc, csrc, lld). */
DISTMM_API int distmm_layout_scalapack(distmm_layout* out, const int desc[9], int nprow, int npcol, int grid_order);
/* Rank r holds rows (columns) [sizes[0] + ... + sizes[r-1], + sizes[r]); nranks = the
 * communicator's size; ld 0: tight; order: DISTMM_COL_MAJOR or DISTMM_ROW_MAJOR. */
DISTMM_API int distmm_layout_row_slabs(distmm_layout* out, distmm_index m, distmm_index n, int nranks,
                            const distmm_index* sizes, distmm_index ld, int order);
DISTMM_API int distmm_layout_col_slabs(distmm_layout* out, distmm_index m, distmm_index n, int nranks,
                            const distmm_index* sizes, distmm_index ld, int order);
/* Any blocks: each rank passes its own (owner -1), or every rank the whole list. */
DISTMM_API int distmm_layout_blocks(distmm_layout* out, distmm_index m, distmm_index n, int count,
                         const distmm_block* blocks);
/* Where the matrix lives: DISTMM_MEMORY_HOST (the default) or DISTMM_MEMORY_DEVICE (every
 * rank's base pointer is a pointer into its current GPU's memory). Local; a bad value is
 * reported by distmm_plan_create. */
DISTMM_API int distmm_layout_set_memory(distmm_layout layout, int memory);
/* 1 where this build takes device memory (built with CUDA), else 0. */
DISTMM_API int distmm_device_support(void);
DISTMM_API int distmm_layout_destroy(distmm_layout layout); /* NULL: nothing */

/* ---- plans (collective on comm) ---- */
/* la describes A (op(A) is m x k), lb B (op(B) is k x n), lc C (m x n). options: NULL or a
 * string of key=value words separated by spaces or commas: algorithm=auto|summa|cannon|dns|
 * cuboid|caps|scalapack, engine=NAME (distmm info), accuracy=native|max|EPS (the INT8-emulated
 * engines' target: docs/accuracy.md; e.g. accuracy=1e-10), relabel=1|0, direct=1|0 (0: block-cyclic
 * layouts redistributed too, not multiplied in place), emulate_device=1|0 (device
 * layouts over host pointers: the emulated device, for tests). The layouts may be destroyed
 * once the plan is made. */
DISTMM_API int distmm_plan_create(distmm_plan* out, MPI_Comm comm, int dtype, int op_a, distmm_layout la, int op_b,
                       distmm_layout lb, distmm_layout lc, const char* options);
/* The same with a Fortran communicator handle (MPI_Comm_c2f; mpi4py's comm.py2f()). */
DISTMM_API int distmm_plan_create_f(distmm_plan* out, MPI_Fint comm, int dtype, int op_a, distmm_layout la, int op_b,
                         distmm_layout lb, distmm_layout lc, const char* options);
/* Collective: C = alpha op(A) op(B) + beta C. alpha and beta point to one element of the plan's
 * dtype (float, double, float complex, double complex); A, B, C are this rank's base pointers
 * (the layouts' offsets count from them; NULL where the rank holds none of that matrix). beta = 0
 * never reads C. */
DISTMM_API int distmm_plan_execute(distmm_plan plan, const void* alpha, const void* A, const void* B, const void* beta,
                        void* C);
DISTMM_API int distmm_plan_destroy(distmm_plan plan); /* local, NULL: nothing */

/* ---- plan queries (local) ---- */
/* The algorithm chosen ("summa", "cuboid", ...; "none" where m, n or k is 0), copied into buf
 * (NUL-terminated, cut to size - 1); *length (may be NULL) gets its full length. */
DISTMM_API int distmm_plan_algorithm(distmm_plan plan, char* buf, size_t size, size_t* length);
DISTMM_API int distmm_plan_shape(distmm_plan plan, distmm_index* m, distmm_index* n, distmm_index* k);
DISTMM_API int distmm_plan_dtype(distmm_plan plan, int* dtype);
/* Elements of A, B and C sent to other ranks to redistribute them (words[DISTMM_A..C]):
 * scope DISTMM_RANK (this rank), DISTMM_MAX or DISTMM_TOTAL (over the ranks). */
DISTMM_API int distmm_plan_moved(distmm_plan plan, int scope, distmm_index words[3]);
/* The algorithm's own analytic words and messages of the busiest rank. */
DISTMM_API int distmm_plan_words(distmm_plan plan, double* words_max, double* messages_max);
/* Bytes per rank at the peak (the most over ranks). */
DISTMM_API int distmm_plan_memory(distmm_plan plan, int64_t* bytes);
/* Whether A, B, C are used where they are on this rank (no copy): in_place[DISTMM_A..C] 0 or 1. */
DISTMM_API int distmm_plan_in_place(distmm_plan plan, int in_place[3]);
/* Elements from this rank's base pointer of `matrix` (DISTMM_A, _B, _C) that its layout reaches
 * (the highest offset + 1; 0 where the rank holds none): the buffer must be at least as long. */
DISTMM_API int distmm_plan_extent(distmm_plan plan, int matrix, distmm_index* elements);

#ifdef __cplusplus
}
#endif

#endif /* DISTMM_H */
