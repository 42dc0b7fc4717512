// The double-buffered loop that every distributed algorithm's steps share (Cannon's shifts,
// SUMMA's panels, cuboid's k-steps, CAPS's leaf panels, the PDGEMM drop-in's block-cyclic
// panels): step t + 1's transfers are queued on the comm lane before step t's product is queued
// on the compute lane, so that they overlap -- on a GPU as two streams, in a host space as MPI's
// nonblocking transfers progressing inside the product (host_space.cpp).
#pragma once
#include "device_space.hpp"

namespace distmm {

// post(t): queues step t's transfers on the comm lane, into the buffers of slot t % 2.
// multiply(t): queues step t's product on the compute lane, once its transfers are in.
// wait(f): runs f, the compute lane's wait for step t's transfers (a phase timer may wrap it).
// Before step t + 1 is posted, the comm lane waits for what the compute lane queued so far,
// i.e. for step t - 1's product, the last reader of slot (t + 1) % 2.
template <class Post, class Multiply, class Wait>
void pipeline(DeviceSpace& sp, int steps, Post&& post, Multiply&& multiply, Wait&& wait) {
  if (steps <= 0) return;
  sp.comm_waits_for_compute();  // the operands are ready
  post(0);
  for (int t = 0; t < steps; ++t) {
    wait([&] { sp.compute_waits_for_comm(); });
    if (t + 1 < steps) {
      sp.comm_waits_for_compute();
      post(t + 1);
    }
    multiply(t);
  }
}

template <class Post, class Multiply>
void pipeline(DeviceSpace& sp, int steps, Post&& post, Multiply&& multiply) {
  pipeline(sp, steps, post, multiply, [](auto&& f) { f(); });
}

}  // namespace distmm
