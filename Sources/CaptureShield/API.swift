// Users of the library (shieldctl, the tests) see the core's public types through this module.
@_exported import CaptureShieldCore
