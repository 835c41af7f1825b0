! Fortran through libcommtune's mpi_*_ entry points: every rank calls MPI_Allreduce 100 times on
! one double precision (8 bytes), sends 50 messages of 256 integers (1 KiB) around a ring and
! receives 50, and calls MPI_Barrier 5 times.
program counts
  use mpi
  implicit none
  integer :: ierr, rank, nranks, i, next, prev
  integer :: status(MPI_STATUS_SIZE)
  integer :: buf_out(256), buf_in(256)
  double precision :: x, y

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  next = mod(rank + 1, nranks)
  prev = mod(rank + nranks - 1, nranks)
  x = rank
  do i = 1, 100
    call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  buf_out = rank
  do i = 1, 50
    if (mod(rank, 2) == 0) then
      call MPI_Send(buf_out, 256, MPI_INTEGER, next, 1, MPI_COMM_WORLD, ierr)
      call MPI_Recv(buf_in, 256, MPI_INTEGER, prev, 1, MPI_COMM_WORLD, status, ierr)
    else
      call MPI_Recv(buf_in, 256, MPI_INTEGER, prev, 1, MPI_COMM_WORLD, status, ierr)
      call MPI_Send(buf_out, 256, MPI_INTEGER, next, 1, MPI_COMM_WORLD, ierr)
    end if
  end do
  do i = 1, 5
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end do
  if (rank == 0) print '(a, f6.1)', 'fortran counts done, sum ', y
  call MPI_Finalize(ierr)
end program counts
