/* A small MPI program whose result depends on how many ranks run it: every rank contributes
 * (rank + 1) * x, and rank 0 prints the sum and the rank count. With 2 ranks, x gives 3x. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const double x = argc > 1 ? strtod(argv[1], NULL) : 1.0;
  const double mine = (rank + 1) * x;
  double sum = 0;
  MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("ranks %d sum %.17g\n", size, sum);
  MPI_Finalize();
  return 0;
}
