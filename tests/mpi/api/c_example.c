/* The C API (src/distmm.h) as a C program uses it, built and run in CI at 1, 4 and 6 ranks:
 * A block-cyclic (ScaLAPACK's layout, padded lld), B in row slabs stored row-major, C a list of
 * blocks (one column slab per rank); C = A B planned once and executed twice (beta 0, then 1),
 * a complex C = A^H B with A stored k x m (also on the emulated device, all three there and with C
 * left in host memory), and a bad layout refused with the same code and message on every rank.
 * Inputs are small integers, so every element is checked exactly.
 * Exits 1 on any mismatch. */
#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <distmm/distmm.h>

static int me, P;

#define CHECK(call)                                                                        \
  do {                                                                                     \
    int st_ = (call);                                                                      \
    if (st_ != DISTMM_SUCCESS) {                                                           \
      fprintf(stderr, "rank %d: %s: %s\n", me, distmm_status_name(st_), distmm_last_error()); \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                        \
    }                                                                                      \
  } while (0)

static double a_val(long i, long j) { return (double)((i + 2 * j) % 7 - 3); }
static double b_val(long i, long j) { return (double)((3 * i + j) % 5 - 2); }
static double c_val(long i, long j) { return (double)((i + 4 * j) % 3 - 1); }

/* ScaLAPACK's NUMROC: how many of n indices (blocks of nb) process p of np holds (source 0). */
static long numroc(long n, long nb, int p, int np) {
  long count = 0;
  for (long g = 0, blk = 0; g < n; g += nb, ++blk)
    if (blk % np == p) count += (n - g < nb ? n - g : nb);
  return count;
}
/* the local index of global index g in a block-cyclic dimension */
static long local_index(long g, long nb, int np) { return (g / nb / np) * nb + g % nb; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const long m = 13, n = 11, k = 9, mb = 2, nb = 3;
  int nprow = 1;
  for (int r = 1; r * r <= P; ++r)
    if (P % r == 0) nprow = r;
  const int npcol = P / nprow, prow = me / npcol, pcol = me % npcol; /* BLACS's row-major grid */
  long bad = 0;

  /* A: m x k block-cyclic, lld one more than the local rows (padding that must stay untouched) */
  const long locr = numroc(m, mb, prow, nprow), locc = numroc(k, nb, pcol, npcol), lld = locr + 1;
  double* A = malloc(sizeof(double) * (size_t)(lld * locc + 1));
  for (long e = 0; e < lld * locc; ++e) A[e] = -99;
  for (long i = 0; i < m; ++i)
    for (long j = 0; j < k; ++j)
      if ((i / mb) % nprow == prow && (j / nb) % npcol == pcol)
        A[local_index(i, mb, nprow) + local_index(j, nb, npcol) * lld] = a_val(i, j);
  /* B: k x n in row slabs, each stored row-major (element (i, j) of the slab at i * n + j) */
  distmm_index* sizes = malloc(sizeof(distmm_index) * (size_t)P);
  long b0 = 0;
  for (int r = 0; r < P; ++r) {
    sizes[r] = k / P + (r < k % P);
    if (r < me) b0 += sizes[r];
  }
  double* B = malloc(sizeof(double) * (size_t)(sizes[me] * n + 1));
  for (long i = 0; i < sizes[me]; ++i)
    for (long j = 0; j < n; ++j) B[i * n + j] = b_val(b0 + i, j);
  /* C: one block per rank, columns [c0, c0 + cn), column-major, tight */
  const long cn = n / P + (me < n % P), c0 = me * (n / P) + (me < n % P ? me : n % P);
  double* C = malloc(sizeof(double) * (size_t)(m * cn + 1));
  for (long j = 0; j < cn; ++j)
    for (long i = 0; i < m; ++i) C[i + j * m] = c_val(i, c0 + j);
  distmm_block mine = {0, c0, m, cn, 0, m, -1, DISTMM_COL_MAJOR};

  distmm_layout la, lb, lc;
  CHECK(distmm_layout_block_cyclic(&la, m, k, mb, nb, nprow, npcol, 0, 0, lld, DISTMM_GRID_ROW_MAJOR));
  CHECK(distmm_layout_row_slabs(&lb, k, n, P, sizes, 0, DISTMM_ROW_MAJOR));
  CHECK(distmm_layout_blocks(&lc, m, n, 1, &mine));
  distmm_plan plan;
  CHECK(distmm_plan_create(&plan, MPI_COMM_WORLD, DISTMM_F64, DISTMM_OP_N, la, DISTMM_OP_N, lb, lc, NULL));
  char algo[32];
  distmm_index moved[3];
  int64_t bytes;
  CHECK(distmm_plan_algorithm(plan, algo, sizeof algo, NULL));
  CHECK(distmm_plan_moved(plan, DISTMM_MAX, moved));
  CHECK(distmm_plan_memory(plan, &bytes));
  const double one = 1, two = 2, zero = 0;
  CHECK(distmm_plan_execute(plan, &one, A, B, &zero, C)); /* C = A B */
  CHECK(distmm_plan_execute(plan, &two, A, B, &one, C));  /* C = 2 A B + C = 3 A B */
  for (long j = 0; j < cn; ++j)
    for (long i = 0; i < m; ++i) {
      double s = 0;
      for (long l = 0; l < k; ++l) s += a_val(i, l) * b_val(l, c0 + j);
      bad += C[i + j * m] != 3 * s;
    }
  for (long e = 0; e < lld * locc; ++e)
    if (e % lld >= locr) bad += A[e] != -99; /* the padding is never written */
  CHECK(distmm_plan_destroy(plan));

  /* complex: C = (1+i) A^H B + (2-i) C with A stored k x m in row slabs, B and C as above */
  distmm_index* asz = malloc(sizeof(distmm_index) * (size_t)P);
  long a0 = 0;
  for (int r = 0; r < P; ++r) {
    asz[r] = k / P + (r < k % P);
    if (r < me) a0 += asz[r];
  }
  double complex* Az = malloc(sizeof(double complex) * (size_t)(asz[me] * m + 1));
  double complex* Bz = malloc(sizeof(double complex) * (size_t)(sizes[me] * n + 1));
  double complex* Cz = malloc(sizeof(double complex) * (size_t)(m * cn + 1));
  for (long i = 0; i < asz[me]; ++i)
    for (long j = 0; j < m; ++j) Az[i + j * asz[me]] = a_val(a0 + i, j) + I * b_val(j, a0 + i);
  for (long i = 0; i < sizes[me]; ++i)
    for (long j = 0; j < n; ++j) Bz[i * n + j] = b_val(b0 + i, j) - I * c_val(b0 + i, j);
  for (long j = 0; j < cn; ++j)
    for (long i = 0; i < m; ++i) Cz[i + j * m] = c_val(i, c0 + j) + I;
  distmm_layout laz;
  CHECK(distmm_layout_row_slabs(&laz, k, m, P, asz, 0, DISTMM_COL_MAJOR));
  CHECK(distmm_plan_create(&plan, MPI_COMM_WORLD, DISTMM_C64, DISTMM_OP_C, laz, DISTMM_OP_N, lb, lc, "relabel=1"));
  const double complex alpha = 1 + I, beta = 2 - I;
  CHECK(distmm_plan_execute(plan, &alpha, Az, Bz, &beta, Cz));
  for (long j = 0; j < cn; ++j)
    for (long i = 0; i < m; ++i) {
      double complex s = 0;
      for (long l = 0; l < k; ++l) s += conj(a_val(l, i) + I * b_val(i, l)) * (b_val(l, c0 + j) - I * c_val(l, c0 + j));
      bad += Cz[i + j * m] != alpha * s + beta * (c_val(i, c0 + j) + I);
    }
  CHECK(distmm_plan_destroy(plan));

  /* a bad layout: B's slabs miss a row (the last rank's size is one short). Every rank gets
   * DISTMM_ERR_LAYOUT and the same message; no rank waits for another. */
  sizes[P - 1] -= 1;
  distmm_layout lbad;
  CHECK(distmm_layout_row_slabs(&lbad, k, n, P, sizes, 0, DISTMM_ROW_MAJOR));
  distmm_plan none = NULL;
  const int st = distmm_plan_create(&none, MPI_COMM_WORLD, DISTMM_F64, DISTMM_OP_N, la, DISTMM_OP_N, lbad, lc, NULL);
  char msg[512], msg0[512];
  distmm_last_error_copy(msg, sizeof msg);
  memcpy(msg0, msg, sizeof msg);
  MPI_Bcast(msg0, sizeof msg0, MPI_CHAR, 0, MPI_COMM_WORLD);
  bad += st != DISTMM_ERR_LAYOUT || none != NULL || strcmp(msg, msg0) != 0 || strstr(msg, "B") == NULL;
  /* a bad argument is refused the same way (an unknown dtype) */
  bad += distmm_plan_create(&none, MPI_COMM_WORLD, 9, DISTMM_OP_N, la, DISTMM_OP_N, lb, lc, NULL) != DISTMM_ERR_ARGUMENT;
  bad += distmm_plan_create(&none, MPI_COMM_WORLD, DISTMM_F64, DISTMM_OP_N, la, DISTMM_OP_N, lb, lc, "algorithm=nope") !=
         DISTMM_ERR_USAGE;

  /* device memory: the complex product again with A and B on the device and C in host memory
   * (mixed: C is staged through the device), then all three on the device, here the emulated
   * device (host pointers, emulate_device=1); a GPU program passes device pointers and no
   * option. */
  CHECK(distmm_layout_set_memory(laz, DISTMM_MEMORY_DEVICE));
  CHECK(distmm_layout_set_memory(lb, DISTMM_MEMORY_DEVICE));
  for (int all = 0; all < 2; ++all) {
    if (all) CHECK(distmm_layout_set_memory(lc, DISTMM_MEMORY_DEVICE));
    for (long j = 0; j < cn; ++j)
      for (long i = 0; i < m; ++i) Cz[i + j * m] = 0;
    CHECK(distmm_plan_create(&plan, MPI_COMM_WORLD, DISTMM_C64, DISTMM_OP_C, laz, DISTMM_OP_N, lb, lc,
                             "emulate_device=1"));
    CHECK(distmm_plan_execute(plan, &alpha, Az, Bz, &zero, Cz)); /* beta = 0: C not read */
    for (long j = 0; j < cn; ++j)
      for (long i = 0; i < m; ++i) {
        double complex s = 0;
        for (long l = 0; l < k; ++l)
          s += conj(a_val(l, i) + I * b_val(i, l)) * (b_val(l, c0 + j) - I * c_val(l, c0 + j));
        bad += Cz[i + j * m] != alpha * s;
      }
    CHECK(distmm_plan_destroy(plan));
  }

  distmm_layout_destroy(la), distmm_layout_destroy(lb), distmm_layout_destroy(lc);
  distmm_layout_destroy(laz), distmm_layout_destroy(lbad);
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    printf("c_example: %d ranks, %s, moved max A %lld B %lld C %lld, %lld bytes/rank; refused: %s; %s\n", P, algo,
           (long long)moved[0], (long long)moved[1], (long long)moved[2], (long long)bytes, msg,
           bad ? "WRONG" : "ok");
  free(A), free(B), free(C), free(Az), free(Bz), free(Cz), free(sizes), free(asz);
  MPI_Finalize();
  return bad ? 1 : 0;
}
