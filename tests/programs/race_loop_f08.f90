! race_loop.f90 through `use mpi_f08` (issue 93): the same allreduce loop over the world and
! broadcasts on communicators split in reversed rank order, each result checked; the handles
! are derived types and ierror is left out of the collectives (optional in mpi_f08). Rank 0
! prints a checksum and "race_loop_f08 ok".
program race_loop_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 512
  integer :: rank, nranks, i, iterations, w
  type(MPI_Comm) :: c
  integer :: words(128)
  double precision :: x(n), y(n), checksum
  character(len=16) :: arg

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  iterations = 400
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) iterations
  end if
  checksum = 0
  do i = 1, iterations
    x = rank + i
    call MPI_Allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    if (any(y /= nranks * (nranks - 1) / 2.0d0 + nranks * dble(i))) then
      print *, 'race_loop_f08: wrong allreduce at', i, 'on rank', rank
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
    checksum = checksum + y(n)
    if (mod(i, 4) == 0) then
      call MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - 1 - rank, c)
      words = -1
      if (rank == nranks - 1) words = [(i * 1000 + w, w = 1, 128)]
      call MPI_Bcast(words, 128, MPI_INTEGER, 0, c)
      if (any(words /= [(i * 1000 + w, w = 1, 128)])) then
        print *, 'race_loop_f08: wrong broadcast at', i, 'on rank', rank
        call MPI_Abort(MPI_COMM_WORLD, 1)
      end if
      call MPI_Comm_free(c)
    end if
  end do
  if (rank == 0) print '(a, f14.1)', 'race_loop_f08 checksum ', checksum
  if (rank == 0) print '(a)', 'race_loop_f08 ok'
  call MPI_Finalize()
end program race_loop_f08
