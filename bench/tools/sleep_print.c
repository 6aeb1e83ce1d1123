/* sleep_print MS X: sleeps MS milliseconds, then prints X. The "50 ms program" of the programs benchmark:
   one exec and one sleep, so that what is measured beyond MS is the runner's, not a shell's start-up. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: sleep_print MS X\n");
    return 2;
  }
  const double ms = strtod(argv[1], NULL);
  struct timespec left = {(time_t)(ms / 1000), (long)((ms - 1000 * (double)(time_t)(ms / 1000)) * 1e6)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
  printf("%s\n", argv[2]);
  return 0;
}
