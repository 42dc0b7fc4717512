// What the classical algorithms (SUMMA, Cannon, DNS, cuboid) share over AlgorithmBase: one
// schedule over a memory space, the split of m and n and this rank's pieces, the peak memory as
// the words a rank holds plus the engine's workspace for the largest local product, and the
// communicators made once in the space.
#pragma once
#include <utility>
#include <vector>

#include "algorithm.hpp"

namespace distmm {

template <class D>
class ClassicalAlgorithm : public AlgorithmBase<D> {
 public:
  ClassicalAlgorithm(GemmShape s, int pm, int pn) : s_(s), pm_{s.m, pm}, pn_{s.n, pn} {}
  static constexpr bool kOneSchedule = true;
  // D::peak_words(): the words a rank holds at most, inputs and outputs included.
  std::size_t peak_bytes(Dtype dt, const Engine& e) const override {
    const GemmShape g = device_gemm_shape();
    return static_cast<std::size_t>(static_cast<const D*>(this)->peak_words() * double(size_of(dt))) +
           e.workspace_bytes(g.m, g.n, g.k, dt);
  }

 protected:
  using Lane = DeviceSpace::Lane;
  // The largest local product: an m-block by an n-block by D::depth() of k.
  GemmShape device_gemm_shape() const override {
    return {pm_.max_size(), pn_.max_size(), static_cast<const D*>(this)->depth()};
  }
  // Rank (i, j)'s blocks on a 2-D grid: A(i, j) by pm_ and pka, B(i, j) by pkb and pn_, C(i, j).
  void set_blocks(int i, int j, const Partition1D& pka, const Partition1D& pkb) {
    this->piece_a_ = Piece::block(pm_.start(i), pm_.size(i), pka.start(j), pka.size(j));
    this->piece_b_ = Piece::block(pkb.start(i), pkb.size(i), pn_.start(j), pn_.size(j));
    this->piece_c_ = Piece::block(pm_.start(i), pm_.size(i), pn_.start(j), pn_.size(j));
  }

  // Each of D's communicators (DeviceSpace::comm) over one of its Comms, made once in the bound
  // space: listed by D's constructor, members of D declared after their Comms (destroyed first).
  std::vector<std::pair<const Comm*, std::unique_ptr<DeviceComm>*>> space_comms_;
  void prepare_comms(DeviceSpace& sp) override {
    for (auto& [over, dev] : space_comms_)
      if (!*dev) *dev = sp.comm(*over);
  }
  void forget_comms() override {
    for (auto& [over, dev] : space_comms_) dev->reset();
  }
  GemmShape s_;
  Partition1D pm_, pn_;  // m and n over the grid's rows and columns
};

}  // namespace distmm
