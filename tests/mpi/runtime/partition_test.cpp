#include "mpi/runtime/partition.hpp"

#include <gtest/gtest.h>

#include "mpi/runtime/grid.hpp"

using namespace distmm;

TEST(Partition1D, CoversEverySizeAndOwnerIsConsistent) {
  for (index_t n : {1, 2, 3, 7, 13, 64, 97}) {
    for (int p : {1, 2, 3, 4, 7, 9, 16}) {
      Partition1D part{n, p};
      EXPECT_EQ(part.start(0), 0);
      EXPECT_EQ(part.start(p), n);
      for (int i = 0; i < p; ++i) {
        EXPECT_GE(part.size(i), 0);
        EXPECT_LE(part.size(i), part.max_size());
        EXPECT_LE(part.max_size() - part.size(i), 1);  // balanced
      }
      for (index_t g = 0; g < n; ++g) {
        int o = part.owner(g);
        ASSERT_GE(g, part.start(o)) << n << " " << p;
        ASSERT_LT(g, part.start(o + 1)) << n << " " << p;
      }
    }
  }
}

// The element counts of a collective over the parts: each part's size times the scale, in order,
// summing to n times the scale (zeros where n < parts).
TEST(Partition1D, CountsScaleEachPart) {
  for (index_t n : {0, 1, 5, 13, 97})
    for (int p : {1, 2, 4, 7, 16})
      for (index_t scale : {0, 1, 3, 1000}) {
        const Partition1D part{n, p};
        const std::vector<index_t> c = part.counts(scale);
        ASSERT_EQ(c.size(), std::size_t(p));
        index_t total = 0;
        for (int i = 0; i < p; ++i) {
          EXPECT_EQ(c[std::size_t(i)], scale * part.size(i));
          total += c[std::size_t(i)];
        }
        EXPECT_EQ(total, n * scale) << n << " " << p << " " << scale;
      }
  EXPECT_EQ(Partition1D({5, 3}).counts(2), (std::vector<index_t>{4, 4, 2}));
  EXPECT_EQ(Partition1D({5, 3}).counts(), (std::vector<index_t>{2, 2, 1}));
}

TEST(Piece, RunsAndGlobals) {
  Piece p;
  p.row_runs = {{0, 2}, {6, 3}};
  p.col_runs = {{4, 1}};
  EXPECT_EQ(p.rows(), 5);
  EXPECT_EQ(p.cols(), 1);
  EXPECT_EQ(Piece::globals(p.row_runs), (std::vector<index_t>{0, 1, 6, 7, 8}));
  EXPECT_TRUE(Piece::block(3, 0, 0, 5).empty());
}

TEST(Grid, ShapeFollowsTheMatrix) {
  EXPECT_EQ(choose_grid_2d(16, 100, 100), std::make_pair(4, 4));
  EXPECT_EQ(choose_grid_2d(6, 100, 100), std::make_pair(2, 3));
  EXPECT_EQ(choose_grid_2d(8, 1000, 10), std::make_pair(8, 1));  // tall C: split the rows
  EXPECT_EQ(choose_grid_2d(8, 10, 1000), std::make_pair(1, 8));
  EXPECT_EQ(choose_grid_2d(7, 50, 50).first * choose_grid_2d(7, 50, 50).second, 7);
  EXPECT_THROW(grid_2d_for(6, 10, 10, 4), UsageError);
  EXPECT_EQ(grid_2d_for(6, 10, 10, 3), std::make_pair(3, 2));
}

TEST(Grid, ExactRoots) {
  EXPECT_EQ(exact_root(16, 2), 4);
  EXPECT_EQ(exact_root(15, 2), 0);
  EXPECT_EQ(exact_root(27, 3), 3);
  EXPECT_EQ(exact_root(1, 3), 1);
  EXPECT_EQ(exact_root(9, 3), 0);
  EXPECT_EQ(exact_root(49, 2), 7);
}
