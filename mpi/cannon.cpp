// Cannon's algorithm (Cannon 1969; seed 002) on a periodic q x q torus, P = q^2.
// Rank (i, j) starts with A(i, j), B(i, j), C(i, j). The initial skew moves A(i, j) left by i and
// B(i, j) up by j, so that at step s rank (i, j) holds A(i, l) and B(l, j) with l = (i + j + s) mod q
// and accumulates C(i, j) += A(i, l) B(l, j); between steps A shifts left by one and B up by one.
// The next blocks are received into a second buffer while the current ones are multiplied.
#include <cmath>

#include "algorithms.hpp"
#include "grid.hpp"
#include "overlap.hpp"

namespace distmm {
namespace {

class Cannon final : public AlgorithmBase<Cannon> {
 public:
  Cannon(const Comm& world, GemmShape s, int q)
      : s_(s), q_(q), grid_(world, {q, q}, true), pm_{s.m, q}, pn_{s.n, q}, pk_{s.k, q} {
    int i = grid_.coord(0), j = grid_.coord(1);
    pa_ = Piece::block(pm_.start(i), pm_.size(i), pk_.start(j), pk_.size(j));
    pb_ = Piece::block(pk_.start(i), pk_.size(i), pn_.start(j), pn_.size(j));
    pc_ = Piece::block(pm_.start(i), pm_.size(i), pn_.start(j), pn_.size(j));
  }

  std::string name() const override { return "cannon"; }
  std::string layout() const override {
    return grid_.shape() + " torus, " + std::to_string(q_) + " steps";
  }
  const Piece& piece_a() const override { return pa_; }
  const Piece& piece_b() const override { return pb_; }
  const Piece& piece_c() const override { return pc_; }

  std::size_t peak_bytes(Dtype dt, const Engine& e) const override {
    index_t mi = pm_.max_size(), nj = pn_.max_size(), kl = pk_.max_size();
    index_t words = 3 * mi * kl + 3 * kl * nj + mi * nj;  // own blocks + two buffers each
    return static_cast<std::size_t>(words) * size_of(dt) + e.workspace_bytes(mi, nj, kl, dt);
  }

  CommEstimate analytic() const override {
    EstimateAccumulator acc;
    for (int i = 0; i < q_; ++i)
      for (int j = 0; j < q_; ++j) {
        double words = 0, msgs = 0;
        double mi = double(pm_.size(i)), nj = double(pn_.size(j));
        if (i % q_) words += mi * pk_.size(j), msgs += 1;       // skew of A
        if (j % q_) words += pk_.size(i) * nj, msgs += 1;       // skew of B
        for (int s = 0; s + 1 < q_; ++s) {
          int l = (i + j + s) % q_;
          words += mi * pk_.size(l) + pk_.size(l) * nj, msgs += 2;
        }
        acc.add(words, msgs, 2 * mi * nj * double(s_.k));
      }
    return acc.done(q_ * q_);
  }

  template <class T>
  void run(Engine& e, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    const int i = grid_.coord(0), j = grid_.coord(1);
    const index_t mi = pm_.size(i), nj = pn_.size(j), kmax = pk_.max_size();
    const Comm& c = grid_.comm();
    auto at = [&](int r, int cc) { return grid_.rank_of({r, cc}); };
    Matrix<T> abuf[2] = {Matrix<T>(mi, kmax), Matrix<T>(kmax, 1)};
    Matrix<T> bbuf[2] = {Matrix<T>(kmax, nj), Matrix<T>(kmax, 1)};
    abuf[1].resize(mi, kmax);
    bbuf[1].resize(kmax, nj);

    // Initial skew: A(i, j) -> (i, j - i), B(i, j) -> (i - j, j).
    int l = (i + j) % q_;
    const T* cur_a = A.data;
    const T* cur_b = B.data;
    {
      Requests rq;
      if (i % q_) {
        c.irecv(abuf[0].data(), mi * pk_.size(l), at(i, j + i), 1, rq);
        c.isend(A.data, mi * pk_.size(j), at(i, j - i), 1, rq);
        cur_a = abuf[0].data();
      }
      if (j % q_) {
        c.irecv(bbuf[0].data(), pk_.size(l) * nj, at(i + j, j), 2, rq);
        c.isend(B.data, pk_.size(i) * nj, at(i - j, j), 2, rq);
        cur_b = bbuf[0].data();
      }
    }

    HeldOutput<T> held(e, C.data, mi, nj, C.ld);  // C may stay on a GPU across the steps
    for (int s = 0; s < q_; ++s) {
      l = (i + j + s) % q_;
      const index_t kl = pk_.size(l);
      Requests rq;
      T* next_a = abuf[(s + 1) % 2].data();
      T* next_b = bbuf[(s + 1) % 2].data();
      if (s + 1 < q_) {
        const index_t kn = pk_.size((l + 1) % q_);
        c.irecv(next_a, mi * kn, at(i, j + 1), 3, rq);
        c.irecv(next_b, kn * nj, at(i + 1, j), 4, rq);
        c.isend(cur_a, mi * kl, at(i, j - 1), 3, rq);
        c.isend(cur_b, kl * nj, at(i - 1, j), 4, rq);
      }
      gemm_with_progress<T>(e, mi, nj, kl, alpha, cur_a, std::max<index_t>(mi, 1), cur_b,
                            std::max<index_t>(kl, 1), s == 0 ? beta : T(1), C.data, C.ld,
                            s + 1 < q_ ? &rq : nullptr);
      rq.wait_all();
      step_done(s + 1, q_);
      cur_a = next_a;
      cur_b = next_b;
    }
  }

  // The same on device buffers: the shifts by NCCL (or MPI through host memory) on the comm
  // lane while the current blocks' product runs on the compute lane. A and B are contiguous
  // (ld = rows), as the device-resident run allocates them.
  static constexpr bool kRunsOnDevice = true;
  void prepare_device(DeviceSpace& sp) override {
    if (!dev_) dev_ = sp.comm(grid_.comm());
  }
  // Two blocks each of A and of B, received while the current ones are multiplied.
  std::vector<std::size_t> device_buffer_bytes(Dtype dt) const override {
    if (q_ == 1) return {};
    const index_t mi = pm_.size(grid_.coord(0)), nj = pn_.size(grid_.coord(1)), kl = pk_.max_size();
    const std::size_t a = std::size_t(mi * kl) * size_of(dt), b = std::size_t(kl * nj) * size_of(dt);
    return {a, a, b, b};
  }
  GemmShape device_gemm_shape() const override { return {pm_.max_size(), pn_.max_size(), pk_.max_size()}; }

  template <class T>
  void run_device(DeviceSpace& sp, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta,
                  MatrixView<T> C) {
    prepare_device(sp);
    const int i = grid_.coord(0), j = grid_.coord(1);
    const index_t mi = pm_.size(i), nj = pn_.size(j);
    auto at = [&](int r, int cc) { return grid_.rank_of({r, cc}); };
    reserve_device(sp, dtype_of<T>());  // done before the first multiply: nothing to allocate
    T* abuf[2] = {device_buffer<T>(0), device_buffer<T>(1)};
    T* bbuf[2] = {device_buffer<T>(2), device_buffer<T>(3)};

    sp.comm_waits_for_compute();  // the operands are ready
    int l = (i + j) % q_;
    const T* cur_a = A.data;
    const T* cur_b = B.data;
    dev_->group_start();  // initial skew, both operands at once
    if (i % q_) {
      dev_->sendrecv(A.data, mi * pk_.size(j), at(i, j - i), abuf[0], mi * pk_.size(l), at(i, j + i));
      cur_a = abuf[0];
    }
    if (j % q_) {
      dev_->sendrecv(B.data, pk_.size(i) * nj, at(i - j, j), bbuf[0], pk_.size(l) * nj, at(i + j, j));
      cur_b = bbuf[0];
    }
    dev_->group_end();
    for (int s = 0; s < q_; ++s) {
      l = (i + j + s) % q_;
      const index_t kl = pk_.size(l);
      T* next_a = abuf[(s + 1) % 2];
      T* next_b = bbuf[(s + 1) % 2];
      sp.compute_waits_for_comm();  // this step's blocks arrived
      if (s + 1 < q_) {
        sp.comm_waits_for_compute();  // the product that read the next buffers (s - 1) is done
        const index_t kn = pk_.size((l + 1) % q_);
        dev_->group_start();
        dev_->sendrecv(cur_a, mi * kl, at(i, j - 1), next_a, mi * kn, at(i, j + 1));
        dev_->sendrecv(cur_b, kl * nj, at(i - 1, j), next_b, kn * nj, at(i + 1, j));
        dev_->group_end();
      }
      sp.gemm<T>(Op::N, Op::N, mi, nj, kl, alpha, cur_a, std::max<index_t>(mi, 1), cur_b,
                 std::max<index_t>(kl, 1), s == 0 ? beta : T(1), C.data, C.ld);
      step_done(s + 1, q_);
      cur_a = next_a;
      cur_b = next_b;
    }
  }

 private:
  GemmShape s_;
  int q_;
  CartGrid grid_;
  Partition1D pm_, pn_, pk_;
  Piece pa_, pb_, pc_;
  std::unique_ptr<DeviceComm> dev_;  // over grid_'s communicator: destroyed before it
};

}  // namespace

std::unique_ptr<DistAlgorithm> make_cannon(const Comm& world, GemmShape s, const AlgoOptions&) {
  const int q = root_or_error(world.size(), 2, "cannon");
  return std::make_unique<Cannon>(world, s, q);
}

}  // namespace distmm
