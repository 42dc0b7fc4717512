// Cannon's algorithm (Cannon 1969; seed 002) on a periodic q x q torus, P = q^2.
// Rank (i, j) starts with A(i, j), B(i, j), C(i, j). The initial skew moves A(i, j) left by i and
// B(i, j) up by j, so that at step s rank (i, j) holds A(i, l) and B(l, j) with l = (i + j + s) mod q
// and accumulates C(i, j) += A(i, l) B(l, j); between steps A shifts left by one and B up by one.
// The next blocks are received into a second buffer while the current ones are multiplied.
#include "algorithms.hpp"
#include "classical.hpp"
#include "../runtime/grid.hpp"
#include "../runtime/pipeline.hpp"

namespace distmm {
namespace {

class Cannon final : public ClassicalAlgorithm<Cannon> {
 public:
  Cannon(const Comm& world, GemmShape s, int q)
      : ClassicalAlgorithm(s, q, q), q_(q), grid_(world, {q, q}, true), pk_{s.k, q} {
    set_blocks(grid_.coord(0), grid_.coord(1), pk_, pk_);
    space_comms_ = {{&grid_.comm(), &dev_}};
  }

  std::string name() const override { return "cannon"; }
  std::string layout() const override {
    return grid_.shape() + " torus, " + std::to_string(q_) + " steps";
  }
  index_t depth() const { return pk_.max_size(); }
  double peak_words() const {
    const index_t mi = pm_.max_size(), nj = pn_.max_size(), kl = pk_.max_size();
    return double(3 * mi * kl + 3 * kl * nj + mi * nj);  // own blocks + two buffers each
  }

  CommEstimate analytic() const override {
    return EstimateAccumulator::over(q_ * q_, [&](int r, double& words, double& msgs) {
      const int i = r / q_, j = r % q_;
      const double mi = double(pm_.size(i)), nj = double(pn_.size(j));
      if (i != 0) words += mi * pk_.size(j), msgs += 1;  // skew of A
      if (j != 0) words += pk_.size(i) * nj, msgs += 1;  // skew of B
      for (int s = 0; s + 1 < q_; ++s) {
        const int l = (i + j + s) % q_;
        words += mi * pk_.size(l) + pk_.size(l) * nj, msgs += 2;
      }
      return 2 * mi * nj * double(s_.k);
    });
  }

  // Two blocks each of A and of B, received while the current ones are multiplied.
  std::vector<std::size_t> device_buffer_bytes(Dtype dt) const override {
    if (q_ == 1) return {};
    const index_t mi = pm_.size(grid_.coord(0)), nj = pn_.size(grid_.coord(1)), kl = pk_.max_size();
    const std::size_t a = std::size_t(mi * kl) * size_of(dt), b = std::size_t(kl * nj) * size_of(dt);
    return {a, a, b, b};
  }

  // The next blocks' shifts on the comm lane during the current product (pipeline.hpp). A and B
  // are contiguous (ld = rows).
  template <class T>
  void run(DeviceSpace& sp, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    const int i = grid_.coord(0), j = grid_.coord(1);
    const index_t mi = pm_.size(i), nj = pn_.size(j);
    auto at = [&](int r, int cc) { return grid_.rank_of({r, cc}); };
    T* abuf[2] = {device_buffer<T>(0), device_buffer<T>(1)};
    T* bbuf[2] = {device_buffer<T>(2), device_buffer<T>(3)};

    // Step t's blocks: the initial skew's (A(i, j) -> (i, j - i), B(i, j) -> (i - j, j)) for t = 0,
    // then shifts of A left by one and of B up by one; at step t the rank holds A(i, l), B(l, j)
    // with l = (i + j + t) mod q.
    const T* cur[2][2] = {{A.data, B.data}, {nullptr, nullptr}};  // [slot][A or B]
    auto post = [&](int t) {
      const int l = (i + j + t) % q_, slot = t % 2;
      T* next_a = abuf[slot];
      T* next_b = bbuf[slot];
      dev_->group_start();  // both operands at once
      if (t == 0) {
        if (i % q_) dev_->sendrecv(A.data, mi * pk_.size(j), at(i, j - i), next_a, mi * pk_.size(l), at(i, j + i));
        if (j % q_) dev_->sendrecv(B.data, pk_.size(i) * nj, at(i - j, j), next_b, pk_.size(l) * nj, at(i + j, j));
        cur[0][0] = i % q_ ? next_a : A.data, cur[0][1] = j % q_ ? next_b : B.data;
      } else {
        const int lp = (l + q_ - 1) % q_;  // the previous step's blocks move on
        const T* const* prev = cur[1 - slot];
        dev_->sendrecv(prev[0], mi * pk_.size(lp), at(i, j - 1), next_a, mi * pk_.size(l), at(i, j + 1));
        dev_->sendrecv(prev[1], pk_.size(lp) * nj, at(i - 1, j), next_b, pk_.size(l) * nj, at(i + 1, j));
        cur[slot][0] = next_a, cur[slot][1] = next_b;
      }
      dev_->group_end();
    };
    auto held = sp.hold_output(C.data, mi, nj, C.ld);  // C may stay on a staging GPU across the steps
    pipeline(sp, q_, post, [&](int t) {
      const index_t kl = pk_.size((i + j + t) % q_);
      const T* const* o = cur[t % 2];
      sp.gemm<T>(Op::N, Op::N, mi, nj, kl, alpha, o[0], std::max<index_t>(mi, 1), o[1], std::max<index_t>(kl, 1),
                 t == 0 ? beta : T(1), C.data, C.ld);
      step_done(t + 1, q_);
    });
  }

 private:
  int q_;
  CartGrid grid_;
  Partition1D pk_;
  std::unique_ptr<DeviceComm> dev_;  // over grid_'s communicator: destroyed before it
};

}  // namespace

std::unique_ptr<DistAlgorithm> make_cannon(const Comm& world, GemmShape s, const AlgoOptions&) {
  return std::make_unique<Cannon>(world, s, root_or_error(world.size(), 2, "cannon"));
}

}  // namespace distmm
