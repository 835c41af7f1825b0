/* ucx_sends: preloaded into an MPI program running over UCX, prints on stderr the length of
 * every tagged send the library hands UCX ("send <pid> <bytes>"), then sends it: which algorithm
 * ran a collective, told by the messages it made (MPICH 4's ch4:ucx sends every message of
 * its collectives through ucp_tag_send_nbx, even between ranks of one node). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

typedef void *(*send_fn)(void *, const void *, size_t, unsigned long, const void *);

void *ucp_tag_send_nbx(void *ep, const void *buffer, size_t count, unsigned long tag,
                       const void *param) {
    static send_fn real;
    if (!real) real = (send_fn)dlsym(RTLD_NEXT, "ucp_tag_send_nbx");
    fprintf(stderr, "send %d %zu\n", (int)getpid(), count);
    return real(ep, buffer, count, tag, param);
}
