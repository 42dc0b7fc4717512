! distmm's Fortran module (issue #41): `use distmm`, link libdistmm_f.so (CMake: distmm::distmm_f).
! ISO_C_BINDING interfaces to the C API (src/distmm.h), which documents every call; here sizes
! are integer(c_int64_t) (integer(int64)), handles type(c_ptr), the communicator a Fortran handle
! (MPI_COMM_WORLD of `use mpi`, or comm%MPI_VAL of `use mpi_f08`), and alpha, beta and the
! matrices any real or complex scalars and arrays (assumed type, passed by address).
!
!   type(c_ptr) :: la, lb, lc, plan
!   ierr = distmm_layout_block_cyclic(la, m, k, mb, nb, nprow, npcol, 0, 0, lld, DISTMM_GRID_ROW_MAJOR)
!   ...
!   ierr = distmm_plan_create(plan, MPI_COMM_WORLD, DISTMM_F64, DISTMM_OP_N, la, DISTMM_OP_N, lb, lc)
!   if (ierr /= DISTMM_SUCCESS) print *, distmm_error()          ! the same on every rank
!   ierr = distmm_plan_execute(plan, 1.0d0, a, b, 0.0d0, c)      ! collective, as often as needed
!   ierr = distmm_plan_destroy(plan)
module distmm
  use, intrinsic :: iso_c_binding
  implicit none
  private

  integer(c_int), parameter, public :: DISTMM_SUCCESS = 0, DISTMM_ERR_ARGUMENT = 1, DISTMM_ERR_LAYOUT = 2, &
    DISTMM_ERR_USAGE = 3, DISTMM_ERR_MEMORY = 4, DISTMM_ERR_MPI = 5, DISTMM_ERR_UNSUPPORTED = 6, &
    DISTMM_ERR_INTERNAL = 7
  integer(c_int), parameter, public :: DISTMM_F32 = 0, DISTMM_F64 = 1, DISTMM_C32 = 2, DISTMM_C64 = 3
  integer(c_int), parameter, public :: DISTMM_OP_N = 0, DISTMM_OP_T = 1, DISTMM_OP_C = 2
  integer(c_int), parameter, public :: DISTMM_COL_MAJOR = 0, DISTMM_ROW_MAJOR = 1
  integer(c_int), parameter, public :: DISTMM_GRID_ROW_MAJOR = 0, DISTMM_GRID_COL_MAJOR = 1
  integer(c_int), parameter, public :: DISTMM_A = 0, DISTMM_B = 1, DISTMM_C = 2
  integer(c_int), parameter, public :: DISTMM_RANK = 0, DISTMM_MAX = 1, DISTMM_TOTAL = 2
  integer(c_int), parameter, public :: DISTMM_MEMORY_HOST = 0, DISTMM_MEMORY_DEVICE = 1

  ! One block of a matrix held by one rank (offsets count from the rank's base pointer, from 0).
  type, bind(c), public :: distmm_block
    integer(c_int64_t) :: row = 0, col = 0, rows = 0, cols = 0, offset = 0, ld = 0
    integer(c_int32_t) :: owner = -1, order = DISTMM_COL_MAJOR
  end type

  public :: distmm_layout_block_cyclic, distmm_layout_scalapack, distmm_layout_row_slabs, &
            distmm_layout_col_slabs, distmm_layout_blocks, distmm_layout_destroy, distmm_plan_create, &
            distmm_layout_set_memory, &
            distmm_plan_execute, distmm_plan_destroy, distmm_plan_shape, distmm_plan_moved, &
            distmm_plan_words, distmm_plan_memory, distmm_plan_in_place, distmm_plan_extent, &
            distmm_plan_algorithm, distmm_error, distmm_agree

  interface
    integer(c_int) function distmm_layout_block_cyclic(out, m, n, mb, nb, nprow, npcol, rsrc, csrc, lld, &
                                                       grid_order) bind(c, name="distmm_layout_block_cyclic")
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), intent(out) :: out
      integer(c_int64_t), value :: m, n, mb, nb, lld
      integer(c_int), value :: nprow, npcol, rsrc, csrc, grid_order
    end function
    integer(c_int) function distmm_layout_scalapack(out, desc, nprow, npcol, grid_order) &
        bind(c, name="distmm_layout_scalapack")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: out
      integer(c_int), intent(in) :: desc(9)
      integer(c_int), value :: nprow, npcol, grid_order
    end function
    integer(c_int) function distmm_layout_row_slabs(out, m, n, nranks, sizes, ld, order) &
        bind(c, name="distmm_layout_row_slabs")
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), intent(out) :: out
      integer(c_int64_t), value :: m, n, ld
      integer(c_int), value :: nranks, order
      integer(c_int64_t), intent(in) :: sizes(*)
    end function
    integer(c_int) function distmm_layout_col_slabs(out, m, n, nranks, sizes, ld, order) &
        bind(c, name="distmm_layout_col_slabs")
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), intent(out) :: out
      integer(c_int64_t), value :: m, n, ld
      integer(c_int), value :: nranks, order
      integer(c_int64_t), intent(in) :: sizes(*)
    end function
    integer(c_int) function distmm_layout_blocks(out, m, n, count, blocks) bind(c, name="distmm_layout_blocks")
      import :: c_int, c_int64_t, c_ptr, distmm_block
      type(c_ptr), intent(out) :: out
      integer(c_int64_t), value :: m, n
      integer(c_int), value :: count
      type(distmm_block), intent(in) :: blocks(*)
    end function
    integer(c_int) function distmm_layout_destroy(layout) bind(c, name="distmm_layout_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: layout
    end function
    ! DISTMM_MEMORY_DEVICE: the layout's base pointers are device pointers (the GPU's memory)
    integer(c_int) function distmm_layout_set_memory(layout, memory) bind(c, name="distmm_layout_set_memory")
      import :: c_int, c_ptr
      type(c_ptr), value :: layout
      integer(c_int), value :: memory
    end function
    integer(c_int) function distmm_plan_execute(plan, alpha, a, b, beta, c) bind(c, name="distmm_plan_execute")
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      type(*), intent(in) :: alpha, beta
      type(*), intent(in) :: a(*), b(*)
      type(*), intent(inout) :: c(*)
    end function
    integer(c_int) function distmm_plan_destroy(plan) bind(c, name="distmm_plan_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
    end function
    integer(c_int) function distmm_plan_shape(plan, m, n, k) bind(c, name="distmm_plan_shape")
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: plan
      integer(c_int64_t), intent(out) :: m, n, k
    end function
    integer(c_int) function distmm_plan_moved(plan, scope, words) bind(c, name="distmm_plan_moved")
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: plan
      integer(c_int), value :: scope
      integer(c_int64_t), intent(out) :: words(3)
    end function
    integer(c_int) function distmm_plan_words(plan, words_max, messages_max) bind(c, name="distmm_plan_words")
      import :: c_int, c_double, c_ptr
      type(c_ptr), value :: plan
      real(c_double), intent(out) :: words_max, messages_max
    end function
    integer(c_int) function distmm_plan_memory(plan, bytes) bind(c, name="distmm_plan_memory")
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: plan
      integer(c_int64_t), intent(out) :: bytes
    end function
    integer(c_int) function distmm_plan_in_place(plan, in_place) bind(c, name="distmm_plan_in_place")
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      integer(c_int), intent(out) :: in_place(3)
    end function
    integer(c_int) function distmm_plan_extent(plan, matrix, elements) bind(c, name="distmm_plan_extent")
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: plan
      integer(c_int), value :: matrix
      integer(c_int64_t), intent(out) :: elements
    end function
  end interface

  ! The C entries that take strings or a Fortran communicator, wrapped below.
  interface
    integer(c_int) function c_plan_create_f(out, comm, dtype, op_a, la, op_b, lb, lc, options) &
        bind(c, name="distmm_plan_create_f")
      import :: c_int, c_ptr, c_char
      type(c_ptr), intent(out) :: out
      integer(c_int), value :: comm, dtype, op_a, op_b
      type(c_ptr), value :: la, lb, lc
      character(kind=c_char), intent(in) :: options(*)
    end function
    integer(c_int) function c_agree_f(comm, status, message) bind(c, name="distmm_agree_f")
      import :: c_int, c_char
      integer(c_int), value :: comm, status
      character(kind=c_char), intent(in) :: message(*)
    end function
    integer(c_size_t) function c_last_error_copy(buf, size) bind(c, name="distmm_last_error_copy")
      import :: c_size_t, c_char
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: size
    end function
    integer(c_int) function c_plan_algorithm(plan, buf, size, length) bind(c, name="distmm_plan_algorithm")
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: plan
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: size
      integer(c_size_t), intent(out) :: length
    end function
  end interface

contains

  ! Collective: options as in the C API ("algorithm=summa engine=blas"), absent for the defaults.
  integer(c_int) function distmm_plan_create(plan, comm, dtype, op_a, la, op_b, lb, lc, options) result(ierr)
    type(c_ptr), intent(out) :: plan
    integer, intent(in) :: comm, dtype, op_a, op_b
    type(c_ptr), intent(in) :: la, lb, lc
    character(len=*), intent(in), optional :: options
    if (present(options)) then
      ierr = c_plan_create_f(plan, int(comm, c_int), int(dtype, c_int), int(op_a, c_int), la, int(op_b, c_int), &
                             lb, lc, trim(options)//c_null_char)
    else
      ierr = c_plan_create_f(plan, int(comm, c_int), int(dtype, c_int), int(op_a, c_int), la, int(op_b, c_int), &
                             lb, lc, c_null_char)
    end if
  end function

  ! Collective: the lowest failing rank's status and message (distmm_error()) on every rank.
  integer(c_int) function distmm_agree(comm, status, message) result(ierr)
    integer, intent(in) :: comm, status
    character(len=*), intent(in) :: message
    ierr = c_agree_f(int(comm, c_int), int(status, c_int), trim(message)//c_null_char)
  end function

  ! This thread's last error message.
  function distmm_error() result(msg)
    character(len=:), allocatable :: msg
    character(kind=c_char), allocatable :: buf(:)
    integer(c_size_t) :: n
    integer :: i
    allocate (buf(1))
    n = c_last_error_copy(buf, 0_c_size_t)
    deallocate (buf)
    allocate (buf(n + 1))
    n = c_last_error_copy(buf, n + 1)
    allocate (character(len=n) :: msg)
    do i = 1, int(n)
      msg(i:i) = buf(i)
    end do
  end function

  ! The algorithm the plan chose ("summa", ...).
  function distmm_plan_algorithm(plan) result(name)
    type(c_ptr), intent(in) :: plan
    character(len=:), allocatable :: name
    character(kind=c_char) :: buf(64)
    integer(c_size_t) :: n
    integer :: i
    if (c_plan_algorithm(plan, buf, 64_c_size_t, n) /= DISTMM_SUCCESS) then
      name = ""
      return
    end if
    n = min(n, 63_c_size_t)
    allocate (character(len=n) :: name)
    do i = 1, int(n)
      name(i:i) = buf(i)
    end do
  end function
end module distmm
