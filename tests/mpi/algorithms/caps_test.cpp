// CAPS on P = m * 7^k ranks: BFS-only, DFS-only and mixed step sequences, both formulas, both
// dtypes of the list, odd sizes (padding), against BLAS on the gathered operands (integer inputs: exact),
// and measured words against the analytic count.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include "mpi/algorithms/caps.hpp"
#include "mpi/algorithms/cost_model.hpp"
#include "mpi_test_util.hpp"

using namespace distmm;
using distmm::testing::multiply_and_compare;

namespace {

int bfs_steps_for(int P) {
  int k = 0;
  while (P % 7 == 0) P /= 7, ++k;
  return P <= 6 ? k : -1;
}

// Every sequence with both formulas on every shape: exact products (integer inputs) and the
// measured words equal to the analytic count; f64 and c32, and f32 and c64 where `all_dtypes`.
void expect_exact_products(int P, const std::vector<std::string>& sequences, const std::vector<std::array<index_t, 3>>& shapes,
                           bool all_dtypes) {
  for (const auto& seq : sequences)
    for (const char* formula : {"strassen", "winograd"})
      for (const auto& sh : shapes) {
        AlgoOptions o;
        o.caps_steps = parse_caps_steps(seq);
        o.formula = std::string(formula) == "winograd" ? &kWinogradFormula : &kStrassenFormula;
        auto d = multiply_and_compare<double>("caps", "blas", sh[0], sh[1], sh[2], 2.0, 0.5, o);
        ASSERT_FALSE(d.skipped) << d.note;
        EXPECT_EQ(d.max_err, 0.0) << "P=" << P << " steps '" << seq << "' " << formula << " " << sh[0] << "x"
                                  << sh[1] << "x" << sh[2];
        EXPECT_TRUE(d.words_match) << d.note;
        EXPECT_TRUE(d.messages_match) << "P=" << P << " steps '" << seq << "' " << formula << ": " << d.note;
        auto c = multiply_and_compare<std::complex<float>>("caps", "blas", sh[0], sh[1], sh[2], {0, 1}, 0.0, o);
        EXPECT_EQ(c.max_err, 0.0) << "c32 P=" << P << " steps '" << seq << "' " << formula;
        if (!all_dtypes) continue;
        auto f = multiply_and_compare<float>("caps", "blas", sh[0], sh[1], sh[2], 1.0, 0.0, o);
        EXPECT_EQ(f.max_err, 0.0) << "f32 P=" << P << " steps '" << seq << "' " << formula;
        // Strassen's identities hold over any ring: complex operands, complex alpha and beta.
        auto z = multiply_and_compare<std::complex<double>>("caps", "blas", sh[0], sh[1], sh[2], {1, 2}, {-1, 1}, o);
        EXPECT_EQ(z.max_err, 0.0) << "c64 P=" << P << " steps '" << seq << "' " << formula;
        EXPECT_TRUE(z.words_match) << z.note;
      }
}

TEST(Caps, StepSequencesFormulasAndDtypes) {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const int k = bfs_steps_for(P);
  if (k < 0) GTEST_SKIP() << P << " ranks do not fit CAPS";
  const std::string B(k, 'B');
  std::vector<std::string> sequences = {B, "D" + B, B + "D"};
  if (k == 0) sequences = {"", "D", "DD"};
  if (k >= 2) sequences.push_back("BDB");
  expect_exact_products(P, sequences, {{37, 41, 29}, {16, 16, 16}, {1, 5, 3}, {50, 7, 64}}, true);
}

// The dealt plan (no MPI): rounds 0 and 1 give one subproblem to every rank; then, from the
// gathered round-0 times, a rank that looks 3 times slower takes about a third of a fast rank's
// share and skips rounds; every subproblem goes out once, in order. Equal times keep the
// round-robin shares; unbalanced, whole rounds only.
TEST(Caps, DealtPlanSharesBySpeed) {
  const int P = 6;
  const index_t J = 343;
  auto run = [&](const std::vector<double>& times) {
    DealtPlan plan(J, P, true);
    EXPECT_EQ(plan.steps.size(), 2u);
    plan.balance(times);
    for (std::size_t t = 2; plan.next < J; ++t) plan.extend_to(t);
    std::vector<index_t> count(std::size_t(P), 0);
    index_t j = 0;
    for (const DealtStep& s : plan.steps) {
      EXPECT_EQ(s.j0, j);
      for (int r : s.owners) ++count[std::size_t(r)], ++j;
    }
    EXPECT_EQ(j, J);
    return std::make_pair(count, plan.steps.size());
  };
  std::vector<double> times(std::size_t(P), 0.01);
  const auto [even, even_rounds] = run(times);
  for (int r = 0; r < P; ++r) EXPECT_NEAR(double(even[std::size_t(r)]), double(J) / P, 1.0) << r;
  EXPECT_EQ(even_rounds, std::size_t(2 + (J - 2 * P + P - 1) / P));
  times[2] = 0.03;
  const auto [skewed, rounds] = run(times);
  for (int r = 0; r < P; ++r) {
    if (r == 2) continue;
    EXPECT_GT(skewed[std::size_t(r)], 2 * skewed[2]) << r;
    EXPECT_NEAR(double(skewed[std::size_t(r)] - 2), 3.0 * double(skewed[2] - 2), 3.0) << r;  // from round 2
  }
  EXPECT_LT(rounds, std::size_t(2 + (J - 2 * P) / (P - 1) + 2));  // about J / (P - 1 + 1/3) rounds
  DealtPlan rr(J, P, false);
  EXPECT_EQ(rr.steps.size(), std::size_t(J / P));
  EXPECT_EQ(rr.next, J / P * P);
  for (const DealtStep& s : rr.steps) EXPECT_EQ(s.owners.size(), std::size_t(P));
}

// Dealt steps (X) on any rank count, below none or all of the BFS steps the count allows and
// below a DFS step: 7, 49 and 343 subproblems dealt round-robin, so that some ranks get one more
// than others and, on many ranks, some none; odd sizes (padding), a single row, both formulas;
// then dealt by the balancer with one rank reporting itself slow.
TEST(Caps, DealtStepsOnAnyRankCount) {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  int v7 = 0;
  for (int q = P; q % 7 == 0; q /= 7) ++v7;
  const std::string B(std::size_t(v7), 'B');
  std::vector<std::string> sequences = {"X", "XX", "DX", "XXX"};
  if (v7 > 0) sequences.insert(sequences.end(), {B + "X", B + "XX"});
  // (1 x 9 x 3: four steps, BBXX on 49 ranks, still split some block wider than one element)
  const std::vector<std::array<index_t, 3>> shapes = {{37, 41, 29}, {1, 9, 3}, {50, 7, 64}};
  ::setenv("DISTMM_CAPS_BALANCE", "0", 1);  // round-robin throughout: the words are the analytic ones
  expect_exact_products(P, sequences, shapes, false);
  ::unsetenv("DISTMM_CAPS_BALANCE");
  // The balancer (on by default): rank 0 reports 3 times its step-0 time, so from step 2 on it
  // takes part in a third of the steps and the others deal its share among themselves.
  ::setenv("DISTMM_CAPS_SKEW", "0:3", 1);
  for (const char* seq : {"XXX", "XX", "DXX"})
    for (const auto& sh : shapes) {
      AlgoOptions o;
      o.caps_steps = parse_caps_steps(seq);
      o.formula = &kWinogradFormula;
      auto d = multiply_and_compare<double>("caps", "blas", sh[0], sh[1], sh[2], 1.0, -1.0, o);
      EXPECT_EQ(d.max_err, 0.0) << "balanced P=" << P << " steps '" << seq << "' " << sh[0] << "x" << sh[1] << "x" << sh[2];
    }
  ::unsetenv("DISTMM_CAPS_SKEW");
  // Dealt steps must be the last ones, and BFS steps above them must divide P.
  Comm world = Comm::world();
  AlgoOptions bad;
  bad.caps_steps = parse_caps_steps("XD");
  EXPECT_THROW(make_algorithm(Algorithm::caps, world, {64, 64, 64}, bad), UsageError);
  bad.caps_steps = parse_caps_steps(B + "BX");
  EXPECT_THROW(make_algorithm(Algorithm::caps, world, {64, 64, 64}, bad), UsageError);
}

TEST(Caps, AutomaticStepsAndStrassenEngineAtTheLeaves) {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (bfs_steps_for(P) < 0) GTEST_SKIP();
  EngineOptions eo;
  eo.levels = 1;
  eo.cutoff = 2;
  auto r = multiply_and_compare<double>("caps", "winograd", 43, 43, 43, 1.0, 0.0, {}, eo);
  EXPECT_EQ(r.max_err, 0.0);
  auto z = multiply_and_compare<std::complex<float>>("caps", "strassen-lowmem", 43, 31, 37, {2, -1}, 1.0, {}, eo);
  EXPECT_EQ(z.max_err, 0.0);
}

// --algo auto weighs CAPS on m 7^k ranks only for callers that accept Strassen-like error growth
// and only under a measured machine model; then the model decides: slow multiplies and fast
// memory choose CAPS, fast multiplies and slow memory a classical algorithm. (Plans only: the
// algorithms are built, nothing is multiplied.)
TEST(Caps, AutoWeighsCapsUnderAMeasuredModelOnly) {
  Comm world = Comm::world();
  const int P = world.size();
  if (bfs_steps_for(P) < 1) GTEST_SKIP() << "no 7-factor in " << P << " ranks";
  long long id = world.rank() == 0 ? static_cast<long long>(::getpid()) : 0;
  MPI_Bcast(&id, 1, MPI_LONG_LONG, 0, world.get());
  const std::string path = "/tmp/distmm-caps-model-" + std::to_string(id) + ".json";
  const GemmShape shape{2048, 2048, 2048};
  auto choose = [&](bool measured, double F, double mu, bool strassen_ok) {
    if (world.rank() == 0) {
      std::remove(path.c_str());
      if (measured) {
        MachineModel m;
        m.flops_per_s = F, m.bytes_per_s = 1e12, m.latency_s = 1e-9, m.memory_bytes_per_s = mu;
        save_machine_model(m, path);
      }
    }
    world.barrier();
    ::setenv("DISTMM_MACHINE_FILE", path.c_str(), 1);
    AlgoOptions o;
    o.strassen_like_ok = strassen_ok;
    auto a = make_algorithm(Algorithm::automatic, world, shape, o);
    ::unsetenv("DISTMM_MACHINE_FILE");
    return std::make_pair(a->name(), a->selection());
  };
  auto [slow_flops, why1] = choose(true, 1e8, 1e13, true);
  EXPECT_EQ(slow_flops, "caps") << why1;
  EXPECT_NE(why1.find("caps steps and formula by the cost model"), std::string::npos) << why1;
  // Where each rank holds its subproblem alone after the BFS steps (P = 7^k), the extra levels
  // that slow multiplies call for go below them (DFS steps, which move no word there, or dealt
  // steps), not above them, where each would multiply the exchanges by 7/4.
  if (P == 7 || P == 49) {
    const std::size_t star = why1.find(" *", why1.find("caps steps and formula"));  // the chosen one
    ASSERT_NE(star, std::string::npos) << why1;
    const std::string pick = why1.substr(star + 2, why1.find(' ', star + 2) - star - 2);
    const std::string bfs(std::size_t(bfs_steps_for(P)), 'B');
    EXPECT_EQ(pick.rfind(bfs, 0), 0u) << why1;
    EXPECT_GT(pick.size(), bfs.size()) << why1;
    EXPECT_TRUE(pick.back() == 'D' || pick.back() == 'X') << why1;
  }
  auto [slow_memory, why2] = choose(true, 1e13, 1e6, true);
  EXPECT_NE(slow_memory, "caps") << why2;
  EXPECT_NE(why2.find("caps "), std::string::npos) << "caps was weighed: " << why2;
  auto [not_asked, why3] = choose(true, 1e8, 1e13, false);
  EXPECT_NE(not_asked, "caps") << why3;
  auto [defaults, why4] = choose(false, 0, 0, true);
  EXPECT_NE(defaults, "caps") << why4;
  EXPECT_NE(why4.find("caps not considered without a measured model"), std::string::npos) << why4;
  if (world.rank() == 0) std::remove(path.c_str());
}

TEST(Caps, WrongRankCountNamesTheValidOnes) {
  Comm world = Comm::world();
  if (bfs_steps_for(world.size()) >= 0) {
    AlgoOptions o;
    o.caps_steps = parse_caps_steps("BBBBBBBBB");  // more BFS steps than 7-factors
    EXPECT_THROW(make_algorithm(Algorithm::caps, world, {8, 8, 8}, o), UsageError);
    return;
  }
  try {
    make_algorithm(Algorithm::caps, world, {8, 8, 8}, {});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("caps needs P = m * 7^k"), std::string::npos) << msg;
    EXPECT_NE(msg.find("got " + std::to_string(world.size())), std::string::npos) << msg;
  }
}

}  // namespace
