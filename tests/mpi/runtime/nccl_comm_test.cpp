// NCCL between the ranks' GPUs, bootstrapped through MPI (mpi/nccl_comm.hpp): broadcast,
// all-reduce, all-gather, reduce-scatter and a ring of send/recv on device buffers, real and
// complex, against the values every rank can compute. Needs one GPU per rank; skipped, visibly,
// otherwise (NCCL refuses two ranks on one GPU).
#include <gtest/gtest.h>

#include <complex>
#include <vector>

#include "cuda/device_info.hpp"
#include "mpi/runtime/nccl_comm.hpp"

using namespace distmm;

namespace {

template <class T>
struct DeviceArray {
  T* p = nullptr;
  explicit DeviceArray(std::size_t n) { cudaMalloc(reinterpret_cast<void**>(&p), sizeof(T) * std::max<std::size_t>(n, 1)); }
  ~DeviceArray() { cudaFree(p); }
  void put(const std::vector<T>& v) { cudaMemcpy(p, v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice); }
  std::vector<T> get(std::size_t n) const {
    std::vector<T> v(n);
    cudaMemcpy(v.data(), p, sizeof(T) * n, cudaMemcpyDeviceToHost);
    return v;
  }
};

template <class T>
void collectives(const NcclComm& nc) {
  const int P = nc.size(), r = nc.rank();
  const index_t n = 37;
  cudaStream_t s;
  cudaStreamCreate(&s);
  auto value = [](int rank, index_t i) { return T(double(rank * 100 + i)); };
  // broadcast from the last rank
  DeviceArray<T> b(n);
  std::vector<T> mine(n);
  for (index_t i = 0; i < n; ++i) mine[i] = value(r, i);
  b.put(mine);
  nc.broadcast(b.p, n, P - 1, s);
  cudaStreamSynchronize(s);
  for (index_t i = 0; i < n; ++i) ASSERT_EQ(b.get(n)[i], value(P - 1, i));
  // all-reduce: the sum over ranks
  b.put(mine);
  nc.all_reduce_sum(b.p, n, s);
  cudaStreamSynchronize(s);
  std::vector<T> sum = b.get(n);
  for (index_t i = 0; i < n; ++i) {
    T want(0);
    for (int q = 0; q < P; ++q) want += value(q, i);
    EXPECT_EQ(sum[i], want);
  }
  // all-gather and reduce-scatter
  DeviceArray<T> all(n * P), part(n);
  b.put(mine);
  nc.all_gather(b.p, all.p, n, s);
  cudaStreamSynchronize(s);
  std::vector<T> got = all.get(n * P);
  for (int q = 0; q < P; ++q)
    for (index_t i = 0; i < n; ++i) EXPECT_EQ(got[q * n + i], value(q, i));
  nc.reduce_scatter_sum(all.p, part.p, n, s);  // every rank gave the same n x P: P times block r
  cudaStreamSynchronize(s);
  std::vector<T> red = part.get(n);
  for (index_t i = 0; i < n; ++i) EXPECT_EQ(red[i], T(double(P)) * value(r, i));
  // a ring shift: send to the right, receive from the left
  DeviceArray<T> in(n);
  b.put(mine);
  nc.group_start();
  nc.send(b.p, n, (r + 1) % P, s);
  nc.recv(in.p, n, (r + P - 1) % P, s);
  nc.group_end();
  cudaStreamSynchronize(s);
  std::vector<T> left = in.get(n);
  for (index_t i = 0; i < n; ++i) EXPECT_EQ(left[i], value((r + P - 1) % P, i));
  cudaStreamDestroy(s);
}

TEST(NcclComm, CollectivesAndShiftsOnDeviceBuffers) {
  Comm world = Comm::world();
  int gpus = gpu_count(), enough = gpus >= world.size() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &enough, 1, MPI_INT, MPI_MIN, world.get());
  if (!enough) GTEST_SKIP() << "NCCL needs one GPU per rank: " << gpu_summary() << " for " << world.size() << " ranks";
  cudaSetDevice(world.rank() % gpus);
  NcclComm nc(world);
  collectives<double>(nc);
  collectives<float>(nc);
  collectives<std::complex<double>>(nc);
}

}  // namespace
