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
      : ClassicalAlgorithm(world, s, q, q), q_(q), grid_(world, {q, q}, true), i_(grid_.coord(0)),
        j_(grid_.coord(1)), pk_{s.k, q} {
    set_blocks(i_, j_, pk_, pk_);
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

  PlacedComms place(int r) {
    i_ = r / q_, j_ = r % q_;
    return {{&grid_.comm(), &dev_, r, q_ * q_}};
  }

  // Two blocks each of A and of B, received while the current ones are multiplied.
  std::vector<std::size_t> device_buffer_bytes(Dtype dt) const override {
    if (q_ == 1) return {};
    const index_t mi = pm_.size(i_), nj = pn_.size(j_), kl = pk_.max_size();
    const std::size_t a = std::size_t(mi * kl) * size_of(dt), b = std::size_t(kl * nj) * size_of(dt);
    return {a, a, b, b};
  }

  // The next blocks' shifts on the comm lane during the current product (pipeline.hpp). A and B
  // are contiguous (ld = rows).
  template <class T>
  void run(DeviceSpace& sp, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    const index_t mi = pm_.size(i_), nj = pn_.size(j_);
    auto at = [&](int r, int cc) { return grid_.rank_of({r, cc}); };
    T *abuf[2] = {device_buffer<T>(0), device_buffer<T>(1)}, *bbuf[2] = {device_buffer<T>(2), device_buffer<T>(3)};
    // Step t's blocks: the initial skew's (A(i, j) -> (i, j - i), B(i, j) -> (i - j, j)) for t = 0,
    // then shifts of A left by one and of B up by one; at step t the rank holds A(i, l), B(l, j)
    // with l = (i + j + t) mod q.
    const T* cur[2][2] = {};  // [slot][A or B]
    auto post = [&](int t) {
      const int l = (i_ + j_ + t) % q_, slot = t % 2, da = t == 0 ? i_ : 1, db = t == 0 ? j_ : 1;
      // What this rank holds before step t: its own blocks, or step t - 1's (k-part lp).
      const int lp = (l + q_ - 1) % q_;
      const T *prev_a = t == 0 ? A.data : cur[1 - slot][0], *prev_b = t == 0 ? B.data : cur[1 - slot][1];
      const index_t ka = pk_.size(t == 0 ? j_ : lp), kb = pk_.size(t == 0 ? i_ : lp);
      dev_->group_start();  // both operands at once
      if (da % q_) dev_->sendrecv(prev_a, mi * ka, at(i_, j_ - da), abuf[slot], mi * pk_.size(l), at(i_, j_ + da));
      if (db % q_) dev_->sendrecv(prev_b, kb * nj, at(i_ - db, j_), bbuf[slot], pk_.size(l) * nj, at(i_ + db, j_));
      dev_->group_end();
      cur[slot][0] = da % q_ ? abuf[slot] : prev_a, cur[slot][1] = db % q_ ? bbuf[slot] : prev_b;
    };
    auto held = sp.hold_output(C.data, mi, nj, C.ld);  // C may stay on a staging GPU across the steps
    pipeline(sp, q_, post, [&](int t) {
      const index_t kl = pk_.size((i_ + j_ + t) % q_);
      const T* const* o = cur[t % 2];
      sp.gemm<T>(Op::N, Op::N, mi, nj, kl, alpha, o[0], std::max<index_t>(mi, 1), o[1], std::max<index_t>(kl, 1),
                 t == 0 ? beta : T(1), C.data, C.ld);
      step_done(t + 1, q_);
    });
  }

 private:
  int q_;
  CartGrid grid_;
  int i_, j_;  // this rank's grid coordinates
  Partition1D pk_;
  std::unique_ptr<DeviceComm> dev_;  // over grid_'s communicator: destroyed before it
};

}  // namespace

std::unique_ptr<DistAlgorithm> make_cannon(const Comm& world, GemmShape s, const AlgoOptions&) {
  return std::make_unique<Cannon>(world, s, root_or_error(world.size(), 2, "cannon"));
}

}  // namespace distmm
