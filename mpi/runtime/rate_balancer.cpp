#include "rate_balancer.hpp"

#include <algorithm>

namespace distmm {

double rate_finish(const RateRank& r, double sec_per_word) {
  return r.ready + r.work * r.sec_per_work + r.words * sec_per_word;
}

std::vector<RateMove> rate_balance(const std::vector<RateRank>& ranks, const RateRules& rules,
                                   std::vector<double>* finish) {
  const int P = static_cast<int>(ranks.size());
  auto at = [](int t) { return static_cast<std::size_t>(t); };
  std::vector<double> pred(at(P));
  std::vector<int> taken(at(P));
  for (int t = 0; t < P; ++t)
    pred[at(t)] = rate_finish(ranks[at(t)], rules.sec_per_word), taken[at(t)] = ranks[at(t)].taken;
  auto spf = [&](int t) { return ranks[at(t)].sec_per_work; };
  std::vector<std::size_t> given(at(P), 0);
  std::vector<RateMove> moves;
  while (true) {
    int v = -1;
    for (int t = 0; t < P; ++t)
      if (spf(t) > 0 && (v < 0 || pred[at(t)] > pred[at(v)])) v = t;
    if (v < 0 || given[at(v)] == ranks[at(v)].items.size()) break;  // the last rank cannot give more
    const RateItem& item = ranks[at(v)].items[given[at(v)]];
    int u = -1;
    double u_end = 0;
    for (int t = 0; t < P; ++t) {
      if (t == v || t == item.barred || spf(t) <= 0 || !ranks[at(t)].may_take || taken[at(t)] >= rules.max_per_thief)
        continue;
      const double end = pred[at(t)] + item.work * spf(t) + item.words * rules.sec_per_word;
      if (u < 0 || end < u_end) u = t, u_end = end;
    }
    const double v_time = item.work * spf(v), v_end = pred[at(v)] - v_time;
    if (u < 0 || std::max(u_end, v_end) > pred[at(v)] - rules.margin * v_time) break;
    moves.push_back({v, given[at(v)], u});
    pred[at(v)] = v_end, pred[at(u)] = u_end, ++taken[at(u)], ++given[at(v)];
  }
  if (finish) *finish = pred;
  return moves;
}

std::vector<index_t> rate_shares(index_t items, const std::vector<double>& sec_per_item) {
  const index_t P = static_cast<index_t>(sec_per_item.size());
  std::vector<index_t> n(sec_per_item.size(), 0);
  if (P == 0) return n;
  std::vector<RateRank> ranks(sec_per_item.size());
  for (index_t r = 0; r < P; ++r) {
    const auto i = static_cast<std::size_t>(r);
    n[i] = items / P + (r < items % P ? 1 : 0);
    ranks[i].sec_per_work = sec_per_item[i], ranks[i].work = double(n[i]);
    ranks[i].items.assign(static_cast<std::size_t>(n[i]), RateItem{1, 0, -1});
  }
  for (const RateMove& m : rate_balance(ranks, {}))
    --n[static_cast<std::size_t>(m.victim)], ++n[static_cast<std::size_t>(m.thief)];
  return n;
}

std::vector<char> rate_late(const std::vector<double>& finish, const std::vector<double>& sec_per_work) {
  std::vector<double> known;
  for (std::size_t t = 0; t < finish.size(); ++t)
    if (sec_per_work[t] > 0) known.push_back(finish[t]);
  std::vector<char> late(finish.size(), 0);
  if (known.empty()) return late;
  const auto mid = known.begin() + static_cast<std::ptrdiff_t>(known.size() / 2);
  std::nth_element(known.begin(), mid, known.end());
  for (std::size_t t = 0; t < finish.size(); ++t) late[t] = sec_per_work[t] > 0 && finish[t] >= *mid;
  return late;
}

void RateGather::post(const Comm& comm, std::vector<double> report) {
  mine = std::move(report);
  MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                 static_cast<int>(mine.size()), MPI_DOUBLE, comm.get(), &req_);
  posted_ = true;
}

bool RateGather::ready() {
  if (!posted_) return false;
  int flag = 1;
  if (req_ != MPI_REQUEST_NULL) MPI_Test(&req_, &flag, MPI_STATUS_IGNORE);
  return flag != 0;
}

void RateGather::wait() {
  if (req_ != MPI_REQUEST_NULL) MPI_Wait(&req_, MPI_STATUS_IGNORE);
}

}  // namespace distmm
