// CSodium: libsodium (Debian libsodium-dev) for sealing guarded clipboard text in memory.
#ifndef CSODIUM_SHIM_H
#define CSODIUM_SHIM_H
#include <sodium.h>
#endif
