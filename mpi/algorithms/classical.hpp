// What the classical algorithms (SUMMA, Cannon, DNS, cuboid) share over AlgorithmBase: one
// schedule over a memory space, the split of m and n and this rank's pieces, the peak memory as
// the words a rank holds plus the engine's workspace for the largest local product, the
// communicators made once in the space, and the analytic counts from the schedule itself.
#pragma once
#include <tuple>
#include <utility>
#include <vector>

#include "algorithm.hpp"

namespace distmm {

template <class D>
class ClassicalAlgorithm : public AlgorithmBase<D> {
 public:
  ClassicalAlgorithm(const Comm& world, GemmShape s, int pm, int pn)
      : rank_(world.rank()), P_(world.size()), s_(s), pm_{s.m, pm}, pn_{s.n, pn} {}
  static constexpr bool kOneSchedule = true;
  // Each rank's run<double> in a counting space, empty messages counted as comm.hpp counts them,
  // with D's communicators swapped for counting ones meanwhile (D::place).
  CommEstimate analytic() const override {
    D& self = const_cast<D&>(static_cast<const D&>(*this));
    EstimateAccumulator acc;
    for (int r = 0; r < P_; ++r) {
      const SpaceCounts n = this->counted([&](CountingSpace& cs) {
        cs.empty_messages = true;
        const PlacedComms comms = self.place(r);
        std::vector<std::unique_ptr<DeviceComm>> held;  // D's own meanwhile
        for (auto [over, dev, rank, size] : comms) held.push_back(std::exchange(*dev, cs.comm_as(rank, size)));
        const DeviceBlock a = cs.alloc(0), b = cs.alloc(0), c = cs.alloc(0);
        self.template run<double>(cs, 1.0, {a.as<double>()}, {b.as<double>()}, 0.0, {c.as<double>()});
        for (std::size_t i = 0; i < held.size(); ++i) *std::get<1>(comms[i]) = std::move(held[i]);
      });
      acc.add(n.words, n.msgs, n.flops);
    }
    self.place(rank_);
    return acc.done(P_);
  }
  // D::peak_words(): the words a rank holds at most, inputs and outputs included.
  std::size_t peak_bytes(Dtype dt, const Engine& e) const override {
    const GemmShape g = device_gemm_shape();
    return static_cast<std::size_t>(static_cast<const D*>(this)->peak_words() * double(size_of(dt))) +
           e.workspace_bytes(g.m, g.n, g.k, dt);
  }

 protected:
  using Lane = DeviceSpace::Lane;
  // D::place(r) takes world rank r's coordinates and lists D's communicators that r uses, each
  // over one of D's Comms, with r's rank and size in it; place(rank_) takes this rank's back.
  // Members of D declared after their Comms (destroyed first), made once in the bound space.
  using PlacedComms = std::vector<std::tuple<const Comm*, std::unique_ptr<DeviceComm>*, int, int>>;
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

  void prepare_comms(DeviceSpace& sp) override {
    for (auto [over, dev, rank, size] : static_cast<D*>(this)->place(rank_))
      if (!*dev) *dev = sp.comm(*over);
  }
  void forget_comms() override {
    for (auto [over, dev, rank, size] : static_cast<D*>(this)->place(rank_)) dev->reset();
  }
  int rank_, P_;  // in the world
  GemmShape s_;
  Partition1D pm_, pn_;  // m and n over the grid's rows and columns
};

}  // namespace distmm
