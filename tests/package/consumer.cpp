// A program outside the project that uses the installed library: find_package(distmm), link
// distmm::distmm, include the one umbrella header. It multiplies its own distributed complex
// matrices with Cannon/SUMMA and checks every element of the gathered product exactly, then
// runs a whole verified multiply through distmm::run() and reads the report the CLI prints.
#include <distmm/distmm.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  using namespace distmm;
  using Z = std::complex<double>;
  int ok = 1;
  {
    Comm world = Comm::world();
    const index_t m = 5, n = 4, k = 3;
    auto algo = make_algorithm(Algorithm::summa, world, {m, n, k}, {});
    auto engine = make_engine("blas", {});
    DistMatrix<Z> A(m, k, algo->piece_a()), B(k, n, algo->piece_b()), C(m, n, algo->piece_c());
    A.local.fill(Z(1, 1));
    B.local.fill(Z(2, -1));
    algo->multiply(*engine, Z(1), A.local, B.local, Z(0), C.local);
    Matrix<Z> c = gather_to_root(C, world);
    if (world.rank() == 0)
      for (index_t j = 0; j < n; ++j)
        for (index_t i = 0; i < m; ++i) ok &= c(i, j) == Z(9, 3);  // 3 (1+i)(2-i) = 9+3i

    RunSpec spec;
    spec.m = 61, spec.n = 47, spec.k = 53;
    spec.dtype = Dtype::c32;
    spec.engine = &engine_info("winograd");
    spec.engine_opts.levels = 1;
    spec.engine_opts.cutoff = 8;
    spec.verify = Verify::full;
    spec.threads = 1;
    RunReport r = run(world, spec);
    ok &= r.passed && r.dtype == "c32" && r.verify == "full" && to_json(r)["m"] == 61;
    if (world.rank() == 0)
      std::printf("consumer: C(0,0) = %g%+gi, run %s %s residual %g: %s\n", c(0, 0).real(),
                  c(0, 0).imag(), r.algo.c_str(), r.engine.c_str(), r.residual, ok ? "ok" : "WRONG");
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
