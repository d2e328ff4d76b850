// CDBus: libdbus-1 (Debian libdbus-1-dev), the reference D-Bus client library, for the
// desktop notification of a capture (org.freedesktop.Notifications on the session bus).
// Only `DBus/DesktopNotifier.swift` imports it, as `internal import`.
#ifndef CDBUS_SHIM_H
#define CDBUS_SHIM_H
#include <dbus/dbus.h>
#endif
