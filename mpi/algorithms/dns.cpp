// DNS (Dekel, Nassimi & Sahni 1981; seed 002) on a q x q x q grid, P = q^3. The base plane
// l = 0 holds A(i, j), B(i, j) and C(i, j) in q x q blocks. A(i, j) moves to plane j and B(i, j) to
// plane i; in plane l, A(i, l) is broadcast along j and B(l, j) along i, so that rank (i, j, l)
// computes A(i, l) B(l, j); the q partial products are summed along l back onto the base plane.
#include "algorithms.hpp"
#include "classical.hpp"
#include "../runtime/grid.hpp"

namespace distmm {
namespace {

class Dns final : public ClassicalAlgorithm<Dns> {
 public:
  Dns(const Comm& world, GemmShape s, int q)
      : ClassicalAlgorithm(world, s, q, q), q_(q), grid_(world, {q, q, q}, false), i_(grid_.coord(0)),
        j_(grid_.coord(1)), l_(grid_.coord(2)), pk_{s.k, q} {
    depth_ = grid_.along({2});  // fixed (i, j), rank = l
    row_ = grid_.along({1});    // fixed (i, l), rank = j
    col_ = grid_.along({0});    // fixed (j, l), rank = i
    if (l_ == 0) set_blocks(i_, j_, pk_, pk_);
  }

  std::string name() const override { return "dns"; }
  std::string layout() const override { return grid_.shape() + " grid"; }
  // base plane: own A, B, C plus the plane-0 copies; others: A, B and a partial C.
  index_t depth() const { return pk_.max_size(); }
  double peak_words() const {
    const index_t mi = pm_.max_size(), nj = pn_.max_size(), kl = pk_.max_size();
    return double(2 * mi * kl + 2 * kl * nj + 2 * mi * nj);
  }

  PlacedComms place(int r) {
    i_ = r / (q_ * q_), j_ = r / q_ % q_, l_ = r % q_;
    return {{&depth_, &dev_depth_, l_, q_}, {&row_, &dev_row_, j_, q_}, {&col_, &dev_col_, i_, q_}};
  }

  // This rank's A(i, l) and B(l, j), and off the base plane its partial product.
  std::vector<std::size_t> device_buffer_bytes(Dtype dt) const override {
    const index_t mi = pm_.size(i_), nj = pn_.size(j_), kl = pk_.size(l_);
    return {std::size_t(mi * kl) * size_of(dt), std::size_t(kl * nj) * size_of(dt),
            l_ != 0 ? std::size_t(mi * nj) * size_of(dt) : 0};
  }

  // Each step's transfers on the comm lane (DNS has no steps to overlap: the product needs both
  // broadcasts, and the reduction needs the product).
  template <class T>
  void run(DeviceSpace& sp, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    const index_t mi = pm_.size(i_), nj = pn_.size(j_), kl = pk_.size(l_);
    T *a = device_buffer<T>(0), *b = device_buffer<T>(1);
    sp.comm_waits_for_compute();
    // 1. Base plane sends A(i, j) to plane j and B(i, j) to plane i (depth rank = plane).
    dev_depth_->group_start();
    if (l_ == 0 && j_ != 0) dev_depth_->send(A.data, mi * pk_.size(j_), j_);  // A(i, j)
    if (l_ == 0 && i_ != 0) dev_depth_->send(B.data, pk_.size(i_) * nj, i_);  // B(i, j)
    if (l_ == j_ && l_ != 0) dev_depth_->recv(a, mi * kl, 0);
    if (l_ == i_ && l_ != 0) dev_depth_->recv(b, kl * nj, 0);
    dev_depth_->group_end();
    if (l_ == 0 && j_ == 0) sp.copy(a, std::max<index_t>(mi, 1), A.data, A.ld, mi, kl, Lane::comm);
    if (l_ == 0 && i_ == 0) sp.copy(b, std::max<index_t>(kl, 1), B.data, B.ld, kl, nj, Lane::comm);
    step_done(1, 3);
    // 2. Within plane l: A(i, l) from (i, l, l) along j; B(l, j) from (l, j, l) along i.
    dev_row_->broadcast(a, mi * kl, l_);
    dev_col_->broadcast(b, kl * nj, l_);
    sp.compute_waits_for_comm();
    step_done(2, 3);
    // 3. Multiply, and sum the q partial products onto the base plane.
    T* out = l_ != 0 ? device_buffer<T>(2) : C.data;
    const index_t ldo = l_ != 0 ? std::max<index_t>(mi, 1) : C.ld;
    sp.gemm<T>(Op::N, Op::N, mi, nj, kl, alpha, a, std::max<index_t>(mi, 1), b, std::max<index_t>(kl, 1),
               l_ == 0 ? beta : T(0), out, ldo);
    sp.comm_waits_for_compute();
    dev_depth_->reduce_sum(out, out, mi * nj, 0);
    sp.compute_waits_for_comm();
    step_done(3, 3);
  }

 private:
  int q_;
  CartGrid grid_;
  int i_, j_, l_;  // this rank's grid coordinates
  Comm depth_, row_, col_;
  Partition1D pk_;
  std::unique_ptr<DeviceComm> dev_depth_, dev_row_, dev_col_;  // destroyed before their Comms
};

}  // namespace

std::unique_ptr<DistAlgorithm> make_dns(const Comm& world, GemmShape s, const AlgoOptions&) {
  return std::make_unique<Dns>(world, s, root_or_error(world.size(), 3, "dns"));
}

}  // namespace distmm
