// distmm's public API, one header: what a program needs to multiply distributed matrices.
// Installed as <distmm/distmm.hpp>; link the CMake target distmm::distmm
// (find_package(distmm)). docs/architecture.md shows the floors behind it.
//
//   Whole runs (generate or read, multiply, verify, report), as `distmm run` does:
//     distmm::RunSpec spec;                        // m, n, k, dtype, algorithm, engine, ...
//     spec.dtype = distmm::Dtype::c64;
//     spec.algo = distmm::Algorithm::summa;
//     spec.engine = &distmm::engine_info("winograd");
//     distmm::RunReport r = distmm::run(distmm::Comm::world(), spec);   // on every rank
//
//   Your own distributed data: an algorithm decides the layout (its pieces of A, B and C),
//   an engine does each rank's local products:
//     auto algo = distmm::make_algorithm(distmm::Algorithm::cannon, world, {m, n, k}, {});
//     auto engine = distmm::make_engine("blas", {});
//     distmm::DistMatrix<double> A(m, k, algo->piece_a()), B(k, n, algo->piece_b()),
//                                C(m, n, algo->piece_c());
//     ... fill A.local and B.local (column-major, rows and columns given by the pieces) ...
//     algo->multiply(*engine, 1.0, A.local, B.local, 0.0, C.local);
//
//   Your data where it already is (any layout: block-cyclic, slabs, a list of blocks): distmm
//   chooses the algorithm and moves only what it must (mpi/api/multiply.hpp):
//     auto la = distmm::Layout::block_cyclic(m, k, 64, 64, 2, 2, 0, 0, lld_a), ...;
//     distmm::MultiplyPlan plan(world, distmm::Dtype::f64, distmm::Op::N, la, distmm::Op::T, lb, lc);
//     plan.execute<double>(1.0, A, B, 0.0, C);   // as often as needed; plan.moved() says what moves
#pragma once

// the ground floor: element types (the dtype list), matrices, random inputs, .npy headers
#include "core/dtype.hpp"
#include "core/matrix.hpp"
#include "core/npy.hpp"
#include "core/random.hpp"
#include "core/types.hpp"
// node engines (CPU and GPU) behind one registry
#include "../node/engine.hpp"
#include "../node/strassen_formulas.hpp"
// communicators, layouts, distributed matrices, algorithms, verification, the whole run
#include "../mpi/algorithms/algorithm.hpp"
#include "../mpi/api/multiply.hpp"
#include "../mpi/runtime/comm.hpp"
#include "../mpi/runtime/distribution.hpp"
#include "../mpi/runtime/layout.hpp"
#include "../mpi/runtime/redistribute.hpp"
#include "../mpi/run/npy_io.hpp"
#include "../mpi/runtime/partition.hpp"
#include "../mpi/run/run.hpp"
#include "../mpi/run/verify.hpp"
