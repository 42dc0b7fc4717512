// A NCCL communicator over the ranks of an MPI communicator, one GPU per rank (the rank's current
// device), bootstrapped through MPI: rank 0's ncclUniqueId is broadcast, every rank joins
// (ncclCommInitRank). Collectives and point-to-point transfers on device buffers, queued on the
// caller's stream; words and messages counted as Comm counts them (comm.hpp). Built with CUDA;
// the library itself is found at run time (cuda/nccl_library.hpp). Keep NVLink multicast off
// where it misbehaves (NCCL_NVLS_ENABLE=0).
#pragma once
#include <cuda_runtime.h>

#include "../../cuda/nccl_library.hpp"
#include "../../cuda/nccl_types.hpp"
#include "comm.hpp"

namespace distmm {

class NcclComm {
 public:
  // Collective over `comm`. UsageError on every rank when any rank has no NCCL or no GPU, so no
  // rank is left waiting in ncclCommInitRank.
  explicit NcclComm(const Comm& comm);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

  template <class T>
  void broadcast(T* buf, index_t n, int root, cudaStream_t s) const {
    if (rank_ != root) count(n);
    check(lib().Broadcast(buf, buf, units<T>(n), nccl_type<T>(), root, comm_, s), "ncclBroadcast");
  }
  // buf = the sum over ranks of buf (componentwise for complex types).
  template <class T>
  void all_reduce_sum(T* buf, index_t n, cudaStream_t s) const {
    count(n);
    check(lib().AllReduce(buf, buf, units<T>(n), nccl_type<T>(), ncclSum, comm_, s), "ncclAllReduce");
  }
  // recv (on root) = the sum over ranks of send.
  template <class T>
  void reduce_sum(const T* send, T* recv, index_t n, int root, cudaStream_t s) const {
    if (rank_ != root) count(n);
    check(lib().Reduce(send, recv, units<T>(n), nccl_type<T>(), ncclSum, root, comm_, s), "ncclReduce");
  }
  // recv (n x size) = every rank's n elements of send, in rank order.
  template <class T>
  void all_gather(const T* send, T* recv, index_t n, cudaStream_t s) const {
    count(n * (size_ - 1));
    check(lib().AllGather(send, recv, units<T>(n), nccl_type<T>(), comm_, s), "ncclAllGather");
  }
  // recv (n) = this rank's block of the sum over ranks of send (n x size).
  template <class T>
  void reduce_scatter_sum(const T* send, T* recv, index_t n, cudaStream_t s) const {
    count(n * (size_ - 1));
    check(lib().ReduceScatter(send, recv, units<T>(n), nccl_type<T>(), ncclSum, comm_, s), "ncclReduceScatter");
  }
  template <class T>
  void send(const T* buf, index_t n, int peer, cudaStream_t s) const {
    count(n);
    check(lib().Send(buf, units<T>(n), nccl_type<T>(), peer, comm_, s), "ncclSend");
  }
  template <class T>
  void recv(T* buf, index_t n, int peer, cudaStream_t s) const {
    check(lib().Recv(buf, units<T>(n), nccl_type<T>(), peer, comm_, s), "ncclRecv");
  }
  // Sends and receives between group_start and group_end proceed together (a shift, an
  // all-to-all).
  void group_start() const { check(lib().GroupStart(), "ncclGroupStart"); }
  void group_end() const { check(lib().GroupEnd(), "ncclGroupEnd"); }

 private:
  static const NcclLibrary& lib() { return nccl_library(); }
  template <class T>
  static std::size_t units(index_t n) {
    return static_cast<std::size_t>(n) * nccl_components<T>;
  }
  static void count(index_t words) {
    comm_counters().words_sent += words;
    comm_counters().messages_sent += 1;
  }
  static void check(ncclResult_t r, const char* what);
  ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 1;
};

}  // namespace distmm
