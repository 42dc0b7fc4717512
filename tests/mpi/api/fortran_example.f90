! The Fortran module (`use distmm`, src/fortran/distmm.f90) as a Fortran program uses it, built
! and run in CI at 1, 4 and 6 ranks: A block-cyclic from a ScaLAPACK descriptor, B (stored n x k,
! used as B^T) in column slabs, C in row slabs: C = A B^T in double precision, then C = A^H Z + i C
! in double complex, every element checked exactly (small integers); a bad layout refused on every rank with the same
! message. Stops with code 1 on any mismatch.
program fortran_example
  use mpi
  use distmm
  use, intrinsic :: iso_c_binding, only: c_ptr, c_int64_t
  implicit none
  integer, parameter :: m = 10, n = 7, k = 12, mb = 3, nb = 2
  integer :: ierr, me, np, nprow, npcol, prow, pcol, r, i, j, l, locr, locc, desc(9), bad, st
  integer(c_int64_t) :: bsz(0:63), csz(0:63), b0, c0, moved(3)
  type(c_ptr) :: la, lb, lc, plan
  double precision, allocatable :: a(:, :), b(:, :), c(:, :)
  complex(kind(1d0)), allocatable :: za(:, :), zb(:, :), zc(:, :)
  double precision :: s
  complex(kind(1d0)) :: zs
  character(len=:), allocatable :: msg, algo
  character(len=512) :: msg0

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, me, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, np, ierr)
  nprow = 1
  do r = 1, np
    if (r * r <= np .and. mod(np, r) == 0) nprow = r
  end do
  npcol = np / nprow
  prow = me / npcol
  pcol = mod(me, npcol)
  bad = 0

  ! A: m x k block-cyclic, described by a descinit_-style descriptor (lld = local rows)
  locr = numroc(m, mb, prow, nprow)
  locc = numroc(k, nb, pcol, npcol)
  desc = [1, 0, m, k, mb, nb, 0, 0, max(1, locr)]
  allocate (a(max(1, locr), max(1, locc)), za(max(1, locr), max(1, locc)))
  do j = 0, k - 1
    do i = 0, m - 1
      if (mod(i / mb, nprow) == prow .and. mod(j / nb, npcol) == pcol) then
        a(lidx(i, mb, nprow) + 1, lidx(j, nb, npcol) + 1) = aval(i, j)
        za(lidx(i, mb, nprow) + 1, lidx(j, nb, npcol) + 1) = cmplx(aval(i, j), bval(j, i), kind(1d0))
      end if
    end do
  end do
  ! B stored n x k (op T), column slabs: this rank holds columns [b0, b0 + bsz(me))
  ! C: m x n, row slabs: rows [c0, c0 + csz(me))
  b0 = 0
  c0 = 0
  do r = 0, np - 1
    bsz(r) = k / np + merge(1, 0, r < mod(k, np))
    csz(r) = m / np + merge(1, 0, r < mod(m, np))
    if (r < me) b0 = b0 + bsz(r)
    if (r < me) c0 = c0 + csz(r)
  end do
  allocate (b(n, max(1_c_int64_t, bsz(me))), c(max(1_c_int64_t, csz(me)), n))
  do j = 1, int(bsz(me))
    do i = 1, n
      b(i, j) = bval(i - 1, int(b0) + j - 1)
    end do
  end do
  c = 0

  ierr = distmm_layout_scalapack(la, desc, nprow, npcol, DISTMM_GRID_ROW_MAJOR)
  ierr = distmm_layout_col_slabs(lb, int(n, c_int64_t), int(k, c_int64_t), np, bsz, 0_c_int64_t, DISTMM_COL_MAJOR)
  ierr = distmm_layout_row_slabs(lc, int(m, c_int64_t), int(n, c_int64_t), np, csz, &
                                 max(1_c_int64_t, csz(me)), DISTMM_COL_MAJOR)
  ierr = distmm_plan_create(plan, MPI_COMM_WORLD, DISTMM_F64, DISTMM_OP_N, la, DISTMM_OP_T, lb, lc)
  if (ierr /= DISTMM_SUCCESS) call fail(distmm_error())
  algo = distmm_plan_algorithm(plan)
  ierr = distmm_plan_moved(plan, DISTMM_MAX, moved)
  ierr = distmm_plan_execute(plan, 1d0, a, b, 0d0, c)
  if (ierr /= DISTMM_SUCCESS) call fail(distmm_error())
  do j = 0, n - 1
    do i = 1, int(csz(me))
      s = 0
      do l = 0, k - 1
        s = s + aval(int(c0) + i - 1, l) * bval(j, l)
      end do
      if (c(i, j + 1) /= s) bad = bad + 1
    end do
  end do
  ierr = distmm_plan_destroy(plan)

  ! double complex: C = A^H Z + i C with A as above (A^H is k x m), Z m x n in row slabs (C's rows
  ! of the first product), C k x n in row slabs
  allocate (zb(max(1_c_int64_t, csz(me)), n), zc(max(1_c_int64_t, bsz(me)), n))
  do j = 1, n
    do i = 1, int(csz(me))
      zb(i, j) = cmplx(bval(int(c0) + i - 1, j - 1), 1d0, kind(1d0))
    end do
  end do
  zc = (1d0, 1d0)
  ierr = distmm_layout_destroy(lb)
  ierr = distmm_layout_row_slabs(lb, int(m, c_int64_t), int(n, c_int64_t), np, csz, 0_c_int64_t, DISTMM_COL_MAJOR)
  ierr = distmm_layout_destroy(lc)
  ierr = distmm_layout_row_slabs(lc, int(k, c_int64_t), int(n, c_int64_t), np, bsz, 0_c_int64_t, DISTMM_COL_MAJOR)
  ierr = distmm_plan_create(plan, MPI_COMM_WORLD, DISTMM_C64, DISTMM_OP_C, la, DISTMM_OP_N, lb, lc, "algorithm=summa")
  if (ierr /= DISTMM_SUCCESS) call fail(distmm_error())
  ierr = distmm_plan_execute(plan, (1d0, 0d0), za, zb, (0d0, 1d0), zc)
  if (ierr /= DISTMM_SUCCESS) call fail(distmm_error())
  do j = 0, n - 1
    do i = 1, int(bsz(me))
      zs = 0
      do l = 0, m - 1
        zs = zs + conjg(cmplx(aval(l, int(b0) + i - 1), bval(int(b0) + i - 1, l), kind(1d0))) * &
                  cmplx(bval(l, j), 1d0, kind(1d0))
      end do
      if (zc(i, j + 1) /= zs + (0d0, 1d0) * (1d0, 1d0)) bad = bad + 1
    end do
  end do
  ierr = distmm_plan_destroy(plan)

  ! a bad layout: C's row slabs cover k + 1 rows. Every rank gets DISTMM_ERR_LAYOUT, same message.
  csz = bsz
  csz(np - 1) = csz(np - 1) + 1
  ierr = distmm_layout_destroy(lc)
  ierr = distmm_layout_row_slabs(lc, int(k, c_int64_t), int(n, c_int64_t), np, csz, 0_c_int64_t, DISTMM_COL_MAJOR)
  st = distmm_plan_create(plan, MPI_COMM_WORLD, DISTMM_C64, DISTMM_OP_C, la, DISTMM_OP_N, lb, lc)
  msg = distmm_error()
  msg0 = msg
  call mpi_bcast(msg0, len(msg0), MPI_CHARACTER, 0, MPI_COMM_WORLD, ierr)
  if (st /= DISTMM_ERR_LAYOUT .or. msg0 /= msg .or. len(msg) == 0) bad = bad + 1

  ierr = distmm_layout_destroy(la)
  ierr = distmm_layout_destroy(lb)
  ierr = distmm_layout_destroy(lc)
  call mpi_allreduce(MPI_IN_PLACE, bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (me == 0) print '(a,i0,a,a,a,i0,a,i0,a,a,a,a)', 'fortran_example: ', np, ' ranks, ', algo, &
    ', moved max A ', moved(1), ' B ', moved(2), '; refused: ', msg, '; ', merge('ok   ', 'WRONG', bad == 0)
  call mpi_finalize(ierr)
  if (bad /= 0) stop 1

contains

  double precision function aval(i, j)
    integer, intent(in) :: i, j
    aval = mod(i + 2 * j, 7) - 3
  end function
  double precision function bval(i, j)
    integer, intent(in) :: i, j
    bval = mod(3 * i + j, 5) - 2
  end function
  integer function numroc(nn, bs, p, nps)  ! ScaLAPACK's NUMROC with source 0
    integer, intent(in) :: nn, bs, p, nps
    integer :: g
    numroc = 0
    do g = 0, nn - 1, bs
      if (mod(g / bs, nps) == p) numroc = numroc + min(bs, nn - g)
    end do
  end function
  integer function lidx(g, bs, nps)  ! the local index of global index g
    integer, intent(in) :: g, bs, nps
    lidx = (g / bs / nps) * bs + mod(g, bs)
  end function
  subroutine fail(text)
    character(len=*), intent(in) :: text
    print '(a,i0,a,a)', 'rank ', me, ': ', text
    call mpi_abort(MPI_COMM_WORLD, 2, ierr)
  end subroutine
end program
