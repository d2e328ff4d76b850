/* CaptureShield Xorg tests: the probes built for a big-endian CPU (s390x), statically, so
 * that qemu-user runs them as X clients of the other byte order (xorg/Makefile, BE_PROBES).
 * They reach the server over its Unix socket only: libxcb's TCP path (getaddrinfo, which a
 * static glibc cannot serve) is replaced by a refusal, so the static link pulls no part
 * of glibc's resolver. */
#include <netdb.h>
#include <stddef.h>

int
getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
            struct addrinfo **res)
{
    (void) node;
    (void) service;
    (void) hints;
    *res = NULL;
    return EAI_FAIL;
}

void
freeaddrinfo(struct addrinfo *res)
{
    (void) res;
}
