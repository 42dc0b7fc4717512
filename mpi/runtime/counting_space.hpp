// A memory space that moves nothing and counts: an algorithm's schedule run in it as rank r
// gives r's analytic words and messages (comm.hpp's convention: a send is charged to its sender,
// a broadcast to every rank but the root), multiply flops, and elements streamed by additions and
// copies, from the schedule itself instead of a second description of it. Its memory is
// addresses only (alloc), never read or written.
#pragma once
#include <cstdint>
#include <stdexcept>

#include "device_space.hpp"

namespace distmm {

struct SpaceCounts {
  double words = 0, msgs = 0, flops = 0, local = 0;
};

// Empty messages count where `empty` (as comm.hpp counts them: the classical algorithms'
// analytic counts); CAPS's leave them out.
class CountingComm final : public DeviceComm {
 public:
  CountingComm(SpaceCounts& n, int rank, int size, bool empty) : n_(n), rank_(rank), size_(size), empty_(empty) {}
  void broadcast_call(void*, index_t n, Dtype, int root) override {
    if (size_ > 1 && rank_ != root) charge(n);
  }
  void sendrecv_call(const void*, index_t ns, int dest, void*, index_t, int, Dtype) override {
    if (dest >= 0) charge(ns);
  }
  void reduce_call(const void*, void*, index_t n, Dtype, int root) override {
    if (rank_ != root) charge(n);
  }
  // The other ranks' non-empty parts, as Comm::iallgatherv and Comm::reduce_scatter charge them.
  void all_gather_v_call(const void*, void*, const std::vector<index_t>& counts, Dtype) override { others(counts); }
  void reduce_scatter_v_call(void*, void*, const std::vector<index_t>& counts, Dtype) override { others(counts); }
  void all_gather_call(const void*, void*, index_t, Dtype) override { unsupported(); }
  void reduce_scatter_call(const void*, void*, index_t, Dtype) override { unsupported(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

 private:
  [[noreturn]] static void unsupported() { throw std::logic_error("the counting space takes uneven parts only"); }
  void charge(index_t n) {
    if (n > 0 || empty_) n_.words += double(n), n_.msgs += 1;
  }
  void others(const std::vector<index_t>& counts) {
    for (std::size_t q = 0; q < counts.size(); ++q)
      if (int(q) != rank_ && counts[q] > 0) n_.words += double(counts[q]), n_.msgs += 1;
  }
  SpaceCounts& n_;
  int rank_, size_;
  bool empty_;
};

class CountingSpace final : public DeviceSpace {
 public:
  SpaceCounts counts;
  std::size_t elem_bytes = sizeof(double);  // of the schedule's type, for zero()
  bool empty_messages = false;              // counted (CountingComm)
  // A communicator of `size` ranks in which the counted rank is `rank`.
  std::unique_ptr<DeviceComm> comm_as(int rank, int size) {
    return std::make_unique<CountingComm>(counts, rank, size, empty_messages);
  }
  std::string transport() const override { return "none (counting)"; }
  bool takes_uneven_parts() const override { return true; }
  // Distinct address ranges, 2^40 bytes apart, for pointer arithmetic and comparison alone.
  DeviceBlock alloc(std::size_t bytes) override {
    return DeviceBlock(this, reinterpret_cast<void*>(std::uintptr_t(++blocks_) << 40), bytes);
  }
  std::unique_ptr<DeviceComm> comm(const Comm& c) override { return comm_as(c.rank(), c.size()); }
  void copy(void*, index_t, const void*, index_t, index_t rows, index_t cols, std::size_t, Lane) override {
    counts.local += 2.0 * double(rows) * double(cols);
  }
  void scale_add(void*, index_t, const void*, index_t, index_t rows, index_t cols, const void*, const void*, Dtype) override {
    counts.local += 3.0 * double(rows) * double(cols);  // x read, y read and written
  }
  void combine(index_t n, const Combination& c, Dtype) override {
    int reads = c.n_in;
    for (int o = 0; o < c.n_out; ++o) reads += c.accumulate[std::size_t(o)];
    counts.local += double(n) * (reads + c.n_out);
  }
  void copy_strided(void*, index_t, index_t, const void*, index_t, index_t, index_t rows, index_t cols, Dtype,
                    bool, const void* beta, Lane) override {
    counts.local += (beta ? 3.0 : 2.0) * double(rows) * double(cols);
  }
  void zero(void*, std::size_t bytes, Lane) override { counts.local += double(bytes) / double(elem_bytes); }
  void gemm(const GemmCall& c) override { counts.flops += 2.0 * double(c.m) * double(c.n) * double(c.k); }
  void comm_waits_for_compute() override {}
  void compute_waits_for_comm() override {}
  void mark(Lane, int) override {}
  void wait_mark(Lane, int) override {}
  double seconds_between(int, int) override { return 0; }
  void synchronize() override {}
  void upload(void*, index_t, const void*, index_t, index_t, index_t, std::size_t) override { unsupported(); }
  void download(void*, index_t, const void*, index_t, index_t, index_t, std::size_t) override { unsupported(); }
  void upload_async(void*, index_t, const void*, index_t, index_t, index_t, std::size_t) override { unsupported(); }
  void download_async(void*, index_t, const void*, index_t, index_t, index_t, std::size_t) override { unsupported(); }
  HostPin pin_host(void*, std::size_t) override { return {}; }
  void fill_random(void*, index_t, index_t, index_t, index_t, index_t, std::uint64_t, Stream, Fill, Dtype) override {
    unsupported();
  }
  void matvec(const void*, index_t, index_t, index_t, Dtype, const double*, bool, const double*, double*, double*) override {
    unsupported();
  }
  double max_abs(const void*, index_t, index_t, index_t, Dtype) override { unsupported(); }
  std::size_t free_bytes() const override { return 0; }
  std::size_t engine_workspace(index_t, index_t, index_t, Dtype) const override { return 0; }

 protected:
  void release(void*) noexcept override {}
  void unpin_host(void*) noexcept override {}

 private:
  [[noreturn]] static void unsupported() { throw std::logic_error("the counting space holds no data"); }
  std::uintptr_t blocks_ = 0;
};

}  // namespace distmm
