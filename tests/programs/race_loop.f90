! A Fortran allreduce loop raced in-run (issue 93): `use mpi`, gfortran's mpi_*_ entry points.
! Every rank sums a vector of 512 double precision (4 KiB) ITERATIONS times over the world,
! and every 4th iteration broadcasts 128 integers from rank 0 of a communicator split in
! reversed rank order (then freed); each result checked (a wrong one: MPI_Abort). Rank 0
! prints a checksum and "race_loop ok".
program race_loop
  use mpi
  implicit none
  integer, parameter :: n = 512
  integer :: ierr, rank, nranks, i, iterations, c, w
  integer :: words(128)
  double precision :: x(n), y(n), checksum
  character(len=16) :: arg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  iterations = 400
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) iterations
  end if
  checksum = 0
  do i = 1, iterations
    x = rank + i
    call MPI_Allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (any(y /= nranks * (nranks - 1) / 2.0d0 + nranks * dble(i))) then
      print *, 'race_loop: wrong allreduce at', i, 'on rank', rank
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
    checksum = checksum + y(n)
    if (mod(i, 4) == 0) then
      call MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - 1 - rank, c, ierr)
      words = -1
      if (rank == nranks - 1) words = [(i * 1000 + w, w = 1, 128)]
      call MPI_Bcast(words, 128, MPI_INTEGER, 0, c, ierr)
      if (any(words /= [(i * 1000 + w, w = 1, 128)])) then
        print *, 'race_loop: wrong broadcast at', i, 'on rank', rank
        call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
      end if
      call MPI_Comm_free(c, ierr)
    end if
  end do
  if (rank == 0) print '(a, f14.1)', 'race_loop checksum ', checksum
  if (rank == 0) print '(a)', 'race_loop ok'
  call MPI_Finalize(ierr)
end program race_loop
